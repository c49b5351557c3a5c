/**
 * The PostGIS-capable PostgreSQL of the test run (test/postgis.ts): a server on one of its databases
 * runs PostGIS functions through run_sql and tracks a table with a geometry column.
 */
import { describe, expect, it } from 'vitest';
import { POSTGIS_MISSING, postgisAvailable, usePostgisServer } from './postgis.js';

if (!postgisAvailable()) console.log(POSTGIS_MISSING);

describe.skipIf(!postgisAvailable())('PostGIS database', () => {
  const s = usePostgisServer();

  it('runs PostGIS functions through /v2/query run_sql', async () => {
    const r = await s.request('POST', '/v2/query', { type: 'run_sql', args: { sql: `select ST_AsText(ST_GeomFromGeoJSON('{"type":"Point","coordinates":[1,2]}'))` } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ result_type: 'TuplesOk', result: [['st_astext'], ['POINT(1 2)']] });
  });

  it('tracks a table with a geometry column', async () => {
    await s.runSql('create table t (g geometry)');
    const r = await s.metadata({ type: 'pg_track_table', args: { table: 't' } });
    expect(r.status, r.text).toBe(200);
    expect((await s.tables()).map((t: { table: { name: string } }) => t.table.name)).toContain('t');
  });
});
