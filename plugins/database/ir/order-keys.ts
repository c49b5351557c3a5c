import type { FieldIR, OrderItem } from './types.js';

/*
 * Note [Aggregates answered by order keys]
 * A list ordered by an aggregate of an array relationship very often shows that aggregate too:
 *   artists(order_by: [{albums_aggregate: {count: desc}}, {id: asc}], limit: 20) {
 *     id name albums_aggregate { aggregate { count } } }
 * The order key is computed per candidate row, below the limit, and projected beside the row
 * (`__svc_oN`); the selection computed the same count again per answered row, a second
 * subquery over the same albums (on the bench's Chinook query, EXPLAIN ANALYZE after `analyze`:
 * 2.74 ms against 2.35 for SQL that sorts by the count and answers it, 2026-11-27). When every
 * value the selection asks is an order key's over the same rows, the selection reads the keys:
 * - the same relationship (remote table and mapping) read from the row itself (a key through
 *   object relationships is another row's aggregate);
 * - the same filter: the role's on the remote, which is the selection's `where` when it has no
 *   `where` argument of its own (compared by value, as JSON);
 * - no window of its own (limit, offset, distinct_on; a permission's limit caps nodes, not the
 *   rows aggregated) and no `nodes`;
 * - each value the same function of the same column: `count` (without columns) is the key
 *   `{count}`, `sum {rating}` the key `{sum: {rating}}`; no inherited role's redaction on
 *   either side (the two are written differently, and it is rare).
 * Otherwise the selection computes its aggregate as before: all or nothing, since one value
 * computed means the subquery runs anyway.
 */

/** Where the selected aggregate `f` of rows ordered by `orderBy` can be answered by their order
 * keys (Note [Aggregates answered by order keys]): for each value it asks (a `count` op, or a
 * column of a function's op), the index of the order key holding it; undefined when any value
 * needs the aggregate computed. */
export function aggregateByOrderKeys(f: Extract<FieldIR, { k: 'array_aggregate' }>, orderBy: readonly OrderItem[]): ReadonlyMap<object, number> | undefined {
  const r = f.agg.rows;
  if (r.from || r.limit !== undefined || r.offset !== undefined || r.distinctOn) return undefined;
  let sameRows: string | undefined;
  const keys: { fn: string; column: string; i: number }[] = [];
  orderBy.forEach((o, i) => {
    if (!o.agg || o.path.length > 0 || o.call || o.redact) return;
    sameRows ??= JSON.stringify([r.table, f.mapping, r.where]);
    if (JSON.stringify([o.agg.remote, o.agg.mapping, o.agg.filter]) === sameRows) keys.push({ fn: o.agg.fn, column: o.column, i });
  });
  if (keys.length === 0) return undefined;
  const keyOf = (fn: string, column: string) => keys.find((k) => k.fn === fn && k.column === column)?.i;
  const out = new Map<object, number>();
  for (const field of f.agg.fields) {
    if (field.k === 'nodes') return undefined;
    if (field.k === 'typename') continue;
    for (const op of field.fields) {
      if (op.k === 'typename') continue;
      if (op.k === 'count') {
        const i = op.columns?.length ? undefined : keyOf('count', '');
        if (i === undefined) return undefined;
        out.set(op, i);
        continue;
      }
      for (const c of op.columns) {
        if (c.column === undefined) continue;
        const i = c.redact ? undefined : keyOf(op.fn, c.column);
        if (i === undefined) return undefined;
        out.set(c, i);
      }
    }
  }
  return out;
}
