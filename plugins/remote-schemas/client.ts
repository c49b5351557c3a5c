/**
 * Talking to a remote GraphQL server: one POST, bounded in time and in size, its answer read as
 * untrusted input (Note [Remote answers are untrusted]).
 */
import { SvcError } from '../../core/errors.js';
import { readStreamLimited } from '../../lib/http/body.js';

/*
 * Note [Remote answers are untrusted]
 * A remote schema is another server, maybe someone else's: what it answers must never crash or
 * stall the engine. So every call has a deadline (the definition's `timeout_seconds`, Hasura's
 * default 60 s), the body is read in chunks and abandoned past a size bound (the engine's
 * response limit for queries, a fixed one for introspection), and only JSON whose top level is
 * an object is taken; what is inside is checked where it is used (introspection through
 * graphql-js's buildClientSchema, which validates every type reference; query answers by their
 * shape: `data` an object or null, `errors` a list). Each failure is a `remote-schema-error`
 * with Hasura's wording, never a 500: the URL in messages is the one configured (its
 * `{{ENV}}` template, not the secret value it may expand to), the headers never appear.
 */

export const DEFAULT_TIMEOUT_SECONDS = 60;

export interface RemoteCall {
  /** The URL to call (templates expanded). */
  url: string;
  /** The URL as the metadata writes it, for messages. */
  shownUrl: string;
  headers: [string, string][];
  body: string;
  timeoutMs: number;
  maxBytes: number;
  signal?: AbortSignal;
}

export interface RemoteAnswer {
  status: number;
  body: Record<string, unknown>;
  /** The response's Set-Cookie headers (Hasura forwards them to the client). */
  setCookies: string[];
}

const httpError = (shownUrl: string, message: string) =>
  new SvcError('remote-schema-error', `HTTP exception occurred while sending the request to ${JSON.stringify(shownUrl)}`, {
    internal: { type: 'http_exception', message },
  });

/** POSTs `body` and returns the JSON object answered. Throws SvcError('remote-schema-error'). */
export async function callRemote(c: RemoteCall): Promise<RemoteAnswer> {
  const timeout = AbortSignal.timeout(c.timeoutMs);
  const signal = c.signal ? AbortSignal.any([timeout, c.signal]) : timeout;
  let res: Response;
  try {
    res = await fetch(c.url, { method: 'POST', headers: c.headers, body: c.body, signal, redirect: 'manual' });
  } catch (e) {
    throw httpError(c.shownUrl, describe(e, timeout));
  }
  let text: string;
  try {
    text = await readBounded(res, c.maxBytes);
  } catch (e) {
    if (e instanceof SvcError) throw e;
    throw httpError(c.shownUrl, describe(e, timeout));
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new SvcError('remote-schema-error', `Invalid response from remote schema ${JSON.stringify(c.shownUrl)}: the answer is not JSON`, {
      internal: { status: res.status, response: text.slice(0, 1000) },
    });
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SvcError('remote-schema-error', `Invalid response from remote schema ${JSON.stringify(c.shownUrl)}: expected a JSON object`, {
      internal: { status: res.status, response: text.slice(0, 1000) },
    });
  }
  const setCookies = typeof res.headers.getSetCookie === 'function' ? res.headers.getSetCookie() : [];
  return { status: res.status, body: body as Record<string, unknown>, setCookies };
}

function describe(e: unknown, timeout: AbortSignal): string {
  if (timeout.aborted) return 'Response timeout';
  const cause = (e as { cause?: { code?: string } } | undefined)?.cause;
  if (cause?.code === 'ECONNREFUSED' || cause?.code === 'ENOTFOUND' || cause?.code === 'ECONNRESET' || cause?.code === 'EAI_AGAIN') return 'Connection failure';
  if ((e as { name?: string } | undefined)?.name === 'AbortError') return 'Request cancelled';
  return 'Connection failure';
}

/** The body as text, refused past `max` bytes without reading the rest. */
async function readBounded(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  const tooLarge = () => new SvcError('remote-schema-error', `the remote schema's response is larger than ${max} bytes`);
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  return new TextDecoder().decode(await readStreamLimited(res.body, max, tooLarge));
}
