/**
 * Note [Updates by key]
 * Hasura runs the updates of `update_<t>_many` one statement each, in order, in the request's
 * transaction; pipelined (Note [Statements pipelined] in ./mutation.ts) 1,000 updates of one row
 * each still cost about 180 ms on the two-core machine, half of it the engine's and PostgreSQL's
 * work per statement. The usual list names each row by its primary key (`where: {id: {_eq:
 * 5}}`) and sets the same columns: such a run of updates is one statement (`update_rows`, where
 * the kind compiles it: Dialect.updateKeyText), an UPDATE joined to the updates' keys and values
 * bound as arrays, whose rows come back with their update's position, each update's answer made
 * from the row of its position (PostgreSQL: Note [Updates by key in SQL] in
 * plugins/postgres/sql/compile-mutation.ts).
 *
 * One statement gives each update's row what the list one by one gives it, and each update the
 * same answer, where no update reads what another writes:
 * - No two updates of a run name one row: keys are compared as the database compares them
 *   (Dialect.updateKeyText: PostgreSQL's integers, uuids, texts under a deterministic
 *   collation, ColumnInfo.collationDeterministic, and citexts in ASCII; a key of another type,
 *   or given as anything but a literal other than null or a variable, keeps its update a
 *   statement of its own), and a key met again starts a new run. A key given by a variable in
 *   the document's list is read per request (`unresolved`: the plan made without the variables
 *   is not kept). One UPDATE writes a row once, and the later update would not see the earlier
 *   one's row.
 * - What an update reads of the table is its own row: the role's update filter and check, the
 *   select filter of `returning`, read nothing through relationships, `_exists` or computed
 *   fields that may reach the table (anything but another table, `readsOnlyOthers`), and
 *   `returning` selects columns only (a relationship there could read the table).
 * - The columns set are outside the primary key and every unique constraint: one UPDATE checks
 *   each row's uniqueness as it writes it, in the join's order, so values moved between rows in
 *   the list's order could collide in another. Only `_set` and `_inc` (no `_nested`).
 * - The table is a table, or a partitioned one (a view's INSTEAD OF trigger would see its rows
 *   in the join's order).
 * A run is the updates next to each other that set the same columns with the same operators;
 * a run of one stays its own statement. What still differs from the list one by one: a
 * statement-level trigger fires once for the run; a row-level trigger that writes other rows of
 * the table meets the run's rows in the join's order; a unique index that is no constraint (the
 * metadata does not know it) may reject values moved between rows that the list's order would
 * have let through; and where two updates fail for different reasons (a check, a value of the
 * wrong type) the error named may be the later one's. Hasura's own `update_<t>` writes its rows
 * in one statement the same way. The choice follows the values (the keys), so the statements
 * of a variable's list are not kept per shape (`byValues`: Note [Statements per variable
 * shape]). Tests: update-rows.test.ts; the oracle there runs random lists one update per request.
 */
import type { BoolIR, MutationIR, MutationOutput, UpdateIR, UpdateRowsIR, Value } from '../ir/types.js';
import type { QualifiedTable } from '../model/scalars.js';
import { qtKey } from '../model/meta.js';
import type { RoleTable } from './role.js';

type Entry = MutationIR | { empty: MutationOutput };

/** `entries`, an update_many's updates in order (`wheres`: each update's own where, without the
 * role's filter), with each run of updates by key as one `update_rows` (Note [Updates by key]);
 * `valueOf`: a key's value (a literal's, or a variable's where the plan has the variables,
 * undefined where it has not); `byValues`: whether the runs follow the values of the keys;
 * `unresolved`: whether a key is a variable's value the plan could not read. */
export function updatesByKey(
  entries: readonly Entry[],
  wheres: readonly (BoolIR | undefined)[],
  t: RoleTable,
  filter: BoolIR,
  check: BoolIR,
  valueOf: (v: Value) => unknown,
): { irs: Entry[]; byValues: boolean; unresolved?: boolean } {
  const keyText = t.source.kind.dialect.updateKeyText;
  const pk = t.model.primaryKey;
  const info = t.source.tables.get(t.model.key)?.info;
  const relation = info?.relation;
  const table = t.model.table;
  const output = entries.find((e): e is { k: 'update' } & UpdateIR => 'k' in e)?.output;
  if (!keyText || !pk || pk.length === 0 || (relation !== 'table' && relation !== 'partitioned_table') || output?.k !== 'multi') return { irs: [...entries], byValues: false };
  if (!readsOnlyOthers(filter, t) || !readsOnlyOthers(check, t) || !answersOwnRow(output, t)) return { irs: [...entries], byValues: false };
  const unique = new Set(t.model.constraints.flatMap((c) => c.columns));
  const keyColumns = pk.map((c) => t.model.columnsByName.get(c)!);
  const keyInfos = pk.map((c) => info?.columns.find((x) => x.name === c));
  /** The shape of an update that may join a run (its columns and operators), or undefined. */
  const shapeOf = (e: Entry): string | undefined => {
    if (!('k' in e) || e.k !== 'update' || e.nested?.length || e.set.length === 0) return undefined;
    if (!e.set.every((s) => (s.op === 'set' || s.op === 'inc') && !unique.has(s.column))) return undefined;
    return e.set.map((s) => `${s.op} ${s.column}`).join('\u0000');
  };
  const shapes = entries.map(shapeOf);
  // Runs are possible only where two updates of one shape are next to each other: then which
  // updates join one follows their keys' values.
  const byValues = shapes.some((s, i) => s !== undefined && s === shapes[i + 1]);
  if (!byValues) return { irs: [...entries], byValues };
  const irs: Entry[] = [];
  let unresolved = false;
  let run: { shape: string; seen: Set<string>; at: number[]; keys: Value[][] } | undefined;
  const close = () => {
    if (!run) return;
    if (run.at.length === 1) irs.push(entries[run.at[0]!]!);
    else {
      const first = entries[run.at[0]!] as { k: 'update' } & UpdateIR;
      const rows = run.at.map((i, j) => ({ key: run!.keys[j]!, values: (entries[i] as UpdateIR).set.map((s) => s.value!) }));
      const ir: { k: 'update_rows' } & UpdateRowsIR = {
        k: 'update_rows',
        table,
        key: keyColumns.map((c) => ({ column: c.name, scalar: c.scalar })),
        set: first.set.map((s) => ({ column: s.column, scalar: s.scalar, op: s.op as 'set' | 'inc' })),
        rows,
        filter,
        check,
        output,
        ...(first.tableColumns ? { tableColumns: first.tableColumns } : {}),
      };
      irs.push(ir);
    }
    run = undefined;
  };
  entries.forEach((e, i) => {
    const shape = shapes[i];
    const key = shape === undefined ? undefined : keyValues(wheres[i], pk);
    const values = key?.map(valueOf);
    if (values?.some((v) => v === undefined)) unresolved = true;
    const texts = values?.map((v, j) => (v === undefined || v === null ? undefined : keyText(v, keyColumns[j]!.scalar, keyInfos[j])));
    const text = texts?.every((x) => x !== undefined) ? texts.join('\u0000') : undefined;
    if (run && (text === undefined || shape !== run.shape || run.seen.has(text))) close();
    if (text === undefined) {
      irs.push(e);
      return;
    }
    run ??= { shape: shape!, seen: new Set(), at: [], keys: [] };
    run.seen.add(text);
    run.at.push(i);
    run.keys.push(key!);
  });
  close();
  return { irs, byValues, unresolved };
}

/** The values of `key`'s columns where `where` is exactly their equality with literals other
 * than null or variables (`{id: {_eq: 5}}`, under `_and`s), in `key`'s order; else undefined. */
function keyValues(where: BoolIR | undefined, key: readonly string[]): Value[] | undefined {
  if (!where) return undefined;
  const found = new Map<string, Value>();
  const walk = (b: BoolIR): boolean => {
    if (b.t === 'true') return true;
    if (b.t === 'and') return b.of.every(walk);
    if (b.t !== 'cmp' || b.op !== 'eq' || b.cast !== undefined || b.redact !== undefined || !key.includes(b.column) || found.has(b.column)) return false;
    if (b.value.k !== 'var' && (b.value.k !== 'lit' || b.value.v === null || b.value.v === undefined)) return false;
    found.set(b.column, b.value);
    return true;
  };
  if (!walk(where) || found.size !== key.length) return undefined;
  return key.map((c) => found.get(c)!);
}

/** Whether `b` reads nothing but the row and tables other than `t` (Note [Updates by key]):
 * no computed field (a function may read anything), and relationships and `_exists` only to
 * other tracked tables that are tables (a view may read `table`). */
function readsOnlyOthers(b: BoolIR | undefined, t: RoleTable): boolean {
  if (!b) return true;
  const other = (q: QualifiedTable) => {
    const key = qtKey(q);
    return key !== t.model.key && t.source.tables.get(key)?.info?.relation === 'table';
  };
  switch (b.t) {
    case 'and':
    case 'or':
      return b.of.every((x) => readsOnlyOthers(x, t));
    case 'not':
      return readsOnlyOthers(b.e, t);
    case 'cmp':
      return readsOnlyOthers(b.redact, t);
    case 'rel':
      return other(b.remote) && readsOnlyOthers(b.e, t);
    case 'exists':
      return other(b.table) && readsOnlyOthers(b.e, t);
    case 'fcmp':
    case 'frows':
      return false;
    default:
      return true;
  }
}

/** Whether an update's answer is made of its own row's columns (Note [Updates by key]). */
function answersOwnRow(out: Extract<MutationOutput, { k: 'multi' }>, t: RoleTable): boolean {
  return out.fields.every(
    (f) => f.k !== 'returning' || (readsOnlyOthers(f.filter, t) && f.select.fields.every((x) => x.k === 'typename' || (x.k === 'column' && x.redact === undefined))),
  );
}
