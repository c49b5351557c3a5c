/**
 * PostgreSQL introspection: one catalog query returns every table, view, materialized view,
 * foreign table, their columns, keys and foreign keys, every function and every enum type, as one
 * JSON document (so a source with thousands of tables costs one round trip).
 */
import { tableKey, type ColumnInfo, type FunctionInfo, type Introspection, type SqlExecutor, type TableInfo } from '../../database/index.js';

const EXCLUDED = `n.nspname not in ('pg_catalog', 'information_schema', 'svc_catalog', 'hdb_catalog')
  and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp\\_%'`;

/** The TypeKind of a pg_type row `t` (Note [Type kinds] in plugins/database: typtype b, c, d,
 * e, p are base, composite, domain, enum, pseudo; ranges and multiranges are other), arrays as
 * `array` only where `arrays`. */
const typeKind = (t: string, arrays: boolean) =>
  `case${arrays ? ` when ${t}.typcategory = 'A' then 'array'` : ''} when ${t}.typtype = 'b' then 'base' when ${t}.typtype = 'c' then 'composite'
    when ${t}.typtype = 'd' then 'domain' when ${t}.typtype = 'e' then 'enum' when ${t}.typtype = 'p' then 'pseudo'
    else 'other' end`;

/** The TypeKind of the element of an array type `t` (null for other types). */
const elementKind = (t: string) => `case when ${t}.typcategory = 'A' then (select ${typeKind('et', false)} from pg_type et where et.oid = ${t}.typelem) end`;

/*
 * Note [Columns as arrays]
 * Columns are most of the introspection (four in five of its objects at the benchmark's 2,000
 * tables), and PostgreSQL spends its time writing JSON: a column as an object repeats fourteen
 * keys. So each column comes as an array of its values in the order of COLUMN_FIELDS, and
 * `introspect` makes the objects (ColumnInfo, keys in that order) in Node: at 2,000 tables the
 * statement took 169 -> 134 ms and its text 3.3 -> 1.7 MB (medians of nine, the two-core
 * machine). One list gives both the SQL and the keys, so they cannot drift apart.
 */
const COLUMN_FIELDS: readonly (readonly [keyof ColumnInfo, string])[] = [
  ['name', 'a.attname'],
  ['position', 'a.attnum'],
  ['type', 'format_type(a.atttypid, null)'],
  ['udt', 't.typname'],
  ['typeSchema', 'tn.nspname'],
  ['typeKind', typeKind('t', true)],
  ['elementKind', elementKind('t')],
  ['nullable', 'not a.attnotnull'],
  ['hasDefault', "a.atthasdef or a.attidentity <> ''"],
  [
    'default',
    "case when a.atthasdef then (select json_build_object('sql', pg_get_expr(d.adbin, d.adrelid), 'key', md5(d.adbin::text)) from pg_attrdef d where d.adrelid = a.attrelid and d.adnum = a.attnum) end",
  ],
  ['isIdentity', "a.attidentity <> ''"],
  ['isGenerated', "a.attgenerated <> ''"],
  ['collationDeterministic', 'co.collisdeterministic'],
  ['description', 'cd.description'],
];

export const INTROSPECTION_SQL = `
with
tbl as (
  select c.oid, n.nspname, c.relname, c.relkind
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where c.relkind in ('r', 'v', 'm', 'f', 'p') and ${EXCLUDED}
),
cols as (
  -- Note [Columns as arrays]
  select a.attrelid, json_agg(json_build_array(
      ${COLUMN_FIELDS.map(([, sql]) => sql).join(',\n      ')}
    ) order by a.attnum) as columns
  from pg_attribute a
  join tbl on tbl.oid = a.attrelid
  join pg_type t on t.oid = a.atttypid
  join pg_namespace tn on tn.oid = t.typnamespace
  left join pg_collation co on co.oid = a.attcollation
  left join pg_description cd on cd.objoid = a.attrelid and cd.classoid = 'pg_class'::regclass and cd.objsubid = a.attnum
  where a.attnum > 0 and not a.attisdropped
  group by a.attrelid
),
cons as (
  -- Note [Key columns by number]
  select con.conrelid, con.contype, con.conname, con.conkey as columns,
    rn.nspname as ref_schema, rc.relname as ref_table,
    case when con.contype = 'f' and rt.oid is null then
      (select json_agg(a.attname order by k.ord) from unnest(con.confkey) with ordinality k(attnum, ord)
         join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.attnum)
    else to_json(con.confkey) end as ref_columns
  from pg_constraint con
  join tbl on tbl.oid = con.conrelid
  left join tbl rt on rt.oid = con.confrelid
  left join pg_class rc on rc.oid = con.confrelid
  left join pg_namespace rn on rn.oid = rc.relnamespace
  where con.contype in ('p', 'u', 'f')
),
keys as (
  -- Each table's keys gathered once (a subquery per table over every constraint was quadratic:
  -- 3 s for 2,000 tables with a foreign key each).
  select conrelid,
    (array_agg(json_build_object('name', conname, 'columns', columns)) filter (where contype = 'p'))[1] as pk,
    json_agg(json_build_object('name', conname, 'columns', columns) order by conname) filter (where contype = 'u') as uniques,
    json_agg(json_build_object('name', conname, 'columns', columns, 'refSchema', ref_schema, 'refTable', ref_table, 'refColumns', ref_columns) order by conname) filter (where contype = 'f') as fks
  from cons
  group by conrelid
),
tables as (
  select json_agg(json_build_object(
    'schema', tbl.nspname, 'name', tbl.relname, 'oid', tbl.oid::int8,
    'relation', case tbl.relkind when 'r' then 'table' when 'v' then 'view' when 'm' then 'materialized_view'
      when 'f' then 'foreign_table' else 'partitioned_table' end,
    'description', td.description,
    'columns', coalesce(cols.columns, '[]'::json),
    'primaryKey', keys.pk,
    'uniqueConstraints', coalesce(keys.uniques, '[]'::json),
    'foreignKeys', coalesce(keys.fks, '[]'::json),
    'viewInfo', case when tbl.relkind in ('v', 'f') then json_build_object(
      'insertable', (pg_relation_is_updatable(tbl.oid, false) & 8) = 8,
      'updatable', (pg_relation_is_updatable(tbl.oid, false) & 4) = 4,
      'deletable', (pg_relation_is_updatable(tbl.oid, false) & 16) = 16) end
  )) as j
  from tbl left join cols on cols.attrelid = tbl.oid left join keys on keys.conrelid = tbl.oid
  left join pg_description td on td.objoid = tbl.oid and td.classoid = 'pg_class'::regclass and td.objsubid = 0
),
fn_args as (
  select p.oid, json_agg(json_build_object(
      'name', nullif(a.name, ''), 'type', t.typname, 'typeSchema', tn.nspname, 'typeKind', ${typeKind('t', true)}, 'elementKind', ${elementKind('t')},
      'hasDefault', a.in_pos > (p.pronargs - p.pronargdefaults)
    ) order by a.in_pos) as args
  from pg_proc p
  join pg_namespace n on n.oid = p.pronamespace
  cross join lateral (
    select x.typ, x.name, row_number() over (order by x.ord) as in_pos
    from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]), coalesce(p.proargmodes, array_fill('i'::"char", array[cardinality(coalesce(p.proallargtypes, p.proargtypes::oid[]))])))
      with ordinality as u(typ, mode, ord)
    left join lateral (select p.proargnames[u.ord] as name) nm on true
    cross join lateral (select u.typ, nm.name, u.ord) x
    where u.mode in ('i', 'b', 'v')
  ) a
  join pg_type t on t.oid = a.typ
  join pg_namespace tn on tn.oid = t.typnamespace
  where ${EXCLUDED}
  group by p.oid
),
functions as (
  select json_agg(json_build_object(
    'schema', n.nspname, 'name', p.proname, 'oid', p.oid::int8,
    'args', coalesce(fa.args, '[]'::json),
    'returnType', rt.typname, 'returnTypeSchema', rtn.nspname, 'returnTypeKind', ${typeKind('rt', true)}, 'returnElementKind', ${elementKind('rt')},
    'returnsSet', p.proretset, 'variadic', p.provariadic <> 0,
    'volatility', case p.provolatile when 'i' then 'immutable' when 's' then 'stable' else 'volatile' end,
    'kind', p.prokind, 'description', fd.description
  )) as j
  from pg_proc p
  join pg_namespace n on n.oid = p.pronamespace
  join pg_type rt on rt.oid = p.prorettype
  join pg_namespace rtn on rtn.oid = rt.typnamespace
  left join fn_args fa on fa.oid = p.oid
  left join pg_description fd on fd.objoid = p.oid and fd.classoid = 'pg_proc'::regclass and fd.objsubid = 0
  where ${EXCLUDED} and p.prokind in ('f', 'p')
    and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
),
enums as (
  select json_agg(json_build_object('schema', n.nspname, 'name', t.typname, 'kind', 'e',
    'enumValues', (select json_agg(e.enumlabel order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid))) as j
  from pg_type t join pg_namespace n on n.oid = t.typnamespace
  where t.typtype = 'e' and ${EXCLUDED}
)
select json_build_object(
  'tables', coalesce((select j from tables), '[]'::json),
  'functions', coalesce((select j from functions), '[]'::json),
  'types', coalesce((select j from enums), '[]'::json)
)::text as doc
`;

interface RawDoc {
  tables: (Omit<TableInfo, 'columns' | 'primaryKey' | 'uniqueConstraints' | 'foreignKeys'> & {
    columns: unknown[][];
    primaryKey: RawKey | null;
    uniqueConstraints: RawKey[];
    foreignKeys: RawForeignKey[];
  })[];
  functions: FunctionInfo[];
  types: { schema: string; name: string; kind: string; enumValues?: string[] }[];
}

/*
 * Note [Key columns by number]
 * Keys come as their columns' numbers (pg_constraint's conkey and confkey), named here from the
 * columns the introspection has anyway: naming them in SQL took a subquery per key and column
 * list over pg_attribute, about 200 ms of the statement's 1,100 at 10,000 tables with a primary
 * and a foreign key each (the two-core machine, 2026-11-29). A foreign key to a table the
 * introspection leaves out (a system schema's) has its referenced columns named in SQL.
 */
type RawKey = { name: string; columns: number[] };
/** Its referenced columns by number, or by name where the introspection leaves their table out. */
type RawForeignKey = RawKey & { refSchema: string; refTable: string; refColumns: number[] | string[] };

export async function introspect(exec: SqlExecutor): Promise<Introspection> {
  const [row] = await exec.query<{ doc: string }>(INTROSPECTION_SQL);
  const doc = JSON.parse(row!.doc) as RawDoc;
  // The columns of every table first: a foreign key's are named from its referenced table's.
  const keys = doc.tables.map((t) => tableKey(t.schema, t.name));
  const columns = new Map<string, ColumnInfo[]>();
  doc.tables.forEach((t, i) => columns.set(keys[i]!, t.columns.map(columnInfo)));
  const tables = new Map<string, TableInfo>();
  doc.tables.forEach((t, i) => {
    const cols = columns.get(keys[i]!)!;
    const key = (k: RawKey) => ({ name: k.name, columns: k.columns.map((n) => columnName(cols, n)) });
    tables.set(keys[i]!, {
      ...t,
      oid: Number(t.oid),
      columns: cols,
      primaryKey: t.primaryKey && key(t.primaryKey),
      uniqueConstraints: t.uniqueConstraints.map(key),
      foreignKeys: t.foreignKeys.map((fk) => ({
        ...key(fk),
        refSchema: fk.refSchema,
        refTable: fk.refTable,
        refColumns: fk.refColumns.map((n) => (typeof n === 'string' ? n : columnName(columns.get(tableKey(fk.refSchema, fk.refTable))!, n))),
      })),
    });
  });
  const functions = new Map<string, FunctionInfo[]>();
  for (const f of doc.functions) {
    const key = tableKey(f.schema, f.name);
    const list = functions.get(key);
    const info = { ...f, oid: Number(f.oid) };
    if (list) list.push(info);
    else functions.set(key, [info]);
  }
  const types = new Map<string, { schema: string; name: string; kind: string; enumValues?: string[] }>();
  for (const t of doc.types) types.set(tableKey(t.schema, t.name), t);
  return { tables, functions, types };
}

/** The name of a table's column number `n` (its attnum): at index n - 1 unless columns were
 * dropped before it. */
function columnName(cols: readonly ColumnInfo[], n: number): string {
  const c = cols[n - 1];
  return c?.position === n ? c.name : cols.find((x) => x.position === n)!.name;
}

/** A column's object from its array (Note [Columns as arrays]). */
function columnInfo(values: unknown[]): ColumnInfo {
  const c: Record<string, unknown> = {};
  for (let i = 0; i < COLUMN_FIELDS.length; i++) c[COLUMN_FIELDS[i]![0]] = values[i];
  return c as unknown as ColumnInfo;
}
