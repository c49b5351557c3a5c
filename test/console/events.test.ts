/**
 * The console's operational areas in Chromium: cron triggers (created, modified, their events and
 * invocation logs, deleted), one-off scheduled events (scheduled, delivered to a webhook on
 * loopback with their invocation shown, deleted), REST endpoints (created with their query,
 * called, modified, dropped), the allow-list (a collection, its queries, its scope; enforced with
 * --enable-allowlist), event triggers (created from the form, delivered, modified, deleted), and
 * inconsistent metadata fixed from the Metadata page (a remote schema that went away: reloaded
 * once it is back, dropped when it is not).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, checkCleanRun, hasChromium, openConsole, unlabelled, warnSkipped, type Console } from './harness.js';

warnSkipped('test/console/events.test.ts');

/** An HTTP server on loopback answering 200 to every POST, keeping the bodies; or a tiny GraphQL
 * server (the remote schema that goes away). */
async function serve(graphqlSchema?: string): Promise<{ server: Server; url: string; bodies: any[]; port: number }> {
  const bodies: any[] = [];
  const schema = graphqlSchema ? buildSchema(graphqlSchema) : undefined;
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const body = JSON.parse(text || 'null');
    bodies.push(body);
    const answer = schema ? await graphql({ schema, source: body.query, rootValue: { hello: () => 'hi' } }) : { ok: true };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { server, url: `http://127.0.0.1:${port}`, bodies, port };
}

/** A time as an <input type=datetime-local> takes it, in this machine's (and the browser's) zone. */
function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

describe.skipIf(!hasChromium)('the events, REST, allow-list and metadata areas of the console', () => {
  let c: Console;
  let hook: Awaited<ReturnType<typeof serve>>;
  const md = () => c.exported();
  const crons = async () => (await c.api('get_cron_triggers')).cron_triggers;

  beforeAll(async () => {
    hook = await serve();
    c = await openConsole('events', { config: { scheduledEventsFetchInterval: 100, enableAllowlist: true } });
    await c.server.runSql("create table article (id serial primary key, title text); insert into article (title) values ('hello'), ('world');");
    await c.api('pg_track_table', { table: 'article' });
    await c.api('pg_create_select_permission', { table: 'article', role: 'reader', permission: { columns: ['id', 'title'], filter: {} } });
  }, 240_000);
  afterAll(async () => {
    await c?.close();
    hook?.server.close();
  });

  it('creates a cron trigger, refusing a bad schedule; its events are listed', async () => {
    const { page } = c;
    await page.getByTestId('nav-events').click();
    await page.getByTestId('events-tab-cron').click();
    await page.getByTestId('cron-name').fill('nightly');
    await page.getByTestId('cron-webhook').fill(`${hook.url}/cron`);
    await page.getByTestId('cron-schedule').fill('0 3 *');
    await page.getByTestId('cron-save').click();
    await page.getByTestId('cron-form').getByTestId('error').getByText(/expected 5 fields/).waitFor();
    expect(await crons()).toEqual([]);
    await page.getByTestId('cron-schedule').fill('0 3 * * *');
    await page.getByTestId('cron-payload').fill('{"job": "cleanup"}');
    await page.getByTestId('cron-retry-num_retries').fill('2');
    await page.getByTestId('cron-comment').fill('every night');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('cron-form');
    await page.getByTestId('cron-save').click();
    await page.waitForURL(/\/events\/cron\/nightly$/);
    expect((await md()).cron_triggers).toEqual([
      { name: 'nightly', webhook: `${hook.url}/cron`, schedule: '0 3 * * *', payload: { job: 'cleanup' }, retry_conf: { num_retries: 2, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 }, include_in_metadata: true, comment: 'every night' },
    ]);
    // The scheduler makes its next events; the page shows them.
    await expect
      .poll(async () => {
        await page.getByTestId('cron-refresh').click();
        return page.getByTestId('cron-events').locator('tbody tr').count();
      })
      .toBeGreaterThan(0);
    expect(await page.getByTestId('cron-events').locator('tbody tr').first().locator('td').nth(2).textContent()).toBe('scheduled');
  }, 60_000);

  it('shows the invocation logs of its delivered events', async () => {
    const { page } = c;
    // The next event brought forward to now, as if its time had come.
    await c.server.sql`update svc_catalog.scheduled_events set scheduled_time = now() - interval '1 second' where id = (select id from svc_catalog.scheduled_events where trigger_name = 'nightly' order by scheduled_time limit 1)`;
    await expect.poll(() => hook.bodies.length, { timeout: 15_000 }).toBe(1);
    expect(hook.bodies[0]).toMatchObject({ name: 'nightly', payload: { job: 'cleanup' }, comment: 'every night' });
    await expect
      .poll(async () => {
        await page.getByTestId('cron-refresh').click();
        return page.getByTestId('cron-invocations').locator('tbody tr').count();
      })
      .toBe(1);
    expect(await page.getByTestId('cron-invocations').locator('tbody td').nth(1).textContent()).toBe('200');
    await c.shot('cron-invocations');
  }, 60_000);

  it('modifies the cron trigger (out of the metadata, into the catalog) and deletes it', async () => {
    const { page } = c;
    await page.getByTestId('cron-schedule').fill('*/10 * * * *');
    await page.getByTestId('cron-in-metadata').uncheck();
    await page.getByTestId('cron-save').click();
    await page.getByTestId('cron-form').getByTestId('ok').waitFor();
    expect((await md()).cron_triggers).toBeUndefined();
    expect(await crons()).toMatchObject([{ name: 'nightly', schedule: '*/10 * * * *', include_in_metadata: false }]);
    await page.getByTestId('cron-delete').click();
    await page.waitForURL(/\/events\/cron$/);
    await expect.poll(crons).toEqual([]);
  }, 60_000);

  it('schedules one-off events: one delivered with its invocation shown, one deleted', async () => {
    const { page } = c;
    hook.bodies.length = 0;
    await page.getByTestId('events-tab-one-off').click();
    await page.getByTestId('one-off-webhook').fill(`${hook.url}/once`);
    await page.getByTestId('one-off-at').fill(localInput(new Date(Date.now() - 60_000)));
    await page.getByTestId('one-off-payload').fill('{"n": 1}');
    await page.getByTestId('one-off-comment').fill('ping');
    expect(await unlabelled(page)).toEqual([]);
    await page.getByTestId('one-off-save').click();
    await expect.poll(() => hook.bodies.length, { timeout: 15_000 }).toBe(1);
    expect(hook.bodies[0]).toMatchObject({ payload: { n: 1 }, comment: 'ping' });
    await expect
      .poll(async () => {
        await page.getByTestId('one-off-refresh').click();
        return page.getByTestId('one-off-events').locator('tbody tr td').nth(2).textContent();
      })
      .toBe('delivered');
    await page.getByTestId('one-off-logs-ping').click();
    await expect.poll(() => page.getByTestId('one-off-invocations').locator('tbody tr').count()).toBe(1);
    expect(await page.getByTestId('one-off-invocations').locator('tbody td').nth(1).textContent()).toBe('200');
    await c.shot('one-off-delivered');

    await page.getByTestId('one-off-at').fill(localInput(new Date(Date.now() + 86_400_000)));
    await page.getByTestId('one-off-comment').fill('later');
    await page.getByTestId('one-off-save').click();
    await page.getByTestId('one-off-delete-later').waitFor();
    expect((await c.api('get_scheduled_events', { type: 'one_off' })).events.map((e: any) => [e.comment, e.status])).toEqual([
      ['ping', 'delivered'],
      ['later', 'scheduled'],
    ]);
    await page.getByTestId('one-off-delete-later').click();
    await expect.poll(async () => (await c.api('get_scheduled_events', { type: 'one_off' })).events.map((e: any) => e.comment)).toEqual(['ping']);
  }, 60_000);

  it('creates a REST endpoint with its query, calls it, modifies and drops it', async () => {
    const { page } = c;
    await page.getByTestId('nav-rest').click();
    await page.getByTestId('rest-name').fill('article');
    await page.getByTestId('rest-url').fill('article/:id');
    await page.getByTestId('rest-query').fill('query ($id: Int!) { article_by_pk(id: $id) { title } }');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('rest-form');
    await page.getByTestId('rest-save').click();
    await page.waitForURL(/\/rest\/article$/);
    expect(await page.getByTestId('rest-route').textContent()).toBe('GET /api/rest/article/:id');
    let m = await md();
    expect(m.rest_endpoints).toEqual([{ name: 'article', url: 'article/:id', methods: ['GET'], definition: { query: { collection_name: 'allowed-queries', query_name: 'article' } } }]);
    expect(m.query_collections).toEqual([{ name: 'allowed-queries', definition: { queries: [{ name: 'article', query: 'query ($id: Int!) { article_by_pk(id: $id) { title } }' }] } }]);
    expect((await c.server.request('GET', '/api/rest/article/2', undefined, ADMIN)).body).toEqual({ article_by_pk: { title: 'world' } });

    await page.getByTestId('rest-method-POST').check();
    await page.getByTestId('rest-query').fill('query ($id: Int!) { article_by_pk(id: $id) { id title } }');
    await page.getByTestId('rest-save').click();
    await page.getByTestId('rest-form').getByTestId('ok').waitFor();
    m = await md();
    expect(m.rest_endpoints[0].methods).toEqual(['GET', 'POST']);
    expect(m.query_collections[0].definition.queries).toEqual([{ name: 'article', query: 'query ($id: Int!) { article_by_pk(id: $id) { id title } }' }]);
    expect((await c.server.request('POST', '/api/rest/article/1', {}, ADMIN)).body).toEqual({ article_by_pk: { id: 1, title: 'hello' } });
    await c.shot('rest-modified');

    await page.getByTestId('rest-drop').click();
    await page.waitForURL(/\/rest$/);
    await expect.poll(async () => (await md()).rest_endpoints).toBeUndefined();
    expect((await c.server.request('GET', '/api/rest/article/2', undefined, ADMIN)).status).toBe(404);
  }, 60_000);

  it('keeps the allow-list: a collection, its query, allowed for every role and then for some, removed', async () => {
    const { page } = c;
    const reader = { ...ADMIN, 'x-svc-role': 'reader' };
    const query = '{ article(order_by: {id: asc}) { title } }';
    expect((await c.server.gql(query, undefined, reader)).errors[0].message).toMatch(/allowlist|allowed/i);
    await page.getByTestId('nav-allow-list').click();
    expect(await page.getByTestId('allowlist-state').textContent()).toBe('The allow-list is enforced.');
    await page.getByTestId('collection-name').fill('mine');
    await page.getByTestId('collection-save').click();
    await page.waitForURL(/\/allow-list\/mine$/);
    await page.getByTestId('collection-query-name').fill('articles');
    await page.getByTestId('collection-query-text').fill(query);
    await page.getByTestId('collection-query-add').click();
    await page.getByTestId('collection-queries').getByText('articles').waitFor();
    await page.getByTestId('allowlist-add').click();
    await expect.poll(() => page.getByTestId('allowlist-status').textContent()).toBe('allowed for every role');
    let m = await md();
    expect(m.query_collections.find((x: any) => x.name === 'mine')).toEqual({ name: 'mine', definition: { queries: [{ name: 'articles', query }] } });
    expect(m.allowlist).toEqual([{ collection: 'mine', scope: { global: true } }]);
    expect(await c.server.gql(query, undefined, reader)).toEqual({ data: { article: [{ title: 'hello' }, { title: 'world' }] } });
    await c.shot('allowlist-global');

    await page.getByTestId('allowlist-scope').selectOption('roles');
    await page.getByTestId('allowlist-roles-other').fill('author');
    await page.getByTestId('allowlist-roles-add').click();
    expect(await unlabelled(page)).toEqual([]);
    await page.getByTestId('allowlist-update').click();
    await expect.poll(() => page.getByTestId('allowlist-status').textContent()).toBe('allowed for author');
    expect((await md()).allowlist).toEqual([{ collection: 'mine', scope: { global: false, roles: ['author'] } }]);
    expect((await c.server.gql(query, undefined, reader)).errors).toBeDefined();
    await c.shot('allowlist-roles');

    await page.getByTestId('allowlist-drop').click();
    await expect.poll(() => page.getByTestId('allowlist-status').textContent()).toBe('not allowed');
    await page.getByTestId('collection-query-drop-articles').click();
    await expect.poll(async () => (await md()).query_collections.find((x: any) => x.name === 'mine').definition.queries).toEqual([]);
    await page.getByTestId('collection-drop').click();
    await page.waitForURL(/\/allow-list$/);
    m = await md();
    expect(m.allowlist).toBeUndefined();
    expect(m.query_collections.map((x: any) => x.name)).toEqual(['allowed-queries']);
  }, 60_000);

  it('fixes inconsistent metadata: a remote schema that went away, reloaded once back, then dropped', async () => {
    const { page } = c;
    const remote = await serve('type Query { hello: String }');
    await c.api('add_remote_schema', { name: 'flaky', definition: { url: `${remote.url}/graphql` } });
    await new Promise<void>((r) => remote.server.close(() => r()));
    await c.api('reload_metadata', { reload_remote_schemas: true });
    await c.go('/metadata');
    await page.getByTestId('nav-inconsistent').getByText('1 inconsistent').waitFor();
    await page.getByTestId('inconsistent').getByText('flaky').first().waitFor();
    await c.shot('inconsistent');
    // Back on the same port: a reload makes it consistent.
    const back = createServer(async (req, res) => {
      let text = '';
      for await (const x of req) text += x;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await graphql({ schema: buildSchema('type Query { hello: String }'), source: JSON.parse(text).query })));
    });
    await new Promise<void>((r) => back.listen(remote.port, '127.0.0.1', r));
    await page.getByTestId('reload-metadata').click();
    await page.getByTestId('consistent').waitFor();
    expect((await c.api('get_inconsistent_metadata')).is_consistent).toBe(true);
    // Gone again: dropped from the page.
    await new Promise<void>((r) => back.close(() => r()));
    await page.getByTestId('reload-metadata').click();
    await page.getByTestId('inconsistent').getByText('flaky').first().waitFor();
    await page.getByTestId('drop-inconsistent').click();
    await page.getByTestId('consistent').waitFor();
    expect((await md()).remote_schemas).toBeUndefined();
    await expect.poll(() => page.getByTestId('nav-inconsistent').count()).toBe(0);
    await c.shot('consistent-again');
  }, 60_000);

  it('creates an event trigger from the form, its events delivered and listed; modifies and deletes it', async () => {
    const { page } = c;
    const et = await serve();
    const triggers = async () => (await md()).sources[0].tables.find((t: any) => t.table.name === 'article').event_triggers;
    try {
      await c.go('/events');
      await page.getByTestId('new-trigger-open').click();
      await page.getByTestId('new-trigger-name').fill('article_changed');
      // the only tracked table, picked already
      expect(await page.getByTestId('new-trigger-table').inputValue()).toBe('default.public.article');
      await page.getByTestId('new-trigger-webhook').fill(`${et.url}/events`);
      // no operation: refused before anything is sent
      await page.getByTestId('new-trigger-save').click();
      await page.getByTestId('new-trigger-form').getByTestId('error').getByText(/pick at least one operation/).waitFor();
      expect(await triggers()).toBeUndefined();
      await page.getByTestId('new-trigger-op-insert').check();
      await page.getByTestId('new-trigger-op-update').check();
      await page.getByTestId('new-trigger-update-columns').fill('title');
      await page.getByTestId('new-trigger-op-manual').check();
      await page.getByTestId('new-trigger-retry-num_retries').fill('3');
      await page.getByTestId('new-trigger-retry-timeout_sec').fill('5');
      await page.getByTestId('new-trigger-headers-add').click();
      await page.getByTestId('new-trigger-headers-name-0').fill('X-Hook-Key');
      await page.getByTestId('new-trigger-headers-value-0').fill('k1');
      // a retry count that is no number: said, nothing sent
      await page.getByTestId('new-trigger-retry-interval_sec').fill('soon');
      await page.getByTestId('new-trigger-save').click();
      await page.getByTestId('new-trigger-form').getByTestId('error').getByText('Retry interval (s): expected a whole number, got "soon"').waitFor();
      await page.getByTestId('new-trigger-retry-interval_sec').fill('');
      expect(await unlabelled(page)).toEqual([]);
      await c.shot('event-trigger-form');
      await page.getByTestId('new-trigger-save').click();
      await page.getByTestId('trigger-article_changed-form').waitFor();
      expect(await triggers()).toEqual([
        {
          name: 'article_changed',
          definition: { insert: { columns: '*' }, update: { columns: ['title'] }, enable_manual: true },
          retry_conf: { num_retries: 3, interval_sec: 10, timeout_sec: 5 },
          webhook: `${et.url}/events`,
          headers: [{ name: 'X-Hook-Key', value: 'k1' }],
        },
      ]);
      // a second one of the same name: the engine's refusal shown
      await page.getByTestId('new-trigger-open').click();
      await page.getByTestId('new-trigger-name').fill('article_changed');
      await page.getByTestId('new-trigger-op-delete').check();
      await page.getByTestId('new-trigger-webhook').fill(`${et.url}/again`);
      await page.getByTestId('new-trigger-save').click();
      await page.getByTestId('new-trigger-form').getByTestId('error').getByText(/already exists/).waitFor();
      expect((await triggers()).length).toBe(1);

      // its events are delivered, and listed once it is opened again
      await c.server.sql`insert into article (title) values ('delivered')`;
      await expect.poll(() => et.bodies.length, { timeout: 15_000 }).toBe(1);
      expect(et.bodies[0]).toMatchObject({ trigger: { name: 'article_changed' }, event: { op: 'INSERT', data: { new: { title: 'delivered' } } } });
      await page.getByTestId('trigger-article_changed').click();
      await page.getByTestId('trigger-article_changed').click();
      await expect.poll(() => page.getByTestId('event-logs-article_changed').locator('tbody tr').count(), { timeout: 15_000 }).toBe(1);

      // a webhook from an environment variable the server does not have: refused, unchanged
      await page.getByTestId('trigger-article_changed-webhook-kind').selectOption('env');
      await page.getByTestId('trigger-article_changed-webhook').fill('SVC_TEST_UNSET_HOOK');
      await page.getByTestId('trigger-article_changed-save').click();
      await page.getByTestId('trigger-article_changed-form').getByTestId('error').getByText(/SVC_TEST_UNSET_HOOK/).waitFor();
      expect((await triggers())[0].webhook).toBe(`${et.url}/events`);
      expect((await triggers())[0].webhook_from_env).toBeUndefined();
      await page.getByTestId('trigger-article_changed-webhook-kind').selectOption('url');
      // modified: no longer on update, another URL
      await page.getByTestId('trigger-article_changed-op-update').uncheck();
      await page.getByTestId('trigger-article_changed-webhook').fill(`${et.url}/v2`);
      await page.getByTestId('trigger-article_changed-save').click();
      await page.getByTestId('trigger-article_changed-form').getByTestId('ok').waitFor();
      expect(await triggers()).toMatchObject([{ name: 'article_changed', definition: { insert: { columns: '*' }, enable_manual: true }, webhook: `${et.url}/v2`, retry_conf: { num_retries: 3, timeout_sec: 5 } }]);
      expect((await triggers())[0].definition.update).toBeUndefined();
      await c.shot('event-trigger-modified');

      await page.getByTestId('trigger-delete-article_changed').click();
      await page.getByTestId('trigger-article_changed').waitFor({ state: 'detached' });
      await page.getByText('No event triggers.').waitFor();
      expect(await triggers()).toBeUndefined();
      // and gone from the database: an insert makes no event
      await c.server.sql`insert into article (title) values ('unseen')`;
      expect((await c.server.sql`select count(*)::int as n from svc_catalog.event_log where trigger_name = 'article_changed' and payload::text like '%unseen%'`)[0]!.n).toBe(0);
    } finally {
      et.server.close();
    }
  }, 90_000);

  it('every area is reached with Tab from the top, and every control on its page has a label', async () => {
    const { page } = c;
    const areas = ['nav-api', 'nav-data', 'nav-sql', 'nav-actions', 'nav-remote-schemas', 'nav-events', 'nav-rest', 'nav-allow-list', 'nav-roles', 'nav-metadata'];
    await c.go('/metadata');
    const order: string[] = [];
    for (let i = 0; i < areas.length + 3; i++) {
      await page.keyboard.press('Tab');
      order.push((await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)) ?? '');
    }
    expect(order.filter((t) => t.startsWith('nav-'))).toEqual(areas);
    for (const area of areas.slice(1)) {
      await page.getByTestId(area).click();
      await page.waitForLoadState('networkidle');
      expect(await unlabelled(page), area).toEqual([]);
    }
  }, 60_000);

  it('asked nothing of another origin and logged no unexpected error', () => {
    checkCleanRun(c);
  });
});
