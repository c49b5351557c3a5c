/**
 * SQL golden tests of the PostgreSQL compiler, without a database: IR built by hand (as
 * plugins/database/schema/plan.ts and mutation.ts build it from a GraphQL field and a role's
 * permission, Note [Values in the IR]) compiled by `postgresDialect.compileSelect` /
 * `compileMutation`, the statement text and its bind parameters compared with inline snapshots
 * (Kysely's testSql is the model). A change of the compiler shows here as a diff of SQL text;
 * whether the SQL answers what it should is for the tests that run it (queries.test.ts,
 * mutations.test.ts, explain.test.ts...). Update with `npx vitest run plugins/postgres/sql/compile.test.ts -u`
 * and read the diff.
 */
import { describe, expect, it } from 'vitest';
import type { AggregateIR, AggregateOp, ColumnType, ColumnValue, CompiledQuery, FieldIR, InsertColumn, InsertRowIR, MutationIR, ObjectIR, OrderItem, QualifiedTable, RootIR, RowsIR } from '../../database/index.js';
import { goldenCases } from '../../database/index.js';
import { postgresDialect as pg } from '../dialect.js';

// ---------------------------------------------------------------------------------------------
// Fixture: author (id, name, born, tags text[], info jsonb, prefs jsonb) <- article (id, title,
// author_id, rating bigint); each column's type as introspection reports it, its scalar as the
// dialect resolves it (as model/resolved.ts `resolveTableModel` does). The IR cases are the ones
// every SQL kind's golden tests compile (plugins/database/sql/golden-cases.ts); PostgreSQL's
// own (nested inserts through an array relationship, jsonb operators) are built here.

const base = (udt: string): ColumnType => ({ type: udt, udt, typeSchema: 'pg_catalog', typeKind: 'base' });
const TEXT_ARRAY: ColumnType = { type: 'text[]', udt: '_text', typeSchema: 'pg_catalog', typeKind: 'array', elementKind: 'base' };
const g = goldenCases({
  schema: 'public',
  author: { id: base('int4'), name: base('text'), born: base('date'), tags: TEXT_ARRAY, info: base('jsonb'), prefs: base('jsonb') },
  article: { id: base('int4'), title: base('text'), author_id: base('int4'), rating: base('int8') },
  scalar: (type) => pg.scalar(type),
});
const { author, article, authorColumns, articleColumns, scalarOf, lit, T, col, obj, cmp, rows, ARTICLE_AUTHOR, AUTHOR_ARTICLES, affected } = g;

const select = (ir: RootIR, multiplexed = false): CompiledQuery => pg.compileSelect!(ir, multiplexed ? { multiplexed } : undefined);
/** An author's articles through the array relationship (a nested insert's rows). */
const articlesOf = (titles: string[]) => ({
  relationship: 'articles',
  mapping: AUTHOR_ARTICLES,
  insert: { table: article, columns: articleColumns, rows: titles.map((t) => ({ values: new Map<string, ColumnValue>([['title', { k: 'value', value: lit(t) }]]), before: [], after: [] })), check: T },
});
/** An author named `name` with articles titled `titles` (none: no nested insert). */
const authorWith = (name: string, titles: string[]) => ({
  values: new Map<string, ColumnValue>([['name', { k: 'value', value: lit(name) }]]),
  before: [],
  after: titles.length ? [articlesOf(titles)] : [],
});
/** An article titled `title` that brings its author, named `name`, through the object relationship. */
const articleBringing = (title: string, name: string) => ({
  values: new Map<string, ColumnValue>([['title', { k: 'value', value: lit(title) }]]),
  before: [{ relationship: 'author', mapping: ARTICLE_AUTHOR, insert: { table: author, columns: authorColumns, rows: [{ values: new Map<string, ColumnValue>([['name', { k: 'value', value: lit(name) }]]), before: [], after: [] }], check: T } }],
  after: [],
});
/** An insert of `rows` into `table` answering affected_rows. */
const inserting = (table: QualifiedTable, columns: ReadonlyMap<string, InsertColumn>, rows: InsertRowIR[]): MutationIR => ({ k: 'insert', insert: { table, columns, rows, check: T }, output: { k: 'multi', fields: [affected] } });
/** A statement's parameters: an array's items (a literal's value, or the item's kind), or the parameter's kind. */
const paramItems = (q: CompiledQuery) => q.params.map((p) => (p.k === 'items' ? p.items.map((i) => (i.k === 'lit' ? i.v : i.k)) : p.k));
/** A mutation's statement and parameters (its zero checks, IR objects, asserted apart). */
const mutation = (ir: MutationIR): CompiledQuery => {
  const { zeroes: _zeroes, ...q } = pg.compileMutation!(ir);
  return q;
};
/** What a mutation's zero checks name: the table, the relationship, and the IR object's kind. */
const zeroesOf = (ir: MutationIR) =>
  pg.compileMutation!(ir).zeroes?.map((z) => ({ table: z.table.name, relationship: z.relationship, at: 'relationship' in z.at ? 'nested' : 'rows' in z.at ? 'level' : 'row' }));

// ---------------------------------------------------------------------------------------------

describe('compileSelect', () => {
  it('a list: where, order_by, a literal limit, an offset from a variable', () => {
    // { author(where: {name: {_eq: "ann"}, id: {_gt: $min}}, order_by: {born: desc}, limit: 10, offset: $skip) { id name } }
    const ir = g.select.list();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "k": "lit",
            "v": "ann",
          },
          {
            "k": "var",
            "name": "min",
          },
          {
            "k": "var",
            "name": "skip",
          },
        ],
        "sql": "select coalesce(json_agg(_t1 order by _t0."__svc_o0" desc nulls first), '[]')::text as json from (select _t0."born", _t0."name", _t0."id", _t0."born" as "__svc_o0" from "public"."author" as _t0 where ((_t0."name" = ($1::text)::"pg_catalog"."text") and (_t0."id" > ($2::text)::"pg_catalog"."int4")) order by _t0."born" desc nulls first limit 10 offset ($3::text)::int8) as _t0 cross join lateral (select _t0."id" as "id", _t0."name" as "name") as _t1",
      }
    `);
  });

  it('no order nor window: one sort, in the aggregate (Note [One sort per list])', () => {
    const ir: RootIR = { k: 'select', single: false, rows: rows(author, { orderBy: [{ path: [], column: 'name', dir: 'asc_nulls_first' }] }), select: obj(col(author, 'name')) };
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [],
        "sql": "select coalesce(json_agg(_t1 order by _t0."__svc_o0" asc nulls first), '[]')::text as json from (select _t0.*, _t0."name" as "__svc_o0" from "public"."author" as _t0 where true) as _t0 cross join lateral (select _t0."name" as "name") as _t1",
      }
    `);
  });

  it('distinct_on, _in, _is_null, _like, _not, _or', () => {
    const ir = g.select.distinctOn();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "json": true,
            "k": "lit",
            "v": [
              1,
              2,
              3,
            ],
          },
          {
            "k": "lit",
            "v": "%svc%",
          },
        ],
        "sql": "select coalesce(json_agg(_t1 order by _t0."__svc_o0" asc nulls last, _t0."__svc_o1" desc nulls first), '[]')::text as json from (select distinct on (_t0."author_id") _t0."author_id", _t0."rating", _t0."id", _t0."title", _t0."author_id" as "__svc_o0", _t0."rating" as "__svc_o1" from "public"."article" as _t0 where ((_t0."id" = any(array(select json_array_elements_text(($1::text)::json))::"pg_catalog"."int4"[])) or (not (_t0."rating" is null)) or (_t0."title" like ($2::text)::text)) order by _t0."author_id" asc nulls last, _t0."rating" desc nulls first) as _t0 cross join lateral (select _t0."author_id" as "author_id", _t0."title" as "title") as _t1",
      }
    `);
  });

  it('a comparison with a null literal is no condition (Hasura v2)', () => {
    const ir = g.select.nullLiteral();
    expect(select(ir).sql).toContain('where true');
  });

  it("object and array relationships (the remote table's filter in their rows), __typename", () => {
    // { article { title author { name } } } and { author { name articles(order_by: {id: asc}, limit: 2) { title } } }
    const articles = g.select.objectRelationship();
    expect(select(articles)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [],
        "sql": "select coalesce(json_agg(_t1), '[]')::text as json from (select _t0.* from "public"."article" as _t0 where true) as _t0 cross join lateral (select _t0."title" as "title", (select _t3 from (select _t2.* from "public"."author" as _t2 where true and _t2."id" = _t0."author_id") as _t2 cross join lateral (select _t2."name" as "name", 'author'::text as "__typename") as _t3 limit 1) as "author") as _t1",
      }
    `);
    const authors = g.select.arrayRelationship();
    expect(select(authors)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "k": "lit",
            "v": 0,
          },
        ],
        "sql": "select coalesce(json_agg(_t1), '[]')::text as json from (select _t0.* from "public"."author" as _t0 where true) as _t0 cross join lateral (select _t0."name" as "name", (select coalesce(json_agg(_t3 order by _t2."__svc_o0" asc nulls last), '[]') from (select _t2."id", _t2."rating", _t2."author_id", _t2."title", _t2."id" as "__svc_o0" from "public"."article" as _t2 where (_t2."rating" > ($1::text)::"pg_catalog"."int8") and _t2."author_id" = _t0."id" order by _t2."id" asc nulls last limit 2) as _t2 cross join lateral (select _t2."title" as "title") as _t3) as "articles") as _t1",
      }
    `);
  });

  it("a role's filter with session variables, through a relationship, with its limit and big numbers as text", () => {
    // The role `user`: article's filter {author: {id: {_eq: X-Svc-User-Id}}, rating: {_gte: X-Svc-Min}}, limit 5.
    const ir = g.select.roleFilter();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "k": "session",
            "name": "x-svc-min",
          },
          {
            "k": "var",
            "name": "n",
          },
        ],
        "sql": "select coalesce(json_agg(_t2), '[]')::text as json from (select _t0."author_id", _t0."rating", _t0."id" from "public"."article" as _t0 where (exists (select 1 from "public"."author" as _t1 where _t1."id" = _t0."author_id" and (_t1."id" = ($1::text)::"pg_catalog"."int4")) and (_t0."rating" >= ($2::text)::"pg_catalog"."int8")) limit least(($3::text)::int8, 5)) as _t0 cross join lateral (select _t0."id" as "id", (_t0."rating")::text as "rating") as _t2",
      }
    `);
  });

  it('_by_pk: one object or null', () => {
    const ir = g.select.byPk('tags');
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "k": "var",
            "name": "id",
          },
        ],
        "sql": "select coalesce((select to_json(_t1) from (select _t0.* from "public"."author" as _t0 where (_t0."id" = ($1::text)::"pg_catalog"."int4")) as _t0 cross join lateral (select _t0."id" as "id", _t0."tags" as "tags") as _t1 limit 1)::text, 'null') as json",
      }
    `);
  });

  it('an aggregate: count, count(distinct), sum, max, nodes, the role limit capping the nodes only', () => {
    const ir = g.select.aggregate(false);
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [
          {
            "k": "lit",
            "v": 1,
          },
        ],
        "sql": "select (select json_build_object('aggregate', json_build_object('count', count(*), 'authors', count(distinct _t0."author_id"), 'sum', json_build_object('rating', (sum(_t0."rating"))::text), 'max', json_build_object('title', max(_t0."title"), '__typename', 'article_max_fields')), 'nodes', (select coalesce(json_agg(_t1), '[]') from (select * from (select _t0.* from "public"."article" as _t0 where (_t0."author_id" = ($1::text)::"pg_catalog"."int4")) as _t0 limit 3) as _t0 cross join lateral (select _t0."id" as "id") as _t1)) from (select _t0.* from "public"."article" as _t0 where (_t0."author_id" = ($1::text)::"pg_catalog"."int4")) as _t0)::text as json",
      }
    `);
  });

  it('an array relationship aggregate', () => {
    const ir = g.select.arrayAggregate();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "bytes": true,
        "params": [],
        "sql": "select coalesce(json_agg(_t1), '[]')::text as json from (select _t0.* from "public"."author" as _t0 where true) as _t0 cross join lateral (select _t0."name" as "name", (select json_build_object('aggregate', json_build_object('count', count(*))) from (select _t2.* from "public"."article" as _t2 where true and _t2."author_id" = _t0."id") as _t2) as "articles_aggregate") as _t1",
      }
    `);
  });

  it('multiplexed (live queries): one statement for many bindings (Note [Multiplexed statements])', () => {
    const ir = g.select.live();
    const q = select(ir, true);
    expect(q).toMatchInlineSnapshot(`
      {
        "batch": [Function],
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
        ],
        "sql": "select _svc_m."i", _svc_r."json" from unnest(($1::text)::text[]) with ordinality as _svc_m("p1", "i") left join lateral (select coalesce(json_agg(_t1), '[]')::text as json from (select _t0.* from "public"."author" as _t0 where (_t0."id" = (_svc_m."p1")::"pg_catalog"."int4")) as _t0 cross join lateral (select _t0."name" as "name") as _t1) as _svc_r on true order by _svc_m."i"",
      }
    `);
    expect(q.batch!([['1'], ['2'], [null]])).toEqual(['{"1","2",NULL}']);
  });
});

// Note [Aggregates answered by order keys]: `{ author(order_by: [{articles_aggregate: {count: desc}},
// {id: asc}], limit: 20) { id articles_aggregate { aggregate { count } } } }`, the articles filtered
// by the role's `rating >= 3` both in the order key and in the selection.
describe('aggregates answered by order keys', () => {
  const F = cmp(article, 'rating', 'gte', lit(3));
  const byArticles = (fn: string, column = ''): OrderItem => ({ path: [], column, agg: { remote: article, mapping: AUTHOR_ARTICLES, filter: F, fn }, dir: 'desc' });
  const count: AggregateOp = { key: 'count', k: 'count', distinct: false };
  const sumRating: AggregateOp = { key: 'sum', k: 'fn', fn: 'sum', columns: [{ key: 'rating', column: 'rating', scalar: scalarOf(article, 'rating'), asText: true }] };
  const authors = (orderBy: OrderItem[], agg: { fields?: AggregateIR['fields']; rows?: Partial<RowsIR> } = {}): RootIR => ({
    k: 'select',
    single: false,
    rows: rows(author, { orderBy: [...orderBy, { path: [], column: 'id', dir: 'asc' }], limit: lit(20) }),
    select: obj(col(author, 'id'), {
      key: 'articles_aggregate',
      k: 'array_aggregate',
      mapping: AUTHOR_ARTICLES,
      agg: { fields: agg.fields ?? [{ key: 'aggregate', k: 'aggregate', fields: [count] }], rows: rows(article, { where: F, ...agg.rows }) },
    }),
  });
  /** Whether the statement aggregates the articles again for the selection (beside the order keys). */
  const computed = (ir: RootIR) => /\(select json_build_object\('(aggregate|__typename)'/.test(select(ir).sql);

  it('a count ordered by is the order key\'s value: one count per author, not two', () => {
    const q = select(authors([byArticles('count')]));
    expect(q.sql).toMatchInlineSnapshot(`"select coalesce(json_agg(_t2 order by _t0."__svc_o0" desc nulls first, _t0."__svc_o1" asc nulls last), '[]')::text as json from (select _t0."id", (select count(*) from "public"."article" as _t1 where _t1."author_id" = _t0."id" and (_t1."rating" >= ($1::text)::"pg_catalog"."int8")) as "__svc_o0", _t0."id" as "__svc_o1" from "public"."author" as _t0 where true order by (select count(*) from "public"."article" as _t1 where _t1."author_id" = _t0."id" and (_t1."rating" >= ($1::text)::"pg_catalog"."int8")) desc nulls first, _t0."id" asc nulls last limit 20) as _t0 cross join lateral (select _t0."id" as "id", json_build_object('aggregate', json_build_object('count', _t0."__svc_o0")) as "articles_aggregate") as _t2"`);
    expect(computed(authors([byArticles('count')]))).toBe(false);
  });

  it('every aggregate the selection asks, each an order key (as text where the field is): typename too', () => {
    const ir = authors([byArticles('count'), byArticles('sum', 'rating')], {
      fields: [{ key: '__typename', k: 'typename', name: 'article_aggregate' }, { key: 'aggregate', k: 'aggregate', fields: [sumRating, count, { key: '__typename', k: 'typename', name: 'article_aggregate_fields' }] }],
    });
    const sql = select(ir).sql;
    expect(computed(ir)).toBe(false);
    expect(sql).toContain(`json_build_object('__typename', 'article_aggregate', 'aggregate', json_build_object('sum', json_build_object('rating', (_t0."__svc_o1")::text), 'count', _t0."__svc_o0", '__typename', 'article_aggregate_fields'))`);
  });

  it('computed again where the rows or the values differ from the order key\'s', () => {
    // The selection's own where; a limit or offset of its own; nodes; count(columns); an
    // aggregate not among the keys; another relationship to the same table; a key through an
    // object relationship (the value of another row); a redacted column (an inherited role).
    const cases: RootIR[] = [
      authors([byArticles('count')], { rows: { where: { t: 'and', of: [F, cmp(article, 'id', 'gt', lit(1))] } } }),
      authors([byArticles('count')], { rows: { limit: lit(2) } }),
      authors([byArticles('count')], { rows: { offset: lit(2) } }),
      authors([byArticles('count')], { rows: { distinctOn: ['rating'] } }),
      authors([byArticles('count')], { fields: [{ key: 'aggregate', k: 'aggregate', fields: [count] }, { key: 'nodes', k: 'nodes', select: obj(col(article, 'id')) }] }),
      authors([byArticles('count')], { fields: [{ key: 'aggregate', k: 'aggregate', fields: [{ key: 'count', k: 'count', columns: ['rating'], distinct: true }] }] }),
      authors([byArticles('count')], { fields: [{ key: 'aggregate', k: 'aggregate', fields: [count, sumRating] }] }),
      authors([{ ...byArticles('count'), agg: { ...byArticles('count').agg!, mapping: [['id', 'id']] } }]),
      authors([{ ...byArticles('count'), path: [{ remote: author, mapping: [['id', 'id']], filter: T, unique: true }] }]),
      authors([{ ...byArticles('sum', 'rating'), redact: cmp(article, 'id', 'gt', lit(1)) }], { fields: [{ key: 'aggregate', k: 'aggregate', fields: [sumRating] }] }),
    ];
    for (const ir of cases) {
      expect(select(ir).sql).not.toMatch(/json_build_object\('[a-z]+', _t0."__svc_o/);
      expect(computed(ir)).toBe(true);
    }
  });
});

// Note [Objects read through the order keys' joins]: `{ article(order_by: [{author: {name: asc}},
// {id: asc}], limit: 10) { id author { name born } } }`, the author filtered by the role's
// `born is not null` both in the order key's join and in the selection.
describe('objects read through the order keys\' joins', () => {
  const F = cmp(author, 'born', 'is_null', lit(false));
  const byAuthor = (column: string, filter = F): OrderItem => ({ path: [{ remote: author, mapping: ARTICLE_AUTHOR, filter, unique: true }], column, dir: 'asc' });
  const authorOf = (select: ObjectIR, where = F): FieldIR => ({ key: 'author', k: 'object', mapping: ARTICLE_AUTHOR, rows: rows(author, { where }), select, unique: true });
  const articles = (orderBy: OrderItem[], field: FieldIR, limit = true): RootIR => ({
    k: 'select',
    single: false,
    rows: rows(article, { orderBy: [...orderBy, { path: [], column: 'id', dir: 'asc' }], ...(limit ? { limit: lit(10) } : {}) }),
    select: obj(col(article, 'id'), field),
  });
  /** How many times the statement joins author. */
  const joins = (ir: RootIR) => select(ir).sql.match(/join "public"."author"/g)?.length ?? 0;

  it('the selected object\'s columns come through the rows subquery: one join', () => {
    const ir = articles([byAuthor('name')], authorOf(obj(col(author, 'name'), col(author, 'born'), { key: '__typename', k: 'typename', name: 'author' })));
    expect(select(ir).sql).toMatchInlineSnapshot(`"select coalesce(json_agg(_t2 order by _t0."__svc_o0" asc nulls last, _t0."__svc_o1" asc nulls last), '[]')::text as json from (select _t0."id", _t0."author_id", _t1."name" as "__svc_o0", _t0."id" as "__svc_o1", _t1."id" as "__svc_j0", _t1."born" as "__svc_j1" from "public"."article" as _t0 left join "public"."author" as _t1 on _t1."id" = _t0."author_id" and (_t1."born" is not null) where true order by _t1."name" asc nulls last, _t0."id" asc nulls last limit 10) as _t0 cross join lateral (select _t0."__svc_o0" as "name", _t0."__svc_j1" as "born", 'author'::text as "__typename") as _t3 cross join lateral (select _t0."id" as "id", case when _t0."__svc_j0" is null then null else _t3 end as "author") as _t2"`);
    expect(joins(ir)).toBe(1);
    // Without a limit the rows subquery is pulled up: still one join.
    expect(joins(articles([byAuthor('name')], authorOf(obj(col(author, 'name'))), false))).toBe(1);
  });

  it('as JSON too (an object whose keys a row cannot carry)', () => {
    const long = 'k'.repeat(70);
    const ir = articles([byAuthor('name')], authorOf(obj(col(author, 'name', long))));
    expect(joins(ir)).toBe(1);
    expect(select(ir).sql).toContain(`json_build_object('${long}', _t0."__svc_o0")`);
  });

  it('joined again where the object reads more than columns, or other rows', () => {
    // A nested array relationship (it reads the author's row); another filter; an order key
    // by a column of another relationship; an inherited role's redaction on a column.
    const cases: RootIR[] = [
      articles([byAuthor('name')], authorOf(obj(col(author, 'name'), { key: 'articles', k: 'array', mapping: AUTHOR_ARTICLES, rows: rows(article), select: obj(col(article, 'id')) }))),
      articles([byAuthor('name')], authorOf(obj(col(author, 'name')), T)),
      articles([byAuthor('name', T)], authorOf(obj(col(author, 'name')))),
      articles([{ ...byAuthor('name'), path: [{ ...byAuthor('name').path[0]!, mapping: [['id', 'id']] }] }], authorOf(obj(col(author, 'name')))),
      articles([byAuthor('name')], authorOf(obj({ ...col(author, 'name'), redact: { e: cmp(author, 'id', 'gt', lit(1)), row: { table: author, columns: ['id'] } } } as FieldIR))),
    ];
    for (const ir of cases) {
      expect(joins(ir)).toBe(2);
      expect(select(ir).sql).not.toContain('__svc_j');
    }
  });
});

describe('compileMutation', () => {

  it('an insert with on_conflict (update columns, where), a check with a session variable, returning', () => {
    // insert_author(objects: [{id: 1, name: $name}], on_conflict: {constraint: author_pkey, update_columns: [name], where: {born: {_is_null: true}}})
    const ir = g.mutation.upsert('author_pkey');
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 1,
          },
          {
            "k": "var",
            "name": "name",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $4::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("id", "name") values (($1::text)::"pg_catalog"."int4", ($2::text)::"pg_catalog"."text") on conflict on constraint "author_pkey" do update set "name" = excluded."name" where (_t0."born" is null) returning _t0."id" as _0, _t0."name" as _1, (case when _t0.xmax = 0 then (_t0."id" = ($3::text)::"pg_catalog"."int4") else true end) as c) select case when (select v from _svc_s) is null then null when not coalesce((select bool_and(c) from (select c from _c0) as _k), true) then (select ('svc:check:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0) as _n), 'returning', (select coalesce(json_agg(_t2), '[]') from (select _c0._0 as "id", _c0._1 as "name" from _c0) as _t1 cross join lateral (select _t1."id" as "id", _t1."name" as "name") as _t2))::text end as json",
      }
    `);
  });

  it('an insert of several rows, one taking a default, and array values, without a check', () => {
    const ir = g.mutation.rows('tags', ['a', 'b c']);
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "ann",
          },
          {
            "format": [Function],
            "k": "lit",
            "v": [
              "a",
              "b c",
            ],
          },
          {
            "k": "lit",
            "v": "bob",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $4::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name", "tags") values (($1::text)::"pg_catalog"."text", ($2::text)::"pg_catalog"."_text"), (($3::text)::"pg_catalog"."text", default) returning _t0 as r, true as c) select case when (select v from _svc_s) is null then null else json_build_object('affected_rows', (select count(*) from (select from _c0) as _n))::text end as json",
      }
    `);
  });

  it('a nested insert: an article with its author (object relationship) and an author with articles (array)', () => {
    const articleWithAuthor = g.mutation.articleWithAuthor({
      k: 'single',
      select: obj(col(article, 'id'), { key: 'author', k: 'object', mapping: ARTICLE_AUTHOR, rows: rows(author), select: obj(col(author, 'name')) }),
    });
    expect(zeroesOf(articleWithAuthor)).toEqual([{ table: 'author', relationship: 'author', at: 'nested' }]);
    expect(mutation(articleWithAuthor)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "ann",
          },
          {
            "k": "lit",
            "v": "nested",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $3::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name") values (($1::text)::"pg_catalog"."text") returning _t0."id" as _0, _t0."name" as _1, _t0."born" as _2, _t0."tags" as _3, _t0."info" as _4, _t0."prefs" as _5, true as c), _c1 as (insert into "public"."article" as _t1 ("title", "author_id") select _v.* from _c0, lateral (values (($2::text)::"pg_catalog"."text", _c0._0)) as _v returning _t1."id" as _0, _t1."author_id" as _2, true as c) select case when (select v from _svc_s) is null then null when not exists (select from _c0) then (select ('svc:zero:0:' || count(*))::int4 from _svc_s)::text else coalesce((select to_json(_t3) from (select _c1._0 as "id", _c1._2 as "author_id" from _c1) as _t2 cross join lateral (select _t2."id" as "id", (select _t6 from (select _t4.* from (select _t5."id", _t5."name", _t5."born", _t5."tags", _t5."info", _t5."prefs" from "public"."author" as _t5 union all select _c0._0 as "id", _c0._1 as "name", _c0._2 as "born", _c0._3 as "tags", _c0._4 as "info", _c0._5 as "prefs" from _c0) as _t4 where true and _t4."id" = _t2."author_id") as _t4 cross join lateral (select _t4."name" as "name") as _t6 limit 1) as "author") as _t3 limit 1)::text, 'null') end as json",
      }
    `);
    const authorWithArticles: MutationIR = {
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: [
          {
            values: new Map([['name', { k: 'value', value: lit('bob') }]]),
            before: [],
            after: [
              {
                relationship: 'articles',
                mapping: AUTHOR_ARTICLES,
                insert: {
                  table: article,
                  columns: articleColumns,
                  rows: [
                    { values: new Map([['title', { k: 'value', value: lit('one') }]]), before: [], after: [] },
                    { values: new Map([['title', { k: 'value', value: lit('two') }]]), before: [], after: [] },
                  ],
                  check: T,
                },
              },
            ],
          },
        ],
        check: T,
      },
      output: { k: 'multi', fields: [affected] },
    };
    expect(zeroesOf(authorWithArticles)).toEqual([{ table: 'author', relationship: undefined, at: 'row' }]);
    expect(mutation(authorWithArticles)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "bob",
          },
          {
            "format": [Function],
            "items": [
              {
                "k": "lit",
                "v": "one",
              },
              {
                "k": "lit",
                "v": "two",
              },
            ],
            "k": "items",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $3::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name") values (($1::text)::"pg_catalog"."text") returning _t0 as r, true as c), _c1 as (insert into "public"."article" as _t1 ("title", "author_id") select (_v.c0)::"pg_catalog"."text", (_c0.r)."id" from _c0, unnest(($2::text)::text[]) as _v(c0) returning _t1 as r, true as c) select case when (select v from _svc_s) is null then null when not exists (select from _c0) then (select ('svc:zero:0:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0 union all select from _c1) as _n))::text end as json",
      }
    `);
  });

  it('authors with articles, several of them: one INSERT per table, each article under its author by position (Note [Levels inserted as sets])', () => {
    const ir = inserting(author, authorColumns, [authorWith('ann', ['a1', 'a2']), authorWith('bob', []), authorWith('cy', ['c1'])]);
    expect(zeroesOf(ir)).toEqual([{ table: 'author', relationship: undefined, at: 'level' }]);
    const q = mutation(ir);
    // The articles' positions: ann's two under author 1, cy's under author 3.
    expect(paramItems(q)).toEqual([['ann', 'bob', 'cy'], ['a1', 'a2', 'c1'], [1, 1, 3], 'session_json']);
    expect(q.sql).toMatchInlineSnapshot(`"with _svc_s as (select set_config('svc.user', $4::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name") select (_v.c0)::"pg_catalog"."text" from unnest(($1::text)::text[]) as _v(c0) returning _t0 as r, true as c), _c1 as (insert into "public"."article" as _t1 ("title", "author_id") select (_v.c0)::"pg_catalog"."text", _p0.k0 from unnest(($2::text)::text[], ($3::text)::text[]) with ordinality as _v(c0, p0, o) join (select (_c0.r)."id" as k0, row_number() over () as n from _c0) as _p0 on _p0.n = (_v.p0)::int8 order by _v.o returning _t1 as r, true as c) select case when (select v from _svc_s) is null then null when (select count(*) from _c0) <> 3 then (select ('svc:zero:0:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0 union all select from _c1) as _n))::text end as json"`);
  });

  it('authors upserted by name doing nothing, with articles: one statement, each article joined to its author by the key it gave (Note [Levels joined by key]); a zero check per author with articles', () => {
    const upserting = (authors: InsertRowIR[]): MutationIR => ({
      k: 'insert',
      insert: { table: author, columns: authorColumns, rows: authors, check: T, onConflict: { constraint: 'author_name_key', columns: ['name'], update: [], where: T, check: T } },
      output: { k: 'multi', fields: [affected] },
    });
    const ir = upserting([authorWith('ann', ['a1', 'a2']), authorWith('bob', []), authorWith('cy', ['c1'])]);
    expect(zeroesOf(ir)).toEqual([
      { table: 'author', relationship: undefined, at: 'row' },
      { table: 'author', relationship: undefined, at: 'row' },
    ]);
    const q = pg.compileMutation!(ir);
    expect(q.steps).toBeUndefined();
    // Right for any values of the shape (a repeated key's later rows write nothing): kept per shape.
    expect(q.perValue).toBeUndefined();
    // The authors' keys, and the positions of those with articles (their zero checks').
    expect(paramItems(q)).toEqual([['ann', 'bob', 'cy'], ['ann', 'bob', 'cy'], [1, 3], ['a1', 'a2', 'c1'], [1, 1, 3], 'session_json']);
    expect(q.sql).toMatchInlineSnapshot(`"with _svc_s as (select set_config('svc.user', $6::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name") select (_v.c0)::"pg_catalog"."text" from unnest(($1::text)::text[]) as _v(c0) on conflict on constraint "author_name_key" do nothing returning _t0 as r, true as c), _c1 as materialized (select distinct on ((_x.r)."name") _x.r, _k.o as n from unnest(($2::text)::text[]) with ordinality as _k(k0, o) join _c0 as _x on (_x.r)."name" = (_k.k0)::"pg_catalog"."text" order by (_x.r)."name", _k.o), _c2 as (insert into "public"."article" as _t1 ("title", "author_id") select (_v.c0)::"pg_catalog"."text", _p0.k0 from unnest(($4::text)::text[], ($5::text)::text[]) with ordinality as _v(c0, p0, o) join (select (_c1.r)."id" as k0, _c1.n from _c1) as _p0 on _p0.n = (_v.p0)::int8 order by _v.o returning _t1 as r, true as c) select case when (select v from _svc_s) is null then null when (select count(*) from unnest((($3::text)::text[])::int8[]) as _q(p) join _c1 as _e on _e.n = _q.p) <> 2 then (select ('svc:zero:' || (-1 + min(_q.j)) || ':0')::int4 from unnest((($3::text)::text[])::int8[]) with ordinality as _q(p, j) where not exists (select from _c1 as _e where _e.n = _q.p))::text else json_build_object('affected_rows', (select count(*) from (select from _c0 union all select from _c2) as _n))::text end as json"`);
    // A key repeated: joined by key doing nothing; updating where, a CTE per author (Note [Rows
    // repeating a key]). A null: a CTE per author.
    const twice = [authorWith('ann', ['a1']), authorWith('ann', ['a2'])];
    expect(pg.compileMutation!(upserting(twice)).sql).toContain('distinct on');
    const where = (ir: MutationIR): MutationIR => (ir.k === 'insert' ? { ...ir, insert: { ...ir.insert, onConflict: { ...ir.insert.onConflict!, update: ['born'], where: cmp(author, 'born', 'is_null', lit(true)) } } } : ir);
    const updating = pg.compileMutation!(where(upserting([authorWith('ann', ['a1']), authorWith('bob', ['b1'])])));
    expect(updating.sql).toContain('distinct on');
    expect(updating.perValue).toBe(true);
    expect(pg.compileMutation!(where(upserting(twice))).sql).not.toContain('distinct on');
    const withNull = upserting([authorWith('ann', ['a1']), { ...authorWith('x', ['a2']), values: new Map<string, ColumnValue>([['name', { k: 'value', value: lit(null) }]]) }]);
    expect(pg.compileMutation!(withNull).sql).not.toContain('distinct on');
    expect(zeroesOf(withNull)).toHaveLength(2);
  });

  it("steps answer the field's rows only where the field reads them (Note [Batches in steps]): not for affected_rows alone", () => {
    // Authors upserted by name updating where, the key repeated: a run of rows each, in steps (Note [Rows repeating a key]).
    const ir = (output: MutationIR['output']): MutationIR => ({
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: [authorWith('ann', []), authorWith('ann', [])],
        check: T,
        onConflict: { constraint: 'author_name_key', columns: ['name'], update: ['born'], where: cmp(author, 'born', 'is_null', lit(true)), check: T },
        tableColumns: [...authorColumns.keys()],
      },
      output,
    });
    const counted = pg.compileMutation!(ir({ k: 'multi', fields: [affected] }));
    expect(counted.steps).toHaveLength(2);
    expect(counted.steps!.map((x) => x.sql.includes(`'r', `))).toEqual([false, false]);
    const returning = pg.compileMutation!(ir({ k: 'multi', fields: [affected, { key: 'returning', k: 'returning', select: obj(col(author, 'name')) }] }));
    // The row whole as the database has it (Note [Written rows as columns]): RETURNING's `r`.
    expect(returning.steps!.map((x) => x.sql.includes(`'r', (select coalesce(array_agg(_w.r), '{}') from (select _c0.r as r from _c0) as _w)::text`) && x.sql.includes(' returning _t0 as r, '))).toEqual([true, true]);
    const single = pg.compileMutation!({ ...ir({ k: 'single', select: obj(col(author, 'name')) }) });
    expect(single.steps!.every((x) => x.sql.includes(`'r', `))).toBe(true);
  });

  it('returning the articles of the authors it wrote: one grouped join, not a scan of the written rows per author (Note [Arrays of written rows grouped])', () => {
    const articles = (r: Partial<RowsIR>): FieldIR => ({ key: 'articles', k: 'array', mapping: AUTHOR_ARTICLES, rows: rows(article, r), select: obj(col(article, 'title')) });
    const ir = (field: FieldIR): MutationIR => ({
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: [
          authorWith('ann', ['a1', 'a2']),
          authorWith('bob', ['b1']),
        ],
        check: T,
      },
      output: { k: 'multi', fields: [{ key: 'returning', k: 'returning', select: obj(col(author, 'name'), field) }] },
    });
    const ordered = mutation(ir(articles({ orderBy: [{ path: [], column: 'id', dir: 'desc' }] }))).sql;
    expect(ordered).toContain('left join (select _t');
    expect(ordered.slice(ordered.indexOf("'returning'"))).toMatchInlineSnapshot(`"'returning', (select coalesce(json_agg(_t3 order by _t2."__svc_n"), '[]') from (select _t7.*, row_number() over () as "__svc_n" from (select (_c0.r).* from _c0) as _t7) as _t2 left join (select _t4."author_id" as k0, json_agg(json_build_object('title', _t4."title") order by _t4."id" desc nulls first, _t4."__svc_n") as j from (select _t4.*, row_number() over () as "__svc_n" from (select _t6.* from "public"."article" as _t6 union all select (_c1.r).* from _c1) as _t4 where (_t4."author_id") in (select (_c0.r)."id" from _c0) and true) as _t4 group by _t4."author_id") as _t5 on _t5.k0 = _t2."id" cross join lateral (select _t2."name" as "name", coalesce(_t5.j, '[]') as "articles") as _t3))::text end as json"`);
    // A limit and offset per author: each author's articles numbered in the list's order, those
    // in the window kept; the role's cap bounds the limit.
    const windowed = mutation(ir(articles({ orderBy: [{ path: [], column: 'id', dir: 'desc' }], limit: lit(2), offset: lit(1), limitCap: 1 }))).sql;
    expect(windowed).toContain('left join (select _t');
    expect(windowed).toContain(`row_number() over (partition by _t4."author_id" order by _t4."id" desc nulls first, _t4."__svc_n") as "__svc_k" from (select _t4.*, row_number() over () as "__svc_n"`);
    expect(windowed).toContain(`where _t4."__svc_k" > 1 and _t4."__svc_k" <= 1 + 1)`);
    // Distinct on too: each author's first article of each title, in the list's order.
    const distinct = mutation(ir(articles({ distinctOn: ['title'] }))).sql;
    expect(distinct).toContain('left join (select _t');
    expect(distinct).toContain(`(select distinct on (_t4."author_id", _t4."title") _t4.* from (select _t4.*, row_number() over () as "__svc_n"`);
    expect(distinct).toContain(`order by _t4."author_id", _t4."title", _t4."__svc_n") as _t4 group by _t4."author_id"`);
  });

  it('articles each with its author, several of them: the authors as a set, each article joined to its own by position (Note [Levels inserted as sets])', () => {
    const ir = inserting(article, articleColumns, [articleBringing('t1', 'ann'), articleBringing('t2', 'bob')]);
    expect(zeroesOf(ir)).toEqual([{ table: 'author', relationship: 'author', at: 'nested' }]);
    expect(mutation(ir).sql).toMatchInlineSnapshot(`"with _svc_s as (select set_config('svc.user', $3::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name") select (_v.c0)::"pg_catalog"."text" from unnest(($1::text)::text[]) as _v(c0) returning _t0 as r, true as c), _c1 as (insert into "public"."article" as _t1 ("title", "author_id") select (_v.c0)::"pg_catalog"."text", _p0.k0 from unnest(($2::text)::text[]) with ordinality as _v(c0, o) join (select (_c0.r)."id" as k0, row_number() over () as n from _c0) as _p0 on _p0.n = _v.o order by _v.o returning _t1 as r, true as c) select case when (select v from _svc_s) is null then null when (select count(*) from _c0) <> 2 then (select ('svc:zero:0:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0 union all select from _c1) as _n))::text end as json"`);
  });

  it('articles of which some bring their author and some name it: the authors of those that bring one as a set, the others keeping their own author_id (Note [Levels inserted as sets])', () => {
    const names = (title: string, id: number) => ({ values: new Map<string, ColumnValue>([['title', { k: 'value', value: lit(title) }], ['author_id', { k: 'value', value: lit(id) }]]), before: [], after: [] });
    // author_id has no default: an article that brings its author leaves it out.
    const columns = new Map<string, InsertColumn>(articleColumns);
    columns.set('author_id', { scalar: articleColumns.get('author_id')!.scalar, nullDefault: true });
    const q = mutation(inserting(article, columns, [articleBringing('t1', 'ann'), names('t2', 7), articleBringing('t3', 'bob')]));
    // The authors' positions among the articles that bring one: 1, none, 2.
    expect(paramItems(q)).toEqual([['ann', 'bob'], ['t1', 't2', 't3'], [null, 7, null], [1, null, 2], 'session_json']);
    expect(q.sql).toContain(`(case when _v.p0 is null then (_v.c1)::"pg_catalog"."int4" else _p0.k0 end)`);
    expect(q.sql).toContain(`left join (select (_c0.r)."id" as k0, row_number() over () as n from _c0) as _p0 on _p0.n = (_v.p0)::int8`);
    expect(q.sql).toContain(`when (select count(*) from _c0) <> 2 then`);
  });

  it('rows that give the same columns: one array parameter per column, the same statement for any number of rows (Note [Rows bound by column])', () => {
    const tags = authorColumns.get('tags')!;
    const rowsOf = (n: number): MutationIR => ({
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: Array.from({ length: n }, (_, i) => ({
          values: new Map<string, ColumnValue>([
            ['name', { k: 'value', value: { k: 'var', name: 'rows', path: [i, 'name'] } }],
            ['tags', { k: 'value', value: { k: 'var', name: 'rows', path: [i, 'tags'] } }],
          ]),
          before: [],
          after: [],
        })),
        check: T,
      },
      output: { k: 'multi', fields: [affected] },
    });
    expect(tags.scalar.array).toBe(true);
    const two = mutation(rowsOf(2));
    const three = mutation(rowsOf(3));
    expect(three.sql).toBe(two.sql);
    expect(three.params.map((p) => (p.k === 'items' ? p.items.length : p.k))).toEqual([3, 3, 'session_json']);
    expect(two).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "format": [Function],
            "items": [
              {
                "k": "var",
                "name": "rows",
                "path": [
                  0,
                  "name",
                ],
              },
              {
                "k": "var",
                "name": "rows",
                "path": [
                  1,
                  "name",
                ],
              },
            ],
            "k": "items",
          },
          {
            "format": [Function],
            "items": [
              {
                "format": [Function],
                "k": "var",
                "name": "rows",
                "path": [
                  0,
                  "tags",
                ],
              },
              {
                "format": [Function],
                "k": "var",
                "name": "rows",
                "path": [
                  1,
                  "tags",
                ],
              },
            ],
            "k": "items",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $3::text, true) as v), _c0 as (insert into "public"."author" as _t0 ("name", "tags") select (_v.c0)::"pg_catalog"."text", (_v.c1)::"pg_catalog"."_text" from unnest(($1::text)::text[], ($2::text)::text[]) as _v(c0, c1) returning _t0 as r, true as c) select case when (select v from _svc_s) is null then null else json_build_object('affected_rows', (select count(*) from (select from _c0) as _n))::text end as json",
      }
    `);
  });

  it('rows that leave out a column with a default: its default written in for them, by a mask of the rows that give it, and checked unchanged when the statement runs (Note [Defaults bound by column])', () => {
    const columns = new Map<string, InsertColumn>(authorColumns);
    columns.set('name', { scalar: authorColumns.get('name')!.scalar, default: { sql: `'anon'::text`, key: 'k1' } });
    const named = (name?: string) => ({ values: new Map<string, ColumnValue>([['id', { k: 'value', value: lit(1) }], ...(name ? ([['name', { k: 'value', value: lit(name) }]] as const) : [])]), before: [], after: [] });
    const q = mutation(inserting(author, columns, [named('ann'), named(), named('cy')]));
    expect(paramItems(q)).toEqual([[1, 1, 1], ['ann', null, 'cy'], [true, null, true], 'session_json']);
    expect(q.sql).toContain(`(case when _v.g2 is null then ('anon'::text)::"pg_catalog"."text" else (_v.c1)::"pg_catalog"."text" end)`);
    expect(q.sql).toContain(
      `when (select md5(d.adbin::text) from pg_catalog.pg_attrdef as d join pg_catalog.pg_attribute as a on a.attrelid = d.adrelid and a.attnum = d.adnum where d.adrelid = '"public"."author"'::regclass and a.attname = 'name') is distinct from 'k1' then`,
    );
    expect(q.defaults).toEqual([{ table: author, column: 'name' }]);
    // Every row giving it: no mask, no check.
    const all = mutation(inserting(author, columns, [named('ann'), named('bo')]));
    expect(all.sql).not.toContain('pg_attrdef');
    expect(all.defaults).toBeUndefined();
  });

  it("an update with _set and _inc, the role's filter and check, returning under the select filter", () => {
    const ir = g.mutation.update();
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "edited",
          },
          {
            "k": "lit",
            "v": 1,
          },
          {
            "k": "lit",
            "v": 10,
          },
          {
            "k": "var",
            "name": "max",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $7::text, true) as v), _c0 as (update "public"."article" as _t0 set "title" = ($1::text)::"pg_catalog"."text", "rating" = _t0."rating" + ($2::text)::"pg_catalog"."int8" where ((_t0."id" < ($4::text)::"pg_catalog"."int4") and (_t0."author_id" = ($5::text)::"pg_catalog"."int4")) returning _t0."id" as _0, _t0."author_id" as _2, _t0."rating" as _3, (_t0."rating" <= ($3::text)::"pg_catalog"."int8") as c) select case when (select v from _svc_s) is null then null when not coalesce((select bool_and(c) from (select c from _c0) as _k), true) then (select ('svc:check:' || count(*))::int4 from _svc_s)::text else json_build_object('affected_rows', (select count(*) from (select from _c0) as _n), 'returning', (select coalesce(json_agg(_t2), '[]') from (select _c0._0 as "id", _c0._2 as "author_id", _c0._3 as "rating" from _c0) as _t1 cross join lateral (select _t1."id" as "id", _t1."rating" as "rating") as _t2 where (_t1."author_id" = ($6::text)::"pg_catalog"."int4")))::text end as json",
      }
    `);
  });

  it("update_rows (Note [Updates by key]): one UPDATE joined to the updates' keys and values bound as arrays, each update's answer from the row of its position", () => {
    const ir: MutationIR = {
      k: 'update_rows',
      table: article,
      key: [{ column: 'id', scalar: scalarOf(article, 'id') }],
      set: [
        { column: 'title', scalar: scalarOf(article, 'title'), op: 'set' },
        { column: 'rating', scalar: scalarOf(article, 'rating'), op: 'inc' },
      ],
      rows: [
        { key: [lit(3)], values: [lit('a'), lit(1)] },
        { key: [lit(1)], values: [lit(null), lit(2)] },
      ],
      filter: cmp(article, 'author_id', 'eq', { k: 'session', name: 'x-svc-user-id' }),
      check: cmp(article, 'rating', 'lte', lit(10)),
      output: {
        k: 'multi',
        fields: [
          { key: 'affected_rows', k: 'affected_rows' },
          { key: 'returning', k: 'returning', select: obj(col(article, 'id'), col(article, 'rating')), filter: cmp(article, 'author_id', 'eq', { k: 'session', name: 'x-svc-user-id' }) },
        ],
      },
      tableColumns: [...g.articleColumns.keys()],
    };
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "format": [Function],
            "items": [
              {
                "k": "lit",
                "v": 3,
              },
              {
                "k": "lit",
                "v": 1,
              },
            ],
            "k": "items",
          },
          {
            "format": [Function],
            "items": [
              {
                "k": "lit",
                "v": "a",
              },
              {
                "k": "lit",
                "v": null,
              },
            ],
            "k": "items",
          },
          {
            "format": [Function],
            "items": [
              {
                "k": "lit",
                "v": 1,
              },
              {
                "k": "lit",
                "v": 2,
              },
            ],
            "k": "items",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "k": "lit",
            "v": 10,
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $7::text, true) as v), _c0 as (update "public"."article" as _t0 set "title" = (_v.c1)::"pg_catalog"."text", "rating" = _t0."rating" + (_v.c2)::"pg_catalog"."int8" from unnest(($1::text)::text[], ($2::text)::text[], ($3::text)::text[]) with ordinality as _v(c0, c1, c2, o) where _t0."id" = (_v.c0)::"pg_catalog"."int4" and (_t0."author_id" = ($4::text)::"pg_catalog"."int4") returning _t0."id" as _0, _t0."author_id" as _2, _t0."rating" as _3, _v.o as o, (_t0."rating" <= ($5::text)::"pg_catalog"."int8") as c) select case when (select v from _svc_s) is null then null when not coalesce((select bool_and(c) from (select c from _c0) as _k), true) then (select ('svc:check:' || count(*))::int4 from _svc_s)::text else (select string_agg(_a.j, ',' order by _a.o) from (select _g.o, json_build_object('affected_rows', count(_w.o), 'returning', coalesce(json_agg(json_build_object('id', _t1."id", 'rating', _t1."rating")) filter (where _w.o is not null and (_t1."author_id" = ($6::text)::"pg_catalog"."int4")), '[]'))::text as j from unnest(($1::text)::text[]) with ordinality as _g(k, o) left join (_c0 as _w cross join lateral (select _w._0 as "id", _w._2 as "author_id", _w._3 as "rating") as _t1) on _w.o = _g.o group by _g.o) as _a) end as json",
      }
    `);
  });

  it('update_by_pk with jsonb operators (_append, _delete_at_path)', () => {
    const ir: MutationIR = {
      k: 'update',
      table: author,
      where: cmp(author, 'id', 'eq', lit(1)),
      set: [
        { column: 'info', scalar: scalarOf(author, 'info'), op: 'append', value: lit({ a: 1 }) },
        { column: 'prefs', scalar: scalarOf(author, 'prefs'), op: 'delete_at_path', value: lit(['c', 'd']) },
      ],
      check: T,
      output: { k: 'single', select: obj(col(author, 'info')) },
    };
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "json": true,
            "k": "lit",
            "v": {
              "a": 1,
            },
          },
          {
            "format": [Function],
            "k": "lit",
            "v": [
              "c",
              "d",
            ],
          },
          {
            "k": "lit",
            "v": 1,
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $4::text, true) as v), _c0 as (update "public"."author" as _t0 set "info" = _t0."info" || ($1::text)::"pg_catalog"."jsonb", "prefs" = _t0."prefs" #- ($2::text)::text[] where (_t0."id" = ($3::text)::"pg_catalog"."int4") returning _t0 as r, true as c) select case when (select v from _svc_s) is null then null else coalesce((select to_json(_t2) from (select (_c0.r).* from _c0) as _t1 cross join lateral (select _t1."info" as "info") as _t2 limit 1)::text, 'null') end as json",
      }
    `);
  });

  it('a delete, and delete_by_pk', () => {
    const del = g.mutation.delete();
    expect(mutation(del)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $2::text, true) as v), _c0 as (delete from "public"."article" as _t0 where (_t0."author_id" = ($1::text)::"pg_catalog"."int4") returning null as _) select case when (select v from _svc_s) is null then null else json_build_object('affected_rows', (select count(*) from (select from _c0) as _n), '__typename', 'article_mutation_response')::text end as json",
      }
    `);
    const byPk = g.mutation.deleteByPk();
    expect(mutation(byPk)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "var",
            "name": "id",
          },
          {
            "json": true,
            "k": "session_json",
          },
        ],
        "sql": "with _svc_s as (select set_config('svc.user', $2::text, true) as v), _c0 as (delete from "public"."article" as _t0 where (_t0."id" = ($1::text)::"pg_catalog"."int4") returning _t0."title" as _1) select case when (select v from _svc_s) is null then null else coalesce((select to_json(_t2) from (select _c0._1 as "title" from _c0) as _t1 cross join lateral (select _t1."title" as "title") as _t2 limit 1)::text, 'null') end as json",
      }
    `);
  });

  it("mutationFailure reads the errors the statement raises (Note [Mutations in one round trip])", () => {
    expect(pg.mutationFailure!({ message: 'invalid input syntax for type integer: "svc:check:1"' })).toEqual({ k: 'check' });
    expect(pg.mutationFailure!({ message: 'invalid input syntax for type integer: "svc:zero:2:0"' })).toEqual({ k: 'zero', index: 2 });
    expect(pg.mutationFailure!({ message: 'duplicate key value violates unique constraint "author_pkey"' })).toBeUndefined();
  });
});
