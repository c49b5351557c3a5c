/**
 * Saved queries checked against the admin role's schema at every build (Note [Saved queries
 * against the schema]).
 */
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isObjectType,
  isScalarType,
  Kind,
  type FragmentDefinitionNode,
  type GraphQLOutputType,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type DocumentNode,
} from 'graphql';
import { isEmpty, type RootFieldDef } from '../../core/plugin.js';

/*
 * Note [Saved queries against the schema]
 * Hasura checks every saved query of every collection against the admin role's schema when it
 * builds its schema cache (getInconsistentQueryCollections, with the analysis of
 * Hasura/GraphQL/Analyse.hs): a query whose fields are gone (its table untracked, a column
 * dropped) is an inconsistent object, so the change that would break it is refused (a 500
 * "cannot continue due to newly found inconsistent metadata", as Hasura answers) and REST
 * endpoints and the allow-list never point at a query that cannot run. The analysis is
 * structural, as Hasura's is: the document must have exactly one operation (fragments are
 * followed), each selected field must exist on its type, objects need a selection set and
 * scalars and enums may not have one; arguments, variables and directives are not checked.
 *
 * The schema is not assembled for it: the admin role's root fields are made from the build in
 * progress (KernelApi.roleRoots) and only the types the queries select are walked, so the cost
 * is the contributors' root fields plus the queries' selections, and nothing when there are no
 * collections.
 */

export type Roots = Readonly<Record<'query' | 'mutation' | 'subscription', ReadonlyMap<string, RootFieldDef>>>;

const ROOT_NAMES = { query: 'query_root', mutation: 'mutation_root', subscription: 'subscription_root' } as const;
const SYSTEM_ROOT_FIELDS = new Set(['__typename', '__schema', '__type']);

/** The analysis' messages (Hasura's render), or an empty list when the query is fine. */
export function diagnose(doc: DocumentNode, roots: Roots): string[] {
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (ops.length !== 1) return ['exactly one operation has to be present in the document when operationName is not specified'];
  const op = ops[0]!;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const errors: string[] = [];
  const rootName = ROOT_NAMES[op.operation];
  const root = roots[op.operation];
  if (isEmpty(root)) return [`$: type '${rootName}' not found in the schema`];
  const rootField = (name: string): GraphQLOutputType | undefined => root.get(name)?.config.type;
  walk(op.selectionSet, rootName, rootField, true, '$', fragments, errors, new Set());
  return errors;
}

function walk(
  set: SelectionSetNode,
  typeName: string,
  fieldType: (name: string) => GraphQLOutputType | undefined,
  isRoot: boolean,
  path: string,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  errors: string[],
  spread: ReadonlySet<string>,
): void {
  for (const s of set.selections) {
    if (s.kind === Kind.INLINE_FRAGMENT) {
      walk(s.selectionSet, typeName, fieldType, isRoot, path, fragments, errors, spread);
      continue;
    }
    if (s.kind === Kind.FRAGMENT_SPREAD) {
      const f = fragments.get(s.name.value);
      if (f && !spread.has(f.name.value)) walk(f.selectionSet, typeName, fieldType, isRoot, path, fragments, errors, new Set(spread).add(f.name.value));
      else if (!f) errors.push(`${path}: fragment '${s.name.value}' not found in the document`);
      continue;
    }
    const name = s.name.value;
    const at = `${path}.${name}`;
    if (name === '__typename' || (isRoot && SYSTEM_ROOT_FIELDS.has(name))) continue;
    const type = fieldType(name);
    if (!type) {
      errors.push(`${at}: field '${name}' not found in object '${typeName}'`);
      continue;
    }
    const named = getNamedType(type);
    if (isObjectType(named)) {
      if (!s.selectionSet?.selections.length) {
        errors.push(`${at}: object of type '${named.name}' must have a selection set`);
        continue;
      }
      const fields = named.getFields();
      walk(s.selectionSet, named.name, (n) => fields[n]?.type, false, at, fragments, errors, spread);
    } else if (isScalarType(named) || isEnumType(named)) {
      if (s.selectionSet?.selections.length) errors.push(`${at}: ${isEnumType(named) ? 'enum' : 'scalar'} '${named.name}' does not accept a selection set`);
    } else if (isInputObjectType(named)) {
      errors.push(`${at}: input object '${(named as { name: string }).name}' cannot be used for output`);
    }
    // Interfaces and unions are not analysed, as in Hasura.
  }
}
