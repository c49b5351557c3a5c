/**
 * Golden tests of POST /v1/graphql/explain (Hasura v2's Explain API): one `{field, sql, params,
 * plan}` per root field, `sql` with bind parameters and `params` their values for the request's
 * variables and the `user` session, `plan` PostgreSQL's EXPLAIN of it; the statement run with
 * those parameters answers what /v1/graphql answers. Admin only.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, author_id int references author(id));
insert into author (name) values ('Alice'), ('Bob');
insert into article (title, author_id) values ('A1', 1), ('B1', 2), ('A2', 1);
`;

const server = useServer(SEED);
const explain = (body: unknown, headers?: Record<string, string>) => server.request('POST', '/v1/graphql/explain', body, headers);

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

/** The statement of an explained field run as it is prepared: its JSON text. */
async function runExplained(f: { sql: string; params: (string | null)[] }): Promise<unknown> {
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
    expect(r.body[2].params).toEqual(['1']);
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
