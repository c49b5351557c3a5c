/**
 * The allow-list's notion of "the same query" (Note [Allow-list matching]).
 */
import {
  Kind,
  Lexer,
  Source,
  TokenKind,
  type ArgumentNode,
  type DirectiveNode,
  type DocumentNode,
  type SelectionSetNode,
  type TypeNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';

/*
 * Note [Allow-list matching]
 * Hasura compares a request's document with the allow-listed ones as parsed documents
 * (NormalizedQuery in Hasura/RQL/Types/Allowlist.hs): whitespace, commas, comments and the
 * spelling of strings do not matter, and `__typename` fields are dropped from selection sets
 * first. The rest counts as written: the order of definitions, of selections and of variable
 * definitions, aliases (`a: a` is not `a`), operation names, and whether an anonymous query is
 * written `query { ... }` or `{ ... }`. Arguments and object fields are maps in Hasura's syntax
 * tree, so their order does not count. Hasura's quirk is kept: `__typename` is dropped from the
 * selection sets of fields (and the top of operations and fragments), not inside inline
 * fragments, which it compares untouched.
 *
 * `normalizedKey` writes that form as one text, canonical for all of the above, so that the
 * allow-list is a set of such keys and a document is checked with one hash lookup (done once per
 * plan-cache entry: Note [Document gates] in plugins/graphql/contract.ts).
 */

/** The canonical text of a document under Note [Allow-list matching]; `text` is its source,
 * read only to tell `{ ... }` from `query { ... }` (which graphql-js parses alike). */
export function normalizedKey(doc: DocumentNode, text: string): string {
  let shorthand: boolean[] | undefined;
  let op = 0;
  let out = '';
  for (const d of doc.definitions) {
    if (d.kind === Kind.OPERATION_DEFINITION) {
      const index = op++;
      const couldBeShorthand = d.operation === 'query' && !d.name && !d.variableDefinitions?.length && !d.directives?.length;
      if (couldBeShorthand && (shorthand ??= shorthandOperations(text))[index]) {
        out += `{${selections(d.selectionSet, true)}}`;
        continue;
      }
      out += `${d.operation} ${d.name?.value ?? ''}(${(d.variableDefinitions ?? []).map(variable).join(',')})${directives(d.directives)}{${selections(d.selectionSet, true)}}`;
    } else if (d.kind === Kind.FRAGMENT_DEFINITION) {
      out += `fragment ${d.name.value} on ${d.typeCondition.name.value}${directives(d.directives)}{${selections(d.selectionSet, true)}}`;
    }
    out += ';';
  }
  return out;
}

/** For each operation of `text` in order, whether it is written in the shorthand `{ ... }`. */
function shorthandOperations(text: string): boolean[] {
  const out: boolean[] = [];
  const lexer = new Lexer(new Source(text));
  let braces = 0;
  let parens = 0;
  // At the top level, between a definition's keyword and its selection set.
  let header = false;
  for (let t = lexer.advance(); t.kind !== TokenKind.EOF; t = lexer.advance()) {
    if (t.kind === TokenKind.PAREN_L) parens++;
    else if (t.kind === TokenKind.PAREN_R) parens--;
    else if (t.kind === TokenKind.BRACE_R) braces--;
    else if (t.kind === TokenKind.BRACE_L) {
      if (braces === 0 && parens === 0) {
        if (header) header = false;
        else out.push(true);
      }
      braces++;
    } else if (braces === 0 && parens === 0 && !header && t.kind === TokenKind.NAME) {
      header = true;
      if (t.value !== 'fragment') out.push(false);
    }
  }
  return out;
}

function selections(set: SelectionSetNode | undefined, dropTypename: boolean): string {
  if (!set) return '';
  let out = '';
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) {
      if (dropTypename && s.name.value === '__typename') continue;
      out += `${s.alias ? `${s.alias.value}:` : ''}${s.name.value}${args(s.arguments)}${directives(s.directives)}`;
      if (s.selectionSet) out += `{${selections(s.selectionSet, true)}}`;
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      out += `...${s.typeCondition ? `on ${s.typeCondition.name.value}` : ''}${directives(s.directives)}{${selections(s.selectionSet, false)}}`;
    } else {
      out += `...${s.name.value}${directives(s.directives)}`;
    }
    out += ' ';
  }
  return out;
}

function args(list: readonly ArgumentNode[] | undefined): string {
  if (!list?.length) return '';
  const parts = list.map((a) => `${a.name.value}:${value(a.value)}`);
  return `(${parts.sort().join(',')})`;
}

function directives(list: readonly DirectiveNode[] | undefined): string {
  if (!list?.length) return '';
  return list.map((d) => `@${d.name.value}${args(d.arguments)}`).join('');
}

function variable(d: VariableDefinitionNode): string {
  return `$${d.variable.name.value}:${type(d.type)}${d.defaultValue ? `=${value(d.defaultValue)}` : ''}${directives(d.directives)}`;
}

function type(t: TypeNode): string {
  if (t.kind === Kind.NON_NULL_TYPE) return `${type(t.type)}!`;
  if (t.kind === Kind.LIST_TYPE) return `[${type(t.type)}]`;
  return t.name.value;
}

function value(v: ValueNode): string {
  switch (v.kind) {
    case Kind.VARIABLE:
      return `$${v.name.value}`;
    case Kind.INT:
      return `i${BigInt(v.value)}`;
    case Kind.FLOAT:
      // Hasura reads floats as Scientific: 1.0 and 1.00 are one value.
      return `f${Number(v.value)}`;
    case Kind.STRING:
      return `s${JSON.stringify(v.value)}`;
    case Kind.BOOLEAN:
      return v.value ? 'true' : 'false';
    case Kind.NULL:
      return 'null';
    case Kind.ENUM:
      return `e${v.value}`;
    case Kind.LIST:
      return `[${v.values.map(value).join(',')}]`;
    case Kind.OBJECT:
      return `{${v.fields.map((f) => `${f.name.value}:${value(f.value)}`).sort().join(',')}}`;
  }
}
