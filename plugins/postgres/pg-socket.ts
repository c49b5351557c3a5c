/**
 * The socket postgres.js talks to PostgreSQL through (its `socket` option): PostgreSQL's messages
 * handed over whole, a large one in a buffer that is written into again once given back (Note
 * [Read buffers given back]).
 */
import net from 'node:net';
import { lendAnswer } from '../../core/schema/contract.js';
import { IdleList } from './idle.js';

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
 * So postgres.js's socket is this one (its `socket` option, `readWholeMessages`): Node reads
 * into one buffer that is read into again (`onread`), and this module hands postgres.js whole
 * messages. A run of whole messages within a read is copied out at once (a run under 4 KiB from
 * Node's pooled slab, where Node's own reads each made an ArrayBuffer); a message that spans reads is copied into a
 * buffer of its size as the reads come, and a large one (LARGE and more) into a buffer taken from
 * those given back, if one fits. postgres.js then reads each message where it
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
 * values are views of the message, its other values strings decoded from it. A pool to several
 * hosts (postgres.js tries them in turn per connection, which a socket function cannot see) or
 * over TLS (Node's TLS socket reads the connection, and takes no `onread` over a socket given to
 * it) makes its own sockets and reads as before.
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

  constructor(private readonly socket: Pick<net.Socket, 'emit' | 'destroy' | 'destroyed'>) {}

  /** The read b[0, n). An error (a buffer that cannot be had) ends the connection, not the process. */
  read(b: Buffer, n: number): void {
    try {
      this.messages(b, n);
    } catch (e) {
      this.socket.destroy(e as Error);
    }
  }

  private messages(b: Buffer, n: number): void {
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
        const out = Buffer.allocUnsafe(q - p);
        b.copy(out, 0, p, q);
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

/**
 * postgres.js's `socket` option for a connection to one host, not over TLS (Note [Read buffers
 * given back]): a socket connecting to it that hands postgres.js whole messages.
 */
export function pgSocket(o: { host: string[]; port: number[]; path?: string | false }): net.Socket {
  let messages: Messages | undefined;
  const where: net.NetConnectOpts = o.path ? { path: o.path } : { host: o.host[0]!, port: o.port[0]! };
  // Reads of at most LARGE bytes: a message larger than that always spans reads, so it is read
  // into a buffer of its own (one of exactly LARGE that lands whole in a read goes out in a run).
  where.onread = { buffer: (reads ??= Buffer.allocUnsafe(LARGE)), callback: (n, b) => (messages!.read(b as Buffer, n), true) };
  const socket = net.connect(where);
  messages = new Messages(socket);
  // postgres.js names the server in its connection errors from these, as it sets them on its own.
  return Object.assign(socket, { host: o.host[0], port: o.port[0] });
}

/**
 * Reads the connections of a postgres.js pool through pgSocket where they are to one host and
 * not over TLS (Note [Read buffers given back]); any other pool is left as it is. postgres.js
 * reads its parsed options' `socket` as it connects, so it is set on the pool's options.
 */
export function readWholeMessages(pool: { options: object }): void {
  const o = pool.options as { host: string[]; ssl: unknown; socket?: unknown };
  if (o.host.length === 1 && !o.ssl && !o.socket) o.socket = pgSocket;
}
