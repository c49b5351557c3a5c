/**
 * How an insert is cut into statements, from its IR alone (the SQL is ./compile-mutation.ts's):
 * the levels of nested rows inserted as sets (`levelOf`, Note [Levels inserted as sets] in
 * ./compile-mutation.ts), whose rows' keys may meet (Note [Rows repeating a key]), and the steps
 * of an insert that does not fit one statement (Note [Batches in steps]). A Note cited
 * without a file is this file's or ./compile-mutation.ts's.
 */
import type { ColumnInfo, ColumnValue, InsertIR, InsertRowIR, NestedInsert, QualifiedTable, ScalarType } from '../../database/index.js';

/** A table's key in the maps of a plan and of a statement's writes. */
export const tkey = (t: QualifiedTable) => `${t.schema}\u0000${t.name}`;

/*
 * Note [Batches in steps]
 * Rows that cannot be inserted as sets (Note [Levels inserted as sets]) are a CTE each, with
 * a zero check each, and PostgreSQL's time to parse and plan a statement grows with the square
 * of them: 1,000 objects of two rows each cost 0.6 s of planning, 2,000 cost 2.7 s (plus 1.5 s
 * to start and run it), and 5,000 failed with "stack depth limit exceeded"; 3,000 such rows
 * under ONE object took 10.8 s. So an insert that does not fit one statement goes in steps:
 * statements of at most STEP_INSERTS inserts, run in order in the request's transaction,
 * pipelined (Note [Statements pipelined] in plugins/database/schema/mutation.ts). Even a few
 * dozen CTEs cost PostgreSQL more each than a few: of steps of 16 to 256 inserts, 32 were the
 * fastest (3,000 playlists of three rows each: 0.28 s a request, 0.54 s with 256;
 * docs/benchmarks.md "Bulk inserts"), and the round trip of a second step costs about what it
 * saves at 20 objects.
 *
 * The plan (`planInsert`) follows the IR: a list of rows (a root's, or those under one parent
 * row) that fits one statement is one step; otherwise its rows are packed in order into steps,
 * where no two inserts of a step write a table that one of them upserts with an update (one
 * statement cannot write a row twice, "ON CONFLICT DO UPDATE command cannot affect row a second
 * time", and Hasura's statement per object updates in the later one what the earlier wrote;
 * `Weight`, counted as MutationCompiler.insert writes, a level inserted as a set one insert per
 * level), unless all of them upsert it by keys no two of them share (Note [Rows repeating a
 * key]). A row that does not fit one statement by itself is split (`splitRow`): its objects
 * that do not fit beside it go ahead in steps of their own, the row is a step of its own with
 * the rest, and the rows under it are planned the same way, their steps binding the row that
 * step answered (`p`, the text of its record) as a one-row CTE they take their parent's columns
 * from, as from a parent's CTE in one statement: a `{k: 'answer', step}` parameter, which the
 * runner binds once that step's answer is in (the steps after it wait with it). The split row
 * keeps its zero check. Which rows share a step follows from the request's shape, and from its
 * values only where rows upsert by a key (Note [Rows repeating a key]); otherwise the statements
 * are kept per shape (Note [Statements per variable shape] in plugins/database/schema/shapes.ts).
 * Each step checks what it writes, as one statement does (zero checks, the role's checks, the
 * defaults; a check reading a parent reads the row an earlier step wrote), and answers how many
 * rows it wrote and, where they are the field's and the field reads rows (`returning`, a single
 * row; not `affected_rows` alone), its rows as it left them (`r`, the text of an array of the
 * table's records, which reads back as it was written, whatever the column types). A last
 * statement answers the field from those rows (its `steps` parameter: the steps' answers),
 * reading every other table as the steps left it: Hasura too answers from the rows its
 * statements returned, with a select after them all. Where the insert fits one statement the
 * field is that statement.
 */
/** The most inserts of one step (Note [Batches in steps]). */
const STEP_INSERTS = 32;

/** Whether a row has rows inserted through its relationships. */
export const hasNested = (r: InsertIR['rows'][number]) => r.before.length > 0 || r.after.length > 0;

/** What one statement of an insert writes (Note [Batches in steps]): its inserts (counted up to
 * just past STEP_INSERTS), how many of them write each table, and the tables of those that
 * upsert with an update. */
interface Weight {
  inserts: number;
  /** The inserts of each table. */
  tables: Map<string, Counted[]>;
  upserts: Set<string>;
  /** Rows of one of its inserts may name one row by the key they upsert by, updating where a
   * filter holds (Note [Rows repeating a key]): no one statement. */
  repeats: boolean;
}
const weight = (): Weight => ({ inserts: 0, tables: new Map(), upserts: new Set(), repeats: false });

/** An insert a Weight counts: of `ir`'s rows, or of its row `row` alone (a CTE per row). */
interface Counted {
  ir: InsertIR;
  row?: InsertRowIR;
}

/** One insert of `ir`'s table into `w`: of its rows, or of `row` alone. */
function write(w: Weight, ir: InsertIR, row?: InsertRowIR): Weight {
  const k = tkey(ir.table);
  w.inserts++;
  const unit = row ? { ir, row } : { ir };
  const units = w.tables.get(k);
  if (units) units.push(unit);
  else w.tables.set(k, [unit]);
  if (updatesOnConflict(ir)) w.upserts.add(k);
  return w;
}

/** Adds to `w` what MutationCompiler.insert writes for `ir`: one INSERT of rows without rows
 * under them, one per level of a level inserted as a set, otherwise one per row and what is
 * under it. */
function weighInsert(ir: InsertIR, w: Weight): Weight {
  if (w.inserts > STEP_INSERTS) return w;
  if (!ir.rows.some(hasNested)) {
    if (repeatsKey(ir)) w.repeats = true;
    return write(w, ir);
  }
  const level = ir.rows.length > 1 ? levelOfInsert(ir) : undefined;
  if (level) return weighLevel(level, w);
  for (const r of ir.rows) if (weighRow(r, ir, w).inserts > STEP_INSERTS) break;
  return w;
}
function weighRow(r: InsertRowIR, ir: InsertIR, w: Weight): Weight {
  for (const b of r.before) weighInsert(b.insert, w);
  write(w, ir, r);
  for (const a of r.after) weighInsert(a.insert, w);
  return w;
}
function weighLevel(level: Level, w: Weight): Weight {
  for (const o of level.objects) weighLevel(o.level, w);
  write(w, level.ir);
  for (const c of level.children) weighLevel(c.level, w);
  return w;
}
function add(w: Weight, more: Weight): Weight {
  w.inserts += more.inserts;
  w.repeats ||= more.repeats;
  for (const [k, units] of more.tables) w.tables.set(k, [...(w.tables.get(k) ?? []), ...units]);
  for (const k of more.upserts) w.upserts.add(k);
  return w;
}
/** Whether `a` and `b` in one statement might write one row twice: a table one of them upserts
 * with an update that the other writes too (PostgreSQL: "ON CONFLICT DO UPDATE command cannot
 * affect row a second time", where Hasura's statements update in the later what the earlier
 * wrote), but by keys no two of them share (Note [Rows repeating a key]). */
const clash = (a: Weight, b: Weight) =>
  [...a.tables.keys()].some((k) => b.tables.has(k) && (a.upserts.has(k) || b.upserts.has(k)) && mayShareKeys([...a.tables.get(k)!, ...b.tables.get(k)!]));
/** Whether `w` is one statement: few enough inserts, none of them upserting a table that another
 * writes (but by keys no two share). */
const fits = (w: Weight) => !w.repeats && w.inserts <= STEP_INSERTS && ![...w.upserts].some((k) => w.tables.get(k)!.length > 1 && mayShareKeys(w.tables.get(k)!));
/** Whether `a` and `b` fit one statement together. */
const fitTogether = (a: Weight, b: Weight) => a.inserts + b.inserts <= STEP_INSERTS && fits(a) && fits(b) && !clash(a, b);

/** Columns of a step's rows from the row an earlier step answered (`p`): (own column, that
 * row's column) pairs. */
export interface Bound {
  step: number;
  table: QualifiedTable;
  mapping: readonly (readonly [string, string])[];
}
/** A zero check of a step's row (ZeroCheck without its table, which is the step's). */
export type ZeroAt = { at: InsertRowIR | NestedInsert; relationship?: string };
/** One statement of an insert in steps: `ir`'s rows, each with the columns `bound` gives;
 * `root`: they are the field's rows (answered as `r`); `keeps`: its one row is answered (`p`)
 * for later steps to bind; `writes`: the zero checks of that row, whose rows under it or whose
 * parent later steps write. */
export interface Step {
  ir: InsertIR;
  bound: readonly Bound[];
  root: boolean;
  keeps?: boolean;
  writes?: ZeroAt[];
}

/** The first InsertIR of a copy `subset` made (its zero check's path is the original's). */
const origins = new WeakMap<InsertIR, InsertIR>();
function subset(ir: InsertIR, rows: InsertRowIR[]): InsertIR {
  const part = { ...ir, rows };
  origins.set(part, origins.get(ir) ?? ir);
  return part;
}

/** Note [Batches in steps]: `ir`'s rows (a root's, or those under one parent row that `bound`
 * gives) as steps: all of them where they fit one statement, else rows packed into statements of
 * at most STEP_INSERTS inserts, and a row that does not fit one split (`splitRow`). */
function planInsert(ir: InsertIR, bound: readonly Bound[], root: boolean, steps: Step[]): void {
  if (fits(weighInsert(ir, weight()))) {
    steps.push({ ir, bound, root });
    return;
  }
  if (!ir.rows.some(hasNested)) {
    // One INSERT but for rows repeating a key (Note [Rows repeating a key]).
    for (const run of keyRuns(ir)) steps.push({ ir: subset(ir, run), bound, root });
    return;
  }
  let pack: InsertRowIR[] = [];
  let packed = weight();
  const flush = () => {
    if (pack.length > 0) steps.push({ ir: subset(ir, pack), bound, root });
    pack = [];
    packed = weight();
  };
  for (const row of ir.rows) {
    const w = weighRow(row, ir, weight());
    if (!fits(w)) {
      flush();
      splitRow(row, ir, bound, root, steps);
      continue;
    }
    // Both fit: the pack by how it was made, `w` just above.
    if (packed.inserts + w.inserts > STEP_INSERTS || clash(packed, w)) flush();
    pack.push(row);
    add(packed, w);
  }
  flush();
}

/** A row that does not fit one statement: its objects that do not fit beside it ahead of it
 * (`planObject`), the row with the others in a step of its own, then the rows under it, bound
 * to its answered row; the index of its step. `writes`: zero checks the row answers for as an
 * object of a row after it. */
function splitRow(row: InsertRowIR, ir: InsertIR, bound: readonly Bound[], root: boolean, steps: Step[], writes: ZeroAt[] = []): number {
  const own = [...bound];
  const inline: NestedInsert[] = [];
  const w = write(weight(), ir);
  for (const b of row.before) {
    const bw = weighInsert(b.insert, weight());
    if (fitTogether(w, bw)) {
      inline.push(b);
      add(w, bw);
      continue;
    }
    const at = planObject(b, steps);
    steps[at]!.keeps = true;
    own.push({ step: at, table: b.insert.table, mapping: b.mapping });
  }
  const index = steps.length;
  steps.push({ ir: subset(ir, [{ ...row, before: inline, after: [] }]), bound: own, root, keeps: row.after.length > 0, writes: [...(row.after.length > 0 ? [{ at: row }] : []), ...writes] });
  for (const a of row.after) {
    planInsert(a.insert, [{ step: index, table: ir.table, mapping: a.mapping.map(([mine, remote]) => [remote, mine] as const) }], false, steps);
  }
  return index;
}

/** An object through an object relationship that does not fit beside its row, in steps ahead of
 * it: the index of the step answering it. */
function planObject(b: NestedInsert, steps: Step[]): number {
  const zero: ZeroAt = { at: b, relationship: b.relationship };
  const row = b.insert.rows[0]!;
  if (fits(weighRow(row, b.insert, weight()))) {
    steps.push({ ir: b.insert, bound: [], root: false, writes: [zero] });
    return steps.length - 1;
  }
  return splitRow(row, b.insert, [], false, steps, [zero]);
}

/** A root insert's steps (Note [Batches in steps]), or undefined where it is one statement. */
export function inSteps(ir: InsertIR): Step[] | undefined {
  if (!ir.rows.some(hasNested) && !repeatsKey(ir)) return undefined;
  const steps: Step[] = [];
  planInsert(ir, [], true, steps);
  return steps.length > 1 ? steps : undefined;
}

/** Whether a row gives `column` a value, or leaves out a column whose default is null or known
 * (Notes [Rows bound by column], [Defaults bound by column]). */
export function givesOrDefault(values: ReadonlyMap<string, ColumnValue>, column: string, columns: InsertIR['columns']): boolean {
  const v = values.get(column);
  if (v) return v.k === 'value';
  const c = columns.get(column);
  return c?.nullDefault === true || c?.default !== undefined;
}

/** Whether `ir` upserts, updating the row its key finds. */
export const updatesOnConflict = (ir: InsertIR) => ir.onConflict !== undefined && (ir.onConflict.update.length > 0 || (ir.onConflict.set?.size ?? 0) > 0);

/*
 * Note [Rows repeating a key]
 * Rows of one INSERT that upsert one row fail it ("ON CONFLICT DO UPDATE command cannot affect
 * row a second time"). Where the update has no `where`, they are merged (Note [Rows upserting
 * one row]); where it has one (the request's, or the role's update filter), whether a later row
 * updates depends on what the earlier left, which one statement cannot see, and Hasura's one
 * INSERT of such rows fails. Here they are Hasura row by row: the rows are cut, in order, into
 * runs in which no key repeats (`keyRuns`), each run one INSERT, in steps (Note [Batches in
 * steps]). Rows of different keys do not touch one another, so a run is what its rows one by
 * one would do, and the runs keep the request's order. A key is read from the rows' values: a
 * literal by its text (a null too, which conflicts under NULLS NOT DISTINCT), a session
 * variable or a preset by its name (one value for every row), a variable inside the document
 * as unknown (any other row's key, so a run of its own), and a column the parent's row gives
 * not at all (`InsertIR.parentColumns`: one value for the rows of one parent, whose rows are
 * what one InsertIR holds); a column a row leaves out takes its default, taken as a key of its
 * own (a serial's, a uuid's).
 *
 * The same keys let inserts of one table share a statement where each upserts it with an update
 * (by the same columns) and no two of them share a key (`mayShareKeys`): objects whose upsert
 * may write nothing, with rows under them, were a statement each (the one statement cannot see
 * what an earlier insert wrote), and are packed as other objects (Note [Batches in steps]) when
 * their keys differ, where they are not one set joined by key (Note [Levels joined by key]);
 * rows under several parents updating with a `where` are a set (Note [Levels inserted as sets])
 * when their keys differ across the parents. A pair whose keys the test
 * misses fails the statement with the same error, never writes a row twice. 3,000 playlists of
 * three rows, upserted by id with an update that has a where: 1.14 s -> 0.35-0.40 s a request
 * (docs/benchmarks.md "Bulk inserts").
 *
 * A key's text is read as the database compares its type (`keyText`): a uuid in capitals and in
 * small letters, a citext in another case, `1.0` and `01` in a numeric, one instant at two
 * offsets are one key (Hasura's one INSERT of such rows fails). The text may take two values the
 * database tells apart as one, which only cuts a run that was not needed; never the reverse for
 * these types. Other types' keys (a text under a nondeterministic collation, say) are compared by
 * their text and may still fail so. A plan that read keys follows the values (`byValues`), so its
 * statements are not kept per shape of the variables (`perValue`, Note [Statements per variable
 * shape]). Tests: bulk-inserts.test.ts, "rows repeating the key they upsert by" and "keys the
 * database takes as equal in other texts"; the oracles of bulk-inserts-oracle.test.ts.
 */

/** The key of a row of `ir` (Note [Rows repeating a key]): its text, or UNKNOWN_KEY, or
 * undefined where it names no other row's. Read once per row (packing asks again for each row
 * after it in a step; a row is of one insert, whose copies by `subset` keep its key columns). */
function keyOf(ir: InsertIR, r: InsertRowIR): string | typeof UNKNOWN_KEY | undefined {
  let key = rowKeys.get(r);
  if (key === undefined) rowKeys.set(r, (key = readKey(ir, r) ?? NO_KEY));
  return key === NO_KEY ? undefined : key;
}
const rowKeys = new WeakMap<InsertRowIR, string | typeof UNKNOWN_KEY | typeof NO_KEY>();
const NO_KEY: unique symbol = Symbol('no key');
function readKey(ir: InsertIR, r: InsertRowIR): string | typeof UNKNOWN_KEY | undefined {
  let key = '';
  for (const c of ir.onConflict!.columns!) {
    // The parent's column: one value for every row of `ir` (rows under one parent).
    if (ir.parentColumns?.includes(c)) continue;
    const v = r.values.get(c);
    if (v?.k !== 'value') return undefined;
    const x = v.value;
    if (x.k === 'lit') {
      const text = keyText(x.v, ir.columns.get(c)?.scalar);
      if (text === UNKNOWN_KEY) return UNKNOWN_KEY;
      key += `${text}\u0000`;
    }
    else if (x.k === 'session') key += `\u0001${x.name}\u0000`;
    else return UNKNOWN_KEY;
  }
  return key;
}
const UNKNOWN_KEY: unique symbol = Symbol('unknown key');

/** The text by which updates by key tell their keys apart (Note [Updates by key] in
 * plugins/database/schema/update-rows.ts): `keyText`'s, for the types whose text it reads
 * exactly as the database compares them (integers, uuids); a text or varchar's own characters
 * where the column's collation is deterministic: its equality is then the bytes' equality, and
 * two strings' UTF-8 differs where they do, but for an unpaired surrogate (the driver writes each
 * as U+FFFD) and a NUL (PostgreSQL refuses it; the text scalar refuses both before a plan is
 * made, and a value with one would keep its update a statement of its own here); and a citext in
 * ASCII, in small letters. undefined for any other: a char(n) is equal to itself with trailing
 * spaces, a nondeterministic collation (case-insensitive, say) makes other texts equal, and a
 * citext beyond ASCII is lowered as the database's locale lowers it. */
export function updateKeyText(v: unknown, scalar: ScalarType, column: ColumnInfo | undefined): string | undefined {
  if (scalar.array) return undefined;
  const citext = scalar.bindAs.endsWith('."citext"');
  if (citext || TEXT_KEY_TYPES.has(scalar.bindAs)) {
    if (typeof v !== 'string' || column?.collationDeterministic !== true) return undefined;
    if (!citext) return /[\u0000\p{Cs}]/u.test(v) ? undefined : v;
    // A citext equals another whose characters its locale lowers to the same: in ASCII, those of
    // JavaScript's small letters, but for a Turkish locale's I (lowered to a dotless ı, which no
    // other ASCII character is): its key then only cuts a run that was not needed.
    return /^[\u0001-\u007f]*$/.test(v) ? v.toLowerCase() : undefined;
  }
  if (!UPDATE_KEY_TYPES.has(scalar.bindAs)) return undefined;
  const text = keyText(v, scalar);
  return text === UNKNOWN_KEY ? undefined : text;
}
const UPDATE_KEY_TYPES = new Set(['"pg_catalog"."int2"', '"pg_catalog"."int4"', '"pg_catalog"."int8"', '"pg_catalog"."uuid"']);
const TEXT_KEY_TYPES = new Set(['"pg_catalog"."text"', '"pg_catalog"."varchar"']);

/** A key column's value as text that two values the database takes as equal share (Note [Rows
 * repeating a key]): a uuid in small letters without hyphens or braces, a citext in small
 * letters, a number's decimal without leading or trailing zeros, an instant as its millisecond
 * (what JavaScript parses; UNKNOWN_KEY where it parses none, or a number has an exponent). It
 * may take two values the database tells apart as one (a citext's letters outside ASCII, an
 * instant's microseconds): that only cuts a run where none was needed. */
function keyText(v: unknown, scalar: ScalarType | undefined): string | typeof UNKNOWN_KEY {
  const text = v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (v === null || !scalar || scalar.array) return text;
  const [schema, type] = scalar.bindAs.split('.');
  if (type === '"citext"') return text.toLowerCase();
  if (schema !== '"pg_catalog"') return text;
  switch (type) {
    case '"uuid"':
      return text.replace(/[{}-]/g, '').toLowerCase();
    case '"int2"':
    case '"int4"':
    case '"int8"':
    case '"numeric"':
    case '"float4"':
    case '"float8"': {
      const m = /^\s*([+-]?)0*(\d*)(?:\.(\d*?)0*)?\s*$/.exec(text);
      if (!m) return /^\s*[+-]?(nan|infinity|inf)\s*$/i.test(text) ? text.trim().toLowerCase() : UNKNOWN_KEY;
      const digits = `${m[2]}${m[3] ? `.${m[3]}` : ''}`;
      return digits === '' ? '0' : `${m[1] === '-' ? '-' : ''}${digits}`;
    }
    case '"timestamptz"': {
      const ms = Date.parse(text);
      return Number.isNaN(ms) ? UNKNOWN_KEY : `@${ms}`;
    }
    default:
      return text;
  }
}

/** Whether `ir` upserts with an update that has a where, by a key its rows give. */
const updatesWhere = (ir: InsertIR) => updatesOnConflict(ir) && ir.onConflict!.where.t !== 'true' && (ir.onConflict!.columns?.length ?? 0) > 0;

/** `ir`'s rows in runs in which no key repeats, in order (Note [Rows repeating a key]). */
function keyRuns(ir: InsertIR): InsertRowIR[][] {
  if (!updatesWhere(ir) || ir.rows.length < 2) return [ir.rows];
  byValues = true;
  const runs: InsertRowIR[][] = [];
  let run: InsertRowIR[] = [];
  let keys = new Set<string>();
  let unknown = false;
  for (const r of ir.rows) {
    const key = keyOf(ir, r);
    // An unknown key may be any other: it meets every keyed row of the run, and they it.
    const meets = key === undefined ? false : key === UNKNOWN_KEY ? keys.size > 0 || unknown : unknown || keys.has(key);
    if (meets) {
      runs.push(run);
      run = [];
      keys = new Set();
      unknown = false;
    }
    if (key === UNKNOWN_KEY) unknown = true;
    else if (key !== undefined) keys.add(key);
    run.push(r);
  }
  runs.push(run);
  return runs;
}

/** Whether two rows of `ir` may upsert one row with an update that has a where. */
const repeatsKey = (ir: InsertIR): boolean => updatesWhere(ir) && ir.rows.length > 1 && keyRuns(ir).length > 1;

/** Set while a mutation is planned (`followingValues`, synchronous) when its plan read the keys
 * of rows (Note [Rows repeating a key]): its statements follow their values (`perValue`). */
let byValues = false;

/** `make()`, and whether the plans it made read the keys of rows (Note [Rows repeating a key]):
 * then its statements follow their values (`CompiledQuery.perValue`). */
export function followingValues<T>(make: () => T): [T, boolean] {
  byValues = false;
  const made = make();
  return [made, byValues];
}

/** Each insert's keys (Note [Rows repeating a key]), or UNKNOWN_KEY where one is not known. */
const keySets = new WeakMap<InsertIR, ReadonlySet<string> | typeof UNKNOWN_KEY>();
function keySet(ir: InsertIR): ReadonlySet<string> | typeof UNKNOWN_KEY {
  let keys = keySets.get(ir);
  if (keys === undefined) {
    const own = new Set<string>();
    keys = own;
    for (const r of ir.rows) {
      const k = keyOf(ir, r);
      if (k === UNKNOWN_KEY) {
        keys = UNKNOWN_KEY;
        break;
      }
      if (k !== undefined) own.add(k);
    }
    keySets.set(ir, keys);
  }
  return keys;
}

/** Whether inserts `units` of one table, one statement's, may write one row twice: unless each
 * upserts with an update by the same key columns, and no two of them share a key they give
 * (Note [Rows repeating a key]; the rows of one insert that share one are merged or cut into
 * runs). */
function mayShareKeys(units: readonly Counted[]): boolean {
  const columns = units[0]!.ir.onConflict?.columns;
  const same = columns?.join('\u0000');
  if (!columns?.length || units.some(({ ir }) => !updatesOnConflict(ir) || ir.onConflict!.columns?.join('\u0000') !== same)) return true;
  byValues = true;
  const seen = new Set<string>();
  for (const { ir, row } of units) {
    if (row) {
      const k = keyOf(ir, row);
      if (k === UNKNOWN_KEY || (k !== undefined && seen.has(k))) return true;
      if (k !== undefined) seen.add(k);
      continue;
    }
    const keys = keySet(ir);
    if (keys === UNKNOWN_KEY) return true;
    for (const k of keys) if (seen.has(k)) return true;
    for (const k of keys) seen.add(k);
  }
  return false;
}

/** Where the rows of a level inserted as a set take columns of another level's rows (Note
 * [Levels inserted as sets]): that level's CTE, the (its column, own column) pairs, and each
 * row's 1-based position among the CTE's rows (none: the row's own position; null: the row has
 * none there, and gives the columns itself). */
export interface Join {
  cte: string;
  mapping: readonly (readonly [string, string])[];
  positions?: readonly (number | null)[];
}

/** Whether some rows have no row of the joined level (they give its columns themselves). */
export const partial = (j: Join) => j.positions?.includes(null) === true;

/** Rows inserted as one set, and the levels under them (Note [Levels inserted as sets]). */
export interface Level {
  /** The rows of every insert of the level, in order, with the first one's table, columns,
   * check and on_conflict (the same for all). */
  ir: InsertIR;
  /** What the level's zero check reports (its first insert). */
  at: InsertIR;
  /** Each row's parent's position among the parent level's rows (1-based); none at the top. */
  positions?: number[];
  /** The rows of each object relationship, one per row that has one, in the rows' order: (own
   * column, the object's column) pairs; `positions`: where not every row has one, each row's
   * object's position among them (null for none). */
  objects: { relationship: string; mapping: readonly (readonly [string, string])[]; at: NestedInsert; level: Level; positions?: (number | null)[] }[];
  children: { mapping: readonly (readonly [string, string])[]; level: Level }[];
  /** A level whose upsert may write nothing, joined by key (Note [Levels joined by key]): the
   * rows that must have written, each with its zero check's origin. */
  keyed?: KeyedRow[];
}

/** A row of a level joined by key that must have written (Note [Levels joined by key]): its
 * 1-based position among the level's rows, and what its zero check names (a row with rows under
 * it, or a row's object through `relationship`). */
export interface KeyedRow {
  position: number;
  at: InsertRowIR | NestedInsert;
  relationship?: string;
}

/** `levelOf([ir])`, made once for an insert (inSteps asks first, then MutationCompiler.insert),
 * and whether it read the rows' keys (`byValues`). */
const levels = new WeakMap<InsertIR, { level: Level | null; byValues: boolean }>();
export function levelOfInsert(ir: InsertIR): Level | undefined {
  let e = levels.get(ir);
  if (e === undefined) {
    const before = byValues;
    byValues = false;
    e = { level: levelOf([ir]) ?? null, byValues };
    byValues ||= before;
    levels.set(ir, e);
  } else if (e.byValues) byValues = true;
  return e.level ?? undefined;
}

/** The same for every insert of a level: a JSON value with maps as their entries. */
const sameness = (x: unknown) => JSON.stringify(x, (_k, v: unknown) => (v instanceof Map ? [...v] : typeof v === 'function' ? String(v) : v));

/**
 * `irs` (a root's rows, or the rows one relationship inserts under each row of the level above,
 * `positions` giving each row's parent; `objectOf`: the nested inserts of the objects of an
 * object relationship, one per row of `irs`, each of which must be written) as a level inserted
 * as a set, when they can be: rows that give the
 * same columns (or leave out ones whose default is null or known), the inserts of one table,
 * check and on_conflict, and the levels of their objects and of the rows under them as well.
 * Undefined otherwise: the rows are then inserted one CTE each (Note [Nested inserts]).
 */
function levelOf(irs: readonly InsertIR[], positions?: number[], objectOf?: readonly NestedInsert[], parentColumns: readonly string[] = []): Level | undefined {
  const first = irs[0]!;
  const rows = irs.length === 1 ? first.rows : irs.flatMap((x) => x.rows);
  // The columns any row gives; a row may leave out one whose default is null or known.
  const keys: string[] = [];
  for (const r of rows) for (const k of r.values.keys()) if (!keys.includes(k)) keys.push(k);
  // Rows that give no column (a cart of its items) are rows of defaults (`insertCte`), but for
  // an upsert, whose key they would not give.
  if (keys.length === 0 && !positions && first.onConflict) return undefined;
  // An upsert that may write nothing for a row (doing nothing, or updating only where a filter
  // holds) would move the rows after it: where rows are joined to them (rows under them, or
  // objects), they are joined by the key each row gives (Note [Levels joined by key]), or else
  // inserted one by one, where only a row with rows under it must have written (Hasura's
  // semantics); a level of them that nothing joins is a set.
  const oc = first.onConflict;
  const mayWriteNothing = oc !== undefined && !(oc.update.length > 0 && oc.where.t === 'true');
  const joinedToThem = mayWriteNothing && (objectOf !== undefined || rows.some((r) => r.after.length > 0));
  // Rows under several parents that update only where a filter holds cannot be merged (Note
  // [Rows upserting one row]), and two of them with one key fail one INSERT, where Hasura's
  // statement per parent updates in the later what the earlier wrote: unless the key holds a
  // column their parents give, or their keys differ (then they never share one; Note [Rows
  // repeating a key]), they go parent by parent (Note [Batches in steps]).
  if (irs.length > 1 && updatesOnConflict(first) && oc!.where.t !== 'true' && !parentColumns.some((c) => oc!.columns?.includes(c)) && mayShareKeys(irs.map((ir) => ({ ir })))) return undefined;
  // Nor are rows (of a parent) that repeat such a key (Note [Rows repeating a key]).
  if (irs.some(repeatsKey)) return undefined;
  // The object relationships any row gives; a row without one gives its columns itself.
  const objectNames: string[] = [];
  for (const r of rows) for (const b of r.before) if (!objectNames.includes(b.relationship)) objectNames.push(b.relationship);
  for (const r of rows) for (const k of keys) if (!givesOrDefault(r.values, k, first.columns)) return undefined;
  if (irs.length > 1) {
    const same = sameness([first.table, first.check, first.onConflict]);
    if (irs.some((x) => x !== first && sameness([x.table, x.check, x.onConflict]) !== same)) return undefined;
  }
  let keyed: KeyedRow[] | undefined;
  if (joinedToThem) {
    if (!joinsByKey(first, rows)) return undefined;
    keyed = objectOf
      ? objectOf.map((b, i) => ({ position: i + 1, at: b, relationship: b.relationship }))
      : rows.flatMap((r, i) => (r.after.length > 0 ? [{ position: i + 1, at: r }] : []));
  }
  const byRelationship = new Map<string, { mapping: readonly (readonly [string, string])[]; irs: InsertIR[]; positions: number[] }>();
  rows.forEach((r, i) => {
    for (const a of r.after) {
      let e = byRelationship.get(a.relationship);
      if (!e) byRelationship.set(a.relationship, (e = { mapping: a.mapping, irs: [], positions: [] }));
      e.irs.push(a.insert);
      for (let j = 0; j < a.insert.rows.length; j++) e.positions.push(i + 1);
    }
  });
  const children: Level['children'] = [];
  for (const e of byRelationship.values()) {
    const level = levelOf(e.irs, e.positions, undefined, e.mapping.map(([, child]) => child));
    if (!level) return undefined;
    children.push({ mapping: e.mapping, level });
  }
  const objects: Level['objects'] = [];
  for (const name of objectNames) {
    const having = rows.flatMap((r, i) => r.before.filter((b) => b.relationship === name).map((b) => [i, b] as const));
    const level = levelOf(
      having.map(([, b]) => b.insert),
      undefined,
      having.map(([, b]) => b),
    );
    if (!level) return undefined;
    const at = having[0]![1];
    let positions: (number | null)[] | undefined;
    if (having.length < rows.length) {
      positions = rows.map(() => null);
      having.forEach(([i], j) => (positions![i] = j + 1));
    }
    objects.push({ relationship: name, mapping: at.mapping, at, level, ...(positions ? { positions } : {}) });
  }
  return { ir: irs.length === 1 ? first : { ...first, rows }, at: origins.get(first) ?? first, ...(positions ? { positions } : {}), objects, children, ...(keyed ? { keyed } : {}) };
}

/** Whether `rows` (of inserts like `ir`, whose upsert may write nothing) can be joined to what
 * is under them by the key they upsert by (Note [Levels joined by key]): each gives every
 * column of it as a literal other than null, no preset of the update sets one, the upsert does
 * not merge rows of one key (an update without a where: Note [Rows upserting one row]), and
 * where it updates, no two give the same text. */
function joinsByKey(ir: InsertIR, rows: readonly InsertRowIR[]): boolean {
  const oc = ir.onConflict!;
  const key = oc.columns;
  if (!key?.length || (updatesOnConflict(ir) && oc.where.t === 'true') || key.some((c) => oc.set?.has(c))) return false;
  for (const r of rows) {
    for (const c of key) {
      // A null is part of a variable's shape (Note [Statements per variable shape]).
      const v = r.values.get(c);
      if (v?.k !== 'value' || v.value.k !== 'lit' || v.value.v === null) return false;
    }
  }
  // Rows doing nothing on conflict may repeat a key: the first writes the row, the later ones
  // nothing (PostgreSQL's one INSERT as Hasura's statements), and `each` gives it to the first
  // only. So the statement is right for any values of the shape; an update's is not.
  if (!updatesOnConflict(ir)) return true;
  byValues = true;
  const seen = new Set<string>();
  for (const r of rows) {
    const k = keyOf(ir, r);
    if (typeof k !== 'string' || seen.has(k)) return false;
    seen.add(k);
  }
  return true;
}
