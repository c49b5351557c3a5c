/**
 * Routes served from Node's request, without hono (Note [Routes served from Node's request] in
 * core/types.ts): POST /v1/graphql on its exact path is answered by `nodeRoutes` (server/app.ts)
 * as hono answers the same route elsewhere (a query string, app.request): the same status, type
 * and bytes, the same `http-log` line and `request` event, a disabled API's 404, a throwing
 * route's 500, and an answer of more than a MiB streamed whole.
 */
import { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePlugin } from '../core/plugin.js';
import { SvcError } from '../core/errors.js';
import { startServer, useServer, type TestServer } from '../test/helpers.js';
import { listen, type Listening } from '../test/ws-helpers.js';
import { answerBuffers } from '../plugins/postgres/records/records.js';

/** The body of /v1/probe/big, and who said it was written (HttpAnswer.written). */
const BIG = Buffer.alloc(8 << 20, 0x61);
const bigWritten: string[] = [];

/** Routes that say how they were served, one that answers in parts and says when they are
 * written, and one that throws. */
const probe = definePlugin({
  name: 'route_probe',
  setup(k) {
    k.route({
      method: 'POST',
      path: '/v1/probe',
      operation: 'probe',
      exchange: async (x) => ({ status: 200, contentType: 'text/plain', body: x.body instanceof IncomingMessage ? 'node' : 'hono' }),
    });
    k.route({
      method: 'POST',
      path: '/v1/probe/big',
      exchange: async (x) => ({
        status: 200,
        contentType: 'text/plain',
        body: [Buffer.from('<'), BIG, Buffer.from('>')],
        written: () => bigWritten.push(x.body instanceof IncomingMessage ? 'node' : 'hono'),
      }),
    });
    k.route({
      method: 'POST',
      path: '/v1/probe/throws',
      exchange: async () => {
        throw new Error('the probe broke');
      },
    });
    k.route({
      method: 'POST',
      path: '/v1/probe/refuses',
      exchange: async () => {
        throw new SvcError('access-denied', 'the probe refuses', { path: '$' });
      },
    });
  },
});

const SEED = `
create table item (id serial primary key, name text not null);
insert into item (name) select 'item ' || g || ' ' || repeat('é', 600) from generate_series(1, 1200) g;
`;

type Got = { status: number; type: string | null; connection: string | null; text: string };

async function post(base: string, path: string, body: string, headers: Record<string, string> = {}): Promise<Got> {
  const r = await fetch(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, type: r.headers.get('content-type'), connection: r.headers.get('connection'), text: await r.text() };
}

describe("routes served from Node's request", () => {
  const s = useServer(SEED, { extraPlugins: [probe], config: { maxRequestBodySize: 100_000 } });
  let l: Listening;
  let base: string;
  beforeAll(async () => {
    expect((await s.metadata({ type: 'pg_track_table', args: { source: 'default', table: 'item' } })).status).toBe(200);
    l = await listen(s);
    base = `http://127.0.0.1:${l.port}`;
  });
  afterAll(async () => {
    await l?.close();
  });

  it('serves its exact path and method from Node, any other through hono', async () => {
    expect((await post(base, '/v1/probe', '{}')).text).toBe('node');
    expect((await post(base, '/v1/probe?x=1', '{}')).text).toBe('hono');
    expect((await s.request('POST', '/v1/probe', {})).text).toBe('hono');
    // Another method is hono's: not found.
    expect((await fetch(`${base}/v1/probe`)).status).toBe(404);
  });

  it('answers POST /v1/graphql as hono answers it: a query, errors, a batch, a body that is not JSON', async () => {
    const bodies = [
      JSON.stringify({ query: '{ item(order_by: {id: asc}, limit: 3) { id name } }' }),
      JSON.stringify({ query: '{ item { nope } }' }),
      JSON.stringify([{ query: '{ item_by_pk(id: 2) { id } }' }, { query: 'query { __typename }' }]),
      '{"query": ',
    ];
    for (const b of bodies) {
      const node = await post(base, '/v1/graphql', b);
      const hono = await post(base, '/v1/graphql?via=hono', b);
      expect(node, b).toEqual(hono);
      expect(node.status, b).toBe(200);
      expect(node.type, b).toBe('application/json; charset=utf-8');
      const inProcess = await s.request('POST', '/v1/graphql', b);
      expect(inProcess.text, b).toBe(node.text);
    }
    // The answer itself, and an unauthorised role's refusal in GraphQL's shape.
    expect(JSON.parse((await post(base, '/v1/graphql', bodies[0]!)).text).data.item.map((i: { id: number }) => i.id)).toEqual([1, 2, 3]);
    const denied = await post(base, '/v1/graphql', bodies[0]!, { 'x-svc-role': 'nobody' });
    expect(denied.status).toBe(200);
    expect(JSON.parse(denied.text).errors[0].extensions.code).toBe('validation-failed');
  });

  it('logs and counts each request as hono does: the http-log line and the request event', async () => {
    const events: unknown[] = [];
    const listener = (e: unknown) => events.push(e);
    s.kernel.events.on('request', listener);
    try {
      const at = s.logs.length;
      const b = JSON.stringify({ query: '{ item_by_pk(id: 1) { id } }' });
      await post(base, '/v1/graphql', b);
      await post(base, '/v1/graphql?via=hono', b);
      await post(base, '/v1/probe', '{}');
      const lines = s.logs.slice(at).filter((x) => x.type === 'http-log');
      expect(lines.map((x) => ({ ...x.detail, http_info: { ...x.detail.http_info, duration_ms: typeof x.detail.http_info.duration_ms } }))).toEqual([
        { operation: { type: 'graphql' }, http_info: { status: 200, method: 'POST', url: '/v1/graphql', duration_ms: 'number' } },
        { operation: { type: 'graphql' }, http_info: { status: 200, method: 'POST', url: '/v1/graphql', duration_ms: 'number' } },
        { operation: { type: 'probe' }, http_info: { status: 200, method: 'POST', url: '/v1/probe', duration_ms: 'number' } },
      ]);
      expect(events.map((e) => ({ ...(e as object), durationMs: typeof (e as { durationMs: unknown }).durationMs }))).toEqual([
        { route: '/v1/graphql', method: 'POST', status: 200, operation: 'graphql', durationMs: 'number' },
        { route: '/v1/graphql', method: 'POST', status: 200, operation: 'graphql', durationMs: 'number' },
        { route: '/v1/probe', method: 'POST', status: 200, operation: 'probe', durationMs: 'number' },
      ]);
    } finally {
      s.kernel.events.off('request', listener);
    }
  });

  it("answers a route's error as hono does: an SvcError its own, anything else a 500 that is logged", async () => {
    const refused = await post(base, '/v1/probe/refuses', '{}');
    expect(refused).toEqual(await post(base, '/v1/probe/refuses?via=hono', '{}'));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toEqual({ path: '$', error: 'the probe refuses', code: 'access-denied' });
    const at = s.logs.length;
    const broke = await post(base, '/v1/probe/throws', '{}');
    expect(broke).toEqual(await post(base, '/v1/probe/throws?via=hono', '{}'));
    expect(broke.status).toBe(500);
    expect(broke.type).toBe('application/json');
    expect(JSON.parse(broke.text)).toEqual({ error: 'internal error: the request could not be completed; see the server log' });
    expect(s.logs.slice(at).filter((x) => x.type === 'unexpected-error').map((x) => x.detail.error.message)).toEqual(['the probe broke', 'the probe broke']);
  });

  it('reads a body sent in chunks (no length declared) within the size limit', async () => {
    const chunked = (text: string, pieces: number) => {
      const bytes = Buffer.from(text);
      const step = Math.ceil(bytes.length / pieces);
      let at = 0;
      return new ReadableStream<Uint8Array>({
        pull(c) {
          if (at >= bytes.length) return c.close();
          c.enqueue(bytes.subarray(at, (at += step)));
        },
      });
    };
    const send = async (path: string, text: string): Promise<Got> => {
      const r = await fetch(`${base}${path}`, { method: 'POST', body: chunked(text, 4), headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
      return { status: r.status, type: r.headers.get('content-type'), connection: r.headers.get('connection'), text: await r.text() };
    };
    const b = JSON.stringify({ query: '{ item(order_by: {id: asc}, limit: 2) { id } }' });
    const node = await send('/v1/graphql', b);
    expect(node).toEqual(await send('/v1/graphql?via=hono', b));
    expect(JSON.parse(node.text)).toEqual({ data: { item: [{ id: 1 }, { id: 2 }] } });
    // Past --max-request-body-size, told as hono tells it (in GraphQL's shape, status 200).
    const big = `${' '.repeat(150_000)}${b}`;
    const over = await send('/v1/graphql', big);
    expect(over).toEqual(await send('/v1/graphql?via=hono', big));
    expect(JSON.parse(over.text).errors[0].message).toBe('request body is larger than the limit of 100000 bytes (--max-request-body-size)');
    // Its rest unread, the connection is closed after the answer (Note [A body refused before its
    // end]), for hono's routes too; a body read whole keeps it.
    expect(over.connection).toBe('close');
    expect(node.connection).toBe('keep-alive');
    const metadata = await send('/v1/metadata', `${' '.repeat(150_000)}{"type": "export_metadata", "args": {}}`);
    expect(metadata.status).toBe(400);
    expect(metadata.connection).toBe('close');
    expect((await send('/v1/graphql', b)).text).toBe(node.text);
  });

  it('streams an answer of more than a MiB whole', async () => {
    // A batch answers text: two lists of 1,200 names of 600 two-byte characters.
    const b = JSON.stringify([{ query: '{ item(order_by: {id: asc}) { id name } }' }, { query: '{ item(order_by: {id: desc}) { name } }' }]);
    const node = await post(base, '/v1/graphql', b);
    expect(Buffer.byteLength(node.text)).toBeGreaterThan(2 * 1024 * 1024);
    expect(node).toEqual(await post(base, '/v1/graphql?via=hono', b));
    const [asc, desc] = JSON.parse(node.text);
    expect(asc.data.item).toHaveLength(1200);
    expect(desc.data.item[0].name).toBe(`item 1200 ${'é'.repeat(600)}`);
  });

  // Note [Lent answer bytes] in core/schema/contract.ts: a list's answer is written into a buffer
  // of the records writer's, given back once Node has written the response.
  const list = (limit?: number) => JSON.stringify({ query: `{ item(order_by: {id: asc}${limit ? `, limit: ${limit}` : ''}) { id name } }` });

  it("gives a list's answer buffer back once the answer is written, to be written into again", async () => {
    const want = (await s.request('POST', '/v1/graphql', list(3))).text;
    expect(JSON.parse(want).data.item).toHaveLength(3);
    for (const via of ['/v1/graphql', '/v1/graphql?via=hono']) {
      const before = { ...answerBuffers };
      for (let i = 0; i < 5; i++) expect((await post(base, via, list(3))).text, via).toBe(want);
      expect(answerBuffers.givenBack - before.givenBack, via).toBe(5);
      expect(answerBuffers.reused - before.reused, via).toBeGreaterThanOrEqual(4);
    }
  });

  it('answers many lists at once, of three sizes, each its own', async () => {
    // The whole table's records (1.4 MB) go to a records worker where there is one, through a
    // lane (Note [Records written off the main thread]).
    const limits = [3, 40, undefined];
    const want = await Promise.all(limits.map(async (n) => (await s.request('POST', '/v1/graphql', list(n))).text));
    const got = await Promise.all(Array.from({ length: 40 }, (_, i) => post(base, i % 4 ? '/v1/graphql' : '/v1/graphql?via=hono', list(limits[i % 3]))));
    got.forEach((r, i) => expect(r.text, `request ${i}`).toBe(want[i % 3]));
  });

  it("says an answer's bytes are written only once the client has taken them all, or at once where they were copied", async () => {
    // 8 MB, more than the socket and the kernel take while the client does not read.
    const socket = connect(l.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    let got = 0;
    socket.on('data', (c: Buffer) => (got += c.length));
    socket.pause();
    socket.write('POST /v1/probe/big HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}');
    await new Promise((r) => setTimeout(r, 300));
    expect(bigWritten).toEqual([]);
    const ended = new Promise((r) => socket.once('end', r));
    socket.resume();
    await ended;
    expect(got).toBeGreaterThan(BIG.length);
    expect(bigWritten).toEqual(['node']);
    // hono's path copies the parts into one buffer: they are free as soon as it has.
    bigWritten.length = 0;
    const hono = await fetch(`${base}/v1/probe/big?via=hono`, { method: 'POST', body: '{}' });
    expect(bigWritten).toEqual(['hono']);
    expect((await hono.arrayBuffer()).byteLength).toBe(BIG.length + 2);
  });
});

describe("routes served from Node's request, their API off", () => {
  let s: TestServer;
  let l: Listening;
  beforeAll(async () => {
    s = await startServer({ config: { enabledApis: ['metadata'] } });
    l = await listen(s);
  });
  afterAll(async () => {
    await l?.close();
    await s?.stop();
  });

  it('answers 404 as hono does, logged with no operation', async () => {
    const base = `http://127.0.0.1:${l.port}`;
    const b = JSON.stringify({ query: '{ __typename }' });
    const at = s.logs.length;
    const node = await post(base, '/v1/graphql', b);
    expect(node).toEqual(await post(base, '/v1/graphql?via=hono', b));
    expect(node.status).toBe(404);
    expect(JSON.parse(node.text)).toEqual({ path: '$', error: 'resource does not exist', code: 'not-found' });
    const logged = s.logs.slice(at).filter((x) => x.type === 'http-log').map((x) => [x.detail.operation.type, x.detail.http_info.status]);
    expect(logged).toEqual([
      [null, 404],
      [null, 404],
    ]);
  });
});
