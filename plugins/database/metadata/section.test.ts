import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const s = useServer(`
    create table author (id serial primary key, name text not null, age integer);
    create table article (id serial primary key, title text not null, author_id integer not null references author(id), is_published boolean);
    create table tag (id serial primary key, name text not null, article_id integer references article(id));
    create table color (value text primary key, comment text);
    insert into color values ('red', 'Red'), ('blue', null);
    create function author_full_name(a author) returns text language sql stable as $$ select a.name $$;
    create function author_articles(a author, q text) returns setof article language sql stable as $$ select * from article where author_id = a.id and title ilike q $$;
    create function search_articles(q text) returns setof article language sql stable as $$ select * from article where title ilike q $$;
  `);

const exportMetadata = async () => {
  const r = await s.metadata({ type: 'export_metadata', args: {} });
  expect(r.status).toBe(200);
  return r.body;
};

const replace = async (doc: unknown) => {
  const r = await s.metadata({ type: 'replace_metadata', args: doc });
  expect(r).toMatchObject({ status: 200, body: { message: 'success' } });
};

describe('export → replace → export', () => {
  it('gives back the same document, built by the operations', async () => {
    const r = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'author', configuration: { custom_name: 'writer', custom_root_fields: { select: 'writers' }, column_config: { age: { custom_name: 'years', comment: 'in years' } } } } },
        { type: 'pg_track_table', args: { table: 'article' } },
        { type: 'pg_track_table', args: { table: 'tag' } },
        { type: 'pg_track_table', args: { table: 'color' } },
        { type: 'pg_set_table_is_enum', args: { table: 'color', is_enum: true } },
        { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' }, comment: 'who wrote it' } },
        { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
        {
          type: 'pg_create_array_relationship',
          args: { table: 'article', name: 'tags', using: { manual_configuration: { remote_table: 'tag', column_mapping: { id: 'article_id' } } } },
        },
        { type: 'pg_add_computed_field', args: { table: 'author', name: 'full_name', definition: { function: 'author_full_name' }, comment: 'first and last' } },
        { type: 'pg_add_computed_field', args: { table: 'author', name: 'matching', definition: { function: 'author_articles', table_argument: 'a' } } },
        {
          type: 'pg_create_select_permission',
          args: {
            table: 'article',
            role: 'user',
            permission: {
              columns: ['id', 'title'],
              filter: { _or: [{ author: { id: { _eq: 'X-Svc-User-Id' } } }, { _exists: { _table: 'tag', _where: { name: { _eq: 'public' } } } }] },
              limit: 10,
              allow_aggregations: true,
            },
            comment: 'own or public',
          },
        },
        { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: '*', computed_fields: ['full_name'], filter: { articles: { is_published: { _eq: true } } } } } },
        { type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: { author_id: 'X-Svc-User-Id' }, set: { is_published: false }, columns: ['title'] } } },
        { type: 'pg_create_update_permission', args: { table: 'article', role: 'user', permission: { columns: ['title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, check: { _not: { title: { _eq: '' } } } } } },
        { type: 'pg_create_delete_permission', args: { table: 'tag', role: 'user', permission: { filter: { _and: [{ name: { _neq: 'x' } }, { _exists: { _table: { schema: 'public', name: 'author' }, _where: {} } }] } } } },
        { type: 'pg_track_function', args: { function: 'search_articles', configuration: { custom_root_fields: { function: 'findArticles' } }, comment: 'search' } },
        { type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } },
        { type: 'pg_update_source', args: { name: 'default', customization: { root_fields: { namespace: 'db', prefix: 'p_' }, type_names: { suffix: '_t' } } } },
      ],
    });
    expect(r).toMatchObject({ status: 200 });
    const exported = await exportMetadata();
    const tables = exported.sources[0].tables;
    expect(tables.map((t: any) => t.table.name)).toEqual(['author', 'article', 'tag', 'color']);
    expect(tables[1].select_permissions[0].permission.filter._or[1]._exists._table).toEqual({ schema: 'public', name: 'tag' });
    expect(exported.sources[0].customization).toEqual({ root_fields: { namespace: 'db', prefix: 'p_' }, type_names: { suffix: '_t' } });

    await replace(exported);
    expect(await exportMetadata()).toEqual(exported);
    // A second round trip starts from what the first one stored.
    await replace(await exportMetadata());
    expect(await exportMetadata()).toEqual(exported);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true, inconsistent_objects: [] });
  });

  it('stores a hand-written document as the operations would, and keeps it through the next round trip', async () => {
    const before = await exportMetadata();
    const source = before.sources[0];
    const handWritten = {
      ...before,
      sources: [
        {
          ...source,
          tables: [
            {
              table: 'author',
              array_relationships: [{ name: 'articles', using: { foreign_key_constraint_on: { table: 'article', columns: ['author_id'] } }, comment: null }],
              computed_fields: [{ name: 'full_name', definition: { function: 'author_full_name' } }],
              select_permissions: [{ role: 'user', comment: null, permission: { columns: '*', filter: { $or: [{ $exists: { _table: 'tag', _where: {} } }, {}] }, allow_aggregations: false } }],
            },
            {
              table: { name: 'article' },
              object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: ['author_id'] } }],
              insert_permissions: [{ role: 'user', permission: { check: {}, set: {}, backend_only: false } }],
            },
            { table: { schema: 'public', name: 'tag' } },
          ],
          functions: [{ function: 'search_articles', permissions: [] }],
        },
      ],
    };
    await replace(handWritten);
    const stored = await exportMetadata();
    expect(stored.sources[0].tables).toEqual([
      {
        table: { schema: 'public', name: 'author' },
        array_relationships: [{ name: 'articles', using: { foreign_key_constraint_on: { column: 'author_id', table: { schema: 'public', name: 'article' } } } }],
        computed_fields: [{ name: 'full_name', definition: { function: { schema: 'public', name: 'author_full_name' } } }],
        select_permissions: [{ role: 'user', permission: { columns: '*', filter: { _or: [{ _exists: { _table: { schema: 'public', name: 'tag' }, _where: {} } }, {}] } } }],
      },
      {
        table: { schema: 'public', name: 'article' },
        object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }],
        insert_permissions: [{ role: 'user', permission: { check: {} } }],
      },
      { table: { schema: 'public', name: 'tag' } },
    ]);
    expect(stored.sources[0].functions).toEqual([{ function: { schema: 'public', name: 'search_articles' } }]);
    await replace(stored);
    expect(await exportMetadata()).toEqual(stored);
  });
});
