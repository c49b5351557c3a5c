/**
 * Note [Poolers] in ./connection.ts: on a source with use_prepared_statements: false, nothing is
 * written to a connection behind a statement that is still running, since a transaction pooler
 * may lend the server connection to another client as soon as the statement ahead is answered.
 * Checked on the wire, without a pooler: a proxy between the source's pool and PostgreSQL reads
 * the protocol both ways and notes every statement (Parse or Query) a client sends while it still
 * waits for an answer (a Sync or Query not yet answered by ReadyForQuery, or a Flush not followed
 * by its Sync).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import net from 'node:net';
import { createDatabase } from '../../../test/helpers.js';
import { PgConnection } from './connection.js';

interface Proxy {
  url: string;
  /** Statements written behind an unanswered one, per client connection, over all. */
  pipelined: number;
  statements: number;
  close(): Promise<void>;
}

/** PostgreSQL's SSLRequest code: the client's untyped message asking for TLS, answered by one
 * byte (N from a server without TLS), then the startup message. */
const SSL_REQUEST = 80877103;

/** Reads PostgreSQL protocol messages from a stream: `first` is the untyped startup message (after
 * an SSLRequest and its one-byte answer, which `tls` carries from the client's reader to the
 * server's). */
function reader(onMessage: (type: string) => void, startup: boolean, tls: { answers: number }) {
  let buf = Buffer.alloc(0);
  let first = startup;
  return (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (!startup && tls.answers > 0) {
        if (buf.length < 1) return;
        buf = buf.subarray(1);
        tls.answers--;
        continue;
      }
      if (first) {
        if (buf.length < 8) return;
        const len = buf.readInt32BE(0);
        if (buf.length < len) return;
        if (buf.readInt32BE(4) === SSL_REQUEST) tls.answers++;
        else first = false;
        buf = buf.subarray(len);
        continue;
      }
      if (buf.length < 5) return;
      const len = buf.readInt32BE(1);
      if (buf.length < len + 1) return;
      onMessage(String.fromCharCode(buf[0]!));
      buf = buf.subarray(len + 1);
    }
  };
}

async function startProxy(upstream: string): Promise<Proxy> {
  const up = new URL(upstream);
  const sockets = new Set<net.Socket>();
  const proxy: Proxy = { url: '', pipelined: 0, statements: 0, close: async () => {} };
  const server = net.createServer((client) => {
    const server = net.connect(Number(up.port), up.hostname);
    sockets.add(client).add(server);
    let unanswered = 0; // Syncs and Queries sent, not yet answered by ReadyForQuery
    let flushed = false; // a Flush sent and its Sync not yet
    const tls = { answers: 0 }; // SSLRequests sent, their answer not yet read
    client.on(
      'data',
      reader((t) => {
        if (t === 'P' || t === 'Q') {
          proxy.statements++;
          if (unanswered > 0 || flushed) proxy.pipelined++;
        }
        if (t === 'S' || t === 'Q') unanswered++;
        if (t === 'H') flushed = true;
        if (t === 'S') flushed = false;
      }, true, tls),
    );
    server.on(
      'data',
      reader((t) => {
        if (t === 'Z' && unanswered > 0) unanswered--;
      }, false, tls),
    );
    client.pipe(server);
    server.pipe(client);
    const end = () => {
      client.destroy();
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const u = new URL(upstream);
  u.hostname = '127.0.0.1';
  u.port = String((server.address() as net.AddressInfo).port);
  proxy.url = u.toString();
  proxy.close = () =>
    new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return proxy;
}

let url: string;
let proxy: Proxy;
const conns: PgConnection[] = [];
beforeAll(async () => {
  url = (await createDatabase()).url;
  proxy = await startProxy(url);
});
afterAll(async () => {
  for (const c of conns) await c.close();
  await proxy.close();
});

/** 200 statements at once (half with parameters, half without, some asking to be prepared) on a
 * pool of 2, then 20 transactions at once with two statements each. */
async function load(c: PgConnection): Promise<void> {
  const query = c.executor.query as (text: string, params: unknown[], opts?: { prepare: boolean }) => Promise<{ v: number }[]>;
  const answers = await Promise.all(
    Array.from({ length: 200 }, (_, i) => (i % 2 ? query('select $1::int as v', [i], i % 3 ? undefined : { prepare: true }) : query(`select ${i}::int as v`, [], { prepare: true }))),
  );
  expect(answers.map((r) => r[0]!.v)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const t = await c.transaction();
      expect(await t.query('select $1::int as v', [i])).toEqual([{ v: i }]);
      expect(await t.query(`select ${i}::int as v`)).toEqual([{ v: i }]);
      await t.commit();
    }),
  );
}

describe('pipelining on a source connection', () => {
  it('with use_prepared_statements: false, no statement is written behind an unanswered one', async () => {
    const c = new PgConnection('t', { connection_info: { database_url: proxy.url, pool_settings: { max_connections: 2 } } }, {});
    conns.push(c);
    proxy.pipelined = proxy.statements = 0;
    await load(c);
    expect(proxy.statements).toBeGreaterThan(240);
    expect(proxy.pipelined).toBe(0);
  });

  it('with use_prepared_statements: true, postgres.js pipelines (what the proxy sees, shown on a direct connection)', async () => {
    const c = new PgConnection('t', { connection_info: { database_url: proxy.url, use_prepared_statements: true, pool_settings: { max_connections: 2 } } }, {});
    conns.push(c);
    proxy.pipelined = proxy.statements = 0;
    await load(c);
    expect(proxy.pipelined).toBeGreaterThan(0);
  });
});
