/**
 * A source kind, as a template: "memory". A database that lives in the server's memory, so that
 * every member of the source-kind contract (plugins/database/model/types.ts, SourceKind) can be
 * read in one file without a real database behind it. docs/source-kinds.md explains each member.
 *
 * - Configuration (`memory_add_source`): the tables, their columns, primary and foreign keys and
 *   first rows. The rows are copied into the connection; they live as long as it does (a new
 *   configuration is a new connection, with the configured rows again).
 * - Driver: `connect` gives a SourceConnection whose introspection reports the configured tables,
 *   and whose executor runs the statements this kind's dialect compiles.
 * - Dialect: four scalar types (`int`, `float`, `text`, `boolean`), no operators of its own (the
 *   framework's generic ones: `_eq`, `_neq`, `_gt`, `_in`, `_is_null`, `_ceq`...), default schema
 *   `main`, and a compiler from the query IR (plugins/database/ir/types.ts) to a *plan*: a JSON
 *   document that the executor interprets. A real kind compiles to its SQL instead; the
 *   contract is the same (one statement per root field whose one row has the field's JSON text
 *   as `json`; every value a bind parameter; Note [Values in the IR]).
 *
 * What the plans support: rows filtered by boolean expressions (and, or, not, the generic
 * comparison operators, column comparisons, relationships, `_exists`), ordered by columns, with
 * limit and offset (and a permission's limit); objects of columns, `__typename` and object and
 * array relationships; `_by_pk`; `_aggregate` with `count` and `nodes`. Anything else (distinct
 * on, order by a relationship or an aggregate, computed fields, functions, JSON paths, streams)
 * is refused when the field is planned, which the framework answers as `not-supported`.
 * No `compileMutation` (so no mutation root fields), no multiplexed statements (subscriptions
 * answer not-supported), no `listen`.
 *
 * A third party imports the framework only through plugins/database/index.ts (and the kernel
 * through core/), as plugins/postgres does.
 */
import * as v from '../../core/valibot.js';
import { definePlugin } from '../../core/plugin.js';
import {
  DatabaseToken,
  tableKey,
  type AggregateIR,
  type BoolIR,
  type ColumnInfo,
  type ColumnType,
  type CompiledQuery,
  type Dialect,
  type Introspection,
  type ObjectIR,
  type ParamSource,
  type QualifiedTable,
  type RootIR,
  type RowsIR,
  type ScalarType,
  type SourceConnection,
  type SourceKind,
  type SqlExecutor,
  type SqlTransaction,
  type TableInfo,
  type Value,
} from '../../plugins/database/index.js';

// ---------------------------------------------------------------------------------------------
// Configuration

const TYPES = ['int', 'float', 'text', 'boolean'] as const;
type MemoryType = (typeof TYPES)[number];

/** The schema of unqualified names: tables are `{schema, name}` in the framework (see
 * docs/source-kinds.md, "Where PostgreSQL still leaks into the framework"). */
const DEFAULT_SCHEMA = 'main';

const name = v.pipe(v.string(), v.minLength(1, 'empty string not allowed'));
const TableConfig = v.object({
  schema: v.optional(name, DEFAULT_SCHEMA),
  name,
  columns: v.array(v.object({ name, type: v.picklist(TYPES, `expected one of ${TYPES.join(', ')}`), nullable: v.optional(v.boolean(), true) })),
  primary_key: v.optional(v.array(name)),
  foreign_keys: v.optional(v.array(v.object({ columns: v.array(name), table: name, ref_columns: v.array(name) }))),
  rows: v.optional(v.array(v.record(v.string(), v.unknown())), []),
});
/** `configuration` of a memory source, as `memory_add_source` takes it (and the metadata keeps it). */
export const MemoryConfigSchema = v.object({ tables: v.array(TableConfig) });
type MemoryConfig = v.InferOutput<typeof MemoryConfigSchema>;

// ---------------------------------------------------------------------------------------------
// Dialect: scalars

const integer = (x: unknown) => typeof x === 'number' && Number.isInteger(x);
const SCALARS: Record<MemoryType, ScalarType> = {
  int: { name: 'int', category: 'numeric', graphql: 'Int', comparable: true, bindAs: 'int', parse: (x) => (integer(x) ? undefined : 'expected an integer') },
  float: { name: 'float', category: 'numeric', graphql: 'Float', comparable: true, bindAs: 'float', parse: (x) => (typeof x === 'number' ? undefined : 'expected a number') },
  text: { name: 'text', category: 'string', graphql: 'String', comparable: true, bindAs: 'text', parse: (x) => (typeof x === 'string' ? undefined : 'expected a string') },
  boolean: { name: 'boolean', category: 'boolean', graphql: 'Boolean', comparable: true, bindAs: 'boolean', parse: (x) => (typeof x === 'boolean' ? undefined : 'expected a boolean') },
};

const columnType = (type: MemoryType): ColumnType => ({ type, udt: type, typeSchema: 'memory', typeKind: 'base' });

// ---------------------------------------------------------------------------------------------
// Dialect: the compiler. IR -> a plan (JSON), run by the executor below.

/** A value of a plan: the bind parameter `p` (0-based), read as the type `as` (a ScalarType's
 * `bindAs`), or as JSON (`json`: a list operand). Values are never written into the plan. */
type Param = { p: number; as: string; json?: boolean };
/** Join columns: pairs (this row's column, the related row's). */
type Mapping = readonly (readonly [string, string])[];
type Cond =
  | { t: 'const'; v: boolean }
  | { t: 'and' | 'or'; of: Cond[] }
  | { t: 'not'; e: Cond }
  | { t: 'cmp'; column: string; op: string; value: Param }
  | { t: 'is_null'; column: string; value: Param | boolean }
  /** `column <op> other`, where `other` is a column of this row or (`root`) of the permission's row. */
  | { t: 'ccmp'; column: string; op: string; other: string; root: boolean }
  /** Some row of `table` matches `e` (joined by `mapping`, pairs (own, remote), when given). */
  | { t: 'some'; table: string; mapping?: Mapping; e: Cond };
type Rows = { table: string; where: Cond; order: { column: string; desc: boolean; nullsFirst: boolean }[]; limit?: Param; cap?: number; offset?: Param };
type Obj = { fields: [string, Field][] };
/** An object or array relationship's rows: those of `rows` joined to the row by `mapping`. */
type Related = { mapping: Mapping; rows: Rows; select: Obj };
type Agg = { k: 'aggregate'; mapping?: Mapping; rows: Rows; parts: [string, AggPart][] };
type Field = { k: 'column'; column: string; asText?: boolean } | { k: 'const'; value: string } | ({ k: 'object' } & Related) | ({ k: 'array' } & Related) | Agg;
type AggPart = { k: 'const'; value: string } | { k: 'nodes'; select: Obj } | { k: 'count'; parts: [string, { k: 'const'; value: string } | { k: 'count' }][] };
type Plan = { memory: 1; root: { k: 'list' | 'single'; rows: Rows; select: Obj } | { k: 'aggregate'; agg: Agg } };
/** The statement of an enum table's values (Dialect.enumTable.valuesQuery). */
type EnumValues = { memory: 1; enum: string; key: string; comment: string | null };

const DESC = new Set(['desc', 'desc_nulls_first', 'desc_nulls_last']);
const NULLS_FIRST = new Set(['asc_nulls_first', 'desc', 'desc_nulls_first']);
const CMP = new Set(['eq', 'ne', 'gt', 'lt', 'gte', 'lte', 'in', 'nin']);

class Unsupported extends Error {
  constructor(what: string) {
    super(`the memory source kind does not support ${what}`);
  }
}

class MemoryCompiler {
  readonly params: ParamSource[] = [];

  /** A bind parameter: the IR's value is recorded as the framework's ParamSource, and the plan
   * refers to it by position (Note [Values in the IR] in plugins/database/ir/types.ts). */
  param(v: Value, as: string, json = false): Param {
    if (v.k === 'object' || v.k === 'session_json') throw new Unsupported(`a value of kind ${v.k}`);
    this.params.push(json ? { ...v, json: true } : v);
    return { p: this.params.length - 1, as, ...(json ? { json: true } : {}) };
  }

  bool(e: BoolIR): Cond {
    switch (e.t) {
      case 'true':
      case 'false':
        return { t: 'const', v: e.t === 'true' };
      case 'and':
      case 'or':
        return { t: e.t, of: e.of.map((x) => this.bool(x)) };
      case 'not':
        return { t: 'not', e: this.bool(e.e) };
      case 'cmp': {
        if (e.cast) throw new Unsupported('_cast');
        // Hasura v2: a comparison with a null literal is no condition (`{_eq: null}` matches all).
        if (e.value.k === 'lit' && e.value.v === null) return { t: 'const', v: true };
        if (e.op === 'is_null') return { t: 'is_null', column: e.column, value: e.value.k === 'lit' ? e.value.v === true : this.param(e.value, 'boolean') };
        if (!CMP.has(e.op)) throw new Unsupported(`the operator _${e.op}`);
        const many = e.op === 'in' || e.op === 'nin';
        return { t: 'cmp', column: e.column, op: e.op, value: this.param(e.value, e.scalar.bindAs, many) };
      }
      case 'ccmp':
        return { t: 'ccmp', column: e.column, op: e.op, other: e.other, root: e.root };
      case 'rel':
        return { t: 'some', table: key(e.remote), mapping: e.mapping, e: this.bool(e.e) };
      case 'exists':
        return { t: 'some', table: key(e.table), e: this.bool(e.e) };
      default:
        throw new Unsupported('computed fields');
    }
  }

  rows(r: RowsIR): Rows {
    if (r.from) throw new Unsupported('functions');
    if (r.distinctOn?.length) throw new Unsupported('distinct_on');
    const order = r.orderBy.map((o) => {
      if (o.path.length || o.call || o.agg) throw new Unsupported('order_by through relationships, computed fields or aggregates');
      return { column: o.column, desc: DESC.has(o.dir), nullsFirst: NULLS_FIRST.has(o.dir) };
    });
    const out: Rows = { table: key(r.table), where: this.bool(r.where), order };
    if (r.limit) out.limit = this.param(r.limit, 'int');
    if (r.limitCap !== undefined) out.cap = r.limitCap;
    if (r.offset) out.offset = this.param(r.offset, 'int');
    return out;
  }

  object(o: ObjectIR): Obj {
    return {
      fields: o.fields.map((f): [string, Field] => {
        switch (f.k) {
          case 'column':
            if (f.path) throw new Unsupported('JSON paths');
            return [f.key, { k: 'column', column: f.column, ...(f.asText ? { asText: true } : {}) }];
          case 'typename':
            return [f.key, { k: 'const', value: f.name }];
          case 'object':
          case 'array':
            return [f.key, { k: f.k, mapping: f.mapping, rows: this.rows(f.rows), select: this.object(f.select) } as Field];
          case 'array_aggregate':
            return [f.key, this.aggregate(f.agg, f.mapping)];
          default:
            throw new Unsupported('computed fields');
        }
      }),
    };
  }

  aggregate(g: AggregateIR, mapping?: Mapping): Agg {
    const parts = g.fields.map((f): [string, AggPart] => {
      if (f.k === 'typename') return [f.key, { k: 'const', value: f.name }];
      if (f.k === 'nodes') return [f.key, { k: 'nodes', select: this.object(f.select) }];
      return [
        f.key,
        {
          k: 'count',
          parts: f.fields.map((op): [string, { k: 'const'; value: string } | { k: 'count' }] => {
            if (op.k === 'typename') return [op.key, { k: 'const', value: op.name }];
            if (op.k !== 'count' || op.columns?.length) throw new Unsupported(`the aggregate ${op.k === 'count' ? 'count of columns' : op.fn}`);
            return [op.key, { k: 'count' }];
          }),
        },
      ];
    });
    return { k: 'aggregate', ...(mapping ? { mapping } : {}), rows: this.rows(g.rows), parts };
  }
}

const key = (t: QualifiedTable) => tableKey(t.schema, t.name);

/** Dialect.compileSelect: the root field's plan, as the "SQL text" the executor receives. */
function compileSelect(ir: RootIR, opts: { multiplexed?: boolean } = {}): CompiledQuery {
  // Without `batch` in the answer the framework answers subscriptions `not-supported`; a stream's
  // cursor is refused here for the same reason.
  if (opts.multiplexed || (ir.k === 'select' && ir.cursor)) throw new Unsupported('subscriptions');
  // Grouped aggregates are offered only by a dialect with `groups`, which this one has not.
  if (ir.k === 'groups') throw new Unsupported('grouped aggregates');
  const c = new MemoryCompiler();
  const root: Plan['root'] = ir.k === 'aggregate' ? { k: 'aggregate', agg: c.aggregate(ir.agg) } : { k: ir.single ? 'single' : 'list', rows: c.rows(ir.rows), select: c.object(ir.select) };
  return { sql: JSON.stringify({ memory: 1, root } satisfies Plan), params: c.params };
}

export const memoryDialect: Dialect = {
  defaultSchema: DEFAULT_SCHEMA,
  quoteIdent: (id) => JSON.stringify(id),
  scalar: (t) => SCALARS[t.udt as MemoryType] ?? { ...SCALARS.text, name: t.udt, comparable: false },
  operators: {},
  // Its compiler counts rows and nothing else, so it offers no aggregate function (`sum`, `max`...:
  // Note [Aggregates of a kind] in plugins/database); without this the defaults would be offered
  // and refused when planned.
  aggregates: {},
  sessionArgument: () => false,
  enumTable: {
    isText: (t) => t.udt === 'text',
    valuesQuery: (table, keyColumn, comment) => JSON.stringify({ memory: 1, enum: key(table), key: keyColumn, comment: comment ?? null }),
  },
  compileSelect,
  // A bad value (a session variable that is not a number) is the client's data exception; any
  // other failure is left to the framework's default (`unexpected`, with the message).
  classifyError: (e) => (e instanceof MemoryError && e.reason === 'bad-value' ? { code: 'data-exception' } : undefined),
};

// ---------------------------------------------------------------------------------------------
// Driver: the executor interprets plans

type Row = Record<string, unknown>;
type Store = Map<string, Row[]>;

/** An error of this kind, with its own reason: the dialect says what each means to the client
 * (`classifyError`, Note [Database errors] in plugins/database/schema/plan.ts). A kind may also
 * throw an SvcError (core/errors.ts), which passes on unchanged. */
class MemoryError extends Error {
  constructor(
    message: string,
    readonly reason: 'bad-value' | 'no-table' | 'not-a-plan',
  ) {
    super(message);
  }
}

/** A parameter's text (as the framework binds it: `paramText`) as a value of the plan's type. */
function read(text: unknown, p: Param): unknown {
  if (text === null || text === undefined) return null;
  const s = String(text);
  if (p.json) {
    let list: unknown;
    try {
      list = JSON.parse(s);
    } catch {
      throw new MemoryError(`invalid input syntax for a list: "${s}"`, 'bad-value');
    }
    // Each item as a value of the column's type, as a database casts the items of a list.
    const item = { p: p.p, as: p.as };
    return Array.isArray(list) ? list.map((e) => (e === null ? null : read(typeof e === 'string' ? e : JSON.stringify(e), item))) : list;
  }
  if (p.as === 'int' || p.as === 'float') {
    const n = Number(s);
    if (s.trim() === '' || !Number.isFinite(n) || (p.as === 'int' && !Number.isInteger(n))) throw new MemoryError(`invalid input syntax for type ${p.as}: "${s}"`, 'bad-value');
    return n;
  }
  if (p.as === 'boolean') {
    if (s !== 'true' && s !== 'false') throw new MemoryError(`invalid input syntax for type boolean: "${s}"`, 'bad-value');
    return s === 'true';
  }
  return s;
}

/** SQL's order of values: numbers, strings (by code unit) and booleans; null is handled apart. */
const compare = (a: unknown, b: unknown): number => (a === b ? 0 : (a as number) < (b as number) ? -1 : 1);

/** Runs one plan over a store with its parameters' texts. Conditions are three-valued as in SQL
 * (null: unknown), so that `_not` of a comparison with null keeps the row out. */
function execute(plan: Plan, params: readonly unknown[], store: Store): string {
  const value = (p: Param) => read(params[p.p], p);
  const rowsOf = (table: string) => {
    const rows = store.get(table);
    if (!rows) throw new MemoryError(`relation ${table} does not exist`, 'no-table');
    return rows;
  };
  const test = (c: Cond, row: Row, root: Row): boolean | null => {
    switch (c.t) {
      case 'const':
        return c.v;
      case 'and':
      case 'or': {
        let unknown = false;
        for (const x of c.of) {
          const r = test(x, row, root);
          if (r === null) unknown = true;
          else if (r === (c.t === 'or')) return r;
        }
        return unknown ? null : c.t === 'and';
      }
      case 'not': {
        const r = test(c.e, row, root);
        return r === null ? null : !r;
      }
      case 'is_null': {
        const want = typeof c.value === 'boolean' ? c.value : value(c.value);
        return want === null ? null : (row[c.column] === null || row[c.column] === undefined) === want;
      }
      case 'cmp':
        return cmp(c.op, row[c.column], value(c.value));
      case 'ccmp':
        return cmp(c.op.slice(1), row[c.column], (c.root ? root : row)[c.other]);
      case 'some':
        return rowsOf(c.table).some((r) => (!c.mapping || joined(c.mapping, row, r)) && test(c.e, r, root) === true);
    }
  };
  const cmp = (op: string, a: unknown, b: unknown): boolean | null => {
    if (a === null || a === undefined || b === null) return null;
    if (op === 'in' || op === 'nin') {
      if (!Array.isArray(b)) throw new MemoryError(`expected a list for _${op}`, 'bad-value');
      return b.includes(a) === (op === 'in');
    }
    const d = compare(a, b);
    return op === 'eq' ? d === 0 : op === 'ne' ? d !== 0 : op === 'gt' ? d > 0 : op === 'lt' ? d < 0 : op === 'gte' ? d >= 0 : d <= 0;
  };
  const joined = (mapping: Mapping, own: Row, remote: Row) => mapping.every(([o, r]) => own[o] !== null && own[o] === remote[r]);
  const select = (r: Rows, parent?: { row: Row; mapping: Mapping }): Row[] => {
    let out = rowsOf(r.table).filter((row) => (!parent || joined(parent.mapping, parent.row, row)) && test(r.where, row, row) === true);
    if (r.order.length) {
      out = [...out].sort((a, b) => {
        for (const o of r.order) {
          const x = a[o.column] ?? null;
          const y = b[o.column] ?? null;
          if (x === null || y === null) {
            if (x !== y) return (x === null) === o.nullsFirst ? -1 : 1;
            continue;
          }
          const d = compare(x, y);
          if (d) return o.desc ? -d : d;
        }
        return 0;
      });
    }
    const offset = r.offset ? ((value(r.offset) as number | null) ?? 0) : 0;
    const given = r.limit ? (value(r.limit) as number | null) : null;
    const limit = given === null ? r.cap : Math.min(given, r.cap ?? given);
    return out.slice(offset, limit === undefined ? undefined : offset + limit);
  };
  const object = (o: Obj, row: Row): Row => {
    const out: Row = {};
    for (const [k, f] of o.fields) {
      if (f.k === 'column') out[k] = f.asText && row[f.column] != null ? String(row[f.column]) : (row[f.column] ?? null);
      else if (f.k === 'const') out[k] = f.value;
      else if (f.k === 'object') out[k] = select(f.rows, { row, mapping: f.mapping }).map((r) => object(f.select, r))[0] ?? null;
      else if (f.k === 'array') out[k] = select(f.rows, { row, mapping: f.mapping }).map((r) => object(f.select, r));
      else out[k] = aggregate(f, row);
    }
    return out;
  };
  const aggregate = (f: Agg, row?: Row): Row => {
    // A permission's limit caps the nodes, not the rows counted (as Hasura counts them).
    const rows = select({ ...f.rows, cap: undefined }, f.mapping && row ? { row, mapping: f.mapping } : undefined);
    const out: Row = {};
    for (const [k, p] of f.parts) {
      if (p.k === 'const') out[k] = p.value;
      else if (p.k === 'nodes') out[k] = rows.slice(0, f.rows.cap).map((r) => object(p.select, r));
      else out[k] = Object.fromEntries(p.parts.map(([ck, c]) => [ck, c.k === 'const' ? c.value : rows.length]));
    }
    return out;
  };
  const root = plan.root;
  if (root.k === 'aggregate') return JSON.stringify(aggregate(root.agg));
  const rows = select(root.rows).map((r) => object(root.select, r));
  return JSON.stringify(root.k === 'single' ? (rows[0] ?? null) : rows);
}

/** The executor: a statement is a plan this kind's dialect compiled (JSON). Anything else is a
 * statement the framework wrote in PostgreSQL's terms, which this kind cannot run. */
function executor(store: Store): SqlExecutor {
  // Plans are parsed once per text, as a database prepares a statement once (`prepare`).
  const prepared = new Map<string, Plan | EnumValues>();
  return {
    async query<T>(text: string, params: unknown[] = []): Promise<T[]> {
      let plan = prepared.get(text);
      if (!plan) {
        let parsed: Partial<Plan | EnumValues> | undefined;
        try {
          parsed = JSON.parse(text) as Partial<Plan | EnumValues>;
        } catch {
          throw new MemoryError(`the memory source runs only its own plans, not: ${text.slice(0, 60)}`, 'not-a-plan');
        }
        if (parsed?.memory !== 1) throw new MemoryError('not a plan of the memory source', 'not-a-plan');
        plan = parsed as Plan | EnumValues;
        if (prepared.size < 1000) prepared.set(text, plan);
      }
      if ('enum' in plan) {
        const p = plan;
        return store.get(p.enum)!.map((r) => ({ value: String(r[p.key]), comment: p.comment === null ? null : ((r[p.comment] as string | null) ?? null) })) as T[];
      }
      return [{ json: execute(plan, params, store) }] as T[];
    },
  };
}

/** What introspection reports of a configured table. `oid`: a stable number per table (the
 * framework follows renames by it; a kind without identities of its own has to make some up). */
function tableInfo(t: MemoryConfig['tables'][number], oid: number): TableInfo {
  const columns: ColumnInfo[] = t.columns.map((c, i) => ({
    name: c.name,
    position: i + 1,
    ...columnType(c.type),
    nullable: c.nullable,
    hasDefault: false,
    isIdentity: false,
    isGenerated: false,
    description: null,
  }));
  return {
    schema: t.schema,
    name: t.name,
    oid,
    relation: 'table',
    columns,
    primaryKey: t.primary_key?.length ? { name: `${t.name}_pkey`, columns: t.primary_key } : null,
    uniqueConstraints: [],
    foreignKeys: (t.foreign_keys ?? []).map((fk, i) => ({ name: `${t.name}_fk${i}`, columns: fk.columns, refSchema: t.schema, refTable: fk.table, refColumns: fk.ref_columns })),
    description: null,
    viewInfo: null,
  };
}

/** SourceKind.connect: one connection per source and configuration (the framework keeps it while
 * the configuration is unchanged and closes it when the source is dropped or reconfigured). */
function connect(_source: string, configuration: Record<string, unknown>): SourceConnection {
  // `memory_add_source` checked it with configSchema, but replace_metadata keeps a source's
  // configuration as given: parse it again (an error here makes the source inconsistent).
  const config: MemoryConfig = v.parse(MemoryConfigSchema, configuration);
  const store: Store = new Map(config.tables.map((t) => [key(t), t.rows.map((r) => ({ ...r }))]));
  const exec = executor(store);
  // No isolation: a statement runs at once. A kind with transactions opens one here.
  const transaction = async (): Promise<SqlTransaction> => ({ query: exec.query, commit: async () => {}, rollback: async () => {} });
  return {
    executor: exec,
    introspect: async () => {
      const tables = new Map(config.tables.map((t, i) => [key(t), tableInfo(t, i + 1)] as const));
      return { tables, functions: new Map(), types: new Map() } satisfies Introspection;
    },
    transaction,
    // `POST /v1/graphql/explain`: what the plan does, as this kind can say it.
    explain: async (sql) => {
      const plan = JSON.parse(sql) as Plan;
      const rows = plan.root.k === 'aggregate' ? plan.root.agg.rows : plan.root.rows;
      return [`memory plan: ${plan.root.k} of ${rows.table}`, `filter: ${JSON.stringify(rows.where)}`];
    },
    ping: async () => {},
    close: async () => {
      store.clear();
    },
  };
}

export const memoryKind: SourceKind = {
  kind: 'memory',
  prefix: 'memory',
  legacy: false,
  configSchema: MemoryConfigSchema,
  connect,
  dialect: memoryDialect,
};

export default definePlugin({
  name: 'memory-source',
  after: ['database'],
  setup(k) {
    // Registers `memory_add_source`, `memory_track_table`, `memory_create_select_permission`...:
    // every command group of the framework, bound to this kind.
    k.use(DatabaseToken).registerKind(memoryKind);
  },
});
