/**
 * Grouped aggregates (Note [Grouped aggregates] in ../ir/types.ts): the GraphQL types of
 * `<t>_groups` and `<rel>_groups` for one role, and the planning of such a field into GroupsIR.
 * The shape is in docs/api.md ("Grouped aggregates"); Note [The groups' shape] says why.
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  type FieldNode,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
} from 'graphql';
import { SvcError } from '../../../core/errors.js';
import type { TypeRegistry } from '../../../core/plugin.js';
import type { AggregateTerm, BoolIR, GroupField, GroupKeyField, GroupKeyIR, GroupsIR, OrderDir, OrderItem } from '../ir/types.js';
import type { ResolvedColumn, ResolvedRelationship, ResolvedSource, ResolvedTable } from '../model/resolved.js';
import type { ColumnType } from '../model/types.js';
import { sourceNames, tn, type SourceNames } from './names.js';
import { LayeredMap } from '../../../lib/layered-map.js';
import { and, type Arg, fail, filterOf, groupsPlanning, isObj, type Planner, redactionOf, redactOf } from './plan.js';
import { aggregateColumns, ORDER_BY_VALUES, type RoleSchema, type RoleTable } from './role.js';

/*
 * Note [The groups' shape]
 * The core is fixed by the issue that asked for it, so that clients can rely on it:
 * `<t>_groups(group_by: [<t>_select_column!]!, where, having, order_by, limit, offset):
 * [<t>_group!]!`, a group being `{keys {<the grouped columns>} aggregate {<t>_aggregate_fields>}}`,
 * and `<rel>_groups` with the same arguments on array relationships. What it adds:
 * - Keys beyond the table's own columns come in a second list, `group_by_keys:
 *   [<t>_group_key!]`, each item one key: `{_column: c}`, `{_column: c, _truncate: month}` (a
 *   date or timestamp column truncated to hour, day, week, month, quarter or year), or an object
 *   relationship's key `{author: {_column: country}}`, nesting further the same way. This follows
 *   Hasura's v3 aggregates RFC (`grouping_keys: [{Customer: {_scalar_field: LastName}}]`), whose
 *   keys are objects that walk object relationships to a column. `group_by` stays the plain
 *   list of columns, which is what most groupings are, and is given first; the keys of
 *   `group_by_keys` come after, in their order.
 * - `keys` shows a key where it was given: a column by its name (truncated: with the same
 *   `truncate` argument, `month: invoice_date(truncate: month)`), a relationship's key under the
 *   relationship's name (`keys {author {country}}`). Asking for a column that is not a key is an
 *   error, not a null that could not be told from a null key. PostGraphile's pg-aggregates puts
 *   the keys in an untyped list of strings (`keys: [String]`) and names truncations as enum
 *   values (`CREATED_AT_TRUNCATED_TO_DAY`); typed keys keep the column's type (a date stays a
 *   date, a number a number) and the per-role schema lists only what the role may read.
 * - `having` is a boolean expression over the group's aggregates, named as in
 *   `<t>_aggregate_fields`: `{count: {_gt: 2}, sum: {amount: {_gt: 10}}, _or: [...]}`; counts
 *   compare as Int, sums, maxima and minima as their column, the statistics (avg...) as Float.
 * - `order_by: [{keys: <t>_order_by}, {aggregate: <t>_aggregate_order_by}]`: the existing input
 *   types, a key named as a column (or through object relationships) as in a row's order, an
 *   aggregate as in `<rel>_aggregate` ordering. A column that is not a key is refused; a column
 *   that is a key twice (raw and truncated) orders by its first. The keys, ascending, always
 *   follow as the last order keys, so the groups have one order without any `order_by`.
 * - The role's permission: only a role that may aggregate the table (`allow_aggregations`) gets
 *   `_groups`; keys, aggregate arguments and relationship keys are its columns and
 *   relationships only (the input and output types list no others); its row filter applies
 *   before grouping, the remote's filter to a relationship key; its row limit caps the groups.
 * The types of table `t` all begin with `<t>_group`; a table whose own name begins so (a table
 * `user_groups` beside `user`, whose root field `user_groups` would be the same) leaves `t`
 * without groups rather than a clash in the schema.
 */

const nn = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLNonNull(t);
const list = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLList(t);

export const TRUNCATE_UNITS = ['hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
type Unit = (typeof TRUNCATE_UNITS)[number];

/** A column that can be a key: one with an equality (not json) of a role's selectable columns. */
const groupable = (c: ResolvedColumn) => c.scalar.comparable;

/** The GraphQL names of a source's tables, sorted, for the clash rule of Note [The groups' shape]
 * (asked for each table as a role's schema is made: a scan of them all for each was quadratic,
 * 160 ms of a role's first request at 10,000 tables). Made once per build; from the last
 * build's list where the two maps of tables are layers over one base (Note [Layered maps] in
 * lib/layered-map.ts), the changed tables' names taken out and put in: made anew, the list cost
 * a role's first request after every change about 3 ms at 10,000 tables (a --cpu-prof of the
 * engine's process, the two-core machine, 2026-11-29). */
const tableNames = new WeakMap<ResolvedSource, string[]>();
const lastNames = new WeakMap<object, { tables: ResolvedSource['tables']; types: SourceNames; names: string[] }>();
function namesOf(source: ResolvedSource): string[] {
  let names = tableNames.get(source);
  if (names) return names;
  const types = sourceNames(source);
  // The last list made over the same base (a lineage of one source's maps).
  const lineage = LayeredMap.baseOf(source.tables);
  const last = lastNames.get(lineage);
  const changed = last && last.types === types ? LayeredMap.changedKeys(last.tables, source.tables) : undefined;
  const nameOf = (rt: ResolvedTable | undefined) => (rt?.model?.inSchema ? tn({ source, model: rt.model }) : undefined);
  if (last && changed) {
    names = last.names.slice();
    for (const key of changed) {
      const gone = nameOf(last.tables.get(key));
      const at = gone === undefined ? -1 : sortedIndex(names, gone);
      if (at >= 0 && names[at] === gone) names.splice(at, 1);
      const added = nameOf(source.tables.get(key));
      if (added !== undefined) names.splice(sortedIndex(names, added), 0, added);
    }
  } else {
    names = [];
    for (const rt of source.tables.values()) {
      const n = nameOf(rt);
      if (n !== undefined) names.push(n);
    }
    names.sort();
  }
  tableNames.set(source, names);
  lastNames.set(lineage, { tables: source.tables, types, names });
  return names;
}

/** Where `name` is or would go in `sorted` (the first place not below it). */
function sortedIndex(sorted: readonly string[], name: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether a name of `sorted` (sorted as Array.prototype.sort sorts strings: by UTF-16 code
 * units, as `<` compares them) begins with `prefix`: if one does, the first name not below
 * `prefix` does, as every name beginning with it sorts after it and before any name above it
 * that does not. */
export function anyBeginsWith(sorted: readonly string[], prefix: string): boolean {
  const at = sortedIndex(sorted, prefix);
  return at < sorted.length && sorted[at]!.startsWith(prefix);
}

export class GroupsSchema {
  constructor(
    readonly rs: RoleSchema,
    private readonly types: TypeRegistry,
  ) {}

  private named<T extends GraphQLNamedType>(name: string, make: () => T): T {
    return (this.types.get(name) as T | undefined) ?? this.types.define(make());
  }

  /** Whether the role gets `<t>_groups` (Note [The groups' shape]). */
  offered(t: RoleTable): boolean {
    if (!t.source.kind.dialect.groups || !t.aggregates || !t.hasObject || !t.columns.some(groupable)) return false;
    return !anyBeginsWith(namesOf(t.source), tn(t, '_group'));
  }

  /** The field's type and arguments (the root field's and `<rel>_groups`'). */
  field(t: RoleTable): Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'> {
    return { type: nn(list(nn(this.group(t)))), args: this.args(t), description: `fetch grouped aggregates of the table: "${t.model.table.name}"` };
  }

  private args(t: RoleTable): GraphQLFieldConfigArgumentMap {
    return {
      group_by: { type: nn(list(nn(this.rs.selectColumn(t)))), description: 'the columns to group the rows by' },
      group_by_keys: { type: list(nn(this.groupKey(t))), description: 'more keys: truncated dates and times, columns of object relationships' },
      having: { type: this.having(t), description: 'filter the groups by their aggregates' },
      limit: { type: GraphQLInt, description: 'limit the number of groups returned' },
      offset: { type: GraphQLInt, description: 'skip the first n groups' },
      order_by: { type: list(nn(this.orderBy(t))), description: 'sort the groups by keys or aggregates' },
      where: { type: this.rs.boolExp(t), description: 'filter the rows before grouping' },
    };
  }

  private truncateEnum(): GraphQLEnumType {
    return this.named('group_by_truncate', () =>
      new GraphQLEnumType({
        name: 'group_by_truncate',
        description: 'units a date or time key is truncated to (weeks begin on Monday)',
        values: Object.fromEntries(TRUNCATE_UNITS.map((u) => [u, { value: u }])),
      }),
    );
  }

  /** Object relationships whose remote the role may select, and that do not clash with the key fields. */
  private keyRelationships(t: RoleTable): ResolvedRelationship[] {
    return t.relationships.filter((r) => r.kind === 'object' && !r.name.startsWith('_') && this.rs.remote(t, r).columns.some(groupable));
  }

  private truncates(t: RoleTable, c: ResolvedColumn): boolean {
    return t.source.kind.dialect.groups?.truncates(c.type) === true;
  }

  groupKey(t: RoleTable): GraphQLInputObjectType {
    const name = tn(t, '_group_key');
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `a grouping key of table "${t.model.table.name}": a column (maybe truncated), or a key of an object relationship's row`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = {
            _column: { type: this.rs.selectColumn(t) },
            _truncate: { type: this.truncateEnum(), description: 'truncate a date or time column to this unit' },
          };
          for (const r of this.keyRelationships(t)) fields[r.name] = { type: this.groupKey(this.rs.remote(t, r)) };
          return fields;
        },
      }),
    );
  }

  group(t: RoleTable): GraphQLObjectType {
    const name = tn(t, '_group');
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `a group of rows of "${t.model.table.name}": its keys and aggregates`,
        fields: () => ({
          aggregate: { type: nn(this.rs.aggregateFields(t)) },
          keys: { type: nn(this.keys(t)) },
        }),
      }),
    );
  }

  keys(t: RoleTable): GraphQLObjectType {
    const name = tn(t, '_group_keys');
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `the keys of a group of rows of "${t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLFieldConfigMap<unknown, unknown> = {};
          for (const c of t.columns.filter(groupable)) {
            fields[c.field] = { type: this.rs.columnType(t, c), ...(this.truncates(t, c) ? { args: { truncate: { type: this.truncateEnum() } } } : {}) };
          }
          for (const r of this.keyRelationships(t)) fields[r.name] = { type: nn(this.keys(this.rs.remote(t, r))) };
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      }),
    );
  }

  orderBy(t: RoleTable): GraphQLInputObjectType {
    const name = tn(t, '_group_order_by');
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `ordering of the groups of "${t.model.table.name}": by keys or by aggregates`,
        fields: () => ({
          aggregate: { type: this.rs.aggregateOrderBy(t) },
          keys: { type: this.rs.orderBy(t) },
        }),
      }),
    );
  }

  having(t: RoleTable): GraphQLInputObjectType {
    const name = tn(t, '_group_having_exp');
    const dialect = t.source.kind.dialect;
    const caps = dialect.groups!;
    const cmp = (type: ColumnType) => this.rs.comparisonExp({ type, scalar: dialect.scalar(type) }, dialect);
    return this.named(name, () => {
      const self: GraphQLInputObjectType = new GraphQLInputObjectType({
        name,
        description: `Boolean expression over the aggregates of a group of "${t.model.table.name}". All fields are combined with a logical 'AND'.`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = { _and: { type: list(nn(self)) }, _not: { type: self }, _or: { type: list(nn(self)) }, count: { type: cmp(caps.count) } };
          for (const [fn, cols, def] of aggregateColumns(t)) {
            const fnName = tn(t, `_group_${fn}_having_exp`);
            const keepsType = def.result === 'column';
            fields[fn] = {
              type: this.named(fnName, () =>
                new GraphQLInputObjectType({
                  name: fnName,
                  description: `${fn}() of columns of a group of "${t.model.table.name}"`,
                  fields: () => Object.fromEntries(cols.map((c) => [c.field, { type: keepsType ? this.rs.comparisonExp(c, dialect) : cmp(caps.floatInput) }])),
                }),
              ),
            };
          }
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      });
      return self;
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Planning

/** GroupKeyIR with the relationship names of its path, to match selections and order keys. */
type Key = Omit<GroupKeyIR, 'path'> & { path: (OrderItem['path'][number] & { rel: string })[] };

/** Whether key `k` is reached through the relationships `path`. */
const onPath = (k: Key, path: readonly string[]) => k.path.length === path.length && k.path.every((s, i) => s.rel === path[i]);

class GroupsPlanner {
  readonly keys: Key[] = [];

  constructor(
    private readonly p: Planner,
    private readonly t: RoleTable,
  ) {}

  private get rs(): RoleSchema {
    return this.p.rs;
  }

  private column(t: RoleTable, field: unknown, where: string): ResolvedColumn {
    const c = t.columns.find((x) => x.field === field);
    if (!c) throw fail(`field "${String(field)}" not found in type: '${where}'`);
    if (!groupable(c)) throw new SvcError('validation-failed', `the column "${c.field}" cannot be a grouping key (its type has no equality)`, { path: `${this.p.at}.args` });
    return c;
  }

  private listOf(x: Arg | undefined): Arg[] {
    const v = this.p.shape(x);
    if (v === null || v === undefined) return [];
    return (Array.isArray(v) ? v : [v]) as Arg[];
  }

  addKey(t: RoleTable, c: ResolvedColumn, path: Key['path'], truncate: Unit | undefined): void {
    const r = redactOf(t, c.name);
    this.keys.push({ path, column: c.name, scalar: c.scalar, ...(truncate ? { truncate } : {}), ...(r ? { redact: r } : {}) });
  }

  /** `group_by` and then `group_by_keys`. */
  groupBy(args: Record<string, Arg>): void {
    for (const f of this.listOf(args.group_by)) this.addKey(this.t, this.column(this.t, this.p.shape(f), tn(this.t, '_select_column')), [], undefined);
    for (const item of this.listOf(args.group_by_keys)) this.groupKey(item, this.t, []);
  }

  private groupKey(x: Arg, t: RoleTable, path: Key['path']): void {
    const o = this.p.shape(x);
    if (!isObj(o)) throw fail('expected an object for a grouping key');
    const given = Object.entries(o).filter(([, v]) => this.p.shape(v) !== null);
    const column = given.find(([k]) => k === '_column');
    const truncate = given.find(([k]) => k === '_truncate');
    const rels = given.filter(([k]) => k !== '_column' && k !== '_truncate');
    const at = { path: `${this.p.at}.args.group_by_keys` };
    if ((column ? 1 : 0) + rels.length !== 1) throw new SvcError('validation-failed', 'a grouping key is exactly one of "_column" or an object relationship', at);
    if (column) {
      const c = this.column(t, this.p.shape(column[1]), tn(t, '_select_column'));
      let unit: Unit | undefined;
      if (truncate) {
        unit = this.p.shape(truncate[1]) as Unit;
        if (!TRUNCATE_UNITS.includes(unit)) throw fail(`unexpected value for "_truncate": ${JSON.stringify(unit)}`);
        if (!t.source.kind.dialect.groups?.truncates(c.type)) throw new SvcError('validation-failed', `the column "${c.field}" is not a date or time: it cannot be truncated`, at);
      }
      this.addKey(t, c, path, unit);
      return;
    }
    if (truncate) throw new SvcError('validation-failed', '"_truncate" goes with "_column"', at);
    const [name, val] = rels[0]!;
    const rel = t.relationships.find((r) => r.kind === 'object' && r.name === name);
    if (!rel) throw fail(`field "${name}" not found in type: '${tn(t, '_group_key')}'`);
    const remote = this.rs.remote(t, rel);
    this.groupKey(val, remote, [...path, { rel: rel.name, remote: rel.remote, mapping: rel.mapping, filter: filterOf(remote) }]);
  }

  private find(path: readonly string[], column: string, truncate: Unit | undefined): number {
    return this.keys.findIndex((k) => k.column === column && k.truncate === truncate && onPath(k, path));
  }

  /** `having`: a boolean expression over aggregates, compiled over the columns `agg<i>`. */
  having(x: Arg | undefined, terms: AggregateTerm[]): BoolIR | undefined {
    const o = this.p.shape(x);
    if (o === null || o === undefined) return undefined;
    if (!isObj(o)) throw fail('expected an object for "having"');
    const t = this.t;
    const dialect = t.source.kind.dialect;
    const caps = dialect.groups!;
    const parts: BoolIR[] = [];
    const compare = (term: AggregateTerm, type: ColumnType, ops: Arg) => {
      const c = this.p.shape(ops);
      if (c === null) return;
      if (!isObj(c)) throw fail('expected an object for a comparison');
      const scalar = dialect.scalar(type);
      const column = `agg${terms.length}`;
      terms.push(term);
      for (const [op, v] of Object.entries(c)) {
        const name = op.slice(1);
        parts.push({ t: 'cmp', column, type, scalar, op: name === 'neq' ? 'ne' : name, value: this.p.leaf(v, true) });
      }
    };
    for (const [k, val] of Object.entries(o)) {
      if (k === '_and' || k === '_or') {
        const items = this.p.shape(val);
        if (items === null) continue;
        const of = (Array.isArray(items) ? items : [items]).map((e) => this.having(e as Arg, terms) ?? { t: 'true' as const });
        parts.push({ t: k === '_and' ? 'and' : 'or', of });
      } else if (k === '_not') {
        const e = this.having(val, terms);
        if (e) parts.push({ t: 'not', e });
      } else if (k === 'count') compare({ fn: 'count' }, caps.count, val);
      else {
        const agg = aggregateColumns(t).find(([fn]) => fn === k);
        if (!agg) throw fail(`field "${k}" not found in type: '${tn(t, '_group_having_exp')}'`);
        const [, cols, def] = agg;
        const given = this.p.shape(val);
        if (given === null) continue;
        if (!isObj(given)) throw fail(`expected an object for "${k}"`);
        for (const [field, ops] of Object.entries(given)) {
          const c = cols.find((x) => x.field === field);
          if (!c) throw fail(`field "${field}" not found in type: '${tn(t, `_group_${k}_having_exp`)}'`);
          const keepsType = def.result === 'column';
          const r = redactionOf(t, c.name);
          compare({ fn: k, column: c.name, ...(r ? { redact: r } : {}) }, keepsType ? c.type : caps.float, ops);
        }
      }
    }
    return parts.length === 1 ? parts[0]! : { t: 'and', of: parts };
  }

  private dir(v: Arg | undefined): OrderDir | undefined {
    const d = this.p.shape(v);
    if (d === null || d === undefined) return undefined;
    if (typeof d !== 'string' || !(d in ORDER_BY_VALUES)) throw fail(`unexpected value for order_by: ${JSON.stringify(d)}`);
    return d as OrderDir;
  }

  /** `order_by: [{keys: ...}, {aggregate: ...}]`, then every key not ordered yet, ascending. */
  orderBy(x: Arg | undefined): GroupsIR['orderBy'] {
    const out: GroupsIR['orderBy'] = [];
    for (const item of this.listOf(x)) {
      const o = this.p.shape(item);
      if (o === null) continue;
      if (!isObj(o)) throw fail('expected an object for order_by');
      for (const [k, val] of Object.entries(o)) {
        if (k === 'keys') this.keyOrder(val, this.t, [], out);
        else if (k === 'aggregate') this.aggregateOrder(val, out);
        else throw fail(`field "${k}" not found in type: '${tn(this.t, '_group_order_by')}'`);
      }
    }
    this.keys.forEach((_, index) => {
      if (!out.some((o) => o.k === 'key' && o.index === index)) out.push({ k: 'key', index, dir: 'asc' });
    });
    return out;
  }

  private keyOrder(x: Arg, t: RoleTable, path: string[], out: GroupsIR['orderBy']): void {
    const o = this.p.shape(x);
    if (o === null || o === undefined) return;
    if (!isObj(o)) throw fail('expected an object for order_by');
    for (const [k, val] of Object.entries(o)) {
      const c = t.columns.find((x) => x.field === k);
      if (c) {
        const dir = this.dir(val);
        if (!dir) continue;
        const index = this.keys.findIndex((key) => key.column === c.name && onPath(key, path));
        if (index < 0) throw new SvcError('validation-failed', `"${[...path, k].join('.')}" is not a grouping key: groups are ordered by keys or aggregates`, { path: `${this.p.at}.args.order_by` });
        out.push({ k: 'key', index, dir });
        continue;
      }
      const rel = t.relationships.find((r) => r.kind === 'object' && r.name === k);
      if (!rel) throw new SvcError('validation-failed', `"${[...path, k].join('.')}" is not a grouping key: groups are ordered by keys or aggregates`, { path: `${this.p.at}.args.order_by` });
      this.keyOrder(val, this.rs.remote(t, rel), [...path, rel.name], out);
    }
  }

  private aggregateOrder(x: Arg, out: GroupsIR['orderBy']): void {
    const o = this.p.shape(x);
    if (o === null || o === undefined) return;
    if (!isObj(o)) throw fail('expected an object for order_by');
    const t = this.t;
    for (const [fn, val] of Object.entries(o)) {
      if (fn === 'count') {
        const dir = this.dir(val);
        if (dir) out.push({ k: 'agg', term: { fn: 'count' }, dir });
        continue;
      }
      const cols = aggregateColumns(t).find(([f]) => f === fn)?.[1];
      if (!cols) throw fail(`field "${fn}" not found in type: '${tn(t, '_aggregate_order_by')}'`);
      const given = this.p.shape(val);
      if (given === null || given === undefined) continue;
      if (!isObj(given)) throw fail('expected an object for order_by');
      for (const [field, v] of Object.entries(given)) {
        const c = cols.find((x) => x.field === field);
        if (!c) throw fail(`field "${field}" not found in type: '${tn(t, `_${fn}_order_by`)}'`);
        const dir = this.dir(v);
        const r = redactionOf(t, c.name);
        if (dir) out.push({ k: 'agg', term: { fn, column: c.name, ...(r ? { redact: r } : {}) }, dir });
      }
    }
  }

  /** The selection of `<t>_group`. */
  fields(node: FieldNode): GroupField[] {
    const t = this.t;
    const out: GroupField[] = [];
    for (const [key, nodes] of node.selectionSet ? this.p.collect(node.selectionSet) : []) {
      const n = this.p.merged(nodes);
      const name = n.name.value;
      if (name === '__typename') out.push({ key, k: 'typename', name: tn(t, '_group') });
      else if (name === 'keys') out.push({ key, k: 'keys', fields: this.keyFields(n, t, []) });
      else if (name === 'aggregate') out.push({ key, k: 'aggregate', fields: this.p.aggregateOps(n, t) });
      else throw fail(`field "${name}" not found in type: '${tn(t, '_group')}'`);
    }
    return out;
  }

  private keyFields(node: FieldNode, t: RoleTable, path: string[]): GroupKeyField[] {
    const out: GroupKeyField[] = [];
    for (const [key, nodes] of node.selectionSet ? this.p.collect(node.selectionSet) : []) {
      const n = this.p.merged(nodes);
      const name = n.name.value;
      if (name === '__typename') {
        out.push({ key, k: 'typename', name: tn(t, '_group_keys') });
        continue;
      }
      const c = t.columns.find((x) => x.field === name);
      if (c) {
        const unit = this.p.shape(this.p.args(n).truncate) ?? undefined;
        const index = this.find(path, c.name, unit as Unit | undefined);
        if (index < 0) {
          const what = [...path, name].join('.') + (unit ? ` truncated to ${String(unit)}` : '');
          throw new SvcError('validation-failed', `"${what}" is not a grouping key: give it in "group_by" or "group_by_keys"`, { path: `${this.p.at}.selectionSet.keys` });
        }
        out.push({ key, k: 'key', index, scalar: c.scalar, ...(this.p.stringify && c.scalar.stringify ? { asText: true } : {}) });
        continue;
      }
      const rel = t.relationships.find((r) => r.kind === 'object' && r.name === name);
      if (!rel) throw fail(`field "${name}" not found in type: '${tn(t, '_group_keys')}'`);
      out.push({ key, k: 'object', fields: this.keyFields(n, this.rs.remote(t, rel), [...path, rel.name]) });
    }
    return out;
  }
}

/** A `<t>_groups` or `<rel>_groups` field of the document -> GroupsIR (the role's permission folded in). */
export function planGroups(p: Planner, node: FieldNode, t: RoleTable): GroupsIR {
  const gp = new GroupsPlanner(p, t);
  const args = p.args(node);
  gp.groupBy(args);
  const terms: AggregateTerm[] = [];
  const having = gp.having(args.having, terms);
  const g: GroupsIR = {
    table: t.model.table,
    where: and(p.where(args.where, t), filterOf(t)),
    keys: gp.keys.map(({ path, ...k }) => ({ ...k, path: path.map(({ rel: _rel, ...s }) => s) })),
    ...(having ? { having: { terms, e: having } } : {}),
    orderBy: gp.orderBy(args.order_by),
    fields: gp.fields(node),
  };
  for (const name of ['limit', 'offset'] as const) {
    const v = args[name];
    if (v === undefined || v === null) continue;
    if (typeof v === 'number' && v < 0) {
      throw new SvcError('validation-failed', "expected a non-negative 32-bit integer for type 'Int', but found an integer", { path: `${p.at}.args.${name}` });
    }
    g[name] = p.leaf(v, false);
  }
  if (t.perm?.limit !== undefined) g.limitCap = t.perm.limit;
  return g;
}

groupsPlanning.plan = planGroups;
