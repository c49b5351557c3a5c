import type { Context } from 'hono';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HeaderList, HttpAnswer, HttpExchange } from '../../core/types.js';

/** The Node request behind a hono context: @hono/node-server puts it in `c.env.incoming`;
 * undefined elsewhere (app.request in tests). */
export function nodeIncoming(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

/** The client's IP address as the socket reports it; undefined where there is no socket. Not the
 * X-Forwarded-For header: a client may send any. */
export function clientAddress(c: Context): string | undefined {
  return nodeIncoming(c)?.socket?.remoteAddress;
}

/** The request's headers as name-value pairs, for reading them all once (the session's): the
 * Node request's raw list where there is one, which costs nothing to walk, where iterating
 * `c.req.raw.headers` makes @hono/node-server build a web Headers of them first (7 µs of a
 * small GraphQL request, `--cpu-prof` under autocannon). Repeated names stay repeated, as
 * iterating Headers would join them; readers that join them (the session's) see the same. */
export function headerPairs(c: Context): Iterable<[string, string]> | Headers {
  const raw = nodeIncoming(c)?.rawHeaders;
  return raw ? rawPairs(raw) : c.req.raw.headers;
}

/** Node's raw header list as name-value pairs. */
function rawPairs(raw: readonly string[]): [string, string][] {
  const pairs: [string, string][] = new Array(raw.length >> 1);
  for (let i = 0; i + 1 < raw.length; i += 2) pairs[i >> 1] = [raw[i]!, raw[i + 1]!];
  return pairs;
}

/** A request's headers as web Headers hold them (HeaderList), from Node's raw list: names in
 * lower case, repeated ones joined by `, `; made into a record only when read. */
export function rawHeaderList(raw: readonly string[]): HeaderList {
  let joined: Map<string, string> | undefined;
  return {
    forEach(fn) {
      if (!joined) {
        joined = new Map();
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const name = raw[i]!.toLowerCase();
          const had = joined.get(name);
          joined.set(name, had === undefined ? raw[i + 1]! : `${had}, ${raw[i + 1]!}`);
        }
      }
      for (const [name, value] of joined) fn(value, name);
    },
  };
}

/** The exchange of a request hono serves (Note [Routes served from Node's request]). */
export function contextExchange(c: Context): HttpExchange {
  return { headerPairs: headerPairs(c), headers: c.req.raw.headers, body: c, clientAddress: () => clientAddress(c) };
}

/** The exchange of Node's request, served without hono. */
export function nodeExchange(req: IncomingMessage): HttpExchange {
  return { headerPairs: rawPairs(req.rawHeaders), headers: rawHeaderList(req.rawHeaders), body: req, clientAddress: () => req.socket?.remoteAddress };
}

/** An exchange's answer as hono's Response. */
export function contextAnswer(c: Context, a: HttpAnswer): Response {
  for (const [name, value] of a.headers ?? []) c.header(name, value, { append: true });
  let body = a.body;
  if (Array.isArray(body)) {
    body = Buffer.concat(body as readonly Uint8Array[]);
    a.written?.(); // copied: the parts are free
  }
  return c.body(body as Uint8Array<ArrayBuffer> | string | ReadableStream, a.status as 200, { 'content-type': a.contentType });
}

/** An exchange's answer written to Node's response; resolves when it is written (or the client
 * has gone). */
export async function nodeAnswer(res: ServerResponse, a: HttpAnswer): Promise<void> {
  const headers: string[] = ['content-type', a.contentType];
  for (const [name, value] of a.headers ?? []) headers.push(name, value);
  const body = a.body;
  if (Array.isArray(body)) {
    // Written together (one writev), none copied into another buffer first.
    const parts = body as readonly Uint8Array[];
    let length = 0;
    for (const p of parts) length += p.length;
    headers.push('content-length', String(length));
    res.writeHead(a.status, headers);
    res.cork();
    for (const p of parts) res.write(p);
    // On 'finish': every part written to the socket (not on an error or a close before it).
    if (a.written) res.end(a.written);
    else res.end();
    return;
  }
  if (typeof body === 'string' || body instanceof Uint8Array) {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    headers.push('content-length', String(bytes.length));
    res.writeHead(a.status, headers);
    if (a.written) res.end(bytes, a.written);
    else res.end(bytes);
    return;
  }
  res.writeHead(a.status, headers);
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  const gone = () => void reader.cancel().catch(() => {});
  res.once('close', gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value)) await drained(res);
    }
  } finally {
    res.off('close', gone);
    res.end();
  }
}

/** Resolves once `res` may be written again or is gone, leaving neither listener behind (one
 * left per wait added a close listener per megabyte of a long answer). */
function drained(res: ServerResponse): Promise<void> {
  if (!res.writableNeedDrain) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/** A request answered before its body was read to the end is answered `Connection: close`, and
 * Node closes the connection after the answer (Note [A body refused before its end] in
 * ./body.ts). */
export function closeIfUnread(incoming: IncomingMessage | undefined, outgoing: ServerResponse | undefined): void {
  if (incoming && outgoing && !incoming.complete && !outgoing.headersSent) outgoing.setHeader('connection', 'close');
}

/** The Node response behind a hono context (@hono/node-server's `c.env.outgoing`). */
export function nodeOutgoing(c: Context): ServerResponse | undefined {
  return (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
}
