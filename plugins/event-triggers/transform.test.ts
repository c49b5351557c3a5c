/**
 * Request and response transforms of event triggers (plugins/webhook-transforms, Note [Transform
 * failures] in worker.ts) against a real webhook on loopback: method, URL, query parameters,
 * headers, Kriti and form bodies, a removed body; stored and exported as Hasura exports them;
 * templates that do not parse refused; templates that fail on an event recorded, not crashed.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import { okAnswer, resetItemTrigger, sqlRows, startHook, until, type TestHook } from './hook.js';

const s = useServer(`create table item (id serial primary key, name text, qty int);`, { env: { HEADER_SECRET: 's3cret' }, config: { eventsFetchInterval: 50 } });

let hook: TestHook;
beforeAll(async () => {
  hook = await startHook();
  s.env.HOOK = hook.url;
});
afterAll(async () => {
  await hook?.close();
});

const rows = (sql: string) => sqlRows(s, sql);
const events = (trigger: string) => rows(`select id, delivered, error, tries from svc_catalog.event_log where trigger_name = '${trigger}' order by created_at`);
const invocations = async (trigger: string) => (await s.metadata({ type: 'pg_get_event_invocation_logs', args: { name: trigger } })).body as any[];

async function trigger(name: string, extra: Record<string, unknown>) {
  return s.metadata({ type: 'pg_create_event_trigger', args: { name, table: 'item', webhook: '{{HOOK}}/hook', insert: { columns: '*' }, ...extra } });
}

beforeEach(() => resetItemTrigger(s, hook));

describe('event trigger transforms', () => {
  it('rewrite method, URL, query parameters, headers and a Kriti body; stored and exported as Hasura exports them', async () => {
    const request_transform = {
      version: 2,
      template_engine: 'Kriti',
      method: 'PUT',
      url: '{{$base_url}}/{{$body.table.name}}',
      query_params: { id: '{{$body.event.data.new.id}}', op: '{{$body.event.op}}', dropped: 'null', flag: null },
      request_headers: { add_headers: { 'X-Name': 'n-{{$body.event.data.new.name}}', 'X-Static': 'replaced' }, remove_headers: ['X-Gone'] },
      body: { action: 'transform', template: '{"name": {{$body.event.data.new.name}}, "trigger": {{$body.trigger.name}}, "role": {{$session_variables?["x-svc-role"] ?? "none"}}}' },
    };
    const r = await trigger('rewrite', { headers: [{ name: 'X-Static', value: 'v' }, { name: 'X-Gone', value: 'g' }, { name: 'X-Secret', value_from_env: 'HEADER_SECRET' }], request_transform });
    expect(r.status, r.text).toBe(200);
    await s.runSql(`insert into item (name, qty) values ('ann', 1)`);
    const [got] = await hook.waitFor(1);
    expect(got!.method).toBe('PUT');
    expect(got!.url).toBe('/hook/item?id=1&op=INSERT&flag');
    expect(got!.headers['x-name']).toBe('n-ann');
    expect(got!.headers['x-static']).toBe('replaced');
    expect(got!.headers['x-secret']).toBe('s3cret');
    expect(got!.headers['x-gone']).toBeUndefined();
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.body).toEqual({ name: 'ann', trigger: 'rewrite', role: 'none' });
    await until(async () => (await events('rewrite'))[0]?.delivered === 't');
    // The invocation records the payload as the trigger produced it (before the transform).
    const [inv] = await invocations('rewrite');
    expect(inv.request.payload.event.data.new).toEqual({ id: 1, name: 'ann', qty: 1 });

    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const stored = exported.sources[0].tables[0].event_triggers[0];
    expect(Object.keys(stored)).toEqual(['name', 'definition', 'retry_conf', 'webhook', 'headers', 'request_transform']);
    expect(stored.request_transform).toEqual(request_transform);
    // Read back by replace_metadata as it was exported.
    const back = await s.metadata({ type: 'replace_metadata', args: exported });
    expect(back.status, back.text).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].tables[0].event_triggers[0]).toEqual(stored);
  });

  it('version 1 (body as template text, defaults filled in), form bodies, a removed body, and a response transform', async () => {
    // Version 1: the body is the template itself; the stored form gains version and engine.
    let r = await trigger('v1', { request_transform: { body: '{"op": {{$body.event.op}}}', request_headers: { remove_headers: ['user-agent'] } } });
    expect(r.status, r.text).toBe(200);
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    expect(md.sources[0].tables[0].event_triggers[0].request_transform).toEqual({
      version: 1,
      template_engine: 'Kriti',
      request_headers: { add_headers: {}, remove_headers: ['user-agent'] },
      body: '{"op": {{$body.event.op}}}',
    });
    await s.runSql(`insert into item (name) values ('a')`);
    let [got] = await hook.waitFor(1);
    expect(got!.body).toEqual({ op: 'INSERT' });
    expect(got!.method).toBe('POST');

    // x_www_form_urlencoded: fields escaped, Content-Type set.
    hook.received.length = 0;
    r = await trigger('v1', {
      replace: true,
      request_transform: { version: 2, body: { action: 'x_www_form_urlencoded', form_template: { name: '{{$body.event.data.new.name}}', 'a key': 'x&y=z é' } } },
    });
    expect(r.status, r.text).toBe(200);
    await s.runSql(`insert into item (name) values ('b c')`);
    [got] = await hook.waitFor(1);
    expect(got!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(got!.body).toBe('name=b%20c&a%20key=x%26y%3Dz%20%C3%A9');

    // A removed body with GET; the answer rewritten by a response transform.
    hook.received.length = 0;
    hook.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"n": 7}');
    };
    r = await trigger('v1', {
      replace: true,
      request_transform: { version: 2, method: 'GET', body: { action: 'remove' } },
      response_transform: { version: 2, body: { action: 'transform', template: '{"got": {{$body.n}}, "status": {{$response.status}}}' } },
    });
    expect(r.status, r.text).toBe(200);
    await s.runSql(`insert into item (name) values ('c')`);
    [got] = await hook.waitFor(1);
    expect(got!.method).toBe('GET');
    expect(got!.body).toBe('');
    await until(async () => (await events('v1')).some((e) => e.delivered === 't') && (await invocations('v1')).length >= 3);
    const inv = (await invocations('v1')).find((i: any) => i.response?.data?.body?.includes('got'));
    expect(JSON.parse(inv.response.data.body)).toEqual({ got: 7, status: 200 });
  });

  it('refuses transforms that do not parse, with Hasura\'s messages or the template\'s error, and changes nothing', async () => {
    const before = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const cases: [unknown, RegExp][] = [
      [{ version: 3 }, /expected 1 or 2, encountered 3/],
      [{ version: 2, body: { action: 'shout' } }, /invalid transform action/],
      [{ version: 2, body: '{}' }, /body: expected an object/],
      [{ version: 1, body: { action: 'remove' } }, /body: expected a template text/],
      [{ method: 'TRACE' }, /method must be GET, POST, PUT, PATCH or DELETE/],
      [{ template_engine: 'Handlebars' }, /expected "Kriti"/],
      [{ version: 2, body: { action: 'transform', template: '{"a": {{ range }}' } }, /request_transform: body: /],
      [{ url: '{{$base_url' }, /request_transform: url: unterminated/],
      [{ request_headers: { add_headers: { 'X-A': '{{ $body. }}' } } }, /request_transform: request_headers: add_headers.X-A: /],
    ];
    for (const [request_transform, message] of cases) {
      const r = await trigger('bad', { request_transform });
      expect(r.status, JSON.stringify(request_transform)).toBe(400);
      expect(r.body.error, JSON.stringify(request_transform)).toMatch(message);
    }
    const r = await trigger('bad', { response_transform: { version: 2, body: { action: 'transform', template: '{"a": 1' } } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/response_transform: body: /);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual(before);
  });

  it('a template that fails on an event is recorded as a failed invocation (request: no retry; response: retried), the worker goes on', async () => {
    // `head` of an empty string fails at delivery time, not at parse time.
    let r = await trigger('fails', { retry_conf: { num_retries: 3, interval_sec: 1 }, request_transform: { version: 2, url: '{{$base_url}}/{{ head($body.event.data.new.name) }}' } });
    expect(r.status, r.text).toBe(200);
    await s.runSql(`insert into item (name) values ('')`);
    const [ev] = await until(async () => {
      const e = await events('fails');
      return e[0]?.error === 't' && e;
    });
    expect(ev).toMatchObject({ delivered: 'f', error: 't', tries: '1' });
    expect(hook.received).toHaveLength(0);
    const [inv] = await invocations('fails');
    expect(inv.http_status).toBeNull();
    expect(inv.response.type).toBe('client_error');
    expect(JSON.parse(inv.response.data.message)).toEqual([{ error_code: 'Function Error', message: 'head: empty string' }]);
    // A URL template that gives no URL is Hasura's TransformationError.
    r = await trigger('fails', { replace: true, request_transform: { version: 2, url: '{{$body.event.data.new.name}}' } });
    expect(r.status, r.text).toBe(200);
    await s.runSql(`insert into item (name) values ('not a url')`);
    await until(async () => (await events('fails')).filter((e) => e.error === 't').length === 2);
    const msgs = (await invocations('fails')).map((i: any) => JSON.parse(i.response.data.message));
    expect(msgs).toContainEqual([{ error_code: 'TransformationError', message: 'Invalid URL: not a url' }]);

    // The same trigger still delivers events its template can take.
    await s.runSql(`insert into item (name) values ('${hook.url}/ok')`);
    const [got] = await hook.waitFor(1);
    expect(got!.url).toBe('/ok');

    // A response transform that fails makes the attempt a failure with status 500, retried.
    hook.received.length = 0;
    r = await trigger('fails', { replace: true, retry_conf: { num_retries: 1, interval_sec: 1 }, response_transform: { version: 2, body: { action: 'transform', template: '{{ toUpper($body.ok) }}' } } });
    expect(r.status, r.text).toBe(200);
    await s.runSql('delete from svc_catalog.event_invocation_logs');
    await s.runSql(`insert into item (name) values ('r')`);
    await hook.waitFor(2);
    await until(async () => (await invocations('fails')).length === 2);
    const retried = await invocations('fails');
    expect(retried.map((i: any) => i.http_status)).toEqual([500, 500]);
    expect(JSON.parse(retried[0].response.data.message)).toEqual([{ error_code: 'Type Error', message: 'toUpper: unexpected boolean' }]);
    await until(async () => (await events('fails')).filter((e) => e.error === 't').length === 3);
  });
});
