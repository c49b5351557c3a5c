/**
 * Several instances behind a real load balancer (Debian's HAProxy, checking /healthz) on one
 * database (issue 26): a metadata change made through one is served by the others, a subscription
 * on one sees a write made through another, and a rolling
 * restart of the three under autocannon's load loses no request and gets no wrong answer (Note
 * [Draining] in server/main.ts: SIGTERM drains while /healthz answers 503). Skipped, saying so, without HAProxy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from './helpers.js';
import { freePort } from '../server/embedded.js';
import { post, spawnServer, waitReady, type ServerProcess } from './server-process.js';
import { Client } from './ws-helpers.js';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
if (!HAPROXY) console.warn('rolling-restart.test.ts: skipped, no HAProxy (apt-get install haproxy)');

describe.skipIf(!HAPROXY)('three instances behind HAProxy', () => {
  let db: { url: string };
  const ports: number[] = [];
  const engines: ServerProcess[] = [];
  let lbPort = 0;
  let haproxy: ChildProcess | undefined;
  let dir = '';

  const startEngine = (port: number) => {
    const p = spawnServer({
      SVC_GRAPHQL_DATABASE_URL: db.url,
      SVC_GRAPHQL_SERVER_PORT: String(port),
      SVC_GRAPHQL_SHUTDOWN_DRAIN_TIME: '2',
      SVC_GRAPHQL_METADATA_SYNC_INTERVAL: '200',
    });
    return p;
  };

  beforeAll(async () => {
    db = await createDatabase();
    for (let i = 0; i < 3; i++) ports.push(await freePort());
    // The first boot creates the catalog; the others find it.
    engines.push(startEngine(ports[0]!));
    await waitReady(engines[0]!, 60_000);
    for (let i = 1; i < 3; i++) engines.push(startEngine(ports[i]!));
    await Promise.all(engines.slice(1).map((e) => waitReady(e, 60_000)));
    lbPort = await freePort();
    dir = mkdtempSync(path.join(tmpdir(), 'svc-haproxy-'));
    const cfg = [
      'global',
      '  maxconn 1000',
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 30s',
      '  timeout server 30s',
      'frontend fe',
      `  bind 127.0.0.1:${lbPort}`,
      '  default_backend engines',
      'backend engines',
      '  balance roundrobin',
      '  option httpchk GET /healthz',
      '  http-check expect status 200',
      // A refused connection is retried on another server (the one that just closed its listener).
      '  retries 3',
      '  option redispatch',
      // A check that gets no answer within `inter` (200 ms) fails by default, and with `fall 1`
      // one such check takes a serving instance out: in a clean-clone CI run, the other test
      // files beside it on two cores, that left no instance up for a moment, it seems (244 non-2xx
      // answers in one run of three, 2026-11-27). A draining instance still goes at its first 503.
      '  timeout check 2s',
      ...ports.map((p, i) => `  server e${i} 127.0.0.1:${p} check inter 200 fall 1 rise 2`),
      '',
    ].join('\n');
    writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
    haproxy = spawn(HAPROXY!, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${lbPort}/healthz`)).status === 200) break;
      } catch {
        /* not yet */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const setup = await post(lbPort, '/v1/query', { type: 'run_sql', args: { sql: 'create table visit (id serial primary key, at timestamptz default now())' } });
    expect(setup.status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    haproxy?.kill('SIGKILL');
    for (const e of engines) if (e.child.exitCode === null) e.child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a metadata change made through one instance is served by the others', async () => {
    expect((await post(ports[0]!, '/v1/metadata', { type: 'pg_track_table', args: { table: 'visit' } })).status).toBe(200);
    for (const port of ports.slice(1)) {
      let ok = false;
      for (let i = 0; i < 50 && !ok; i++) {
        const r = await post(port, '/v1/graphql', { query: '{ visit_aggregate { aggregate { count } } }' });
        ok = r.status === 200 && r.body.data !== undefined;
        if (!ok) await new Promise((res) => setTimeout(res, 100));
      }
      expect(ok, `instance on ${port}`).toBe(true);
    }
  });

  it("each instance's subscriptions see writes made through another", async () => {
    const c = await Client.init(`ws://127.0.0.1:${ports[2]}/v1/graphql`, 'graphql-transport-ws');
    try {
      c.send({ type: 'subscribe', id: 'v', payload: { query: 'subscription { visit_aggregate { aggregate { count } } }' } });
      const first = await c.next('v');
      const before = first.payload.data.visit_aggregate.aggregate.count as number;
      expect((await post(ports[0]!, '/v1/graphql', { query: 'mutation { insert_visit_one(object: {}) { id } }' })).status).toBe(200);
      const next = await c.next('v', 10_000);
      expect(next.payload.data.visit_aggregate.aggregate.count).toBe(before + 1);
    } finally {
      c.close();
    }
  });

  it('a rolling restart under autocannon loses no request', async () => {
    // autocannon keeps 8 connections busy through the balancer for as long as the restart takes;
    // every answer is checked: the status, and the body (a wrong or partial one counts as a
    // mismatch).
    const body = JSON.stringify({ query: '{ visit_aggregate { aggregate { count } } }' });
    const expected = await (await fetch(`http://127.0.0.1:${lbPort}/v1/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
    expect(JSON.parse(expected).data).toBeDefined();
    let finished!: (r: autocannon.Result | Error) => void;
    const result = new Promise<autocannon.Result | Error>((r) => (finished = r));
    const load = autocannon(
      {
        url: `http://127.0.0.1:${lbPort}/v1/graphql`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections: 8,
        duration: 600,
        expectBody: expected,
        timeout: 20,
      },
      (err, r) => finished(err ?? r),
    );
    for (let i = 0; i < 3; i++) {
      const old = engines[i]!;
      old.child.kill('SIGTERM');
      expect(await old.exited).toBe(0);
      engines[i] = startEngine(ports[i]!);
      await waitReady(engines[i]!, 60_000);
      // Let the balancer see it up again (rise 2 at 200 ms) before the next one goes.
      await new Promise((r) => setTimeout(r, 800));
    }
    load.stop();
    const r = await result;
    if (r instanceof Error) throw r;
    const failed = { non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts, mismatches: r.mismatches, resets: r.resets };
    expect(failed).toEqual({ non2xx: 0, errors: 0, timeouts: 0, mismatches: 0, resets: 0 });
    expect(r.requests.total).toBeGreaterThan(100);
  }, 180_000);
});
