/**
 * Note [postgres.js's pool queue] (server/patch-dependencies.mjs): the installed postgres.js
 * runs our queue, and that queue is a queue. Whether `npm ci` patched the copies is read from the
 * files; the behaviour is checked on the installed ESM and CommonJS copies against a plain array
 * model, over random sequences of the operations postgres.js makes (push, shift, remove of a
 * queued entry and of one already taken), long enough for the dead head to be cut off many times.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { postgresQueueState } from '../server/patch-dependencies.mjs';

const root = path.resolve(import.meta.dirname, '..');

type Queue<T> = { readonly length: number; push(x: T): T; shift(): T | undefined; remove(x: T): T | null };
type Op = { k: 'push' } | { k: 'shift' } | { k: 'remove'; at: number } | { k: 'remove-gone' };

const op = fc.oneof(
  { arbitrary: fc.constant<Op>({ k: 'push' }), weight: 5 },
  { arbitrary: fc.constant<Op>({ k: 'shift' }), weight: 4 },
  { arbitrary: fc.nat(40).map((at): Op => ({ k: 'remove', at })), weight: 2 },
  { arbitrary: fc.constant<Op>({ k: 'remove-gone' }), weight: 1 },
);

/** Runs `ops` on the queue and on an array, answering the same at each step. */
function sameAsModel(make: () => Queue<object>, ops: Op[]): void {
  const q = make();
  const model: object[] = [];
  const gone: object[] = [];
  for (const o of ops) {
    if (o.k === 'push') {
      const x = {};
      expect(q.push(x)).toBe(x);
      model.push(x);
    } else if (o.k === 'shift') {
      const x = q.shift();
      expect(x).toBe(model.shift());
      if (x) gone.push(x);
    } else if (o.k === 'remove') {
      const x = model[o.at % Math.max(1, model.length)];
      if (!x) continue;
      expect(q.remove(x)).toBe(x);
      model.splice(model.indexOf(x), 1);
      gone.push(x);
    } else if (gone.length) {
      // What postgres.js does after open.shift(): remove a connection no longer queued.
      expect(q.remove(gone[gone.length - 1]!)).toBeNull();
    }
    expect(q.length).toBe(model.length);
  }
  for (const x of model) expect(q.shift()).toBe(x);
  expect(q.shift()).toBeUndefined();
  expect(q.length).toBe(0);
}

describe("postgres.js's pool queue (Note [postgres.js's pool queue])", () => {
  it('every installed copy of queue.js is ours (npm install ran server/patch-dependencies.mjs)', () => {
    const states = postgresQueueState(root) as { file: string; state: string }[];
    expect(states.map((s) => [s.file, s.state])).toEqual([
      ['src/queue.js', 'ours'],
      ['cf/src/queue.js', 'ours'],
      ['cjs/src/queue.js', 'ours'],
    ]);
  });

  it('the ESM and CommonJS copies answer as a FIFO queue with removal', async () => {
    const esm = (await import(path.join(root, 'node_modules/postgres/src/queue.js'))).default as (initial?: object[]) => Queue<object>;
    const cjs = createRequire(import.meta.url)(path.join(root, 'node_modules/postgres/cjs/src/queue.js')) as (initial?: object[]) => Queue<object>;
    for (const Queue of [esm, cjs]) {
      fc.assert(fc.property(fc.array(op, { maxLength: 400 }), (ops) => sameAsModel(() => Queue(), ops)), { numRuns: 200 });
      // An initial list is copied, not shared.
      const initial = [{}, {}];
      const q = Queue(initial);
      q.shift();
      expect(initial).toHaveLength(2);
      expect(q.length).toBe(1);
    }
  });
});
