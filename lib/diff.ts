/**
 * Structured differences between two JSON values: what `diff_metadata` and dry runs answer
 * (Note [Metadata diffs]), and what `svc metadata diff` prints per file (server/cli/diff.ts, with
 * arrays compared by position). It imports nothing: the kernel (dry runs), the metadata-history
 * plugin and the CLI share it.
 *
 * Note [Metadata diffs]
 * A change is `{kind: 'added', path, value}`, `{kind: 'removed', path, value}` or
 * `{kind: 'changed', path, from, to}`, at the deepest path where the two documents differ:
 *   - objects are compared key by key; a key set to null is a key not set (the export leaves
 *     such keys out);
 *   - a list whose elements all have a name (`name`, `role`, `role_name`, `collection`, `table`
 *     or `function`, in that order; a qualified name `{schema, name}` reads `schema.name`), each
 *     name once, is compared by name and not by position, so tracking a table is one `added`
 *     at `sources[default].tables[public.author]`, not a change of every later position; the
 *     order of such a list is not compared;
 *   - any other list (columns, an `_and` of a filter) is one value, `changed` as a whole.
 * A path reads `sources[default].tables[public.author].select_permissions[user].permission.filter`:
 * a key after a dot (or as `["a key"]` when it is not a plain name), an element's name in
 * brackets (JSON-quoted when it holds a bracket or a quote). Changes come in the order of the
 * first document, then what only the second has.
 */

export type Change =
  | { kind: 'added'; path: string; value: unknown }
  | { kind: 'removed'; path: string; value: unknown }
  | { kind: 'changed'; path: string; from: unknown; to: unknown };

export interface DiffOptions {
  /** `name`: lists of named elements by name (Note [Metadata diffs]); `position`: every list
   * element by element, at `path[i]` (the CLI's diff of one file). */
  lists: 'name' | 'position';
}

type Obj = Record<string, unknown>;

const isObject = (x: unknown): x is Obj => x !== null && typeof x === 'object' && !Array.isArray(x);

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

const IDENTITY_KEYS = ['name', 'role', 'role_name', 'collection', 'table', 'function'] as const;

function nameOf(x: unknown): string | undefined {
  if (!isObject(x)) return undefined;
  for (const k of IDENTITY_KEYS) {
    const id = x[k];
    if (typeof id === 'string') return id;
    if (isObject(id) && typeof id.name === 'string') {
      const qualifier = id.schema ?? id.dataset ?? id.database;
      return typeof qualifier === 'string' ? `${qualifier}.${id.name}` : id.name;
    }
    if (id !== undefined) return undefined;
  }
  return undefined;
}

/** The elements by name, or undefined when some element has none or a name is repeated. */
function byName(list: unknown[]): Map<string, unknown> | undefined {
  const out = new Map<string, unknown>();
  for (const x of list) {
    const n = nameOf(x);
    if (n === undefined || out.has(n)) return undefined;
    out.set(n, x);
  }
  return out;
}

const keyPath = (path: string, key: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}${path ? '.' : ''}${key}` : `${path}[${JSON.stringify(key)}]`);
const namePath = (path: string, name: string) => `${path}[${/[[\]"]/.test(name) ? JSON.stringify(name) : name}]`;

function walk(a: unknown, b: unknown, path: string, opts: DiffOptions, out: Change[]): void {
  if (same(a, b)) return;
  if (isObject(a) && isObject(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])]) {
      const av = a[k] ?? null;
      const bv = b[k] ?? null;
      const sub = keyPath(path, k);
      if (av === null && bv === null) continue;
      if (av === null) out.push({ kind: 'added', path: sub, value: bv });
      else if (bv === null) out.push({ kind: 'removed', path: sub, value: av });
      else walk(av, bv, sub, opts, out);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (opts.lists === 'position') {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        const sub = `${path}[${i}]`;
        if (i >= a.length) out.push({ kind: 'added', path: sub, value: b[i] });
        else if (i >= b.length) out.push({ kind: 'removed', path: sub, value: a[i] });
        else walk(a[i], b[i], sub, opts, out);
      }
      return;
    }
    const an = byName(a);
    const bn = byName(b);
    if (an && bn && (an.size > 0 || bn.size > 0)) {
      for (const [n, av] of an) {
        if (!bn.has(n)) out.push({ kind: 'removed', path: namePath(path, n), value: av });
        else walk(av, bn.get(n), namePath(path, n), opts, out);
      }
      for (const [n, bv] of bn) if (!an.has(n)) out.push({ kind: 'added', path: namePath(path, n), value: bv });
      return;
    }
  }
  out.push({ kind: 'changed', path, from: a, to: b });
}

/** The changes from `a` to `b` (Note [Metadata diffs]); empty when they are the same. */
export function diffValues(a: unknown, b: unknown, opts: DiffOptions = { lists: 'name' }): Change[] {
  const out: Change[] = [];
  walk(a, b, '', opts, out);
  return out;
}

/** The changes between two exported metadata documents (Note [Metadata diffs]). */
export function diffDocuments(from: Record<string, unknown>, to: Record<string, unknown>): Change[] {
  return diffValues(from, to, { lists: 'name' });
}
