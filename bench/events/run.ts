/**
 * Event-trigger benchmark (issue 9, "Reliability and performance"): a stream of inserts into a
 * table with an event trigger whose webhook is a loopback HTTP server in this process.
 *
 *   npm run bench:events [-- --rate 1000 --seconds 60 --warmup 5 --probes 3 --idle 6000]
 *   (or BENCH_RATE, BENCH_SECONDS, BENCH_WARMUP, BENCH_PROBES, BENCH_IDLE_MS; flags win.
 *   BENCH_SLOW_MS: PostgreSQL logs the statements slower than that, summed up at the end;
 *   BENCH_ENGINE_NODE_OPTIONS: extra node flags for the engine, e.g. `--cpu-prof`)
 *
 * Steps: start PostgreSQL in a temp dir; start the engine as `npm start` does (its own process,
 * default event settings, metadata sync off), track `bench_events` and give it an insert event
 * trigger whose webhook is this process. Then:
 *   - warm-up: --warmup seconds at --rate (the engine's JIT), not measured, all delivered;
 *   - idle probes: --probes single inserts, each after the engine has seen no event for --idle
 *     ms (longer than the default --events-fetch-interval of 1 s and than the 5 s a worker keeps
 *     polling after it claimed): the latency of the first event after a quiet spell;
 *   - the stream: --rate inserts a second for --seconds, each its own transaction (autocommit),
 *     from 8 connections; every 2 s the pending events in svc_catalog.event_log are counted
 *     (the backlog); then the benchmark waits until every event was delivered (at most 60 s).
 * The commit time of a row is this process's clock when its INSERT returned (after COMMIT); the
 * webhook records its clock when a request's body has arrived, in the same process, so the
 * latency is commit -> webhook without clock skew. The engine's CPU time is utime + stime of its
 * process (/proc/<pid>/stat) from the stream's start to the last delivery, per event.
 * Printed: inserted, delivered, duplicates, missing, the backlog samples, latency p50/p95/p99/max
 * (target p95 < 50 ms), CPU per event. Exit status 1 when an event is missing.
 * Everything started is stopped and the temp dir removed, on Ctrl-C and errors too.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { freePort, startEmbeddedPostgres } from '../../server/embedded.js';
import { cleanup, cleanups, log, signalled, sleep, startEngine } from '../common.js';

const root = new URL('../..', import.meta.url).pathname;
const TARGET_P95_MS = 50;
const CONNECTIONS = 8;
const SAMPLE_MS = 2000;

function parseFlags(argv: string[]) {
  const env = process.env;
  const flags: Record<'rate' | 'seconds' | 'probes' | 'idle' | 'warmup', number> = {
    rate: Number(env.BENCH_RATE ?? 1000),
    seconds: Number(env.BENCH_SECONDS ?? 60),
    probes: Number(env.BENCH_PROBES ?? 3),
    warmup: Number(env.BENCH_WARMUP ?? 5),
    idle: Number(env.BENCH_IDLE_MS ?? 6000),
  };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i]!);
    if (!m || !(m[1]! in flags)) throw new Error(`unknown argument ${argv[i]} (flags: ${Object.keys(flags).map((f) => `--${f}`).join(', ')})`);
    (flags as Record<string, number>)[m[1]!] = Number(m[2] ?? argv[++i]);
  }
  for (const [k, n] of Object.entries(flags)) {
    if (!Number.isFinite(n) || n < (k === 'probes' || k === 'warmup' ? 0 : 1)) throw new Error(`--${k}: not a valid number: ${n}`);
  }
  return flags;
}

/** Milliseconds on one clock for the inserts and the webhook (same process). */
const now = () => performance.timeOrigin + performance.now();

/** CPU seconds (user + system) of a process, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds of the PostgreSQL cluster: its postmaster (postmaster.pid) and every process whose
 * parent it is, those alive when asked (backends that exited meanwhile are not counted). */
function pgCpuSeconds(dataDir: string): number {
  const pm = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  let sum = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(d) === pm || Number(fields[1]) === pm) sum += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      /* gone */
    }
  }
  return sum;
}

/** Busy and total jiffies of the whole machine (/proc/stat): other processes share it. */
function machineTicks(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - (f[4] ?? 0), total };
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x.toFixed(1)} ms`);

/** The webhook: receive time per row id, and how many times each id came. */
async function startWebhook() {
  const received = new Map<number, { at: number; count: number }>();
  let requests = 0;
  let lastAt = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      requests++;
      lastAt = at;
      try {
        const id = Number(JSON.parse(Buffer.concat(chunks).toString('utf8')).event.data.new.id);
        const r = received.get(id);
        if (r) r.count++;
        else received.set(id, { at, count: 1 });
      } catch {
        /* not an event: counted as a request only */
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    get requests() {
      return requests;
    },
    get lastAt() {
      return lastAt;
    },
  };
}

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  const load0 = loadavg();
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-events-'));
  chmodSync(dir, 0o755); // PostgreSQL runs as another user when this runs as root
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));

  log('starting PostgreSQL ...');
  // BENCH_SLOW_MS: PostgreSQL logs the statements slower than that, summed up at the end.
  const slowMs = Number(process.env.BENCH_SLOW_MS ?? 0);
  const slow = new Map<string, { n: number; ms: number }>();
  const onLog = (m: string) => {
    for (const d of m.matchAll(/duration: ([\d.]+) ms\s+(?:statement|execute [^:]*): \s*([\s\S]{0,90})/g)) {
      const key = d[2]!.replace(/\s+/g, ' ').slice(0, 70);
      const e = slow.get(key) ?? { n: 0, ms: 0 };
      e.n++;
      e.ms += Number(d[1]);
      slow.set(key, e);
    }
  };
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false, onLog });
  cleanups.push(() => pg.stop());
  await pg.createDatabase('bench');
  const dbUrl = pg.url('bench');
  const sql = postgres(dbUrl, { max: CONNECTIONS, onnotice: () => {}, connection: { application_name: 'svc-bench' } });
  cleanups.push(() => sql.end({ timeout: 1 }));
  if (slowMs > 0) await sql.unsafe(`alter database bench set log_min_duration_statement = ${slowMs}`);
  await sql.unsafe('create table bench_events (id bigserial primary key, n int not null, inserted_at timestamptz not null default clock_timestamp())');

  const hook = await startWebhook();
  const port = await freePort();
  // BENCH_ENGINE_NODE_OPTIONS: extra node flags for the engine, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const nodeFlags = (process.env.BENCH_ENGINE_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  const engine = await startEngine(root, { dbUrl, port, nodeFlags, detached: true });
  const metadata = async (body: unknown) => {
    const r = await fetch(`http://127.0.0.1:${port}/v1/metadata`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    if (!r.ok) throw new Error(`${JSON.stringify(body).slice(0, 80)}: ${r.status} ${await r.text()}`);
  };
  await metadata({ type: 'pg_track_table', args: { source: 'default', table: { schema: 'public', name: 'bench_events' } } });
  await metadata({
    type: 'pg_create_event_trigger',
    args: { source: 'default', table: { schema: 'public', name: 'bench_events' }, name: 'bench_events', webhook: hook.url, insert: { columns: '*' } },
  });

  /** Commit time by row id. */
  const committed = new Map<number, number>();
  const insert = async (n: number) => {
    const [r] = await sql<{ id: string }[]>`insert into bench_events (n) values (${n}) returning id`;
    committed.set(Number(r!.id), now());
  };
  const waitDelivered = async (ids: Iterable<number>, timeoutMs: number) => {
    const end = Date.now() + timeoutMs;
    for (const id of ids) {
      while (!hook.received.has(id)) {
        if (Date.now() > end || signalled.now) return false;
        await sleep(5);
      }
    }
    return true;
  };

  // Warm-up: the first event (connections), then --warmup seconds at the rate (JIT), not measured.
  await insert(0);
  if (!(await waitDelivered(committed.keys(), 30_000))) throw new Error('the warm-up event was not delivered within 30 s');
  if (flags.warmup > 0) {
    log(`warming up: ${flags.rate} inserts/s for ${flags.warmup} s ...`);
    const w0 = Date.now();
    const n = Math.round(flags.rate * flags.warmup);
    const warm: Promise<void>[] = [];
    for (let i = 0; i < n && !signalled.now; ) {
      const due = Math.min(n, Math.floor(((Date.now() - w0) / 1000) * flags.rate));
      while (i < due) warm.push(insert(-1_000_000 - i++));
      await sleep(2);
    }
    await Promise.all(warm);
    if (!(await waitDelivered(committed.keys(), 120_000))) throw new Error('the warm-up events were not delivered within 120 s');
  }

  // Idle probes.
  const probes: number[] = [];
  for (let i = 0; i < flags.probes && !signalled.now; i++) {
    await sleep(flags.idle);
    await insert(-1 - i);
    const id = Math.max(...committed.keys());
    await waitDelivered([id], 30_000);
    const got = hook.received.get(id);
    probes.push(got ? got.at - committed.get(id)! : NaN);
    log(`  idle probe ${i + 1}: ${ms(probes.at(-1)!)}`);
  }
  const before = new Set(committed.keys());

  // The stream.
  log(`driving ${flags.rate} inserts/s for ${flags.seconds} s ...`);
  const backlog: { t: number; pending: number; rate: number }[] = [];
  const cpu0 = cpuSeconds(engine.pid!);
  const own0 = process.cpuUsage();
  const pg0 = pgCpuSeconds(dir);
  const m0 = machineTicks();
  const t0 = Date.now();
  const total = Math.round(flags.rate * flags.seconds);
  let issued = 0;
  let failed = 0;
  const running = new Set<Promise<void>>();
  let nextSample = t0;
  let lastRequests = hook.requests;
  let lastSampleAt = Date.now();
  const sampler = async () => {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from svc_catalog.event_log where delivered = false and error = false and archived = false`;
    const at = Date.now();
    const rate = ((hook.requests - lastRequests) * 1000) / Math.max(1, at - lastSampleAt);
    lastRequests = hook.requests;
    lastSampleAt = at;
    backlog.push({ t: (at - t0) / 1000, pending: r!.n, rate });
  };
  const samples: Promise<void>[] = [];
  while (issued < total && !signalled.now) {
    const elapsed = Date.now() - t0;
    const due = Math.min(total, Math.floor((elapsed / 1000) * flags.rate));
    while (issued < due) {
      const p = insert(issued++)
        .catch(() => void failed++)
        .finally(() => running.delete(p));
      running.add(p);
    }
    if (Date.now() >= nextSample) {
      samples.push(sampler().catch(() => {}));
      nextSample += SAMPLE_MS;
    }
    await sleep(2);
  }
  await Promise.all(running);
  const driveSec = (Date.now() - t0) / 1000;
  const streamIds = [...committed.keys()].filter((id) => !before.has(id));
  // Keep sampling the backlog while the last events go out.
  const draining = waitDelivered(streamIds, 60_000);
  let drained = false;
  void draining.then(() => (drained = true));
  while (!drained && !signalled.now) {
    if (Date.now() >= nextSample) {
      samples.push(sampler().catch(() => {}));
      nextSample += SAMPLE_MS;
    }
    await sleep(20);
  }
  const allDelivered = await draining;
  const cpu1 = cpuSeconds(engine.pid!);
  const own1 = process.cpuUsage(own0);
  const pg1 = pgCpuSeconds(dir);
  const m1 = machineTicks();
  const totalSec = (Date.now() - t0) / 1000;
  await sampler().catch(() => {});
  await Promise.all(samples);
  // Late duplicates (a redelivery) would come after: a moment to see them.
  await sleep(1000);

  const latencies: number[] = [];
  let duplicates = 0;
  let missing = 0;
  for (const id of streamIds) {
    const r = hook.received.get(id);
    if (!r) missing++;
    else {
      latencies.push(r.at - committed.get(id)!);
      duplicates += r.count - 1;
    }
  }
  const delivered = streamIds.length - missing;
  const [{ n: dbPending }] = await sql<{ n: number }[]>`select count(*)::int as n from svc_catalog.event_log where delivered = false and error = false and archived = false`;
  const load1 = loadavg();
  const p95 = pct(latencies, 95);
  const maxBacklog = Math.max(...backlog.map((b) => b.pending));

  const out: string[] = [];
  const row = (k: string, v: string) => out.push(`${k.padEnd(38)} ${v}`);
  out.push('', `bench:events  ${new Date().toISOString()}  ${cpus().length} CPUs, load ${load0[0]!.toFixed(2)} at start, ${load1[0]!.toFixed(2)} at end (1-min average)`);
  out.push(`--rate ${flags.rate} --seconds ${flags.seconds} (after ${flags.warmup} s of warm-up): ${streamIds.length} inserts issued in ${driveSec.toFixed(1)} s (${(streamIds.length / driveSec).toFixed(0)}/s), ${failed} failed`, '');
  row('events inserted (committed)', String(streamIds.length));
  row('events delivered', `${delivered}${allDelivered ? ' (all)' : ` (${missing} MISSING after 60 s)`}`);
  row('duplicate deliveries', String(duplicates));
  row('pending in event_log at the end', String(dbPending));
  row('backlog samples (s: pending)', backlog.map((b) => `${b.t.toFixed(0)}:${b.pending}`).join(' '));
  row('deliveries/s between samples', backlog.map((b) => b.rate.toFixed(0)).join(' '));
  row('backlog max', String(maxBacklog));
  row('commit -> webhook p50', ms(pct(latencies, 50)));
  row('commit -> webhook p95', `${ms(p95)} (target < ${TARGET_P95_MS} ms: ${p95 < TARGET_P95_MS ? 'met' : 'NOT met'})`);
  row('commit -> webhook p99', ms(pct(latencies, 99)));
  row('commit -> webhook max', ms(Math.max(...latencies)));
  row('engine CPU per event', `${(((cpu1 - cpu0) / Math.max(1, delivered)) * 1e6).toFixed(0)} us (${(cpu1 - cpu0).toFixed(2)} s over ${delivered} events, ${(((cpu1 - cpu0) / driveSec) * 100).toFixed(0)} % of a core)`);
  row('this process CPU (inserts, webhook)', `${(((own1.user + own1.system) / 1e6 / totalSec) * 100).toFixed(0)} % of a core`);
  const cores = (s: number) => `${((s / totalSec) * 100).toFixed(0)} % of a core`;
  row('PostgreSQL CPU (cluster)', cores(pg1 - pg0));
  const machineSec = ((m1.busy - m0.busy) / (m1.total - m0.total)) * cpus().length * totalSec;
  row('machine CPU busy (all processes)', `${(((m1.busy - m0.busy) / (m1.total - m0.total)) * 100).toFixed(0)} % of ${cpus().length} cores; other processes than these three: ${cores(machineSec - (cpu1 - cpu0) - (own1.user + own1.system) / 1e6 - (pg1 - pg0))}`);
  if (probes.length) row(`first event after ${flags.idle} ms idle`, probes.map((p) => ms(p)).join(', '));
  if (slowMs > 0) {
    out.push('', `statements slower than ${slowMs} ms (count, total ms, text):`);
    for (const [k, v] of [...slow].sort((a, b) => b[1].ms - a[1].ms).slice(0, 10)) out.push(`  ${String(v.n).padStart(6)} ${v.ms.toFixed(0).padStart(8)}  ${k}`);
  }
  console.log(out.join('\n'));
  if (!allDelivered || failed > 0) process.exitCode = 1;
}

try {
  await main();
} catch (e) {
  console.error(`\nbench:events failed: ${e instanceof Error ? e.message : e}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
