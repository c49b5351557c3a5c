/**
 * Delivery to a real webhook (node:http on loopback): Hasura's payload and the trigger's headers,
 * invocation records, retries (interval, Retry-After, error after the last one), the timeout, a
 * huge response, redelivery, session variables from GraphQL mutations, rolled-back changes, claims
 * of crashed deliveries, and graceful shutdown.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase, startServer, useServer } from '../../test/helpers.js';
import { triggersBuild } from './build.js';
import { okAnswer, resetItemTrigger, sqlRows, startHook, until, type TestHook } from './hook.js';

const s = useServer(
  `create table item (id serial primary key, name text, qty int);
   create table other (id serial primary key, v text);`,
  { env: { HEADER_SECRET: 's3cret' }, config: { eventsFetchInterval: 50 } },
);

let hook: TestHook;
beforeAll(async () => {
  hook = await startHook();
  s.env.HOOK = hook.url;
});
afterAll(async () => {
  await hook?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rows = (sql: string) => sqlRows(s, sql);
const events = (trigger: string) => rows(`select id, delivered, error, tries, locked is not null as locked, next_retry_at from svc_catalog.event_log where trigger_name = '${trigger}' order by created_at`);
const invocations = async (trigger: string) => (await s.metadata({ type: 'pg_get_event_invocation_logs', args: { name: trigger } })).body as any[];

async function trigger(name: string, extra: Record<string, unknown> = {}) {
  const r = await s.query({ type: 'create_event_trigger', args: { name, table: 'item', webhook: '{{HOOK}}/hook', insert: { columns: '*' }, update: { columns: ['qty'] }, delete: { columns: '*' }, ...extra } });
  expect(r.status, r.text).toBe(200);
}

beforeEach(() => resetItemTrigger(s, hook));

describe('delivery', () => {
  it('POSTs Hasura\'s payload with the trigger\'s headers, and records the invocation', async () => {
    await trigger('deliver', { headers: [{ name: 'X-Static', value: 'v' }, { name: 'X-Secret', value_from_env: 'HEADER_SECRET' }], retry_conf: { num_retries: 2, interval_sec: 1 } });
    await s.runSql(`insert into item (name, qty) values ('a', 1)`);
    const [got] = await hook.waitFor(1);
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['x-static']).toBe('v');
    expect(got!.headers['x-secret']).toBe('s3cret');
    const [ev] = await until(async () => {
      const e = await events('deliver');
      return e[0]?.delivered === 't' && e;
    });
    expect(got!.body).toEqual({
      id: ev!.id,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      trigger: { name: 'deliver' },
      table: { schema: 'public', name: 'item' },
      event: { op: 'INSERT', data: { old: null, new: { id: 1, name: 'a', qty: 1 } }, session_variables: null },
      delivery_info: { current_retry: 0, max_retries: 2 },
    });
    expect(ev).toMatchObject({ delivered: 't', error: 'f', tries: '1', locked: 'f', next_retry_at: 'NULL' });
    const [inv] = await invocations('deliver');
    expect(inv).toMatchObject({
      event_id: ev!.id,
      trigger_name: 'deliver',
      http_status: 200,
      request: { payload: got!.body, headers: [{ name: 'X-Static', value: 'v' }, { name: 'X-Secret', value_from_env: 'HEADER_SECRET' }], version: '2' },
      response: { type: 'webhook_response', data: { status: 200, body: '{"ok":true}' }, version: '2' },
    });
    expect(inv.response.data.headers).toEqual(expect.arrayContaining([{ name: 'content-type', value: 'application/json' }]));
    expect(typeof inv.duration_ms).toBe('number');
    // update fires only when a listed column changed; delete gives old.
    await s.runSql(`update item set name = 'b'; update item set qty = 2; delete from item`);
    const all = await hook.waitFor(3);
    await sleep(300);
    expect(hook.received).toHaveLength(3);
    // Events are delivered concurrently: no order between them.
    expect(all.slice(1).map((r) => [r.body.event.op, r.body.event.data]).sort()).toEqual([
      ['DELETE', { old: { id: 1, name: 'b', qty: 2 }, new: null }],
      ['UPDATE', { old: { id: 1, name: 'b', qty: 1 }, new: { id: 1, name: 'b', qty: 2 } }],
    ]);
  });

  it('retries num_retries times, interval_sec apart, then marks the event error', async () => {
    hook.answer = (_r, res) => {
      res.writeHead(500);
      res.end('down');
    };
    await trigger('retry', { retry_conf: { num_retries: 2, interval_sec: 1 } });
    await s.runSql(`insert into item (name) values ('a')`);
    const got = await hook.waitFor(3);
    expect(got.map((r) => r.body.delivery_info)).toEqual([0, 1, 2].map((n) => ({ current_retry: n, max_retries: 2 })));
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
    const [ev] = await until(async () => {
      const e = await events('retry');
      return e[0]?.error === 't' && e;
    });
    expect(ev).toMatchObject({ delivered: 'f', error: 't', tries: '3', locked: 'f', next_retry_at: 'NULL' });
    await sleep(1300);
    expect(hook.received).toHaveLength(3);
    const inv = await invocations('retry');
    expect(inv).toHaveLength(3);
    expect(inv[0]).toMatchObject({ http_status: 500, response: { type: 'client_error', data: { message: 'down' }, version: '2' } });

    // pg_redeliver_event: the retry count starts again.
    hook.answer = okAnswer;
    expect((await s.metadata({ type: 'pg_redeliver_event', args: { event_id: ev!.id } })).status).toBe(200);
    const [again] = (await hook.waitFor(4)).slice(3);
    expect(again!.body.delivery_info).toEqual({ current_retry: 0, max_retries: 2 });
    await until(async () => (await events('retry'))[0]?.delivered === 't');
  });

  it('Retry-After from the webhook wins over interval_sec', async () => {
    let n = 0;
    hook.answer = (_r, res) => {
      if (n++ === 0) {
        res.writeHead(503, { 'retry-after': '1' });
        res.end('busy');
      } else okAnswer(_r, res);
    };
    await trigger('after', { retry_conf: { num_retries: 1, interval_sec: 3600 } });
    await s.runSql(`insert into item (name) values ('a')`);
    const got = await hook.waitFor(2, 5000);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
    expect(got[1]!.at - got[0]!.at).toBeLessThan(3000);
    await until(async () => (await events('after'))[0]?.delivered === 't');
  });

  it('a webhook that hangs is cut at timeout_sec; one that answers 10 MB is cut in the log', async () => {
    hook.answer = () => {}; // never answers
    await trigger('hang', { retry_conf: { num_retries: 0, interval_sec: 0, timeout_sec: 1 } });
    await s.runSql(`insert into item (name) values ('a')`);
    await hook.waitFor(1);
    const [ev] = await until(async () => {
      const e = await events('hang');
      return e[0]?.error === 't' && e;
    }, 5000);
    const [inv] = await invocations('hang');
    expect(inv).toMatchObject({ event_id: ev!.id, http_status: null, response: { type: 'client_error', data: { message: 'the webhook did not answer within the timeout' } } });
    expect(inv.duration_ms).toBeGreaterThanOrEqual(950);
    expect(inv.duration_ms).toBeLessThan(3000);
    expect(await s.request('GET', '/healthz')).toMatchObject({ status: 200, text: 'OK' });

    const big = 'x'.repeat(10 * 1024 * 1024);
    hook.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(big);
    };
    await s.query({ type: 'delete_event_trigger', args: { name: 'hang' } });
    await trigger('big');
    await s.runSql(`insert into item (name) values ('b')`);
    await until(async () => (await events('big'))[0]?.delivered === 't');
    const [binv] = await invocations('big');
    expect(binv.response.data.body).toHaveLength(64 * 1024);
    expect(binv.response.data.truncated).toBe(true);
  });

  it('/healthz stays OK while the webhook is down', async () => {
    await s.query({ type: 'create_event_trigger', args: { name: 'down', table: 'item', webhook: 'http://127.0.0.1:1/nothing', insert: { columns: '*' }, retry_conf: { num_retries: 5, interval_sec: 0 } } });
    await s.runSql(`insert into item (name) values ('a')`);
    await until(async () => (await events('down'))[0]?.error === 't');
    const [inv] = await invocations('down');
    expect(inv).toMatchObject({ http_status: null, response: { type: 'client_error', data: { message: expect.stringContaining('ECONNREFUSED') } } });
    expect(await s.request('GET', '/healthz')).toMatchObject({ status: 200, text: 'OK' });
  });

  it('captures the session variables of a GraphQL mutation, none from run_sql, nothing rolled back', async () => {
    await trigger('session');
    const r = await s.gql('mutation { insert_item_one(object: {name: "gql"}) { id } }', {}, { 'x-svc-role': 'admin', 'x-svc-user-id': '42' });
    expect(r.errors).toBeUndefined();
    const [got] = await hook.waitFor(1);
    expect(got!.body.event.session_variables).toEqual({ 'x-svc-role': 'admin', 'x-svc-user-id': '42' });
    // A failed mutation request rolls back its changes and their events.
    const bad = await s.gql('mutation { a: insert_item_one(object: {id: 1000, name: "rolled back"}) { id } b: insert_item_one(object: {id: 1000, name: "dup"}) { id } }');
    expect(bad.errors).toBeDefined();
    // A bulk whose last item fails rolls back the run_sql before it.
    const bulk = await s.query({ type: 'bulk', args: [{ type: 'run_sql', args: { sql: `insert into item (name) values ('bulk')` } }, { type: 'run_sql', args: { sql: 'select nope' } }] });
    expect(bulk.status).toBe(400);
    await s.runSql(`insert into item (name) values ('plain')`);
    const all = await hook.waitFor(2);
    await sleep(300);
    expect(all.map((x) => x.body.event.data.new.name)).toEqual(['gql', 'plain']);
    expect(all[1]!.body.event.session_variables).toBeNull();
  });

  it('an event claimed by a delivery that died is taken over after its lease, not before', async () => {
    await trigger('lease', { retry_conf: { num_retries: 0, interval_sec: 0, timeout_sec: 1 } });
    // Two events claimed by a crashed instance: one a moment ago, one long ago.
    await s.runSql(`
      insert into svc_catalog.event_log (schema_name, table_name, trigger_name, payload, locked)
      values ('public', 'item', 'lease', '{"op":"MANUAL","data":{"old":null,"new":"recent"}}', now()),
             ('public', 'item', 'lease', '{"op":"MANUAL","data":{"old":null,"new":"old"}}', now() - interval '1 minute')`);
    const [first] = await hook.waitFor(1);
    expect(first!.body.event.data.new).toBe('old');
    await sleep(1500);
    expect(hook.received).toHaveLength(1);
    // 1 s timeout + 10 s margin.
    const [, second] = await hook.waitFor(2, 15_000);
    expect(second!.body.event.data.new).toBe('recent');
  });

  it('an event claimed while a new build came in goes out with the new build\'s configuration', async () => {
    await trigger('swap', { webhook: '{{HOOK}}/old' });
    // The round read the build before its claim; the trigger is replaced, and an event written,
    // while the claim is on its way (Note [Claims across builds] in worker.ts).
    const capture = triggersBuild(s.kernel.state().build).sources.get('default')!.capture;
    const claim = capture.claim;
    let armed = true;
    capture.claim = async (exec, lease, n) => {
      if (armed) {
        armed = false;
        await trigger('swap', { webhook: '{{HOOK}}/new', replace: true });
        await s.runSql(`insert into item (name) values ('after')`);
      }
      return claim.call(capture, exec, lease, n);
    };
    try {
      await until(async () => !armed);
      const [got] = await hook.waitFor(1);
      expect(got!.url).toBe('/new');
      await until(async () => (await events('swap'))[0]?.delivered === 't');
      expect(hook.received.map((r) => r.url)).toEqual(['/new']);
    } finally {
      capture.claim = claim;
    }
  });
});

describe('several workers and shutdown', () => {
  it('two instances on one database deliver every event once, never one concurrently', async () => {
    const db = await createDatabase();
    const a = await startServer({ database: db, env: { HOOK: hook.url }, config: { eventsFetchInterval: 20, eventsFetchBatchSize: 7, metadataSyncInterval: 100 } });
    const b = await startServer({ database: db, env: { HOOK: hook.url }, config: { eventsFetchInterval: 20, eventsFetchBatchSize: 5, metadataSyncInterval: 100 } });
    try {
      const inFlight = new Set<string>();
      let overlap = 0;
      hook.answer = (r, res) => {
        if (inFlight.has(r.body.id)) overlap++;
        inFlight.add(r.body.id);
        setTimeout(() => {
          inFlight.delete(r.body.id);
          okAnswer(r, res);
        }, 5);
      };
      await a.runSql('create table w (id serial primary key, n int)');
      expect((await a.query({ type: 'track_table', args: { name: 'w' } })).status).toBe(200);
      expect((await a.query({ type: 'create_event_trigger', args: { name: 'w', table: 'w', webhook: '{{HOOK}}', insert: { columns: '*' } } })).status).toBe(200);
      await until(async () => (await b.tables()).some((t) => t.event_triggers));
      await a.runSql('insert into w (n) select g from generate_series(1, 300) g');
      await hook.waitFor(300, 30_000);
      await sleep(500);
      const ids = hook.received.map((r) => r.body.id);
      expect(new Set(ids).size).toBe(300);
      expect(ids).toHaveLength(300);
      expect(overlap).toBe(0);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('shutdown finishes deliveries in flight within the grace period, and releases the others', async () => {
    const db = await createDatabase();
    const start = () => startServer({ database: db, env: { HOOK: hook.url }, config: { eventsFetchInterval: 20, gracefulShutdownTimeout: 1 } });
    let a = await start();
    await a.runSql('create table g (id serial primary key, wait int)');
    expect((await a.query({ type: 'track_table', args: { name: 'g' } })).status).toBe(200);
    expect((await a.query({ type: 'create_event_trigger', args: { name: 'g', table: 'g', webhook: '{{HOOK}}', insert: { columns: '*' }, retry_conf: { num_retries: 0, interval_sec: 0, timeout_sec: 30 } } })).status).toBe(200);
    hook.answer = (r, res) => setTimeout(() => okAnswer(r, res), r.body.event.data.new.wait);
    await a.runSql('insert into g (wait) values (200), (10000)');
    await hook.waitFor(2);
    await a.stop();
    const state = async () => {
      const sql = (await import('postgres')).default(db.url, { max: 1, onnotice: () => {} });
      try {
        return await sql`select (payload->'data'->'new'->>'wait')::int as wait, delivered, error, tries, locked from svc_catalog.event_log order by 1`;
      } finally {
        await sql.end();
      }
    };
    expect((await state()).map((r) => [r.wait, r.delivered, r.error, r.tries, r.locked])).toEqual([
      [200, true, false, 1, null],
      [10000, false, false, 0, null],
    ]);
    // The released event goes out again at once after a restart.
    hook.answer = okAnswer;
    a = await start();
    try {
      await hook.waitFor(3);
      await until(async () => (await state()).every((r) => r.delivered));
    } finally {
      await a.stop();
    }
  });
});
