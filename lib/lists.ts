/**
 * Where two lists differ, compared from both ends: `prev[start, prevEnd)` was replaced by
 * `next[start, nextEnd)`, and what lies outside those runs is the same elements in the same
 * order. Documents are immutable and share what a change did not touch (Note [Sharing] in
 * core/types.ts), so by identity (the default `same`) the change an operation made to a list of
 * thousands of entries is found by comparing pointers.
 */
export function changedRun<T>(prev: readonly T[], next: readonly T[], same: (a: T, b: T) => boolean = Object.is): { start: number; prevEnd: number; nextEnd: number } {
  const shorter = Math.min(prev.length, next.length);
  let start = 0;
  while (start < shorter && same(prev[start]!, next[start]!)) start++;
  let prevEnd = prev.length;
  let nextEnd = next.length;
  while (prevEnd > start && nextEnd > start && same(prev[prevEnd - 1]!, next[nextEnd - 1]!)) {
    prevEnd--;
    nextEnd--;
  }
  return { start, prevEnd, nextEnd };
}

/**
 * `next.map(make)`, given `made`, what `make` gave for the elements of `prev` (undefined: none
 * yet): outside the run in which `next` differs from `prev` the results are taken from `made`,
 * so `make` (a cache lookup per element, say) runs only for the changed run. `make` must give
 * the same result for the same element.
 */
export function mapChanged<T, U>(prev: readonly T[] | undefined, made: readonly U[] | undefined, next: readonly T[], make: (x: T) => U): U[] {
  if (!prev || !made) return next.map(make);
  if (prev === next) return made as U[];
  const run = changedRun(prev, next);
  const out = made.slice(0, run.start);
  for (let i = run.start; i < run.nextEnd; i++) out.push(make(next[i]!));
  for (let i = run.prevEnd; i < made.length; i++) out.push(made[i]!);
  return out;
}
