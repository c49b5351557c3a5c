/**
 * The socket postgres.js talks to PostgreSQL through (its `socket` option): PostgreSQL's messages
 * handed over whole, a large one in a buffer that is written into again once given back (Note
 * [Read buffers given back]).
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { lendAnswer } from '../../../core/schema/contract.js';
import { IdleList } from './idle.js';
import { postgresSsl, tlsOptions, type PgTls } from './tls.js';

/*
 * Note [Read buffers given back]
 * Every ArrayBuffer V8 makes counts toward its external memory, and every 64 MiB of it starts a
 * mark-compact, however little of V8's own heap is live. Reading a large message, the bench's
 * large list (330 KB of records in one DataRow), cost that twice per request: Node made a buffer
 * per socket read (64 KiB or less each), and postgres.js, which takes a message only whole,
 * copied the reads into one more buffer of the message's size. On the two-core machine at 150
 * req/s that was a mark-compact every 80 requests, 19-21 per 10 s run taking 440-480 ms of the
 * main thread: 40% of its time (`npm run bench:gc -- --only large --rate 150`, 2026-11-27).
 *
 * So postgres.js's socket is this one (its `socket` option, `driverOptions`): Node reads
 * into one buffer that is read into again (`onread`), and this module hands postgres.js whole
 * messages. A run of whole messages within a read is copied out at once (a run under 4 KiB from
 * Node's pooled slab, where Node's own reads each made an ArrayBuffer); a message that spans
 * reads is copied into a buffer of its size as the reads come, and a large one (LARGE and more)
 * into a buffer taken from those given back, if one fits. postgres.js then reads each message where it
 * is (`incoming = x`), a raw value being a view of it; whoever reads a large raw value through and
 * keeps nothing of it (the records writer, Note [Lists as records] in ./records.ts) gives its
 * message's buffer back (`giveBackRead`), and the next large message is read into it; a value
 * answered as PostgreSQL wrote it (Note [Answers as bytes] in core/schema/contract.ts) is lent to
 * its answer (`lendRead`, SourceConnection.answerBytes) and given back once the answer is sent,
 * like the records writer's own buffers (Note [Lent answer bytes] there). A value
 * never given back is the collector's, as before; a buffer is only ever read into again after its
 * give-back, so nothing that holds a view of a message can see it change unless it gave it back.
 *
 * postgres.js hands each message to its handlers as it would its own buffer's: a DataRow's raw
 * values are views of the message, its other values strings decoded from it. Over TLS the
 * socket is NegotiatingSocket (Note [TLS in the socket]): Node's TLS socket makes a buffer per
 * read, but a large message is still read into a buffer given back. A pool to several hosts
 * gets them too: postgres.js tries its hosts in turn per connection, and tells the socket
 * function which one to try (an edit `npm install` makes, Note [postgres.js's hosts tried in
 * turn] in server/patch-dependencies.mjs); a postgres.js without it makes its own sockets for
 * such a pool (socketToldHost).
 */

/** Node's reads land here, and are copied out before the next (they happen one at a time, each
 * handed to its socket's callback before another is made); made on the first socket. */
let reads: Buffer | undefined;

/** Messages from this size are read into buffers given back (Note [Read buffers given back]). */
export const LARGE = 64 << 10;
/** Given-back buffers kept: at most 32 MiB in all, each of at most 8 MiB. */
const idle = new IdleList<Buffer>((b) => b.length, 32 << 20, 8 << 20);
/** What the read buffers did (tests read it): large messages read, into a given-back buffer,
 * given back, kept. */
export const readBuffers = { large: 0, reused: 0, givenBack: 0, kept: 0 };

/** The ArrayBuffer property naming, while a large message read into it is out, the buffer that
 * holds it (the whole of it, which the message and its raw values are views of). */
const OUT = Symbol('svc.pgReadOut');
type Marked = ArrayBufferLike & { [OUT]?: Buffer };

function largeBuffer(size: number): Buffer {
  readBuffers.large++;
  let b = idle.take((x) => x.length >= size);
  if (b) readBuffers.reused++;
  else b = Buffer.allocUnsafeSlow(size);
  (b.buffer as Marked)[OUT] = b;
  return b;
}

/**
 * Gives back the buffer a raw value of a large message was read into, to be read into again
 * (Note [Read buffers given back]); nothing for any other value, nor a second time. The caller
 * keeps nothing of the message: no view of it, nor anything not copied out of it.
 */
export function giveBackRead(value: Uint8Array | null | undefined): void {
  const marked = value?.buffer as Marked | undefined;
  const whole = marked?.[OUT];
  if (!whole) return;
  marked![OUT] = undefined;
  readBuffers.givenBack++;
  if (idle.keep(whole)) readBuffers.kept++;
}

/**
 * A raw value answered as it is (Note [Answers as bytes] in core/schema/contract.ts): lent to the
 * answer if a large message was read into its buffer, that buffer given back once the answer is
 * sent (Note [Lent answer bytes] there); any other value as it is.
 */
export function lendRead(value: Uint8Array): Uint8Array {
  return (value.buffer as Marked)[OUT] ? lendAnswer(value, () => giveBackRead(value)) : value;
}

/** A message's first five bytes: its type and length (which counts itself, not the type). */
const HEADER = 5;

/** Cuts a connection's reads into PostgreSQL's messages and emits them as 'data', whole. */
export class Messages {
  /** A header that spans reads. */
  private header = Buffer.alloc(HEADER);
  private headerGot = 0;
  /** A message that spans reads: where it is written, how much of it has come. */
  private message: Buffer | undefined;
  private got = 0;
  private need = 0;

  constructor(private readonly socket: { emit(event: 'data', b: Buffer): unknown; destroy(e?: Error): unknown; readonly destroyed: boolean }) {}

  /**
   * The read b[0, n). `owned`: b is this read's alone (a TLS socket's), so runs of whole messages
   * go out as views of it, not copies. An error (a buffer that cannot be had) ends the
   * connection, not the process.
   */
  read(b: Buffer, n: number, owned = false): void {
    try {
      this.messages(b, n, owned);
    } catch (e) {
      this.socket.destroy(e as Error);
    }
  }

  private messages(b: Buffer, n: number, owned: boolean): void {
    let p = 0;
    while (p < n && !this.socket.destroyed) {
      if (this.message) {
        const k = Math.min(this.need - this.got, n - p);
        b.copy(this.message, this.got, p, p + k);
        this.got += k;
        p += k;
        if (this.got === this.need) this.emitMessage();
        continue;
      }
      if (this.headerGot > 0) {
        const k = Math.min(HEADER - this.headerGot, n - p);
        b.copy(this.header, this.headerGot, p, p + k);
        this.headerGot += k;
        p += k;
        if (this.headerGot < HEADER) return;
        this.headerGot = 0;
        if (!this.start(this.header, 0, HEADER)) return;
        continue;
      }
      // The whole messages from p, copied out at once.
      let q = p;
      while (q + HEADER <= n) {
        const size = 1 + b.readUInt32BE(q + 1);
        if (size < HEADER) return this.bad(size);
        if (q + size > n) break;
        q += size;
      }
      if (q > p) {
        let out: Buffer;
        if (owned) out = b.subarray(p, q);
        else {
          out = Buffer.allocUnsafe(q - p);
          b.copy(out, 0, p, q);
        }
        p = q;
        this.socket.emit('data', out);
        continue;
      }
      if (n - p < HEADER) {
        b.copy(this.header, 0, p, n);
        this.headerGot = n - p;
        return;
      }
      this.start(b, p, n);
      return;
    }
  }

  /** A message that spans reads, from its first bytes b[p, end) (its header at least). */
  private start(b: Buffer, p: number, end: number): boolean {
    const size = 1 + b.readUInt32BE(p + 1);
    if (size < HEADER) {
      this.bad(size);
      return false;
    }
    this.message = size >= LARGE ? largeBuffer(size) : Buffer.allocUnsafe(size);
    this.need = size;
    this.got = end - p;
    b.copy(this.message, 0, p, end);
    if (this.got === this.need) this.emitMessage();
    return true;
  }

  private emitMessage(): void {
    const m = this.message!;
    this.message = undefined;
    this.socket.emit('data', m.length === this.need ? m : m.subarray(0, this.need));
  }

  private bad(size: number): void {
    this.socket.destroy(new Error(`PostgreSQL sent a message of length ${size - 1}, less than its header's`));
  }
}

/** Node's `onread` for a connection: its reads into the one reused buffer, handed to `read`. */
function readsInto(read: (b: Buffer, n: number) => void): net.OnReadOpts {
  return { buffer: (reads ??= Buffer.allocUnsafe(LARGE)), callback: (n, b) => (read(b as Buffer, n), true) };
}

/**
 * postgres.js's `socket` option for a connection to one host with sslmode disable, or over a
 * Unix socket (Note [Read buffers given back]): a socket connecting to it that hands postgres.js
 * whole messages.
 */
export function pgSocket(o: PgSocketOptions): net.Socket {
  let messages: Messages | undefined;
  const where: net.NetConnectOpts = o.path ? { path: o.path } : { host: o.host[0]!, port: o.port[0]! };
  // Reads of at most LARGE bytes: a message larger than that always spans reads, so it is read
  // into a buffer of its own (one of exactly LARGE that lands whole in a read goes out in a run).
  where.onread = readsInto((b, n) => messages!.read(b, n));
  const socket = net.connect(where);
  messages = new Messages(socket);
  // postgres.js names the server in its connection errors from these, as it sets them on its own.
  return Object.assign(socket, { host: o.host[0], port: o.port[0] });
}

/** PostgreSQL's SSLRequest: length 8, the code 1234 5679. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
const S = 0x53;
const N = 0x4e;
const E = 0x45;

/*
 * Note [TLS in the socket]
 * postgres.js's `socket` option hands it a socket and leaves it no say over TLS (it would ask
 * for TLS over the given socket itself, then read through Node's TLS socket, which takes no
 * `onread`, and the pool's `ssl` is fixed when the pool is made). So a pool to one host that
 * attempts TLS (Note [TLS as libpq] in ./tls.ts) gets this socket, which negotiates it before
 * postgres.js's messages go out: it connects, sends the SSLRequest, and on PostgreSQL's answer
 * `S` starts TLS over the connection (Node's TLS socket, its reads handed to Messages as they
 * come: each is its own buffer, so runs of messages go out as views, and a large message is
 * still read into a buffer given back); on `N` it goes on without TLS, reading as pgSocket does
 * (`onread`), or fails where TLS is required (libpq's "server does not support SSL, but SSL was
 * required"); an `E` (a server too busy to negotiate) is handed to postgres.js as the message it
 * is. What postgres.js writes meanwhile (its startup message, which it writes at once) waits
 * and follows. With sslmode allow it connects without TLS first, and only if the server refuses
 * that (an ErrorResponse first: pg_hba.conf's hostssl) connects again with TLS required,
 * writing postgres.js's startup message again (`trialAnswer`), as libpq does; with prefer, a
 * handshake that fails is followed by a connection without TLS (`plain`), as libpq does too.
 * A byte after the `S` before the handshake is refused, as libpq does since CVE-2021-23222: it could only be a man in the middle's, sent in the clear. postgres.js's
 * connect timeout runs from when it has the socket, so it covers the negotiation; the socket
 * reports its errors and its close as events, as a net.Socket does, never by throwing.
 */

/** postgres.js's socket to one host when TLS is attempted (Note [TLS in the socket]). */
export class NegotiatingSocket extends EventEmitter {
  readonly host: string;
  readonly port: number;
  private tcp: net.Socket;
  private tls: tls.TLSSocket | undefined;
  /** 'trial': sslmode allow's plain attempt, its first answer not yet read; 'answer': awaiting S
   * or N; 'handshake': TLS being set up; 'open': postgres.js's. */
  private state: 'trial' | 'answer' | 'handshake' | 'open' = 'answer';
  private readonly waiting: [Uint8Array | string, ((e?: Error | null) => void) | undefined][] = [];
  /** What postgres.js wrote during the trial (its startup message), to write again over TLS. */
  private tried: (Uint8Array | string)[] = [];
  private readonly messages = new Messages(this);
  private errored = false;
  private closed = false;
  private keepAlive: [boolean | undefined, number | undefined] | undefined;
  destroyed = false;

  constructor(
    o: { host: string[]; port: number[] },
    private plan: PgTls,
  ) {
    super();
    this.host = o.host[0]!;
    this.port = o.port[0]!;
    this.tcp = this.connect();
    if (plan.mode === 'allow') this.state = 'trial';
    else this.ask();
  }

  /**
   * The connection, read with `onread`; with sslnegotiation=direct a TLS socket that makes its
   * own connection, which Node lets read with `onread` too (one made over a given socket it
   * does not), so its reads land in the same reused buffer, not one per TLS record.
   */
  private connect(): net.Socket {
    const onread = readsInto((b, n) => tcp === this.tcp && this.read(b, n));
    const tcp: net.Socket = this.plan.direct
      ? tls.connect({ ...tlsOptions(this.plan, this.host), port: this.port, onread } as tls.ConnectionOptions)
      : net.connect({ host: this.host, port: this.port, onread });
    this.watch(tcp);
    if (this.keepAlive) tcp.setKeepAlive(...this.keepAlive);
    return tcp;
  }

  /** Asks for TLS (or, sslnegotiation=direct, waits for the handshake the socket started). */
  private ask(): void {
    if (this.plan.direct) {
      this.state = 'handshake';
      this.tcp.once('secureConnect', () => this.open());
    } else this.tcp.write(SSL_REQUEST);
  }

  /** The socket postgres.js's messages go through: TLS's once it is up. */
  private get live(): net.Socket {
    return this.tls ?? this.tcp;
  }

  /** What net.Socket says; postgres.js sends its Terminate only to an 'open' socket. */
  get readyState(): string {
    return this.state === 'open' ? this.live.readyState : 'opening';
  }

  write(chunk: Uint8Array | string, cb?: (e?: Error | null) => void): boolean {
    if (this.state === 'trial') {
      this.tried.push(chunk);
      return this.tcp.write(chunk, cb);
    }
    if (this.state !== 'open') {
      this.waiting.push([chunk, cb]);
      return true;
    }
    return this.live.write(chunk, cb);
  }

  end(chunk?: Uint8Array | string): this {
    if (this.state === 'open' || this.state === 'trial') this.live.end(chunk ?? '');
    else this.destroy();
    return this;
  }

  destroy(error?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    if (error) this.fail(error);
    this.tls?.destroy();
    this.tcp.destroy();
    return this;
  }

  setKeepAlive(enable?: boolean, delay?: number): this {
    // Kept for a connection made again (allow's TLS attempt, prefer's plain one).
    this.keepAlive = [enable, delay];
    this.tcp.setKeepAlive(enable, delay);
    return this;
  }

  pause(): this {
    this.live.pause();
    return this;
  }

  resume(): this {
    this.live.resume();
    return this;
  }

  /** A read of the connection before TLS, or of a connection without it. */
  private read(b: Buffer, n: number): void {
    if (this.state === 'open') return this.messages.read(b, n);
    if (this.state === 'trial') return this.trialAnswer(b, n);
    if (this.state !== 'answer' || n === 0) {
      this.destroy(new Error('PostgreSQL sent data during the TLS handshake'));
      return;
    }
    const answer = b[0];
    if (answer === S) {
      if (n > 1) {
        this.destroy(new Error('PostgreSQL sent unencrypted data after its answer to the TLS request'));
        return;
      }
      this.state = 'handshake';
      // TLS takes the connection over once this read is done.
      process.nextTick(() => this.startTls());
    } else if (answer === N) {
      if (this.plan.required) {
        this.destroy(new Error('server does not support SSL, but SSL was required'));
        return;
      }
      this.open();
      if (n > 1) this.messages.read(b.subarray(1), n - 1);
    } else if (answer === E) {
      // The server's refusal (too many connections...), an ErrorResponse: postgres.js reads it.
      this.state = 'open';
      this.messages.read(b, n);
    } else {
      this.destroy(new Error(`PostgreSQL answered the TLS request with ${answer}, neither S nor N`));
    }
  }

  /**
   * sslmode allow, as libpq: the plain attempt's first answer. An ErrorResponse (the server
   * refuses the connection without TLS: pg_hba.conf's hostssl) is not postgres.js's to see: the
   * connection is made again, with TLS required, and what postgres.js wrote is written again
   * over it. Anything else: the plain connection is postgres.js's.
   */
  private trialAnswer(b: Buffer, n: number): void {
    if (b[0] !== E) {
      this.state = 'open';
      this.tried = [];
      this.messages.read(b, n);
      return;
    }
    const old = this.tcp;
    for (const chunk of this.tried) this.waiting.push([chunk, undefined]);
    this.tried = [];
    this.plan = { ...this.plan, required: true };
    this.state = 'answer';
    this.tcp = this.connect();
    old.destroy();
    this.ask();
  }

  /**
   * sslmode prefer (or allow's second attempt, which requires TLS, never comes here), as libpq:
   * a TLS handshake that failed (a root certificate given that the server's does not chain to,
   * a version outside the bounds) is followed by a connection without TLS, postgres.js's startup
   * message still waiting to be written.
   */
  private plain(): void {
    const [tls, tcp] = [this.tls, this.tcp];
    this.tls = undefined;
    this.tcp = this.connect();
    tls?.destroy();
    tcp.destroy();
    this.open();
  }

  private startTls(): void {
    if (this.destroyed) return;
    this.state = 'handshake';
    const t = tls.connect(tlsOptions(this.plan, this.host, this.tcp));
    this.tls = t;
    this.watch(t);
    t.on('data', (b: Buffer) => this.messages.read(b, b.length, true));
    t.once('secureConnect', () => this.open());
  }

  private open(): void {
    if (this.destroyed) return;
    this.state = 'open';
    for (const [chunk, cb] of this.waiting.splice(0)) this.live.write(chunk, cb);
  }

  /** A socket's errors, close and drain, as postgres.js's socket's: one error, one close; either
   * socket closing closes the other (a TLS socket that failed its handshake leaves no TCP open). */
  private watch(s: net.Socket): void {
    // A socket left behind (allow's plain attempt) says nothing more.
    const current = () => s === this.tcp || s === this.tls;
    s.on('error', (e) => {
      if (!current()) return;
      if (this.state === 'handshake' && !this.plan.required) this.plain();
      else this.fail(e);
    });
    s.on('close', (hadError: boolean) => {
      if (this.closed || !current()) return;
      this.closed = true;
      this.destroyed = true;
      this.tls?.destroy();
      this.tcp.destroy();
      this.emit('close', hadError || this.errored);
    });
    s.on('drain', () => current() && this.emit('drain'));
  }

  private fail(e: Error): void {
    if (this.errored || this.closed) return;
    this.errored = true;
    this.emit('error', e);
  }
}

let toldHost: boolean | undefined;
/** Whether the installed postgres.js tells its socket function which of a pool's hosts to try
 * (Note [postgres.js's hosts tried in turn] in server/patch-dependencies.mjs, which `npm install`
 * applies to 3.4.9). Read from the file postgres.js runs, once, by the first pool to several
 * hosts. */
export function socketToldHost(): boolean {
  if (toldHost === undefined) {
    try {
      toldHost = readFileSync(new URL('./connection.js', import.meta.resolve('postgres')), 'utf8').includes('options.socket(options, hostIndex)');
    } catch {
      toldHost = false;
    }
  }
  return toldHost;
}

/**
 * postgres.js's options for a pool to `url` (Note [TLS as libpq] in ./tls.ts): the sockets of
 * this module (Note [Read buffers given back]), to the host postgres.js tries: pgSocket with
 * sslmode disable or over a Unix socket, NegotiatingSocket otherwise (Note [TLS in the socket]).
 * A pool to several hosts with a postgres.js that does not say which host it tries
 * (socketToldHost) gets postgres.js's own sockets and TLS.
 */
export function driverOptions(url: string, plan: PgTls): { ssl: ReturnType<typeof postgresSsl>; socket?: (o: PgSocketOptions, host?: number) => net.Socket | NegotiatingSocket } {
  const authority = url.slice(url.indexOf('://') + 3).split(/[?/]/)[0]!;
  const hosts = decodeURIComponent(authority.slice(authority.lastIndexOf('@') + 1));
  if (hosts.includes(',') && !socketToldHost()) return { ssl: postgresSsl(plan) };
  const socket = (o: PgSocketOptions) => (plan.mode !== 'disable' && !o.path ? new NegotiatingSocket(o, plan) : pgSocket(o));
  // The host postgres.js tries now, as a pool of one host (TLS's server name and check are its).
  return { ssl: false, socket: (o, i = 0) => socket(o.host.length > 1 ? { host: [o.host[i]!], port: [o.port[i] ?? o.port[0]!], path: o.path } : o) };
}

type PgSocketOptions = { host: string[]; port: number[]; path?: string | false };
