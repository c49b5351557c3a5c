/**
 * GraphQL introspection options (plugins/introspection-options), against a real PostgreSQL:
 * introspection refused for the listed roles with Hasura's error, kept for the others and for
 * ordinary queries of the listed roles; the section in export, replace and clear.
 */
import { describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';

const s = useServer(`create table item (id int primary key, name text); insert into item values (1, 'a');`);
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const as = (role: string) => ({ 'x-svc-role': role });

describe('set_graphql_introspection_options', () => {
  it('refuses introspection for the listed roles only, and keeps their other queries', async () => {
    await ok({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'item' } },
        ...['user', 'guest'].map((role) => ({ type: 'pg_create_select_permission', args: { table: 'item', role, permission: { columns: '*', filter: {} } } })),
      ],
    });
    expect((await s.gql('{ __schema { queryType { name } } }', undefined, as('user'))).data).toEqual({ __schema: { queryType: { name: 'query_root' } } });
    await ok({ type: 'set_graphql_introspection_options', args: { disabled_for_roles: ['user'] } });

    expect(await s.gql('{ __schema { queryType { name } } }', undefined, as('user'))).toEqual({
      errors: [{ extensions: { path: '$.selectionSet.__schema', code: 'validation-failed' }, message: "field '__schema' not found in type: 'query_root'" }],
    });
    // `__type`, an alias, a fragment: refused the same way.
    const viaType = await s.gql('{ t: __type(name: "item") { name } }', undefined, as('user'));
    expect(viaType.errors[0]).toMatchObject({ extensions: { path: '$.selectionSet.t', code: 'validation-failed' }, message: "field '__type' not found in type: 'query_root'" });
    const viaFragment = await s.gql('query { ...F } fragment F on query_root { __schema { types { name } } }', undefined, as('user'));
    expect(viaFragment.errors[0].message).toBe("field '__schema' not found in type: 'query_root'");
    // The role's data and __typename are still there; other roles and admin still introspect.
    expect((await s.gql('{ __typename item { id name } }', undefined, as('user'))).data).toEqual({ __typename: 'query_root', item: [{ id: 1, name: 'a' }] });
    expect((await s.gql('{ __type(name: "item") { name } }', undefined, as('guest'))).data).toEqual({ __type: { name: 'item' } });
    expect((await s.gql('{ __type(name: "item") { name } }')).data).toEqual({ __type: { name: 'item' } });
  });

  it('keeps the options in export, replaces them as a whole, and clears them', async () => {
    await ok({ type: 'set_graphql_schema_introspection_options', args: { disabled_for_roles: ['guest', 'user', 'guest'] } });
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    expect(md.graphql_schema_introspection).toEqual({ disabled_for_roles: ['guest', 'user'] });
    await ok({ type: 'set_graphql_introspection_options', args: { disabled_for_roles: [] } });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.graphql_schema_introspection).toBeUndefined();
    expect((await s.gql('{ __type(name: "item") { name } }', undefined, as('guest'))).data).toEqual({ __type: { name: 'item' } });
    await ok({ type: 'replace_metadata', version: 2, args: { metadata: md } });
    expect((await s.gql('{ __type(name: "item") { name } }', undefined, as('guest'))).errors[0].message).toBe("field '__type' not found in type: 'query_root'");
    await ok({ type: 'clear_metadata', args: {} });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.graphql_schema_introspection).toBeUndefined();
    const bad = await s.metadata({ type: 'set_graphql_introspection_options', args: { disabled_for_roles: 'user' } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('parse-failed');
  });
});
