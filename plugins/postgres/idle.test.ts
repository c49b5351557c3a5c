/** IdleList (./idle.ts): what was given back, taken by the room it has. */
import { describe, expect, it } from 'vitest';
import { IdleList } from './idle.js';

describe('IdleList', () => {
  const list = (max = 1 << 20, each = max) => new IdleList<Buffer>((b) => b.length, (b) => b.length, max, each);

  it('takes one with room for what is asked, the one given back last, each once', () => {
    const l = list();
    const [a, b, c] = [Buffer.alloc(5000), Buffer.alloc(6000), Buffer.alloc(7000)];
    for (const x of [a, b, c]) expect(l.keep(x)).toBe(true);
    expect(l.take(6500)).toBe(c);
    expect(l.take(6500)).toBeUndefined();
    expect(l.take(4097)).toBe(b);
    expect(l.take(4097)).toBe(a);
    expect(l.take(1)).toBeUndefined();
  });

  it('looks two classes above what is asked, no further', () => {
    const l = list();
    const big = Buffer.alloc(16_384);
    l.keep(big);
    expect(l.take(3000)).toBeUndefined(); // 2^11: 16 KiB is three classes above
    expect(l.take(4096)).toBe(big); // 2^12: two above
  });

  it('keeps at most maxBytes in all and maxEach apiece; a take makes room again', () => {
    const l = list(10_000, 6000);
    expect(l.keep(Buffer.alloc(7000))).toBe(false);
    const a = Buffer.alloc(6000);
    expect(l.keep(a)).toBe(true);
    expect(l.keep(Buffer.alloc(5000))).toBe(false);
    expect(l.keep(Buffer.alloc(4000))).toBe(true);
    expect(l.take(6000)).toBe(a);
    expect(l.keep(Buffer.alloc(5000))).toBe(true);
  });

  it('looks at the last eight of its own class only', () => {
    const l = list();
    const roomy = Buffer.alloc(8000);
    l.keep(roomy);
    for (let i = 0; i < 8; i++) l.keep(Buffer.alloc(4100));
    expect(l.take(7000)).toBeUndefined();
    for (let i = 0; i < 8; i++) expect(l.take(4100)?.length).toBe(4100);
    expect(l.take(7000)).toBe(roomy);
  });
});
