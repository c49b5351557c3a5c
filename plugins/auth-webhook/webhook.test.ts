/**
 * Webhook mode (issue 10) against a real loopback hook: GET forwards the client's headers, POST
 * sends {headers, request}; 200 is the session, 401 refuses, and slow, failing and malformed
 * answers refuse too (never let the request through); answers with a lifetime are cached per
 * credentials. Then the endpoints' statuses through the app.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../core/auth/session.js';
import { SvcError } from '../../core/errors.js';
import { captureLogger, startServer, type TestServer } from '../../test/helpers.js';
import { webhookMode } from './index.js';

const hookOf = (a: Authenticator) => (a.mode as ReturnType<typeof webhookMode>).hook;

const SECRET = 'hook-admin-secret';

interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Handler = (req: Seen, res: ServerResponse) => void;

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

const ROUTES: Record<string, Handler> = {
  '/ok': (_, res) => json(res, 200, { 'X-Hasura-Role': 'user', 'X-Hasura-User-Id': '42', 'X-Svc-Org': 'acme', other: 'ignored' }),
  '/by-token': (req, res) => {
    const a = req.headers.authorization;
    if (a === 'Bearer good') return json(res, 200, { 'X-Svc-Role': 'user', 'X-Svc-User-Id': '1', 'Cache-Control': 'max-age=60' });
    if (a === 'Bearer other') return json(res, 200, { 'X-Svc-Role': 'user', 'X-Svc-User-Id': '2' }, { 'cache-control': 'max-age=60' });
    if (a === 'Bearer admin') return json(res, 200, { 'X-Svc-Role': 'admin' });
    if (a === 'Bearer short') return json(res, 200, { 'X-Svc-Role': 'user', Expires: new Date(Date.now() + 2000).toUTCString() });
    if (a === 'Bearer nostore') return json(res, 200, { 'X-Svc-Role': 'user', 'Cache-Control': 'no-store' });
    return json(res, 401, { message: 'who are you' });
  },
  '/unauthorized': (_, res) => json(res, 401, {}),
  '/forbidden': (_, res) => json(res, 403, {}),
  '/fail': (_, res) => json(res, 500, { error: 'boom' }),
  '/bad-gateway': (_, res) => json(res, 502, 'bad gateway'),
  '/redirect': (_, res) => {
    res.writeHead(302, { location: '/ok' });
    res.end();
  },
  '/not-json': (_, res) => json(res, 200, '<html>hello</html>'),
  '/empty': (_, res) => json(res, 200, ''),
  '/list': (_, res) => json(res, 200, [{ 'X-Svc-Role': 'user' }]),
  '/null': (_, res) => json(res, 200, 'null'),
  '/no-role': (_, res) => json(res, 200, { 'X-Svc-User-Id': '1' }),
  '/object-value': (_, res) => json(res, 200, { 'X-Svc-Role': 'user', 'X-Svc-Ids': [1, 2] }),
  '/number-value': (_, res) => json(res, 200, { 'X-Svc-Role': 'user', 'X-Svc-User-Id': 7 }),
  '/huge': (_, res) => json(res, 200, { 'X-Svc-Role': 'user', pad: 'p'.repeat(2 * 1024 * 1024) }),
  '/slow': (_, res) => {
    setTimeout(() => json(res, 200, { 'X-Svc-Role': 'user' }), 1500).unref();
  },
  '/hang': () => {},
  '/reset': (_, res) => res.socket?.destroy(),
  '/echo': (req, res) => json(res, 200, { 'X-Svc-Role': 'user', 'X-Svc-Seen': JSON.stringify({ method: req.method, headers: req.headers, body: req.body }) }),
};

describe('webhook mode', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  const logs: Record<string, any>[] = [];
  const log = captureLogger(logs);

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const s: Seen = { method: req.method!, path: req.url!, headers: req.headers, body };
        seen.push(s);
        (ROUTES[req.url!] ?? ((_, r) => json(r, 404, {})))(s, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const auth = (path: string, mode: 'GET' | 'POST' = 'GET', extra: { unauthorizedRole?: string; timeoutMs?: number } = {}) =>
    new Authenticator({ adminSecret: SECRET, unauthorizedRole: extra.unauthorizedRole }, webhookMode({ url: base + path, mode, timeoutMs: extra.timeoutMs ?? 500 }, log));
  const resolve = async (a: Authenticator, headers: Record<string, string>, request?: unknown) => {
    try {
      const s = await a.resolve(Object.entries(headers), request);
      return { role: s.role, variables: s.variables, isAdmin: s.isAdmin };
    } catch (e) {
      if (e instanceof SvcError) return { status: e.status, code: e.code, error: e.message };
      throw e;
    }
  };

  it('GET: 200 is the session (X-Hasura-* read as X-Svc-*); the client headers are forwarded without hop-by-hop ones; client X-Svc-* headers are not variables', async () => {
    const a = auth('/ok');
    seen.length = 0;
    const r = await resolve(a, { authorization: 'Bearer t', 'x-svc-user-id': '999', connection: 'keep-alive', 'proxy-authorization': 'p', te: 'trailers', 'x-custom': 'c' });
    expect(r).toEqual({ role: 'user', variables: { 'x-svc-user-id': '42', 'x-svc-org': 'acme', 'x-svc-role': 'user' }, isAdmin: false });
    expect(seen[0]!.method).toBe('GET');
    expect(seen[0]!.headers).toMatchObject({ authorization: 'Bearer t', 'x-custom': 'c', 'x-svc-user-id': '999' });
    expect(seen[0]!.headers['proxy-authorization']).toBeUndefined();
    expect(seen[0]!.headers.te).toBeUndefined();
  });

  it('POST: sends {headers, request: {query, variables, operationName}}', async () => {
    const a = auth('/ok', 'POST');
    seen.length = 0;
    const request = { query: 'query Q($id: Int) { a(id: $id) { id } }', variables: { id: 1 }, operationName: 'Q' };
    expect(await resolve(a, { authorization: 'Bearer t', 'x-svc-role': 'user' }, request)).toMatchObject({ role: 'user' });
    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({ headers: { authorization: 'Bearer t', 'x-svc-role': 'user' }, request });
    seen.length = 0;
    await resolve(a, { authorization: 'Bearer t' });
    expect(JSON.parse(seen[0]!.body)).toEqual({ headers: { authorization: 'Bearer t' }, request: null });
  });

  it('401 refuses with 401 access-denied; the admin secret still works without calling the hook; a wrong secret is 401', async () => {
    const a = auth('/unauthorized');
    expect(await resolve(a, { authorization: 'Bearer t' })).toEqual({ status: 401, code: 'access-denied', error: 'Authentication hook unauthorized this request' });
    seen.length = 0;
    expect(await resolve(a, { 'x-svc-admin-secret': SECRET, 'x-svc-role': 'editor' })).toMatchObject({ role: 'editor', isAdmin: false });
    expect(await resolve(a, { 'x-svc-admin-secret': SECRET })).toMatchObject({ role: 'admin', isAdmin: true });
    expect(await resolve(a, { 'x-svc-admin-secret': 'wrong', authorization: 'Bearer t' })).toMatchObject({ status: 401, code: 'access-denied', error: 'invalid x-svc-admin-secret/x-svc-access-key' });
    expect(seen).toHaveLength(0);
  });

  // Every answer that is not a 200 with a role, or a 401, refuses with a 500: never a session.
  const refusals: [string, string, RegExp][] = [
    ['/forbidden', '403', /^Invalid response from authorization hook$/],
    ['/fail', '500', /^Invalid response from authorization hook$/],
    ['/bad-gateway', '502', /^Invalid response from authorization hook$/],
    ['/redirect', 'a redirect (not followed)', /^webhook authentication request failed$/],
    ['/not-json', 'a body that is not JSON', /^Invalid response from authorization hook: the body is not JSON$/],
    ['/empty', 'an empty body', /^Invalid response from authorization hook: the body is not JSON$/],
    ['/list', 'a JSON list', /^Invalid response from authorization hook: expected a JSON object$/],
    ['/null', 'JSON null', /^Invalid response from authorization hook: expected a JSON object$/],
    ['/no-role', 'no role', /^Invalid response from authorization hook: x-svc-role not found in the answer$/],
    ['/object-value', 'a variable that is a list', /^Invalid response from authorization hook: the value of x-svc-ids is not a string$/],
    ['/huge', 'a 2 MiB answer', /^webhook authentication request failed$/],
    ['/slow', 'an answer after the timeout', /^webhook authentication request failed$/],
    ['/hang', 'no answer at all', /^webhook authentication request failed$/],
    ['/reset', 'a reset connection', /^webhook authentication request failed$/],
    ['/missing', '404', /^Invalid response from authorization hook$/],
  ];
  it.each(refusals)('%s (%s) refuses with 500 and logs why', async (path, _what, message) => {
    for (const mode of ['GET', 'POST'] as const) {
      logs.length = 0;
      const t0 = Date.now();
      const r = await resolve(auth(path, mode, { timeoutMs: 300 }), { authorization: 'Bearer secret-token-value' }, { query: '{ a }' });
      expect(r).toMatchObject({ status: 500, code: 'unexpected' });
      expect((r as { error: string }).error).toMatch(message);
      expect(Date.now() - t0).toBeLessThan(1400);
      const line = logs.find((l) => l.type === 'webhook-log' && l.level === 'error');
      expect(line?.detail).toMatchObject({ url: base + path, method: mode });
      expect(JSON.stringify(logs)).not.toContain('secret-token-value');
    }
  });

  it('a number value is taken as its text', async () => {
    expect(await resolve(auth('/number-value'), { authorization: 'Bearer t' })).toMatchObject({ variables: { 'x-svc-user-id': '7' } });
  });

  it('an unreachable hook refuses', async () => {
    const a = new Authenticator({ adminSecret: SECRET }, webhookMode({ url: 'http://127.0.0.1:1/hook', mode: 'GET', timeoutMs: 500 }, log));
    expect(await resolve(a, { authorization: 'Bearer t' })).toMatchObject({ status: 500, error: 'webhook authentication request failed' });
  });

  it('caches an answer with a lifetime per Authorization (and X-Svc-Role), not one without, and forgets it when it expires', async () => {
    const a = auth('/by-token');
    const calls = () => hookOf(a).calls;
    const n = calls();
    expect(await resolve(a, { authorization: 'Bearer good' })).toMatchObject({ variables: { 'x-svc-user-id': '1' } });
    expect(await resolve(a, { authorization: 'Bearer good' })).toMatchObject({ variables: { 'x-svc-user-id': '1' } });
    expect(calls()).toBe(n + 1);
    // Another token is another entry; the lifetime may come from the HTTP header too.
    expect(await resolve(a, { authorization: 'Bearer other' })).toMatchObject({ variables: { 'x-svc-user-id': '2' } });
    expect(await resolve(a, { authorization: 'Bearer other' })).toMatchObject({ variables: { 'x-svc-user-id': '2' } });
    expect(calls()).toBe(n + 2);
    // Another requested role is another entry.
    await resolve(a, { authorization: 'Bearer good', 'x-svc-role': 'x' });
    expect(calls()).toBe(n + 3);
    // No lifetime, or no-store: asked every time; a refusal is never cached.
    await resolve(a, { authorization: 'Bearer admin' });
    await resolve(a, { authorization: 'Bearer admin' });
    await resolve(a, { authorization: 'Bearer nostore' });
    await resolve(a, { authorization: 'Bearer nostore' });
    expect(await resolve(a, { authorization: 'Bearer bad' })).toMatchObject({ status: 401 });
    expect(await resolve(a, { authorization: 'Bearer bad' })).toMatchObject({ status: 401 });
    expect(calls()).toBe(n + 9);
    // Expires two seconds ahead (HTTP dates have whole seconds): cached, then asked again.
    await resolve(a, { authorization: 'Bearer short' });
    await resolve(a, { authorization: 'Bearer short' });
    expect(calls()).toBe(n + 10);
    await new Promise((r) => setTimeout(r, 2100));
    await resolve(a, { authorization: 'Bearer short' });
    expect(calls()).toBe(n + 11);
  });

  it('the unauthorized role: requests without Authorization or Cookie get it without calling the hook; others still ask the hook', async () => {
    const a = auth('/by-token', 'GET', { unauthorizedRole: 'anonymous' });
    const n = hookOf(a).calls;
    expect(await resolve(a, { 'x-svc-user-id': '3' })).toEqual({ role: 'anonymous', variables: { 'x-svc-user-id': '3', 'x-svc-role': 'anonymous' }, isAdmin: false });
    expect(hookOf(a).calls).toBe(n);
    expect(await resolve(a, { authorization: 'Bearer bad' })).toMatchObject({ status: 401 });
    expect(await resolve(a, { authorization: 'Bearer admin' })).toMatchObject({ role: 'admin', isAdmin: true });
  });

  describe('through the server', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startServer({ config: { adminSecret: SECRET, authHook: `${base}/echo`, authHookMode: 'POST', authHookTimeout: 500 } });
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('/v1/graphql sends the GraphQL request to the hook and runs as its role; refusals are 200 in the GraphQL shape', async () => {
      seen.length = 0;
      const body = { query: 'query Q { __typename }', operationName: 'Q', variables: {} };
      expect(await s.request('POST', '/v1/graphql', body, { authorization: 'Bearer abc' })).toMatchObject({ status: 200, body: { data: { __typename: 'query_root' } } });
      expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ headers: { authorization: 'Bearer abc' }, request: body });
      // A batch is sent as the list.
      await s.request('POST', '/v1/graphql', [body, body], { authorization: 'Bearer abc' });
      expect(JSON.parse(seen.at(-1)!.body).request).toEqual([body, body]);
    });

    it('a failing hook refuses: 500 on the metadata API, 200 with errors on /v1/graphql; 401 from the hook is 401', async () => {
      const failing = await startServer({ config: { adminSecret: SECRET, authHook: `${base}/fail`, authHookTimeout: 500 } });
      const unauthorized = await startServer({ config: { adminSecret: SECRET, authHook: `${base}/unauthorized` } });
      try {
        expect(await failing.metadata({ type: 'export_metadata', args: {} }, { authorization: 'Bearer x' })).toMatchObject({
          status: 500,
          body: { code: 'unexpected', error: 'Invalid response from authorization hook' },
        });
        expect(await failing.request('POST', '/v1/graphql', { query: '{ __typename }' }, { authorization: 'Bearer x' })).toMatchObject({
          status: 200,
          body: { errors: [{ message: 'Invalid response from authorization hook', extensions: { code: 'unexpected' } }] },
        });
        expect(await unauthorized.metadata({ type: 'export_metadata', args: {} }, { authorization: 'Bearer x' })).toMatchObject({
          status: 401,
          body: { code: 'access-denied', error: 'Authentication hook unauthorized this request' },
        });
        expect((await unauthorized.metadata({ type: 'export_metadata', args: {} }, { 'x-svc-admin-secret': SECRET })).status).toBe(200);
        const cfg = await unauthorized.request('GET', '/v1alpha1/config', undefined, { 'x-svc-admin-secret': SECRET });
        expect(cfg.body).toMatchObject({ is_auth_hook_set: true, is_jwt_set: false, jwt: [] });
      } finally {
        await failing.stop();
        await unauthorized.stop();
      }
    });
  });
});
