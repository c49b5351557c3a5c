import type { Context } from 'hono';
import type { IncomingMessage } from 'node:http';

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
  if (!raw) return c.req.raw.headers;
  const pairs: [string, string][] = new Array(raw.length >> 1);
  for (let i = 0; i + 1 < raw.length; i += 2) pairs[i >> 1] = [raw[i]!, raw[i + 1]!];
  return pairs;
}
