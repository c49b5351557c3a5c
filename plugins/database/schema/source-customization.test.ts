/**
 * Source customization of GraphQL names (names.ts, namespace.ts), as Hasura v2's
 * pg_source_customization / prefix / namespace cases show it: type names get the prefix and
 * suffix around the whole name, root fields theirs, and a namespace puts the source's root fields
 * under one field, for queries and mutations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, useServer } from '../../../test/helpers.js';
import postgres from 'postgres';

const server = useServer('');
let other: { name: string; url: string };

const SQL = `
create table author_local (id serial primary key, name text unique);
insert into author_local (name) values ('Author 1'), ('Author 2');
create function search_authors(search text) returns setof author_local as $$ select * from author_local where name ilike ('%' || search || '%') $$ language sql stable;
`;

beforeAll(async () => {
  other = await createDatabase('svc_custom');
  const sql = postgres(other.url, { max: 1, onnotice: () => {} });
  await sql.unsafe(SQL).simple();
  await sql.end();
  const cfg = { connection_info: { database_url: other.url } };
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_add_source', args: { name: 'pg1', configuration: cfg, customization: { root_fields: { namespace: 'my_source', prefix: 'fpref_', suffix: '_fsuff' }, type_names: { prefix: 'tpref_', suffix: '_tsuff' } } } },
      { type: 'pg_track_table', args: { source: 'pg1', table: 'author_local' } },
      { type: 'pg_track_function', args: { source: 'pg1', function: 'search_authors' } },
      { type: 'pg_add_source', args: { name: 'pg2', configuration: cfg, customization: { root_fields: { prefix: 'foo_' }, type_names: { prefix: 'bar_' } } } },
      { type: 'pg_track_table', args: { source: 'pg2', table: 'author_local' } },
      { type: 'pg_track_function', args: { source: 'pg2', function: 'search_authors' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

afterAll(async () => {
  await server.metadata({ type: 'pg_drop_source', args: { name: 'pg1', cascade: true } });
  await server.metadata({ type: 'pg_drop_source', args: { name: 'pg2', cascade: true } });
});

describe('prefixes and suffixes', () => {
  it('root fields and type names of the source, functions included', async () => {
    expect(await server.gql('{ foo_author_local(order_by: {id: asc}) { __typename id name } }')).toEqual({
      data: { foo_author_local: [{ __typename: 'bar_author_local', id: 1, name: 'Author 1' }, { __typename: 'bar_author_local', id: 2, name: 'Author 2' }] },
    });
    expect(await server.gql('{ foo_search_authors(args: {search: "Author 1"}) { __typename id } }')).toEqual({ data: { foo_search_authors: [{ __typename: 'bar_author_local', id: 1 }] } });
    const types = await server.gql('{ a: __type(name: "bar_author_local_bool_exp") { name } b: __type(name: "bar_search_authors_args") { name } c: __type(name: "bar_author_local_aggregate") { name } }');
    expect(types).toEqual({ data: { a: { name: 'bar_author_local_bool_exp' }, b: { name: 'bar_search_authors_args' }, c: { name: 'bar_author_local_aggregate' } } });
  });
});

describe('a namespace', () => {
  it('queries: the source root fields under it, aliases, fragments and __typename', async () => {
    expect(await server.gql('{ a: my_source { b: __typename c: fpref_author_local_fsuff(order_by: {id: asc}) { d: id f: __typename } } }')).toEqual({
      data: { a: { b: 'tpref_my_source_query_tsuff', c: [{ d: 1, f: 'tpref_author_local_tsuff' }, { d: 2, f: 'tpref_author_local_tsuff' }] } },
    });
    expect(await server.gql('{ my_source { ... on tpref_my_source_query_tsuff { fpref_author_local_by_pk_fsuff(id: 1) { name } } fpref_author_local_aggregate_fsuff { aggregate { count } __typename } } }')).toEqual({
      data: { my_source: { fpref_author_local_by_pk_fsuff: { name: 'Author 1' }, fpref_author_local_aggregate_fsuff: { aggregate: { count: 2 }, __typename: 'tpref_author_local_aggregate_tsuff' } } },
    });
    expect(await server.gql('query ($x: Boolean!) { my_source { a: fpref_author_local_by_pk_fsuff(id: 1) @include(if: $x) { id } b: fpref_author_local_by_pk_fsuff(id: 2) @skip(if: $x) { id } } }', { x: true })).toEqual({
      data: { my_source: { a: { id: 1 } } },
    });
    expect((await server.gql('{ fpref_author_local_fsuff { id } }')).errors[0].message).toBe("field 'fpref_author_local_fsuff' not found in type: 'query_root'");
  });

  it('mutations: under the namespace, in the request\'s transaction', async () => {
    expect(await server.gql('mutation { my_source { __typename fpref_insert_author_local_fsuff(objects: {name: "Author 3", id: 3}) { __typename returning { __typename id name } } } }')).toEqual({
      data: {
        my_source: {
          __typename: 'tpref_my_source_mutation_frontend_tsuff',
          fpref_insert_author_local_fsuff: { __typename: 'tpref_author_local_mutation_response_tsuff', returning: [{ __typename: 'tpref_author_local_tsuff', id: 3, name: 'Author 3' }] },
        },
      },
    });
    // A failure of a later field takes the namespace's insert back.
    const r = await server.gql('mutation { my_source { fpref_insert_author_local_fsuff(objects: {name: "Author 4", id: 4}) { affected_rows } } foo_insert_author_local(objects: {name: "Author 1"}) { affected_rows } }');
    expect(r.data).toBeUndefined();
    expect(r.errors[0].extensions.code).toBe('constraint-violation');
    expect(await server.gql('{ my_source { fpref_author_local_fsuff(order_by: {id: asc}) { id } } }')).toEqual({ data: { my_source: { fpref_author_local_fsuff: [{ id: 1 }, { id: 2 }, { id: 3 }] } } });
  });
});

describe('names that are not GraphQL names', () => {
  it('are refused in a source customization and a function customization, and nothing changes', async () => {
    const before = (await server.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const cfg = { connection_info: { database_url: other.url } };
    const refused = async (args: unknown, type: string, path: string, bad: string) => {
      const r = await server.metadata({ type, args });
      expect(r.status, r.text).toBe(400);
      expect(r.body).toMatchObject({ code: 'parse-failed', path, error: `${bad} is not valid GraphQL name` });
    };
    await refused({ name: 'pg3', configuration: cfg, customization: { root_fields: { namespace: 'my source' } } }, 'pg_add_source', '$.args.customization.root_fields.namespace', 'my source');
    await refused({ name: 'pg2', configuration: cfg, customization: { root_fields: { prefix: '1_' } } }, 'pg_update_source', '$.args.customization.root_fields.prefix', '1_');
    await refused({ name: 'pg2', configuration: cfg, customization: { type_names: { suffix: '-x' } } }, 'pg_update_source', '$.args.customization.type_names.suffix', '-x');
    await refused({ name: 'pg2', configuration: cfg, customization: { type_names: { mapping: { author_local: 'an author' } } } }, 'pg_update_source', '$.args.customization.type_names.mapping.author_local', 'an author');
    const fn = { source: 'pg2', function: 'search_authors', configuration: { custom_name: '1 search' } };
    // Parsed before anything else: the function being tracked already does not matter.
    await refused(fn, 'pg_track_function', '$.args.configuration.custom_name', '1 search');
    const roots = { source: 'pg2', function: 'search_authors', configuration: { custom_root_fields: { function_aggregate: 'a b' } } };
    await refused(roots, 'pg_track_function', '$.args.configuration.custom_root_fields.function_aggregate', 'a b');
    const table = { source: 'pg2', table: 'author_local', configuration: { custom_root_fields: { select: '1 bad name' } } };
    await refused(table, 'pg_set_table_customization', '$.args.configuration.custom_root_fields.select', '1 bad name');
    expect((await server.metadata({ type: 'export_metadata', version: 2, args: {} })).body).toEqual(before);
  });
});
