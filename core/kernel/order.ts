/**
 * Orders named items by their `before`/`after` lists (graphile-config's sort, fastify's
 * plugin-utils). Registration order breaks ties, so the result is stable.
 */
export interface Orderable {
  name: string;
  before?: string[];
  after?: string[];
}

export class OrderError extends Error {}

export function orderByDeps<T extends Orderable>(items: T[], what: string, opts: { strictAfter?: boolean } = {}): T[] {
  const byName = new Map<string, T>();
  for (const it of items) {
    if (byName.has(it.name)) throw new OrderError(`${what} "${it.name}" is registered twice`);
    byName.set(it.name, it);
  }
  const edges = new Map<string, Set<string>>(); // name -> names that must come first
  for (const it of items) edges.set(it.name, new Set());
  for (const it of items) {
    for (const a of it.after ?? []) {
      if (!byName.has(a)) {
        if (opts.strictAfter) throw new OrderError(`${what} "${it.name}" depends on "${a}", which is missing or disabled`);
        continue;
      }
      edges.get(it.name)!.add(a);
    }
    for (const b of it.before ?? []) if (byName.has(b)) edges.get(b)!.add(it.name);
  }
  const out: T[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, stack: string[]) => {
    const s = state.get(name);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...stack.slice(stack.indexOf(name)), name];
      throw new OrderError(`${what} dependency cycle: ${cycle.join(' -> ')}`);
    }
    state.set(name, 'visiting');
    for (const dep of edges.get(name)!) visit(dep, [...stack, name]);
    state.set(name, 'done');
    out.push(byName.get(name)!);
  };
  for (const it of items) visit(it.name, []);
  return out;
}
