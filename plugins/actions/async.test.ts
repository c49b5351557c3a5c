/**
 * Asynchronous actions against a real handler (node:http on loopback) and a real PostgreSQL: the
 * mutation answers an id at once, the worker calls the handler in the background, the outcome
 * is read with `<action>(id:)`, only by the session that made the call (or admin); the call
 * survives a restart of the engine and is made once when two engines share the database.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';
import { startHandler, type TestHandler } from './testing.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(f: () => Promise<T | undefined | false | null>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(50);
  }
}

let handler: TestHandler;
let db: { name: string; url: string };
let s: TestServer;
const config = { asyncActionsFetchInterval: 50 };

const setup = async (srv: TestServer) => {
  await srv.runSql('create table if not exists "user" (id serial primary key, name text not null)');
  const r = await srv.query({
    type: 'bulk',
    args: [
      { type: 'track_table', args: { name: 'user' } },
      {
        type: 'set_custom_types',
        args: {
          objects: [{ name: 'UserId', fields: [{ name: 'id', type: 'Int!' }], relationships: [{ name: 'user', type: 'object', remote_table: 'user', field_mapping: { id: 'id' } }] }],
        },
      },
      { type: 'create_action', args: { name: 'create_user', definition: { kind: 'asynchronous', arguments: [{ name: 'name', type: 'String!' }], output_type: 'UserId', handler: '{{HANDLER}}/create', timeout: 2 } } },
      { type: 'create_action_permission', args: { action: 'create_user', role: 'user' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
};

beforeAll(async () => {
  handler = await startHandler();
  db = await createDatabase();
  s = await startServer({ database: db, env: { HANDLER: handler.url }, config });
  await setup(s);
});
afterAll(async () => {
  await s?.stop();
  await handler?.close();
});
beforeEach(() => {
  handler.calls.length = 0;
  handler.routes['/create'] = async (c, res) => {
    const rows = await s.sql`insert into "user" (name) values (${c.body.input.name}) returning id`;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: rows[0]!.id }));
  };
});

const result = (srv: TestServer, id: string, headers?: Record<string, string>) =>
  srv.gql(`query ($id: uuid!) { create_user(id: $id) { __typename id created_at errors output { id user { name } } } }`, { id }, headers);

describe('asynchronous actions', () => {
  it('answers an id at once and stores the outcome, read with <action>(id:)', async () => {
    const m = await s.gql('mutation { create_user(name: "Clarke") }');
    const id = m.data.create_user as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const r = await until(async () => {
      const x = await result(s, id);
      return x.data?.create_user?.output ? x : undefined;
    });
    expect(r.data.create_user).toMatchObject({ __typename: 'create_user', id, errors: null, output: { id: expect.any(Number), user: { name: 'Clarke' } } });
    expect(handler.calls).toHaveLength(1);
    expect(handler.calls[0]!.body).toMatchObject({ action: { name: 'create_user' }, input: { name: 'Clarke' }, session_variables: { 'x-svc-role': 'admin' } });
  });

  it('stores the handler\'s error', async () => {
    handler.routes['/create'] = { status: 400, json: { message: 'no such user', code: 'bad-user' } };
    const id = (await s.gql('mutation { create_user(name: "x") }')).data.create_user;
    const r = await until(async () => {
      const x = await result(s, id);
      return x.data?.create_user?.errors ? x : undefined;
    });
    expect(r.data.create_user.errors).toEqual({ path: '$', error: 'no such user', code: 'bad-user' });
    expect(r.data.create_user.output).toBeNull();
  });

  it('stores a timeout as an error', async () => {
    handler.routes['/create'] = { delayMs: 3000, json: { id: 1 } };
    const id = (await s.gql('mutation { create_user(name: "slow") }')).data.create_user;
    const r = await until(async () => {
      const x = await result(s, id);
      return x.data?.create_user?.errors ? x : undefined;
    }, 10_000);
    expect(r.data.create_user.errors.code).toBe('unexpected');
  });

  it('shows a call only to the session that made it (and to admin)', async () => {
    const u1 = { 'x-svc-role': 'user', 'x-svc-user-id': '1' };
    const u2 = { 'x-svc-role': 'user', 'x-svc-user-id': '2' };
    const id = (await s.gql('mutation { create_user(name: "Blake") }', {}, u1)).data.create_user;
    await until(async () => (await result(s, id)).data?.create_user?.output);
    expect((await s.gql('query ($id: uuid!) { create_user(id: $id) { id } }', { id }, u2)).data.create_user).toBeNull();
    expect((await s.gql('query ($id: uuid!) { create_user(id: $id) { id } }', { id }, u1)).data.create_user).toEqual({ id });
    // Another role has no permission: no such field.
    const other = await s.gql('query ($id: uuid!) { create_user(id: $id) { id } }', { id }, { 'x-svc-role': 'other' });
    expect(other.errors[0].extensions.code).toBe('validation-failed');
  });

  it('an answer that is not JSON is an error; its details are for admin only', async () => {
    handler.routes['/create'] = { status: 204, text: '' };
    const u = { 'x-svc-role': 'user', 'x-svc-user-id': '3' };
    const id = (await s.gql('mutation { create_user(name: "x") }', {}, u)).data.create_user;
    const r = await until(async () => {
      const x = await s.gql('query ($id: uuid!) { create_user(id: $id) { errors } }', { id }, u);
      return x.data?.create_user?.errors ? x : undefined;
    });
    expect(r.data.create_user.errors).toEqual({ code: 'unexpected', path: '$', error: 'not a valid json response from webhook' });
    const admin = await result(s, id);
    expect(admin.data.create_user.errors.internal).toMatchObject({ error: 'unexpected response', response: { status: 204 } });
  });

  it('keeps the client\'s headers only for an action that forwards them, never its credentials', async () => {
    const r = await s.query({ type: 'create_action', args: { name: 'fwd', definition: { kind: 'asynchronous', output_type: 'UserId', handler: '{{HANDLER}}/fwd', forward_client_headers: true } } });
    expect(r.status, r.text).toBe(200);
    handler.routes['/fwd'] = { json: { id: 1 } };
    const id = (await s.gql('mutation { fwd }', {}, { 'x-trace': 't1', authorization: 'Bearer secret', cookie: 'c=1' })).data.fwd;
    await until(async () => (await s.gql('query ($id: uuid!) { fwd(id: $id) { output { id } } }', { id })).data?.fwd?.output);
    const stored = (await s.sql`select request_headers from svc_catalog.action_log where id = ${id}`)[0]!.request_headers as Record<string, string>;
    expect(stored['x-trace']).toBe('t1');
    expect(stored.authorization).toBeUndefined();
    expect(stored.cookie).toBeUndefined();
    const call = handler.calls.find((c) => c.path === '/fwd')!;
    expect(call.headers['x-trace']).toBe('t1');
    expect(call.headers.authorization).toBeUndefined();
    const other = (await s.gql('mutation { create_user(name: "h") }', {}, { 'x-trace': 't2' })).data.create_user;
    expect((await s.sql`select request_headers from svc_catalog.action_log where id = ${other}`)[0]!.request_headers).toEqual({});
  });

  it('refuses an id that is not a uuid', async () => {
    const r = await s.gql('query { create_user(id: "nope") { id } }');
    expect(r.errors).toBeDefined();
  });

  it('drop_action with clear_data deletes the log; the metadata can be recreated', async () => {
    const id = (await s.gql('mutation { create_user(name: "Dropped") }')).data.create_user;
    await until(async () => (await result(s, id)).data?.create_user?.output);
    expect((await s.query({ type: 'drop_action', args: { name: 'create_user', clear_data: true } })).status).toBe(200);
    expect((await s.sql`select count(*)::int as n from svc_catalog.action_log where id = ${id}`)[0]!.n).toBe(0);
    expect((await s.query({ type: 'create_action', args: { name: 'create_user', definition: { kind: 'asynchronous', arguments: [{ name: 'name', type: 'String!' }], output_type: 'UserId', handler: '{{HANDLER}}/create', timeout: 2 } } })).status).toBe(200);
    expect((await s.query({ type: 'create_action_permission', args: { action: 'create_user', role: 'user' } })).status).toBe(200);
  });
});

describe('asynchronous actions across engines', () => {
  it('a call written before a restart is made after it', async () => {
    // The call is written while no worker runs (the engine stops right after answering).
    const a = await startServer({ database: db, env: { HANDLER: handler.url }, config: { asyncActionsFetchInterval: 60_000 } });
    handler.routes['/create'] = { status: 200, json: { id: 42 } };
    // The first poll happens at start: let it pass, then write the call.
    await sleep(200);
    const id = (await a.gql('mutation { create_user(name: "Later") }')).data.create_user;
    await a.stop();
    const before = handler.calls.length;
    const b = await startServer({ database: db, env: { HANDLER: handler.url }, config });
    try {
      const r = await until(async () => {
        const x = await result(b, id);
        return x.data?.create_user?.output ? x : undefined;
      });
      expect(r.data.create_user.output.id).toBe(42);
      expect(handler.calls.length - before).toBeLessThanOrEqual(1);
    } finally {
      await b.stop();
    }
  });

  it('two engines on one database make each call once', async () => {
    const b = await startServer({ database: db, env: { HANDLER: handler.url }, config });
    try {
      handler.routes['/create'] = { status: 200, json: { id: 7 }, delayMs: 20 };
      handler.calls.length = 0;
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push((await (i % 2 ? s : b).gql(`mutation { create_user(name: "n${i}") }`)).data.create_user);
      await until(async () => {
        const n = (await s.sql`select count(*)::int as n from svc_catalog.action_log where id = any(${ids}::uuid[]) and status = 'completed'`)[0]!.n;
        return n === ids.length;
      });
      expect(handler.calls).toHaveLength(ids.length);
      expect(new Set(handler.calls.map((c) => c.body.input.name)).size).toBe(ids.length);
    } finally {
      await b.stop();
    }
  });
});
