/**
 * URL templates of REST endpoints: the trie requests are matched against, and the ambiguity check
 * made when endpoints are defined (Hasura/RQL/Types/Endpoint/Trie.hs, same semantics).
 */

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type Method = (typeof METHODS)[number];

/** A template's segments: a literal, or a variable (`:name`, kept with its colon). */
export const segmentsOf = (url: string): string[] => url.split('/');
export const isVariable = (segment: string) => segment.startsWith(':');

/** What Hasura refuses in a template: empty segments (`a//b`, a leading or trailing slash) and
 * unnamed variables (`a/:/b`). */
export const hasInvalidSegments = (url: string) => segmentsOf(url).some((s) => s === '' || s === ':');

/** Whether a variable is named twice (`a/:id/b/:id`). */
export function hasDuplicateVariables(url: string): boolean {
  const names = segmentsOf(url).filter(isVariable);
  return new Set(names).size !== names.length;
}

interface Node<V> {
  /** Literal segments. */
  lit: Map<string, Node<V>>;
  /** The wildcard (a variable segment). */
  param: Node<V> | undefined;
  /** Templates ending here, by method. */
  data: Map<Method, Set<V>> | undefined;
}

const node = <V>(): Node<V> => ({ lit: new Map(), param: undefined, data: undefined });

export class PathTrie<V> {
  private readonly root: Node<V> = node();

  insert(url: string, methods: readonly Method[], value: V): void {
    let n = this.root;
    for (const s of segmentsOf(url)) {
      if (isVariable(s)) n = n.param ??= node();
      else {
        let next = n.lit.get(s);
        if (!next) n.lit.set(s, (next = node()));
        n = next;
      }
    }
    n.data ??= new Map();
    for (const m of methods) {
      let set = n.data.get(m);
      if (!set) n.data.set(m, (set = new Set()));
      set.add(value);
    }
  }

  /** Hasura's matchPath: the one value for the method, or why there is none. */
  match(method: string, path: readonly string[]): MatchResult<V> {
    let result: MatchResult<V> = { kind: 'not-found' };
    const visit = (n: Node<V>, i: number, params: string[]) => {
      if (result.kind === 'ambiguous') return;
      if (i === path.length) {
        if (n.data) result = join(result, resultAt(n.data, method, params));
        return;
      }
      const lit = n.lit.get(path[i]!);
      if (lit) visit(lit, i + 1, params);
      if (n.param) visit(n.param, i + 1, [...params, path[i]!]);
    };
    visit(this.root, 0, []);
    return result;
  }

  /** Hasura's ambiguousPathsGrouped: groups of values that some request could match more than
   * one of for one method (a variable segment matches any literal). */
  ambiguousGroups(): Set<V>[] {
    const groups: Set<V>[] = [];
    const walk = (n: Node<V>) => {
      const here = new Set<V>();
      for (const set of n.data?.values() ?? []) if (set.size >= 2) for (const v of set) here.add(v);
      if (here.size) groups.push(here);
      // Each child, with the wildcard's subtree merged into it (a request segment that matches
      // the literal also matches the variable).
      for (const child of n.lit.values()) walk(n.param ? merge(child, n.param) : child);
      if (n.param) walk(n.param);
    };
    walk(this.root);
    // Groups that share a value are one conflict.
    const out: Set<V>[] = [];
    for (const g of groups) {
      let target = g;
      for (let i = out.length - 1; i >= 0; i--) {
        if ([...out[i]!].some((v) => target.has(v))) {
          target = new Set([...out[i]!, ...target]);
          out.splice(i, 1);
        }
      }
      out.push(target);
    }
    return out;
  }
}

function merge<V>(a: Node<V>, b: Node<V>): Node<V> {
  const out: Node<V> = { lit: new Map(a.lit), param: a.param, data: undefined };
  for (const [k, child] of b.lit) {
    const mine = out.lit.get(k);
    out.lit.set(k, mine ? merge(mine, child) : child);
  }
  if (b.param) out.param = out.param ? merge(out.param, b.param) : b.param;
  if (a.data || b.data) {
    out.data = new Map();
    for (const d of [a.data, b.data]) {
      for (const [m, set] of d ?? []) out.data.set(m, new Set([...(out.data.get(m) ?? []), ...set]));
    }
  }
  return out;
}

export type MatchResult<V> =
  | { kind: 'found'; value: V; params: string[] }
  | { kind: 'missing-method'; allowed: Set<Method> }
  | { kind: 'ambiguous' }
  | { kind: 'not-found' };

function resultAt<V>(data: Map<Method, Set<V>>, method: string, params: string[]): MatchResult<V> {
  const set = data.get(method as Method);
  if (!set || set.size === 0) return data.size ? { kind: 'missing-method', allowed: new Set(data.keys()) } : { kind: 'not-found' };
  if (set.size > 1) return { kind: 'ambiguous' };
  return { kind: 'found', value: set.values().next().value!, params };
}

/** The join of Hasura's MatchResult lattice: ambiguous on top, not-found at the bottom. */
function join<V>(a: MatchResult<V>, b: MatchResult<V>): MatchResult<V> {
  if (a.kind === 'ambiguous' || b.kind === 'ambiguous') return { kind: 'ambiguous' };
  if (a.kind === 'found' && b.kind === 'found') return { kind: 'ambiguous' };
  if (a.kind === 'found') return a;
  if (b.kind === 'found') return b;
  if (a.kind === 'missing-method' && b.kind === 'missing-method') return { kind: 'missing-method', allowed: new Set([...a.allowed, ...b.allowed]) };
  return a.kind === 'not-found' ? b : a;
}
