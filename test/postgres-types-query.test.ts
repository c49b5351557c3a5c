/**
 * Note [postgres.js's types query] (server/patch-dependencies.mjs): a connection that closes (a
 * server restarted, a replica stopped) while postgres.js reads the array types, the first
 * statement on every new connection, or a failure of that statement, leaves no request waiting
 * for ever and no unhandled rejection. Checked on the installed postgres.js (the copies npm ci
 * patched), its own sockets and the engine's, through a TCP proxy in front of the run's
 * PostgreSQL that closes the first connection when it sees that query, or makes it fail.
 */
import net from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from './helpers.js';
import { driverFor } from '../plugins/postgres/index.js';
// @ts-expect-error: a plain .mjs script without types
import { postgresIndexState } from '../server/patch-dependencies.mjs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

let live: URL;
let proxy: net.Server;
let proxyPort: number;
/** What the proxy does to the next connection's types query: close the connection, or make the
 * query fail (a table name changed, the message's length kept); later ones pass untouched. */
let next: 'close' | 'break' | undefined;
const open = new Set<net.Socket>();

beforeAll(async () => {
  live = new URL((await createDatabase('pg_types_query')).url);
  proxy = net.createServer((client) => {
    const server = net.connect(Number(live.port), live.hostname);
    open.add(client).add(server);
    let mode = next;
    next = undefined;
    client.on('data', (b) => {
      if (mode && b.includes('typarray')) {
        if (mode === 'close') {
          client.destroy();
          server.destroy();
          return;
        }
        b = Buffer.from(b.toString('latin1').replace('pg_catalog.pg_type a', 'pg_catalog.pg_typx a'), 'latin1');
        mode = undefined;
      }
      server.write(b);
    });
    server.on('data', (b) => client.write(b));
    for (const [a, b] of [[client, server], [server, client]] as const) {
      a.on('close', () => b.destroy());
      a.on('error', () => b.destroy());
    }
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyPort = (proxy.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of open) s.destroy();
  await new Promise((r) => proxy.close(r));
});

/** `select 1` on a reserved connection of a fresh pool through the proxy, whose first connection
 * meets `mode` during the types query, then `select 2` on the pool: their answers or errors, and
 * the unhandled rejections meanwhile. */
async function throughProxy(engine: boolean, mode: 'close' | 'break'): Promise<{ answer: string; unhandled: unknown[] }> {
  const url = `postgres://${live.username}:${live.password}@127.0.0.1:${proxyPort}${live.pathname}?sslmode=disable`;
  const d = engine ? driverFor(url, undefined, {}) : { url, options: {} };
  const unhandled: unknown[] = [];
  const record = (e: unknown) => void unhandled.push(e);
  process.on('unhandledRejection', record);
  next = mode;
  const sql = postgres(d.url, { ...d.options, max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    // A reserved connection first (the engine's transactions), which is when postgres.js lets
    // the types query fail on its own.
    const answer = await Promise.race([
      sql.reserve().then(
        async (r) => {
          try {
            return `one ${(await r`select 1 as one`)[0]!.one}`;
          } finally {
            r.release();
          }
        },
        (e: Error) => e.message,
      ),
      new Promise<string>((r) => setTimeout(() => r('no answer'), 10_000)),
    ]);
    // A second query on the pool: the connection is usable afterwards.
    const again = await sql`select 2 as two`.then((r) => `two ${r[0]!.two}`, (e: Error) => e.message);
    await new Promise((r) => setTimeout(r, 50)); // a rejection is reported after a turn of the loop
    return { answer: `${answer}; ${again}`, unhandled };
  } finally {
    process.off('unhandledRejection', record);
    await sql.end({ timeout: 1 });
  }
}

describe("postgres.js's types query (Note [postgres.js's types query])", () => {
  it('every installed copy of index.js is ours (npm install ran server/patch-dependencies.mjs)', () => {
    const states = postgresIndexState(root) as { file: string; state: string }[];
    expect(states.map((s) => `${s.file} ${s.state}`)).toEqual(['src/index.js ours', 'cf/src/index.js ours', 'cjs/src/index.js ours']);
  });

  for (const engine of [false, true]) {
    const sockets = engine ? "the engine's sockets" : "postgres.js's sockets";
    it(`a connection closed during it: the reservation is served on the next connection, and nothing is left unhandled (${sockets})`, async () => {
      const { answer, unhandled } = await throughProxy(engine, 'close');
      expect(unhandled.map((e) => (e as Error).message)).toEqual([]);
      expect(answer).toBe('one 1; two 2');
    });

    it(`the query failing: the reservation fails with its error, and nothing is left unhandled (${sockets})`, async () => {
      const { answer, unhandled } = await throughProxy(engine, 'break');
      expect(unhandled.map((e) => (e as Error).message)).toEqual([]);
      expect(answer).toBe('relation "pg_catalog.pg_typx" does not exist; two 2');
    });
  }
});
