/**
 * The server on its embedded PostgreSQL after a crash: kill -9 leaves no orphaned postmaster
 * (watchdog), a restart boots on the first try even when one is left (or a stale postmaster.pid),
 * SIGTERM during boot leaves nothing running, boot failures say why, and a bulk interrupted by
 * kill -9 is all-or-nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../server/embedded.js';
import { describeError } from '../server/boot.js';
import { post, spawnServer, waitReady, type ServerProcess } from './server-process.js';

const procs: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  // Whatever postgres a test left behind on its data directories (none, when they pass).
  for (const d of dirs) for (const pid of pgPids(d)) signal(pid, 'SIGQUIT');
  await until(() => dirs.every((d) => pgPids(d).length === 0), 10_000).catch(() => {});
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-crash-'));
  chmodSync(dir, 0o755); // initdb runs as the `postgres` user when the tests run as root
  dirs.push(dir);
  return dir;
}

type Proc = ServerProcess;

function start(dir: string, port: number, env: Record<string, string> = {}): Proc {
  const p = spawnServer({ SVC_GRAPHQL_DATA_DIR: dir, SVC_GRAPHQL_SERVER_PORT: String(port), ...env });
  procs.push(p.child);
  return p;
}

async function kill9(p: Proc): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}

async function stop(p: Proc): Promise<void> {
  p.child.kill('SIGTERM');
  expect(await p.exited).toBe(0);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(50);
  }
}

const exportMd = async (port: number) => (await post(port, '/v1/metadata', { type: 'export_metadata', version: 2, args: {} })).body;

function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Running, not a zombie (an orphan's reaper may be slow to reap it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!);
  } catch {
    return false;
  }
}

/** Processes whose working directory is the data directory's cluster: the postmaster and its children. */
function pgPids(dir: string): number[] {
  const cluster = path.join(realpathSync(dir), 'pg');
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readlinkSync(`/proc/${e}/cwd`) === cluster) pids.push(Number(e));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

/** The watchdog processes of a data directory (their command line names it). */
function watchdogPids(dir: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (cmd.includes('watchdog') && cmd.includes(path.join(dir, 'pg'))) pids.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return pids;
}

const postmasterPid = (dir: string) => Number(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);

describe('crash and restart on the embedded PostgreSQL', () => {
  const dir = dataDir();
  let port = 0;

  it('kill -9: the orphaned postmaster stops within seconds, and a restart boots with everything there', async () => {
    port = await freePort();
    const p = start(dir, port);
    await waitReady(p, 60_000);
    expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: "create table kept (v text); insert into kept values ('x')" } })).status).toBe(200);
    expect((await post(port, '/v1/metadata', { type: 'pg_track_table', args: { table: 'kept' } })).status).toBe(200);
    const before = await exportMd(port);
    const pm = postmasterPid(dir);
    expect(alive(pm)).toBe(true);

    await kill9(p);
    const killedAt = Date.now();
    await until(() => pgPids(dir).length === 0, 5000);
    expect(Date.now() - killedAt).toBeLessThan(5000);
    expect(watchdogPids(dir)).toEqual([]);

    const again = start(dir, port);
    await waitReady(again);
    expect(await exportMd(port)).toEqual(before);
    expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: 'select v from kept' } })).body.result).toEqual([['v'], ['x']]);
    await stop(again);
    expect(pgPids(dir)).toEqual([]);
  }, 120_000);

  it('kill -9 of the server and its watchdog: the restart stops the orphaned postmaster and boots', async () => {
    const p = start(dir, port);
    await waitReady(p);
    const before = await exportMd(port);
    const pm = postmasterPid(dir);
    const dogs = watchdogPids(dir);
    expect(dogs.length).toBe(1);
    for (const d of dogs) signal(d, 'SIGKILL');
    await kill9(p);
    await sleep(300);
    expect(alive(pm)).toBe(true); // orphaned, still holding the data directory

    const again = start(dir, port);
    await waitReady(again);
    expect(alive(pm)).toBe(false);
    expect(await exportMd(port)).toEqual(before);
    expect(again.out.join('')).toContain('stale');
    await stop(again);
  }, 30_000);

  it('a stale postmaster.pid (dead PID, or a PID now used by another process) does not stop the boot', async () => {
    const pidFile = path.join(dir, 'pg', 'postmaster.pid');
    const dead = spawn('true');
    await new Promise((r) => dead.on('exit', r));
    const stale = (pid: number) => `${pid}\n${path.join(dir, 'pg')}\n1700000000\n5432\n/tmp\n127.0.0.1\n  2146508        15\nready   \n`;
    for (const pid of [dead.pid!, process.pid]) {
      writeFileSync(pidFile, stale(pid));
      const p = start(dir, port);
      await waitReady(p);
      expect((await exportMd(port)).metadata.sources[0].tables).toEqual([{ table: { schema: 'public', name: 'kept' } }]);
      await stop(p);
      expect(existsSync(pidFile)).toBe(false);
    }
    expect(signal(process.pid, 0)).toBe(true);
  }, 30_000);

  it('SIGTERM during boot (PostgreSQL starting, then the kernel loading): exits 0, no postgres left', async () => {
    for (const when of ['postgres starting', 'kernel loading'] as const) {
      const p = start(dir, port);
      if (when === 'postgres starting') await until(() => existsSync(path.join(dir, 'pg', 'postmaster.pid')), 20_000);
      else await until(() => p.out.join('').includes('started the embedded PostgreSQL'), 20_000);
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      expect(p.out.join('')).toContain('received SIGTERM during boot');
      expect(p.out.join('')).not.toContain('"serving"');
      expect(pgPids(dir)).toEqual([]);
      // The server sends the watchdog SIGTERM as it exits, and does not wait for it to die: on a
      // loaded machine it may still be going (the full suite once caught it).
      await until(() => watchdogPids(dir).length === 0, 5000);
    }
  }, 30_000);

  it('a boot failure prints its real message (the embedded PostgreSQL log; a data dir that is a file)', async () => {
    // The embedded PostgreSQL's port is taken.
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const pgPort = (busy.address() as { port: number }).port;
    try {
      const p = start(dir, port, { SVC_GRAPHQL_EMBEDDED_PG_PORT: String(pgPort) });
      expect(await p.exited).toBe(1);
      const out = p.out.join('');
      expect(out).toMatch(/svc: boot failed: .*the embedded PostgreSQL did not start/);
      expect(out).toContain('Address already in use');
      expect(out).not.toContain('undefined');
      expect(pgPids(dir)).toEqual([]);
    } finally {
      busy.close();
    }
    const file = path.join(dataDir(), 'not-a-dir');
    writeFileSync(file, '');
    const f = start(file, port);
    expect(await f.exited).toBe(1);
    expect(f.out.join('')).toMatch(/svc: boot failed: .*(ENOTDIR|EEXIST|not a directory)/);
  }, 30_000);

  it('boot errors that are not Errors are described', () => {
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError('a string')).toBe('a string');
    expect(describeError(undefined)).toBe('unknown error (undefined)');
    expect(describeError(null)).toBe('unknown error (null)');
    expect(describeError({ code: 'X', detail: 'y' })).toBe('{"code":"X","detail":"y"}');
    expect(describeError(new Error('outer', { cause: new Error('inner') }))).toBe('outer: inner');
  });
});

describe('crash loop', () => {
  it('kill -9 three times during a bulk of 500 operations: every restart boots, metadata is all-before or all-after', async () => {
    const dir = dataDir();
    const port = await freePort();
    let p = start(dir, port);
    await waitReady(p, 60_000);
    const N = 250;
    const ddl = Array.from({ length: N }, (_, i) => `create table t${i} (id int primary key, v text);`).join('');
    expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: ddl } })).status).toBe(200);
    const bulk = {
      type: 'bulk',
      args: [
        ...Array.from({ length: N }, (_, i) => ({ type: 'pg_track_table', args: { table: `t${i}` } })),
        ...Array.from({ length: N }, (_, i) => ({
          type: 'pg_create_select_permission',
          args: { table: `t${i}`, role: 'user', permission: { columns: ['id', 'v'], filter: { id: { _eq: 'X-Svc-User-Id' } } } },
        })),
      ],
    };
    // The all-after state: the bulk run to completion once, then the metadata put back as it was.
    const before = await exportMd(port);
    const t0 = Date.now();
    expect((await post(port, '/v1/metadata', bulk)).status).toBe(200);
    const took = Date.now() - t0;
    const after = await exportMd(port);
    expect(after.metadata.sources[0].tables.length).toBe(N);
    const step = after.resource_version - before.resource_version;
    const restore = async () => {
      expect((await post(port, '/v1/metadata', { type: 'replace_metadata', args: before.metadata })).status).toBe(200);
    };
    await restore();

    const seen: string[] = [];
    for (let round = 0; round < 3; round++) {
      const cur = await exportMd(port);
      expect(cur.metadata).toEqual(before.metadata);
      const inFlight = post(port, '/v1/metadata', bulk).catch(() => undefined);
      await sleep(Math.random() * took * 1.2);
      await kill9(p);
      await inFlight;

      p = start(dir, port);
      await waitReady(p); // first try: waitReady fails if the process exits
      const now = await exportMd(port);
      if (now.resource_version === cur.resource_version) {
        expect(now).toEqual(cur);
        seen.push('before');
      } else {
        expect(now).toEqual({ resource_version: cur.resource_version + step, metadata: after.metadata });
        seen.push('after');
        await restore();
      }
    }
    expect(seen.length).toBe(3);
    await stop(p);
    expect(pgPids(dir)).toEqual([]);
  }, 120_000);
});
