/**
 * A throwaway PgBouncer (Debian's `pgbouncer` package) in front of a PostgreSQL, for tests.
 *
 * It runs in the foreground (its log on stderr, kept for messages), from an ini file in a temporary
 * directory, listens on 127.0.0.1 on a free port, and forwards every database name to the same name
 * on the upstream server, logging in there as the upstream URL's user (`auth_type = any`: whatever
 * user a client names). Run as root, it runs as the OS user `postgres` (PgBouncer refuses root).
 * `stop()` ends it (SIGTERM, then SIGKILL) and removes the directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../server/embedded.js';

/** How to get PgBouncer on Debian, for messages. */
export const PGBOUNCER_INSTALL = 'apt-get install pgbouncer';

/** The pgbouncer binary, if installed (Debian puts it in /usr/sbin, which a user's PATH may lack).
 * SVC_TEST_NO_PGBOUNCER=1 skips the search (to check the skip path on a machine that has it). */
export function findPgbouncer(): string | undefined {
  if (process.env.SVC_TEST_NO_PGBOUNCER === '1') return undefined;
  for (const p of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) if (existsSync(p)) return p;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(path.join(dir, 'pgbouncer'))) return path.join(dir, 'pgbouncer');
  }
  return undefined;
}

export interface Pgbouncer {
  /** `upstream`'s URL with PgBouncer's host and port instead (same user, password, database). */
  urlFor(upstream: string): string;
  /** The URL of PgBouncer's admin console (SHOW POOLS, SHOW STATS: simple protocol only). */
  adminUrl: string;
  /** What PgBouncer logged so far. */
  log(): string;
  stop(): Promise<void>;
}

export async function startPgbouncer(upstreamAdminUrl: string, opts: { poolMode?: 'transaction' | 'session' | 'statement'; poolSize?: number; extra?: Record<string, string | number> } = {}): Promise<Pgbouncer> {
  const bin = findPgbouncer();
  if (!bin) throw new Error(`pgbouncer is not installed (${PGBOUNCER_INSTALL})`);
  const up = new URL(upstreamAdminUrl);
  const user = decodeURIComponent(up.username || 'postgres');
  const password = decodeURIComponent(up.password);
  const host = up.hostname === 'localhost' ? '127.0.0.1' : up.hostname;
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-pgbouncer-'));
  const asRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    owner = { uid: id('-u'), gid: id('-g') };
    chownSync(dir, owner.uid, owner.gid);
  }
  // A value with a space or a quote would need quoting in the connection string: the test
  // clusters' credentials have neither.
  const forced = `host=${host} port=${up.port || 5432} user=${user}${password ? ` password=${password}` : ''}`;
  const settings: Record<string, string | number> = {
    listen_addr: '127.0.0.1',
    listen_port: port,
    unix_socket_dir: '',
    auth_type: 'any',
    admin_users: user,
    stats_users: user,
    pool_mode: opts.poolMode ?? 'transaction',
    default_pool_size: opts.poolSize ?? 4,
    min_pool_size: 0,
    reserve_pool_size: 0,
    max_client_conn: 1000,
    max_db_connections: 0,
    ignore_startup_parameters: 'extra_float_digits',
    logfile: '',
    pidfile: '',
    ...opts.extra,
  };
  const ini = path.join(dir, 'pgbouncer.ini');
  writeFileSync(ini, `[databases]\n* = ${forced}\n\n[pgbouncer]\n${Object.entries(settings).map(([k, v]) => `${k} = ${v}`).join('\n')}\n`, { mode: 0o644 });
  if (owner) chownSync(ini, owner.uid, owner.gid);

  let logged = '';
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const child: ChildProcess = spawn(bin, [ini], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], ...(owner ?? {}) });
  const keep = (b: Buffer) => {
    logged += b.toString('utf8');
    if (logged.length > 200_000) logged = logged.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const gone = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    }),
  );
  // A test worker that ends without stop() (a hook that timed out) takes PgBouncer with it.
  const onExit = () => {
    if (!exited) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.off('exit', onExit);
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await gone;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })());

  // Ready when it accepts TCP connections on its port.
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exited) {
      const out = logged.trim().split('\n').slice(-20).join('\n');
      await stop();
      throw new Error(`pgbouncer exited at start (${exited.code ?? exited.signal}):\n${out}`);
    }
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`pgbouncer did not listen on 127.0.0.1:${port} within 15 s:\n${logged}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  const urlFor = (upstream: string) => {
    const u = new URL(upstream);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  };
  const admin = new URL(upstreamAdminUrl);
  admin.hostname = '127.0.0.1';
  admin.port = String(port);
  admin.pathname = '/pgbouncer';
  return { urlFor, adminUrl: admin.toString(), log: () => logged, stop };
}
