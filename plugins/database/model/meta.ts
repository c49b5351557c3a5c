/**
 * Reading and updating the `sources` section without mutating it (Note [Sharing] in
 * core/plugin.ts): every update copies the path from the document root to the changed object.
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import { nameText } from '../../../core/validation.js';
import type { FunctionMeta, Metadata, QualifiedTable, SourceMeta, TableMeta } from './types.js';

/** Map key of a table or function: its SQL-quoted qualified name. */
export function tableKey(schema: string, name: string): string {
  return `"${schema.replace(/"/g, '""')}"."${name.replace(/"/g, '""')}"`;
}
/** The key of a table name object, computed once per object (names are immutable, Note [Sharing]):
 * builds look up every tracked table's key, so this keeps them from re-quoting names. */
export function qtKey(qt: QualifiedTable): string {
  let k = keyCache.get(qt);
  if (k === undefined) keyCache.set(qt, (k = tableKey(qt.schema, qt.name)));
  return k;
}
const keyCache = new WeakMap<QualifiedTable, string>();

/** How Hasura names a table in messages: `author`, or `other.author` outside the source kind's
 * default schema (`Dialect.defaultSchema`, PostgreSQL's `public`). */
export function qtDisplay(qt: QualifiedTable, defaultSchema: string): string {
  return qt.schema === defaultSchema ? qt.name : `${qt.schema}.${qt.name}`;
}

export const sameTable = (a: QualifiedTable, b: QualifiedTable) => a.schema === b.schema && a.name === b.name;

// ---------------------------------------------------------------------------------------------
// Argument schemas shared by the command groups

/** The schema of a qualified name: text, or `{schema, name}` (schema defaults to the source
 * kind's default schema, `Dialect.defaultSchema`). */
export type QualifiedNameSchema = v.GenericSchema<unknown, QualifiedTable>;

/** A qualified name (Note [Table names of a kind]): text, or `{schema, name}` (schema defaults
 * to `defaultSchema`); for a kind whose names are `{<namespace>, name}` (BigQuery's `{dataset,
 * name}`), that object, its namespace required (the framework's own `{schema, name}` form is also
 * read: it is how the metadata keeps every name). */
const qualifiedName = (what: string, defaultSchema: string, namespace: string): QualifiedNameSchema =>
  namespace === 'schema'
    ? v.union(
        [
          v.pipe(v.string(), v.transform((name): QualifiedTable => ({ schema: defaultSchema, name }))),
          v.pipe(
            v.object({ schema: v.optional(v.string(), defaultSchema), name: v.string() }),
            v.transform((o): QualifiedTable => ({ schema: o.schema, name: o.name })),
          ),
        ],
        `expected a ${what} name: a string or an object {schema, name}`,
      )
    : v.union(
        [
          v.pipe(
            v.object({ [namespace]: v.string(), name: v.string() }),
            v.transform((o): QualifiedTable => ({ schema: (o as Record<string, string>)[namespace]!, name: (o as { name: string }).name })),
          ),
          v.pipe(
            v.object({ schema: v.string(), name: v.string() }),
            v.transform((o): QualifiedTable => ({ schema: o.schema, name: o.name })),
          ),
        ],
        `expected a ${what} name: an object {${namespace}, name}`,
      );

/** Each schema is built once per default schema and namespace (there is one per source kind). */
function cached(what: string): (defaultSchema: string, namespace?: string) => QualifiedNameSchema {
  const made = new Map<string, QualifiedNameSchema>();
  return (defaultSchema, namespace = 'schema') => {
    const key = `${namespace}\u0000${defaultSchema}`;
    let s = made.get(key);
    if (!s) made.set(key, (s = qualifiedName(what, defaultSchema, namespace)));
    return s;
  };
}

/** TableName (SPEC "Shared types") of a source kind whose unqualified names are in `defaultSchema`
 * (and whose names' namespace key is `namespace`: Note [Table names of a kind]). */
export const qualifiedTableSchema = cached('table');
/** FunctionName (SPEC "Shared types") of a source kind whose unqualified names are in `defaultSchema`. */
export const qualifiedFunctionSchema = cached('function');

/** A table name as a document shows it (Note [Table names of a kind]): `{schema, name}` as kept,
 * or `{<namespace>, name}` for a kind that names its namespace otherwise. */
export function documentName(qt: QualifiedTable, namespace: string | undefined): Record<string, string> {
  if (!namespace || namespace === 'schema') return qt as unknown as Record<string, string>;
  return { [namespace]: qt.schema, name: qt.name };
}

export const SourceNameSchema = v.optional(nameText, 'default');

// ---------------------------------------------------------------------------------------------
// Lookups

export function sourcesOf(md: Metadata): SourceMeta[] {
  return (md.sources as SourceMeta[] | undefined) ?? [];
}

export function findSource(md: Metadata, name: string): SourceMeta | undefined {
  return sourcesOf(md).find((s) => s.name === name);
}

export function requireSource(md: Metadata, name: string, path = '$.args.source'): SourceMeta {
  const s = findSource(md, name);
  if (!s) throw new SvcError('not-exists', `source with name "${name}" does not exist`, { path });
  return s;
}

/*
 * Note [Table positions]
 * Lookups by name in a source of thousands of tables go through an index per tables list: key ->
 * position. A change makes a new list (Note [Sharing]), and a bulk of thousands of changes made
 * a new index for each: 10,000 operations at 2,000 tables spent most of their time re-indexing.
 * So a list made from another by replacing a table in place (updateTable) or appending one
 * (appendTable) takes over the other's map, which stays right for both: the positions of the
 * older list's tables do not move, and an appended key's position is past the older list's end.
 * A list made by removing the last table (withoutTable: untracking the table tracked last) takes
 * it over too: its tables keep their positions, and the removed key stays in the map, pointing
 * past the list's end. So a shared map holds every key of every list that shares it, at the
 * position each of them has it, until a key is appended at another position than the map gives
 * (a key removed and appended again after another): the map is then marked moved. A lookup
 * checks the table at the position it finds: there, it is found; a key the map does not hold is
 * in none of its lists, nor is a key found elsewhere in a map not moved (so tracking again the
 * table untracked last looks nothing up but the one position, where it scanned the whole list:
 * 0.6 ms of a pg_track_table at 10,000 tables); in a moved map the list gets an index of its own
 * (which the lists made from it share). So a shared map never answers wrong. A list of another
 * making (filtered, mapped, or still being assembled by push: its length differs from the
 * index's) gets an index of its own on its first lookup.
 */
interface TableIndex {
  length: number;
  pos: Map<string, number>;
}
const tableIndex = new WeakMap<readonly TableMeta[], TableIndex>();
/** The shared maps in which a key was appended at another position than the map gave. */
const moved = new WeakSet<Map<string, number>>();
/** A short list is scanned: building a map would cost more. */
const SCAN = 32;

function indexOf(tables: readonly TableMeta[], fresh = false): TableIndex {
  let idx = tableIndex.get(tables);
  if (!idx || idx.length !== tables.length || fresh) {
    const pos = new Map<string, number>();
    for (let i = 0; i < tables.length; i++) {
      const k = qtKey(tables[i]!.table);
      if (!pos.has(k)) pos.set(k, i);
    }
    tableIndex.set(tables, (idx = { length: tables.length, pos }));
  }
  return idx;
}

/** The position of a table in a source's tables, or -1 (Note [Table positions]). */
export function tablePosition(tables: readonly TableMeta[], qt: QualifiedTable): number {
  if (tables.length < SCAN) return tables.findIndex((t) => sameTable(t.table, qt));
  const key = qtKey(qt);
  const { pos } = indexOf(tables);
  const p = pos.get(key);
  if (p === undefined) return -1;
  if (p < tables.length && sameTable(tables[p]!.table, qt)) return p;
  return moved.has(pos) ? (indexOf(tables, true).pos.get(key) ?? -1) : -1;
}

export function findTable(source: SourceMeta, qt: QualifiedTable): TableMeta | undefined {
  const p = tablePosition(source.tables, qt);
  return p < 0 ? undefined : source.tables[p];
}

/** `tables` with `entry` added at the end, sharing its index (Note [Table positions]). */
export function appendTable(tables: readonly TableMeta[], entry: TableMeta): TableMeta[] {
  const next = [...tables, entry];
  if (next.length >= SCAN) {
    const { pos } = indexOf(tables);
    const k = qtKey(entry.table);
    // Where the map has the key at none of this list's tables, the new list's position; a
    // duplicate key keeps its first position, as in an index of its own.
    const at = pos.get(k);
    if (at === undefined || at >= tables.length || !sameTable(tables[at]!.table, entry.table)) {
      if (at !== undefined && at !== tables.length) moved.add(pos);
      pos.set(k, tables.length);
    }
    tableIndex.set(next, { length: next.length, pos });
  }
  return next;
}

/** `tables` without `qt`'s table; sharing its index when that table is the last (Note [Table
 * positions]). */
export function withoutTable(tables: readonly TableMeta[], qt: QualifiedTable): TableMeta[] {
  const last = tables.length - 1;
  let only = last >= 0 && sameTable(tables[last]!.table, qt);
  for (let i = 0; only && i < last; i++) if (sameTable(tables[i]!.table, qt)) only = false;
  if (only) {
    const next = tables.slice(0, last);
    const idx = tableIndex.get(tables);
    if (next.length >= SCAN && idx && idx.length === tables.length) tableIndex.set(next, { length: next.length, pos: idx.pos });
    return next;
  }
  return tables.filter((t) => !sameTable(t.table, qt));
}

/** A tracked table; the message names it as the source kind whose default schema is `defaultSchema` does. */
export function requireTable(md: Metadata, source: string, qt: QualifiedTable, defaultSchema: string, path = '$.args.table'): TableMeta {
  const s = requireSource(md, source);
  const t = findTable(s, qt);
  if (!t) throw new SvcError('not-exists', `table "${qtDisplay(qt, defaultSchema)}" does not exist in source: ${source}`, { path });
  return t;
}

export function findFunction(source: SourceMeta, qf: QualifiedTable): FunctionMeta | undefined {
  return (source.functions ?? []).find((f) => sameTable(f.function, qf));
}

// ---------------------------------------------------------------------------------------------
// Updates

export function setSources(md: Metadata, sources: SourceMeta[]): Metadata {
  return { ...md, sources };
}

export function updateSource(md: Metadata, name: string, fn: (s: SourceMeta) => SourceMeta): Metadata {
  const list = sourcesOf(md);
  const i = list.findIndex((s) => s.name === name);
  if (i < 0) throw new SvcError('not-exists', `source with name "${name}" does not exist`, { path: '$.args.source' });
  const next = list.slice();
  next[i] = fn(list[i]!);
  return setSources(md, next);
}

/** Replaces a tracked table's entry; `defaultSchema` (the source kind's) names the table when it is not tracked. */
export function updateTable(md: Metadata, source: string, qt: QualifiedTable, defaultSchema: string, fn: (t: TableMeta) => TableMeta): Metadata {
  requireTable(md, source, qt, defaultSchema);
  return replaceTable(md, source, qt, fn);
}

function replaceTable(md: Metadata, source: string, qt: QualifiedTable, fn: (t: TableMeta) => TableMeta): Metadata {
  return updateSource(md, source, (s) => {
    const i = tablePosition(s.tables, qt);
    const tables = s.tables.slice();
    tables[i] = orderTable(fn(s.tables[i]!));
    // The same table at the same position: the index stays right (Note [Table positions]).
    const idx = tableIndex.get(s.tables);
    if (idx && idx.length === s.tables.length) tableIndex.set(tables, { length: tables.length, pos: idx.pos });
    return { ...s, tables };
  });
}

/** Like updateTable, but leaves the document as it is when the source or table is gone
 * (dependents are removed in any order; see DatabaseService.cascade). */
export function updateTableIfPresent(md: Metadata, source: string, qt: QualifiedTable, fn: (t: TableMeta) => TableMeta): Metadata {
  const s = findSource(md, source);
  if (!s || !findTable(s, qt)) return md;
  return replaceTable(md, source, qt, fn);
}

export function removeTable(md: Metadata, source: string, qt: QualifiedTable): Metadata {
  return updateSource(md, source, (s) => ({ ...s, tables: withoutTable(s.tables, qt) }));
}

/** A table's keys in Hasura's order (its export and the Hasura CLI's files). */
export const TABLE_KEY_ORDER = [
  'table',
  'is_enum',
  'configuration',
  'object_relationships',
  'array_relationships',
  'computed_fields',
  'remote_relationships',
  'insert_permissions',
  'select_permissions',
  'update_permissions',
  'delete_permissions',
  'event_triggers',
  'apollo_federation_config',
];

/** Puts a table's keys in Hasura's order and leaves out empty lists and empty configuration. */
export function orderTable(t: TableMeta): TableMeta {
  const out: Record<string, unknown> = {};
  const keys = [...TABLE_KEY_ORDER, ...Object.keys(t).filter((k) => !TABLE_KEY_ORDER.includes(k))];
  for (const k of keys) {
    const val = t[k];
    if (val === undefined) continue;
    if (Array.isArray(val) && val.length === 0) continue;
    if (k === 'is_enum' && val === false) continue;
    if (k === 'configuration' && isEmptyConfig(val as Record<string, unknown>)) continue;
    out[k] = val;
  }
  return out as TableMeta;
}

function isEmptyConfig(c: Record<string, unknown> | null): boolean {
  if (!c) return true;
  return Object.entries(c).every(([, val]) => val === undefined || val === null || (typeof val === 'object' && Object.keys(val as object).length === 0));
}

/** A list without the element matching `pred`, or with it replaced by `next`. */
export function replaceIn<T>(list: T[] | undefined, pred: (x: T) => boolean, next?: T): T[] {
  const src = list ?? [];
  const out: T[] = [];
  let done = false;
  for (const x of src) {
    if (!done && pred(x)) {
      done = true;
      if (next !== undefined) out.push(next);
    } else out.push(x);
  }
  if (!done && next !== undefined) out.push(next);
  return out;
}
