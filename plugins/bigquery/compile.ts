/**
 * Query IR -> GoogleSQL (BigQuery's standard SQL), one query per root field, read-only as in
 * Hasura. The JSON is built by BigQuery with TO_JSON_STRING over STRUCT and ARRAY subqueries;
 * every value is a named STRING parameter (@p1, @p2, ...) cast to its column's type; every
 * identifier is in backticks; a table is `dataset`.`table` (the source's project is the client's
 * default). See Note [GoogleSQL statements].
 */
import type { AggregateIR, Aggregates, BoolIR, CompiledQuery, FieldIR, FunctionCallIR, ObjectIR, OrderDir, RootIR, RowsIR, ScalarType, SelectOptions, Value } from '../database/index.js';
import { literalCount, SqlCompiler, UnsupportedQuery as Unsupported } from '../database/index.js';
import { BIGQUERY_AGGREGATES } from './aggregates.js';

/*
 * Note [GoogleSQL statements]
 * A root field is one query whose one row has the field's JSON text as `json`:
 *   list:      SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT <fields> FROM <rows> ORDER BY ...)) AS json
 *   single:    SELECT TO_JSON_STRING((SELECT AS STRUCT <fields> FROM <rows> LIMIT 1)) AS json
 *   aggregate: SELECT TO_JSON_STRING((SELECT AS STRUCT STRUCT(_a.a0 AS `count`, ...) AS `aggregate`,
 *                ARRAY(...) AS `nodes` FROM (SELECT COUNT(*) AS a0, ... FROM (SELECT <values>
 *                FROM <rows>) AS _x) AS _a)) AS json
 * A STRUCT's field names are the output keys (backticked aliases, so any GraphQL name), an object
 * relationship is a correlated `(SELECT AS STRUCT ... LIMIT 1)` (NULL: `null`), an array
 * relationship a correlated ARRAY(SELECT AS STRUCT ...) (no rows: `[]`; TO_JSON_STRING writes an
 * empty array, never NULL, for ARRAY()). <rows> is a subquery aliased like the table, with the
 * order keys projected (`__svc_o0`), so field expressions read it as they would the table.
 * BigQuery has NULLS FIRST/LAST; LIMIT and OFFSET take only literals and INT64 parameters, and
 * parameters here are STRING: a literal limit or offset is written as a number, one from a
 * variable is a ROW_NUMBER() window, and so is distinct_on (the first row of each partition).
 * `global_select_limit` (the source's configuration, `SelectOptions.configuration`) caps the
 * root field's rows, as Hasura's BigQuery backend does.
 */

/*
 * Note [Correlation at the top]
 * BigQuery runs a correlated subquery by turning it into a join, and refuses one it cannot turn
 * ("Correlated subqueries that reference other tables are not supported unless they can be
 * de-correlated"); a reference to the parent row from inside a FROM-clause subquery is the shape
 * it turns least. So the rows of a relationship are read with the join to the parent row in the
 * WHERE of the subquery that reads them (`ARRAY(SELECT AS STRUCT ... FROM (<rows>) AS _t1 WHERE
 * _t1.author_id = _t0.id ORDER BY ... LIMIT 2)`), the rows themselves uncorrelated, and an
 * aggregate's functions are computed in that same query. Only distinct_on, and a limit or offset
 * from a variable, whose windows must see the parent's rows alone, put the join inside. Hasura's
 * BigQuery backend avoids correlation altogether (joins over ARRAY_AGG grouped by the join
 * columns); this compiler has not been run against BigQuery (plugins/bigquery/live.test.ts).
 */

export class UnsupportedQuery extends Unsupported {
  constructor(what: string) {
    super(`the bigquery source kind does not support ${what}`);
  }
}

/** An identifier in backticks (a backtick or backslash in it escaped). */
export const quoteIdent = (name: string) => `\`${name.replace(/[`\\]/g, '\\$&')}\``;
/** A string literal (GoogleSQL escapes with backslashes). */
export const slit = (s: string) => `'${s.replace(/[\\']/g, '\\$&').replace(/\n/g, '\\n')}'`;
const q = quoteIdent;
/** Hasura's BigQuery orders: `asc` is nulls first and `desc` nulls last (BigQuery's own). */
const DIRS: Record<OrderDir, string> = {
  asc: 'ASC NULLS FIRST',
  asc_nulls_first: 'ASC NULLS FIRST',
  asc_nulls_last: 'ASC NULLS LAST',
  desc: 'DESC NULLS LAST',
  desc_nulls_first: 'DESC NULLS FIRST',
  desc_nulls_last: 'DESC NULLS LAST',
};

interface Rows {
  from: string;
  /** ` WHERE <the join to the parent row>`, or ''. */
  where: string;
  /** ` ORDER BY ...`, or ''. */
  order: string;
  /** ` LIMIT ... OFFSET ...`, or ''. */
  tail: string;
}

/** GoogleSQL's compiler: the default SQL compiler (Note [The default SQL compiler] in
 * plugins/database/sql/compiler.ts) with backticked identifiers, `@pn` STRING parameters, base64
 * bytes, JSON_VALUE_ARRAY lists, STRUCT and ARRAY subqueries for JSON, and no subscriptions. */
class Compiler extends SqlCompiler {
  /** BigQuery's aggregate functions (Note [BigQuery aggregates]). */
  protected override get aggregates(): Aggregates {
    return BIGQUERY_AGGREGATES;
  }

  ident(name: string): string {
    return q(name);
  }

  string(s: string): string {
    return slit(s);
  }

  protected paramRef(n: number): string {
    return `@p${n}`;
  }

  protected override unsupported(what: string): Error {
    return new UnsupportedQuery(what);
  }

  override param(v: Value, json = false): string {
    if (v.k === 'object' || v.k === 'session_json') throw new UnsupportedQuery(`a value of kind ${v.k}`);
    return super.param(v, json);
  }

  /** A value cast to the column's type (bytes are given as base64, as they are output). */
  override value(v: Value, scalar: ScalarType): string {
    const p = this.param(v);
    if (scalar.bindAs === 'STRING') return p;
    if (scalar.bindAs === 'BYTES') return `FROM_BASE64(${p})`;
    return `CAST(${p} AS ${scalar.bindAs})`;
  }

  /** The list is one parameter, its JSON text; its items are read as text and cast. */
  protected override inList(v: Value, scalar: ScalarType): string {
    const item = scalar.bindAs === 'STRING' ? '_v' : scalar.bindAs === 'BYTES' ? 'FROM_BASE64(_v)' : `CAST(_v AS ${scalar.bindAs})`;
    return `(SELECT ${item} FROM UNNEST(JSON_VALUE_ARRAY(${this.param(v, v.k !== 'session')})) AS _v)`;
  }

  /** The rows of a selection (Note [GoogleSQL statements], Note [Correlation at the top]):
   * the FROM item aliased `t`, the join to the parent row and the order as the clauses of the
   * query that reads it, and LIMIT/OFFSET. `cap`: a further cap (global_select_limit). `parent`:
   * the alias of the row a computed field's call reads its columns from (Note [Table functions]). */
  rows(r: RowsIR, t: string, extraWhere?: string, cap?: number, parent?: string): Rows {
    const source = r.from ? this.tableFunction(r.from, parent) : this.table(r.table);
    const keys = r.orderBy.map((o) => this.orderKey(o, t));
    const dist = r.distinctOn ?? [];
    const distExprs = this.distinctColumns(r, t);
    const projected = this.projectKeys(keys, distExprs);
    const terms = r.orderBy.map((o, i) => `${t}.\`__svc_o${i}\` ${DIRS[o.dir]}`);
    const order = terms.length ? ` ORDER BY ${terms.join(', ')}` : '';
    const over = (partition?: string) => [partition ? `PARTITION BY ${partition}` : '', terms.length ? `ORDER BY ${terms.join(', ')}` : ''].filter(Boolean).join(' ');
    const base = (join: boolean) => `SELECT ${t}.*${projected} FROM ${source} AS ${t} WHERE ${this.rowsWhere(r.where, t, join ? extraWhere : undefined)}`;
    const caps = [r.limitCap, cap].filter((x): x is number => x !== undefined);
    const given = literalCount(r.limit);
    const offset = literalCount(r.offset);
    const literal = (given === undefined || typeof given === 'number') && (offset === undefined || typeof offset === 'number');
    if (!dist.length && literal) {
      const limit = [...caps, ...(typeof given === 'number' ? [given] : [])];
      const tail = limit.length || offset !== undefined ? ` LIMIT ${limit.length ? Math.min(...limit) : '9223372036854775807'}${offset !== undefined ? ` OFFSET ${offset}` : ''}` : '';
      return { from: `(${base(false)}) AS ${t}`, where: extraWhere ? ` WHERE ${extraWhere}` : '', order, tail };
    }
    // distinct_on, or a limit or offset from a variable: windows over the rows of this parent.
    let sql = base(true);
    if (dist.length) {
      const partition = dist.map((_, i) => `${t}.\`__svc_d${i}\``).join(', ');
      sql = `SELECT ${t}.* FROM (SELECT ${t}.*, ROW_NUMBER() OVER (${over(partition)}) AS \`__svc_dn\` FROM (${sql}) AS ${t}) AS ${t} WHERE ${t}.\`__svc_dn\` = 1`;
    }
    if (literal) {
      const limit = [...caps, ...(typeof given === 'number' ? [given] : [])];
      const tail = limit.length || offset !== undefined ? ` LIMIT ${limit.length ? Math.min(...limit) : '9223372036854775807'}${offset !== undefined ? ` OFFSET ${offset}` : ''}` : '';
      return { from: `(${sql}) AS ${t}`, where: '', order, tail };
    }
    const off = offset === undefined ? '0' : typeof offset === 'number' ? String(offset) : `COALESCE(CAST(${this.param(offset)} AS INT64), 0)`;
    const bounds: string[] = [];
    if (typeof given === 'number') bounds.push(String(given));
    else if (given) bounds.push(`COALESCE(CAST(${this.param(given)} AS INT64), 9223372036854775807)`);
    for (const c of caps) bounds.push(String(c));
    const upto = bounds.map((b) => ` AND ${t}.\`__svc_n\` - ${off} <= ${b}`).join('');
    sql = `SELECT ${t}.* FROM (SELECT ${t}.*, ROW_NUMBER() OVER (${over()}) AS \`__svc_n\` FROM (${sql}) AS ${t}) AS ${t} WHERE ${t}.\`__svc_n\` > ${off}${upto}`;
    return { from: `(${sql}) AS ${t}`, where: '', order, tail: '' };
  }

  /*
   * Note [Table functions]
   * A computed field's rows (Note [Computed fields by argument mapping] in plugins/database) are
   * those of a call of a table function, every argument named (`a_id => _t0.\`id\``), a mapped
   * one the parent row's column, a user's one a parameter cast to the argument's type. As Hasura's
   * BigQuery backend does (its `fromComputedFieldSelect`), the call's rows are packed and unpacked,
   * `UNNEST(ARRAY(SELECT AS STRUCT * FROM <call>))`, since BigQuery refuses a LIMIT right after a
   * table function (hasura/graphql-engine#8562); the rows are then read as a table's (where, order,
   * limits, the return table's permission, and global_select_limit as for a root field). Not run
   * against BigQuery (live.test.ts).
   */
  tableFunction(c: FunctionCallIR, parent: string | undefined): string {
    const args = c.args.map((a) => {
      if (a.name === undefined) throw new UnsupportedQuery('an unnamed function argument');
      const named = `${q(a.name)} => `;
      if (a.k === 'row') throw new UnsupportedQuery('a row argument');
      if (a.k === 'column') {
        if (parent === undefined) throw new UnsupportedQuery('a column argument outside a row');
        return named + `${parent}.${q(a.column)}`;
      }
      return named + (a.bindAs === 'STRING' ? this.param(a.value) : a.bindAs === 'BYTES' ? `FROM_BASE64(${this.param(a.value)})` : `CAST(${this.param(a.value)} AS ${a.bindAs})`);
    });
    return `UNNEST(ARRAY(SELECT AS STRUCT * FROM ${this.table(c.function)}(${args.join(', ')})))`;
  }

  /** A computed field in a boolean expression (`frows`): some row of the call satisfies `e`. */
  protected override frows(e: Extract<BoolIR, { t: 'frows' }>, row: string, root: string): string {
    const a = this.alias();
    return `EXISTS (SELECT 1 FROM ${this.tableFunction(e.call, row)} AS ${a} WHERE ${this.bool(e.e, a, root)})`;
  }

  protected override computedRowsField(f: Extract<FieldIR, { k: 'computed_rows' }>, t: string): string {
    const a = this.alias();
    // Hasura's BigQuery backend caps a computed field's rows with global_select_limit too.
    return `ARRAY(SELECT AS STRUCT ${this.object(f.select, a)}${this.clauses(this.rows(f.rows, a, undefined, globalLimit(this.options.configuration), t))})`;
  }

  /** The clauses that read the first of the rows. */
  first(r: Rows, t: string): string {
    return r.tail ? ` FROM ${this.derived(r, t)}${r.order} LIMIT 1` : ` FROM ${r.from}${r.where}${r.order} LIMIT 1`;
  }

  /** `FROM ... WHERE ... ORDER BY ... LIMIT ...` of rows read by a query of their own. */
  clauses(r: Rows): string {
    return ` FROM ${r.from}${r.where}${r.order}${r.tail}`;
  }

  /** The rows as one derived table (for a query that aggregates them or takes the first). */
  private derived(r: Rows, t: string): string {
    return r.where || r.tail ? `(SELECT ${t}.*${this.clauses(r)}) AS ${t}` : r.from;
  }

  object(o: ObjectIR, t: string): string {
    if (o.fields.length === 0) throw new UnsupportedQuery('an empty selection');
    return o.fields.map((f) => `${this.field(f, t)} AS ${q(f.key)}`).join(', ');
  }

  protected objectField(f: Extract<FieldIR, { k: 'object' }>, t: string): string {
    const a = this.alias();
    return `(SELECT AS STRUCT ${this.object(f.select, a)}${this.first(this.rows(f.rows, a, this.join(f.mapping, a, t)), a)})`;
  }

  protected arrayField(f: Extract<FieldIR, { k: 'array' }>, t: string): string {
    const a = this.alias();
    const r = this.rows(f.rows, a, this.join(f.mapping, a, t));
    return `ARRAY(SELECT AS STRUCT ${this.object(f.select, a)}${this.clauses(r)})`;
  }

  protected aggregateField(f: Extract<FieldIR, { k: 'array_aggregate' }>, t: string): string {
    const a = this.alias();
    return `(${this.aggregate(f.agg, a, this.join(f.mapping, a, t))})`;
  }

  /** An aggregate selection as one STRUCT (Note [GoogleSQL statements]): the aggregates over
   * the rows in the query's own FROM and WHERE (so that the join to the parent row is at the
   * subquery's top, Note [Correlation at the top]), the nodes an ARRAY subquery of them. */
  aggregate(g: AggregateIR, t: string, extraWhere: string | undefined, rootCap?: number): string {
    const cap = g.rows.limitCap;
    const r = this.rows(cap === undefined ? g.rows : { ...g.rows, limitCap: undefined }, t, extraWhere);
    const nodesCap = [cap, rootCap].filter((x): x is number => x !== undefined);
    const fromRows = r.tail ? ` FROM ${this.derived(r, t)}` : ` FROM ${r.from}${r.where}`;
    const parts = g.fields.map((f): string => {
      switch (f.k) {
        case 'typename':
          return `${slit(f.name)} AS ${q(f.key)}`;
        case 'nodes': {
          // The same rows again, in a scope of their own (the alias shadows the aggregate's).
          const limit = nodesCap.length ? Math.min(...nodesCap) : undefined;
          const read = r.tail || limit !== undefined ? ` FROM ${this.derived(r, t)}${r.order}${limit !== undefined ? ` LIMIT ${limit}` : ''}` : this.clauses(r);
          return `ARRAY(SELECT AS STRUCT ${this.object(f.select, t)}${read}) AS ${q(f.key)}`;
        }
        case 'aggregate': {
          const ops = f.fields.map((op): string => {
            if (op.k === 'typename') return `${slit(op.name)} AS ${q(op.key)}`;
            if (op.k === 'count') {
              const cols = (op.columns ?? []).map((c, i) => this.redacted(`${t}.${q(c)}`, op.redact?.[i], t));
              if (cols.length > 1) throw new UnsupportedQuery('count of several columns');
              return `COUNT(${cols.length === 0 ? '*' : `${op.distinct ? 'DISTINCT ' : ''}${cols[0]}`}) AS ${q(op.key)}`;
            }
            const inner = op.columns.map((c) => {
              if (c.column === undefined) return `${slit(c.typename!)} AS ${q(c.key)}`;
              const v = this.aggregateFn(op.fn, this.redacted(`${t}.${q(c.column)}`, c.redact, t));
              return `${c.asText ? `CAST(${v} AS STRING)` : v} AS ${q(c.key)}`;
            });
            return `STRUCT(${inner.join(', ')}) AS ${q(op.key)}`;
          });
          return `STRUCT(${ops.join(', ')}) AS ${q(f.key)}`;
        }
      }
    });
    return `SELECT AS STRUCT ${parts.join(', ')}${fromRows}`;
  }

  // -------------------------------------------------------------------------------------------
  // Root fields (Note [GoogleSQL statements])

  override compileRoot(ir: RootIR): CompiledQuery {
    // Live queries and streams: Hasura's BigQuery backend serves no subscriptions.
    if (this.options.multiplexed || (ir.k === 'select' && ir.cursor)) throw new UnsupportedQuery('subscriptions');
    return super.compileRoot(ir);
  }

  protected rootSelect(ir: Extract<RootIR, { k: 'select' }>, t: string): string {
    const r = this.rows(ir.rows, t, undefined, globalLimit(this.options.configuration));
    return ir.single
      ? `SELECT TO_JSON_STRING((SELECT AS STRUCT ${this.object(ir.select, t)}${this.first(r, t)})) AS json`
      : `SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT ${this.object(ir.select, t)}${this.clauses(r)})) AS json`;
  }

  protected rootAggregate(g: AggregateIR, t: string): string {
    return `SELECT TO_JSON_STRING((${this.aggregate(g, t, undefined, globalLimit(this.options.configuration))})) AS json`;
  }
}

/** A positive integer setting of the source's configuration (global_select_limit). */
function globalLimit(configuration: Readonly<Record<string, unknown>> | undefined): number | undefined {
  const g = configuration?.global_select_limit;
  const n = typeof g === 'string' ? Number(g) : g;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

export function compileSelect(ir: RootIR, opts: SelectOptions = {}): CompiledQuery {
  return new Compiler(opts).compileRoot(ir);
}
