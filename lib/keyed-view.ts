/**
 * A read-only map whose entries are found by key and walked on demand (Note [Root fields by
 * name] in core/schema/assembly.ts, Note [Role tables on demand] in
 * plugins/database/schema/role.ts): a subclass says how to find one key and how to walk the keys;
 * the rest of ReadonlyMap follows, `size` by walking them once.
 */
export abstract class KeyedView<K, V> implements ReadonlyMap<K, V> {
  #size: number | undefined;
  #empty: boolean | undefined;

  abstract get(key: K): V | undefined;
  /** Every key once, in the map's order. */
  abstract keys(): MapIterator<K>;

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Whether it has no entry: the first step of a walk, taken once (a view with none may walk
   * all it could have to say so). */
  get empty(): boolean {
    return (this.#empty ??= this.keys().next().done === true);
  }

  get size(): number {
    if (this.#size === undefined) {
      let n = 0;
      for (const _ of this.keys()) n++;
      this.#size = n;
    }
    return this.#size;
  }

  *entries(): MapIterator<[K, V]> {
    for (const k of this.keys()) yield [k, this.get(k)!];
  }

  *values(): MapIterator<V> {
    for (const k of this.keys()) yield this.get(k)!;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }

  get [Symbol.toStringTag](): string {
    return 'KeyedView';
  }
}
