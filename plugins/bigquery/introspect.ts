/**
 * BigQuery introspection from each configured dataset's INFORMATION_SCHEMA: its tables and views,
 * their columns, and their primary keys (BigQuery's unenforced constraints, where a table has
 * one). Foreign keys are not read: relationships are manual (`manual_configuration`), as in
 * Hasura's BigQuery backend. BigQuery has no object identities that survive a rename, so its
 * tables have no `oid` (Note [Identities] below).
 */
import { tableKey, type ColumnInfo, type FunctionInfo, type Introspection, type TableInfo } from '../database/index.js';
import { quoteIdent, slit } from './compile.js';
import { baseType } from './dialect.js';
import type { BigQueryResult } from './driver.js';

/*
 * Note [Identities]
 * The framework follows tables and columns across a schema change by `TableInfo.oid` and
 * `ColumnInfo.position` (plugins/database/metadata/schema-diff.ts). BigQuery has no object ids, so
 * its tables have none and are followed by name (a made-up id, such as a hash of the name, could
 * collide and make two tables one), and a column's position is its ordinal_position. A renamed
 * table is therefore seen as one dropped and another created, never as a rename; the kind's
 * run_sql does not diff schemas anyway (it reloads).
 */
export const tablesSql = (dataset: string) =>
  `SELECT table_name, table_type FROM ${quoteIdent(dataset)}.INFORMATION_SCHEMA.TABLES ORDER BY table_name`;
export const columnsSql = (dataset: string) =>
  `SELECT table_name, column_name, ordinal_position, is_nullable, data_type FROM ${quoteIdent(dataset)}.INFORMATION_SCHEMA.COLUMNS ORDER BY table_name, ordinal_position`;
export const keysSql = (dataset: string) =>
  `SELECT k.table_name, k.constraint_name, k.column_name, k.ordinal_position FROM ${quoteIdent(dataset)}.INFORMATION_SCHEMA.KEY_COLUMN_USAGE AS k JOIN ${quoteIdent(dataset)}.INFORMATION_SCHEMA.TABLE_CONSTRAINTS AS c ON c.constraint_name = k.constraint_name AND c.table_name = k.table_name WHERE c.constraint_type = ${slit('PRIMARY KEY')} ORDER BY k.table_name, k.ordinal_position`;

/** The dataset's routines (functions, table functions, procedures): their kind, the return type
 * and the DDL. A table function's result columns are read from `data_type` (`TABLE<id INT64,
 * title STRING>`) only when its DDL declares them (RETURNS TABLE<...>): without it, BigQuery
 * infers them from the body, and Hasura (which reads the REST API's `returnTableType`, set only
 * when declared) asks for `return_table`. */
export const routinesSql = (dataset: string) =>
  `SELECT specific_name, routine_name, routine_type, data_type, ddl FROM ${quoteIdent(dataset)}.INFORMATION_SCHEMA.ROUTINES ORDER BY routine_name`;
/** Their arguments, in order (the result row, `is_result` YES, left out); `data_type` is NULL
 * for an argument of ANY TYPE. */
export const parametersSql = (dataset: string) =>
  `SELECT specific_name, ordinal_position, parameter_name, data_type FROM ${quoteIdent(dataset)}.INFORMATION_SCHEMA.PARAMETERS WHERE is_result = ${slit('NO')} ORDER BY specific_name, ordinal_position`;

type Row = Record<string, unknown>;

/** A printed type's base name and kind: `ARRAY<STRING>` is an ARRAY, `STRUCT<...>` composite. */
const typeOf = (printed: string): { udt: string; typeKind: ColumnInfo['typeKind'] } => {
  const udt = baseType(printed);
  return { udt, typeKind: udt === 'ARRAY' ? 'array' : udt === 'STRUCT' ? 'composite' : 'base' };
};
const objects = (r: BigQueryResult): Row[] => r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])));

const RELATIONS: Record<string, TableInfo['relation']> = { VIEW: 'view', 'MATERIALIZED VIEW': 'materialized_view', EXTERNAL: 'foreign_table' };

/** One dataset's three answers (in the order of the queries above) as its tables. */
export function assemble(dataset: string, tables: BigQueryResult, columns: BigQueryResult, keys: BigQueryResult): TableInfo[] {
  const out = new Map<string, TableInfo>();
  for (const r of objects(tables)) {
    const name = String(r.table_name);
    const relation = RELATIONS[String(r.table_type)] ?? 'table';
    out.set(name, {
      schema: dataset,
      name,
      relation,
      columns: [],
      primaryKey: null,
      uniqueConstraints: [],
      foreignKeys: [],
      description: null,
      // Read-only, whatever the relation (no mutations on BigQuery, as in Hasura).
      viewInfo: relation === 'table' ? null : { insertable: false, updatable: false, deletable: false },
    });
  }
  for (const r of objects(columns)) {
    const t = out.get(String(r.table_name));
    if (!t) continue;
    const type = String(r.data_type);
    const col: ColumnInfo = {
      name: String(r.column_name),
      position: Number(r.ordinal_position),
      type,
      ...typeOf(type),
      typeSchema: 'bigquery',
      nullable: String(r.is_nullable).toUpperCase() !== 'NO',
      hasDefault: false,
      isIdentity: false,
      isGenerated: false,
      description: null,
    };
    t.columns.push(col);
  }
  for (const r of objects(keys)) {
    const t = out.get(String(r.table_name));
    if (!t) continue;
    // BigQuery names a primary key `<table>.pk$`, which is no GraphQL name (the framework shows
    // constraint names in the schema): such a name is shown as `<table>_pkey`.
    const name = String(r.constraint_name);
    t.primaryKey ??= { name: /^[_A-Za-z][_0-9A-Za-z]*$/.test(name) ? name : `${t.name}_pkey`, columns: [] };
    t.primaryKey.columns.push(String(r.column_name));
  }
  for (const t of out.values()) t.columns.sort((a, b) => a.position - b.position);
  return [...out.values()];
}

/** Splits the fields of a printed `TABLE<a INT64, b STRUCT<x STRING, y INT64>>` at its top-level
 * commas: [{name, type}], or undefined when it is not a TABLE<...>. */
export function tableFields(printed: string | null | undefined): { name: string; type: string }[] | undefined {
  const m = /^\s*TABLE\s*<([\s\S]*)>\s*$/i.exec(printed ?? '');
  if (!m) return undefined;
  const out: { name: string; type: string }[] = [];
  let depth = 0;
  let start = 0;
  const body = m[1]!;
  const push = (end: number) => {
    const f = body.slice(start, end).trim();
    if (!f) return;
    const sp = /^(`(?:[^`\\]|\\.)*`|\S+)\s+([\s\S]+)$/.exec(f);
    out.push(sp ? { name: sp[1]!.replace(/^`|`$/g, ''), type: sp[2]!.trim() } : { name: f, type: '' });
  };
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '<' || c === '(') depth++;
    else if (c === '>' || c === ')') depth--;
    else if (c === ',' && depth === 0) {
      push(i);
      start = i + 1;
    }
  }
  push(body.length);
  return out;
}

const ROUTINE_KINDS: Record<string, string> = { FUNCTION: 'f', 'TABLE FUNCTION': 't', PROCEDURE: 'p', 'AGGREGATE FUNCTION': 'a' };

/** One dataset's routines from the answers of routinesSql and parametersSql (Note [Identities]:
 * no oid). BigQuery has no overloads; its functions have no volatility, and are read as stable. */
export function assembleRoutines(dataset: string, routines: BigQueryResult, parameters: BigQueryResult): FunctionInfo[] {
  const args = new Map<string, FunctionInfo['args']>();
  for (const r of objects(parameters)) {
    const key = String(r.specific_name);
    const list = args.get(key) ?? [];
    const type = r.data_type == null ? '' : String(r.data_type);
    list.push({ name: r.parameter_name == null ? null : String(r.parameter_name), type: type && baseType(type), typeSchema: 'bigquery', typeKind: 'base', hasDefault: false });
    args.set(key, list);
  }
  return objects(routines).map((r): FunctionInfo => {
    const kind = ROUTINE_KINDS[String(r.routine_type)] ?? 'f';
    const printed = r.data_type == null ? '' : String(r.data_type);
    const declared = /\bRETURNS\s+TABLE\s*</i.test(String(r.ddl ?? ''));
    // A declared column's base type and kind, as a table column's (assemble).
    const returnColumns = kind === 't' && declared ? tableFields(printed)?.map((c) => ({ ...c, ...(c.type ? typeOf(c.type) : {}) })) : undefined;
    return {
      schema: dataset,
      name: String(r.routine_name),
      args: args.get(String(r.specific_name)) ?? [],
      returnType: kind === 't' ? 'TABLE' : baseType(printed),
      returnTypeSchema: 'bigquery',
      returnTypeKind: kind === 't' ? 'composite' : 'base',
      returnsSet: kind === 't',
      variadic: false,
      volatility: 'stable',
      kind,
      description: null,
      ...(returnColumns ? { returnColumns } : {}),
    };
  });
}

/** Reads every dataset (concurrently: each is a job of its own). */
export async function introspect(datasets: readonly string[], run: (sql: string) => Promise<BigQueryResult>): Promise<Introspection> {
  const per = await Promise.all(
    datasets.map(async (d) => {
      const [t, c, k, r, p] = await Promise.all([run(tablesSql(d)), run(columnsSql(d)), run(keysSql(d)), run(routinesSql(d)), run(parametersSql(d))]);
      return { tables: assemble(d, t, c, k), routines: assembleRoutines(d, r, p) };
    }),
  );
  const tables = new Map<string, TableInfo>();
  const functions = new Map<string, FunctionInfo[]>();
  for (const d of per) {
    for (const t of d.tables) tables.set(tableKey(t.schema, t.name), t);
    for (const f of d.routines) functions.set(tableKey(f.schema, f.name), [...(functions.get(tableKey(f.schema, f.name)) ?? []), f]);
  }
  return { tables, functions, types: new Map() };
}
