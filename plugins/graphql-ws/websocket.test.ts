/**
 * GraphQL over WebSocket on /v1/graphql (Note [GraphQL over WebSocket] in
 * plugins/graphql-ws/connection.ts), with a real `ws` client against the server listening on a
 * port: both protocols, authentication from `connection_init`, queries and mutations answered
 * once, and every protocol error path.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { useServer } from '../../test/helpers.js';
import { Client, useListening } from '../../test/ws-helpers.js';

const SECRET = 'ws-secret';
const SEED = `
create table item (id serial primary key, name text not null, owner int not null);
insert into item (name, owner) values ('a', 1), ('b', 2), ('c', 1);
create function slow_items(ms int) returns setof item language sql stable as $$ select i.* from item i, pg_sleep(ms / 1000.0) $$;
`;

const server = useServer(SEED, { config: { adminSecret: SECRET, websocketConnectionInitTimeout: 1, maxRequestBodySize: 64 * 1024 } });
const net = useListening(server);
afterEach(() => Client.closeAll());
const admin = { headers: { 'X-Svc-Admin-Secret': SECRET } };
const user = (id: number) => ({ headers: { 'X-Svc-Admin-Secret': SECRET, 'X-Svc-Role': 'user', 'X-Svc-User-Id': String(id) } });

beforeAll(async () => {
  const h = { 'x-svc-admin-secret': SECRET };
  const r = await server.metadata(
    {
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'item' } },
        { type: 'pg_track_function', args: { function: 'slow_items' } },
        { type: 'pg_create_select_permission', args: { table: 'item', role: 'user', permission: { columns: ['id', 'name'], filter: { owner: { _eq: 'X-Svc-User-Id' } } } } },
      ],
    },
    h,
  );
  expect(r.status, r.text).toBe(200);
});

const QUERY = 'query { item(order_by: {id: asc}) { id name } }';

describe('graphql-ws (Apollo subscriptions-transport-ws)', () => {
  it('init with the payload headers: ack, ka; a query is data then complete; a mutation too', async () => {
    const c = await Client.init(net.url, 'graphql-ws', admin);
    expect(c.ws.protocol).toBe('graphql-ws');
    c.send({ type: 'start', id: 'q1', payload: { query: QUERY } });
    expect(await c.next('q1')).toEqual({ type: 'data', id: 'q1', payload: { data: { item: [{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 3, name: 'c' }] } } });
    expect(await c.next('q1')).toEqual({ type: 'complete', id: 'q1' });
    c.send({ type: 'start', id: 'm1', payload: { query: 'mutation ($n: String!) { insert_item_one(object: {name: $n, owner: 3}) { id name } }', variables: { n: 'd' } } });
    expect(await c.next('m1')).toEqual({ type: 'data', id: 'm1', payload: { data: { insert_item_one: { id: 4, name: 'd' } } } });
    expect(await c.next('m1')).toEqual({ type: 'complete', id: 'm1' });
    await server.sql`delete from item where id = 4`;
    c.close();
  });

  it('errors before running are `error` + complete; errors of running are `data` with the errors + complete', async () => {
    const c = await Client.init(net.url, 'graphql-ws', admin);
    c.send({ type: 'start', id: 'v', payload: { query: '{ item { nope } }' } });
    expect(await c.next('v')).toEqual({
      type: 'error',
      id: 'v',
      payload: { errors: [{ message: "field 'nope' not found in type: 'item'", extensions: { path: '$.selectionSet.item.selectionSet.nope', code: 'validation-failed' } }] },
    });
    expect(await c.next('v')).toEqual({ type: 'complete', id: 'v' });
    c.send({ type: 'start', id: 'x', payload: { query: 'mutation { insert_item_one(object: {name: "e"}) { id } }' } });
    const data = await c.next('x');
    expect(data.type).toBe('data');
    expect(data.payload.errors[0].extensions.code).toBe('constraint-violation');
    expect(await c.next('x')).toEqual({ type: 'complete', id: 'x' });
    c.close();
  });

  it('the session comes from the init payload: a role sees its rows; headers at the top level work too', async () => {
    const c = await Client.init(net.url, 'graphql-ws', user(1));
    c.send({ type: 'start', id: '1', payload: { query: QUERY } });
    expect((await c.next('1')).payload).toEqual({ data: { item: [{ id: 1, name: 'a' }, { id: 3, name: 'c' }] } });
    c.close();
    const top = await Client.init(net.url, 'graphql-ws', { 'X-Svc-Admin-Secret': SECRET, 'x-svc-role': 'user', 'x-svc-user-id': '2' });
    top.send({ type: 'start', id: '1', payload: { query: QUERY } });
    expect((await top.next('1')).payload).toEqual({ data: { item: [{ id: 2, name: 'b' }] } });
    top.close();
  });

  it('an init that authentication refuses: connection_error, then the socket closes with 4400', async () => {
    const c = await Client.open(net.url, 'graphql-ws');
    c.send({ type: 'connection_init', payload: { headers: { 'X-Svc-Admin-Secret': 'wrong' } } });
    expect(await c.next()).toEqual({ type: 'connection_error', payload: 'invalid x-svc-admin-secret/x-svc-access-key' });
    expect(await c.closed).toEqual({ code: 4400, reason: 'Connection initialization failed: invalid x-svc-admin-secret/x-svc-access-key' });
  });

  it('bad messages are connection_error and the connection goes on; start before init, a duplicate id: error + complete', async () => {
    const c = await Client.open(net.url, 'graphql-ws');
    c.send({ type: 'start', id: 'early', payload: { query: QUERY } });
    expect(await c.next('early')).toEqual({
      type: 'error',
      id: 'early',
      payload: { errors: [{ message: 'start received before the connection is initialised', extensions: { path: '$', code: 'start-failed' } }] },
    });
    expect(await c.next('early')).toEqual({ type: 'complete', id: 'early' });
    c.send({ type: 'connection_init', payload: admin });
    expect((await c.next()).type).toBe('connection_ack');
    c.send('{not json');
    expect(await c.next()).toEqual({ type: 'connection_error', payload: 'parsing ClientMessage failed: Error in $: not a valid json value' });
    c.send({ type: 'test' });
    expect(await c.next()).toEqual({ type: 'connection_error', payload: 'parsing ClientMessage failed: Error in $: unexpected type for ClientMessage: test' });
    c.send({ type: 'stop' });
    expect(await c.next()).toEqual({ type: 'connection_error', payload: 'parsing ClientMessage failed: Error in $: key "id" not found' });
    c.send([1, 2]);
    expect((await c.next()).payload).toBe('parsing ClientMessage failed: Error in $: parsing ClientMessage failed, expected Object, but encountered Array');
    // A stop of an unknown id is no error (Hasura logs it only).
    c.send({ type: 'stop', id: 'nobody' });
    c.send({ type: 'start', id: 'slow', payload: { query: '{ slow_items(args: {ms: 300}) { id } }' } });
    c.send({ type: 'start', id: 'slow', payload: { query: QUERY } });
    expect(await c.next('slow')).toEqual({
      type: 'error',
      id: 'slow',
      payload: { errors: [{ message: 'an operation already exists with this id: slow', extensions: { path: '$', code: 'start-failed' } }] },
    });
    expect(await c.next('slow')).toEqual({ type: 'complete', id: 'slow' });
    expect((await c.next('slow')).type).toBe('data');
    expect(await c.next('slow')).toEqual({ type: 'complete', id: 'slow' });
    c.send({ type: 'start', id: 'after', payload: { query: '{ item_by_pk(id: 2) { name } }' } });
    expect((await c.next('after')).payload).toEqual({ data: { item_by_pk: { name: 'b' } } });
    expect(c.unread()).toEqual([{ type: 'complete', id: 'after' }]);
    c.send({ type: 'connection_terminate' });
    expect(await c.closed).toEqual({ code: 1000, reason: 'GQL_CONNECTION_TERMINATE received' });
  });

  it('subscriptions over HTTP are still refused', async () => {
    const r = await server.request('POST', '/v1/graphql', { query: 'subscription { item { id } }' }, { 'x-svc-admin-secret': SECRET });
    expect(r.body.errors[0].message).toBe('subscriptions are not supported over HTTP, use websockets instead');
  });
});

describe('graphql-transport-ws (the graphql-ws library)', () => {
  it('init: ack and a keep-alive ping; subscribe to a query: next then complete; ping is answered with pong', async () => {
    const c = await Client.open(net.url, ['graphql-transport-ws', 'graphql-ws']);
    expect(c.ws.protocol).toBe('graphql-transport-ws');
    c.send({ type: 'connection_init', payload: admin });
    expect(await c.next()).toEqual({ type: 'connection_ack' });
    expect(await c.next((m) => m.type === 'ping')).toEqual({ type: 'ping', payload: { message: 'keepalive' } });
    c.send({ type: 'subscribe', id: 'a', payload: { query: '{ item_by_pk(id: 1) { id name } }' } });
    expect(await c.next('a')).toEqual({ type: 'next', id: 'a', payload: { data: { item_by_pk: { id: 1, name: 'a' } } } });
    expect(await c.next('a')).toEqual({ type: 'complete', id: 'a' });
    c.send({ type: 'ping', payload: { x: 1 } });
    expect(await c.next((m) => m.type === 'pong')).toEqual({ type: 'pong', payload: { x: 1 } });
    c.close();
  });

  it('errors before and while running are `error` messages with the list of errors, and nothing after', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    c.send({ type: 'subscribe', id: 'v', payload: { query: '{ item { nope } }' } });
    expect(await c.next('v')).toEqual({
      type: 'error',
      id: 'v',
      payload: [{ message: "field 'nope' not found in type: 'item'", extensions: { path: '$.selectionSet.item.selectionSet.nope', code: 'validation-failed' } }],
    });
    c.send({ type: 'subscribe', id: 'x', payload: { query: 'mutation { insert_item_one(object: {name: "e"}) { id } }' } });
    const e = await c.next('x');
    expect(e.type).toBe('error');
    expect(e.payload[0].extensions.code).toBe('constraint-violation');
    c.send({ type: 'subscribe', id: 'ok', payload: { query: '{ item_by_pk(id: 3) { name } }' } });
    expect((await c.next('ok')).type).toBe('next');
    expect((await c.next('ok')).type).toBe('complete');
    expect(c.unread()).toEqual([]);
    c.close();
  });

  it('a refused init closes with 4403 Forbidden', async () => {
    const c = await Client.open(net.url, 'graphql-transport-ws');
    c.send({ type: 'connection_init', payload: { headers: {} } });
    expect(await c.closed).toEqual({ code: 4403, reason: 'Forbidden' });
  });

  it('subscribe before the ack: 4401; a second init: 4429; an id in use: 4409; a bad message: 4400; no init in time: 4408', async () => {
    const early = await Client.open(net.url, 'graphql-transport-ws');
    early.send({ type: 'subscribe', id: '1', payload: { query: QUERY } });
    expect(await early.closed).toEqual({ code: 4401, reason: 'Unauthorized' });

    const twice = await Client.init(net.url, 'graphql-transport-ws', admin);
    twice.send({ type: 'connection_init', payload: admin });
    expect(await twice.closed).toEqual({ code: 4429, reason: 'Too many initialisation requests' });

    const dup = await Client.init(net.url, 'graphql-transport-ws', admin);
    dup.send({ type: 'subscribe', id: 's', payload: { query: '{ slow_items(args: {ms: 300}) { id } }' } });
    dup.send({ type: 'subscribe', id: 's', payload: { query: QUERY } });
    expect(await dup.closed).toEqual({ code: 4409, reason: 'Subscriber for s already exists' });

    const bad = await Client.init(net.url, 'graphql-transport-ws', admin);
    bad.send('{"type":');
    expect(await bad.closed).toEqual({ code: 4400, reason: 'Parsing client message failed: Error in $: not a valid json value' });

    const noId = await Client.init(net.url, 'graphql-transport-ws', admin);
    noId.send({ type: 'subscribe', payload: { query: QUERY } });
    expect(await noId.closed).toEqual({ code: 4400, reason: 'Parsing client message failed: Error in $: key "id" not found' });

    const silent = await Client.open(net.url, 'graphql-transport-ws');
    expect(await silent.closed).toEqual({ code: 4408, reason: 'Connection initialisation timeout' });
  });

  it('a complete of an unknown id is no error; a frame over the size limit closes only its own socket (1009)', async () => {
    const other = await Client.init(net.url, 'graphql-transport-ws', admin);
    const big = await Client.init(net.url, 'graphql-transport-ws', admin);
    big.send({ type: 'complete', id: 'never-started' });
    big.send({ type: 'subscribe', id: '1', payload: { query: `{ item { id } } # ${'x'.repeat(70 * 1024)}` } });
    expect((await big.closed).code).toBe(1009);
    other.send({ type: 'subscribe', id: '1', payload: { query: '{ item_by_pk(id: 1) { name } }' } });
    expect(await other.next('1')).toEqual({ type: 'next', id: '1', payload: { data: { item_by_pk: { name: 'a' } } } });
    other.close();
  });
});

describe('the upgrade', () => {
  it('another path is refused with 404; a client offering no protocol speaks graphql-ws', async () => {
    const res = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${net.port}/v1/query`);
      ws.on('unexpected-response', (_req, r) => resolve(r.statusCode!));
      ws.on('error', () => {});
    });
    expect(res).toBe(404);
    const c = await Client.open(net.url, undefined);
    c.send({ type: 'connection_init', payload: admin });
    expect(await c.next()).toEqual({ type: 'connection_ack' });
    expect(await c.next((m) => m.type === 'ka')).toEqual({ type: 'ka' });
    c.close();
  });
});
