/**
 * The legacy data operations on /v1/query (`select`, `count`, `insert`, `update`, `delete`):
 * their Hasura arguments -> the query IR (ir/types.ts) with the role's permissions folded in
 * exactly as the GraphQL path folds them (the compiled permissions of the resolved model) -> one
 * statement of the source's dialect. No second SQL generator: `select` and `count` compile with
 * `compileSelect`, the writes with `compileMutation`. See Note [Legacy data operations in a
 * request] and Note [Legacy update and delete].
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import { JsonText, type OperationContext, type OperationDef } from '../../../core/plugin.js';
import type { BoolIR, ColumnValue, Redaction, CompiledQuery, FieldIR, InsertIR, InsertRowIR, MutationField, MutationIR, MutationOutput, ObjectIR, OrderDir, OrderItem, RootIR, RowsIR, UpdateIR, UpdateOp, Value } from '../ir/types.js';
import { BoolExpError, checkBoolExp, dquote, type SourceView } from '../model/boolexp.js';
import { findTable, qtDisplay, qtKey, requireSource, SourceNameSchema, type QualifiedNameSchema } from '../model/meta.js';
import { compileStoredBoolExp, resolveTableModel, UnsupportedFilter, type ModelContext, type ResolvedRelationship, type SelectPermissionIR, type TableModel, type UpdatePermissionIR } from '../model/resolved.js';
import type { DatabaseService } from '../model/service.js';
import type { CommandGroup, Dialect, Introspection, KindBinding, QualifiedTable, ScalarType, SourceKind, SourceMeta, SqlExecutor, TableInfo, TableMeta } from '../model/types.js';
import type { ResolvedSource } from '../model/resolved.js';
import { dbError as planDbError, paramText } from '../schema/plan.js';

/*
 * Note [Legacy data operations in a request]
 * Conformance setups run `insert` in the bulk that creates the table (run_sql) and tracks it, so
 * these operations read the request's draft: the table entry of the draft metadata, and the
 * request's own introspection when it holds a transaction on the source (SQL ran before). The
 * committed build's resolved model is reused when the draft's entry is that build's very object
 * and the request ran no SQL on the source (Note [Sharing]): the common case costs no resolving.
 * Statements run in the request's transaction when it has one (so a `select` after an `insert`
 * in a bulk sees the rows); the writes (`insert`, `update`, `delete`) always open it
 * (DatabaseService.transaction), so what they write is committed with the request's unit of
 * work, or rolled back with it when a later item of the bulk fails: a bulk of these operations
 * is one transaction from its first write on (a `select` before any write reads the committed
 * data, which is all there is then). None of them changes metadata: `mutates: false`, no
 * metadata lock.
 *
 * Note [Legacy update and delete]
 * Hasura v2's `validateUpdateQueryWith` and `validateDeleteQWith`, in their order: the table; a
 * view must be updatable (deletable); the role's update (delete) permission; its select
 * permission, which both need whatever they ask (the `where` reads columns); for an update
 * `$set` (alias `values`), `$inc`, `$mul`, `$default`, each column checked against the
 * permission's presets (a preset column cannot be given), its columns and the table; then
 * `returning` (column names the role may select); no SET item at all is refused (the presets
 * count); then `where`, checked against the select columns like `select`'s. The statement
 * updates (deletes) the rows of `where` AND the permission's filter; an update's check is on the
 * new rows, and a row that fails it fails the request with nothing written. Hasura's SET items
 * are a map (a column given in two operators silently keeps the last one): here it is refused,
 * naming the columns and their operators as the GraphQL schema's message does, rather than
 * guessing which one was meant. A permission's `backend_only` is not looked at here: it decides
 * what the GraphQL schema offers, and Hasura's legacy operations ignore it too.
 */

const TRUE: BoolIR = { t: 'true' };
function and(a: BoolIR, b: BoolIR): BoolIR {
  if (a.t === 'true') return b;
  if (b.t === 'true') return a;
  return { t: 'and', of: [a, b] };
}

const denied = (message: string, path = '$.args') => new SvcError('permission-denied', message, { path });
const payload = (message: string, path = '$.args') => new SvcError('unexpected-payload', message, { path });

// ---------------------------------------------------------------------------------------------
// The tables of one source as the request sees them

type Ref = { meta: TableMeta; info: TableInfo };

class Scope {
  private readonly models = new Map<string, TableModel | null>();
  readonly modelCtx: ModelContext;
  readonly view: SourceView;

  constructor(
    readonly source: SourceMeta,
    readonly kind: SourceKind,
    private readonly committed: ResolvedSource | undefined,
    readonly intro: Introspection,
    /** Whether the request ran SQL on the source (its introspection is its own). */
    private readonly dirty: boolean,
    readonly session: OperationContext['session'],
  ) {
    // Lookups only (compileStoredBoolExp asks `get`): no map of every tracked table per request.
    const tracked = { get: (key: string) => this.ref(key) } as unknown as ModelContext['tracked'];
    this.modelCtx = { dialect: kind.dialect, introspection: intro, tracked, inconsistentRelationships: new Set(), inconsistentSelectRoles: new Set() };
    this.view = {
      table: (qt) => {
        const meta = findTable(this.source, qt);
        return meta && { meta, info: intro.tables.get(qtKey(qt)) };
      },
      functions: intro.functions,
      strict: true,
      dialect: kind.dialect,
    };
  }

  get role(): string {
    return this.session.role;
  }
  get admin(): boolean {
    return this.session.isAdmin;
  }

  /** A tracked table with its introspection, by key. */
  ref(key: string): Ref | undefined {
    const meta = this.source.tables.find((t) => qtKey(t.table) === key);
    const info = meta && this.intro.tables.get(key);
    return meta && info ? { meta, info } : undefined;
  }

  model(qt: QualifiedTable): TableModel | undefined {
    const key = qtKey(qt);
    let m = this.models.get(key);
    if (m !== undefined) return m ?? undefined;
    const ref = this.ref(key);
    if (!ref) m = null;
    else {
      const rt = this.committed?.tables.get(key);
      m = !this.dirty && rt?.model && rt.meta === ref.meta ? rt.model : resolveTableModel(ref.meta, ref.info, this.modelCtx);
    }
    this.models.set(key, m);
    return m ?? undefined;
  }

  /** How messages name a table of the source (its kind's default schema left out). */
  display(qt: QualifiedTable): string {
    return qtDisplay(qt, this.kind.dialect.defaultSchema);
  }

  /** The table an operation names (Hasura's message when it is not tracked). */
  table(qt: QualifiedTable): TableModel {
    const m = this.model(qt);
    if (!m) throw new SvcError('not-exists', `table ${dquote(this.display(qt))} does not exist`, { path: '$.args.table' });
    return m;
  }

  /** The role's select permission (undefined for admin); a role without one is refused. */
  selectPerm(m: TableModel, path = '$.args'): SelectPermissionIR | undefined {
    if (this.admin) return undefined;
    const p = m.select.get(this.role);
    if (!p) throw denied(`select on ${dquote(this.display(m.table))} for role ${dquote(this.role)} is not allowed.`, path);
    return p;
  }

  /** Hasura's `checkPermOnCol`: an admin is told the column does not exist, a role that it may not use it. */
  column(m: TableModel, name: string, allowed: ReadonlySet<string> | undefined, perm: string, path: string) {
    const col = m.columnsByName.get(name);
    if (col && (!allowed || allowed.has(name))) return col;
    if (this.admin) throw denied(`no such column exists : ${dquote(name)}`, path);
    throw denied(`role ${dquote(this.role)} does not have permission to ${perm} column ${dquote(name)}`, path);
  }
}

/** The scope of a request on the source it names (Hasura's DMLQuery `source`, `default` when
 * absent). A source of another kind than the one owning the legacy operations never gets here:
 * to them it does not exist (Note [Operations of a kind] in model/service.ts). */
async function scopeFor(db: DatabaseService, ctx: OperationContext, sourceName: string): Promise<Scope> {
  const source = requireSource(ctx.metadata, sourceName);
  const kind = db.kindOf(source);
  const dirty = db.inTransaction(ctx.uow, sourceName);
  const intro = await db.introspection(ctx, sourceName);
  const committed = db.resolved(ctx.current).sources.get(sourceName);
  return new Scope(source, kind, committed, intro, dirty, ctx.session);
}

/** The request's transaction on the source when it has one (or `always`), else the pool. */
async function executor(db: DatabaseService, ctx: OperationContext, s: Scope, always: boolean): Promise<SqlExecutor> {
  if (always || db.inTransaction(ctx.uow, s.source.name)) return db.transaction(ctx, s.source.name);
  return db.connection(s.source).executor;
}

async function run<T extends Record<string, unknown>>(exec: SqlExecutor, q: CompiledQuery, s: Scope): Promise<T> {
  const rc = { session: s.session, variables: {}, headers: {} };
  let params: (string | null)[];
  try {
    params = q.params.map((p) => paramText(p, rc, {}));
  } catch (e) {
    // A session variable the request lacks: Hasura's 400 `not-found` (the code's default status
    // is the route's 404, which this is not).
    if (e instanceof SvcError && e.code === 'not-found') throw new SvcError('not-found', e.message, { status: 400 });
    throw e;
  }
  try {
    return (await exec.query<T>(q.sql, params))[0]!;
  } catch (e) {
    throw dbError(e, s.kind.dialect);
  }
}

/** A database error in Hasura's words, at `$.args` (Note [Database errors] in schema/plan.ts). */
const dbError = (e: unknown, dialect: Dialect): SvcError => planDbError(e, dialect, '$.args', 'query execution failed');

// ---------------------------------------------------------------------------------------------
// Boolean expressions, order_by, columns -> IR

/** A request's `where` on `m` -> IR; for a role, checked against its select columns and with the
 * select filter of every table it reaches through a relationship or `_exists` folded in. */
function whereIR(s: Scope, exp: unknown, m: TableModel, path: string): BoolIR {
  if (exp === undefined || exp === null) return TRUE;
  try {
    const refs = checkBoolExp(exp, m.table, s.view);
    if (!s.admin) {
      for (const r of refs) {
        if (r.kind !== 'column') continue;
        const rm = s.model(r.table);
        if (!rm) continue;
        s.column(rm, r.column, s.selectPerm(rm, path)?.columns, 'select', path);
      }
    }
  } catch (e) {
    if (!(e instanceof BoolExpError)) throw e;
    throw new SvcError(/does not exist/.test(e.message) ? 'not-exists' : 'unexpected-payload', e.message.trim(), { path });
  }
  const ref = s.ref(m.key)!;
  let ir: BoolIR;
  try {
    ir = compileStoredBoolExp(exp, ref, ref, s.modelCtx);
  } catch (e) {
    if (e instanceof UnsupportedFilter) throw new SvcError('not-supported', `this boolean expression is not supported yet: ${e.message}`, { path });
    throw e;
  }
  return s.admin ? ir : foldFilters(s, ir, path, m.select.get(s.role)?.redact);
}

/** Adds the role's select filter of the remote table to every relationship and `_exists` step;
 * an inherited role's comparisons read a redacted column as the role sees it (`redact`: the
 * redactions of the table `e` is on; Note [Inherited roles] in model/inherit.ts). */
function foldFilters(s: Scope, e: BoolIR, path: string, redact: ReadonlyMap<string, BoolIR> | undefined): BoolIR {
  switch (e.t) {
    case 'and':
    case 'or':
      return { t: e.t, of: e.of.map((x) => foldFilters(s, x, path, redact)) };
    case 'not':
      return { t: 'not', e: foldFilters(s, e.e, path, redact) };
    case 'rel':
    case 'exists': {
      const target = e.t === 'rel' ? e.remote : e.table;
      const m = s.model(target);
      const filter = m ? (s.selectPerm(m, path)?.filter ?? TRUE) : { t: 'false' as const };
      return { ...e, e: and(foldFilters(s, e.e, path, m?.select.get(s.role)?.redact), filter) };
    }
    case 'cmp': {
      const r = redact?.get(e.column);
      return r ? { ...e, redact: r } : e;
    }
    case 'ccmp': {
      // Both columns must be shown for the comparison to hold (a hidden value compares as null).
      const rs = [redact?.get(e.column), e.root ? undefined : redact?.get(e.other)].filter((x): x is BoolIR => x !== undefined);
      return rs.length ? { t: 'and', of: [...rs, e] } : e;
    }
    default:
      return e;
  }
}

const OrderObject = v.object({
  column: v.string(),
  type: v.optional(v.picklist(['asc', 'desc']), 'asc'),
  nulls: v.optional(v.picklist(['first', 'last'])),
});
const OrderBySchema = v.union([v.string(), OrderObject, v.array(v.union([v.string(), OrderObject]))]);

function orderIR(s: Scope, x: v.InferOutput<typeof OrderBySchema> | undefined, m: TableModel, path: string): OrderItem[] {
  if (x === undefined) return [];
  const items = Array.isArray(x) ? x : [x];
  if (Array.isArray(x) && x.length === 0) throw payload('order_by array should not be empty', path);
  return items.map((item) => {
    let spec: v.InferOutput<typeof OrderObject>;
    if (typeof item === 'string') {
      const desc = item.startsWith('-');
      spec = { column: item.startsWith('+') || desc ? item.slice(1) : item, type: desc ? 'desc' : 'asc' };
    } else spec = item;
    const steps = spec.column.split('.');
    const orderPath: OrderItem['path'] = [];
    let cur = m;
    for (const step of steps.slice(0, -1)) {
      const rel = cur.relationships.find((r) => r.name === step);
      if (!rel) {
        if (cur.columnsByName.has(step)) throw payload(`${dquote(step)} is a database column and cannot be chained further`, path);
        throw new SvcError('not-exists', `no such relationship exists : ${dquote(step)}`, { path });
      }
      if (rel.kind === 'array') throw payload(`${dquote(step)} is an array relationship and can't be used in order_by`, path);
      const remote = s.model(rel.remote);
      if (!remote) throw new SvcError('not-exists', `table ${dquote(s.display(rel.remote))} does not exist`, { path });
      orderPath.push({ remote: rel.remote, mapping: rel.mapping, filter: s.selectPerm(remote, path)?.filter ?? TRUE });
      cur = remote;
    }
    const last = steps.at(-1)!;
    if (cur.relationships.some((r) => r.name === last)) throw payload(`${dquote(last)} is a relationship and should be expanded`, path);
    const perm = s.selectPerm(cur, path);
    const col = s.column(cur, last, perm?.columns, 'select', path);
    const dir = (spec.nulls ? `${spec.type}_nulls_${spec.nulls}` : spec.type) as OrderDir;
    // An inherited role orders by a column as it sees it (Note [Inherited roles] in model/inherit.ts).
    const redact = perm?.redact?.get(col.name);
    return { path: orderPath, column: col.name, dir, ...(redact ? { redact } : {}) };
  });
}

const Window = {
  where: v.optional(v.unknown()),
  order_by: v.optional(OrderBySchema),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  offset: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
};

interface Nested {
  name: string;
  alias?: string;
  columns: unknown[];
  where?: unknown;
  order_by?: v.InferOutput<typeof OrderBySchema>;
  limit?: number;
  offset?: number;
}
const NestedSchema: v.GenericSchema<unknown, Nested> = v.object({
  name: v.string(),
  alias: v.optional(v.string()),
  columns: v.array(v.unknown()),
  ...Window,
});

/** The rows of `m` a selection reads: the request's where, order and window, and the role's filter and limit. */
function rowsIR(s: Scope, m: TableModel, a: { where?: unknown; order_by?: Nested['order_by']; limit?: number; offset?: number }, path: string): RowsIR {
  const perm = s.selectPerm(m, path);
  const rows: RowsIR = { table: m.table, where: and(whereIR(s, a.where, m, `${path}.where`), perm?.filter ?? TRUE), orderBy: orderIR(s, a.order_by, m, `${path}.order_by`) };
  if (a.limit !== undefined) rows.limit = { k: 'lit', v: a.limit };
  if (perm?.limit !== undefined) rows.limitCap = perm.limit;
  if (a.offset !== undefined) rows.offset = { k: 'lit', v: a.offset };
  return rows;
}

/** Legacy `columns`: names, `*`, and `{name, alias, columns, where, ...}` for relationships. */
function objectIR(s: Scope, cols: readonly unknown[], m: TableModel, path: string): ObjectIR {
  const perm = s.selectPerm(m, path);
  const fields: FieldIR[] = [];
  const seen = new Set<string>();
  const push = (f: FieldIR) => {
    // A key given twice keeps its first field (json_build_object would repeat the key).
    if (seen.has(f.key)) return;
    seen.add(f.key);
    fields.push(f);
  };
  cols.forEach((c, i) => {
    const at = `${path}[${i}]`;
    if (c === '*') {
      for (const col of m.columns) if (!perm || perm.columns.has(col.name)) push({ key: col.name, k: 'column', column: col.name, scalar: col.scalar, asText: col.scalar.bigNumber, ...redacted(perm, col.name, m) });
      return;
    }
    if (typeof c === 'string') {
      if (m.relationships.some((r) => r.name === c)) throw payload(`${dquote(c)} is a relationship and should be expanded`, at);
      const col = s.column(m, c, perm?.columns, 'select', at);
      push({ key: c, k: 'column', column: col.name, scalar: col.scalar, asText: col.scalar.bigNumber, ...redacted(perm, col.name, m) });
      return;
    }
    const parsed = v.safeParse(NestedSchema, c);
    if (!parsed.success) throw new SvcError('parse-failed', parsed.issues[0].message, { path: at });
    const n = parsed.output;
    const rel: ResolvedRelationship | undefined = m.relationships.find((r) => r.name === n.name);
    if (!rel) {
      if (m.columnsByName.has(n.name)) throw payload(`${dquote(n.name)} is a database column and cannot be chained further`, at);
      throw new SvcError('not-exists', `no such relationship exists : ${dquote(n.name)}`, { path: at });
    }
    const remote = s.model(rel.remote);
    if (!remote) throw new SvcError('not-exists', `table ${dquote(s.display(rel.remote))} does not exist`, { path: at });
    const select = objectIR(s, n.columns, remote, `${at}.columns`);
    const key = n.alias ?? n.name;
    if (rel.kind === 'object') {
      if (n.where !== undefined || n.order_by !== undefined || n.limit !== undefined || n.offset !== undefined) {
        throw payload("when selecting an object relationship, where, order_by, limit and offset can't be used", at);
      }
      push({ key, k: 'object', mapping: rel.mapping, rows: { table: remote.table, where: s.selectPerm(remote, at)?.filter ?? TRUE, orderBy: [] }, select });
    } else push({ key, k: 'array', mapping: rel.mapping, rows: rowsIR(s, remote, n, at), select });
  });
  return { fields };
}

// ---------------------------------------------------------------------------------------------
// Operations (their args name the table as the source kind does: `bind.table`)

const selectArgs = (table: QualifiedNameSchema) =>
  v.object({
    // Hasura's DMLQuery: the source, `default` when not given.
    source: SourceNameSchema,
    table,
    columns: v.array(v.unknown()),
    ...Window,
  });

const countArgs = (table: QualifiedNameSchema) =>
  v.object({
    // Hasura's DMLQuery: the source, `default` when not given.
    source: SourceNameSchema,
    table,
    where: v.optional(v.unknown()),
    distinct: v.optional(v.array(v.string())),
  });

const ConflictArgs = v.object({
  constraint: v.optional(v.string()),
  constraint_on: v.optional(v.union([v.string(), v.array(v.string())])),
  action: v.optional(v.picklist(['ignore', 'update']), 'ignore'),
  update_columns: v.optional(v.array(v.string())),
});

/** `returning` of the writes: column names (Hasura's `Maybe [PGCol]`; null is none). */
const Returning = v.optional(v.nullable(v.array(v.string())));

const insertArgs = (table: QualifiedNameSchema) =>
  v.object({
    // Hasura's DMLQuery: the source, `default` when not given.
    source: SourceNameSchema,
    table,
    objects: v.array(v.record(v.string(), v.unknown())),
    returning: Returning,
    on_conflict: v.optional(v.nullable(ConflictArgs)),
  });

/** A column -> value object of `update` (null is none, as Hasura's `.:?` reads it). */
const UpdValues = v.optional(v.nullable(v.record(v.string(), v.unknown())));

const updateArgs = (table: QualifiedNameSchema) =>
  v.object({
    // Hasura's DMLQuery: the source, `default` when not given.
    source: SourceNameSchema,
    table,
    // Required, as Hasura's `o .: "where"` requires it: `{}` updates every row, a missing where is
    // the parse error `key "where" not found`.
    where: v.record(v.string(), v.unknown()),
    $set: UpdValues,
    /** Hasura's older name of `$set`, read when `$set` is absent. */
    values: UpdValues,
    $inc: UpdValues,
    $mul: UpdValues,
    $default: v.optional(v.nullable(v.array(v.string()))),
    returning: Returning,
  });

const deleteArgs = (table: QualifiedNameSchema) =>
  v.object({
    // Hasura's DMLQuery: the source, `default` when not given.
    source: SourceNameSchema,
    table,
    where: v.record(v.string(), v.unknown()),
    returning: Returning,
  });

type SelectArgs = v.InferOutput<ReturnType<typeof selectArgs>>;
type CountArgs = v.InferOutput<ReturnType<typeof countArgs>>;
type InsertArgs = v.InferOutput<ReturnType<typeof insertArgs>>;
type UpdateArgs = v.InferOutput<ReturnType<typeof updateArgs>>;
type DeleteArgs = v.InferOutput<ReturnType<typeof deleteArgs>>;

/** Legacy-only operations, registered for the kind that owns the legacy names (postgres). */
export function legacyDataGroup(db: DatabaseService): CommandGroup {
  return {
    name: 'legacy-data',
    operations(bind: KindBinding): OperationDef[] {
      const legacy = (op: string) => bind.legacy(op);
      if (!legacy('select')) return [];
      const compileSelect = (s: Scope, ir: RootIR): CompiledQuery => {
        if (!s.kind.dialect.compileSelect) throw new SvcError('not-supported', `source kind "${s.kind.kind}" does not serve queries`);
        return s.kind.dialect.compileSelect(ir);
      };

      const select: OperationDef<SelectArgs>['run'] = async (a, ctx) => {
        const s = await scopeFor(db, ctx, a.source);
        const m = s.table(a.table);
        const ir: RootIR = { k: 'select', single: false, rows: rowsIR(s, m, a, '$.args'), select: objectIR(s, a.columns, m, '$.args.columns') };
        const q = compileSelect(s, ir);
        const row = await run<{ json: string }>(await executor(db, ctx, s, false), q, s);
        // The text PostgreSQL built goes to the client as it is.
        return { response: new JsonText(row.json) };
      };

      const count: OperationDef<CountArgs>['run'] = async (a, ctx) => {
        const s = await scopeFor(db, ctx, a.source);
        const m = s.table(a.table);
        const perm = s.selectPerm(m);
        const columns = a.distinct?.map((c, i) => s.column(m, c, perm?.columns, 'select', `$.args.distinct[${i}]`).name);
        const rows = rowsIR(s, m, { where: a.where }, '$.args');
        const redact = columns?.map((c) => redacted(perm, c, m).redact);
        const op = { key: 'count', k: 'count' as const, columns, distinct: !!columns?.length, ...(redact?.some((r) => r) ? { redact } : {}) };
        const ir: RootIR = { k: 'aggregate', agg: { rows, fields: [{ key: 'aggregate', k: 'aggregate', fields: [op] }] } };
        const row = await run<{ json: string }>(await executor(db, ctx, s, false), compileSelect(s, ir), s);
        return { response: { count: (JSON.parse(row.json) as { aggregate: { count: number } }).aggregate.count } };
      };

      /** One write: compiled by the dialect, run in the request's transaction (Note [Legacy data
       * operations in a request]); a row failing the role's check fails the request, and the
       * request's rollback takes back everything it wrote. */
      const mutate = async (s: Scope, ctx: OperationContext, ir: MutationIR) => {
        if (!s.kind.dialect.compileMutation) throw new SvcError('not-supported', `source kind "${s.kind.kind}" does not support ${ir.k}s`);
        let q: CompiledQuery;
        try {
          q = s.kind.dialect.compileMutation(ir);
        } catch (e) {
          throw new SvcError('not-supported', (e as Error).message, { path: '$.args' });
        }
        // A statement in steps inserts rows through relationships, which these operations do not.
        if (q.steps) throw new SvcError('not-supported', 'a write in several statements is not supported here', { path: '$.args' });
        let row: { json: string };
        try {
          row = await run<{ json: string }>(await executor(db, ctx, s, true), q, s);
        } catch (e) {
          // The statement fails by itself when a row fails the check (Note [Mutations in one
          // round trip] in the PostgreSQL compiler); `run` keeps the database's message.
          if (s.kind.dialect.mutationFailure?.(e)?.k === 'check') {
            throw new SvcError('permission-error', 'check constraint of an insert/update permission has failed', { path: '$.args' });
          }
          throw e;
        }
        return { response: new JsonText(row.json) };
      };

      const insert: OperationDef<InsertArgs>['run'] = async (a, ctx) => {
        const s = await scopeFor(db, ctx, a.source);
        return mutate(s, ctx, insertIR(s, s.table(a.table), a));
      };

      const update: OperationDef<UpdateArgs>['run'] = async (a, ctx) => {
        const s = await scopeFor(db, ctx, a.source);
        return mutate(s, ctx, updateIR(s, s.table(a.table), a));
      };

      const del: OperationDef<DeleteArgs>['run'] = async (a, ctx) => {
        const s = await scopeFor(db, ctx, a.source);
        return mutate(s, ctx, deleteIR(s, s.table(a.table), a));
      };

      return [
        { type: null, legacy: legacy('select'), args: selectArgs(bind.table), mutates: false, adminOnly: false, run: select },
        { type: null, legacy: legacy('count'), args: countArgs(bind.table), mutates: false, adminOnly: false, run: count },
        { type: null, legacy: legacy('insert'), args: insertArgs(bind.table), mutates: false, adminOnly: false, run: insert },
        { type: null, legacy: legacy('update'), args: updateArgs(bind.table), mutates: false, adminOnly: false, run: update },
        { type: null, legacy: legacy('delete'), args: deleteArgs(bind.table), mutates: false, adminOnly: false, run: del },
      ];
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Values of the writes

/** A client's value for a column of type `t`, bound as the kind binds the legacy writes' values
 * (Dialect.legacyValue; PostgreSQL: Note [Numeric values of the legacy writes] in
 * plugins/postgres/sql/legacy-values.ts). */
function lit(val: unknown, t: ScalarType, dialect: Dialect): Value {
  return { k: 'lit', v: dialect.legacyValue ? dialect.legacyValue(val, t) : val };
}

// ---------------------------------------------------------------------------------------------
// insert

function insertIR(s: Scope, m: TableModel, a: InsertArgs): MutationIR {
  const tableName = dquote(s.display(m.table));
  if (!m.mutable.insert) throw new SvcError('not-supported', `view ${tableName} is not insertable`, { path: '$.args' });
  const perm = s.admin ? undefined : m.insert.get(s.role);
  if (!s.admin && !perm) throw denied(`insert on ${tableName} for role ${dquote(s.role)} is not allowed.`);
  const allowed = perm?.columns;
  const check = perm?.check ?? TRUE;
  const presets: ReadonlyMap<string, Value> = perm?.set ?? new Map();
  if (a.objects.length === 0) throw payload('objects should not be empty', '$.args.objects');
  // Every column any object gives (in the order first seen), then the presets.
  const names: string[] = [];
  a.objects.forEach((o, i) => {
    for (const c of Object.keys(o)) {
      if (names.includes(c)) continue;
      // Hasura's `throwNotInsErr`: a preset column's value is the permission's, never the client's.
      if (presets.has(c)) throw new SvcError('not-supported', `column ${dquote(c)} is not insertable for role ${dquote(s.role)}`, { path: `$.args.objects[${i}]` });
      s.column(m, c, allowed, 'insert', `$.args.objects[${i}]`);
      names.push(c);
    }
  });
  const all = [...names, ...presets.keys()];
  const columns = new Map<string, { scalar: ScalarType }>();
  for (const c of all) {
    const col = m.columnsByName.get(c);
    if (!col) throw denied(`no such column exists : ${dquote(c)}`);
    columns.set(c, { scalar: col.scalar });
  }
  const rows: InsertRowIR[] = a.objects.map((o) => {
    const values = new Map<string, ColumnValue>();
    for (const c of all) {
      const val = presets.get(c) ?? (Object.hasOwn(o, c) ? lit(o[c], columns.get(c)!.scalar, s.kind.dialect) : undefined);
      if (val) values.set(c, { k: 'value', value: val });
    }
    return { values, before: [], after: [] };
  });

  let onConflict: InsertIR['onConflict'];
  const oc = a.on_conflict;
  if (oc) {
    if (oc.constraint !== undefined && oc.constraint_on !== undefined) throw payload('constraint and constraint_on cannot be set at a time', '$.args.on_conflict');
    const target = oc.constraint_on === undefined ? undefined : typeof oc.constraint_on === 'string' ? [oc.constraint_on] : oc.constraint_on;
    let update: string[] = [];
    let up: UpdatePermissionIR | undefined;
    if (oc.action === 'update') {
      if (oc.constraint === undefined && target === undefined) throw payload('Expecting constraint or constraint_on when the action is update', '$.args.on_conflict');
      update = oc.update_columns ?? names;
      // A role's conflicting row is updated as its update permission allows: the rows of its
      // filter, its columns, its presets, its check on the updated row.
      up = s.admin ? undefined : m.update.get(s.role);
      if (!s.admin && !up) throw denied(`upsert is not allowed for role ${dquote(s.role)} since update permissions are not defined`, '$.args.on_conflict');
      update.forEach((c, i) => s.column(m, c, up?.columns, 'update', `$.args.on_conflict.update_columns[${i}]`));
      for (const c of up?.set.keys() ?? []) {
        const col = m.columnsByName.get(c);
        if (col) columns.set(c, { scalar: col.scalar });
      }
    }
    target?.forEach((c, i) => s.column(m, c, undefined, 'select', `$.args.on_conflict.constraint_on[${i}]`));
    const set = up && new Map([...up.set].map(([c, value]): [string, ColumnValue] => [c, { k: 'value', value }]));
    onConflict = { constraint: oc.constraint, columns: target, update, set, where: up?.filter ?? TRUE, check: up?.check ?? TRUE };
  }
  if (a.returning) needSelect(s, m, '"returning" can only be used if the role has "select" permission on the table');
  return { k: 'insert', insert: { table: m.table, columns, rows, onConflict, check }, output: mutationOutput(s, m, a.returning) };
}

// ---------------------------------------------------------------------------------------------
// What the writes return

/** The role's select permission, which an operation needs for `why`: refused as Hasura refuses
 * it (`askSelPermInfo`'s message, which keeps its trailing space, and the reason appended). */
function needSelect(s: Scope, m: TableModel, why: string): void {
  if (s.admin || m.select.has(s.role)) return;
  throw denied(`select on ${dquote(s.display(m.table))} for role ${dquote(s.role)} is not allowed. ; ${why}`);
}

/** `{affected_rows, returning}`: `returning` only when asked, with column names the role may
 * select (Hasura's `checkRetCols`: not `*`, not relationships), big numbers as strings. */
function mutationOutput(s: Scope, m: TableModel, returning: readonly string[] | null | undefined): MutationOutput {
  const fields: MutationField[] = [{ key: 'affected_rows', k: 'affected_rows' }];
  if (returning) {
    const allowed = s.selectPerm(m, '$.args.returning')?.columns;
    const cols = returning.map((c) => s.column(m, c, allowed, 'select', '$.args.returning').name);
    // objectIR gives the fields of those columns (each key once).
    fields.push({ key: 'returning', k: 'returning', select: objectIR(s, [...new Set(cols)], m, '$.args.returning') });
  }
  return { k: 'multi', fields };
}

// ---------------------------------------------------------------------------------------------
// update and delete (Note [Legacy update and delete])

const WHERE_NEEDS_SELECT = (op: string) => `"${op}" is only allowed if the role has "select" permission as "where" can't be used without "select" permission on the table`;

/** The SET items of `update`'s operators, in Hasura's order; `$set` falls back to `values`. */
const UPDATE_OPERATORS = [
  ['$set', 'set'],
  ['$inc', 'inc'],
  ['$mul', 'mul'],
  ['$default', 'default'],
] as const satisfies readonly (readonly [string, UpdateOp])[];

function updateIR(s: Scope, m: TableModel, a: UpdateArgs): MutationIR {
  const tableName = dquote(s.display(m.table));
  if (!m.mutable.update) throw new SvcError('not-supported', `view ${tableName} is not updatable`, { path: '$.args' });
  const perm = s.admin ? undefined : m.update.get(s.role);
  if (!s.admin && !perm) throw denied(`update on ${tableName} for role ${dquote(s.role)} is not allowed.`);
  needSelect(s, m, WHERE_NEEDS_SELECT('update'));

  // The presets first, then the client's items (Hasura: `resolvedPreSetItems ++ setItems ++ ...`).
  const set: UpdateIR['set'] = [];
  for (const [c, value] of perm?.set ?? []) {
    const col = m.columnsByName.get(c);
    if (col) set.push({ column: c, scalar: col.scalar, op: 'set', value });
  }
  const given = new Map<string, string[]>();
  for (const [key, op] of UPDATE_OPERATORS) {
    const path = `$.args[${JSON.stringify(key)}]`;
    const items: [string, unknown][] =
      op === 'default' ? (a.$default ?? []).map((c) => [c, undefined]) : Object.entries((key === '$set' ? (a.$set ?? a.values) : a[key]) ?? {});
    for (const [c, val] of items) {
      if (perm?.set.has(c)) throw new SvcError('not-supported', `column ${dquote(c)} is not updatable for role ${dquote(s.role)}; its value is predefined in permission`, { path });
      const col = s.column(m, c, perm?.columns, 'update', path);
      const ops = given.get(c) ?? [];
      if (ops.includes(key)) continue; // `$default` naming a column twice
      ops.push(key);
      given.set(c, ops);
      set.push(op === 'default' ? { column: c, scalar: col.scalar, op } : { column: c, scalar: col.scalar, op, value: lit(val, col.scalar, s.kind.dialect) });
    }
  }
  const twice = [...given].filter(([, ops]) => ops.length > 1);
  if (twice.length) throw payload(`column found in multiple operators; ${twice.map(([c, ops]) => `${dquote(c)} in ${ops.join(', ')}`).join('. ')}`);
  const output = mutationOutput(s, m, a.returning);
  if (set.length === 0) throw payload('atleast one of $set, $inc, $mul has to be present');
  const where = and(perm?.filter ?? TRUE, whereIR(s, a.where, m, '$.args.where'));
  return { k: 'update', table: m.table, where, set, check: perm?.check ?? TRUE, output };
}

function deleteIR(s: Scope, m: TableModel, a: DeleteArgs): MutationIR {
  const tableName = dquote(s.display(m.table));
  if (!m.mutable.delete) throw new SvcError('not-supported', `view ${tableName} is not deletable`, { path: '$.args' });
  const perm = s.admin ? undefined : m.delete.get(s.role);
  if (!s.admin && !perm) throw denied(`delete on ${tableName} for role ${dquote(s.role)} is not allowed.`);
  needSelect(s, m, WHERE_NEEDS_SELECT('delete'));
  const output = mutationOutput(s, m, a.returning);
  const where = and(perm?.filter ?? TRUE, whereIR(s, a.where, m, '$.args.where'));
  return { k: 'delete', table: m.table, where, output };
}

/** An inherited role's column shown only where a parent allowing it sees the row (Note
 * [Inherited roles] in model/inherit.ts). */
function redacted(perm: SelectPermissionIR | undefined, column: string, m: TableModel): { redact?: Redaction } {
  const e = perm?.redact?.get(column);
  return e ? { redact: { e, row: { table: m.table, columns: m.columns.map((c) => c.name) } } } : {};
}
