import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { changedRun, mapChanged } from './lists.js';

describe('changedRun', () => {
  const a = { n: 1 };
  const b = { n: 2 };
  const c = { n: 3 };
  const d = { n: 4 };

  it('finds the run an insertion, a removal or a replacement changed', () => {
    expect(changedRun([a, b, c], [a, b, c])).toEqual({ start: 3, prevEnd: 3, nextEnd: 3 });
    expect(changedRun([a, b, c], [a, b, c, d])).toEqual({ start: 3, prevEnd: 3, nextEnd: 4 });
    expect(changedRun([a, b, c], [d, a, b, c])).toEqual({ start: 0, prevEnd: 0, nextEnd: 1 });
    expect(changedRun([a, b, c], [a, c])).toEqual({ start: 1, prevEnd: 2, nextEnd: 1 });
    expect(changedRun([a, b, c], [a, d, c])).toEqual({ start: 1, prevEnd: 2, nextEnd: 2 });
    expect(changedRun([a, b, c], [])).toEqual({ start: 0, prevEnd: 3, nextEnd: 0 });
    expect(changedRun([a, b, c], [c, b, a])).toEqual({ start: 0, prevEnd: 3, nextEnd: 3 });
  });

  it('compares by identity unless told how', () => {
    expect(changedRun([a, b], [a, { n: 2 }])).toEqual({ start: 1, prevEnd: 2, nextEnd: 2 });
    expect(changedRun([a, b], [a, { n: 2 }], (x, y) => x.n === y.n)).toEqual({ start: 2, prevEnd: 2, nextEnd: 2 });
  });

  it('leaves outside the runs the same elements in the same order, and the runs as short as that allows', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4 })), fc.array(fc.integer({ min: 0, max: 4 })), (prev, next) => {
        const { start, prevEnd, nextEnd } = changedRun(prev, next);
        expect(prev.slice(0, start)).toEqual(next.slice(0, start));
        expect(prev.slice(prevEnd)).toEqual(next.slice(nextEnd));
        expect([...prev.slice(0, start), ...next.slice(start, nextEnd), ...prev.slice(prevEnd)]).toEqual(next);
        // Neither run can be shortened at either end.
        if (start < prevEnd && start < nextEnd) expect(prev[start]).not.toBe(next[start]);
        if (prevEnd > start && nextEnd > start) expect(prev[prevEnd - 1]).not.toBe(next[nextEnd - 1]);
      }),
    );
  });
});

describe('mapChanged', () => {
  it('maps the list, calling make only for the run that changed', () => {
    const calls: number[] = [];
    const make = (x: { n: number }) => {
      calls.push(x.n);
      return { of: x.n };
    };
    const [a, b, c, d] = [1, 2, 3, 4].map((n) => ({ n }));
    const prev = [a!, b!, c!];
    const made = mapChanged(undefined, undefined, prev, make);
    expect(calls).toEqual([1, 2, 3]);
    calls.length = 0;
    const next = mapChanged(prev, made, [a!, d!, c!], make);
    expect(next).toEqual([{ of: 1 }, { of: 4 }, { of: 3 }]);
    expect(next[0]).toBe(made[0]);
    expect(next[2]).toBe(made[2]);
    expect(calls).toEqual([4]);
    expect(mapChanged(prev, made, prev, make)).toBe(made);
  });

  it('gives what mapping the whole list gives, after any change', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 })), fc.array(fc.integer({ min: 0, max: 5 })), (p, n) => {
        const items = [0, 1, 2, 3, 4, 5].map((k) => ({ k }));
        const prev = p.map((k) => items[k]!);
        const next = n.map((k) => items[k]!);
        const make = (x: { k: number }) => x.k * 10;
        expect(mapChanged(prev, prev.map(make), next, make)).toEqual(next.map(make));
      }),
    );
  });
});
