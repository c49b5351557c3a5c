/**
 * Note [postgres.js's hosts tried in turn] (server/patch-dependencies.mjs): a pool to several
 * hosts tries each once per connection and then reports the failure, instead of reconnecting for
 * ever; a host that does not answer in time is one failure like a refused one. Checked on the
 * installed postgres.js (the copies npm ci patched) against the run's PostgreSQL, hosts that
 * refuse (a port nothing listens on) and one that never answers (a TCP server that says nothing),
 * and through the engine, whose pg_add_source waited for ever on such a source.
 */
import net from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { postgresConnectionState } from '../server/patch-dependencies.mjs';
import path from 'node:path';
import { createDatabase, startServer, type TestServer } from './helpers.js';
import { driverFor } from '../plugins/postgres/index.js';

const root = path.resolve(import.meta.dirname, '..');

/** A port nothing listens on (taken, then given back). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

let live: URL;
let silent: net.Server;
let silentPort: number;
const held: net.Socket[] = [];
beforeAll(async () => {
  live = new URL((await createDatabase('pg_hosts')).url);
  silent = net.createServer((c) => void held.push(c));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const c of held) c.destroy();
  await new Promise((r) => silent.close(r));
});

/** The URL of the live database with `hosts` (host:port, ...) in place of its own. */
const withHosts = (hosts: string[]) => `postgres://${live.username}:${live.password}@${hosts.join(',')}${live.pathname}?sslmode=disable`;

/** `select 1` on a fresh pool, or its error's message; 'no answer' after 15 s. `engine`: through
 * the engine's driver options, its sockets (pgSocket, NegotiatingSocket), which postgres.js tells
 * the host to try (the same Note); else postgres.js's own sockets. */
async function ask(url: string, engine = false): Promise<string> {
  const d = engine ? driverFor(url, undefined, {}) : { url, options: {} };
  const sql = postgres(d.url, { ...d.options, max: 1, connect_timeout: 1, onnotice: () => {} });
  try {
    return await Promise.race([
      sql`select 1 as one`.then((r) => `one ${r[0]!.one}`, (e: Error) => e.message),
      new Promise<string>((r) => setTimeout(() => r('no answer'), 15_000)),
    ]);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

describe("postgres.js's hosts tried in turn (Note [postgres.js's hosts tried in turn])", () => {
  it('every installed copy of connection.js is ours (npm install ran server/patch-dependencies.mjs)', () => {
    const states = postgresConnectionState(root) as { file: string; state: string }[];
    expect(states.map((s) => `${s.file} ${s.state}`)).toEqual(['src/connection.js ours', 'cf/src/connection.js ours', 'cjs/src/connection.js ours']);
  });

  it('every host refusing: the query fails with the last host\'s error, no endless reconnects', async () => {
    const [a, b] = [await deadPort(), await deadPort()];
    expect(await ask(withHosts([`127.0.0.1:${a}`, `127.0.0.1:${b}`]))).toBe(`connect ECONNREFUSED 127.0.0.1:${b}`);
  });

  it('a host refusing, then the live one: the query is answered there', async () => {
    expect(await ask(withHosts([`127.0.0.1:${await deadPort()}`, live.host]))).toBe('one 1');
  });

  it('a host that never answers, then the live one: the timeout moves on to it', async () => {
    expect(await ask(withHosts([`127.0.0.1:${silentPort}`, live.host]))).toBe('one 1');
  });

  it('every host silent or refusing: the connect timeout is the answer', async () => {
    const dead = await deadPort();
    expect(await ask(withHosts([`127.0.0.1:${dead}`, `127.0.0.1:${silentPort}`]))).toBe(`write CONNECT_TIMEOUT 127.0.0.1:${silentPort}`);
  });
});

describe.each(['disable', 'prefer'])("the engine's sockets to several hosts, tried in turn (sslmode=%s)", (mode) => {
  const hosts = (hs: string[]) => withHosts(hs).replace('sslmode=disable', `sslmode=${mode}`);

  it('a host refusing, then the live one: answered there', async () => {
    expect(await ask(hosts([`127.0.0.1:${await deadPort()}`, live.host]), true)).toBe('one 1');
  });

  it('a host that never answers, then the live one: the timeout moves on to it', async () => {
    expect(await ask(hosts([`127.0.0.1:${silentPort}`, live.host]), true)).toBe('one 1');
  });

  it("every host refusing: the last host's error, no endless reconnects", async () => {
    const [a, b] = [await deadPort(), await deadPort()];
    expect(await ask(hosts([`127.0.0.1:${a}`, `127.0.0.1:${b}`]), true)).toBe(`connect ECONNREFUSED 127.0.0.1:${b}`);
  });

  it('target_session_attrs=read-only: a primary is passed over for the next host, and with none left the query fails', async () => {
    // Both hosts are the same primary: none is read-only.
    const url = `${hosts([live.host, live.host])}&target_session_attrs=read-only`;
    expect(await ask(url, true)).not.toBe('one 1');
    expect(await ask(`${hosts([live.host, live.host])}&target_session_attrs=read-write`, true)).toBe('one 1');
  });
});

describe('the engine on a database URL whose first host refuses', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ database: { url: withHosts([`127.0.0.1:${await deadPort()}`, live.host]).replace('?sslmode=disable', '') } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('boots on the live host (the catalog and the default source) and answers from it', async () => {
    await s.runSql(`create table hosts_t (id int primary key, v text); insert into hosts_t select i, repeat('x', 100) from generate_series(1, 1000) i`);
    const t = await s.metadata({ type: 'pg_track_table', args: { table: 'hosts_t' } });
    expect(t.status, t.text).toBe(200);
    const r = await s.gql('{ hosts_t(order_by: {id: asc}) { id v } }');
    expect(r.errors).toBeUndefined();
    expect(r.data.hosts_t.length).toBe(1000);
    expect(r.data.hosts_t[999]).toEqual({ id: 1000, v: 'x'.repeat(100) });
  });
});

describe('a source of several hosts, none of which answers, through the engine', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('pg_add_source answers 400 and adds nothing, rather than waiting for ever', async () => {
    const [a, b] = [await deadPort(), await deadPort()];
    const r = await s.metadata({
      type: 'pg_add_source',
      args: { name: 'nowhere', configuration: { connection_info: { database_url: `postgres://u@127.0.0.1:${a},127.0.0.1:${b}/db`, pool_settings: { pool_timeout: 1 } } } },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.text).toMatch(new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${b}`));
    const sources = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body.sources.map((x: { name: string }) => x.name);
    expect(sources).not.toContain('nowhere');
  }, 30_000);
});
