/**
 * Note [Read buffers given back] (./pg-socket.ts): postgres.js reads PostgreSQL's messages whole
 * from our socket, a large one from a buffer that is read into again only once given back. The
 * cutting is checked on a real session's bytes split at every kind of place; the sockets on a real
 * PostgreSQL, through a proxy that hands its answers over a few bytes at a time; the give-back on
 * large values (reused only once given back, once); and a server that sends a bad length, which
 * ends the connection and not the process.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import fc from 'fast-check';
import postgres from 'postgres';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../../../test/helpers.js';
import { driverOptions, giveBackRead, LARGE, Messages, NegotiatingSocket, readBuffers } from './pg-socket.js';
import { pgTls } from './tls.js';

let url: string;
beforeAll(async () => {
  url = (await createDatabase('pg_socket')).url;
});

/** A pool reading through this module's sockets: pgSocket with sslmode=disable, NegotiatingSocket
 * with libpq's default (prefer), which the run's PostgreSQL (no TLS) answers with N. */
function pool(u = url, max = 3, sslmode: 'disable' | 'prefer' = 'disable', extra: postgres.Options<{}> = {}): postgres.Sql {
  const { url: bare, tls } = pgTls(`${u}?sslmode=${sslmode}`, undefined, {});
  const options = driverOptions(bare, tls);
  expect(options.socket).toBeTypeOf('function');
  return postgres(bare, { ...options, max, onnotice: () => {}, ...extra });
}

/** A TCP proxy to `target` that records what the server sent and hands it to the client in
 * pieces of `sizes` bytes in turn, each in its own turn of the event loop. */
async function proxy(target: URL, sizes: number[] = []) {
  const sent: Buffer[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    client.pipe(upstream);
    let queue = Promise.resolve();
    let turn = 0;
    upstream.on('data', (chunk: Buffer) => {
      sent.push(chunk);
      if (!sizes.length) return void client.write(chunk);
      queue = queue.then(async () => {
        for (let p = 0; p < chunk.length; ) {
          const n = sizes[turn++ % sizes.length]!;
          client.write(chunk.subarray(p, p + n));
          p += n;
          await new Promise((r) => setImmediate(r));
        }
      });
    });
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const u = new URL(target);
  u.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return { url: u.toString(), sent: () => Buffer.concat(sent), close: () => new Promise((r) => server.close(r)) };
}

/** The messages of a byte stream, by their headers. */
function cut(stream: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let p = 0; p < stream.length; ) {
    const size = 1 + stream.readUInt32BE(p + 1);
    out.push(stream.subarray(p, p + size));
    p += size;
  }
  return out;
}

describe('whole messages (Note [Read buffers given back])', () => {
  let session: Buffer;
  beforeAll(async () => {
    // A real session's bytes from PostgreSQL: start-up, small rows, an error, a large value.
    const p = await proxy(new URL(url));
    const sql = postgres(p.url, { max: 1, onnotice: () => {} });
    try {
      await sql`select 1 as one, 'two' as two`;
      await sql`select g, repeat('x', g) from generate_series(1, 300) g`;
      await expect(sql`select 1/0`).rejects.toThrow(/division by zero/);
      await sql`select repeat('y', ${LARGE * 3}) as big`;
    } finally {
      await sql.end();
      await p.close();
    }
    session = p.sent();
    expect(session.length).toBeGreaterThan(LARGE * 3);
  });

  /** An emitted buffer that is one large message. */
  const isLarge = (b: Buffer) => b.length >= LARGE && cut(b).length === 1;

  /** What Messages emits for `session` read in pieces ending at `cuts`. */
  function emitted(cuts: number[]): Buffer[] {
    const socket = Object.assign(new EventEmitter(), { destroyed: false, destroy: (e?: Error) => { throw e ?? new Error('destroyed'); } });
    const out: Buffer[] = [];
    socket.on('data', (b: Buffer) => out.push(b));
    const m = new Messages(socket as never);
    const read = Buffer.alloc(64 << 10);
    let from = 0;
    for (const to of [...cuts, session.length]) {
      // Node's reads are at most the read buffer's size; each lands at its start, over the last.
      for (let p = from; p < to; p += read.length) {
        const n = Math.min(read.length, to - p);
        session.copy(read, 0, p, p + n);
        m.read(read, n);
      }
      from = to;
    }
    return out;
  }

  it('hands over whole messages, in order, however the reads split them', () => {
    const messages = cut(session);
    const check = (cuts: number[]) => {
      const out = emitted(cuts);
      expect(Buffer.concat(out).equals(session)).toBe(true);
      // Each emitted buffer is whole messages.
      let i = 0;
      for (const b of out) for (const m of cut(b)) expect(m.equals(messages[i++]!)).toBe(true);
      expect(i).toBe(messages.length);
    };
    // Every split inside the first messages' headers and bodies, one byte at a time.
    for (let k = 1; k < 40; k++) check([k]);
    check(Array.from({ length: session.length - 1 }, (_, k) => k + 1).filter((k) => k < 200 || k % 997 === 0));
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 1, max: session.length - 1 }), { maxLength: 60 }), (cuts) => check(cuts.sort((a, b) => a - b))), { numRuns: 200 });
  });

  it('reads a large message into a buffer of its own, and a given-back one is the next large one\'s', () => {
    const large = cut(session).find((m) => m.length >= LARGE)!;
    const before = { ...readBuffers };
    const [first] = emitted([]).filter(isLarge);
    expect(first!.equals(large)).toBe(true);
    expect(readBuffers.large).toBe(before.large + 1);
    // Not given back: the next is read elsewhere, the first as it was.
    const [second] = emitted([7]).filter(isLarge);
    expect(second!.buffer).not.toBe(first!.buffer);
    expect(readBuffers.reused).toBe(before.reused);
    // Given back (a second time, and a value not read so, do nothing): read into again.
    giveBackRead(first!.subarray(100, 200));
    giveBackRead(first);
    giveBackRead(Buffer.from('x'));
    giveBackRead(null);
    expect(readBuffers.givenBack).toBe(before.givenBack + 1);
    const [third] = emitted([3, 5000]).filter(isLarge);
    expect(third!.buffer).toBe(first!.buffer);
    expect(readBuffers.reused).toBe(before.reused + 1);
    expect(third!.equals(large)).toBe(true);
    const [fourth] = emitted([]).filter(isLarge);
    expect(fourth!.buffer).not.toBe(first!.buffer);
  });
});

describe('postgres.js through the socket', () => {
  it.each(['disable', 'prefer'] as const)('answers small and large queries, many at once, through reads of a few bytes (sslmode %s)', async (sslmode) => {
    const p = await proxy(new URL(url), [1, 2, 3, 5, 7, 4096, 13]);
    const sql = pool(p.url, 3, sslmode);
    try {
      const asks = Array.from({ length: 24 }, (_, k) =>
        k % 4 === 0
          ? sql`select repeat(${String.fromCharCode(97 + k)}, ${LARGE + k * 1000}) as v`.then((r) => expect(r[0]!.v).toBe(String.fromCharCode(97 + k).repeat(LARGE + k * 1000)))
          : sql`select g, 'row ' || g as name from generate_series(1, ${k * 10}) g`.then((r) => expect(r).toEqual(Array.from({ length: k * 10 }, (_, i) => ({ g: i + 1, name: `row ${i + 1}` })))),
      );
      await Promise.all(asks);
      await expect(sql`select 1/0`).rejects.toThrow(/division by zero/);
      expect((await sql`select 2 as two`)[0]!.two).toBe(2);
    } finally {
      await sql.end();
      await p.close();
    }
  });

  it('a large raw value is read into a given-back buffer only once it is given back', async () => {
    const sql = pool(url, 1);
    try {
      const big = async (c: string) => ((await sql.unsafe(`select repeat('${c}', ${LARGE * 2})`).raw()) as unknown as Buffer[][])[0]![0]!;
      const before = { ...readBuffers };
      const a = await big('a');
      const b = await big('b');
      expect(readBuffers.large).toBe(before.large + 2);
      expect(b.buffer).not.toBe(a.buffer);
      expect(a.toString()).toBe('a'.repeat(LARGE * 2));
      giveBackRead(a);
      const c = await big('c');
      expect(c.buffer).toBe(a.buffer);
      expect(readBuffers.reused).toBe(before.reused + 1);
      expect(c.toString()).toBe('c'.repeat(LARGE * 2));
      expect(b.toString()).toBe('b'.repeat(LARGE * 2));
    } finally {
      await sql.end();
    }
  });

  it('gives every pool this module\'s sockets, TLS or not; to several hosts, a socket to the host postgres.js names', async () => {
    const options = (u: string) => driverOptions(pgTls(u, undefined, {}).url, pgTls(u, undefined, {}).tls);
    for (const u of ['postgres://u@a/db', 'postgres://u@a/db?sslmode=require', 'postgres://u@a/db?sslmode=disable', 'postgres://u@a:5432,b:5433/db', 'postgres://u@a:5432,b:5433/db?sslmode=disable']) {
      const o = options(u);
      expect(o.ssl, u).toBe(false);
      expect(o.socket, u).toBeTypeOf('function');
    }
    const socket = options('postgres://u@127.0.0.1:1/db').socket!({ host: ['127.0.0.1'], port: [1] });
    expect(socket).toBeInstanceOf(NegotiatingSocket);
    socket.on('error', () => {});
    socket.destroy();
    const plain = options('postgres://u@127.0.0.1:1/db?sslmode=disable').socket!({ host: ['127.0.0.1'], port: [1] });
    expect(plain).toBeInstanceOf(net.Socket);
    plain.on('error', () => {});
    plain.destroy();
    // The second of two hosts: a socket to it alone (its name and port are the connection's).
    const second = options('postgres://u@127.0.0.1:1,localhost:2/db?sslmode=disable').socket!({ host: ['127.0.0.1', 'localhost'], port: [1, 2] }, 1) as net.Socket & { host: string; port: number };
    expect([second.host, second.port]).toEqual(['localhost', 2]);
    second.on('error', () => {});
    second.destroy();
  });

  it.each(['disable', 'prefer'] as const)('a server that never answers is postgres.js\'s connect timeout, naming the server as it does (sslmode %s)', async (sslmode) => {
    const held: net.Socket[] = [];
    const silent = net.createServer((c) => void held.push(c));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    const sql = pool(`postgres://u@127.0.0.1:${port}/db`, 1, sslmode, { connect_timeout: 1 });
    try {
      await expect(sql`select 1`).rejects.toThrow(`write CONNECT_TIMEOUT 127.0.0.1:${port}`);
    } finally {
      await sql.end({ timeout: 1 });
      for (const c of held) c.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('a server that sends a message shorter than its header ends the connection, not the process', async () => {
    const bad = net.createServer((c) => c.once('data', () => c.write(Buffer.from([0x52, 0, 0, 0, 2]))));
    await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
    const sql = pool(`postgres://u@127.0.0.1:${(bad.address() as net.AddressInfo).port}/db`, 1);
    try {
      await expect(sql`select 1`).rejects.toThrow(/less than its header's|CONNECTION/);
    } finally {
      await sql.end({ timeout: 1 });
      await new Promise((r) => bad.close(r));
    }
  });
});


/** PostgreSQL's ErrorResponse: FATAL, SQLSTATE 53300, `message`. */
function errorResponse(message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0C53300\0M${message}\0\0`);
  const e = Buffer.alloc(5);
  e.write('E');
  e.writeUInt32BE(4 + fields.length, 1);
  return Buffer.concat([e, fields]);
}

describe('the answer to the TLS request (Note [TLS in the socket])', () => {
  /** A server answering the first thing it is sent (the SSLRequest) with `answer`; what it got. */
  async function answering(answer: Buffer): Promise<{ url: string; got: Buffer[]; close(): Promise<void> }> {
    const got: Buffer[] = [];
    const conns: net.Socket[] = [];
    const server = net.createServer((c) => {
      conns.push(c);
      c.on('data', (d) => got.push(d));
      c.once('data', () => c.write(answer));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `postgres://u@127.0.0.1:${(server.address() as net.AddressInfo).port}/db`,
      got,
      close: async () => {
        for (const c of conns) c.destroy();
        await new Promise((r) => server.close(r));
      },
    };
  }
  const through = (url: string, sslmode: string) => {
    const { url: bare, tls } = pgTls(`${url}?sslmode=${sslmode}`, undefined, {});
    return postgres(bare, { ...driverOptions(bare, tls), max: 1, connect_timeout: 2, onnotice: () => {} });
  };

  it.each([
    ['S and more, in the clear (CVE-2021-23222)', Buffer.from('SX'), 'prefer', /unencrypted data after its answer to the TLS request/],
    ['N where TLS is required', Buffer.from('N'), 'require', /server does not support SSL, but SSL was required/],
    ['neither S nor N', Buffer.from('Z'), 'prefer', /answered the TLS request with 90, neither S nor N/],
  ])('%s: the query fails, nothing more is sent', async (_, answer, sslmode, message) => {
    const server = await answering(answer);
    const sql = through(server.url, sslmode);
    try {
      await expect(sql`select 1`).rejects.toThrow(message);
      // The SSLRequest only: the startup message (user, database) never went out.
      expect(Buffer.concat(server.got)).toEqual(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
    } finally {
      await sql.end({ timeout: 1 });
      await server.close();
    }
  });

  it('allow: a plain connection refused, then a server without TLS: libpq\'s error, and only the two attempts', async () => {
    const refusal = errorResponse('no pg_hba.conf entry for host "127.0.0.1", no encryption');
    const got: Buffer[][] = [];
    const conns: net.Socket[] = [];
    // The first connection's startup is refused; the second's SSLRequest answered N.
    const server = net.createServer((c) => {
      const k = got.push([]) - 1;
      conns.push(c);
      c.on('data', (d) => got[k]!.push(d));
      c.once('data', () => c.write(k === 0 ? refusal : Buffer.from('N')));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const sql = through(`postgres://u@127.0.0.1:${(server.address() as net.AddressInfo).port}/db`, 'allow');
    // postgres.js asks its socket for TCP keepalive once; the second connection has it too.
    const kept = new Set<net.Socket>();
    const setKeepAlive = net.Socket.prototype.setKeepAlive;
    net.Socket.prototype.setKeepAlive = function (this: net.Socket, ...args: Parameters<net.Socket['setKeepAlive']>) {
      if (args[0]) kept.add(this);
      return setKeepAlive.apply(this, args);
    };
    try {
      await expect(sql`select 1`).rejects.toThrow(/server does not support SSL, but SSL was required/);
      expect(kept.size).toBe(2);
      expect(got).toHaveLength(2);
      // The first attempt was the startup message itself (protocol 3.0), the second an SSLRequest.
      expect(Buffer.concat(got[0]!).readUInt32BE(4)).toBe(196608);
      expect(Buffer.concat(got[1]!)).toEqual(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
    } finally {
      net.Socket.prototype.setKeepAlive = setKeepAlive;
      await sql.end({ timeout: 1 });
      for (const c of conns) c.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it('an ErrorResponse instead (a server too busy) is postgres.js\'s to report', async () => {
    const server = await answering(errorResponse('sorry, too many clients already'));
    const sql = through(server.url, 'prefer');
    try {
      await expect(sql`select 1`).rejects.toThrow(/sorry, too many clients already/);
    } finally {
      await sql.end({ timeout: 1 });
      await server.close();
    }
  });
});
