/**
 * Root fields over tables: a field of the document (selection, arguments as literals or
 * variables, fragments, aliases, `__typename`) -> query IR with the role's permission folded in
 * -> one statement of the source's dialect, compiled once per plan; `run` binds the variables and
 * session variables and returns PostgreSQL's JSON text. See Note [Variables that shape the query].
 */
import { Kind, type DirectiveNode, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode, type ValueNode } from 'graphql';
import { SvcError } from '../../../core/errors.js';
import { jsonString, type AnswerText, type CancelSignal, type FieldExplain, type FieldPlan, type PlanInput, type RunContext } from '../../../core/plugin.js';
import type {
  AggregateField,
  AggregateIR,
  AggregateOp,
  BoolIR,
  CompiledQuery,
  FieldIR,
  FunctionCallIR,
  GroupsIR,
  ObjectIR,
  OrderDir,
  OrderItem,
  ParamSource,
  RootIR,
  RowOf,
  RowsIR,
  Value,
  Redaction,
} from '../ir/types.js';
import type { ResolvedColumn, ResolvedComputedField, ResolvedFunctionCall, ReturnedColumn } from '../model/resolved.js';
import type { Dialect, JoinedField, JoinPlanInput, SqlExecutor, SqlTransaction } from '../model/types.js';
import type { ResolvedSource } from '../model/resolved.js';
import type { ScalarType } from '../model/scalars.js';
import { tn } from './names.js';
import { parseJsonPath } from '../ir/json-path.js';
import { aggregateColumns, ORDER_BY_VALUES, type RoleFunction, type RoleSchema, type RoleTable } from './role.js';
import { valueAt } from './shapes.js';
import { JOIN_KEY, spliceJoins, type PlannedJoin } from './joins.js';

/*
 * Note [Variables that shape the query]
 * A variable in a leaf position (`_eq: $id`, `limit: $n`, `_in: $ids`) becomes a bind parameter,
 * so the statement is compiled once when the plan is made and every request only binds. A
 * variable that decides the statement's shape (a whole `where` or `order_by` object, an enum of
 * `order_by` or `distinct_on`, `@include(if: $x)`) cannot be compiled ahead: such a plan compiles
 * when it runs, memoised by the JSON of those variables' values (a bounded map per plan), and the
 * values still go in as bind parameters. A leaf variable of a comparison that is null is the
 * same: Hasura v2 drops a comparison with null (`{_eq: null}` matches every row), which changes
 * the statement, so which of them are null is part of the memo key.
 */

export class VarMark {
  constructor(readonly name: string) {}
}
export type Arg = VarMark | null | boolean | number | string | Arg[] | { [k: string]: Arg };

export class NeedsVariables extends Error {}

const MEMO_LIMIT = 64;

/** A plan's statement text is fixed: prepared once per connection, then only bound (SqlExecutor.query's
 * `prepare`), on a source whose connection prepares at all: one with `use_prepared_statements:
 * false` prepares nothing (Note [Poolers] in plugins/postgres/connection/connection.ts). */
export const PREPARED = { prepare: true } as const;
export const PREPARED_RAW = { prepare: true, raw: true } as const;

export const fail = (message: string) => new SvcError('validation-failed', message);
export const isObj = (x: unknown): x is Record<string, Arg> => typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof VarMark);

/** An AST value as an Arg: variables stay marks, enums become their names. */
export function argOf(node: ValueNode): Arg {
  switch (node.kind) {
    case Kind.VARIABLE:
      return new VarMark(node.name.value);
    case Kind.INT:
    case Kind.FLOAT: {
      // A number a double cannot hold exactly (a bigint, a numeric's digits) keeps its text:
      // values are bound as text and cast by the database, so nothing is rounded on the way.
      const n = Number(node.value);
      return String(n) === node.value ? n : node.value;
    }
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map(argOf);
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, argOf(f.value)]));
  }
}

export class Planner {
  /** Variables whose values shaped the IR (Note [Variables that shape the query]). */
  readonly structural = new Set<string>();
  /** Leaf variables of comparisons (null drops the comparison). */
  readonly comparisons = new Set<string>();
  /** Big numbers as JSON strings (ScalarType.stringify): `--stringify-numeric-types`. */
  stringify: boolean;
  /** The path of the field being planned, for errors (`$.selectionSet.<field>`...). */
  at = '$';
  /** Response keys from the root field's value to the selection being planned, and the joined
   * fields found (Note [Joined fields] in ./joins.ts); `joinInput` is set where joins may be
   * planned (query root fields), else a joined field is refused. */
  private readonly path: string[] = [];
  readonly joins: PlannedJoin[] = [];
  joinInput: JoinPlanInput | undefined;

  constructor(
    readonly rs: RoleSchema,
    private readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>,
    private readonly defaults: Readonly<Record<string, Arg>>,
    private readonly vars: Readonly<Record<string, unknown>> | undefined,
  ) {
    this.stringify = rs.stringifyNumbers;
  }

  // -------------------------------------------------------------------------------------------
  // Arguments

  /** A value that shapes the statement: a variable's value is needed now. */
  shape(x: Arg | undefined): unknown {
    if (!(x instanceof VarMark)) return x;
    this.structural.add(x.name);
    if (!this.vars) throw new NeedsVariables();
    return this.vars[x.name] ?? this.defaults[x.name] ?? null;
  }

  /** A leaf value: a bind parameter. */
  leaf(x: Arg | undefined, comparison: boolean): Value {
    // A scalar needs no walk (a batch's every value comes here: no closure per value).
    if (typeof x !== 'object' || x === null) return { k: 'lit', v: x === undefined ? null : x };
    if (!(x instanceof VarMark)) return { k: 'lit', v: resolveMarks(x, (m) => this.shape(m)) };
    if (!comparison) return { k: 'var', name: x.name };
    this.comparisons.add(x.name);
    if (this.vars && (this.vars[x.name] ?? null) === null) return { k: 'lit', v: null };
    return { k: 'var', name: x.name };
  }

  args(field: FieldNode): Record<string, Arg> {
    return Object.fromEntries((field.arguments ?? []).map((a) => [a.name.value, argOf(a.value)]));
  }

  // -------------------------------------------------------------------------------------------
  // Boolean expressions

  where(x: Arg | undefined, t: RoleTable): BoolIR {
    const o = this.shape(x);
    if (o === null || o === undefined) return { t: 'true' };
    if (!isObj(o)) throw fail('expected an object for a boolean expression');
    const parts: BoolIR[] = [];
    for (const [k, val] of Object.entries(o)) {
      if (k === '_and' || k === '_or') {
        const items = this.shape(val);
        if (items === null) continue;
        const of = (Array.isArray(items) ? items : [items]).map((e) => this.where(e as Arg, t));
        parts.push({ t: k === '_and' ? 'and' : 'or', of });
      } else if (k === '_not') {
        if (this.shape(val) !== null) parts.push({ t: 'not', e: this.where(val, t) });
      } else {
        const col = t.columns.find((c) => c.field === k);
        if (col) {
          parts.push(...this.comparison(col, val, t.source.kind.dialect, undefined, redactOf(t, col.name)));
          continue;
        }
        const cf = t.computedFields.find((c) => c.name === k && c.call.inputs.length === 0);
        if (cf) {
          const r = redactOf(t, cf.name);
          // A redacted computed field compares only in the rows where its value is shown (never a
          // row whose value is hidden, `_is_null` included: no value leaks).
          parts.push(...this.computedWhere(cf, val, t).map((e): BoolIR => (r ? { t: 'and', of: [r, e] } : e)));
          continue;
        }
        const rel = t.relationships.find((r) => r.name === k);
        if (!rel) throw fail(`field "${k}" not found in type: '${tn(t, `_bool_exp`)}'`);
        const remote = this.rs.remote(t, rel);
        parts.push({ t: 'rel', remote: rel.remote, mapping: rel.mapping, e: and(this.where(val, remote), filterOf(remote)) });
      }
    }
    // `{}` holds for every row: TRUE, which a plan may test for (a level of rows that upserts
    // inserted as a set, Note [Levels inserted as sets]).
    if (parts.length === 0) return { t: 'true' };
    return parts.length === 1 ? parts[0]! : { t: 'and', of: parts };
  }

  private comparison(col: Pick<ResolvedColumn, 'name' | 'field' | 'type' | 'scalar'>, x: Arg, dialect?: Dialect, cast?: string, redact?: BoolIR): BoolIR[] {
    const o = this.shape(x);
    if (o === null) return [];
    if (!isObj(o)) throw fail(`expected an object for "${col.field}"`);
    return Object.entries(o).flatMap(([name, operand]): BoolIR[] => {
      const op = name.slice(1);
      if (op === 'cast' && dialect) {
        // `_cast: {geography: {...}}`: by the GraphQL name of the target's scalar (`String` for text).
        const targets = this.shape(operand);
        if (targets === null) return [];
        if (!isObj(targets)) throw fail(`expected an object for "_cast"`);
        return Object.entries(targets).flatMap(([scalarName, ops]) => {
          const to = (dialect.castTargets?.(col.type) ?? []).find((t) => dialect.scalar(t).graphql === scalarName);
          if (!to) throw fail(`field "${scalarName}" not found in type: '${col.scalar.graphql}_cast_exp'`);
          const scalar = dialect.scalar(to);
          return this.comparison({ ...col, type: to, scalar }, ops, undefined, scalar.bindAs, redact);
        });
      }
      return [{ t: 'cmp', column: col.name, type: col.type, scalar: col.scalar, op: op === 'neq' ? 'ne' : op, value: this.leaf(operand, true), ...(cast ? { cast } : {}), ...(redact ? { redact } : {}) }];
    });
  }

  /** A json column's `path` argument: parsed now when literal, when bound when a variable. */
  private jsonPath(x: Arg | undefined): Value | undefined {
    if (x === undefined) return undefined;
    const v = this.leaf(x, false);
    if (v.k !== 'lit') return v;
    if (v.v === null) return undefined;
    if (typeof v.v !== 'string') throw fail('expected a string for "path"');
    return { k: 'lit', v: parseJsonPath(v.v) };
  }

  /** A computed field without user arguments in a boolean expression (Hasura allows no others). */
  private computedWhere(cf: ResolvedComputedField, x: Arg, t: RoleTable): BoolIR[] {
    const call = this.call(cf.call, undefined);
    if (cf.returns.k === 'table') {
      const remote = this.rs.computedRemote(t, cf);
      return [{ t: 'frows', call, e: and(this.where(x, remote), filterOf(remote)) }];
    }
    // Rows of declared columns are no field of a boolean expression (role.ts boolExp).
    if (cf.returns.k === 'columns') throw fail(`field "${cf.name}" not found in type: '${tn(t, '_bool_exp')}'`);
    const scalar = cf.returns.scalar;
    const o = this.shape(x);
    if (o === null) return [];
    if (!isObj(o)) throw fail(`expected an object for "${cf.name}"`);
    return Object.entries(o).map(([name, operand]): BoolIR => {
      const op = name.slice(1);
      return { t: 'fcmp', call, scalar, op: op === 'neq' ? 'ne' : op, value: this.leaf(operand, true) };
    });
  }

  // -------------------------------------------------------------------------------------------
  // Function calls

  /**
   * The call of a function with the `args` object given (Hasura's `functionArgs`): arguments in
   * the function's order, positional until one with a default is left out and by name after it;
   * the session argument bound from the session as json; a missing argument without a default
   * refused. The row argument stays a `row` for the compiler.
   */
  call(c: ResolvedFunctionCall, x: Arg | undefined): FunctionCallIR {
    const given = x === undefined ? undefined : this.shape(x);
    if (given !== undefined && given !== null && !isObj(given)) throw fail('expected an object for "args"');
    const obj = (given ?? {}) as Record<string, Arg>;
    const args: FunctionCallIR['args'] = [];
    // A call by argument mapping names every argument (Note [Computed fields by argument mapping]).
    let named = c.params.some((p) => p.k === 'column');
    const nameOf = (name: string | null) => {
      if (!named) return {};
      if (name === null) throw new SvcError('not-supported', 'Only last set of positional arguments can be omitted');
      return { name };
    };
    for (const p of c.params) {
      if (p.k === 'row') args.push({ k: 'row', ...nameOf(p.arg.name) });
      else if (p.k === 'column') args.push({ k: 'column', column: p.column, bindAs: p.arg.scalar.bindAs, ...nameOf(p.arg.name) });
      else if (p.k === 'session') args.push({ k: 'value', value: { k: 'session_json' }, bindAs: p.arg.scalar.bindAs, ...nameOf(p.arg.name) });
      else {
        const v = obj[p.arg.field];
        if (v === undefined) {
          if (!p.arg.hasDefault) throw new SvcError('not-supported', 'Non default arguments cannot be omitted');
          named = true;
          continue;
        }
        // A row-typed argument comes as its text form (role.ts `functionArgs`) and is cast.
        args.push({ k: 'value', value: this.leaf(v, false), bindAs: p.arg.scalar.bindAs, ...(p.arg.scalar.array ? { array: true as const } : {}), ...nameOf(p.arg.name) });
      }
    }
    return { function: c.function, args };
  }

  // -------------------------------------------------------------------------------------------
  // Rows

  rows(t: RoleTable, args: Record<string, Arg>): RowsIR {
    const rows: RowsIR = { table: t.model.table, where: and(this.where(args.where, t), filterOf(t)), orderBy: this.orderBy(args.order_by, t, []) };
    if (args.limit !== undefined && args.limit !== null) {
      if (typeof args.limit === 'number' && args.limit < 0) {
        throw new SvcError('validation-failed', "expected a non-negative 32-bit integer for type 'Int', but found an integer", { path: `${this.at}.args.limit` });
      }
      rows.limit = this.leaf(args.limit, false);
    }
    if (t.perm?.limit !== undefined) rows.limitCap = t.perm.limit;
    if (args.offset !== undefined && args.offset !== null) rows.offset = this.leaf(args.offset, false);
    const distinct = this.shape(args.distinct_on);
    if (distinct !== null && distinct !== undefined) {
      rows.distinctOn = (Array.isArray(distinct) ? distinct : [distinct]).map((f) => this.column(t, this.shape(f as Arg)).name);
      const redact = rows.distinctOn.map((c) => redactOf(t, c));
      if (redact.some((r) => r)) rows.distinctRedact = redact;
      // PostgreSQL's rule, in Hasura's words: the first order_by keys are the distinct_on columns.
      const first = rows.orderBy.slice(0, rows.distinctOn.length);
      if (first.length > 0 && (first.length < rows.distinctOn.length || first.some((o) => o.path.length > 0 || o.call || o.agg || !rows.distinctOn!.includes(o.column)))) {
        throw new SvcError('validation-failed', '"distinct_on" columns must match initial "order_by" columns', { path: `${this.at}.args` });
      }
    }
    return rows;
  }

  private column(t: RoleTable, field: unknown): ResolvedColumn {
    const c = t.columns.find((x) => x.field === field);
    if (!c) throw fail(`field "${String(field)}" not found in type: '${tn(t)}'`);
    return c;
  }

  private orderBy(x: Arg | undefined, t: RoleTable, path: OrderItem['path']): OrderItem[] {
    const v = this.shape(x);
    if (v === null || v === undefined) return [];
    const out: OrderItem[] = [];
    for (const item of Array.isArray(v) ? v : [v]) {
      const o = this.shape(item as Arg);
      if (o === null) continue;
      if (!isObj(o)) throw fail('expected an object for order_by');
      for (const [k, val] of Object.entries(o)) {
        const col = t.columns.find((c) => c.field === k);
        if (col) {
          const dir = this.shape(val);
          if (dir === null) continue;
          if (typeof dir !== 'string' || !(dir in ORDER_BY_VALUES)) throw fail(`unexpected value for order_by: ${JSON.stringify(dir)}`);
          const r = redactOf(t, col.name);
          out.push({ path, column: col.name, dir: dir as OrderDir, ...(r ? { redact: r } : {}) });
          continue;
        }
        const cf = t.computedFields.find((c) => c.name === k && c.returns.k === 'scalar' && c.call.inputs.length === 0);
        if (cf) {
          const dir = this.shape(val);
          if (dir === null) continue;
          if (typeof dir !== 'string' || !(dir in ORDER_BY_VALUES)) throw fail(`unexpected value for order_by: ${JSON.stringify(dir)}`);
          const r = redactOf(t, cf.name);
          out.push({ path, column: cf.name, call: this.call(cf.call, undefined), dir: dir as OrderDir, ...(r ? { redact: r } : {}) });
          continue;
        }
        const arr = t.relationships.find((r) => r.kind === 'array' && `${r.name}_aggregate` === k);
        if (arr) {
          out.push(...this.aggregateOrder(val, t, arr, path));
          continue;
        }
        const rel = t.relationships.find((r) => r.name === k && r.kind === 'object');
        if (!rel) throw fail(`field "${k}" not found in type: '${tn(t, `_order_by`)}'`);
        const remote = this.rs.remote(t, rel);
        const unique = uniqueJoin(remote, rel.mapping);
        out.push(...this.orderBy(val, remote, [...path, { remote: rel.remote, mapping: rel.mapping, filter: filterOf(remote), ...(unique ? { unique } : {}) }]));
      }
    }
    return out;
  }

  /** `<rel>_aggregate: {count: desc, max: {col: asc}}`: keys over the relationship's rows that the
   * role may see (the remote's filter; only when it may aggregate them). */
  private aggregateOrder(x: Arg, t: RoleTable, rel: RoleTable['relationships'][number], path: OrderItem['path']): OrderItem[] {
    const remote = this.rs.remote(t, rel);
    if (!remote.aggregates) throw fail(`field "${rel.name}_aggregate" not found in type: '${tn(t, `_order_by`)}'`);
    const o = this.shape(x);
    if (o === null || o === undefined) return [];
    if (!isObj(o)) throw fail('expected an object for order_by');
    const agg = (fn: string) => ({ remote: rel.remote, mapping: rel.mapping, filter: filterOf(remote), fn });
    const dirOf = (v: Arg | undefined): OrderDir | undefined => {
      const d = this.shape(v);
      if (d === null || d === undefined) return undefined;
      if (typeof d !== 'string' || !(d in ORDER_BY_VALUES)) throw fail(`unexpected value for order_by: ${JSON.stringify(d)}`);
      return d as OrderDir;
    };
    const out: OrderItem[] = [];
    for (const [fn, val] of Object.entries(o)) {
      if (fn === 'count') {
        const dir = dirOf(val);
        if (dir) out.push({ path, column: '', agg: agg('count'), dir });
        continue;
      }
      const cols = this.shape(val);
      if (cols === null) continue;
      if (!isObj(cols)) throw fail('expected an object for order_by');
      for (const [field, v] of Object.entries(cols)) {
        const dir = dirOf(v);
        const column = this.column(remote, field).name;
        const r = redactOf(remote, column);
        if (dir) out.push({ path, column, agg: agg(fn), dir, ...(r ? { redact: r } : {}) });
      }
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Selections

  /** The fields of a selection set by response key, fragments inlined, `@skip`/`@include` applied. */
  collect(set: SelectionSetNode, out = new Map<string, FieldNode[]>()): Map<string, FieldNode[]> {
    for (const sel of set.selections) {
      if (!this.included(sel.directives)) continue;
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value;
        const list = out.get(key);
        if (list) list.push(sel);
        else out.set(key, [sel]);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) this.collect(sel.selectionSet, out);
      else {
        const frag = this.fragments[sel.name.value];
        if (!frag) throw fail(`fragment "${sel.name.value}" is not defined`);
        this.collect(frag.selectionSet, out);
      }
    }
    return out;
  }

  private included(directives: readonly DirectiveNode[] | undefined): boolean {
    for (const d of directives ?? []) {
      const arg = d.arguments?.find((a) => a.name.value === 'if');
      if (!arg || (d.name.value !== 'skip' && d.name.value !== 'include')) continue;
      const val = this.shape(argOf(arg.value)) === true;
      if (d.name.value === 'skip' ? val : !val) return false;
    }
    return true;
  }

  /** The nodes of one response key merged (same field; their selection sets concatenated). */
  merged(nodes: FieldNode[]): FieldNode {
    if (nodes.length === 1) return nodes[0]!;
    const selections = nodes.flatMap((n) => n.selectionSet?.selections ?? []);
    return { ...nodes[0]!, selectionSet: selections.length ? { kind: Kind.SELECTION_SET, selections } : undefined };
  }

  object(set: SelectionSetNode | undefined, t: RoleTable): ObjectIR {
    const fields: FieldIR[] = [];
    if (!set) return { fields };
    const at = this.at;
    for (const [key, nodes] of this.collect(set)) {
      const node = this.merged(nodes);
      const name = node.name.value;
      this.at = `${at}.selectionSet.${name}`;
      if (name === '__typename') {
        fields.push({ key, k: 'typename', name: tn(t) });
        continue;
      }
      const col = t.columns.find((c) => c.field === name);
      if (col) {
        const path = node.arguments?.length ? this.jsonPath(this.args(node).path) : undefined;
        const r = redactionOf(t, col.name);
        fields.push({ key, k: 'column', column: col.name, scalar: col.scalar, ...(this.stringify && col.scalar.stringify ? { asText: true } : {}), ...(path ? { path } : {}), ...(r ? { redact: r } : {}) });
        continue;
      }
      const cf = t.computedFields.find((c) => c.name === name);
      if (cf) {
        const args = this.args(node);
        const call = this.call(cf.call, args.args);
        if (cf.returns.k === 'scalar') {
          const scalar = cf.returns.scalar;
          const r = redactionOf(t, cf.name);
          fields.push({ key, k: 'computed', call, row: rowOf(t), scalar, ...(this.stringify && scalar.stringify ? { asText: true } : {}), ...(r ? { redact: r } : {}) });
        }
        else if (cf.returns.k === 'columns') {
          // Note [Computed fields by argument mapping]: the call's rows as they are, their
          // declared columns selected; `table` names the function, which nothing reads.
          const type = this.rs.computedColumns(t, cf);
          if (this.rs.clashes(t, cf)) {
            throw new SvcError('not-supported', `the computed field "${cf.name}" cannot be selected: its type "${type.name}" is another computed field's, whose columns differ`);
          }
          const columns = cf.returns.columns;
          const rows: RowsIR = { table: cf.call.function, from: call, where: { t: 'true' }, orderBy: [] };
          fields.push({ key, k: 'computed_rows', row: rowOf(t), rows, select: this.nested(key, () => this.declaredColumns(node.selectionSet, columns, type.name)) });
        }
        else {
          const remote = this.rs.computedRemote(t, cf);
          fields.push({ key, k: 'computed_rows', row: rowOf(t), rows: { ...this.rows(remote, args), from: call }, select: this.nested(key, () => this.object(node.selectionSet, remote)) });
        }
        continue;
      }
      const rel = t.relationships.find((r) => r.name === name || (r.kind === 'array' && `${r.name}_aggregate` === name));
      const grouped = !rel && groupsPlanning.plan && t.relationships.find((r) => r.kind === 'array' && `${r.name}_groups` === name);
      if (grouped) {
        // `<rel>_groups` (Note [Grouped aggregates] in ../ir/types.ts): only where the schema offers it.
        const remote = this.rs.remote(t, grouped);
        if (!this.rs.groupsField?.(t, grouped)) throw fail(`field "${name}" not found in type: '${tn(t)}'`);
        fields.push({ key, k: 'array_groups', mapping: grouped.mapping, groups: this.nested(key, () => groupsPlanning.plan!(this, node, remote)) });
        continue;
      }
      if (!rel) {
        const joined = this.rs.joined(t)[name];
        if (!joined) throw fail(`field "${name}" not found in type: '${tn(t)}'`);
        this.join(fields, key, node, joined, t);
        continue;
      }
      const remote = this.rs.remote(t, rel);
      const args = this.args(node);
      if (rel.kind === 'object') {
        const unique = uniqueJoin(remote, rel.mapping);
        fields.push({ key, k: 'object', mapping: rel.mapping, rows: { table: rel.remote, where: filterOf(remote), orderBy: [] }, select: this.nested(key, () => this.object(node.selectionSet, remote)), ...(unique ? { unique } : {}) });
      } else if (rel.name === name) {
        fields.push({ key, k: 'array', mapping: rel.mapping, rows: this.rows(remote, args), select: this.nested(key, () => this.object(node.selectionSet, remote)) });
      } else {
        if (!remote.aggregates) throw fail(`field "${name}" not found in type: '${tn(t)}'`);
        fields.push({ key, k: 'array_aggregate', mapping: rel.mapping, agg: this.nested(key, () => this.aggregate(node, remote)) });
      }
    }
    this.at = at;
    return { fields };
  }

  /** The selection of the rows of a computed field whose function declares its columns: the
   * columns by name, `__typename`. */
  private declaredColumns(set: SelectionSetNode | undefined, columns: readonly ReturnedColumn[], typeName: string): ObjectIR {
    const fields: FieldIR[] = [];
    if (!set) return { fields };
    const at = this.at;
    for (const [key, nodes] of this.collect(set)) {
      const name = this.merged(nodes).name.value;
      this.at = `${at}.selectionSet.${name}`;
      if (name === '__typename') {
        fields.push({ key, k: 'typename', name: typeName });
        continue;
      }
      const c = columns.find((x) => x.name === name);
      if (!c) throw fail(`field "${name}" not found in type: '${typeName}'`);
      fields.push({ key, k: 'column', column: c.name, scalar: c.scalar, ...(this.stringify && c.scalar.stringify ? { asText: true } : {}) });
    }
    this.at = at;
    return { fields };
  }

  /** Plans a selection one response key deeper (the path of joins in it). */
  nested<T>(key: string, f: () => T): T {
    this.path.push(key);
    try {
      return f();
    } finally {
      this.path.pop();
    }
  }

  /** A joined field (Note [Joined fields] in ./joins.ts): its join columns under hidden keys,
   * a placeholder at its place, the join recorded. */
  private join(fields: FieldIR[], key: string, node: FieldNode, joined: JoinedField, t: RoleTable): void {
    if (!this.joinInput) throw new SvcError('not-supported', `the field "${node.name.value}" is joined from elsewhere: it cannot be selected in a subscription`);
    for (const name of joined.columns) {
      const hidden = JOIN_KEY + name;
      if (fields.some((f) => f.key === hidden)) continue;
      const col = t.model.columns.find((c) => c.name === name);
      if (col) {
        fields.push({ key: hidden, k: 'column', column: col.name, scalar: col.scalar });
        continue;
      }
      // A scalar computed field without arguments of its own joins too, as in Hasura.
      const cf = t.computedFields.find((c) => c.name === name && c.returns.k === 'scalar' && c.call.inputs.length === 0);
      if (!cf || cf.returns.k !== 'scalar') throw fail(`the join field "${name}" of field "${node.name.value}" does not exist`);
      fields.push({ key: hidden, k: 'computed', call: this.call(cf.call, undefined), row: rowOf(t), scalar: cf.returns.scalar });
    }
    fields.push({ key, k: 'typename', name: '' });
    this.joins.push({ path: [...this.path], key, columns: joined.columns, plan: joined.plan(node, this.joinInput) });
  }

  aggregate(node: FieldNode, t: RoleTable): AggregateIR {
    const rows = this.rows(t, this.args(node));
    const fields: AggregateField[] = [];
    for (const [key, nodes] of node.selectionSet ? this.collect(node.selectionSet) : []) {
      const n = this.merged(nodes);
      const name = n.name.value;
      if (name === '__typename') fields.push({ key, k: 'typename', name: `${tn(t, `_aggregate`)}` });
      else if (name === 'nodes') fields.push({ key, k: 'nodes', select: this.nested(key, () => this.object(n.selectionSet, t)) });
      else if (name === 'aggregate') fields.push({ key, k: 'aggregate', fields: this.aggregateOps(n, t) });
      else throw fail(`field "${name}" not found in type: '${tn(t, `_aggregate`)}'`);
    }
    return { rows, fields };
  }

  aggregateOps(node: FieldNode, t: RoleTable): AggregateOp[] {
    const out: AggregateOp[] = [];
    for (const [key, nodes] of node.selectionSet ? this.collect(node.selectionSet) : []) {
      const n = this.merged(nodes);
      const name = n.name.value;
      if (name === '__typename') {
        out.push({ key, k: 'typename', name: `${tn(t, `_aggregate_fields`)}` });
        continue;
      }
      if (name === 'count') {
        const args = this.args(n);
        const cols = this.shape(args.columns);
        const columns = cols === null || cols === undefined ? undefined : (Array.isArray(cols) ? cols : [cols]).map((f) => this.column(t, this.shape(f as Arg)).name);
        const redact = columns?.map((c) => redactionOf(t, c));
        out.push({ key, k: 'count', columns, distinct: this.shape(args.distinct) === true, ...(redact?.some((r) => r) ? { redact } : {}) });
        continue;
      }
      // The kind's aggregates, with the columns each applies to (Note [Aggregates of a kind]).
      const cols = aggregateColumns(t).find(([fn]) => fn === name)?.[1];
      if (!cols) throw fail(`field "${name}" not found in type: '${tn(t, `_aggregate_fields`)}'`);
      const columns: { key: string; column?: string; scalar?: ScalarType; typename?: string }[] = [];
      for (const [ckey, cnodes] of n.selectionSet ? this.collect(n.selectionSet) : []) {
        const cname = cnodes[0]!.name.value;
        if (cname === '__typename') {
          columns.push({ key: ckey, typename: `${tn(t, `_${name}_fields`)}` });
          continue;
        }
        const col = cols.find((c) => c.field === cname);
        if (!col) throw fail(`field "${cname}" not found in type: '${tn(t, `_${name}_fields`)}'`);
        // As Hasura: by the column's type (the avg of an integer column stays a number).
        const r = redactionOf(t, col.name);
        columns.push({ key: ckey, column: col.name, scalar: col.scalar, ...(this.stringify && col.scalar.stringify ? { asText: true } : {}), ...(r ? { redact: r } : {}) });
      }
      out.push({ key, k: 'fn', fn: name, columns });
    }
    return out;
  }

  byPk(field: FieldNode, t: RoleTable): RootIR {
    const args = this.args(field);
    const conds: BoolIR[] = (t.model.primaryKey ?? []).map((name) => {
      const col = t.columns.find((c) => c.name === name)!;
      const val = args[col.field];
      if (val === undefined) throw fail(`missing required field '${col.field}'`);
      // An inherited role finds a row by a key it may see in that row only.
      const redact = redactOf(t, col.name);
      return { t: 'cmp', column: col.name, type: col.type, scalar: col.scalar, op: 'eq', value: this.leaf(val, false), ...(redact ? { redact } : {}) };
    });
    return { k: 'select', single: true, rows: { table: t.model.table, where: and({ t: 'and', of: conds }, filterOf(t)), orderBy: [] }, select: this.object(field.selectionSet, t) };
  }
}

/** Replaces the variable marks inside a literal list or object with their values (they shape it). */
export function resolveMarks(x: Arg, shape: (m: VarMark) => unknown): unknown {
  if (x instanceof VarMark) return shape(x);
  if (Array.isArray(x)) return x.map((e) => resolveMarks(e, shape));
  if (isObj(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, resolveMarks(v, shape)]));
  return x;
}

export const filterOf = (t: RoleTable): BoolIR => t.perm?.filter ?? { t: 'true' };

/** Where an inherited role sees the value of a column or scalar computed field, when not in every
 * row it sees (Note [Inherited roles] in model/inherit.ts); undefined for every other role. */
export const redactOf = (t: RoleTable, name: string): BoolIR | undefined => t.perm?.redact?.get(name);

/** redactOf for a value read from a selection's rows (output fields, aggregates). */
export function redactionOf(t: RoleTable, name: string): Redaction | undefined {
  const e = t.perm?.redact?.get(name);
  return e && { e, row: rowOf(t) };
}

/** The row of `t` for a computed field: every column of the table, in its order. */
const rowOf = (t: RoleTable): RowOf => ({ table: t.model.table, columns: t.model.columns.map((c) => c.name) });

export function and(a: BoolIR, b: BoolIR): BoolIR {
  if (a.t === 'true') return b;
  if (b.t === 'true') return a;
  return { t: 'and', of: [a, b] };
}

// ---------------------------------------------------------------------------------------------
// Plans

export type RootKind = 'select' | 'select_by_pk' | 'select_aggregate' | 'select_groups' | 'function' | 'function_aggregate';

/** Plans `<t>_groups` and `<rel>_groups` (./groups.ts, which needs the planner, so it sets this
 * when it is loaded; the contributor loads it, and only its schemas have such fields). */
export const groupsPlanning: { plan?: (p: Planner, node: FieldNode, t: RoleTable) => GroupsIR } = {};

/** Values of the operation's variable defaults, for variables the request leaves out. */
export function defaultsOf(input: PlanInput): Record<string, Arg> {
  const out: Record<string, Arg> = {};
  for (const d of input.variableDefinitions) if (d.defaultValue) out[d.variable.name.value] = argOf(d.defaultValue);
  return out;
}

export function irFor(kind: RootKind, t: RoleTable, rs: RoleSchema, input: PlanInput, vars: Readonly<Record<string, unknown>> | undefined, p?: { planner?: Planner; joinInput?: JoinPlanInput }, fn?: RoleFunction): RootIR {
  const planner = new Planner(rs, input.fragments, defaultsOf(input), vars);
  if (p) p.planner = planner;
  planner.joinInput = p?.joinInput;
  const field = input.field;
  planner.at = `$.selectionSet.${field.name.value}`;
  const args = Object.fromEntries((field.arguments ?? []).map((a) => [a.name.value, argOf(a.value)]));
  // A tracked function's rows: the call is the FROM of the rows, the table's permission applies.
  const from = fn ? planner.call(fn.model.call, args.args) : undefined;
  if (kind === 'select_by_pk') return planner.byPk(field, t);
  if (kind === 'select_groups') {
    if (!groupsPlanning.plan) throw new SvcError('unexpected', 'grouped aggregates are not loaded');
    return { k: 'groups', groups: groupsPlanning.plan(planner, field, t) };
  }
  if (kind === 'select_aggregate' || kind === 'function_aggregate') {
    const agg = planner.aggregate(field, t);
    return { k: 'aggregate', agg: from ? { ...agg, rows: { ...agg.rows, from } } : agg };
  }
  const rows = planner.rows(t, args);
  // A function that returns one row (not SETOF) answers it or null (contributor.ts).
  return { k: 'select', single: fn ? !fn.model.returnsSet : false, rows: from ? { ...rows, from } : rows, select: planner.object(field.selectionSet, t) };
}

/** A bind parameter's text (values go as text and are cast in SQL to the column's type). */
export function paramText(p: ParamSource, ctx: RunContext, defaults: Record<string, unknown>): string | null {
  let val: unknown;
  if (p.k === 'items') val = p.items.map((item) => paramText(item, ctx, defaults));
  else if (p.k === 'lit') val = p.v;
  else if (p.k === 'var') {
    val = ctx.variables[p.name] ?? defaults[p.name] ?? null;
    if (p.path) val = valueAt(val, p.path) ?? null;
  }
  else if (p.k === 'session_json') val = ctx.session.variables;
  else if (p.k === 'object') throw new Error('an object operand is read field by field by the compiler, never bound whole');
  else if (p.k === 'steps' || p.k === 'answer') throw new Error("a statement's steps' answers are bound by the runner that ran them");
  else {
    val = ctx.session.variables[p.name];
    if (val === undefined) throw new SvcError('not-found', `missing session variable: "${p.name}"`);
  }
  if (val === null || val === undefined) return null;
  if (p.format) return p.format(val);
  if (p.json || typeof val === 'object') return JSON.stringify(val);
  return String(val);
}

/** The joins of a compiled statement (Note [Joined fields] in ./joins.ts), when it has any. */
const joinsOf = new WeakMap<CompiledQuery, readonly PlannedJoin[]>();

export function planRootField(kind: RootKind, t: RoleTable, rs: RoleSchema, input: PlanInput, fn?: RoleFunction): FieldPlan {
  const compile = t.source.kind.dialect.compileSelect!;
  // The plan writes a list from the kind's text of its rows where the kind answers so.
  const options = { configuration: t.source.meta.configuration, records: true };
  const defaults: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(defaultsOf(input))) defaults[k] = resolveMarks(v, () => null);
  const build = (vars: Readonly<Record<string, unknown>> | undefined): { q: CompiledQuery; planner: Planner } => {
    const holder: { planner?: Planner; joinInput?: JoinPlanInput } = { joinInput: input };
    const ir = irFor(kind, t, rs, input, vars, holder, fn);
    try {
      const q = compile(ir, options);
      if (holder.planner!.joins.length > 0) joinsOf.set(q, holder.planner!.joins);
      return { q, planner: holder.planner! };
    } catch (e) {
      throw new SvcError('not-supported', (e as Error).message);
    }
  };
  let ahead: { q: CompiledQuery; planner: Planner } | undefined;
  try {
    ahead = build(undefined);
  } catch (e) {
    if (!(e instanceof NeedsVariables)) throw e;
  }
  // Without a statement compiled ahead, every variable may shape it (one under `@include(if: $x)`
  // only counts when $x is true): the memo key is all of them.
  const shaping = ahead ? [...ahead.planner.comparisons] : input.variableDefinitions.map((d) => d.variable.name.value);
  const memo = new Map<string, CompiledQuery>();
  const pool = t.source.connection;
  const statementFor = (vars: Readonly<Record<string, unknown>>): CompiledQuery => {
    if (ahead) {
      let allSet = true;
      for (let i = 0; i < shaping.length && allSet; i++) allSet = (vars[shaping[i]!] ?? defaults[shaping[i]!] ?? null) !== null;
      if (allSet) return ahead.q;
    }
    const key = JSON.stringify(shaping.map((n) => vars[n] ?? defaults[n] ?? null));
    let q = memo.get(key);
    if (!q) {
      q = build({ ...defaults, ...vars }).q;
      if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value!);
      memo.set(key, q);
    }
    return q;
  };
  return {
    async run(ctx: RunContext): Promise<AnswerText> {
      const q = statementFor(ctx.variables);
      // A loop, not map(): no closure per request on the hot path.
      const params: (string | null)[] = new Array(q.params.length);
      for (let i = 0; i < params.length; i++) params[i] = paramText(q.params[i]!, ctx, defaults);
      if (!pool) throw new SvcError('unexpected', `source "${t.source.name}" is not connected`);
      // A mutation (a VOLATILE function) runs in the request's transaction.
      const exec = ctx.uow ? await sourceTransaction(ctx, t.source) : pool.readExecutor && !fromPrimary(ctx) ? pool.readExecutor : pool.executor;
      let text: AnswerText;
      try {
        if (q.records || q.bytes) {
          // The value's bytes (Note [Answers as bytes]): records to write, or JSON as it came.
          const rows = await exec.query<[Uint8Array | null]>(q.sql, params, ctx.signal ? { prepare: true, raw: true, signal: ctx.signal } : PREPARED_RAW);
          const value = rows[0]![0];
          text = q.records ? await q.records.write(value) : value ? (pool.answerBytes?.(value) ?? value) : 'null';
        } else text = (await exec.query<{ json: string }>(q.sql, params, ctx.signal ? { prepare: true, signal: ctx.signal } : PREPARED))[0]!.json;
      } catch (e) {
        throw dbError(e, t.source.kind.dialect);
      }
      const joins = joinsOf.get(q);
      return joins ? spliceJoins(jsonString(text), joins, ctx) : text;
    },
    async explain(ctx: RunContext): Promise<FieldExplain> {
      const q = statementFor(ctx.variables);
      const params = q.params.map((p) => paramText(p, ctx, defaults));
      if (!pool) throw new SvcError('unexpected', `source "${t.source.name}" is not connected`);
      if (!pool.explain) throw new SvcError('not-supported', `sources of kind "${t.source.kind.kind}" cannot explain their statements`);
      try {
        return { sql: q.sql, params, plan: await pool.explain(q.sql, params), ...(q.records ? { records: q.records.rows } : {}) };
      } catch (e) {
        throw dbError(e, t.source.kind.dialect);
      }
    },
  };
}

/** The request asks to read from the primary, not a replica (Note [Read replicas] in
 * model/replicas.ts). */
export const fromPrimary = (ctx: RunContext): boolean => ctx.headers['x-svc-read-from-primary']?.toLowerCase() === 'true';

/**
 * The request's transaction on a source (Note [One transaction per mutation request]), opened
 * once per request, with the session variables given to the kind to set for the transaction
 * (SourceConnection.transaction `session`: PostgreSQL sets `svc.user`, as Hasura sets
 * `hasura.user`, for triggers to read).
 */
export async function sourceTransaction(ctx: RunContext, source: ResolvedSource): Promise<SqlExecutor> {
  const conn = source.connection;
  if (!conn) throw new SvcError('unexpected', `source "${source.name}" is not connected`);
  if (!ctx.uow) throw new SvcError('unexpected', 'a mutation outside a unit of work');
  const dialect = source.kind.dialect;
  return ctx.uow.get(`graphql-tx:${source.name}`, async () => {
    let tx: SqlTransaction;
    try {
      tx = await conn.transaction({ session: ctx.session.variables });
    } catch (e) {
      throw dbError(e, dialect);
    }
    const exec: SqlTransaction = {
      query: (text, params, opts) => tx.query(text, params, opts),
      commit: async () => {
        try {
          await tx.commit();
        } catch (e) {
          throw dbError(e, dialect);
        }
      },
      rollback: () => tx.rollback(),
    };
    return { value: exec, resource: exec };
  });
}

/*
 * Note [Database errors]
 * A statement's failure reaches the client in Hasura's words: the source's dialect says what it
 * means (Dialect.classifyError: PostgreSQL maps SQLSTATEs, a constraint violation with Hasura's
 * prefix such as `Uniqueness violation. `, a bad value as `data-exception`), and the message is
 * the database's. An SvcError a driver throws passes as it is; an error the dialect does not
 * classify is `unexpected`, with its message.
 */
export function dbError(e: unknown, dialect: Pick<Dialect, 'classifyError'> | undefined, path = '$', fallback = 'database query error'): SvcError {
  if (e instanceof SvcError) return e;
  const msg = (e as { message?: string } | null)?.message ?? fallback;
  const c = dialect?.classifyError?.(e);
  if (!c) return new SvcError('unexpected', msg, { path });
  return new SvcError(c.code, (c.prefix ?? '') + msg, { path, ...(c.internal !== undefined ? { internal: c.internal } : {}) });
}

/** For tests and tools: the statement a root field compiles to with these variables. */
export function statementOf(kind: RootKind, t: RoleTable, rs: RoleSchema, input: PlanInput, vars: Record<string, unknown> = {}): CompiledQuery {
  return t.source.kind.dialect.compileSelect!(irFor(kind, t, rs, input, vars), { configuration: t.source.meta.configuration });
}

/** Whether at most one row of `remote` matches a row through `mapping`: its remote columns
 * cover the remote's primary key or one of its unique constraints. */
function uniqueJoin(remote: RoleTable, mapping: readonly (readonly [string, string])[]): boolean {
  return remote.model.constraints.some((c) => c.columns.length > 0 && c.columns.every((col) => mapping.some(([, r]) => r === col)));
}
