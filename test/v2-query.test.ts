/**
 * Hasura v2's query API, POST /v2/query: run_sql (what the Hasura CLI applies migrations with) and
 * the data operations with their `source`; the legacy endpoint's other operations are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './helpers.js';

let s: TestServer;
const admin = { 'x-svc-admin-secret': 'v2-secret' };
beforeAll(async () => {
  s = await startServer({ config: { adminSecret: 'v2-secret' } });
});
afterAll(async () => {
  await s?.stop();
});
const v2 = (body: unknown, headers: Record<string, string> = admin) => s.request('POST', '/v2/query', body, headers);

describe('/v2/query', () => {
  it('runs run_sql, and the data operations on a source', async () => {
    expect(await v2({ type: 'run_sql', args: { source: 'default', sql: 'create table v2_author (id int primary key, name text); insert into v2_author values (1, $$ann$$)' } })).toMatchObject({
      status: 200,
      body: { result_type: 'CommandOk', result: null },
    });
    expect((await v2({ type: 'run_sql', args: { sql: 'select name from v2_author' } })).body).toEqual({ result_type: 'TuplesOk', result: [['name'], ['ann']] });
    expect((await s.metadata({ type: 'pg_track_table', args: { table: 'v2_author' } }, admin)).status).toBe(200);
    const ins = await v2({ type: 'insert', args: { source: 'default', table: 'v2_author', objects: [{ id: 2, name: 'bo' }], returning: ['id'] } });
    expect(ins).toMatchObject({ status: 200, body: { affected_rows: 1, returning: [{ id: 2 }] } });
    const sel = await v2({ type: 'bulk', args: [{ type: 'select', args: { table: 'v2_author', columns: ['name'], order_by: ['id'] } }, { type: 'count', args: { table: 'v2_author' } }] });
    expect(sel).toMatchObject({ status: 200, body: [[{ name: 'ann' }, { name: 'bo' }], { count: 2 }] });
  });

  it('refuses the other operations of the legacy endpoint, in a bulk too, leaving the metadata as it was', async () => {
    const before = (await s.metadata({ type: 'export_metadata', args: {} }, admin)).body;
    await s.runSql('create table v2_other (id int primary key)');
    const r = await v2({ type: 'track_table', args: { table: 'v2_other' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.type' } });
    expect(r.body.error).toMatch(/unknown operation type "track_table" on \/v2\/query/);
    const b = await v2({ type: 'bulk', args: [{ type: 'run_sql', args: { sql: 'select 1' } }, { type: 'track_table', args: { table: 'v2_other' } }] });
    expect(b).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args[1].type' } });
    expect((await s.metadata({ type: 'export_metadata', args: {} }, admin)).body).toEqual(before);
  });

  it('is admin only, and answers bad bodies in the SPEC shape', async () => {
    expect(await v2({ type: 'run_sql', args: { sql: 'select 1' } }, {})).toMatchObject({ status: 401 });
    expect(await v2({ type: 'run_sql', args: { sql: 'select 1' } }, { 'x-svc-admin-secret': 'v2-secret', 'x-svc-role': 'user' })).toMatchObject({ status: 400, body: { code: 'access-denied' } });
    expect(await v2({ args: {} })).toMatchObject({ status: 400, body: { path: '$' } });
  });
});
