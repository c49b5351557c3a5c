/**
 * Custom types and synchronous actions against a real handler (node:http on loopback) and a
 * real PostgreSQL: the operations and their errors, the metadata sections, the payload and
 * headers the handler gets, the checks of its answer (and every way it can be wrong), errors it
 * reports, timeouts, transforms, permissions per role, and relationships to tables.
 */
import http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import { DatabaseToken, type DatabaseService, type SqlExecutor } from '../database/index.js';
import { startHandler, type TestHandler } from './testing.js';

const s = useServer(
  `create table "user" (id serial primary key, name text not null, email text);
   create table article (id serial primary key, title text not null, user_id int);
   insert into "user" (name, email) values ('Clarke', 'c@x.io'), ('Blake', 'b@x.io');
   insert into article (title, user_id) values ('a1', 1), ('a2', 1), ('b1', 2);`,
  { env: { SECRET_HEADER: 's3cret' } },
);

let h: TestHandler;
beforeAll(async () => {
  h = await startHandler();
  s.env.HANDLER = h.url;
});
afterAll(async () => {
  await h?.close();
});

const TYPES = {
  input_objects: [{ name: 'UserInput', fields: [{ name: 'name', type: 'String!' }, { name: 'parent', type: 'UserInput' }] }],
  enums: [{ name: 'Color', values: [{ value: 'RED' }, { value: 'GREEN' }] }],
  scalars: [{ name: 'Anything' }],
  objects: [
    {
      name: 'UserId',
      fields: [{ name: 'id', type: 'Int!' }, { name: 'note', type: 'String' }, { name: 'color', type: 'Color' }, { name: 'address', type: 'Address' }],
      relationships: [
        { name: 'user', type: 'object', remote_table: 'user', field_mapping: { id: 'id' } },
        { name: 'articles', type: 'array', remote_table: 'article', field_mapping: { id: 'user_id' } },
      ],
    },
    { name: 'Address', fields: [{ name: 'city', type: 'String' }, { name: 'zip', type: 'String!' }] },
  ],
};

const action = (name: string, def: Record<string, unknown>) => ({ type: 'create_action', args: { name, definition: { handler: '{{HANDLER}}/' + name, ...def } } });

beforeEach(async () => {
  h.calls.length = 0;
  h.routes = {};
  await s.query({ type: 'clear_metadata', args: {} });
  const r = await s.query({
    type: 'bulk',
    args: [
      { type: 'track_table', args: { name: 'user' } },
      { type: 'track_table', args: { name: 'article' } },
      { type: 'create_select_permission', args: { table: 'user', role: 'user', permission: { columns: ['id', 'name'], filter: { id: 'X-Svc-User-Id' } } } },
      { type: 'set_custom_types', args: TYPES },
      action('get_user', { type: 'query', arguments: [{ name: 'id', type: 'Int!' }], output_type: 'UserId' }),
      action('get_users', { type: 'query', output_type: '[UserId!]!' }),
      action('create_user', { kind: 'synchronous', arguments: [{ name: 'user', type: 'UserInput!' }, { name: 'color', type: 'Color' }], output_type: 'UserId!', headers: [{ name: 'X-Static', value: 'v' }, { name: 'X-Secret', value_from_env: 'SECRET_HEADER' }] }),
      action('echo', { type: 'query', arguments: [{ name: 'x', type: 'Anything' }], output_type: 'Anything', forward_client_headers: true, timeout: 1 }),
      { type: 'create_action_permission', args: { action: 'get_user', role: 'user' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('custom types', () => {
  const set = (args: unknown) => s.query({ type: 'set_custom_types', args });

  it('are exported, replaced and cleared with the metadata', async () => {
    const exp = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    expect(exp.custom_types.objects.map((o: { name: string }) => o.name)).toEqual(['UserId', 'Address']);
    expect(exp.custom_types.objects[0].relationships[0]).toEqual({ name: 'user', type: 'object', remote_table: { schema: 'public', name: 'user' }, field_mapping: { id: 'id' } });
    expect(exp.actions.find((a: { name: string }) => a.name === 'get_user')).toEqual({
      name: 'get_user',
      definition: { handler: '{{HANDLER}}/get_user', output_type: 'UserId', arguments: [{ name: 'id', type: 'Int!' }], type: 'query' },
      permissions: [{ role: 'user' }],
    });
    expect(Object.keys(exp).indexOf('actions')).toBeLessThan(Object.keys(exp).indexOf('custom_types'));
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: exp } });
    expect(r.status, r.text).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.metadata).toEqual(exp);
    expect((await s.metadata({ type: 'clear_metadata', args: {} })).status).toBe(200);
    const cleared = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    expect(cleared.custom_types).toBeUndefined();
    expect(cleared.actions).toBeUndefined();
  });

  it('are replaced as a whole', async () => {
    await s.query({ type: 'bulk', args: [{ type: 'drop_action', args: { name: 'get_user' } }, { type: 'drop_action', args: { name: 'get_users' } }, { type: 'drop_action', args: { name: 'create_user' } }] });
    expect((await set({ scalars: [{ name: 'Anything' }] })).status).toBe(200);
    const exp = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    expect(exp.custom_types).toEqual({ scalars: [{ name: 'Anything' }] });
  });

  it('refuse unknown types, duplicates and bad relationships with Hasura\'s messages', async () => {
    const cases: [unknown, string][] = [
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Nope' }] }] }, 'the type "Nope" for field "x" in  object type "A" does not exist'],
      [{ input_objects: [{ name: 'I', fields: [{ name: 'x', type: 'Nope!' }] }] }, 'the type "Nope" for field "x" in  input object type "I" does not exist'],
      [{ scalars: [{ name: 'A' }], enums: [{ name: 'A', values: [{ value: 'X' }] }] }, 'duplicate type names: "A"'],
      [{ enums: [{ name: 'E', values: [{ value: 'X' }, { value: 'X' }] }] }, 'the enum type "E" has duplicate values: "X"'],
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Int' }, { name: 'x', type: 'Int' }] }] }, 'the object "A" has duplicate fields: "x"'],
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Int' }], relationships: [{ name: 'r', type: 'object', remote_table: 'nope', field_mapping: { x: 'id' } }] }] }, 'the remote table "nope" for relationship "r" of object type "A" does not exist'],
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Int' }], relationships: [{ name: 'r', type: 'object', remote_table: 'user', field_mapping: { y: 'id' } }] }] }, 'the field "y" for relationship "r" in object type "A" does not exist'],
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: '[Int]' }], relationships: [{ name: 'r', type: 'array', remote_table: 'user', field_mapping: { x: 'id' } }] }] }, 'the type of the field "x" for relationship "r" in object type "A" is a list type'],
      [{ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Int' }], relationships: [{ name: 'r', type: 'object', remote_table: 'user', field_mapping: { x: 'nope' } }] }] }, 'the column "nope" of remote table "user" for relationship "r" of object type "A" does not exist'],
      [{ objects: [{ name: 'user_bool_exp', fields: [{ name: 'x', type: 'Int' }] }] }, 'the object type "user_bool_exp" has the name of a GraphQL type of the table "user"'],
    ];
    for (const [args, why] of cases) {
      await s.query({ type: 'clear_metadata', args: {} });
      await s.query({ type: 'track_table', args: { name: 'user' } });
      const r = await set(args);
      expect(r.status, JSON.stringify(args)).toBe(400);
      expect(r.body.code).toBe('invalid-configuration');
      expect(r.body.error).toBe(`Inconsistent object: validation for the given custom types failed because ${why}`);
      expect(r.body.internal[0]).toMatchObject({ type: 'custom_types', name: 'custom_types custom_types' });
    }
  });

  it('lists every reason when there are several', async () => {
    const r = await set({ objects: [{ name: 'A', fields: [{ name: 'x', type: 'Nope' }, { name: 'y', type: 'Nope2' }] }] });
    expect(r.body.error).toContain('for the following reasons:\n  • the type "Nope"');
  });

  it('refuse malformed definitions as parse errors', async () => {
    expect((await set({ objects: [{ name: 'bad name', fields: [{ name: 'x', type: 'Int' }] }] })).body.code).toBe('parse-failed');
    expect((await set({ objects: [{ name: 'A', fields: [{ name: 'x', type: '[Int' }] }] })).body.code).toBe('parse-failed');
    expect((await set({ objects: [{ name: 'A', fields: [] }] })).body.code).toBe('parse-failed');
  });

  it('may use PostgreSQL scalars', async () => {
    await s.query({ type: 'clear_metadata', args: {} });
    expect((await set({ objects: [{ name: 'A', fields: [{ name: 'id', type: 'uuid!' }, { name: 'at', type: 'timestamptz' }, { name: 'j', type: 'jsonb' }] }] })).status).toBe(200);
  });

  it('an action\'s types cannot be removed from under it', async () => {
    const r = await set({ scalars: [{ name: 'Anything' }] });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('cannot continue due to new inconsistent metadata');
  });
});

describe('action operations', () => {
  it('create_action refuses a duplicate, unknown types and a bad header', async () => {
    let r = await s.query(action('get_user', { type: 'query', output_type: 'UserId' }));
    expect(r.body).toMatchObject({ code: 'already-exists', error: 'action with name "get_user" already exists' });
    r = await s.query(action('a1', { output_type: 'Nope' }));
    expect(r.body).toMatchObject({ code: 'invalid-configuration', error: 'Inconsistent object: in action "a1"; the type: "Nope" is not an object type defined in custom types' });
    expect(r.body.internal[0].definition).toMatchObject({ name: 'a1', definition: { kind: 'synchronous', type: 'mutation', timeout: 30, headers: [], forward_client_headers: false } });
    r = await s.query(action('a2', { output_type: 'UserId', arguments: [{ name: 'x', type: 'UserId' }] }));
    expect(r.body.error).toBe('Inconsistent object: in action "a2"; the type: "UserId" is not defined in custom types or it is not a scalar/enum/input_object');
    r = await s.query(action('a3', { output_type: 'UserId', headers: [{ name: 'x', value_from_env: 'SVC_GRAPHQL_ADMIN_SECRET' }] }));
    // The legacy endpoint roots parse errors at the args, as Hasura's /v1/query does.
    expect(r.body).toMatchObject({ code: 'parse-failed', path: '$.definition.headers[0]' });
    r = await s.query({ type: 'create_action', args: { name: 'a4', definition: { handler: '{{NOT_SET}}/x', output_type: 'UserId' } } });
    expect(r.body.error).toBe('Inconsistent object: in action "a4"; Value for environment variables not found: NOT_SET');
    r = await s.query(action('a5', { output_type: 'UserId', type: 'query', kind: 'asynchronous' }));
    expect(r.body.code).toBe('parse-failed');
    r = await s.query({ type: 'create_action', args: { name: 'UserId', definition: { kind: 'asynchronous', handler: 'http://x', output_type: 'UserId' } } });
    expect(r.body.error).toBe('Inconsistent object: in action "UserId"; the name of the asynchronous action is the name of a custom type, which its result type would take');
    // In a bulk, the error points at the item that defines the object.
    r = await s.query({ type: 'bulk', args: [{ type: 'set_custom_types', args: TYPES }, action('a6', { output_type: 'Nope' })] });
    expect(r.body).toMatchObject({ code: 'invalid-configuration', path: '$.args[1].args' });
    r = await s.metadata({ type: 'bulk', args: [{ type: 'set_custom_types', args: TYPES }, action('a6', { output_type: 'Nope' })] });
    expect(r.body).toMatchObject({ code: 'invalid-configuration', path: '$.args[1].args' });
    // A table's root field: refused with Hasura's 500 and message (TestSchemaDuplication), and the
    // schema keeps serving.
    const before = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    r = await s.query(action('user', { type: 'query', output_type: 'UserId' }));
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({
      code: 'unexpected',
      path: '$.args',
      error: "Encountered conflicting definitions in the selection set for 'query_root' for field 'user' defined in [action user, table user in source default]. Fields must not be defined more than once across all sources.",
    });
    r = await s.query(action('insert_user', { output_type: 'UserId' }));
    expect(r.status).toBe(500);
    expect(r.body.error).toMatch(/^Encountered conflicting definitions in the selection set for 'mutation_root' for field 'insert_user' defined in \[action insert_user, table user in source default\]/);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual(before);
    expect((await s.query(action('user_by_pk', { output_type: 'UserId' }))).status).toBe(200);
    expect((await s.gql('{ user(order_by: {id: asc}, limit: 1) { name } }')).data).toEqual({ user: [{ name: 'Clarke' }] });
    // The other way round: tracking a table whose root field an action has is refused the same way.
    await s.runSql('create table if not exists thing (id int primary key)');
    expect((await s.query(action('delete_thing', { output_type: 'UserId' }))).status).toBe(200);
    r = await s.query({ type: 'track_table', args: { name: 'thing' } });
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({
      code: 'unexpected',
      path: '$.args',
      error: "Encountered conflicting definitions in the selection set for 'mutation_root' for field 'delete_thing' defined in [action delete_thing, table thing in source default]. Fields must not be defined more than once across all sources.",
    });
  });

  it('update_action and drop_action name a missing action', async () => {
    expect((await s.query({ type: 'update_action', args: { name: 'nope', definition: { handler: 'http://x', output_type: 'UserId' } } })).body).toMatchObject({ code: 'not-exists', error: 'action with name "nope" does not exist' });
    expect((await s.query({ type: 'drop_action', args: { name: 'nope' } })).body).toMatchObject({ code: 'not-exists' });
    expect((await s.metadata({ type: 'drop_action', args: { name: 'get_users' } })).status).toBe(200);
    expect((await s.gql('{ get_users { id } }')).errors[0].extensions.code).toBe('validation-failed');
  });

  it('permissions: created once, dropped once, recreated', async () => {
    const create = () => s.query({ type: 'create_action_permission', args: { action: 'get_user', role: 'editor' } });
    expect((await create()).status).toBe(200);
    expect((await create()).body).toMatchObject({ code: 'already-exists', error: 'permission for role "editor" is already defined on "get_user"' });
    const drop = () => s.metadata({ type: 'drop_action_permission', args: { action: 'get_user', role: 'editor' } });
    expect((await drop()).status).toBe(200);
    expect((await drop()).body).toMatchObject({ code: 'not-exists', error: 'permission for role: "editor" is not defined on "get_user"' });
    expect((await create()).status).toBe(200);
    expect((await s.query({ type: 'create_action_permission', args: { action: 'nope', role: 'x' } })).body.code).toBe('not-exists');
  });
});

describe('synchronous actions', () => {
  it('send Hasura\'s payload with the configured headers and project the answer', async () => {
    h.routes['/create_user'] = { json: { id: 1, note: 'hi', extra: 'ignored', address: { zip: '1' } } };
    const r = await s.gql(`mutation ($c: Color) { create_user(user: {name: "N", parent: {name: "P"}}, color: $c) { __typename id n: note address { zip city } user { name } } }`, { c: 'RED' });
    expect(r).toEqual({ data: { create_user: { __typename: 'UserId', id: 1, n: 'hi', address: { zip: '1' }, user: { name: 'Clarke' } } } });
    const call = h.calls[0]!;
    expect(call.body).toEqual({
      action: { name: 'create_user' },
      input: { user: { name: 'N', parent: { name: 'P' } }, color: 'RED' },
      session_variables: { 'x-svc-role': 'admin' },
      request_query: `mutation ($c: Color) { create_user(user: {name: "N", parent: {name: "P"}}, color: $c) { __typename id n: note address { zip city } user { name } } }`,
    });
    expect(call.headers['x-static']).toBe('v');
    expect(call.headers['x-secret']).toBe('s3cret');
    expect(call.headers['content-type']).toBe('application/json');
  });

  it('pass the handler\'s Set-Cookie on to the client', async () => {
    h.routes['/echo'] = (_c, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(200, { 'content-type': 'application/json', 'x-other': 'no' }).end('"ok"');
    };
    const r = await s.request('POST', '/v1/graphql', { query: '{ echo }' });
    expect(r.body).toEqual({ data: { echo: 'ok' } });
    expect(r.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(r.headers.get('x-other')).toBeNull();
  });

  it('forward the client\'s headers when asked, never the admin secret', async () => {
    h.routes['/echo'] = { json: 'ok' };
    await s.gql('{ echo(x: {a: 1}) }', {}, { 'x-custom': 'c', 'x-svc-admin-secret': 'nope' });
    expect(h.calls[0]!.headers['x-custom']).toBe('c');
    expect(h.calls[0]!.headers['x-svc-admin-secret']).toBeUndefined();
    expect(h.calls[0]!.body.input).toEqual({ x: { a: 1 } });
  });

  it('join relationships to tables, one statement per relationship for a list', async () => {
    h.routes['/get_users'] = { json: [{ id: 1 }, { id: 2 }, { id: 1 }, { id: 99 }] };
    // Count the statements the source runs for the request.
    const db = s.kernel.api.use(DatabaseToken) as DatabaseService;
    const exec = db.resolved(s.kernel.state().build).sources.get('default')!.connection!.executor as SqlExecutor;
    const query = exec.query.bind(exec);
    let statements = 0;
    exec.query = async <T>(sql: string, params?: unknown[], opts?: { prepare?: boolean }) => {
      statements++;
      return query<T>(sql, params, opts);
    };
    try {
      const batched = await s.gql('{ get_users { id user { name } articles(order_by: {id: asc}) { title } } }');
      expect(batched.data.get_users.map((u: { articles: unknown[] }) => u.articles.length)).toEqual([2, 1, 2, 0]);
      expect(statements).toBe(2);
    } finally {
      exec.query = query;
    }
    const r = await s.gql('{ get_users { id user { name } articles(order_by: {id: asc}) { title } articles_aggregate { aggregate { count } } } }');
    expect(r.data.get_users).toEqual([
      { id: 1, user: { name: 'Clarke' }, articles: [{ title: 'a1' }, { title: 'a2' }], articles_aggregate: { aggregate: { count: 2 } } },
      { id: 2, user: { name: 'Blake' }, articles: [{ title: 'b1' }], articles_aggregate: { aggregate: { count: 1 } } },
      { id: 1, user: { name: 'Clarke' }, articles: [{ title: 'a1' }, { title: 'a2' }], articles_aggregate: { aggregate: { count: 2 } } },
      { id: 99, user: null, articles: [], articles_aggregate: { aggregate: { count: 0 } } },
    ]);
    const limited = await s.gql('{ get_users { id articles(limit: 1, order_by: {id: desc}, where: {title: {_like: "%1"}}) { title } } }');
    expect(limited.data.get_users.map((u: { articles: unknown[] }) => u.articles)).toEqual([[{ title: 'a1' }], [{ title: 'b1' }], [{ title: 'a1' }], []]);
  });

  it('a role sees an action only with a permission, and joins through its own table permissions', async () => {
    h.routes['/get_user'] = { json: { id: 1 } };
    const u1 = { 'x-svc-role': 'user', 'x-svc-user-id': '1' };
    const u2 = { 'x-svc-role': 'user', 'x-svc-user-id': '2' };
    expect((await s.gql('{ get_user(id: 1) { id user { name } } }', {}, u1)).data).toEqual({ get_user: { id: 1, user: { name: 'Clarke' } } });
    // The user table's filter: user 2 may not see user 1's row.
    expect((await s.gql('{ get_user(id: 1) { id user { name } } }', {}, u2)).data).toEqual({ get_user: { id: 1, user: null } });
    expect(h.calls.at(-1)!.body.session_variables).toEqual({ 'x-svc-role': 'user', 'x-svc-user-id': '2' });
    // No permission for get_users, and article is not selectable for the role.
    expect((await s.gql('{ get_users { id } }', {}, u1)).errors[0].extensions.code).toBe('validation-failed');
    expect((await s.gql('{ get_user(id: 1) { articles { title } } }', {}, u1)).errors[0].extensions.code).toBe('validation-failed');
    expect((await s.gql('mutation { create_user(user: {name: "x"}) { id } }', {}, u1)).errors[0].extensions.code).toBe('validation-failed');
  });

  it('an inherited role sees an action any parent sees, through nested inherited roles, and only those', async () => {
    h.routes['/get_user'] = { json: { id: 1 } };
    h.routes['/create_user'] = { json: { id: 5 } };
    const r = await s.metadata({
      type: 'bulk',
      args: [
        // get_user's permission for `user` is the suite's own.
        { type: 'create_action_permission', args: { action: 'create_user', role: 'writer' } },
        { type: 'add_inherited_role', args: { role_name: 'reader_writer', role_set: ['user', 'writer'] } },
        { type: 'add_inherited_role', args: { role_name: 'only_user', role_set: ['user'] } },
        { type: 'add_inherited_role', args: { role_name: 'nested', role_set: ['only_user'] } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const as = (role: string) => ({ 'x-svc-role': role, 'x-svc-user-id': '1' });
    // From either parent; the relationship joins through the inherited role's table permissions.
    expect((await s.gql('{ get_user(id: 1) { id user { name } } }', {}, as('reader_writer'))).data).toEqual({ get_user: { id: 1, user: { name: 'Clarke' } } });
    expect((await s.gql('mutation { create_user(user: {name: "x"}) { id } }', {}, as('reader_writer'))).data).toEqual({ create_user: { id: 5 } });
    expect(h.calls.at(-1)!.body.session_variables['x-svc-role']).toBe('reader_writer');
    // Two levels down.
    expect((await s.gql('{ get_user(id: 1) { id } }', {}, as('nested'))).data).toEqual({ get_user: { id: 1 } });
    // Not what no parent sees (Hasura's message when the role has no mutation at all).
    expect((await s.gql('mutation { create_user(user: {name: "x"}) { id } }', {}, as('nested'))).errors[0]).toMatchObject({ message: 'no mutations exist', extensions: { code: 'validation-failed' } });
    expect((await s.gql('{ get_users { id } }', {}, as('reader_writer'))).errors[0].extensions.code).toBe('validation-failed');
    // A parent's permission dropped: the inherited roles lose the action with it.
    expect((await s.metadata({ type: 'drop_action_permission', args: { action: 'get_user', role: 'user' } })).status).toBe(200);
    expect((await s.gql('{ get_user(id: 1) { id } }', {}, as('nested'))).errors[0].extensions.code).toBe('validation-failed');
    // A permission of the inherited role's own stands alone.
    expect((await s.metadata({ type: 'create_action_permission', args: { action: 'get_user', role: 'nested' } })).status).toBe(200);
    expect((await s.gql('{ get_user(id: 1) { id } }', {}, as('nested'))).data).toEqual({ get_user: { id: 1 } });
  });

  it('refuse an asynchronous action whose output has relationships and nested objects, at its item of a bulk (Hasura\'s TestCreateActionNestedTypeWithRelation)', async () => {
    // The suite's types stay (its actions need them).
    const objects = [
      ...TYPES.objects,
      { name: 'UserIdObj', fields: [{ name: 'id', type: 'Int' }] },
      { name: 'UserIdObj_Fail', fields: [{ name: 'id', type: 'Int!' }, { name: 'someNestedObj', type: 'UserIdObj' }], relationships: [{ name: 'relationship_failure', type: 'object', remote_table: 'user', field_mapping: { id: 'id' } }] },
    ];
    const create = (kind: string) => ({ type: 'create_action', args: { name: 'action_create_fail', definition: { kind, arguments: [{ name: 'someInput', type: 'String!' }], output_type: 'UserIdObj_Fail', handler: 'http://some.random/endpoint' } } });
    const before = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const reason = 'Inconsistent object: in action "action_create_fail"; Async action relations cannot be used with object fields: "someNestedObj"';
    for (const send of [s.query, s.metadata]) {
      const r = await send({ type: 'bulk', args: [{ type: 'set_custom_types', args: { ...TYPES, objects } }, create('asynchronous')] });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'invalid-configuration', error: reason, path: '$.args[1].args' });
      expect(r.body.internal).toEqual([
        expect.objectContaining({
          type: 'action',
          name: 'action action_create_fail',
          reason,
          definition: expect.objectContaining({ name: 'action_create_fail', definition: expect.objectContaining({ kind: 'asynchronous', timeout: 30, headers: [], forward_client_headers: false }) }),
        }),
      ]);
    }
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual(before);
    // A synchronous action may: its relationships are joined wherever the object is.
    const ok = await s.query({ type: 'bulk', args: [{ type: 'set_custom_types', args: { ...TYPES, objects } }, create('synchronous')] });
    expect(ok.status, ok.text).toBe(200);
  });

  it('pass on a handler error (4xx) with its code and extensions', async () => {
    h.routes['/get_user'] = { status: 400, json: { message: 'bad id', code: 'invalid-id' } };
    expect((await s.gql('{ get_user(id: 1) { id } }')).errors).toEqual([{ message: 'bad id', extensions: { path: '$', code: 'invalid-id' } }]);
    h.routes['/get_user'] = { status: 422, json: { message: 'bad id', extensions: { code: 'x', detail: 42 } } };
    expect((await s.gql('{ get_user(id: 1) { id } }')).errors).toEqual([{ message: 'bad id', extensions: { code: 'x', detail: 42 } }]);
    h.routes['/get_user'] = { status: 400, json: { nomessage: true } };
    expect((await s.gql('{ get_user(id: 1) { id } }')).errors[0].message).toBe('the action webhook answered an error without a "message"');
  });

  it('refuse answers that do not fit the output type, with details for admin only', async () => {
    const expectError = async (answer: { status?: number; json?: unknown; text?: string }, message: string, query = '{ get_user(id: 1) { id note address { zip } } }') => {
      h.routes['/get_user'] = answer;
      const r = await s.gql(query);
      expect(r.data).toBeUndefined();
      expect(r.errors[0].message).toBe(message);
      expect(r.errors[0].extensions.code).toBe('unexpected');
      return r.errors[0].extensions.internal;
    };
    const internal = await expectError({ json: { note: 'x' } }, 'field "id" expected in webhook response, but not found');
    expect(internal).toMatchObject({ error: 'unexpected response', request: { url: '{{HANDLER}}/get_user', headers: [], transformed_request: null }, response: { status: 200, body: { note: 'x' } } });
    await expectError({ json: { id: null } }, 'expecting not null value for field "id"');
    await expectError({ json: { id: 'one' } }, 'got scalar String for the action webhook response, expecting Int');
    await expectError({ json: [{ id: 1 }] }, 'got array for the action webhook response, expecting UserId');
    await expectError({ json: { id: 1, address: { city: 'x' } } }, 'field "zip" expected in webhook response, but not found');
    await expectError({ json: { id: 1, color: 'BLUE' } }, 'got scalar String for the action webhook response, expecting Color');
    await expectError({ text: '{"id": 1' }, 'not a valid json response from webhook');
    await expectError({ status: 204, text: '' }, 'not a valid json response from webhook');
    await expectError({ status: 500, json: { id: 1 } }, 'expecting 2xx or 4xx status code, but found 500');
    h.routes['/get_users'] = { json: null };
    expect((await s.gql('{ get_users { id } }')).errors[0].message).toBe('got null for the action webhook response');
    h.routes['/get_users'] = { json: { id: 1 } };
    expect((await s.gql('{ get_users { id } }')).errors[0].message).toBe('expecting array for the action webhook response');
    // A role gets the message without the details.
    h.routes['/get_user'] = { json: { id: null } };
    const r = await s.gql('{ get_user(id: 1) { id } }', {}, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
    expect(r.errors[0].extensions.internal).toBeUndefined();
  });

  it('refuse an answer nested without end in a recursive type, without a 500', async () => {
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'set_custom_types', args: { ...TYPES, objects: [...TYPES.objects, { name: 'Tree', fields: [{ name: 'id', type: 'Int' }, { name: 'child', type: 'Tree' }] }] } },
        action('tree', { type: 'query', output_type: 'Tree' }),
      ],
    });
    expect(r.status, r.text).toBe(200);
    h.routes['/tree'] = { text: '{"child":'.repeat(100_000) + '{}' + '}'.repeat(100_000) };
    const deep = await s.request('POST', '/v1/graphql', { query: '{ tree { id child { id } } }' });
    expect(deep.status, deep.text.slice(0, 300) + JSON.stringify(s.logs.filter((l) => l.level === 'error').slice(-2)).slice(0, 800)).toBe(200);
    expect(deep.body.errors[0].message).toBe('the action webhook response is nested deeper than 500 levels');
    h.routes['/tree'] = { json: { id: 1, child: { id: 2, child: { id: 3 } } } };
    expect((await s.gql('{ tree { id child { id child { id child { id } } } } }')).data).toEqual({ tree: { id: 1, child: { id: 2, child: { id: 3 } } } });
  });

  it('a nullable output may be null', async () => {
    h.routes['/get_user'] = { json: null };
    expect((await s.gql('{ get_user(id: 1) { id } }')).data).toEqual({ get_user: null });
  });

  it('cut a handler at the timeout, one that dies mid-answer and one that answers too much', async () => {
    h.routes['/echo'] = { delayMs: 2500, json: 'late' };
    let t = Date.now();
    let r = await s.gql('{ echo }');
    expect(Date.now() - t).toBeLessThan(2400);
    expect(r.errors[0].message).toBe('http exception when calling webhook');
    expect(r.errors[0].extensions.internal.error).toMatch(/within 1 s/);
    h.routes['/echo'] = (_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":');
      res.destroy();
    };
    r = await s.gql('{ echo }');
    expect(r.errors[0].extensions.code).toBe('unexpected');
    // 17 MiB may take more than the 1 s timeout to send on a loaded machine: give it time, so
    // that the size is what stops it.
    const longer = await s.query({ type: 'update_action', args: { name: 'echo', definition: { type: 'query', handler: '{{HANDLER}}/echo', arguments: [{ name: 'x', type: 'Anything' }], output_type: 'Anything', timeout: 30 } } });
    expect(longer.status, longer.text).toBe(200);
    h.routes['/echo'] = (_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`"${'x'.repeat(17 * 1024 * 1024)}"`);
    };
    t = Date.now();
    r = await s.gql('{ echo }');
    expect(r.errors[0].message).toMatch(/larger than/);
    // Unreachable handler.
    await s.query({ type: 'update_action', args: { name: 'echo', definition: { type: 'query', handler: 'http://127.0.0.1:9/x', output_type: 'Anything' } } });
    r = await s.gql('{ echo }');
    expect(r.errors[0].message).toBe('http exception when calling webhook');
  });

  it('apply request and response transforms (Kriti)', async () => {
    const u = await s.query({
      type: 'update_action',
      args: {
        name: 'get_users',
        definition: {
          type: 'query',
          handler: '{{HANDLER}}/get_users',
          output_type: '[UserId!]!',
          request_transform: { version: 2, template_engine: 'Kriti', body: { action: 'transform', template: '{"who": {{ $body.session_variables["x-svc-role"] }}, "n": "#{{ $body.action.name }}"}' } },
          response_transform: { version: 2, template_engine: 'Kriti', body: { action: 'transform', template: '{{ range i, x := $body.ids }} {{ if i > 0 }} {"id": {{ x }}} {{ else }} {"id": 100, "note": "first"} {{ end }} {{ end }}' } },
        },
      },
    });
    expect(u.status, u.text).toBe(200);
    h.routes['/get_users'] = { json: { ids: [5, 6] } };
    expect((await s.gql('{ get_users { id note } }')).data.get_users).toEqual([{ id: 100, note: 'first' }, { id: 6, note: null }]);
    expect(h.calls.at(-1)!.body).toEqual({ who: 'admin', n: '#get_users' });
    // Method, URL, query parameters and headers.
    const m = await s.query({
      type: 'update_action',
      args: {
        name: 'create_user',
        definition: {
          handler: '{{HANDLER}}/create_user',
          arguments: [{ name: 'user', type: 'UserInput!' }],
          output_type: 'UserId!',
          headers: [{ name: 'X-Static', value: 'v' }, { name: 'X-Gone', value: 'g' }],
          request_transform: {
            version: 2,
            template_engine: 'Kriti',
            method: 'PUT',
            url: '{{$base_url}}/moved',
            query_params: { who: '{{ $body.input.user.name }}', fixed: 'x y' },
            request_headers: { add_headers: { 'X-Added': 'role-{{ $session_variables["x-svc-role"] }}', 'X-Static': 'replaced' }, remove_headers: ['X-Gone'] },
          },
        },
      },
    });
    expect(m.status, m.text).toBe(200);
    h.routes['/create_user/moved'] = { json: { id: 3 } };
    expect((await s.gql('mutation { create_user(user: {name: "Ann"}) { id } }')).data).toEqual({ create_user: { id: 3 } });
    const call = h.calls.at(-1)!;
    expect(call.method).toBe('PUT');
    expect(call.path).toBe('/create_user/moved?who=Ann&fixed=x+y');
    expect(call.headers['x-added']).toBe('role-admin');
    expect(call.headers['x-static']).toBe('replaced');
    expect(call.headers['x-gone']).toBeUndefined();
    expect(call.body.input).toEqual({ user: { name: 'Ann' } });
    const bad = await s.query({ type: 'update_action', args: { name: 'get_users', definition: { type: 'query', handler: '{{HANDLER}}/x', output_type: '[UserId!]!', response_transform: { version: 2, body: { action: 'transform', template: '{"a": {{ range }}' } } } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^Inconsistent object: in action "get_users"; response_transform: /);
  });

  it('a transform that fails on a call is a GraphQL error (the list of errors for admins), never a 500', async () => {
    const u = await s.query({
      type: 'update_action',
      args: {
        name: 'get_users',
        definition: {
          type: 'query',
          handler: '{{HANDLER}}/get_users',
          output_type: '[UserId!]!',
          // `head` of an empty string fails when applied, not when parsed.
          request_transform: { version: 2, url: '{{$base_url}}/{{ head($body.input.nothing ?? "") }}' },
        },
      },
    });
    expect(u.status, u.text).toBe(200);
    const calls = h.calls.length;
    let r = await s.gql('{ get_users { id } }');
    expect(r.errors[0]).toMatchObject({ message: 'request transform failed: url: head: empty string', extensions: { code: 'unexpected', internal: { transform_errors: [{ error_code: 'Function Error', message: 'head: empty string' }] } } });
    expect(h.calls.length).toBe(calls);
    expect((await s.metadata({ type: 'create_action_permission', args: { action: 'get_users', role: 'user' } })).status).toBe(200);
    r = await s.gql('{ get_users { id } }', {}, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
    expect(r.errors[0].message).toBe('request transform failed: url: head: empty string');
    expect(r.errors[0].extensions.internal).toBeUndefined();
    // A response transform that fails: the answer is refused with the details of the exchange.
    await s.query({ type: 'update_action', args: { name: 'get_users', definition: { type: 'query', handler: '{{HANDLER}}/get_users', output_type: '[UserId!]!', response_transform: { version: 2, body: { action: 'transform', template: '{{ toUpper($body) }}' } } } } });
    h.routes['/get_users'] = { json: [{ id: 1 }] };
    r = await s.gql('{ get_users { id } }');
    expect(r.errors[0]).toMatchObject({ message: 'response transform failed: body: toUpper: unexpected array', extensions: { code: 'unexpected', internal: { response: { status: 200 } } } });
  });
});
