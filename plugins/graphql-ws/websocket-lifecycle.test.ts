/**
 * The lifecycle of subscriptions (Note [Multiplexed live queries], Note [Re-planning
 * subscriptions] in plugins/graphql/live.ts; Note [GraphQL over WebSocket] in
 * plugins/graphql-ws/connection.ts): a closed socket leaves its cohort at once, a metadata change
 * re-plans every subscription (ending those whose field is gone), a client that stops reading
 * is dropped, and SIGTERM closes the sockets of a real server process.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { createDatabase, useServer } from '../../test/helpers.js';
import { Client, until, useListening } from '../../test/ws-helpers.js';
import { freePort } from '../../server/embedded.js';
import { post, spawnServer, waitReady } from '../../test/server-process.js';
import { GRAPHQL_WS } from './index.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, author_id int not null, title text not null);
insert into author (name) values ('ann'), ('bob');
insert into article (author_id, title) values (1, 'a1'), (2, 'b1'), (2, 'b2');
create table blob (id int primary key, body text not null);
insert into blob select i, repeat('x', 2000) from generate_series(1, 50) i;
`;

const server = useServer(SEED, { config: { liveQueriesRefetchInterval: 40, websocketMaxSendBuffer: 64 * 1024 } });
const net = useListening(server);
afterEach(() => Client.closeAll());
const user = (id: number) => ({ headers: { 'X-Svc-Role': 'user', 'X-Svc-User-Id': String(id) } });
const live = () => server.graphql.live.stats();
const sockets = () => server.kernel.api.use(GRAPHQL_WS)().size;
const refetches = async (n: number) => {
  const start = live().fetches;
  await until(() => live().fetches >= start + n, `${n} refetches`);
};
const ok = async (body: unknown) => {
  const r = await server.metadata(body);
  expect(r.status, r.text).toBe(200);
};

beforeAll(async () => {
  await ok({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'blob' } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
    ],
  });
});

beforeEach(async () => {
  await until(() => live().subscribers === 0 && sockets() === 0, 'the last test\'s connections to leave');
});

describe('lifecycle', () => {
  it('a closed socket leaves its cohort, and an empty poller stops, at once', async () => {
    const a = await Client.init(net.url, 'graphql-ws', {});
    const b = await Client.init(net.url, 'graphql-transport-ws', {});
    a.send({ type: 'start', id: '1', payload: { query: 'subscription { author(order_by: {id: asc}) { name } }' } });
    b.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { author(order_by: {id: asc}) { name } }' } });
    b.send({ type: 'subscribe', id: '2', payload: { query: 'subscription { article_aggregate { aggregate { count } } }' } });
    await a.next('1');
    await b.next('1');
    await b.next('2');
    expect(live()).toMatchObject({ pollers: 2, cohorts: 2, subscribers: 3 });
    b.close();
    await until(() => live().subscribers === 1, 'b to leave');
    expect(live()).toMatchObject({ pollers: 1, cohorts: 1, subscribers: 1 });
    a.ws.terminate();
    await until(() => live().pollers === 0, 'the poller to stop');
    expect(live()).toMatchObject({ pollers: 0, cohorts: 0, subscribers: 0 });
  });

  it('a metadata change re-plans every subscription: one whose field is gone ends with an error, the others go on with the new permissions, with no repeated message', async () => {
    const ws = await Client.init(net.url, 'graphql-transport-ws', user(2));
    const apollo = await Client.init(net.url, 'graphql-ws', user(2));
    ws.send({ type: 'subscribe', id: 'authors', payload: { query: 'subscription { author { name } }' } });
    apollo.send({ type: 'start', id: 'authors', payload: { query: 'subscription { author { name } }' } });
    ws.send({ type: 'subscribe', id: 'articles', payload: { query: 'subscription { article(order_by: {id: asc}) { title } }' } });
    await ws.next('authors');
    await apollo.next('authors');
    expect((await ws.next('articles')).payload).toEqual({ data: { article: [{ title: 'b1' }, { title: 'b2' }] } });

    await ok({ type: 'pg_drop_select_permission', args: { table: 'author', role: 'user' } });
    const gone = { message: "field 'author' not found in type: 'subscription_root'", extensions: { path: '$.selectionSet.author', code: 'validation-failed' } };
    expect(await ws.next('authors')).toEqual({ type: 'error', id: 'authors', payload: [gone] });
    expect(await apollo.next('authors')).toEqual({ type: 'error', id: 'authors', payload: { errors: [gone] } });
    expect(await apollo.next('authors')).toEqual({ type: 'complete', id: 'authors' });
    await refetches(3);
    // The article subscription was planned again; its result did not change, so nothing was sent.
    expect(ws.unread()).toEqual([]);
    expect(live()).toMatchObject({ subscribers: 1 });

    await ok({ type: 'pg_drop_select_permission', args: { table: 'article', role: 'user' } });
    await ok({ type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { _and: [{ author_id: { _eq: 'X-Svc-User-Id' } }, { title: { _neq: 'b1' } }] } } } });
    // Between the two changes the field was gone for a moment (no permission): then it ended.
    const next = await ws.next('articles');
    if (next.type === 'error') expect(next.payload[0].extensions.code).toBe('validation-failed');
    else expect(next.payload).toEqual({ data: { article: [{ title: 'b2' }] } });
    ws.close();
    apollo.close();
    await ok({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } });
  });

  it('a permission changed in one step: the subscription gets the new result', async () => {
    const ws = await Client.init(net.url, 'graphql-transport-ws', user(2));
    ws.send({ type: 'subscribe', id: 'a', payload: { query: 'subscription { article(order_by: {id: asc}) { title } }' } });
    expect((await ws.next('a')).payload).toEqual({ data: { article: [{ title: 'b2' }] } });
    await ok({
      type: 'bulk',
      args: [
        { type: 'pg_drop_select_permission', args: { table: 'article', role: 'user' } },
        { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
      ],
    });
    expect((await ws.next('a')).payload).toEqual({ data: { article: [{ title: 'b1' }, { title: 'b2' }] } });
    ws.close();
  });

  it('a client that stops reading is dropped once too much waits to be sent; the others are untouched', async () => {
    const other = await Client.init(net.url, 'graphql-transport-ws', {});
    other.send({ type: 'subscribe', id: 'live', payload: { query: 'subscription { author_by_pk(id: 1) { name } }' } });
    await other.next('live');
    const slow = await Client.init(net.url, 'graphql-ws', {});
    slow.send({ type: 'start', id: 'live', payload: { query: 'subscription { author_by_pk(id: 1) { name } }' } });
    await slow.next('live');
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    // Each answer is about 100 KB; the socket's buffers fill and then the server's queue passes
    // --websocket-max-send-buffer (64 KiB here).
    for (let i = 0; i < 400; i++) slow.send({ type: 'start', id: `q${i}`, payload: { query: '{ blob { id body } }' } });
    await until(() => sockets() === 1, 'the slow client to be dropped', 20_000);
    await until(() => live().subscribers === 1, 'its subscription to stop');
    expect(server.logs.some((l) => l.type === 'websocket-log' && l.detail?.event?.type === 'slow_client')).toBe(true);
    await server.sql`update author set name = 'anna' where id = 1`;
    expect((await other.next('live')).payload).toEqual({ data: { author_by_pk: { name: 'anna' } } });
    await server.sql`update author set name = 'ann' where id = 1`;
    other.close();
  }, 30_000);
});

describe('SIGTERM', () => {
  const procs: ChildProcess[] = [];
  afterAll(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  });

  it('closes every socket with 1012 and exits 0, well within the grace period', async () => {
    const db = await createDatabase();
    const port = await freePort();
    const p = spawnServer({ SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_GRACEFUL_SHUTDOWN_TIMEOUT: '20' });
    procs.push(p.child);
    await waitReady(p, 30_000);
    expect((await post(port, '/v1/query', { type: 'run_sql', args: { sql: 'create table t (id int primary key); insert into t values (1)' } })).status).toBe(200);
    expect((await post(port, '/v1/metadata', { type: 'pg_track_table', args: { table: 't' } })).status).toBe(200);
    const url = `ws://127.0.0.1:${port}/v1/graphql`;
    const a = await Client.init(url, 'graphql-transport-ws', {});
    const b = await Client.init(url, 'graphql-ws', {});
    a.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { t { id } }' } });
    b.send({ type: 'start', id: '1', payload: { query: 'subscription { t { id } }' } });
    expect((await a.next('1')).payload).toEqual({ data: { t: [{ id: 1 }] } });
    expect((await b.next('1')).payload).toEqual({ data: { t: [{ id: 1 }] } });
    const started = Date.now();
    p.child.kill('SIGTERM');
    expect(await a.closed).toEqual({ code: 1012, reason: 'shutting server down' });
    expect(await b.closed).toEqual({ code: 1012, reason: 'shutting server down' });
    expect(await p.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 60_000);
});
