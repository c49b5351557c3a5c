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
 * where it would stand for a constant. Otherwise that shape is compiled per request, as before;
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
export function variableTypes(input: PlanInput): (readonly [string, GraphQLInputType])[] | undefined {
  const out: (readonly [string, GraphQLInputType])[] = [];
  for (const d of input.variableDefinitions) {
    const type = typeFromAST(input.schema, d.type as never) as GraphQLInputType | undefined;
    if (!type) return undefined;
    out.push([d.variable.name.value, type]);
  }
  return out;
}

/**
 * The shape of `vars` (defaults applied) as a memo key, or undefined when a value does not fit its
 * declared type (a request graphql-js let through some other way: compiled as it is). Computed at
 * every request, so it only appends to one list; the stand-ins (`abstractVariables`, which walks
 * the same way) are made only for a shape not seen before.
 */
export function shapeKey(types: readonly (readonly [string, GraphQLInputType])[], vars: Readonly<Record<string, unknown>>): string | undefined {
  const out: string[] = [];
  const walk = (v: unknown, type: GraphQLInputType): boolean => {
    if (v === null || v === undefined) {
      out.push('n');
      return true;
    }
    const t = getNullableType(type) as GraphQLInputType;
    if (isListType(t)) {
      const items = Array.isArray(v) ? v : [v];
      out.push(Array.isArray(v) ? `L${v.length}(` : '1(');
      for (const x of items) if (!walk(x, t.ofType)) return false;
      out.push(')');
      return true;
    }
    if (isInputObjectType(t)) {
      if (typeof v !== 'object' || Array.isArray(v)) return false;
      const fields = t.getFields();
      out.push('{');
      for (const k in v as Record<string, unknown>) {
        const f = fields[k];
        if (!f) return false;
        out.push(JSON.stringify(k), ':');
        if (!walk((v as Record<string, unknown>)[k], f.type)) return false;
      }
      out.push('}');
      return true;
    }
    if (steers(v, t)) out.push('V', JSON.stringify(v));
    else if (isScalarType(getNamedType(t))) out.push(typeof v === 'string' ? 's' : 'd');
    else return false;
    return true;
  };
  for (const [name, type] of types) {
    if (!(name in vars)) continue;
    out.push(JSON.stringify(name), '=');
    if (!walk(vars[name], type)) return undefined;
    out.push(';');
  }
  return out.join('');
}

/** Whether a leaf's value is part of the shape (it may steer the planner) rather than a value. */
const steers = (v: unknown, t: GraphQLInputType) => isEnumType(t) || (isScalarType(t) && t.name === 'Boolean') || (typeof v !== 'string' && typeof v !== 'number');

/** The stand-ins of `vars` (defaults applied) for a shape `shapeKey` accepted; undefined as there. */
export function abstractVariables(types: readonly (readonly [string, GraphQLInputType])[], vars: Readonly<Record<string, unknown>>): Abstracted | undefined {
  const places = new Map<string | number, Place>();
  const variables: Record<string, unknown> = {};
  const walk = (v: unknown, type: GraphQLInputType, place: Place): { value: unknown } | undefined => {
    if (v === null || v === undefined) return { value: null };
    const t = getNullableType(type) as GraphQLInputType;
    if (isListType(t)) {
      // A single value where a list is declared is a list of one (GraphQL's input coercion).
      const items = Array.isArray(v) ? v : [v];
      const out: { value: unknown }[] = [];
      for (let i = 0; i < items.length; i++) {
        const w = walk(items[i], t.ofType, { name: place.name, path: [...place.path, ...(Array.isArray(v) ? [i] : [])] });
        if (!w) return undefined;
        out.push(w);
      }
      return { value: Array.isArray(v) ? out.map((o) => o.value) : out[0]!.value };
    }
    if (isInputObjectType(t)) {
      if (typeof v !== 'object' || Array.isArray(v)) return undefined;
      const fields = t.getFields();
      const value: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const f = fields[k];
        if (!f) return undefined;
        const w = walk(x, f.type, { name: place.name, path: [...place.path, k] });
        if (!w) return undefined;
        value[k] = w.value;
      }
      return { value };
    }
    if (steers(v, t)) return { value: v };
    if (!isScalarType(getNamedType(t))) return undefined;
    const s = typeof v === 'string' ? `${STRING_MARK}${places.size}\u0000` : numberSentinel(places.size);
    places.set(s, place);
    return { value: s };
  };
  for (const [name, type] of types) {
    if (!(name in vars)) continue;
    const w = walk(vars[name], type, { name, path: [] });
    if (!w) return undefined;
    variables[name] = w.value;
  }
  return { variables, places };
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
  if (q.sql.includes(STRING_MARK)) return undefined;
  for (const s of a.places.keys()) if (typeof s === 'number' && q.sql.includes(String(s))) return undefined;
  const params: ParamSource[] = [];
  for (const p of q.params) {
    if (p.k !== 'lit') {
      params.push(p);
      continue;
    }
    const place = (typeof p.v === 'string' || typeof p.v === 'number') && a.places.get(p.v);
    if (place) {
      const { v: _v, ...flags } = p;
      params.push({ ...flags, k: 'var', name: place.name, path: place.path });
    } else if (holdsSentinel(p.v, a)) return undefined;
    else params.push(p);
  }
  return { ...q, params };
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
