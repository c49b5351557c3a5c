/**
 * `npm run fuzz [-- --requests N --seed S]`: the long fuzz run. Starts the server as its own
 * process (`server/main.ts`, on an embedded PostgreSQL in a temporary data directory), seeds it,
 * and sends N generated requests (default 100,000) over HTTP, checking the properties of
 * test/fuzz/probe.ts for each: no 5xx, an answer within a bound, a refused request leaves the
 * metadata unchanged, refusals in the SPEC's shape. If the server process dies it is counted as a
 * crash and restarted on the same data directory. Prints the status histogram and the totals;
 * exits 1 when any property failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import postgres from 'postgres';
import { defaultConfig } from '../../core/config.js';
import { createLogger } from '../../core/log.js';
import { Kernel } from '../../core/kernel/kernel.js';
import { builtinPlugins } from '../../server/plugins.js';
import { freePort } from '../../server/embedded.js';
import { argKeys, requestArb, SEED_METADATA, SEED_SQL } from './generators.js';
import { createProbe, formatHistogram, type Send } from './probe.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('requests', 100_000);
const SEED = arg('seed', Date.now() % 2 ** 31);
const RESTORE_EVERY = 2_000;

const root = new URL('../..', import.meta.url).pathname;
const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-fuzz-'));
chmodSync(dataDir, 0o755); // initdb runs as `postgres` when this runs as root
const port = await freePort();
const base = `http://127.0.0.1:${port}`;

let child: ChildProcess | undefined;
let crashes = 0;
let stopping = false;
const serverLog: string[] = [];

async function startServer(): Promise<void> {
  child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_GRAPHQL_DATA_DIR: dataDir, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (d: Buffer) => {
    serverLog.push(String(d));
    if (serverLog.length > 200) serverLog.shift();
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    crashes++;
    console.error(`fuzz: the server exited (${code ?? signal}); last output:\n${serverLog.slice(-20).join('')}`);
  });
  const until = Date.now() + 120_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`the server did not start:\n${serverLog.join('')}`);
    try {
      if ((await fetch(`${base}/healthz`)).status === 200) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the server did not answer /healthz within 120 s');
}

const send: Send = async (method, p, body, headers) => {
  if (child?.exitCode !== null || child?.signalCode !== null) await startServer();
  try {
    const res = await fetch(base + p, { method, body: body as BodyInit | undefined, headers, signal: AbortSignal.timeout(60_000) });
    return { status: res.status, text: await res.text() };
  } catch (e) {
    // A connection reset is what a client sees when the server dies mid-request.
    return { status: 599, text: `no response: ${(e as Error).message}` };
  }
};

const post = async (p: string, body: unknown) => {
  const r = await send('POST', p, JSON.stringify(body), { 'content-type': 'application/json' });
  if (r.status !== 200) throw new Error(`${p} ${JSON.stringify(body).slice(0, 200)} -> ${r.status} ${r.text.slice(0, 300)}`);
  return JSON.parse(r.text);
};

// The operation names and argument keys, from a kernel that is set up but never started.
const kernel = await Kernel.create({ config: defaultConfig(), log: createLogger('error'), plugins: builtinPlugins, catalogSql: postgres('postgres://unused@127.0.0.1:1/x') });
const types = { metadata: kernel.operationNames('metadata'), query: kernel.operationNames('query') };

const started = Date.now();
try {
  await startServer();
  await post('/v1/query', { type: 'run_sql', args: { sql: SEED_SQL } });
  for (const op of SEED_METADATA) await post('/v1/metadata', op);
  const seedMetadata = await post('/v1/metadata', { type: 'export_metadata', version: 1, args: {} });

  const probe = createProbe(send);
  const violations: string[] = [];
  const arbs = [requestArb(types)];
  for (const endpoint of ['metadata', 'query'] as const) {
    for (const type of types[endpoint]) {
      const { def } = kernel.registry.find(endpoint, type);
      arbs.push(requestArb(types, { endpoint, type, keys: argKeys(typeof def.args === 'function' ? def.args(def.versions?.[0] ?? 1, endpoint) : def.args) }));
    }
  }
  // Half the requests are mixed, the other half spread over the operations.
  const arb = fc.oneof({ weight: arbs.length - 1, arbitrary: arbs[0]! }, ...arbs.slice(1));
  let seed = SEED;
  while (probe.sent < REQUESTS) {
    const batch = fc.sample(arb, { numRuns: Math.min(RESTORE_EVERY, REQUESTS - probe.sent), seed: seed++ });
    for (const r of batch) {
      const problems = await probe.check(r);
      for (const p of problems) if (violations.push(p) <= 20) console.error(`fuzz: VIOLATION ${p.slice(0, 1000)}`);
    }
    await post('/v1/metadata', { type: 'replace_metadata', args: seedMetadata });
    probe.resync();
    const health = await send('GET', '/healthz', undefined, {});
    if (health.status !== 200) violations.push(`unhealthy after ${probe.sent} requests: ${health.status} ${health.text}`);
    process.stdout.write(`fuzz: ${probe.sent} requests, ${violations.length} violations, ${crashes} crashes, ${Math.round((Date.now() - started) / 1000)} s\n`);
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`\nfuzz: seed ${SEED}: ${probe.sent} requests in ${seconds} s; statuses:\n${formatHistogram(probe.histogram)}`);
  const hangs = probe.histogram.get('no answer') ?? 0;
  const fiveHundreds = [...probe.histogram].filter(([k]) => /^5/.test(k) && k !== '500 postgres-error').reduce((n, [, c]) => n + c, 0);
  const lost = probe.histogram.get('500 postgres-error') ?? 0;
  console.log(`fuzz: ${probe.sent} requests, ${fiveHundreds} unexpected 5xx, ${lost} lost connections (500 postgres-error, as the SPEC lists), ${hangs} hangs, ${crashes} crashes, ${violations.length} property violations`);
  process.exitCode = violations.length > 0 || crashes > 0 ? 1 : 0;
} finally {
  stopping = true;
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  rmSync(dataDir, { recursive: true, force: true });
}
