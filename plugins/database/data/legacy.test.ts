/**
 * Golden tests of the legacy data operations on /v1/query (`select`, `count`, `insert`):
 * request -> status and body against real PostgreSQL, for admin and for roles (select filter,
 * columns and limit as the GraphQL path applies them; insert check, columns and presets), in a
 * bulk with run_sql and track_table (the conformance setups), and error paths.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text unique not null, born date);
create table article (id serial primary key, title text not null, author_id int references author(id), rating numeric, views bigint, published boolean not null default false);
insert into author (name, born) values ('Alice', '1970-01-01'), ('Bob', null), ('Carol', '1990-05-05');
insert into article (title, author_id, rating, views, published) values
  ('A1', 1, 5, 10, true), ('A2', 1, null, 20, false), ('B1', 2, 3, 30, true), ('B2', 2, 4.5, 40, false), ('A3', 1, 1, 50, true);
`;

const server = useServer(SEED);
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
const ok = async (body: unknown, headers?: Record<string, string>) => {
  const r = await server.query(body, headers);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const select = (args: Record<string, unknown>, headers?: Record<string, string>) => ok({ type: 'select', args }, headers);

beforeAll(async () => {
  const r = await server.query({
    type: 'bulk',
    args: [
      { type: 'track_table', args: { schema: 'public', name: 'author' } },
      { type: 'track_table', args: { schema: 'public', name: 'article' } },
      { type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      {
        type: 'create_select_permission',
        args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id', 'rating'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 2 } },
      },
      {
        type: 'create_insert_permission',
        args: { table: 'article', role: 'user', permission: { columns: ['title', 'rating'], set: { author_id: 'X-Svc-User-Id' }, check: { rating: { _lte: 5 } } } },
      },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('select as admin', () => {
  it('columns, where, order_by, limit, offset', async () => {
    expect(await select({ table: 'article', columns: ['id', 'title'], where: { rating: { $gt: 2 } }, order_by: ['-rating'], limit: 2 })).toEqual([
      { id: 1, title: 'A1' },
      { id: 4, title: 'B2' },
    ]);
    expect(await select({ table: 'article', columns: ['id'], order_by: '+id', offset: 3 })).toEqual([{ id: 4 }, { id: 5 }]);
    expect(await select({ table: 'author', columns: ['name'], where: { id: 2 } })).toEqual([{ name: 'Bob' }]);
  });

  it('bigint and numeric come as strings, as Hasura v1 gives them', async () => {
    expect(await select({ table: 'article', columns: ['id', 'rating', 'views'], where: { id: { $in: [2, 4] } }, order_by: 'id' })).toEqual([
      { id: 2, rating: null, views: '20' },
      { id: 4, rating: '4.5', views: '40' },
    ]);
  });

  it('"*" and nested object and array relationships with their own where/order_by/limit, and an alias', async () => {
    expect(
      await select({
        table: 'author',
        columns: ['*', { name: 'articles', alias: 'posts', columns: ['title'], where: { published: true }, order_by: [{ column: 'id', type: 'desc' }], limit: 2 }],
        where: { name: 'Alice' },
      }),
    ).toEqual([{ id: 1, name: 'Alice', born: '1970-01-01', posts: [{ title: 'A3' }, { title: 'A1' }] }]);
    expect(await select({ table: 'article', columns: ['id', { name: 'author', columns: ['name'] }], where: { id: { $lte: 3 } }, order_by: 'id' })).toEqual([
      { id: 1, author: { name: 'Alice' } },
      { id: 2, author: { name: 'Alice' } },
      { id: 3, author: { name: 'Bob' } },
    ]);
  });

  it('order_by: nulls, through an object relationship, and relationships in where', async () => {
    const ids = async (args: Record<string, unknown>) => ((await select({ table: 'article', columns: ['id'], ...args })) as { id: number }[]).map((a) => a.id);
    expect(await ids({ order_by: [{ column: 'rating', type: 'asc', nulls: 'first' }] })).toEqual([2, 5, 3, 4, 1]);
    expect(await ids({ order_by: ['-rating'] })).toEqual([2, 1, 4, 3, 5]);
    expect(await ids({ order_by: ['-author.name', '+id'] })).toEqual([3, 4, 1, 2, 5]);
    expect(await ids({ where: { author: { name: { $eq: 'Bob' } } }, order_by: 'id' })).toEqual([3, 4]);
    expect(await ids({ where: { $or: [{ id: 1 }, { title: { $like: 'B%' } }] }, order_by: 'id' })).toEqual([1, 3, 4]);
  });

  it('the rows go out as the JSON text PostgreSQL built, alone and inside a bulk', async () => {
    // json_agg's own separator between rows (", " and a newline) shows that Node did not
    // re-serialise them (Note [Objects from rows] in plugins/postgres/sql/compile.ts).
    const sel = { type: 'select', args: { table: 'author', columns: ['id'], where: { id: { $in: [1, 2] } }, order_by: ['id'] } };
    const r = await server.query(sel);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.text).toBe('[{"id":1}, \n {"id":2}]');
    const b = await server.query({ type: 'bulk', args: [{ type: 'count', args: { table: 'author', where: { id: 1 } } }, sel] });
    expect(b.text).toBe('[{"count":1},[{"id":1}, \n {"id":2}]]');
  });

  it('values are bind parameters: injection attempts are plain values', async () => {
    expect(await select({ table: 'author', columns: ['id'], where: { name: "x' or '1'='1" } })).toEqual([]);
    expect(await select({ table: 'author', columns: ['id'], where: { name: { $in: ["Bob'); drop table author; --"] } } })).toEqual([]);
    expect(await select({ table: 'author', columns: ['id'], where: { id: 1 } })).toEqual([{ id: 1 }]);
  });

  it('errors: unknown table, column, relationship, bad where and order_by', async () => {
    const err = async (args: Record<string, unknown>) => {
      const r = await server.query({ type: 'select', args });
      expect(r.status, r.text).toBe(400);
      return r.body;
    };
    expect(await err({ table: 'foobar', columns: ['id'] })).toEqual({ path: '$.args.table', error: 'table "foobar" does not exist', code: 'not-exists' });
    expect(await err({ table: 'author', columns: ['id', 'user'] })).toEqual({ path: '$.args.columns[1]', error: 'no such column exists : "user"', code: 'permission-denied' });
    expect(await err({ table: 'author', columns: ['articles'] })).toMatchObject({ error: '"articles" is a relationship and should be expanded', code: 'unexpected-payload' });
    expect(await err({ table: 'author', columns: ['id'], where: { nope: 1 } })).toMatchObject({ error: '"nope" does not exist', code: 'not-exists', path: '$.args.where' });
    expect(await err({ table: 'author', columns: ['id'], where: { id: { $foo: 1 } } })).toMatchObject({ code: 'unexpected-payload', path: '$.args.where' });
    expect(await err({ table: 'author', columns: ['id'], where: { id: 'abc' } })).toMatchObject({ code: 'unexpected-payload' });
    expect(await err({ table: 'author', columns: ['id'], order_by: ['-articles.id'] })).toMatchObject({ error: `"articles" is an array relationship and can't be used in order_by` });
    expect(await err({ table: 'author', columns: ['id'], order_by: [] })).toMatchObject({ error: 'order_by array should not be empty' });
    expect(await err({ table: 'article', columns: ['id', { name: 'author', columns: ['id'], limit: 1 }] })).toMatchObject({
      error: "when selecting an object relationship, where, order_by, limit and offset can't be used",
    });
  });
});

describe('select and count as a role', () => {
  it('applies the select filter, columns and limit', async () => {
    expect(await select({ table: 'article', columns: ['id', 'title'], order_by: 'id' }, user('1'))).toEqual([
      { id: 1, title: 'A1' },
      { id: 2, title: 'A2' },
    ]);
    expect(await select({ table: 'article', columns: ['*'], order_by: 'id', limit: 10 }, user('2'))).toEqual([
      { id: 3, title: 'B1', author_id: 2, rating: '3' },
      { id: 4, title: 'B2', author_id: 2, rating: '4.5' },
    ]);
    // The array relationship's rows go through the remote table's filter too.
    expect(await select({ table: 'author', columns: ['name', { name: 'articles', columns: ['id'] }], order_by: 'id' }, user('2'))).toEqual([
      { name: 'Alice', articles: [] },
      { name: 'Bob', articles: [{ id: 3 }, { id: 4 }] },
      { name: 'Carol', articles: [] },
    ]);
  });

  it('refuses hidden columns in columns, where and order_by, and tables without permission', async () => {
    const err = async (args: Record<string, unknown>, type = 'select') => {
      const r = await server.query({ type, args }, user('1'));
      expect(r.status, r.text).toBe(400);
      return r.body;
    };
    const hidden = { error: 'role "user" does not have permission to select column "views"', code: 'permission-denied' };
    expect(await err({ table: 'article', columns: ['views'] })).toMatchObject(hidden);
    expect(await err({ table: 'article', columns: ['id'], where: { views: { $gt: 0 } } })).toMatchObject(hidden);
    expect(await err({ table: 'article', columns: ['id'], order_by: ['views'] })).toMatchObject(hidden);
    expect(await err({ table: 'author', columns: ['id'], where: { born: { $is_null: true } } })).toMatchObject({ error: 'role "user" does not have permission to select column "born"' });
    expect(await err({ table: 'author', columns: ['id'], where: { articles: { views: 10 } } })).toMatchObject(hidden);
    const other = await server.query({ type: 'select', args: { table: 'author', columns: ['id'] } }, { 'x-svc-role': 'nobody' });
    expect(other.status).toBe(400);
    expect(other.body).toEqual({ path: '$.args', error: 'select on "author" for role "nobody" is not allowed.', code: 'permission-denied' });
  });

  it('a where through a relationship cannot see rows outside the remote filter', async () => {
    // Bob's articles are outside user 1's filter: authors having such an article are not found through it.
    expect(await select({ table: 'author', columns: ['name'], where: { articles: { title: 'B1' } } }, user('1'))).toEqual([]);
    expect(await select({ table: 'author', columns: ['name'], where: { articles: { title: 'A1' } } }, user('1'))).toEqual([{ name: 'Alice' }]);
  });

  it('count: admin, where, distinct, and a role with its filter', async () => {
    expect(await ok({ type: 'count', args: { table: 'article' } })).toEqual({ count: 5 });
    expect(await ok({ type: 'count', args: { table: 'article', where: { published: true } } })).toEqual({ count: 3 });
    expect(await ok({ type: 'count', args: { table: 'article', distinct: ['author_id'] } })).toEqual({ count: 2 });
    expect(await ok({ type: 'count', args: { table: 'article' } }, user('2'))).toEqual({ count: 2 });
    const r = await server.query({ type: 'count', args: { table: 'article', distinct: ['views'] } }, user('2'));
    expect(r.body).toMatchObject({ code: 'permission-denied' });
  });

  it('a missing session variable is an error, never a wider filter', async () => {
    const r = await server.query({ type: 'select', args: { table: 'article', columns: ['id'] } }, { 'x-svc-role': 'user' });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toEqual({ path: '$', error: 'missing session variable: "x-svc-user-id"', code: 'not-found' });
  });
});

describe('insert', () => {
  it('as admin: affected_rows, returning, defaults for missing columns, values bound and cast', async () => {
    const body = await ok({
      type: 'insert',
      args: { table: 'author', objects: [{ name: "O'Brien; drop table author" }, { name: 'Dan', born: '2000-02-02' }], returning: ['name', 'born'] },
    });
    expect(body).toEqual({ affected_rows: 2, returning: [{ name: "O'Brien; drop table author", born: null }, { name: 'Dan', born: '2000-02-02' }] });
    expect(await ok({ type: 'insert', args: { table: 'article', objects: [{ title: 'D1', author_id: 5, views: '9007199254740993' }] } })).toEqual({ affected_rows: 1 });
    expect(await select({ table: 'article', columns: ['views'], where: { title: 'D1' } })).toEqual([{ views: '9007199254740993' }]);
  });

  it('on_conflict: ignore and update', async () => {
    expect(await ok({ type: 'insert', args: { table: 'author', objects: [{ name: 'Dan' }], on_conflict: { constraint: 'author_name_key', action: 'ignore' } } })).toEqual({ affected_rows: 0 });
    expect(
      await ok({
        type: 'insert',
        args: { table: 'author', objects: [{ name: 'Dan', born: '2001-01-01' }], on_conflict: { constraint: 'author_name_key', action: 'update' }, returning: ['born'] },
      }),
    ).toEqual({ affected_rows: 1, returning: [{ born: '2001-01-01' }] });
    const r = await server.query({ type: 'insert', args: { table: 'author', objects: [{ name: 'Dan' }], on_conflict: { action: 'update' } } });
    expect(r.body).toMatchObject({ code: 'unexpected-payload', error: 'Expecting constraint or constraint_on when the action is update' });
  });

  it('errors: unknown column, constraint violations, bad values', async () => {
    const err = async (args: Record<string, unknown>) => {
      const r = await server.query({ type: 'insert', args });
      expect(r.status, r.text).toBe(400);
      return r.body;
    };
    expect(await err({ table: 'author', objects: [{ name: 'X', age: 23 }] })).toMatchObject({ code: 'permission-denied', error: 'no such column exists : "age"' });
    expect(await err({ table: 'author', objects: [{ name: 'Alice' }] })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Uniqueness violation\. duplicate key/) });
    expect(await err({ table: 'author', objects: [{ born: '2000-01-01' }] })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Not-NULL violation\./) });
    expect(await err({ table: 'article', objects: [{ title: 'x', author_id: 999 }] })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Foreign key violation\./) });
    expect(await err({ table: 'author', objects: [{ name: 'Y', born: 'not a date' }] })).toMatchObject({ code: 'data-exception' });
    expect(await err({ table: 'author', objects: [] })).toMatchObject({ code: 'unexpected-payload', error: 'objects should not be empty' });
    // returning takes column names only (Hasura's [PGCol]): not "*", not relationships.
    expect(await err({ table: 'author', objects: [{ name: 'X' }], returning: ['*'] })).toEqual({ path: '$.args.returning', error: 'no such column exists : "*"', code: 'permission-denied' });
    expect(await err({ table: 'author', objects: [{ name: 'X' }], returning: ['articles'] })).toMatchObject({ path: '$.args.returning', error: 'no such column exists : "articles"' });
    expect(await err({ table: 'author', objects: [{ name: 'X' }], returning: [{ name: 'articles', columns: ['id'] }] })).toMatchObject({ path: '$.returning[0]', code: 'parse-failed' });
    expect(await select({ table: 'author', columns: ['name'], where: { name: { $in: ['X', 'Y'] } } })).toEqual([]);
  });

  it('as a role: presets from the session, allowed columns, the check, returning within select columns', async () => {
    expect(await ok({ type: 'insert', args: { table: 'article', objects: [{ title: 'U3', rating: 2 }], returning: ['title', 'author_id'] } }, user('3'))).toEqual({
      affected_rows: 1,
      returning: [{ title: 'U3', author_id: 3 }],
    });
    const err = async (args: Record<string, unknown>, headers: Record<string, string> = user('3')) => {
      const r = await server.query({ type: 'insert', args }, headers);
      expect(r.status, r.text).toBe(400);
      return r.body;
    };
    expect(await err({ table: 'article', objects: [{ title: 'U4', views: 1 }] })).toMatchObject({ code: 'permission-denied', error: 'role "user" does not have permission to insert column "views"' });
    expect(await err({ table: 'article', objects: [{ title: 'U4', rating: 1 }, { title: 'U5', rating: 9 }] })).toEqual({
      path: '$.args',
      error: 'check constraint of an insert/update permission has failed',
      code: 'permission-error',
    });
    expect(await err({ table: 'article', objects: [{ title: 'U6' }], returning: ['views'] })).toMatchObject({ error: 'role "user" does not have permission to select column "views"' });
    expect(await err({ table: 'article', objects: [{ title: 'U8', author_id: 1 }] })).toEqual({
      path: '$.args.objects[0]',
      error: 'column "author_id" is not insertable for role "user"',
      code: 'not-supported',
    });
    expect(await err({ table: 'author', objects: [{ name: 'U' }] })).toMatchObject({ code: 'permission-denied', error: 'insert on "author" for role "user" is not allowed.' });
    expect(await err({ table: 'article', objects: [{ title: 'U7' }], on_conflict: { constraint: 'article_pkey', action: 'update' } })).toEqual({
      path: '$.args.on_conflict',
      code: 'permission-denied',
      error: 'upsert is not allowed for role "user" since update permissions are not defined',
    });
    // Nothing of the refused inserts was written.
    expect(await select({ table: 'article', columns: ['title'], where: { title: { $like: 'U%' } } })).toEqual([{ title: 'U3' }]);
  });
});

describe('in a bulk', () => {
  it('run_sql, track_table, insert and select in one request, as the conformance setups do', async () => {
    const body = await ok({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table item (id bigserial primary key, name text not null, n bigint)' } },
        { type: 'track_table', args: { schema: 'public', name: 'item' } },
        { type: 'insert', args: { table: 'item', objects: [{ name: 'one', n: '123456789' }, { name: 'two' }] } },
        { type: 'select', args: { table: 'item', columns: ['id', 'name', 'n'], order_by: 'id' } },
        { type: 'count', args: { table: 'item' } },
      ],
    });
    expect(body).toEqual([
      { result_type: 'CommandOk', result: null },
      { message: 'success' },
      { affected_rows: 2 },
      [
        { id: '1', name: 'one', n: '123456789' },
        { id: '2', name: 'two', n: null },
      ],
      { count: 2 },
    ]);
    expect(await ok({ type: 'count', args: { table: 'item' } })).toEqual({ count: 2 });
  });

  it('an insert rolls back with the bulk when a later item fails', async () => {
    const r = await server.query({
      type: 'bulk',
      args: [
        { type: 'insert', args: { table: 'item', objects: [{ name: 'three' }] } },
        { type: 'select', args: { table: 'item', columns: ['nope'] } },
      ],
    });
    expect(r.status).toBe(400);
    expect(await ok({ type: 'count', args: { table: 'item' } })).toEqual({ count: 2 });
    const r2 = await server.query({
      type: 'bulk',
      args: [
        { type: 'insert', args: { table: 'item', objects: [{ name: 'four' }] } },
        { type: 'track_table', args: { schema: 'public', name: 'no_such_table' } },
      ],
    });
    expect(r2.status).toBe(400);
    expect(await ok({ type: 'count', args: { table: 'item', where: { name: 'four' } } })).toEqual({ count: 0 });
  });
});

describe('the source a request names (Hasura\'s DMLQuery `source`)', () => {
  it('runs on the named source, `default` when none; an unknown source is not-exists', async () => {
    // A second PostgreSQL source on the same database, with only `author` tracked, as `writer`.
    const add = await server.metadata({ type: 'pg_add_source', args: { name: 'again', configuration: { connection_info: { database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' } } } } });
    expect(add.status, add.text).toBe(200);
    try {
      const track = await server.metadata({ type: 'pg_track_table', args: { source: 'again', table: 'author', configuration: { custom_name: 'writer' } } });
      expect(track.status, track.text).toBe(200);
      expect(await select({ source: 'again', table: 'author', columns: ['name'], where: { id: 3 } })).toEqual([{ name: 'Carol' }]);
      expect(await ok({ type: 'count', args: { source: 'again', table: 'author', where: { id: { $lte: 3 } } } })).toEqual({ count: 3 });
      // `article` is tracked in `default` only.
      expect(await server.query({ type: 'select', args: { source: 'again', table: 'article', columns: ['id'] } })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
      expect(await select({ source: 'default', table: 'article', columns: ['id'], where: { id: 1 } })).toEqual([{ id: 1 }]);
      expect(await server.query({ type: 'select', args: { source: 'nope', table: 'author', columns: ['id'] } })).toMatchObject({
        status: 400,
        body: { code: 'not-exists', error: 'source with name "nope" does not exist', path: '$.args.source' },
      });
      expect(await server.query({ type: 'insert', args: { source: 'nope', table: 'author', objects: [{ name: 'Zed' }] } })).toMatchObject({ status: 400, body: { path: '$.args.source' } });
    } finally {
      expect((await server.metadata({ type: 'pg_drop_source', args: { name: 'again' } })).status).toBe(200);
    }
  });
});
