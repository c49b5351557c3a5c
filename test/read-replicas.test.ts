/**
 * Read replicas with a real streaming replica of Debian's PostgreSQL (test/streaming-replica.ts;
 * Note [Read replicas] in plugins/database/model/replicas.ts): a row written through the engine on the
 * primary is read through the engine from the replica once replicated, and a replica stopped
 * under load fails no query. Skipped, saying so, where Debian's PostgreSQL is not installed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { useServer } from './helpers.js';
import { findStreamingTools, startStreamingPair, type StreamingPair } from './streaming-replica.js';

const tools = findStreamingTools();
if (!tools) console.warn('read-replicas.test.ts: skipped, no Debian PostgreSQL with pg_basebackup (apt-get install postgresql-15-postgis-3)');

describe.skipIf(!tools)('a streaming replica', () => {
  const server = useServer();
  let pair: StreamingPair;
  let primary: postgres.Sql;

  beforeAll(async () => {
    pair = await startStreamingPair();
    primary = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} });
    await primary.unsafe('create table note (id int primary key, body text not null)');
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_add_source', args: { name: 'streamed', configuration: { connection_info: { database_url: pair.primaryUrl }, read_replicas: [{ database_url: pair.replicaUrl, pool_settings: { pool_timeout: 2 } }] } } },
        { type: 'pg_track_table', args: { source: 'streamed', table: 'note' } },
      ],
    });
    expect(r.status, r.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await server.metadata({ type: 'pg_drop_source', args: { name: 'streamed' } });
    await primary?.end();
    await pair?.stop();
  });

  it('a row written through the engine is read through the engine from the replica after replication', async () => {
    expect(await server.gql('mutation { insert_note_one(object: {id: 1, body: "hello"}) { id body } }')).toEqual({ data: { insert_note_one: { id: 1, body: 'hello' } } });
    let answer: unknown;
    for (let i = 0; i < 100; i++) {
      answer = await server.gql('{ note { id body } }');
      if (JSON.stringify(answer).includes('hello')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(answer).toEqual({ data: { note: [{ id: 1, body: 'hello' }] } });
    // The engine's reads are on the replica: its pool has a connection there.
    const replica = postgres(pair.replicaUrl, { max: 1, onnotice: () => {} });
    try {
      expect((await replica`select pg_is_in_recovery() as standby`)[0]!.standby).toBe(true);
      const engine = await replica`select count(*)::int as n from pg_stat_activity where application_name = 'svc-source-streamed-replica-1'`;
      expect(engine[0]!.n).toBeGreaterThan(0);
    } finally {
      await replica.end();
    }
  });

  it('the replica stopped under load: no query fails (reads go to the primary)', async () => {
    let failed = 0;
    let answered = 0;
    const worker = async () => {
      for (let i = 0; i < 40; i++) {
        const r = await server.gql('{ note { id } }');
        if (r.errors || !r.data) failed++;
        else answered++;
      }
    };
    const load = Promise.all([worker(), worker(), worker(), worker()]);
    await new Promise((r) => setTimeout(r, 100));
    await pair.stopReplica();
    await load;
    expect({ failed, answered }).toEqual({ failed: 0, answered: 160 });
    const metrics = (await server.request('GET', '/v1/metrics')).text;
    expect(metrics).toMatch(/svc_source_replica_up\{source="streamed",replica="streamed-replica-1"\} 0/);
  }, 60_000);
});
