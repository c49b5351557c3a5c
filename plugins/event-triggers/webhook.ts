/**
 * Delivery to a webhook, as event triggers do it and as cron triggers and scheduled events can
 * reuse it (exported from index.ts): header configuration (`value` or `value_from_env`), URL
 * templates (`{{ENV_VAR}}`), one POST cut at a timeout, the response read up to a limit, the
 * `Retry-After` header, the retry decision, and the invocation record in Hasura's shape.
 * Nothing here knows event triggers or any database.
 */
import http from 'node:http';
import https from 'node:https';
import * as v from '../../core/valibot.js';

// ---------------------------------------------------------------------------------------------
// Configuration

/** HeaderFromValue or HeaderFromEnv (SPEC "Shared types"), as stored. */
export type HeaderConf = { name: string; value: string } | { name: string; value_from_env: string };

/** Hasura's HeaderConf parser and messages (renamed: `SVC_GRAPHQL_` variables are refused as it
 * refuses `HASURA_GRAPHQL_` ones, so that a header cannot leak the server's own secrets). */
export const HeaderConfSchema: v.GenericSchema<unknown, HeaderConf> = v.pipe(
  v.unknown(),
  v.check((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'expecting object for headers'),
  v.looseObject({ name: v.string(), value: v.optional(v.nullable(v.string())), value_from_env: v.optional(v.nullable(v.string())) }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const { name, value, value_from_env: env } = dataset.value;
    if (value == null && env == null) {
      addIssue({ message: 'expecting value or value_from_env keys' });
      return NEVER;
    }
    if (value != null && env != null) {
      addIssue({ message: 'expecting only one of value or value_from_env keys' });
      return NEVER;
    }
    if (env != null) {
      if (env.startsWith('SVC_GRAPHQL_')) {
        addIssue({ message: `env variables starting with "SVC_GRAPHQL_" are not allowed in value_from_env: ${env}` });
        return NEVER;
      }
      return { name, value_from_env: env };
    }
    return { name, value: value! };
  }),
);

/** Why a configuration cannot be resolved from the environment (Hasura's words). */
export class EnvError extends Error {}

/** Resolves the headers' values; throws EnvError naming a missing variable. */
export function resolveHeaders(headers: readonly HeaderConf[] | undefined, env: Readonly<Record<string, string | undefined>>): [string, string][] {
  return (headers ?? []).map((h) => {
    if ('value' in h) return [h.name, h.value];
    const val = env[h.value_from_env];
    if (val === undefined) throw new EnvError(`environment variable '${h.value_from_env}' not set`);
    return [h.name, val];
  });
}

/** Resolves `{{VAR}}` in a webhook URL from the environment (Hasura's URL templates). */
export function resolveUrlTemplate(template: string, env: Readonly<Record<string, string | undefined>>): string {
  const missing: string[] = [];
  const url = template.replace(/\{\{(.*?)\}\}/g, (_, name: string) => {
    const val = env[name];
    if (val === undefined) {
      missing.push(name);
      return '';
    }
    return val;
  });
  if (missing.length > 0) throw new EnvError(`Value for environment variables not found: ${missing.join(', ')}`);
  return url;
}

/** The value of an environment variable that names a webhook (`webhook_from_env`). */
export function resolveEnv(name: string, env: Readonly<Record<string, string | undefined>>): string {
  const val = env[name];
  if (val === undefined) throw new EnvError(`environment variable '${name}' not set`);
  return val;
}

// ---------------------------------------------------------------------------------------------
// One delivery

/** Bytes of a response body kept in the invocation record (the rest is not even read). */
export const MAX_LOGGED_BODY = 64 * 1024;

export interface WebhookRequest {
  url: string;
  /** Default POST (an action's request transform may choose another). */
  method?: string;
  /** The JSON body, as text. */
  body: string;
  headers: readonly [string, string][];
  /** Milliseconds before the request (connection, headers and body) is cut. */
  timeoutMs: number;
  /** Aborts the request (shutdown). */
  signal?: AbortSignal;
  /** Bytes of the response body to read (default MAX_LOGGED_BODY). */
  maxBodyBytes?: number;
}

export interface WebhookResult {
  /** HTTP status, or undefined when no response came (network error, timeout, abort). */
  status?: number;
  /** 2xx. */
  ok: boolean;
  /** The response headers (lower-cased names). */
  headers: [string, string][];
  /** The response body as text, at most `maxBodyBytes` of it. */
  body: string;
  /** Whether the body was longer than what was kept. */
  truncated: boolean;
  /** Why there is no response: `timeout`, `aborted` or the network error's message. */
  error?: string;
  durationMs: number;
  /** Seconds the webhook asked to wait before a retry (`Retry-After`), when it said so. */
  retryAfterSec?: number;
}

/*
 * Note [Webhook requests]
 * node:http(s) rather than fetch: fetch (undici) refuses "bad ports" (6000, 6665-6669, ...), which
 * a webhook may well use, and its body reading is harder to bound. Connections are kept alive
 * (one agent per protocol, no limit per host: the worker's pool size is the limit), redirects are
 * not followed (a 3xx is a failed delivery, as a non-2xx answer). One timer covers the whole
 * exchange: connecting, the headers and the body, so a webhook that hangs or trickles is cut.
 */
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * POSTs `body` to the webhook. Never throws: a bad URL, a network error, a timeout and an abort
 * are results without a status (or, after the headers came, with it and `error` set). At most
 * `maxBodyBytes` of the response are read; the connection is dropped after that, so a webhook
 * answering 10 MB costs no more than the limit.
 */
export function postWebhook(req: WebhookRequest): Promise<WebhookResult> {
  const start = performance.now();
  const limit = req.maxBodyBytes ?? MAX_LOGGED_BODY;
  return new Promise((resolve) => {
    let settled = false;
    let why: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    let request: http.ClientRequest | undefined;
    /** Ends with what came of the response, once there is one. */
    let responded: ((error: string) => void) | undefined;
    const onAbort = () => {
      why ??= 'aborted';
      request?.destroy(new Error('aborted'));
    };
    const finish = (r: Omit<WebhookResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      resolve({ ...r, durationMs: Math.round((performance.now() - start) * 1000) / 1000 });
    };
    const failed = (e: unknown) => finish({ ok: false, headers: [], body: '', truncated: false, error: why ?? describeError(e) });
    let url: URL;
    try {
      url = new URL(req.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`unsupported protocol "${url.protocol}"`);
    } catch (e) {
      failed(new Error(`invalid webhook URL: ${(e as Error).message}`));
      return;
    }
    // Names are matched without case (a configured header replaces a default one) and sent as
    // written: a webhook that reads raw header names sees `Content-Type`, `User-Agent`.
    const byName = new Map<string, [string, string]>([
      ['content-type', ['Content-Type', 'application/json']],
      ['user-agent', ['User-Agent', 'svc-engine']],
    ]);
    for (const [name, value] of req.headers) byName.set(name.toLowerCase(), [name, value]);
    byName.set('content-length', ['Content-Length', String(Buffer.byteLength(req.body, 'utf8'))]);
    const headers: Record<string, string> = Object.fromEntries(byName.values());
    const https_ = url.protocol === 'https:';
    try {
      request = (https_ ? https : http).request(url, { method: req.method ?? 'POST', headers, agent: https_ ? agents.https : agents.http }, (res) => {
        const status = res.statusCode ?? 0;
        const resHeaders: [string, string][] = [];
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) resHeaders.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
        const retryAfterSec = parseRetryAfter(res.headers['retry-after']);
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const done = (error?: string) =>
          finish({
            status,
            ok: !error && status >= 200 && status < 300,
            headers: resHeaders,
            // A multi-byte character cut at the limit decodes as U+FFFD.
            body: Buffer.concat(chunks, size).toString('utf8'),
            truncated,
            ...(error ? { error } : {}),
            ...(retryAfterSec !== undefined ? { retryAfterSec } : {}),
          });
        responded = done;
        res.on('data', (chunk: Buffer) => {
          if (truncated) return;
          if (size + chunk.length > limit) {
            chunks.push(chunk.subarray(0, limit - size));
            size = limit;
            truncated = true;
            done();
            res.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => done());
        res.on('error', (e) => done(why ?? describeError(e)));
        res.on('close', () => {
          if (!res.complete) done(why ?? 'the connection closed before the response ended');
        });
      });
    } catch (e) {
      // An invalid header name or value is refused before anything is sent.
      failed(e);
      return;
    }
    request.on('error', (e) => (responded ? responded(why ?? describeError(e)) : failed(e)));
    timer = setTimeout(() => {
      why = 'timeout';
      request?.destroy(new Error('timeout'));
    }, req.timeoutMs);
    if (req.signal?.aborted) onAbort();
    else req.signal?.addEventListener('abort', onAbort, { once: true });
    // A string, not a Buffer: node:http then sends the headers and the body in one write.
    request.end(req.body, 'utf8');
  });
}

function describeError(e: unknown): string {
  const err = e as { message?: string; code?: string };
  if (err?.code && err.message && !err.message.includes(err.code)) return `${err.message} (${err.code})`;
  return err?.message ?? String(e);
}

/** `Retry-After` in seconds: a positive integer (as Hasura reads it) or an HTTP date. */
export function parseRetryAfter(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const t = header.trim();
  if (/^\d+$/.test(t)) {
    const n = Number(t);
    return n > 0 ? n : undefined;
  }
  const at = Date.parse(t);
  if (Number.isNaN(at)) return undefined;
  const secs = Math.ceil((at - now) / 1000);
  return secs > 0 ? secs : undefined;
}

// ---------------------------------------------------------------------------------------------
// Retries

export interface RetryPolicy {
  numRetries: number;
  intervalSec: number;
}

/**
 * What follows a failed attempt: `tries` attempts were made before this one, so this one was
 * attempt `tries + 1` of at most `numRetries + 1`. After the last one the event is in error;
 * before, it is retried after `Retry-After` when the webhook sent one, else `intervalSec`.
 * (Hasura also keeps retrying past the last attempt while the webhook sends `Retry-After`; here
 * the retry count is a bound, as SPEC "Events" states it.)
 */
export function nextAttempt(policy: RetryPolicy, tries: number, retryAfterSec?: number): { retryInSec: number } | { error: true } {
  if (tries >= policy.numRetries) return { error: true };
  return { retryInSec: retryAfterSec ?? policy.intervalSec };
}

// ---------------------------------------------------------------------------------------------
// Invocation records (Hasura's shapes, `version: "2"`)

/** The request of an invocation: the payload and the headers as configured (a header from the
 * environment is recorded by its variable's name, not its value). */
export function invocationRequest(payload: unknown, headers: readonly HeaderConf[] | undefined): Record<string, unknown> {
  return { payload, headers: headers ?? [], version: '2' };
}

/** The response of an invocation: the webhook's answer for a 2xx, else Hasura's `client_error`
 * with the body or the reason there is none. `truncated` says the body was cut. */
export function invocationResponse(r: WebhookResult): Record<string, unknown> {
  if (r.status !== undefined && r.ok) {
    const data: Record<string, unknown> = { status: r.status, body: r.body, headers: r.headers.map(([name, value]) => ({ name, value })) };
    if (r.truncated) data.truncated = true;
    return { type: 'webhook_response', data, version: '2' };
  }
  const message = r.status === undefined ? (r.error === 'timeout' ? 'the webhook did not answer within the timeout' : (r.error ?? 'no response')) : r.body;
  const data: Record<string, unknown> = { message };
  if (r.status !== undefined && r.error) data.error = r.error;
  if (r.truncated) data.truncated = true;
  return { type: 'client_error', data, version: '2' };
}

// ---------------------------------------------------------------------------------------------
// Concurrency

/** A counting semaphore: at most `size` holders at a time, waiters served in order. */
export class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private size: number) {}

  get available(): number {
    return Math.max(0, this.size - this.active);
  }

  get inUse(): number {
    return this.active;
  }

  /** Takes a slot when one is free (no waiting). */
  tryAcquire(): boolean {
    if (this.active >= this.size) return false;
    this.active++;
    return true;
  }

  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(() => resolve()));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.active--;
  }
}

/** A delivery in flight: aborting `ctl` cuts its request; `done` settles once its outcome (or the
 * release of its claim) is written. */
export interface InFlightDelivery {
  ctl: AbortController;
  done: Promise<void>;
}

/**
 * Graceful shutdown of a delivery worker whose loop has stopped claiming: waits up to `graceMs`
 * for the deliveries in flight to finish, then aborts the others (each releases its claim, so
 * that it goes out again at once elsewhere or after a restart) and waits at most `cutMs` for
 * that. `inFlight` is read live: deliveries remove themselves when done. `notify` hears how many
 * are waited for (`waiting`) and cut (`cutting`), for logs.
 */
export async function drainDeliveries(
  inFlight: ReadonlyMap<string, InFlightDelivery>,
  graceMs: number,
  notify: (stage: 'waiting' | 'cutting', inFlight: number) => void = () => {},
  cutMs = 5000,
): Promise<void> {
  const all = () => Promise.all([...inFlight.values()].map((f) => f.done));
  if (inFlight.size > 0) {
    notify('waiting', inFlight.size);
    await Promise.race([all(), delay(graceMs)]);
  }
  if (inFlight.size > 0) {
    notify('cutting', inFlight.size);
    for (const f of inFlight.values()) f.ctl.abort();
    await Promise.race([all(), delay(cutMs)]);
  }
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
