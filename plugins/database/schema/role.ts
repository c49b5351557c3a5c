/**
 * One role's view of the tracked tables of every source, and the GraphQL types generated from it
 * as Hasura v2 names them (`<t>`, `<t>_bool_exp`, `<t>_order_by`, `<t>_select_column`,
 * `<t>_aggregate`, `<t>_aggregate_fields`, `<t>_sum_fields`..., `<scalar>_comparison_exp`, `order_by`).
 * Types are made on first use (fields as thunks, so relationships may cycle) and defined in the
 * role's shared TypeRegistry, where shared ones (scalars, comparison expressions, `order_by`) are
 * looked up before being defined.
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLString,
  specifiedScalarTypes,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
} from 'graphql';
import type { TypeRegistry } from '../../../core/plugin.js';
import type { AggregateFunction, Aggregates, Dialect, EnumValue, JoinedField, OperatorSpec, ScalarType } from '../model/types.js';
import { DEFAULT_AGGREGATES } from '../model/scalars.js';
import type { ResolvedSource, ResolvedTable } from '../model/resolved.js';
import type { FunctionModel, ResolvedColumn, ResolvedComputedField, ResolvedFunctionArg, ResolvedRelationship, SelectPermissionIR, TableModel } from '../model/resolved.js';
import { GENERIC_OPERATOR_NAMES } from '../model/boolexp.js';
import { qtKey } from '../model/meta.js';
import { sourceNames, tn } from './names.js';
import { KeyedView } from '../../../lib/keyed-view.js';

/*
 * Note [Enum table references]
 * A column whose single-column foreign key points at a tracked enum table (`is_enum`) is typed by
 * that table's GraphQL enum `<t>_enum` (its rows, sorted by value, comments as descriptions),
 * with `<t>_enum_comparison_exp` (equality operators only) in boolean expressions, as Hasura
 * does. Only the GraphQL types change: the column is still read, compared and bound as its own
 * type, so planning and SQL know nothing of enums. The reference is found here, per role schema
 * (one build), from the build's tables, not in the resolved table model: a model is reused while
 * its own metadata is untouched (Note in model/resolved.ts), and marking another table as an
 * enum, or its values changing, must retype the column without touching this table's metadata.
 */

/** Marks an input position that holds a column's value: as in Hasura, it reads the value by the
 * column's database type, so a string is taken where the GraphQL scalar (Int, Float, Boolean)
 * would refuse one (Note [Text literals at marked positions] in plugins/graphql/prepare.ts). */
export const COLUMN_VALUE = Object.freeze({ textLiteral: true });

/** The COLUMN_VALUE mark for a value of `s`; none for an array, a list whose items GraphQL checks
 * (Note [Array columns] in plugins/postgres/dialect.ts). */
export const columnValue = (s: ScalarType): { extensions?: typeof COLUMN_VALUE } => (s.array ? {} : { extensions: COLUMN_VALUE });

export interface EnumRef {
  /** `<enum table's GraphQL name>_enum`. */
  name: string;
  values: readonly EnumValue[];
}

/** The enum references of a table's columns (Note [Enum table references]); one shared empty
 * map where there are none (most tables: a role's schema makes this for every table). */
function enumRefs(source: ResolvedSource, m: TableModel): ReadonlyMap<string, EnumRef> {
  if (!hasEnumTables(source)) return NO_ENUMS;
  let out: Map<string, EnumRef> | undefined;
  const seen = new Set<string>();
  for (const fk of source.tables.get(m.key)?.info.foreignKeys ?? []) {
    if (fk.columns.length !== 1) continue;
    const ref = source.tables.get(qtKey({ schema: fk.refSchema, name: fk.refTable }));
    if (!ref?.meta.is_enum || !ref.enumValues?.length || !ref.model?.inSchema) continue;
    const col = fk.columns[0]!;
    out ??= new Map();
    // Two enum tables for one column: neither (an ambiguous reference).
    if (seen.has(col)) out.delete(col);
    else out.set(col, { name: tn({ source, model: ref.model }, '_enum'), values: ref.enumValues });
    seen.add(col);
  }
  return out ?? NO_ENUMS;
}
const NO_ENUMS: ReadonlyMap<string, EnumRef> = new Map();

/** Whether the source tracks an enum table (a resolved source is one build's: cached on it):
 * looked for in its metadata's list, a walk of pointers, rather than through its map of resolved
 * tables (a layered map's walk: about a millisecond at 10,000 tables, for a role's first
 * request after every change); enumRefs checks the tables it finds. */
function hasEnumTables(source: ResolvedSource): boolean {
  let has = enumSources.get(source);
  if (has === undefined) enumSources.set(source, (has = source.meta.tables.some((t) => t.is_enum)));
  return has;
}
const enumSources = new WeakMap<ResolvedSource, boolean>();

/** `xs` where every element passes (most tables, for most roles: no copy), else those that do. */
function kept<T>(xs: readonly T[], keep: (x: T) => boolean): readonly T[] {
  return xs.every(keep) ? xs : xs.filter(keep);
}
/** The empty list of a role table's columns, relationships or computed fields. */
const NONE: readonly never[] = [];

/** A table as one role sees it. */
const NO_JOINED: Readonly<Record<string, JoinedField>> = Object.freeze({});

export interface RoleTable {
  source: ResolvedSource;
  model: TableModel;
  /** The role's select permission; undefined for admin. */
  perm: SelectPermissionIR | undefined;
  /** The columns the role may select, in table order (the model's own list where it may select
   * all of them: never changed). */
  readonly columns: readonly ResolvedColumn[];
  /** Relationships to tables the role may select (the model's own list where all are). */
  readonly relationships: readonly ResolvedRelationship[];
  /** Whether the role may aggregate the table. */
  aggregates: boolean;
  /** Columns typed by an enum table, by column name (Note [Enum table references]). */
  enums: ReadonlyMap<string, EnumRef>;
  /** Computed fields the role may read: scalar ones and ones of declared columns that its
   * permission lists, those returning a table's rows where it may select the table. */
  readonly computedFields: readonly ResolvedComputedField[];
  /** Whether the role may select the table (a table it may only write has no columns here). */
  selectable: boolean;
  /** Whether the role has an object type of the table: it may select a column of it. A role
   * whose permission lists no column may only count the rows (`<t>_aggregate`), as in Hasura. */
  hasObject: boolean;
}

/** A tracked function as one role sees it: it may call it, and select its table. */
export interface RoleFunction {
  source: ResolvedSource;
  model: FunctionModel;
  table: RoleTable;
}

/** Whether a role's select permission shows a computed field it lists (a scalar one, or one of
 * declared columns). Rows of declared columns cannot be hidden row by row (Note [Inherited roles]
 * in model/inherit.ts): an inherited role sees them only where no parent that gives it rows
 * hides them (Note [Computed fields by argument mapping] in metadata/computed-fields.ts). */
const listed = (perm: SelectPermissionIR, cf: ResolvedComputedField): boolean =>
  cf.returns.k !== 'table' && perm.computedFields.has(cf.name) && (cf.returns.k === 'scalar' || !perm.redact?.has(cf.name));

const nn = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLNonNull(t);
const list = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLList(t);

/** A value's GraphQL type: a scalar, or a list of a scalar (an array type). */
export type ValueType = GraphQLScalarType | GraphQLList<GraphQLNonNull<GraphQLScalarType>>;

const BUILTIN = new Map<string, GraphQLScalarType>(specifiedScalarTypes.map((s) => [s.name, s]));

/** A table's columns as a write keeps them of its rows (UpdateIR.tableColumns: Note [Written rows
 * as columns] in plugins/postgres/sql/compile-mutation.ts), one list per table model (a plan of
 * `update_<t>_many` names it once per update). */
export function tableColumnsOf(t: RoleTable): readonly string[] {
  let columns = modelColumns.get(t.model);
  if (!columns) modelColumns.set(t.model, (columns = t.model.columns.map((c) => c.name)));
  return columns;
}
const modelColumns = new WeakMap<object, readonly string[]>();

export const ORDER_BY_VALUES = {
  asc: 'in ascending order, nulls last',
  asc_nulls_first: 'in ascending order, nulls first',
  asc_nulls_last: 'in ascending order, nulls last',
  desc: 'in descending order, nulls first',
  desc_nulls_first: 'in descending order, nulls first',
  desc_nulls_last: 'in descending order, nulls last',
} as const;

/** The aggregate functions of a table's kind (Note [Aggregates of a kind] in model/scalars.ts). */
export const aggregatesOf = (t: RoleTable): Aggregates => t.source.kind.dialect.aggregates ?? DEFAULT_AGGREGATES;

/** The aggregate functions over a table's columns the role may select, with their columns, by
 * name; each with its definition. */
export function aggregateColumns(t: RoleTable): [string, ResolvedColumn[], AggregateFunction][] {
  const aggregates = aggregatesOf(t);
  // Enum references have no aggregates in Hasura (they are not of a scalar type).
  const candidates = t.columns.filter((c) => !t.enums.has(c.name));
  const out: [string, ResolvedColumn[], AggregateFunction][] = [];
  for (const fn of Object.keys(aggregates).sort()) {
    const def = aggregates[fn]!;
    const cols = candidates.filter((c) => def.applies(c.scalar));
    if (cols.length) out.push([fn, cols, def]);
  }
  return out;
}

/** A role's tables by `source\0key` (Note [Role tables on demand]). */
export interface RoleTableMap extends ReadonlyMap<string, RoleTable> {
  /** Those of the sources `only` takes (every source without it), in order; the others' are
   * not made. */
  of(only?: (s: ResolvedSource) => boolean): Iterable<RoleTable>;
}

/*
 * Note [Role tables on demand]
 * A role's schema sees a table through a RoleTable: its columns, relationships and computed
 * fields as the role's permission shows them. Made for every table when the role's schema was
 * (after every metadata change, for each role), they cost its first request at 10,000 tables
 * about 40 ms; a request reaches a few (Note [Root fields by name] in core/schema/assembly.ts).
 * So `RoleSchema.tables` and `.writable` make a table's when it is first asked for, and keep it;
 * walking them makes every one, in the sources' and their tables' order. A table's
 * relationships and computed fields, which ask whether the role may select the tables they
 * reach, are found when first read.
 */

/** A role's tables by `source\0key`, each made by `make` when first asked for (Note [Role tables
 * on demand]); `make` gives undefined for a table the role does not see. */
class RoleTables extends KeyedView<string, RoleTable> implements RoleTableMap {
  private readonly made = new Map<string, RoleTable | null>();
  private readonly byName: ReadonlyMap<string, ResolvedSource>;

  constructor(
    private readonly sources: readonly ResolvedSource[],
    private readonly make: (source: ResolvedSource, rt: ResolvedTable, key: string) => RoleTable | undefined,
  ) {
    super();
    this.byName = new Map(sources.map((s) => [s.name, s]));
  }

  get(key: string): RoleTable | undefined {
    let t = this.made.get(key);
    if (t === undefined) {
      const at = key.indexOf('\0');
      const source = at < 0 ? undefined : this.byName.get(key.slice(0, at));
      const rt = source?.tables.get(key.slice(at + 1));
      t = (rt && this.make(source!, rt, key)) ?? null;
      this.made.set(key, t);
    }
    return t ?? undefined;
  }

  *keys(): MapIterator<string> {
    for (const source of this.sources) {
      for (const key of source.tables.keys()) {
        const k = `${source.name}\0${key}`;
        if (this.get(k)) yield k;
      }
    }
  }

  *of(only?: (s: ResolvedSource) => boolean): Iterable<RoleTable> {
    for (const source of this.sources) {
      if (only && !only(source)) continue;
      for (const key of source.tables.keys()) {
        const t = this.get(`${source.name}\0${key}`);
        if (t) yield t;
      }
    }
  }
}

/** A table the role may select (Note [Role tables on demand]). */
class SelectedTable implements RoleTable {
  readonly columns: readonly ResolvedColumn[];
  readonly aggregates: boolean;
  readonly enums: ReadonlyMap<string, EnumRef>;
  readonly selectable = true;
  readonly hasObject: boolean;
  #relationships: readonly ResolvedRelationship[] | undefined;
  #computedFields: readonly ResolvedComputedField[] | undefined;

  constructor(
    private readonly rs: RoleSchema,
    readonly source: ResolvedSource,
    readonly model: TableModel,
    readonly perm: SelectPermissionIR | undefined,
  ) {
    this.columns = perm ? kept(model.columns, (c) => perm.columns.has(c.name)) : model.columns;
    this.aggregates = !perm || perm.allowAggregations;
    this.enums = enumRefs(source, model);
    // Hasura: a permission with no columns but computed fields it lists still shows the
    // table (those it shows: see computedFields).
    this.hasObject = !perm || perm.columns.size > 0 || (model.computedFields ?? []).some((cf) => listed(perm, cf));
  }

  get relationships(): readonly ResolvedRelationship[] {
    return (this.#relationships ??= kept(this.model.relationships, (r) => this.rs.hasObject(`${this.source.name}\0${r.remoteKey}`)));
  }

  get computedFields(): readonly ResolvedComputedField[] {
    return (this.#computedFields ??= kept(this.model.computedFields ?? NONE, (cf) =>
      cf.returns.k === 'table' ? this.rs.hasObject(`${this.source.name}\0${cf.returns.key}`) : !this.perm || listed(this.perm, cf),
    ));
  }
}

export class RoleSchema {
  /** Tables the role may select, by `source\0key`, in the sources' order; each made when first
   * asked for (Note [Role tables on demand]). */
  readonly tables: RoleTableMap;
  /** Tracked functions the role may call. */
  readonly functions: RoleFunction[] = [];
  /** Tables the role has a mutation permission on (admin: all), by `source\0key`, as `tables`. */
  readonly writable: RoleTableMap;

  /** The fields other plugins join to a table's rows (Note [Joined fields] in ./joins.ts), set
   * by the contributor. */
  joinedOf: ((t: RoleTable) => Readonly<Record<string, JoinedField>> | undefined) | undefined;
  private readonly joinedMemo = new Map<RoleTable, Readonly<Record<string, JoinedField>>>();

  /** `<rel>_groups` of an array relationship (./groups.ts), when the role gets it; set by the
   * contributor. */
  groupsField: ((t: RoleTable, r: ResolvedRelationship) => GraphQLFieldConfig<unknown, unknown> | undefined) | undefined;

  joined(t: RoleTable): Readonly<Record<string, JoinedField>> {
    if (!this.joinedOf) return NO_JOINED;
    let j = this.joinedMemo.get(t);
    if (!j) this.joinedMemo.set(t, (j = this.joinedOf(t) ?? NO_JOINED));
    return j;
  }

  constructor(
    readonly role: string,
    readonly isAdmin: boolean,
    sources: Iterable<ResolvedSource>,
    private readonly types: TypeRegistry,
    /** `--infer-function-permissions`: a select permission on a function's table lets a role
     * call the function without a function permission (Hasura's default). */
    inferFunctionPermissions = true,
    /** `--stringify-numeric-types`: big numbers (ScalarType.stringify) as JSON strings. */
    readonly stringifyNumbers = false,
  ) {
    const all = [...sources];
    const select = all.filter((s) => s.kind.dialect.compileSelect);
    const tables = new RoleTables(select, (source, rt) => {
      const m = rt.model;
      if (!m || !m.inSchema) return undefined;
      const perm = isAdmin ? undefined : m.select.get(role);
      if (!isAdmin && !perm) return undefined;
      return new SelectedTable(this, source, m, perm);
    });
    this.tables = tables;
    // Tables the role may write: those it may select, and the others it has a mutation permission on.
    this.writable = new RoleTables(
      all.filter((s) => s.kind.dialect.compileMutation),
      (source, rt, key) => {
        const m = rt.model;
        if (!m || !m.inSchema) return undefined;
        if (!isAdmin && !m.insert.has(role) && !m.update.has(role) && !m.delete.has(role)) return undefined;
        return (
          tables.get(key) ?? {
            source,
            model: m,
            perm: undefined,
            columns: NONE,
            relationships: NONE,
            aggregates: false,
            enums: enumRefs(source, m),
            computedFields: NONE,
            selectable: false,
            hasObject: false,
          }
        );
      },
    );
    for (const source of all) {
      for (const f of source.functions.values()) {
        const m = f.model;
        const table = m && this.tables.get(`${source.name}\0${m.returnsKey}`);
        if (!m || !m.inSchema || !table?.hasObject) continue;
        if (!isAdmin && !m.permissions.has(role) && !inferFunctionPermissions) continue;
        this.functions.push({ source, model: m, table });
      }
    }
  }

  /** Whether the role may select a column of the table `key` (`source\0key`) names. */
  hasObject(key: string): boolean {
    return this.tables.get(key)?.hasObject === true;
  }

  /** The table whose rows a set-returning computed field gives. */
  computedRemote(t: RoleTable, cf: ResolvedComputedField): RoleTable {
    return this.tables.get(`${t.source.name}\0${(cf.returns as { key: string }).key}`)!;
  }

  remote(t: RoleTable, r: ResolvedRelationship): RoleTable {
    return this.tables.get(`${t.source.name}\0${r.remoteKey}`)!;
  }

  private named<T extends GraphQLNamedType>(name: string, make: () => T): T {
    return (this.types.get(name) as T | undefined) ?? this.types.define(make());
  }

  // -------------------------------------------------------------------------------------------
  // Shared types

  scalar(s: ScalarType): GraphQLScalarType {
    return BUILTIN.get(s.graphql) ?? this.named(s.graphql, () => new GraphQLScalarType({ name: s.graphql }));
  }

  /** The GraphQL type of a value of `s` (nullability aside): its scalar, or for an array type
   * shown as a list the list of its element's scalar, items non-null (`[String!]`; Note [Array
   * columns] in plugins/postgres/dialect.ts). */
  valueType(s: ScalarType): ValueType {
    return s.element ? list(nn(this.scalar(s.element))) : this.scalar(s);
  }

  orderByEnum(): GraphQLEnumType {
    return this.named('order_by', () =>
      new GraphQLEnumType({
        name: 'order_by',
        description: 'column ordering options',
        values: Object.fromEntries(Object.entries(ORDER_BY_VALUES).map(([k, d]) => [k, { description: d }])),
      }),
    );
  }

  /** `<scalar>_comparison_exp`: the generic operators and the dialect's that apply to the type. */
  comparisonExp(c: Pick<ResolvedColumn, 'scalar' | 'type'>, dialect: Dialect): GraphQLInputObjectType {
    // An array's is named after its element's scalar, `_array` added (`String_array_comparison_exp`).
    // A kind may set its comparison types apart (Dialect.comparisonTypeInfix: Hasura's
    // `String_MSSQL_comparison_exp`), so that kinds with other operators share no type.
    const infix = dialect.comparisonTypeInfix ?? '';
    const name = `${c.scalar.graphql}${c.scalar.element ? '_array' : ''}${infix}_comparison_exp`;
    return this.named(name, () => {
      const s = this.valueType(c.scalar);
      const fields: GraphQLInputFieldConfigMap = {};
      const operand = (kind: string): GraphQLInputType | undefined =>
        kind === 'one' ? s : kind === 'many' ? list(nn(s)) : kind === 'bool' ? GraphQLBoolean : kind === 'text' ? GraphQLString : kind === 'texts' ? list(nn(GraphQLString)) : undefined;
      // A value of the column's own type reads as the column does (COLUMN_VALUE).
      const config = (kind: string, type: GraphQLInputType) => ((kind === 'one' || kind === 'many') && !c.scalar.array ? { type, extensions: COLUMN_VALUE } : { type });
      for (const [op, kind] of GENERIC_OPERATOR_NAMES) {
        const type = operand(kind);
        if (type) fields[`_${op}`] = config(kind, type);
      }
      for (const [op, spec] of Object.entries(dialect.operators)) {
        if (spec.guard && !spec.guard.ok(c.type)) continue;
        const type = spec.operand === 'object' && spec.object ? this.operandObject(spec.object(c.type), s, dialect) : operand(spec.operand);
        if (type) fields[`_${op}`] = config(spec.operand, type);
      }
      const casts = dialect.castTargets?.(c.type) ?? [];
      if (casts.length) {
        const castName = `${c.scalar.graphql}${infix}_cast_exp`;
        fields._cast = {
          type: this.named(castName, () =>
            new GraphQLInputObjectType({
              name: castName,
              fields: () => Object.fromEntries(casts.map((to) => {
                const scalar = dialect.scalar(to);
                return [scalar.graphql, { type: this.comparisonExp({ scalar, type: to }, dialect) }];
              })),
            }),
          ),
        };
      }
      const sorted = Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
      return new GraphQLInputObjectType({
        name,
        description: `Boolean expression to compare columns of type "${c.scalar.graphql}". All fields are combined with logical 'AND'.`,
        fields: sorted,
      });
    });
  }

  /** The input type of an operator's object operand (OperatorSpec.object); `self` the column's scalar. */
  private operandObject(o: ReturnType<NonNullable<OperatorSpec['object']>>, self: GraphQLInputType, dialect: Dialect): GraphQLInputObjectType {
    const builtIn = { Float: GraphQLFloat, Boolean: GraphQLBoolean, Int: GraphQLInt };
    return this.named(o.name, () =>
      new GraphQLInputObjectType({
        name: o.name,
        fields: Object.fromEntries(Object.entries(o.fields).map(([k, f]) => {
          const base = f.type === 'self' ? self : typeof f.type === 'string' ? builtIn[f.type] : this.valueType(dialect.scalar(f.type));
          return [k, { type: f.required ? nn(base) : base, ...(f.default !== undefined ? { defaultValue: f.default } : {}) }];
        })),
      }),
    );
  }

  /** `<t>_enum`: the values of an enum table (Note [Enum table references]). */
  enumType(e: EnumRef): GraphQLEnumType {
    return this.named(e.name, () =>
      new GraphQLEnumType({
        name: e.name,
        values: Object.fromEntries(
          [...e.values]
            .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
            .map((v) => [v.value, { value: v.value, ...(v.comment !== null ? { description: v.comment } : {}) }]),
        ),
      }),
    );
  }

  /** `<t>_enum_comparison_exp`: Hasura gives enum references the equality operators only. */
  enumComparisonExp(e: EnumRef): GraphQLInputObjectType {
    const name = `${e.name}_comparison_exp`;
    return this.named(name, () => {
      const type = this.enumType(e);
      return new GraphQLInputObjectType({
        name,
        description: `Boolean expression to compare columns of type "${e.name}". All fields are combined with logical 'AND'.`,
        fields: { _eq: { type }, _in: { type: list(nn(type)) }, _is_null: { type: GraphQLBoolean }, _neq: { type }, _nin: { type: list(nn(type)) } },
      });
    });
  }

  /** A column's GraphQL type (nullability aside): its enum, or its scalar. */
  columnType(t: RoleTable, c: ResolvedColumn): ValueType | GraphQLEnumType {
    const e = t.enums.get(c.name);
    return e ? this.enumType(e) : this.valueType(c.scalar);
  }

  /** `<name>_args`: the user arguments of a function, those with a default first (Hasura's order);
   * every field optional, since PostgreSQL arguments are nullable (a missing one without a
   * default is refused when planning, as Hasura does). */
  functionArgs(name: string, inputs: readonly ResolvedFunctionArg[]): GraphQLInputObjectType {
    return this.named(name, () => {
      const fields: GraphQLInputFieldConfigMap = {};
      for (const a of [...inputs.filter((x) => x.hasDefault), ...inputs.filter((x) => !x.hasDefault)]) {
        // The argument's scalar is the dialect's (Dialect.argumentScalar: PostgreSQL gives a
        // row-typed one as text).
        fields[a.field] = { type: this.valueType(a.scalar), ...columnValue(a.scalar) };
      }
      return new GraphQLInputObjectType({ name, fields });
    });
  }

  // -------------------------------------------------------------------------------------------
  // Per-table types

  /** The `args` argument of a computed field, when its function takes arguments of the user's. */
  private computedArgs(t: RoleTable, cf: ResolvedComputedField): GraphQLFieldConfigArgumentMap {
    if (cf.call.inputs.length === 0) return {};
    return {
      args: {
        type: nn(this.functionArgs(sourceNames(t.source).type(`${cf.name}_${t.model.name}_args`), cf.call.inputs)),
        description: `input parameters for computed field "${cf.name}" defined on table "${t.model.table.name}"`,
      },
    };
  }

  /** `<computed field>__fields`: the rows of a computed field whose function declares its
   * columns (Note [Computed fields by argument mapping] in metadata/computed-fields.ts), every
   * field nullable, in the declared order. Hasura names it after the computed field alone, so
   * computed fields of one name share it; one whose columns differ from those of the computed
   * field that defined the name is refused when planning (`clashes`), never answered under the
   * other's fields. */
  computedColumns(t: RoleTable, cf: ResolvedComputedField): GraphQLObjectType {
    const columns = (cf.returns as Extract<ResolvedComputedField['returns'], { k: 'columns' }>).columns;
    const name = sourceNames(t.source).type(`${cf.name}__fields`);
    const shape = columns.map((c) => `${c.name}:${c.scalar.graphql}${c.scalar.element ? '[]' : ''}`).join(',');
    const made = this.named(name, () => {
      this.columnShapes.set(name, shape);
      return new GraphQLObjectType({
        name,
        description: `column fields returning by "${cf.name}"`,
        fields: () => Object.fromEntries(columns.map((c) => [c.name, { type: this.valueType(c.scalar) }])),
      });
    });
    if (this.columnShapes.get(name) !== shape) this.clashing.add(`${t.source.name}\0${t.model.key}\0${cf.name}`);
    return made;
  }

  /** Whether the type computedColumns gave `cf` is another computed field's, of other columns
   * (or another type of that name). */
  clashes(t: RoleTable, cf: ResolvedComputedField): boolean {
    return this.clashing.has(`${t.source.name}\0${t.model.key}\0${cf.name}`);
  }

  /** The names of `<computed field>__fields` types and the columns of the computed field that
   * made each; the computed fields whose columns differ from their type's. */
  private readonly columnShapes = new Map<string, string>();
  private readonly clashing = new Set<string>();

  object(t: RoleTable): GraphQLObjectType {
    const name = tn(t);
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: t.model.description ?? `columns and relationships of "${t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLFieldConfigMap<unknown, unknown> = {};
          for (const c of t.columns) {
            const type = this.columnType(t, c);
            fields[c.field] = {
              // An inherited role's redacted column is null where its value is hidden.
              type: c.nullable || t.perm?.redact?.has(c.name) ? type : nn(type),
              ...(c.scalar.category === 'json' && !c.scalar.array ? { args: { path: { type: GraphQLString, description: 'JSON select path' } } } : {}),
              ...(c.description ? { description: c.description } : {}),
            };
          }
          for (const r of t.relationships) {
            const remote = this.remote(t, r);
            const description = r.description ?? (r.kind === 'object' ? 'An object relationship' : 'An array relationship');
            if (r.kind === 'object') fields[r.name] = { type: this.object(remote), description };
            else {
              fields[r.name] = { type: nn(list(nn(this.object(remote)))), args: this.selectArgs(remote), description };
              if (remote.aggregates) {
                fields[`${r.name}_aggregate`] = { type: nn(this.aggregate(remote)), args: this.selectArgs(remote), description: 'An aggregate relationship' };
              }
              const groups = this.groupsField?.(t, r);
              if (groups) fields[`${r.name}_groups`] = groups;
            }
          }
          for (const cf of t.computedFields) {
            const args = this.computedArgs(t, cf);
            if (cf.returns.k === 'scalar') fields[cf.name] = { type: this.valueType(cf.returns.scalar), args, description: cf.description };
            else if (cf.returns.k === 'columns') fields[cf.name] = { type: nn(list(nn(this.computedColumns(t, cf)))), args, description: cf.description };
            else {
              const remote = this.computedRemote(t, cf);
              fields[cf.name] = { type: nn(list(nn(this.object(remote)))), args: { ...args, ...this.selectArgs(remote) }, description: cf.description };
            }
          }
          // Fields other plugins join to the rows (Note [Joined fields] in ./joins.ts).
          for (const [n, j] of Object.entries(this.joined(t))) fields[n] = j.config;
          // Fields other plugins add come first, so that a clash with one of ours is reported;
          // then all by name, as Hasura lists an object's fields.
          const all = { ...this.types.extensions(name), ...fields };
          return Object.fromEntries(Object.keys(all).sort().map((k) => [k, all[k]!]));
        },
      }),
    );
  }

  selectArgs(t: RoleTable): GraphQLFieldConfigArgumentMap {
    return {
      distinct_on: { type: list(nn(this.selectColumn(t))), description: 'distinct select on columns' },
      limit: { type: GraphQLInt, description: 'limit the number of rows returned' },
      offset: { type: GraphQLInt, description: 'skip the first n rows. Use only with order_by' },
      // An input object needs a field: nothing to order by (a role that may only count), no order_by.
      ...(this.hasOrderBy(t) ? { order_by: { type: list(nn(this.orderBy(t))), description: 'sort the rows by one or more columns' } } : {}),
      where: { type: this.boolExp(t), description: 'filter the rows returned' },
    };
  }

  /** Whether `<t>_order_by` has a field (the fields `orderBy` lists). */
  hasOrderBy(t: RoleTable): boolean {
    return (
      t.columns.length > 0 ||
      t.relationships.some((r) => r.kind === 'object' || this.remote(t, r).aggregates) ||
      t.computedFields.some((cf) => cf.returns.k === 'scalar' && cf.call.inputs.length === 0)
    );
  }

  /** Whether the table has a primary key whose columns the role may all select (so `<t>_by_pk`). */
  hasPk(t: RoleTable): boolean {
    const pk = t.model.primaryKey;
    return !!pk && pk.length > 0 && pk.every((name) => t.columns.some((c) => c.name === name));
  }

  pkArgs(t: RoleTable): GraphQLFieldConfigArgumentMap | undefined {
    const pk = t.model.primaryKey;
    if (!pk || !this.hasPk(t)) return undefined;
    const args: GraphQLFieldConfigArgumentMap = {};
    for (const name of pk) {
      const c = t.columns.find((x) => x.name === name);
      if (!c) return undefined;
      args[c.field] = { type: nn(this.columnType(t, c)), ...columnValue(c.scalar) };
    }
    return args;
  }

  boolExp(t: RoleTable): GraphQLInputObjectType {
    const name = `${tn(t, `_bool_exp`)}`;
    return this.named(name, () => {
      const self: GraphQLInputObjectType = new GraphQLInputObjectType({
        name,
        description: `Boolean expression to filter rows from the table "${t.model.table.name}". All fields are combined with a logical 'AND'.`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = {
            _and: { type: list(nn(self)) },
            _not: { type: self },
            _or: { type: list(nn(self)) },
          };
          for (const c of t.columns) {
            const e = t.enums.get(c.name);
            if (e) fields[c.field] = { type: this.enumComparisonExp(e) };
            else if (c.scalar.comparable) fields[c.field] = { type: this.comparisonExp(c, t.source.kind.dialect) };
          }
          for (const r of t.relationships) fields[r.name] = { type: this.boolExp(this.remote(t, r)) };
          // Computed fields without user arguments (Hasura's limitation).
          for (const cf of t.computedFields) {
            if (cf.call.inputs.length > 0) continue;
            if (cf.returns.k === 'table') fields[cf.name] = { type: this.boolExp(this.computedRemote(t, cf)) };
            else if (cf.returns.k === 'scalar' && cf.returns.scalar.comparable) fields[cf.name] = { type: this.comparisonExp(cf.returns, t.source.kind.dialect) };
          }
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      });
      return self;
    });
  }

  orderBy(t: RoleTable): GraphQLInputObjectType {
    const name = `${tn(t, `_order_by`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `Ordering options when selecting data from "${t.model.table.name}".`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = {};
          for (const c of t.columns) fields[c.field] = { type: this.orderByEnum() };
          for (const r of t.relationships) if (r.kind === 'object') fields[r.name] = { type: this.orderBy(this.remote(t, r)) };
          for (const cf of t.computedFields) if (cf.returns.k === 'scalar' && cf.call.inputs.length === 0) fields[cf.name] = { type: this.orderByEnum() };
          for (const r of t.relationships) {
            const remote = this.remote(t, r);
            if (r.kind === 'array' && remote.aggregates) fields[`${r.name}_aggregate`] = { type: this.aggregateOrderBy(remote) };
          }
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      }),
    );
  }

  /** `<t>_aggregate_order_by`: ordering by an aggregate of an array relationship's rows. */
  aggregateOrderBy(t: RoleTable): GraphQLInputObjectType {
    const name = `${tn(t, `_aggregate_order_by`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `order by aggregate values of table "${t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = { count: { type: this.orderByEnum() } };
          for (const [fn, cols] of aggregateColumns(t)) {
            fields[fn] = {
              type: this.named(`${tn(t, `_${fn}_order_by`)}`, () =>
                new GraphQLInputObjectType({
                  name: `${tn(t, `_${fn}_order_by`)}`,
                  description: `order by ${fn}() on columns of table "${t.model.table.name}"`,
                  fields: Object.fromEntries(cols.map((c) => [c.field, { type: this.orderByEnum() }])),
                }),
              ),
            };
          }
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      }),
    );
  }

  selectColumn(t: RoleTable): GraphQLEnumType {
    const name = `${tn(t, `_select_column`)}`;
    return this.named(name, () =>
      new GraphQLEnumType({
        name,
        description: `select columns of table "${t.model.table.name}"`,
        values: t.columns.length
          ? Object.fromEntries(t.columns.map((c) => [c.field, { description: 'column name' }]))
          : // A GraphQL enum needs a value; Hasura's placeholder for a table with none selectable.
            { _PLACEHOLDER: { description: 'placeholder (do not use)' } },
      }),
    );
  }

  aggregate(t: RoleTable): GraphQLObjectType {
    const name = `${tn(t, `_aggregate`)}`;
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `aggregated selection of "${t.model.table.name}"`,
        fields: () => ({
          aggregate: { type: this.aggregateFields(t) },
          ...(t.hasObject ? { nodes: { type: nn(list(nn(this.object(t)))) } } : {}),
        }),
      }),
    );
  }

  aggregateFields(t: RoleTable): GraphQLObjectType {
    const name = `${tn(t, `_aggregate_fields`)}`;
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `aggregate fields of "${t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLFieldConfigMap<unknown, unknown> = {
            // Without a column it may select, a role counts rows only (Hasura: no `columns` argument).
            count: { type: nn(GraphQLInt), args: t.columns.length ? { columns: { type: list(nn(this.selectColumn(t))) }, distinct: { type: GraphQLBoolean } } : {} },
          };
          for (const [fn, cols, def] of aggregateColumns(t)) fields[fn] = { type: this.fnFields(t, fn, cols, def) };
          return fields;
        },
      }),
    );
  }

  private fnFields(t: RoleTable, fn: string, cols: ResolvedColumn[], def: AggregateFunction): GraphQLObjectType {
    const name = `${tn(t, `_${fn}_fields`)}`;
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `aggregate ${fn} on columns`,
        fields: () =>
          Object.fromEntries(
            cols.map((c) => {
              // sum, max and min keep the column's type; the statistics are Float.
              const type = def.result === 'column' ? this.scalar(c.scalar) : GraphQLFloat;
              return [c.field, { type }];
            }),
          ),
      }),
    );
  }
}
