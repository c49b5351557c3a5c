/**
 * BigQuery introspection from each configured dataset's INFORMATION_SCHEMA: its tables and views,
 * their columns, and their primary keys (BigQuery's unenforced constraints, where a table has
 * one). Foreign keys are not read: relationships are manual (`manual_configuration`), as in
 * Hasura's BigQuery backend. BigQuery has no object identities that survive a rename, so its
 * tables have no `oid` (Note [Identities] below).
 */
import { tableKey, type ColumnInfo, type Introspection, type TableInfo } from '../database/index.js';
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

type Row = Record<string, unknown>;
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
    const udt = baseType(type);
    const col: ColumnInfo = {
      name: String(r.column_name),
      position: Number(r.ordinal_position),
      type,
      udt,
      typeSchema: 'bigquery',
      typeKind: udt === 'ARRAY' ? 'array' : udt === 'STRUCT' ? 'composite' : 'base',
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

/** Reads every dataset (concurrently: each is a job of its own). */
export async function introspect(datasets: readonly string[], run: (sql: string) => Promise<BigQueryResult>): Promise<Introspection> {
  const per = await Promise.all(datasets.map(async (d) => assemble(d, ...(await Promise.all([run(tablesSql(d)), run(columnsSql(d)), run(keysSql(d))])))));
  const tables = new Map<string, TableInfo>();
  for (const t of per.flat()) tables.set(tableKey(t.schema, t.name), t);
  return { tables, functions: new Map(), types: new Map() };
}
