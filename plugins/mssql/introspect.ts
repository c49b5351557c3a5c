/**
 * MS SQL Server introspection: four catalog queries over sys.* (tables and views, columns, key
 * constraints, foreign keys), each a plain result set, put together here into the framework's
 * Introspection. Objects are followed by their `object_id` and columns by their `column_id`
 * (both survive sp_rename), so that run_sql's renames are carried into the metadata.
 */
import { tableKey, type ColumnInfo, type Introspection, type TableInfo } from '../database/index.js';
import type { MssqlResult } from './driver.js';

const USER_SCHEMAS = `s.name NOT IN (N'sys', N'INFORMATION_SCHEMA', N'guest') AND o.is_ms_shipped = 0`;

/** Tables and views, with their MS_Description. */
export const TABLES_SQL = `SELECT o.object_id AS [object_id], s.name AS [schema_name], o.name AS [name], o.type AS [type], CAST(ep.value AS nvarchar(max)) AS [description]
FROM sys.objects AS o
JOIN sys.schemas AS s ON s.schema_id = o.schema_id
LEFT JOIN sys.extended_properties AS ep ON ep.class = 1 AND ep.major_id = o.object_id AND ep.minor_id = 0 AND ep.name = N'MS_Description'
WHERE o.type IN ('U', 'V') AND ${USER_SCHEMAS}
ORDER BY s.name, o.name`;

/** Columns of those, with the system type of an alias type (`sysname` is nvarchar) and the CLR
 * types by their own names (their system_type_id, 240, names no type). */
export const COLUMNS_SQL = `SELECT c.object_id AS [object_id], c.column_id AS [column_id], c.name AS [name], t.name AS [type_name],
  CASE WHEN t.user_type_id = t.system_type_id OR t.system_type_id = 240 THEN t.name ELSE bt.name END AS [system_type_name],
  SCHEMA_NAME(t.schema_id) AS [type_schema], c.max_length AS [max_length], c.precision AS [precision], c.scale AS [scale],
  c.is_nullable AS [is_nullable], c.is_identity AS [is_identity], c.is_computed AS [is_computed],
  CAST(CASE WHEN c.default_object_id <> 0 THEN 1 ELSE 0 END AS bit) AS [has_default], CAST(ep.value AS nvarchar(max)) AS [description]
FROM sys.columns AS c
JOIN sys.objects AS o ON o.object_id = c.object_id
JOIN sys.schemas AS s ON s.schema_id = o.schema_id
JOIN sys.types AS t ON t.user_type_id = c.user_type_id
LEFT JOIN sys.types AS bt ON bt.user_type_id = t.system_type_id
LEFT JOIN sys.extended_properties AS ep ON ep.class = 1 AND ep.major_id = c.object_id AND ep.minor_id = c.column_id AND ep.name = N'MS_Description'
WHERE o.type IN ('U', 'V') AND ${USER_SCHEMAS}
ORDER BY c.object_id, c.column_id`;

/** Primary keys and unique constraints, a row per column in key order. */
export const KEYS_SQL = `SELECT kc.parent_object_id AS [object_id], kc.name AS [name], kc.type AS [type], ic.key_ordinal AS [ordinal], col.name AS [column_name]
FROM sys.key_constraints AS kc
JOIN sys.index_columns AS ic ON ic.object_id = kc.parent_object_id AND ic.index_id = kc.unique_index_id
JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id
ORDER BY kc.parent_object_id, kc.name, ic.key_ordinal`;

/** Foreign keys, a row per column pair in key order. */
export const FOREIGN_KEYS_SQL = `SELECT fk.parent_object_id AS [object_id], fk.name AS [name], fkc.constraint_column_id AS [ordinal], pc.name AS [column_name],
  rs.name AS [ref_schema], ro.name AS [ref_table], rc.name AS [ref_column]
FROM sys.foreign_keys AS fk
JOIN sys.foreign_key_columns AS fkc ON fkc.constraint_object_id = fk.object_id
JOIN sys.columns AS pc ON pc.object_id = fkc.parent_object_id AND pc.column_id = fkc.parent_column_id
JOIN sys.columns AS rc ON rc.object_id = fkc.referenced_object_id AND rc.column_id = fkc.referenced_column_id
JOIN sys.objects AS ro ON ro.object_id = fk.referenced_object_id
JOIN sys.schemas AS rs ON rs.schema_id = ro.schema_id
ORDER BY fk.parent_object_id, fk.name, fkc.constraint_column_id`;

type Row = Record<string, unknown>;
const objects = (r: MssqlResult): Row[] => r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])));
const num = (x: unknown) => Number(x);
const bool = (x: unknown) => x === true || x === 1 || x === '1';
const text = (x: unknown) => (x === null || x === undefined ? null : String(x));

/** A column's type as SQL Server prints it: `nvarchar(50)` (max_length is in bytes, two per
 * character), `varchar(max)`, `decimal(10,2)`, `datetime2(3)`. */
export function printedType(system: string, maxLength: number, precision: number, scale: number): string {
  switch (system) {
    case 'char':
    case 'varchar':
    case 'binary':
    case 'varbinary':
      return `${system}(${maxLength === -1 ? 'max' : maxLength})`;
    case 'nchar':
    case 'nvarchar':
      return `${system}(${maxLength === -1 ? 'max' : maxLength / 2})`;
    case 'decimal':
    case 'numeric':
      return `${system}(${precision},${scale})`;
    case 'time':
    case 'datetime2':
    case 'datetimeoffset':
      return `${system}(${scale})`;
    default:
      return system;
  }
}

/** Assembles the four answers (in the order of the queries above) into an Introspection. */
export function assemble(tables: MssqlResult, columns: MssqlResult, keys: MssqlResult, foreignKeys: MssqlResult): Introspection {
  const byId = new Map<number, TableInfo>();
  const out = new Map<string, TableInfo>();
  for (const r of objects(tables)) {
    const view = String(r.type).trim() === 'V';
    const info: TableInfo = {
      schema: String(r.schema_name),
      name: String(r.name),
      oid: num(r.object_id),
      relation: view ? 'view' : 'table',
      columns: [],
      primaryKey: null,
      uniqueConstraints: [],
      foreignKeys: [],
      description: text(r.description),
      // Views are read-only here (Hasura's MSSQL backend writes to tables only).
      viewInfo: view ? { insertable: false, updatable: false, deletable: false } : null,
    };
    byId.set(num(r.object_id), info);
    out.set(tableKey(info.schema, info.name), info);
  }
  for (const r of objects(columns)) {
    const t = byId.get(num(r.object_id));
    if (!t) continue;
    const system = String(r.system_type_name);
    const col: ColumnInfo = {
      name: String(r.name),
      position: num(r.column_id),
      type: printedType(system, num(r.max_length), num(r.precision), num(r.scale)),
      udt: system,
      typeSchema: text(r.type_schema) ?? 'sys',
      // Note [Type kinds] in plugins/database: an alias type (CREATE TYPE ... FROM int) is a
      // domain over its system type, which `udt` names; every other column type is a base type.
      typeKind: String(r.type_name) !== system ? 'domain' : 'base',
      nullable: bool(r.is_nullable),
      hasDefault: bool(r.has_default) || bool(r.is_identity),
      isIdentity: bool(r.is_identity),
      // Identity and computed columns cannot be written (SQL Server refuses a value for them).
      isGenerated: bool(r.is_computed) || bool(r.is_identity) || system === 'timestamp',
      description: text(r.description),
    };
    t.columns.push(col);
  }
  const grouped = (rows: Row[]) => {
    const m = new Map<string, Row[]>();
    for (const r of rows) {
      const k = `${num(r.object_id)}\u0000${String(r.name)}`;
      const list = m.get(k);
      if (list) list.push(r);
      else m.set(k, [r]);
    }
    return [...m.values()].map((rs) => rs.sort((a, b) => num(a.ordinal) - num(b.ordinal)));
  };
  for (const rs of grouped(objects(keys))) {
    const t = byId.get(num(rs[0]!.object_id));
    if (!t) continue;
    const c = { name: String(rs[0]!.name), columns: rs.map((r) => String(r.column_name)) };
    if (String(rs[0]!.type).trim() === 'PK') t.primaryKey = c;
    else t.uniqueConstraints.push(c);
  }
  for (const rs of grouped(objects(foreignKeys))) {
    const t = byId.get(num(rs[0]!.object_id));
    if (!t) continue;
    t.foreignKeys.push({
      name: String(rs[0]!.name),
      columns: rs.map((r) => String(r.column_name)),
      refSchema: String(rs[0]!.ref_schema),
      refTable: String(rs[0]!.ref_table),
      refColumns: rs.map((r) => String(r.ref_column)),
    });
  }
  for (const t of out.values()) {
    t.columns.sort((a, b) => a.position - b.position);
    t.uniqueConstraints.sort((a, b) => a.name.localeCompare(b.name));
    t.foreignKeys.sort((a, b) => a.name.localeCompare(b.name));
  }
  return { tables: out, functions: new Map(), types: new Map() };
}

/** Runs the four catalog queries through `run` (the pool, or the request's transaction). */
export async function introspect(run: (sql: string) => Promise<MssqlResult>): Promise<Introspection> {
  const tables = await run(TABLES_SQL);
  const columns = await run(COLUMNS_SQL);
  const keys = await run(KEYS_SQL);
  const fks = await run(FOREIGN_KEYS_SQL);
  return assemble(tables, columns, keys, fks);
}
