/**
 * What a change of a source's schema (SQL run by run_sql) means for the metadata. First the
 * difference that SQL made to the tables and functions the metadata refers to, from the
 * introspection before and after it ran. Objects are followed by identity, not by name (as Hasura
 * does): a table by its oid, a column by its table's oid and its attnum, a function by its oid. So
 * a table that keeps its oid under another name is renamed, not dropped; a column dropped and
 * added again under the same name is a dropped column (its attnum changes). A kind without such
 * identities (TableInfo.oid absent) has its tables and functions followed by name.
 */
import { SvcError } from '../../../core/errors.js';
import { findSource, qtDisplay, qtKey, sameTable, sourcesOf, tableKey, updateSource } from '../model/meta.js';
import { forgetColumn } from '../model/rename.js';
import type { DatabaseService } from '../model/service.js';
import type {
  DepTarget,
  Dependent,
  ForeignKeyInfo,
  FunctionInfo,
  Introspection,
  Metadata,
  QualifiedFunction,
  QualifiedTable,
  SourceMeta,
  TableInfo,
} from '../model/types.js';
import { trackedFunctionId } from './functions.js';

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
  const afterTables = new Map<unknown, TableInfo>();
  for (const t of after.tables.values()) afterTables.set(identity(t), t);
  const nowOf = (t: TableInfo) => afterTables.get(identity(t));

  const diff: SchemaDiff = { droppedTables: [], tables: [], droppedFunctions: [], renamedFunctions: [], overloadedFunctions: [], volatileFunctions: [] };
  for (const name of tables) {
    const old = before.tables.get(qtKey(name));
    if (!old) continue;
    const now = afterTables.get(identity(old));
    if (!now) {
      diff.droppedTables.push(qt(old));
      continue;
    }
    const td = diffTable(old, now, before, nowOf);
    if (td) diff.tables.push(td);
  }

  const afterFunctions = new Map<unknown, FunctionInfo>();
  for (const list of after.functions.values()) for (const f of list) afterFunctions.set(identity(f), f);
  for (const name of functions) {
    const overloads = before.functions.get(qtKey(name)) ?? [];
    if (overloads.length !== 1) continue;
    const old = overloads[0]!;
    const now = afterFunctions.get(identity(old));
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

/** What an object is followed by: its kind's identity, else its name (TableInfo.oid). */
const identity = (o: { schema: string; name: string; oid?: number | string }): unknown => o.oid ?? `\u0000${o.schema}\u0000${o.name}`;

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

/*
 * Note [Schema changes]
 * What SQL run on a source (run_sql) did to the tables and functions the metadata refers to, found
 * by diffing the introspection before and after it ran (`diffSchema`), means for the metadata:
 *   1. renamed tables, functions and columns are carried into the metadata (Note [Renames] in
 *      model/service.ts);
 *   2. the dependents of dropped tables, columns and foreign keys fail the request with Hasura's
 *      dependency error, or are removed with `cascade`; what lives inside a dropped table goes with
 *      it, and a dropped tracked table leaves the metadata;
 *   3. a dropped tracked function leaves the metadata (with its permissions) even without
 *      `cascade`; a computed field whose function was dropped, or renamed (computed fields are
 *      not renamed with their function: Hasura finds them by the old name and counts them
 *      dropped), is itself a dependent in the sense of rule 2, as are the objects that use it;
 *   4. refused whatever `cascade` says (as Hasura): overloading a function the metadata uses,
 *      making it VOLATILE, and changing the type of a column that a dependent relies on
 *      (`Dependent.onType`).
 * All of it is computed on a draft of the metadata; the source kind runs the SQL and supplies the
 * two introspections (inside its transaction), so these rules are the same for every kind.
 */

/**
 * Carries a schema change found in a source into the draft metadata (Note [Schema changes]); throws
 * when it must be refused. `before` and `after` are introspections of the source around the change.
 */
export function applySchemaChange(db: DatabaseService, md: Metadata, source: string, before: Introspection, after: Introspection, cascade: boolean): Metadata {
  const s = findSource(md, source);
  if (!s) return md;
  return applySchemaDiff(db, md, source, db.defaultSchemaOf(s) ?? '', diffSchema(before, after, s.tables.map((t) => t.table), functionsOf(s)), cascade);
}

/** The functions the metadata of a source uses: tracked ones and those of computed fields. */
function functionsOf(source: SourceMeta): QualifiedFunction[] {
  const out = new Map<string, QualifiedFunction>();
  for (const f of source.functions ?? []) out.set(qtKey(f.function), f.function);
  for (const t of source.tables) for (const cf of t.computed_fields ?? []) out.set(qtKey(cf.definition.function), cf.definition.function);
  return [...out.values()];
}

/** The computed fields of a source that use `fn`, with their table. */
function computedFieldsUsing(md: Metadata, sourceName: string, fn: QualifiedFunction): { table: QualifiedTable; name: string }[] {
  const source = sourcesOf(md).find((s) => s.name === sourceName);
  return (source?.tables ?? []).flatMap((t) =>
    (t.computed_fields ?? []).filter((cf) => sameTable(cf.definition.function, fn)).map((cf) => ({ table: t.table, name: cf.name })),
  );
}

function isTracked(md: Metadata, sourceName: string, fn: QualifiedFunction): boolean {
  return (sourcesOf(md).find((s) => s.name === sourceName)?.functions ?? []).some((f) => sameTable(f.function, fn));
}

/** Applies Note [Schema changes] to the draft metadata; throws when the change must be refused. */
function applySchemaDiff(db: DatabaseService, md: Metadata, source: string, defaultSchema: string, diff: SchemaDiff, cascade: boolean): Metadata {
  const refuse = (message: string) => new SvcError('not-supported', message, { path: '$.args' });
  const display = (qt: QualifiedTable) => qtDisplay(qt, defaultSchema);

  // Rule 1, first: everything below names objects as they are now.
  for (const t of diff.tables) if (!sameTable(t.before, t.after)) md = db.rename(md, { kind: 'table', source, from: t.before, to: t.after });
  for (const f of diff.renamedFunctions) md = db.rename(md, { kind: 'function', source, from: f.from, to: f.to });
  for (const t of diff.tables) for (const c of t.renamedColumns) md = db.rename(md, { kind: 'column', source, table: t.after, from: c.from, to: c.to });

  // Rule 4: overloads.
  const overloadedTracked = diff.overloadedFunctions.filter((f) => isTracked(md, source, f));
  if (overloadedTracked.length > 0) {
    throw refuse(`the following tracked function(s) cannot be overloaded: ${overloadedTracked.map(display).join(', ')}`);
  }
  for (const f of diff.overloadedFunctions) {
    for (const cf of computedFieldsUsing(md, source, f)) {
      // Hasura's wording, missing space included.
      throw refuse(`The function "${display(f)}" associated with computed field"${cf.name}" of table "${display(cf.table)}" is being overloaded`);
    }
  }

  // Rules 2 and 3: dropped objects and their dependents; without cascade, fail on the first.
  const droppedKeys = diff.droppedTables.map(qtKey);
  const insideDropped = (d: Dependent) => droppedKeys.some((k) => d.id.includes(`@${source}:${k}:`));
  const targets: DepTarget[] = diff.droppedTables.map((table): DepTarget => ({ kind: 'table', source, table }));
  for (const t of diff.tables) {
    for (const column of t.droppedColumns) targets.push({ kind: 'column', source, table: t.after, column });
    for (const fk of t.droppedForeignKeys) {
      targets.push({ kind: 'foreign_key', source, table: t.after, name: fk.name, columns: fk.columns, refTable: { schema: fk.refSchema, name: fk.refTable }, refColumns: fk.refColumns });
    }
  }
  // Renamed tracked functions were followed above, so only computed fields still use the old names.
  const goneFunctions = [...diff.droppedFunctions, ...diff.renamedFunctions.map((f) => f.from)];
  const fnTargets = goneFunctions.map((fn): DepTarget => ({ kind: 'function', source, function: fn }));
  targets.push(...fnTargets);
  // A dropped tracked function's own entry goes without cascade (below), like a dropped table's.
  const trackedEntries = new Set(goneFunctions.map((fn) => trackedFunctionId(source, fn)));
  const exclude = (d: Dependent) => insideDropped(d) || trackedEntries.has(d.id);
  if (!cascade) db.cascade(md, targets, false, exclude);

  // Rule 4: VOLATILE functions and retyped columns.
  for (const f of diff.volatileFunctions) {
    if (isTracked(md, source, f)) throw refuse(`type of function "${display(f)}" is altered to "VOLATILE" which is not supported now`);
    for (const cf of computedFieldsUsing(md, source, f)) {
      throw refuse(`The type of function "${display(f)}" associated with computed field "${cf.name}" of table "${display(cf.table)}" is being altered to "VOLATILE"`);
    }
  }
  for (const t of diff.tables) {
    for (const c of t.retypedColumns) {
      const deps = db.dependents(md, { kind: 'column', source, table: t.after, column: c.column }).filter((d) => d.onType);
      if (deps.length > 0) {
        const list = [...new Set(deps.map((d) => d.description))].sort().join(', ');
        throw new SvcError(
          'dependency-error',
          `cannot change type of column "${c.column}" in table "${display(t.after)}" because of the following dependencies: ${list}`,
          { path: '$.args' },
        );
      }
    }
  }

  // Apply: dependents (cascade), then the dropped entries themselves.
  md = db.cascade(md, targets, cascade, exclude);
  if (droppedKeys.length > 0) {
    md = updateSource(md, source, (s) => ({ ...s, tables: s.tables.filter((t) => !droppedKeys.includes(qtKey(t.table))) }));
  }
  for (const d of db.dependents(md, fnTargets)) if (trackedEntries.has(d.id)) md = d.remove(md);
  for (const t of diff.tables) for (const column of t.droppedColumns) md = forgetColumn(md, source, t.after, column);
  return md;
}
