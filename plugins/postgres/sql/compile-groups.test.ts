/**
 * SQL golden tests of grouped aggregates (Note [Grouped aggregates in SQL] in ./compile-groups.ts)
 * and of updates with `_nested` (Note [Nested updates in SQL] in ./compile-nested.ts), without a
 * database, as compile.test.ts has them for the rest of the compiler: IR by hand in, statement
 * text and bind parameters out (inline snapshots; update with `-u` and read the diff). Whether
 * the SQL answers what it should is for groups*.test.ts and nested-update*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { BoolIR, ColumnType, GroupsIR, QualifiedTable, RootIR, UpdateIR, Value } from '../../database/index.js';
import { postgresDialect as pg } from '../dialect.js';

const base = (udt: string): ColumnType => ({ type: udt, udt, typeSchema: 'pg_catalog', typeKind: 'base' });
const invoice: QualifiedTable = { schema: 'public', name: 'invoice' };
const customer: QualifiedTable = { schema: 'public', name: 'customer' };
const article: QualifiedTable = { schema: 'public', name: 'article' };
const author: QualifiedTable = { schema: 'public', name: 'author' };
const lit = (v: unknown): Value => ({ k: 'lit', v });
const T: BoolIR = { t: 'true' };
const s = (udt: string) => pg.scalar(base(udt));
const cmp = (column: string, udt: string, op: string, value: Value): BoolIR => ({ t: 'cmp', column, type: base(udt), scalar: s(udt), op, value });

describe('grouped aggregates', () => {
  // { invoice_groups(group_by: [status], group_by_keys: [{_column: day, _truncate: month}, {customer: {_column: country}}],
  //     where: {qty: {_gt: 1}}, having: {count: {_gt: 2}}, order_by: {aggregate: {sum: {total: desc}}}, limit: 5)
  //   { keys { status m: day(truncate: month) customer { country } } aggregate { count sum { total } } } }
  // as a role whose filter is {customer_id: {_eq: X-Svc-User-Id}} and whose customer filter is {country: {_is_null: false}}.
  const groups: GroupsIR = {
    table: invoice,
    where: { t: 'and', of: [cmp('qty', 'int4', 'gt', lit(1)), cmp('customer_id', 'int4', 'eq', { k: 'session', name: 'x-svc-user-id' })] },
    keys: [
      { path: [], column: 'status', scalar: s('text') },
      { path: [], column: 'day', scalar: s('date'), truncate: 'month' },
      { path: [{ remote: customer, mapping: [['customer_id', 'id']], filter: cmp('country', 'text', 'is_null', lit(false)) }], column: 'country', scalar: s('text') },
    ],
    having: { terms: [{ fn: 'count' }], e: { t: 'cmp', column: 'agg0', type: base('int4'), scalar: s('int4'), op: 'gt', value: lit(2) } },
    orderBy: [
      { k: 'agg', term: { fn: 'sum', column: 'total' }, dir: 'desc' },
      { k: 'key', index: 0, dir: 'asc' },
      { k: 'key', index: 1, dir: 'asc' },
      { k: 'key', index: 2, dir: 'asc' },
    ],
    limit: lit(5),
    fields: [
      { key: 'keys', k: 'keys', fields: [{ key: 'status', k: 'key', index: 0, scalar: s('text') }, { key: 'm', k: 'key', index: 1, scalar: s('date') }, { key: 'customer', k: 'object', fields: [{ key: 'country', k: 'key', index: 2, scalar: s('text') }] }] },
      { key: 'aggregate', k: 'aggregate', fields: [{ key: 'count', k: 'count', distinct: false }, { key: 'sum', k: 'fn', fn: 'sum', columns: [{ key: 'total', column: 'total', scalar: s('numeric') }] }] },
    ],
  };

  // The root field's list is text (Note [Root groups as text]): to_json for the text and date keys,
  // the count's text, the numeric sum's text unless NaN or an infinity.
  it('a root field: keys computed per row, grouped, having, ordered, windowed, in one statement', () => {
    const q = pg.compileSelect!({ k: 'groups', groups });
    expect(q.sql).toMatchInlineSnapshot(`"select (select coalesce('[' || string_agg(_t3."j", ',' order by _t3."o0" desc nulls first, _t3."o1" asc nulls last, _t3."o2" asc nulls last, _t3."o3" asc nulls last) || ']', '[]') from (select _t3.* from (select '{"keys":{"status":' || coalesce(to_json(_t1."__svc_k0")::text, 'null') || ',"m":' || coalesce(to_json(_t1."__svc_k1")::text, 'null') || ',"customer":{"country":' || coalesce(to_json(_t1."__svc_k2")::text, 'null') || '}},"aggregate":{"count":' || coalesce((count(*))::text, 'null') || ',"sum":{"total":' || coalesce(case when scale(sum(_t1."total")) is null then to_json(sum(_t1."total"))::text else (sum(_t1."total"))::text end, 'null') || '}}}' as "j", sum(_t1."total") as "o0", _t1."__svc_k0" as "o1", _t1."__svc_k1" as "o2", _t1."__svc_k2" as "o3", count(*) as "agg0" from (select _t1.*, _t1."status" as "__svc_k0", (date_trunc('month', (_t1."day")::timestamp))::"pg_catalog"."date" as "__svc_k1", (select _t2."country" from "public"."customer" as _t2 where _t2."id" = _t1."customer_id" and (_t2."country" is not null) limit 1) as "__svc_k2" from "public"."invoice" as _t1 where ((_t1."qty" > ($1::text)::"pg_catalog"."int4") and (_t1."customer_id" = ($2::text)::"pg_catalog"."int4"))) as _t1 group by _t1."__svc_k0", _t1."__svc_k1", _t1."__svc_k2") as _t3 where (_t3."agg0" > ($3::text)::"pg_catalog"."int4") order by _t3."o0" desc nulls first, _t3."o1" asc nulls last, _t3."o2" asc nulls last, _t3."o3" asc nulls last limit 5) as _t3) as json"`);
    // The limit is a literal, written into the statement (Note [Literal limits] in ./compile.ts).
    expect(q.params).toEqual([{ k: 'lit', v: 1 }, { k: 'session', name: 'x-svc-user-id' }, { k: 'lit', v: 2 }]);
  });

  it('no key: no GROUP BY, one group', () => {
    const q = pg.compileSelect!({ k: 'groups', groups: { table: invoice, where: T, keys: [], orderBy: [], fields: [{ key: 'aggregate', k: 'aggregate', fields: [{ key: 'count', k: 'count', distinct: false }] }] } });
    expect(q.sql).toMatchInlineSnapshot(`"select (select coalesce('[' || string_agg(_t2."j", ',') || ']', '[]') from (select _t2.* from (select '{"aggregate":{"count":' || coalesce((count(*))::text, 'null') || '}}' as "j" from (select _t1.* from "public"."invoice" as _t1 where true) as _t1 group by ()) as _t2) as _t2) as json"`);
  });

  it('<rel>_groups inside a list, multiplexed for a live query', () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: { table: customer, where: T, orderBy: [] },
      select: { fields: [{ key: 'invoices_groups', k: 'array_groups', mapping: [['id', 'customer_id']], groups: { ...groups, limit: { k: 'var', name: 'n' } } }] },
    };
    const q = pg.compileSelect!(ir, { multiplexed: true });
    expect(q.sql).toMatchInlineSnapshot(`"select _svc_m."i", _svc_r."json" from unnest(($1::text)::text[], ($2::text)::text[], ($3::text)::text[], ($4::text)::text[]) with ordinality as _svc_m("p1", "p2", "p3", "p4", "i") left join lateral (select coalesce(json_agg(_t1), '[]')::text as json from (select _t0.* from "public"."customer" as _t0 where true) as _t0 cross join lateral (select (select coalesce(json_agg(_t9 order by _t4."o0" desc nulls first, _t4."o1" asc nulls last, _t4."o2" asc nulls last, _t4."o3" asc nulls last), '[]') from (select _t4.* from (select _t2."__svc_k0", _t2."__svc_k1", _t2."__svc_k2", count(*) as "v0", sum(_t2."total") as "v1", sum(_t2."total") as "o0", _t2."__svc_k0" as "o1", _t2."__svc_k1" as "o2", _t2."__svc_k2" as "o3", count(*) as "agg0" from (select _t2.*, _t2."status" as "__svc_k0", (date_trunc('month', (_t2."day")::timestamp))::"pg_catalog"."date" as "__svc_k1", (select _t3."country" from "public"."customer" as _t3 where _t3."id" = _t2."customer_id" and (_t3."country" is not null) limit 1) as "__svc_k2" from "public"."invoice" as _t2 where ((_t2."qty" > (_svc_m."p1")::"pg_catalog"."int4") and (_t2."customer_id" = (_svc_m."p2")::"pg_catalog"."int4")) and _t2."customer_id" = _t0."id") as _t2 group by _t2."__svc_k0", _t2."__svc_k1", _t2."__svc_k2") as _t4 where (_t4."agg0" > (_svc_m."p3")::"pg_catalog"."int4") order by _t4."o0" desc nulls first, _t4."o1" asc nulls last, _t4."o2" asc nulls last, _t4."o3" asc nulls last limit (_svc_m."p4")::int8) as _t4 cross join lateral (select _t4."__svc_k2" as "country") as _t5 cross join lateral (select _t4."__svc_k0" as "status", _t4."__svc_k1" as "m", _t5 as "customer") as _t6 cross join lateral (select _t4."v1" as "total") as _t7 cross join lateral (select _t4."v0" as "count", _t7 as "sum") as _t8 cross join lateral (select _t6 as "keys", _t8 as "aggregate") as _t9) as "invoices_groups") as _t1) as _svc_r on true order by _svc_m."i""`);
  });
});

describe('nested updates', () => {
  it('an update, then through an array relationship: delete, update (writes once), insert for each parent', () => {
    // update_author_by_pk(pk_columns: {id: 1}, _set: {bio: "b"}, _nested: {articles: {delete: {where: {published: {_eq: false}}},
    //   update: {where: {}, _set: {title: "t"}}, insert: {objects: [{title: "n"}]}}}) { affected_rows returning { id } }
    const ir: UpdateIR & { k: 'update' } = {
      k: 'update',
      table: author,
      key: ['id'],
      where: cmp('id', 'int4', 'eq', lit(1)),
      set: [{ column: 'bio', scalar: s('text'), op: 'set', value: lit('b') }],
      check: T,
      output: { k: 'multi', fields: [{ key: 'affected_rows', k: 'affected_rows' }, { key: 'returning', k: 'returning', select: { fields: [{ key: 'id', k: 'column', column: 'id', scalar: s('int4') }] } }] },
      // Every write keeps its rows' columns (Note [Written rows as columns]).
      tableColumns: ['id', 'name', 'bio'],
      nested: [
        {
          relationship: 'articles',
          mapping: [['id', 'author_id']],
          table: article,
          key: ['id'],
          tableColumns: ['id', 'title', 'author_id', 'published', 'rating'],
          delete: { where: cmp('published', 'bool', 'eq', lit(false)) },
          update: { where: T, set: [{ column: 'title', scalar: s('text'), op: 'set', value: lit('t') }], check: cmp('rating', 'int4', 'lte', lit(5)), nested: [] },
          insert: { columns: new Map([['title', { scalar: s('text') }]]), rows: [{ values: new Map([['title', { k: 'value', value: lit('n') }]]), after: [] }], check: T },
        },
      ],
    };
    const q = pg.compileMutation!(ir);
    expect(q.sql).toMatchInlineSnapshot(`"with _svc_s as (select set_config('svc.user', $7::text, true) as v), _c0 as (update "public"."author" as _t0 set "bio" = ($1::text)::"pg_catalog"."text" where ((_t0."id" = ($2::text)::"pg_catalog"."int4")) returning _t0."id" as _0, true as c), _c1 as (delete from "public"."article" as _t1 where ((_t1."published" = ($3::text)::"pg_catalog"."bool") and exists (select 1 from (select _c0._0 as "id" from _c0) as _t2 where ((_t2."id" = _t1."author_id")))) returning _t1."id" as _0), _c2 as (update "public"."article" as _t3 set "title" = ($4::text)::"pg_catalog"."text" where (true and exists (select 1 from (select _c0._0 as "id" from _c0) as _t4 where ((_t4."id" = _t3."author_id"))) and (not exists (select 1 from (select _c1._0 as "id" from _c1) as _t5 where ((_t5."id" = _t3."id"))))) returning null as _, (_t3."rating" <= ($5::text)::"pg_catalog"."int4") as c), _c3 as (insert into "public"."article" as _t6 ("title", "author_id") select _v."title", _p._0 from _c0 as _p, (values (1, ($6::text)::"pg_catalog"."text")) as _v("__svc_n", "title") returning null as _, true as c) select case when (select v from _svc_s) is null then null when not coalesce((select bool_and(c) from (select c from _c2) as _k), true) then (select ('svc:check:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0 union all select from _c1 union all select from _c2 union all select from _c3) as _n), 'returning', (select coalesce(json_agg(_t8), '[]') from (select _c0._0 as "id" from _c0) as _t7 cross join lateral (select _t7."id" as "id") as _t8))::text end as json"`);
  });
});
