/**
 * Boot order, plugin dependencies, disabled plugins, enabled APIs, auth and the config API.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { definePlugin, type PluginDef } from '../plugin.js';
import { BootError } from './kernel.js';
import { orderByDeps } from './order.js';
import { startServer, createDatabase, type TestServer } from '../../test/helpers.js';

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});
async function server(opts: Parameters<typeof startServer>[0] = {}) {
  const s = await startServer(opts);
  servers.push(s);
  return s;
}

const plugin = (name: string, deps: Partial<PluginDef> = {}, setup: PluginDef['setup'] = () => {}) =>
  definePlugin({ name, ...deps, setup });

describe('boot order', () => {
  it('orders by after/before, keeping registration order otherwise', () => {
    const order = orderByDeps(
      [
        { name: 'c', after: ['b'] },
        { name: 'a' },
        { name: 'b', after: ['a'] },
        { name: 'd', before: ['a'] },
      ],
      'plugin',
    ).map((p) => p.name);
    expect(order).toEqual(['d', 'a', 'b', 'c']);
  });

  it('a cycle fails with a message naming it', () => {
    expect(() => orderByDeps([{ name: 'x', after: ['y'] }, { name: 'y', after: ['x'] }], 'plugin')).toThrow(
      'plugin dependency cycle: x -> y -> x',
    );
  });

  it('a missing dependency fails the boot with a clear message', async () => {
    const db = await createDatabase();
    await expect(startServer({ database: db, extraPlugins: [plugin('needs-ghost', { after: ['ghost'] })] })).rejects.toThrow(
      new BootError('plugin "needs-ghost" requires plugin "ghost", which is missing'),
    );
  });

  it('a plugin cycle fails the boot', async () => {
    const db = await createDatabase();
    await expect(
      startServer({ database: db, extraPlugins: [plugin('p1', { after: ['p2'] }), plugin('p2', { after: ['p1'] })] }),
    ).rejects.toThrow('plugin dependency cycle');
  });

  it('disabling a plugin others depend on fails the boot, naming both', async () => {
    const db = await createDatabase();
    await expect(startServer({ database: db, config: { disabledPlugins: ['database'] } })).rejects.toThrow(
      'plugin "postgres" requires plugin "database", which is disabled',
    );
  });

  it('disabling an unknown plugin fails the boot', async () => {
    const db = await createDatabase();
    await expect(startServer({ database: db, config: { disabledPlugins: ['nope'] } })).rejects.toThrow('cannot disable unknown plugin "nope"');
  });
});

describe('plugins', () => {
  const greeter = plugin('greeter', { after: ['database'] }, (k) => {
    k.metadataSection({ key: 'greetings', order: 500, schema: v.array(v.object({ name: v.string() })), empty: () => [] });
    k.operation({
      type: 'add_greeting',
      args: v.object({ name: v.pipe(v.string(), v.minLength(1, 'empty string not allowed')) }),
      mutates: true,
      run: (a, ctx) => ({
        metadata: { ...ctx.metadata, greetings: [...((ctx.metadata.greetings as unknown[]) ?? []), { name: a.name }] },
        response: { message: `hello ${a.name}` },
      }),
    });
    k.route({ method: 'GET', path: '/v1/greet', api: 'graphql', handler: (c) => c.text('hi') });
  });

  it('a plugin adds an operation, a metadata section and a route', async () => {
    const s = await server({ extraPlugins: [greeter] });
    const r = await s.metadata({ type: 'add_greeting', args: { name: 'ada' } });
    expect(r).toMatchObject({ status: 200, body: { message: 'hello ada' } });
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    expect(md.greetings).toEqual([{ name: 'ada' }]);
    expect(Object.keys(md)).toEqual(['version', 'sources', 'greetings']);
    expect((await s.request('GET', '/v1/greet')).text).toBe('hi');
    expect(await s.metadata({ type: 'add_greeting', args: { name: '' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.name', error: 'empty string not allowed' },
    });
  });

  it('a disabled plugin: its operations answer not-supported, its routes 404, its section is kept', async () => {
    const db = await createDatabase();
    const first = await startServer({ database: db, extraPlugins: [greeter] });
    await first.metadata({ type: 'add_greeting', args: { name: 'ada' } });
    await first.stop();
    const s = await server({ database: db, extraPlugins: [greeter], config: { disabledPlugins: ['greeter'] } });
    const r = await s.metadata({ type: 'add_greeting', args: { name: 'bob' } });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'not-supported', path: '$.type', error: 'operation "add_greeting" is not supported: the plugin "greeter" is disabled' },
    });
    expect((await s.request('GET', '/v1/greet')).status).toBe(404);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.greetings).toEqual([{ name: 'ada' }]);
  });

  it('an operation that throws unexpectedly is a 500 {error}, logged, and the server keeps serving', async () => {
    const boom = plugin('boom', {}, (k) =>
      k.operation({ type: 'boom', args: v.unknown(), mutates: false, run: () => { throw new Error('kaboom'); } }),
    );
    const s = await server({ extraPlugins: [boom] });
    const r = await s.metadata({ type: 'boom', args: {} });
    expect(r.status).toBe(500);
    expect(Object.keys(r.body)).toEqual(['error']);
    expect(r.text).not.toContain('kaboom');
    expect(s.logs.some((l) => l.type === 'unexpected-error' && l.detail.error.message === 'kaboom')).toBe(true);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).status).toBe(200);
  });

  it('writes one http-log line per request', async () => {
    const s = await server();
    s.logs.length = 0;
    await s.metadata({ type: 'export_metadata', args: {} });
    const logs = s.logs.filter((l) => l.type === 'http-log');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      level: 'info',
      detail: { operation: { type: 'export_metadata' }, http_info: { status: 200, method: 'POST', url: '/v1/metadata' } },
    });
    expect(typeof logs[0]!.timestamp).toBe('string');
    expect(typeof logs[0]!.detail.http_info.duration_ms).toBe('number');
  });
});

describe('enabled APIs', () => {
  it('a disabled API answers 404', async () => {
    const s = await server({ config: { enabledApis: ['graphql'] } });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).status).toBe(404);
    expect((await s.query({ type: 'export_metadata', args: {} })).status).toBe(404);
    expect((await s.request('GET', '/v1alpha1/config')).status).toBe(404);
    expect((await s.request('POST', '/v1/graphql', { query: '{ __typename }' })).status).toBe(200);
  });

  it('graphql can be disabled too', async () => {
    const s = await server({ config: { enabledApis: ['metadata'] } });
    expect((await s.request('POST', '/v1/graphql', { query: '{ __typename }' })).status).toBe(404);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).status).toBe(200);
  });
});

describe('auth', () => {
  it('with an admin secret: missing -> 401, wrong -> 401, right -> admin; X-Svc-Role selects the role', async () => {
    const s = await server({ config: { adminSecret: 's3cret' } });
    const body = { type: 'export_metadata', args: {} };
    expect(await s.metadata(body)).toMatchObject({
      status: 401,
      body: { code: 'access-denied', error: 'x-svc-admin-secret/x-svc-access-key required, but not found' },
    });
    expect(await s.metadata(body, { 'x-svc-admin-secret': 'wrong' })).toMatchObject({
      status: 401,
      body: { code: 'access-denied', error: 'invalid x-svc-admin-secret/x-svc-access-key' },
    });
    expect((await s.metadata(body, { 'X-Svc-Admin-Secret': 's3cret' })).status).toBe(200);
    expect(await s.metadata(body, { 'x-svc-admin-secret': 's3cret', 'x-svc-role': 'user' })).toMatchObject({
      status: 400,
      body: { code: 'access-denied', error: 'restricted access : admin only' },
    });
  });

  it('the config API reports the configuration to admins only', async () => {
    const s = await server({ config: { adminSecret: 'k' } });
    const r = await s.request('GET', '/v1alpha1/config', undefined, { 'x-svc-admin-secret': 'k' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      version: expect.any(String),
      is_function_permissions_inferred: true,
      is_remote_schema_permissions_enabled: false,
      is_admin_secret_set: true,
      is_auth_hook_set: false,
      is_jwt_set: false,
      jwt: [],
      is_allow_list_enabled: false,
      live_queries: { batch_size: 100, refetch_delay: 1 },
    });
    expect((await s.request('GET', '/v1alpha1/config', undefined, { 'x-svc-admin-secret': 'k', 'x-svc-role': 'user' })).body).toMatchObject({
      code: 'access-denied',
    });
    expect((await s.request('GET', '/v1alpha1/config')).status).toBe(401);
  });

  it('without an admin secret every request is admin unless it asks for another role', async () => {
    const s = await server();
    const r = await s.request('GET', '/v1alpha1/config');
    expect(r).toMatchObject({ status: 200, body: { is_admin_secret_set: false } });
    expect((await s.request('GET', '/v1alpha1/config', undefined, { 'x-svc-role': 'user' })).status).toBe(400);
  });

  it('an unauthorized role is used when no secret is sent', async () => {
    const s = await server({ config: { adminSecret: 'k', unauthorizedRole: 'anonymous' } });
    const r = await s.metadata({ type: 'export_metadata', args: {} });
    expect(r).toMatchObject({ status: 400, body: { code: 'access-denied' } });
    // A role header without the secret is not the admin (the conformance suite's
    // TestUnauthorizedRolePermission, which Hasura sends without the secret).
    const named = await s.metadata({ type: 'export_metadata', args: {} }, { 'x-svc-role': 'admin' });
    expect(named).toMatchObject({ status: 400, body: { code: 'access-denied' } });
    expect((await s.metadata({ type: 'export_metadata', args: {} }, { 'x-svc-admin-secret': 'k', 'x-svc-role': 'admin' })).status).toBe(200);
  });
});

describe('graphql endpoint', () => {
  it('answers with the placeholder root when nothing is exposed', async () => {
    const s = await server();
    const r = await s.request('POST', '/v1/graphql', { query: '{ no_queries_available }' });
    expect(r.status).toBe(200);
    expect(typeof r.body.data.no_queries_available).toBe('string');
    const bad = await s.request('POST', '/v1/graphql', { query: '{ nope }' });
    expect(bad.body.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
  });
});

describe('dev mode', () => {
  const boom = definePlugin({
    name: 'boom2',
    setup: (k) => k.operation({ type: 'boom2', args: v.unknown(), mutates: false, adminOnly: false, run: () => { throw new Error('kaboom'); } }),
  });

  it('shows the cause of an unexpected error to admins only', async () => {
    const s = await server({ extraPlugins: [boom], config: { devMode: true } });
    const admin = await s.metadata({ type: 'boom2', args: {} });
    expect(admin.status).toBe(500);
    expect(admin.body.internal.message).toBe('kaboom');
    const user = await s.metadata({ type: 'boom2', args: {} }, { 'x-svc-role': 'user' });
    expect(user.status).toBe(500);
    expect(Object.keys(user.body)).toEqual(['error']);
  });
});

describe('workers', () => {
  it('start after the first build and stop on shutdown; a disabled plugin\'s workers never start', async () => {
    const events: string[] = [];
    const worker = definePlugin({
      name: 'ticker',
      setup: (k) =>
        k.worker({
          name: 'tick',
          start: () => {
            events.push(`start:${k.state().resourceVersion}`);
          },
          stop: () => {
            events.push('stop');
          },
        }),
    });
    const s = await startServer({ extraPlugins: [worker] });
    expect(events).toEqual(['start:1']);
    await s.stop();
    expect(events).toEqual(['start:1', 'stop']);

    const off = await server({ extraPlugins: [worker], config: { disabledPlugins: ['ticker'] } });
    expect(off.kernel.workers.filter((w) => w.plugin === 'ticker')).toEqual([]);
    expect(events).toEqual(['start:1', 'stop']);
  });
});
