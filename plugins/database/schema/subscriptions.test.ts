/**
 * Subscriptions over real WebSockets against real PostgreSQL: live queries (every query root
 * field under the subscription root), multiplexed (Note [Multiplexed live queries] in
 * plugins/graphql/live.ts, Note [Multiplexed statements] in the PostgreSQL compiler), with each
 * subscriber's permissions, and streams (Note [Streaming subscriptions] in ./subscription.ts).
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { Client, until, useListening } from '../../../test/ws-helpers.js';
import { DatabaseToken, type DatabaseService, type SqlExecutor } from '../index.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, author_id int not null references author(id), title text not null);
insert into author (name) values ('ann'), ('bob'), ('cy');
insert into article (author_id, title) values (1, 'a1'), (2, 'b1'), (1, 'a2');
create function articles_of(who int) returns setof article language sql stable as $$ select * from article where author_id = who $$;
`;

const server = useServer(SEED, { config: { liveQueriesRefetchInterval: 40 } });
const net = useListening(server);
afterEach(() => Client.closeAll());
const admin = {};
const user = (id: number) => ({ headers: { 'X-Svc-Role': 'user', 'X-Svc-User-Id': String(id) } });

/** Statements the source ran that serve live queries, with how many subscribers' rows each answered. */
const liveStatements: { sql: string; rows: number }[] = [];

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_function', args: { function: 'articles_of' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, allow_aggregations: true } } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { columns: ['title'], set: { author_id: 'X-Svc-User-Id' }, check: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
  const db = server.kernel.api.use(DatabaseToken) as DatabaseService;
  const exec = db.resolved(server.kernel.state().build).sources.get('default')!.connection!.executor as SqlExecutor;
  const query = exec.query.bind(exec);
  exec.query = async <T>(sql: string, params?: unknown[], opts?: { prepare?: boolean }) => {
    const rows = await query<T>(sql, params, opts);
    if (sql.includes('with ordinality as _svc_m')) liveStatements.push({ sql, rows: rows.length });
    return rows;
  };
});

beforeEach(async () => {
  // Clients the previous test closed leave the server asynchronously.
  await until(() => server.graphql.live.stats().subscribers === 0, 'the last test\'s subscribers to leave');
  await server.sql`delete from article where id > 3`;
});

const live = () => server.graphql.live.stats();
/** Waits until the live queries ran `n` more statements than now (refetches happened). */
const refetches = async (n: number) => {
  const start = live().fetches;
  await until(() => live().fetches >= start + n, `${n} refetches`);
};

const BY_AUTHOR = 'subscription ($id: Int!) { article(where: {author_id: {_eq: $id}}, order_by: {id: asc}) { id title } }';

describe('live queries', () => {
  it('graphql-ws: the result at once, a new one after a mutation, nothing once stopped', async () => {
    const c = await Client.init(net.url, 'graphql-ws', admin);
    c.send({ type: 'start', id: 's', payload: { query: BY_AUTHOR, variables: { id: 1 } } });
    expect(await c.next('s')).toEqual({ type: 'data', id: 's', payload: { data: { article: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }] } } });
    expect(await server.gql('mutation { insert_article_one(object: {author_id: 1, title: "a3"}) { id } }')).toEqual({ data: { insert_article_one: { id: 4 } } });
    expect(await c.next('s')).toEqual({ type: 'data', id: 's', payload: { data: { article: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }, { id: 4, title: 'a3' }] } } });
    // A control subscription of the same cohort shows when the stopped one would have had news.
    c.send({ type: 'start', id: 'control', payload: { query: BY_AUTHOR, variables: { id: 1 } } });
    expect((await c.next('control')).payload.data.article).toHaveLength(3);
    c.send({ type: 'stop', id: 's' });
    await until(() => live().subscribers === 1, 'the subscriber to leave');
    await server.gql('mutation { insert_article_one(object: {author_id: 1, title: "a4"}) { id } }');
    expect((await c.next('control')).payload.data.article).toHaveLength(4);
    expect(c.unread()).toEqual([]);
    c.close();
  });

  it('graphql-transport-ws: subscribe, next at once, a mutation on the same socket, next, complete from the client', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    const doc = 'subscription { author_by_pk(id: 2) { name } }';
    c.send({ type: 'subscribe', id: 'live', payload: { query: doc } });
    expect(await c.next('live')).toEqual({ type: 'next', id: 'live', payload: { data: { author_by_pk: { name: 'bob' } } } });
    c.send({ type: 'subscribe', id: 'm', payload: { query: 'mutation { update_author_by_pk(pk_columns: {id: 2}, _set: {name: "bobby"}) { id } }' } });
    expect(await c.next('m')).toEqual({ type: 'next', id: 'm', payload: { data: { update_author_by_pk: { id: 2 } } } });
    expect(await c.next('m')).toEqual({ type: 'complete', id: 'm' });
    expect(await c.next('live')).toEqual({ type: 'next', id: 'live', payload: { data: { author_by_pk: { name: 'bobby' } } } });
    c.send({ type: 'subscribe', id: 'control', payload: { query: doc } });
    expect((await c.next('control')).payload).toEqual({ data: { author_by_pk: { name: 'bobby' } } });
    c.send({ type: 'complete', id: 'live' });
    await until(() => live().subscribers === 1, 'the subscriber to leave');
    await server.sql`update author set name = 'bob' where id = 2`;
    expect((await c.next('control')).payload).toEqual({ data: { author_by_pk: { name: 'bob' } } });
    expect(c.unread()).toEqual([]);
    c.close();
  });

  it('aggregates, functions and relationships are live too; an unchanged result is not sent again', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    c.send({ type: 'subscribe', id: 'agg', payload: { query: 'subscription { article_aggregate(where: {author_id: {_eq: 1}}) { aggregate { count } } }' } });
    c.send({ type: 'subscribe', id: 'fn', payload: { query: 'subscription { articles_of(args: {who: 2}) { title author { name } } }' } });
    expect((await c.next('agg')).payload).toEqual({ data: { article_aggregate: { aggregate: { count: 2 } } } });
    expect((await c.next('fn')).payload).toEqual({ data: { articles_of: [{ title: 'b1', author: { name: 'bob' } }] } });
    await refetches(6);
    expect(c.unread()).toEqual([]);
    await server.sql`insert into article (author_id, title) values (2, 'b2')`;
    expect((await c.next('fn')).payload).toEqual({ data: { articles_of: [{ title: 'b1', author: { name: 'bob' } }, { title: 'b2', author: { name: 'bob' } }] } });
    await refetches(4);
    expect(c.unread()).toEqual([]);
    c.close();
  });

  it('subscribers whose variables differ share one SQL statement per refetch', async () => {
    const a = await Client.init(net.url, 'graphql-ws', admin);
    const b = await Client.init(net.url, 'graphql-transport-ws', admin);
    a.send({ type: 'start', id: '1', payload: { query: BY_AUTHOR, variables: { id: 1 } } });
    b.send({ type: 'subscribe', id: '1', payload: { query: BY_AUTHOR, variables: { id: 2 } } });
    b.send({ type: 'subscribe', id: '2', payload: { query: BY_AUTHOR, variables: { id: 1 } } });
    expect((await a.next('1')).payload).toEqual({ data: { article: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }] } });
    expect((await b.next('1')).payload).toEqual({ data: { article: [{ id: 2, title: 'b1' }] } });
    expect((await b.next('2')).payload).toEqual({ data: { article: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }] } });
    // One poller (one statement), two cohorts (two distinct values), three subscribers.
    expect(live()).toMatchObject({ pollers: 1, cohorts: 2, subscribers: 3 });
    const before = liveStatements.length;
    await until(() => liveStatements.length >= before + 5, '5 refetches');
    const during = liveStatements.slice(before);
    // Every refetch is one statement answering both cohorts.
    for (const s of during) expect(s.rows).toBe(2);
    expect(during[0]!.sql).toMatch(/from unnest\(\(\$1::text\)::text\[\]\) with ordinality as _svc_m\("p1", "i"\) left join lateral/);
    a.close();
    b.close();
    await until(() => live().subscribers === 0, 'the subscribers to leave');
  });

  it('each subscriber has its own permissions: a role sees its rows, another session variable another result', async () => {
    const one = await Client.init(net.url, 'graphql-ws', user(1));
    const two = await Client.init(net.url, 'graphql-ws', user(2));
    const doc = 'subscription { article(order_by: {id: asc}) { id title } }';
    one.send({ type: 'start', id: 'x', payload: { query: doc } });
    two.send({ type: 'start', id: 'x', payload: { query: doc } });
    expect((await one.next('x')).payload).toEqual({ data: { article: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }] } });
    expect((await two.next('x')).payload).toEqual({ data: { article: [{ id: 2, title: 'b1' }] } });
    expect(live()).toMatchObject({ pollers: 1, cohorts: 2 });
    // user 2 inserts through the socket (the insert permission sets author_id from the session).
    two.send({ type: 'start', id: 'ins', payload: { query: 'mutation { insert_article_one(object: {title: "b2"}) { title } }' } });
    expect((await two.next('ins')).payload).toEqual({ data: { insert_article_one: { title: 'b2' } } });
    expect((await two.next('x')).payload).toEqual({ data: { article: [{ id: 2, title: 'b1' }, { id: 5, title: 'b2' }].map((r) => ({ ...r, id: expect.any(Number) })) } });
    await refetches(4);
    expect(one.unread()).toEqual([]);
    one.close();
    two.close();
  });

  it('a subscription that cannot start is an error: a missing session variable, a field the role lacks, a mutation under subscription', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', { headers: { 'X-Svc-Role': 'user' } });
    c.send({ type: 'subscribe', id: 'a', payload: { query: 'subscription { article { id } }' } });
    expect(await c.next('a')).toEqual({ type: 'error', id: 'a', payload: [{ message: 'missing session variable: "x-svc-user-id"', extensions: { path: '$', code: 'not-found' } }] });
    c.send({ type: 'subscribe', id: 'b', payload: { query: 'subscription { author { id articles { id } } }' } });
    expect((await c.next('b')).payload[0].extensions.code).toBe('validation-failed');
    c.send({ type: 'subscribe', id: 'c', payload: { query: 'subscription { __typename author { id } }' } });
    expect((await c.next('c')).payload).toEqual([{ message: 'Introspection at root field level is not supported over subscriptions', extensions: { path: '$', code: 'not-supported' } }]);
    expect(live().subscribers).toBe(0);
    c.close();
  });

  it('a live query may select several root fields, as in Hasura: one statement per field, one message', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    c.send({ type: 'subscribe', id: 'two', payload: { query: 'subscription ($id: Int!) { a: author_by_pk(id: $id) { name } n: article_aggregate(where: {author_id: {_eq: $id}}) { aggregate { count } } }', variables: { id: 3 } } });
    expect((await c.next('two')).payload).toEqual({ data: { a: { name: 'cy' }, n: { aggregate: { count: 0 } } } });
    await server.sql`insert into article (author_id, title) values (3, 'c1')`;
    expect((await c.next('two')).payload).toEqual({ data: { a: { name: 'cy' }, n: { aggregate: { count: 1 } } } });
    c.close();
  });
});

describe('streaming subscriptions', () => {
  const STREAM = 'subscription ($from: Int!) { article_stream(batch_size: 2, cursor: {initial_value: {id: $from}}) { id title } }';

  it('rows after the cursor in batches, each row once, new rows as they come', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    c.send({ type: 'subscribe', id: 's', payload: { query: STREAM, variables: { from: 0 } } });
    expect(await c.next('s')).toEqual({ type: 'next', id: 's', payload: { data: { article_stream: [{ id: 1, title: 'a1' }, { id: 2, title: 'b1' }] } } });
    expect((await c.next('s')).payload).toEqual({ data: { article_stream: [{ id: 3, title: 'a2' }] } });
    await refetches(3);
    expect(c.unread()).toEqual([]);
    await server.sql`insert into article (author_id, title) values (1, 'x1'), (2, 'x2'), (3, 'x3')`;
    const ids = [...(await c.next('s')).payload.data.article_stream, ...(await c.next('s')).payload.data.article_stream].map((r: { id: number }) => r.id);
    expect(ids).toEqual([ids[0], ids[0] + 1, ids[0] + 2]);
    await refetches(3);
    expect(c.unread()).toEqual([]);
    c.close();
  });

  it('descending order; a later subscriber starts from its own initial value, in the same statement', async () => {
    const c = await Client.init(net.url, 'graphql-ws', admin);
    c.send({ type: 'start', id: 'desc', payload: { query: 'subscription { article_stream(batch_size: 10, cursor: [{initial_value: {id: 3}, ordering: DESC}]) { id } }' } });
    expect((await c.next('desc')).payload).toEqual({ data: { article_stream: [{ id: 2 }, { id: 1 }] } });
    c.send({ type: 'start', id: 'a', payload: { query: STREAM, variables: { from: 1 } } });
    c.send({ type: 'start', id: 'b', payload: { query: STREAM, variables: { from: 2 } } });
    expect((await c.next('a')).payload).toEqual({ data: { article_stream: [{ id: 2, title: 'b1' }, { id: 3, title: 'a2' }] } });
    expect((await c.next('b')).payload).toEqual({ data: { article_stream: [{ id: 3, title: 'a2' }] } });
    // a and b are one poller; both cohorts are now at id 3, kept apart.
    expect(live()).toMatchObject({ pollers: 2, cohorts: 3 });
    const before = liveStatements.length;
    await until(() => liveStatements.slice(before).some((s) => s.rows === 2), 'a statement answering both streams');
    await server.sql`insert into article (author_id, title) values (2, 'y')`;
    expect((await c.next('a')).payload.data.article_stream).toEqual([{ id: expect.any(Number), title: 'y' }]);
    expect((await c.next('b')).payload.data.article_stream).toEqual([{ id: expect.any(Number), title: 'y' }]);
    c.close();
  });

  it('the role\'s filter applies, and a custom root field name (select_stream)', async () => {
    const r = await server.metadata({ type: 'pg_set_table_customization', args: { table: 'author', configuration: { custom_root_fields: { select_stream: 'author_feed' } } } });
    expect(r.status, r.text).toBe(200);
    const c = await Client.init(net.url, 'graphql-transport-ws', user(2));
    c.send({ type: 'subscribe', id: 'mine', payload: { query: 'subscription { article_stream(batch_size: 5, cursor: {initial_value: {id: 0}}) { id title } }' } });
    expect((await c.next('mine')).payload).toEqual({ data: { article_stream: [{ id: 2, title: 'b1' }] } });
    c.send({ type: 'subscribe', id: 'feed', payload: { query: 'subscription { author_feed(batch_size: 1, cursor: {initial_value: {name: "b"}}) { name } }' } });
    expect((await c.next('feed')).payload).toEqual({ data: { author_feed: [{ name: 'bob' }] } });
    expect((await c.next('feed')).payload).toEqual({ data: { author_feed: [{ name: 'cy' }] } });
    await server.sql`insert into article (author_id, title) values (1, 'not mine'), (2, 'mine')`;
    expect((await c.next('mine')).payload.data.article_stream).toEqual([{ id: expect.any(Number), title: 'mine' }]);
    c.close();
    await server.metadata({ type: 'pg_set_table_customization', args: { table: 'author', configuration: {} } });
  });

  it('refusals in Hasura\'s words', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    const err = async (query: string) => {
      const id = String(Math.random());
      c.send({ type: 'subscribe', id, payload: { query } });
      const m = await c.next(id);
      expect(m.type).toBe('error');
      return m.payload[0];
    };
    expect(await err('subscription { article_stream(batch_size: 1, cursor: []) { id } }')).toEqual({
      message: 'one streaming column field is expected',
      extensions: { path: '$.selectionSet.article_stream.args.cursor', code: 'validation-failed' },
    });
    expect((await err('subscription { article_stream(batch_size: 1, cursor: {initial_value: {id: 1, title: "a"}}) { id } }')).message).toBe('multiple column cursors are not supported yet');
    expect((await err('subscription { article_stream(batch_size: -1, cursor: {initial_value: {id: 1}}) { id } }')).extensions.path).toBe('$.selectionSet.article_stream.args.batch_size');
    expect((await err('subscription { article_stream(batch_size: 1, cursor: {initial_value: {id: 1}}) { id } author { id } }')).message).toBe(
      'streaming and livequery subscriptions cannot be executed in the same subscription',
    );
    expect((await err('subscription { a: article_stream(batch_size: 1, cursor: {initial_value: {id: 1}}) { id } b: article_stream(batch_size: 1, cursor: {initial_value: {id: 2}}) { id } }')).message).toBe(
      'exactly one root field is allowed for streaming subscriptions',
    );
    expect(live().subscribers).toBe(0);
    c.close();
  });
});

describe('a source with a root field namespace', () => {
  it('its fields are live under <ns> (of type <ns>_subscription), a stream too', async () => {
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_add_source', args: { name: 'ns', configuration: { connection_info: { database_url: server.url } }, customization: { root_fields: { namespace: 'my_ns' }, type_names: { prefix: 'ns_' } } } },
        { type: 'pg_track_table', args: { source: 'ns', table: 'author' } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const c = await Client.init(net.url, 'graphql-transport-ws', admin);
    c.send({ type: 'subscribe', id: 'l', payload: { query: 'subscription { my_ns { __typename one: author_by_pk(id: 1) { name } n: author_aggregate { aggregate { count } } } }' } });
    expect((await c.next('l')).payload).toEqual({ data: { my_ns: { __typename: 'ns_my_ns_subscription', one: { name: 'ann' }, n: { aggregate: { count: 3 } } } } });
    c.send({ type: 'subscribe', id: 's', payload: { query: 'subscription { my_ns { author_stream(batch_size: 2, cursor: {initial_value: {id: 1}}) { id } } }' } });
    expect((await c.next('s')).payload).toEqual({ data: { my_ns: { author_stream: [{ id: 2 }, { id: 3 }] } } });
    await server.sql`insert into author (name) values ('dee')`;
    expect((await c.next('l')).payload).toEqual({ data: { my_ns: { __typename: 'ns_my_ns_subscription', one: { name: 'ann' }, n: { aggregate: { count: 4 } } } } });
    expect((await c.next('s')).payload).toEqual({ data: { my_ns: { author_stream: [{ id: 4 }] } } });
    c.close();
    await until(() => live().subscribers === 0, 'the subscribers to leave');
    await server.sql`delete from author where id = 4`;
    expect((await server.metadata({ type: 'pg_drop_source', args: { name: 'ns', cascade: true } })).status).toBe(200);
  });
});
