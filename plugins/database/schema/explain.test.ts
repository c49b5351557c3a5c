/**
 * Golden tests of POST /v1/graphql/explain (Hasura v2's Explain API): one `{field, sql, params,
 * plan}` per root field, `sql` with bind parameters and `params` their values for the request's
 * variables and the `user` session, `plan` PostgreSQL's EXPLAIN of it; the statement run with
 * those parameters answers what /v1/graphql answers. Admin only.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { recordsWriter, type RecordRow } from '../../postgres/index.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, author_id int references author(id));
insert into author (name) values ('Alice'), ('Bob');
insert into article (title, author_id) values ('A1', 1), ('B1', 2), ('A2', 1);
create table item (id int primary key, n int not null);
insert into item select i, i % 7 from generate_series(1, 20000) i;
analyze item;
`;

const server = useServer(SEED);
const explain = (body: unknown, headers?: Record<string, string>) => server.request('POST', '/v1/graphql/explain', body, headers);

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'item' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

/** The statement of an explained field run as it is prepared: its JSON text. */
/** The explained statement's answer as JSON: its `json` value, or, where the statement answers a
 * list as records, that text written as the engine writes it (Note [Lists as records]). */
async function runExplained(f: { sql: string; params: (string | null)[]; records?: RecordRow }): Promise<unknown> {
  if (f.records) {
    const [[text]] = (await server.sql.unsafe(f.sql, f.params).raw()) as unknown as [[Uint8Array | null]];
    return JSON.parse(Buffer.from(await recordsWriter(f.records)(text)).toString('utf8'));
  }
  const rows = await server.sql.unsafe(f.sql, f.params);
  return JSON.parse(rows[0]!.json as string);
}

describe('POST /v1/graphql/explain', () => {
  it('a by-pk field with a variable: bind parameters, their values, and the primary key in the plan', async () => {
    const query = 'query A($id: Int!) { a: article_by_pk(id: $id) { id title author { name } } }';
    const r = await explain({ query: { query, variables: { id: 2 }, operationName: 'A' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toHaveLength(1);
    const [f] = r.body;
    expect(Object.keys(f)).toEqual(['field', 'sql', 'params', 'plan']);
    expect(f.field).toBe('a');
    expect(f.sql).toMatch(/\$1/);
    expect(f.sql).not.toMatch(/'2'/);
    expect(f.params).toEqual(['2']);
    expect(Array.isArray(f.plan) && f.plan.every((l: unknown) => typeof l === 'string')).toBe(true);
    expect(f.plan.join('\n')).toMatch(/Index Scan using article_pkey/);
    const answer = await server.request('POST', '/v1/graphql', { query, variables: { id: 2 } });
    expect(await runExplained(f)).toEqual(answer.body.data.a);
    expect(answer.body.data.a).toEqual({ id: 2, title: 'B1', author: { name: 'Bob' } });
  });

  it('a role with a session variable: its row filter is in the statement, the variable a parameter', async () => {
    const query = '{ article(order_by: {id: asc}) { id title } }';
    const r = await explain({ query: { query }, user: { 'X-Svc-Role': 'user', 'x-svc-user-id': '1' } });
    expect(r.status, r.text).toBe(200);
    const [f] = r.body;
    expect(f.field).toBe('article');
    expect(f.params).toEqual(['1']);
    expect(f.sql).toContain('"author_id" = ($1::text)::"pg_catalog"."int4"');
    expect(await runExplained(f)).toEqual([{ id: 1, title: 'A1' }, { id: 3, title: 'A2' }]);
    // The same document for admin has no filter and no parameter.
    const admin = await explain({ query: { query } });
    expect(admin.body[0].params).toEqual([]);
    expect(await runExplained(admin.body[0])).toHaveLength(3);
  });

  it('several root fields in document order; fields without a statement have null sql, params and plan', async () => {
    const r = await explain({ query: { query: '{ __typename n: author_aggregate { aggregate { count } } author(limit: 1) { name } }' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.map((f: { field: string }) => f.field)).toEqual(['__typename', 'n', 'author']);
    expect(r.body[0]).toEqual({ field: '__typename', sql: null, params: null, plan: null });
    expect(await runExplained(r.body[1])).toEqual({ aggregate: { count: 2 } });
    expect(r.body[2].params).toEqual([]);
  });

  it('a limit and offset written in the document are in the statement, so PostgreSQL plans it once (Note [Literal limits])', async () => {
    const query = '{ item(where: {n: {_eq: 3}}, order_by: {id: asc}, limit: 2, offset: 1) { id } }';
    const [f] = (await explain({ query: { query } })).body;
    expect(f.sql).toMatch(/ limit 2 offset 1\)/);
    expect(f.params).toEqual(['3']);
    expect(await runExplained(f)).toEqual([{ id: 10 }, { id: 17 }]);
    // Prepared and run as the engine runs it: after PostgreSQL's five custom plans, the generic
    // plan is used. With the limit a parameter, its generic plan (a limit of unknown size) costs
    // more than the custom ones, and every execution is planned again.
    const conn = await server.sql.reserve();
    try {
      await conn.unsafe(`prepare lim(text) as ${f.sql}`);
      expect(f.records).toBeDefined();
      const write = recordsWriter(f.records);
      for (let i = 0; i < 8; i++) {
        const [[text]] = (await conn.unsafe(`execute lim('3')`).raw()) as unknown as [[Uint8Array | null]];
        expect(JSON.parse(Buffer.from(await write(text)).toString('utf8'))).toEqual([{ id: 10 }, { id: 17 }]);
      }
      const [s] = await conn.unsafe(`select generic_plans, custom_plans from pg_prepared_statements where name = 'lim'`);
      expect(Number(s!.generic_plans)).toBeGreaterThan(0);
      await conn.unsafe('deallocate lim');
    } finally {
      conn.release();
    }
    // From a variable, the limit stays a bind parameter: the statement is the same for every value.
    const [v] = (await explain({ query: { query: 'query ($n: Int) { item(order_by: {id: asc}, limit: $n) { id } }', variables: { n: 2 } } })).body;
    expect(v.params).toEqual(['2']);
    expect(await runExplained(v)).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('a literal limit under a role\'s limit: the smaller of the two', async () => {
    await server.metadata({ type: 'pg_create_select_permission', args: { table: 'item', role: 'user', permission: { columns: ['id'], filter: {}, limit: 3 } } });
    const user = { 'X-Svc-Role': 'user', 'x-svc-user-id': '1' };
    for (const [given, want] of [[2, [1, 2]], [5, [1, 2, 3]]] as const) {
      const [f] = (await explain({ query: { query: `{ item(order_by: {id: asc}, limit: ${given}) { id } }` }, user })).body;
      expect(f.sql).toMatch(new RegExp(` limit ${Math.min(given, 3)}\\)`));
      expect(await runExplained(f)).toEqual(want.map((id) => ({ id })));
    }
    const [v] = (await explain({ query: { query: 'query ($n: Int) { item(order_by: {id: asc}, limit: $n) { id } }', variables: { n: 5 } }, user })).body;
    expect(await runExplained(v)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it('a list is sorted once, by its aggregate; the rows are sorted too only where a limit, offset or distinct on picks them (Note [One sort per list])', async () => {
    const explained = async (query: string) => {
      const r = await explain({ query: { query } });
      expect(r.status, r.text).toBe(200);
      return { sql: r.body[0].sql as string, plan: r.body[0].plan.join('\n') as string };
    };
    const orderBys = (sql: string) => (sql.match(/ order by /g) ?? []).length;
    const sortNodes = (plan: string) => (plan.match(/\bSort {2}\(cost/g) ?? []).length;
    const ordered = 'item(where: {id: {_lte: 30}}, order_by: [{n: desc}, {id: asc}]) { id n }';
    // The aggregate's order only: PostgreSQL sorts below the aggregate, once.
    let e = await explained(`{ ${ordered} }`);
    expect(orderBys(e.sql)).toBe(1);
    expect(sortNodes(e.plan)).toBe(1);
    // A limit, offset or distinct on picks the rows by the order: the rows subquery sorts too.
    for (const arg of ['limit: 5', 'offset: 3', 'distinct_on: [n]']) {
      e = await explained(`{ ${ordered.replace('order_by', `${arg}, order_by`)} }`);
      expect(orderBys(e.sql), arg).toBe(2);
    }
    // Distinct on the order's first column: one sort for the rows, none more (not `n, n desc, id`).
    e = await explained(`{ ${ordered.replace('order_by', 'distinct_on: [n], order_by')} }`);
    expect(sortNodes(e.plan)).toBe(1);
    const distinct = await server.request('POST', '/v1/graphql', { query: `{ ${ordered.replace('order_by', 'distinct_on: [n], order_by')} }` });
    expect(distinct.body).toEqual({ data: { item: [6, 5, 4, 3, 2, 1, 0].map((n) => ({ id: n === 0 ? 7 : n, n })) } });
    // An object relationship takes its first row: its order (none here) is not dropped either.
    e = await explained('{ article(order_by: {title: desc}) { title author { name } } }');
    expect(orderBys(e.sql)).toBe(1);
    // And the answers in that order, nested too.
    const a = await server.request('POST', '/v1/graphql', { query: `{ ${ordered} }` });
    const rows = a.body.data.item as { id: number; n: number }[];
    expect(rows.map((x) => x.id)).toEqual([...Array(30).keys()].map((i) => i + 1).sort((x, y) => (y % 7) - (x % 7) || x - y));
    const nested = await server.request('POST', '/v1/graphql', { query: '{ author(order_by: {id: desc}) { name articles: articles_by_author(order_by: {title: desc}) { title } } }' });
    if (nested.body.errors) {
      // No array relationship in this metadata: the object relationship's order instead.
      const b = await server.request('POST', '/v1/graphql', { query: '{ article(order_by: {title: desc}) { title author { name } } }' });
      expect(b.body).toEqual({ data: { article: [{ title: 'B1', author: { name: 'Bob' } }, { title: 'A2', author: { name: 'Alice' } }, { title: 'A1', author: { name: 'Alice' } }] } });
    }
  });

  it('errors in the metadata API\'s shape', async () => {
    expect((await explain({ query: { query: '{ nope }' } })).body).toEqual({ path: '$.selectionSet.nope', error: "field 'nope' not found in type: 'query_root'", code: 'validation-failed' });
    expect((await explain({ query: { query: '{ author { name } }' }, user: { 'x-svc-role': 'user' } })).body.code).toBe('validation-failed');
    expect((await explain({ query: { query: 'query A($id: Int!) { article_by_pk(id: $id) { id } }' } })).body.code).toBe('validation-failed');
    expect((await explain({})).body).toEqual({ path: '$', error: 'key "query" not found', code: 'parse-failed' });
    expect((await explain({ query: { query: 1 } })).body).toMatchObject({ path: '$.query.query', code: 'parse-failed' });
    expect((await explain({ query: { query: '{ author { name } }' }, user: { 'x-svc-user-id': 1 } })).body).toMatchObject({ path: '$.user.x-svc-user-id', code: 'parse-failed' });
    const missing = await explain({ query: { query: '{ article { id } }' }, user: { 'x-svc-role': 'user' } });
    expect(missing.body).toMatchObject({ code: 'not-found', error: 'missing session variable: "x-svc-user-id"' });
  });

  it('is for admins only', async () => {
    const r = await explain({ query: { query: '{ article { id } }' } }, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ path: '$', error: 'restricted access : admin only', code: 'access-denied' });
  });
});
