/**
 * A webhook for tests (node:http on loopback): records what it receives and answers as the test
 * says. Not part of the plugin's runtime.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  /** The path and query string. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  at: number;
}

export type Answer = (r: Received, res: http.ServerResponse) => void;

export interface TestHook {
  url: string;
  received: Received[];
  /** How the next requests are answered (default 200 `{"ok":true}`). */
  answer: Answer;
  /** Requests being answered right now. */
  open: number;
  /** Most requests open at once. */
  maxOpen: number;
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export const okAnswer: Answer = (_r, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

export async function startHook(): Promise<TestHook> {
  const hook: TestHook = {
    url: '',
    received: [],
    answer: okAnswer,
    open: 0,
    maxOpen: 0,
    async waitFor(n, timeoutMs = 15_000) {
      const end = Date.now() + timeoutMs;
      while (hook.received.length < n) {
        if (Date.now() > end) throw new Error(`the webhook got ${hook.received.length} requests, expected ${n}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return hook.received;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, at: Date.now() };
      hook.received.push(r);
      hook.open++;
      hook.maxOpen = Math.max(hook.maxOpen, hook.open);
      res.on('close', () => hook.open--);
      hook.answer(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hook.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return hook;
}

/** The value `f` gives once it gives one (polled every 50 ms), or a timeout error. */
export async function until<T>(f: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The rows run_sql answers for `sql`, as objects of text (the tests read the event log with it). */
export async function sqlRows(s: { runSql(sql: string): Promise<{ result?: unknown }> }, sql: string): Promise<Record<string, string>[]> {
  const [head, ...data] = (await s.runSql(sql)).result as string[][];
  return data.map((row) => Object.fromEntries(head!.map((h, i) => [h, row[i]!])));
}

/** Before each test of a file on the table `item` with a trigger's webhook `hook`: the hook
 * answers 200 again and forgets what it received, the metadata has `item` tracked alone, and the
 * table and the event log are empty. */
export async function resetItemTrigger(
  s: { query(body: unknown): Promise<{ status: number }>; runSql(sql: string): Promise<unknown> },
  hook: TestHook,
): Promise<void> {
  hook.answer = okAnswer;
  hook.received.length = 0;
  await s.query({ type: 'clear_metadata', args: {} });
  const tracked = await s.query({ type: 'track_table', args: { name: 'item' } });
  if (tracked.status !== 200) throw new Error(`track_table item answered ${tracked.status}`);
  await s.runSql('truncate item; delete from svc_catalog.event_log; delete from svc_catalog.event_invocation_logs').catch(() => s.runSql('truncate item'));
}
