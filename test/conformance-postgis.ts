/**
 * Runs the conformance suite's main configuration against a PostgreSQL that can load PostGIS.
 *
 *   npm run conformance:postgis [-- extra run.mjs flags, e.g. --group REGEX]
 *   npx tsx test/conformance-postgis.ts [extra run.mjs flags]
 *
 * The suite's own run-all.mjs runs the engine on its embedded PostgreSQL, which cannot load PostGIS
 * (and whose OS has no en_US locale), so the groups whose setup needs them fail there. This script
 * starts a throwaway cluster of Debian's PostgreSQL with PostGIS (test/debian-postgres.ts), creates
 * the databases `conformance` (extensions postgis, ltree, citext, pgcrypto), `conformance_src1` and
 * `conformance_src2`, starts the built engine (dist/server/main.js) on `conformance` with the two
 * others as extra sources, webhook variables set and numeric types stringified (as Hasura's own test
 * suite runs its server: server/tests-py test-server.sh exports
 * HASURA_GRAPHQL_STRINGIFY_NUMERIC_TYPES=true), runs ../shared/conformance/run.mjs (CONFORMANCE_DIR
 * to use another copy) with the matching --server-env declarations, and prints a per-area summary
 * from its JSON report. The engine and the cluster are stopped at the end, on Ctrl-C and on errors.
 *
 * Exits non-zero only when the run could not happen (no build, no PostGIS, engine did not start,
 * runner crashed); failing cases are reported, not an error.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { freePort } from '../server/embedded.js';
import { DEBIAN_POSTGIS_INSTALL, findDebianPostgis, startDebianPostgres, type DebianPostgres } from './debian-postgres.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SUITE = path.resolve(process.env.CONFORMANCE_DIR ?? path.join(ROOT, '..', 'shared', 'conformance'));
const ENGINE = path.join(ROOT, 'dist', 'server', 'main.js');
const ADMIN_SECRET = 'S';
const HOOK = 'http://127.0.0.1:9/'; // nothing listens: the suite does not check deliveries
const EXTENSIONS = ['postgis', 'ltree', 'citext', 'pgcrypto'];

class Refused extends Error {}

const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  return (cleaning ??= (async () => {
    for (const c of cleanups.reverse()) await c().catch((e) => console.error(`conformance-postgis: cleanup: ${(e as Error).message}`));
  })());
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    console.error(`\nconformance-postgis: ${sig}, stopping the engine and the cluster`);
    void cleanup().finally(() => process.exit(130));
  });
}

function localeCheck(): void {
  const r = spawnSync('locale', ['-a'], { encoding: 'utf8' });
  const have = (r.stdout ?? '').split('\n').some((l) => l.trim().toLowerCase().replace('-', '') === 'en_us.utf8');
  if (!have) {
    console.warn(
      'conformance-postgis: warning: the OS has no locale en_US.UTF-8 (`locale -a` does not list en_US.utf8); a case that sets ' +
        'lc_monetary to it will fail. To add it (Debian): apt-get install locales, uncomment "en_US.UTF-8 UTF-8" in /etc/locale.gen, ' +
        'run locale-gen, then start again (PostgreSQL reads the OS locales when it starts). Going on without it.',
    );
  }
}

async function createDatabases(adminUrl: string): Promise<{ main: string; src1: string; src2: string }> {
  const urlOf = (db: string) => {
    const u = new URL(adminUrl);
    u.pathname = '/' + db;
    return u.toString();
  };
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (const db of ['conformance', 'conformance_src1', 'conformance_src2']) await admin.unsafe(`create database ${db}`);
  } finally {
    await admin.end();
  }
  const main = postgres(urlOf('conformance'), { max: 1, onnotice: () => {} });
  try {
    for (const e of EXTENSIONS) await main.unsafe(`create extension if not exists ${e}`);
  } finally {
    await main.end();
  }
  return { main: urlOf('conformance'), src1: urlOf('conformance_src1'), src2: urlOf('conformance_src2') };
}

async function startEngine(env: Record<string, string>, work: string): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const logFile = path.join(work, 'engine.log');
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [ENGINE], {
    cwd: ROOT,
    env: { ...process.env, ...env, SVC_GRAPHQL_SERVER_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) =>
    child.on('exit', (code, sig) => {
      exited = `code ${code}, signal ${sig}`;
      resolve();
    }),
  );
  cleanups.push(async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exit;
    clearTimeout(t);
  });
  const tail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-25).join('\n') : '');
  const t0 = Date.now();
  for (;;) {
    if (exited) throw new Refused(`the engine exited while starting (${exited}); last lines of its log (${logFile}):\n${tail()}`);
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() - t0 > 90_000) throw new Refused(`the engine did not answer GET /healthz with 200 within 90 s; last lines of its log (${logFile}):\n${tail()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  console.log(`conformance-postgis: engine up at ${base} in ${((Date.now() - t0) / 1000).toFixed(1)} s (log ${logFile})`);
  return { base, child };
}

const YAML_MISSING = 'The "yaml" package is not installed';

/** Runs run.mjs, streaming its output; installs the yaml package once when the runner asks for it. */
async function runSuite(args: string[]): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    let out = '';
    const child = spawn(process.execPath, [path.join(SUITE, 'run.mjs'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    });
    child.stdout!.on('data', (d: Buffer) => {
      process.stdout.write(d);
      if (out.length < 4096) out += d.toString();
    });
    const code = await new Promise<number>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (c, sig) => resolve(c ?? (sig ? 128 : 1)));
    });
    if (attempt === 0 && out.includes(YAML_MISSING)) {
      console.log(`conformance-postgis: installing the yaml package into ${SUITE} (npm install --prefix ${SUITE} yaml)`);
      const r = spawnSync('npm', ['install', '--prefix', SUITE, '--no-audit', '--no-fund', 'yaml'], { stdio: 'inherit' });
      if (r.status !== 0) throw new Refused(`npm install --prefix ${SUITE} yaml failed`);
      continue;
    }
    return code;
  }
}

interface Report {
  groups: Array<{ id: string; tests: Array<{ cases: Array<{ result: string }> }> }>;
}

/** Pass/fail/skip per area (the group id before the first '/', e.g. graphql_queries). */
function summarize(file: string): void {
  const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
  const areas = new Map<string, { pass: number; fail: number; skip: number }>();
  for (const g of report.groups) {
    const area = g.id.split('/')[0];
    const a = areas.get(area) ?? { pass: 0, fail: 0, skip: 0 };
    areas.set(area, a);
    for (const t of g.tests)
      for (const c of t.cases) {
        if (c.result === 'pass') a.pass++;
        else if (c.result === 'skip') a.skip++;
        else a.fail++;
      }
  }
  const total = { pass: 0, fail: 0, skip: 0 };
  const width = Math.max(4, ...[...areas.keys()].map((k) => k.length));
  console.log('\nper area (cases):');
  for (const [area, a] of [...areas].sort(([x], [y]) => x.localeCompare(y))) {
    total.pass += a.pass;
    total.fail += a.fail;
    total.skip += a.skip;
    console.log(`  ${area.padEnd(width)}  ${String(a.pass).padStart(4)} passed  ${String(a.fail).padStart(4)} failed${a.skip ? `  ${a.skip} skipped` : ''}`);
  }
  const ran = total.pass + total.fail;
  console.log(
    `conformance-postgis: ${total.pass} passed, ${total.fail} failed, ${total.skip} skipped (${((100 * total.pass) / Math.max(1, ran)).toFixed(1)}% of those run; report ${file})`,
  );
}

async function main(): Promise<number> {
  if (!existsSync(ENGINE)) throw new Refused(`${path.relative(process.cwd(), ENGINE) || ENGINE} is missing: run \`npm run build\` first`);
  if (!existsSync(path.join(SUITE, 'run.mjs'))) throw new Refused(`the conformance suite was not found at ${SUITE} (no run.mjs); set CONFORMANCE_DIR to its folder`);
  const bin = findDebianPostgis();
  if (!bin) throw new Refused(`no PostgreSQL with PostGIS was found (looked for Debian's /usr/lib/postgresql/<N>/bin with /usr/share/postgresql/<N>/extension/postgis.control): ${DEBIAN_POSTGIS_INSTALL}`);
  localeCheck();

  const work = mkdtempSync(path.join(tmpdir(), 'svc-conformance-postgis-'));
  cleanups.push(async () => {
    // Keep the report and the engine log; remove the engine's data directory.
    rmSync(path.join(work, 'data'), { recursive: true, force: true });
  });

  console.log(`conformance-postgis: starting a throwaway PostgreSQL cluster from ${bin}`);
  let cluster: DebianPostgres;
  try {
    cluster = await startDebianPostgres({ prefix: 'svc-conformance-pg-' });
  } catch (e) {
    throw new Refused((e as Error).message);
  }
  cleanups.push(() => cluster.stop());
  const dbs = await createDatabases(cluster.url);

  const { base } = await startEngine(
    {
      SVC_GRAPHQL_DATABASE_URL: dbs.main,
      SVC_GRAPHQL_ADMIN_SECRET: ADMIN_SECRET,
      SVC_GRAPHQL_DATA_DIR: path.join(work, 'data'),
      SVC_GRAPHQL_STRINGIFY_NUMERIC_TYPES: 'true',
      EVENT_WEBHOOK_HANDLER: HOOK,
      ACTION_WEBHOOK_HANDLER: HOOK,
      SVC_GRAPHQL_PG_SOURCE_URL_1: dbs.src1,
      SVC_GRAPHQL_PG_SOURCE_URL_2: dbs.src2,
    },
    work,
  );

  const json = path.join(work, 'conformance-postgis.json');
  const args = [
    '--url', base,
    '--admin-secret', ADMIN_SECRET,
    '--reset',
    '--keep-going',
    '--server-env', 'EVENT_WEBHOOK_HANDLER',
    '--server-env', 'ACTION_WEBHOOK_HANDLER',
    '--server-env', 'SVC_GRAPHQL_PG_SOURCE_URL_1,SVC_GRAPHQL_PG_SOURCE_URL_2',
    '--json', json,
    ...process.argv.slice(2),
  ];
  console.log(`conformance-postgis: node ${path.join(SUITE, 'run.mjs')} ${args.join(' ')}`);
  const code = await runSuite(args);
  if (code !== 0) throw new Refused(`the runner exited with status ${code} (the run did not complete)`);
  if (!existsSync(json)) throw new Refused(`the runner wrote no report at ${json}`);
  summarize(json);
  return 0;
}

let status = 1;
try {
  status = await main();
} catch (e) {
  console.error(`conformance-postgis: ${e instanceof Refused ? e.message : (e as Error).stack ?? e}`);
  status = 1;
} finally {
  await cleanup();
}
process.exit(status);
