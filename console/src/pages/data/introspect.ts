/** What the Data pages read from a source's catalog, through read-only run_sql. */
import { lit, rowsOf, runSql, type QualifiedTable } from '../../api';

export interface Column {
  column_name: string;
  /** As PostgreSQL writes it (format_type): `integer`, `character varying(40)`, `text[]`. */
  data_type: string;
  is_nullable: 'YES' | 'NO';
  column_default: string;
  /** 'yes' for a primary-key column, else ''. */
  pk: string;
  /** The name of a UNIQUE constraint on this column alone, else ''. */
  unique_constraint: string;
}

export async function columnsOf(source: string, t: QualifiedTable): Promise<Column[]> {
  const rel = `(${lit(`${ident(t.schema)}.${ident(t.name)}`)})::regclass`;
  return rowsOf(
    await runSql(
      `select a.attname as column_name, format_type(a.atttypid, a.atttypmod) as data_type,
         case when a.attnotnull then 'NO' else 'YES' end as is_nullable,
         coalesce(pg_get_expr(d.adbin, d.adrelid), '') as column_default,
         case when exists (select 1 from pg_constraint c where c.conrelid = a.attrelid and c.contype = 'p' and a.attnum = any (c.conkey)) then 'yes' else '' end as pk,
         coalesce((select c.conname from pg_constraint c where c.conrelid = a.attrelid and c.contype = 'u' and c.conkey = array[a.attnum] limit 1), '') as unique_constraint
       from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
       where a.attrelid = ${rel} and a.attnum > 0 and not a.attisdropped
       order by a.attnum`,
      { source, read_only: true },
    ),
  ) as unknown as Column[];
}

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

export interface ForeignKey {
  conname: string;
  src_schema: string;
  src_table: string;
  ref_schema: string;
  ref_table: string;
  /** JSON arrays of column names, in the key's order. */
  src_cols: string;
  ref_cols: string;
}

/** The foreign keys from and to the table. */
export async function foreignKeys(source: string, table: QualifiedTable): Promise<ForeignKey[]> {
  return rowsOf(
    await runSql(
      `select c.conname, sn.nspname as src_schema, s.relname as src_table, tn.nspname as ref_schema, t.relname as ref_table,
         (select json_agg(a.attname order by k.n) from unnest(c.conkey) with ordinality k(attnum, n) join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum)::text as src_cols,
         (select json_agg(a.attname order by k.n) from unnest(c.confkey) with ordinality k(attnum, n) join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum)::text as ref_cols
       from pg_constraint c
         join pg_class s on s.oid = c.conrelid join pg_namespace sn on sn.oid = s.relnamespace
         join pg_class t on t.oid = c.confrelid join pg_namespace tn on tn.oid = t.relnamespace
       where c.contype = 'f' and ((sn.nspname = ${lit(table.schema)} and s.relname = ${lit(table.name)}) or (tn.nspname = ${lit(table.schema)} and t.relname = ${lit(table.name)}))
       order by c.conname`,
      { source, read_only: true },
    ),
  ) as unknown as ForeignKey[];
}
