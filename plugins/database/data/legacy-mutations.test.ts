/**
 * Golden tests of the legacy `update` and `delete` on /v1/query (Hasura v2's, renamed): request ->
 * status and body against real PostgreSQL, for admin and for roles (update columns, filter,
 * check and presets; delete filter; the select permission `where` and `returning` need), the
 * error paths, and bulks of select/count/insert/update/delete that commit or roll back as one.
 * The data is reset before every test (direct SQL, outside the engine).
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text unique not null, born date);
create table article (
  id serial primary key, title text not null, author_id int references author(id), rating numeric,
  views bigint not null default 0, published boolean not null default false, editor text, tags text[]
);
create view article_title as select id, title from article;
create view article_stats as select author_id, count(*) as n from article group by author_id;
`;

const DATA = `
truncate article, author restart identity cascade;
insert into author (name, born) values ('Alice', '1970-01-01'), ('Bob', null);
insert into article (title, author_id, rating, views, published) values
  ('A1', 1, 5, 10, true), ('A2', 1, null, 20, false), ('B1', 2, 3, 30, true), ('B2', 2, 4.5, 9007199254740993, false);
`;

const server = useServer(SEED);
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
type H = Record<string, string> | undefined;
const ok = async (body: unknown, headers?: H) => {
  const r = await server.query(body, headers);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const fail = async (body: unknown, headers?: H) => {
  const r = await server.query(body, headers);
  expect(r.status, r.text).toBe(400);
  return r.body;
};
const update = (args: Record<string, unknown>, headers?: H) => ok({ type: 'update', args }, headers);
const del = (args: Record<string, unknown>, headers?: H) => ok({ type: 'delete', args }, headers);
/** The articles as admin reads them, by id. */
const articles = async (columns: string[] = ['id', 'title', 'rating', 'editor']) => ok({ type: 'select', args: { table: 'article', columns, order_by: 'id' } });
const ORIGINAL = [
  { id: 1, title: 'A1', rating: '5', editor: null },
  { id: 2, title: 'A2', rating: null, editor: null },
  { id: 3, title: 'B1', rating: '3', editor: null },
  { id: 4, title: 'B2', rating: '4.5', editor: null },
];

beforeAll(async () => {
  const r = await server.query({
    type: 'bulk',
    args: [
      ...['author', 'article', 'article_title', 'article_stats'].map((name) => ({ type: 'track_table', args: { schema: 'public', name } })),
      { type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id', 'rating', 'published', 'editor'], filter: {} } } },
      {
        type: 'create_update_permission',
        args: {
          table: 'article',
          role: 'user',
          permission: { columns: ['title', 'rating', 'published'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, check: { rating: { _lte: 5 } }, set: { editor: 'X-Svc-User-Id' } },
        },
      },
      { type: 'create_delete_permission', args: { table: 'article', role: 'user', permission: { filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
      { type: 'create_insert_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'rating', 'author_id'], check: {} } } },
      { type: 'create_select_permission', args: { table: 'article', role: 'reader', permission: { columns: ['id', 'title'], filter: {} } } },
      // Update and delete on author without select: Hasura refuses both (their where needs select).
      { type: 'create_update_permission', args: { table: 'author', role: 'blind', permission: { columns: ['name'], filter: {} } } },
      { type: 'create_delete_permission', args: { table: 'author', role: 'blind', permission: { filter: {} } } },
      { type: 'create_insert_permission', args: { table: 'author', role: 'blind', permission: { columns: ['name'], check: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.sql.unsafe(DATA);
});

describe('update as admin', () => {
  it('$set with returning: affected_rows and the new rows, big numbers as strings', async () => {
    expect(await update({ table: 'article', where: { id: 1 }, $set: { title: 'A1x' }, returning: ['id', 'title', 'views'] })).toEqual({
      affected_rows: 1,
      returning: [{ id: 1, title: 'A1x', views: '10' }],
    });
    expect((await articles())[0]).toEqual({ id: 1, title: 'A1x', rating: '5', editor: null });
  });

  it('`values` is an alias of $set; without returning only affected_rows', async () => {
    expect(await update({ table: 'article', where: { author_id: 1 }, $set: null, values: { published: true }, returning: null })).toEqual({ affected_rows: 2 });
    expect(await ok({ type: 'count', args: { table: 'article', where: { published: true } } })).toEqual({ count: 3 });
  });

  it('$inc, $mul and $default together, each on its own column; bigint arithmetic is exact', async () => {
    expect(
      await update({ table: 'article', where: { id: 4 }, $inc: { views: 1 }, $mul: { rating: 2 }, $default: ['published'], returning: ['views', 'rating', 'published'] }),
    ).toEqual({ affected_rows: 1, returning: [{ views: '9007199254740994', rating: '9.0', published: false }] });
    expect(await update({ table: 'article', where: { id: 1 }, $default: ['views', 'views'], returning: ['views'] })).toEqual({ affected_rows: 1, returning: [{ views: '0' }] });
  });

  it('a fractional JSON number for a numeric column has the scale Hasura binds it with (a multiple of 4 digits)', async () => {
    // Hasura binds numerics in PostgreSQL's binary format (postgresql-binary), whose encoder
    // rounds the scale up to a multiple of 4 digits: 1.1 is 1.1000, so 45 * 1.1 is 49.5000
    // (the conformance case product_mul_price.yaml). Integers keep scale 0.
    expect(await update({ table: 'article', where: { id: 3 }, $mul: { rating: 1.1 }, returning: ['rating'] })).toEqual({ affected_rows: 1, returning: [{ rating: '3.3000' }] });
    expect(await update({ table: 'article', where: { id: 3 }, $inc: { rating: 0.00001 }, returning: ['rating'] })).toEqual({ affected_rows: 1, returning: [{ rating: '3.30001000' }] });
    expect(await update({ table: 'article', where: { id: 3 }, $set: { rating: -2.5 }, returning: ['rating'] })).toEqual({ affected_rows: 1, returning: [{ rating: '-2.5000' }] });
    expect(await update({ table: 'article', where: { id: 3 }, $set: { rating: 1e-7 }, returning: ['rating'] })).toEqual({ affected_rows: 1, returning: [{ rating: '0.00000010' }] });
    expect(await update({ table: 'article', where: { id: 3 }, $set: { rating: 12 }, $inc: { views: 2 }, returning: ['rating', 'views'] })).toEqual({
      affected_rows: 1,
      returning: [{ rating: '12', views: '32' }],
    });
    expect(await ok({ type: 'insert', args: { table: 'article', objects: [{ title: 'N', rating: 4.25 }], returning: ['rating'] } })).toEqual({ affected_rows: 1, returning: [{ rating: '4.2500' }] });
  });

  it('a where matching nothing: affected_rows 0 and an empty returning; an empty where updates every row', async () => {
    expect(await update({ table: 'article', where: { id: 99 }, $set: { title: 'x' }, returning: ['id'] })).toEqual({ affected_rows: 0, returning: [] });
    expect(await update({ table: 'article', where: {}, $inc: { views: 1 } })).toEqual({ affected_rows: 4 });
  });

  it('values are bind parameters cast to the column type (text with quotes, arrays, nulls)', async () => {
    const title = "x'; drop table article; --";
    expect(await update({ table: 'article', where: { id: 2 }, $set: { title, tags: ['a', 'b c'], rating: null }, returning: ['title', 'tags', 'rating'] })).toEqual({
      affected_rows: 1,
      returning: [{ title, tags: ['a', 'b c'], rating: null }],
    });
  });

  it('an auto-updatable view can be updated', async () => {
    expect(await update({ table: 'article_title', where: { id: 2 }, $set: { title: 'V' }, returning: ['id', 'title'] })).toEqual({ affected_rows: 1, returning: [{ id: 2, title: 'V' }] });
    expect((await articles())[1]).toMatchObject({ id: 2, title: 'V' });
  });

  it('errors: missing where, no operator, a column in two operators', async () => {
    expect(await fail({ type: 'update', args: { table: 'article', $set: { title: 'x' } } })).toEqual({ path: '$', error: 'key "where" not found', code: 'parse-failed' });
    expect(await fail({ type: 'update', args: { table: 'article', where: { id: 1 }, returning: ['id'] } })).toEqual({
      path: '$.args',
      error: 'atleast one of $set, $inc, $mul has to be present',
      code: 'unexpected-payload',
    });
    expect(await fail({ type: 'update', args: { table: 'article', where: { id: 1 }, $set: {}, $inc: {} } })).toMatchObject({ error: 'atleast one of $set, $inc, $mul has to be present' });
    expect(await fail({ type: 'update', args: { table: 'article', where: { id: 1 }, $set: { rating: 1, title: 'x' }, $inc: { rating: 2 }, $default: ['title'] } })).toEqual({
      path: '$.args',
      error: 'column found in multiple operators; "rating" in $set, $inc. "title" in $set, $default',
      code: 'unexpected-payload',
    });
    expect(await articles()).toEqual(ORIGINAL);
  });

  it('errors: unknown table and columns, relationships, bad where, bad values, constraints, non-updatable view', async () => {
    const err = (args: Record<string, unknown>) => fail({ type: 'update', args });
    expect(await err({ table: 'nope', where: {}, $set: { a: 1 } })).toEqual({ path: '$.args.table', error: 'table "nope" does not exist', code: 'not-exists' });
    expect(await err({ table: 'article', where: {}, $set: { nope: 1 } })).toEqual({ path: '$.args["$set"]', error: 'no such column exists : "nope"', code: 'permission-denied' });
    expect(await err({ table: 'article', where: {}, $inc: { author: 1 } })).toEqual({ path: '$.args["$inc"]', error: 'no such column exists : "author"', code: 'permission-denied' });
    expect(await err({ table: 'article', where: {}, $default: ['nope'] })).toEqual({ path: '$.args["$default"]', error: 'no such column exists : "nope"', code: 'permission-denied' });
    expect(await err({ table: 'article', where: {}, $set: { title: 'x' }, returning: ['id', '*'] })).toEqual({
      path: '$.args.returning',
      error: 'no such column exists : "*"',
      code: 'permission-denied',
    });
    expect(await err({ table: 'article', where: {}, $set: { title: 'x' }, returning: ['author'] })).toMatchObject({ path: '$.args.returning', error: 'no such column exists : "author"' });
    expect(await err({ table: 'article', where: { nope: 1 }, $set: { title: 'x' } })).toMatchObject({ path: '$.args.where', error: '"nope" does not exist', code: 'not-exists' });
    expect(await err({ table: 'article', where: { id: 1 }, $set: { author_id: 'abc' } })).toMatchObject({ code: 'data-exception' });
    expect(await err({ table: 'article', where: { id: 1 }, $set: { author_id: 99 } })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Foreign key violation\./) });
    expect(await err({ table: 'author', where: { id: 1 }, $set: { name: 'Bob' } })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Uniqueness violation\./) });
    expect(await err({ table: 'article_stats', where: {}, $set: { n: 1 } })).toEqual({ path: '$.args', error: 'view "article_stats" is not updatable', code: 'not-supported' });
    expect(await err({ table: 'article', where: 'x', $set: { title: 'x' } })).toMatchObject({ path: '$.where', code: 'parse-failed' });
    expect(await err({ table: 'article', where: {}, $set: [1] })).toMatchObject({ code: 'parse-failed' });
    expect(await articles()).toEqual(ORIGINAL);
  });
});

describe('update as a role', () => {
  it('the filter is ANDed into where, the presets are applied, returning within the select columns', async () => {
    expect(await update({ table: 'article', where: {}, $set: { published: true }, returning: ['id', 'editor', 'published'] }, user('1'))).toEqual({
      affected_rows: 2,
      returning: [
        { id: 1, editor: '1', published: true },
        { id: 2, editor: '1', published: true },
      ],
    });
    expect(await articles(['id', 'editor', 'published'])).toEqual([
      { id: 1, editor: '1', published: true },
      { id: 2, editor: '1', published: true },
      { id: 3, editor: null, published: true },
      { id: 4, editor: null, published: false },
    ]);
  });

  it('rows outside the filter are not updated: affected_rows 0', async () => {
    expect(await update({ table: 'article', where: { id: 3 }, $set: { title: 'stolen' }, returning: ['id'] }, user('1'))).toEqual({ affected_rows: 0, returning: [] });
    expect(await articles()).toEqual(ORIGINAL);
  });

  it('the presets alone are an update (no operator needed)', async () => {
    expect(await update({ table: 'article', where: { id: 3 } }, user('2'))).toEqual({ affected_rows: 1 });
    expect((await articles())[2]).toEqual({ id: 3, title: 'B1', rating: '3', editor: '2' });
  });

  it('a failed check refuses the update and writes nothing', async () => {
    expect(await fail({ type: 'update', args: { table: 'article', where: {}, $inc: { rating: 1 } } }, user('1'))).toEqual({
      path: '$.args',
      error: 'check constraint of an insert/update permission has failed',
      code: 'permission-error',
    });
    expect(await fail({ type: 'update', args: { table: 'article', where: { id: 3 }, $set: { rating: 9 } } }, user('2'))).toMatchObject({ code: 'permission-error' });
    expect(await articles()).toEqual(ORIGINAL);
    // Within the check it goes through.
    expect(await update({ table: 'article', where: { id: 3 }, $mul: { rating: 1.5 }, returning: ['rating'] }, user('2'))).toEqual({ affected_rows: 1, returning: [{ rating: '4.5000' }] });
  });

  it('refuses columns outside the permission, preset columns, and roles without the permissions', async () => {
    const err = (args: Record<string, unknown>, headers: H = user('1')) => fail({ type: 'update', args }, headers);
    expect(await err({ table: 'article', where: {}, $inc: { views: 1 } })).toEqual({
      path: '$.args["$inc"]',
      error: 'role "user" does not have permission to update column "views"',
      code: 'permission-denied',
    });
    expect(await err({ table: 'article', where: {}, $default: ['author_id'] })).toMatchObject({ error: 'role "user" does not have permission to update column "author_id"' });
    expect(await err({ table: 'article', where: {}, $set: { nope: 1 } })).toMatchObject({ error: 'role "user" does not have permission to update column "nope"' });
    expect(await err({ table: 'article', where: {}, $set: { editor: 'me' } })).toEqual({
      path: '$.args["$set"]',
      error: 'column "editor" is not updatable for role "user"; its value is predefined in permission',
      code: 'not-supported',
    });
    expect(await err({ table: 'article', where: { views: { $gt: 0 } }, $set: { title: 'x' } })).toEqual({
      path: '$.args.where',
      error: 'role "user" does not have permission to select column "views"',
      code: 'permission-denied',
    });
    expect(await err({ table: 'article', where: {}, $set: { title: 'x' }, returning: ['views'] })).toEqual({
      path: '$.args.returning',
      error: 'role "user" does not have permission to select column "views"',
      code: 'permission-denied',
    });
    expect(await err({ table: 'article', where: {}, $set: { title: 'x' } }, { 'x-svc-role': 'reader' })).toEqual({
      path: '$.args',
      error: 'update on "article" for role "reader" is not allowed.',
      code: 'permission-denied',
    });
    expect(await err({ table: 'author', where: {}, $set: { name: 'x' } }, { 'x-svc-role': 'blind' })).toEqual({
      path: '$.args',
      error: 'select on "author" for role "blind" is not allowed. ; "update" is only allowed if the role has "select" permission as "where" can\'t be used without "select" permission on the table',
      code: 'permission-denied',
    });
    expect(await err({ table: 'article', where: {}, $set: { title: 'x' } }, { 'x-svc-role': 'user' })).toEqual({
      path: '$',
      error: 'missing session variable: "x-svc-user-id"',
      code: 'not-found',
    });
    expect(await articles()).toEqual(ORIGINAL);
  });
});

describe('delete', () => {
  it('as admin: affected_rows and the deleted rows; an empty where deletes every row', async () => {
    expect(await del({ table: 'article', where: { id: 4 }, returning: ['id', 'title', 'views'] })).toEqual({
      affected_rows: 1,
      returning: [{ id: 4, title: 'B2', views: '9007199254740993' }],
    });
    expect(await del({ table: 'article', where: { title: { $like: 'A%' } } })).toEqual({ affected_rows: 2 });
    expect(await del({ table: 'article', where: { id: 99 }, returning: ['id'] })).toEqual({ affected_rows: 0, returning: [] });
    expect(await del({ table: 'article', where: {} })).toEqual({ affected_rows: 1 });
    expect(await ok({ type: 'count', args: { table: 'article' } })).toEqual({ count: 0 });
  });

  it('as a role: the delete filter is ANDed into where', async () => {
    expect(await del({ table: 'article', where: {}, returning: ['id'] }, user('2'))).toEqual({ affected_rows: 2, returning: [{ id: 3 }, { id: 4 }] });
    expect(await del({ table: 'article', where: { id: 1 } }, user('2'))).toEqual({ affected_rows: 0 });
    expect(await articles(['id'])).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('errors: missing where, unknown table, columns, permissions, a non-deletable view, a foreign key', async () => {
    const err = (args: Record<string, unknown>, headers?: H) => fail({ type: 'delete', args }, headers);
    expect(await err({ table: 'article' })).toEqual({ path: '$', error: 'key "where" not found', code: 'parse-failed' });
    expect(await err({ table: 'nope', where: {} })).toEqual({ path: '$.args.table', error: 'table "nope" does not exist', code: 'not-exists' });
    expect(await err({ table: 'article', where: { nope: 1 } })).toMatchObject({ path: '$.args.where', code: 'not-exists' });
    expect(await err({ table: 'article', where: {}, returning: ['nope'] })).toEqual({ path: '$.args.returning', error: 'no such column exists : "nope"', code: 'permission-denied' });
    expect(await err({ table: 'article', where: {}, returning: ['views'] }, user('1'))).toMatchObject({ error: 'role "user" does not have permission to select column "views"' });
    expect(await err({ table: 'article', where: { views: 10 } }, user('1'))).toMatchObject({ path: '$.args.where', error: 'role "user" does not have permission to select column "views"' });
    expect(await err({ table: 'article', where: {} }, { 'x-svc-role': 'reader' })).toEqual({
      path: '$.args',
      error: 'delete on "article" for role "reader" is not allowed.',
      code: 'permission-denied',
    });
    expect(await err({ table: 'author', where: {} }, { 'x-svc-role': 'blind' })).toMatchObject({
      error: 'select on "author" for role "blind" is not allowed. ; "delete" is only allowed if the role has "select" permission as "where" can\'t be used without "select" permission on the table',
    });
    expect(await err({ table: 'article_stats', where: {} })).toEqual({ path: '$.args', error: 'view "article_stats" is not deletable', code: 'not-supported' });
    expect(await err({ table: 'author', where: { id: 1 } })).toMatchObject({ code: 'constraint-violation', error: expect.stringMatching(/^Foreign key violation\./) });
    expect(await articles()).toEqual(ORIGINAL);
  });
});

describe('insert', () => {
  it('returning needs the select permission; without returning it does not', async () => {
    const blind = { 'x-svc-role': 'blind' };
    expect(await fail({ type: 'insert', args: { table: 'author', objects: [{ name: 'Carol' }], returning: ['name'] } }, blind)).toEqual({
      path: '$.args',
      error: 'select on "author" for role "blind" is not allowed. ; "returning" can only be used if the role has "select" permission on the table',
      code: 'permission-denied',
    });
    expect(await ok({ type: 'insert', args: { table: 'author', objects: [{ name: 'Carol' }] } }, blind)).toEqual({ affected_rows: 1 });
  });

  it('an upsert by a role updates with its update permission: filter, presets and check', async () => {
    const upsert = (objects: unknown[]) => ({
      type: 'insert',
      args: { table: 'article', objects, on_conflict: { constraint: 'article_pkey', action: 'update', update_columns: ['title', 'rating'] }, returning: ['id', 'title', 'rating', 'editor'] },
    });
    expect(await ok(upsert([{ id: 1, title: 'A1u', rating: 4, author_id: 1 }]), user('1'))).toEqual({ affected_rows: 1, returning: [{ id: 1, title: 'A1u', rating: '4', editor: '1' }] });
    // Bob's row is outside user 1's update filter: the conflict does nothing.
    expect(await ok(upsert([{ id: 3, title: 'B1u', rating: 1, author_id: 1 }]), user('1'))).toEqual({ affected_rows: 0, returning: [] });
    // The updated row fails the update check (rating <= 5): nothing is written.
    expect(await fail(upsert([{ id: 2, title: 'A2u', rating: 9, author_id: 1 }]), user('1'))).toEqual({
      path: '$.args',
      error: 'check constraint of an insert/update permission has failed',
      code: 'permission-error',
    });
    expect(await articles()).toEqual([{ id: 1, title: 'A1u', rating: '4', editor: '1' }, ...ORIGINAL.slice(1)]);
  });

  it('a view that is not insertable is refused', async () => {
    expect(await fail({ type: 'insert', args: { table: 'article_stats', objects: [{ n: 1 }] } })).toEqual({ path: '$.args', error: 'view "article_stats" is not insertable', code: 'not-supported' });
  });
});

describe('in a bulk', () => {
  it('select, insert, update, delete and count in one request: each sees what the earlier ones wrote', async () => {
    expect(
      await ok({
        type: 'bulk',
        args: [
          { type: 'select', args: { table: 'article', columns: ['id'], where: { title: 'N1' } } },
          { type: 'insert', args: { table: 'article', objects: [{ title: 'N1', author_id: 1 }] } },
          { type: 'update', args: { table: 'article', where: { title: 'N1' }, $set: { rating: 2 }, returning: ['id', 'rating'] } },
          { type: 'delete', args: { table: 'article', where: { title: 'A2' } } },
          { type: 'select', args: { table: 'article', columns: ['id'], order_by: 'id' } },
          { type: 'count', args: { table: 'article', where: { rating: 2 } } },
        ],
      }),
    ).toEqual([[], { affected_rows: 1 }, { affected_rows: 1, returning: [{ id: 5, rating: '2' }] }, { affected_rows: 1 }, [{ id: 1 }, { id: 3 }, { id: 4 }, { id: 5 }], { count: 1 }]);
    expect(await articles(['id'])).toEqual([{ id: 1 }, { id: 3 }, { id: 4 }, { id: 5 }]);
  });

  it('is rolled back entirely when a later item fails', async () => {
    const before = await articles();
    const r = await server.query({
      type: 'bulk',
      args: [
        { type: 'update', args: { table: 'article', where: { id: 1 }, $set: { title: 'changed' } } },
        { type: 'delete', args: { table: 'article', where: { id: 2 } } },
        { type: 'insert', args: { table: 'article', objects: [{ title: 'N2' }] } },
        { type: 'select', args: { table: 'article', columns: ['nope'] } },
      ],
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ error: 'no such column exists : "nope"' });
    expect(await articles()).toEqual(before);
    // A role's bulk whose later update fails its check.
    const r2 = await server.query(
      {
        type: 'bulk',
        args: [
          { type: 'delete', args: { table: 'article', where: { id: 2 } } },
          { type: 'update', args: { table: 'article', where: { id: 1 }, $set: { rating: 6 } } },
        ],
      },
      user('1'),
    );
    expect(r2.status, r2.text).toBe(400);
    expect(r2.body).toMatchObject({ code: 'permission-error' });
    expect(await articles()).toEqual(before);
    // And when a later item is an operation of another kind (run_sql) that fails.
    const r3 = await server.query({
      type: 'bulk',
      args: [
        { type: 'delete', args: { table: 'article', where: {} } },
        { type: 'run_sql', args: { sql: 'select no_such_function()' } },
      ],
    });
    expect(r3.status, r3.text).toBe(400);
    expect(await articles()).toEqual(before);
  });
});
