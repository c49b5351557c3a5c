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

/** How Hasura names a table in messages: `author`, or `other.author` outside `public`. */
export function qtDisplay(qt: QualifiedTable): string {
  return qt.schema === 'public' ? qt.name : `${qt.schema}.${qt.name}`;
}

export const sameTable = (a: QualifiedTable, b: QualifiedTable) => a.schema === b.schema && a.name === b.name;

// ---------------------------------------------------------------------------------------------
// Argument schemas shared by the command groups

/** A qualified name: text, or `{schema, name}` (schema defaults to `public`). */
const qualifiedName = (what: string) =>
  v.union(
    [
      v.pipe(v.string(), v.transform((name): QualifiedTable => ({ schema: 'public', name }))),
      v.pipe(
        v.object({ schema: v.optional(v.string(), 'public'), name: v.string() }),
        v.transform((o): QualifiedTable => ({ schema: o.schema, name: o.name })),
      ),
    ],
    `expected a ${what} name: a string or an object {schema, name}`,
  );

/** TableName (SPEC "Shared types"). */
export const QualifiedTableSchema = qualifiedName('table');
/** FunctionName (SPEC "Shared types"). */
export const QualifiedFunctionSchema = qualifiedName('function');

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

/** Tables by key, per tables list: made once per list (a change makes a new list), so that
 * lookups in a source of thousands of tables do not scan it each time. */
const tableIndex = new WeakMap<readonly TableMeta[], { length: number; byKey: Map<string, TableMeta> }>();

export function findTable(source: SourceMeta, qt: QualifiedTable): TableMeta | undefined {
  const tables = source.tables;
  // A short list is scanned: building a map would cost more.
  if (tables.length < 32) return tables.find((t) => sameTable(t.table, qt));
  let index = tableIndex.get(tables);
  // Lists are not changed once made (Note [Sharing]); one still being assembled may grow.
  if (!index || index.length !== tables.length) {
    const byKey = new Map<string, TableMeta>();
    for (const t of tables) if (!byKey.has(qtKey(t.table))) byKey.set(qtKey(t.table), t);
    tableIndex.set(tables, (index = { length: tables.length, byKey }));
  }
  return index.byKey.get(qtKey(qt));
}

export function requireTable(md: Metadata, source: string, qt: QualifiedTable, path = '$.args.table'): TableMeta {
  const s = requireSource(md, source);
  const t = findTable(s, qt);
  if (!t) throw new SvcError('not-exists', `table "${qtDisplay(qt)}" does not exist in source: ${source}`, { path });
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

export function updateTable(md: Metadata, source: string, qt: QualifiedTable, fn: (t: TableMeta) => TableMeta): Metadata {
  requireTable(md, source, qt);
  return updateSource(md, source, (s) => {
    const i = s.tables.findIndex((t) => sameTable(t.table, qt));
    const tables = s.tables.slice();
    tables[i] = orderTable(fn(s.tables[i]!));
    return { ...s, tables };
  });
}

/** Like updateTable, but leaves the document as it is when the source or table is gone
 * (dependents are removed in any order; see DatabaseService.cascade). */
export function updateTableIfPresent(md: Metadata, source: string, qt: QualifiedTable, fn: (t: TableMeta) => TableMeta): Metadata {
  const s = findSource(md, source);
  if (!s || !findTable(s, qt)) return md;
  return updateTable(md, source, qt, fn);
}

export function removeTable(md: Metadata, source: string, qt: QualifiedTable): Metadata {
  return updateSource(md, source, (s) => ({ ...s, tables: s.tables.filter((t) => !sameTable(t.table, qt)) }));
}

const TABLE_KEY_ORDER = [
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
