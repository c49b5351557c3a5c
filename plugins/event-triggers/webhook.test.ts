/**
 * The webhook helpers other plugins reuse (webhook.ts, exported from index.ts), without a
 * database: POST with a timeout, the response cut at a limit, Retry-After, retry decisions,
 * configuration from the environment, invocation records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as v from '../../core/valibot.js';
import {
  EnvError,
  HeaderConfSchema,
  invocationRequest,
  invocationResponse,
  nextAttempt,
  parseRetryAfter,
  postWebhook,
  resolveHeaders,
  resolveUrlTemplate,
  Semaphore,
} from './index.js';
import { startHook, type TestHook } from './hook.js';

let hook: TestHook;
beforeAll(async () => {
  hook = await startHook();
});
afterAll(async () => {
  await hook.close();
});

describe('postWebhook', () => {
  it('POSTs JSON with the given headers and reads the answer', async () => {
    hook.answer = (_r, res) => {
      res.writeHead(201, { 'x-answer': 'yes', 'retry-after': '7' });
      res.end('created');
    };
    const r = await postWebhook({ url: `${hook.url}/p?q=1`, body: '{"a":1}', headers: [['X-Custom', 'c']], timeoutMs: 2000 });
    const got = hook.received.at(-1)!;
    expect(got.body).toEqual({ a: 1 });
    expect(got.headers).toMatchObject({ 'content-type': 'application/json', 'x-custom': 'c', 'content-length': '7' });
    expect(r).toMatchObject({ status: 201, ok: true, body: 'created', truncated: false, retryAfterSec: 7 });
    expect(r.headers).toContainEqual(['x-answer', 'yes']);
    expect(r.error).toBeUndefined();
  });

  it('a non-2xx answer is not ok; a redirect is not followed', async () => {
    hook.answer = (_r, res) => {
      res.writeHead(302, { location: '/elsewhere' });
      res.end();
    };
    expect(await postWebhook({ url: hook.url, body: '{}', headers: [], timeoutMs: 2000 })).toMatchObject({ status: 302, ok: false });
  });

  it('cuts a webhook that does not answer, or answers too slowly, at the timeout', async () => {
    hook.answer = () => {};
    const r = await postWebhook({ url: hook.url, body: '{}', headers: [], timeoutMs: 300 });
    expect(r).toMatchObject({ ok: false, error: 'timeout' });
    expect(r.status).toBeUndefined();
    expect(r.durationMs).toBeGreaterThanOrEqual(290);
    expect(r.durationMs).toBeLessThan(1500);
    // Headers at once, then a body that trickles.
    hook.answer = (_r, res) => {
      res.writeHead(200);
      res.write('a');
    };
    expect(await postWebhook({ url: hook.url, body: '{}', headers: [], timeoutMs: 300 })).toMatchObject({ status: 200, ok: false, error: 'timeout' });
  });

  it('reads at most maxBodyBytes of the answer', async () => {
    hook.answer = (_r, res) => {
      res.writeHead(200);
      res.end('é'.repeat(100_000));
    };
    const r = await postWebhook({ url: hook.url, body: '{}', headers: [], timeoutMs: 5000, maxBodyBytes: 1001 });
    expect(r).toMatchObject({ status: 200, ok: true, truncated: true });
    expect(Buffer.byteLength(r.body)).toBeLessThanOrEqual(1003);
  });

  it('a refused connection, a bad URL, a bad header and an abort are results, not exceptions', async () => {
    expect(await postWebhook({ url: 'http://127.0.0.1:1/', body: '{}', headers: [], timeoutMs: 2000 })).toMatchObject({ ok: false, error: expect.stringContaining('ECONNREFUSED') });
    expect(await postWebhook({ url: 'nope', body: '{}', headers: [], timeoutMs: 2000 })).toMatchObject({ ok: false, error: expect.stringContaining('invalid webhook URL') });
    expect(await postWebhook({ url: 'ftp://x/', body: '{}', headers: [], timeoutMs: 2000 })).toMatchObject({ ok: false, error: 'invalid webhook URL: unsupported protocol "ftp:"' });
    expect(await postWebhook({ url: hook.url, body: '{}', headers: [['X-Bad', 'a\nb']], timeoutMs: 2000 })).toMatchObject({ ok: false });
    hook.answer = () => {};
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    expect(await postWebhook({ url: hook.url, body: '{}', headers: [], timeoutMs: 5000, signal: ctl.signal })).toMatchObject({ ok: false, error: 'aborted' });
  });
});

describe('retries', () => {
  it('Retry-After: seconds or an HTTP date', () => {
    expect(parseRetryAfter('120')).toBe(120);
    expect(parseRetryAfter(' 3 ')).toBe(3);
    expect(parseRetryAfter('0')).toBeUndefined();
    expect(parseRetryAfter('-1')).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(parseRetryAfter('Mon, 01 Jan 2024 00:01:00 GMT', now)).toBe(60);
    expect(parseRetryAfter('Mon, 01 Jan 2023 00:01:00 GMT', now)).toBeUndefined();
  });

  it('num_retries bounds the attempts; Retry-After sets the delay', () => {
    const policy = { numRetries: 2, intervalSec: 10 };
    expect(nextAttempt(policy, 0)).toEqual({ retryInSec: 10 });
    expect(nextAttempt(policy, 1, 3)).toEqual({ retryInSec: 3 });
    expect(nextAttempt(policy, 2, 3)).toEqual({ error: true });
    expect(nextAttempt({ numRetries: 0, intervalSec: 10 }, 0)).toEqual({ error: true });
  });
});

describe('configuration from the environment', () => {
  const env = { HOST: 'http://h', SECRET: 's' };
  it('URL templates and headers', () => {
    expect(resolveUrlTemplate('{{HOST}}/a/{{SECRET}}', env)).toBe('http://h/a/s');
    expect(resolveUrlTemplate('http://plain', env)).toBe('http://plain');
    expect(() => resolveUrlTemplate('{{A}}/{{B}}', env)).toThrow(new EnvError('Value for environment variables not found: A, B'));
    expect(resolveHeaders([{ name: 'a', value: '1' }, { name: 'b', value_from_env: 'SECRET' }], env)).toEqual([['a', '1'], ['b', 's']]);
    expect(() => resolveHeaders([{ name: 'b', value_from_env: 'NOPE' }], env)).toThrow("environment variable 'NOPE' not set");
  });

  it('HeaderConf as Hasura parses it', () => {
    expect(v.parse(HeaderConfSchema, { name: 'a', value: 'b' })).toEqual({ name: 'a', value: 'b' });
    expect(v.parse(HeaderConfSchema, { name: 'a', value_from_env: 'E', value: null })).toEqual({ name: 'a', value_from_env: 'E' });
    const issue = (x: unknown) => (v.safeParse(HeaderConfSchema, x) as { issues?: { message: string }[] }).issues?.[0]?.message;
    expect(issue({ name: 'a' })).toBe('expecting value or value_from_env keys');
    expect(issue([])).toBe('expecting object for headers');
  });
});

describe('invocation records and the semaphore', () => {
  it('records as Hasura does (version 2)', () => {
    expect(invocationRequest({ x: 1 }, [{ name: 'a', value_from_env: 'E' }])).toEqual({ payload: { x: 1 }, headers: [{ name: 'a', value_from_env: 'E' }], version: '2' });
    const ok = { status: 200, ok: true, headers: [['a', 'b']] as [string, string][], body: 'fine', truncated: false, durationMs: 1 };
    expect(invocationResponse(ok)).toEqual({ type: 'webhook_response', data: { status: 200, body: 'fine', headers: [{ name: 'a', value: 'b' }] }, version: '2' });
    expect(invocationResponse({ ...ok, status: 500, ok: false, body: 'boom' })).toEqual({ type: 'client_error', data: { message: 'boom' }, version: '2' });
    expect(invocationResponse({ ...ok, status: undefined, ok: false, body: '', error: 'timeout' })).toEqual({
      type: 'client_error',
      data: { message: 'the webhook did not answer within the timeout' },
      version: '2',
    });
  });

  it('Semaphore: at most n holders, waiters in order', async () => {
    const s = new Semaphore(2);
    expect(s.tryAcquire()).toBe(true);
    expect(s.tryAcquire()).toBe(true);
    expect(s.tryAcquire()).toBe(false);
    const order: number[] = [];
    const a = s.acquire().then(() => order.push(1));
    const b = s.acquire().then(() => order.push(2));
    s.release();
    s.release();
    await Promise.all([a, b]);
    expect(order).toEqual([1, 2]);
    expect(s.available).toBe(0);
  });
});
