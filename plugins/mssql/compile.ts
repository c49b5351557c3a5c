/**
 * Query and mutation IR -> T-SQL (SQL Server 2017 and later), one batch per root field. The JSON
 * is built by SQL Server with FOR JSON PATH, as Hasura's MSSQL backend builds it; every value is a
 * parameter (@p1, @p2, ... bound as NVARCHAR(MAX) text and cast to its column's type); every
 * identifier is in brackets. See Note [T-SQL statements] and Note [T-SQL mutations].
 */
import type {
  Aggregates,
  AggregateIR,
  BoolIR,
  CompiledQuery,
  DeleteIR,
  FieldIR,
  InsertIR,
  MutationIR,
  MutationOutput,
  ObjectIR,
  OrderDir,
  QualifiedTable,
  RootIR,
  RowsIR,
  ScalarType,
  SelectOptions,
  UpdateIR,
  Value,
} from '../database/index.js';
import { literalCount, plainDecimal, SqlCompiler, UnsupportedQuery as Unsupported } from '../database/index.js';
import { MSSQL_AGGREGATES } from './aggregates.js';
import { GEO_TYPES, ST_METHODS, wktOf } from './geo.js';
import { quoteIdent as q, nlit } from './identifiers.js';

/*
 * Note [T-SQL statements]
 * A root field is one SELECT whose one row has the field's JSON text as `json`:
 *   list:      SELECT ISNULL((SELECT <fields> FROM <rows> ORDER BY <keys> FOR JSON PATH,
 *                             INCLUDE_NULL_VALUES), N'[]') AS [json]
 *   single:    SELECT ISNULL((SELECT TOP (1) <fields> ... FOR JSON PATH, WITHOUT_ARRAY_WRAPPER,
 *                             INCLUDE_NULL_VALUES), N'null') AS [json]
 *   aggregate: SELECT (SELECT <parts> FROM (SELECT COUNT(*) ..., SUM(_x.[v1]) ... FROM (SELECT
 *                      <values> FROM <rows>) AS _x) AS _a FOR JSON PATH, WITHOUT_ARRAY_WRAPPER,
 *                      INCLUDE_NULL_VALUES) AS [json]
 * The FOR JSON subquery is a column of an outer SELECT, so SQL Server returns it as one
 * NVARCHAR(MAX) value (FOR JSON at the top of a statement is split over rows of 2,033
 * characters). A nested object or list is a correlated FOR JSON subquery wrapped in JSON_QUERY,
 * without which FOR JSON would write it as an escaped string (ISNULL and WITHOUT_ARRAY_WRAPPER
 * both lose the JSON flag). INCLUDE_NULL_VALUES keeps null fields, as GraphQL answers them.
 * Output keys are column aliases in brackets; FOR JSON PATH reads a `.` in one as nesting, and
 * GraphQL names have none.
 *
 * <rows> is a derived table aliased like the table itself: `(SELECT _t0.*, <key> AS [__svc_o0]
 * FROM [dbo].[author] AS _t0 WHERE ...) AS _t0`, so field expressions (`_t0.[name]`) read it as
 * they would read the table, and the order keys (which may be subqueries: a relationship's
 * column, an aggregate of an array relationship) are computed once and sorted by as columns.
 * T-SQL has no NULLS FIRST/LAST and sorts NULL lowest; `asc` and `desc` are that order (Hasura's
 * MSSQL backend: `asc` nulls first, `desc` nulls last), and `asc_nulls_last`/`desc_nulls_first`
 * put a `CASE WHEN k IS NULL ...` term before the key. It
 * has no LIMIT or DISTINCT ON: a limit alone is TOP (n); an offset that is a literal is
 * OFFSET ... FETCH; an offset from a variable, and distinct_on, are ROW_NUMBER() over the order
 * (PARTITION BY the distinct columns), which takes expressions where OFFSET takes constants.
 * A literal limit or offset is written as a number (as the PostgreSQL compiler does, Note
 * [Literal limits] there), a variable stays a parameter.
 */

export class UnsupportedQuery extends Unsupported {
  constructor(what: string) {
    super(`the mssql source kind does not support ${what}`);
  }
}

/** Exact numeric types, whose text SQL Server reads without an exponent. */
const EXACT = new Set(['decimal', 'numeric', 'money', 'smallmoney']);

export { plainDecimal };

/** How a spatial value is bound: its WKT (Note [MSSQL spatial values] in ./geo.ts). */
const WKT: Record<string, (x: unknown) => string> = { geometry: wktOf('geometry'), geography: wktOf('geography') };

const FOR_JSON_LIST = 'FOR JSON PATH, INCLUDE_NULL_VALUES';
const FOR_JSON_OBJECT = 'FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES';
const TRUE = '(1 = 1)';
const FALSE = '(1 = 0)';

/** The ORDER BY terms of a key in one of Hasura's MSSQL orders (Note [T-SQL statements]):
 * `asc` is nulls first and `desc` nulls last there (SQL Server's own order, as Hasura's MSSQL
 * backend defines them, unlike its PostgreSQL one). */
function orderTerms(k: string, dir: OrderDir, reverse = false): string[] {
  const desc = dir.startsWith('desc') !== reverse;
  const nullsFirst = (dir === 'asc' || dir === 'asc_nulls_first' || dir === 'desc_nulls_first') !== reverse;
  // T-SQL: NULL is first ascending and last descending.
  const natural = desc ? !nullsFirst : nullsFirst;
  const key = `${k} ${desc ? 'DESC' : 'ASC'}`;
  return natural ? [key] : [`CASE WHEN ${k} IS NULL THEN ${nullsFirst ? 0 : 1} ELSE ${nullsFirst ? 1 : 0} END`, key];
}

interface Rows {
  /** The derived table, aliased. */
  from: string;
  /** ` ORDER BY ...` over the projected keys, or ''. */
  order: string;
  /** The ORDER BY terms, reversed (a stream's cursor: the last row first). */
  reversed: string[];
}

/** T-SQL's compiler: the default SQL compiler (Note [The default SQL compiler] in
 * plugins/database/sql/compiler.ts) with bracketed identifiers, `@pn` parameters, `(1 = 1)` for
 * true, T-SQL's aggregates, TOP (1), OPENJSON lists and FOR JSON objects. */
class Compiler extends SqlCompiler {
  ident(name: string): string {
    return q(name);
  }

  string(s: string): string {
    return nlit(s);
  }

  protected paramRef(n: number): string {
    return `@p${n}`;
  }

  /** A column of the binding's row (Note [Multiplexed T-SQL]). */
  protected override muxRef(n: number): string {
    return `${MUX}.[p${n}]`;
  }

  protected override unsupported(what: string): Error {
    return new UnsupportedQuery(what);
  }

  protected override get textType(): string {
    return 'nvarchar(max)';
  }

  protected override trueSql(): string {
    return TRUE;
  }

  protected override falseSql(): string {
    return FALSE;
  }

  override param(v: Value, json = false, format?: (x: unknown) => string): string {
    if (v.k === 'object' || v.k === 'session_json') throw new UnsupportedQuery(`a value of kind ${v.k}`);
    return super.param(v, json, format);
  }

  /** A value cast to the type of a column of `scalar`'s type (Note [MSSQL scalars] in dialect.ts);
   * a number for an exact numeric type written out (`1E-7` is no decimal to SQL Server). */
  override value(v: Value, scalar: ScalarType): string {
    const p = this.param(v, false, EXACT.has(scalar.name) ? plainDecimal : WKT[scalar.name]);
    return scalar.bindAs === 'nvarchar(max)' ? p : `CAST(${p} AS ${scalar.bindAs})`;
  }

  // T-SQL has no boolean expressions as values: a predicate's truth is compared as a bit.
  protected override isNull(col: string, v: Value): string {
    return `(CASE WHEN ${col} IS NULL THEN 1 ELSE 0 END = CAST(${this.param(v)} AS bit))`;
  }

  /** A LIKE pattern is text, bound as it is. */
  protected override pattern(v: Value): string {
    return this.param(v);
  }

  /** The `_st_*` operators as a method of the column's value (Note [MSSQL spatial values] in
   * ./geo.ts): `<col>.STIntersects(geometry::STGeomFromText(@p1, <col>.STSrid)) = 1`; the
   * generic comparisons, which SQL Server has not for these types, refused. */
  protected override cmpOperator(e: { scalar: ScalarType; op: string; value: Value }, col: string): string | undefined {
    const st = ST_METHODS[e.op];
    if (!GEO_TYPES.has(e.scalar.name)) {
      if (st) throw new UnsupportedQuery(`the operator _${e.op} on a column of type ${e.scalar.name}`);
      return super.cmpOperator(e, col);
    }
    if (!st || (st.geometryOnly && e.scalar.name !== 'geometry')) {
      throw new UnsupportedQuery(`the operator _${e.op} on a column of type ${e.scalar.name} (SQL Server cannot compare ${e.scalar.name} values with it; use _st_equals)`);
    }
    // A column is the receiver as it is (`_t0.[g].STSrid`, SQL Server's documented form); an
    // expression (an inherited role's CASE) in parentheses, as Hasura writes every receiver.
    const recv = /^_t\d+\.\[(?:[^\]]|\]\])*\]$/.test(col) ? col : `(${col})`;
    const value = `${e.scalar.name}::STGeomFromText(${this.param(e.value, false, WKT[e.scalar.name])}, ${recv}.STSrid)`;
    return `(${recv}.${st.method}(${value}) = 1)`;
  }

  /** The list is one parameter, a JSON array (a session variable holds its JSON text). */
  protected override inList(v: Value, scalar: ScalarType): string {
    return `(SELECT CAST([value] AS ${scalar.bindAs}) FROM OPENJSON(${this.param(v, v.k !== 'session')}))`;
  }

  protected override firstRow(select: string, rest: string): string {
    return `(SELECT TOP (1) ${select} ${rest})`;
  }

  /** SQL Server's aggregate functions (Note [MSSQL aggregates]). */
  protected override get aggregates(): Aggregates {
    return MSSQL_AGGREGATES;
  }

  /** An aggregate of one value (`_x.[v1]`): AVG of an integer would be an integer in T-SQL. */
  override aggregateFn(fn: string, v: string): string {
    const f = Object.hasOwn(MSSQL_AGGREGATES, fn) ? MSSQL_AGGREGATES[fn] : undefined;
    if (!f) throw new UnsupportedQuery(`the aggregate ${fn}`);
    return f.fn === 'AVG' ? `AVG(${v} * 1.0)` : `${f.fn}(${v})`;
  }

  // -------------------------------------------------------------------------------------------
  // Rows, objects, aggregates

  /** A limit (with the role's cap) as a T-SQL expression, a number, or undefined. */
  private limitOf(r: RowsIR): number | string | undefined {
    const given = literalCount(r.limit);
    const cap = r.limitCap;
    if (typeof given === 'number') return cap === undefined ? given : Math.min(given, cap);
    if (given) {
      const p = `CAST(${this.param(given)} AS bigint)`;
      // A null limit is no limit (and under a cap, the cap).
      return cap === undefined ? `ISNULL(${p}, 9223372036854775807)` : `(CASE WHEN ${p} < ${cap} THEN ${p} ELSE ${cap} END)`;
    }
    return cap;
  }

  /** The rows of a selection as a derived table aliased `t` (Note [T-SQL statements]).
   * `extraWhere`: the join to the parent row. */
  rows(r: RowsIR, t: string, extraWhere?: string): Rows {
    if (r.from) throw new UnsupportedQuery('functions');
    const keys = r.orderBy.map((o) => this.orderKey(o, t));
    const dist = r.distinctOn ?? [];
    const distExprs = this.distinctColumns(r, t);
    const where = this.rowsWhere(r.where, t, extraWhere);
    let sql = `SELECT ${t}.*${this.projectKeys(keys, distExprs)} FROM ${this.table(r.table)} AS ${t} WHERE ${where}`;
    const terms = r.orderBy.flatMap((o, i) => orderTerms(`${t}.[__svc_o${i}]`, o.dir));
    const reversed = r.orderBy.flatMap((o, i) => orderTerms(`${t}.[__svc_o${i}]`, o.dir, true));
    const orderBy = terms.length ? terms.join(', ') : '(SELECT NULL)';
    if (dist.length) {
      // DISTINCT ON: the first row of each group, in the order asked.
      const partition = dist.map((_, i) => `${t}.[__svc_d${i}]`).join(', ');
      sql = `SELECT ${t}.* FROM (SELECT ${t}.*, ROW_NUMBER() OVER (PARTITION BY ${partition} ORDER BY ${orderBy}) AS [__svc_dn] FROM (${sql}) AS ${t}) AS ${t} WHERE ${t}.[__svc_dn] = 1`;
    }
    const limit = this.limitOf(r);
    const offset = literalCount(r.offset);
    if (typeof offset === 'number' && (limit === undefined || typeof limit === 'number')) {
      sql = `SELECT ${t}.* FROM (${sql}) AS ${t} ORDER BY ${orderBy} OFFSET ${offset} ROWS${limit === undefined ? '' : ` FETCH NEXT ${limit} ROWS ONLY`}`;
    } else if (offset !== undefined) {
      const off = typeof offset === 'number' ? String(offset) : `ISNULL(CAST(${this.param(offset)} AS bigint), 0)`;
      const upto = limit === undefined ? '' : ` AND ${t}.[__svc_n] - ${off} <= ${limit}`;
      sql = `SELECT ${t}.* FROM (SELECT ${t}.*, ROW_NUMBER() OVER (ORDER BY ${orderBy}) AS [__svc_n] FROM (${sql}) AS ${t}) AS ${t} WHERE ${t}.[__svc_n] > ${off}${upto}`;
    } else if (limit !== undefined) {
      sql = `SELECT TOP (${limit}) ${t}.* FROM (${sql}) AS ${t}${terms.length ? ` ORDER BY ${terms.join(', ')}` : ''}`;
    }
    return { from: `(${sql}) AS ${t}`, order: terms.length ? ` ORDER BY ${terms.join(', ')}` : '', reversed };
  }

  /** The select list of an object: `<expr> AS [key], ...`. */
  object(o: ObjectIR, t: string): string {
    if (o.fields.length === 0) throw new UnsupportedQuery('an empty selection');
    return o.fields.map((f) => `${this.field(f, t)} AS ${q(f.key)}`).join(', ');
  }

  /** A column's value as FOR JSON writes it: big numbers as text when asked, CLR types as their
   * text (FOR JSON cannot write them): the spatial ones as WKT, `STAsText()`, as Hasura's MSSQL
   * backend reads them (Note [MSSQL spatial values] in ./geo.ts), hierarchyid as `ToString()`. */
  protected override outputValue(expr: string, scalar: ScalarType, asText: boolean | undefined): string {
    if (scalar.category === 'other' && GEO_TYPES.has(scalar.name)) return `${expr}.STAsText()`;
    if (scalar.category === 'other' && scalar.name === 'hierarchyid') return `${expr}.ToString()`;
    return super.outputValue(expr, scalar, asText);
  }

  protected objectField(f: Extract<FieldIR, { k: 'object' }>, t: string): string {
    const a = this.alias();
    const r = this.rows(f.rows, a, this.join(f.mapping, a, t));
    return `JSON_QUERY((SELECT TOP (1) ${this.object(f.select, a)} FROM ${r.from}${r.order} ${FOR_JSON_OBJECT}))`;
  }

  protected arrayField(f: Extract<FieldIR, { k: 'array' }>, t: string): string {
    const a = this.alias();
    const r = this.rows(f.rows, a, this.join(f.mapping, a, t));
    return `JSON_QUERY(ISNULL((SELECT ${this.object(f.select, a)} FROM ${r.from}${r.order} ${FOR_JSON_LIST}), N'[]'))`;
  }

  protected aggregateField(f: Extract<FieldIR, { k: 'array_aggregate' }>, t: string): string {
    const a = this.alias();
    return `JSON_QUERY((${this.aggregate(f.agg, a, this.join(f.mapping, a, t))}))`;
  }

  /** An aggregate selection as one FOR JSON object (Note [T-SQL statements]). The values
   * aggregated are projected first (`_x`): T-SQL refuses an aggregate of a subquery, which a
   * redacted column (an inherited role's) may hold. */
  aggregate(g: AggregateIR, t: string, extraWhere: string | undefined): string {
    // The permission's limit caps the nodes, not the rows aggregated (Hasura counts them all).
    const cap = g.rows.limitCap;
    const r = this.rows(cap === undefined ? g.rows : { ...g.rows, limitCap: undefined }, t, extraWhere);
    const values: string[] = [];
    const aggs: string[] = ['COUNT(*) AS [a0]'];
    const agg = (expr: string) => {
      aggs.push(`${expr} AS [a${aggs.length}]`);
      return `_a.[a${aggs.length - 1}]`;
    };
    const valueOf = (expr: string) => {
      values.push(`${expr} AS [v${values.length}]`);
      return `_x.[v${values.length - 1}]`;
    };
    const parts = g.fields.map((f): string => {
      switch (f.k) {
        case 'typename':
          return `${nlit(f.name)} AS ${q(f.key)}`;
        case 'nodes':
          // The same rows again, in a scope of their own (their parameters are the same), capped.
          return `JSON_QUERY(ISNULL((SELECT ${cap === undefined ? '' : `TOP (${cap}) `}${this.object(f.select, t)} FROM ${r.from}${r.order} ${FOR_JSON_LIST}), N'[]')) AS ${q(f.key)}`;
        case 'aggregate': {
          const ops = f.fields.map((op): string => {
            if (op.k === 'typename') return `${nlit(op.name)} AS ${q(op.key)}`;
            if (op.k === 'count') {
              const cols = (op.columns ?? []).map((c, i) => this.redacted(`${t}.${q(c)}`, op.redact?.[i], t));
              if (cols.length > 1) throw new UnsupportedQuery('count of several columns');
              if (cols.length === 0) return `_a.[a0] AS ${q(op.key)}`;
              return `${agg(`COUNT(${op.distinct ? 'DISTINCT ' : ''}${valueOf(cols[0]!)})`)} AS ${q(op.key)}`;
            }
            const inner = op.columns.map((c) => {
              if (c.column === undefined) return `${nlit(c.typename!)} AS ${q(c.key)}`;
              const v = agg(this.aggregateFn(op.fn, valueOf(this.redacted(`${t}.${q(c.column)}`, c.redact, t))));
              return `${c.asText ? `CAST(${v} AS nvarchar(max))` : v} AS ${q(c.key)}`;
            });
            return `JSON_QUERY((SELECT ${inner.join(', ')} ${FOR_JSON_OBJECT})) AS ${q(op.key)}`;
          });
          return `JSON_QUERY((SELECT ${ops.join(', ')} ${FOR_JSON_OBJECT})) AS ${q(f.key)}`;
        }
      }
    });
    const inner = `SELECT 1 AS [one]${values.map((x) => `, ${x}`).join('')} FROM ${r.from}`;
    return `SELECT ${parts.join(', ')} FROM (SELECT ${aggs.join(', ')} FROM (${inner}) AS _x) AS _a ${FOR_JSON_OBJECT}`;
  }

  // -------------------------------------------------------------------------------------------
  // Root fields (Note [T-SQL statements])

  protected rootSelect(ir: Extract<RootIR, { k: 'select' }>, t: string): string {
    const r = this.rows(ir.rows, t);
    if (ir.single) return `SELECT ISNULL((SELECT TOP (1) ${this.object(ir.select, t)} FROM ${r.from}${r.order} ${FOR_JSON_OBJECT}), N'null') AS [json]`;
    // A stream's cursor: the first order key of the last row, as text (a parameter again).
    const cursor = ir.cursor ? `, (SELECT TOP (1) CAST(${t}.[__svc_o0] AS nvarchar(max)) FROM ${r.from} ORDER BY ${r.reversed.join(', ')}) AS [cursor]` : '';
    return `SELECT ISNULL((SELECT ${this.object(ir.select, t)} FROM ${r.from}${r.order} ${FOR_JSON_LIST}), N'[]') AS [json]${cursor}`;
  }

  protected rootAggregate(g: AggregateIR, t: string): string {
    return `SELECT (${this.aggregate(g, t, undefined)}) AS [json]`;
  }

  /** Note [Multiplexed T-SQL]. */
  protected override multiplex(sql: string, ir: RootIR): CompiledQuery {
    const params = this.params;
    const n = params.length;
    const columns = ["[i] int N'$[0]'", ...params.map((_, i) => `[p${i + 1}] nvarchar(max) N'$[${i + 1}]'`)];
    const out = ir.k === 'select' && ir.cursor ? '_svc_r.[json], _svc_r.[cursor]' : '_svc_r.[json]';
    return {
      sql: `SELECT ${MUX}.[i], ${out} FROM OPENJSON(@p1) WITH (${columns.join(', ')}) AS ${MUX} OUTER APPLY (${sql}) AS _svc_r ORDER BY ${MUX}.[i]`,
      params,
      batch: (rows) => [JSON.stringify(rows.map((r, i) => [i + 1, ...Array.from({ length: n }, (_, j) => r[j] ?? null)]))],
    };
  }
}

/*
 * Note [Multiplexed T-SQL]
 * A live query's statement for many subscribers at once (the contract's `batch`, Note
 * [Multiplexed statements] in plugins/postgres/sql/compile.ts for the idea): every parameter of the
 * one-subscriber statement becomes a column of a row per subscriber, read from ONE parameter, a
 * JSON array of `[i, p1, p2, ...]` arrays, by OPENJSON ... WITH (SQL Server 2016 and later):
 *
 *   SELECT _svc_m.[i], _svc_r.[json] FROM OPENJSON(@p1) WITH ([i] int N'$[0]',
 *     [p1] nvarchar(max) N'$[1]', ...) AS _svc_m
 *     OUTER APPLY (<the statement of one subscriber>) AS _svc_r ORDER BY _svc_m.[i]
 *
 * so that each subscriber's rows are read as its own statement would read them, and a batch of
 * subscribers is one round trip. One JSON parameter also keeps the batch under SQL Server's
 * 2,100 parameters per request whatever the number of subscribers.
 */
const MUX = '_svc_m';

export function compileSelect(ir: RootIR, opts: SelectOptions = {}): CompiledQuery {
  return new Compiler(opts).compileRoot(ir);
}

/*
 * Note [T-SQL mutations]
 * A mutation root field is one batch that is atomic and fails by itself (Note [Mutations in the
 * IR]): with XACT_ABORT ON inside its own BEGIN TRANSACTION (nested in the request's when there
 * is one), it writes the rows, keeping each written row's new version (the old one for a delete)
 * in a temporary table with OUTPUT ... INTO, then checks the role's check on them and THROWs
 * `svc:check` when one fails (XACT_ABORT rolls everything back, the request's transaction too),
 * then selects the field's JSON from the temporary table, drops it and commits:
 *
 *   SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION;
 *   SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[t] AS _s
 *     WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[t] AS _s WHERE 1 = 0;
 *   INSERT INTO [dbo].[t] ([a], [b]) OUTPUT N'INSERT', INSERTED.* INTO #svc_w VALUES (...), ...;
 *   IF EXISTS (SELECT 1 FROM #svc_w AS _t1 WHERE CASE WHEN <check> THEN 1 ELSE 0 END = 0)
 *     THROW 51000, N'svc:check', 1;
 *   SELECT (<json from #svc_w>) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;
 *
 * The temporary table copies the table's columns by SELECT INTO; the UNION ALL keeps the IDENTITY
 * property out of it (as Hasura's MSSQL backend does), so OUTPUT can write the identity values.
 * OUTPUT ... INTO (not a bare OUTPUT) is what SQL Server allows on a table with triggers. A check
 * that is unknown (NULL) fails, as in Hasura. The reads after the writes see them, so a
 * relationship in `returning` or in a check reads the rows written.
 *
 * Upserts (`if_matched`, Hasura's MSSQL upsert; the IR's onConflict with the match columns) are
 * a MERGE ... WITH (HOLDLOCK) per shape of row (the columns each row gives; a MERGE source
 * cannot say DEFAULT), matching the target on the match columns: WHEN MATCHED AND <the request's
 * where and the role's update filter> THEN UPDATE SET the update columns (and the role's update
 * presets), WHEN NOT MATCHED THEN INSERT; OUTPUT $action tells inserted rows (the insert check)
 * from updated ones (the update check). Without update columns a matched row is left alone and
 * not returned, as `on_conflict` with no update columns does. An INSERT of more than 1,000 rows
 * is several (T-SQL's limit per VALUES list). Nested inserts are not supported (nor are they by
 * Hasura's MSSQL backend); they are refused when the field is planned.
 */
const CHECK_MARK = 'svc:check';
const W = '#svc_w';

/** What a mutation batch's error means (Note [T-SQL mutations]): its check's THROW. */
export function mutationFailure(e: unknown): { k: 'check' } | undefined {
  const seen = new Set<unknown>();
  const visit = (x: unknown): boolean => {
    if (!x || typeof x !== 'object' || seen.has(x)) return false;
    seen.add(x);
    const err = x as { message?: unknown; precedingErrors?: unknown; originalError?: unknown };
    if (typeof err.message === 'string' && err.message.includes(CHECK_MARK)) return true;
    return (Array.isArray(err.precedingErrors) && err.precedingErrors.some(visit)) || visit(err.originalError);
  };
  return visit(e) ? { k: 'check' } : undefined;
}

class MutationCompiler extends Compiler {
  readonly statements: string[] = [];
  /** The checks on the written rows: an insert's, an update's, or both for an upsert (by the
   * row's OUTPUT $action). */
  private insertCheck: BoolIR | undefined;
  private updateCheck: BoolIR | undefined;

  private prepare(table: QualifiedTable) {
    const src = this.table(table);
    this.statements.push(
      `SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO ${W} FROM ${src} AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM ${src} AS _s WHERE 1 = 0`,
    );
  }

  insert(ir: InsertIR) {
    if (ir.rows.some((r) => r.before.length > 0 || r.after.length > 0)) throw new UnsupportedQuery('nested inserts');
    this.prepare(ir.table);
    this.insertCheck = ir.check;
    const columnOf = (c: string) => {
      const col = ir.columns.get(c);
      if (!col) throw new UnsupportedQuery(`the unknown column "${c}"`);
      return col;
    };
    const oc = ir.onConflict;
    if (!oc) {
      const cols: string[] = [];
      for (const r of ir.rows) for (const c of r.values.keys()) if (!cols.includes(c)) cols.push(c);
      if (cols.length === 0) {
        // Rows of defaults only: DEFAULT VALUES is one row, so one statement per row.
        for (let i = 0; i < ir.rows.length; i++) this.statements.push(`INSERT INTO ${this.table(ir.table)} OUTPUT N'INSERT', INSERTED.* INTO ${W} DEFAULT VALUES`);
        return;
      }
      const values = ir.rows.map((r) => `(${cols.map((c) => (r.values.has(c) ? this.colValue(r.values.get(c)!, columnOf(c).scalar) : 'DEFAULT')).join(', ')})`);
      for (let i = 0; i < values.length; i += 1000) {
        this.statements.push(`INSERT INTO ${this.table(ir.table)} (${cols.map(q).join(', ')}) OUTPUT N'INSERT', INSERTED.* INTO ${W} VALUES ${values.slice(i, i + 1000).join(', ')}`);
      }
      return;
    }
    // An upsert (Note [T-SQL mutations]): one MERGE per shape of row.
    this.updateCheck = oc.check;
    const shapes = new Map<string, { cols: string[]; rows: typeof ir.rows }>();
    for (const r of ir.rows) {
      const cols = [...r.values].filter(([, v]) => v.k === 'value').map(([c]) => c);
      const key = JSON.stringify(cols);
      const s = shapes.get(key);
      if (s) s.rows.push(r);
      else shapes.set(key, { cols, rows: [r] });
    }
    // No match columns: no row matches (every row is inserted).
    const match = oc.columns ?? [];
    for (const { cols, rows } of shapes.values()) {
      const t = this.alias();
      const sets = oc.update.map((c) => `${q(c)} = ${cols.includes(c) ? `_s.${q(c)}` : `${t}.${q(c)}`}`);
      for (const [c, v] of oc.set ?? []) sets.push(`${q(c)} = ${this.colValue(v, columnOf(c).scalar)}`);
      // A row that does not give every match column can match no row.
      const on = match.length > 0 && match.every((c) => cols.includes(c)) ? match.map((c) => `${t}.${q(c)} = _s.${q(c)}`).join(' AND ') : FALSE;
      const source =
        cols.length === 0
          ? `(SELECT 1 AS [__svc_one]${rows.length > 1 ? ` UNION ALL SELECT 1`.repeat(rows.length - 1) : ''}) AS _s`
          : `(VALUES ${rows.map((r) => `(${cols.map((c) => this.colValue(r.values.get(c)!, columnOf(c).scalar)).join(', ')})`).join(', ')}) AS _s (${cols.map(q).join(', ')})`;
      let sql = `MERGE INTO ${this.table(ir.table)} WITH (HOLDLOCK) AS ${t} USING ${source} ON (${on})`;
      if (sets.length) sql += ` WHEN MATCHED${oc.where.t === 'true' ? '' : ` AND ${this.bool(oc.where, t, t)}`} THEN UPDATE SET ${sets.join(', ')}`;
      sql += cols.length ? ` WHEN NOT MATCHED THEN INSERT (${cols.map(q).join(', ')}) VALUES (${cols.map((c) => `_s.${q(c)}`).join(', ')})` : ' WHEN NOT MATCHED THEN INSERT DEFAULT VALUES';
      sql += ` OUTPUT $action, INSERTED.* INTO ${W}`;
      this.statements.push(sql);
    }
  }

  update(ir: UpdateIR) {
    this.prepare(ir.table);
    this.updateCheck = ir.check;
    const t = this.alias();
    const sets = ir.set.map((s) => this.setClause(s, t));
    if (sets.length === 0) throw new UnsupportedQuery('an update that sets nothing');
    this.statements.push(`UPDATE ${t} SET ${sets.join(', ')} OUTPUT N'UPDATE', INSERTED.* INTO ${W} FROM ${this.table(ir.table)} AS ${t} WHERE ${this.bool(ir.where, t, t)}`);
  }

  delete(ir: DeleteIR) {
    this.prepare(ir.table);
    const t = this.alias();
    this.statements.push(`DELETE ${t} OUTPUT N'DELETE', DELETED.* INTO ${W} FROM ${this.table(ir.table)} AS ${t} WHERE ${this.bool(ir.where, t, t)}`);
  }

  /** The THROW of a failed check (Note [T-SQL mutations]); none when every check holds. */
  check() {
    const t = this.alias();
    const holds = (c: BoolIR | undefined) => c === undefined || c.t === 'true';
    if (holds(this.insertCheck) && holds(this.updateCheck)) return;
    const of = (c: BoolIR | undefined) => (holds(c) ? TRUE : this.bool(c!, t, t));
    const ok =
      this.insertCheck === undefined
        ? of(this.updateCheck)
        : this.updateCheck === undefined
          ? of(this.insertCheck)
          : `((${t}.[__svc_action] = N'INSERT' AND ${of(this.insertCheck)}) OR (${t}.[__svc_action] = N'UPDATE' AND ${of(this.updateCheck)}))`;
    this.statements.push(`IF EXISTS (SELECT 1 FROM ${W} AS ${t} WHERE CASE WHEN ${ok} THEN 1 ELSE 0 END = 0) THROW 51000, N'${CHECK_MARK}', 1`);
  }

  /** The field's value from the written rows. */
  output(out: MutationOutput): string {
    if (out.k === 'single') {
      const t = this.alias();
      return `ISNULL((SELECT TOP (1) ${this.object(out.select, t)} FROM ${W} AS ${t}${this.filterWhere(out.filter, t)} ${FOR_JSON_OBJECT}), N'null')`;
    }
    const parts = out.fields.map((f) => {
      if (f.k === 'typename') return `${nlit(f.name)} AS ${q(f.key)}`;
      if (f.k === 'affected_rows') return `(SELECT COUNT(*) FROM ${W}) AS ${q(f.key)}`;
      const t = this.alias();
      return `JSON_QUERY(ISNULL((SELECT ${this.object(f.select, t)} FROM ${W} AS ${t}${this.filterWhere(f.filter, t)} ${FOR_JSON_LIST}), N'[]')) AS ${q(f.key)}`;
    });
    return `(SELECT ${parts.join(', ')} ${FOR_JSON_OBJECT})`;
  }
}

export function compileMutation(ir: MutationIR): CompiledQuery {
  const c = new MutationCompiler();
  if (ir.k === 'insert') c.insert(ir.insert);
  else if (ir.k === 'update') c.update(ir);
  else if (ir.k === 'delete') c.delete(ir);
  // Offered only where the kind says it compiles them (Dialect.updateKeyText).
  else throw new Error(`${ir.k} is not compiled for SQL Server`);
  c.check();
  const json = c.output(ir.output);
  const sql = ['SET NOCOUNT ON', 'SET XACT_ABORT ON', 'BEGIN TRANSACTION', ...c.statements, `SELECT ${json} AS [json]`, `DROP TABLE ${W}`, 'COMMIT TRANSACTION'].join('; ') + ';';
  return { sql, params: c.params };
}
