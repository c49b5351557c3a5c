/**
 * Inherited roles and remote schema permissions (Note [Inherited remote schema permissions] in
 * plugins/remote-schemas/inherit.ts), against a real GraphQL server on loopback: parents that
 * agree up to order give the role their permission (presets sent to the remote as theirs),
 * parents without one are passed over, parents that differ (fields, preset values, session or
 * static) give none and an `inherited role permission inconsistency` for that role and remote,
 * nested roles, an override of the role's own, and what export keeps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql } from 'graphql';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

const SDL = `
  input Filter { id: Int, name: String }
  type User { id: Int name: String secret: String }
  type Query {
    hello: String
    user(id: Int): User
    whoami(user_id: Int): Int
    messages(where: Filter): String
    greet(name: String): String
  }
`;

const bodies: any[] = [];
let remote: Server;
let s: TestServer;
const ADMIN = { 'x-svc-admin-secret': 'secret' };

beforeAll(async () => {
  const schema = buildSchema(SDL);
  const root = {
    hello: () => 'world',
    user: ({ id }: { id?: number }) => ({ id: id ?? 0, name: `u${id ?? 0}`, secret: 'hidden' }),
    whoami: ({ user_id }: { user_id?: number }) => user_id ?? -1,
    messages: ({ where }: { where?: unknown }) => JSON.stringify(where ?? null),
    greet: ({ name }: { name?: string }) => `hi ${name}`,
  };
  remote = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const body = JSON.parse(text);
    bodies.push(body);
    const result = await graphql({ schema, source: body.query, variableValues: body.variables, operationName: body.operationName, rootValue: root });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  });
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(remote.address() as AddressInfo).port}/graphql`;
  s = await startServer({ config: { adminSecret: 'secret', enableRemoteSchemaPermissions: true }, env: { REMOTE_URL: url } });
  await s.runSql('create table note (id int primary key, body text); insert into note values (1, \'n1\');');
  const perm = (role: string, schema: string) => ({ type: 'add_remote_schema_permissions', args: { remote_schema: 'rs', role, definition: { schema } } });
  const r = await meta({
    type: 'bulk',
    args: [
      { type: 'add_remote_schema', args: { name: 'rs', definition: { url: '{{REMOTE_URL}}' } } },
      { type: 'pg_track_table', args: { table: 'note' } },
      { type: 'pg_create_select_permission', args: { table: 'note', role: 'reader', permission: { columns: ['id', 'body'], filter: {} } } },
      { type: 'pg_create_remote_relationship', args: { table: 'note', name: 'u', definition: { to_remote_schema: { lhs_fields: ['id'], remote_schema: 'rs', remote_field: { user: { arguments: { id: '$id' } } } } } } },
      // r2 is a role by a table permission too: it stays one when its remote permission goes.
      { type: 'pg_create_select_permission', args: { table: 'note', role: 'r2', permission: { columns: ['id'], filter: {} } } },
      perm('r1', 'type User { id: Int name: String } type Query { hello: String user(id: Int): User }'),
      // r1's permission written otherwise: types, fields and arguments reordered, a description,
      // the schema block. Relevantly the same.
      perm('r1b', 'schema { query: Query } type Query { "greets" user(id: Int): User hello: String } type User { name: String id: Int }'),
      perm('r2', 'type Query { hello: String }'),
      perm('p1', 'input Filter { id: Int name: String } type Query { greet(name: String @preset(value: "x-svc-user-id")): String whoami(user_id: Int @preset(value: "x-svc-user-id")): Int messages(where: Filter @preset(value: {id: 1, name: "a"})): String }'),
      // p1 with the preset object's fields in another order: the same.
      perm('p1b', 'input Filter { name: String id: Int } type Query { greet(name: String @preset(value: "x-svc-user-id")): String messages(where: Filter @preset(value: {name: "a", id: 1})): String whoami(user_id: Int @preset(value: "x-svc-user-id")): Int }'),
      // Another static value.
      perm('p2', 'input Filter { id: Int name: String } type Query { greet(name: String @preset(value: "x-svc-user-id")): String whoami(user_id: Int @preset(value: "x-svc-user-id")): Int messages(where: Filter @preset(value: {id: 2, name: "a"})): String }'),
      // The same text, but static: not a session variable.
      perm('p3', 'input Filter { id: Int name: String } type Query { greet(name: String @preset(value: "x-svc-user-id", static: true)): String whoami(user_id: Int @preset(value: "x-svc-user-id")): Int messages(where: Filter @preset(value: {id: 1, name: "a"})): String }'),
      { type: 'add_inherited_role', args: { role_name: 'same', role_set: ['r1', 'r1b', 'reader'] } },
      { type: 'add_inherited_role', args: { role_name: 'none', role_set: ['reader'] } },
      { type: 'add_inherited_role', args: { role_name: 'presets', role_set: ['p1', 'p1b'] } },
      { type: 'add_inherited_role', args: { role_name: 'nested_ok', role_set: ['same', 'r1'] } },
    ],
  });
  expect(r.status, r.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await s?.stop();
  remote?.close();
});

const meta = (body: unknown) => s.metadata(body, ADMIN);
const as = (role: string, vars: Record<string, string> = {}) => ({ ...ADMIN, 'x-svc-role': role, ...Object.fromEntries(Object.entries(vars).map(([k, v]) => [`x-svc-${k}`, v])) });
const gql = (q: string, role: string, vars: Record<string, string> = {}) => s.gql(q, undefined, as(role, vars));
const ok = async (body: unknown) => {
  const r = await meta(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const conflicts = async () => {
  const r = await ok({ type: 'get_inconsistent_metadata', args: {} });
  return (r.inconsistent_objects as any[]).filter((o) => o.type === 'inherited role permission inconsistency');
};
const conflict = (role: string) => ({
  reason: `Could not inherit permission for the role '${role}' for the entity: 'remote schema: 'rs''`,
  name: role,
  type: 'inherited role permission inconsistency',
  entity: { remote_schema: 'rs' },
});
const notFound = (field: string) => ({ message: `field '${field}' not found in type: 'query_root'`, extensions: { path: `$.selectionSet.${field}`, code: 'validation-failed' } });

describe('parents that agree', () => {
  it('give the role their permission, up to order, descriptions and the schema block', async () => {
    expect(await gql('{ hello user(id: 7) { id name } }', 'same')).toEqual({ data: { hello: 'world', user: { id: 7, name: 'u7' } } });
    // Only what the parents show: no `secret`, no `whoami`.
    expect((await gql('{ user(id: 7) { secret } }', 'same')).errors[0].message).toBe("field 'secret' not found in type: 'User'");
    expect((await gql('{ whoami }', 'same')).errors).toEqual([notFound('whoami')]);
    // The table permission of the parent without a remote permission is inherited beside it.
    expect(await gql('{ note { id body } }', 'same')).toEqual({ data: { note: [{ id: 1, body: 'n1' }] } });
  });

  it('give presets that the remote receives, session variables read per request', async () => {
    bodies.length = 0;
    expect(await gql('{ whoami messages greet }', 'presets', { 'user-id': '42' })).toEqual({ data: { whoami: 42, messages: '{"id":1,"name":"a"}', greet: 'hi 42' } });
    expect(JSON.stringify(bodies.at(-1))).toContain('42');
    // The preset arguments are hidden from the role.
    expect((await gql('{ whoami(user_id: 1) }', 'presets', { 'user-id': '42' })).errors[0].message).toBe("'whoami' has no argument named 'user_id'");
  });

  it('reach the remote through a table\'s remote relationship too', async () => {
    expect(await gql('{ note { id u { name } } }', 'same')).toEqual({ data: { note: [{ id: 1, u: { name: 'u1' } }] } });
    expect((await gql('{ note { u { secret } } }', 'same')).errors[0].message).toBe("field 'secret' not found in type: 'User'");
    // Without a remote permission through its parents, the role has the table but not the join.
    expect((await gql('{ note { u { name } } }', 'none')).errors[0].message).toBe("field 'u' not found in type: 'note'");
  });

  it('nest: an inherited role of inherited roles that agree', async () => {
    expect(await gql('{ hello user(id: 1) { name } }', 'nested_ok')).toEqual({ data: { hello: 'world', user: { name: 'u1' } } });
  });

  it('are passed over when none has a permission: the role sees no remote', async () => {
    expect((await gql('{ hello }', 'none')).errors).toEqual([notFound('hello')]);
    expect(await gql('{ note { id } }', 'none')).toEqual({ data: { note: [{ id: 1 }] } });
    expect(await conflicts()).toEqual([]);
  });

  it('are not written into the metadata: export keeps only the permissions of the document', async () => {
    const md = await ok({ type: 'export_metadata', args: {} });
    expect(md.remote_schemas[0].permissions.map((p: { role: string }) => p.role)).toEqual(['r1', 'r1b', 'r2', 'p1', 'p1b', 'p2', 'p3']);
  });
});

describe('parents that differ', () => {
  it('give no permission and an inconsistency for the role and the remote; the operation that adds the role succeeds', async () => {
    expect(await ok({ type: 'add_inherited_role', args: { role_name: 'fields', role_set: ['r1', 'r2'] } })).toEqual({ message: 'success' });
    expect(await ok({ type: 'add_inherited_role', args: { role_name: 'preset_values', role_set: ['p1', 'p2'] } })).toEqual({ message: 'success' });
    expect(await ok({ type: 'add_inherited_role', args: { role_name: 'preset_static', role_set: ['p1', 'p3'] } })).toEqual({ message: 'success' });
    const r = await ok({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.is_consistent).toBe(false);
    expect(await conflicts()).toEqual([conflict('fields'), conflict('preset_values'), conflict('preset_static')]);
    expect((await gql('{ hello }', 'fields')).errors).toEqual([notFound('hello')]);
    expect((await gql('{ whoami }', 'preset_values', { 'user-id': '1' })).errors).toEqual([notFound('whoami')]);
    expect((await gql('{ whoami }', 'preset_static', { 'user-id': '1' })).errors).toEqual([notFound('whoami')]);
    // The other roles are untouched.
    expect((await gql('{ hello }', 'same')).data).toEqual({ hello: 'world' });
  });

  it('make the roles inheriting from a role in conflict in conflict too', async () => {
    await ok({ type: 'add_inherited_role', args: { role_name: 'child', role_set: ['fields', 'r1'] } });
    expect(await conflicts()).toEqual([conflict('fields'), conflict('preset_values'), conflict('preset_static'), conflict('child')]);
    expect((await gql('{ hello }', 'child')).errors).toEqual([notFound('hello')]);
  });

  it('are overridden by a permission of the role itself, and come back when it is dropped', async () => {
    expect(await ok({ type: 'add_remote_schema_permissions', args: { remote_schema: 'rs', role: 'fields', definition: { schema: 'type Query { hello: String whoami(user_id: Int): Int }' } } })).toEqual({ message: 'success' });
    // `child` now inherits from `fields` (its own) and r1: they differ, so child stays in conflict.
    expect(await conflicts()).toEqual([conflict('preset_values'), conflict('preset_static'), conflict('child')]);
    expect(await gql('{ hello whoami(user_id: 5) }', 'fields')).toEqual({ data: { hello: 'world', whoami: 5 } });
    expect(await ok({ type: 'drop_remote_schema_permissions', args: { remote_schema: 'rs', role: 'fields' } })).toEqual({ message: 'success' });
    expect(await conflicts()).toEqual([conflict('fields'), conflict('preset_values'), conflict('preset_static'), conflict('child')]);
  });

  it('agree again when a parent loses its permission; drop_inconsistent_metadata leaves the conflicts (no object is wrong)', async () => {
    expect(await ok({ type: 'drop_remote_schema_permissions', args: { remote_schema: 'rs', role: 'r2' } })).toEqual({ message: 'success' });
    expect(await gql('{ hello user(id: 3) { name } }', 'fields')).toEqual({ data: { hello: 'world', user: { name: 'u3' } } });
    expect(await gql('{ hello }', 'child')).toEqual({ data: { hello: 'world' } });
    expect(await conflicts()).toEqual([conflict('preset_values'), conflict('preset_static')]);
    await ok({ type: 'drop_inconsistent_metadata', args: {} });
    expect(await conflicts()).toEqual([conflict('preset_values'), conflict('preset_static')]);
    // Dropping the roles clears them.
    await ok({ type: 'bulk', args: [{ type: 'drop_inherited_role', args: { role_name: 'preset_values' } }, { type: 'drop_inherited_role', args: { role_name: 'preset_static' } }] });
    expect(await conflicts()).toEqual([]);
    expect((await ok({ type: 'get_inconsistent_metadata', args: {} })).is_consistent).toBe(true);
  });
});

// The remote-schemas and actions plugins' inheritance hooks are both optional.
describe.each(['remote-schemas', 'actions'])('without the %s plugin', (plugin) => {
  it('inherited roles still work: the hook is optional', async () => {
    const off = await startServer({ database: await createDatabase(), config: { disabledPlugins: [plugin] } });
    try {
      await off.runSql('create table t (id int primary key); insert into t values (1);');
      const r = await off.metadata({
        type: 'bulk',
        args: [
          { type: 'pg_track_table', args: { table: 't' } },
          { type: 'pg_create_select_permission', args: { table: 't', role: 'a', permission: { columns: ['id'], filter: {} } } },
          { type: 'add_inherited_role', args: { role_name: 'ab', role_set: ['a'] } },
        ],
      });
      expect(r.status, r.text).toBe(200);
      expect(await off.gql('{ t { id } }', undefined, { 'x-svc-role': 'ab' })).toEqual({ data: { t: [{ id: 1 }] } });
    } finally {
      await off.stop();
    }
  }, 60_000);
});
