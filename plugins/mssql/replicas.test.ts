/**
 * Read replicas of a MS SQL Server source (Note [Read replicas] in plugins/database/model/replicas.ts),
 * over the stand-in at the connection boundary, which records the server each batch went to:
 * queries go round robin to the replicas, mutations and what runs in a transaction to the primary,
 * `X-Svc-Read-From-Primary: true` to the primary; a replica that cannot be reached is left out and
 * the read goes on elsewhere; the replicas appear in the metrics; the configuration is validated.
 */
import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../server/plugins.js';
import { useServer } from '../../test/helpers.js';
import { mssqlPlugin } from './index.js';
import { jsonAnswer, standIn } from './test-support/stand-in.js';

const stand = standIn();
const conn = (server: string) => `Server=${server},1433;Database=svc;User Id=svc;Password=secret;Encrypt=false`;
const s = useServer(undefined, { plugins: builtinPlugins.map((p) => (p.name === 'mssql' ? mssqlPlugin(stand.driver) : p)) });
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const servers = (from: number, match: (sql: string) => boolean) =>
  stand.statements
    .slice(from)
    .filter((x) => match(x.sql))
    .map((x) => x.server);
const isSelect = (sql: string) => sql.includes('FOR JSON');

describe('mssql read_replicas', () => {
  it('refuses a malformed replica in the SPEC shape', async () => {
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'bad', configuration: { connection_info: { connection_string: conn('primary') }, read_replicas: [{ connection_string: '' }] } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.read_replicas[0].connection_string' },
    });
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'bad', configuration: { connection_info: { connection_string: conn('primary') }, read_replicas: {} } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.read_replicas' },
    });
  });

  it('sends queries to the replicas in turn and writes to the primary', async () => {
    await ok({
      type: 'mssql_add_source',
      args: { name: 'ms', configuration: { connection_info: { connection_string: conn('primary') }, read_replicas: [{ connection_string: conn('replica1') }, { connection_string: conn('replica2') }] } },
    });
    await ok({ type: 'mssql_track_table', args: { source: 'ms', table: 'author' } });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === 'ms').configuration.read_replicas).toHaveLength(2);
    stand.answer(isSelect, jsonAnswer([{ id: 1 }]));
    let from = stand.statements.length;
    for (let i = 0; i < 4; i++) expect(await s.gql('{ author { id } }')).toEqual({ data: { author: [{ id: 1 }] } });
    expect(servers(from, isSelect).sort()).toEqual(['replica1', 'replica1', 'replica2', 'replica2']);

    // The header asks for the primary.
    from = stand.statements.length;
    expect(await s.gql('{ author { id } }', undefined, { 'x-svc-read-from-primary': 'true' })).toEqual({ data: { author: [{ id: 1 }] } });
    expect(servers(from, isSelect)).toEqual(['primary']);

    // A mutation goes to the primary.
    stand.answer((sql) => sql.includes('INSERT'), jsonAnswer({ id: 9, name: 'x' }));
    from = stand.statements.length;
    const m = await s.gql('mutation { insert_author_one(object: {name: "x"}) { id } }');
    expect(m.errors).toBeUndefined();
    expect(servers(from, (sql) => sql.includes('INSERT'))).toEqual(['primary']);
    // The metrics list both replicas, up.
    const metrics = (await s.request('GET', '/v1/metrics')).text;
    expect(metrics).toMatch(/svc_source_replica_up\{source="ms",replica="ms-replica-1"\} 1/);
    expect(metrics).toMatch(/svc_source_replica_up\{source="ms",replica="ms-replica-2"\} 1/);
  });

  it('leaves out a replica that cannot be reached and reads elsewhere, with no failed query', async () => {
    await ok({
      type: 'mssql_add_source',
      args: { name: 'ms2', configuration: { connection_info: { connection_string: conn('primary') }, read_replicas: [{ connection_string: conn('unreachable') }, { connection_string: conn('replica3') }] } },
    });
    await ok({ type: 'mssql_track_table', args: { source: 'ms2', table: { schema: 'sales', name: 'customer' } } });
    stand.answer(isSelect, jsonAnswer([]));
    const from = stand.statements.length;
    for (let i = 0; i < 4; i++) {
      const r = await s.gql('{ sales_customer { customer_id } }');
      expect(r.errors, JSON.stringify(r)).toBeUndefined();
    }
    // Every read answered by replica3: the unreachable one failed once and was left out.
    expect(servers(from, isSelect)).toEqual(['replica3', 'replica3', 'replica3', 'replica3']);
    const metrics = (await s.request('GET', '/v1/metrics')).text;
    expect(metrics).toMatch(/svc_source_replica_up\{source="ms2",replica="ms2-replica-1"\} 0/);
  });
});
