/** Root field conflicts are found incrementally across builds (Note [Root field conflicts]). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers.js';
import { FLATTEN_DEPTH } from './customization.js';

const N = FLATTEN_DEPTH + 8;

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  await s.runSql(Array.from({ length: N }, (_, i) => `create table t${i} (id int primary key)`).join(';'));
});
afterAll(async () => {
  await s?.stop();
});

describe('root field conflicts across many builds', () => {
  it('finds a conflict after more builds than the index keeps layers, and forgets it when resolved', async () => {
    for (let i = 0; i < N; i++) {
      expect((await s.metadata({ type: 'pg_track_table', args: { table: `t${i}` } })).status).toBe(200);
    }
    // t1's select field renamed to t0's name: a conflict with a table tracked more builds ago than the index keeps layers.
    const clash = await s.metadata({ type: 'pg_set_table_customization', args: { table: 't1', configuration: { custom_root_fields: { select: 't0' } } } });
    expect(clash).toMatchObject({ status: 500, body: { code: 'unexpected', path: '$.args' } });
    expect(clash.body.error).toBe(
      "Encountered conflicting definitions in the selection set for 'subscription_root' for field 't0' defined in [table t0 in source default, table t1 in source default]. Fields must not be defined more than once across all sources.",
    );

    // Stored anyway (allow_inconsistent_metadata), then resolved by untracking one side.
    const { metadata } = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const tables = metadata.sources[0].tables.map((t: { table: { name: string } }) =>
      t.table.name === 't1' ? { ...t, configuration: { custom_root_fields: { select: 't0' } } } : t,
    );
    const doc = { ...metadata, sources: [{ ...metadata.sources[0], tables }] };
    const rep = await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: doc } });
    expect(rep.body.is_consistent).toBe(false);
    expect(rep.body.inconsistent_objects[0]).toMatchObject({ type: 'root_fields', name: 'subscription_root' });
    // An unrelated change keeps reporting it.
    expect((await s.metadata({ type: 'pg_untrack_table', args: { table: 't5' } })).status).toBe(200);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body.is_consistent).toBe(false);
    expect((await s.metadata({ type: 'pg_untrack_table', args: { table: 't0' } })).status).toBe(200);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });
    // And tracking t0 again brings the conflict back (rejected).
    expect((await s.metadata({ type: 'pg_track_table', args: { table: 't0' } })).status).toBe(500);
  });
});
