/**
 * Remote schemas against real GraphQL servers on loopback (node:http + graphql-js, started
 * here): the operations and their errors, stitching with customization both ways, headers and
 * session variables, remote errors (data null), timeouts, garbage answers, a remote that is down,
 * and role permissions with presets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql } from 'graphql';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

const SDL = `
  interface Character { id: ID! name: String }
  type Droid implements Character { id: ID! name: String primaryFunction: String }
  type Human implements Character { id: ID! name: String homePlanet: String }
  union Search = Droid | Human
  enum Episode { NEWHOPE EMPIRE }
  scalar Json
  input HeroFilter { episode: Episode, limit: Int }
  type Query {
    hero(id: ID!): Character
    search(text: String): [Search]
    echoHeaders: Json
    whoami(user_id: Int): Int
    filtered(filter: HeroFilter): String
    slow: String
    boom: String
  }
  type Mutation { rename(id: ID!, name: String!): Character }
`;

interface Seen {
  bodies: any[];
  headers: IncomingMessage['headers'][];
}

const characters: Record<string, any> = {
  '1': { __typename: 'Droid', id: '1', name: 'R2-D2', primaryFunction: 'Astromech' },
  '2': { __typename: 'Human', id: '2', name: 'Luke', homePlanet: 'Tatooine' },
};

async function graphqlServer(seen: Seen, answer?: (body: any) => string | undefined): Promise<{ server: Server; url: string }> {
  const schema = buildSchema(SDL);
  const root = {
    hero: ({ id }: { id: string }) => characters[id] ?? null,
    search: () => Object.values(characters),
    whoami: ({ user_id }: { user_id?: number }) => user_id ?? -1,
    filtered: ({ filter }: { filter?: unknown }) => JSON.stringify(filter ?? null),
    slow: () => new Promise((r) => setTimeout(() => r('late'), 3000)),
    boom: () => {
      throw new Error('the remote failed');
    },
    rename: ({ id, name }: { id: string; name: string }) => ({ ...characters[id], name }),
  };
  (schema.getType('Character') as any).resolveType = (x: any) => x.__typename;
  (schema.getType('Search') as any).resolveType = (x: any) => x.__typename;
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const body = JSON.parse(text);
    seen.bodies.push(body);
    seen.headers.push(req.headers);
    const canned = answer?.(body);
    if (canned !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(canned);
      return;
    }
    const result = await graphql({ schema, source: body.query, variableValues: body.variables, operationName: body.operationName, rootValue: { ...root, echoHeaders: () => req.headers } });
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['sid=abc', 'theme=dark'] }).end(JSON.stringify(result));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

const seen: Seen = { bodies: [], headers: [] };
let remote: { server: Server; url: string };
let garbage: { server: Server; url: string };
let s: TestServer;
const ADMIN = { 'x-svc-admin-secret': 'secret' };

beforeAll(async () => {
  remote = await graphqlServer(seen);
  garbage = await graphqlServer({ bodies: [], headers: [] }, (b) => (b.operationName === 'IntrospectionQuery' ? undefined : b.query.includes('hero') ? 'not json at all' : '{"data": 5}'));
  s = await startServer({ config: { adminSecret: 'secret', enableRemoteSchemaPermissions: true }, env: { REMOTE_URL: remote.url, REMOTE_TOKEN: 'tok' } });
}, 60_000);

afterAll(async () => {
  await s?.stop();
  remote?.server.close();
  garbage?.server.close();
});

const meta = (body: unknown) => s.metadata(body, ADMIN);
const gql = (query: string, variables?: Record<string, unknown>, headers: Record<string, string> = ADMIN) => s.gql(query, variables, headers);

describe('remote schema operations', () => {
  it('adds, exports, updates, reloads, introspects and removes a remote schema', async () => {
    expect((await meta({ type: 'add_remote_schema', args: { name: 'sw', definition: { url: '{{REMOTE_URL}}', headers: [{ name: 'x-token', value_from_env: 'REMOTE_TOKEN' }], forward_client_headers: true, timeout_seconds: 2 } } })).body).toEqual({ message: 'success' });
    const dup = await meta({ type: 'add_remote_schema', args: { name: 'sw', definition: { url: '{{REMOTE_URL}}' } } });
    expect([dup.status, dup.body.code]).toEqual([400, 'already-exists']);
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    expect(exported.remote_schemas).toEqual([{ name: 'sw', definition: { url: '{{REMOTE_URL}}', headers: [{ name: 'x-token', value_from_env: 'REMOTE_TOKEN' }], forward_client_headers: true, timeout_seconds: 2 } }]);
    const intro = await meta({ type: 'introspect_remote_schema', args: { name: 'sw' } });
    expect(intro.body.data.__schema.queryType.name).toBe('Query');
    expect((await meta({ type: 'reload_remote_schema', args: { name: 'sw' } })).body).toEqual({ message: 'success' });
    const missing = await meta({ type: 'remove_remote_schema', args: { name: 'nope' } });
    expect([missing.status, missing.body.code]).toEqual([400, 'not-exists']);
    const both = await meta({ type: 'add_remote_schema', args: { name: 'x', definition: { url: 'http://a', url_from_env: 'B' } } });
    expect([both.status, both.body.code]).toEqual([400, 'invalid-params']);
  });

  it('refuses a remote that cannot be reached, and one whose root fields collide', async () => {
    const down = await meta({ type: 'add_remote_schema', args: { name: 'down', definition: { url: 'http://127.0.0.1:9/graphql' } } });
    expect([down.status, down.body.code]).toEqual([400, 'remote-schema-error']);
    expect(down.body.internal).toMatchObject({ type: 'http_exception', message: 'Connection failure' });
    const clash = await meta({ type: 'add_remote_schema', args: { name: 'sw2', definition: { url: '{{REMOTE_URL}}' } } });
    // As Hasura answers: the generic error, the conflict in `internal`.
    expect([clash.status, clash.body.code, clash.body.error]).toEqual([400, 'unexpected', 'cannot continue due to new inconsistent metadata']);
    expect(clash.body.internal[0].reason).toMatch(/conflicting definitions .* field 'hero' defined in \[remote schema sw, remote schema sw2\]/);
  });

  it('serves the remote root fields: fragments, unions, variables, mutations, operation name', async () => {
    const r = await gql(`query Q($id: ID!) { hero(id: $id) { __typename id ... on Droid { primaryFunction } } search { ... on Human { homePlanet } } }`, { id: '1' });
    expect(r).toEqual({ data: { hero: { __typename: 'Droid', id: '1', primaryFunction: 'Astromech' }, search: [{}, { homePlanet: 'Tatooine' }] } });
    expect(seen.bodies.at(-1).operationName).toBe('Q');
    const m = await gql(`mutation { rename(id: "2", name: "Leia") { name } }`);
    expect(m).toEqual({ data: { rename: { name: 'Leia' } } });
  });

  it("passes a remote's scalar literals on unchecked, on one line as Hasura prints them", async () => {
    const r = await gql(`{ whoami(user_id: "abc") }`);
    // The remote's own error, with its location in the one-line document it got.
    expect(seen.bodies.at(-1).query).toBe('query  { whoami(user_id: "abc") }');
    expect(r.data).toBeNull();
    expect(r.errors).toEqual([{ message: expect.stringMatching(/Int cannot represent/), locations: [{ line: 1, column: 26 }] }]);
    // Input objects are still checked by the engine (their fields), and null for a non-null.
    const badField = await gql(`{ filtered(filter: {nope: 1}) }`);
    expect(badField.errors[0]).toEqual({ message: "field 'nope' not found in type: 'HeroFilter'", extensions: { code: 'validation-failed', path: '$.selectionSet.filtered.args.filter.nope' } });
    const nul = await gql(`{ hero(id: null) { id } }`);
    expect(nul.errors[0].extensions.code).toBe('validation-failed');
  });

  it('leaves out inline fragments of unknown types, and checks a variable of an unknown type where it is used', async () => {
    const r = await gql(`{ hero(id: "1") { id ... on Nope { name } ... on Droid { primaryFunction } } }`);
    expect(r).toEqual({ data: { hero: { id: '1', primaryFunction: 'Astromech' } } });
    expect(seen.bodies.at(-1).query).not.toMatch(/Nope/);
    const v = await gql(`query Q($f: Nope) { filtered(filter: $f) }`, { f: { limit: 1 } });
    expect(v).toEqual({ errors: [{ message: "variable 'f' is declared as 'Nope', but used where 'HeroFilter' is expected", extensions: { code: 'validation-failed', path: '$.selectionSet.filtered.args.filter' } }] });
    const unused = await gql(`query Q($f: Nope) { whoami }`);
    expect(unused.errors[0].message).toMatch(/Unknown type "Nope"/);
  });

  it("refuses a subscription to a remote's field as Hasura does, before the HTTP refusal", async () => {
    const before = seen.bodies.length;
    const r = await gql(`subscription { hero(id: "1") { id } }`);
    expect(r).toEqual({ errors: [{ extensions: { code: 'not-supported', path: '$' }, message: 'subscription to remote server is not supported' }] });
    const viaFragment = await gql(`subscription S { ...F } fragment F on subscription_root { hero(id: "1") { id } }`);
    expect(viaFragment.errors[0].extensions.code).toBe('not-supported');
    expect(seen.bodies.length).toBe(before);
    // Only the operation the request runs is judged: a query beside such a subscription runs.
    const both = await s.request('POST', '/v1/graphql', { query: `query Q { whoami } subscription S { hero(id: "1") { id } }`, operationName: 'Q' }, ADMIN);
    expect(both.body).toEqual({ data: { whoami: -1 } });
    const chosen = await s.request('POST', '/v1/graphql', { query: `query Q { whoami } subscription S { hero(id: "1") { id } }`, operationName: 'S' }, ADMIN);
    expect(chosen.body.errors[0].extensions.code).toBe('not-supported');
    // A subscription without remote fields is refused over HTTP as before.
    const other = await gql(`subscription { nope }`);
    expect(other.errors[0].extensions.code).toBe('unexpected-payload');
  });

  it('sends the configured headers, the session variables and the client headers', async () => {
    const r = await gql(`{ echoHeaders }`, undefined, { ...ADMIN, 'x-svc-role': 'admin', 'x-svc-user-id': '7', 'x-custom': 'c', 'x-token': 'client' });
    const h = r.data.echoHeaders;
    expect(h['x-token']).toBe('tok');
    expect(h['x-svc-user-id']).toBe('7');
    expect(h['x-custom']).toBe('c');
    expect(h['x-svc-admin-secret']).toBeUndefined();
  });

  it("passes the remote's Set-Cookie headers on to the client", async () => {
    const r = await s.request('POST', '/v1/graphql', { query: '{ whoami }' }, ADMIN);
    expect(r.body).toEqual({ data: { whoami: -1 } });
    expect(r.headers.getSetCookie()).toEqual(['sid=abc', 'theme=dark']);
  });

  it('answers the remote errors with data null, and a timeout as an error', async () => {
    const r = await gql(`{ boom }`);
    expect(r.data).toBeNull();
    expect(r.errors[0].message).toBe('the remote failed');
    const t = await gql(`{ slow }`);
    expect(t.errors[0].message).toMatch(/HTTP exception occurred while sending the request to "\{\{REMOTE_URL\}\}"/);
    expect(t.errors[0].extensions.internal).toMatchObject({ message: 'Response timeout' });
  }, 15_000);

  it('customizes type and field names both ways, under a namespace', async () => {
    await meta({ type: 'remove_remote_schema', args: { name: 'sw' } });
    const add = await meta({
      type: 'add_remote_schema',
      args: { name: 'sw', definition: { url: '{{REMOTE_URL}}', customization: { root_fields_namespace: 'starwars', type_names: { prefix: 'SW_', mapping: { Droid: 'Robot' } }, field_names: [{ parent_type: 'Query', prefix: 'q_' }, { parent_type: 'Character', mapping: { name: 'title' } }, { parent_type: 'Droid', mapping: { name: 'title' } }, { parent_type: 'Human', mapping: { name: 'title' } }] } } },
    });
    expect(add.body).toEqual({ message: 'success' });
    const r = await gql(`{ starwars { __typename q_hero(id: "1") { __typename title ... on Robot { primaryFunction } } } }`);
    expect(r).toEqual({ data: { starwars: { __typename: 'starwarsSW_Query', q_hero: { __typename: 'Robot', title: 'R2-D2', primaryFunction: 'Astromech' } } } });
    expect(seen.bodies.at(-1).query).toContain('hero(id: "1")');
    expect(seen.bodies.at(-1).query).toContain('... on Droid');
    const bad = await meta({ type: 'update_remote_schema', args: { name: 'sw', definition: { url: '{{REMOTE_URL}}', customization: { type_names: { mapping: { Droid: 'X', Human: 'X' } } } } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/not distinct/);
  });

  it('answers garbage from a remote as an error, never a 500', async () => {
    process.env.GARBAGE_URL = garbage.url;
    expect((await meta({ type: 'add_remote_schema', args: { name: 'garbage', definition: { url: garbage.url, customization: { root_fields_namespace: 'g' } } } })).body).toEqual({ message: 'success' });
    const r = await s.request('POST', '/v1/graphql', { query: '{ g { hero(id: "1") { id } } }' }, ADMIN);
    expect(r.status).toBe(200);
    expect(r.body.errors[0].extensions.code).toBe('remote-schema-error');
    const r2 = await s.request('POST', '/v1/graphql', { query: '{ g { slow } }' }, ADMIN);
    expect(r2.body.errors[0].extensions.code).toBe('remote-schema-error');
    await meta({ type: 'remove_remote_schema', args: { name: 'garbage' } });
  });
});

describe('remote schema permissions', () => {
  it('gives a role the subset its SDL names, with static and session presets', async () => {
    await meta({ type: 'remove_remote_schema', args: { name: 'sw' } });
    await meta({ type: 'add_remote_schema', args: { name: 'sw', definition: { url: '{{REMOTE_URL}}' } } });
    const bad = await meta({ type: 'add_remote_schema_permissions', args: { remote_schema: 'sw', role: 'user', definition: { schema: 'type Query { nothere: String }' } } });
    expect([bad.status, bad.body.code]).toEqual([400, 'validation-failed']);
    const ok = await meta({
      type: 'add_remote_schema_permissions',
      args: {
        remote_schema: 'sw',
        role: 'user',
        definition: {
          schema: `enum Episode { NEWHOPE EMPIRE }
            input HeroFilter { episode: Episode, limit: Int @preset(value: 3) }
            type Query { whoami(user_id: Int @preset(value: "x-svc-user-id")): Int filtered(filter: HeroFilter): String }`,
        },
      },
    });
    expect(ok.body).toEqual({ message: 'success' });
    const user = { ...ADMIN, 'x-svc-role': 'user', 'x-svc-user-id': '42' };
    expect(await gql(`{ whoami }`, undefined, user)).toEqual({ data: { whoami: 42 } });
    expect(await gql(`{ filtered(filter: {episode: EMPIRE}) }`, undefined, user)).toEqual({ data: { filtered: JSON.stringify({ episode: 'EMPIRE', limit: 3 }) } });
    expect(await gql(`query($f: HeroFilter) { filtered(filter: $f) }`, { f: { episode: 'NEWHOPE' } }, user)).toEqual({ data: { filtered: JSON.stringify({ episode: 'NEWHOPE', limit: 3 }) } });
    const hidden = await gql(`{ hero(id: "1") { id } }`, undefined, user);
    expect(hidden.errors[0].extensions.code).toBe('validation-failed');
    const preset = await gql(`{ whoami(user_id: 1) }`, undefined, user);
    expect(preset.errors[0].message).toBe("'whoami' has no argument named 'user_id'");
    const noVar = await gql(`{ whoami }`, undefined, { ...ADMIN, 'x-svc-role': 'user' });
    expect(noVar.errors[0]).toMatchObject({ extensions: { code: 'not-found' } });
    const wrong = await gql(`{ whoami }`, undefined, { ...ADMIN, 'x-svc-role': 'user', 'x-svc-user-id': 'abc' });
    expect(wrong.errors[0].message).toBe('"abc" cannot be coerced into an Int value');
    // Another role without a permission does not see the remote.
    const other = await gql(`{ whoami }`, undefined, { ...ADMIN, 'x-svc-role': 'other' });
    expect(other.errors[0].extensions.code).toBe('validation-failed');
    // Export, clear and replace keep the remote and its permission.
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    expect(exported.remote_schemas[0].permissions[0].role).toBe('user');
    expect((await meta({ type: 'clear_metadata', args: {} })).status).toBe(200);
    expect((await meta({ type: 'export_metadata', args: {} })).body.remote_schemas).toBeUndefined();
    expect((await meta({ type: 'replace_metadata', args: exported })).status).toBe(200);
    expect(await gql(`{ whoami }`, undefined, user)).toEqual({ data: { whoami: 42 } });
    expect((await meta({ type: 'drop_remote_schema_permissions', args: { remote_schema: 'sw', role: 'user' } })).body).toEqual({ message: 'success' });
    const gone = await gql(`{ whoami }`, undefined, user);
    expect(gone.errors[0].extensions.code).toBe('validation-failed');
  });
});

describe('a remote that is down at reload', () => {
  it('is an inconsistent remote_schema object; the rest keeps serving', async () => {
    const dead = await graphqlServer({ bodies: [], headers: [] });
    await meta({ type: 'add_remote_schema', args: { name: 'dying', definition: { url: dead.url, customization: { root_fields_namespace: 'dying' } } } });
    await new Promise<void>((r) => dead.server.close(() => r()));
    dead.server.closeAllConnections?.();
    const r = await meta({ type: 'reload_metadata', args: { reload_remote_schemas: true } });
    expect(r.status).toBe(200);
    expect(r.body.is_consistent).toBe(false);
    expect(r.body.inconsistent_objects.map((o: any) => o.type)).toContain('remote_schema');
    expect(await gql(`{ whoami }`)).toEqual({ data: { whoami: -1 } });
    await meta({ type: 'remove_remote_schema', args: { name: 'dying' } });
  });
});

describe('a table whose root field collides with a remote', () => {
  it('is refused with remote-schema-conflicts, and nothing changes', async () => {
    await s.runSql('create table whoami (id int primary key)');
    const r = await meta({ type: 'pg_track_table', args: { source: 'default', table: 'whoami' } });
    expect([r.status, r.body.code]).toEqual([400, 'remote-schema-conflicts']);
    expect(r.body.error).toMatch(/field 'whoami' defined in \[remote schema sw, a source\]/);
    expect(await gql(`{ whoami }`)).toEqual({ data: { whoami: -1 } });
  });

  it("is refused when a table's type would have a remote type's name", async () => {
    await s.runSql('create table "Human" (id int primary key)');
    const r = await meta({ type: 'pg_track_table', args: { source: 'default', table: 'Human' } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.internal)).toMatch(/the GraphQL type \\"Human\\" of remote schema \\"sw\\" conflicts with the types of table \\"Human\\"/);
    expect(await gql(`{ hero(id: "2") { ... on Human { homePlanet } } }`)).toEqual({ data: { hero: { homePlanet: 'Tatooine' } } });
  });
});

describe('bounds on what a remote answers', () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startServer({ config: { graphqlMaxResponseSize: 300 } });
  }, 60_000);
  afterAll(async () => {
    await small?.stop();
  });
  it('refuses an answer past the response size limit, as an error of the request', async () => {
    expect((await small.metadata({ type: 'add_remote_schema', args: { name: 'sw', definition: { url: remote.url, forward_client_headers: true } } })).body).toEqual({ message: 'success' });
    const big = await small.request('POST', '/v1/graphql', { query: '{ echoHeaders }' }, { 'x-padding': 'x'.repeat(1000) });
    expect(big.status).toBe(200);
    expect(big.body.errors[0]).toMatchObject({ extensions: { code: 'remote-schema-error' } });
    expect(big.body.errors[0].message).toMatch(/larger than 300 bytes/);
    expect((await small.gql('{ whoami }')).data).toEqual({ whoami: -1 });
  });
});

describe('SVC_GRAPHQL_REMOTE_SCHEMA_PRIORITIZE_DATA', () => {
  let both: { server: Server; url: string };
  let on: TestServer;
  let off: TestServer;
  beforeAll(async () => {
    both = await graphqlServer({ bodies: [], headers: [] }, (b) => (b.operationName === 'IntrospectionQuery' ? undefined : JSON.stringify({ data: { whoami: 5 }, errors: [{ message: 'partial', path: ['whoami'] }] })));
    on = await startServer({ config: { remoteSchemaPrioritizeData: true } });
    off = await startServer();
  }, 60_000);
  afterAll(async () => {
    await on?.stop();
    await off?.stop();
    both?.server.close();
  });
  it('answers data that comes with errors when set, the errors with data null when not', async () => {
    for (const x of [on, off]) expect((await x.metadata({ type: 'add_remote_schema', args: { name: 'both', definition: { url: both.url } } })).body).toEqual({ message: 'success' });
    expect(await on.gql('{ whoami }')).toEqual({ data: { whoami: 5 } });
    expect(await off.gql('{ whoami }')).toEqual({ data: null, errors: [{ message: 'partial', path: ['whoami'] }] });
  });
});

describe('a remote that is down at boot', () => {
  it('boots: the remote is an inconsistent remote_schema object, the rest serves', async () => {
    const dying = await graphqlServer({ bodies: [], headers: [] });
    const db = await createDatabase();
    const first = await startServer({ database: db });
    expect((await first.metadata({ type: 'add_remote_schema', args: { name: 'dying', definition: { url: dying.url } } })).body).toEqual({ message: 'success' });
    await first.stop();
    await new Promise<void>((r) => dying.server.close(() => r()));
    dying.server.closeAllConnections?.();
    const second = await startServer({ database: db });
    try {
      const inc = await second.metadata({ type: 'get_inconsistent_metadata', args: {} });
      expect(inc.body.is_consistent).toBe(false);
      expect(inc.body.inconsistent_objects[0]).toMatchObject({ type: 'remote_schema', name: 'remote_schema dying' });
      expect(inc.body.inconsistent_objects[0].reason).toMatch(/Connection failure|HTTP exception/);
      expect((await second.gql('{ __typename }')).data).toEqual({ __typename: 'query_root' });
    } finally {
      await second.stop();
    }
  }, 60_000);
});

describe('update_remote_schema with permissions set', () => {
  let floaty: Server;
  let floatyUrl = '';
  let p: TestServer;
  beforeAll(async () => {
    const schema = buildSchema('type Query { whoami(user_id: Float): Int }');
    floaty = createServer(async (req, res) => {
      let text = '';
      for await (const c of req) text += c;
      const body = JSON.parse(text);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await graphql({ schema, source: body.query, variableValues: body.variables })));
    });
    await new Promise<void>((r) => floaty.listen(0, '127.0.0.1', r));
    floatyUrl = `http://127.0.0.1:${(floaty.address() as AddressInfo).port}/graphql`;
    p = await startServer({ config: { enableRemoteSchemaPermissions: true } });
  }, 60_000);
  afterAll(async () => {
    await p?.stop();
    floaty?.close();
  });
  // Hasura's test_update_remote_schema_details_with_permissions_set moves the remote to a second
  // server whose schema still fits the permission (secondary_remote_schema_perms.js: user ids of
  // type Int); the one whose ids are Float (..._error.js) is refused.
  it('moves the remote to a server that still fits the permission; refuses one that does not', async () => {
    expect((await p.metadata({ type: 'add_remote_schema', args: { name: 'sw', definition: { url: remote.url } } })).status).toBe(200);
    expect((await p.metadata({ type: 'add_remote_schema_permissions', args: { remote_schema: 'sw', role: 'user', definition: { schema: 'type Query { whoami(user_id: Int): Int }' } } })).body).toEqual({ message: 'success' });
    const moved = await p.metadata({ type: 'update_remote_schema', args: { name: 'sw', comment: 'moved', definition: { url: `${remote.url}?second`, forward_client_headers: true, timeout_seconds: 120 } } });
    expect(moved.body).toEqual({ message: 'success' });
    const exported = (await p.metadata({ type: 'export_metadata', args: {} })).body.remote_schemas[0];
    expect([exported.definition.url, exported.comment, exported.definition.timeout_seconds]).toEqual([`${remote.url}?second`, 'moved', 120]);
    expect(await p.gql('{ whoami(user_id: 3) }', undefined, { 'x-svc-role': 'user' })).toEqual({ data: { whoami: 3 } });
    const refused = await p.metadata({ type: 'update_remote_schema', args: { name: 'sw', definition: { url: floatyUrl } } });
    expect([refused.status, refused.body.error]).toEqual([400, 'cannot continue due to new inconsistent metadata']);
    expect(refused.body.internal[0].type).toBe('remote_schema_permission');
    expect((await p.metadata({ type: 'export_metadata', args: {} })).body.remote_schemas[0].definition.url).toBe(`${remote.url}?second`);
  });
});
