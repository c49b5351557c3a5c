/**
 * What the framework itself owns when a source's schema changes under the metadata (run_sql):
 * the tracked table and function entries and the column-keyed maps of a table's configuration.
 * Groups rewrite their own references through `CommandGroup.rename` (Note [Renames] in
 * service.ts). Pure transformations of the document that keep untouched parts by reference.
 */
import { orderTable, sameTable, sourcesOf, updateSource } from './meta.js';
import type { Metadata, QualifiedTable, SchemaRename, TableConfig } from './types.js';

/** Renames the tracked entry a rename is about (a table or function), or a column's keys in its
 * table's configuration (`custom_column_names`, `column_config`). */
export function renameOwnEntry(md: Metadata, r: SchemaRename): Metadata {
  const source = sourcesOf(md).find((s) => s.name === r.source);
  if (!source) return md;
  if (r.kind === 'table') {
    if (!source.tables.some((t) => sameTable(t.table, r.from))) return md;
    return updateSource(md, r.source, (s) => ({
      ...s,
      tables: s.tables.map((t) => (sameTable(t.table, r.from) ? orderTable({ ...t, table: r.to }) : t)),
    }));
  }
  if (r.kind === 'function') {
    if (!(source.functions ?? []).some((f) => sameTable(f.function, r.from))) return md;
    return updateSource(md, r.source, (s) => ({
      ...s,
      functions: (s.functions ?? []).map((f) => (sameTable(f.function, r.from) ? { ...f, function: r.to } : f)),
    }));
  }
  return updateConfigColumns(md, r.source, r.table, r.from, (cols) =>
    Object.fromEntries(Object.entries(cols).map(([k, val]) => [k === r.from ? r.to : k, val])),
  );
}

/** Forgets a dropped column's configuration (its custom name, its column_config), as Hasura does:
 * that is part of the column, not a dependent that needs `cascade`. */
export function forgetColumn(md: Metadata, source: string, table: QualifiedTable, column: string): Metadata {
  return updateConfigColumns(md, source, table, column, (cols) => Object.fromEntries(Object.entries(cols).filter(([k]) => k !== column)));
}

/** Applies `fn` to the column-keyed maps of a table's configuration that mention `column`. */
function updateConfigColumns(
  md: Metadata,
  sourceName: string,
  table: QualifiedTable,
  column: string,
  fn: (cols: Record<string, unknown>) => Record<string, unknown>,
): Metadata {
  const entry = sourcesOf(md)
    .find((s) => s.name === sourceName)
    ?.tables.find((t) => sameTable(t.table, table));
  const config = entry?.configuration;
  if (!entry || !config) return md;
  const next: Record<string, unknown> = { ...config };
  let changed = false;
  for (const key of ['custom_column_names', 'column_config'] as const) {
    const cols = config[key] as Record<string, unknown> | null | undefined;
    if (!cols || !Object.hasOwn(cols, column)) continue;
    next[key] = fn(cols);
    changed = true;
  }
  if (!changed) return md;
  return updateSource(md, sourceName, (s) => ({
    ...s,
    tables: s.tables.map((t) => (t === entry ? orderTable({ ...t, configuration: next as TableConfig }) : t)),
  }));
}
