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
