/**
 * GraphQL over WebSocket on `/v1/graphql` (Note [GraphQL over WebSocket] in ./connection.ts):
 * takes the upgrade requests the server hands it for that path (Note [Upgrades] in
 * core/plugin.ts), picks the protocol, keeps the connections, and closes them on shutdown. Built
 * on the `ws` package, in noServer mode: the HTTP server (hono's, server/) stays the one
 * listening.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Session } from '../../core/plugin.js';
import type { ServerConfig } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import type { GraphQLEngine } from '../graphql/index.js';
import { Connection, type Protocol } from './connection.js';

export interface WebSocketHost {
  readonly config: Pick<
    ServerConfig,
    'maxRequestBodySize' | 'maxJsonDepth' | 'maxListLength' | 'websocketKeepalive' | 'websocketConnectionInitTimeout' | 'websocketMaxSendBuffer'
  >;
  readonly log: Logger;
  authenticate(headers: Headers, request?: unknown): Promise<Session>;
}

export const GRAPHQL_PATH = '/v1/graphql';

/** Headers of the upgrade request that are the WebSocket handshake's, not the client's (Hasura
 * leaves them out of the session's headers). */
const HANDSHAKE = new Set(['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-extensions', 'sec-websocket-protocol', 'upgrade', 'connection']);

/** The protocol of a `Sec-WebSocket-Protocol` list: graphql-transport-ws when offered, else
 * graphql-ws (Hasura's default, also without the header). */
function pickProtocol(offered: ReadonlySet<string>): Protocol {
  return offered.has('graphql-transport-ws') ? 'graphql-transport-ws' : 'graphql-ws';
}

function reject(socket: Duplex, status: number, text: string, body?: unknown): void {
  const payload = body === undefined ? '' : JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
}

export class GraphQLWebSocketServer {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<Connection>();
  private closing = false;

  constructor(
    private readonly host: WebSocketHost,
    private readonly engine: GraphQLEngine,
  ) {
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: host.config.maxRequestBodySize,
      perMessageDeflate: false,
      // The protocol echoed in the handshake: one of ours the client offered, else none.
      handleProtocols: (offered) => (offered.has('graphql-transport-ws') ? 'graphql-transport-ws' : offered.has('graphql-ws') ? 'graphql-ws' : false),
    });
  }

  /** The number of open connections (tests, metrics). */
  get size(): number {
    return this.connections.size;
  }

  /** An upgrade of GRAPHQL_PATH, handed over by the server (Note [Upgrades] in core/plugin.ts,
   * server/upgrades.ts: the path and `--enabled-apis` are checked there). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {});
    if (this.closing) return reject(socket, 503, 'Service Unavailable', { path: '$', error: 'Server is shutting down', code: 'unexpected' });
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return reject(socket, 400, 'Bad Request');
    this.wss.handleUpgrade(req, socket, head, (ws: WebSocket) => this.accept(ws, req));
  }

  private accept(ws: WebSocket, req: IncomingMessage): void {
    const offered = new Set(
      String(req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    );
    const protocol = pickProtocol(offered);
    const headers: [string, string][] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!.toLowerCase();
      if (!HANDSHAKE.has(name)) headers.push([name, req.rawHeaders[i + 1]!]);
    }
    const c = new Connection(ws, protocol, headers, {
      config: this.host.config,
      log: this.host.log,
      engine: this.engine,
      authenticate: (h, r) => this.host.authenticate(h, r),
      closed: (conn) => this.connections.delete(conn),
      clientAddress: req.socket.remoteAddress,
    });
    this.connections.add(c);
    this.host.log.info('websocket-log', { websocket_id: c.id, event: { type: 'accepted', protocol } });
    ws.on('close', (code: number) => this.host.log.info('websocket-log', { websocket_id: c.id, event: { type: 'closed', code } }));
    if (this.closing) c.shutdown();
  }

  /**
   * Shutdown: no new connections; every connection's subscriptions stop and its client is told
   * to reconnect (1012); resolves when all sockets are closed, or after `graceMs`, when the rest
   * are cut.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    for (const c of [...this.connections]) c.shutdown();
    const sockets = [...this.wss.clients];
    if (sockets.length > 0) {
      const all = Promise.all(sockets.map((s) => (s.readyState === s.CLOSED ? undefined : new Promise<void>((r) => s.once('close', () => r())))));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), graceMs)));
      if ((await Promise.race([all, late])) === 'late') for (const s of this.wss.clients) s.terminate();
      clearTimeout(timer);
    }
    this.engine.close();
  }
}
