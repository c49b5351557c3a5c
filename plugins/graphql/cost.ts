/**
 * What a GraphQL document costs, measured before anything that grows with that cost runs
 * (Note [Document cost]).
 */
import { Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

/*
 * Note [Document cost]
 * The work of validating, planning and answering a document grows with the fields it selects
 * once its fragments are expanded, and that number can be exponential in the document's size:
 * `fragment F1 on t { ...F0 ...F0 } fragment F2 on t { ...F1 ...F1 } ...` selects 2^30 fields in
 * about a kilobyte. So the cost is counted without expanding anything: each fragment's count and
 * depth are computed once (memoized by name) and a spread adds them; a fragment spread twice
 * counts twice, as the engine would work on it twice. Counting is linear in the document's size.
 *
 * What is counted, for every operation of the document (validation reads them all):
 *   - fields: every field selection, at any level, after fragment expansion (`__typename` and
 *     introspection fields included: they cost the same to validate);
 *   - nodes: the fields that have a selection set (Hasura's API limits count these: `{ a { b } }`
 *     has one node);
 *   - depth: the longest chain of nested fields that have selection sets, as Hasura's depth limit
 *     counts it (`{ a { b } }` is 1, `{ a { b { c } } }` is 2);
 *   - root fields: the root selections of one operation after fragment expansion, aliases each
 *     counted (each is a statement run);
 *   - nesting: the longest chain of nested selection sets, a fragment spread or inline fragment
 *     counting as a level like a field with a selection set (`{ a { ...F } } fragment F on t
 *     { b { c } }` is 3). Every walk of the document (validation, planning) recurses this deep:
 *     the server bounds it (--graphql-max-depth), so that a chain of thousands of fragments, each
 *     spreading the next, cannot overflow a walker's stack.
 * `fields`, `nodes` and the root count are the sums over the operations, `depth` the deepest.
 * A fragment spread inside its own expansion (a cycle) counts nothing here: validation refuses
 * the document, and the walk must stop. An unknown fragment counts nothing for the same reason.
 *
 * The server's limits (--graphql-max-*, checked in ./prepare.ts before validation) and a role's
 * API limits (Note [Document gates] in plugins/graphql/contract.ts: gates see the cost) compare these numbers.
 */
export interface DocumentCost {
  readonly fields: number;
  readonly nodes: number;
  readonly depth: number;
  readonly rootFields: number;
  readonly nesting: number;
}

interface Measure {
  fields: number;
  nodes: number;
  depth: number;
  nesting: number;
}

export function documentCost(document: DocumentNode): DocumentCost {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const memo = new Map<string, Measure>();
  const inProgress = new Set<string>();

  const fragment = (name: string): Measure => {
    const known = memo.get(name);
    if (known) return known;
    const def = fragments.get(name);
    if (!def || inProgress.has(name)) return ZERO;
    inProgress.add(name);
    const m = selections(def.selectionSet);
    inProgress.delete(name);
    memo.set(name, m);
    return m;
  };

  // What the selection set selects: a field with a selection set at this level is depth 1.
  const selections = (set: SelectionSetNode): Measure => {
    let fields = 0;
    let nodes = 0;
    let depth = 0;
    let nesting = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        fields++;
        if (!s.selectionSet) continue;
        const below = selections(s.selectionSet);
        fields += below.fields;
        nodes += 1 + below.nodes;
        if (below.depth + 1 > depth) depth = below.depth + 1;
        if (below.nesting + 1 > nesting) nesting = below.nesting + 1;
      } else {
        const m = s.kind === Kind.INLINE_FRAGMENT ? selections(s.selectionSet) : fragment(s.name.value);
        fields += m.fields;
        nodes += m.nodes;
        if (m.depth > depth) depth = m.depth;
        if (m.nesting + 1 > nesting) nesting = m.nesting + 1;
      }
    }
    return { fields, nodes, depth, nesting };
  };

  // The number of root selections after expansion: fields at this level, through fragments.
  const rootMemo = new Map<string, number>();
  const roots = (set: SelectionSetNode): number => {
    let n = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) n++;
      else if (s.kind === Kind.INLINE_FRAGMENT) n += roots(s.selectionSet);
      else {
        const name = s.name.value;
        let c = rootMemo.get(name);
        if (c === undefined) {
          const def = fragments.get(name);
          if (!def || inProgress.has(name)) continue;
          inProgress.add(name);
          c = roots(def.selectionSet);
          inProgress.delete(name);
          rootMemo.set(name, c);
        }
        n += c;
      }
    }
    return n;
  };

  let fields = 0;
  let nodes = 0;
  let depth = 0;
  let nesting = 0;
  let rootFields = 0;
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const m = selections(d.selectionSet);
    fields += m.fields;
    nodes += m.nodes;
    if (m.depth > depth) depth = m.depth;
    if (m.nesting > nesting) nesting = m.nesting;
    rootFields += roots(d.selectionSet);
  }
  return { fields, nodes, depth, rootFields, nesting };
}

const ZERO: Measure = { fields: 0, nodes: 0, depth: 0, nesting: 0 };
