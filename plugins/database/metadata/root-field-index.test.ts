/** The root-field index through builds: layers, collapses and flat indexes answer as a flat index
 * of the same owners would (Note [Root field conflicts]). No server: rootFieldState alone. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rootFieldState, type RootFieldState } from './customization.js';
import type { RootFieldOwner, RootFields } from '../model/types.js';

const FIELDS = ['a', 'b', 'c', 'd', 'e', 'f'];
const OWNERS = Array.from({ length: 12 }, (_, i) => `table t${i}`);

const key = (f: string) => `query\u0000${f}`;
const fieldsOf = (names: string[]): RootFields => ({ query: names, mutation: [], subscription: [] });

/** What a flat index of `owners` answers for a field. */
function truth(owners: readonly RootFieldOwner[], f: string): string[] {
  return owners.filter((o) => o.fields.query.includes(f)).map((o) => o.owner);
}

describe('the root-field index across builds (Note [Root field conflicts])', () => {
  it('answers every field and conflict as a flat index would, through layers, collapses and flattens', () => {
    // A build's change: an owner's fields set anew (or the owner added), an owner removed, or
    // the list left as it is.
    const change = fc.record({ owner: fc.nat({ max: OWNERS.length - 1 }), fields: fc.subarray(FIELDS, { maxLength: 3 }), remove: fc.boolean() });
    fc.assert(
      fc.property(fc.array(fc.array(change, { maxLength: 2 }), { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 6 }), (builds, depthLimit) => {
        // Twelve owners with one field each to start: most builds change a quarter or fewer.
        let list: RootFieldOwner[] = OWNERS.map((owner, i) => ({ owner, fields: fieldsOf([FIELDS[i % FIELDS.length]!]) }));
        let state: RootFieldState | undefined;
        for (const changes of builds) {
          const next = list.slice();
          for (const c of changes) {
            const at = next.findIndex((o) => o.owner === OWNERS[c.owner]);
            if (c.remove) {
              if (at >= 0) next.splice(at, 1);
            } else if (at >= 0) next[at] = { owner: OWNERS[c.owner]!, fields: fieldsOf(c.fields) };
            else next.push({ owner: OWNERS[c.owner]!, fields: fieldsOf(c.fields) });
          }
          list = next;
          state = rootFieldState(state, new Map([['default', list]]), depthLimit);
          for (const f of FIELDS) expect(state.index.owners(key(f)).map((o) => o.owner).sort(), f).toEqual(truth(list, f).sort());
          expect([...state.conflicts].sort()).toEqual(FIELDS.filter((f) => truth(list, f).length > 1).map(key).sort());
          expect(state.index.depth).toBeLessThanOrEqual(depthLimit + 1);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('collapses the layers rather than making the index flat again where few owners changed', () => {
    const owners = Array.from({ length: 40 }, (_, i): RootFieldOwner => ({ owner: `table t${i}`, fields: fieldsOf([`f${i}`]) }));
    let state = rootFieldState(undefined, new Map([['default', owners]]), 4);
    const flat = state.index;
    // One owner changed again and again: the layers collapse over the same flat index.
    for (let i = 0; i < 20; i++) {
      const list = owners.slice();
      list[3] = { owner: 'table t3', fields: fieldsOf([i % 2 ? 'f3' : 'f0']) };
      state = rootFieldState(state, new Map([['default', list]]), 4);
      expect(state.conflicts).toEqual(i % 2 ? [] : [key('f0')]);
    }
    let bottom = state.index as unknown as { parent?: unknown };
    while (bottom.parent) bottom = bottom.parent as { parent?: unknown };
    expect(bottom).toBe(flat);
  });
});
