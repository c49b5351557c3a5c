/**
 * A bounded LRU with counters (Note [The plan cache] in ./engine.ts). A Map keeps insertion
 * order, so the least recently used entry is the first key; a hit moves its entry to the end.
 * Bounded twice: by entries, and by the total length of their keys (`maxKeyChars`), since a
 * key holds a document's text and an entry its parsed form, which grows with it: 4,000 entries
 * of documents of a megabyte each would otherwise be gigabytes. A key longer than the whole
 * budget is not kept.
 */
export interface CacheStats {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
  capacity: number;
}

export class LruCache<V> {
  private readonly map = new Map<string, V>();
  hits = 0;
  misses = 0;
  evictions = 0;
  private keyChars = 0;

  constructor(
    readonly capacity: number,
    readonly maxKeyChars = Infinity,
  ) {}

  /** The value, counted as a hit, or undefined, counted as a miss. */
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Most recently used last.
    if (this.map.size > 1) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: string, value: V): void {
    if (this.capacity <= 0 || key.length > this.maxKeyChars) return;
    if (this.map.delete(key)) this.keyChars -= key.length;
    this.map.set(key, value);
    this.keyChars += key.length;
    while (this.map.size > this.capacity || this.keyChars > this.maxKeyChars) {
      const oldest = this.map.keys().next().value!;
      this.map.delete(oldest);
      this.keyChars -= oldest.length;
      this.evictions++;
    }
  }

  clear(): void {
    this.map.clear();
    this.keyChars = 0;
  }

  get size(): number {
    return this.map.size;
  }

  stats(): CacheStats {
    return { hits: this.hits, misses: this.misses, evictions: this.evictions, size: this.map.size, capacity: this.capacity };
  }
}
