import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers.js';

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

/** The body of a create operation rejected by the build for its own permission. */
function invalid(type: string, table: string, role: string, reason: string) {
  const error = `Inconsistent object: in table "${table}": in permission for role "${role}": ${reason}`;
  return {
    status: 400,
    body: {
      code: 'invalid-configuration',
      path: '$.args',
      error,
      internal: [expect.objectContaining({ type: `${type}_permission`, name: `${type}_permission ${role} in table ${table} in source default`, reason: error })],
    },
  };
}

describe('validation against the schema', () => {
  beforeAll(reset);

  const select = (table: string, permission: Record<string, unknown>) =>
    s.metadata({ type: 'pg_create_select_permission', args: { table, role: 'user', permission } });

  it('reports the inconsistent permission with Hasura definition shape', async () => {
    const r = await s.query({
      type: 'create_select_permission',
      args: { table: 'author', role: 'user', permission: { columns: '*', computed_fields: ['full_name', 'random'], filter: {} } },
    });
    expect(r).toEqual({
      status: 400,
      text: expect.any(String),
      headers: expect.anything(),
      body: {
        code: 'invalid-configuration',
        path: '$.args',
        error: 'Inconsistent object: in table "author": in permission for role "user": computed field "random" does not exist',
        internal: [
          {
            type: 'select_permission',
            name: 'select_permission user in table author in source default',
            reason: 'Inconsistent object: in table "author": in permission for role "user": computed field "random" does not exist',
            definition: {
              source: 'default',
              table: { schema: 'public', name: 'author' },
              role: 'user',
              comment: null,
              permission: { columns: '*', computed_fields: ['full_name', 'random'], filter: {}, allow_aggregations: false },
            },
          },
        ],
      },
    });
    expect((await tableOf('author')).select_permissions).toBeUndefined();
  });

  it.each([
    [{ columns: ['id', 'nope'], filter: {} }, 'column "nope" does not exist'],
    [{ columns: ['articles'], filter: {} }, 'expecting a database column; but, "articles" is a relationship; permissions for relationships are automatically inferred'],
    [{ columns: '*', computed_fields: ['written'], filter: {} }, 'select permissions on computed field "written" are auto-derived from the permissions on its returning table "article" and cannot be specified manually'],
    [{ columns: '*', computed_fields: ['name'], filter: {} }, 'expecting a computed field; but, "name" is a column'],
    [{ columns: '*', filter: {}, limit: -1 }, 'unexpected negative value'],
    [{ columns: '*', filter: {}, query_root_fields: ['select_aggregate'] }, 'The "select_aggregate" root field can only be enabled in the query_root_fields or the subscription_root_fields when "allow_aggregations" is set to true'],
    [{ columns: '*', filter: { nope: 1 } }, '"nope" does not exist'],
    [{ columns: '*', filter: { id: { _foo: 1 } } }, 'Unknown operator: _foo'],
    [{ columns: '*', filter: { id: { _like: '1%' } } }, ' is of type "integer"; this operator works only on columns of type "varchar", "text", "citext"'],
    [{ columns: '*', filter: { name: { _has_key: 'a' } } }, ' is of type "text"; this operator works only on columns of type "jsonb"'],
    [{ columns: '*', filter: { id: { _contains: 1 } } }, ' is of type "integer"; this operator works only on columns of type an array or JSONB'],
    [{ columns: '*', filter: { raw: { _eq: 1 } } }, 'JSON column can not be part of boolean expression'],
    [{ columns: '*', filter: { id: 'abc' } }, 'parsing Int failed, expected Number, but encountered String'],
    [{ columns: '*', filter: { name: { _in: 'abc' } } }, 'parsing [] failed, expected Array, but encountered String'],
    [{ columns: '*', filter: { name: { _is_null: 'yes' } } }, 'parsing Bool failed, expected Boolean, but encountered String'],
    [{ columns: '*', filter: { id: { _ceq: 'name' } } }, 'incompatible column types: "id" has type "integer", but "name" has type "text"'],
    [{ columns: '*', filter: { id: { _ceq: 'missing' } } }, 'column "missing" does not exist'],
    [{ columns: '*', filter: { id: { _ceq: ['a', 'b', 'c'] } } }, 'Relationship references are not supported in column comparison RHS'],
    [{ columns: '*', filter: { articles: { nope: true } } }, '"nope" does not exist'],
    [{ columns: '*', filter: { articles: { author: { articles: { is_published: 'no' } } } } }, 'parsing Bool failed, expected Boolean, but encountered String'],
    [{ columns: '*', filter: { articles: 1 } }, 'expecting an Object for boolean exp'],
    [{ columns: '*', filter: { _exists: { _table: 'untracked', _where: {} } } }, 'table "untracked" does not exist'],
    [{ columns: '*', filter: { _exists: { _table: 'tag', _where: { title: 'x' } } } }, '"title" does not exist'],
    [{ columns: '*', filter: { search: 'x' } }, 'Computed columns with input arguments can not be part of the where clause'],
    [{ columns: '*', filter: { full_name: { _gt: 1 } } }, 'parsing Text failed, expected String, but encountered Number'],
    [{ columns: '*', filter: { written: { nope: 1 } } }, '"nope" does not exist'],
    [{ columns: '*', filter: { info: { _cast: { int: { _eq: 1 } } } } }, 'cannot cast column of type "jsonb" to type "int"'],
  ])('select %j: %s', async (permission, reason) => {
    expect(await select('author', permission)).toMatchObject(invalid('select', 'author', 'user', reason));
  });

  it('accepts every operator family on columns of the right type', async () => {
    const r = await select('author', {
      columns: ['id', 'name'],
      computed_fields: ['full_name'],
      filter: {
        id: { _eq: 1, _neq: 2, $ne: 3, _gt: 0, _lt: 9, _gte: 0, _lte: 9, _in: [1, 2], _nin: 'X-Svc-Allowed-Ids', _is_null: false },
        name: { _like: 'a%', _nlike: 'b', _ilike: 'c', _nilike: 'd', _similar: 'e', _nsimilar: 'f', _regex: 'g', _iregex: 'h', _nregex: 'i', _niregex: 'j', _ceq: ['$', 'remarks'] },
        info: { _contains: { a: 1 }, _contained_in: {}, _has_key: 'a', _has_keys_any: ['a'], _has_keys_all: 'X-Svc-Keys', _cast: { text: { _like: '%a%' } } },
        tags: { _contains: ['x'] },
        age: { _cgt: 'id' },
        full_name: { _ilike: '%x%' },
        written: { is_published: true },
        articles: { _or: [{ rating: { _gt: 1.5 } }, { author: { id: { _ceq: ['$', 'id'] } } }], $and: [{ published_on: 'NOW()' }] },
        _not: { _exists: { _table: { schema: 'public', name: 'tag' }, _where: { name: { _eq: 'x-svc-tag' } } } },
        remarks: null,
      },
    });
    expect(r).toMatchObject({ status: 200 });
  });

  it('checks insert columns, presets and views', async () => {
    expect(await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, set: { nope: 1 } } } })).toMatchObject(
      invalid('insert', 'article', 'user', 'column "nope" does not exist'),
    );
    expect(
      await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, set: { author: 1 } } } }),
    ).toMatchObject(invalid('insert', 'article', 'user', 'expecting a database column; but, "author" is a relationship; column "author" not found in table "article"'));
    expect(
      await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, set: { is_published: 'yes' } } } }),
    ).toMatchObject(invalid('insert', 'article', 'user', 'parsing Bool failed, expected Boolean, but encountered String'));
    expect(
      await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, columns: ['author'] } } }),
    ).toMatchObject(invalid('insert', 'article', 'user', 'expecting a database column; but, "author" is a relationship; '));
    expect(await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'author_counts', role: 'user', permission: { check: {} } } })).toMatchObject(
      invalid('insert', 'author_counts', 'user', 'view "author_counts" is not insertable'),
    );
    expect(await s.metadata({ type: 'pg_create_insert_permission', args: { table: 'author_names', role: 'user', permission: { check: {}, columns: '*' } } })).toMatchObject({
      status: 200,
    });
  });

  it('checks update columns and check expressions, and delete filters', async () => {
    expect(
      await s.metadata({ type: 'pg_create_update_permission', args: { table: 'article', role: 'user', permission: { columns: ['author'], filter: {} } } }),
    ).toMatchObject(invalid('update', 'article', 'user', `expecting a database column; but, "author" is a relationship; relationships can't be used in update`));
    expect(
      await s.metadata({ type: 'pg_create_update_permission', args: { table: 'article', role: 'user', permission: { columns: '*', filter: {}, check: { nope: 1 } } } }),
    ).toMatchObject(invalid('update', 'article', 'user', '"nope" does not exist'));
    expect(await s.metadata({ type: 'pg_create_delete_permission', args: { table: 'author_counts', role: 'user', permission: { filter: {} } } })).toMatchObject(
      invalid('delete', 'author_counts', 'user', 'view "author_counts" is not deletable'),
    );
    expect(await s.metadata({ type: 'pg_create_delete_permission', args: { table: 'article', role: 'user', permission: { filter: { author: { id: { _eq: 'X-Svc-User-Id' } } } } } })).toMatchObject({
      status: 200,
    });
  });
});

describe('request parsing', () => {
  beforeAll(reset);

  it.each([
    [{ filter: {} }, '$.args.permission', 'key "columns" not found'],
    [{ columns: '*' }, '$.args.permission', 'key "filter" not found'],
    [{ columns: 'id', filter: {} }, '$.args.permission.columns', 'parsing [] failed, expected Array, but encountered String'],
    [{ columns: ['id', 1], filter: {} }, '$.args.permission.columns[1]', 'parsing Text failed, expected String, but encountered Number'],
    [{ columns: '*', filter: [] }, '$.args.permission.filter', 'expecting an Object for boolean exp'],
    [{ columns: '*', filter: { _or: {} } }, '$.args.permission.filter._or', 'parsing [] failed, expected Array, but encountered Object'],
    [{ columns: '*', filter: { _and: [{ _not: 1 }] } }, '$.args.permission.filter._and[0]._not', 'expecting an Object for boolean exp'],
    [{ columns: '*', filter: { _exists: { _where: {} } } }, '$.args.permission.filter._exists', 'key "_table" not found'],
    [{ columns: '*', filter: { _exists: { _table: 'tag' } } }, '$.args.permission.filter._exists', 'key "_where" not found'],
  ])('select %j fails at %s', async (permission, path, error) => {
    const r = await s.metadata({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path, error } });
  });
});

describe('dependents', () => {
  beforeEach(async () => {
    await reset();
    const r = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author: { id: 'X-Svc-User-Id' } } } } },
        { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: '*', computed_fields: ['full_name'], filter: { articles: { is_published: true } } } } },
        { type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: { title: { _ilike: '%' } }, set: { author_id: 'X-Svc-User-Id' }, columns: ['title'] } } },
        { type: 'pg_create_delete_permission', args: { table: 'author', role: 'user', permission: { filter: { _exists: { _table: 'tag', _where: { name: 'x' } } } } } },
      ],
    });
    expect(r).toMatchObject({ status: 200 });
  });

  it('blocks dropping a relationship a filter goes through, and cascades', async () => {
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'article', relationship: 'author' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission article.user.select in source "default"' },
    });
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'article', relationship: 'author', cascade: true } })).toMatchObject({ status: 200 });
    const t = await tableOf('article');
    expect(t.select_permissions).toBeUndefined();
    expect(t.insert_permissions).toHaveLength(1);
  });

  it('blocks dropping a computed field listed in a select permission', async () => {
    expect(await s.query({ type: 'drop_computed_field', args: { table: 'author', name: 'full_name' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission author.user.select in source "default"' },
    });
  });

  it('blocks untracking a table that an _exists reaches', async () => {
    expect(await s.query({ type: 'untrack_table', args: { table: 'tag' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', error: 'cannot drop due to the following dependent objects: permission author.user.delete in source "default"' },
    });
  });

  it('untracking a table takes its own permissions with it', async () => {
    expect(await s.query({ type: 'untrack_table', args: { table: 'author', cascade: true } })).toMatchObject({ status: 200 });
    const tables = await exportTables();
    expect(tables.find((t) => t.table.name === 'author')).toBeUndefined();
    // article's select permission went through the relationship to author.
    expect(tables.find((t) => t.table.name === 'article').select_permissions).toBeUndefined();
  });

  it('run_sql: dropping a column used by permissions needs cascade', async () => {
    const r = await s.query({ type: 'run_sql', args: { sql: 'alter table article drop column title' } });
    expect(r).toMatchObject({
      status: 400,
      body: {
        code: 'dependency-error',
        error: 'cannot drop due to the following dependent objects: permission article.user.insert in source "default", permission article.user.select in source "default"',
      },
    });
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table article drop column title', cascade: true } })).toMatchObject({ status: 200 });
    const t = await tableOf('article');
    expect(t.insert_permissions).toBeUndefined();
    expect(t.select_permissions).toBeUndefined();
  });

  it('run_sql: a column listed through "*" is a dependency too', async () => {
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table author drop column remarks' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', error: 'cannot drop due to the following dependent objects: permission author.user.select in source "default"' },
    });
  });

  it('run_sql: changing the type of a column compared with a static value is refused', async () => {
    const r = await s.query({ type: 'run_sql', args: { sql: 'alter table tag alter column name type varchar(200)' } });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', error: 'cannot change type of column "name" in table "tag" because of the following dependencies: permission author.user.delete in source "default"' },
    });
    // A column compared only with session variables may change its type.
    expect(await s.metadata({ type: 'pg_create_update_permission', args: { table: 'tag', role: 'user', permission: { columns: ['name'], filter: { id: 'X-Svc-Tag-Id' } } } })).toMatchObject({
      status: 200,
    });
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table tag alter column id type bigint' } })).toMatchObject({ status: 200 });
  });

  it('run_sql: renaming columns rewrites column lists, presets and filters of every table', async () => {
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table author rename column id to author_key; alter table article rename column title to headline' } })).toMatchObject({
      status: 200,
    });
    const tables = await exportTables();
    const article = tables.find((t) => t.table.name === 'article');
    expect(article.select_permissions[0].permission).toEqual({ columns: ['id', 'headline'], filter: { author: { author_key: 'X-Svc-User-Id' } } });
    expect(article.insert_permissions[0].permission).toEqual({ check: { headline: { _ilike: '%' } }, set: { author_id: 'X-Svc-User-Id' }, columns: ['headline'] });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('renaming a relationship rewrites the filters that use it', async () => {
    expect(await s.metadata({ type: 'pg_rename_relationship', args: { table: 'author', name: 'articles', new_name: 'posts' } })).toMatchObject({ status: 200 });
    expect((await tableOf('author')).select_permissions[0].permission.filter).toEqual({ posts: { is_published: true } });
  });

  it('reports permissions broken behind the engine\'s back as inconsistent, and drop_inconsistent_metadata removes only them', async () => {
    await s.sql.unsafe('alter table article drop column title');
    expect(await s.metadata({ type: 'reload_metadata', args: {} })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.body.is_consistent).toBe(false);
    expect(r.body.inconsistent_objects.map((o: any) => [o.type, o.name, o.reason])).toEqual([
      ['insert_permission', 'insert_permission user in table article in source default', 'Inconsistent object: in table "article": in permission for role "user": "title" does not exist'],
      ['select_permission', 'select_permission user in table article in source default', 'Inconsistent object: in table "article": in permission for role "user": column "title" does not exist'],
    ]);
    expect(await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject({ status: 200 });
    const t = await tableOf('article');
    expect(t.insert_permissions).toBeUndefined();
    expect(t.select_permissions).toBeUndefined();
    expect(t.object_relationships).toHaveLength(1);
  });
});

describe('renames carried from run_sql', () => {
  beforeAll(reset);

  it('rewrites _exists tables and their filters, and column comparisons against the root and the current table', async () => {
    const filter = {
      _exists: { _table: 'tag', _where: { name: { _ceq: ['$', 'name'] } } },
      articles: { title: { _ceq: ['$', 'name'] }, content: { _cne: 'title' } },
      info: { _cast: { text: { _eq: 'x' } } },
    };
    expect(await s.metadata({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['name'], filter } } })).toMatchObject({
      status: 200,
    });
    const renamed = await s.query({
      type: 'run_sql',
      args: { sql: 'alter table tag rename to label; alter table label rename column name to label_name; alter table author rename column name to pen_name; alter table article rename column title to headline' },
    });
    expect(renamed.body).toEqual({ result_type: 'CommandOk', result: null });
    expect((await tableOf('author')).select_permissions[0].permission).toEqual({
      columns: ['pen_name'],
      filter: {
        _exists: { _table: { schema: 'public', name: 'label' }, _where: { label_name: { _ceq: ['$', 'pen_name'] } } },
        articles: { headline: { _ceq: ['$', 'pen_name'] }, content: { _cne: 'headline' } },
        info: { _cast: { text: { _eq: 'x' } } },
      },
    });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true, inconsistent_objects: [] });
  });
});

describe('replace_metadata', () => {
  beforeAll(reset);

  const withPermissions = async (perms: Record<string, unknown>) => {
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const tables = exported.sources[0].tables.map((t: any) => (t.table.name === 'author' ? { ...t, ...perms } : t));
    return s.metadata({ type: 'replace_metadata', args: { ...exported, sources: [{ ...exported.sources[0], tables }] } });
  };

  it('reports permissions that do not fit the schema as inconsistent', async () => {
    const r = await withPermissions({ update_permissions: [{ role: 'user', permission: { columns: ['nope'], filter: {} } }] });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'unexpected', error: 'cannot continue due to inconsistent metadata', internal: [expect.objectContaining({ type: 'update_permission' })] },
    });
  });

  it('rejects stored permissions that do not parse, pointing into the document', async () => {
    const r = await withPermissions({ delete_permissions: [{ role: 'user', permission: { filter: 3 } }] });
    expect(r).toMatchObject({ status: 400 });
    expect(r.body).toEqual({ code: 'parse-failed', path: '$.args.sources[0].tables[0].delete_permissions[0].permission.filter', error: 'expecting an Object for boolean exp' });
  });

  it('normalises stored permissions as the operations store them', async () => {
    const r = await withPermissions({
      select_permissions: [
        {
          role: 'user',
          comment: null,
          permission: { columns: '*', filter: { $or: [{ id: { $eq: 1 } }, { $exists: { _table: 'article', _where: {} } }] }, allow_aggregations: false, computed_fields: [] },
        },
      ],
      delete_permissions: [{ role: 'user', permission: { filter: {}, backend_only: false } }],
    });
    expect(r).toMatchObject({ status: 200 });
    const t = await tableOf('author');
    expect(t.select_permissions).toEqual([
      // Logical operators are spelt with _, column operators are kept as given (Hasura's ColExp).
      { role: 'user', permission: { columns: '*', filter: { _or: [{ id: { $eq: 1 } }, { _exists: { _table: { schema: 'public', name: 'article' }, _where: {} } }] } } },
    ]);
    expect(t.delete_permissions).toEqual([{ role: 'user', permission: { filter: {} } }]);
  });

  it('rejects two permissions of one type for the same role', async () => {
    const perm = { role: 'user', permission: { filter: {} } };
    const r = await withPermissions({ delete_permissions: [perm, perm] });
    expect(r).toMatchObject({ status: 400 });
    expect(r.body).toEqual({ code: 'parse-failed', path: '$.args.sources[0].tables[0].delete_permissions', error: 'multiple declarations exist for the following delete permissions : user' });
  });
});
