/**
 * Waking on commit (Note [Waking on commit] in worker.ts): with a fetch interval of an hour, an
 * event committed after the worker has been idle is delivered within 500 ms, because the capture
 * function notifies at commit and the worker LISTENs; polling alone would wait for the interval.
 * The commits a session makes without notifying (within NOTIFY_EVERY_SEC of its last
 * notification) are found by the worker's short polls after it claimed; manual events and
 * redelivery notify too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../test/helpers.js';
import { startHook, type TestHook } from './hook.js';

const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let s: TestServer;
let hook: TestHook;
beforeAll(async () => {
  hook = await startHook();
  s = await startServer({ env: { HOOK: hook.url }, config: { eventsFetchInterval: HOUR } });
  await s.runSql('create table wake (id serial primary key, v text)');
  expect((await s.query({ type: 'track_table', args: { name: 'wake' } })).status).toBe(200);
  const r = await s.query({ type: 'create_event_trigger', args: { name: 'wake', table: 'wake', webhook: '{{HOOK}}', insert: { columns: '*' }, update: { columns: '*' }, enable_manual: true } });
  expect(r.status, r.text).toBe(200);
});
afterAll(async () => {
  await s?.stop();
  await hook?.close();
});

/** Milliseconds from `commit` (which returns once committed) to the webhook's `n`-th request. */
async function latency(n: number, commit: () => Promise<unknown>): Promise<number> {
  await commit();
  const at = Date.now();
  const got = await hook.waitFor(n, 10_000);
  return got[n - 1]!.at - at;
}

describe('waking on commit', () => {
  it('delivers an event committed after an idle spell within 500 ms, with an hour\'s fetch interval', async () => {
    await sleep(1500);
    const ms = await latency(1, () => s.sql`insert into wake (v) values ('a')`);
    expect(ms).toBeLessThan(500);
    expect(hook.received[0]!.body.event.data.new.v).toBe('a');
  });

  it('a session\'s next commits, which do not notify, are found by the worker\'s short polls', async () => {
    await s.sql.begin(async (tx) => {
      await tx`insert into wake (v) values ('rolled back')`;
      await tx`select 1/0`;
    }).catch(() => {});
    await sleep(1000);
    const ms = await latency(4, () => s.sql.begin(async (tx) => {
      await tx`insert into wake (v) values ('b'), ('c')`;
      await tx`update wake set v = 'a2' where v = 'a'`;
    }));
    expect(ms).toBeLessThan(500);
    await sleep(300);
    expect(hook.received.map((r) => r.body.event.data.new.v).sort()).toEqual(['a', 'a2', 'b', 'c']);
  });

  it('a session notifies at most once per NOTIFY_EVERY_SEC (notifying commits are serialised)', async () => {
    let notifications = 0;
    const listener = await s.sql.listen('svc_event_log', () => void notifications++);
    const session = await s.sql.reserve();
    try {
      await sleep(2100);
      for (let i = 0; i < 20; i++) await session`insert into wake (v) values (${`n${i}`})`;
      await hook.waitFor(24, 10_000);
      await sleep(200);
      expect(notifications).toBe(1);
    } finally {
      session.release();
      await listener.unlisten();
    }
  });

  it('manual events and redelivery wake an idle worker too', async () => {
    const n = hook.received.length;
    // Longer than a worker that claimed keeps polling (ACTIVE_MS).
    await sleep(5500);
    const invoked = await latency(n + 1, () => s.metadata({ type: 'pg_invoke_event_trigger', args: { name: 'wake', payload: { manual: true } } }));
    expect(invoked).toBeLessThan(500);
    expect(hook.received[n]!.body.event).toMatchObject({ op: 'MANUAL', data: { new: { manual: true } } });
    // Wait until the manual event is marked delivered: a redelivery needs it unclaimed.
    const id = hook.received[n]!.body.id;
    for (let i = 0; i < 50; i++) {
      const [row] = await s.sql`select delivered from svc_catalog.event_log where id = ${id}`;
      if (row?.delivered) break;
      await sleep(20);
    }
    await sleep(5500);
    const redelivered = await latency(n + 2, async () => {
      const r = await s.metadata({ type: 'pg_redeliver_event', args: { event_id: id } });
      expect(r.status, r.text).toBe(200);
    });
    expect(redelivered).toBeLessThan(500);
    expect(hook.received[n + 1]!.body.id).toBe(id);
  });
});
