/**
 * Reading a JSON request body within the server's limits (Note [Request limits]). Every JSON
 * endpoint (metadata, legacy query, GraphQL, and plugin routes) reads its body through
 * `readJsonBody`, so the limits hold everywhere and are stated once.
 *
 * Note [Request limits]
 * A hostile or broken client must get a clear 400, never a 500, a hang or a crash. Code that
 * walks a request recursively (valibot schemas, boolean expressions, bulk) would overflow the
 * stack on a 10,000-deep value, and PostgreSQL refuses text with NUL characters or unpaired
 * surrogates when the metadata is stored. Rather than guard every walker, the body is checked
 * once, iteratively, before anything else sees it:
 *   - size: at most `--max-request-body-size` bytes (checked while reading, so a huge body is
 *     never buffered whole);
 *   - nesting: at most `--max-json-depth` levels of arrays and objects;
 *   - lists: at most `--max-list-length` items in one array;
 *   - text: no NUL character and no unpaired UTF-16 surrogate in any key or string, and no
 *     `__proto__` key (it would reach object spreads and valibot drops it silently);
 *   - encoding: the body is UTF-8.
 * Each refusal is a 400 `bad-request` whose message names the limit and its flag, and whose path
 * says where it was crossed. Limits on particular values (name and comment lengths, permission
 * limits) live in their schemas (core/validation.ts).
 */
import { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { SvcError } from '../../core/errors.js';
import { nodeIncoming } from './node-request.js';

export interface JsonLimits {
  maxRequestBodySize: number;
  maxJsonDepth: number;
  maxListLength: number;
}

const badRequest = (message: string, path = '$') => new SvcError('bad-request', message, { path });

/** Where a body is read from: a web Request, a hono context (read from the Node request
 * beneath it when there is one: see `readBodyText`), or Node's request itself (Note [Routes
 * served from Node's request] in core/types.ts). */
export type BodySource = Request | Context | IncomingMessage;

const isContext = (s: BodySource): s is Context => !(s instanceof Request) && !(s instanceof IncomingMessage) && typeof (s as Context).req === 'object';

/** Reads the body of `source` as text, refusing more than `maxBytes` bytes or invalid UTF-8. */
export async function readBodyText(source: BodySource, maxBytes: number): Promise<string> {
  const tooLarge = () => badRequest(`request body is larger than the limit of ${maxBytes} bytes (--max-request-body-size)`);
  const incoming = source instanceof IncomingMessage ? source : isContext(source) ? nodeIncoming(source) : undefined;
  const req = source instanceof IncomingMessage ? undefined : isContext(source) ? source.req.raw : source;
  const header = incoming ? (incoming.headers['content-length'] ?? null) : req!.headers.get('content-length');
  const declared = header === null ? NaN : Number(header);
  if (declared > maxBytes) throw tooLarge();
  // From the Node request when nothing has read it yet: its chunks are decoded as they came,
  // where `arrayBuffer()` copies them into a new ArrayBuffer first (8 µs of a small GraphQL
  // request, `--cpu-prof` under autocannon), and `req.body` would first build a web stream and a
  // full Request (a quarter of its CPU time). A chunked body is counted while read, and past the
  // limit left unread, not destroyed: the answer is still sent, and the connection closed after
  // it (Note [A body refused before its end]).
  if (incoming && !incoming.readableDidRead && !incoming.destroyed) return decode(await readWhole(incoming, maxBytes, tooLarge));
  if (!req) throw badRequest('the request body was read before');
  // A web request: with a declared length the HTTP parser holds the body, read whole; chunked,
  // counted while read, so a huge body is never buffered whole.
  if (Number.isInteger(declared) && declared >= 0) return decode(new Uint8Array(await req.arrayBuffer()));
  return decode(await readStreamLimited(req.body, maxBytes, tooLarge));
}

/*
 * Note [A body refused before its end]
 * A chunked body past --max-request-body-size is refused as soon as it passes it, the rest
 * unread. Destroying the request would close the connection under the answer; leaving the rest
 * for the next request on a kept-alive connection would read it as one, and reading it to the end
 * would let a client make the server read any amount. So the answer says `Connection: close` and
 * Node closes the connection after it (server/app.ts, for every route: `closeIfUnread`).
 */

/** A Node request's body whole: to its declared length, or its chunks to the end, refused past
 * `maxBytes` (the rest left unread). */
function readWhole(incoming: IncomingMessage, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        off();
        incoming.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      off();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (e: Error) => {
      off();
      reject(e);
    };
    // The client went away before sending all it declared: nobody is left to answer.
    const onClose = () => {
      if (incoming.complete) return;
      off();
      reject(badRequest('the request body ended before its declared length'));
    };
    const off = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

/** A response's body as UTF-8 text, refused with `tooLarge()` past `maxBytes` (the answers of
 * JWK sets and authentication webhooks). */
export async function readTextLimited(res: Response, maxBytes: number, tooLarge: () => Error): Promise<string> {
  return Buffer.from(await readStreamLimited(res.body, maxBytes, tooLarge)).toString('utf8');
}

/** Reads a byte stream whole, giving up (with `tooLarge()`) as soon as it passes `maxBytes`.
 * Also used for the answers of the servers the engine calls (JWK sets, auth webhooks). */
export async function readStreamLimited(stream: ReadableStream<Uint8Array> | null, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new SvcError('invalid-json', 'invalid json: the body is not valid UTF-8', { path: '$' });
  }
}

/** Reads and parses a JSON body, then checks it against the limits. `first`: a cheaper check of
 * the route's own that can refuse the value before the walk over all of it (a GraphQL batch too
 * long to run). */
export async function readJsonBody(source: BodySource, limits: JsonLimits, first?: (value: unknown) => void): Promise<unknown> {
  const text = await readBodyText(source, limits.maxRequestBodySize);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SvcError('invalid-json', 'invalid json', { path: '$' });
  }
  first?.(value);
  checkJsonLimits(value, limits);
  return value;
}

interface Frame {
  value: unknown;
  key: string | number | undefined;
  parent: Frame | undefined;
  depth: number;
}

function pathOf(f: Frame | undefined, key?: string | number): string {
  const keys: (string | number)[] = key === undefined ? [] : [key];
  for (let x = f; x && x.key !== undefined; x = x.parent) keys.push(x.key);
  let p = '$';
  for (const k of keys.reverse()) p += typeof k === 'number' ? `[${k}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`;
  return p;
}

function checkText(s: string, where: () => string) {
  if (s.includes('\u0000')) throw badRequest('text must not contain the NUL character (\\u0000)', where());
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) throw badRequest('text must not contain an unpaired UTF-16 surrogate', where());
}

/** Checks a parsed JSON value without recursion (it may be nested arbitrarily deep). */
export function checkJsonLimits(root: unknown, limits: Omit<JsonLimits, 'maxRequestBodySize'>): void {
  const stack: Frame[] = [{ value: root, key: undefined, parent: undefined, depth: 0 }];
  while (stack.length > 0) {
    const f = stack.pop()!;
    const x = f.value;
    if (typeof x === 'string') {
      checkText(x, () => pathOf(f));
      continue;
    }
    if (x === null || typeof x !== 'object') continue;
    const depth = f.depth + 1;
    if (depth > limits.maxJsonDepth) {
      throw badRequest(`the request is nested deeper than the limit of ${limits.maxJsonDepth} levels (--max-json-depth)`, pathOf(f));
    }
    if (Array.isArray(x)) {
      if (x.length > limits.maxListLength) {
        throw badRequest(`a list has ${x.length} items, more than the limit of ${limits.maxListLength} (--max-list-length)`, pathOf(f));
      }
      for (let i = x.length - 1; i >= 0; i--) stack.push({ value: x[i], key: i, parent: f, depth });
      continue;
    }
    const keys = Object.keys(x);
    if (keys.length > limits.maxListLength) {
      throw badRequest(`an object has ${keys.length} keys, more than the limit of ${limits.maxListLength} (--max-list-length)`, pathOf(f));
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      if (k === '__proto__') throw badRequest('"__proto__" is not allowed as a key', pathOf(f));
      checkText(k, () => pathOf(f));
      stack.push({ value: (x as Record<string, unknown>)[k], key: k, parent: f, depth });
    }
  }
}
