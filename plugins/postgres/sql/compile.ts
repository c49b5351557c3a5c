/**
 * Query IR -> one PostgreSQL statement per root field (Note [One statement per root field]).
 * Every value is a bind parameter cast to its column's type; every identifier is quoted; the JSON
 * is built by PostgreSQL and returned as text, so Node never parses or re-serialises rows.
 */
import type {
  Aggregates,
  AggregateIR,
  BoolIR,
  CompiledQuery,
  FieldIR,
  FunctionCallIR,
  GroupsIR,
  Joins,
  ObjectIR,
  OrderItem,
  ParamSource,
  RootIR,
  RowOf,
  RowsIR,
  ScalarType,
  SelectOptions,
  Value,
} from '../../database/index.js';
import { aggregateByOrderKeys, joinStep, literalCount, parseJsonPath, plainDecimal, SqlCompiler, UnsupportedQuery } from '../../database/index.js';
import { DIRS, lit, orderKeyColumn, output, quoteIdent, rowKeys } from './identifiers.js';
import { joinedPlaceholder, narrowRows, rowsPlaceholder } from './narrow.js';
import { aggregateJson, groupsSelect } from './compile-groups.js';
import { PG_AGGREGATES } from './aggregates.js';
import { recordsWriter, scalarRecordCol, type RecordCol, type RecordRow } from '../records/records.js';

/*
 * Note [One statement per root field]
 * The rows of a selection are read by a subquery that applies the filter, order, distinct on,
 * limit and offset and is aliased back to the table's own alias, so every field expression
 * (`_t0."col"`) works both inside and outside it; order keys that the outer aggregate needs are
 * projected beside the row as `__svc_oN`. Around it:
 *   list:      coalesce(json_agg(<object> order by <keys>), '[]')
 *   single:    <object>                                    (`_by_pk`: at most one row)
 *   aggregate: json_build_object('aggregate', json_build_object('count', count(*), ...),
 *                                'nodes', coalesce(json_agg(<object> order by <keys>), '[]'))
 * An object is a row of its fields, a lateral sub-select in the FROM that reads the rows,
 * which the aggregate reads whole (Note [Objects from rows]); where a row cannot carry its keys,
 * json_build_object of its fields (row_to_json of a row of them beyond 50 fields,
 * json_build_object's argument limit); an object relationship is a LEFT JOIN where it matches
 * at most one row (Note [Object relationships by joins]) and a correlated scalar subquery (one
 * row, by the join columns) where it may match more; an array relationship is the list form over
 * the remote table filtered by the join columns, which PostgreSQL plans as a nested loop on the
 * join columns, as a lateral join would be; nothing is fetched twice and there is no N+1 between
 * Node and the server.
 *
 * Note [Function calls]
 * A computed field or tracked function is called with each argument a text bind parameter cast to
 * the argument's type (the session variables as one json parameter), positionally until an
 * omitted argument with a default, by name (`"arg" => ...`) after it. A computed field is called
 * on the row: in a filter or order key the alias is a row of the table's own type (the table, or
 * a function returning its rows) and is passed as it is; in the output the alias is the rows
 * subquery, whose row carries the order keys too, so the row is rebuilt from the table's columns
 * (`row(...)::table`, which PostgreSQL matches to the type, dropped columns included). A tracked
 * function's rows are the FROM of the rows subquery (`RowsIR.from`), so the role's filter, order,
 * limit and offset apply to them as to a table's.
 */

/*
 * Note [One sort per list]
 * A list's order is its aggregate's (`json_agg(... order by <keys>)`): PostgreSQL does not
 * promise that an aggregate reads a sorted subquery in order. The rows subquery is ordered too
 * only when the order decides which rows there are (distinct on, limit, offset) or when its first
 * row is taken (`limit 1`). PostgreSQL 16 and later sort once either way, below the aggregate;
 * but with the subquery's own `order by` that sort carries every column of the table (`<t>.*`)
 * where without it it carries the fields selected: for Chinook's tracks 518 bytes a row against
 * 20, per parent row of a nested list (the benchmark's nested query: ~9% of PostgreSQL's CPU).
 * Test: explain.test.ts.
 */

/*
 * Note [Order keys by joins]
 * An order key through object relationships (`order_by: {album: {artist: {name: asc}}}`) was a
 * nested scalar subquery per row, written twice (the projected key and the inner order by), and
 * each `limit 1` let PostgreSQL plan a small remote table as a sequential scan per row: on
 * Chinook's 3,503 tracks ordered by artist name and album title, 165 ms of PostgreSQL's CPU per
 * statement against 4.6 ms with joins (`npm run bench:shapes`, order_rel, 2026-11-26). A step
 * whose mapping covers a key of the remote table (`OrderItem.path[].unique`) matches at most one
 * row, so a LEFT JOIN of the remote table, its filter in the join condition, gives the same key
 * (null where no row, or the role may not see it) and lets the planner hash-join; keys through
 * the same steps share one join. A step that is not unique, and every step after it, stays a
 * subquery with `limit 1`, as Hasura answers there (one of the matching rows).
 */

/*
 * Note [Object relationships by joins]
 * An object relationship in a selection was a correlated scalar subquery per row (`(select
 * json_build_object(...) from (select ... where <join> and <filter>) limit 1)`): PostgreSQL runs
 * it as a nested loop whatever the row count, and its `limit 1` can make it scan a small remote
 * table per row. On Chinook's 3,503 tracks with album and genre that cost 82 ms of PostgreSQL's
 * CPU per request against 14 ms with joins, and 2.1 ms against 1.1 ms on the nested query (the
 * 16-core machine, bench:graphql and bench:shapes, 2026-11-26). Where the relationship's mapping
 * covers a key of the remote table (`FieldIR.unique`), at most one remote row matches, so the
 * remote table is LEFT JOINed where the parent rows are read (the FROM that reads the alias the
 * object is built on, after its rows subquery), with the remote's row filter in the join
 * condition, and the object is `case when <first remote join column> is null then null else
 * <object> end` (a matched row has it non-null: it equals the parent's value). Nested object
 * relationships join in the same FROM; array relationships stay correlated subqueries, whose
 * own objects join in their FROM. A relationship that is not unique is the subquery still. The
 * same rows are read either way, so counts and aggregates beside the nodes do not change. A
 * join may read the parent rows in another order (a hash join), so a list joins only when its
 * aggregate has an order of its own (`json_agg(... order by ...)`): its order_by, or its rows
 * numbered as read (Note [Rows numbered as read]; a mutation's `returning` list too, numbered as
 * written). A short root list keeps the subqueries (that Note too). A single row (`_by_pk`, an
 * object) always joins.
 */

/*
 * Note [Rows numbered as read]
 * A list without order_by answers its rows in the order PostgreSQL reads them, which clients of
 * Hasura come to rely on. Its object relationships were a correlated subquery per row for that
 * reason, and PostgreSQL plans each alone: with `limit 1` on a small remote table a sequential scan
 * per row, and no Memoize (it caches parameterized joins, not subqueries). Joined as they are, the
 * rows could come back in the remote table's order (a Hash Right Join hashes the parent rows). So
 * such a list numbers its rows as read, `row_number() over () as "__svc_n"` in its rows subquery
 * (before its limit and offset; not under distinct on, whose sort comes after the window), and its
 * aggregate reads them by that number: it joins as an ordered list does, and the order is the one
 * the rows were read in. The window keeps the subquery from being pulled up, so its projection is
 * narrowed (Note [Narrow rows] in ./narrow.ts). A list with distinct on and no order_by needs no
 * number: its rows come in the order of its distinct columns, the sort DISTINCT ON reads (one
 * row per value, so no ties), and its aggregate orders by those columns projected as order keys.
 * A join has a fixed cost (a hash of the remote table, or PostgreSQL's choice of one: its default
 * random_page_cost prices a page read at random as four in sequence) that a root list of a few
 * rows does not repay, so a root list whose literal limit (or the role's) is at most SHORT_LIST
 * rows keeps a subquery per row, ordered or not, unless its order keys joined the object's table
 * already (Note [Objects read through the order keys' joins]). A nested list keeps joining: its
 * hash tables are built once for all its parent rows. A mutation's `returning` list numbers its
 * rows as written the same way (`output` in compile-mutation.ts).
 * PostgreSQL's CPU per statement (`npm run bench:compare`, docs/benchmarks.md, 2026-11-28):
 * Chinook's 3,503 tracks with album and genre and no order_by 41,700 -> 5,967 µs (ordered by id,
 * joined: 5,267), 400 tracks with album 0.37x, 20 albums with their tracks' genre and media type
 * 0.59x; 50 invoice lines with track and invoice 367 µs by subqueries against 667 joined; 347
 * tracks, one per album by distinct on, with the album 4,800 -> 967 µs. Test:
 * read-order.test.ts.
 */

/*
 * Note [Objects read through the order keys' joins]
 * A list ordered through an object relationship very often shows that object too:
 *   tracks(order_by: [{album: {title: asc}}, {id: asc}]) { id name album { title } }
 * The order key joins albums inside the rows subquery (Note [Order keys by joins]) and the
 * selection joined albums again outside it (Note [Object relationships by joins]): two hash
 * joins of the same rows, the second over every track where there is no limit. Where the
 * selected object's relationship is a path the keys joined (each step the same remote table,
 * mapping and role filter, `joinStep`), its columns are projected out of the rows subquery beside
 * the keys (`<join alias>."title" as "__svc_j0"`, written where `joinedPlaceholder` stands once
 * the statement is whole) and read from there (`_t0."__svc_j0"`; a column that is an order key
 * itself is read as that key); the key that tells whether the object has a row is projected
 * the same way. The inner alias is then a name for those
 * projections (`readThrough`): `columnField` and `joinObject` read through it. Only an object whose
 * fields are all plain columns (no inherited role's redaction), `__typename`, or object
 * relationships read through the same joins is read so: anything else reads the object's row
 * itself (an array relationship, an aggregate, a computed field), which the outer query cannot
 * name, and the object is joined again as before. On Chinook's 3,503 tracks ordered by album
 * title and showing it, PostgreSQL's CPU per statement 5,500 -> 4,833 µs; on the benchmark's
 * order_rel (50 rows from the 101st) 2,167 -> 2,067 (backend CPU from /proc, median of seven
 * rounds of 300, two-core machine, 2026-11-27).
 */

/*
 * Note [Literal limits]
 * PostgreSQL plans a prepared statement for its parameters' values five times, then plans it once
 * for any values (the generic plan) and keeps that plan if its estimated cost is not above the
 * custom plans'. A LIMIT given as a parameter is estimated in a generic plan as a tenth of the
 * rows, so a statement with one never passed that test and was planned again at every execution:
 * on the benchmark's deep query, 1,755 custom plans and no generic one, the planning as long as
 * the execution. So a limit or offset written in the document (a literal) goes into the statement
 * as a number, as the role's limit always did: the plan is cached per document, so the text is
 * fixed, and the value is a non-negative integer (GraphQL's Int, checked here again), printed
 * from a JavaScript number, which carries no SQL. One from a variable stays a bind parameter, so
 * that one statement serves every value. Test: plugins/database/schema/explain.test.ts.
 */

/** The most bind parameters of one statement: PostgreSQL's protocol counts them in 16 bits, and
 * postgres.js refuses 65,534 or more. */
export const MAX_BIND_PARAMETERS = 65_533;

/** How a value of `scalar`'s type is bound: as its text (Note [Values in the IR]), a JSON value
 * as its JSON text (a string too: `"a"`, not `a`, which is no JSON), a PostGIS value as its
 * GeoJSON (Note [GeoJSON]), a session variable's as the text it holds (as in Hasura), an array as
 * PostgreSQL's array literal. */
export function boundValue(v: Value, scalar: ScalarType): ParamSource {
  if ((scalar.category === 'json' && !scalar.array) || scalar.category === 'geometry') return v.k === 'session' ? v : { ...v, json: true };
  const format = scalar.array ? arrayLiteral : scalar.name === 'money' ? plainDecimal : undefined;
  return format ? { ...v, format } : v;
}

/** A value bound as `boundValue` says (at `ref`, a parameter or a column of them) read as
 * `scalar`'s type. */
export function typedValue(ref: string, scalar: ScalarType): string {
  if (scalar.category === 'geometry') return `st_geomfromgeojson(${ref})::${scalar.bindAs}`;
  return `(${ref})::${scalar.bindAs}`;
}

/** A JSON array as PostgreSQL's array literal text (`{1,"a b",NULL,{2,3}}`); anything else as
 * its text (a literal such as `{1,2}` given as a string). Bound as a parameter, never spliced. */
export function arrayLiteral(x: unknown): string {
  if (!Array.isArray(x)) return typeof x === 'string' ? x : JSON.stringify(x);
  let out = '{';
  for (let i = 0; i < x.length; i++) {
    if (i > 0) out += ',';
    const e: unknown = x[i];
    if (e === null || e === undefined) out += 'NULL';
    else if (Array.isArray(e)) out += arrayLiteral(e);
    else {
      const text = typeof e === 'string' ? e : typeof e === 'object' ? JSON.stringify(e) : String(e);
      // Most items need no escape: tested once, not replaced twice (a batch's column is one
      // literal of thousands of items, Note [Rows bound by column]).
      out += `"${NEEDS_ESCAPE.test(text) ? text.replace(ESCAPED, '\\$&') : text}"`;
    }
  }
  return `${out}}`;
}
const NEEDS_ESCAPE = /[\\"]/;
const ESCAPED = /[\\"]/g;

/** A list of arrays as the JSON array of their array literals (`[["a"],["b","c"]]` ->
 * `["{\"a\"}","{\"b\",\"c\"}"]`), for `_in` on an array column. */
const arrayLiterals = (x: unknown): string => JSON.stringify(Array.isArray(x) ? x.map((a) => (a === null ? null : arrayLiteral(a))) : [arrayLiteral(x)]);

/** The joins an object collected (Note [Object relationships by joins]), to follow its FROM. */
export const joined = (joins: readonly string[]): string => joins.map((j) => ` ${j}`).join('');

/*
 * Note [Objects from rows]
 * json_build_object('k', v, ...) pays per row for its variadic arguments (each argument's type
 * and output function looked up again); an object that is a row of columns named by the
 * response keys does not: composite_to_json reads the names and output functions once per row
 * type. On Chinook's 3,503 tracks with four fields json_agg of a row costs PostgreSQL 0.58x the
 * CPU of json_agg(json_build_object(...)) (`npm run bench:shapes`, docs/benchmarks.md). So an
 * object is a lateral sub-select of its fields, aliased by their keys in selection order,
 *   from (<rows>) as _t0 <joins> cross join lateral (select _t0."id" as "id", ...) as _t5
 * and the aggregate reads the row: json_agg(_t5 order by ...), to_json(_t5) for a single row.
 * The sub-select has no FROM, so PostgreSQL pulls it up into the query: it is no join, only a
 * ROW(...) expression carrying the column names, evaluated where the row is read (inside the
 * CASE of a joined object relationship too), and the rows keep their order. Order keys stay
 * columns of the rows subquery, outside the row, so they are never keys of the object. A nested
 * object (a joined object relationship, or a subquery's first row) is a record column of the
 * parent's row, which composite_to_json writes as an object; `__typename` is a text constant.
 * Values are the same expressions as before (stringified numerics cast to text, GeoJSON as
 * json), and composite_to_json and json_build_object write each value with the same function,
 * so the data is the same; the text differs in whitespace only (`{"id":1}` where
 * json_build_object wrote `{"id" : 1}`, and json_agg of rows separates them with ", \n ").
 * An object keeps json_build_object where a row cannot carry its keys faithfully
 * (`rowKeys` in ./identifiers.ts): a key over 63 bytes (NAMEDATALEN truncates a column name, and
 * two keys could then collide), no field at all (kept as json_build_object()'s `{}` for clarity),
 * and more fields than a target list may have. The objects of `_aggregate` (`aggregate { count
 * sum {...} }`) stay json_build_object: one per statement. A `_groups` field's objects, one per
 * group, are rows too (Note [Groups as rows] in compile-groups.ts).
 */

/** Whether the object of `o` can be a row (Note [Objects from rows]). */
const rowFaithful = (o: ObjectIR): boolean => rowKeys(o.fields.map((f) => f.key));

/** The select of a list's rows (each the text `rec`) written back to back, in the list's order
 * (Note [Lists as records] in ./records.ts): the root list's, null for no rows, as `json`; a
 * nested list's between brackets, `[]` for none. */
const recordsAgg = (rec: string, r: { from: string; order: string }, joins: readonly string[], rowsFrom: readonly string[], nested: boolean): string => {
  const agg = `string_agg(${rec}, ''${r.order})`;
  return `select ${nested ? `'[' || coalesce(${agg}, '') || ']'` : `${agg} as json`} from ${r.from}${joined(joins)}${joined(rowsFrom)}`;
};

/** A part of a row's text (Note [Lists as records] in ./records.ts): a column of a record, or a
 * nested list's text. */
type RecordPart = { col: string } | { list: string };

/** A row's parts as one SQL text expression: each run of columns one record (`row(...)::text`),
 * each list its text after it. Never null: a record of nulls is `(,)`, a list of no rows `[]`. */
function rowText(parts: readonly RecordPart[]): string {
  const out: string[] = [];
  let cols: string[] = [];
  const close = () => {
    if (cols.length) out.push(`row(${cols.join(', ')})::text`);
    cols = [];
  };
  for (const part of parts) {
    if ('col' in part) cols.push(part.col);
    else {
      close();
      out.push(part.list);
    }
  }
  close();
  return out.join(' || ');
}

/** The most columns `o` takes as a record with its object relationships inline (Note [Lists as
 * records] in ./records.ts). */
const inlineWidth = (o: ObjectIR): number => o.fields.reduce((n, f) => n + (f.k === 'object' ? 1 + inlineWidth(f.select) : 1), 0);

/** A single object as json: a row (an alias of `from`) through to_json, else the expression. */
export const toJson = (obj: string, from: readonly string[]): string => (from.length > 0 && /^_t\d+$/.test(obj) ? `to_json(${obj})` : obj);

/** `joins` for the objects of a list whose rows say they join (an order of their own, by
 * order_by or as read, and not a short root list), else none: a join may read the rows in
 * another order (Notes [Object relationships by joins] and [Rows numbered as read]). */
const ordered = (r: Rows, joins: string[]): string[] | undefined => (r.joins ? joins : undefined);

/** Whether a list of `o` without an order of its own is numbered as read (Note [Rows numbered as
 * read]): where it has an object relationship that a join can read. */
export const joinsObjects = (o: ObjectIR): boolean => o.fields.some((f) => f.k === 'object' && f.unique && f.mapping.length > 0);

/*
 * Note [Computed keys kept in their subquery]
 * A list's order keys are projected by its rows subquery (`<key> as "__svc_o0"`) and read by its
 * aggregate's order, and an aggregate ordered by and selected is answered from its key too (Note
 * [Aggregates answered by order keys] in plugins/database/ir/order-keys.ts). A rows subquery
 * without a sort, limit, offset, distinct on or window is pulled up into the aggregate, and
 * PostgreSQL then writes the key's expression at each place that reads it: a key that is an
 * aggregate's subquery (or a computed field's function) runs once for the order and again for the
 * answer, for every row. So such a subquery ends in `offset 0`, which PostgreSQL does not pull up,
 * and computes each key once per row. Chinook's 275 artists ordered by their album count and
 * answering it (no limit): 13,550 -> 6,900 µs of PostgreSQL's CPU per statement, as a root
 * aggregate's nodes 14,400 -> 7,300 (`npm run bench:compare`, 2026-11-28, docs/benchmarks.md; a
 * statement with a limit was never pulled up). A key that is a column stays pulled up: copying
 * it costs nothing. Test: plugins/database/schema/queries.test.ts.
 */
/** An order key that is a column of a row (`_t0."col"`), not computed. */
export const COLUMN = /^_t\d+\."(?:[^"]|"")*"$/;

/** The column of a rows subquery that numbers its rows as read (Note [Rows numbered as read]). */
export const READ_ORDER = '"__svc_n"';

/** The most rows a root list has, by its literal limit or the role's, for it to read its object
 * relationships by a subquery per row (Note [Rows numbered as read]). */
const SHORT_LIST = 100;

/** A list's rows subquery (`rows`): its FROM item, its aggregate's order, and whether its
 * object relationships join there. */
interface Rows {
  from: string;
  order: string;
  joins: boolean;
}

const BINARY: Record<string, string> = {
  eq: '=',
  ne: '<>',
  gt: '>',
  lt: '<',
  gte: '>=',
  lte: '<=',
  like: 'like',
  nlike: 'not like',
  ilike: 'ilike',
  nilike: 'not ilike',
  similar: 'similar to',
  nsimilar: 'not similar to',
  regex: '~',
  iregex: '~*',
  nregex: '!~',
  niregex: '!~*',
  contains: '@>',
  contained_in: '<@',
  ancestor: '@>',
  descendant: '<@',
  matches: '~',
};
/** Pattern operators take text; the others a value of the column's type. */
const PATTERNS = new Set(['like', 'nlike', 'ilike', 'nilike', 'similar', 'nsimilar', 'regex', 'iregex', 'nregex', 'niregex', 'matches']);

/*
 * Note [GeoJSON]
 * As in Hasura, PostGIS values are GeoJSON on the wire both ways. Out: `st_asgeojson(v, 15, 4)`,
 * 15 decimal digits and the long CRS form (`urn:ogc:def:crs:EPSG::4326`, the form Hasura's
 * clients see). In: the JSON value bound as its text and read by `st_geomfromgeojson`, then cast
 * to the column's type (geometry or geography); a `_st_d_within` operand is one JSON object whose
 * `from`, `distance` and `use_spheroid` are read in SQL from the same parameter.
 */

/** A JSON path (parsed keys, or a variable's text) as the text[] literal of `#>`. */
const jsonPathLiteral = (x: unknown): string => arrayLiteral((Array.isArray(x) ? x : parseJsonPath(String(x))).map(String));

/** PostGIS predicates of one operand: `_st_contains: g` is `st_contains(column, g)`. */
const GEO_PREDICATES: Record<string, string> = {
  st_contains: 'st_contains',
  st_crosses: 'st_crosses',
  st_equals: 'st_equals',
  st_overlaps: 'st_overlaps',
  st_touches: 'st_touches',
  st_within: 'st_within',
  st_intersects: 'st_intersects',
  st_3d_intersects: 'st_3dintersects',
  st_intersects_rast: 'st_intersects',
};

export { UnsupportedQuery };

/**
 * PostgreSQL's compiler: the default SQL compiler (Note [The default SQL compiler] in
 * plugins/database/sql/compiler.ts) in lower case, with `$n::text` parameters cast in SQL,
 * PostgreSQL's operators (arrays, jsonb, ltree, PostGIS), computed fields and tracked functions,
 * JSON built from rows by json_agg/to_json (Note [Objects from rows]), object relationships and order keys by joins, the
 * rows a mutation wrote earlier in the statement, grouped aggregates and multiplexing.
 */
export class Compiler extends SqlCompiler {
  ident(name: string): string {
    return quoteIdent(name);
  }

  string(s: string): string {
    return lit(s);
  }

  /** A bind parameter, typed text for PostgreSQL: values go as text and are cast in SQL, and
   * the driver must not pick a serialiser from the type PostgreSQL would infer (postgres.js sends
   * the string 'true' for a bool parameter as false, and JSON-encodes a string for a json one). */
  protected paramRef(n: number): string {
    return `$${n}::text`;
  }

  /** A column of the binding's row (Note [Multiplexed statements]). */
  protected override muxRef(n: number): string {
    return `${MUX}."p${n}"`;
  }

  protected override get lowercaseKeywords(): boolean {
    return true;
  }

  protected override unsupported(what: string): Error {
    return new UnsupportedQuery(`${what} is not supported yet`);
  }

  override cast(expr: string, type: string): string {
    return `(${expr})::${type}`;
  }

  protected override get textType(): string {
    return 'text';
  }

  protected override get booleanType(): string {
    return 'boolean';
  }

  protected override get operators(): Readonly<Record<string, string>> {
    return BINARY;
  }

  protected override isPattern(op: string): boolean {
    return PATTERNS.has(op);
  }

  protected override pattern(v: Value): string {
    return `(${this.param(v)})::text`;
  }

  /** A value bound as text and cast to `scalar`'s type (an array given as a JSON array goes as
   * PostgreSQL's array literal). */
  override value(v: Value, scalar: ScalarType): string {
    return typedValue(this.bind(boundValue(v, scalar)), scalar);
  }

  // -------------------------------------------------------------------------------------------
  // Boolean expressions: PostgreSQL's own operators and computed fields

  protected override castColumn(expr: string, type: string): string {
    return this.cast(expr, type);
  }

  // `row` is a row of the table's own type here (the table, or a function returning its rows).
  protected override fcmp(e: Extract<BoolIR, { t: 'fcmp' }>, row: string): string {
    return this.cmp(e, this.call(e.call, row));
  }

  protected override frows(e: Extract<BoolIR, { t: 'frows' }>, row: string, root: string): string {
    const a = this.alias();
    return `exists (select 1 from ${this.call(e.call, row)} as ${a} where ${this.bool(e.e, a, root)})`;
  }

  /** A function call (Note [Function calls]); `row` is the row expression of a `row` argument. */
  call(c: FunctionCallIR, row: string | undefined): string {
    const args = c.args.map((a) => {
      const named = a.name !== undefined ? `${quoteIdent(a.name)} => ` : '';
      if (a.k === 'row') {
        if (row === undefined) throw new UnsupportedQuery('a row argument outside a row');
        return named + row;
      }
      // PostgreSQL's computed fields take the row (Dialect.computedFieldArguments), never columns.
      if (a.k === 'column') throw new UnsupportedQuery('a column argument');
      return `${named}(${this.param(a.value, a.value.k === 'session_json', a.array ? arrayLiteral : undefined)})::${a.bindAs}`;
    });
    return `${this.table(c.function)}(${args.join(', ')})`;
  }

  /** A row of the table's type from alias `t`, whose columns are the table's and maybe more. */
  override rowOf(r: RowOf, t: string): string {
    return `row(${r.columns.map((c) => `${t}.${quoteIdent(c)}`).join(', ')})::${this.table(r.table)}`;
  }

  /** A list operand (`_in`, `_has_keys_any`...) as json. A session variable may hold a JSON array
   * or, as Hasura takes it, PostgreSQL's array literal (`X-Svc-Allowed-Ids: {1,2,3}`). */
  private listJson(v: Value): string {
    if (v.k !== 'session') return `(${this.param(v, true)})::json`;
    const p = this.param(v);
    return `(case when left(${p}, 1) = '{' then array_to_json((${p})::text[]) else (${p})::json end)`;
  }

  /** A field of an object operand as text (a JSON object as its JSON text): each field its own
   * parameter when the fields are known (a literal, or a permission's values), else read in SQL
   * from the one JSON parameter of a variable. */
  private operandField(v: Value, key: string): string {
    const fields = v.k === 'object' ? v.fields : v.k === 'lit' && typeof v.v === 'object' && v.v !== null ? undefined : null;
    if (fields === null) return `((${this.param(v, true)})::json ->> ${lit(key)})`;
    const f: Value | undefined = fields ? fields[key] : { k: 'lit', v: (v as { v: Record<string, unknown> }).v[key] ?? null };
    return f ? this.param(f) : 'null';
  }

  /** `_in` (arrays too), ltree's `_ancestor_any`, PostGIS predicates, jsonb's key operators. */
  protected override cmpOperator(e: { scalar: ScalarType; op: string; value: Value }, col: string): string | undefined {
    if ((e.op === 'in' || e.op === 'nin') && e.scalar.array) {
      // A list of arrays (Note [Array columns] in dialect.ts): one JSON array of array literals,
      // each cast to the column's type (PostgreSQL has no array of arrays for `= any`).
      const list = `(select (_v.v)::${e.scalar.bindAs} from json_array_elements_text((${this.param(e.value, true, arrayLiterals)})::json) as _v(v))`;
      return e.op === 'in' ? `(${col} in ${list})` : `(not (${col} in ${list}))`;
    }
    if (e.op === 'in' || e.op === 'nin' || e.op === 'ancestor_any' || e.op === 'descendant_any') {
      const list = `array(select json_array_elements_text(${this.listJson(e.value)}))::${e.scalar.bindAs}[]`;
      if (e.op === 'in') return `(${col} = any(${list}))`;
      if (e.op === 'nin') return `(not (${col} = any(${list})))`;
      return `(${col} ${e.op === 'ancestor_any' ? '@>' : '<@'} ${list})`;
    }
    const geo = GEO_PREDICATES[e.op];
    if (geo) return `${geo}(${col}, ${this.value(e.value, e.scalar)})`;
    if (e.op === 'st_d_within' || e.op === 'st_3d_d_within') {
      // {from, distance, use_spheroid} (Note [GeoJSON]).
      const from = `st_geomfromgeojson(${this.operandField(e.value, 'from')})::${e.scalar.bindAs}`;
      const distance = `(${this.operandField(e.value, 'distance')})::float8`;
      if (e.op === 'st_3d_d_within') return `st_3ddwithin(${col}, ${from}, ${distance})`;
      if (e.scalar.name !== 'geography') return `st_dwithin(${col}, ${from}, ${distance})`;
      return `st_dwithin(${col}, ${from}, ${distance}, coalesce((${this.operandField(e.value, 'use_spheroid')})::boolean, true))`;
    }
    if (e.op === 'st_intersects_nband_geom' || e.op === 'st_intersects_geom_nband') {
      // st_intersects(raster, nband, geom) / st_intersects(raster, geom, nband); a missing nband is null.
      const band = `(${this.operandField(e.value, 'nband')})::int4`;
      const geom = `st_geomfromgeojson(${this.operandField(e.value, 'geommin')})`;
      return e.op === 'st_intersects_nband_geom' ? `st_intersects(${col}, ${band}, ${geom})` : `st_intersects(${col}, ${geom}, ${band})`;
    }
    if (e.op === 'has_key') return `(${col} ? (${this.param(e.value)})::text)`;
    if (e.op === 'has_keys_any' || e.op === 'has_keys_all') {
      const keys = `array(select json_array_elements_text(${this.listJson(e.value)}))`;
      return `(${col} ${e.op === 'has_keys_any' ? '?|' : '?&'} ${keys})`;
    }
    return undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Rows, objects, aggregates

  /** PostgreSQL's aggregate functions, in its lower-case names (./aggregates.ts). */
  protected override get aggregates(): Aggregates {
    return PG_AGGREGATES;
  }

  protected override orderCall(o: OrderItem, row: string): string {
    return this.call(o.call!, row);
  }

  /**
   * `(select <t>.*, <order keys> from <table> as <t> where ... order by ... limit ... offset ...) as <t>`
   * and the outer `order by` over the projected keys. The inner `order by` is written only where
   * it decides which rows are read (distinct on, limit, offset) or where the caller reads the
   * rows without an order of its own (`firstRow`: `limit 1` of an object relationship or single
   * row); otherwise the aggregate's own `order by` is the one sort (Note [One sort per list]).
   * Order keys through object relationships that match one row are joined (Note [Order keys by joins]).
   * `list`: a list's rows, whether its object has relationships a join can read and whether it is
   * a root field's; such a list without order_by is numbered as read (or, under distinct on,
   * ordered by its distinct columns), and a short root list's objects stay subqueries (Note [Rows
   * numbered as read]).
   */
  rows(r: RowsIR, t: string, extraWhere: string | undefined, row?: string, firstRow = false, list?: { objects: boolean; root?: boolean }): Rows {
    const joins: Joins = { sql: [], aliases: new Map() };
    const keys = r.orderBy.map((o) => this.orderKey(o, t, joins));
    const dist = r.distinctOn ?? [];
    // DISTINCT ON needs its columns first in the order; an order that already starts with them
    // (as Hasura's validation asks of order_by) is not prefixed, which would be a second sort.
    const distCols = this.distinctColumns(r, t);
    const leading = new Set(keys.slice(0, distCols.length));
    const prefixed = distCols.length > 0 && !(leading.size === distCols.length && distCols.every((c) => leading.has(c)));
    const innerOrder = [...(prefixed ? distCols : []), ...r.orderBy.map((o, i) => `${keys[i]} ${DIRS[o.dir]}`)];
    const where = this.rowsWhere(r.where, t, extraWhere);
    const given = literalCount(r.limit);
    const cap = r.limitCap;
    const { limit, offset } = this.window(r);
    // Note [Rows numbered as read]: a short root list keeps its sub-queries; not under distinct
    // on, whose sort comes after the window.
    const most = typeof given === 'number' ? Math.min(given, cap ?? given) : cap;
    const short = list?.root === true && most !== undefined && most <= SHORT_LIST;
    const readOrder = list?.objects === true && !short && keys.length === 0 && !firstRow;
    const numbered = readOrder && dist.length === 0;
    // Under distinct on the rows come in the order of the distinct columns (the sort DISTINCT ON
    // reads, above), which the list's aggregate can read instead (that Note).
    const byDistinct = readOrder && dist.length > 0;
    // The projection is narrowed to the columns the statement reads when the subquery keeps
    // them through a sort or a limit (Note [Narrow rows] in ./narrow.ts).
    // Note [Objects read through the order keys' joins].
    if (joins.aliases.size > 0) this.keyJoins.set(t, { aliases: joins.aliases, out: [], names: new Map(keys.map((k, i) => [k, orderKeyColumn(t, i)])) });
    let sql = `select ${dist.length ? `distinct on (${distCols.join(', ')}) ` : ''}${rowsPlaceholder(t)}${this.projectKeys(byDistinct ? distCols : keys)}${numbered ? `, row_number() over () as ${READ_ORDER}` : ''}${joins.aliases.size > 0 ? joinedPlaceholder(t) : ''}`;
    sql += ` from ${r.from ? this.call(r.from, row) : this.src(r.table)} as ${t}${joins.sql.map((j) => ` ${j}`).join('')} where ${where}`;
    if (innerOrder.length && (firstRow || dist.length > 0 || limit !== undefined || offset !== undefined)) sql += ` order by ${innerOrder.join(', ')}`;
    if (limit) sql += ` limit ${limit}`;
    if (offset !== undefined) sql += ` offset ${offset}`;
    // Pulled up into its parent (no sort, limit, offset, distinct on or window), the subquery
    // carries nothing the parent does not read: it keeps `<t>.*`; unless an order key is computed
    // (Note [Computed keys kept in their subquery]).
    if (!(numbered || dist.length > 0 || limit !== undefined || offset !== undefined || (innerOrder.length && firstRow))) {
      if (keys.some((k) => !COLUMN.test(k))) sql += ' offset 0';
      else sql = sql.replace(rowsPlaceholder(t), `${t}.*`);
    }
    this.orderKeys.set(t, r.orderBy);
    const order = numbered
      ? `${t}.${READ_ORDER}`
      : byDistinct
        ? distCols.map((_, i) => `${orderKeyColumn(t, i)} ${DIRS.asc}`).join(', ')
        : r.orderBy.map((o, i) => `${orderKeyColumn(t, i)} ${DIRS[o.dir]}`).join(', ');
    // Objects join where the list has an order of its own and is not short, or where its order
    // keys joined them already (Note [Object relationships by joins]).
    return { from: `(${sql}) as ${t}`, order: order ? ` order by ${order}` : '', joins: order !== '' && (!short || joins.aliases.size > 0) };
  }

  /** `r`'s limit (the request's, capped by the permission's) and offset as SQL: a literal one
   * written into the statement (Note [Literal limits]), one from a variable a bind parameter. */
  window(r: Pick<RowsIR, 'limit' | 'limitCap' | 'offset'>): { limit?: string; offset?: string } {
    const given = literalCount(r.limit);
    const cap = r.limitCap;
    let limit: string | undefined;
    if (typeof given === 'number') limit = String(cap === undefined ? given : Math.min(given, cap));
    else if (given) limit = cap === undefined ? `(${this.param(given)})::int8` : `least((${this.param(given)})::int8, ${cap})`;
    else if (cap !== undefined) limit = String(cap);
    const skip = literalCount(r.offset);
    const offset = skip === undefined ? undefined : typeof skip === 'number' ? String(skip) : `(${this.param(skip)})::int8`;
    return { ...(limit !== undefined ? { limit } : {}), ...(offset !== undefined ? { offset } : {}) };
  }

  /** The rows of a nested list (an array relationship's, a set-returning computed field's): a
   * list, whose objects join where its rows have an order (Note [Rows numbered as read]). */
  private nestedRows(f: { rows: RowsIR; select: ObjectIR }, a: string, extraWhere: string | undefined, row?: string): Rows {
    return this.rows(f.rows, a, extraWhere, row, false, { objects: joinsObjects(f.select) });
  }

  /** The JSON object of `o` on the row `t`. With `joins`, object relationships that match at
   * most one row are joined in the FROM that reads `t` (the caller appends `joins`) instead of
   * read by a subquery per row (Note [Object relationships by joins]). With `from`, the object
   * is a row (Note [Objects from rows]): a lateral sub-select pushed onto `from`, which the
   * caller appends to the FROM that reads `t` after `joins`, and the result is that row (a
   * record, which json_agg, to_json and a parent row write as a JSON object). */
  object(o: ObjectIR, t: string, joins?: string[], from?: string[]): string {
    if (from && rowFaithful(o)) {
      const x = this.alias();
      const cols = o.fields.map((f) => `${this.field(f, t, joins, from)} as ${quoteIdent(f.key)}`);
      from.push(`cross join lateral (select ${cols.join(', ')}) as ${x}`);
      return x;
    }
    const pairs = o.fields.map((f) => [f.key, this.field(f, t, joins, from)] as const);
    if (pairs.length <= 50) return `json_build_object(${pairs.map(([k, e]) => `${lit(k)}, ${e}`).join(', ')})`;
    return `(select row_to_json(_x) from (select ${pairs.map(([k, e]) => `${e} as ${quoteIdent(k)}`).join(', ')}) as _x)`;
  }

  /** An output field; `from`: the laterals of objects from rows (Note [Objects from rows]),
   * which object relationships joined in the same FROM use too. */
  override field(f: FieldIR, t: string, joins?: string[], from?: string[]): string {
    if (f.k === 'typename') return `${lit(f.name)}::text`;
    if (f.k === 'object') return this.objectField(f, t, joins, from);
    return super.field(f, t, joins);
  }

  protected override outputValue(expr: string, scalar: ScalarType | undefined, asText: boolean | undefined): string {
    return output(expr, scalar, asText);
  }

  protected override columnField(f: Extract<FieldIR, { k: 'column' }>, t: string): string {
    const col = this.redacted(this.readThrough.has(t) ? this.projected(t, f.column) : `${t}.${quoteIdent(f.column)}`, f.redact, t);
    if (f.path) return `(${col} #> (${this.param(f.path, false, jsonPathLiteral)})::text[])`;
    return output(col, f.scalar, f.asText);
  }

  protected objectField(f: Extract<FieldIR, { k: 'object' }>, t: string, joins?: string[], from?: string[]): string {
    return this.objectWith(f, t, joins, from, (o, a, j, fr) => this.object(o, a, j, fr));
  }

  /** Joins the row of an object relationship that matches at most one (Note [Object
   * relationships by joins]): its alias, and the column that is null where there is none. No
   * row (or none the role may see) leaves the joined columns null, the first remote join column
   * among them. */
  private joinObject(f: Extract<FieldIR, { k: 'object' }>, t: string, joins: string[]): { a: string; key: string } {
    const via = this.throughKeyJoin(f, t);
    if (via) return via;
    if (this.readThrough.has(t)) throw new Error(`internal: ${f.key} of ${t} is not among the order keys' joins`);
    const a = this.alias();
    joins.push(`left join ${this.src(f.rows.table)} as ${a} on ${this.join(f.mapping, a, t)} and ${this.bool(f.rows.where, a, a)}`);
    return { a, key: `${a}.${quoteIdent(f.mapping[0]![1])}` };
  }

  // Note [Objects read through the order keys' joins].

  /** Per alias of rows whose order keys joined object relationships inside the rows subquery:
   * the alias of each path joined, and the columns of those joins projected out of it (the SQL,
   * and each one's outer name by `<join alias>."<column>"`, the order keys' own among them). */
  private readonly keyJoins = new Map<string, { aliases: ReadonlyMap<string, string>; out: string[]; names: Map<string, string> }>();
  /** A join alias inside a rows subquery that the outer query reads through it: the rows' alias
   * and the path's `joinStep`s. */
  private readonly readThrough = new Map<string, { rows: string; path: string }>();

  /** The object relationship `f` of the row `t` read through a join that the order keys of `t`'s
   * rows made, or undefined: its alias, and the projected column that is null where no row. */
  private throughKeyJoin(f: Extract<FieldIR, { k: 'object' }>, t: string): { a: string; key: string } | undefined {
    const via = this.readThrough.get(t);
    const rows = via?.rows ?? t;
    const kj = this.keyJoins.get(rows);
    if (!kj) return undefined;
    const readable = (g: Extract<FieldIR, { k: 'object' }>, path: string): string | undefined => {
      if (!g.unique || g.mapping.length === 0) return undefined;
      const p = path + joinStep(g.rows.table, g.mapping, g.rows.where);
      const a = kj.aliases.get(p);
      const ok = a && g.select.fields.every((x) => x.k === 'typename' || (x.k === 'column' && !x.redact) || (x.k === 'object' && readable(x, p) !== undefined));
      return ok ? p : undefined;
    };
    const path = readable(f, via?.path ?? '');
    if (path === undefined) return undefined;
    const a = kj.aliases.get(path)!;
    this.readThrough.set(a, { rows, path });
    return { a, key: this.projected(a, f.mapping[0]![1]) };
  }

  /** `column` of the join alias `a`, projected out of its rows subquery: the outer name for it. */
  private projected(a: string, column: string): string {
    const { rows } = this.readThrough.get(a)!;
    const kj = this.keyJoins.get(rows)!;
    const at = `${a}.${quoteIdent(column)}`;
    let name = kj.names.get(at);
    if (!name) {
      const j = quoteIdent(`__svc_j${kj.out.length}`);
      kj.out.push(`, ${at} as ${j}`);
      kj.names.set(at, (name = `${rows}.${j}`));
    }
    return name;
  }

  /** The whole statement `sql` with its placeholders written: each rows subquery's joined
   * projections (Note [Objects read through the order keys' joins]), a subclass's (`resolve`),
   * then each rows subquery's projection (Note [Narrow rows] in ./narrow.ts). Every statement
   * this compiler or a subclass writes ends here, where one that needs more bind parameters than
   * a statement can carry is refused. */
  finish(sql: string): string {
    if (this.params.length > MAX_BIND_PARAMETERS) {
      const n = (x: number) => x.toLocaleString('en-US');
      throw new UnsupportedQuery(
        `the statement of this field needs ${n(this.params.length)} bind parameters, more than the ${n(MAX_BIND_PARAMETERS)} one statement can take: ` +
          'send fewer values in one request (a multi-row insert whose rows all give the same columns takes one parameter per column)',
      );
    }
    const joined = this.keyJoins.size === 0 ? sql : sql.replace(/\u0001(_t\d+)\u0001/g, (_m, t: string) => this.keyJoins.get(t)?.out.join('') ?? '');
    return narrowRows(this.resolve(joined));
  }

  /** `sql` with a subclass's own placeholders written, once the joined projections are in place
   * and before the rows' projections (the mutation compiler's: Note [Written rows as columns]). */
  protected resolve(sql: string): string {
    return sql;
  }

  /** An object relationship, its object built by `obj` on the row `a` (JSON, or a record). */
  protected objectWith(
    f: Extract<FieldIR, { k: 'object' }>,
    t: string,
    joins: string[] | undefined,
    from: string[] | undefined,
    obj: (o: ObjectIR, a: string, joins: string[] | undefined, from: string[] | undefined) => string,
  ): string {
    if (joins && f.unique && f.mapping.length > 0) {
      // Its row's lateral goes after the join, in the same FROM (Note [Objects from rows]).
      const { a, key } = this.joinObject(f, t, joins);
      return `case when ${key} is null then null else ${obj(f.select, a, joins, from)} end`;
    }
    const a = this.alias();
    const r = this.rows(f.rows, a, this.join(f.mapping, a, t), undefined, true);
    const inner: string[] = [];
    const rowsFrom: string[] = [];
    return `(select ${obj(f.select, a, inner, rowsFrom)} from ${r.from}${joined(inner)}${joined(rowsFrom)} limit 1)`;
  }

  protected arrayField(f: Extract<FieldIR, { k: 'array' }>, t: string): string {
    const a = this.alias();
    return this.list(f.select, a, this.nestedRows(f, a, this.join(f.mapping, a, t)));
  }

  // -------------------------------------------------------------------------------------------
  // Lists as records (Note [Lists as records] in ./records.ts)

  /** The records of the root list, when it is written as records: how to write them. */
  recordsRow: RecordRow | undefined;
  /** Per alias of rows read by `rows`, their order: the keys projected beside each row, which a
   * selected aggregate may read (Note [Aggregates answered by order keys] in plugins/database). */
  private readonly orderKeys = new Map<string, readonly OrderItem[]>();

  /** `o` on the row `t` as the text of its row: its records and its nested lists' texts, and how
   * each column is written; undefined where the object cannot be a row (it is JSON then). */
  private recordObject(o: ObjectIR, t: string, joins: string[] | undefined, from: string[]): { sql: string; row: RecordRow } | undefined {
    if (!rowFaithful(o)) return undefined;
    const parts: RecordPart[] = [];
    // Joined objects are written inline only while the record stays within a target list's size.
    const row = this.recordColumns(o, t, joins, from, inlineWidth(o) <= 1600, parts);
    return { sql: rowText(parts), row };
  }

  /** The parts of `o`'s fields on the row `t`, in order, pushed onto `parts`; how each is written. */
  private recordColumns(o: ObjectIR, t: string, joins: string[] | undefined, from: string[], inline: boolean, parts: RecordPart[]): RecordRow {
    return { keys: o.fields.map((f) => f.key), cols: o.fields.map((f) => this.recordField(f, t, joins, from, inline, parts)) };
  }

  /** A field of a row: its parts, pushed onto `parts`, and how it is written. An object
   * relationship joined (Note [Object relationships by joins]) is its row's fields inline, after
   * whether it has a row; one read by a subquery is its row's text in the record. Lists are texts
   * of rows in turn where they can be; aggregates and groups are JSON. */
  private recordField(f: FieldIR, t: string, joins: string[] | undefined, from: string[], inline: boolean, parts: RecordPart[]): RecordCol {
    switch (f.k) {
      case 'typename':
        parts.push({ col: this.field(f, t, joins, from) });
        return 'string';
      case 'column':
      case 'computed': {
        const sql = this.field(f, t, joins, from);
        const kind = f.k === 'column' && f.path ? 'json' : scalarRecordCol(f.scalar, f.asText);
        parts.push({ col: kind ? sql : `to_json(${sql})` });
        return kind ?? 'json';
      }
      case 'object': {
        if (inline && joins && f.unique && f.mapping.length > 0 && rowFaithful(f.select)) {
          const { a, key } = this.joinObject(f, t, joins);
          parts.push({ col: `${key} is not null` });
          return { k: 'inline', row: this.recordColumns(f.select, a, joins, from, inline, parts) };
        }
        let kind: RecordCol = 'json';
        const sql = this.objectWith(f, t, joins, from, (o, a, j, fr) => {
          const rec = this.recordObject(o, a, j, fr!);
          if (!rec) return this.object(o, a, j, fr);
          kind = { k: 'object', row: rec.row };
          return rec.sql;
        });
        parts.push({ col: sql });
        return kind;
      }
      case 'array': {
        const a = this.alias();
        return this.recordList(f.select, a, this.nestedRows(f, a, this.join(f.mapping, a, t)), parts);
      }
      case 'computed_rows': {
        const a = this.alias();
        return this.recordList(f.select, a, this.nestedRows(f, a, undefined, this.rowOf(f.row, t)), parts);
      }
      default:
        parts.push({ col: this.field(f, t, joins, from) });
        return 'json';
    }
  }

  /** A nested list as the texts of its rows between brackets, after its parent's record, or its
   * JSON in the record where its object cannot be a row. */
  private recordList(select: ObjectIR, a: string, r: Rows, parts: RecordPart[]): RecordCol {
    const joins: string[] = [];
    const rowsFrom: string[] = [];
    const rec = this.recordObject(select, a, ordered(r, joins), rowsFrom);
    if (!rec) {
      parts.push({ col: this.list(select, a, r) });
      return 'json';
    }
    parts.push({ list: `(${recordsAgg(rec.sql, r, joins, rowsFrom, true)})` });
    return { k: 'list', row: rec.row };
  }

  protected aggregateField(f: Extract<FieldIR, { k: 'array_aggregate' }>, t: string): string {
    const keys = aggregateByOrderKeys(f, this.orderKeys.get(t) ?? []);
    if (keys) {
      // Note [Aggregates answered by order keys] in plugins/database.
      const parts = f.agg.fields.map((g) => `${lit(g.key)}, ${g.k === 'typename' ? lit(g.name) : aggregateJson(this, g.k === 'aggregate' ? g.fields : [], t, keys)}`);
      return `json_build_object(${parts.join(', ')})`;
    }
    const a = this.alias();
    return `(${this.aggregate(f.agg, a, this.join(f.mapping, a, t))})`;
  }

  protected override computedField(f: Extract<FieldIR, { k: 'computed' }>, t: string): string {
    return output(this.redacted(this.call(f.call, this.rowOf(f.row, t)), f.redact, t), f.scalar, f.asText);
  }

  protected override computedRowsField(f: Extract<FieldIR, { k: 'computed_rows' }>, t: string): string {
    const a = this.alias();
    return this.list(f.select, a, this.nestedRows(f, a, undefined, this.rowOf(f.row, t)));
  }

  // Note [Grouped aggregates in SQL] in ./compile-groups.ts.
  protected override groupsField(f: Extract<FieldIR, { k: 'array_groups' }>, t: string): string {
    return `(${groupsSelect(this, f.groups, { mapping: f.mapping, parent: t })})`;
  }

  /** The JSON list of `select` over the rows `r` read as `a` (from `r.from`, or `from`), its
   * object relationships joined where the list has an order (Note [Object relationships by joins]). */
  private list(select: ObjectIR, a: string, r: Rows, from = r.from): string {
    const joins: string[] = [];
    const rowsFrom: string[] = [];
    const obj = this.object(select, a, ordered(r, joins), rowsFrom);
    return `(select coalesce(json_agg(${obj}${r.order}), '[]') from ${from}${joined(joins)}${joined(rowsFrom)})`;
  }

  /** `root`: a root field's (Note [Rows numbered as read]: a short root list's objects stay
   * subqueries). */
  aggregate(g: AggregateIR, t: string, extraWhere: string | undefined, root = false): string {
    // The permission's limit caps the nodes, not the rows aggregated (Hasura counts them all).
    const cap = g.rows.limitCap;
    const objects = g.fields.some((f) => f.k === 'nodes' && joinsObjects(f.select));
    const r = this.rows(cap === undefined ? g.rows : { ...g.rows, limitCap: undefined }, t, extraWhere, undefined, false, { objects, root });
    const nodeJoins: string[] = [];
    const nodeRows: string[] = [];
    const parts = g.fields.map((f): [string, string] => {
      switch (f.k) {
        case 'typename':
          return [f.key, lit(f.name)];
        case 'nodes':
          if (cap !== undefined) {
            // The same rows subquery again (its parameters are the same $n), capped.
            return [f.key, this.list(f.select, t, r, `(select * from ${r.from}${r.order} limit ${cap}) as ${t}`)];
          }
          // Joins at the aggregate's own FROM: each matches at most one row, so the rows counted
          // and aggregated are the same.
          return [f.key, `coalesce(json_agg(${this.object(f.select, t, ordered(r, nodeJoins), nodeRows)}${r.order}), '[]')`];
        case 'aggregate':
          return [f.key, aggregateJson(this, f.fields, t)];
      }
    });
    return `select json_build_object(${parts.map(([k, e]) => `${lit(k)}, ${e}`).join(', ')}) from ${r.from}${joined(nodeJoins)}${joined(nodeRows)}`;
  }

  // -------------------------------------------------------------------------------------------
  // Root fields (Note [One statement per root field])

  protected rootSelect(ir: Extract<RootIR, { k: 'select' }>, t: string): string {
    const r = this.rows(ir.rows, t, undefined, undefined, ir.single, { objects: !ir.single && !ir.cursor && joinsObjects(ir.select), root: true });
    const joins: string[] = [];
    const rowsFrom: string[] = [];
    if (this.options.records && !ir.single && !ir.cursor) {
      // Note [Lists as records] in ./records.ts.
      const rec = this.recordObject(ir.select, t, ordered(r, joins), rowsFrom);
      if (rec) {
        this.recordsRow = rec.row;
        return recordsAgg(rec.sql, r, joins, rowsFrom, false);
      }
    }
    const obj = this.object(ir.select, t, ir.single ? joins : ordered(r, joins), rowsFrom);
    if (ir.single) return `select coalesce((select ${toJson(obj, rowsFrom)} from ${r.from}${joined(joins)}${joined(rowsFrom)} limit 1)::text, 'null') as json`;
    // A stream's cursor: the first order key of the last row in the order of the list.
    const cursor = ir.cursor ? `, (array_agg((${orderKeyColumn(t, 0)})::text${r.order}))[count(*)::int4] as cursor` : '';
    return `select coalesce(json_agg(${obj}${r.order}), '[]')::text as json${cursor} from ${r.from}${joined(joins)}${joined(rowsFrom)}`;
  }

  protected rootAggregate(g: AggregateIR, t: string): string {
    return `select (${this.aggregate(g, t, undefined, true)})::text as json`;
  }

  protected override rootGroups(g: GroupsIR): string {
    // The list's text, written by PostgreSQL, records or not (Note [Root groups as text]).
    return `select (${groupsSelect(this, g, undefined, 'text')}) as json`;
  }

  /** Note [Multiplexed statements]. */
  protected override multiplex(sql: string, ir: RootIR): CompiledQuery {
    const params = this.params;
    const n = params.length;
    const columns = n === 0 ? ['"p0"'] : params.map((_, i) => `"p${i + 1}"`);
    const arrays = columns.map((_, i) => `($${i + 1}::text)::text[]`);
    const out = ir.k === 'select' && ir.cursor ? '_svc_r."json", _svc_r."cursor"' : '_svc_r."json"';
    return {
      sql: `select ${MUX}."i", ${out} from unnest(${arrays.join(', ')}) with ordinality as ${MUX}(${columns.join(', ')}, "i") left join lateral (${sql}) as _svc_r on true order by ${MUX}."i"`,
      params,
      batch: (rows) => (n === 0 ? [arrayLiteral(rows.map(() => null))] : params.map((_, i) => arrayLiteral(rows.map((r) => r[i] ?? null)))),
    };
  }
}

/*
 * Note [Multiplexed statements]
 * A live query is refetched for many subscribers whose statements differ only in the values they
 * bind (Note [Multiplexed live queries] in plugins/graphql/live.ts). Such a statement is compiled
 * once more in a mode where every parameter reference, which is `$n::text` in a statement of one
 * binding, is the column `_svc_m."pn"` of a row instead, and the statement of one binding becomes
 * a lateral subquery over the rows of all of them:
 *
 *   select _svc_m."i", _svc_r."json" from unnest(($1::text)::text[], ($2::text)::text[], ...)
 *     with ordinality as _svc_m("p1", "p2", ..., "i")
 *     left join lateral (<the statement of one binding>) as _svc_r on true order by _svc_m."i"
 *
 * Parameter n is bound to the array of every binding's n-th text (an array literal, NULLs kept),
 * so a batch of bindings is one statement and one round trip, and PostgreSQL reads each binding's
 * rows as it would for that binding alone (a nested loop over the unnest, each inner plan the
 * one-binding plan). It is one mechanism for every statement: the compiler only changes how a
 * parameter is read, so whatever a root field compiles to (filters, relationships, aggregates,
 * function calls, session variables) is multiplexed as it is. A statement without parameters
 * still unnests one array (of NULLs) to have a row per binding. The statement text depends on the
 * IR only, so it is prepared once per connection like the others.
 */
const MUX = '_svc_m';

export function compileSelect(ir: RootIR, opts: SelectOptions = {}): CompiledQuery {
  const c = new Compiler(opts);
  const q = c.compileRoot(ir);
  // Either way its value is read as bytes (Note [Answers as bytes] in core/schema/contract.ts):
  // records to write, or JSON to answer as it came.
  return { ...q, sql: c.finish(q.sql), ...(c.recordsRow ? { records: { rows: c.recordsRow, write: recordsWriter(c.recordsRow) } } : q.batch ? {} : { bytes: true }) };
}
