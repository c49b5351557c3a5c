import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LayeredMap } from './layered-map.js';

type Op = { set: number; value: string } | { delete: number };

const op = (keys: number): fc.Arbitrary<Op> =>
  fc.oneof(
    fc.record({ set: fc.integer({ min: 0, max: keys }), value: fc.string({ maxLength: 2 }) }),
    fc.record({ delete: fc.integer({ min: 0, max: keys }) }),
  );

function apply(m: { set(k: number, v: string): unknown; delete(k: number): boolean }, ops: readonly Op[]): boolean[] {
  return ops.map((o) => ('set' in o ? (m.set(o.set, o.value), true) : m.delete(o.delete)));
}

/** Everything a reader can see of `m`, in its order. */
function seen(m: ReadonlyMap<number, string>, keys: number) {
  const each: [number, string][] = [];
  m.forEach((v, k, self) => {
    expect(self).toBe(m);
    each.push([k, v]);
  });
  return {
    entries: [...m],
    each,
    keys: [...m.keys()],
    values: [...m.values()],
    size: m.size,
    lookups: Array.from({ length: keys + 1 }, (_, k) => [m.has(k), m.get(k)]),
  };
}

describe('LayeredMap (Note [Layered maps])', () => {
  it('keeps a key set again in its place, and puts a key added, or added again after its removal, last', () => {
    const m = LayeredMap.after(
      new Map([
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ]),
    );
    const next = LayeredMap.after(m.set('b', 20).set('d', 4));
    next.delete('a');
    next.set('a', 10);
    next.delete('d');
    next.set('e', 5);
    expect([...next]).toEqual([
      ['b', 20],
      ['c', 3],
      ['a', 10],
      ['e', 5],
    ]);
    expect(next.size).toBe(4);
    expect([...m]).toEqual([
      ['a', 1],
      ['b', 20],
      ['c', 3],
      ['d', 4],
    ]);
    expect(next.delete('d')).toBe(false);
    expect(next.get('d')).toBeUndefined();
    expect(String(next)).toBe('[object LayeredMap]');
  });

  it('holds an undefined value as a Map does', () => {
    const m = LayeredMap.after(new Map<string, number | undefined>([['a', 1]]));
    m.set('a', undefined);
    const each: unknown[] = [];
    m.forEach((v, k) => each.push([k, v]));
    expect([m.has('a'), m.get('a'), m.size, [...m], each]).toEqual([true, undefined, 1, [['a', undefined]], [['a', undefined]]]);
  });

  it('behaves as a copy of the map it starts from, each layer as its own, through many layers', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.string({ maxLength: 2 })), { maxLength: 60 }),
        fc.array(fc.array(op(60), { maxLength: 30 }), { maxLength: 12 }),
        (start, layers) => {
          // Each layer and its model (a Map copied from the one before), kept to check that later
          // layers leave the earlier ones as they were.
          const made: [ReadonlyMap<number, string>, Map<number, string>][] = [];
          let map: ReadonlyMap<number, string> = new Map(start);
          let model = new Map(start);
          for (const ops of layers) {
            const next = LayeredMap.after(map);
            const nextModel = new Map(model);
            expect(apply(next, ops)).toEqual(apply(nextModel, ops));
            expect(seen(next, 60)).toEqual(seen(nextModel, 60));
            made.push([next, nextModel]);
            map = next;
            model = nextModel;
          }
          for (const [m, mm] of made) expect(seen(m, 60)).toEqual(seen(mm, 60));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('stays right when its overlay is flattened into a new base, again and again', () => {
    // Each layer adds one key and replaces one: the overlay passes its bound every few dozen
    // layers (Note [Layered maps]), so this goes through several bases.
    let map: ReadonlyMap<number, number> = new Map(Array.from({ length: 100 }, (_, i) => [i, i]));
    const model = new Map(map);
    const layers: [ReadonlyMap<number, number>, [number, number][]][] = [];
    for (let i = 0; i < 400; i++) {
      const next = LayeredMap.after(map);
      next.set(100 + i, i);
      next.set(i % 100, -i);
      if (i % 3 === 0) next.delete(100 + i - 1);
      model.set(100 + i, i);
      model.set(i % 100, -i);
      if (i % 3 === 0) model.delete(100 + i - 1);
      layers.push([next, [...model]]);
      map = next;
    }
    for (const [m, entries] of layers) {
      expect([...m]).toEqual(entries);
      expect(m.size).toBe(entries.length);
    }
  });

  it('says which keys differ between two layers over one base, as a comparison of every key would', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.constantFrom('a', 'b')), { maxLength: 30 }),
        fc.array(fc.array(op(30), { maxLength: 8 }), { minLength: 1, maxLength: 20 }),
        fc.nat(),
        (start, layers, pick) => {
          // Values are objects, compared by identity as a build's resolved tables are.
          const obj = new Map<string, object>();
          const of = (v: string) => obj.get(v) ?? (obj.set(v, { v }), obj.get(v)!);
          const made: ReadonlyMap<number, object>[] = [new Map(start.map(([k, v]) => [k, of(v)]))];
          for (const ops of layers) {
            const next = LayeredMap.after(made[made.length - 1]!);
            for (const o of ops) if ('set' in o) next.set(o.set, of(o.value));
            else next.delete(o.delete);
            made.push(next);
          }
          const a = made[pick % made.length]!;
          const b = made[made.length - 1]!;
          const changed = LayeredMap.changedKeys(a, b);
          if (changed === undefined) return;
          const truth = new Set<number>();
          for (let k = 0; k <= 30; k++) if (a.has(k) !== b.has(k) || a.get(k) !== b.get(k)) truth.add(k);
          expect([...changed].sort((x, y) => x - y)).toEqual([...truth].sort((x, y) => x - y));
        },
      ),
      { numRuns: 500 },
    );
    const base = new Map([[1, 'x']]);
    expect(LayeredMap.changedKeys(base, LayeredMap.after(base))).toBeUndefined();
    const one = LayeredMap.after(base);
    const two = LayeredMap.after(one);
    two.set(2, 'y');
    expect(LayeredMap.changedKeys(one, two)).toEqual(new Set([2]));
  });
});
