/**
 * `--disable-plugins`: a disabled plugin contributes nothing. Its operations answer `not-supported`
 * (naming it), its routes 404, its workers never start, the source kinds it provides are unknown
 * (their sources are reported inconsistent, the server keeps serving), and its metadata sections
 * are kept as stored through export and replace, so that enabling it again finds them intact.
 * Each bundled plugin (`database`, `postgres`), the template plugin and a plugin with a worker are
 * disabled in turn, on the same database as a server that had them all enabled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { definePlugin } from '../core/plugin.js';
import { BootError } from '../core/kernel/kernel.js';
import tableNotes from '../plugin-template/index.js';
import WebSocket from 'ws';
import { createDatabase, startServer, type TestServer } from './helpers.js';
import { listen } from './ws-helpers.js';
import { SignJWT } from 'jose';
import { parseJwtSettings } from '../plugins/auth-jwt/index.js';

/** A plugin with a worker, an operation, a route and a metadata section. */
const started: string[] = [];
const ticker = definePlugin({
  name: 'ticker',
  setup(k) {
    k.metadataSection({ key: 'ticks', order: 950, schema: v.array(v.number()), empty: () => [] });
    k.operation({ type: 'add_tick', args: v.object({ n: v.number() }), mutates: true, run: (a, ctx) => ({ metadata: { ...ctx.metadata, ticks: [...((ctx.metadata.ticks as number[]) ?? []), a.n] }, response: { message: 'success' } }) });
    k.route({ method: 'GET', path: '/v1/ticks', api: 'metadata', handler: (c) => c.json(k.state().metadata.ticks ?? []) });
    k.worker({ name: 'ticker', start: () => void started.push('ticker'), stop: () => {} });
  },
});

let db: { name: string; url: string };
/** The export of the metadata with every plugin enabled. */
let full: Record<string, any>;
const extraPlugins = [tableNotes, ticker];

const notSupported = (type: string, plugin: string) => ({
  status: 400,
  body: { code: 'not-supported', path: '$.type', error: `operation "${type}" is not supported: the plugin "${plugin}" is disabled` },
});

async function exported(s: TestServer) {
  const r = await s.metadata({ type: 'export_metadata', args: {} });
  expect(r.status, r.text).toBe(200);
  return r.body;
}

/** Boots with `disabled` on the shared database, runs `check`, stops. */
async function withDisabled(disabled: string[], check: (s: TestServer) => Promise<void>, plugins = extraPlugins) {
  const s = await startServer({ database: db, config: { disabledPlugins: disabled }, extraPlugins: plugins });
  try {
    expect((await s.request('GET', '/v1alpha1/config')).body.plugins.disabled).toEqual(disabled);
    await check(s);
  } finally {
    await s.stop();
  }
}

/** Export keeps the disabled plugin's sections as stored; replacing the metadata with a document
 * that holds them keeps them too. */
async function sectionsSurvive(s: TestServer, keys: string[]) {
  const before = await exported(s);
  for (const key of keys) expect(before[key], key).toEqual(full[key]);
  const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: full } });
  expect(r.status, r.text).toBe(200);
  const after = await exported(s);
  for (const key of keys) expect(after[key], key).toEqual(full[key]);
}

/** Enabled again, the plugin finds its metadata intact and works. */
async function intactWhenEnabled() {
  const s = await startServer({ database: db, extraPlugins });
  try {
    expect(await exported(s)).toEqual(full);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });
    expect((await s.request('GET', '/v1/table-notes')).body).toEqual(full.table_notes);
    expect((await s.request('GET', '/v1/ticks')).body).toEqual([7]);
    expect((await s.query({ type: 'run_sql', args: { sql: 'select 1' } })).status).toBe(200);
  } finally {
    await s.stop();
  }
}

beforeAll(async () => {
  db = await createDatabase();
  const s = await startServer({ database: db, extraPlugins });
  try {
    await s.runSql('create table author (id serial primary key, name text)');
    expect((await s.metadata({ type: 'pg_track_table', args: { table: 'author' } })).status).toBe(200);
    expect((await s.metadata({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: {} } } })).status).toBe(200);
    expect((await s.metadata({ type: 'add_table_note', args: { table: 'author', note: 'people who write' } })).status).toBe(200);
    expect((await s.metadata({ type: 'add_tick', args: { n: 7 } })).status).toBe(200);
    full = await exported(s);
    expect(full).toMatchObject({ sources: [{ name: 'default', kind: 'postgres' }], table_notes: [{ note: 'people who write' }], ticks: [7] });
  } finally {
    await s.stop();
  }
});

afterAll(() => {
  started.length = 0;
});

describe('disabling plugins', () => {
  it('database alone cannot be disabled: postgres requires it', async () => {
    await expect(startServer({ database: db, config: { disabledPlugins: ['database'] } })).rejects.toThrow(
      new BootError('plugin "postgres" requires plugin "database", which is disabled'),
    );
  });

  it('postgres: its operations, pg_dump route and source kind are gone; its sources are kept, inconsistent', async () => {
    await withDisabled(['postgres'], async (s) => {
      for (const type of ['pg_track_table', 'pg_add_source', 'pg_create_select_permission', 'pg_drop_source']) {
        expect(await s.metadata({ type, args: {} }), type).toMatchObject(notSupported(type, 'postgres'));
      }
      for (const type of ['run_sql', 'track_table', 'create_select_permission']) {
        expect(await s.query({ type, args: { sql: 'select 1' } }), type).toMatchObject(notSupported(type, 'postgres'));
      }
      // The database plugin's own operations stay (rename_source works on any kind).
      expect((await s.metadata({ type: 'rename_source', args: {} })).body.code).not.toBe('not-supported');
      expect((await s.request('POST', '/v1alpha1/pg_dump', { opts: [] })).status).toBe(404);

      const reason = 'Inconsistent object: source kind "postgres" is not supported (no enabled plugin provides it)';
      const inc = (await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body;
      expect(inc.is_consistent).toBe(false);
      expect(inc.inconsistent_objects).toContainEqual({ type: 'source', name: 'source default', reason, definition: full.sources[0] });
      expect(await s.request('GET', '/healthz')).toMatchObject({ status: 200, text: 'WARN: inconsistent objects in schema' });
      expect((await s.request('POST', '/v1/graphql', { query: '{ __typename }' })).status).toBe(200);

      // A replace that does not allow inconsistencies is refused with the source as the reason.
      const r = await s.metadata({ type: 'replace_metadata', args: full });
      expect(r.status).toBe(400);
      expect(r.body.internal).toContainEqual({ type: 'source', name: 'source default', reason, definition: full.sources[0] });
      await sectionsSurvive(s, ['sources', 'table_notes']);

      // A source of a kind no plugin knows is kept as it is too, and reported inconsistent.
      const other = { name: 'other', kind: 'mysql', tables: [{ table: { schema: 'app', name: 'thing' } }], configuration: { connection_info: { database_url: 'mysql://x' } } };
      const withOther = { ...full, sources: [...full.sources, other] };
      expect((await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: withOther } })).status).toBe(200);
      expect((await exported(s)).sources).toEqual(withOther.sources);
      expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body.inconsistent_objects).toContainEqual({
        type: 'source',
        name: 'source other',
        reason: 'Inconsistent object: source kind "mysql" is not supported (no enabled plugin provides it)',
        definition: other,
      });
      expect((await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: full } })).status).toBe(200);
    });
    await intactWhenEnabled();
  });

  it('database and postgres: the sources section is kept as stored', async () => {
    await withDisabled(
      // event-triggers, scheduled-triggers, actions, inherited-roles and the other source kinds
      // (mssql, bigquery) require database too.
      ['database', 'postgres', 'event-triggers', 'scheduled-triggers', 'actions', 'inherited-roles', 'mssql', 'bigquery'],
      async (s) => {
        expect(await s.metadata({ type: 'pg_track_table', args: {} })).toMatchObject(notSupported('pg_track_table', 'postgres'));
        expect(await s.metadata({ type: 'pg_create_event_trigger', args: {} })).toMatchObject(notSupported('pg_create_event_trigger', 'event-triggers'));
        expect(await s.metadata({ type: 'rename_source', args: {} })).toMatchObject(notSupported('rename_source', 'database'));
        expect(await s.query({ type: 'run_sql', args: {} })).toMatchObject(notSupported('run_sql', 'postgres'));
        expect((await s.request('POST', '/v1alpha1/pg_dump', { opts: [] })).status).toBe(404);
        expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });
        expect(await s.request('GET', '/healthz')).toMatchObject({ status: 200, text: 'OK' });
        await sectionsSurvive(s, ['sources', 'table_notes', 'ticks']);
      },
      [ticker],
    );
    await intactWhenEnabled();
  });

  it('the template plugin: its operations, route and section', async () => {
    await withDisabled(['table-notes'], async (s) => {
      for (const type of ['add_table_note', 'drop_table_note']) {
        expect(await s.metadata({ type, args: {} }), type).toMatchObject(notSupported(type, 'table-notes'));
      }
      expect((await s.request('GET', '/v1/table-notes')).status).toBe(404);
      expect((await s.metadata({ type: 'pg_track_table', args: { table: 'author' } })).body.code).toBe('already-tracked');
      expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body.is_consistent).toBe(true);
      await sectionsSurvive(s, ['sources', 'table_notes']);
    });
    await intactWhenEnabled();
  });

  it('a plugin with a worker: the worker never starts', async () => {
    started.length = 0;
    await withDisabled(['ticker'], async (s) => {
      expect(started).toEqual([]);
      expect(await s.metadata({ type: 'add_tick', args: { n: 1 } })).toMatchObject(notSupported('add_tick', 'ticker'));
      expect((await s.request('GET', '/v1/ticks')).status).toBe(404);
      await sectionsSurvive(s, ['ticks']);
    });
    expect(started).toEqual([]);
    await intactWhenEnabled();
    expect(started).toEqual(['ticker']);
  });

  it('graphql-ws: GraphQL over WebSocket (and so subscriptions) is off; POST /v1/graphql serves on', async () => {
    await withDisabled(['graphql-ws'], async (s) => {
      const l = await listen(s);
      try {
        const refusal = await new Promise<{ status?: number; body: string }>((resolve) => {
          const ws = new WebSocket(l.url, 'graphql-transport-ws');
          ws.on('unexpected-response', (_req, res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode, body }));
          });
          ws.on('open', () => resolve({ body: 'opened' }));
          ws.on('error', () => {});
        });
        expect(refusal.status).toBe(404);
        expect(JSON.parse(refusal.body)).toMatchObject({ code: 'not-found' });
      } finally {
        await l.close();
      }
      expect((await s.gql('{ __typename }')).data).toEqual({ __typename: 'query_root' });
    });
  });

  it('graphql: /v1/graphql and its Explain API answer 404; the plugins that run GraphQL must go with it', async () => {
    await expect(startServer({ database: db, config: { disabledPlugins: ['graphql'] } })).rejects.toThrow('requires plugin "graphql", which is disabled');
    await withDisabled(['graphql', 'graphql-ws', 'rest-endpoints'], async (s) => {
      const notFound = { path: '$', error: 'resource does not exist', code: 'not-found' };
      for (const path of ['/v1/graphql', '/v1/graphql/explain']) {
        const r = await s.request('POST', path, { query: '{ __typename }' });
        expect({ status: r.status, body: r.body }, path).toEqual({ status: 404, body: notFound });
      }
      // The metadata API serves on, the allow-list's and REST endpoints' operations included.
      expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });
      expect(await s.metadata({ type: 'create_rest_endpoint', args: {} })).toMatchObject(notSupported('create_rest_endpoint', 'rest-endpoints'));
    }, []);
  });

  it('auth-jwt: its options are ignored, and the config API says JWT mode is off; the admin secret still rules', async () => {
    const jwtSecret = parseJwtSettings(JSON.stringify({ type: 'HS256', key: 'k'.repeat(32) }));
    const admin = { 'x-svc-admin-secret': 'sekret' };
    const s = await startServer({ database: db, config: { adminSecret: 'sekret', disabledPlugins: ['auth-jwt'], jwtSecret } });
    try {
      expect((await s.request('GET', '/v1alpha1/config', undefined, admin)).body).toMatchObject({ is_jwt_set: false, jwt: [], plugins: { disabled: ['auth-jwt'] } });
      const token = await new SignJWT({ 'https://hasura.io/jwt/claims': { 'x-svc-allowed-roles': ['user'], 'x-svc-default-role': 'user' } }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('k'.repeat(32)));
      const r = await s.request('POST', '/v1/graphql', { query: '{ __typename }' }, { authorization: `Bearer ${token}` });
      expect(r.body.errors[0].extensions.code).toBe('access-denied');
      expect((await s.request('POST', '/v1/graphql', { query: '{ __typename }' }, admin)).body).toEqual({ data: { __typename: 'query_root' } });
    } finally {
      await s.stop();
    }
  });
});
