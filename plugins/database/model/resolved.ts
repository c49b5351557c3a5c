/**
 * The resolved model of a tracked table (issue 6, spine item 1): what schema generation and
 * planning read, computed once per table entry in the `sources` build step and reused with the
 * entry while the table and what it refers to are untouched (see `resolveSource` in service.ts).
 *
 * - GraphQL names: the type name (custom name, identifier, or the table name with the schema
 *   prefix outside the dialect's default schema) and the select root field names;
 * - columns with their GraphQL field name, the dialect's scalar type, nullability, primary key;
 * - relationships as join column mappings (foreign keys resolved through the introspection);
 * - per role, the select permission compiled to the boolean-expression IR (Note [Values in the IR]).
 */
import * as v from '../../../core/valibot.js';
import { isGraphQLName } from '../../../core/validation.js';
import type { BoolIR, FunctionCallIR, Value } from '../ir/types.js';
import { functionReturnType, isSessionVariable } from './boolexp.js';
import { qtKey } from './meta.js';
import type {
  ColumnType,
  EnumValue,
  SourceConnection,
  SourceKind,
  SourceMeta,
  ComputedFieldMeta,
  Dialect,
  ForeignKeyInfo,
  FunctionInfo,
  FunctionMeta,
  QualifiedFunction,
  Introspection,
  QualifiedTable,
  RelationshipMeta,
  ScalarType,
  TableInfo,
  TableMeta,
} from './types.js';
import { columnGraphQLName, rootFieldNames, tableGraphQLName } from './naming.js';

// ---------------------------------------------------------------------------------------------
// Build output: the sources as the build resolved them

export interface ResolvedTable {
  meta: TableMeta;
  info: TableInfo;
  /** The values of an enum table (`is_enum`). */
  enumValues?: EnumValue[];
  /** Keys of the tables this table's metadata refers to (relationships, permissions). */
  deps: Set<string>;
  /** What schema generation and planning read (names, columns, joins, compiled permissions);
   * absent when the source kind's plugin cannot resolve it. */
  model?: TableModel;
  /** The model before inherited roles were added to it (Note [Inherited roles] in ./inherit.ts),
   * when they were: what a later build reuses. */
  base?: TableModel;
}

export interface ResolvedSource {
  name: string;
  kind: SourceKind;
  meta: SourceMeta;
  connection: SourceConnection | null;
  introspection: Introspection | null;
  /** In the order of the source's tables list; a layered map after a change (Note [Layered maps]
   * in lib/layered-map.ts). */
  tables: ReadonlyMap<string, ResolvedTable>;
  functions: Map<string, { meta: FunctionMeta; info: FunctionInfo; model?: FunctionModel }>;
}

export interface DatabaseBuild {
  sources: Map<string, ResolvedSource>;
}

export interface ResolvedColumn {
  name: string;
  /** The GraphQL field name (column_config / custom_column_names). */
  field: string;
  type: ColumnType;
  scalar: ScalarType;
  nullable: boolean;
  primaryKey: boolean;
  description: string | null;
}

export interface ResolvedRelationship {
  name: string;
  kind: 'object' | 'array';
  remote: QualifiedTable;
  remoteKey: string;
  /** Pairs (own column, remote column). */
  mapping: readonly (readonly [string, string])[];
  description: string | null;
}

/** A role's select permission, compiled. */
export interface SelectPermissionIR {
  /** Columns the role may read (source names). */
  columns: ReadonlySet<string>;
  filter: BoolIR;
  limit?: number;
  allowAggregations: boolean;
  /** The root fields the role gets (`query_root_fields`); undefined: all. */
  queryRootFields?: readonly string[];
  /** The subscription root fields the role gets (`subscription_root_fields`); undefined: all. */
  subscriptionRootFields?: readonly string[];
  /** Scalar computed fields the role may read (`computed_fields`). */
  computedFields: ReadonlySet<string>;
  /** An inherited role's columns and scalar computed fields whose value is shown only in the rows
   * where this holds, null elsewhere (Note [Inherited roles] in ./inherit.ts); absent for a role's
   * own permission. */
  redact?: ReadonlyMap<string, BoolIR>;
  /** The permissions an inherited role's combines, flattened (nested inherited roles). */
  parts?: readonly SelectPart[];
}

/** One parent permission of an inherited role's select permission. */
export interface SelectPart {
  filter: BoolIR;
  columns: ReadonlySet<string>;
  computedFields: ReadonlySet<string>;
}

/** A column preset of an insert or update permission (`set`): a static value or a session variable. */
export type Presets = ReadonlyMap<string, Value>;

/** A role's insert permission, compiled. */
export interface InsertPermissionIR {
  /** Columns the role may give (source names); preset columns are not among them. */
  columns: ReadonlySet<string>;
  check: BoolIR;
  set: Presets;
  /** Only for requests with the admin secret that ask for backend-only permissions. */
  backendOnly: boolean;
}

/** A role's update permission, compiled. */
export interface UpdatePermissionIR {
  columns: ReadonlySet<string>;
  filter: BoolIR;
  check: BoolIR;
  set: Presets;
  backendOnly: boolean;
}

/** A role's delete permission, compiled. */
export interface DeletePermissionIR {
  filter: BoolIR;
  backendOnly: boolean;
}

export type RootFieldKind =
  | 'select'
  | 'select_by_pk'
  | 'select_aggregate'
  | 'select_stream'
  | 'insert'
  | 'insert_one'
  | 'update'
  | 'update_by_pk'
  | 'update_many'
  | 'delete'
  | 'delete_by_pk';

/** A user-given argument of a SQL function (a field of `args`). */
export interface ResolvedFunctionArg {
  /** Its field in the `args` input object: the SQL name, or `arg_<n>` for an unnamed one. */
  field: string;
  /** The SQL name, for named notation; null: positional only. */
  name: string | null;
  type: ColumnType;
  scalar: ScalarType;
  hasDefault: boolean;
}

/** A SQL function as the data API calls it: every argument in the function's order, each a
 * user argument, the table row (computed fields) or the session variables as json. */
export interface ResolvedFunctionCall {
  function: QualifiedFunction;
  /** `column`: the argument is the row's column (`argument_mapping`). */
  params: ({ k: 'input' | 'row' | 'session'; arg: ResolvedFunctionArg } | { k: 'column'; arg: ResolvedFunctionArg; column: string })[];
  /** The user arguments alone: the fields of `args`. */
  inputs: ResolvedFunctionArg[];
}

export interface ResolvedComputedField {
  name: string;
  description: string;
  call: ResolvedFunctionCall;
  /** `columns`: rows of the columns the function declares (Note [Computed fields by argument
   * mapping] in metadata/computed-fields.ts), each with its GraphQL field (its name) and type. */
  returns:
    | { k: 'scalar'; type: ColumnType; scalar: ScalarType }
    | { k: 'table'; table: QualifiedTable; key: string }
    | { k: 'columns'; columns: readonly ReturnedColumn[] };
}

/** A column a function declares (`RETURNS TABLE<...>`) as a computed field returns it. */
export interface ReturnedColumn {
  name: string;
  type: ColumnType;
  scalar: ScalarType;
}

/** A tracked function (it returns the rows of a tracked table; the build checked it). */
export interface FunctionModel {
  function: QualifiedFunction;
  key: string;
  /** Its GraphQL name (custom name, or the name with the schema prefix outside the default schema). */
  name: string;
  inSchema: boolean;
  description: string | null;
  rootFields: { function: string; function_aggregate: string };
  call: ResolvedFunctionCall;
  returns: QualifiedTable;
  returnsKey: string;
  /** Whether the function returns a set (`SETOF t`); otherwise at most one row. */
  returnsSet: boolean;
  exposedAs: 'query' | 'mutation';
  /** Roles with a function permission. */
  permissions: ReadonlySet<string>;
}

export interface TableModel {
  table: QualifiedTable;
  key: string;
  /** The GraphQL type name the table's nodes are generated from. */
  name: string;
  /** Whether the table appears in the GraphQL schema (its name is a GraphQL name). */
  inSchema: boolean;
  description: string | null;
  rootFields: Record<RootFieldKind, { name: string; comment?: string }>;
  columns: ResolvedColumn[];
  columnsByName: ReadonlyMap<string, ResolvedColumn>;
  primaryKey: readonly string[] | null;
  relationships: ResolvedRelationship[];
  computedFields: ResolvedComputedField[];
  select: ReadonlyMap<string, SelectPermissionIR>;
  insert: ReadonlyMap<string, InsertPermissionIR>;
  update: ReadonlyMap<string, UpdatePermissionIR>;
  delete: ReadonlyMap<string, DeletePermissionIR>;
  /** Which mutations the relation allows (a view per its updatability; none for a materialized view). */
  mutable: { insert: boolean; update: boolean; delete: boolean };
  /** The primary key and unique constraints (`on_conflict`'s `<t>_constraint`). */
  constraints: readonly { name: string; columns: readonly string[] }[];
}

/** What the model of one table is resolved against. */
export interface ModelContext {
  dialect: Dialect;
  introspection: Introspection;
  /** Tracked tables that passed their own checks (by key). */
  tracked: ReadonlyMap<string, { meta: TableMeta; info: TableInfo | undefined }>;
  /** Relationships and permissions the build found inconsistent on this table. */
  inconsistentRelationships: ReadonlySet<string>;
  inconsistentSelectRoles: ReadonlySet<string>;
  /** Insert, update and delete permissions the build found inconsistent, as `<type>.<role>`. */
  inconsistentPermissions?: ReadonlySet<string>;
  inconsistentComputedFields?: ReadonlySet<string>;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

const QT = v.object({ schema: v.string(), name: v.string() });
const qtOf = (x: unknown): QualifiedTable | undefined => {
  const r = v.safeParse(QT, x);
  return r.success ? r.output : undefined;
};

const sameColumns = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((c) => b.includes(c));

/** The remote table and column pairs of a stored relationship, or undefined when it cannot be resolved. */
export function relationshipJoin(
  rel: RelationshipMeta,
  own: { meta: TableMeta; info: TableInfo },
  introspection: Introspection,
): { remote: QualifiedTable; mapping: [string, string][] } | undefined {
  const using = rel.using ?? {};
  const fk = using.foreign_key_constraint_on;
  if (typeof fk === 'string' || Array.isArray(fk)) {
    const cols = (typeof fk === 'string' ? [fk] : fk).map(String);
    const found = own.info.foreignKeys.filter((f) => sameColumns(f.columns, cols));
    if (found.length !== 1) return undefined;
    const f = found[0]!;
    return { remote: { schema: f.refSchema, name: f.refTable }, mapping: f.columns.map((c, i) => [c, f.refColumns[i]!]) };
  }
  if (isObject(fk)) {
    const remote = qtOf(fk.table);
    const cols = (fk.columns ?? (fk.column !== undefined ? [fk.column] : undefined)) as string[] | undefined;
    const remoteInfo = remote && introspection.tables.get(qtKey(remote));
    if (!remote || !cols || !remoteInfo) return undefined;
    const found = remoteInfo.foreignKeys.filter(
      (f: ForeignKeyInfo) => sameColumns(f.columns, cols) && f.refSchema === own.meta.table.schema && f.refTable === own.meta.table.name,
    );
    if (found.length !== 1) return undefined;
    const f = found[0]!;
    return { remote, mapping: f.refColumns.map((c, i) => [c, f.columns[i]!]) };
  }
  const manual = using.manual_configuration;
  if (isObject(manual) && isObject(manual.column_mapping)) {
    const remote = qtOf(manual.remote_table);
    if (!remote) return undefined;
    return { remote, mapping: Object.entries(manual.column_mapping).map(([a, b]) => [a, String(b)]) };
  }
  return undefined;
}

export function resolveTableModel(meta: TableMeta, info: TableInfo, ctx: ModelContext): TableModel {
  const key = qtKey(meta.table);
  const name = tableGraphQLName(meta, ctx.dialect.defaultSchema);
  const pk = info.primaryKey?.columns ?? null;
  const config = meta.configuration;
  const columns: ResolvedColumn[] = info.columns.map((c) => ({
    name: c.name,
    field: columnGraphQLName(config, c.name),
    type: c,
    scalar: ctx.dialect.scalar(c),
    nullable: c.nullable,
    primaryKey: pk?.includes(c.name) ?? false,
    description: config?.column_config?.[c.name]?.comment ?? c.description,
  }));
  const columnsByName = new Map(columns.map((c) => [c.name, c]));
  const relationships: ResolvedRelationship[] = [];
  for (const kind of ['object', 'array'] as const) {
    for (const rel of (meta[`${kind}_relationships`] as RelationshipMeta[] | undefined) ?? []) {
      if (ctx.inconsistentRelationships.has(rel.name)) continue;
      const join = relationshipJoin(rel, { meta, info }, ctx.introspection);
      if (!join || !ctx.tracked.get(qtKey(join.remote))?.info) continue;
      relationships.push({ name: rel.name, kind, remote: join.remote, remoteKey: qtKey(join.remote), mapping: join.mapping, description: rel.comment ?? null });
    }
  }
  const select = new Map<string, SelectPermissionIR>();
  for (const p of meta.select_permissions ?? []) {
    if (ctx.inconsistentSelectRoles.has(p.role)) continue;
    const perm = p.permission;
    const cols = perm.columns === '*' ? info.columns.map((c) => c.name) : Array.isArray(perm.columns) ? (perm.columns as string[]) : [];
    let filter: BoolIR;
    try {
      filter = compileStoredBoolExp(perm.filter ?? {}, { meta, info }, { meta, info }, ctx);
    } catch (e) {
      // A filter this engine cannot compile yet (computed fields, `_cast`) leaves the role without
      // the table: never a wider filter.
      if (e instanceof UnsupportedFilter) continue;
      throw e;
    }
    select.set(p.role, {
      columns: new Set(cols.filter((c) => columnsByName.has(c))),
      filter,
      limit: typeof perm.limit === 'number' ? perm.limit : undefined,
      allowAggregations: perm.allow_aggregations === true,
      queryRootFields: Array.isArray(perm.query_root_fields) ? (perm.query_root_fields as string[]) : undefined,
      subscriptionRootFields: Array.isArray(perm.subscription_root_fields) ? (perm.subscription_root_fields as string[]) : undefined,
      computedFields: new Set(Array.isArray(perm.computed_fields) ? (perm.computed_fields as string[]) : []),
    });
  }
  const ref = { meta, info };
  const allColumns = (perm: Record<string, unknown>) =>
    new Set((perm.columns === '*' ? info.columns.map((c) => c.name) : Array.isArray(perm.columns) ? (perm.columns as string[]) : []).filter((c) => columnsByName.has(c)));
  const presets = (perm: Record<string, unknown>): Presets => new Map(Object.entries(isObject(perm.set) ? perm.set : {}).map(([c, x]) => [c, valueOf(x)]));
  /** Each permission of `type` whose expressions compile; one that does not leaves the role
   * without it (never a wider permission). */
  const permissions = <T>(type: 'insert' | 'update' | 'delete', make: (perm: Record<string, unknown>) => T): Map<string, T> => {
    const out = new Map<string, T>();
    for (const p of meta[`${type}_permissions`] ?? []) {
      if (ctx.inconsistentPermissions?.has(`${type}.${p.role}`)) continue;
      try {
        out.set(p.role, make(p.permission));
      } catch (e) {
        if (e instanceof UnsupportedFilter) continue;
        throw e;
      }
    }
    return out;
  };
  const bool = (x: unknown) => compileStoredBoolExp(x ?? {}, ref, ref, ctx);
  const insert = permissions('insert', (p): InsertPermissionIR => {
    const set = presets(p);
    // Hasura: an insert permission without `columns` lets the role give every column.
    const columns = allColumns(p.columns === undefined || p.columns === null ? { columns: '*' } : p);
    for (const c of set.keys()) columns.delete(c);
    return { columns, check: bool(p.check), set, backendOnly: p.backend_only === true };
  });
  const update = permissions('update', (p): UpdatePermissionIR => {
    const set = presets(p);
    const columns = allColumns(p);
    for (const c of set.keys()) columns.delete(c);
    return { columns, filter: bool(p.filter), check: bool(p.check), set, backendOnly: p.backend_only === true };
  });
  const del = permissions('delete', (p): DeletePermissionIR => ({ filter: bool(p.filter), backendOnly: p.backend_only === true }));
  const view = info.viewInfo;
  const plain = info.relation !== 'materialized_view';
  const constraints = [...(info.primaryKey ? [info.primaryKey] : []), ...info.uniqueConstraints];
  return {
    table: meta.table,
    key,
    name,
    inSchema: isGraphQLName(name),
    description: config?.comment ?? info.description,
    rootFields: rootFieldNames(meta, name),
    columns,
    columnsByName,
    primaryKey: pk,
    relationships,
    computedFields: resolveComputedFields(meta, ctx),
    select,
    insert,
    update,
    delete: del,
    mutable: { insert: plain && (view?.insertable ?? true), update: plain && (view?.updatable ?? true), delete: plain && (view?.deletable ?? true) },
    constraints,
  };
}

// ---------------------------------------------------------------------------------------------
// Functions: computed fields and tracked functions

const functionArgs = (fn: FunctionInfo, dialect: Dialect) => {
  let positional = 1;
  return fn.args.map((a): ResolvedFunctionArg => {
    const type: ColumnType = { type: a.type, udt: a.type, typeSchema: a.typeSchema, typeKind: a.typeKind, elementKind: a.elementKind };
    return { field: a.name ?? `arg_${positional++}`, name: a.name, type, scalar: dialect.argumentScalar?.(type) ?? dialect.scalar(type), hasDefault: a.hasDefault };
  });
};

/** The call of `fn` with the row at `rowIndex` and the session at `sessionIndex` (when any). */
function functionCall(qf: QualifiedFunction, fn: FunctionInfo, dialect: Dialect, rowIndex: number | undefined, sessionIndex: number | undefined): ResolvedFunctionCall {
  const params: ResolvedFunctionCall['params'] = [];
  const inputs: ResolvedFunctionArg[] = [];
  functionArgs(fn, dialect).forEach((arg, i) => {
    if (i === rowIndex) params.push({ k: 'row', arg });
    else if (i === sessionIndex) params.push({ k: 'session', arg });
    else {
      params.push({ k: 'input', arg });
      inputs.push(arg);
    }
  });
  return { function: qf, params, inputs };
}

const indexOf = (fn: FunctionInfo, name: string | null | undefined) => {
  if (name == null) return undefined;
  const i = fn.args.findIndex((a) => a.name === name);
  return i < 0 ? undefined : i;
};

/** A function's own single definition (the build refuses overloads). */
const onlyOverload = (intro: Introspection, qf: QualifiedFunction) => {
  const all = intro.functions.get(qtKey(qf));
  return all?.length === 1 ? all[0] : undefined;
};

/** The computed fields the build found consistent. */
function resolveComputedFields(meta: TableMeta, ctx: ModelContext): ResolvedComputedField[] {
  const out: ResolvedComputedField[] = [];
  for (const cf of meta.computed_fields ?? []) {
    if (ctx.inconsistentComputedFields?.has(cf.name)) continue;
    const resolved = resolveComputedField(cf, ctx);
    if (resolved) out.push(resolved);
  }
  return out;
}

/** A computed field as the data API calls it, when its function is there (one overload). */
function resolveComputedField(cf: ComputedFieldMeta, ctx: ModelContext): ResolvedComputedField | undefined {
  const fn = onlyOverload(ctx.introspection, cf.definition.function);
  if (!fn) return undefined;
  if (ctx.dialect.computedFieldArguments === 'mapping') {
    // Note [Computed fields by argument mapping]: mapped arguments are the row's columns, the
    // others the user's; the rows are the return table's, or of the columns the function
    // declares (the build checked both).
    const rows = cf.definition.return_table;
    const declared = rows ? undefined : fn.returnColumns;
    if (!rows && !declared) return undefined;
    const mapping = cf.definition.argument_mapping ?? {};
    const params: ResolvedFunctionCall['params'] = [];
    const inputs: ResolvedFunctionArg[] = [];
    for (const arg of functionArgs(fn, ctx.dialect)) {
      const column = arg.name === null ? undefined : mapping[arg.name];
      if (column !== undefined) params.push({ k: 'column', arg, column });
      else {
        params.push({ k: 'input', arg });
        inputs.push(arg);
      }
    }
    return {
      name: cf.name,
      description: cf.comment ?? `A computed field, executes function "${qtDisplayName(cf.definition.function, ctx.dialect)}"`,
      call: { function: cf.definition.function, params, inputs },
      returns: rows ? { k: 'table', table: rows, key: qtKey(rows) } : { k: 'columns', columns: declared!.map((c) => returnedColumn(c, fn, ctx.dialect)) },
    };
  }
  const call = functionCall(cf.definition.function, fn, ctx.dialect, indexOf(fn, cf.definition.table_argument) ?? 0, indexOf(fn, cf.definition.session_argument));
  const rows = { schema: fn.returnTypeSchema, name: fn.returnType };
  const returnsTable = fn.returnTypeKind === 'composite' && ctx.introspection.tables.has(qtKey(rows));
  const type = functionReturnType(fn);
  return {
    name: cf.name,
    description: cf.comment ?? `A computed field, executes function "${qtDisplayName(cf.definition.function, ctx.dialect)}"`,
    call,
    returns: returnsTable ? { k: 'table', table: rows, key: qtKey(rows) } : { k: 'scalar', type, scalar: ctx.dialect.scalar(type) },
  };
}

/** A declared result column (FunctionInfo.returnColumns) as the computed field returns it. */
function returnedColumn(c: NonNullable<FunctionInfo['returnColumns']>[number], fn: FunctionInfo, dialect: Dialect): ReturnedColumn {
  const type: ColumnType = { type: c.type, udt: c.udt ?? c.type, typeSchema: fn.returnTypeSchema, typeKind: c.typeKind ?? 'base' };
  return { name: c.name, type, scalar: dialect.scalar(type) };
}

const qtDisplayName = (qf: QualifiedFunction, dialect: Dialect) => (qf.schema === dialect.defaultSchema ? qf.name : `${qf.schema}.${qf.name}`);

/** The model of a tracked function the build resolved (`info`). */
export function resolveFunctionModel(meta: FunctionMeta, info: FunctionInfo, dialect: Dialect): FunctionModel {
  const qf = meta.function;
  const config = meta.configuration ?? {};
  const name = config.custom_name ?? (qf.schema === dialect.defaultSchema ? qf.name : `${qf.schema}_${qf.name}`);
  const returns = { schema: info.returnTypeSchema, name: info.returnType };
  return {
    function: qf,
    key: qtKey(qf),
    name,
    inSchema: isGraphQLName(name),
    description: meta.comment ?? info.description,
    rootFields: { function: config.custom_root_fields?.function ?? name, function_aggregate: config.custom_root_fields?.function_aggregate ?? `${name}_aggregate` },
    call: functionCall(qf, info, dialect, undefined, indexOf(info, config.session_argument)),
    returns,
    returnsKey: qtKey(returns),
    returnsSet: info.returnsSet,
    // Hasura: a VOLATILE function is a mutation unless said otherwise.
    exposedAs: config.exposed_as ?? (info.volatility === 'volatile' ? 'mutation' : 'query'),
    permissions: new Set((meta.permissions ?? []).map((p) => p.role)),
  };
}

// ---------------------------------------------------------------------------------------------
// Stored boolean expressions -> IR

export class UnsupportedFilter extends Error {}

const LOGICAL: Record<string, string> = { _and: 'and', $and: 'and', _or: 'or', $or: 'or', _not: 'not', $not: 'not', _exists: 'exists', $exists: 'exists' };
const COLUMN_OPS = new Set(['ceq', 'cne', 'cneq', 'cgt', 'clt', 'cgte', 'clte']);

type Ref = { meta: TableMeta; info: TableInfo };

const valueOf = (x: unknown): Value => (isSessionVariable(x) ? { k: 'session', name: x.toLowerCase() } : { k: 'lit', v: x });

/** Compiles a stored (and build-checked) boolean expression on `t`; `root` is the permission's table. */
export function compileStoredBoolExp(exp: unknown, t: Ref, root: Ref, ctx: ModelContext): BoolIR {
  if (!isObject(exp)) throw new UnsupportedFilter('not an object');
  const parts: BoolIR[] = [];
  for (const [k, val] of Object.entries(exp)) {
    const logical = LOGICAL[k];
    if (logical === 'and' || logical === 'or') {
      parts.push({ t: logical, of: (val as unknown[]).map((e) => compileStoredBoolExp(e, t, root, ctx)) });
    } else if (logical === 'not') parts.push({ t: 'not', e: compileStoredBoolExp(val, t, root, ctx) });
    else if (logical === 'exists') {
      const o = val as Record<string, unknown>;
      const qt = qtOf(o._table);
      const target = qt && ctx.tracked.get(qtKey(qt));
      if (!qt || !target?.info) throw new UnsupportedFilter('_exists');
      parts.push({ t: 'exists', table: qt, e: compileStoredBoolExp(o._where, { meta: target.meta, info: target.info }, root, ctx) });
    } else parts.push(field(k, val, t, root, ctx));
  }
  // `{}` holds for every row: TRUE, which a plan may test for (a level of rows that upserts
  // inserted as a set, Note [Levels inserted as sets]).
  if (parts.length === 0) return { t: 'true' };
  return parts.length === 1 ? parts[0]! : { t: 'and', of: parts };
}

function field(name: string, val: unknown, t: Ref, root: Ref, ctx: ModelContext): BoolIR {
  const col = t.info.columns.find((c) => c.name === name);
  if (col) return columnOps(name, col, val, t, root, ctx);
  for (const kind of ['object', 'array'] as const) {
    const rel = ((t.meta[`${kind}_relationships`] as RelationshipMeta[] | undefined) ?? []).find((r) => r.name === name);
    if (!rel) continue;
    const join = relationshipJoin(rel, t, ctx.introspection);
    const target = join && ctx.tracked.get(qtKey(join.remote));
    if (!join || !target?.info) throw new UnsupportedFilter(name);
    return { t: 'rel', remote: join.remote, mapping: join.mapping, e: compileStoredBoolExp(val, { meta: target.meta, info: target.info }, root, ctx) };
  }
  const meta = (t.meta.computed_fields ?? []).find((c) => c.name === name);
  const cf = meta && resolveComputedField(meta, ctx);
  // A computed field in a permission: the build allows only those without user arguments, and
  // set-returning ones of a tracked table.
  if (!cf || cf.call.inputs.length > 0) throw new UnsupportedFilter(name);
  const call: FunctionCallIR = {
    function: cf.call.function,
    args: cf.call.params.map((p): FunctionCallIR['args'][number] => {
      if (p.k === 'row') return { k: 'row' };
      // A call by argument mapping: its arguments are all the row's columns here, each named.
      if (p.k === 'column') return { k: 'column', column: p.column, bindAs: p.arg.scalar.bindAs, ...(p.arg.name !== null ? { name: p.arg.name } : {}) };
      return { k: 'value', value: { k: 'session_json' }, bindAs: p.arg.scalar.bindAs };
    }),
  };
  if (cf.returns.k === 'table') {
    const target = ctx.tracked.get(cf.returns.key);
    if (!target?.info) throw new UnsupportedFilter(name);
    return { t: 'frows', call, e: compileStoredBoolExp(val, { meta: target.meta, info: target.info }, root, ctx) };
  }
  // Rows of declared columns have no boolean expression (the build refused one).
  if (cf.returns.k === 'columns') throw new UnsupportedFilter(name);
  const scalar = cf.returns.scalar;
  const ops = isObject(val) ? Object.entries(val) : [['_eq', val] as const];
  const parts = ops.map(([opName, operand]): BoolIR => {
    const op = opName.slice(1);
    if (op === 'cast' || COLUMN_OPS.has(op)) throw new UnsupportedFilter(`${name}.${opName}`);
    return { t: 'fcmp', call, scalar, op: op === 'neq' ? 'ne' : op, value: valueOf(operand) };
  });
  return parts.length === 1 ? parts[0]! : { t: 'and', of: parts };
}

function columnOps(name: string, type: ColumnType, val: unknown, t: Ref, root: Ref, ctx: ModelContext, cast?: string): BoolIR {
  const scalar = ctx.dialect.scalar(type);
  if (!isObject(val)) return { t: 'cmp', column: name, type, scalar, op: 'eq', value: valueOf(val), ...(cast ? { cast } : {}) };
  const parts: BoolIR[] = [];
  for (const [opName, operand] of Object.entries(val)) {
    const op = opName.slice(1);
    if (op === 'cast') {
      // `{_cast: {geography: {...}}}`: the operators on the column cast to the type (the build checked it).
      if (cast || !isObject(operand)) throw new UnsupportedFilter('_cast');
      for (const [target, ops] of Object.entries(operand)) {
        const to = ctx.dialect.castTo?.(type, target);
        if (!to) throw new UnsupportedFilter('_cast');
        parts.push(columnOps(name, to, ops, t, root, ctx, ctx.dialect.scalar(to).bindAs));
      }
      continue;
    }
    if (COLUMN_OPS.has(op)) {
      let other = operand;
      let onRoot = false;
      if (Array.isArray(operand)) {
        if (operand.length === 2 && operand[0] === '$') [other, onRoot] = [operand[1], true];
        else other = operand[0];
      }
      parts.push({ t: 'ccmp', column: name, op: op === 'cneq' ? 'cne' : op, other: String(other), root: onRoot });
    } else {
      // An object operand's fields may each be a session variable.
      const value: Value =
        ctx.dialect.operators[op]?.operand === 'object' && isObject(operand)
          ? { k: 'object', fields: Object.fromEntries(Object.entries(operand).map(([f, x]) => [f, valueOf(x)])) }
          : valueOf(operand);
      parts.push({ t: 'cmp', column: name, type, scalar, op: op === 'neq' ? 'ne' : op, value, ...(cast ? { cast } : {}) });
    }
  }
  return parts.length === 1 ? parts[0]! : { t: 'and', of: parts };
}
