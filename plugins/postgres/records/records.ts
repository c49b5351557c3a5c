/**
 * Writes the JSON of a list from PostgreSQL's text of its rows (Note [Lists as records]).
 */
import { lendAnswer } from '../../../core/schema/contract.js';
import { IdleList } from '../connection/idle.js';
import { giveBackRead, LARGE } from '../connection/pg-socket.js';
import { OFFLOAD_MIN, writeByWorker } from './records-pool.js';

/*
 * Note [Lists as records]
 * PostgreSQL writing JSON pays for every value of every row: composite_to_json looks up each
 * column's type category and output function again and escapes each key again, row after row.
 * On Chinook's 3,503 tracks with album and genre, json_agg of the rows costs it about twice what
 * sending the same rows costs; record_out, which keeps its columns' output functions for the
 * whole statement, costs about what sending them does (docs/benchmarks.md, "Lists as records").
 * So a root list the GraphQL plan runs is asked as the text of its rows written back to back,
 *   select string_agg(row(_t0."id", _t0."title")::text || (<nested list>), '' order by ...) as json
 * each row a record, `(1,"Balls to the Wall",...)`: an object relationship read by a join inline
 * in its parent's record (a boolean, whether it has a row, then its fields), one read by a
 * subquery its row's text, quoted, in its parent's record. A nested list is the same texts of its
 * rows between brackets, `[(1,a)(2,b)]` (`[]` for none), written after the record that holds its
 * parent's fields before it; the parent's fields after it are a record again. So a row is a
 * sequence of records and lists, `(1,x)[(7,a)(8,b)](t)`, and a nested list is never a field of a
 * record: record_out would quote it, doubling every quote in it at each level, for PostgreSQL to
 * write and Node to undo. This module writes the JSON from that text in
 * Node, with the keys, which it knows from the plan. PostgreSQL does the least work per row, and
 * Node one pass over bytes it already holds: about 1 µs per row on the two-core machine, less
 * than PostgreSQL saves on the large list, about as much on the nested one (docs/benchmarks.md).
 * Subscriptions, by-pk fields, aggregates and mutations keep their JSON built in PostgreSQL
 * (their statements are not asked with SelectOptions.records), and so do `_groups` root fields,
 * whose text costs PostgreSQL what their records would (Note [Root groups as text] in
 * ./compile-groups.ts).
 *
 * What a column holds decides how it is written (`RecordCol`), and only where its text output is
 * its JSON exactly: integers as they are; floats and numerics as they are unless NaN or an
 * infinity, which PostgreSQL's JSON writes as strings; booleans `t`/`f`; the types PostgreSQL's
 * JSON writes as the string of their text output (text, varchar, uuid, time, interval...) as JSON
 * strings; json and jsonb as they are. Any other type (dates and timestamps, whose JSON is not
 * their text output; arrays; enums, domains, and types with casts to json) is sent as
 * `to_json(value)`, PostgreSQL's own JSON of it, written as it is: the answer is the JSON that
 * json_agg would have written, less its whitespace. The compiler (./compile.ts, `recordObject`)
 * decides; objects it cannot write as rows, aggregates and groups stay JSON inside the record.
 *
 * record_out's text: fields separated by commas in parentheses; NULL is nothing; a value is
 * quoted when empty or when it holds a quote, backslash, parenthesis, comma or white space, and
 * inside quotes `"` and `\` are doubled. Nothing else is escaped, so a value may hold any other
 * byte (control characters included), and the text is UTF-8, copied byte by byte.
 */

/** How a column of a record is written (Note [Lists as records]). */
export type RecordCol =
  | 'int'
  | 'number'
  | 'bool'
  | 'string'
  | 'json'
  /** A record of the row's fields; null for none. */
  | { k: 'object'; row: RecordRow }
  /** Records written back to back; null for none. */
  | { k: 'list'; row: RecordRow }
  /** The object's fields inline, after a boolean column: whether there is an object. */
  | { k: 'inline'; row: RecordRow };

/** A record's columns: the object's keys, in order, and how each is written. */
export interface RecordRow {
  keys: readonly string[];
  cols: readonly RecordCol[];
}

const COMMA = 0x2c;
const RPAREN = 0x29;
const LPAREN = 0x28;
const QUOTE = 0x22;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const BACKSLASH = 0x5c;

/** Bytes a JSON string must escape: control characters, `"` and `\`. */
const ESCAPE = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) ESCAPE[c] = 1;
ESCAPE[QUOTE] = 1;
ESCAPE[BACKSLASH] = 1;
const HEX = Buffer.from('0123456789abcdef');
const SHORT: Record<number, number> = { 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72 };
const NULL = Buffer.from('null');
const EMPTY_LIST = Buffer.from('[]');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

/** The text is not record_out's of the plan's rows (a bug: the statement and the plan disagree). */
class RecordsError extends Error {}

class Writer {
  out: Buffer;
  w = 0;
  constructor(size: number, buffer?: Buffer) {
    this.out = buffer && buffer.length >= size ? buffer : Buffer.allocUnsafe(Math.max(256, size));
  }

  /** Room for `n` more bytes. */
  room(n: number): Buffer {
    if (this.w + n > this.out.length) {
      const next = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.w + n));
      this.out.copy(next, 0, 0, this.w);
      this.out = next;
    }
    return this.out;
  }

  bytes(b: Uint8Array): void {
    const o = this.room(b.length);
    let w = this.w;
    for (let i = 0; i < b.length; i++) o[w++] = b[i]!;
    this.w = w;
  }

  byte(c: number): void {
    this.room(1)[this.w++] = c;
  }
}

/**
 * A field of a record at src[p]: its content as a range of `src`, or, when quoted, of a copy
 * with the quoting undone; `end` is where the field ends (at its delimiter). `null` for NULL.
 */
interface Field {
  src: Uint8Array;
  from: number;
  to: number;
  end: number;
}

function readField(src: Uint8Array, p: number, f: Field): boolean {
  let c = src[p];
  if (c === COMMA || c === RPAREN) {
    f.end = p;
    return false;
  }
  if (c !== QUOTE) {
    const from = p;
    while ((c = src[p]) !== COMMA && c !== RPAREN) {
      if (c === undefined) throw new RecordsError('a record ends inside a field');
      p++;
    }
    f.src = src;
    f.from = from;
    f.to = p;
    f.end = p;
    return true;
  }
  // Quoted: the content without the doubling. Most values have nothing doubled; they are read in
  // place.
  const from = ++p;
  for (;;) {
    c = src[p];
    if (c === undefined) throw new RecordsError('a record ends inside a quoted field');
    if (c === QUOTE) {
      if (src[p + 1] !== QUOTE) {
        f.src = src;
        f.from = from;
        f.to = p;
        f.end = p + 1;
        return true;
      }
      break;
    }
    if (c === BACKSLASH) break;
    p++;
  }
  // Find the closing quote and the content's length, then copy it undoubled.
  const start = p;
  let n = p - from;
  for (;;) {
    c = src[p];
    if (c === undefined) throw new RecordsError('a record ends inside a quoted field');
    if (c === QUOTE) {
      if (src[p + 1] !== QUOTE) break;
      p += 2;
    } else if (c === BACKSLASH) {
      if (src[p + 1] === undefined) throw new RecordsError('a record ends inside a quoted field');
      p += 2;
    } else p++;
    n++;
  }
  const end = p + 1;
  const copy = Buffer.allocUnsafe(n);
  n = 0;
  for (let i = from; i < start; i++) copy[n++] = src[i]!;
  for (p = start; p < end - 1; p++) {
    c = src[p]!;
    if (c === QUOTE || c === BACKSLASH) p++;
    copy[n++] = src[p]!;
  }
  f.src = copy;
  f.from = 0;
  f.to = n;
  f.end = end;
  return true;
}

/*
 * The fields read and written in one pass (Note [A writer generated per plan]): a string's,
 * an integer's, a number's and a json value's bytes are written as they are read, where readField
 * would find the field's end first and the writer then go over its bytes again. Each returns where the field
 * ends (at its delimiter) and writes `null` for NULL. Unquoted, a field ends at a comma or `)`;
 * quoted, at a quote that is not doubled, and `""` and `\\` inside stand for `"` and `\`. They
 * are two functions with the same reading, not one with a flag for the escaping: that one wrote
 * the bench's texts 10-20% slower (same measurement as Note [A writer generated per plan]).
 */

/** Bytes one byte of a string may take in JSON (\u00XX), and the closing quote. */
const MAX_ESCAPED = 7;

/** A byte that JSON escapes, at o[w]; returns where the next goes. */
function escaped(o: Buffer, w: number, c: number): number {
  if (c === QUOTE || c === BACKSLASH) {
    o[w++] = BACKSLASH;
    o[w++] = c;
  } else if (SHORT[c] !== undefined) {
    o[w++] = BACKSLASH;
    o[w++] = SHORT[c]!;
  } else {
    o[w++] = BACKSLASH;
    o[w++] = 0x75;
    o[w++] = 0x30;
    o[w++] = 0x30;
    o[w++] = HEX[c >> 4]!;
    o[w++] = HEX[c & 15]!;
  }
  return w;
}

/*
 * Note [Fields read in runs]
 * A field's bytes are read in runs: the bytes up to the next that needs a decision (a delimiter,
 * a quote, a backslash, a byte JSON escapes) are copied as they are, in a loop that tests one
 * table entry per byte and checks the room left in the buffer once per run, not once per byte.
 * A byte past the text reads as `undefined`, whose table entry is not 0 either, so it ends a run
 * too and is refused after it. Against the loop that compared each byte with each delimiter and
 * checked the room per byte, the writer alone on the bench's texts (two-core machine,
 * 2026-11-27, best of 15 loops, three runs of each alternating): simple 6.4-6.5 -> 4.6-4.7 µs,
 * nested 51-54 -> 40-41, deep 10.9-11.5 -> 9.0-9.3, large 0.92-0.99 -> 0.80-0.84 ms. The run
 * is one helper (copyRun) for the four readers, which V8 inlines: against the loop written out
 * in each, the same (large 0.74-0.80 against 0.79 ms, nested 37-38 against 40-41 µs, same
 * measurement with the records workers off).
 */

/** Bytes that end a run of an unquoted string: the record's delimiters and what JSON escapes. */
const STRING_STOP = Uint8Array.from(ESCAPE);
STRING_STOP[COMMA] = 1;
STRING_STOP[RPAREN] = 1;
/** Bytes that end a run of a field whose text is its JSON: unquoted, the record's delimiters;
 * quoted, the quote and the backslash. */
const JSON_STOP = new Uint8Array(256);
JSON_STOP[COMMA] = 1;
JSON_STOP[RPAREN] = 1;
const JSON_QUOTED_STOP = new Uint8Array(256);
JSON_QUOTED_STOP[QUOTE] = 1;
JSON_QUOTED_STOP[BACKSLASH] = 1;

/** Where the last copyRun stopped writing: its second result, kept here so that a run returns
 * no pair (an allocation per field). */
let ranTo = 0;

/** Copies the bytes from src[p] to o[w] until one whose `stop` entry is not 0 (a byte past the
 * text included) or until o[lim]; returns where it stopped reading, and leaves in `ranTo` where
 * it stopped writing (Note [Fields read in runs]). */
function copyRun(src: Uint8Array, p: number, o: Buffer, w: number, lim: number, stop: Uint8Array): number {
  let c: number | undefined;
  while (w < lim && stop[(c = src[p]) as number] === 0) {
    o[w++] = c!;
    p++;
  }
  ranTo = w;
  return p;
}

/** A string's field at src[p] as a JSON string. */
function stringField(src: Uint8Array, p: number, out: Writer): number {
  let c = src[p];
  if (c === COMMA || c === RPAREN) {
    out.bytes(NULL);
    return p;
  }
  let o = out.room(MAX_ESCAPED + 1);
  let w = out.w;
  o[w++] = QUOTE;
  if (c !== QUOTE) {
    for (;;) {
      // Room for the run and, after it, one escaped byte or the closing quote.
      const lim = o.length - MAX_ESCAPED;
      p = copyRun(src, p, o, w, lim, STRING_STOP);
      w = ranTo;
      c = src[p];
      if (w >= lim) {
        out.w = w;
        o = out.room(MAX_ESCAPED + 1);
        continue;
      }
      if (c === COMMA || c === RPAREN) break;
      if (c === undefined) throw new RecordsError('a record ends inside a field');
      w = escaped(o, w, c);
      p++;
    }
  } else {
    p++;
    for (;;) {
      const lim = o.length - MAX_ESCAPED;
      p = copyRun(src, p, o, w, lim, ESCAPE);
      w = ranTo;
      c = src[p];
      if (w >= lim) {
        out.w = w;
        o = out.room(MAX_ESCAPED + 1);
        continue;
      }
      if (c === QUOTE) {
        if (src[p + 1] !== QUOTE) break;
        p++;
      } else if (c === BACKSLASH) c = src[++p];
      if (c === undefined) throw new RecordsError('a record ends inside a quoted field');
      // A doubled quote or a backslash's byte: written escaped if JSON escapes it.
      if (ESCAPE[c] === 0) o[w++] = c;
      else w = escaped(o, w, c);
      p++;
    }
    p++;
  }
  o[w++] = QUOTE;
  out.w = w;
  return p;
}

/** A field whose text is its JSON (an integer's, a json value's) at src[p], as it is. */
function jsonField(src: Uint8Array, p: number, out: Writer): number {
  let c = src[p];
  if (c === COMMA || c === RPAREN) {
    out.bytes(NULL);
    return p;
  }
  let o = out.room(2);
  let w = out.w;
  if (c !== QUOTE) {
    for (;;) {
      const lim = o.length - 1;
      p = copyRun(src, p, o, w, lim, JSON_STOP);
      w = ranTo;
      c = src[p];
      if (w >= lim) {
        out.w = w;
        o = out.room(2);
        continue;
      }
      if (c === undefined) throw new RecordsError('a record ends inside a field');
      break;
    }
  } else {
    p++;
    for (;;) {
      const lim = o.length - 1;
      p = copyRun(src, p, o, w, lim, JSON_QUOTED_STOP);
      w = ranTo;
      c = src[p];
      if (w >= lim) {
        out.w = w;
        o = out.room(2);
        continue;
      }
      if (c === QUOTE) {
        if (src[p + 1] !== QUOTE) break;
        p++;
      } else if (c === BACKSLASH) c = src[++p];
      if (c === undefined) throw new RecordsError('a record ends inside a quoted field');
      o[w++] = c;
      p++;
    }
    p++;
  }
  out.w = w;
  return p;
}

/** Where the fields of an object with no row are written: nowhere (emptied on each use). */
let discarded: Writer | undefined;
function discard(): Writer {
  discarded ??= new Writer(256);
  if (discarded.out.length > BUFFER_MAX) discarded = new Writer(256);
  discarded.w = 0;
  return discarded;
}

/*
 * Note [A writer generated per plan]
 * A plan's rows always have the same shape, so the writer of each is generated as JavaScript once,
 * when the plan is compiled: the keys' bytes are written by constant stores, each column's kind is
 * a branch chosen in advance, and whether a record is open at each field (its `(` or `,` expected,
 * or the `)` before a nested list) is known from the shape, not kept while writing. The values are
 * read and written by shared helpers (HELPERS, Writer). Only bytes and kinds reach the generated
 * source: a key (an alias the client chose) is written as the numbers of its UTF-8 bytes, never as
 * text, so no request can put code into it. Against an interpreter of the shape, on the bench's
 * texts alone (two-core machine, 2026-11-27, best of 7 loops): nested 114 -> 79 µs, deep 20.5 ->
 * 14.8, simple 10.2 -> 7.5, large 1.72 -> 1.31 ms.
 *
 * A string's, a number's, an integer's, a json value's and a boolean's field is then written as it
 * is read, in one pass (stringField, jsonField), where readField found its end first and the
 * writer went over its bytes again; readField is left to the quoted row of an object read by a
 * subquery. The same texts, the two writers interleaved in one process (two-core machine,
 * 2026-11-27, best of 15 loops each, two runs): simple 7.8 -> 6.2-6.4 µs, nested 77-78 -> 58-59,
 * deep 15.6-15.9 -> 11.9-12.0, large 1.33-1.48 -> 1.03-1.08 ms. Each reads its bytes in runs
 * (Note [Fields read in runs]). Writing the keys four bytes at a time (DataView stores) instead of
 * one was no faster (large 0.79-0.81 against 0.80-0.83 ms), so the keys stay byte stores.
 */

/** A row's writer: from src[p], the row's JSON object into `out`; returns where the row ends. */
type RowFn = (src: Uint8Array, p: number, out: Writer, f: Field) => number;

/** What the generated source uses. */
const HELPERS = {
  readField,
  stringField,
  jsonField,
  discard,
  bad: (p: number, what: string) => new RecordsError(`expected ${what} at byte ${p}`),
  NULL,
  TRUE,
  FALSE,
  numberField(src: Uint8Array, p: number, out: Writer): number {
    // NaN, Infinity and -Infinity: strings in PostgreSQL's JSON.
    const c = src[p] === 0x2d ? src[p + 1] : src[p];
    if (c !== 0x4e && c !== 0x49) return jsonField(src, p, out);
    out.byte(QUOTE);
    p = jsonField(src, p, out);
    out.byte(QUOTE);
    return p;
  },
  boolField(src: Uint8Array, p: number, out: Writer): number {
    const c = src[p];
    if (c === COMMA || c === RPAREN) out.bytes(NULL);
    else if (c === 116 || c === 102) {
      out.bytes(c === 116 ? TRUE : FALSE);
      p++;
    } else throw new RecordsError(`expected a boolean at byte ${p}`);
    return p;
  },
};

function generate(row: RecordRow): RowFn {
  const fns: string[] = [];
  const name = () => `g${fns.length}`;
  /** Constant bytes, written by stores into room made once. */
  const constant = (bytes: Uint8Array): string => {
    let code = `{ const o = out.room(${bytes.length}); const w = out.w; `;
    bytes.forEach((b, i) => (code += `o[w + ${i}] = ${b}; `));
    return `${code}out.w = w + ${bytes.length}; }\n`;
  };
  const expect = (c: number, what: string) => `if (src[p] !== ${c}) throw H.bad(p, ${JSON.stringify(what)}); p++;\n`;
  /** The code of `r`'s fields from state `open`; returns the code and the state after them. */
  const fields = (r: RecordRow, open: boolean): { code: string; open: boolean } => {
    let code = '';
    r.cols.forEach((col, i) => {
      code += constant(Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(r.keys[i])}:`));
      if (typeof col !== 'string' && col.k === 'list') {
        if (open) code += expect(RPAREN, 'the end of a record');
        open = false;
        const fn = rowFn(col.row);
        code += expect(LBRACKET, 'a list');
        code += `out.byte(${LBRACKET});\n`;
        code += `for (let first = true; src[p] !== ${RBRACKET}; first = false) { if (src[p] === undefined) throw H.bad(p, "the end of a list"); if (!first) out.byte(${COMMA}); p = ${fn}(src, p, out, f); }\n`;
        code += `out.byte(${RBRACKET}); p++;\n`;
        return;
      }
      code += open ? expect(COMMA, 'a comma') : expect(LPAREN, 'a record');
      open = true;
      if (typeof col !== 'string' && col.k === 'inline') {
        // The inline object's fields, after whether it has a row, written nowhere when it has none.
        const inner = fields(col.row, true);
        const fn = name();
        fns.push(`const ${fn} = function (src, p, out, f) {\n${inner.code}return p; };\n`);
        // The flag is `t`, `f` or NULL (a left join's missing row); what follows it is checked
        // as the object's first field is read.
        code += `{ const present = src[p] === 116; if (present || src[p] === 102) p++; p = ${fn}(src, p, present ? out : H.discard(), f); if (!present) out.bytes(H.NULL); }\n`;
        open = inner.open;
        return;
      }
      if (col === 'string' || col === 'int' || col === 'json') {
        code += `p = H.${col === 'string' ? 'stringField' : 'jsonField'}(src, p, out);\n`;
        return;
      }
      if (col === 'number' || col === 'bool') {
        code += `p = H.${col}Field(src, p, out);\n`;
        return;
      }
      // An object read by a subquery: its row's text is the whole field, quoted.
      const fn = rowFn(col.row);
      code += `if (!H.readField(src, p, f)) { p = f.end; out.bytes(H.NULL); } else { p = f.end; const s = f.src, from = f.from, to = f.to; if (${fn}(s, from, out, f) !== to) throw H.bad(to, "the end of a nested row"); }\n`;
    });
    return { code: code + constant(Buffer.from('}')), open };
  };
  /** A row's writer: its fields from no open record, and the `)` of the last if one is open. */
  const rowFn = (r: RecordRow): string => {
    const body = fields(r, false);
    const fn = name();
    fns.push(`const ${fn} = function (src, p, out, f) {\n${body.code}${body.open ? expect(RPAREN, 'the end of a record') : ''}return p; };\n`);
    return fn;
  };
  const root = rowFn(row);
  return new Function('H', `"use strict";\n${fns.join('')}return ${root};`)(HELPERS) as RowFn;
}

/** Writes the rows that start in src[p, stop) (the last may end after `stop`), each but the
 * list's first (at `from`) after a comma; returns where the last ends. */
function writeRecords(src: Uint8Array, from: number, p: number, stop: number, row: RowFn, out: Writer, f: Field): number {
  while (p < stop) {
    if (p > from) out.byte(COMMA);
    p = row(src, p, out, f);
  }
  return p;
}

/** Writes the rows written back to back in src[from, to) as a JSON list. */
function writeRows(src: Uint8Array, from: number, to: number, row: RowFn, out: Writer, f: Field): void {
  out.byte(0x5b);
  if (writeRecords(src, from, from, to, row, out, f) !== to) throw new RecordsError('a list has bytes after its last record');
  out.byte(0x5d);
}

/** Buffers that lists were written into and their answers' senders gave back (Note [Lent answer
 * bytes] in core/schema/contract.ts), to be written into again: at most 16 MiB of them, each of at
 * most BUFFER_MAX. */
const BUFFER_MAX = 4 << 20;
const idle = new IdleList<Buffer>((b) => b.length, 16 << 20, BUFFER_MAX);
/** What the buffers did (tests read it): taken from `idle`, given back, given back and kept. */
export const answerBuffers = { reused: 0, givenBack: 0, kept: 0 };

/** An idle buffer of at least `size` bytes, if one was given back. */
function idleBuffer(size: number): Buffer | undefined {
  const b = idle.take((x) => x.length >= size);
  if (b) answerBuffers.reused++;
  return b;
}

/** The list's JSON in `out`, lent (Note [Lent answer bytes]): its buffer is written into again once
 * the answer's sender gives the bytes back. */
function lent(out: Writer): Uint8Array {
  const buffer = out.out;
  return lendAnswer(buffer.subarray(0, out.w), () => {
    answerBuffers.givenBack++;
    if (idle.keep(buffer)) answerBuffers.kept++;
  });
}

/** Bytes of records written between two turns of the event loop: a large answer is written in
 * slices, so that other requests (the health check) are served meanwhile. */
const SLICE = 1 << 20;

/** The room a list's JSON is first given: twice the records' text for a text of up to a slice
 * (the keys add to it, the quoting comes off); about the text's size for a larger one, the buffer
 * growing if it is more, so that a list of hundreds of MB does not ask for twice that at once. */
const firstRoom = (n: number): number => (n <= SLICE ? n * 2 + 256 : n + (n >> 3) + 256);

/** The writer of a list of `row` records (Note [Lists as records]): the records' text, as
 * PostgreSQL sent it (null: no rows), to the list's JSON text; a promise of it for a text of more
 * than a slice. */
export function recordsWriter(row: RecordRow): (text: Uint8Array | null) => Uint8Array | Promise<Uint8Array> {
  const compiled = generate(row);
  const write = (text: Uint8Array): Uint8Array | Promise<Uint8Array> => {
    const f: Field = { src: text, from: 0, to: 0, end: 0 };
    if (text.length <= SLICE) {
      // Written at once, into a buffer an earlier answer gave back if there is one; its UTF-8
      // bytes, never decoded here (Note [Answers as bytes] in core/schema/contract.ts).
      const room = firstRoom(text.length);
      const out = new Writer(room, idleBuffer(room));
      writeRows(text, 0, text.length, compiled, out, f);
      return lent(out);
    }
    const room = firstRoom(text.length);
    const out = new Writer(room, idleBuffer(room));
    return (async () => {
      out.byte(0x5b);
      let p = 0;
      for (;;) {
        p = writeRecords(text, 0, p, Math.min(p + SLICE, text.length), compiled, out, f);
        if (p >= text.length) break;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (p !== text.length) throw new RecordsError('a list has bytes after its last record');
      out.byte(0x5d);
      return lent(out);
    })();
  };
  return (text) => {
    if (text === null) return Buffer.from(EMPTY_LIST);
    // A large list by a worker thread (Note [Records written off the main thread] in
    // ./records-pool.ts), here when there is none.
    const out = (text.length >= OFFLOAD_MIN && writeByWorker(row, text, () => write(text))) || write(text);
    // The text read through, its message's buffer is given back to be read into again (Note
    // [Read buffers given back] in ./pg-socket.ts); only a large text has one.
    if (text.length < LARGE) return out;
    if (out instanceof Promise) return out.finally(() => giveBackRead(text));
    giveBackRead(text);
    return out;
  };
}

/** A writer that writes the whole list at once (a worker's, Note [Records written off the main
 * thread] in ./records-pool.ts): into `into` (a lane's), or into a buffer of its own where
 * `into` is not given or the JSON outgrows it. */
export function recordsWriterAtOnce(row: RecordRow): (text: Uint8Array, into?: Buffer) => Uint8Array {
  const compiled = generate(row);
  return (text, into) => {
    const out = new Writer(into ? 0 : firstRoom(text.length), into);
    writeRows(text, 0, text.length, compiled, out, { src: text, from: 0, to: 0, end: 0 });
    return out.out.subarray(0, out.w);
  };
}


/** PostgreSQL's integer types: their text output is their JSON. */
export const INTEGER_TYPES: ReadonlySet<string> = new Set(['"pg_catalog"."int2"', '"pg_catalog"."int4"', '"pg_catalog"."int8"']);
/** Its floats and numeric: their text output is their JSON unless NaN or an infinity. */
export const NUMBER_TYPES: ReadonlySet<string> = new Set(['"pg_catalog"."float4"', '"pg_catalog"."float8"', '"pg_catalog"."numeric"']);
const JSON_TYPES = new Set(['"pg_catalog"."json"', '"pg_catalog"."jsonb"']);
/** Types whose JSON is the string of their text output (PostgreSQL's JSON writes every type it
 * has no other category for so); any not listed here goes through to_json. */
const STRING_TYPES = new Set(
  ['text', 'varchar', 'bpchar', 'name', 'char', 'uuid', 'time', 'timetz', 'interval', 'bytea', 'money', 'inet', 'cidr', 'macaddr'].map((t) => `"pg_catalog"."${t}"`),
);

/** How a value of the scalar is written from its text output (Note [Lists as records]);
 * undefined where it is not its JSON and the value must go through to_json. `asText`: the value
 * is cast to text (stringified numbers); a geometry is GeoJSON already (identifiers.ts `output`). */
export function scalarRecordCol(scalar: { bindAs: string; category?: string; array?: boolean }, asText: boolean | undefined): RecordCol | undefined {
  if (asText) return 'string';
  if (scalar.category === 'geometry') return 'json';
  if (scalar.array) return undefined;
  const t = scalar.bindAs;
  if (INTEGER_TYPES.has(t)) return 'int';
  if (NUMBER_TYPES.has(t)) return 'number';
  if (t === '"pg_catalog"."bool"') return 'bool';
  if (JSON_TYPES.has(t)) return 'json';
  if (STRING_TYPES.has(t)) return 'string';
  return undefined;
}
