/**
 * Buffers given back to be written into again (Note [Lent answer bytes] in
 * core/schema/contract.ts): the records writer's, the records workers' lanes, and the buffers
 * PostgreSQL's large messages were read into (Note [Read buffers given back] in ./pg-socket.ts).
 */

/** What was given back, kept up to `maxBytes` in all and `maxEach` apiece (by `size`). */
export class IdleList<T> {
  private readonly items: T[] = [];
  private bytes = 0;

  constructor(
    private readonly size: (x: T) => number,
    private readonly maxBytes: number,
    private readonly maxEach = maxBytes,
  ) {}

  /** The one given back last that `fits`, taken out of the list. */
  take(fits: (x: T) => boolean): T | undefined {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const x = this.items[i]!;
      if (!fits(x)) continue;
      this.items.splice(i, 1);
      this.bytes -= this.size(x);
      return x;
    }
    return undefined;
  }

  /** Keeps `x` where there is room; whether it did. */
  keep(x: T): boolean {
    const n = this.size(x);
    if (n > this.maxEach || this.bytes + n > this.maxBytes) return false;
    this.items.push(x);
    this.bytes += n;
    return true;
  }
}
