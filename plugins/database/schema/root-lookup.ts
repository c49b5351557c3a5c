/**
 * A role's table root fields found by name (Note [Root fields by name] in
 * core/schema/assembly.ts): the tables of the build that may give a name, and a root's lookup
 * that asks the role's schema whether the role has the field.
 */
import { SvcError } from '../../../core/errors.js';
import { RootFieldLookup, type BuildResult, type RootFieldDef, type RootFieldMap } from '../../../core/plugin.js';
import type { DatabaseBuild, ResolvedSource, RootFieldKind, TableModel } from '../model/resolved.js';
import { fieldKey, type RootFieldState } from '../metadata/customization.js';
import { sourceNames, type SourceNames } from './names.js';

export type Root = 'query' | 'mutation' | 'subscription';
/** A table's root field: its kinds, and `<t>_groups` (./groups.ts). */
export type TableFieldKind = RootFieldKind | 'select_groups';

/** A table and kind that may give a root field of some name: the role's schema decides. */
export interface Candidate {
  source: ResolvedSource;
  /** The table's key in its source. */
  key: string;
  kind: TableFieldKind;
}

/** The kinds of a root that the build's index of root fields holds (`<t>_groups` aside). */
const KINDS: Record<Root, readonly RootFieldKind[]> = {
  query: ['select', 'select_by_pk', 'select_aggregate'],
  subscription: ['select', 'select_by_pk', 'select_aggregate', 'select_stream'],
  mutation: ['insert', 'insert_one', 'update', 'update_by_pk', 'update_many', 'delete', 'delete_by_pk'],
};

/** The root field name of a table's kind, as its source's customization names it (before any
 * namespace), as the role's schema names it. */
export function tableFieldName(source: ResolvedSource, m: TableModel, kind: TableFieldKind): string {
  return sourceNames(source).field(kind === 'select_groups' ? groupsName(m) : m.rootFields[kind].name);
}
const groupsNames = new WeakMap<TableModel, string>();
function groupsName(m: TableModel): string {
  let n = groupsNames.get(m);
  if (n === undefined) groupsNames.set(m, (n = `${m.name}_groups`));
  return n;
}

/**
 * The tables and kinds that may give a root field of this name, in the sources' and their
 * tables' order: looked up in the build's index of root fields (Note [Root field conflicts] in
 * metadata/customization.ts), which each build keeps up to date with what changed, and for
 * `<t>_groups`, which that index does not hold, by the table's GraphQL name. A role's fields are
 * among them; what its permissions take away is for its schema to say.
 */
export function candidates(build: Pick<BuildResult, 'outputs'>, resolved: DatabaseBuild, root: Root, name: string): Candidate[] {
  const state = build.outputs.get('root-fields') as RootFieldState | undefined;
  if (!state) throw new SvcError('unexpected', 'the root fields of the build are not indexed (its root-fields step has not run)');
  const out: Candidate[] = [];
  const capable = (s: ResolvedSource) => (root === 'mutation' ? s.kind.dialect.compileMutation : s.kind.dialect.compileSelect) !== undefined;
  for (const o of state.index.owners(fieldKey(root, name))) {
    const source = o.table && resolved.sources.get(o.table.source);
    const m = source && capable(source) ? source.tables.get(o.table!.key)?.model : undefined;
    if (!m?.inSchema) continue;
    for (const kind of KINDS[root]) if (tableFieldName(source!, m, kind) === name) out.push({ source: source!, key: m.key, kind });
  }
  if (root !== 'mutation') {
    for (const source of resolved.sources.values()) {
      const base = capable(source) ? unprefixed(sourceNames(source), name) : undefined;
      if (!base?.endsWith(GROUPS)) continue;
      for (const key of byGraphQLName(source).get(base.slice(0, -GROUPS.length)) ?? []) out.push({ source, key, kind: 'select_groups' });
    }
  }
  return out.length > 1 ? inTableOrder(resolved, out) : out;
}

const GROUPS = '_groups';

/** `name` without the root field prefix and suffix of a source's customization; undefined where
 * it has not got them. */
function unprefixed(names: SourceNames, name: string): string | undefined {
  let affixes = affixesOf.get(names);
  if (!affixes) affixesOf.set(names, (affixes = names.field('\u0000').split('\u0000') as [string, string]));
  const [prefix, suffix] = affixes;
  return name.length >= prefix.length + suffix.length && name.startsWith(prefix) && name.endsWith(suffix) ? name.slice(prefix.length, name.length - suffix.length) : undefined;
}
const affixesOf = new WeakMap<SourceNames, [string, string]>();

/** A source's tables in the schema by GraphQL name (one build's: made when `<t>_groups` is first
 * looked up, which the index of root fields does not hold). */
function byGraphQLName(source: ResolvedSource): ReadonlyMap<string, string[]> {
  let map = graphQLNames.get(source);
  if (!map) {
    map = new Map();
    for (const [key, rt] of source.tables) {
      if (!rt.model?.inSchema) continue;
      const keys = map.get(rt.model.name);
      if (keys) keys.push(key);
      else map.set(rt.model.name, [key]);
    }
    graphQLNames.set(source, map);
  }
  return map;
}
const graphQLNames = new WeakMap<ResolvedSource, Map<string, string[]>>();

/** Candidates of one name from several tables (root fields in conflict, reported as
 * inconsistencies) in the sources' and their tables' order, which decides the one kept. */
function inTableOrder(resolved: DatabaseBuild, cs: Candidate[]): Candidate[] {
  const at = new Map<Candidate, number>();
  let n = 0;
  for (const source of resolved.sources.values()) {
    for (const key of source.tables.keys()) {
      n++;
      for (const c of cs) if (c.source === source && c.key === key) at.set(c, n);
    }
  }
  return cs.sort((a, b) => at.get(a)! - at.get(b)!);
}

/** A role's tables on one root, as its schema has them (those of some sources). */
export interface RoleTableFields {
  /** Whether the role has the candidate's field here. */
  has(c: Candidate): boolean;
  /** The candidate's field (one the role has). */
  make(c: Candidate): RootFieldDef;
  /** Every field the role has, by name and candidate, in the root's order: its tables' order,
   * `<t>_groups` after the others (names may repeat). */
  fields(): Iterable<[string, Candidate]>;
}

/**
 * Which of the fields of one name a root keeps, as its fields were once assigned one after
 * another into one map: a `<t>_stream` over the others (its map was assigned last), any other
 * over `<t>_groups` (added only where the name was free); among fields of one rank the last
 * table's, but of `<t>_groups` the first's.
 */
const RANK: Partial<Record<TableFieldKind, number>> = { select_groups: 0, select_stream: 2 };
const rankOf = (c: Candidate) => RANK[c.kind] ?? 1;
/** Whether `c`, met after `kept` in the root's order, takes the name from it. */
const takes = (c: Candidate, kept: Candidate | undefined) => !kept || rankOf(c) > rankOf(kept) || (rankOf(c) === rankOf(kept) && rankOf(c) !== 0);

function chosen(candidates: readonly Candidate[], tables: RoleTableFields): Candidate | undefined {
  let best: Candidate | undefined;
  for (const c of candidates) if (tables.has(c) && takes(c, best)) best = c;
  return best;
}

/**
 * A root's fields: `first`'s (functions, namespaces: few), then the role's table fields (`tables`:
 * those of the sources without a namespace, whose fields are in `first`) of the `candidatesOf` a
 * name. Once every name has been walked (a whole schema, introspection), a
 * name's field comes from the walk rather than from its candidates, which cost a lookup in the
 * build's index each.
 */
export function rootLookup(candidatesOf: (name: string) => readonly Candidate[], first: RootFieldMap, tables: RoleTableFields): RootFieldLookup {
  // The fields made, by name; a name that gives none is not kept (requests name what they
  // like: kept, they would grow the map until the next change).
  const made = new Map<string, RootFieldDef>();
  let walked: ReadonlyMap<string, Candidate> | undefined;
  return new RootFieldLookup(
    (name) => {
      if (Object.hasOwn(first, name)) return first[name];
      let f = made.get(name);
      if (f === undefined) {
        const c = walked ? walked.get(name) : chosen(candidatesOf(name), tables);
        if (c) made.set(name, (f = tables.make(c)));
      }
      return f;
    },
    function* () {
      const seen = new Set(Object.keys(first));
      yield* seen;
      const kept = new Map<string, Candidate>();
      for (const [n, c] of tables.fields()) {
        if (takes(c, kept.get(n))) kept.set(n, c);
        if (seen.has(n)) continue;
        seen.add(n);
        yield n;
      }
      walked ??= kept;
    },
  );
}
