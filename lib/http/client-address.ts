import type { Context } from 'hono';

/** The client's IP address as the socket reports it (@hono/node-server puts the Node request in
 * `c.env.incoming`); undefined where there is no socket (app.request in tests). Not the
 * X-Forwarded-For header: a client may send any. */
export function clientAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}
