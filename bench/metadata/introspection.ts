/**
 * The standard introspection query (graphql-js's getIntrospectionQuery(), as GraphiQL, the
 * console and code generators send it) at N tracked tables (the tables of ./run.ts, the role
 * `user` may select each), as admin and as `user`, against the engine as its own process,
 * compiled as `npm start` runs it: after each metadata change (`pg_track_table` /
 * `pg_untrack_table` of one more table, alternately) the first answer (the role's whole schema
 * built, then written) and the same request again (Note [Introspection answers cached] in
 * plugins/graphql/introspection-cache.ts). For each: the time to the answer's last byte (the
 * client counts the bytes and decodes nothing), the engine's CPU time for it (its process, from
 * /proc), and the answer's size; while the first answer is made, another client asks
 * `{ __typename }` over and over, and the longest it waited is printed (what the introspection
 * keeps other requests waiting; their CPU is in the engine's too, a few per cent). The response
 * size limit is raised to 1 Gi characters so that the admin's answer is timed as far as it can
 * be (the default, 64 Mi, refuses it from about 1,100 tables of this shape; past 512 Mi
 * characters, the longest string V8 makes, it is refused).
 *
 *   npx tsx bench/metadata/introspection.ts [N] [rounds]
 *
 * BENCH_ENGINE_FLAGS: Node flags for the engine's process (e.g. '--cpu-prof --cpu-prof-dir=/tmp/p').
 */
import http from 'node:http';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { getIntrospectionQuery } from 'graphql';
import { freePort, startEmbeddedPostgres } from '../../server/embedded.js';
import { cleanup, cleanups, startEngine } from '../common.js';
import { processCpuUs } from '../cpu.js';
import { createTables, table, trackOps } from './tables.js';

const n = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const root = new URL('../..', import.meta.url).pathname;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (bytes: number) => (bytes / 1048576).toFixed(1);

/** POST a JSON body; the status, the answer's bytes (counted, not kept) with their first 200,
 * and the milliseconds to the last byte. */
function post(port: number, p: string, body: unknown, role?: string): Promise<{ status: number; bytes: number; head: string; ms: number }> {
  const payload = JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: p,
        method: 'POST',
        // A connection per request: a kept-alive one that the engine closes as idle while a
        // request is sent on it is reset (ECONNRESET).
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...(role ? { 'x-svc-role': role, 'x-svc-user-id': '1' } : {}) },
      },
      (res) => {
        let bytes = 0;
        let head = '';
        res.on('data', (c: Buffer) => {
          if (head.length < 200) head += c.subarray(0, 200).toString('utf8');
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, head, ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Asks `{ __typename }` one request after another until `stop()`; the longest answer, ms. */
function probe(port: number): { stop(): Promise<number> } {
  let running = true;
  let longest = 0;
  const done = (async () => {
    while (running) {
      const r = await post(port, '/v1/graphql', { query: '{ __typename }' });
      longest = Math.max(longest, r.ms);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return longest;
    },
  };
}

async function ok(port: number, p: string, body: unknown): Promise<void> {
  const r = await post(port, p, body);
  if (r.status !== 200 || r.head.startsWith('{"errors"')) throw new Error(`${p} -> ${r.status} ${r.head}`);
}

const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-introspection-'));
chmodSync(dir, 0o755); // PostgreSQL runs as another user when this runs as root
try {
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  cleanups.push(() => pg.stop());
  await pg.createDatabase('bench');
  const url = pg.url('bench');
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await createTables(sql, n);
  await sql.end();
  const port = await freePort();
  const engine = await startEngine(root, {
    dbUrl: url,
    port,
    env: { SVC_GRAPHQL_MAX_RESPONSE_SIZE: String(1024 * 1024 * 1024) },
    nodeFlags: (process.env.BENCH_ENGINE_FLAGS ?? '').split(/\s+/).filter(Boolean),
  });
  await ok(port, '/v1/metadata', { type: 'bulk', args: trackOps(n, ['user']) });
  const query = { query: getIntrospectionQuery() };
  const extra = table(n + 1);
  let change = 0;
  console.log(`N = ${n} tables; ${rounds} rounds per role, each after a metadata change; ms to the last byte, and the engine's CPU ms`);
  console.log("role    first (each round)            CPU      another's longest wait   again (each round)       CPU      answer MiB");
  for (const role of ['admin', 'user']) {
    const first: number[] = [];
    const again: number[] = [];
    const cpuFirst: number[] = [];
    const cpuAgain: number[] = [];
    const waits: number[] = [];
    let size = 0;
    let refused: string | undefined;
    for (let i = 0; i < rounds; i++) {
      await ok(port, '/v1/metadata', { type: change++ % 2 ? 'pg_untrack_table' : 'pg_track_table', args: { table: extra } });
      const asRole = role === 'admin' ? undefined : role;
      let cpu = processCpuUs(engine.pid!);
      const other = probe(port);
      const a = await post(port, '/v1/graphql', query, asRole);
      first.push(a.ms);
      cpuFirst.push((processCpuUs(engine.pid!) - cpu) / 1000);
      waits.push(await other.stop());
      cpu = processCpuUs(engine.pid!);
      const b = await post(port, '/v1/graphql', query, asRole);
      again.push(b.ms);
      cpuAgain.push((processCpuUs(engine.pid!) - cpu) / 1000);
      if (b.bytes !== a.bytes) throw new Error('the repeated answer differs in length');
      // An answer past the longest string V8 makes is refused (Note [Introspection written as text]).
      if (a.head.startsWith('{"errors"')) refused = a.head;
      size = a.bytes;
    }
    const list = (xs: number[], width: number) => `${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})`.padEnd(width) + ' ';
    console.log(
      `${role.padEnd(8)}${list(first, 29)}${median(cpuFirst).toFixed(0).padEnd(8)} ${list(waits, 24)}${list(again, 24)}${median(cpuAgain).toFixed(0).padEnd(8)} ${refused ? `refused: ${refused}` : mib(size)}`,
    );
  }
} finally {
  await cleanup();
  rmSync(dir, { recursive: true, force: true });
}
