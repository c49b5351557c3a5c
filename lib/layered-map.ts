/*
 * Note [Layered maps]
 * A build after one metadata operation starts from the previous build's map of tables and changes
 * an entry or two (Note [Resolving a change] in plugins/database/model/service.ts). Copying the
 * map costs in proportion to the tables, and more than that from a few thousand entries: a hash
 * table of 10,000 string keys no longer fits the processor's caches, and building one cost
 * 3-4 ms on the two-core development machine (2026-11-29, Node 20 and 22; 65 µs at 2,000), a
 * third of a pg_track_table at 10,000 tables. So such a map is layered: a base map, never changed
 * once a layer shares it, and an overlay of the keys replaced, removed and added since, which
 * the next layer copies. It behaves as the copy would, order included (a key set again keeps its
 * place, a key added or added again after its removal comes last), and is flattened into a new
 * base when its overlay passes a bound that grows with the square root of the base's size, so a
 * change copies a small overlay and, now and then, the whole map.
 */

const GONE: unique symbol = Symbol('gone');

/** An overlay of at most this many entries per base entry's square root is copied, not flattened. */
const OVERLAY_PER_ROOT = 4;
const OVERLAY_MIN = 32;

export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  /** `base`'s entries replaced (or GONE) here; keys of `base` only. */
  private readonly over: Map<K, V | typeof GONE>;
  /** Keys not in `base`, or removed from it and set again, in the order they were set. */
  private readonly added: Map<K, V>;
  private gone: number;

  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    over?: Map<K, V | typeof GONE>,
    added?: Map<K, V>,
    gone = 0,
  ) {
    this.over = over ?? new Map();
    this.added = added ?? new Map();
    this.gone = gone;
  }

  /** A map to change that starts as `prev` (a copy, as `new Map(prev)`), sharing its base. */
  static after<K, V>(prev: ReadonlyMap<K, V>): LayeredMap<K, V> {
    if (!(prev instanceof LayeredMap)) return new LayeredMap(copy(prev));
    const p = prev as LayeredMap<K, V>;
    if (p.over.size + p.added.size > Math.max(OVERLAY_MIN, OVERLAY_PER_ROOT * Math.sqrt(p.base.size))) return new LayeredMap(copy(p));
    return new LayeredMap(p.base, new Map(p.over), new Map(p.added), p.gone);
  }

  /** What the layers of one lineage share (a key for what is kept per lineage): a layered
   * map's base, another map itself. */
  static baseOf<K, V>(m: ReadonlyMap<K, V>): object {
    return m instanceof LayeredMap ? (m as LayeredMap<K, V>).base : m;
  }

  /**
   * The keys whose entries differ between two maps (one added or removed, or its value another
   * object), found from their overlays where both are layers over one base; undefined where
   * they are not (then only a walk of both could say).
   */
  static changedKeys<K, V>(prev: ReadonlyMap<K, V>, next: ReadonlyMap<K, V>): Set<K> | undefined {
    if (prev === next) return new Set();
    if (!(prev instanceof LayeredMap) || !(next instanceof LayeredMap)) return undefined;
    const p = prev as LayeredMap<K, V>;
    const n = next as LayeredMap<K, V>;
    if (p.base !== n.base) return undefined;
    const changed = new Set<K>();
    for (const m of [p.over, p.added, n.over, n.added]) {
      for (const k of m.keys()) if (p.has(k) !== n.has(k) || p.get(k) !== n.get(k)) changed.add(k);
    }
    return changed;
  }

  get size(): number {
    return this.base.size - this.gone + this.added.size;
  }

  get(key: K): V | undefined {
    if (this.added.size !== 0 && this.added.has(key)) return this.added.get(key);
    if (this.over.size === 0) return this.base.get(key);
    const o = this.over.get(key);
    if (o === GONE) return undefined;
    return o !== undefined || this.over.has(key) ? (o as V) : this.base.get(key);
  }

  has(key: K): boolean {
    if (this.added.has(key)) return true;
    const o = this.over.get(key);
    if (o === GONE) return false;
    return o !== undefined || this.base.has(key);
  }

  set(key: K, value: V): this {
    if (this.added.has(key) || !this.base.has(key) || this.over.get(key) === GONE) this.added.set(key, value);
    else this.over.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (this.added.delete(key)) return true;
    if (!this.base.has(key) || this.over.get(key) === GONE) return false;
    this.over.set(key, GONE);
    this.gone++;
    return true;
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    const over = this.over;
    if (over.size === 0) this.base.forEach((v, k) => fn.call(thisArg, v, k, this));
    else {
      this.base.forEach((v, k) => {
        const o = over.get(k);
        if (o === undefined && !over.has(k)) fn.call(thisArg, v, k, this);
        else if (o !== GONE) fn.call(thisArg, o as V, k, this);
      });
    }
    this.added.forEach((v, k) => fn.call(thisArg, v, k, this));
  }

  entries(): MapIterator<[K, V]> {
    if (this.over.size === 0 && this.added.size === 0) return this.base.entries();
    return this.entriesLayered();
  }

  private *entriesLayered(): MapIterator<[K, V]> {
    const over = this.over;
    for (const [k, v] of this.base) {
      const o = over.get(k);
      if (o === undefined && !over.has(k)) yield [k, v];
      else if (o !== GONE) yield [k, o as V];
    }
    yield* this.added;
  }

  keys(): MapIterator<K> {
    if (this.over.size === 0 && this.added.size === 0) return this.base.keys();
    return this.keysLayered();
  }

  private *keysLayered(): MapIterator<K> {
    const over = this.over;
    for (const k of this.base.keys()) if (over.get(k) !== GONE) yield k;
    yield* this.added.keys();
  }

  /** Without an entry array per value: what a schema build iterates. */
  values(): MapIterator<V> {
    if (this.over.size === 0 && this.added.size === 0) return this.base.values();
    return this.valuesLayered();
  }

  private *valuesLayered(): MapIterator<V> {
    const over = this.over;
    for (const [k, v] of this.base) {
      const o = over.get(k);
      if (o === undefined && !over.has(k)) yield v;
      else if (o !== GONE) yield o as V;
    }
    yield* this.added.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'LayeredMap';
  }
}

/** Copied by forEach: Map's constructor takes the iterator's [key, value] pairs, an array per
 * entry. */
function copy<K, V>(m: ReadonlyMap<K, V>): Map<K, V> {
  const out = new Map<K, V>();
  m.forEach((v, k) => out.set(k, v));
  return out;
}
