/**
 * The HTTP server's upgrade requests, handed to the plugin that takes their path (Note
 * [Upgrades] in core/plugin.ts): WebSocket on /v1/graphql (plugins/graphql-ws). A path no
 * enabled plugin takes, or whose API is off (`--enabled-apis`), is answered 404 on the socket;
 * after `close` every upgrade is answered 503.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Kernel } from '../core/kernel/kernel.js';

function reject(socket: Duplex, status: number, text: string, body: unknown): void {
  const payload = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
}

export class Upgrades {
  private closing = false;

  constructor(private readonly kernel: Pick<Kernel, 'upgrades' | 'config'>) {}

  /** Serves the upgrades of `server` (the HTTP server the app listens with). */
  attach(server: Pick<Server, 'on'>): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.handle(req, socket, head));
  }

  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {});
    let path: string;
    try {
      path = new URL(req.url ?? '/', 'http://localhost').pathname;
    } catch {
      path = '';
    }
    if (this.closing) return reject(socket, 503, 'Service Unavailable', { path: '$', error: 'Server is shutting down', code: 'unexpected' });
    const def = this.kernel.upgrades.find((u) => u.path === path);
    if (!def) {
      const paths = this.kernel.upgrades.map((u) => `'${u.path}'`).join(', ');
      const error = paths ? `only ${paths} is supported on websockets` : 'websockets are not supported';
      return reject(socket, 404, 'Not Found', { path: '$', error, code: 'not-found' });
    }
    if (def.api && !(this.kernel.config.enabledApis as string[]).includes(def.api)) {
      return reject(socket, 404, 'Not Found', { path: '$', error: 'resource does not exist', code: 'not-found' });
    }
    def.handle(req, socket, head);
  }

  /** Shutdown: no new upgrades; every plugin closes its connections, within `graceMs`. */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    await Promise.all(this.kernel.upgrades.map((u) => u.close(graceMs)));
  }
}
