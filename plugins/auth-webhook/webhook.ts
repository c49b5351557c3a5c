/**
 * Webhook mode (`--auth-hook`, `--auth-hook-mode`), as Hasura v2's
 * (server/src-lib/Hasura/Server/Auth/WebHook.hs): GET forwards the client's headers (minus
 * hop-by-hop and body ones); POST sends `{headers, request}` where `request` is the GraphQL
 * request (`{query, variables, operationName}`, a list for a batch, null for other endpoints).
 * A 200 with a JSON object of `X-Svc-*` values (or Hasura's `X-Hasura-*`) is the session; its role
 * is `X-Svc-Role`.
 *
 * Note [The webhook never lets a request through]
 * 401 refuses (401 access-denied "Authentication hook unauthorized this request"). Anything else
 * refuses too: no answer within the timeout or a network error ("webhook authentication request
 * failed"), another status, a body that is not a JSON object of strings, an answer without a role
 * (500 "Invalid response from authorization hook..."). The log says why, with the URL and the
 * status, never the client's headers or the answer's body.
 *
 * Note [Caching webhook answers]
 * An answer that says how long it holds (`Cache-Control: max-age=N` / `s-maxage`, or `Expires`;
 * read from the JSON body's keys as Hasura does, else from the HTTP headers) is kept that long for
 * the same credentials: the key is a SHA-256 of the Authorization header, the Cookie header and the
 * X-Svc-Role header (the role a client asks for may change the hook's answer), and the mode. A
 * request without Authorization and Cookie is never cached (nothing identifies its caller). In
 * POST mode the hook sees the query; one that answers per query must not send a cache lifetime.
 * At most `MAX_ENTRIES` answers are kept; the oldest go first.
 */
import { createHash } from 'node:crypto';
import type { Session } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { cacheLifetimeMs } from '../../lib/http/expiry.js';
import { readTextLimited } from '../../lib/http/body.js';

export const MAX_ENTRIES = 10_000;

/** Not forwarded in GET mode: hop-by-hop (RFC 9110 7.6.1) and what describes the client's own
 * connection or body. */
const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade',
  'host', 'content-length', 'content-type', 'content-encoding', 'content-md5', 'expect', 'accept-encoding',
]);

export interface WebhookOptions {
  url: string;
  mode: 'GET' | 'POST';
  timeoutMs: number;
  maxBytes?: number;
}

interface Entry {
  session: Session;
  expiresAt: number;
}

export class WebhookAuth {
  private readonly cache = new Map<string, Entry>();
  /** Calls made to the hook (tests). */
  calls = 0;

  constructor(
    private readonly opts: WebhookOptions,
    private readonly log: Logger,
  ) {}

  async resolve(headers: ReadonlyMap<string, string>, request: unknown): Promise<Session> {
    const key = cacheKey(headers, this.opts.mode);
    if (key) {
      const hit = this.cache.get(key);
      if (hit && hit.expiresAt > Date.now()) return hit.session;
      if (hit) this.cache.delete(key);
    }
    const { session, lifetime } = await this.call(headers, request);
    if (key && lifetime !== undefined && lifetime > 0) {
      if (this.cache.size >= MAX_ENTRIES) this.evict();
      this.cache.set(key, { session, expiresAt: Date.now() + lifetime });
    }
    return session;
  }

  private evict() {
    const now = Date.now();
    for (const [k, e] of this.cache) if (e.expiresAt <= now) this.cache.delete(k);
    while (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
  }

  private async call(headers: ReadonlyMap<string, string>, request: unknown): Promise<{ session: Session; lifetime: number | undefined }> {
    const { url, mode, timeoutMs } = this.opts;
    this.calls++;
    const init: RequestInit = { method: mode, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' };
    if (mode === 'GET') {
      const h = new Headers();
      for (const [k, v] of headers) if (!NOT_FORWARDED.has(k)) h.append(k, v);
      init.headers = h;
    } else {
      init.headers = { 'content-type': 'application/json' };
      init.body = JSON.stringify({ headers: Object.fromEntries(headers), request: request ?? null });
    }
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, init);
      text = res.status === 200 ? await readTextLimited(res, this.opts.maxBytes ?? 1024 * 1024, () => new Error(`the answer is larger than ${this.opts.maxBytes ?? 1024 * 1024} bytes`)) : (await res.body?.cancel(), '');
    } catch (e) {
      const reason = e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e as Error).message;
      this.log.error('webhook-log', { message: 'webhook authentication request failed', url, method: mode, reason });
      throw new SvcError('unexpected', 'webhook authentication request failed', { status: 500 });
    }
    const refuse = (why: string, detail?: string): never => {
      this.log.error('webhook-log', { message: why, url, method: mode, status: res.status, ...(detail ? { reason: detail } : {}) });
      throw new SvcError('unexpected', detail ? `${why}: ${detail}` : why, { status: 500 });
    };
    if (res.status === 401) {
      this.log.info('webhook-log', { message: 'the authentication hook refused the request', url, method: mode, status: 401 });
      throw new SvcError('access-denied', 'Authentication hook unauthorized this request', { status: 401 });
    }
    if (res.status !== 200) refuse('Invalid response from authorization hook');
    let body: unknown;
    try {
      body = JSON.parse(text!);
    } catch {
      refuse('Invalid response from authorization hook', 'the body is not JSON');
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) refuse('Invalid response from authorization hook', 'expected a JSON object');
    const svc: Record<string, string> = {};
    const hasura: Record<string, string> = {};
    let cacheControl: string | undefined;
    let expires: string | undefined;
    for (const [k, val] of Object.entries(body as Record<string, unknown>)) {
      const name = k.toLowerCase();
      if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean') {
        if (name.startsWith('x-svc-') || name.startsWith('x-hasura-')) refuse('Invalid response from authorization hook', `the value of ${name} is not a string`);
        continue;
      }
      const text = String(val);
      if (name === 'cache-control') cacheControl = text;
      else if (name === 'expires') expires = text;
      else if (name.startsWith('x-svc-')) svc[name] = text;
      else if (name.startsWith('x-hasura-')) hasura[`x-svc-${name.slice('x-hasura-'.length)}`] = text;
    }
    const variables = { ...hasura, ...svc };
    const role = variables['x-svc-role']?.trim();
    if (!role) refuse('Invalid response from authorization hook', 'x-svc-role not found in the answer');
    variables['x-svc-role'] = role!;
    const lifetime = cacheLifetimeMs(cacheControl ?? res.headers.get('cache-control'), expires ?? res.headers.get('expires'));
    return { session: { role: role!, variables, isAdmin: role === 'admin' }, lifetime };
  }
}

function cacheKey(headers: ReadonlyMap<string, string>, mode: string): string | undefined {
  const auth = headers.get('authorization');
  const cookie = headers.get('cookie');
  if (auth === undefined && cookie === undefined) return undefined;
  return createHash('sha256').update(JSON.stringify([mode, auth ?? null, cookie ?? null, headers.get('x-svc-role') ?? null])).digest('base64');
}
