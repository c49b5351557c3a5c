/**
 * Metadata scaling benchmark (issue: PostgreSQL sources). For N tables (each with a foreign key to
 * the previous one and two roles' select permissions) it measures, against a real server process:
 *   (a) tracking all of them with their relationships and permissions in one bulk request,
 *   (b) one more pg_track_table with N already tracked (and, printed beside it, the same table
 *       untracked again, which looks for what depends on it; and the track again with an
 *       inherited role of the two roles, whose permissions every build makes for every table),
 *   (c) export_metadata,
 *   (d) replace_metadata of that export, and by a document of half its tables and back,
 *   (e) the server's RSS,
 *   (f) the first GraphQL request after a metadata change (it builds the role's schema), as admin
 *       and as a role: a query, a query with a variable of an input type, a mutation with one,
 *   (g) the server's RSS once five roles' schemas are built (three more roles' permissions added),
 *   (h) a restart: the process started until it answers /healthz (the catalog read back and the
 *       metadata built), then the first GraphQL request as admin and as a role,
 *   (i) a run_sql that may change the schema (introspected before and after, the metadata built
 *       again), beside one that cannot,
 * and, side by side, hand-written SQL: a compare-and-set UPDATE of the whole document (what an
 * engine that stores metadata as one document pays per change, as Hasura does) and the same with
 * one row of a per-table catalog (the least any implementation pays for (b)).
 *
 *   npx tsx bench/metadata/run.ts [N ...]        (default: 100 1000 2000)
 *   BENCH_ENGINE_FLAGS='--cpu-prof --cpu-prof-dir=DIR' to profile the engine.
 *   BENCH_DATABASE_URL=postgres://... to use an external server instead of an embedded one.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { freePort, startEmbeddedPostgres } from '../../server/embedded.js';
import { engineArgs, waitHealthy } from '../common.js';
import { createTables, table, trackOps } from './tables.js';

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
const Ns = sizes.length ? sizes : [100, 1000, 2000];
const root = new URL('../..', import.meta.url).pathname;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function post(port: number, pathName: string, body: unknown): Promise<{ status: number; body: any; ms: number }> {
  const t = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}${pathName}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const text = await r.text();
  const ms = performance.now() - t;
  if (r.status !== 200) throw new Error(`${pathName} ${JSON.stringify(body).slice(0, 200)} -> ${r.status} ${text.slice(0, 500)}`);
  return { status: r.status, body: JSON.parse(text), ms };
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  return kb / 1024;
}


async function benchOne(adminUrl: string, n: number) {
  const dbName = `bench_md_${n}_${Date.now()}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  const url = u.toString();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await createTables(sql, n);

  const port = await freePort();
  // BENCH_ENGINE_FLAGS: Node flags for the engine's process (e.g. '--cpu-prof --cpu-prof-dir=/tmp/p').
  const nodeFlags = (process.env.BENCH_ENGINE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const args = engineArgs(root, nodeFlags);
  // The server's own measure of each request (http-log duration), free of the client's noise.
  const serverMs: Record<string, number[]> = {};
  const startEngine = () => {
    const engine = spawn(process.execPath, args, {
      cwd: root,
      // The caller's SVC_GRAPHQL_* settings go to the engine (e.g. SVC_GRAPHQL_METADATA_HISTORY_LIMIT=0
      // to time it without metadata history); the database, port and log level are the bench's.
      env: {
        PATH: process.env.PATH,
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SVC_GRAPHQL_'))),
        SVC_GRAPHQL_DATABASE_URL: url,
        SVC_GRAPHQL_SERVER_PORT: String(port),
        SVC_GRAPHQL_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let pending = '';
    engine.stdout!.on('data', (d: Buffer) => {
      pending += d.toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (!line.includes('"http-log"')) continue;
        const { detail } = JSON.parse(line);
        (serverMs[detail.operation.type] ??= []).push(detail.http_info.duration_ms);
      }
    });
    return engine;
  };
  const stopEngine = async (engine: ReturnType<typeof spawn>) => {
    if (engine.exitCode !== null) return;
    const exited = new Promise((r) => engine.on('exit', r));
    engine.kill('SIGTERM');
    await exited;
  };
  let child = startEngine();
  try {
    await waitHealthy(child, port);
    const ops = trackOps(n, ['user', 'editor']);
    const a = await post(port, '/v1/metadata', { type: 'bulk', args: ops });

    const extra = table(n + 1);
    // 51 tracks of one more table, each untracked again: what the client and the server's log
    // measured of each.
    const cycles = async () => {
      const track: number[] = [];
      const untrack: number[] = [];
      serverMs.pg_track_table = [];
      serverMs.pg_untrack_table = [];
      for (let i = 0; i < 51; i++) {
        track.push((await post(port, '/v1/metadata', { type: 'pg_track_table', args: { table: extra } })).ms);
        untrack.push((await post(port, '/v1/metadata', { type: 'pg_untrack_table', args: { table: extra } })).ms);
      }
      await new Promise((r) => setTimeout(r, 200)); // the server's last log lines
      return { track, untrack, trackServer: median(serverMs.pg_track_table!), untrackServer: median(serverMs.pg_untrack_table!) };
    };
    const { track: b, untrack, trackServer: bServer, untrackServer } = await cycles();
    // (b) again with an inherited role of the two roles (its permissions built for every table).
    await post(port, '/v1/metadata', { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } });
    const { track: bInherited, trackServer: bInheritedServer } = await cycles();
    await post(port, '/v1/metadata', { type: 'drop_inherited_role', args: { role_name: 'both' } });
    const c: number[] = [];
    let exported: any;
    for (let i = 0; i < 5; i++) {
      const r = await post(port, '/v1/metadata', { type: 'export_metadata', args: {} });
      c.push(r.ms);
      exported = r.body;
    }
    const d: number[] = [];
    for (let i = 0; i < 3; i++) d.push((await post(port, '/v1/metadata', { type: 'replace_metadata', args: exported })).ms);
    const rss = rssMiB(child.pid!);

    // (f) A change drops every role's schema; the first request after it builds the role's:
    // a query without variables, one with a variable (whose type the request looks up by
    // name), and a mutation with one, each the first after a change of its own.
    const gql = (role: string | undefined, query: string, variables?: Record<string, unknown>) =>
      fetch(`http://127.0.0.1:${port}/v1/graphql`, {
        method: 'POST',
        body: JSON.stringify({ query, variables }),
        headers: { 'content-type': 'application/json', ...(role ? { 'x-svc-role': role, 'x-svc-user-id': '1' } : {}) },
      }).then(async (r) => {
        const text = await r.text();
        if (r.status !== 200 || text.includes('"errors"')) throw new Error(`graphql as ${role ?? 'admin'} -> ${r.status} ${text.slice(0, 300)}`);
      });
    await post(port, '/v1/metadata', { type: 'pg_create_insert_permission', args: { table: table(1), role: 'user', permission: { columns: ['name'], check: {} } } });
    const firstQuery = `{ ${table(1)}(limit: 1) { id name } }`;
    const requests: [string, Record<string, unknown> | undefined][] = [
      [firstQuery, undefined],
      [`query ($w: ${table(1)}_bool_exp) { ${table(1)}(where: $w, limit: 1) { id name } }`, { w: { id: { _gt: 0 } } }],
      [`mutation ($o: [${table(1)}_insert_input!]!) { insert_${table(1)}(objects: $o) { affected_rows } }`, { o: [{ name: 'x' }] }],
    ];
    const first = requests.map(() => ({ admin: [] as number[], role: [] as number[] }));
    let changes = 0;
    for (let i = 0; i < 7; i++) {
      for (const [k, [query, variables]] of requests.entries()) {
        await post(port, '/v1/metadata', { type: changes++ % 2 ? 'pg_untrack_table' : 'pg_track_table', args: { table: extra } });
        let t = performance.now();
        await gql(undefined, query, variables);
        first[k]!.admin.push(performance.now() - t);
        t = performance.now();
        await gql('user', query, variables);
        first[k]!.role.push(performance.now() - t);
      }
    }
    const firstAdmin = first[0]!.admin;
    const firstRole = first[0]!.role;

    // (g) Five roles' schemas built.
    const moreRoles = ['viewer', 'auditor', 'guest'];
    const permOps = [];
    for (let i = 1; i <= n; i++) {
      for (const role of moreRoles) {
        permOps.push({ type: 'pg_create_select_permission', args: { table: table(i), role, permission: { columns: ['id', 'name'], filter: { owner_id: { _eq: 'X-Svc-User-Id' } } } } });
      }
    }
    await post(port, '/v1/metadata', { type: 'bulk', args: permOps });
    for (const role of ['user', 'editor', ...moreRoles]) await gql(role, firstQuery);
    const rss5 = rssMiB(child.pid!);

    // Hand-written SQL: the whole document written with a compare-and-set, and one table's row.
    const doc = JSON.stringify(exported);
    const oneTable = JSON.stringify(exported.sources[0].tables[0]);
    await sql.unsafe('create table hand_doc (id int primary key, metadata json, rv bigint)');
    await sql.unsafe("insert into hand_doc values (1, '{}', 1)");
    await sql.unsafe('create table hand_rows (key text primary key, value text)');
    const whole: number[] = [];
    const row: number[] = [];
    for (let i = 0; i < 21; i++) {
      let t = performance.now();
      await sql.begin(async (tx) => {
        await tx.unsafe('update hand_doc set metadata = $1::text::json, rv = rv + 1 where id = 1 and rv = $2', [doc, i + 1]);
      });
      whole.push(performance.now() - t);
      t = performance.now();
      await sql.begin(async (tx) => {
        await tx.unsafe('update hand_doc set rv = rv + 1 where id = 1');
        await tx.unsafe('insert into hand_rows values ($1, $2) on conflict (key) do update set value = excluded.value', [`k${i}`, oneTable]);
      });
      row.push(performance.now() - t);
    }
    // (d) again, by a document of the first half of the tables (the last one's array
    // relationship to the second half dropped, so that the half is consistent), and back;
    // after (g), whose RSS the garbage of these would raise.
    const halfDoc = structuredClone(exported);
    const halfTables = halfDoc.sources[0].tables.slice(0, Math.floor(n / 2));
    delete halfTables[halfTables.length - 1].array_relationships;
    halfDoc.sources[0].tables = halfTables;
    const toHalf: number[] = [];
    const back: number[] = [];
    for (let i = 0; i < 3; i++) {
      toHalf.push((await post(port, '/v1/metadata', { type: 'replace_metadata', args: halfDoc })).ms);
      back.push((await post(port, '/v1/metadata', { type: 'replace_metadata', args: exported })).ms);
    }
    // (i) run_sql that may change the schema (a migration's statement): the source introspected
    // before and after it in the request's transaction, the metadata built again.
    const ddl: number[] = [];
    const select: number[] = [];
    for (let i = 0; i < 5; i++) {
      ddl.push((await post(port, '/v2/query', { type: 'run_sql', args: { sql: `comment on table ${table(1)} is 'comment ${i}'` } })).ms);
      select.push((await post(port, '/v2/query', { type: 'run_sql', args: { sql: 'select 1' } })).ms);
    }
    // (h) A restart: the catalog read back and built, then each first request.
    const start: number[] = [];
    const startAdmin: number[] = [];
    const startRole: number[] = [];
    let rssStart = 0;
    for (let i = 0; i < 3; i++) {
      await stopEngine(child);
      const t = performance.now();
      child = startEngine();
      await waitHealthy(child, port);
      start.push(performance.now() - t);
      let u = performance.now();
      await gql(undefined, firstQuery);
      startAdmin.push(performance.now() - u);
      u = performance.now();
      await gql('user', firstQuery);
      startRole.push(performance.now() - u);
      rssStart = rssMiB(child.pid!);
    }
    return { ddl: median(ddl), select: median(select), toHalf: median(toHalf), back: median(back), start: median(start), startAdmin: median(startAdmin), startRole: median(startRole), rssStart, n, a: a.ms, b: median(b), bServer, bInherited: median(bInherited), bInheritedServer, untrack: median(untrack), untrackServer, c: median(c), d: median(d), rss, rss5, firstAdmin: median(firstAdmin), firstRole: median(firstRole), varsAdmin: median(first[1]!.admin), varsRole: median(first[1]!.role), mutAdmin: median(first[2]!.admin), mutRole: median(first[2]!.role), whole: median(whole), row: median(row), docKiB: doc.length / 1024, ops: ops.length };
  } finally {
    await stopEngine(child);
    await sql.end();
  }
}

async function main() {
  let adminUrl = process.env.BENCH_DATABASE_URL;
  let stop = async () => {};
  if (!adminUrl) {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
    chmodSync(dir, 0o755);
    const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
    adminUrl = pg.url('postgres');
    stop = async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const rows = [];
  try {
    for (const n of Ns) {
      const r = await benchOne(adminUrl, n);
      rows.push(r);
      console.error(`done N=${n}`);
    }
  } finally {
    await stop();
  }
  const f = (x: number) => x.toFixed(1).padStart(9);
  console.log('\nMetadata scaling (ms, median; RSS MiB)');
  console.log('(b) is measured by the client; (b) server is the server\'s own http-log duration of the same requests.');
  console.log('      N   ops in (a)   (a) bulk   (b) track1  (b) server  SQL:whole-doc  (b)/whole  SQL:one-row  (b)/one-row  (c) export  (d) replace   doc KiB   RSS');
  for (const r of rows) {
    console.log(
      `${String(r.n).padStart(7)} ${String(r.ops).padStart(11)} ${f(r.a)}  ${f(r.b)}   ${f(r.bServer)}      ${f(r.whole)} ${(r.b / r.whole).toFixed(2).padStart(9)}x    ${f(r.row)} ${(r.b / r.row).toFixed(2).padStart(11)}x ${f(r.c)}  ${f(r.d)}   ${f(r.docKiB)} ${f(r.rss)}`,
    );
  }
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  if (rows.length > 1) {
    console.log(`\n(b) at N=${last.n} / (b) at N=${first.n}: ${(last.b / first.b).toFixed(2)}x by the client, ${(last.bServer / first.bServer).toFixed(2)}x by the server (target: within 2x, and under 200 ms)`);
  }
  // (b) with an inherited role: every build gives it its parents' permissions on every table.
  for (const r of rows) console.log(`(b) with an inherited role at N=${r.n}: ${r.bInherited.toFixed(1)} ms by the client, ${r.bInheritedServer.toFixed(1)} by the server`);
  if (rows.length > 1) console.log(`(b) with an inherited role at N=${last.n} / at N=${first.n}: ${(last.bInherited / first.bInherited).toFixed(2)}x by the client, ${(last.bInheritedServer / first.bInheritedServer).toFixed(2)}x by the server`);
  // Beside (b): the same table untracked again, which looks for what depends on it.
  for (const r of rows) console.log(`one pg_untrack_table at N=${r.n}: ${r.untrack.toFixed(1)} ms by the client, ${r.untrackServer.toFixed(1)} by the server`);
  if (rows.length > 1) console.log(`untrack at N=${last.n} / at N=${first.n}: ${(last.untrack / first.untrack).toFixed(2)}x by the client, ${(last.untrackServer / first.untrackServer).toFixed(2)}x by the server`);
  console.log('\nGraphQL after a change (ms, median of 7: a metadata change, then the first request, which builds the schema)');
  console.log('      N   (f) first as admin   (f) first as role   (g) RSS with 5 roles\' schemas');
  for (const r of rows) console.log(`${String(r.n).padStart(7)} ${f(r.firstAdmin).padStart(20)} ${f(r.firstRole).padStart(19)} ${f(r.rss5).padStart(22)}`);
  console.log('(f) with a variable of an input type, each the first request after a change of its own (ms, median of 7)');
  console.log('      N   query, admin   query, role   mutation, admin   mutation, role');
  for (const r of rows) console.log(`${String(r.n).padStart(7)} ${f(r.varsAdmin).padStart(14)} ${f(r.varsRole).padStart(13)} ${f(r.mutAdmin).padStart(17)} ${f(r.mutRole).padStart(16)}`);
  console.log('(targets at 2,000 tables: (f) under 500 ms, (g) under 400 MiB)');
  console.log('\nA restart (ms, median of 3: the process started until /healthz answers, then the first request as admin and as a role)');
  console.log('      N   (h) start   (h) first as admin   (h) first as role   RSS after them');
  for (const r of rows) console.log(`${String(r.n).padStart(7)} ${f(r.start).padStart(11)} ${f(r.startAdmin).padStart(20)} ${f(r.startRole).padStart(19)} ${f(r.rssStart).padStart(16)}`);
  console.log('\nreplace_metadata by half the tables and back (ms, median of 3)');
  console.log('      N   (d) N -> N/2   (d) N/2 -> N');
  for (const r of rows) console.log(`${String(r.n).padStart(7)} ${f(r.toHalf).padStart(14)} ${f(r.back).padStart(14)}`);
  console.log('\nrun_sql (ms, median of 5): a statement that may change the schema (introspected before and after, the metadata built again), and a select');
  console.log('      N   (i) comment on table   (i) select 1');
  for (const r of rows) console.log(`${String(r.n).padStart(7)} ${f(r.ddl).padStart(22)} ${f(r.select).padStart(14)}`);
  const at2000 = rows.find((r) => r.n === 2000);
  if (at2000) console.log(`(d) at N=2000: the same document ${at2000.d.toFixed(0)} ms, by 1,000 tables ${at2000.toHalf.toFixed(0)} ms (target: under 3000 ms)`);
}

await main();
