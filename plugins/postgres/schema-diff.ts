/**
 * The difference that SQL made to the tables and functions the metadata refers to, from the
 * introspection before and after it ran. Objects are followed by identity, not by name (as Hasura
 * does): a table by its oid, a column by its table's oid and its attnum, a function by its oid. So
 * a table that keeps its oid under another name is renamed, not dropped; a column dropped and
 * added again under the same name is a dropped column (its attnum changes).
 */
import {
  qtKey,
  tableKey,
  type ForeignKeyInfo,
  type FunctionInfo,
  type Introspection,
  type QualifiedFunction,
  type QualifiedTable,
  type TableInfo,
} from '../database/index.js';

export interface Renamed<T> {
  from: T;
  to: T;
}

export interface TableDiff {
  /** The table's name before and after (equal unless renamed). */
  before: QualifiedTable;
  after: QualifiedTable;
  renamedColumns: Renamed<string>[];
  droppedColumns: string[];
  /** Columns (by their new name) whose type changed. */
  retypedColumns: { column: string; from: string; to: string }[];
  /** Foreign keys of the table that no longer exist, described with today's names (after renames;
   * a dropped referenced table keeps its old name). */
  droppedForeignKeys: ForeignKeyInfo[];
}

export interface SchemaDiff {
  droppedTables: QualifiedTable[];
  /** Tables that still exist (renamed or not) and changed. */
  tables: TableDiff[];
  droppedFunctions: QualifiedFunction[];
  renamedFunctions: Renamed<QualifiedFunction>[];
  /** Functions (by their new name) that now have several overloads. */
  overloadedFunctions: QualifiedFunction[];
  /** Functions (by their new name) that were made VOLATILE. */
  volatileFunctions: QualifiedFunction[];
}

const qt = (t: { schema: string; name: string }): QualifiedTable => ({ schema: t.schema, name: t.name });

/**
 * Diffs `tables` and `functions` (the ones the metadata refers to, by their names before the SQL)
 * between two introspections of one source. Objects missing from `before` are ignored: the
 * metadata was already inconsistent about them and the SQL did not change that.
 */
export function diffSchema(before: Introspection, after: Introspection, tables: QualifiedTable[], functions: QualifiedFunction[]): SchemaDiff {
  const afterTables = new Map<number, TableInfo>();
  for (const t of after.tables.values()) afterTables.set(t.oid, t);
  const nowOf = (t: TableInfo) => afterTables.get(t.oid);

  const diff: SchemaDiff = { droppedTables: [], tables: [], droppedFunctions: [], renamedFunctions: [], overloadedFunctions: [], volatileFunctions: [] };
  for (const name of tables) {
    const old = before.tables.get(qtKey(name));
    if (!old) continue;
    const now = afterTables.get(old.oid);
    if (!now) {
      diff.droppedTables.push(qt(old));
      continue;
    }
    const td = diffTable(old, now, before, nowOf);
    if (td) diff.tables.push(td);
  }

  const afterFunctions = new Map<number, FunctionInfo>();
  for (const list of after.functions.values()) for (const f of list) afterFunctions.set(f.oid, f);
  for (const name of functions) {
    const overloads = before.functions.get(qtKey(name)) ?? [];
    if (overloads.length !== 1) continue;
    const old = overloads[0]!;
    const now = afterFunctions.get(old.oid);
    if (!now) {
      diff.droppedFunctions.push(qt(old));
      continue;
    }
    if (now.schema !== old.schema || now.name !== old.name) diff.renamedFunctions.push({ from: qt(old), to: qt(now) });
    if ((after.functions.get(tableKey(now.schema, now.name)) ?? []).length > 1) diff.overloadedFunctions.push(qt(now));
    if (now.volatility === 'volatile' && old.volatility !== 'volatile') diff.volatileFunctions.push(qt(now));
  }
  return diff;
}

function diffTable(
  old: TableInfo,
  now: TableInfo,
  before: Introspection,
  nowOf: (t: TableInfo) => TableInfo | undefined,
): TableDiff | undefined {
  const nowByPos = new Map(now.columns.map((c) => [c.position, c]));
  const renamedColumns: Renamed<string>[] = [];
  const droppedColumns: string[] = [];
  const retypedColumns: TableDiff['retypedColumns'] = [];
  for (const c of old.columns) {
    const n = nowByPos.get(c.position);
    if (!n) {
      droppedColumns.push(c.name);
      continue;
    }
    if (n.name !== c.name) renamedColumns.push({ from: c.name, to: n.name });
    if (n.type !== c.type) retypedColumns.push({ column: n.name, from: c.type, to: n.type });
  }

  // A foreign key is gone when no key of the table today has the same columns, referenced table
  // and referenced columns (a renamed constraint is the same key).
  const droppedForeignKeys: TableDiff['droppedForeignKeys'] = [];
  if (old.foreignKeys.length > 0) {
    const colName = columnRenamer(old, now);
    for (const fk of old.foreignKeys) {
      if (fk.columns.some((c) => droppedColumns.includes(c))) continue; // the column's dependents cover it
      const refOld = before.tables.get(tableKey(fk.refSchema, fk.refTable));
      const refNow = refOld ? nowOf(refOld) : undefined;
      const refName = refNow ? qt(refNow) : { schema: fk.refSchema, name: fk.refTable };
      const refCol = refOld && refNow ? columnRenamer(refOld, refNow) : (c: string) => c;
      const columns = fk.columns.map(colName);
      const refColumns = fk.refColumns.map(refCol);
      const kept = now.foreignKeys.some(
        (k) => k.refSchema === refName.schema && k.refTable === refName.name && same(k.columns, columns) && same(k.refColumns, refColumns),
      );
      if (!kept) droppedForeignKeys.push({ name: fk.name, columns, refSchema: refName.schema, refTable: refName.name, refColumns });
    }
  }

  const renamed = old.schema !== now.schema || old.name !== now.name;
  if (!renamed && !renamedColumns.length && !droppedColumns.length && !retypedColumns.length && !droppedForeignKeys.length) return undefined;
  return { before: qt(old), after: qt(now), renamedColumns, droppedColumns, retypedColumns, droppedForeignKeys };
}

/** Maps a column's old name to its name today (by attnum); a dropped column keeps its old name. */
function columnRenamer(old: TableInfo, now: TableInfo): (name: string) => string {
  const nowByPos = new Map(now.columns.map((c) => [c.position, c.name]));
  const posByName = new Map(old.columns.map((c) => [c.name, c.position]));
  return (name) => nowByPos.get(posByName.get(name) ?? -1) ?? name;
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
