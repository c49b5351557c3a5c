/**
 * Scale-out benchmark (issue 26): read throughput with one, two and three engine instances behind
 * HAProxy on the same PostgreSQL (Chinook, one embedded cluster), and where the CPU goes.
 *
 *   npm run bench:scale-out [-- --duration 10 --connections 40 --max 3]
 *
 * For each count of instances: HAProxy (Debian's, round robin) in front of them, a warm-up, then
 * autocannon (from bench/peers) on a by-relationship list query for --duration seconds. Printed per
 * count: req/s, p50/p99 latency, and CPU per request of PostgreSQL and of the whole machine (from
 * /proc; the engines' share is the machine's less PostgreSQL's and the load generator's). A
 * machine whose PostgreSQL CPU per request stays flat while req/s stops growing is bound by
 * PostgreSQL or by the cores the load generator takes; one whose req/s grows with instances was
 * bound by the engine.
 *
 * Then one read replica (skipped, saying so, without Debian's PostgreSQL and pg_basebackup): a
 * primary and its streaming replica (test/streaming-replica.ts) with Chinook, one engine on the
 * primary measured without and then with `read_replicas`; besides req/s and CPU, the primary's
 * transactions per request (pg_stat_database) show whether the reads left it.
 * Needs Linux and HAProxy (`apt-get install haproxy`); meant for a machine of many cores: on two,
 * the engines, PostgreSQL and the load generator share them and the figures say little.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { cleanup, cleanups, loadChinook, log, sleep, startEngine, stopChild } from '../common.js';
import { findStreamingTools, startStreamingPair } from '../../test/streaming-replica.js';
import { cpuPerRequest } from '../cpu.js';
import { freePort } from '../../server/embedded.js';

const root = new URL('../..', import.meta.url).pathname;
const peers = path.join(root, 'bench/peers');
/** What QUERY reads: albums and their artist. */
const TRACK = {
  type: 'bulk',
  args: [
    { type: 'pg_track_table', args: { table: 'albums' } },
    { type: 'pg_track_table', args: { table: 'artists' } },
    { type: 'pg_create_object_relationship', args: { table: 'albums', name: 'artist', using: { foreign_key_constraint_on: 'artist_id' } } },
  ],
};
const QUERY = { query: '{ albums(limit: 10, order_by: {id: asc}) { title artist { name } } }' };

function flag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

async function main(): Promise<void> {
  const duration = flag('duration', 10);
  const connections = flag('connections', 40);
  const max = flag('max', 3);
  const haproxyBin = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
  if (!haproxyBin) throw new Error('HAProxy is needed (apt-get install haproxy)');
  if (!existsSync(path.join(peers, 'node_modules', 'autocannon'))) {
    log('installing the load generator in bench/peers ...');
    const npm = spawn('npm', ['install', '--no-audit', '--no-fund'], { cwd: peers, stdio: 'inherit' });
    await new Promise((r) => npm.on('exit', r));
  }
  const autocannon = createRequire(path.join(peers, 'package.json'))('autocannon');
  const { dbUrl } = await loadChinook(root, 'scaleout', log);

  const ports: number[] = [];
  const engines = [];
  for (let i = 0; i < max; i++) ports.push(await freePort());
  engines.push(await startEngine(root, { dbUrl, port: ports[0]! }));
  const meta = async (body: unknown) => {
    const r = await fetch(`http://127.0.0.1:${ports[0]}/v1/metadata`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`metadata: ${r.status} ${await r.text()}`);
  };
  await meta(TRACK);

  const rows: string[] = [];
  for (let n = 1; n <= max; n++) {
    while (engines.length < n) engines.push(await startEngine(root, { dbUrl, port: ports[engines.length]! }));
    const lb = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-haproxy-'));
    const cfg = [
      'global',
      '  maxconn 4000',
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 60s',
      '  timeout server 60s',
      'frontend fe',
      `  bind 127.0.0.1:${lb}`,
      '  default_backend engines',
      'backend engines',
      '  balance roundrobin',
      ...ports.slice(0, n).map((p, i) => `  server e${i} 127.0.0.1:${p}`),
      '',
    ].join('\n');
    writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
    const haproxy = spawn(haproxyBin, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: 'ignore' });
    const stop = async () => {
      await stopChild(haproxy, 2000);
      rmSync(dir, { recursive: true, force: true });
    };
    cleanups.push(stop);
    await sleep(500);
    const opts = { url: `http://127.0.0.1:${lb}/v1/graphql`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(QUERY), connections };
    await autocannon({ ...opts, duration: 3 });
    const { result: r, cpu } = await cpuPerRequest(engines[0]!.pid, () => autocannon({ ...opts, duration }), (x: { requests: { total: number } }) => x.requests.total);
    const res = r as unknown as { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
    rows.push(
      `| ${n} | ${res.requests.average.toFixed(0)} | ${res.latency.p50} / ${res.latency.p99} | ${cpu ? cpu.postgres.toFixed(0) : 'n/a'} | ${cpu ? cpu.machine.toFixed(0) : 'n/a'} | ${res.non2xx + res.errors} |`,
    );
    log(`${n} instance(s): ${res.requests.average.toFixed(0)} req/s`);
    await stop();
    cleanups.splice(cleanups.indexOf(stop), 1);
  }
  console.log(`\nScale-out: ${QUERY.query}, ${connections} connections, ${duration} s per run, ${new Date().toISOString().slice(0, 10)}\n`);
  console.log('| instances | req/s | p50 / p99 ms | PostgreSQL CPU µs/request | machine CPU µs/request | non-2xx + errors |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);

  if (process.argv.includes('--no-replica')) return;
  if (!findStreamingTools()) {
    console.log('\nRead replica: skipped, no Debian PostgreSQL with pg_basebackup (apt-get install postgresql)');
    return;
  }
  const replicaRows = await withReplica(autocannon, connections, duration);
  console.log(`\nOne engine on a primary, without and with one streaming read replica (Debian's PostgreSQL, both on this machine)\n`);
  console.log('| reads from | req/s | p50 / p99 ms | PostgreSQL CPU µs/request (primary + replica) | primary transactions / request | non-2xx + errors |');
  console.log('|---|---|---|---|---|---|');
  for (const row of replicaRows) console.log(row);
}

/** One engine on a streaming pair's primary: measured reading the primary, then its replica. */
async function withReplica(autocannon: (o: object) => Promise<any>, connections: number, duration: number): Promise<string[]> {
  log('starting a primary and its streaming replica (Debian PostgreSQL) ...');
  const pair = await startStreamingPair();
  cleanups.push(() => pair.stop());
  const primary = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} });
  cleanups.push(() => primary.end({ timeout: 1 }));
  await primary.unsafe(readFileSync(path.resolve(root, '../shared/datasets/chinook/chinook.sql'), 'utf8')).simple();
  const port = await freePort();
  const engine = await startEngine(root, { dbUrl: pair.primaryUrl, port });
  const meta = async (body: unknown) => {
    const r = await fetch(`http://127.0.0.1:${port}/v1/metadata`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`metadata: ${r.status} ${await r.text()}`);
  };
  await meta(TRACK);
  // The replica has replayed Chinook once it counts the albums the primary has.
  const replica = postgres(pair.replicaUrl, { max: 1, onnotice: () => {} });
  cleanups.push(() => replica.end({ timeout: 1 }));
  const [{ n }] = await primary`select count(*)::int as n from albums`;
  for (let i = 0; ; i++) {
    const [{ m }] = await replica`select count(*)::int as m from albums`.catch(() => [{ m: -1 }]);
    if (m === n) break;
    if (i > 300) throw new Error('the replica did not catch up in 30 s');
    await sleep(100);
  }
  const commits = async () => Number((await primary`select sum(xact_commit)::bigint as c from pg_stat_database`)[0]!.c);
  const opts = { url: `http://127.0.0.1:${port}/v1/graphql`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(QUERY), connections };
  const rows: string[] = [];
  for (const [label, replicas] of [['primary', []], ['one replica', [{ database_url: pair.replicaUrl }]]] as const) {
    await meta({ type: 'pg_update_source', args: { name: 'default', configuration: { connection_info: { database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' } }, read_replicas: replicas } } });
    await autocannon({ ...opts, duration: 3 });
    const before = await commits();
    const { result: r, cpu } = await cpuPerRequest(engine.pid!, () => autocannon({ ...opts, duration }), (x: { requests: { total: number } }) => x.requests.total);
    const res = r as unknown as { requests: { average: number; total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
    const perRequest = (await commits()) - before;
    rows.push(
      `| ${label} | ${res.requests.average.toFixed(0)} | ${res.latency.p50} / ${res.latency.p99} | ${cpu ? cpu.postgres.toFixed(0) : 'n/a'} | ${(perRequest / Math.max(1, res.requests.total)).toFixed(2)} | ${res.non2xx + res.errors} |`,
    );
    log(`reads from ${label}: ${res.requests.average.toFixed(0)} req/s`);
  }
  return rows;
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
