import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../test/helpers.js';

let s: TestServer;

const SCHEMA = `
  create table author (id serial primary key, name text unique, remarks text, info jsonb, raw json, tags text[], age int);
  create table article (
    id serial primary key, title text, content text, author_id integer references author(id),
    is_published boolean, published_on timestamp, rating numeric
  );
  create table tag (id serial primary key, name text);
  create table untracked (id int);
  create view author_names as select id, name from author;
  create view author_counts as select author_id, count(*) as n from article group by author_id;
  create function author_full_name(a author) returns text language sql stable as $$ select a.name || ' ' || coalesce(a.remarks, '') $$;
  create function author_articles(a author) returns setof article language sql stable as $$ select * from article where author_id = a.id $$;
  create function author_search(a author, q text) returns text language sql stable as $$ select a.name || q $$;
`;

async function reset() {
  await s.query({ type: 'clear_metadata', args: {} });
  await s.runSql('drop schema if exists public cascade; create schema public;');
  await s.runSql(SCHEMA);
  const r = await s.query({
    type: 'bulk',
    args: [
      { type: 'track_table', args: { table: 'author' } },
      { type: 'track_table', args: { table: 'article' } },
      { type: 'track_table', args: { table: 'tag' } },
      { type: 'track_table', args: { table: 'author_names' } },
      { type: 'track_table', args: { table: 'author_counts' } },
      { type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'add_computed_field', args: { table: 'author', name: 'full_name', definition: { function: 'author_full_name' } } },
      { type: 'add_computed_field', args: { table: 'author', name: 'written', definition: { function: 'author_articles' } } },
      { type: 'add_computed_field', args: { table: 'author', name: 'search', definition: { function: 'author_search', table_argument: 'a' } } },
    ],
  });
  expect(r).toMatchObject({ status: 200 });
}

async function exportTables(): Promise<any[]> {
  const r = await s.metadata({ type: 'export_metadata', args: {} });
  expect(r.status).toBe(200);
  return r.body.sources.find((x: any) => x.name === 'default').tables;
}
const tableOf = async (name: string) => (await exportTables()).find((t) => t.table.name === name);

beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.stop();
});

describe('create and drop', () => {
  beforeAll(reset);

  it('creates a select permission (legacy endpoint) and exports it as given', async () => {
    const r = await s.query({
      type: 'create_select_permission',
      args: { table: 'author', role: 'user', permission: { columns: '*', filter: { id: 'X-Svc-User-Id' } } },
    });
    expect(r).toEqual(expect.objectContaining({ status: 200, body: { message: 'success' } }));
    expect((await tableOf('author')).select_permissions).toEqual([{ role: 'user', permission: { columns: '*', filter: { id: 'X-Svc-User-Id' } } }]);
  });

  it('refuses a second permission of the same type and role', async () => {
    const r = await s.query({
      type: 'create_select_permission',
      args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: {} } },
    });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args', error: 'select permission already defined on table "author" with role "user"' },
    });
  });

  it('refuses permissions for the admin role', async () => {
    const r = await s.metadata({
      type: 'pg_create_insert_permission',
      args: { table: 'author', role: 'admin', permission: { check: {} } },
    });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args', error: 'insert permission already defined on table "author" with role "admin"' },
    });
  });

  it('rejects an empty role name at $.role on /v1/query and $.args.role on /v1/metadata', async () => {
    const args = { table: 'article', role: '', permission: { check: { author_id: 'X-SVC-USER-ID' } } };
    expect(await s.query({ type: 'create_insert_permission', args })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.role', error: 'empty string not allowed' },
    });
    expect(await s.metadata({ type: 'pg_create_insert_permission', args })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.role', error: 'empty string not allowed' },
    });
  });

  it('needs a tracked table', async () => {
    const r = await s.metadata({ type: 'pg_create_delete_permission', args: { table: 'untracked', role: 'user', permission: { filter: {} } } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args', error: 'table "untracked" does not exist in source: default' } });
  });

  it('drops a permission; dropping it again fails', async () => {
    expect(await s.query({ type: 'drop_select_permission', args: { table: 'author', role: 'user' } })).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await tableOf('author')).select_permissions).toBeUndefined();
    const r = await s.metadata({ type: 'pg_drop_select_permission', args: { table: 'author', role: 'user', source: 'default' } });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'permission-error', path: '$.args', error: 'select permission on "author" for role "user" does not exist' },
    });
  });

  it('accepts roles longer than 63 characters', async () => {
    for (const suffix of ['one', 'two']) {
      const r = await s.query({
        type: 'create_insert_permission',
        args: { table: 'author', role: `this.is.really.a.very.long.and.long.role.more.than.63.characters.${suffix}`, permission: { columns: '*', check: {} } },
      });
      expect(r).toMatchObject({ status: 200 });
    }
    expect((await tableOf('author')).insert_permissions.map((p: any) => p.role)).toHaveLength(2);
  });
});

describe('stored shape', () => {
  beforeAll(reset);

  it('stores each type in the export shape: defaults left out, $-operators spelt with _, comments kept', async () => {
    const r = await s.metadata({
      type: 'bulk',
      args: [
        {
          type: 'pg_create_insert_permission',
          args: {
            table: 'article',
            role: 'user',
            comment: 'authors write their own articles',
            permission: {
              check: { author_id: 'X-SVC-USER-ID', $or: [{ is_published: false }, { title: { $neq: 'x' } }] },
              set: { author_id: 'x-svc-user-id', published_on: 'NOW()' },
              columns: ['title', 'content'],
              backend_only: false,
            },
          },
        },
        {
          type: 'pg_create_select_permission',
          args: {
            table: 'article',
            role: 'user',
            permission: { columns: ['id', 'title'], filter: { $and: [{ is_published: true }], _not: { author: { name: { _ilike: '%x%' } } } }, limit: 10, allow_aggregations: false, computed_fields: [] },
          },
        },
        {
          type: 'pg_create_update_permission',
          args: { table: 'article', role: 'user', permission: { columns: '*', filter: { author_id: 'X-Svc-User-Id' }, check: { rating: { _gte: 0 } }, set: {} } },
        },
        {
          type: 'pg_create_delete_permission',
          args: { table: 'article', role: 'user', permission: { filter: { _exists: { _table: 'tag', _where: { name: 'x' } } }, backend_only: true } },
        },
      ],
    });
    expect(r).toMatchObject({ status: 200 });
    const t = await tableOf('article');
    expect(t.insert_permissions).toEqual([
      {
        role: 'user',
        permission: {
          check: { author_id: 'X-SVC-USER-ID', _or: [{ is_published: false }, { title: { $neq: 'x' } }] },
          set: { author_id: 'x-svc-user-id', published_on: 'NOW()' },
          columns: ['title', 'content'],
        },
        comment: 'authors write their own articles',
      },
    ]);
    expect(t.select_permissions).toEqual([
      {
        role: 'user',
        permission: { columns: ['id', 'title'], filter: { _and: [{ is_published: true }], _not: { author: { name: { _ilike: '%x%' } } } }, limit: 10 },
      },
    ]);
    expect(t.update_permissions).toEqual([
      { role: 'user', permission: { columns: '*', filter: { author_id: 'X-Svc-User-Id' }, check: { rating: { _gte: 0 } } } },
    ]);
    expect(t.delete_permissions).toEqual([
      { role: 'user', permission: { filter: { _exists: { _table: { schema: 'public', name: 'tag' }, _where: { name: 'x' } } }, backend_only: true } },
    ]);
    expect(Object.keys(t)).toEqual(['table', 'object_relationships', 'insert_permissions', 'select_permissions', 'update_permissions', 'delete_permissions']);
  });

  it('sets and removes a permission comment', async () => {
    expect(await s.metadata({ type: 'pg_set_permission_comment', args: { table: 'article', role: 'user', type: 'delete', comment: 'only backends' } })).toMatchObject({
      status: 200,
      body: { message: 'success' },
    });
    expect((await tableOf('article')).delete_permissions[0].comment).toBe('only backends');
    expect(await s.query({ type: 'set_permission_comment', args: { table: 'article', role: 'user', type: 'insert', comment: null } })).toMatchObject({ status: 200 });
    expect((await tableOf('article')).insert_permissions[0]).not.toHaveProperty('comment');
  });

  it('set_permission_comment needs an existing permission and a known type', async () => {
    expect(await s.metadata({ type: 'pg_set_permission_comment', args: { table: 'article', role: 'editor', type: 'select', comment: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'permission-error', path: '$.args', error: 'select permission on "article" for role "editor" does not exist' },
    });
    expect(await s.metadata({ type: 'pg_set_permission_comment', args: { table: 'article', role: 'user', type: 'upsert', comment: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.type', error: "perm_type should be one of 'insert', 'select', 'update', 'delete'" },
    });
  });

  it('keeps the shape through export and replace', async () => {
    const exported = await s.metadata({ type: 'export_metadata', args: {} });
    expect(await s.metadata({ type: 'replace_metadata', args: exported.body })).toMatchObject({ status: 200 });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual(exported.body);
  });
});
