/**
 * Bad input never gets a 500, a hang or a crash: every operation of both endpoints is called with
 * malformed args, and must answer 400 with the SPEC's error shape; afterwards the metadata is as it
 * was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
  await s.runSql('create table author (id serial primary key, name text); create table article (id serial primary key, author_id int references author(id))');
  await s.metadata({ type: 'pg_track_table', args: { table: 'author' } });
  await s.metadata({ type: 'pg_track_table', args: { table: 'article' } });
});
afterAll(async () => {
  await s?.stop();
});

const BAD_ARGS: unknown[] = [
  null,
  [],
  'x',
  5,
  true,
  {},
  { table: 5 },
  { table: {}, name: {} },
  { table: 'author', name: '', role: '', using: 'x', permission: [], definition: 5 },
  { table: 'nope', name: 'n', role: 'r', using: { foreign_key_constraint_on: 7 }, permission: { filter: 'x', columns: 5 } },
  { table: { schema: 'public', name: 'author' }, role: 'user', permission: { columns: '*', filter: { _and: 'x' } } },
  { table: 'author', role: 'user', permission: { columns: ['id'], filter: { id: { _unknown: 1 } } } },
  { table: 'author', name: 'r', using: { manual_configuration: { remote_table: 'article', column_mapping: 5 } } },
  { table: 'author', name: 'cf', definition: { function: 'missing_fn' } },
  { function: 5, schema: 5, name: 5 },
  { sql: 5 },
  { sql: 'select * from', cascade: 'yes' },
  { name: 'x', configuration: { connection_info: { database_url: 5 } } },
  { metadata: 5, allow_inconsistent_metadata: 'x' },
  { version: 99, sources: 'x' },
  // Legacy flat forms whose nested parse used to throw (a 500): found by the fuzz suite.
  { source: 0, name: 'author' },
  { table: 'author', configuration: 0 },
  { sources: [{ name: 'default', tables: [{ table: 'author', select_permissions: [{ role: 'r', permission: 5 }] }], configuration: {} }] },
];

describe('malformed args', () => {
  it('every operation answers a coded 400 (or a 200 for what is valid), never a 500', async () => {
    const before = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.metadata;
    const problems: string[] = [];
    let sent = 0;
    // Operations whose valid forms clear or replace everything are exercised last, with the
    // malformed documents only (a `{}` document is a valid, empty metadata).
    const last = new Set(['clear_metadata', 'drop_inconsistent_metadata', 'reload_metadata', 'replace_metadata']);
    for (const endpoint of ['metadata', 'query'] as const) {
      const types = s.kernel.operationNames(endpoint);
      for (const type of [...types.filter((t) => !last.has(t)), ...types.filter((t) => last.has(t))]) {
        for (const args of type === 'replace_metadata' ? BAD_ARGS.filter((a) => a !== null && typeof a === 'object' && Object.keys(a).length > 0) : BAD_ARGS) {
          sent++;
          const r = await s.request('POST', endpoint === 'metadata' ? '/v1/metadata' : '/v1/query', { type, args });
          const label = `${endpoint} ${type} ${JSON.stringify(args)}`;
          if (r.status >= 500) problems.push(`${label} -> ${r.status} ${r.text.slice(0, 200)}`);
          else if (r.status !== 200 && (typeof r.body !== 'object' || typeof r.body.error !== 'string' || typeof r.body.path !== 'string')) {
            problems.push(`${label} -> ${r.status} without the error shape: ${r.text.slice(0, 200)}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
    expect(sent).toBeGreaterThan(1000);
    // Whatever was accepted above was valid; put the document back and check the server still works.
    const rv = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.resource_version;
    expect((await s.metadata({ type: 'replace_metadata', version: 2, resource_version: rv, args: { metadata: before } })).status).toBe(200);
    expect((await s.request('GET', '/healthz')).text).toBe('OK');
  }, 120_000);
});
