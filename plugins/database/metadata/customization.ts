/**
 * Table configuration: `<prefix>_set_table_customization` (legacy `set_table_customization`) and the
 * deprecated legacy `set_table_custom_fields` (version 2); the TableConfig schema; the GraphQL names
 * a tracked table gets (its root fields, its columns' field names) and the checks on them:
 *   - the table's own check (Note [Table checks] in model/service.ts): configured columns exist, column
 *     field names are GraphQL names and distinct;
 *   - root field names must not clash across the tables and functions of all sources.
 * (Relationships and computed fields check their names against `columnGraphQLName` themselves.)
 */
import { GraphQLNameSchema, isGraphQLName, optionalComment } from '../../../core/validation.js';
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { BuildContext, OperationContext, OperationDef } from '../../../core/plugin.js';
import type {
  CommandGroup,
  KindBinding,
  Metadata,
  RootFieldOwner,
  RootFields,
  SourceMeta,
  TableConfig,
  TableInfo,
  TableMeta,
} from '../model/types.js';
import { qtKey, requireTable, SourceNameSchema, sourcesOf, updateTable } from '../model/meta.js';
import { columnGraphQLName, inGraphQLSchema, ROOT_FIELD_KEYS, rootFieldName, rootFieldNames, sourceNames, tableGraphQLName, type RootFieldKey } from '../model/naming.js';

export { columnGraphQLName, inGraphQLSchema, rootFieldNames, tableGraphQLName };
import type { DatabaseService } from '../model/service.js';
import { changedRun } from '../../../lib/lists.js';

const success = { message: 'success' };

// ---------------------------------------------------------------------------------------------
// GraphQL names

export { GraphQLNameSchema, isGraphQLName };

/** `a`, `a and b`, `a, b, and c` (Hasura's englishList). */
export function englishList(items: string[], joiner = 'and'): string {
  if (items.length <= 1) return items.join('');
  if (items.length === 2) return `${items[0]} ${joiner} ${items[1]}`;
  return `${items.slice(0, -1).join(', ')}, ${joiner} ${items[items.length - 1]}`;
}

// ---------------------------------------------------------------------------------------------
// TableConfig: parsed as Hasura parses it, stored as Hasura exports it

/** A custom root field: null, a name, or `{name, comment}`. Hasura ignores a text that is not a
 * GraphQL name (it keeps the default name, and answers success) but rejects one given as
 * `{name}`; here both are refused, with the same message, so that a request that cannot do what
 * it says changes nothing (every GraphQL name in metadata is checked by GraphQLNameSchema). */
const CustomRootFieldSchema = v.pipe(
  v.union(
    [
      v.null(),
      GraphQLNameSchema,
      // No transformation inside the branch: a branch that fails after its type matched keeps its
      // own message (valibot reports such a branch instead of the union).
      v.pipe(
        v.looseObject({ name: v.optional(v.nullable(GraphQLNameSchema)), comment: optionalComment }),
        // Typos would otherwise be dropped silently and the default name kept.
        v.check(
          (o) => Object.keys(o).every((k) => k === 'name' || k === 'comment'),
          (issue) => `unexpected key "${Object.keys(issue.input).find((k) => k !== 'name' && k !== 'comment')}" in a custom root field: expected "name" or "comment"`,
        ),
        v.check((o) => 'name' in o || 'comment' in o, 'a custom root field object needs a key: expected "name" or "comment"'),
      ),
    ],
    (issue) => `parsing CustomRootField failed, expected Object, String or Null, but encountered ${jsonType(issue.input)}`,
  ),
  v.transform((f) => {
    if (f === null) return null;
    if (typeof f === 'string') return f;
    return f.comment == null ? (f.name ?? null) : { name: f.name ?? null, comment: f.comment };
  }),
);

const jsonType = (x: unknown) => (Array.isArray(x) ? 'Array' : typeof x === 'number' ? 'Number' : typeof x === 'boolean' ? 'Boolean' : 'Object');

export const CustomRootFieldsSchema = v.pipe(
  v.object(Object.fromEntries(ROOT_FIELD_KEYS.map((k) => [k, v.optional(CustomRootFieldSchema)])) as Record<RootFieldKey, v.OptionalSchema<typeof CustomRootFieldSchema, undefined>>),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const out: Record<string, unknown> = {};
    for (const k of ROOT_FIELD_KEYS) if (dataset.value[k] != null) out[k] = dataset.value[k];
    const names = Object.values(out).map(rootFieldName).filter((n): n is string => n !== null);
    const dups = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
    if (dups.length > 0) {
      addIssue({ message: `the following custom root field names are duplicated: ${englishList(dups)}` });
      return NEVER;
    }
    return out;
  }),
);

/** A source's `customization` (Hasura's SourceCustomization): every name in it a GraphQL name,
 * other keys (`naming_convention`) kept as given. */
const optionalName = v.optional(v.nullable(GraphQLNameSchema));
export const SourceCustomizationSchema = v.looseObject({
  root_fields: v.optional(v.nullable(v.looseObject({ namespace: optionalName, prefix: optionalName, suffix: optionalName }))),
  type_names: v.optional(
    v.nullable(v.looseObject({ prefix: optionalName, suffix: optionalName, mapping: v.optional(v.nullable(v.record(GraphQLNameSchema, GraphQLNameSchema))) })),
  ),
});

const ColumnConfigSchema = v.object({
  custom_name: v.optional(v.nullable(GraphQLNameSchema)),
  comment: optionalComment,
});

/**
 * TableConfig. The deprecated `custom_column_names` is merged into `column_config` (which wins),
 * and the result is kept in Hasura's export shape: `custom_root_fields`, `custom_column_names`
 * (derived from `column_config`), `column_config` (non-empty entries), then the optional names.
 */
export const TableConfigSchema = v.pipe(
  v.object({
    custom_name: v.optional(v.nullable(GraphQLNameSchema)),
    identifier: v.optional(v.nullable(GraphQLNameSchema)),
    custom_root_fields: v.optional(v.nullable(CustomRootFieldsSchema)),
    custom_column_names: v.optional(v.nullable(v.record(v.string(), GraphQLNameSchema))),
    column_config: v.optional(v.nullable(v.record(v.string(), ColumnConfigSchema))),
    comment: optionalComment,
  }),
  v.transform((c) => normaliseConfig(c as TableConfig)),
);

function normaliseConfig(c: TableConfig): TableConfig {
  const columns: Record<string, { custom_name?: string; comment?: string }> = {};
  for (const [col, name] of Object.entries(c.custom_column_names ?? {})) columns[col] = { custom_name: name };
  for (const [col, cc] of Object.entries(c.column_config ?? {})) {
    const merged = { ...columns[col] };
    if (cc.custom_name != null) merged.custom_name = cc.custom_name;
    if (cc.comment != null) merged.comment = cc.comment;
    columns[col] = merged;
  }
  const out: TableConfig = {
    custom_root_fields: c.custom_root_fields ?? {},
    custom_column_names: {},
    column_config: {},
  };
  for (const [col, cc] of Object.entries(columns)) {
    if (cc.custom_name !== undefined) out.custom_column_names![col] = cc.custom_name;
    if (cc.custom_name !== undefined || cc.comment !== undefined) out.column_config![col] = cc;
  }
  if (c.custom_name != null) out.custom_name = c.custom_name;
  if (c.identifier != null) out.identifier = c.identifier;
  if (c.comment != null) out.comment = c.comment;
  return out;
}

/** A table's configuration after its column `from` was renamed to `to` (run_sql renames). */
export function renameColumnInConfig(config: TableConfig | undefined, from: string, to: string): TableConfig | undefined {
  if (!config) return config;
  const rename = <T>(m: Record<string, T> | undefined) =>
    m && from in m ? Object.fromEntries(Object.entries(m).map(([k, val]) => [k === from ? to : k, val])) : m;
  return { ...config, custom_column_names: rename(config.custom_column_names), column_config: rename(config.column_config) };
}

/** A table's configuration without the settings of a dropped column (run_sql drops). */
export function dropColumnFromConfig(config: TableConfig | undefined, column: string): TableConfig | undefined {
  if (!config) return config;
  const drop = <T>(m: Record<string, T> | undefined) => (m && column in m ? Object.fromEntries(Object.entries(m).filter(([k]) => k !== column)) : m);
  return { ...config, custom_column_names: drop(config.custom_column_names), column_config: drop(config.column_config) };
}

// ---------------------------------------------------------------------------------------------
// Root fields

/**
 * The root fields a tracked table defines (as the admin role sees them): select fields under
 * query and subscription, mutations as far as the relation allows (none for a materialized view,
 * per updatability for a view), `_by_pk` fields only with a primary key. Custom root fields
 * replace the default names.
 */
export function tableRootFields(t: TableMeta, info: TableInfo | undefined, defaultSchema: string): RootFields {
  const hit = rootFieldCache.get(t);
  if (hit && hit.info === info && hit.defaultSchema === defaultSchema) return hit.fields;
  const fields = computeTableRootFields(t, info, defaultSchema);
  rootFieldCache.set(t, { info, defaultSchema, fields });
  return fields;
}

/** Root fields per table entry: entries are immutable (Note [Sharing]), so an untouched table's
 * fields are not computed again. */
const rootFieldCache = new WeakMap<TableMeta, { info: TableInfo | undefined; defaultSchema: string; fields: RootFields }>();

function computeTableRootFields(t: TableMeta, info: TableInfo | undefined, defaultSchema: string): RootFields {
  const out: RootFields = { query: [], mutation: [], subscription: [] };
  if (!info || !inGraphQLSchema(t, defaultSchema)) return out;
  const name = tableGraphQLName(t, defaultSchema);
  const custom = (t.configuration?.custom_root_fields ?? {}) as Record<string, unknown>;
  const field = (key: RootFieldKey, dflt: string) => rootFieldName(custom[key]) ?? dflt;
  const pk = info.primaryKey !== null;
  const select = [field('select', name), ...(pk ? [field('select_by_pk', `${name}_by_pk`)] : []), field('select_aggregate', `${name}_aggregate`)];
  out.query.push(...select);
  out.subscription.push(...select, field('select_stream', `${name}_stream`));
  const can = (op: 'insertable' | 'updatable' | 'deletable') => info.relation !== 'materialized_view' && (info.viewInfo ? info.viewInfo[op] : true);
  if (can('insertable')) out.mutation.push(field('insert', `insert_${name}`), field('insert_one', `insert_${name}_one`));
  if (can('updatable')) {
    out.mutation.push(field('update', `update_${name}`));
    if (pk) out.mutation.push(field('update_by_pk', `update_${name}_by_pk`));
    out.mutation.push(field('update_many', `update_${name}_many`));
  }
  if (can('deletable')) {
    out.mutation.push(field('delete', `delete_${name}`));
    if (pk) out.mutation.push(field('delete_by_pk', `delete_${name}_by_pk`));
  }
  return out;
}

const ROOTS: [keyof RootFields, string][] = [
  ['mutation', 'mutation_root'],
  ['subscription', 'subscription_root'],
  ['query', 'query_root'],
];

/*
 * Note [Root field conflicts]
 * Two objects of any sources that define the same root field make the GraphQL schema impossible.
 * Every command group contributes its objects' root fields (`CommandGroup.rootFields`, cached per
 * table entry; the tables group takes a table's owner from its previous list where that holds the
 * same entry at the same place, a comparison where the cache costs a lookup and a name's quoting,
 * about 0.4 µs a table), so tables, functions and whatever comes later are checked together. The check
 * follows the change: each build keeps an index from root field to owners, as a layer over the
 * previous build's (owners whose fields object changed are masked and re-added), so a build only
 * looks up the fields of the owners that changed and of the conflicts already known. A lookup
 * walks the layers, one step each, so every FLATTEN_DEPTH builds the layers above the flat index
 * are collapsed into one (each owner they touched masked, and added again as its top-most layer
 * has it), which costs what the layers hold; the index is made flat again when a quarter of the
 * owners or more changed since it was, in a build or across the collapsed layers (a flatten
 * costs every field of every owner once: at 10,000 tables, 140,000 keys and over 100 ms; a
 * change of every owner through deep layers cost replace_metadata at 2,000 tables about a
 * second). A conflict
 * is reported as an inconsistency that an operation introducing it turns into Hasura's 500
 * `unexpected`. The index also tells a role's GraphQL schema which tables may give a root field
 * of a name: a table's owner carries its source and key (Note [Root fields by name] in
 * core/schema/assembly.ts, plugins/database/schema/root-lookup.ts).
 */
export const FLATTEN_DEPTH = 256;
export const fieldKey = (root: keyof RootFields, f: string) => `${root}\u0000${f}`;

const NO_OWNERS: readonly RootFieldOwner[] = [];

export class FieldIndex {
  constructor(
    private readonly parent: FieldIndex | undefined,
    /** Owners by name. */
    private readonly masked: ReadonlySet<string>,
    private readonly added: ReadonlyMap<string, RootFieldOwner[]>,
    readonly depth: number,
  ) {}

  /** The owners of root field `key` (read, never changed, by the callers). */
  owners(key: string): readonly RootFieldOwner[] {
    const add = this.added.get(key);
    if (!this.parent) return add ?? NO_OWNERS;
    const base = this.parent.owners(key).filter((o) => !this.masked.has(o.owner));
    return add ? base.concat(add) : base;
  }

  /** The same index as one layer over the flat one (Note [Root field conflicts]): every owner a
   * layer masked or added is masked, and added with the keys of the top-most layer that has it. */
  collapsed(): FieldIndex {
    if (!this.parent) return this;
    const decided = new Set<string>();
    const added = new Map<string, RootFieldOwner[]>();
    let layer: FieldIndex = this;
    for (; layer.parent; layer = layer.parent) {
      const here = new Set<string>();
      for (const [k, owners] of layer.added) {
        for (const o of owners) {
          if (decided.has(o.owner)) continue;
          here.add(o.owner);
          const list = added.get(k);
          if (list) list.push(o);
          else added.set(k, [o]);
        }
      }
      for (const o of layer.masked) here.add(o);
      for (const o of here) decided.add(o);
    }
    return new FieldIndex(layer, decided, added, 1);
  }

  /** How many owners the layers above the flat index mask (a collapsed index's). */
  get maskedOwners(): number {
    return this.masked.size;
  }
}

function addedFields(owners: Iterable<RootFieldOwner>): Map<string, RootFieldOwner[]> {
  const added = new Map<string, RootFieldOwner[]>();
  for (const o of owners) {
    for (const k of fieldKeys(o.fields)) {
      const list = added.get(k);
      if (!list) added.set(k, [o]);
      else if (!list.includes(o)) list.push(o);
    }
  }
  return added;
}

/** An owner's root fields as the index's keys, kept per fields object (cached per table entry):
 * a flat index over 10,000 tables made 140,000 new strings, each hashed as it went in, and took
 * 180-200 ms every FLATTEN_DEPTH builds (the two-core machine, 2026-11-29). */
function fieldKeys(fields: RootFields): readonly string[] {
  let keys = fieldKeysCache.get(fields);
  if (!keys) {
    const made: string[] = [];
    for (const root of ['query', 'mutation', 'subscription'] as const) for (const f of fields[root]) made.push(fieldKey(root, f));
    fieldKeysCache.set(fields, (keys = made));
  }
  return keys;
}
const fieldKeysCache = new WeakMap<RootFields, readonly string[]>();

/**
 * An owner's root fields as the source's customization names them (schema/names.ts): with its
 * prefix and suffix, and inside its namespace (`<namespace>.<field>`, which clash only with the
 * same source's). Kept by object per (owner, customization), so an untouched table stays the
 * same owner object for the incremental check.
 */
const customized = new WeakMap<RootFieldOwner, { c: object; owner: RootFieldOwner }>();
function customizedOwner(source: SourceMeta, o: RootFieldOwner): RootFieldOwner {
  const c = source.customization;
  if (!c) return o;
  const hit = customized.get(o);
  if (hit && hit.c === c) return hit.owner;
  const names = sourceNames({ meta: source });
  const name = (f: string) => (names.namespace ? `${names.namespace}.${names.field(f)}` : names.field(f));
  const owner: RootFieldOwner = { ...o, fields: { query: o.fields.query.map(name), mutation: o.fields.mutation.map(name), subscription: o.fields.subscription.map(name) } };
  customized.set(o, { c, owner });
  return owner;
}

const namespaceOwners = new Map<string, RootFieldOwner>();
function namespaceOwner(source: string, ns: string): RootFieldOwner {
  const key = `${source}\u0000${ns}`;
  let o = namespaceOwners.get(key);
  if (!o) namespaceOwners.set(key, (o = { owner: `namespace ${ns} of source ${source}`, fields: { query: [ns], mutation: [ns], subscription: [ns] } }));
  return o;
}

export interface RootFieldState {
  /** Owners per source, in order; an unchanged table keeps its owner object. */
  bySource: Map<string, RootFieldOwner[]>;
  index: FieldIndex;
  conflicts: string[];
}

export function reportRootFieldConflicts(db: DatabaseService, ctx: BuildContext): RootFieldState {
  const bySource = new Map<string, RootFieldOwner[]>();
  for (const src of db.resolved(ctx).sources.values()) {
    // The groups' lists as they are where nothing renames their fields: the tables group gives
    // the previous build's list where the tables are unchanged, which diffOwners then passes by
    // (a copy cost a build at 10,000 tables about a millisecond).
    const lists: RootFieldOwner[][] = [];
    for (const g of db.commandGroups) {
      const owners = g.rootFields?.(src.meta, src.introspection ?? undefined);
      if (owners?.length) lists.push(src.meta.customization ? owners.map((o) => customizedOwner(src.meta, o)) : owners);
    }
    const ns = sourceNames(src).namespace;
    // A namespace is a root field of its own (namespace.ts), beside the other sources' fields.
    if (ns) lists.push([namespaceOwner(src.name, ns)]);
    bySource.set(src.name, lists.length === 1 ? lists[0]! : lists.flat());
  }
  const prev = ctx.previous?.outputs.get('root-fields') as RootFieldState | undefined;
  const state = rootFieldState(prev, bySource);
  if (state.conflicts.length) reportConflicts(ctx, allOwners(bySource), new Set(state.conflicts), state.index);
  return state;
}

const allOwners = (bySource: ReadonlyMap<string, RootFieldOwner[]>): [string, RootFields][] => [...bySource.values()].flat().map((o) => [o.owner, o.fields]);

/** The index of the owners `bySource` lists, as a layer over `prev`'s where that is cheaper, and
 * the root fields with more than one owner (Note [Root field conflicts]). `depthLimit` is
 * FLATTEN_DEPTH but in tests. */
export function rootFieldState(prev: RootFieldState | undefined, bySource: Map<string, RootFieldOwner[]>, depthLimit = FLATTEN_DEPTH): RootFieldState {
  let index: FieldIndex | undefined;
  let candidates: Iterable<string> = [];
  if (prev) {
    const masked = new Set<string>();
    const changed = new Map<string, RootFieldOwner>();
    for (const [name, list] of bySource) diffOwners(prev.bySource.get(name) ?? [], list, masked, changed);
    for (const [name, list] of prev.bySource) if (!bySource.has(name)) diffOwners(list, [], masked, changed);
    // A layer costs each lookup a walk down every layer below it, and a change of most owners
    // (replace_metadata: every table entry is new) looks up every field: then a flat index,
    // which costs every field once, is the cheaper (Note [Root field conflicts]).
    let total = 0;
    for (const list of bySource.values()) total += list.length;
    const under = prev.index.depth < depthLimit ? prev.index : prev.index.collapsed();
    if (changed.size * 4 <= total && (under === prev.index || under.maskedOwners * 4 <= total)) {
      const added = addedFields(changed.values());
      index = new FieldIndex(under, masked, added, under.depth + 1);
      candidates = new Set([...prev.conflicts, ...added.keys()]);
    }
  }
  if (!index) {
    // One owner of a name (the last listed), as the layers mask by name.
    const owners = new Map([...bySource.values()].flat().map((o) => [o.owner, o]));
    const added = addedFields(owners.values());
    index = new FieldIndex(undefined, new Set(), added, 0);
    candidates = added.keys();
  }
  const conflicts = [...candidates].filter((k) => index.owners(k).length > 1);
  return { bySource, index, conflicts };
}

/** The owners that differ between two lists: compared by reference outside the common prefix and
 * suffix, so an unchanged source costs a scan of pointers. */
function diffOwners(prev: RootFieldOwner[], next: RootFieldOwner[], masked: Set<string>, changed: Map<string, RootFieldOwner>) {
  const run = changedRun(prev, next);
  const before = new Map(prev.slice(run.start, run.prevEnd).map((o) => [o.owner, o.fields]));
  const after = next.slice(run.start, run.nextEnd);
  const kept = new Set<string>();
  for (const o of after) {
    if (before.get(o.owner) === o.fields) {
      kept.add(o.owner);
      continue;
    }
    if (before.has(o.owner)) masked.add(o.owner);
    changed.set(o.owner, o);
  }
  for (const name of before.keys()) if (!kept.has(name) && !changed.has(name)) masked.add(name);
}

/** Hasura's message: the first root type with conflicts, its fields last-defined first. */
function reportConflicts(ctx: BuildContext, owners: [string, RootFields][], conflicts: Set<string>, index: FieldIndex) {
  for (const [root, typeName] of ROOTS) {
    const ordered: string[] = [];
    for (let i = owners.length - 1; i >= 0; i--) {
      const fields = owners[i]![1][root];
      for (let j = fields.length - 1; j >= 0; j--) {
        const f = fields[j]!;
        if (conflicts.has(fieldKey(root, f)) && !ordered.includes(f)) ordered.push(f);
      }
    }
    if (ordered.length === 0) continue;
    const clashes = ordered.map((f) => `'${f}' defined in [${[...new Set(index.owners(fieldKey(root, f)).map((o) => o.owner))].sort().join(', ')}]`);
    const what = clashes.length === 1 ? `field ${clashes[0]}` : `fields: [\n  ${clashes.join(',\n  ')}\n]`;
    ctx.inconsistent({
      type: 'root_fields',
      name: typeName,
      reason: `Encountered conflicting definitions in the selection set for '${typeName}' for ${what}. Fields must not be defined more than once across all sources.`,
      definition: clashes,
      id: `root_fields:${typeName}:${clashes.join('|')}`,
      error: { code: 'unexpected', status: 500 },
    });
    return;
  }
}

/** The constraint names of a table in the schema become GraphQL enum values, so they must be
 * GraphQL names (checked when a table enters the schema). */
export function checkConstraintNames(t: TableMeta, info: TableInfo, defaultSchema: string): void {
  if (!inGraphQLSchema(t, defaultSchema)) return;
  for (const c of [info.primaryKey, ...info.uniqueConstraints]) {
    if (c && !isGraphQLName(c.name)) {
      throw new SvcError('validation-failed', `cannot include "${c.name}" in the GraphQL schema because it is not a valid GraphQL identifier`, { path: '$.args' });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Build checks

/** The table's own check: its column settings name existing columns, and every column gets a
 * distinct GraphQL field name. */
function checkColumns(t: TableMeta, info: TableInfo): string | undefined {
  const config = t.configuration;
  const columns = new Set(info.columns.map((c) => c.name));
  for (const col of Object.keys(config?.column_config ?? {})) {
    if (!columns.has(col)) return `configuration was given for the column "${col}", but no such column exists`;
  }
  const byName = new Map<string, string[]>();
  for (const c of info.columns) {
    const name = columnGraphQLName(config, c.name);
    if (!isGraphQLName(name)) return `cannot include "${name}" in the GraphQL schema because  it is not a valid GraphQL identifier`;
    byName.set(name, [...(byName.get(name) ?? []), c.name]);
  }
  for (const [name, cols] of byName) {
    if (cols.length > 1) {
      return `the definitions of columns ${englishList(cols.map((c) => `"${c}"`))} are in conflict: they are mapped to the same field name, "${name}"`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Operations

export function customizationGroup(db: DatabaseService): CommandGroup {
  return {
    name: 'customization',
    operations(bind: KindBinding): OperationDef[] {
      const defaultSchema = bind.kind.dialect.defaultSchema;
      const setArgs = v.object({
        table: bind.table,
        source: SourceNameSchema,
        configuration: v.optional(v.nullable(TableConfigSchema)),
      });
      const setConfiguration = async (source: string, table: TableMeta['table'], configuration: TableConfig, ctx: OperationContext) => {
        requireTable(ctx.metadata, source, table, defaultSchema, '$.args');
        const md = updateTable(ctx.metadata, source, table, defaultSchema, (t) => ({ ...t, configuration }));
        const info = (await db.introspection(ctx, source)).tables.get(qtKey(table));
        const entry = requireTable(md, source, table, defaultSchema);
        if (info) checkConstraintNames(entry, info, defaultSchema);
        return { metadata: md, response: success, defines: [`table:${source}:${qtKey(table)}`] };
      };
      const ops: OperationDef[] = [
        {
          type: bind.name('set_table_customization'),
          legacy: bind.legacy('set_table_customization'),
          args: setArgs,
          mutates: true,
          run: (a: v.InferOutput<typeof setArgs>, ctx) => setConfiguration(a.source, a.table, a.configuration ?? normaliseConfig({}), ctx),
        },
      ];
      const legacyCustomFields = bind.legacy('set_table_custom_fields');
      if (legacyCustomFields) {
        const customFieldsArgs = v.object({
          table: bind.table,
          source: SourceNameSchema,
          custom_root_fields: v.optional(v.nullable(CustomRootFieldsSchema)),
          custom_column_names: v.optional(v.nullable(v.record(v.string(), GraphQLNameSchema))),
        });
        ops.push({
          type: null,
          legacy: legacyCustomFields,
          versions: [2],
          args: customFieldsArgs,
          mutates: true,
          run: (a: v.InferOutput<typeof customFieldsArgs>, ctx) =>
            setConfiguration(
              a.source,
              a.table,
              normaliseConfig({ custom_root_fields: a.custom_root_fields ?? {}, custom_column_names: a.custom_column_names ?? {} }),
              ctx,
            ),
        });
      }
      return ops;
    },
    checkTable: ({ table, info }) => {
      const reason = checkColumns(table, info);
      return reason === undefined ? undefined : { reason };
    },
  };
}

