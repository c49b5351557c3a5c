/**
 * A throwaway cluster of Debian's PostgreSQL, which can load PostGIS (the embedded one cannot).
 *
 * Used by test/global-setup.ts (the PostGIS tests) and test/conformance-postgis.ts (the conformance
 * suite on a PostGIS-capable server). Needs Debian's PostgreSQL with PostGIS installed:
 * /usr/lib/postgresql/<N>/bin/{initdb,pg_ctl} and /usr/share/postgresql/<N>/extension/postgis.control,
 * the highest N is taken (`apt-get install postgresql-15-postgis-3 postgresql-contrib`).
 *
 * The cluster lives in a temporary directory, listens on 127.0.0.1 on a free port, trusts every
 * connection, runs with fsync off, and is removed by `stop()`. Run as root, initdb and pg_ctl run as
 * Debian's `postgres` OS user (PostgreSQL refuses to run as root).
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../server/embedded.js';

/** How to get a PostgreSQL with PostGIS on Debian, for messages. */
export const DEBIAN_POSTGIS_INSTALL = 'apt-get install postgresql-15-postgis-3 postgresql-contrib';

/** The bin directory of the newest Debian PostgreSQL that has PostGIS, if any. */
export function findDebianPostgis(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .map(Number)
    .sort((a, b) => b - a);
  for (const n of versions) {
    const bin = path.join(root, String(n), 'bin');
    if (existsSync(path.join(bin, 'initdb')) && existsSync(path.join(bin, 'pg_ctl')) && existsSync(`/usr/share/postgresql/${n}/extension/postgis.control`)) return bin;
  }
  return undefined;
}

const run = promisify(execFile);

export interface DebianPostgres {
  /** Superuser URL of the cluster's `postgres` database (user postgres, no password). */
  url: string;
  /** Stops the cluster and removes its directory; safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Starts a throwaway cluster of the Debian PostgreSQL found by findDebianPostgis. Throws when none is
 * installed, when the tests run as root and the OS user `postgres` does not exist, or when the
 * cluster does not start (with the last lines of its log); nothing is left behind then.
 */
export async function startDebianPostgres(opts: { prefix?: string; settings?: string[] } = {}): Promise<DebianPostgres> {
  const bin = findDebianPostgis();
  if (!bin) throw new Error(`no PostgreSQL with PostGIS was found under /usr/lib/postgresql (${DEBIAN_POSTGIS_INSTALL})`);

  // Run as root, PostgreSQL refuses to start: initdb and pg_ctl then run as Debian's `postgres` user.
  const asRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
    try {
      owner = { uid: await id('-u'), gid: await id('-g') };
    } catch (e) {
      throw new Error(`PostGIS was found at ${bin}, but the OS user postgres that its cluster must run as (when started as root) does not exist: ${(e as Error).message}`);
    }
  }
  const dir = mkdtempSync(path.join(tmpdir(), opts.prefix ?? 'svc-test-postgis-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const exec = (tool: string, args: string[]) => {
    const file = path.join(bin, tool);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: dir }) : run(file, args, { cwd: dir });
  };
  let started = false;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (started) await exec('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions']);
    const port = await freePort();
    const options = [
      `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
      ...(opts.settings ?? []).map((x) => `-c ${x}`),
    ].join(' ');
    started = true;
    await exec('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', log, '-o', options]);
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (e) {
    const logged = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
    const err = e as { stderr?: string; message?: string };
    await stop();
    throw new Error(`the PostGIS-capable PostgreSQL found at ${bin} did not start (data ${data}): ${err.stderr?.trim() || err.message}` + (logged ? `\nlast lines of its log:\n${logged}` : ''));
  }
}
