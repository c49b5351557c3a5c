/**
 * A bounded LRU with counters (Note [The plan cache] in ./engine.ts). A Map keeps insertion
 * order, so the least recently used entry is the first key; a hit moves its entry to the end.
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

  constructor(readonly capacity: number) {}

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
    if (this.capacity <= 0) return;
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) {
      this.map.delete(this.map.keys().next().value!);
      this.evictions++;
    }
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }

  stats(): CacheStats {
    return { hits: this.hits, misses: this.misses, evictions: this.evictions, size: this.map.size, capacity: this.capacity };
  }
}
