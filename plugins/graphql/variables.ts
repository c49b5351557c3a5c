/**
 * A request's variables coerced without graphql-js's error machinery when they are valid (Note
 * [Coercing valid variables]).
 */
import {
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  typeFromAST,
  valueFromAST,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';

/*
 * Note [Coercing valid variables]
 * A cached request still coerces its variables, and graphql-js's getVariableValues is slow on
 * the values mutations carry (the benchmark's nested insert, ten input objects: 37 µs of the
 * engine's CPU per request): it tracks a path per value and builds its errors' closures whether
 * or not anything is wrong. Almost every request's variables are valid, so `coerceValid` does
 * what coerceVariableValues and coerceInputValue do (graphql 16) and nothing else: non-null
 * types, a single value where a list is declared, input objects rebuilt in their fields' order
 * with field defaults filled in, every scalar and enum through its own `parseValue`, the
 * variable's default from the document when it is absent. At the first thing that would be an
 * error it gives up and the request goes to getVariableValues, which says what is wrong in its
 * words. So the values are graphql-js's, and so are the errors. Test:
 * plugins/graphql/variables.test.ts, which compares the two on generated values.
 */

/** A variable as coerced: its name, declared type and default (from the document). */
interface Declared {
  name: string;
  type: GraphQLInputType;
  defaultValue: ValueNode | undefined;
}

/** An operation's variables, resolved once per cached document. */
export interface OperationVariables {
  declared: ReadonlySet<string>;
  /** Undefined when a declared type is not in the schema (validation refuses that first). */
  defs: readonly Declared[] | undefined;
}

export function operationVariables(schema: GraphQLSchema, operation: OperationDefinitionNode): OperationVariables {
  const nodes = operation.variableDefinitions ?? [];
  const defs: Declared[] = [];
  let known = true;
  for (const d of nodes) {
    const type = typeFromAST(schema, d.type) as GraphQLInputType | undefined;
    if (!type) known = false;
    else defs.push({ name: d.variable.name.value, type, defaultValue: d.defaultValue });
  }
  return { declared: new Set(nodes.map((d) => d.variable.name.value)), defs: known ? defs : undefined };
}

/** What stops `coerceValid`: the value would be an error. */
const INVALID: unique symbol = Symbol('invalid');

function coerce(v: unknown, type: GraphQLInputType): unknown {
  if (isNonNullType(type)) return v == null ? INVALID : coerce(v, type.ofType);
  if (v == null) return null;
  if (isListType(type)) {
    if (!Array.isArray(v)) {
      const one = coerce(v, type.ofType);
      return one === INVALID ? INVALID : [one];
    }
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) if ((out[i] = coerce(v[i], type.ofType)) === INVALID) return INVALID;
    return out;
  }
  if (isInputObjectType(type)) {
    if (typeof v !== 'object' || Array.isArray(v) || (type as { isOneOf?: boolean }).isOneOf) return INVALID;
    const fields = type.getFields();
    const given = v as Record<string, unknown>;
    let known = 0;
    const out: Record<string, unknown> = {};
    for (const name in fields) {
      const f = fields[name]!;
      const x = given[name];
      if (x === undefined) {
        if (f.defaultValue !== undefined) out[name] = f.defaultValue;
        else if (isNonNullType(f.type)) return INVALID;
        continue;
      }
      known++;
      if ((out[name] = coerce(x, f.type)) === INVALID) return INVALID;
    }
    // A field the type does not have (or one given as undefined, which JSON cannot send).
    let keys = 0;
    for (const _ in given) keys++;
    return keys === known ? out : INVALID;
  }
  if (isLeafType(type)) {
    let r: unknown;
    try {
      r = type.parseValue(v);
    } catch {
      return INVALID;
    }
    return r === undefined ? INVALID : r;
  }
  return INVALID;
}

/** Note [Coercing valid variables]: the coerced values, or undefined to ask graphql-js. */
export function coerceValid(ops: OperationVariables, vars: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> | undefined {
  if (!ops.defs) return undefined;
  const out: Record<string, unknown> = {};
  for (const d of ops.defs) {
    if (!vars || !Object.prototype.hasOwnProperty.call(vars, d.name)) {
      if (d.defaultValue) {
        const value = valueFromAST(d.defaultValue, d.type);
        if (value === undefined) return undefined;
        out[d.name] = value;
      } else if (isNonNullType(d.type)) return undefined;
      continue;
    }
    const value = coerce(vars[d.name], d.type);
    if (value === INVALID) return undefined;
    out[d.name] = value;
  }
  return out;
}
