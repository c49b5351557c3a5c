/**
 * The database plugin's subscriptions (Note [Live queries] in core/schema/contract.ts): every query root
 * field is a live query (`liveOf`, put with planRootField's plan in ./contributor.ts), and every table a role
 * may select has `<t>_stream` (Note [Streaming subscriptions]). Each compiles its statement once
 * more in the dialect's multiplexed mode (Note [Multiplexed statements] in the PostgreSQL
 * compiler), so that a batch of subscribers is one statement.
 */
import { GraphQLEnumType, GraphQLInputObjectType, GraphQLInt, GraphQLList, GraphQLNonNull, type GraphQLNamedType } from 'graphql';
import { SvcError } from '../../../core/errors.js';
import type { FieldPlan, LiveBinding, LiveGroup, LiveResult, PlanInput, RootFieldDef, RunContext, TypeRegistry } from '../../../core/plugin.js';
import type { BoolIR, CompiledQuery, RootIR } from '../ir/types.js';
import { sourceNames, ofSource, tn } from './names.js';
import { and, defaultsOf, redactOf, dbError, fail, irFor, isObj, NeedsVariables, paramText, Planner, PREPARED, resolveMarks, VarMark, type Arg, type RootKind } from './plan.js';
import type { RoleFunction, RoleSchema, RoleTable } from './role.js';
import type { ResolvedSource } from '../model/resolved.js';

/** At most this many statements per plan (one per combination of the variables that shape it). */
const MEMO_LIMIT = 64;

type Statement = { ir: RootIR; planner: Planner; cursor?: { value: Arg } };

/**
 * The statements of one root field by the values of the variables that shape them (Note
 * [Variables that shape the query] in ./plan.ts), each a LiveGroup: compiled on first use,
 * memoised like FieldPlan.run's. `make` builds the IR for these variables (undefined: none known).
 */
function groups(input: PlanInput, t: RoleTable, mode: LiveGroup['mode'], make: (vars: Readonly<Record<string, unknown>> | undefined) => Statement) {
  const defaults: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(defaultsOf(input))) defaults[k] = resolveMarks(v, () => null);
  const compile = (vars: Readonly<Record<string, unknown>> | undefined): LiveStatement => {
    const s = make(vars);
    let q: CompiledQuery;
    try {
      q = t.source.kind.dialect.compileSelect!(s.ir, { multiplexed: true, configuration: t.source.meta.configuration });
    } catch (e) {
      throw new SvcError('not-supported', (e as Error).message);
    }
    if (!q.batch) throw new SvcError('not-supported', `source kind "${t.source.kind.kind}" does not serve subscriptions`);
    return new LiveStatement(q, mode, t, s.planner, s.cursor?.value);
  };
  let ahead: LiveStatement | undefined;
  try {
    ahead = compile(undefined);
  } catch (e) {
    if (!(e instanceof NeedsVariables)) throw e;
  }
  const shaping = ahead ? [...ahead.planner.comparisons] : input.variableDefinitions.map((d) => d.variable.name.value);
  const memo = new Map<string, LiveStatement>();
  return {
    defaults,
    statementFor(vars: Readonly<Record<string, unknown>>): LiveStatement {
      if (ahead) {
        let allSet = true;
        for (let i = 0; i < shaping.length && allSet; i++) allSet = (vars[shaping[i]!] ?? defaults[shaping[i]!] ?? null) !== null;
        if (allSet) return ahead;
      }
      const key = JSON.stringify(shaping.map((n) => vars[n] ?? defaults[n] ?? null));
      let s = memo.get(key);
      if (!s) {
        s = compile({ ...defaults, ...vars });
        if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value!);
        memo.set(key, s);
      }
      return s;
    },
  };
}

/** The synthetic variable a stream's cursor is bound as (no GraphQL name can be it). */
const CURSOR = '\u0000cursor';

/** A multiplexed statement serving its subscribers (Note [Live queries] in core/schema/contract.ts). */
class LiveStatement implements LiveGroup {
  /** Where the cursor is among the parameters (a stream's). */
  readonly cursorAt: number;

  constructor(
    readonly q: CompiledQuery,
    readonly mode: LiveGroup['mode'],
    private readonly t: RoleTable,
    readonly planner: Planner,
    readonly cursor: Arg | undefined,
  ) {
    this.cursorAt = q.params.findIndex((p) => p.k === 'var' && p.name === CURSOR);
  }

  bind(ctx: RunContext, defaults: Record<string, unknown>): LiveBinding {
    const values: (string | null)[] = new Array(this.q.params.length);
    for (let i = 0; i < values.length; i++) values[i] = paramText(this.q.params[i]!, ctx, defaults);
    return { group: this, key: JSON.stringify(values), values };
  }

  async fetch(bindings: readonly unknown[]): Promise<readonly LiveResult[]> {
    const pool = this.t.source.connection;
    if (!pool) throw new SvcError('unexpected', `source "${this.t.source.name}" is not connected`);
    let rows: { i: string | number; json: string; cursor?: string | null }[];
    try {
      rows = await (pool.readExecutor ?? pool.executor).query(this.q.sql, this.q.batch!(bindings as (string | null)[][]), PREPARED);
    } catch (e) {
      throw dbError(e, this.t.source.kind.dialect);
    }
    if (rows.length !== bindings.length) throw new SvcError('unexpected', `a live statement answered ${rows.length} rows for ${bindings.length} subscribers`);
    if (this.mode === 'live') return rows.map((r) => ({ text: r.json }));
    return rows.map((r, i): LiveResult => {
      if (r.cursor === null || r.cursor === undefined) return { text: r.json, empty: true };
      const values = [...(bindings[i] as (string | null)[])];
      values[this.cursorAt] = r.cursor;
      return { text: r.json, next: { key: JSON.stringify(values), values, resume: r.cursor } };
    });
  }
}

/** `FieldPlan.live` of a query root field (planRootField): its statement compiled on first use. */
export function liveOf(kind: RootKind, t: RoleTable, rs: RoleSchema, input: PlanInput, fn?: RoleFunction): (ctx: RunContext) => LiveBinding {
  let g: ReturnType<typeof groups> | undefined;
  return (ctx) => {
    g ??= groups(input, t, 'live', (vars) => {
      const holder: { planner?: Planner } = {};
      const ir = irFor(kind, t, rs, input, vars, holder, fn);
      return { ir, planner: holder.planner! };
    });
    return g.statementFor(ctx.variables).bind(ctx, g.defaults);
  };
}

/*
 * Note [Streaming subscriptions]
 * `<t>_stream(batch_size: Int!, cursor: [<t>_stream_cursor_input]!, where: <t>_bool_exp)`, as
 * Hasura v2 has it: the rows whose cursor column is after the cursor (`>`, or `<` for DESC), in
 * the cursor's order, at most `batch_size` at a time (and the permission's limit), with the
 * role's filter and `where`. Exactly one cursor column (Hasura's "one streaming column field is
 * expected" / "multiple column cursors are not supported yet"). The cursor is a parameter like
 * any other (the synthetic variable CURSOR), so streams are multiplexed as live queries are; the
 * statement also returns the last row's cursor value, which becomes the cohort's next cursor
 * (LiveResult.next), and a batch without rows is not sent. Rows are sent once each when the
 * cursor column is unique and grows with every insert (a serial, a timestamp of the insert);
 * rows that commit later with a smaller value than a cursor already past them are never seen,
 * as in Hasura.
 */
function planStream(t: RoleTable, rs: RoleSchema, input: PlanInput): FieldPlan {
  const field = input.field;
  const at = `$.selectionSet.${field.name.value}`;
  const g = groups(input, t, 'stream', (vars) => {
    const planner = new Planner(rs, input.fragments, defaultsOf(input), vars);
    planner.at = at;
    const args = planner.args(field);
    const given = planner.shape(args.cursor);
    const cols: { field: string; value: Arg; desc: boolean }[] = [];
    for (const item of Array.isArray(given) ? given : given === null || given === undefined ? [] : [given]) {
      const c = planner.shape(item as Arg);
      if (c === null) continue;
      if (!isObj(c)) throw fail('expected an object for a cursor');
      const initial = planner.shape(c.initial_value);
      const ordering = planner.shape(c.ordering);
      if (!isObj(initial)) throw fail('expected an object for "initial_value"');
      for (const [k, v] of Object.entries(initial)) cols.push({ field: k, value: v, desc: ordering === 'DESC' });
    }
    if (cols.length !== 1) {
      throw new SvcError('validation-failed', cols.length === 0 ? 'one streaming column field is expected' : 'multiple column cursors are not supported yet', { path: `${at}.args.cursor` });
    }
    const cur = cols[0]!;
    const col = t.columns.find((c) => c.field === cur.field);
    if (!col) throw fail(`field "${cur.field}" not found in type: '${tn(t, '_stream_cursor_value_input')}'`);
    const rows = planner.rows(t, { where: args.where ?? null });
    const size = args.batch_size;
    if (typeof size === 'number' && size < 0) {
      throw new SvcError('validation-failed', "expected a non-negative 32-bit integer for type 'Int', but found an integer", { path: `${at}.args.batch_size` });
    }
    rows.limit = planner.leaf(size, false);
    // An inherited role streams by the cursor column as it sees it (a hidden value is null, so
    // such rows are never past the cursor; Note [Inherited roles] in model/inherit.ts).
    const redact = redactOf(t, col.name);
    const after: BoolIR = { t: 'cmp', column: col.name, type: col.type, scalar: col.scalar, op: cur.desc ? 'lt' : 'gt', value: { k: 'var', name: CURSOR }, ...(redact ? { redact } : {}) };
    rows.where = and(rows.where, after);
    rows.orderBy = [{ path: [], column: col.name, dir: cur.desc ? 'desc' : 'asc', ...(redact ? { redact } : {}) }];
    return { ir: { k: 'select', single: false, rows, select: planner.object(field.selectionSet, t), cursor: true }, planner, cursor: { value: cur.value } };
  });
  const bind = (ctx: RunContext, resume: unknown): LiveBinding => {
    const s = g.statementFor(ctx.variables);
    let start: unknown = resume;
    if (start === undefined) {
      const v = s.cursor;
      start = v instanceof VarMark ? (ctx.variables[v.name] ?? g.defaults[v.name] ?? null) : resolveMarks(v ?? null, (m) => ctx.variables[m.name] ?? g.defaults[m.name] ?? null);
    }
    return s.bind({ session: ctx.session, headers: {}, variables: { ...ctx.variables, [CURSOR]: start } }, g.defaults);
  };
  return {
    // A stream is a subscription only; run gives its first batch.
    async run(ctx) {
      const b = bind(ctx, undefined);
      return (await b.group.fetch([b.values]))[0]!.text;
    },
    live: bind,
  };
}

const named = <T extends GraphQLNamedType>(types: TypeRegistry, name: string, make: () => T): T => (types.get(name) as T | undefined) ?? types.define(make());

/** `<t>_stream` of every table the role may select a column of, as `subscription_root_fields`
 * allows (Note [Streaming subscriptions]), of the sources `only` takes (all by default). */
export function streamRootFields(rs: RoleSchema, types: TypeRegistry, only?: (s: ResolvedSource) => boolean): Record<string, RootFieldDef> {
  const out: Record<string, RootFieldDef> = {};
  for (const t of rs.tables.of(only)) if (hasStream(t)) out[sourceNames(t.source).field(t.model.rootFields.select_stream.name)] = streamField(rs, types, t);
  return out;
}

/** Whether the role has `<t>_stream`. */
export const hasStream = (t: RoleTable): boolean =>
  t.hasObject && t.columns.length > 0 && (!t.perm?.subscriptionRootFields || t.perm.subscriptionRootFields.includes('select_stream'));

/** `<t>_stream` (the role has it: `hasStream`). */
export function streamField(rs: RoleSchema, types: TypeRegistry, t: RoleTable): RootFieldDef {
  const names = sourceNames(t.source);
  const table = t.model.table.name;
  const ordering = named(types, names.type('cursor_ordering'), () =>
    new GraphQLEnumType({
      name: names.type('cursor_ordering'),
      description: 'ordering argument of a cursor',
      values: { ASC: { value: 'ASC', description: 'ascending ordering of the cursor' }, DESC: { value: 'DESC', description: 'descending ordering of the cursor' } },
    }),
  );
  const value = named(types, tn(t, '_stream_cursor_value_input'), () =>
    new GraphQLInputObjectType({
      name: tn(t, '_stream_cursor_value_input'),
      description: 'Initial value of the column from where the streaming should start',
      fields: () => Object.fromEntries(t.columns.map((c) => [c.field, { type: rs.columnType(t, c), ...(c.description ? { description: c.description } : {}) }])),
    }),
  );
  const cursor = named(types, tn(t, '_stream_cursor_input'), () =>
    new GraphQLInputObjectType({
      name: tn(t, '_stream_cursor_input'),
      description: `Streaming cursor of the table "${t.model.name}"`,
      fields: {
        initial_value: { type: new GraphQLNonNull(value), description: 'Stream column input with initial value' },
        ordering: { type: ordering, description: 'cursor ordering' },
      },
    }),
  );
  const rf = t.model.rootFields.select_stream;
  return ofSource(t.source, {
    config: {
      type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(rs.object(t)))),
      args: {
        batch_size: { type: new GraphQLNonNull(GraphQLInt), description: 'maximum number of rows returned in a single batch' },
        cursor: { type: new GraphQLNonNull(new GraphQLList(cursor)), description: 'cursor to stream the results returned by the query' },
        where: { type: rs.boolExp(t), description: 'filter the rows returned' },
      },
      description: rf.comment ?? `fetch data from the table in a streaming manner: "${table}"`,
    },
    plan: (input) => planStream(t, rs, input),
  });
}
