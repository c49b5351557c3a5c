/**
 * An action handler for tests (node:http on loopback): records what it receives and answers as
 * the test says, per path. Not part of the plugin's runtime.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Call {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: any;
}

/** How a path answers: status and JSON body, raw text, or a custom behaviour. */
export type Route = ((c: Call, res: http.ServerResponse) => void | Promise<void>) | { status?: number; json?: unknown; text?: string; delayMs?: number };

export interface TestHandler {
  url: string;
  calls: Call[];
  routes: Record<string, Route>;
  close(): Promise<void>;
}

export async function startHandler(routes: Record<string, Route> = {}): Promise<TestHandler> {
  const h: TestHandler = {
    url: '',
    calls: [],
    routes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      const call: Call = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body };
      h.calls.push(call);
      const route = h.routes[call.path] ?? h.routes[call.path.split('?')[0]!];
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      if (typeof route === 'function') {
        await route(call, res);
        return;
      }
      if (route.delayMs) await new Promise((r) => setTimeout(r, route.delayMs));
      if (res.destroyed) return;
      res.writeHead(route.status ?? 200, { 'content-type': 'application/json' });
      res.end(route.text ?? JSON.stringify(route.json ?? null));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return h;
}
