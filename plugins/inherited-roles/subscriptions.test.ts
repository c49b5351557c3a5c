/**
 * Inherited roles over WebSockets: subscribers of one inherited role with different sessions share
 * a multiplexed live query, and each gets the cells its own session may see; a stream on a column
 * the role sees only in some rows streams the rows where it sees it.
 */
import { afterEach, beforeAll, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import { Client, useListening } from '../../test/ws-helpers.js';

const SEED = `
create table doc (id int primary key, owner int not null, team int not null, secret text, score int not null);
insert into doc values (1, 1, 10, 's1', 5), (2, 2, 10, 's2', 7), (3, 3, 20, 's3', 11);
`;

const server = useServer(SEED, { config: { liveQueriesRefetchInterval: 40 } });
const net = useListening(server);
afterEach(() => Client.closeAll());
const member = (user: number, team: number) => ({ headers: { 'X-Svc-Role': 'member', 'X-Svc-User-Id': String(user), 'X-Svc-Team': String(team) } });

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'doc' } },
      { type: 'pg_create_select_permission', args: { table: 'doc', role: 'owner', permission: { columns: '*', filter: { owner: 'X-Svc-User-Id' } } } },
      { type: 'pg_create_select_permission', args: { table: 'doc', role: 'teammate', permission: { columns: ['id', 'team'], filter: { team: 'X-Svc-Team' } } } },
      { type: 'add_inherited_role', args: { role_name: 'member', role_set: ['owner', 'teammate'] } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

it('gives each subscriber of a multiplexed live query the cells of its own session', async () => {
  const a = await Client.init(net.url, 'graphql-transport-ws', member(1, 10));
  const b = await Client.init(net.url, 'graphql-transport-ws', member(2, 10));
  const doc = 'subscription { doc(order_by: {id: asc}) { id secret } }';
  a.send({ type: 'subscribe', id: 'x', payload: { query: doc } });
  b.send({ type: 'subscribe', id: 'x', payload: { query: doc } });
  expect((await a.next('x')).payload).toEqual({ data: { doc: [{ id: 1, secret: 's1' }, { id: 2, secret: null }] } });
  expect((await b.next('x')).payload).toEqual({ data: { doc: [{ id: 1, secret: null }, { id: 2, secret: 's2' }] } });
  await server.sql`update doc set secret = 's2b' where id = 2`;
  expect((await b.next('x')).payload).toEqual({ data: { doc: [{ id: 1, secret: null }, { id: 2, secret: 's2b' }] } });
  expect(a.unread()).toEqual([]);
});

it('streams by a redacted column only the rows where the role sees it', async () => {
  const c = await Client.init(net.url, 'graphql-transport-ws', member(3, 10));
  c.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { doc_stream(batch_size: 10, cursor: {initial_value: {score: 0}}) { id score } }' } });
  // Rows 1 and 2 are the teammate's, whose scores member does not see: only row 3 comes.
  expect((await c.next('s')).payload).toEqual({ data: { doc_stream: [{ id: 3, score: 11 }] } });
});
