/**
 * GraphQL benchmark (issue 6, "Benchmark"): this engine against PostGraphile v5 and a hand-written
 * hono + postgres.js handler, on the Chinook dataset in one embedded PostgreSQL.
 *
 *   npm run bench:graphql [-- --duration 10 --connections 20 --warmup 3 --only simple,by_pk]
 *
 * Steps: start PostgreSQL in a temp dir and load ../shared/datasets/chinook; start the engine
 * (Node 20) and track every table with its relationships and a `user` role; start PostGraphile
 * (Node 22 from bench/peers, installed there on first use) and the hand-written handler; ask every
 * server every query once and compare the answers; then drive each server in turn with autocannon
 * and print req/s, p50 and p99 per query and server, and the ratios against the issue's targets.
 * A server that cannot answer a query (an error, or data that differs) is not timed: its cell says
 * n/a and why. Everything started is stopped and the temp dir removed, on Ctrl-C and errors too.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { freePort, startEmbeddedPostgres } from '../../server/embedded.js';
import { difference, queries, unwrapNodes, type BenchQuery, type GraphQLRequest } from './queries.js';

const root = new URL('../..', import.meta.url).pathname;
const peers = path.join(root, 'bench/peers');
const chinook = path.resolve(root, '../shared/datasets/chinook/chinook.sql');

// ---------------------------------------------------------------------------------------------
// Flags

function parseFlags(argv: string[]) {
  const flags = { duration: 10, connections: 20, warmup: 3, only: undefined as string[] | undefined };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) throw new Error(`unknown argument ${argv[i]} (flags: --duration S, --connections N, --warmup S, --only q1,q2)`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    if (m[1] === 'only') {
      flags.only = value.split(',').filter(Boolean);
      const unknown = flags.only.filter((n) => !queries.some((q) => q.name === n));
      if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (queries: ${queries.map((q) => q.name).join(', ')})`);
    } else if (m[1] === 'duration' || m[1] === 'connections' || m[1] === 'warmup') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < (m[1] === 'warmup' ? 0 : 1)) throw new Error(`--${m[1]}: not a valid count: ${value}`);
      flags[m[1]] = n;
    } else {
      throw new Error(`unknown flag --${m[1]} (flags: --duration S, --connections N, --warmup S, --only q1,q2)`);
    }
  }
  return flags;
}

// ---------------------------------------------------------------------------------------------
// Clean-up: everything started registers how to stop it; run in reverse order exactly once,
// whether the run ends normally, by an error or by a signal.

const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
/** Set by a signal: the run stops at the next step instead of timing servers being stopped. */
let interrupted = false;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      try {
        await cleanups.pop()!();
      } catch (e) {
        console.error(`clean-up: ${e instanceof Error ? e.message : e}`);
      }
    }
  })();
  return cleaning;
}
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: stopping the servers and removing the temp dir`);
    void cleanup().finally(() => process.exit(code));
  });
}

const log = (s: string) => console.error(s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Server processes

interface Proc {
  name: string;
  child: ChildProcess;
  /** The last lines it printed, shown if it fails. */
  tail: string[];
}

function startProcess(name: string, command: string, args: string[], opts: { cwd: string; env: Record<string, string> }): Proc {
  // The caller's SVC_GRAPHQL_* settings are not the benchmark's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_GRAPHQL_')));
  // Detached: a Ctrl-C reaches only this process, which stops the servers in order.
  const child = spawn(command, args, { cwd: opts.cwd, env: { ...env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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
  const { child } = p;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
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

type ServerName = 'svc' | 'postgraphile' | 'handwritten';
const SERVERS: ServerName[] = ['svc', 'postgraphile', 'handwritten'];
const LABEL: Record<ServerName, string> = { svc: 'Svc', postgraphile: 'PostGraphile', handwritten: 'hand-written' };

interface Target {
  url: string;
  /** The request this server is sent for a query, or why it has none. */
  request(q: BenchQuery): GraphQLRequest | { skip: string };
  /** Its answer's data in Svc's shape. */
  canonical(q: BenchQuery, data: any): unknown;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, text: await r.text() };
}

/** The engine's metadata for Chinook: every table, a relationship per foreign key both ways
 * (named as Hasura's console suggests: albums.artist, artists.albums, playlists.playlist_tracks),
 * and the `user` role's row filter on albums. */
async function chinookMetadata(sql: postgres.Sql): Promise<unknown[]> {
  const tables = await sql<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`;
  const columns = await sql<{ t: string; c: string }[]>`select table_name as t, column_name as c from information_schema.columns where table_schema = 'public'`;
  const fks = await sql<{ t: string; c: string; ref: string }[]>`
    select cl.relname as t, a.attname as c, rf.relname as ref
    from pg_constraint k
    join pg_class cl on cl.oid = k.conrelid join pg_namespace n on n.oid = cl.relnamespace
    join pg_class rf on rf.oid = k.confrelid
    join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1]
    where k.contype = 'f' and n.nspname = 'public' and cardinality(k.conkey) = 1
    order by 1, 2`;
  const singular = (s: string) => (s.endsWith('ies') ? `${s.slice(0, -3)}y` : s.endsWith('s') ? s.slice(0, -1) : s);
  const plural = (s: string) => (s.endsWith('s') ? s : s.endsWith('y') ? `${s.slice(0, -1)}ies` : `${s}s`);
  // A suggested name that is taken (a column, or another relationship) gets the column appended.
  const taken = new Map<string, Set<string>>(tables.map((t) => [t.name, new Set(columns.filter((c) => c.t === t.name).map((c) => c.c))]));
  const name = (table: string, wanted: string, column: string) => {
    const used = taken.get(table)!;
    const n = used.has(wanted) ? `${wanted}_by_${column}` : wanted;
    used.add(n);
    return n;
  };
  const ops: unknown[] = tables.map((t) => ({ type: 'pg_track_table', args: { source: 'default', table: { schema: 'public', name: t.name } } }));
  for (const fk of fks) {
    ops.push({ type: 'pg_create_object_relationship', args: { source: 'default', table: fk.t, name: name(fk.t, singular(fk.ref), fk.c), using: { foreign_key_constraint_on: fk.c } } });
    ops.push({
      type: 'pg_create_array_relationship',
      args: { source: 'default', table: fk.ref, name: name(fk.ref, plural(fk.t), fk.c), using: { foreign_key_constraint_on: { table: fk.t, column: fk.c } } },
    });
  }
  ops.push({
    type: 'pg_create_select_permission',
    args: { source: 'default', table: 'albums', role: 'user', permission: { columns: ['id', 'title', 'artist_id'], filter: { artist_id: { _eq: 'X-Svc-User-Id' } } } },
  });
  return ops;
}

/** A root field's statement as the engine's /v1/graphql/explain gives it: `$n` bind parameters
 * and their values for the query's fixed variables and session. */
type ExplainedField = { field: string; sql: string; params: (string | null)[] };

/**
 * "The SQL this engine generates": Hasura's POST /v1/graphql/explain answers [{field, sql, plan}]
 * per root field, and this engine adds `params`. For each query the engine explains, the
 * hand-written handler runs the engine's statements with those parameters (valid for the query's
 * fixed variables and headers, which the benchmark never changes); for a query it cannot
 * explain, the hand-written SQL of queries.ts, and `label` says which it ran and why.
 */
async function engineSql(svcPort: number, selected: BenchQuery[]): Promise<{ sql: Record<string, ExplainedField[]>; label: Record<string, string> }> {
  const sql: Record<string, ExplainedField[]> = {};
  const label: Record<string, string> = {};
  for (const q of selected) {
    const r = await post(`http://127.0.0.1:${svcPort}/v1/graphql/explain`, { query: { query: q.svc.query, variables: q.svc.variables ?? {} }, user: q.svc.headers ?? {} });
    let fields: unknown;
    try {
      fields = JSON.parse(r.text);
    } catch {
      /* not JSON */
    }
    const ok =
      r.status === 200 &&
      Array.isArray(fields) &&
      fields.length > 0 &&
      fields.every((f) => typeof f?.field === 'string' && typeof f?.sql === 'string' && Array.isArray(f?.params));
    if (!ok) {
      label[q.name] = `hand-written SQL (the engine's /v1/graphql/explain answered ${r.status} ${r.text.slice(0, 120)})`;
      continue;
    }
    sql[q.name] = (fields as ExplainedField[]).map((f) => ({ field: f.field, sql: f.sql, params: f.params }));
    label[q.name] = "the engine's SQL and parameters, from /v1/graphql/explain";
  }
  return { sql, label };
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
}

async function time(autocannon: any, target: Target, req: GraphQLRequest, expectBody: string, flags: ReturnType<typeof parseFlags>): Promise<Timing> {
  const opts = {
    url: target.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...req.headers },
    body: JSON.stringify({ query: req.query, variables: req.variables ?? {} }),
    connections: flags.connections,
  };
  if (flags.warmup > 0) await autocannon({ ...opts, duration: flags.warmup });
  // expectBody: every answer under load must be the one checked above, byte for byte (all the
  // servers answer deterministically: every list is ordered).
  const r = await autocannon({ ...opts, duration: flags.duration, expectBody });
  const trouble = [
    r.non2xx && `${r.non2xx} non-2xx`,
    r.errors && `${r.errors} errors`,
    r.timeouts && `${r.timeouts} timeouts`,
    r.mismatches && `${r.mismatches} answers unlike the checked one`,
  ].filter(Boolean);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, trouble: trouble.length ? trouble.join(', ') : undefined };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  const selected = flags.only ? queries.filter((q) => flags.only!.includes(q.name)) : queries;
  if (!existsSync(chinook)) throw new Error(`the Chinook dataset is not at ${chinook}`);

  // The peers' own package: PostGraphile needs Node 22, which the npm package node@22 provides.
  if (!existsSync(path.join(peers, 'node_modules/.bin/postgraphile')) || !existsSync(path.join(peers, 'node_modules/autocannon'))) {
    log('installing bench/peers (PostGraphile, Node 22, autocannon) ...');
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: peers, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm ci in bench/peers failed');
  }
  const autocannon = createRequire(path.join(peers, 'package.json'))('autocannon');

  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-graphql-'));
  chmodSync(dir, 0o755); // PostgreSQL runs as another user when this runs as root
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));

  log('starting PostgreSQL and loading Chinook ...');
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  cleanups.push(() => pg.stop());
  await pg.createDatabase('chinook');
  const dbUrl = pg.url('chinook');
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  cleanups.push(() => sql.end({ timeout: 1 }));
  await sql.unsafe(readFileSync(chinook, 'utf8')).simple();
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

  // Each server gets 10 database connections: the engine's default pool, pg's Pool default in
  // PostGraphile, and the hand-written handler's setting.
  const [svcPort, pglPort, handPort] = [await freePort(), await freePort(), await freePort()];
  log('starting the engine and PostGraphile ...');
  const svc = startProcess('the engine', process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: { SVC_GRAPHQL_DATABASE_URL: dbUrl, SVC_GRAPHQL_SERVER_PORT: String(svcPort), SVC_GRAPHQL_SERVER_HOST: '127.0.0.1', SVC_GRAPHQL_LOG_LEVEL: 'warn' },
  });
  const pgl = startProcess(
    'PostGraphile',
    path.join(peers, 'node_modules/.bin/node'),
    [path.join(peers, 'node_modules/.bin/postgraphile'), '-C', 'graphile.config.mjs'], // amber preset and plugins: see there
    { cwd: peers, env: { BENCH_DATABASE_URL: dbUrl, BENCH_PORT: String(pglPort), NODE_ENV: 'production' } },
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
  });
  await waitReady(hand, async () => (await fetch(`http://127.0.0.1:${handPort}/healthz`)).ok);

  const targets: Record<ServerName, Target> = {
    svc: { url: `http://127.0.0.1:${svcPort}/v1/graphql`, request: (q) => q.svc, canonical: (_q, d) => d },
    postgraphile: { url: `http://127.0.0.1:${pglPort}/graphql`, request: (q) => q.postgraphile, canonical: (q, d) => (q.fromPostgraphile ? q.fromPostgraphile(d) : unwrapNodes(d)) },
    handwritten: { url: `http://127.0.0.1:${handPort}/v1/graphql`, request: (q) => q.svc, canonical: (_q, d) => d },
  };

  // Check: every server's answer against the first good one, the hand-written handler's first.
  type Cell = { timing?: Timing; na?: string; req?: GraphQLRequest; body?: string };
  const cells = new Map<string, Record<ServerName, Cell>>();
  log('\nchecking the answers:');
  for (const q of selected) {
    const row = {} as Record<ServerName, Cell>;
    let reference: { server: ServerName; canonical: unknown } | undefined;
    const notes: string[] = [];
    for (const s of ['handwritten', 'postgraphile', 'svc'] as ServerName[]) {
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

  log(`\ntiming: ${flags.connections} connections, ${flags.warmup} s warm-up + ${flags.duration} s per query and server`);
  for (const q of selected) {
    for (const s of SERVERS) {
      const cell = cells.get(q.name)![s];
      if (!cell.req) continue;
      const timing = await time(autocannon, targets[s], cell.req, cell.body!, flags);
      if (interrupted) return;
      cell.timing = timing;
      log(`  ${q.name.padEnd(10)} ${LABEL[s].padEnd(13)} ${cell.timing.rps.toFixed(0)} req/s${cell.timing.trouble ? ` (${cell.timing.trouble})` : ''}`);
    }
  }

  report(selected, cells, flags, explained.label, setup);
}

function report(
  selected: BenchQuery[],
  cells: Map<string, Record<ServerName, { timing?: Timing; na?: string }>>,
  flags: ReturnType<typeof parseFlags>,
  sqlSource: Record<string, string>,
  setupProblem: string | undefined,
) {
  const notes: string[] = [];
  const note = (text: string) => {
    const i = notes.indexOf(text);
    return `[${(i < 0 ? notes.push(text) : i + 1)}]`;
  };
  const cell = (q: string, s: ServerName) => {
    const c = cells.get(q)![s];
    if (!c.timing) return `n/a ${note(`${LABEL[s]}: ${c.na}`)}`;
    const t = c.timing;
    return `${t.rps.toFixed(0).padStart(6)} ${t.p50.toFixed(0).padStart(4)} ${t.p99.toFixed(0).padStart(4)}${t.trouble ? ` ${note(`${LABEL[s]}, ${q}: ${t.trouble}`)}` : ''}`;
  };
  const ratio = (q: string, other: ServerName, target: number) => {
    const a = cells.get(q)!.svc.timing;
    const b = cells.get(q)![other].timing;
    if (!a || !b) return 'n/a';
    const r = a.rps / b.rps;
    return `${r.toFixed(2)}x ${r >= target ? 'met' : 'not met'}`;
  };
  const w = 22;
  const out: string[] = [];
  out.push(`\nGraphQL benchmark on Chinook: ${flags.connections} connections, ${flags.duration} s per run after a ${flags.warmup} s warm-up (autocannon)`);
  const sources = [...new Set(selected.map((q) => sqlSource[q.name]))];
  if (sources.length === 1) out.push(`hand-written handler: ${sources[0]}`);
  else for (const q of selected) out.push(`hand-written handler, ${q.name}: ${sqlSource[q.name]}`);
  if (setupProblem) out.push(setupProblem);
  out.push(`each server: req/s, p50 and p99 latency in ms\n`);
  out.push(`${'query'.padEnd(10)} ${SERVERS.map((s) => LABEL[s].padEnd(w)).join(' ')} ${'Svc/PostGraphile >= 1.5x'.padEnd(26)} Svc/hand-written >= 0.85x`);
  out.push(`${''.padEnd(10)} ${SERVERS.map(() => '  req/s  p50  p99'.padEnd(w)).join(' ')}`);
  for (const q of selected) {
    out.push(`${q.name.padEnd(10)} ${SERVERS.map((s) => cell(q.name, s).padEnd(w)).join(' ')} ${ratio(q.name, 'postgraphile', 1.5).padEnd(26)} ${ratio(q.name, 'handwritten', 0.85)}`);
  }
  out.push('');
  for (const q of selected) out.push(`${q.name.padEnd(10)} ${q.title}`);
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
