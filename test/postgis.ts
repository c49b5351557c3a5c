/**
 * PostGIS in the tests. The embedded PostgreSQL of the run cannot load PostGIS, so test/global-setup.ts
 * provides a second server that can (`postgisAdminUrl`: SVC_TEST_POSTGIS_URL, or a throwaway cluster of
 * Debian's PostgreSQL with postgresql-<N>-postgis-3), or '' when there is none.
 *
 * Tests that need PostGIS use `describe.skipIf(!postgisAvailable())` and, when skipped, print why
 * (e.g. `if (!postgisAvailable()) console.log(POSTGIS_MISSING)`), so that a missing PostGIS is
 * visible rather than silently passing.
 */
import { inject } from 'vitest';
import { createDatabaseOn, startServer, useServerWith, type TestServer } from './helpers.js';

/** Why PostGIS tests are skipped, to print when they are. */
export const POSTGIS_MISSING =
  'PostGIS tests skipped: no PostgreSQL with PostGIS was found (apt-get install postgresql-15-postgis-3 postgresql-contrib, or set SVC_TEST_POSTGIS_URL), or SVC_TEST_NO_POSTGIS is set';

export function postgisAvailable(): boolean {
  return inject('postgisAdminUrl') !== '';
}

/** The extensions every PostGIS test database has. */
const EXTENSIONS = ['postgis', 'postgis_raster', 'ltree', 'citext', 'pgcrypto'];

/** A fresh database on the PostGIS server, with postgis, postgis_raster, ltree, citext and pgcrypto created. */
export async function createPostgisDatabase(prefix = 'svc_test_gis'): Promise<{ name: string; url: string }> {
  const admin = inject('postgisAdminUrl');
  if (!admin) throw new Error(POSTGIS_MISSING);
  return createDatabaseOn(admin, prefix, EXTENSIONS.map((e) => `create extension if not exists ${e}`));
}

/** useServer (test/helpers.ts) on a fresh database of createPostgisDatabase. */
export function usePostgisServer(seed?: string, opts: Omit<Parameters<typeof startServer>[0] & {}, 'database'> = {}): TestServer {
  return useServerWith(async () => startServer({ ...opts, database: await createPostgisDatabase() }), seed);
}
