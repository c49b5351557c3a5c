/**
 * Keys from a `jwk_url`: fetched when first needed, kept for the lifetime its answer gives
 * (Cache-Control max-age / Expires), refreshed when that runs out, and fetched again when a token
 * names a `kid` the set does not have (keys rotated), at most once per cooldown.
 *
 * Note [A failing JWK fetch]
 * A failed refresh (network error, timeout, non-2xx, not a JWK set) keeps the last good keys: an
 * identity provider that is down for a minute must not log every user out. It is logged (URL,
 * status, reason; never the body, which holds the keys) and retried no sooner than `retryMs`
 * (Hasura retries after 60 s), so a dead endpoint does not get a request per client request.
 * Before any fetch succeeded there are no keys, and every token is refused.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { Logger } from '../../core/log.js';
import { cacheLifetimeMs } from '../../lib/http/expiry.js';
import { readTextLimited } from '../../lib/http/body.js';

type Getter = ReturnType<typeof createLocalJWKSet>;

export interface JwkSourceOptions {
  timeoutMs?: number;
  /** Wait after a failed fetch before the next one. */
  retryMs?: number;
  /** Least time between two fetches caused by an unknown `kid`. */
  cooldownMs?: number;
  /** The largest answer read, in bytes. */
  maxBytes?: number;
}

export class JwkFetchError extends Error {}

export class JwkSource {
  private getter: Getter | undefined;
  private expiresAt = Infinity;
  private lastFetch = -Infinity;
  private nextAttempt = -Infinity;
  private inflight: Promise<void> | undefined;
  private readonly timeoutMs: number;
  private readonly retryMs: number;
  private readonly cooldownMs: number;
  private readonly maxBytes: number;
  /** Successful fetches (tests). */
  fetches = 0;

  constructor(
    readonly url: string,
    private readonly log: Logger,
    opts: JwkSourceOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5000;
    this.retryMs = opts.retryMs ?? 60_000;
    this.cooldownMs = opts.cooldownMs ?? 5000;
    this.maxBytes = opts.maxBytes ?? 1024 * 1024;
  }

  /** The key of a token's header, as jose's key resolver. Throws jose's JWKSNoMatchingKey (and
   * the like) when there is none. */
  key = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    const now = Date.now();
    if (!this.getter || now >= this.expiresAt) await this.refresh(now);
    if (!this.getter) throw new joseErrors.JWKSNoMatchingKey();
    try {
      return await this.getter(header, token);
    } catch (e) {
      // A kid the set does not know: the provider may have rotated its keys.
      if (e instanceof joseErrors.JWKSNoMatchingKey && Date.now() - this.lastFetch >= this.cooldownMs) {
        await this.refresh(Date.now());
        return await this.getter!(header, token);
      }
      throw e;
    }
  };

  /** Fetches unless a fetch is under way (then waits for it) or a failure is too recent
   * (Note [A failing JWK fetch]). */
  refresh(now = Date.now()): Promise<void> {
    if (this.inflight) return this.inflight;
    if (now < this.nextAttempt) return Promise.resolve();
    this.inflight = this.fetchOnce().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async fetchOnce(): Promise<void> {
    this.log.info('jwk-refresh', { message: 'refreshing JWK from endpoint', url: this.url });
    try {
      const res = await fetch(this.url, { signal: AbortSignal.timeout(this.timeoutMs), redirect: 'follow', headers: { accept: 'application/json' } });
      if (res.status < 200 || res.status > 299) {
        await res.body?.cancel();
        throw new JwkFetchError(`Non-2xx response on fetching JWK (status ${res.status})`);
      }
      const text = await readLimited(res, this.maxBytes);
      let set: unknown;
      try {
        set = JSON.parse(text);
      } catch {
        throw new JwkFetchError('Error parsing JWK: the answer is not JSON');
      }
      if (!set || typeof set !== 'object' || !Array.isArray((set as { keys?: unknown }).keys)) {
        throw new JwkFetchError('Error parsing JWK: expected an object with a "keys" list');
      }
      let getter: Getter;
      try {
        getter = createLocalJWKSet(set as JSONWebKeySet);
      } catch {
        throw new JwkFetchError('Error parsing JWK: not a JWK set');
      }
      const now = Date.now();
      this.getter = getter;
      this.lastFetch = now;
      this.fetches++;
      const life = cacheLifetimeMs(res.headers.get('cache-control'), res.headers.get('expires'), now);
      this.expiresAt = life === undefined ? Infinity : now + life;
    } catch (e) {
      const now = Date.now();
      this.lastFetch = now;
      this.nextAttempt = now + this.retryMs;
      const reason = e instanceof JwkFetchError ? e.message : e instanceof Error && e.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : `Error fetching JWK: ${(e as Error).message}`;
      this.log.error('jwk-refresh', {
        message: this.getter ? 'JWK refresh failed; keeping the last good keys' : 'JWK fetch failed; tokens cannot be verified until it succeeds',
        url: this.url,
        reason,
        retry_in_ms: this.retryMs,
      });
    }
  }
}

export function readLimited(res: Response, max: number): Promise<string> {
  return readTextLimited(res, max, () => new JwkFetchError(`the answer is larger than ${max} bytes`));
}
