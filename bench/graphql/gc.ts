/**
 * The engine's threads and collections under one query at a fixed rate (issue 25): where its CPU
 * per request goes between the main thread (which answers every request, and bounds a server
 * with cores to spare) and the others (V8's collector threads, a records worker), and how many
 * scavenges and mark-compacts each run took, with their time on the main thread (V8's
 * --trace-gc). A mark-compact marks the whole live heap, so what starts them matters most where
 * the metadata is large: `--extra-tables N` tracks N more tables (each with a role's select
 * permission) beside Chinook, and asks for the admin's schema once, before the runs.
 *
 * `--only` names bench queries (queries.ts) and mutations (mutations.ts: insert_one, update_by_pk,
 * delete_by_pk; each update or delete on a pre-created playlist of its own, as bench:graphql
 * sends them), to set a mutation's threads and collections beside a query's (part 1 of issue 25).
 *
 *   taskset -c 1 npx tsx bench/graphql/gc.ts --only nested --rate 1000 [--rounds 3 --duration 10
 *     --warmup 2 --extra-tables 2000 --server-cpus 0 --engine-env 'SVC_GRAPHQL_X=v'
 *     --engine-flags '--flag' --sslmode require]
 *
 * `--sslmode MODE` starts PostgreSQL with TLS (test/tls's certificates, test/tls-postgres.ts) and
 * gives the engine's URL that sslmode.
 * The engine runs as `npm start` runs it (bench/common.ts `engineArgs`) with --trace-gc added, on
 * the Node that runs this script. The CPU of each thread is read from /proc (schedstat, in
 * nanoseconds) before and after each timed run; the GC lines are those the engine printed
 * during it.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { cleanup, cleanups, engineArgs, loadChinook, log, stopChild, waitHealthy } from '../common.js';
import { freePort } from '../../server/embedded.js';
import { chinookMetadata, post } from './chinook.js';
import { queries } from './queries.js';
import { mutations, POOL_BASE, POOL_NAME } from './mutations.js';
import { tlsSettings } from '../../test/tls-postgres.js';

const root = new URL('../..', import.meta.url).pathname;

function parseFlags(argv: string[]) {
  const flags = { only: ['nested'], rate: 1000, rounds: 3, duration: 10, warmup: 2, extraTables: 0, serverCpus: undefined as string | undefined, engineEnv: {} as Record<string, string>, engineFlags: [] as string[], sslmode: undefined as string | undefined };
  const usage = "flags: --only q1,q2, --rate R, --rounds N, --duration S, --warmup S, --extra-tables N, --server-cpus LIST, --engine-env 'K=v ...', --engine-flags '--flag ...', --sslmode MODE";
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)$/.exec(argv[i]!);
    const value = argv[++i];
    if (!m || value === undefined) throw new Error(`unknown argument ${argv[i - 1]} (${usage})`);
    const n = Number(value);
    const count = () => {
      if (!Number.isInteger(n) || n < 0) throw new Error(`--${m[1]}: not a whole number: ${value}`);
      return n;
    };
    if (m[1] === 'only') {
      const names = value.split(',');
      const unknown = names.filter((q) => !queries.some((x) => x.name === q) && !mutations.some((x) => x.name === q && x.name !== 'insert_nested'));
      if (unknown.length) throw new Error(`--only: no such query or mutation: ${unknown.join(', ')} (queries: ${queries.map((q) => q.name).join(', ')}; mutations: insert_one, update_by_pk, delete_by_pk)`);
      flags.only = names;
    } else if (m[1] === 'rate') flags.rate = count() || 1;
    else if (m[1] === 'rounds') flags.rounds = count() || 1;
    else if (m[1] === 'duration') flags.duration = count() || 1;
    else if (m[1] === 'warmup') flags.warmup = count();
    else if (m[1] === 'extra-tables') flags.extraTables = count();
    else if (m[1] === 'server-cpus') {
      if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(value)) throw new Error(`--server-cpus: not a CPU list as taskset -c takes it: ${value}`);
      flags.serverCpus = value;
    } else if (m[1] === 'engine-env') {
      for (const kv of value.split(/\s+/).filter(Boolean)) {
        const eq = kv.indexOf('=');
        if (eq < 1) throw new Error(`--engine-env: not NAME=value: ${kv}`);
        flags.engineEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
    } else if (m[1] === 'engine-flags') flags.engineFlags = value.split(/\s+/).filter(Boolean);
    else if (m[1] === 'sslmode') flags.sslmode = value;
    else throw new Error(`unknown flag --${m[1]} (${usage})`);
  }
  return flags;
}

/** CPU µs of each thread of `pid` so far, by thread id. */
function threadCpu(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(t), Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1000);
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

/** The collections of --trace-gc lines: their number and main-thread ms (pause, and for a
 * mark-compact its incremental steps). */
function collections(lines: readonly string[]) {
  const c = { scavenges: 0, scavengeMs: 0, markCompacts: 0, markCompactMs: 0 };
  for (const l of lines) {
    const m = /(Mark-Compact|Scavenge) .*?MB, ([\d.]+) \/ [\d.]+ ms(?:\s+\(\+ ([\d.]+) ms in)?/.exec(l);
    if (!m) continue;
    if (m[1] === 'Scavenge') {
      c.scavenges++;
      c.scavengeMs += Number(m[2]);
    } else {
      c.markCompacts++;
      c.markCompactMs += Number(m[2]) + Number(m[3] ?? 0);
    }
  }
  return c;
}

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  // --sslmode: PostgreSQL with TLS (test/tls's certificates), the engine's URL with that sslmode.
  const tls = flags.sslmode ? tlsSettings() : undefined;
  if (tls) cleanups.push(async () => tls.remove());
  const chinook = await loadChinook(root, 'gc', undefined, tls?.settings);
  const { sql } = chinook;
  const dbUrl = flags.sslmode ? `${chinook.dbUrl}?sslmode=${flags.sslmode}` : chinook.dbUrl;
  const ops = await chinookMetadata(sql);
  if (flags.extraTables > 0) {
    log(`creating ${flags.extraTables} more tables ...`);
    await sql.unsafe('create schema extra');
    await sql.unsafe(`do $$ begin for i in 1..${flags.extraTables} loop execute format('create table extra.t%s (id int primary key, name text, n int)', i); end loop; end $$`);
    for (let i = 1; i <= flags.extraTables; i++) {
      const table = { schema: 'extra', name: `t${i}` };
      ops.push({ type: 'pg_track_table', args: { source: 'default', table } });
      ops.push({ type: 'pg_create_select_permission', args: { source: 'default', table, role: 'user', permission: { columns: '*', filter: { n: { _eq: 'X-Svc-User-Id' } } } } });
    }
  }
  await sql.unsafe('analyze');
  const port = await freePort();
  const args = engineArgs(root, ['--trace-gc', ...flags.engineFlags]);
  const [cmd, argv] = flags.serverCpus ? ['taskset', ['-c', flags.serverCpus, process.execPath, ...args]] : [process.execPath, args];
  log('starting the engine ...');
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_GRAPHQL_')));
  const engine = spawn(cmd as string, argv as string[], {
    cwd: root,
    env: { ...inherited, SVC_GRAPHQL_DATABASE_URL: dbUrl, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_SERVER_HOST: '127.0.0.1', SVC_GRAPHQL_LOG_LEVEL: 'warn', SVC_GRAPHQL_METADATA_SYNC_INTERVAL: '0', ...flags.engineEnv },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(() => stopChild(engine, 10_000));
  const gcLines: string[] = [];
  let rest = '';
  engine.stdout!.on('data', (chunk: Buffer) => {
    const text = rest + chunk.toString('utf8');
    const lines = text.split('\n');
    rest = lines.pop()!;
    gcLines.push(...lines);
  });
  await waitHealthy(engine, port);
  const pid = engine.pid!; // taskset execs node: the same process
  const b = await post(`http://127.0.0.1:${port}/v1/metadata`, { type: 'bulk', args: ops });
  if (b.status !== 200) throw new Error(`the metadata bulk failed: ${b.status} ${b.text.slice(0, 300)}`);
  // The admin's whole schema, once: what a console or a client's introspection builds.
  const intro = await post(`http://127.0.0.1:${port}/v1/graphql`, { query: '{ __schema { types { name } } }' });
  if (intro.status !== 200) throw new Error(`introspection failed: ${intro.status}`);

  console.log(
    `The engine's threads and collections: ${flags.only.join(', ')} at ${flags.rate} req/s, ${flags.rounds} round(s) of ${flags.duration} s after ${flags.warmup} s, ` +
      `${flags.extraTables} more tables tracked, Node ${process.versions.node}${flags.serverCpus ? `, the engine on CPU ${flags.serverCpus}` : ''}` +
      `${flags.engineFlags.length ? `, flags ${flags.engineFlags.join(' ')}` : ''}${Object.keys(flags.engineEnv).length ? `, env ${Object.entries(flags.engineEnv).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}` +
      `${flags.sslmode ? `, PostgreSQL over TLS (sslmode=${flags.sslmode})` : ''}`,
  );
  // The rows the updates and deletes act on, one a request (as bench:graphql's pool), with room
  // for autocannon sending somewhat more than the rate.
  const pooled = flags.only.filter((n) => mutations.find((m) => m.name === n)?.rows === 'pool').length;
  let next = POOL_BASE;
  if (pooled > 0) {
    const rows = Math.ceil(flags.rate * (flags.warmup + flags.duration) * flags.rounds * pooled * 1.5) + 1000;
    await sql.unsafe(`insert into playlists (id, name) select g, $1 from generate_series(${POOL_BASE}, ${POOL_BASE + rows - 1}) as g`, [POOL_NAME]);
    await sql.unsafe('vacuum analyze playlists');
  }
  console.log('round query      req/s   main µs/req  other threads µs/req  scavenges (main ms)  mark-compacts (main ms)');
  for (let round = 1; round <= flags.rounds; round++) {
    for (const name of flags.only) {
      const q = queries.find((x) => x.name === name);
      const m = q ? undefined : mutations.find((x) => x.name === name)!;
      const req = q ? { query: q.svc.query, headers: q.svc.headers, variables: () => q.svc.variables ?? {} } : { query: m!.svc.query, headers: m!.svc.headers, variables: (id?: number) => m!.svc.variables(id) };
      const opts = {
        url: `http://127.0.0.1:${port}/v1/graphql`,
        method: 'POST' as const,
        headers: { 'content-type': 'application/json', ...(req.headers ?? {}) },
        body: JSON.stringify({ query: req.query, variables: req.variables() }),
        connections: 10,
        overallRate: flags.rate,
        // A pool mutation: each request on a row of its own.
        ...(m?.rows === 'pool' ? { setupRequest: (r: Record<string, unknown>) => ({ ...r, body: JSON.stringify({ query: req.query, variables: req.variables(next++) }) }) } : {}),
      };
      const first = next;
      if (flags.warmup > 0) await autocannon({ ...opts, duration: flags.warmup });
      const before = threadCpu(pid);
      const from = gcLines.length;
      const r = await autocannon({ ...opts, duration: flags.duration });
      const after = threadCpu(pid);
      const gc = collections(gcLines.slice(from));
      const n = r.requests.total;
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} answers not 2xx, ${r.errors} errors`);
      if (m?.rows === 'pool') {
        // Every row a request was made for was written (deleted, or renamed), but the last one
        // of each connection, which autocannon may have made and not sent when it stopped.
        const left = Number((await sql.unsafe(`select count(*) as n from playlists where id >= $1 and id < $2 and name = $3`, [first, next, POOL_NAME]))[0]!.n);
        if (left > opts.connections) throw new Error(`${name}: ${left} of the ${next - first} rows requests were made for were not written`);
      }
      let main = 0;
      let other = 0;
      for (const [tid, us] of after) {
        const used = us - (before.get(tid) ?? 0);
        if (tid === pid) main += used;
        else other += used;
      }
      console.log(
        `${String(round).padEnd(5)} ${name.padEnd(10)} ${String(Math.round(n / flags.duration)).padStart(5)}   ${(main / n).toFixed(0).padStart(11)}  ${(other / n).toFixed(0).padStart(20)}  ` +
          `${`${gc.scavenges} (${gc.scavengeMs.toFixed(0)})`.padStart(19)}  ${`${gc.markCompacts} (${gc.markCompactMs.toFixed(0)})`.padStart(23)}`,
      );
    }
  }
}

main()
  .catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
