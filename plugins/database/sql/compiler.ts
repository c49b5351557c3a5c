/**
 * The default SQL compiler over the IR (ir/types.ts): what every SQL source kind's compiler has in
 * common, as one class whose protected methods a kind overrides where its SQL differs (Kysely's
 * DefaultQueryCompiler and its dialects' subclasses are the model). PostgreSQL's (plugins/postgres),
 * T-SQL's (plugins/mssql) and GoogleSQL's (plugins/bigquery) compilers extend it. See Note [The
 * default SQL compiler]; the list of methods and what each returns is in docs/source-kinds.md.
 */
import { DEFAULT_AGGREGATES, type Aggregates, type ScalarType, type QualifiedTable } from '../model/scalars.js';
import type {
  AggregateIR,
  BoolIR,
  ColumnValue,
  CompiledQuery,
  FieldIR,
  GroupsIR,
  ObjectIR,
  OrderItem,
  ParamSource,
  Redaction,
  RootIR,
  RowOf,
  SelectOptions,
  UpdateIR,
  Value,
} from '../ir/types.js';

/*
 * Note [The default SQL compiler]
 * A source kind's compiler is a subclass of `SqlCompiler`, one instance per statement (it holds
 * the statement's bind parameters and its alias counter). The base class writes what the three
 * SQL dialects write alike: boolean expressions (and, or, not, relationships and `_exists` as
 * EXISTS subqueries, column comparisons, the comparison operators, `_is_null`, `_in` as a list
 * subquery, a null literal as no condition), inherited roles' redactions (`CASE WHEN`), the join
 * of a relationship's mapping, order keys through object relationships (a scalar subquery per
 * step, or a LEFT JOIN per unique step where the caller collects joins, Note [Order keys by
 * joins] in plugins/postgres/sql/compile.ts), aggregate functions by name, the SET of an update
 * (`_set`, `_inc`), a column value or DEFAULT, and the dispatch of a root field and of an output
 * field to the methods that build them. What differs is a method: how an identifier, a string,
 * a parameter or a cast is written, what `true` is, which operators a column type has, how the
 * first row of a subquery is taken, and all JSON building (json_build_object, FOR JSON, STRUCT),
 * which each kind writes itself (`object`, `objectField`, `arrayField`, `aggregateField`,
 * `rootSelect`, `rootAggregate`, `multiplex`).
 *
 * The base class writes its SQL keywords in upper case through the `sql` tag; a kind whose
 * statements are in lower case (PostgreSQL's, which its tests and EXPLAIN output pin) says so
 * with `lowercaseKeywords`, and the tag lowers the literal parts of the template (never what is
 * interpolated: identifiers, strings and operators are the kind's own).
 */

/** A kind's compiler cannot compile this part of the IR (the field answers an error). */
export class UnsupportedQuery extends Error {}

/** Pairs (own column, remote column) of a relationship. */
export type Mapping = readonly (readonly [string, string])[];

/** The LEFT JOINs of a rows subquery's order keys (Note [Order keys by joins] in the PostgreSQL
 * compiler): the SQL, and the alias of each path of steps already joined, keyed by the steps'
 * `joinStep` texts one after the other. */
export interface Joins {
  sql: string[];
  aliases: Map<string, string>;
}

/** One step of a path of joins, as `Joins.aliases` keys it: the remote table, the mapping and the
 * remote's filter, so that two paths share a join only where they read the same rows. */
export const joinStep = (remote: QualifiedTable, mapping: Mapping, filter: BoolIR): string => `${JSON.stringify([remote, mapping, filter])}\n`;

/** A limit or offset: the number a literal is (Note [Literal limits] in the PostgreSQL compiler),
 * or the value to bind; undefined for none (or a null literal). */
export function literalCount(v: Value | undefined): number | Value | undefined {
  if (!v) return undefined;
  if (v.k !== 'lit') return v;
  if (v.v === null || v.v === undefined) return undefined;
  return typeof v.v === 'number' && Number.isSafeInteger(v.v) && v.v >= 0 ? v.v : v;
}

/** A number in exponent notation (`-2E-2`, a GraphQL Float or JSON number) written out
 * (`-0.02`) for types whose input does not read exponents (PostgreSQL's money, SQL Server's
 * decimals); digits are moved, never rounded. Other text is kept. */
export function plainDecimal(x: unknown): string {
  const s = String(x);
  const m = /^([+-]?)(\d*)(?:\.(\d*))?[eE]([+-]?\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, int = '', frac = '', exp] = m;
  const digits = int + frac;
  const point = int.length + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** `_ceq` and the other column comparisons. */
const COLUMN_CMP: Record<string, string> = { ceq: '=', cne: '<>', cgt: '>', clt: '<', cgte: '>=', clte: '<=' };

/** The comparison operators every SQL kind has, as they are written. */
export const STANDARD_OPERATORS: Readonly<Record<string, string>> = { eq: '=', ne: '<>', gt: '>', lt: '<', gte: '>=', lte: '<=', like: 'LIKE', nlike: 'NOT LIKE' };

/** The literal parts of a template in lower case, computed once per template. */
const lowered = new WeakMap<TemplateStringsArray, readonly string[]>();

export abstract class SqlCompiler {
  readonly params: ParamSource[] = [];
  private n = 0;

  /** `options`: how the root field is compiled (`multiplexed`: every parameter is read by
   * `muxRef`, Note [Multiplexed statements] in the PostgreSQL compiler). */
  constructor(protected readonly options: SelectOptions = {}) {}

  // -------------------------------------------------------------------------------------------
  // How the dialect writes things (override)

  /** An identifier, quoted. */
  abstract ident(name: string): string;
  /** A string constant (output keys, `__typename`). */
  abstract string(s: string): string;
  /** How the statement reads its n-th bind parameter (1-based). */
  protected abstract paramRef(n: number): string;
  /** How a multiplexed statement reads its n-th parameter: a column of the binding's row. */
  protected muxRef(n: number): string {
    return this.paramRef(n);
  }
  /** Whether the statement's keywords are lower case (the `sql` tag lowers them). */
  protected get lowercaseKeywords(): boolean {
    return false;
  }
  /** The error for a part of the IR the kind does not compile; `what` is a noun phrase. */
  protected unsupported(what: string): Error {
    return new UnsupportedQuery(what);
  }
  /** `expr` cast to `type`. */
  cast(expr: string, type: string): string {
    return this.sql`CAST(${expr} AS ${type})`;
  }
  /** The type text of a value is cast to for output (`asText`), and that booleans are cast to. */
  protected get textType(): string {
    return 'STRING';
  }
  protected get booleanType(): string {
    return 'BOOL';
  }
  /** The constant conditions. */
  protected trueSql(): string {
    return this.sql`TRUE`;
  }
  protected falseSql(): string {
    return this.sql`FALSE`;
  }
  /** The comparison operators of `cmp` (the rest are `cmpOperator`'s). */
  protected get operators(): Readonly<Record<string, string>> {
    return STANDARD_OPERATORS;
  }
  /** The operators whose operand is a pattern (text), read by `pattern`. */
  protected isPattern(op: string): boolean {
    return op === 'like' || op === 'nlike';
  }

  /** A template whose literal parts are keywords and punctuation, in the statement's case. */
  protected sql(strings: TemplateStringsArray, ...values: (string | number)[]): string {
    let parts: readonly string[] = strings;
    if (this.lowercaseKeywords) {
      let low = lowered.get(strings);
      if (!low) lowered.set(strings, (low = strings.map((s) => s.toLowerCase())));
      parts = low;
    }
    let out = parts[0]!;
    for (let i = 0; i < values.length; i++) out += String(values[i]) + parts[i + 1]!;
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Aliases, parameters, values

  alias(): string {
    return `_t${this.n++}`;
  }

  /** A bind parameter (Note [Values in the IR]): `json`, bound as its JSON text; `format`, the
   * dialect's text form of the value. */
  param(v: Value, json = false, format?: (x: unknown) => string): string {
    return this.bind(json || format ? { ...v, ...(json ? { json: true } : {}), ...(format ? { format } : {}) } : v);
  }

  /** A bind parameter whose value `p` says how to get. */
  bind(p: ParamSource): string {
    this.params.push(p);
    const n = this.params.length;
    return this.options.multiplexed ? this.muxRef(n) : this.paramRef(n);
  }

  /** A value bound and cast to the type of a column of `scalar`. */
  value(v: Value, scalar: ScalarType): string {
    return this.cast(this.param(v), scalar.bindAs);
  }

  /** A value of an insert or update: the bound value, or the column's default. */
  colValue(v: ColumnValue, scalar: ScalarType): string {
    return v.k === 'default' ? this.sql`DEFAULT` : this.value(v.value, scalar);
  }

  /** A table by its qualified name. */
  table(t: QualifiedTable): string {
    return `${this.ident(t.schema)}.${this.ident(t.name)}`;
  }

  /** A table as a FROM item (PostgreSQL's mutations add the rows the statement wrote). */
  src(t: QualifiedTable): string {
    return this.table(t);
  }

  /** `column` of alias `t`. */
  column(t: string, column: string): string {
    return `${t}.${this.ident(column)}`;
  }

  /** The join condition of a relationship from alias `t` to the remote rows aliased `a`. */
  join(mapping: Mapping, a: string, t: string): string {
    return mapping.map(([own, remote]) => this.sql`${this.column(a, remote)} = ${this.column(t, own)}`).join(this.sql` AND `);
  }

  // -------------------------------------------------------------------------------------------
  // Boolean expressions

  /** `expr` of a row of `t`, or for an inherited role's redacted column the value only where the
   * parents that allow it see the row (Note [Inherited roles] in plugins/database/model/inherit.ts). */
  redacted(expr: string, redact: BoolIR | Redaction | undefined, t: string): string {
    if (!redact) return expr;
    const cond = 'row' in redact ? this.bool(redact.e, t, t, this.rowOf(redact.row, t)) : this.bool(redact, t, t);
    return this.sql`(CASE WHEN ${cond} THEN ${expr} END)`;
  }

  /** A row of the table's type built from alias `t` (what a computed field is called on), or
   * undefined where the kind has no computed fields. */
  rowOf(_r: RowOf, _t: string): string | undefined {
    return undefined;
  }

  /** A boolean expression on the rows aliased `t`; `root` is the permission's root row (`$`),
   * `row` the row of the table's own type where `t` is a selection's alias. */
  bool(e: BoolIR, t: string, root: string, row?: string): string {
    switch (e.t) {
      case 'true':
        return this.trueSql();
      case 'false':
        return this.falseSql();
      case 'and':
        return e.of.length === 0 ? this.trueSql() : `(${e.of.map((x) => this.bool(x, t, root, row)).join(this.sql` AND `)})`;
      case 'or':
        return e.of.length === 0 ? this.falseSql() : `(${e.of.map((x) => this.bool(x, t, root, row)).join(this.sql` OR `)})`;
      case 'not':
        return this.sql`(NOT ${this.bool(e.e, t, root, row)})`;
      case 'ccmp':
        return `(${this.column(t, e.column)} ${COLUMN_CMP[e.op] ?? '='} ${this.column(e.root ? root : t, e.other)})`;
      case 'rel': {
        const a = this.alias();
        const on = this.join(e.mapping, a, t);
        return this.sql`EXISTS (SELECT 1 FROM ${this.src(e.remote)} AS ${a} WHERE ${on} AND ${this.bool(e.e, a, root)})`;
      }
      case 'exists': {
        const a = this.alias();
        return this.sql`EXISTS (SELECT 1 FROM ${this.src(e.table)} AS ${a} WHERE ${this.bool(e.e, a, root)})`;
      }
      case 'cmp': {
        if (e.cast) return this.cmp(e, this.castColumn(this.redacted(this.column(t, e.column), e.redact, t), e.cast));
        return this.cmp(e, this.redacted(this.column(t, e.column), e.redact, t));
      }
      case 'fcmp':
        return this.fcmp(e, row ?? t);
      case 'frows':
        return this.frows(e, row ?? t, root);
    }
  }

  /** A column cast to another type before it is compared (`_cast`). */
  protected castColumn(_expr: string, _type: string): string {
    throw this.unsupported('_cast');
  }

  /** A scalar computed field of the row `row` compared (BoolIR `fcmp`). */
  protected fcmp(_e: Extract<BoolIR, { t: 'fcmp' }>, _row: string): string {
    throw this.unsupported('computed fields');
  }

  /** A set-returning computed field of the row `row` has a row that satisfies `e.e` (`frows`). */
  protected frows(_e: Extract<BoolIR, { t: 'frows' }>, _row: string, _root: string): string {
    throw this.unsupported('computed fields');
  }

  /** `col <op> value`: `col` is a column of the row or a scalar computed field on it. */
  protected cmp(e: { scalar: ScalarType; op: string; value: Value }, col: string): string {
    // Hasura v2: a comparison with a null literal is no condition (`{_eq: null}` matches all).
    if (e.value.k === 'lit' && e.value.v === null) return this.trueSql();
    if (e.op === 'is_null') {
      if (e.value.k === 'lit') return e.value.v ? this.sql`(${col} IS NULL)` : this.sql`(${col} IS NOT NULL)`;
      return this.isNull(col, e.value);
    }
    const special = this.cmpOperator(e, col);
    if (special !== undefined) return special;
    const op = this.operators[e.op];
    if (!op) throw this.unsupported(`the operator _${e.op}`);
    return `(${col} ${op} ${this.isPattern(e.op) ? this.pattern(e.value, e.scalar) : this.value(e.value, e.scalar)})`;
  }

  /** `_is_null` with a value bound at run time. */
  protected isNull(col: string, v: Value): string {
    return this.sql`((${col} IS NULL) = ${this.cast(this.param(v), this.booleanType)})`;
  }

  /** The operand of a pattern operator (`_like`). */
  protected pattern(v: Value, scalar: ScalarType): string {
    return this.value(v, scalar);
  }

  /** An operator that is not a binary one (`_in`, `_nin`, a kind's own), or undefined. */
  protected cmpOperator(e: { scalar: ScalarType; op: string; value: Value }, col: string): string | undefined {
    if (e.op === 'in' || e.op === 'nin') {
      const list = this.inList(e.value, e.scalar);
      return e.op === 'in' ? this.sql`(${col} IN ${list})` : this.sql`(NOT (${col} IN ${list}))`;
    }
    return undefined;
  }

  /** The list of `_in`: a subquery of the values of one parameter (a JSON array). */
  protected inList(_v: Value, _scalar: ScalarType): string {
    throw this.unsupported('the operator _in');
  }

  // -------------------------------------------------------------------------------------------
  // Order keys, aggregates

  /** `(SELECT <select> <rest>)` that reads the first row only. */
  protected firstRow(select: string, rest: string): string {
    return this.sql`(SELECT ${select} ${rest} LIMIT 1)`;
  }

  /** The kind's aggregate functions (Note [Aggregates of a kind]): its dialect's `aggregates`. */
  protected get aggregates(): Aggregates {
    return DEFAULT_AGGREGATES;
  }

  /** The aggregate function GraphQL names `fn` (`sum`, `stddev_pop`...) on `v`, as the kind's
   * `aggregates` write it. */
  aggregateFn(fn: string, v: string): string {
    const f = Object.hasOwn(this.aggregates, fn) ? this.aggregates[fn] : undefined;
    if (!f) throw this.unsupported(`the aggregate ${fn}`);
    return `${f.fn}(${v})`;
  }

  /** An order key by a scalar computed field of the row `row`. */
  protected orderCall(_o: OrderItem, _row: string): string {
    throw this.unsupported('order_by a computed field');
  }

  /** An order key on alias `t`: a column, one reached through object relationships, an
   * aggregate of an array relationship. With `joins`, the object relationships that match at
   * most one row (`unique`) are LEFT JOINed, their alias shared by keys through the same steps
   * (Note [Order keys by joins] in the PostgreSQL compiler); the others are scalar subqueries,
   * each with the remote table's filter. */
  orderKey(o: OrderItem, t: string, joins?: Joins): string {
    const build = (i: number, cur: string): string => {
      if (i === o.path.length) {
        if (o.call) return this.redacted(this.orderCall(o, cur), o.redact, cur);
        if (o.agg) {
          const a = this.alias();
          const on = this.join(o.agg.mapping, a, cur);
          const what = o.agg.fn === 'count' ? this.sql`COUNT(*)` : this.aggregateFn(o.agg.fn, this.redacted(this.column(a, o.column), o.redact, a));
          return this.sql`(SELECT ${what} FROM ${this.src(o.agg.remote)} AS ${a} WHERE ${on} AND ${this.bool(o.agg.filter, a, a)})`;
        }
        return this.redacted(this.column(cur, o.column), o.redact, cur);
      }
      const step = o.path[i]!;
      const a = this.alias();
      const on = this.join(step.mapping, a, cur);
      return this.firstRow(build(i + 1, a), this.sql`FROM ${this.src(step.remote)} AS ${a} WHERE ${on} AND ${this.bool(step.filter, a, a)}`);
    };
    let cur = t;
    let i = 0;
    let signature = '';
    for (; joins && i < o.path.length && o.path[i]!.unique; i++) {
      const step = o.path[i]!;
      // Keys through the same steps share the joins (`{album: {artist: {name}}}, {album: {title}}`).
      signature += joinStep(step.remote, step.mapping, step.filter);
      let a = joins.aliases.get(signature);
      if (!a) {
        a = this.alias();
        const on = this.join(step.mapping, a, cur);
        joins.sql.push(this.sql`LEFT JOIN ${this.src(step.remote)} AS ${a} ON ${on} AND ${this.bool(step.filter, a, a)}`);
        joins.aliases.set(signature, a);
      }
      cur = a;
    }
    return build(i, cur);
  }

  /** The distinct_on columns of rows aliased `t`, each with its inherited role's redaction. */
  protected distinctColumns(r: { distinctOn?: string[]; distinctRedact?: (BoolIR | undefined)[] }, t: string): string[] {
    return (r.distinctOn ?? []).map((c, i) => this.redacted(this.column(t, c), r.distinctRedact?.[i], t));
  }

  /** The filter of rows aliased `t`: the IR's, and the join to the parent row (`extraWhere`). */
  protected rowsWhere(where: BoolIR, t: string, extraWhere: string | undefined): string {
    return [this.bool(where, t, t), ...(extraWhere ? [extraWhere] : [])].join(this.sql` AND `);
  }

  /** ` WHERE <filter>` on the rows aliased `t`, or nothing for no filter or one that always
   * holds (a mutation's `returning` under the role's select filter). */
  filterWhere(filter: BoolIR | undefined, t: string): string {
    return filter && filter.t !== 'true' ? this.sql` WHERE ${this.bool(filter, t, t)}` : '';
  }

  /** The order keys and distinct_on expressions projected beside a row (`, <key> AS "__svc_o0"`),
   * so that the query reading the rows sorts and partitions by columns. */
  protected projectKeys(keys: readonly string[], distinct: readonly string[] = []): string {
    return [...keys.map((k, i) => this.sql`, ${k} AS ${this.ident(`__svc_o${i}`)}`), ...distinct.map((d, i) => this.sql`, ${d} AS ${this.ident(`__svc_d${i}`)}`)].join('');
  }

  // -------------------------------------------------------------------------------------------
  // Output fields

  /** A value in the JSON output: as text when asked (big numbers). */
  protected outputValue(expr: string, _scalar: ScalarType | undefined, asText: boolean | undefined): string {
    return asText ? this.cast(expr, this.textType) : expr;
  }

  /** The JSON object (or the kind's form of it) of `o` on the row `t`; `joins`, where given,
   * collects LEFT JOINs that the caller appends to the FROM that reads `t`. */
  abstract object(o: ObjectIR, t: string, joins?: string[]): string;

  /** An output field's expression on the row `t`. */
  field(f: FieldIR, t: string, joins?: string[]): string {
    switch (f.k) {
      case 'column':
        return this.columnField(f, t);
      case 'typename':
        return this.string(f.name);
      case 'object':
        return this.objectField(f, t, joins);
      case 'array':
        return this.arrayField(f, t);
      case 'array_aggregate':
        return this.aggregateField(f, t);
      case 'computed':
        return this.computedField(f, t);
      case 'computed_rows':
        return this.computedRowsField(f, t);
      case 'array_groups':
        return this.groupsField(f, t);
    }
  }

  /** A column (`path`: of a json column, at a JSON path). */
  protected columnField(f: Extract<FieldIR, { k: 'column' }>, t: string): string {
    if (f.path) throw this.unsupported('JSON paths');
    return this.redacted(this.outputValue(this.column(t, f.column), f.scalar, f.asText), f.redact, t);
  }
  /** An object relationship: its object, or null. */
  protected abstract objectField(f: Extract<FieldIR, { k: 'object' }>, t: string, joins?: string[]): string;
  /** An array relationship: the list of its objects. */
  protected abstract arrayField(f: Extract<FieldIR, { k: 'array' }>, t: string): string;
  /** An array relationship's aggregate. */
  protected abstract aggregateField(f: Extract<FieldIR, { k: 'array_aggregate' }>, t: string): string;
  protected computedField(_f: Extract<FieldIR, { k: 'computed' }>, _t: string): string {
    throw this.unsupported('computed fields');
  }
  protected computedRowsField(_f: Extract<FieldIR, { k: 'computed_rows' }>, _t: string): string {
    throw this.unsupported('computed fields');
  }
  /** `<rel>_groups`: never planned where the dialect does not offer grouped aggregates. */
  protected groupsField(_f: Extract<FieldIR, { k: 'array_groups' }>, _t: string): string {
    throw this.unsupported('grouped aggregates');
  }

  // -------------------------------------------------------------------------------------------
  // Root fields

  /** A root field's statement (`Dialect.compileSelect`): one row with the JSON text as `json`. */
  compileRoot(ir: RootIR): CompiledQuery {
    const t = this.alias();
    const sql = ir.k === 'aggregate' ? this.rootAggregate(ir.agg, t) : ir.k === 'groups' ? this.rootGroups(ir.groups, t) : this.rootSelect(ir, t);
    return this.options.multiplexed ? this.multiplex(sql, ir) : { sql, params: this.params };
  }
  /** A list or a single row (`_by_pk`), with a stream's `cursor` column when asked. */
  protected abstract rootSelect(ir: Extract<RootIR, { k: 'select' }>, t: string): string;
  protected abstract rootAggregate(g: AggregateIR, t: string): string;
  protected rootGroups(_g: GroupsIR, _t: string): string {
    throw this.unsupported('grouped aggregates');
  }
  /** The statement of one binding made a statement of many (live queries, `SelectOptions.multiplexed`). */
  protected multiplex(_sql: string, _ir: RootIR): CompiledQuery {
    throw this.unsupported('subscriptions');
  }

  // -------------------------------------------------------------------------------------------
  // Mutations

  /** One SET of an update on the row aliased `t`: `_set`, `_inc`, the legacy `mul` and `default`. */
  setClause(s: UpdateIR['set'][number], t: string): string {
    const c = this.ident(s.column);
    const col = `${t}.${c}`;
    switch (s.op) {
      case 'set':
        return `${c} = ${this.value(s.value!, s.scalar)}`;
      case 'default':
        return this.sql`${c} = DEFAULT`;
      case 'inc':
        return `${c} = ${col} + ${this.value(s.value!, s.scalar)}`;
      case 'mul':
        return `${c} = ${col} * ${this.value(s.value!, s.scalar)}`;
      default:
        throw this.unsupported(`the update operator _${s.op}`);
    }
  }
}
