/**
 * Cron triggers and one-off scheduled events: golden tests of every operation and error, delivery
 * to a real node:http webhook (payload, headers, invocation records), retries, dead-on-tolerance,
 * and two engine instances topping up and firing one cron slot exactly once.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, useServer, type TestServer } from '../../test/helpers.js';

interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

let hits: Hit[] = [];
let answer: (h: Hit, res: http.ServerResponse) => void;
const ok = (_h: Hit, res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};
let hook: http.Server;
let hookUrl = '';

beforeAll(async () => {
  hook = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const h = { path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') };
      hits.push(h);
      answer(h, res);
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}`;
});
afterAll(async () => {
  hook.closeAllConnections();
  await new Promise((r) => hook.close(r));
});
beforeEach(() => {
  hits = [];
  answer = ok;
});

const s = useServer(undefined, { env: { SECRET: 's3cret' }, config: { scheduledEventsFetchInterval: 50 } });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(f: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(30);
  }
}

const cron = (args: Record<string, unknown>) =>
  s.metadata({ type: 'create_cron_trigger', args: { webhook: `${hookUrl}/cron`, schedule: '0 0 1 1 *', include_in_metadata: true, ...args } });

describe('cron trigger operations', () => {
  it('create, duplicate, replace, get, export and delete', async () => {
    let r = await cron({ name: 'c1', payload: { a: 1 }, headers: [{ name: 'x-k', value: 'v' }], comment: 'first' });
    expect(r.body).toEqual({ message: 'success' });
    r = await cron({ name: 'c1' });
    expect([r.status, r.body]).toEqual([400, { code: 'already-exists', error: 'cron trigger with name: c1 already exists', path: '$.args' }]);
    r = await s.query({ type: 'create_cron_trigger', args: { name: 'c2', webhook: 'http://x', schedule: '* * * * *', include_in_metadata: false } });
    expect(r.body).toEqual({ message: 'success' });
    r = await s.metadata({ type: 'get_cron_triggers', args: {} });
    expect(r.body).toEqual({
      cron_triggers: [
        {
          name: 'c1',
          webhook: `${hookUrl}/cron`,
          schedule: '0 0 1 1 *',
          payload: { a: 1 },
          retry_conf: { num_retries: 0, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 },
          headers: [{ name: 'x-k', value: 'v' }],
          include_in_metadata: true,
          comment: 'first',
        },
        {
          name: 'c2',
          webhook: 'http://x',
          schedule: '* * * * *',
          retry_conf: { num_retries: 0, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 },
          headers: [],
          include_in_metadata: false,
        },
      ],
    });
    // Only the one kept in the metadata is exported; a default retry_conf is left out.
    r = await s.metadata({ type: 'export_metadata', version: 1, args: {} });
    expect(r.body.cron_triggers).toEqual([
      { name: 'c1', webhook: `${hookUrl}/cron`, schedule: '0 0 1 1 *', payload: { a: 1 }, headers: [{ name: 'x-k', value: 'v' }], include_in_metadata: true, comment: 'first' },
    ]);
    // replace_metadata keeps the ones outside the metadata, and refuses one with their name.
    const exported = r.body;
    r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: exported } });
    expect(r.status).toBe(200);
    // The same on /v1/query, as Hasura's parser takes it there (conformance TestCronTrigger).
    r = await s.query({ type: 'replace_metadata', args: { metadata: exported } });
    expect(r.status).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body).toEqual(exported);
    r = await s.metadata({ type: 'get_cron_triggers', args: {} });
    expect(r.body.cron_triggers.map((t: any) => t.name)).toEqual(['c1', 'c2']);
    const md = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    r = await s.metadata({ type: 'replace_metadata', args: { ...md, cron_triggers: [...md.cron_triggers, { name: 'c2', webhook: 'http://y', schedule: '* * * * *', include_in_metadata: true }] } });
    expect(r.status).toBe(400);

    // replace: moves c2 into the metadata with a new retry_conf; the unknown name is refused.
    r = await s.metadata({
      type: 'create_cron_trigger',
      args: { name: 'c2', webhook: 'http://x', schedule: '5 * * * *', include_in_metadata: true, replace: true, retry_conf: { num_retries: 2 } },
    });
    expect(r.body).toEqual({ message: 'success' });
    r = await s.metadata({ type: 'export_metadata', version: 1, args: {} });
    expect(r.body.cron_triggers[1]).toEqual({
      name: 'c2',
      webhook: 'http://x',
      schedule: '5 * * * *',
      retry_conf: { num_retries: 2, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 },
      include_in_metadata: true,
    });
    r = await cron({ name: 'nope', replace: true });
    expect([r.status, r.body]).toEqual([400, { code: 'not-exists', error: 'cron trigger with name: nope does not exist', path: '$.args' }]);

    // 100 instances are generated ahead, and deleting the trigger deletes them.
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'cron', trigger_name: 'c2', get_rows_count: true, limit: 2 } });
    expect(r.body.count).toBe(100);
    expect(r.body.events).toHaveLength(2);
    expect(Object.keys(r.body.events[0])).toEqual(['id', 'trigger_name', 'scheduled_time', 'status', 'tries', 'created_at', 'next_retry_at']);
    expect(r.body.events[0].scheduled_time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:05:00Z$/);
    for (const name of ['c1', 'c2']) expect((await s.query({ type: 'delete_cron_trigger', args: { name } })).body).toEqual({ message: 'success' });
    expect((await s.sql`select count(*)::int as n from svc_catalog.scheduled_events where trigger_name in ('c1','c2')`)[0]!.n).toBe(0);
    r = await s.metadata({ type: 'delete_cron_trigger', args: { name: 'c1' } });
    expect([r.status, r.body]).toEqual([400, { code: 'not-exists', error: 'cron trigger with name: c1 does not exist', path: '$.args' }]);
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'cron', trigger_name: 'c1' } });
    expect(r.body.code).toBe('not-exists');
    expect((await s.metadata({ type: 'get_cron_triggers', args: {} })).body).toEqual({ cron_triggers: [] });
  });

  it('a webhook or header from an unset variable: refused at creation, inconsistent at boot', async () => {
    let r = await cron({ name: 'env', webhook: '{{NOPE}}/x' });
    expect([r.status, r.body]).toEqual([400, { path: '$.args', code: 'invalid-configuration', error: 'Inconsistent object: in cron trigger "env": ' + r.body.error.split(': ').slice(2).join(': ') }]);
    expect(r.body.error).toMatch(/NOPE/);
    r = await cron({ name: 'env', include_in_metadata: false, headers: [{ name: 'h', value_from_env: 'NOPE' }] });
    expect([r.status, r.body.code]).toEqual([400, 'invalid-configuration']);
    s.env.LATER = hookUrl;
    expect((await cron({ name: 'env', webhook: '{{LATER}}/x' })).status).toBe(200);
    delete s.env.LATER;
    r = await s.metadata({ type: 'reload_metadata', args: {} });
    r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.body.inconsistent_objects).toMatchObject([{ type: 'cron_trigger', name: 'cron_trigger env' }]);
    r = await s.metadata({ type: 'drop_inconsistent_metadata', args: {} });
    expect((await s.metadata({ type: 'get_cron_triggers', args: {} })).body.cron_triggers).toEqual([]);
  });

  it('refuses bad arguments', async () => {
    const bad = async (args: Record<string, unknown>) => {
      const r = await s.metadata({ type: 'create_cron_trigger', args: { name: 'b', webhook: 'http://x', schedule: '* * * * *', include_in_metadata: true, ...args } });
      expect(r.status).toBe(400);
      return r.body;
    };
    expect((await bad({ schedule: '61 * * * *' })).path).toBe('$.args.schedule');
    expect((await bad({ schedule: '* * * * * *' })).error).toMatch(/expected 5 fields/);
    expect(await bad({ include_in_metadata: undefined })).toEqual({ path: '$.args', error: 'key "include_in_metadata" not found', code: 'parse-failed' });
    expect((await bad({ retry_conf: { num_retries: -1 } })).error).toMatch(/num_retries cannot be a negative value/);
    expect((await bad({ webhook: undefined })).error).toMatch(/webhook/);
    expect((await bad({ headers: [{ name: 'x' }] })).error).toMatch(/expecting value or value_from_env keys/);
    expect((await s.metadata({ type: 'get_cron_triggers', args: {} })).body.cron_triggers).toEqual([]);
  });
});

describe('one-off scheduled events', () => {
  it('create, get, deliver with payload and headers, invocations, delete', async () => {
    const at = new Date(Date.now() + 300).toISOString();
    let r = await s.query({
      type: 'create_scheduled_event',
      args: { webhook: '{{HOOK}}/one', schedule_at: at, payload: { k: 'v' }, headers: [{ name: 'x-secret', value_from_env: 'SECRET' }], comment: 'c' },
    });
    expect(r.body.message).toBe('success');
    const id = r.body.event_id;
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off' } });
    // HOOK is not set yet: the delivery fails and, with no retries, the event is an error.
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', status: ['error'] } })).body.events.length === 1);
    s.env.HOOK = hookUrl;
    r = await s.metadata({ type: 'create_scheduled_event', args: { webhook: '{{HOOK}}/one', schedule_at: at, payload: { k: 'v' }, headers: [{ name: 'x-secret', value_from_env: 'SECRET' }], comment: 'c' } });
    const id2 = r.body.event_id;
    await until(() => hits.length >= 1);
    expect(hits[0]!.path).toBe('/one');
    expect(hits[0]!.headers['x-secret']).toBe('s3cret');
    expect(hits[0]!.body).toMatchObject({ id: id2, payload: { k: 'v' }, comment: 'c' });
    expect(Date.parse(hits[0]!.body.scheduled_time)).toBe(Date.parse(at));
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', status: ['delivered'] } })).body.events.length === 1);
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', get_rows_count: true } });
    expect(r.body.count).toBe(2);
    expect(r.body.events.find((e: any) => e.id === id2)).toMatchObject({
      id: id2,
      webhook_conf: '{{HOOK}}/one',
      payload: { k: 'v' },
      header_conf: [{ name: 'x-secret', value_from_env: 'SECRET' }],
      retry_conf: { num_retries: 0, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 },
      status: 'delivered',
      tries: 1,
      comment: 'c',
    });
    r = await s.metadata({ type: 'get_scheduled_event_invocations', args: { type: 'one_off', event_id: id2, get_rows_count: true } });
    expect(r.body.count).toBe(1);
    expect(r.body.invocations[0]).toMatchObject({ event_id: id2, status: 200, request: { payload: { id: id2 }, version: '2' }, response: { type: 'webhook_response' } });
    r = await s.metadata({ type: 'get_scheduled_event_invocations', args: { type: 'one_off', event_id: id } });
    expect(r.body.invocations[0].response.type).toBe('client_error');
    r = await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: id } });
    expect(r.body).toEqual({ message: 'success' });
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off' } });
    expect(r.body.events.map((e: any) => e.id)).toEqual([id2]);
    await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: id2 } });
  });

  it('retries per retry_conf, then error', async () => {
    answer = (_h, res) => {
      res.writeHead(500);
      res.end('no');
    };
    const r = await s.metadata({
      type: 'create_scheduled_event',
      args: { webhook: `${hookUrl}/fail`, schedule_at: new Date().toISOString(), retry_conf: { num_retries: 2, retry_interval_seconds: 1 } },
    });
    const id = r.body.event_id;
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', status: ['error'] } })).body.events.length === 1);
    expect(hits.length).toBe(3);
    const inv = await s.metadata({ type: 'get_scheduled_event_invocations', args: { type: 'one_off', event_id: id } });
    expect(inv.body.invocations.map((i: any) => i.status)).toEqual([500, 500, 500]);
    await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: id } });
  });

  it("waits what the webhook's Retry-After says", async () => {
    answer = (_h, res) => {
      res.writeHead(503, { 'retry-after': '1' });
      res.end();
      answer = ok;
    };
    const r = await s.metadata({
      type: 'create_scheduled_event',
      args: { webhook: `${hookUrl}/later`, schedule_at: new Date().toISOString(), retry_conf: { num_retries: 1, retry_interval_seconds: 3600 } },
    });
    await until(() => hits.length === 2, 5000);
    const ev = (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off' } })).body.events.find((e: any) => e.id === r.body.event_id);
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', status: ['delivered'] } })).body.events.length === 1);
    expect(ev).toBeDefined();
    await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: r.body.event_id } });
  });

  it('marks an event missed for longer than its tolerance dead, without firing it', async () => {
    const r = await s.metadata({
      type: 'create_scheduled_event',
      args: { webhook: `${hookUrl}/late`, schedule_at: new Date(Date.now() - 120_000).toISOString(), retry_conf: { tolerance_seconds: 60 } },
    });
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'one_off', status: ['dead'] } })).body.events.length === 1);
    expect(hits).toEqual([]);
    await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: r.body.event_id } });
  });

  it('takes over the claim of an instance that died, once the claim is older than the timeout', async () => {
    const at = new Date(Date.now() + 60_000).toISOString();
    const r = await s.metadata({ type: 'create_scheduled_event', args: { webhook: `${hookUrl}/crashed`, schedule_at: at, retry_conf: { timeout_seconds: 5 } } });
    const id = r.body.event_id;
    // Claimed 20 s ago by an instance that is gone (the claim lasts 5 + 30 s) ...
    await s.sql`update svc_catalog.scheduled_events set scheduled_time = now() - interval '1 minute', status = 'locked', locked = now() - interval '20 seconds' where id = ${id}`;
    await sleep(300);
    expect(hits).toEqual([]);
    // ... and 40 s ago: taken over.
    await s.sql`update svc_catalog.scheduled_events set locked = now() - interval '40 seconds' where id = ${id}`;
    await until(() => hits.length === 1);
    expect(hits[0]!.body.id).toBe(id);
    await s.metadata({ type: 'delete_scheduled_event', args: { type: 'one_off', event_id: id } });
  });

  it('refuses bad arguments', async () => {
    let r = await s.metadata({ type: 'create_scheduled_event', args: { webhook: 'http://x', schedule_at: 'tomorrow' } });
    expect([r.status, r.body.path]).toEqual([400, '$.args.schedule_at']);
    r = await s.metadata({ type: 'create_scheduled_event', args: { schedule_at: new Date().toISOString() } });
    expect(r.status).toBe(400);
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'sometimes' } });
    expect([r.status, r.body.path]).toEqual([400, '$.args.type']);
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'cron' } });
    expect(r.status).toBe(400);
  });
});

describe('cron delivery', () => {
  it('delivers a due slot with the cron payload and headers, and marks a missed one dead', async () => {
    let r = await cron({ name: 'due', payload: { p: 1 }, headers: [{ name: 'x-h', value: 'hv' }], comment: 'cm' });
    expect(r.status).toBe(200);
    // Bring the first slot to now, and the second to long before its tolerance.
    const [first, second] = await s.sql<{ id: string }[]>`select id from svc_catalog.scheduled_events where trigger_name = 'due' order by scheduled_time limit 2`;
    await s.sql`update svc_catalog.scheduled_events set scheduled_time = now() - interval '1 second' where id = ${first!.id}`;
    await s.sql`update svc_catalog.scheduled_events set scheduled_time = now() - interval '7 hours' where id = ${second!.id}`;
    await until(() => hits.length >= 1);
    expect(hits[0]!.path).toBe('/cron');
    expect(hits[0]!.headers['x-h']).toBe('hv');
    expect(Object.keys(hits[0]!.body).sort()).toEqual(['comment', 'id', 'name', 'payload', 'scheduled_time']);
    expect(hits[0]!.body).toMatchObject({ id: first!.id, name: 'due', payload: { p: 1 }, comment: 'cm' });
    // The hook has answered; its delivery is recorded just after: wait for both outcomes.
    await until(async () => (await s.metadata({ type: 'get_scheduled_events', args: { type: 'cron', trigger_name: 'due', status: ['delivered', 'dead'] } })).body.events.length === 2);
    r = await s.metadata({ type: 'get_scheduled_events', args: { type: 'cron', trigger_name: 'due', status: ['delivered', 'dead'] } });
    expect(r.body.events.map((e: any) => [e.id, e.status]).sort()).toEqual(
      [
        [first!.id, 'delivered'],
        [second!.id, 'dead'],
      ].sort(),
    );
    expect(hits.length).toBe(1);
    r = await s.metadata({ type: 'get_scheduled_event_invocations', args: { type: 'cron', trigger_name: 'due' } });
    expect(r.body.invocations).toHaveLength(1);
    expect(r.body.invocations[0]).toMatchObject({ event_id: first!.id, status: 200 });
    await s.metadata({ type: 'delete_cron_trigger', args: { name: 'due' } });
  });
});

describe('two instances', () => {
  let other: TestServer | undefined;
  afterAll(async () => {
    await other?.stop();
  });

  it('generate each slot once and fire a due slot exactly once', async () => {
    other = await startServer({ database: { url: s.url }, config: { scheduledEventsFetchInterval: 20, metadataSyncInterval: 100 } });
    const r = await s.metadata({ type: 'create_cron_trigger', args: { name: 'both', webhook: `${hookUrl}/both`, schedule: '* * * * *', include_in_metadata: false } });
    expect(r.status).toBe(200);
    // Both instances top it up; the unique key keeps one row per slot.
    await sleep(300);
    const [{ n, d }] = await s.sql`select count(*)::int as n, count(distinct scheduled_time)::int as d from svc_catalog.scheduled_events where trigger_name = 'both'`;
    expect(n).toBe(d);
    expect(n).toBeGreaterThanOrEqual(100);
    const moved = await s.sql<{ id: string }[]>`update svc_catalog.scheduled_events set scheduled_time = scheduled_time - interval '2 hours'
      where id in (select id from svc_catalog.scheduled_events where trigger_name = 'both' order by scheduled_time limit 20) returning id`;
    const due = new Set(moved.map((m) => m.id));
    const firedDue = () => hits.filter((h) => due.has(h.body.id));
    await until(() => firedDue().length >= 20);
    await sleep(500);
    // Each moved slot fired once, by one of the two. (If the test crosses a minute boundary, the
    // slot of the new minute falls due and fires too: it must also fire once.)
    expect(firedDue()).toHaveLength(20);
    expect(new Set(firedDue().map((h) => h.body.id)).size).toBe(20);
    expect(new Set(hits.map((h) => h.body.id)).size).toBe(hits.length);
    expect(hits.length).toBeLessThanOrEqual(21);
    await s.metadata({ type: 'delete_cron_trigger', args: { name: 'both' } });
  });
});

describe('shutdown', () => {
  it('releases a delivery still in flight after the grace period, to go out again at once', async () => {
    const t = await startServer({ config: { scheduledEventsFetchInterval: 20, gracefulShutdownTimeout: 1 } });
    let sql: TestServer['sql'] | undefined;
    try {
      answer = () => {}; // never answers
      const r = await t.metadata({ type: 'create_scheduled_event', args: { webhook: `${hookUrl}/hang`, schedule_at: new Date().toISOString() } });
      expect(r.status).toBe(200);
      await until(() => hits.length === 1);
      const started = Date.now();
      const postgres = (await import('postgres')).default;
      sql = postgres(t.url, { max: 1, onnotice: () => {} });
      await t.stop();
      expect(Date.now() - started).toBeLessThan(10_000);
      const [row] = await sql`select status, locked, tries from svc_catalog.scheduled_events where id = ${r.body.event_id}`;
      expect(row).toEqual({ status: 'scheduled', locked: null, tries: 0 });
    } finally {
      await sql?.end({ timeout: 1 });
      hook.closeAllConnections();
    }
  });
});
