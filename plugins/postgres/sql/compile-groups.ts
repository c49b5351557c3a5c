/**
 * Grouped aggregates (`<t>_groups`, `<rel>_groups`; Note [Grouped aggregates] in
 * plugins/database/ir/types.ts) -> the part of a PostgreSQL statement that builds their JSON list.
 * The statement's compiler (compile.ts) calls it with itself as the `SqlHost`, so that values,
 * aliases, filters and the rows a mutation wrote earlier are the statement's own.
 */
import type { AggregateOp, AggregateTerm, BoolIR, GroupField, GroupKeyField, GroupKeyIR, GroupsIR, QualifiedTable, Redaction, RowsIR, ScalarType, Value } from '../../database/index.js';
import { DIRS, lit, orderKeyColumn, output, quoteIdent, rowKeys } from './identifiers.js';
import { pgAggregate } from './aggregates.js';
import { INTEGER_TYPES, NUMBER_TYPES } from '../records/records.js';

/*
 * Note [Grouped aggregates in SQL]
 * One subquery per `_groups` field, in three levels:
 *
 *   select coalesce(json_agg(_g."j" order by _g."o0", ...), '[]') from (
 *     select _g.* from (
 *       select <group's JSON> as "j", <order keys> as "o0"..., <having's aggregates> as "agg0"...
 *       from (select t.*, <key> as "__svc_k0", ... from <table> as t where <filter and where>) as t
 *       group by t."__svc_k0", ...
 *     ) as _g where <having> order by ... limit ... offset ...
 *   ) as _g
 *
 * The keys are computed once per row in the innermost select (a relationship key is the same
 * correlated scalar subquery as an order key through object relationships, with the remote's
 * filter), and the GROUP BY names them, so the select list never has to repeat an expression
 * for PostgreSQL to match it to the GROUP BY (which it would not do for a subquery or a bind
 * parameter). `having` compares the aggregates projected as `agg<i>` (a boolean expression of
 * the IR over those columns, compiled as any other). The order keys are projected too; the
 * window's own `order by` is written only with a limit or an offset (Note [One sort per list]).
 * Without keys the GROUP BY is the empty grouping set `()`: exactly one group, as `_aggregate`
 * has one answer, also when only `__typename` is selected. The outermost select builds each
 * group's object from rows (Note [Groups as rows]); at the root the grouped select writes each
 * group's text as "j" (Note [Root groups as text]).
 */

/** What of the statement's compiler a `_groups` field needs. */
export interface SqlHost {
  alias(): string;
  param(v: Value, json?: boolean, format?: (x: unknown) => string): string;
  bool(e: BoolIR, t: string, root: string): string;
  src(t: QualifiedTable): string;
  redacted(expr: string, redact: BoolIR | Redaction | undefined, t: string): string;
  /** A list's limit and offset as SQL (Note [Literal limits] in compile.ts). */
  window(r: Pick<RowsIR, 'limit' | 'limitCap' | 'offset'>): { limit?: string; offset?: string };
}

/** The units a key may be truncated to: `date_trunc`'s, spliced only from this list. */
const UNITS = new Set(['hour', 'day', 'week', 'month', 'quarter', 'year']);

/** A key's value on the row `t` of the grouped table. */
function keyExpr(c: SqlHost, k: GroupKeyIR, t: string): string {
  const build = (i: number, cur: string): string => {
    if (i === k.path.length) {
      const v = c.redacted(`${cur}.${quoteIdent(k.column)}`, k.redact, cur);
      if (!k.truncate) return v;
      if (!UNITS.has(k.truncate)) throw new Error(`unknown unit "${k.truncate}"`);
      // A date is truncated as a timestamp (date_trunc has no date form; the implicit cast would
      // go through timestamptz and the session's time zone), then read back as the column's type.
      const arg = k.scalar.name === 'date' ? `(${v})::timestamp` : v;
      return `(date_trunc(${lit(k.truncate)}, ${arg}))::${k.scalar.bindAs}`;
    }
    const step = k.path[i]!;
    const a = c.alias();
    const on = step.mapping.map(([own, remote]) => `${a}.${quoteIdent(remote)} = ${cur}.${quoteIdent(own)}`).join(' and ');
    return `(select ${build(i + 1, a)} from ${c.src(step.remote)} as ${a} where ${on} and ${c.bool(step.filter, a, a)} limit 1)`;
  };
  return build(0, t);
}

/** An aggregate of the group's rows (alias `t`). */
function termExpr(c: SqlHost, term: AggregateTerm, t: string): string {
  if (term.fn === 'count' && term.column === undefined) return 'count(*)';
  if (term.column === undefined) throw new Error(`the aggregate ${term.fn} needs a column`);
  return `${term.fn === 'count' ? 'count' : pgAggregate(term.fn)}(${c.redacted(`${t}.${quoteIdent(term.column)}`, term.redact, t)})`;
}

/** `aggregate { count sum {..} ... }` of a group: as compile.ts's `aggregate` builds it for
 * `_aggregate`. With `keys`, the values it maps (an op, or a function's column) are those order
 * keys of the row `t` (Note [Aggregates answered by order keys] in plugins/database). */
export function aggregateJson(c: SqlHost, ops: AggregateOp[], t: string, keys?: ReadonlyMap<object, number>): string {
  const parts = ops.map((op): string => {
    if (op.k === 'typename') return `${lit(op.key)}, ${lit(op.name)}`;
    const key = keys?.get(op);
    if (key !== undefined) return `${lit(op.key)}, ${orderKeyColumn(t, key)}`;
    if (op.k === 'count') {
      const cols = (op.columns ?? []).map((col, i) => c.redacted(`${t}.${quoteIdent(col)}`, op.redact?.[i], t));
      const arg = cols.length === 0 ? '*' : cols.length === 1 ? cols[0]! : `(${cols.join(', ')})`;
      return `${lit(op.key)}, count(${op.distinct && cols.length ? 'distinct ' : ''}${arg})`;
    }
    const inner = op.columns.map((col) => {
      if (col.column === undefined) return `${lit(col.key)}, ${lit(col.typename!)}`;
      const key = keys?.get(col);
      const v = key !== undefined ? orderKeyColumn(t, key) : `${pgAggregate(op.fn)}(${c.redacted(`${t}.${quoteIdent(col.column)}`, col.redact, t)})`;
      return `${lit(col.key)}, ${col.asText ? `(${v})::text` : v}`;
    });
    return `${lit(op.key)}, json_build_object(${inner.join(', ')})`;
  });
  return `json_build_object(${parts.join(', ')})`;
}

/*
 * Note [Groups as rows]
 * A `<rel>_groups` field's group object is built from a row, as a list's rows are (Note [Objects
 * from rows] in compile.ts), not by json_build_object (a root field writes text: Note [Root
 * groups as text]): one object per group and several nested in it (keys,
 * aggregate, each of sum/avg/...), so a query with hundreds of groups paid json_build_object's
 * per-argument lookups for each. The grouped select projects the values (the keys it groups by,
 * each aggregate once as "v<i>"), and the outermost select reads each group's objects through
 * lateral sub-selects of their fields named by their response keys, the nested ones first:
 *   from (<window>) as _g
 *   cross join lateral (select _g."__svc_k0" as "month", ...) as _k
 *   cross join lateral (select _g."v1" as "total") as _s
 *   cross join lateral (select _g."v0" as "count", _s as "sum") as _a
 *   cross join lateral (select _k as "keys", _a as "aggregate") as _j
 * and json_agg writes the row _j, a nested object being a record column of its parent. Having
 * no FROM, each sub-select is pulled up into the query (a ROW expression that keeps its names,
 * as in Note [Objects from rows]), where a scalar sub-select per nested object would run as a
 * subplan per group. The aggregates stay in the grouped select: a FROM-less sub-select holding
 * `count(*)` would count its own one row. On Chinook's 412 invoices in 319 groups (the
 * benchmark's groups query), PostgreSQL's CPU per statement, backend CPU from /proc over 300
 * runs on the two-core machine beside other work (2026-11-26): about 4,600 µs with
 * json_build_object, 3,700 with scalar sub-selects, 2,600 with laterals (a flat row of the same
 * values: 2,200). An object whose keys a row cannot carry (`rowKeys` in ./identifiers.ts) keeps
 * json_build_object, its nested objects still rows.
 */

/** A value of a group's JSON: its SQL, and how its JSON text is written (Note [Root groups as
 * text]); `text`: a constant's JSON text (`__typename`). */
type Val = { sql: string; as: JsonAs; text?: string };
/** An object of the group's JSON: its fields' keys and values (a nested object's too). */
type Obj = { key: string; value: Val | Obj }[];
const isVal = (v: Val | Obj): v is Val => !Array.isArray(v);

/** The object `o` as SQL: the alias of a lateral row added to `laterals` (Note [Groups as
 * rows]; nested objects first, so that a row names its children's), else json_build_object. */
function objectSql(c: SqlHost, o: Obj, laterals: string[]): string {
  const value = (v: Val | Obj) => (isVal(v) ? v.sql : objectSql(c, v, laterals));
  if (!rowKeys(o.map((f) => f.key))) return `json_build_object(${o.map((f) => `${lit(f.key)}, ${value(f.value)}`).join(', ')})`;
  const list = o.map((f) => `${value(f.value)} as ${quoteIdent(f.key)}`).join(', ');
  const a = c.alias();
  laterals.push(` cross join lateral (select ${list}) as ${a}`);
  return a;
}

/** How a group's object reads its values: a key's column (by index) and an aggregate's
 * expression as the SQL that the object's select sees. */
interface GroupValues {
  key(index: number): string;
  value(expr: string): string;
}

/** `fields` of a group as an object whose values `at` names: the grouped select's columns (the
 * aggregates added to the list that select projects as "v<i>", Note [Groups as rows]) or the
 * grouped select's own expressions (Note [Root groups as text]). */
function groupObject(fields: GroupField[], t: string, at: GroupValues, c: SqlHost): Obj {
  const value = at.value;
  const typename = (name: string): Val => ({ sql: `${lit(name)}::text`, as: 'json', text: JSON.stringify(name) });
  const keysObj = (fs: GroupKeyField[]): Obj =>
    fs.map((f) => {
      if (f.k === 'typename') return { key: f.key, value: typename(f.name) };
      if (f.k === 'key') return { key: f.key, value: { sql: output(at.key(f.index), f.scalar, f.asText), as: f.asText ? 'json' : jsonAs(f.scalar) } };
      return { key: f.key, value: keysObj(f.fields) };
    });
  const aggregateObj = (ops: AggregateOp[]): Obj =>
    ops.map((op) => {
      if (op.k === 'typename') return { key: op.key, value: typename(op.name) };
      if (op.k === 'count') {
        const cols = (op.columns ?? []).map((col, i) => c.redacted(`${t}.${quoteIdent(col)}`, op.redact?.[i], t));
        const arg = cols.length === 0 ? '*' : cols.length === 1 ? cols[0]! : `(${cols.join(', ')})`;
        return { key: op.key, value: { sql: value(`count(${op.distinct && cols.length ? 'distinct ' : ''}${arg})`), as: 'int' } };
      }
      return {
        key: op.key,
        value: op.columns.map((col) => {
          if (col.column === undefined) return { key: col.key, value: typename(col.typename!) };
          const v = value(`${pgAggregate(op.fn)}(${c.redacted(`${t}.${quoteIdent(col.column)}`, col.redact, t)})`);
          return { key: col.key, value: col.asText ? { sql: `(${v})::text`, as: 'json' } : { sql: v, as: jsonAs(col.scalar, INTEGERS) } };
        }),
      };
    });
  return fields.map((f) => {
    if (f.k === 'typename') return { key: f.key, value: typename(f.name) };
    if (f.k === 'keys') return { key: f.key, value: keysObj(f.fields) };
    return { key: f.key, value: aggregateObj(f.fields) };
  });
}

/*
 * Note [Root groups as text]
 * A `_groups` root field's statement writes its JSON list as text, by concatenation, where a
 * nested one builds rows (Note [Groups as rows]) for its parent's JSON: writing a record as JSON
 * costs PostgreSQL a lookup of each of its columns' types for every group, and a group is several
 * records (keys, aggregate, sum, ...). The text is the constant parts (keys, braces; JSON-escaped
 * at compile time) and each value's JSON text, written by the grouped select itself, and the
 * list is `string_agg` of it ordered as json_agg would be:
 *   select coalesce('[' || string_agg(_g."j", ',' order by _g."o0", ...) || ']', '[]') from (
 *     select '{"keys":{"month":' || coalesce(to_json(t."__svc_k0")::text, 'null') || ',...}}'
 *       as "j", <order keys> as "o0", ... from (...) as t group by ...) as _g
 * Written in the outer select instead, over the grouped select's keys and aggregates as columns,
 * the text read them through a Subquery Scan whenever it named them in another order than the
 * grouped select lists them (the benchmark's keys: month, then the country it groups by first),
 * a copy of every group; now the outer select reads "j" and the order keys as they are listed,
 * and PostgreSQL drops the scan. A value's JSON text is its type's (`JsonAs`): the text output of
 * integers and booleans, which is their JSON; that of float and numeric values unless NaN or an
 * infinity, which PostgreSQL's JSON writes as strings (a numeric is checked by its scale, null
 * for those three only; a float by comparing it with them); to_json's for every other type
 * (strings escaped, date-times in ISO 8601) and for a value whose type is not known; null as
 * `null`. Both changes together (2026-11-28, the two-core machine, `bench:shapes --queries --only
 * groups --n 300 --rounds 7`, two runs alternating with the commit before, log
 * bench/results/2026-11-28-bench-shapes-groups-2core.log): PostgreSQL's CPU per statement
 * 1,147-1,292 µs -> 1,020-1,147, the expert SQL's 996-1,147 in the same runs (each change alone
 * was about half of it, in a scratch comparison of the statement's forms); through the
 * benchmark (`bench/graphql/run.ts --only groups --servers svc,expert`, Node 22, the servers
 * pinned to one CPU and PostgreSQL to the other, two runs of two rounds, log
 * bench/results/2026-11-28-bench-graphql-2core-groups-text.log) PostgreSQL's CPU per request
 * 1,293-1,378 µs -> 1,167-1,223 (the expert's 1,161-1,204), Svc/expert 0.83x-0.87x -> 0.92x-0.95x
 * of req/s. The data is the same as the rows' JSON; the text differs only in spacing. Nested,
 * the text would have to be parsed back into json for the parent (json_in), which costs more
 * than the records it saves. On the
 * benchmark's groups query (319 groups, Chinook's invoices by month and country), PostgreSQL's
 * CPU per statement on one connection (backend CPU from /proc, 15 interleaved rounds of 200 on
 * the two-core machine, 2026-11-27, the lowest round): rows 2,400-2,550 µs, this text 1,750-1,850
 * (with to_json for every value 2,300, with concat() 2,200), PostGraphile's statement (rows of
 * text for Node to write) 1,250-1,400; of the text's, the sort 250 and to_json of the month 200.
 * Through the servers (`bench/graphql/run.ts --only groups --servers svc,postgraphile --rate
 * 150`), PostgreSQL's CPU per request went from 1.65x PostGraphile's to 1.12-1.65x in ten runs
 * (median 1.43x; PostGraphile's own figure moves by a quarter between runs). Returning
 * the groups as rows of text for Node to write, as PostGraphile does, would cost PostgreSQL
 * about 800 µs less and Node about 1,000 µs more (postgres.js reading 319 rows): more in all.
 * The groups as records that Node writes (Note [Lists as records] in ./records.ts), which lists
 * use, were tried and taken back: they cost PostgreSQL what this text does (2,950 µs per statement
 * both, the median of eight interleaved rounds of 200, two-core machine, 2026-11-27) and the
 * engine's one thread 300-600 µs more per request to write. On the 16-core machine (2026-11-27,
 * ../shared/measurements/2026-11-27-bench-graphql-16core-lists-as-records.log) the engine with
 * records answered 1,313 req/s at 1,008 µs of server CPU per request, the same handler sending
 * this text from PostgreSQL 3,488 req/s at 352 µs, PostgreSQL's CPU per request 1,963 and 1,991 µs.
 */

/** How a value's JSON text is written (Note [Root groups as text]): its text output (`int`,
 * `bool`), that unless NaN or an infinity (`numeric`, `float`), or to_json's. */
type JsonAs = 'int' | 'bool' | 'numeric' | 'float' | 'json';

/** PostgreSQL's integer types, and with bool those whose text output is their JSON; its floats and numeric. */
const INTEGERS = INTEGER_TYPES;
const PLAIN = new Set([...INTEGERS, '"pg_catalog"."bool"']);
const NUMBERS = NUMBER_TYPES;

/** A value of the scalar (a key: its type's). An aggregate passes `plain` INTEGERS: of an integer
 * column every aggregate is an integer or a finite numeric (sum of bigint, avg, the statistics);
 * of a float or numeric column, a float or numeric; of any other (min, max of text, dates), the
 * column's type. */
function jsonAs(scalar: ScalarType | undefined, plain: ReadonlySet<string> = PLAIN): JsonAs {
  if (!scalar || scalar.array) return 'json';
  const t = scalar.bindAs;
  if (!plain.has(t)) return NUMBERS.has(t) ? (t === '"pg_catalog"."numeric"' ? 'numeric' : 'float') : 'json';
  return t === '"pg_catalog"."bool"' ? 'bool' : 'int';
}

/** The SQL text expression of a value's JSON. */
function valueText(v: Val): string {
  if (v.as === 'int' || v.as === 'bool') return `coalesce((${v.sql})::text, 'null')`;
  // A numeric's scale is null for NaN and the infinities only: one call, where comparing it with
  // the three costs three numeric comparisons (a tenth of the benchmark's groups statement).
  if (v.as === 'numeric') return `coalesce(case when scale(${v.sql}) is null then to_json(${v.sql})::text else (${v.sql})::text end, 'null')`;
  if (v.as === 'float') return `coalesce(case when (${v.sql}) in ('NaN', 'Infinity', '-Infinity') then to_json(${v.sql})::text else (${v.sql})::text end, 'null')`;
  return `coalesce(to_json(${v.sql})::text, 'null')`;
}

/** A part of a JSON text: constant text, or an SQL expression of text. */
type Part = { c: string } | { e: string };

/** The object `o` as parts of its JSON text. */
function objectText(o: Obj, parts: Part[]): void {
  parts.push({ c: '{' });
  o.forEach((f, i) => {
    parts.push({ c: `${i ? ',' : ''}${JSON.stringify(f.key)}:` });
    const v = f.value;
    if (!isVal(v)) objectText(v, parts);
    else parts.push(v.text !== undefined ? { c: v.text } : { e: valueText(v) });
  });
  parts.push({ c: '}' });
}

/** Parts as one SQL text expression, adjacent constants as one literal. */
function concatText(parts: Part[]): string {
  const out: string[] = [];
  let pending = '';
  for (const p of parts) {
    if ('c' in p) pending += p.c;
    else {
      if (pending) out.push(lit(pending));
      pending = '';
      out.push(p.e);
    }
  }
  if (pending) out.push(lit(pending));
  return out.join(' || ');
}

/**
 * The subquery (`select coalesce(json_agg(...), '[]') from ...`) whose one value is the JSON list
 * of the groups (Note [Grouped aggregates in SQL]). `join`: for `<rel>_groups`, the relationship's
 * column pairs (parent's, remote's) and the parent row's alias. `mode`: json; or the list as text,
 * for a root field (Note [Root groups as text]).
 */
export function groupsSelect(
  c: SqlHost,
  g: GroupsIR,
  join?: { mapping: readonly (readonly [string, string])[]; parent: string },
  mode: 'json' | 'text' = 'json',
): string {
  const t = c.alias();
  const keys = g.keys.map((k) => keyExpr(c, k, t));
  const conds = [c.bool(g.where, t, t)];
  if (join) conds.push(...join.mapping.map(([own, remote]) => `${t}.${quoteIdent(remote)} = ${join.parent}.${quoteIdent(own)}`));
  const inner = `select ${t}.*${keys.map((k, i) => `, ${k} as "__svc_k${i}"`).join('')} from ${c.src(g.table)} as ${t} where ${conds.join(' and ')}`;
  const a = c.alias();
  const cols: string[] = [];
  let obj: Obj;
  if (mode === 'text') {
    // Each group's text is written by the grouped select, from its keys and aggregates (Note
    // [Root groups as text]).
    obj = groupObject(g.fields, t, { key: (i) => `${t}."__svc_k${i}"`, value: (expr) => expr }, c);
    const parts: Part[] = [];
    objectText(obj, parts);
    cols.push(`${concatText(parts)} as "j"`);
  } else {
    // The group's values, projected for the outermost select (Note [Groups as rows]).
    const values: string[] = [];
    obj = groupObject(g.fields, t, { key: (i) => `${a}."__svc_k${i}"`, value: (expr) => `${a}."v${values.push(expr) - 1}"` }, c);
    keys.forEach((_, i) => cols.push(`${t}."__svc_k${i}"`));
    values.forEach((v, i) => cols.push(`${v} as "v${i}"`));
  }
  g.orderBy.forEach((o, i) => cols.push(`${o.k === 'key' ? `${t}."__svc_k${o.index}"` : termExpr(c, o.term, t)} as "o${i}"`));
  g.having?.terms.forEach((term, i) => cols.push(`${termExpr(c, term, t)} as "agg${i}"`));
  // Without keys, the empty grouping set: one group, with or without an aggregate selected (a
  // select of no aggregate and no GROUP BY would answer a group per row).
  const groupBy = ` group by ${keys.length ? keys.map((_, i) => `${t}."__svc_k${i}"`).join(', ') : '()'}`;
  // A group with no value to project (only __typename) still needs a column.
  const grouped = `select ${cols.length ? cols.join(', ') : '1 as "v"'} from (${inner}) as ${t}${groupBy}`;
  const order = g.orderBy.map((o, i) => `${a}."o${i}" ${DIRS[o.dir]}`).join(', ');
  let window = `select ${a}.* from (${grouped}) as ${a}`;
  if (g.having) window += ` where ${c.bool(g.having.e, a, a)}`;
  // A literal limit or offset is written into the statement (Note [Literal limits] in compile.ts).
  const { limit, offset } = c.window(g);
  if (order && (limit !== undefined || offset !== undefined)) window += ` order by ${order}`;
  if (limit !== undefined) window += ` limit ${limit}`;
  if (offset !== undefined) window += ` offset ${offset}`;
  if (mode === 'text') return `select coalesce('[' || string_agg(${a}."j", ','${order ? ` order by ${order}` : ''}) || ']', '[]') from (${window}) as ${a}`;
  const laterals: string[] = [];
  const row = objectSql(c, obj, laterals);
  return `select coalesce(json_agg(${row}${order ? ` order by ${order}` : ''}), '[]') from (${window}) as ${a}${laterals.join('')}`;
}
