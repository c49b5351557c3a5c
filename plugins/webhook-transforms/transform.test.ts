/**
 * The transforms shared by actions and event triggers (transform.ts): parsing Hasura's stored
 * forms, applying them to a request and a response, Kriti's functions, and the
 * `test_webhook_transform` operation with its errors.
 */
import { describe, expect, it } from 'vitest';
import * as v from '../../core/valibot.js';
import { useServer } from '../../test/helpers.js';
import { compileTemplate, KritiError } from './kriti.js';
import {
  applyRequestTransform,
  applyResponseTransform,
  compileRequestTransform,
  compileResponseTransform,
  RequestTransformSchema,
  ResponseTransformSchema,
  TransformError,
} from './transform.js';

const req = (t: unknown) => compileRequestTransform(v.parse(RequestTransformSchema, t));
const input = { url: 'http://hook.test/base?x=1', payload: { a: { b: 'B', n: 2 }, list: [1, 2] }, sessionVariables: { 'x-svc-role': 'user', 'x-svc-user-id': '7' }, headers: [['X-Keep', 'k'], ['X-Drop', 'd']] as [string, string][] };

describe('request transforms', () => {
  it('leave what they do not name as it was', () => {
    const r = applyRequestTransform(req({ version: 2 }), input);
    expect(r.call).toEqual({ method: 'POST', url: input.url, body: JSON.stringify(input.payload), headers: input.headers });
  });

  it('see $body, $session_variables, $base_url and $query_params, each part computed from the original request', () => {
    const r = applyRequestTransform(
      req({
        version: 2,
        method: 'patch',
        url: 'http://hook.test/{{$body.a.b}}',
        query_params: { q: '{{$query_params[0][1]}}-{{getSessionVariable("X-Svc-User-Id")}}' },
        request_headers: { add_headers: { 'x-keep': 'new', 'X-Role': '{{$session_variables["x-svc-role"]}}' }, remove_headers: ['x-drop'] },
        body: { action: 'transform', template: '{"url": {{$base_url}}, "n": {{$body.a.n}}}' },
      }),
      input,
    );
    expect(r.call.method).toBe('PATCH');
    expect(r.call.url).toBe('http://hook.test/B?q=1-7');
    expect(r.call.headers).toEqual([['x-keep', 'new'], ['X-Role', 'user']]);
    expect(JSON.parse(r.call.body)).toEqual({ url: input.url, n: 2 });
    // What a response transform sees as $request.
    expect((r.context as any).body).toEqual({ body: input.payload, session_variables: input.sessionVariables, base_url: input.url, query_params: [['x', '1']] });
  });

  it('take the query string as one template', () => {
    expect(applyRequestTransform(req({ query_params: '?a={{$body.a.n}}&b=c' }), input).call.url).toBe('http://hook.test/base?a=2&b=c');
  });

  it('collect every failing part in one error (Hasura\'s TransformErrorBundle)', () => {
    const t = req({ version: 2, url: '{{$nope}}', body: { action: 'transform', template: '{{ toUpper($body.a.n) }}' } });
    let err: TransformError | undefined;
    try {
      applyRequestTransform(t, input);
    } catch (e) {
      err = e as TransformError;
    }
    expect(err).toBeInstanceOf(TransformError);
    expect(err!.bundle).toEqual([
      { error_code: 'Invalid Path Error', message: 'unbound variable "$nope"' },
      { error_code: 'Type Error', message: 'toUpper: unexpected number' },
    ]);
    expect(err!.message).toBe('url: unbound variable "$nope"; body: toUpper: unexpected number');
  });

  it('refuse templates that do not parse when compiled, naming the part', () => {
    expect(() => req({ url: '{{ $body.', query_params: { k: '{{ x' } })).toThrow(/^url: .*; query_params: k: /);
    expect(() => req({ version: 2, body: { action: 'x_www_form_urlencoded', form_template: { f: '{{' } } })).toThrow(/^body: form_template.f: /);
    // Nesting deeper than the stack is a parse error, not a crash.
    expect(() => req({ body: `{{ ${'('.repeat(200_000)}1${')'.repeat(200_000)} }}` })).toThrow('body: the template is nested too deep');
  });

  it('parse Hasura\'s forms with its messages', () => {
    const fail = (t: unknown) => {
      const r = v.safeParse(RequestTransformSchema, t);
      return r.success ? undefined : r.issues[0].message;
    };
    expect(fail({ version: 3 })).toBe('expected 1 or 2, encountered 3');
    expect(fail({ version: 2, body: { action: 'nope' } })).toBe('body: invalid transform action');
    expect(fail({ version: 2, body: { action: 'transform' } })).toBe('body: key "template" not found');
    expect(fail({ version: 2, body: { action: 'x_www_form_urlencoded', form_template: { a: 1 } } })).toBe('body: "form_template" must be an object of text templates');
    expect(fail({ query_params: 3 })).toMatch(/query_params/);
    expect(v.parse(ResponseTransformSchema, { body: '{{$body}}' })).toEqual({ version: 1, template_engine: 'Kriti', body: '{{$body}}' });
    expect(v.parse(RequestTransformSchema, { version: 2, template_engine: 'Kriti', request_headers: {} })).toEqual({ version: 2, template_engine: 'Kriti', request_headers: { add_headers: {}, remove_headers: [] } });
  });
});

describe('response transforms', () => {
  it('see $body, $request and $response; remove gives null; a form gives its text', () => {
    const t = compileResponseTransform(v.parse(ResponseTransformSchema, { version: 2, body: { action: 'transform', template: '{"v": {{$body.v}}, "s": {{$response.status}}, "r": {{$request}}, "who": {{getSessionVariable("x-svc-role")}}}' } }));
    expect(applyResponseTransform(t, { body: { v: 1 }, status: 201, request: null, sessionVariables: { 'x-svc-role': 'u' } })).toEqual({ v: 1, s: 201, r: null, who: 'u' });
    expect(applyResponseTransform(compileResponseTransform({ version: 2, template_engine: 'Kriti', body: { action: 'remove' } }), { body: 1, status: 200, request: null, sessionVariables: null })).toBeNull();
    expect(applyResponseTransform(compileResponseTransform({ version: 2, template_engine: 'Kriti', body: { action: 'x_www_form_urlencoded', form_template: { a: '{{$body}}' } } }), { body: 'x y', status: 200, request: null, sessionVariables: null })).toBe('a=x%20y');
    expect(() => applyResponseTransform(t, { body: {}, status: 200, request: null, sessionVariables: null })).toThrow('Session variable "x-svc-role" not found');
  });
});

describe('kriti functions', () => {
  const r = (t: string, body?: unknown) => compileTemplate(t).render({ $body: body });
  it('compute as Kriti does', () => {
    expect(r('{{ inverse([1, 2]) }}'.replace('[1, 2]', '$body'), [1, 2])).toEqual([2, 1]);
    expect(r('[{{ head($body) }}, {{ tail($body) }}, {{ toTitle("hello world") }}, {{ toCaseFold("ABC") }}, {{ escapeUri("a b&c") }}]', [1, 2, 3])).toEqual([1, [2, 3], 'Hello World', 'abc', 'a%20b%26c']);
    expect(r('{{ fromPairs(toPairs($body)) }}', { a: 1, b: null })).toEqual({ a: 1, b: null });
    expect(r('{{ removeNulls($body) }}', { a: 1, b: null })).toEqual({ a: 1 });
    expect(r('{{ concat($body) }}', [[1], [2, 3]])).toEqual([1, 2, 3]);
    expect(r('{{ concat($body) }}', ['a', 'b'])).toBe('ab');
    expect(r('{{ $body?[0]?.x }}', [{ x: 5 }])).toBe(5);
  });
  it('fail with Kriti\'s error codes', () => {
    const code = (t: string, body?: unknown) => {
      try {
        r(t, body);
      } catch (e) {
        return (e as KritiError).code;
      }
      return undefined;
    };
    expect(code('{{ head($body) }}', [])).toBe('Function Error');
    expect(code('{{ toUpper($body) }}', 1)).toBe('Type Error');
    expect(code('{{ $x }}')).toBe('Invalid Path Error');
    expect(code('{{ nope($body) }}')).toBe('Function Error');
  });
});

describe('test_webhook_transform', () => {
  const s = useServer('', {});
  const run = (args: Record<string, unknown>) => s.metadata({ type: 'test_webhook_transform', args });

  it('answers the request the transform makes of the sample, with the sample environment', async () => {
    const r = await run({
      webhook_url: '{{BASE}}/api',
      env: { BASE: 'http://example.test' },
      body: { user: { id: 3, name: 'ann' } },
      session_variables: { 'X-Svc-Role': 'user' },
      request_headers: [['X-Keep', 'k']],
      request_transform: {
        version: 2,
        method: 'PUT',
        url: '{{$base_url}}/users/{{$body.user.id}}',
        query_params: { role: '{{$session_variables["x-svc-role"]}}' },
        request_headers: { add_headers: { 'X-Name': '{{$body.user.name}}' }, remove_headers: [] },
        body: { action: 'transform', template: '{"name": {{$body.user.name}}}' },
      },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ webhook_url: 'http://example.test/api/users/3?role=user', method: 'PUT', headers: [['x-keep', 'k'], ['x-name', 'ann']], body: { name: 'ann' } });
    const form = await run({ webhook_url: { from_env: 'URL' }, env: { URL: 'http://h.test' }, body: { a: 'x y' }, request_transform: { version: 2, body: { action: 'x_www_form_urlencoded', form_template: { a: '{{$body.a}}' } } } });
    expect(form.body).toEqual({ webhook_url: 'http://h.test', method: 'POST', headers: [['content-type', 'application/x-www-form-urlencoded']], body: 'a=x%20y' });
  });

  it('refuses a missing sample variable, a failing template and a bad transform, in Hasura\'s shapes', async () => {
    let r = await run({ webhook_url: '{{SECRET}}/x', body: {}, request_transform: { version: 2 } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'not-found', path: '$.args.webhook_url' });
    expect(r.body.error).toMatch(/^Missing Env Var: SECRET\. For security reasons/);
    r = await run({ webhook_url: { from_env: 'NOPE' }, body: {}, request_transform: {} });
    expect(r.body).toMatchObject({ code: 'not-found', error: 'Missing Env Var' });
    r = await run({ webhook_url: 'http://h.test', body: {}, request_transform: { version: 2, body: { action: 'transform', template: '{{ $body.x.y ?? toUpper(1) }}' } } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'validation-failed', error: 'request transform validation failed' });
    r = await run({ webhook_url: 'http://h.test', body: {}, request_transform: { version: 2, body: { action: 'transform', template: '{"a": ' } } });
    expect(r.body).toMatchObject({ code: 'validation-failed', error: 'request transform validation failed' });
    r = await run({ webhook_url: 'http://h.test', body: {}, request_transform: { version: 7 } });
    expect(r.body).toMatchObject({ code: 'parse-failed', error: 'expected 1 or 2, encountered 7' });
    r = await run({ webhook_url: 'not a url', body: {}, request_transform: {} });
    expect(r.body).toMatchObject({ code: 'validation-failed' });
    // Admins only.
    r = await s.metadata({ type: 'test_webhook_transform', args: { webhook_url: 'http://h.test', body: {}, request_transform: {} } }, { 'X-Svc-Role': 'user' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('access-denied');
  });
});
