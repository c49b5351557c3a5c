import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers.js';

let s: TestServer;

const ok = { status: 200, body: { message: 'success' } };

async function tableOf(name: string, schema = 'public'): Promise<any> {
  return (await s.tables()).find((t) => t.table.name === name && t.table.schema === schema);
}

beforeAll(async () => {
  s = await startServer();
  await s.runSql(`
    create table author (id serial primary key, name text unique, remarks text);
    create table author_details (id serial primary key, author_id integer unique references author(id), email text);
    create view author_view as select id, upper(name) as name from author;
    create table article (id serial primary key, title text, author_id integer references author(id), editor_id integer,
      published_on timestamp);
    create table twice (id serial primary key, author_id integer,
      constraint twice_a foreign key (author_id) references author(id),
      constraint twice_b foreign key (author_id) references author(id));
    create table untracked (id serial primary key);
    create schema other;
    create table other.resident (id serial primary key, name text);
    create table other.address (id serial primary key, resident_id integer references other.resident(id));
  `);
});
afterAll(async () => {
  await s?.stop();
});

beforeEach(async () => {
  expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  const r = await s.query({
    type: 'bulk',
    args: ['author', 'author_details', 'author_view', 'article', 'twice'].map((name) => ({ type: 'track_table', args: { name } })).concat([
      { type: 'track_table', args: { table: { schema: 'other', name: 'resident' } } } as never,
      { type: 'track_table', args: { table: { schema: 'other', name: 'address' } } } as never,
    ]),
  });
  expect(r.status).toBe(200);
});

describe('create_object_relationship / create_array_relationship', () => {
  it('creates relationships of every `using` form and exports them in Hasura\'s shape', async () => {
    expect(await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } })).toMatchObject(ok);
    expect(
      await s.metadata({
        type: 'pg_create_array_relationship',
        args: { table: { schema: 'public', name: 'author' }, name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } }, comment: 'all articles', source: 'default' },
      }),
    ).toMatchObject(ok);
    expect(
      await s.query({ type: 'create_object_relationship', args: { table: 'author', name: 'details', using: { foreign_key_constraint_on: { table: 'author_details', columns: ['author_id'] } } } }),
    ).toMatchObject(ok);
    expect(
      await s.query({
        type: 'create_object_relationship',
        args: { table: 'article', name: 'author_v', using: { manual_configuration: { remote_table: 'author_view', column_mapping: { author_id: 'id' } } } },
      }),
    ).toMatchObject(ok);
    expect(
      await s.query({
        type: 'create_array_relationship',
        args: {
          table: 'author_view',
          name: 'articles',
          using: { manual_configuration: { remote_table: { schema: 'public', name: 'article' }, column_mapping: { id: 'author_id' }, insertion_order: 'after_parent' } },
        },
      }),
    ).toMatchObject(ok);

    expect(await tableOf('article')).toEqual({
      table: { schema: 'public', name: 'article' },
      object_relationships: [
        { name: 'author', using: { foreign_key_constraint_on: 'author_id' } },
        { name: 'author_v', using: { manual_configuration: { column_mapping: { author_id: 'id' }, insertion_order: null, remote_table: { schema: 'public', name: 'author_view' } } } },
      ],
    });
    expect(await tableOf('author')).toEqual({
      table: { schema: 'public', name: 'author' },
      object_relationships: [{ name: 'details', using: { foreign_key_constraint_on: { column: 'author_id', table: { schema: 'public', name: 'author_details' } } } }],
      array_relationships: [
        { name: 'articles', using: { foreign_key_constraint_on: { column: 'author_id', table: { schema: 'public', name: 'article' } } }, comment: 'all articles' },
      ],
    });
    expect((await tableOf('author_view')).array_relationships).toEqual([
      {
        name: 'articles',
        using: { manual_configuration: { column_mapping: { id: 'author_id' }, insertion_order: 'after_parent', remote_table: { schema: 'public', name: 'article' } } },
      },
    ]);
  });

  it('works across schemas', async () => {
    expect(
      await s.query({ type: 'create_object_relationship', args: { table: { schema: 'other', name: 'address' }, name: 'resident', using: { foreign_key_constraint_on: 'resident_id' } } }),
    ).toMatchObject(ok);
    expect(
      await s.query({
        type: 'create_array_relationship',
        args: { table: { schema: 'other', name: 'resident' }, name: 'addresses', using: { foreign_key_constraint_on: { table: { schema: 'other', name: 'address' }, column: 'resident_id' } } },
      }),
    ).toMatchObject(ok);
    expect((await tableOf('resident', 'other')).array_relationships).toEqual([
      { name: 'addresses', using: { foreign_key_constraint_on: { column: 'resident_id', table: { schema: 'other', name: 'address' } } } },
    ]);
  });

  it('rejects a name taken by a column, a relationship or on an untracked table', async () => {
    expect(await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'title', using: { foreign_key_constraint_on: 'author_id' } } })).toEqual(
      expect.objectContaining({ status: 400, body: { code: 'already-exists', path: '$.args', error: 'column/relationship "title" of table "article" already exists' } }),
    );
    await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    expect(
      await s.query({ type: 'create_array_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: { table: 'twice', column: 'author_id' } } } }),
    ).toMatchObject({ status: 400, body: { code: 'already-exists', path: '$.args', error: 'column/relationship "author" of table "article" already exists' } });
    expect(await s.query({ type: 'create_object_relationship', args: { table: 'untracked', name: 'x', using: { foreign_key_constraint_on: 'id' } } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args', error: 'table "untracked" does not exist in source: default' },
    });
  });

  it('fails with the inconsistency when no foreign key matches', async () => {
    const r = await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'published_on' } } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 'invalid-configuration',
      path: '$.args',
      error: 'Inconsistent object: in table "article": in relationship "author": no foreign constraint exists on the given column(s)',
      internal: [
        {
          type: 'object_relation',
          name: 'object_relation author in table article in source default',
          reason: 'Inconsistent object: in table "article": in relationship "author": no foreign constraint exists on the given column(s)',
          definition: { source: 'default', table: { schema: 'public', name: 'article' }, name: 'author', using: { foreign_key_constraint_on: 'published_on' }, comment: null },
        },
      ],
    });
    // A foreign key of the remote table must point to this table.
    const arr = await s.query({ type: 'create_array_relationship', args: { table: 'author_details', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } });
    expect(arr.body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: in table "author_details": in relationship "articles": no foreign constraint exists on the given column(s)',
    });
    expect((await tableOf('article')).object_relationships).toBeUndefined();
  });

  it('fails when several foreign keys match, or the remote table is missing or untracked', async () => {
    expect((await s.query({ type: 'create_object_relationship', args: { table: 'twice', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } })).body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: in table "twice": in relationship "author": more than one foreign key constraint exists on the given column(s)',
    });
    expect((await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'xs', using: { foreign_key_constraint_on: { table: 'nope', column: 'author_id' } } } })).body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: in table "author": in relationship "xs": table "nope" does not exist in source: default',
    });
    expect(
      (await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'xs', using: { manual_configuration: { remote_table: 'untracked', column_mapping: { id: 'id' } } } } })).body,
    ).toMatchObject({ code: 'invalid-configuration', error: 'Inconsistent object: table "untracked" is not tracked' });
    await s.query({ type: 'untrack_table', args: { table: 'author_details' } });
    expect(
      (await s.query({ type: 'create_object_relationship', args: { table: 'author', name: 'details', using: { foreign_key_constraint_on: { table: 'author_details', column: 'author_id' } } } })).body,
    ).toMatchObject({ code: 'invalid-configuration', error: 'Inconsistent object: table "author_details" is not tracked' });
  });

  it('checks the columns of a manual mapping on both sides', async () => {
    const using = (mapping: Record<string, string>) => ({ manual_configuration: { remote_table: 'author', column_mapping: mapping } });
    expect((await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'a', using: using({ nope: 'id' }) } })).body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: table "article" has no field named "nope"',
    });
    expect((await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'a', using: using({ author_id: 'nope' }) } })).body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: table "author" has no field named "nope"',
    });
  });

  it('rejects a name that is the custom GraphQL name of another column', async () => {
    const exported = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    exported.sources[0].tables.find((t: any) => t.table.name === 'author').configuration = { custom_column_names: { id: 'AuthorId' } };
    expect(await s.metadata({ type: 'replace_metadata', args: exported })).toMatchObject({ status: 200 });
    const r = await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'AuthorId', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } });
    expect(r.body).toMatchObject({
      code: 'invalid-configuration',
      error: 'Inconsistent object: field definition conflicts with custom field name for postgres column "id"',
      internal: [{ type: 'array_relation', name: 'array_relation AuthorId in table author in source default' }],
    });
  });

  it('validates its arguments', async () => {
    expect(await s.query({ type: 'create_object_relationship', args: { table: 'article', name: '', using: { foreign_key_constraint_on: 'author_id' } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.name', error: 'empty string not allowed' },
    });
    expect(await s.metadata({ type: 'pg_create_object_relationship', args: { table: 'article', name: 'a', using: {} } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.using', error: 'atleast one of foreign_key_constraint_on/manual_configuration should be present' },
    });
    expect(
      await s.metadata({
        type: 'pg_create_object_relationship',
        args: { table: 'article', name: 'a', using: { foreign_key_constraint_on: 'author_id', manual_configuration: { remote_table: 'author', column_mapping: { author_id: 'id' } } } },
      }),
    ).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.using', error: 'only one of foreign_key_constraint_on/manual_configuration should be present' } });
    const arr = await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'a', using: { foreign_key_constraint_on: 'author_id' } } });
    expect(arr).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.using.foreign_key_constraint_on' } });
    expect(
      await s.metadata({ type: 'pg_create_array_relationship', args: { table: 'author', name: 'a', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id', columns: ['author_id'] } } } }),
    ).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.using.foreign_key_constraint_on', error: "expected exactly one of 'column' or 'columns'" } });
  });

  it('is admin only', async () => {
    expect(
      await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } }, { 'x-svc-role': 'user' }),
    ).toMatchObject({ status: 400, body: { code: 'access-denied', path: '$.args', error: 'restricted access : admin only' } });
  });
});

describe('drop_relationship', () => {
  it('drops a relationship and reports a missing one', async () => {
    await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    expect(await s.query({ type: 'drop_relationship', args: { table: 'article', relationship: 'author' } })).toMatchObject(ok);
    expect(await tableOf('article')).toEqual({ table: { schema: 'public', name: 'article' } });
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'article', relationship: 'author' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args', error: 'relationship "author" does not exist' },
    });
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'article', relationship: 'title' } })).toMatchObject({
      status: 400,
      body: { code: 'unexpected-payload', path: '$.args', error: 'expecting a relationship; but, "title" is a postgres column; ' },
    });
  });
});

describe('rename_relationship', () => {
  beforeEach(async () => {
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
        { type: 'create_object_relationship', args: { table: 'article', name: 'author_v', using: { manual_configuration: { remote_table: 'author_view', column_mapping: { author_id: 'id' } } } } },
        { type: 'create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      ],
    });
    expect(r.status).toBe(200);
  });

  it('renames, moving the relationship to the end of its list', async () => {
    expect(await s.query({ type: 'rename_relationship', args: { table: 'article', name: 'author', new_name: 'writer' } })).toMatchObject(ok);
    expect((await tableOf('article')).object_relationships.map((r: any) => r.name)).toEqual(['author_v', 'writer']);
  });

  it('rejects a missing relationship and a taken name', async () => {
    expect(await s.query({ type: 'rename_relationship', args: { table: 'article', name: 'nope', new_name: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args', error: 'relationship "nope" does not exist' },
    });
    for (const taken of ['title', 'author_v', 'author']) {
      expect(await s.query({ type: 'rename_relationship', args: { table: 'article', name: 'author', new_name: taken } })).toMatchObject({
        status: 400,
        body: { code: 'already-exists', path: '$.args', error: `cannot rename relationship "author" to "${taken}" in table "article" as a column/relationship with the name already exists` },
      });
    }
  });

  it('rewrites the permissions that traverse the relationship', async () => {
    const exported = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    const perm = (filter: unknown) => ({ role: 'user', permission: { columns: ['id'], filter } });
    for (const t of exported.sources[0].tables) {
      if (t.table.name === 'article') {
        t.select_permissions = [perm({ _or: [{ author: { name: { _eq: 'x' } } }, { author_v: { id: { _eq: 1 } } }] })];
        t.update_permissions = [{ role: 'user', permission: { columns: ['title'], filter: { author: { id: { _eq: 'X-Svc-User-Id' } } }, check: { _not: { author: {} } } } }];
      }
      if (t.table.name === 'author') {
        t.select_permissions = [perm({ articles: { author: { articles: { title: { _eq: 'y' } } } } })];
        t.delete_permissions = [{ role: 'user', permission: { filter: { _exists: { _table: 'article', _where: { author: { id: { _eq: 1 } } } } } } }];
      }
    }
    expect(await s.metadata({ type: 'replace_metadata', args: exported })).toMatchObject({ status: 200 });
    expect(await s.metadata({ type: 'pg_rename_relationship', args: { table: 'article', name: 'author', new_name: 'writer' } })).toMatchObject(ok);
    const article = await tableOf('article');
    expect(article.select_permissions[0].permission.filter).toEqual({ _or: [{ writer: { name: { _eq: 'x' } } }, { author_v: { id: { _eq: 1 } } }] });
    expect(article.update_permissions[0].permission).toEqual({ columns: ['title'], filter: { writer: { id: { _eq: 'X-Svc-User-Id' } } }, check: { _not: { writer: {} } } });
    const author = await tableOf('author');
    expect(author.select_permissions[0].permission.filter).toEqual({ articles: { writer: { articles: { title: { _eq: 'y' } } } } });
    expect(author.delete_permissions[0].permission.filter).toEqual({ _exists: { _table: { schema: 'public', name: 'article' }, _where: { writer: { id: { _eq: 1 } } } } });
  });
});

describe('set_relationship_comment', () => {
  it('sets and removes the comment, accepting `relationship` or `name`', async () => {
    await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    expect(await s.query({ type: 'set_relationship_comment', args: { table: 'article', name: 'author', comment: 'the writer' } })).toMatchObject(ok);
    expect((await tableOf('article')).object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'author_id' }, comment: 'the writer' }]);
    expect(await s.metadata({ type: 'pg_set_relationship_comment', args: { table: 'article', relationship: 'author', comment: null } })).toMatchObject(ok);
    expect((await tableOf('article')).object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }]);
    expect(await s.metadata({ type: 'pg_set_relationship_comment', args: { table: 'article', relationship: 'nope', comment: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args', error: 'relationship "nope" does not exist' },
    });
    expect(await s.metadata({ type: 'pg_set_relationship_comment', args: { table: 'article', comment: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args', error: 'key "relationship" not found' },
    });
  });
});

describe('dependencies', () => {
  beforeEach(async () => {
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'create_object_relationship', args: { name: 'author', table: 'article', using: { foreign_key_constraint_on: 'author_id' } } },
        { type: 'create_array_relationship', args: { name: 'articles', table: 'author', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      ],
    });
    expect(r.status).toBe(200);
  });

  it('keeps a table that relationships point to from being untracked without cascade', async () => {
    expect(await s.query({ type: 'untrack_table', args: { table: { name: 'author' } } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: relationship article.author in source "default"' },
    });
    expect(await s.query({ type: 'untrack_table', args: { table: { name: 'article' } } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: relationship author.articles in source "default"' },
    });
    expect(await s.query({ type: 'untrack_table', args: { table: { name: 'author' }, cascade: true } })).toMatchObject(ok);
    expect(await tableOf('article')).toEqual({ table: { schema: 'public', name: 'article' } });
    expect(await s.query({ type: 'untrack_table', args: { table: { name: 'article' } } })).toMatchObject(ok);
  });

  it('reports relationships whose remote table disappeared, and drops them as inconsistent', async () => {
    await s.runSql('create table gone (id serial primary key, author_id integer references author(id))');
    await s.query({ type: 'track_table', args: { name: 'gone' } });
    await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'gones', using: { foreign_key_constraint_on: { table: 'gone', column: 'author_id' } } } });
    expect(await s.query({ type: 'run_sql', args: { sql: 'drop table gone', check_metadata_consistency: false } })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.body.inconsistent_objects).toEqual([
      { type: 'table', name: 'table gone in source default', reason: 'Inconsistent object: no such table/view exists in source: "gone"', definition: { schema: 'public', name: 'gone' } },
      {
        type: 'array_relation',
        name: 'array_relation gones in table author in source default',
        reason: 'Inconsistent object: in table "author": in relationship "gones": table "gone" does not exist in source: default',
        definition: {
          source: 'default',
          table: { schema: 'public', name: 'author' },
          name: 'gones',
          using: { foreign_key_constraint_on: { column: 'author_id', table: { schema: 'public', name: 'gone' } } },
          comment: null,
        },
      },
    ]);
    expect(await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject({ status: 200 });
    expect((await tableOf('author')).array_relationships.map((x: any) => x.name)).toEqual(['articles']);
  });
});

describe('replace_metadata', () => {
  it('normalises stored relationships and rejects malformed ones', async () => {
    const exported = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    const article = exported.sources[0].tables.find((t: any) => t.table.name === 'article');
    article.object_relationships = [{ name: 'author_v', using: { manual_configuration: { remote_table: 'author_view', column_mapping: { author_id: 'id' } } }, comment: null }];
    expect(await s.metadata({ type: 'replace_metadata', args: exported })).toMatchObject({ status: 200 });
    expect((await tableOf('article')).object_relationships).toEqual([
      { name: 'author_v', using: { manual_configuration: { column_mapping: { author_id: 'id' }, insertion_order: null, remote_table: { schema: 'public', name: 'author_view' } } } },
    ]);
    article.object_relationships = [{ name: 'bad', using: { foreign_key_constraint_on: 1 } }];
    const r = await s.metadata({ type: 'replace_metadata', args: exported });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
    expect(r.body.path).toMatch(/object_relationships\[0\]\.using\.foreign_key_constraint_on$/);
  });
});

describe('schema changes by run_sql', () => {
  beforeEach(async () => {
    await s.runSql(`
      drop table if exists book, volume, writer;
      create table writer (id serial primary key, name text);
      create table book (id serial primary key, writer_id integer constraint book_writer_fk references writer(id));
    `);
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'track_table', args: { name: 'writer' } },
        { type: 'track_table', args: { name: 'book' } },
        { type: 'create_object_relationship', args: { table: 'book', name: 'writer', using: { foreign_key_constraint_on: 'writer_id' } } },
        { type: 'create_array_relationship', args: { table: 'writer', name: 'books', using: { foreign_key_constraint_on: { table: 'book', column: 'writer_id' } } } },
        { type: 'create_array_relationship', args: { table: 'writer', name: 'books_m', using: { manual_configuration: { remote_table: 'book', column_mapping: { id: 'writer_id' } } } } },
      ],
    });
    expect(r.status).toBe(200);
  });

  it('follows renamed tables and columns', async () => {
    await s.runSql('alter table book rename to volume; alter table volume rename column writer_id to author_ref');
    expect(await tableOf('volume')).toEqual({
      table: { schema: 'public', name: 'volume' },
      object_relationships: [{ name: 'writer', using: { foreign_key_constraint_on: 'author_ref' } }],
    });
    expect((await tableOf('writer')).array_relationships).toEqual([
      { name: 'books', using: { foreign_key_constraint_on: { column: 'author_ref', table: { schema: 'public', name: 'volume' } } } },
      { name: 'books_m', using: { manual_configuration: { column_mapping: { id: 'author_ref' }, insertion_order: null, remote_table: { schema: 'public', name: 'volume' } } } },
    ]);
  });

  it('keeps the foreign key and the columns relationships use, unless cascading', async () => {
    const drop = await s.query({ type: 'run_sql', args: { sql: 'alter table book drop constraint book_writer_fk' } });
    expect(drop).toMatchObject({ status: 400, body: { code: 'dependency-error', path: '$.args' } });
    expect(drop.body.error).toMatch(/^cannot drop due to the following dependent objects: /);
    expect(drop.body.error).toContain('relationship book.writer in source "default"');
    expect(drop.body.error).toContain('relationship writer.books in source "default"');
    expect(drop.body.error).not.toContain('books_m');
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table book drop constraint book_writer_fk', cascade: true } })).toMatchObject({ status: 200 });
    expect(await tableOf('book')).toEqual({ table: { schema: 'public', name: 'book' } });
    expect((await tableOf('writer')).array_relationships.map((r: any) => r.name)).toEqual(['books_m']);
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table book drop column writer_id' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', error: 'cannot drop due to the following dependent objects: relationship writer.books_m in source "default"' },
    });
  });
});
