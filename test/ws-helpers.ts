/**
 * WebSocket test helpers: the test server listening on a real port (hono's node server with the
 * GraphQL WebSocket attached, as server/main.ts serves it), and a `ws` client whose messages are
 * awaited with timeouts (never a sleep).
 */
import { afterAll, beforeAll } from 'vitest';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import WebSocket from 'ws';
import type { TestServer } from './helpers.js';

export interface Listening {
  port: number;
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves `s` on a free port; closes it (and its sockets) when done. */
export async function listen(s: Pick<TestServer, 'app' | 'websocket' | 'serveOptions'>): Promise<Listening> {
  let resolveInfo!: (i: AddressInfo) => void;
  const ready = new Promise<AddressInfo>((r) => (resolveInfo = r));
  const server = serve({ fetch: s.app.fetch, port: 0, hostname: '127.0.0.1', ...s.serveOptions }, (info) => resolveInfo(info)) as Server;
  s.websocket.attach(server);
  const info = await ready;
  return {
    port: info.port,
    url: `ws://127.0.0.1:${info.port}/v1/graphql`,
    server,
    async close() {
      await s.websocket.close(1000);
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** `listen` for a test file's server (useServer): listening before the tests, closed after. */
export function useListening(s: Pick<TestServer, 'app' | 'websocket' | 'serveOptions'>): { readonly url: string; readonly port: number } {
  let l: Listening | undefined;
  beforeAll(async () => {
    l = await listen(s);
  });
  afterAll(async () => {
    await l?.close();
  });
  return {
    get url() {
      return l!.url;
    },
    get port() {
      return l!.port;
    },
  };
}

export type Msg = { type: string; id?: string; payload?: any };

/** A WebSocket client that queues what it receives; `next` waits (with a timeout) for the next
 * message, optionally of one operation id or matching a predicate. */
export class Client {
  /** Every client not closed yet, for `closeAll` (a failed test leaves none open behind it). */
  static readonly open_ = new Set<Client>();
  readonly messages: Msg[] = [];
  private readonly waiters: { match: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Messages skipped by `next` with a filter, kept for later calls. */
  private readonly pending: Msg[] = [];

  private constructor(readonly ws: WebSocket) {
    Client.open_.add(this);
    this.closed = new Promise((r) =>
      ws.on('close', (code, reason) => {
        Client.open_.delete(this);
        r({ code, reason: reason.toString() });
      }),
    );
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as Msg;
      this.messages.push(m);
      const i = this.waiters.findIndex((w) => w.match(m));
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
      else this.pending.push(m);
    });
    ws.on('error', () => {});
  }

  static async open(url: string, protocol: string | string[] | undefined, headers: Record<string, string> = {}): Promise<Client> {
    const ws = new WebSocket(url, protocol, { headers });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)));
    });
    return new Client(ws);
  }

  /** Opens and initialises: `connection_init` with `payload`, then waits for the ack (and the
   * first keep-alive, which Hasura sends with it). */
  static async init(url: string, protocol: 'graphql-ws' | 'graphql-transport-ws', payload: unknown = {}): Promise<Client> {
    const c = await Client.open(url, protocol);
    c.send({ type: 'connection_init', payload });
    const ack = await c.next();
    if (ack.type !== 'connection_ack') throw new Error(`expected connection_ack, got ${JSON.stringify(ack)}`);
    await c.next((m) => m.type === 'ka' || m.type === 'ping');
    return c;
  }

  send(m: unknown): void {
    this.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  }

  /** The next message (matching `match`, keep-alives excluded unless asked for), or a timeout. */
  next(match?: ((m: Msg) => boolean) | string, timeoutMs = 5000): Promise<Msg> {
    const keepAlive = (m: Msg) => m.type === 'ka' || m.type === 'ping' || m.type === 'pong';
    const pred = match === undefined ? (m: Msg) => !keepAlive(m) : typeof match === 'string' ? (m: Msg) => m.id === match : match;
    const i = this.pending.findIndex(pred);
    if (i >= 0) return Promise.resolve(this.pending.splice(i, 1)[0]!);
    return new Promise((resolve, reject) => {
      const w = {
        match: pred,
        resolve: (m: Msg) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`no message within ${timeoutMs} ms; received: ${JSON.stringify(this.messages.slice(-5))}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Messages received and not yet taken by `next`, keep-alives left out. */
  unread(): Msg[] {
    return this.pending.filter((m) => m.type !== 'ka' && m.type !== 'ping' && m.type !== 'pong');
  }

  close(): void {
    this.ws.close();
  }

  /** Closes every client still open (afterEach). */
  static closeAll(): void {
    for (const c of Client.open_) c.ws.terminate();
    Client.open_.clear();
  }
}

/** Waits until `check` holds, looking every 10 ms (for server-side counters), or fails. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
