/**
 * Buffers given back to be written into again (Note [Lent answer bytes] in
 * core/schema/contract.ts; Note [Read buffers given back] in ./pg-socket.ts): the records
 * writer's, the records workers' lanes, and PostgreSQL's messages read whole.
 */

/** Classes looked in above the one a size falls in: a buffer up to about 8 times what is asked. */
const ABOVE = 2;

/**
 * What was given back, kept up to `maxBytes` in all and `maxEach` apiece (by `bytes`), and taken
 * by the room it has (`room`, at least what is asked). Kept by the power of two below its room, so
 * that a take looks at a few entries however many are kept (the last eight of its own class, then
 * the last of each of the next two), and takes the one given back last.
 */
export class IdleList<T> {
  /** By class: the items whose room is at least 2^c and less than 2^(c+1). */
  private readonly classes: T[][] = [];
  private bytes = 0;

  constructor(
    private readonly size: (x: T) => number,
    private readonly room: (x: T) => number,
    private readonly maxBytes: number,
    private readonly maxEach = maxBytes,
  ) {}

  /** One given back with room for `need`, taken out of the list. */
  take(need: number): T | undefined {
    const c = classOf(need);
    const own = this.classes[c];
    if (own) {
      for (let i = own.length - 1, seen = 0; i >= 0 && seen < 8; i--, seen++) {
        const x = own[i]!;
        if (this.room(x) < need) continue;
        own.splice(i, 1);
        this.bytes -= this.size(x);
        return x;
      }
    }
    for (let k = c + 1; k <= c + ABOVE; k++) {
      const x = this.classes[k]?.pop();
      if (x === undefined) continue;
      this.bytes -= this.size(x);
      return x;
    }
    return undefined;
  }

  /** Keeps `x` where there is room; whether it did. */
  keep(x: T): boolean {
    const n = this.size(x);
    if (n > this.maxEach || this.bytes + n > this.maxBytes) return false;
    (this.classes[classOf(this.room(x))] ??= []).push(x);
    this.bytes += n;
    return true;
  }
}

/** The power of two at or below n (n >= 1). */
const classOf = (n: number): number => 31 - Math.clz32(Math.max(1, n));
