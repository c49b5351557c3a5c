/**
 * Remote joins benchmark (issue 23, "Benchmark"): a table of 1,000 rows with a remote
 * relationship to a GraphQL server on loopback (graphql-js, started here, counting its requests),
 * queried through the engine, against a hand-written client that makes the same two calls itself
 * (the rows from PostgreSQL, then one aliased request to the remote, spliced); and the direct
 * query of the same table without the remote field, for the cost of the join machinery on a
 * query that does not use it (compare with the same query on a checkout before issue 23).
 *
 *   npm run bench:remote-joins [-- --duration 10 --connections 10]
 *
 * Prints req/s, p50/p99 latency and the remote's requests per query for each case. Needs the
 * load generator of bench/peers (installed there on first use, as the other benchmarks do);
 * SVC_BENCH_PEERS names another directory that has it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { buildSchema, graphql } from 'graphql';
import { cleanup, cleanups, log, startEngine } from '../common.js';
import { freePort, startEmbeddedPostgres } from '../../server/embedded.js';

const root = new URL('../..', import.meta.url).pathname;
const ROWS = 1000;

function flags(argv: string[]) {
  const out = { duration: 10, connections: 10 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--(duration|connections)(?:=(.*))?$/.exec(argv[i]!);
    if (!m) throw new Error(`unknown argument ${argv[i]} (flags: --duration S, --connections N)`);
    const n = Number(m[2] ?? argv[++i]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: not a positive integer`);
    out[m[1] as 'duration' | 'connections'] = n;
  }
  return out;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(() => r())));
  return (server.address() as { port: number }).port;
}

async function main() {
  const f = flags(process.argv.slice(2));
  const peers = process.env.SVC_BENCH_PEERS ?? path.join(root, 'bench/peers');
  if (!existsSync(path.join(peers, 'node_modules', 'autocannon'))) {
    log('installing the load generator in bench/peers ...');
    const npm = spawn('npm', ['install', '--no-audit', '--no-fund'], { cwd: peers, stdio: 'inherit' });
    await new Promise((r) => npm.on('exit', r));
  }
  const autocannon = createRequire(path.join(peers, 'package.json'))('autocannon');

  // PostgreSQL with the table.
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-remote-'));
  chmodSync(dir, 0o755);
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  cleanups.push(() => pg.stop());
  await pg.createDatabase('bench');
  const dbUrl = pg.url('bench');
  const sql = postgres(dbUrl, { max: 10, onnotice: () => {} });
  cleanups.push(() => sql.end({ timeout: 1 }));
  await sql.unsafe(`create table items (id int primary key, msg_id int not null); insert into items select i, i % 100 from generate_series(1, ${ROWS}) i`);

  // The remote: message(id) for 100 ids, counting requests.
  let remoteRequests = 0;
  const schema = buildSchema('type Message { id: Int! text: String } type Query { message(id: Int!): Message }');
  const rootValue = { message: ({ id }: { id: number }) => ({ id, text: `message ${id}` }) };
  const remote = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    const b = JSON.parse(body);
    if (b.operationName !== 'IntrospectionQuery') remoteRequests++;
    const r = await graphql({ schema, source: b.query, variableValues: b.variables, rootValue });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r));
  });
  const remoteUrl = `http://127.0.0.1:${await listen(remote)}/graphql`;

  // The engine.
  const port = await freePort();
  await startEngine(root, { dbUrl, port });
  const meta = async (body: unknown) => {
    const r = await fetch(`http://127.0.0.1:${port}/v1/metadata`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`metadata: ${r.status} ${await r.text()}`);
  };
  await meta({ type: 'pg_track_table', args: { table: 'items' } });
  await meta({ type: 'add_remote_schema', args: { name: 'messages', definition: { url: remoteUrl } } });
  await meta({ type: 'pg_create_remote_relationship', args: { table: 'items', name: 'message', definition: { to_remote_schema: { lhs_fields: ['msg_id'], remote_schema: 'messages', remote_field: { message: { arguments: { id: '$msg_id' } } } } } } });

  // The hand-written client: the same two calls, spliced.
  const direct = createServer(async (_req, res) => {
    const rows = await sql<{ id: number; msg_id: number }[]>`select id, msg_id from items order by id`;
    const ids = [...new Set(rows.map((r) => r.msg_id))];
    const query = `{ ${ids.map((id, i) => `r${i}: message(id: ${id}) { text }`).join(' ')} }`;
    const answer = (await (await fetch(remoteUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json()) as { data: Record<string, unknown> };
    const byId = new Map(ids.map((id, i) => [id, answer.data[`r${i}`]]));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { items: rows.map((r) => ({ id: r.id, message: byId.get(r.msg_id) })) } }));
  });
  const directPort = await listen(direct);

  const JOINED = '{ items(order_by: {id: asc}) { id message { text } } }';
  const PLAIN = '{ items(order_by: {id: asc}) { id msg_id } }';
  const cases = [
    { name: 'engine, with the remote field', url: `http://127.0.0.1:${port}/v1/graphql`, body: JSON.stringify({ query: JOINED }) },
    { name: 'hand-written client, same two calls', url: `http://127.0.0.1:${directPort}/`, body: '{}' },
    { name: 'engine, the table without the remote field', url: `http://127.0.0.1:${port}/v1/graphql`, body: JSON.stringify({ query: PLAIN }) },
  ];
  // The answers agree before anything is timed.
  const a = (await (await fetch(cases[0]!.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: cases[0]!.body })).json()) as unknown;
  const b = (await (await fetch(cases[1]!.url, { method: 'POST', body: '{}' })).json()) as unknown;
  if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the engine and the hand-written client answer differently');

  const rows: string[] = [];
  for (const c of cases) {
    const opts = { url: c.url, method: 'POST', headers: { 'content-type': 'application/json' }, body: c.body, connections: f.connections };
    await autocannon({ ...opts, duration: 2 });
    const before = remoteRequests;
    const r = await autocannon({ ...opts, duration: f.duration });
    const calls = r.requests.total ? (remoteRequests - before) / r.requests.total : 0;
    rows.push(`| ${c.name} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} / ${r.latency.p99} | ${calls.toFixed(2)} | ${r.non2xx + r.errors} |`);
    log(`${c.name}: ${r.requests.average.toFixed(0)} req/s`);
  }
  console.log(`\nRemote joins: ${ROWS} rows, 100 distinct join keys, ${f.connections} connections, ${f.duration} s per run, ${new Date().toISOString().slice(0, 10)}\n`);
  console.log('| Case | req/s | p50 / p99 ms | remote calls per query | errors |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}

main()
  .catch((e) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
