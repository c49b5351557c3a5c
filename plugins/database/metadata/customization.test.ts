import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers.js';
import { dropColumnFromConfig, renameColumnInConfig, tableRootFields } from './customization.js';
import type { TableInfo } from '../model/types.js';

let s: TestServer;

const ok = { status: 200, body: { message: 'success' } };

async function tableOf(name: string, schema = 'public'): Promise<any> {
  const r = await s.metadata({ type: 'export_metadata', version: 1, args: {} });
  expect(r.status).toBe(200);
  return r.body.sources.find((x: any) => x.name === 'default').tables.find((t: any) => t.table.name === name && t.table.schema === schema);
}

const customize = (table: unknown, configuration: unknown) => s.query({ type: 'set_table_customization', args: { table, configuration } });

beforeAll(async () => {
  s = await startServer();
  await s.runSql(`
    create table author (id serial primary key, name text not null, age integer);
    create table article (id serial primary key, title text not null, content text, author_id integer not null references author(id));
    create table "user" (id serial primary key, name text);
    create table users (id serial primary key, name text);
    create view article_titles as select id, title from article;
    create materialized view article_count as select count(*) as n from article;
    create table badcons (id integer, code text, constraint "bad code" unique (code));
    create table "users address" (id serial primary key, address text);
    create table "users-address" (id integer, constraint users_address_pkey primary key (id));
    create schema other;
    create table other.resident (id serial primary key, name text);
  `);
});
afterAll(async () => {
  await s?.stop();
});

beforeEach(async () => {
  expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  const r = await s.query({
    type: 'bulk',
    args: [
      { type: 'track_table', version: 2, args: { table: 'author', configuration: { custom_root_fields: { select: 'Authors' }, custom_column_names: { id: 'AuthorId' } } } },
      { type: 'track_table', version: 2, args: { table: 'article', configuration: {} } },
      { type: 'create_array_relationship', args: { name: 'articles', table: 'author', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
    ],
  });
  expect(r.status).toBe(200);
});

describe('set_table_customization', () => {
  it('stores the configuration in Hasura\'s export shape (custom_column_names derived from column_config)', async () => {
    expect(await tableOf('author')).toEqual({
      table: { schema: 'public', name: 'author' },
      configuration: { custom_root_fields: { select: 'Authors' }, custom_column_names: { id: 'AuthorId' }, column_config: { id: { custom_name: 'AuthorId' } } },
      array_relationships: [{ name: 'articles', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } } }],
    });
    expect((await tableOf('article')).configuration).toBeUndefined();
    expect(
      await customize('author', {
        custom_root_fields: { select: 'Authors', select_by_pk: { name: 'Author', comment: 'one author' }, insert: null },
        column_config: { id: { custom_name: 'AuthorId' }, name: { custom_name: 'AuthorName', comment: 'the name' }, age: { custom_name: 'age' } },
      }),
    ).toMatchObject(ok);
    expect((await tableOf('author')).configuration).toEqual({
      custom_root_fields: { select: 'Authors', select_by_pk: { name: 'Author', comment: 'one author' } },
      custom_column_names: { id: 'AuthorId', name: 'AuthorName', age: 'age' },
      column_config: { id: { custom_name: 'AuthorId' }, name: { custom_name: 'AuthorName', comment: 'the name' }, age: { custom_name: 'age' } },
    });
  });

  it('replaces the whole configuration; an empty one leaves no configuration', async () => {
    expect(await customize('author', { custom_name: 'writer' })).toMatchObject(ok);
    expect((await tableOf('author')).configuration).toEqual({ custom_root_fields: {}, custom_column_names: {}, column_config: {}, custom_name: 'writer' });
    expect(await s.metadata({ type: 'pg_set_table_customization', args: { source: 'default', table: 'author', configuration: { custom_name: null } } })).toMatchObject(ok);
    expect((await tableOf('author')).configuration).toBeUndefined();
  });

  it('merges the deprecated custom_column_names into column_config, which takes precedence', async () => {
    expect(
      await customize('author', { custom_column_names: { id: 'ignored', name: 'AuthorName' }, column_config: { id: { custom_name: 'TheId' } } }),
    ).toMatchObject(ok);
    expect((await tableOf('author')).configuration).toEqual({
      custom_root_fields: {},
      custom_column_names: { id: 'TheId', name: 'AuthorName' },
      column_config: { id: { custom_name: 'TheId' }, name: { custom_name: 'AuthorName' } },
    });
  });

  it('allows swapping the field names of two columns', async () => {
    expect(await customize('article', { custom_root_fields: {}, column_config: { title: { custom_name: 'content' }, content: { custom_name: 'title' } } })).toMatchObject(ok);
  });

  it('fails on a table that is not tracked', async () => {
    expect(await customize('author1', { custom_root_fields: { select: 'Authors' } })).toEqual(
      expect.objectContaining({ status: 400, body: { path: '$.args', error: 'table "author1" does not exist in source: default', code: 'not-exists' } }),
    );
  });

  it('rejects names that are not GraphQL names, and duplicated root field names', async () => {
    const meta = (configuration: unknown) => s.metadata({ type: 'pg_set_table_customization', args: { table: 'author', configuration } });
    expect(await meta({ custom_name: 'bad name' })).toMatchObject({
      status: 400,
      body: { path: '$.args.configuration.custom_name', error: 'bad name is not valid GraphQL name', code: 'parse-failed' },
    });
    expect(await meta({ column_config: { name: { custom_name: '1name' } } })).toMatchObject({
      status: 400,
      body: { path: '$.args.configuration.column_config.name.custom_name', error: '1name is not valid GraphQL name', code: 'parse-failed' },
    });
    expect(await meta({ custom_root_fields: { select: 'a', select_aggregate: 'b', insert: 'a', delete: 'b' } })).toMatchObject({
      status: 400,
      body: { path: '$.args.configuration.custom_root_fields', error: 'the following custom root field names are duplicated: a and b', code: 'parse-failed' },
    });
    // A text root field name that is not a GraphQL name is refused too (Hasura ignores it and
    // answers success), and the configuration stays as it was.
    expect(await customize('author', { custom_root_fields: { select_by_pk: 'one' } })).toMatchObject(ok);
    for (const bad of ['not a name', '1 bad name', '']) {
      expect(await customize('author', { custom_root_fields: { select: bad, select_by_pk: 'two' } })).toMatchObject({
        status: 400,
        body: { path: '$.configuration.custom_root_fields.select', error: `${bad} is not valid GraphQL name`, code: 'parse-failed' },
      });
    }
    expect((await tableOf('author')).configuration.custom_root_fields).toEqual({ select_by_pk: 'one' });
  });

  it('makes the table inconsistent when a configured column does not exist or two columns get one field name', async () => {
    const internal = (reason: string) => [
      { type: 'table', name: 'table author in source default', reason: `Inconsistent object: ${reason}`, definition: { schema: 'public', name: 'author' } },
    ];
    const missing = 'configuration was given for the column "nope", but no such column exists';
    expect(await customize('author', { column_config: { nope: { custom_name: 'x' } } })).toEqual(
      expect.objectContaining({ status: 400, body: { path: '$.args', code: 'invalid-configuration', error: `Inconsistent object: ${missing}`, internal: internal(missing) } }),
    );
    const same = 'the definitions of columns "name" and "age" are in conflict: they are mapped to the same field name, "x"';
    expect(await customize('author', { column_config: { name: { custom_name: 'x' }, age: { custom_name: 'x' } } })).toEqual(
      expect.objectContaining({ status: 400, body: { path: '$.args', code: 'invalid-configuration', error: `Inconsistent object: ${same}`, internal: internal(same) } }),
    );
    const taken = 'the definitions of columns "id" and "name" are in conflict: they are mapped to the same field name, "id"';
    expect(await customize('author', { column_config: { name: { custom_name: 'id' } } })).toMatchObject({ status: 400, body: { error: `Inconsistent object: ${taken}` } });
    expect((await tableOf('author')).configuration.custom_column_names).toEqual({ id: 'AuthorId' });
  });

  it('rejects a custom column name that a relationship already uses (the relationship becomes inconsistent)', async () => {
    const r = await customize('author', { custom_root_fields: {}, column_config: { name: { custom_name: 'articles' }, age: { custom_name: 'articles_aggregate' } } });
    expect(r).toEqual(
      expect.objectContaining({
        status: 400,
        body: {
          path: '$.args',
          code: 'unexpected',
          error: 'cannot continue due to new inconsistent metadata',
          internal: [
            {
              type: 'array_relation',
              name: 'array_relation articles in table author in source default',
              reason: 'Inconsistent object: field definition conflicts with custom field name for postgres column "name"',
              definition: {
                name: 'articles',
                using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } },
                comment: null,
                source: 'default',
                table: { schema: 'public', name: 'author' },
              },
            },
          ],
        },
      }),
    );
  });

  it('rejects a custom table name whose root fields another table already defines (500, as Hasura)', async () => {
    const r = await customize('author', { custom_name: 'article' });
    expect(r.status).toBe(500);
    expect(r.body.error).toBe(
      "Encountered conflicting definitions in the selection set for 'mutation_root' for fields: [\n" +
        "  'delete_article_by_pk' defined in [table article in source default, table author in source default],\n" +
        "  'delete_article' defined in [table article in source default, table author in source default],\n" +
        "  'update_article_many' defined in [table article in source default, table author in source default],\n" +
        "  'update_article_by_pk' defined in [table article in source default, table author in source default],\n" +
        "  'update_article' defined in [table article in source default, table author in source default],\n" +
        "  'insert_article_one' defined in [table article in source default, table author in source default],\n" +
        "  'insert_article' defined in [table article in source default, table author in source default]\n" +
        ']. Fields must not be defined more than once across all sources.',
    );
    expect((await tableOf('author')).configuration.custom_name).toBeUndefined();
  });

  it('rejects tracking a table whose custom root field clashes with another table', async () => {
    expect(await s.query({ type: 'track_table', args: { table: 'user' } })).toMatchObject(ok);
    const r = await s.query({ type: 'track_table', version: 2, args: { table: 'users', configuration: { custom_root_fields: { select_by_pk: 'user' } } } });
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({
      error:
        "Encountered conflicting definitions in the selection set for 'subscription_root' for field 'user' defined in [table user in source default, table users in source default]. Fields must not be defined more than once across all sources.",
    });
    expect(await tableOf('users')).toBeUndefined();
  });

  it('checks constraint names only for tables that are in the GraphQL schema', async () => {
    expect(await s.query({ type: 'track_table', args: { table: 'badcons' } })).toMatchObject({
      status: 400,
      body: { path: '$.args', code: 'validation-failed', error: 'cannot include "bad code" in the GraphQL schema because it is not a valid GraphQL identifier' },
    });
    // Not a GraphQL name: tracked, but kept out of the schema (and its constraint names unchecked)
    // until it gets a custom name.
    expect(await s.query({ type: 'track_table', args: { name: 'users address' } })).toMatchObject(ok);
    expect(await customize('users address', { custom_name: 'users_address' })).toMatchObject({
      status: 400,
      body: { code: 'validation-failed', error: 'cannot include "users address_pkey" in the GraphQL schema because it is not a valid GraphQL identifier' },
    });
    expect(await s.query({ type: 'track_table', args: { name: 'users-address' } })).toMatchObject(ok);
    expect(await customize('users-address', { custom_name: 'users_address' })).toMatchObject(ok);
  });

  it('sets custom fields with the deprecated set_table_custom_fields (version 2)', async () => {
    expect(
      await s.query({ type: 'set_table_custom_fields', version: 2, args: { table: 'author', custom_root_fields: { select: 'writers' }, custom_column_names: { name: 'AuthorName' } } }),
    ).toMatchObject(ok);
    expect((await tableOf('author')).configuration).toEqual({
      custom_root_fields: { select: 'writers' },
      custom_column_names: { name: 'AuthorName' },
      column_config: { name: { custom_name: 'AuthorName' } },
    });
  });
});

describe('root fields of a table', () => {
  const info = (over: Partial<TableInfo>): TableInfo => ({
    schema: 'public',
    name: 't',
    oid: 1,
    relation: 'table',
    columns: [],
    primaryKey: { name: 't_pkey', columns: ['id'] },
    uniqueConstraints: [],
    foreignKeys: [],
    description: null,
    viewInfo: null,
    ...over,
  });

  it('follows the table, view and materialized-view rules, with custom names', async () => {
    expect(tableRootFields({ table: { schema: 'public', name: 't' } }, info({}), 'public')).toEqual({
      query: ['t', 't_by_pk', 't_aggregate'],
      subscription: ['t', 't_by_pk', 't_aggregate', 't_stream'],
      mutation: ['insert_t', 'insert_t_one', 'update_t', 'update_t_by_pk', 'update_t_many', 'delete_t', 'delete_t_by_pk'],
    });
    expect(
      tableRootFields(
        { table: { schema: 'other', name: 't' }, configuration: { custom_root_fields: { select: 'all', delete_by_pk: { name: 'zap', comment: 'x' } } } },
        info({ primaryKey: null, viewInfo: { insertable: true, updatable: false, deletable: true } }),
        'public',
      ),
    ).toEqual({ query: ['all', 'other_t_aggregate'], subscription: ['all', 'other_t_aggregate', 'other_t_stream'], mutation: ['insert_other_t', 'insert_other_t_one', 'delete_other_t'] });
    expect(tableRootFields({ table: { schema: 'public', name: 'm' }, configuration: { custom_name: 'mv' } }, info({ relation: 'materialized_view', primaryKey: null }), 'public').mutation).toEqual([]);
    expect(tableRootFields({ table: { schema: 'public', name: 'a b' } }, info({}), 'public')).toEqual({ query: [], subscription: [], mutation: [] });
  });

  it('tracks views and materialized views without clashes', async () => {
    expect(await s.query({ type: 'bulk', args: [{ type: 'track_table', args: { table: 'article_titles' } }, { type: 'track_table', args: { table: 'article_count' } }] })).toMatchObject({
      status: 200,
    });
  });
});

describe('configuration helpers for run_sql renames and drops', () => {
  it('renames and drops a column\'s settings', () => {
    const config = { custom_root_fields: {}, custom_column_names: { id: 'AuthorId', name: 'N' }, column_config: { id: { custom_name: 'AuthorId' }, name: { custom_name: 'N' } } };
    expect(renameColumnInConfig(config, 'id', 'author_id')).toEqual({
      custom_root_fields: {},
      custom_column_names: { author_id: 'AuthorId', name: 'N' },
      column_config: { author_id: { custom_name: 'AuthorId' }, name: { custom_name: 'N' } },
    });
    expect(dropColumnFromConfig(config, 'name')).toEqual({ custom_root_fields: {}, custom_column_names: { id: 'AuthorId' }, column_config: { id: { custom_name: 'AuthorId' } } });
    expect(renameColumnInConfig(undefined, 'a', 'b')).toBeUndefined();
  });
});
