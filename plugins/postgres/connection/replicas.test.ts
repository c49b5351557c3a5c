/**
 * Read replicas (Note [Read replicas] in plugins/database/model/replicas.ts): which statements go where, shown with
 * a "replica" that is another database with the same table and other rows (so that every answer
 * says where it was read), and a replica that is down. A streaming replica of Debian's
 * PostgreSQL is not set up here: the routing does not depend on how the replica is fed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase, useServer } from '../../../test/helpers.js';
import { Client, useListening } from '../../../test/ws-helpers.js';
import { freePort } from '../../../server/embedded.js';

const TABLE = `create table item (id int primary key, place text not null)`;
const server = useServer(undefined, { config: { liveQueriesRefetchInterval: 50 } });
const net = useListening(server);
let primary: { url: string };
let replica: { url: string };
let sqlPrimary: postgres.Sql;

beforeAll(async () => {
  primary = await createDatabase('svc_primary');
  replica = await createDatabase('svc_replica');
  sqlPrimary = postgres(primary.url, { max: 1, onnotice: () => {} });
  const sqlReplica = postgres(replica.url, { max: 1, onnotice: () => {} });
  await sqlPrimary.unsafe(`${TABLE}; insert into item values (1, 'primary')`);
  await sqlReplica.unsafe(`${TABLE}; insert into item values (1, 'replica')`);
  await sqlReplica.end();
  const dead = `postgres://postgres@127.0.0.1:${await freePort()}/nowhere`;
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_add_source', args: { name: 'rs', configuration: { connection_info: { database_url: primary.url }, read_replicas: [{ database_url: replica.url }] } } },
      { type: 'pg_track_table', args: { source: 'rs', table: 'item' } },
      // A first replica that is down: reads go on to the next, then the primary.
      { type: 'pg_add_source', args: { name: 'rs2', configuration: { connection_info: { database_url: primary.url }, read_replicas: [{ database_url: dead, pool_settings: { pool_timeout: 1 } }, { database_url: replica.url }] }, customization: { root_fields: { prefix: 'two_' }, type_names: { prefix: 'two_' } } } },
      { type: 'pg_track_table', args: { source: 'rs2', table: 'item' } },
      { type: 'pg_add_source', args: { name: 'rs3', configuration: { connection_info: { database_url: primary.url }, read_replicas: [{ database_url: dead, pool_settings: { pool_timeout: 1 } }] }, customization: { root_fields: { prefix: 'three_' }, type_names: { prefix: 'three_' } } } },
      { type: 'pg_track_table', args: { source: 'rs3', table: 'item' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

afterAll(async () => {
  for (const name of ['rs', 'rs2', 'rs3']) await server.metadata({ type: 'pg_drop_source', args: { name } });
  await sqlPrimary?.end();
});

describe('read replicas', () => {
  it('queries read a replica; mutations and their returning the primary', async () => {
    expect(await server.gql('{ item { id place } }')).toEqual({ data: { item: [{ id: 1, place: 'replica' }] } });
    const m = await server.gql('mutation { insert_item_one(object: {id: 2, place: "written"}) { id place } }');
    expect(m).toEqual({ data: { insert_item_one: { id: 2, place: 'written' } } });
    expect((await sqlPrimary`select count(*)::int as n from item`)[0]!.n).toBe(2);
    // The replica has not got it (it is not fed here): the read shows the replica's rows.
    expect(await server.gql('{ item(order_by: {id: asc}) { id place } }')).toEqual({ data: { item: [{ id: 1, place: 'replica' }] } });
    await sqlPrimary`delete from item where id = 2`;
  });

  it('X-Svc-Read-From-Primary: true reads the primary', async () => {
    expect(await server.gql('{ item { place } }', undefined, { 'x-svc-read-from-primary': 'true' })).toEqual({ data: { item: [{ place: 'primary' }] } });
    expect(await server.gql('{ item { place } }', undefined, { 'x-svc-read-from-primary': 'false' })).toEqual({ data: { item: [{ place: 'replica' }] } });
  });

  it('subscriptions read a replica', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws');
    try {
      c.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { item { place } }' } });
      expect(await c.next('s')).toEqual({ type: 'next', id: 's', payload: { data: { item: [{ place: 'replica' }] } } });
    } finally {
      c.close();
    }
  });

  it('a replica that is down is left out: reads go to the next replica, then to the primary, with no failed query', async () => {
    for (let i = 0; i < 4; i++) expect(await server.gql('{ two_item { place } }')).toEqual({ data: { two_item: [{ place: 'replica' }] } });
    for (let i = 0; i < 4; i++) expect(await server.gql('{ three_item { place } }')).toEqual({ data: { three_item: [{ place: 'primary' }] } });
    // Per replica in /v1/metrics: the dead one is out and counted its failed read; the other is up.
    const metrics = (await server.request('GET', '/v1/metrics')).text;
    expect(metrics).toMatch(/svc_source_replica_up\{source="rs3",replica="rs3-replica-1"\} 0/);
    expect(metrics).toMatch(/svc_source_replica_failed_reads\{source="rs3",replica="rs3-replica-1"\} 1/);
    expect(metrics).toMatch(/svc_source_replica_up\{source="rs2",replica="rs2-replica-2"\} 1/);
  });

  it("a statement's own error is the request's, not a reason to leave the replica", async () => {
    const r = await server.gql('query ($p: String!) { item(where: {place: {_similar: $p}}) { id } }', { p: '(' });
    expect(r.errors?.[0]?.message).toMatch(/regular expression/);
    expect(await server.gql('{ item { place } }')).toEqual({ data: { item: [{ place: 'replica' }] } });
  });
});
