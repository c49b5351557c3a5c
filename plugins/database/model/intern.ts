/*
 * Note [Interned introspection]
 * A source is introspected again after SQL that may have changed its schema (run_sql), on
 * reload_metadata, and on replace_metadata. Most of what comes back is what the last
 * introspection found, but as new objects, so everything keyed on a table's `TableInfo` or on
 * the introspection's identity (resolved tables, root fields, the change pass of Note [Resolving
 * a change] in service.ts) started again for every table: at 2,000 tables about 60 ms of Node
 * per run_sql that altered one table, beside the introspections' own time. So the build takes
 * the previous introspection's TableInfo wherever the new one is equal, and the previous maps of
 * functions and types when every entry is equal: a table the SQL did not touch keeps its info
 * object, and the build sees it unchanged. Equal means equal as JSON (the introspections are
 * read from JSON); an object of any other class is equal only to itself.
 */
import type { Introspection } from './types.js';

/** `next` with the previous introspection's objects wherever equal (Note [Interned introspection]);
 * `next` itself, updated in place (it is fresh, and equal values are the same values). */
export function internIntrospection(next: Introspection, prev: Introspection | null | undefined): Introspection {
  if (!prev || next === prev) return next;
  for (const [key, info] of next.tables) {
    const before = prev.tables.get(key);
    if (before && before !== info && sameJson(before, info)) next.tables.set(key, before);
  }
  if (sameEntries(next.functions, prev.functions)) next.functions = prev.functions;
  if (sameEntries(next.types, prev.types)) next.types = prev.types;
  return next;
}

function sameEntries<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>): boolean {
  if (a === b) return true;
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    if (!b.has(k) || !sameJson(v, b.get(k))) return false;
  }
  return true;
}

/** Whether two values read from JSON are equal (arrays by position, objects by key). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b) || Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  // for-in over plain objects (their prototype is Object.prototype, which has no enumerable
  // keys), not Object.keys: no array per object, half the time (27 ms for 10,000 tables).
  let keys = 0;
  for (const k in a) {
    if (!Object.hasOwn(b, k) || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
    keys++;
  }
  for (const _ in b) keys--;
  return keys === 0;
}
