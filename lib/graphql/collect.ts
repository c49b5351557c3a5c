/**
 * graphql-js's collectFields: the fields a selection set selects, by response key, in document
 * order, through fragment spreads (each once per collection) and inline fragments whose type
 * condition holds, after `@skip`/`@include`. Used for the root fields
 * (plugins/graphql/prepare.ts), the introspection types (plugins/graphql/introspection.ts) and
 * an action's answer (plugins/actions/project.ts).
 */
import { isAbstractType, Kind, typeFromAST, type DirectiveNode, type FieldNode, type FragmentDefinitionNode, type GraphQLObjectType, type GraphQLSchema, type NamedTypeNode, type SelectionNode, type SelectionSetNode } from 'graphql';

function conditionHolds(d: DirectiveNode, variables: Readonly<Record<string, unknown>>): boolean | undefined {
  const arg = d.arguments?.find((a) => a.name.value === 'if');
  if (!arg) return undefined;
  const v = arg.value;
  if (v.kind === Kind.BOOLEAN) return v.value;
  if (v.kind === Kind.VARIABLE) return variables[v.name.value] === true;
  return undefined;
}

/** Whether `@skip`/`@include` keep the selection (their `if` is a Boolean!, validation made sure). */
export function included(s: SelectionNode, variables: Readonly<Record<string, unknown>>): boolean {
  for (const d of s.directives ?? []) {
    if (d.name.value === 'skip' && conditionHolds(d, variables) === true) return false;
    if (d.name.value === 'include' && conditionHolds(d, variables) === false) return false;
  }
  return true;
}

/** Whether a fragment's type condition holds of `type` (undefined: of the root, where a valid
 * document's conditions all name the root type). */
function matches(schema: GraphQLSchema, condition: NamedTypeNode | undefined, type: GraphQLObjectType | undefined): boolean {
  if (!condition || !type) return true;
  const t = typeFromAST(schema, condition);
  if (t === type) return true;
  return t !== undefined && isAbstractType(t) && schema.isSubType(t, type);
}

/** The fields of `set` on `type` added to `out` by response key. */
export function collectFields(
  schema: GraphQLSchema,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
  variables: Readonly<Record<string, unknown>>,
  type: GraphQLObjectType | undefined,
  set: SelectionSetNode,
  out: Map<string, FieldNode[]> = new Map(),
  visited: Set<string> = new Set(),
): Map<string, FieldNode[]> {
  for (const s of set.selections) {
    if (!included(s, variables)) continue;
    if (s.kind === Kind.FIELD) {
      const key = s.alias?.value ?? s.name.value;
      const list = out.get(key);
      if (list) list.push(s);
      else out.set(key, [s]);
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      if (matches(schema, s.typeCondition, type)) collectFields(schema, fragments, variables, type, s.selectionSet, out, visited);
    } else if (!visited.has(s.name.value)) {
      visited.add(s.name.value);
      const f = fragments[s.name.value];
      if (f && matches(schema, f.typeCondition, type)) collectFields(schema, fragments, variables, type, f.selectionSet, out, visited);
    }
  }
  return out;
}
