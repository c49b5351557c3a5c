/**
 * Errors of the GraphQL endpoint in Hasura's shape, HTTP 200:
 * `{"errors":[{"message","extensions":{"path","code"}}]}`, and graphql-js validation messages
 * rewritten as Hasura words them where they differ (its schema parsers,
 * server/lib/schema-parsers/src/Hasura/GraphQL/Parser/Internal/Parser.hs and Input.hs; its
 * paths name fields, not aliases, from `$.selectionSet`).
 */
import {
  Kind,
  type ArgumentNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type ObjectFieldNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { SvcError, type ErrorCode } from '../../core/errors.js';

export interface GqlError {
  message: string;
  extensions: { path: string; code: string; internal?: unknown };
}

export const gqlError = (code: ErrorCode | string, message: string, path = '$'): GqlError => ({ message, extensions: { path, code } });

export const validationFailed = (message: string, path = '$') => new SvcError('validation-failed', message, { path });

/** The response text of a request that failed as a whole (no `data`, as Hasura answers). */
export function errorsText(errors: GqlError[]): string {
  return JSON.stringify({ errors });
}

/** `internal` (the database's details) only where the caller may see them: Hasura gives them
 * to admin requests (and in dev mode), never to a role. */
export function fromSvcError(e: SvcError, internal = true): GqlError {
  if (e.extensions) return { message: e.message, extensions: e.extensions as GqlError['extensions'] };
  const out = gqlError(e.code ?? 'unexpected', e.message, e.path);
  if (internal && e.internal !== undefined) out.extensions.internal = e.internal;
  return out;
}

/** Where each field, argument and input object field of the document sits, as Hasura writes
 * it. Walked only when validation failed, so it costs nothing on the way of a valid request. */
function nodePaths(doc: DocumentNode): Map<object, { path: string; field?: string }> {
  const paths = new Map<object, { path: string; field?: string }>();
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const value = (v: ValueNode, path: string, field: string) => {
    if (!paths.has(v)) paths.set(v, { path, field });
    if (v.kind === Kind.OBJECT) {
      for (const f of v.fields as readonly ObjectFieldNode[]) {
        const p = `${path}.${f.name.value}`;
        if (!paths.has(f)) paths.set(f, { path: p, field });
        value(f.value, p, field);
      }
    } else if (v.kind === Kind.LIST) {
      v.values.forEach((x, i) => value(x, `${path}[${i}]`, field));
    }
  };
  const walk = (set: SelectionSetNode, path: string, seen: Set<string>) => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        const p = `${path}.selectionSet.${s.name.value}`;
        if (paths.has(s)) continue;
        paths.set(s, { path: p });
        // ScalarLeafsRule points at the selection set of a leaf field; Hasura at the field.
        if (s.selectionSet) paths.set(s.selectionSet, { path: p });
        for (const a of (s.arguments ?? []) as readonly ArgumentNode[]) {
          const ap = `${p}.args.${a.name.value}`;
          paths.set(a, { path: ap, field: p });
          value(a.value, ap, p);
        }
        if (s.selectionSet) walk(s.selectionSet, p, seen);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        walk(s.selectionSet, path, seen);
      } else {
        const f = fragments.get(s.name.value);
        if (f && !seen.has(f.name.value)) walk(f.selectionSet, path, new Set(seen).add(f.name.value));
      }
    }
  };
  for (const d of doc.definitions) if (d.kind === Kind.OPERATION_DEFINITION) walk(d.selectionSet, '$', new Set());
  return paths;
}

const unwrapType = (t: string) => t.replace(/[[\]!]/g, '');

/** The first validation error, as Hasura reports it (it stops at the first). */
export function fromValidationError(e: GraphQLError, doc: DocumentNode): GqlError {
  const paths = nodePaths(doc);
  const at = e.nodes?.[0] ? paths.get(e.nodes[0]) : undefined;
  const path = at?.path ?? '$';
  let m: RegExpExecArray | null;
  if ((m = /^Cannot query field "([^"]+)" on type "([^"]+)"\./.exec(e.message))) {
    return gqlError('validation-failed', `field '${m[1]}' not found in type: '${m[2]}'`, path);
  }
  if ((m = /^Unknown argument "([^"]+)" on field "(?:[^".]+\.)?([^"]+)"\./.exec(e.message))) {
    return gqlError('validation-failed', `'${m[2]}' has no argument named '${m[1]}'`, at?.field ?? path);
  }
  if ((m = /^Field "([^"]+)" of type "([^"]+)" must have a selection of subfields\./.exec(e.message))) {
    return gqlError('validation-failed', `missing selection set for '${unwrapType(m[2]!)}'`, at ? `${path}.selectionSet` : '$');
  }
  if (/^Field "[^"]+" must not have a selection since type "[^"]+" has no subfields\./.test(e.message)) {
    return gqlError('validation-failed', 'unexpected subselection set for non-object field', path);
  }
  if ((m = /^Field "[^"]+" argument "([^"]+)" of type "[^"]+" is required, but it was not provided\./.exec(e.message))) {
    return gqlError('validation-failed', `missing required field '${m[1]}'`, at ? `${path}.args.${m[1]}` : '$');
  }
  if ((m = /^Field "([^"]+)" is not defined by type "([^"]+)"\./.exec(e.message))) {
    return gqlError('validation-failed', `field '${m[1]}' not found in type: '${m[2]}'`, path);
  }
  if ((m = /^Variable "\$([^"]+)" of type "([^"]+)" used in position expecting type "([^"]+)"\.$/.exec(e.message))) {
    // Hasura points at the argument where the variable is used (the error's second node).
    const use = e.nodes?.[1] ? paths.get(e.nodes[1]) : undefined;
    return gqlError('validation-failed', `variable '${m[1]}' is declared as '${m[2]}', but used where '${m[3]}' is expected`, use?.path ?? path);
  }
  if ((m = /^Int cannot represent non 32-bit signed integer value: (-?\d+)$/.exec(e.message))) {
    return gqlError('parse-failed', `The value ${scientific(m[1]!)} lies outside the bounds or is not an integer. Maybe it is a float, or is there integer overflow?`, path);
  }
  return gqlError('validation-failed', e.message, path);
}

/** An integer as Haskell's Scientific shows it in Hasura's messages (`2147483648` -> `2.147483648e9`). */
function scientific(int: string): string {
  const neg = int.startsWith('-');
  const digits = (neg ? int.slice(1) : int).replace(/^0+(?=\d)/, '');
  const mantissa = digits.replace(/0+$/, '') || '0';
  const rest = mantissa.slice(1) || '0';
  return `${neg ? '-' : ''}${mantissa[0]}.${rest}e${digits.length - 1}`;
}

/** A variable coercion error (graphql-js getVariableValues), worded as Hasura's where it has one. */
export function fromVariableError(e: GraphQLError): GqlError {
  const m = /^Variable "\$([^"]+)" of required type "[^"]+" was not provided\.$/.exec(e.message);
  if (m) return gqlError('validation-failed', `expecting a value for non-nullable variable: "${m[1]}"`);
  return gqlError('validation-failed', e.message);
}
