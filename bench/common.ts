/**
 * What the benchmarks under bench/ share: clean-up that runs exactly once, in reverse order,
 * whether a run ends normally, by an error or by a signal; stopping a child process (SIGTERM,
 * then SIGKILL after a while); the engine started as `npm start` runs it; Chinook loaded into an
 * embedded PostgreSQL.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../server/embedded.js';
import { ENGINE_NODE_FLAGS } from './engine-flags.js';

/** The application name of a benchmark's own connection: its statements are not a server's. */
export const BENCH_APP = 'svc-bench';

/**
 * An embedded PostgreSQL in a temporary directory (`dir`, removed by `cleanup()`) with ../shared/datasets/chinook loaded into
 * the database `chinook`, and the benchmark's own connection to it (named BENCH_APP); both are
 * stopped by `cleanup()`. `onLog` gets PostgreSQL's output (statement counting); `settings` are
 * more of its settings (`name=value`).
 */
export async function loadChinook(root: string, name: string, onLog?: (line: string) => void, settings?: string[]): Promise<{ dir: string; dbUrl: string; sql: postgres.Sql }> {
  const chinook = path.resolve(root, '../shared/datasets/chinook/chinook.sql');
  if (!existsSync(chinook)) throw new Error(`the Chinook dataset is not at ${chinook}`);
  const dir = mkdtempSync(path.join(tmpdir(), `svc-bench-${name}-`));
  chmodSync(dir, 0o755); // PostgreSQL runs as another user when this runs as root
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  log('starting PostgreSQL and loading Chinook ...');
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false, ...(onLog ? { onLog } : {}), ...(settings ? { settings } : {}) });
  cleanups.push(() => pg.stop());
  await pg.createDatabase('chinook');
  const dbUrl = pg.url('chinook');
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {}, connection: { application_name: BENCH_APP } });
  cleanups.push(() => sql.end({ timeout: 1 }));
  await sql.unsafe(readFileSync(chinook, 'utf8')).simple();
  return { dir, dbUrl, sql };
}

/**
 * Starts the engine as `npm start` runs it (engineArgs) on `dbUrl`, listening on loopback `port`,
 * with none of this process's SVC_GRAPHQL_* settings but `env`'s, and waits for its /healthz.
 * Stopped by `cleanup()` (SIGTERM, SIGKILL after `graceMs`).
 */
export async function startEngine(
  root: string,
  o: { dbUrl: string; port: number; env?: Record<string, string>; nodeFlags?: string[]; detached?: boolean; graceMs?: number },
): Promise<ChildProcess> {
  log('starting the engine ...');
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_GRAPHQL_')));
  const engine = spawn(process.execPath, engineArgs(root, o.nodeFlags), {
    cwd: root,
    env: {
      ...inherited,
      SVC_GRAPHQL_DATABASE_URL: o.dbUrl,
      SVC_GRAPHQL_SERVER_PORT: String(o.port),
      SVC_GRAPHQL_SERVER_HOST: '127.0.0.1',
      SVC_GRAPHQL_LOG_LEVEL: 'warn',
      SVC_GRAPHQL_METADATA_SYNC_INTERVAL: '0',
      ...o.env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
    // Detached, a Ctrl-C reaches only the benchmark, which then stops the engine itself.
    ...(o.detached ? { detached: true } : {}),
  });
  cleanups.push(() => stopChild(engine, o.graceMs ?? 10_000));
  await waitHealthy(engine, o.port);
  return engine;
}

/**
 * The node arguments that run the engine as production does (`npm start`): the compiled
 * JavaScript in dist/, built here first so that it is the checkout's code. Under tsx the
 * engine would pay for its TypeScript loader (and esbuild's function-name helpers) too.
 */
export function engineArgs(root: string, nodeFlags: readonly string[] = []): string[] {
  execFileSync('npm', ['run', '--silent', 'build:server'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  // The caller's flags after npm start's: a V8 flag given twice takes the last value.
  return [...ENGINE_NODE_FLAGS, ...nodeFlags, 'dist/server/main.js'];
}

/** Waits until the engine started as `child` answers /healthz on `port` (60 s at most); fails
 * at once if it exits. */
export async function waitHealthy(child: ChildProcess, port: number, name = 'the engine'): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${name} is not ready after 60 s`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (s: string) => console.error(s);

/** How to stop what was started, last first. */
export const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
/** Set by a signal: a run stops at its next step instead of timing servers being stopped. */
export const signalled = { now: false };

export function cleanup(): Promise<void> {
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
    signalled.now = true;
    console.error(`\n${signal}: stopping the servers and removing the temp dir`);
    void cleanup().finally(() => process.exit(code));
  });
}

/** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
}
