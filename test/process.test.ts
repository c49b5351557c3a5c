/**
 * The server as a real process (`npm start`'s entry point): configuration errors at boot,
 * SIGTERM with a request in flight, restart with everything preserved, and two instances on one
 * catalog.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { createDatabase } from './helpers.js';
import { freePort } from '../server/embedded.js';
import { post, spawnServer, waitReady as waitReadyFor, type ServerProcess } from './server-process.js';

const waitReady = (p: Proc, timeoutMs = 20_000) => waitReadyFor(p, timeoutMs);

const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
});

type Proc = ServerProcess;

function start(env: Record<string, string>, args: string[] = []): Proc {
  const p = spawnServer(env, args);
  procs.push(p.child);
  return p;
}

describe('server process', () => {
  it('a bad configuration value stops the boot with a message naming it', async () => {
    const p = start({ SVC_GRAPHQL_SERVER_PORT: 'eighty' });
    expect(await p.exited).toBe(1);
    expect(p.out.join('')).toContain('invalid value for SVC_GRAPHQL_SERVER_PORT: "eighty": expected a port number');
    const q = start({ SVC_GRAPHQL_DATABASE_URL: 'mysql://x' });
    expect(await q.exited).toBe(1);
    expect(q.out.join('')).toContain('invalid value for SVC_GRAPHQL_DATABASE_URL');
    const r = start({}, ['--enabled-apis', 'graphql,nope']);
    expect(await r.exited).toBe(1);
    expect(r.out.join('')).toContain('invalid value for --enabled-apis');
    const u = start({}, ['--no-such-flag']);
    expect(await u.exited).toBe(1);
    expect(u.out.join('')).toContain('unknown flag --no-such-flag');
    // Four processes, each loading the server's TypeScript: 18 s on a quiet two-core machine,
    // past 30 s in a clean-clone CI run with other test files beside it (2026-11-27).
  }, 60_000);

  it('SIGTERM with --shutdown-drain-time: /healthz answers 503 while requests are still served, then it stops (Note [Draining])', async () => {
    const db = await createDatabase();
    const port = await freePort();
    const p = start({ SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_SHUTDOWN_DRAIN_TIME: '2' });
    await waitReady(p);
    const t0 = Date.now();
    p.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.text()).toBe('ERROR: shutting down');
    // Still served: a balancer that has not noticed yet loses nothing.
    expect(await post(port, '/v1/graphql', { query: '{ __typename }' })).toEqual({ status: 200, body: { data: { __typename: 'query_root' } } });
    expect(await p.exited).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
    // Without the option, and with SIGINT, there is no drain (the test above and the rest of this file).
  }, 60_000);

  it('SIGTERM finishes the request in flight, exits 0, and a restart finds everything as it was', async () => {
    const db = await createDatabase();
    const port = await freePort();
    const env = { SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(port) };
    const p = start(env);
    await waitReady(p);
    expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: 'create table t (id int primary key)' } })).status).toBe(200);
    expect((await post(port, '/v1/metadata', { type: 'pg_track_table', args: { table: 't' } })).status).toBe(200);
    const before = (await post(port, '/v1/metadata', { type: 'export_metadata', version: 2, args: {} })).body;

    // A slow request is in flight when SIGTERM arrives: it must complete.
    const slow = post(port, '/v1/query', { type: 'run_sql', args: { sql: 'select pg_sleep(1.5), 42 as answer' } });
    await new Promise((r) => setTimeout(r, 300));
    p.child.kill('SIGTERM');
    const res = await slow;
    expect(res).toEqual({ status: 200, body: { result_type: 'TuplesOk', result: [['pg_sleep', 'answer'], ['', '42']] } });
    expect(await p.exited).toBe(0);
    expect(p.out.join('')).toContain('"type":"shutdown"');

    const again = start(env);
    await waitReady(again);
    const after = (await post(port, '/v1/metadata', { type: 'export_metadata', version: 2, args: {} })).body;
    expect(after).toEqual(before);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 60_000);

  it('two instances on one catalog: a change made through one is served by the other within 2 s', async () => {
    const db = await createDatabase();
    const [pa, pb] = [await freePort(), await freePort()];
    const a = start({ SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(pa) });
    const b = start({ SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(pb) });
    await Promise.all([waitReady(a), waitReady(b)]);
    await post(pa, '/v1/query', { type: 'run_sql', args: { sql: 'create table shared_t (id int primary key)' } });
    expect((await post(pa, '/v1/metadata', { type: 'pg_track_table', args: { table: 'shared_t' } })).status).toBe(200);
    const changedAt = Date.now();
    let seen = false;
    while (Date.now() - changedAt < 2000) {
      const md = (await post(pb, '/v1/metadata', { type: 'export_metadata', args: {} })).body;
      if (md.sources[0].tables.length === 1) {
        seen = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen).toBe(true);
    // Schema changed through one instance (run_sql, no metadata change) is seen at once by the other.
    await post(pa, '/v1/query', { type: 'run_sql', args: { sql: 'create table shared_v (id int primary key)' } });
    expect(await post(pb, '/v1/metadata', { type: 'pg_track_table', args: { table: 'shared_v' } })).toEqual({ status: 200, body: { message: 'success' } });
    expect((await post(pb, '/v1/metadata', { type: 'pg_untrack_table', args: { table: 'shared_v' } })).status).toBe(200);
    // A write through the second instance builds on the first one's change (no lost update).
    await post(pb, '/v1/query', { type: 'run_sql', args: { sql: 'create table shared_u (id int primary key)' } });
    expect((await post(pb, '/v1/metadata', { type: 'pg_track_table', args: { table: 'shared_u' } })).status).toBe(200);
    const md = (await post(pa, '/v1/metadata', { type: 'export_metadata', args: {} })).body;
    await new Promise((r) => setTimeout(r, 1500));
    const md2 = (await post(pa, '/v1/metadata', { type: 'export_metadata', args: {} })).body;
    expect(md2.sources[0].tables.map((t: { table: { name: string } }) => t.table.name).sort()).toEqual(['shared_t', 'shared_u']);
    expect(md.sources[0].tables.length).toBeGreaterThanOrEqual(1);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
  }, 60_000);

  it('with no database URL it runs on an embedded PostgreSQL whose data survives a restart', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-data-'));
    chmodSync(dir, 0o755);
    try {
      const port = await freePort();
      const env = { SVC_GRAPHQL_DATA_DIR: dir, SVC_GRAPHQL_SERVER_PORT: String(port) };
      const p = start(env);
      await waitReady(p, 60_000);
      expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: "create table kept (v text); insert into kept values ('x')" } })).status).toBe(200);
      expect((await post(port, '/v1/metadata', { type: 'pg_track_table', args: { table: 'kept' } })).status).toBe(200);
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      // A port of its own: the one the first freed may be taken meanwhile by another test's server,
      // which would answer in its place.
      const port2 = await freePort();
      const again = start({ ...env, SVC_GRAPHQL_SERVER_PORT: String(port2) });
      await waitReady(again, 60_000);
      const md = (await post(port2, '/v1/metadata', { type: 'export_metadata', args: {} })).body;
      expect(md.sources[0].tables, again.out.join('')).toEqual([{ table: { schema: 'public', name: 'kept' } }]);
      const rows = (await post(port2, '/v1/query', { type: 'run_sql', args: { sql: 'select v from kept' } })).body;
      expect(rows.result).toEqual([['v'], ['x']]);
      again.child.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('SVC_GRAPHQL_METADATA_DATABASE_URL keeps the catalog in a separate database', async () => {
    const data = await createDatabase();
    const meta = await createDatabase();
    const port = await freePort();
    const p = start({ SVC_GRAPHQL_DATABASE_URL: data.url, SVC_GRAPHQL_METADATA_DATABASE_URL: meta.url, SVC_GRAPHQL_SERVER_PORT: String(port) });
    await waitReady(p);
    expect((await post(port, '/v1/metadata', { type: 'export_metadata', args: {} })).body.sources[0].name).toBe('default');
    const check = async (url: string) => {
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const [r] = await sql`select to_regclass('svc_catalog.metadata_part') as t`;
        return r!.t;
      } finally {
        await sql.end();
      }
    };
    expect(await check(meta.url)).toBe('svc_catalog.metadata_part');
    expect(await check(data.url)).toBeNull();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 60_000);
});
