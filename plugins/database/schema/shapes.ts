/**
 * Statements compiled once per shape of the variables that shape them (Note [Statements per
 * variable shape]).
 */
import { getNamedType, getNullableType, isEnumType, isInputObjectType, isListType, isScalarType, typeFromAST, type GraphQLInputType } from 'graphql';
import type { PlanInput } from '../../../core/plugin.js';
import type { CompiledQuery, ParamSource } from '../ir/types.js';

/*
 * Note [Statements per variable shape]
 * A mutation whose variables hold its rows (`objects: $rows`, `data: $tracks`) cannot be compiled
 * ahead: how many rows, which columns each gives and what it inserts through relationships make
 * the statement (Note [Variables that shape the query]). It was planned and compiled at every
 * request (0.14 ms of the engine's CPU for the benchmark's nested insert), though the values
 * only fill bind parameters. So the statement is compiled once per shape of those variables and
 * kept (a bounded memo per plan):
 *   - the shape walks each variable along its declared GraphQL type: objects' keys in order,
 *     lists' lengths, and the value itself of every leaf that may steer the planner (enum values:
 *     constraints, columns, orderings; Booleans; nulls; JSON objects of a scalar type such as
 *     jsonb or geometry);
 *   - every other leaf (a string or number of a scalar type: a column's value, an operand) is
 *     replaced by a sentinel of its JavaScript type, unique per leaf, and the statement is
 *     compiled for those stand-ins; each bind parameter that is a sentinel becomes a reference to
 *     the leaf's place in the variable (`{k: 'var', name, path}`), read from each request's
 *     variables when it runs.
 * The generalised statement is kept only when it is plainly right for every value: no sentinel
 * in the SQL text and none inside a larger parameter (an array column's value, a JSON path),
 * where it would stand for a constant, and not one the values themselves decide
 * (`CompiledQuery.perValue`: rows that repeat the key they upsert by, Note [Rows repeating a key]
 * in plugins/postgres/sql/compile-mutation.ts). Otherwise that shape is compiled per request, as before;
 * so is a large one (a batch of thousands of rows), whose statements would otherwise be kept once
 * per row count (SHAPE_KEY_MAX and SHAPE_SQL_MAX in ./mutation.ts).
 * Test: plugins/database/schema/mutation-shapes.test.ts.
 */

/** A leaf's place: the variable and the keys and indexes down to it. */
type Place = { name: string; path: (string | number)[] };

const STRING_MARK = '\u0000svc-leaf:';
/** A number no GraphQL document or variable holds by chance (a double's exact half above 10^15). */
const numberSentinel = (i: number) => 1e15 + i + 0.5;

export interface Abstracted {
  /** The variables with their value leaves replaced by sentinels. */
  variables: Record<string, unknown>;
  /** Each sentinel's place. */
  places: Map<string | number, Place>;
}

/** The declared type of each variable of an operation, once per plan (undefined: a type the
 * schema does not have, which validation would have refused). */
export function variableTypes(input: PlanInput): Types | undefined {
  const out: (readonly [string, GraphQLInputType])[] = [];
  for (const d of input.variableDefinitions) {
    const type = typeFromAST(input.schema, d.type as never) as GraphQLInputType | undefined;
    if (!type) return undefined;
    out.push([d.variable.name.value, type]);
  }
  return out;
}

type Types = readonly (readonly [string, GraphQLInputType])[];

/** What a walk of the variables along their types reports, in order (`walkShape`). */
interface ShapeSink {
  /** A leaf: null, a value that steers the planner (part of the shape), or a value. */
  leaf(v: unknown, kind: 'null' | 'steer' | 'value'): void;
  /** A list of `size` items, a single value where a list is declared (`one`), or an object. */
  open(kind: 'list' | 'one' | 'object', size: number): void;
  /** The variable's name, a list item's index or an object field's key, before its value. */
  key(k: string | number): void;
  close(): void;
}

/**
 * Walks each variable given along its declared type, telling `sink`; false when a value does not
 * fit its type (a request graphql-js let through some other way: compiled as it is). The one
 * place that says what makes a shape, for the memo key and the stand-ins alike.
 */
function walkShape(types: Types, vars: Readonly<Record<string, unknown>>, sink: ShapeSink): boolean {
  const walk = (v: unknown, type: GraphQLInputType): boolean => {
    if (v === null || v === undefined) {
      sink.leaf(null, 'null');
      return true;
    }
    const t = getNullableType(type) as GraphQLInputType;
    if (isListType(t)) {
      // A single value where a list is declared is a list of one (GraphQL's input coercion).
      if (!Array.isArray(v)) {
        sink.open('one', 1);
        if (!walk(v, t.ofType)) return false;
      } else {
        sink.open('list', v.length);
        for (let i = 0; i < v.length; i++) {
          sink.key(i);
          if (!walk(v[i], t.ofType)) return false;
        }
      }
      sink.close();
      return true;
    }
    if (isInputObjectType(t)) {
      if (typeof v !== 'object' || Array.isArray(v)) return false;
      const fields = t.getFields();
      sink.open('object', 0);
      for (const k in v as Record<string, unknown>) {
        const f = fields[k];
        if (!f) return false;
        sink.key(k);
        if (!walk((v as Record<string, unknown>)[k], f.type)) return false;
      }
      sink.close();
      return true;
    }
    if (isEnumType(t) || (isScalarType(t) && t.name === 'Boolean') || (typeof v !== 'string' && typeof v !== 'number')) sink.leaf(v, 'steer');
    else if (isScalarType(getNamedType(t))) sink.leaf(v, 'value');
    else return false;
    return true;
  };
  for (const [name, type] of types) {
    if (!(name in vars)) continue;
    sink.key(name);
    if (!walk(vars[name], type)) return false;
  }
  return true;
}

/**
 * The shape of `vars` (defaults applied) as a memo key, or undefined when a value does not fit its
 * type or the key would be longer than `max`. Computed at every request, so it only appends to
 * one list; the stand-ins (`abstractVariables`) are made only for a shape not seen before.
 */
export function shapeKey(types: Types, vars: Readonly<Record<string, unknown>>, max = Infinity): string | undefined {
  const out: string[] = [];
  // The key's length so far, counted as it grows: a batch of thousands of rows is known too
  // large to keep (`max`) after its first rows, not after all of them.
  let length = 0;
  const push = (part: string) => {
    length += part.length;
    if (length > max) throw TOO_LARGE;
    out.push(part);
  };
  try {
    const ok = walkShape(types, vars, {
      leaf: (v, kind) => push(kind === 'null' ? 'n' : kind === 'steer' ? `V${JSON.stringify(v)}` : typeof v === 'string' ? 's' : 'd'),
      open: (kind, size) => push(kind === 'list' ? `L${size}(` : kind === 'one' ? '1(' : '{'),
      // Indexes follow from the order; names and fields are part of the shape.
      key: (k) => {
        if (typeof k === 'string') push(`${JSON.stringify(k)}:`);
      },
      close: () => push(')'),
    });
    return ok ? out.join('') : undefined;
  } catch (e) {
    if (e === TOO_LARGE) return undefined;
    throw e;
  }
}
const TOO_LARGE = Symbol('too large');

/** The stand-ins of `vars` (defaults applied) for a shape `shapeKey` accepted; undefined as there. */
export function abstractVariables(types: Types, vars: Readonly<Record<string, unknown>>): Abstracted | undefined {
  const places = new Map<string | number, Place>();
  const variables: Record<string, unknown> = {};
  // The containers being built, innermost last, each with the key its next value goes to (a
  // list of one passes its item up: it has no key, and is no step of a leaf's path).
  const stack: { c: unknown; k?: string | number; one?: boolean }[] = [{ c: variables }];
  const put = (x: unknown) => {
    const f = stack[stack.length - 1]!;
    if (f.one) f.c = x;
    else (f.c as Record<string | number, unknown>)[f.k!] = x;
  };
  const ok = walkShape(types, vars, {
    leaf(v, kind) {
      if (kind !== 'value') return put(v);
      const s = typeof v === 'string' ? `${STRING_MARK}${places.size}\u0000` : numberSentinel(places.size);
      const path = stack.slice(1).flatMap((f) => (f.one ? [] : [f.k!]));
      places.set(s, { name: String(stack[0]!.k), path });
      put(s);
    },
    open(kind) {
      stack.push(kind === 'one' ? { c: undefined, one: true } : { c: kind === 'list' ? [] : {} });
    },
    key(k) {
      stack[stack.length - 1]!.k = k;
    },
    close() {
      put(stack.pop()!.c);
    },
  });
  return ok ? { variables, places } : undefined;
}

/** Whether `x` holds a sentinel of `a` anywhere inside. */
function holdsSentinel(x: unknown, a: Abstracted): boolean {
  if (typeof x === 'string') return x.includes(STRING_MARK);
  if (typeof x === 'number') return a.places.has(x);
  if (Array.isArray(x)) return x.some((e) => holdsSentinel(e, a));
  if (x && typeof x === 'object') return Object.values(x).some((e) => holdsSentinel(e, a));
  return false;
}

/**
 * A statement compiled for `a`'s stand-ins as one for every request of that shape: each sentinel
 * parameter a reference to its leaf; undefined when it is not plainly right for every value
 * (Note [Statements per variable shape]).
 */
export function generalise<Q extends CompiledQuery>(q: Q, a: Abstracted): Q | undefined {
  if (q.perValue) return undefined;
  if (q.sql.includes(STRING_MARK)) return undefined;
  for (const s of a.places.keys()) if (typeof s === 'number' && q.sql.includes(String(s))) return undefined;
  const params: ParamSource[] = [];
  for (const p of q.params) {
    const g = generaliseParam(p, a);
    if (!g) return undefined;
    params.push(g);
  }
  if (!q.steps) return { ...q, params };
  const steps: CompiledQuery[] = [];
  for (const step of q.steps) {
    const g = generalise(step, a);
    if (!g) return undefined;
    steps.push(g);
  }
  return { ...q, params, steps };
}

/** A parameter with each sentinel a reference to its leaf (an items parameter item by item);
 * undefined for a sentinel inside a larger value. */
function generaliseParam(p: ParamSource, a: Abstracted): ParamSource | undefined {
  if (p.k === 'items') {
    const items: ParamSource[] = [];
    for (const item of p.items) {
      const g = generaliseParam(item, a);
      if (!g) return undefined;
      items.push(g);
    }
    return { ...p, items };
  }
  if (p.k !== 'lit') return p;
  const place = (typeof p.v === 'string' || typeof p.v === 'number') && a.places.get(p.v);
  if (place) {
    const { v: _v, ...flags } = p;
    return { ...flags, k: 'var', name: place.name, path: place.path };
  }
  return holdsSentinel(p.v, a) ? undefined : p;
}

/** The value at `path` inside `v` (undefined where it has none). */
export function valueAt(v: unknown, path: readonly (string | number)[]): unknown {
  let x = v;
  for (const k of path) {
    if (x === null || x === undefined || typeof x !== 'object') return undefined;
    x = (x as Record<string | number, unknown>)[k];
  }
  return x;
}
