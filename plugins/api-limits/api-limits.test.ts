/**
 * API limits per role (plugins/api-limits): the metadata operations, and each limit enforced
 * over GraphQL: depth and nodes (introspection and the admin exempt), batch, time (the statement
 * cancelled), rate (per client, shared by two instances on one database).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, author_id int references author(id));
insert into author (name) values ('a'), ('b');
insert into article (title, author_id) values ('x', 1), ('y', 2);
create function slow_authors(seconds float) returns setof author language sql stable as $$ select a.* from author a, pg_sleep(seconds) $$;
`;

let db: { url: string };
let s: TestServer;
const servers: TestServer[] = [];

beforeAll(async () => {
  db = await createDatabase();
  s = await startServer({ database: db });
  servers.push(s);
  await s.runSql(SEED);
  const r = await s.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_function', args: { function: 'slow_authors' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      ...['user', 'guest'].flatMap((role) => [
        { type: 'pg_create_select_permission', args: { table: 'author', role, permission: { columns: ['id', 'name'], filter: {} } } },
        { type: 'pg_create_select_permission', args: { table: 'article', role, permission: { columns: ['id', 'title'], filter: {} } } },
      ]),
      { type: 'pg_create_function_permission', args: { function: 'slow_authors', role: 'user' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

afterAll(async () => {
  for (const x of servers) await x.stop();
});

beforeEach(async () => {
  expect((await s.metadata({ type: 'remove_api_limits', args: {} })).status).toBe(200);
});

const as = (role: string, extra: Record<string, string> = {}) => ({ 'x-svc-role': role, ...extra });
const post = async (on: TestServer, body: unknown, headers: Record<string, string>) => (await on.request('POST', '/v1/graphql', body, headers)).body;
const errorOf = async (body: unknown, headers: Record<string, string>, on = s) => (await post(on, body, headers)).errors?.[0];
const setLimits = async (args: unknown) => {
  const r = await s.metadata({ type: 'set_api_limits', args });
  expect(r.status, r.text).toBe(200);
};
const DEEP = '{ article { author { articles { author { name } } } } }'; // depth 4, 4 nodes

describe('set_api_limits and remove_api_limits', () => {
  it('set, export (as Hasura writes it), replace, remove', async () => {
    const limits = {
      disabled: false,
      depth_limit: { global: 5, per_role: { user: 3 } },
      node_limit: { global: 100 },
      time_limit: { global: 2.5, per_role: {} },
      batch_limit: { global: 5 },
      rate_limit: { global: { max_reqs_per_min: 100, unique_params: 'ip' }, per_role: { user: { max_reqs_per_min: 10, unique_params: ['X-Svc-User-Id'] } } },
    };
    await setLimits(limits);
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    expect(exported.api_limits).toEqual({
      disabled: false,
      rate_limit: { global: { max_reqs_per_min: 100, unique_params: 'IP' }, per_role: { user: { max_reqs_per_min: 10, unique_params: ['x-svc-user-id'] } } },
      depth_limit: { global: 5, per_role: { user: 3 } },
      node_limit: { global: 100, per_role: {} },
      time_limit: { global: 2.5, per_role: {} },
      batch_limit: { global: 5, per_role: {} },
    });
    expect(Object.keys(exported).indexOf('api_limits')).toBeGreaterThan(Object.keys(exported).indexOf('sources'));
    expect((await s.metadata({ type: 'remove_api_limits', args: {} })).status).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.api_limits).toBeUndefined();
    expect((await s.metadata({ type: 'replace_metadata', args: exported })).status).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.api_limits).toEqual(exported.api_limits);
  });

  it('refuses what is not a limit, and changes nothing', async () => {
    await setLimits({ depth_limit: { global: 7 } });
    const before = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const bad = [
      [{ depth_limit: { per_role: { user: 3 } } }, '$.args.depth_limit'],
      [{ depth_limit: { global: 0 } }, '$.args.depth_limit.global'],
      [{ node_limit: { global: 1.5 } }, '$.args.node_limit.global'],
      [{ time_limit: { global: -1 } }, '$.args.time_limit.global'],
      [{ batch_limit: { global: '5' } }, '$.args.batch_limit.global'],
      [{ rate_limit: { global: { max_reqs_per_min: 10, unique_params: 'cookie' } } }, '$.args.rate_limit.global.unique_params'],
      [{ rate_limit: { global: { max_reqs_per_min: 10, unique_params: ['x-svc-role'] } } }, '$.args.rate_limit.global.unique_params[0]'],
      [{ rate_limit: { global: { unique_params: 'IP' } } }, '$.args.rate_limit.global'],
    ] as const;
    for (const [args, path] of bad) {
      const r = await s.metadata({ type: 'set_api_limits', args });
      expect(r.status, JSON.stringify(args)).toBe(400);
      expect(r.body.path, JSON.stringify(args)).toBe(path);
    }
    expect((await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body).toEqual(before);
  });
});

describe('depth and node limits', () => {
  it('per role, else global; the admin is not limited', async () => {
    await setLimits({ depth_limit: { global: 4, per_role: { user: 3 } } });
    expect((await post(s, { query: DEEP }, as('guest'))).data.article).toHaveLength(2);
    expect(await errorOf({ query: DEEP }, as('user'))).toEqual({
      message: 'the query has depth 4, more than the depth limit of 3 of the role "user" (api_limits)',
      extensions: { code: 'validation-failed', path: '$' },
    });
    expect((await post(s, { query: '{ article { author { articles { id } } } }' }, as('user'))).data.article).toHaveLength(2);
    expect((await post(s, { query: DEEP }, {})).data.article).toHaveLength(2);
  });

  it('depth counts fields with selection sets through fragments; introspection is exempt', async () => {
    await setLimits({ depth_limit: { global: 2 } });
    const viaFragment = '{ article { ...A } } fragment A on article { author { articles { id } } }';
    expect((await errorOf({ query: viaFragment }, as('user'))).message).toMatch(/depth 3, more than the depth limit of 2/);
    const introspection = '{ __schema { types { fields { type { ofType { name } } } } } }';
    expect((await post(s, { query: introspection }, as('user'))).data.__schema.types.length).toBeGreaterThan(0);
  });

  it('nodes: fields with selection sets', async () => {
    await setLimits({ node_limit: { global: 3 } });
    expect((await post(s, { query: '{ article { id author { name articles { id } } } }' }, as('user'))).data.article).toHaveLength(2);
    expect((await errorOf({ query: DEEP }, as('user'))).message).toBe('the query has 4 nodes, more than the node limit of 3 of the role "user" (api_limits)');
  });

  it('disabled: nothing is limited, and the limits are kept', async () => {
    await setLimits({ disabled: true, depth_limit: { global: 1 } });
    expect((await post(s, { query: DEEP }, as('user'))).data.article).toHaveLength(2);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.api_limits).toEqual({ disabled: true, depth_limit: { global: 1, per_role: {} } });
  });
});

describe('batch limit', () => {
  it('refuses a longer batch as a whole', async () => {
    await setLimits({ batch_limit: { global: 2 } });
    const q = { query: '{ author(order_by: {id: asc}, limit: 1) { id } }' };
    expect(await post(s, [q, q], as('user'))).toEqual([{ data: { author: [{ id: 1 }] } }, { data: { author: [{ id: 1 }] } }]);
    expect(await post(s, [q, q, q], as('user'))).toEqual({
      errors: [{ message: 'the batch has 3 operations, more than the batch limit of 2 of the role "user" (api_limits)', extensions: { code: 'validation-failed', path: '$' } }],
    });
    expect(await post(s, [q, q, q], {})).toHaveLength(3);
  });
});

describe('time limit', () => {
  it('answers when the time is up and cancels the statement', async () => {
    await setLimits({ time_limit: { global: 1 } });
    const t0 = performance.now();
    const e = await errorOf({ query: '{ slow_authors(args: {seconds: 30}) { id } }' }, as('user'));
    const took = performance.now() - t0;
    expect(e).toEqual({ message: 'the request ran longer than its time limit of 1 s (set_api_limits time_limit)', extensions: { code: 'validation-failed', path: '$' } });
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(5000);
    let running = 1;
    for (let i = 0; i < 50 && running > 0; i++) {
      running = (await s.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and query like '%pg_sleep%' and pid <> pg_backend_pid() and state = 'active'`)[0]!.n;
      if (running) await new Promise((r) => setTimeout(r, 100));
    }
    expect(running).toBe(0);
    // Within its time, the same field answers.
    expect((await post(s, { query: '{ slow_authors(args: {seconds: 0.1}) { id } }' }, as('user'))).data.slow_authors).toHaveLength(2);
  });

  it('a mutation past its time is rolled back, and said to be', async () => {
    await setLimits({ time_limit: { global: 1 } });
    await s.runSql('create or replace function slow_insert() returns trigger language plpgsql as $$ begin perform pg_sleep(20); return new; end $$; create trigger slow before insert on article for each row execute function slow_insert()');
    try {
      const perm = { type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, columns: ['title'] } } };
      expect((await s.metadata(perm)).status).toBe(200);
      const e = await errorOf({ query: 'mutation { insert_article(objects: [{title: "late"}]) { affected_rows } a: insert_article(objects: [{title: "later"}]) { affected_rows } }' }, as('user'));
      expect(e.message).toMatch(/time limit of 1 s/);
      expect((await s.sql`select count(*)::int as n from article where title in ('late', 'later')`)[0]!.n).toBe(0);
    } finally {
      await s.runSql('drop trigger slow on article');
      await s.metadata({ type: 'pg_drop_insert_permission', args: { table: 'article', role: 'user' } });
    }
  });
});

describe('rate limit', () => {
  it('per session variable, shared by two instances on one database', async () => {
    await setLimits({ rate_limit: { global: { max_reqs_per_min: 3, unique_params: ['x-svc-user-id'] } } });
    const other = await startServer({ database: db });
    servers.push(other);
    const q = { query: '{ author(limit: 1) { id } }' };
    const one = as('user', { 'x-svc-user-id': '1' });
    expect((await post(s, q, one)).data).toBeDefined();
    expect((await post(other, q, one)).data).toBeDefined();
    expect((await post(s, q, one)).data).toBeDefined();
    // The fourth within a minute, on either instance.
    expect(await errorOf(q, one, other)).toEqual({ message: 'rate limit of 3 exceeded', extensions: { code: 'rate-limit-exceeded', path: '$' } });
    expect((await errorOf(q, one)).extensions.code).toBe('rate-limit-exceeded');
    // Another user, another role, and the admin, are counted apart or not at all.
    expect((await post(s, q, as('user', { 'x-svc-user-id': '2' }))).data).toBeDefined();
    expect((await post(s, q, as('guest', { 'x-svc-user-id': '1' }))).data).toBeDefined();
    for (let i = 0; i < 5; i++) expect((await post(s, q, {})).data).toBeDefined();
    // A batch counts each of its operations.
    const three = as('user', { 'x-svc-user-id': '3' });
    expect(await post(s, [q, q], three)).toHaveLength(2);
    expect((await post(s, [q, q], three)).errors[0].message).toBe('rate limit of 3 exceeded');
    const counters = await s.sql`select count(*)::int as n from svc_catalog.rate_limit_counters`;
    expect(counters[0]!.n).toBeGreaterThan(0);
    expect(s.logs.filter((l) => l.type === 'api-limits')).toEqual([]);
  });
});
