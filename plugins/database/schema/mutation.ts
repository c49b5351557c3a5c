/**
 * The mutation root fields of a role over tracked tables, as Hasura v2 names them:
 * `insert_<t>`, `insert_<t>_one`, `update_<t>`, `update_<t>_by_pk`, `update_<t>_many`,
 * `delete_<t>`, `delete_<t>_by_pk`, with their input types (`<t>_insert_input`,
 * `<t>_on_conflict`, `<t>_set_input`, ...) and `<t>_mutation_response`; and their planning: a
 * field of the document -> mutation IR with the role's permission folded in (Note [Mutations in
 * the IR]) -> one statement per field (`update_<t>_many`: one per update, or per run of updates
 * by key, Note [Updates by key] in ./update-rows.ts), run in the request's transaction (Note [One
 * transaction per mutation request]).
 *
 * A role sees an insert field when it has an insert permission, update fields with an update
 * permission (`_by_pk` also needs to select the primary key), delete fields with a delete
 * permission; `returning`, `_one` and `_by_pk` fields only when it may select the table, and the
 * rows it reads back pass its select filter. A backend-only permission counts only for requests
 * that may use it (Note [Backend-only permissions]).
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
  type FieldNode,
  type GraphQLFieldConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
} from 'graphql';
import { SvcError } from '../../../core/errors.js';
import type { FieldPlan, PlanInput, RootFieldDef, RunContext, TypeRegistry } from '../../../core/plugin.js';
import type { BoolIR, ColumnValue, CompiledQuery, InsertColumn, InsertIR, InsertRowIR, MutationField, MutationIR, MutationOutput, NestedInsert, UpdateIR, UpdateOp, Value, ZeroCheck } from '../ir/types.js';
import type { DeletePermissionIR, InsertPermissionIR, ResolvedColumn, ResolvedRelationship, ResolvedSource, UpdatePermissionIR } from '../model/resolved.js';
import type { ScalarType, SqlExecutor } from '../model/types.js';
import type { QualifiedTable } from '../model/scalars.js';
import { qtDisplay } from '../model/meta.js';
import { and, type Arg, dbError, sourceTransaction, defaultsOf, fail, filterOf, isObj, NeedsVariables, paramText, Planner, PREPARED, resolveMarks } from './plan.js';
import { spliceJoins, type PlannedJoin } from './joins.js';
import { ofSource, sourceNames, tableOwnerName, tn } from './names.js';
import { abstractVariables, generalise, shapeKey, valueAt, variableTypes } from './shapes.js';
import { columnValue, tableColumnsOf, type RoleSchema, type RoleTable } from './role.js';
import { NestedSchema, ownSet, planNested, refuseKeyChange } from './nested-update.js';
import { updatesByKey } from './update-rows.js';

type FieldConfig = Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>;

const nn = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLNonNull(t);
const list = <T extends GraphQLOutputType | GraphQLInputType>(t: T) => new GraphQLList(t);
const TRUE: BoolIR = { t: 'true' };

/** A table as one role may write it: its permissions (admin: everything), the columns it may
 * give, and the relationships it may insert through. */
interface WriteTable {
  t: RoleTable;
  insert?: InsertPermissionIR;
  update?: UpdatePermissionIR;
  delete?: DeletePermissionIR;
  insertColumns: ResolvedColumn[];
  updateColumns: ResolvedColumn[];
}

/** The jsonb update operators: argument, input type suffix, GraphQL type of a column's value, descriptions. */
const JSONB_OPS: { op: UpdateOp; arg: string; field: (s: ScalarType) => 'column' | 'string' | 'int' | 'strings'; desc: string; typeDesc: string }[] = [
  { op: 'append', arg: '_append', field: () => 'column', desc: 'append existing jsonb value of filtered columns with new jsonb value', typeDesc: 'append existing jsonb value of filtered columns with new jsonb value' },
  { op: 'delete_at_path', arg: '_delete_at_path', field: () => 'strings', desc: 'delete the field or element with specified path (for JSON arrays, negative integers count from the end)', typeDesc: 'delete the field or element with specified path (for JSON arrays, negative integers count from the end)' },
  { op: 'delete_elem', arg: '_delete_elem', field: () => 'int', desc: 'delete the array element with specified index (negative integers count from the end). throws an error if top level container is not an array', typeDesc: 'delete the array element with specified index (negative integers count from the end). throws an error if top level container is not an array' },
  { op: 'delete_key', arg: '_delete_key', field: () => 'string', desc: 'delete key/value pair or string element. key/value pairs are matched based on their key value', typeDesc: 'delete key/value pair or string element. key/value pairs are matched based on their key value' },
  { op: 'prepend', arg: '_prepend', field: () => 'column', desc: 'prepend existing jsonb value of filtered columns with new jsonb value', typeDesc: 'prepend existing jsonb value of filtered columns with new jsonb value' },
];

const isJsonb = (c: ResolvedColumn) => c.scalar.jsonUpdates === true;

export class MutationSchema {
  private readonly write = new Map<string, WriteTable | null>();
  /** `_nested` of updates (Note [Nested updates] in ./nested-update.ts). */
  readonly nested: NestedSchema;

  constructor(
    readonly rs: RoleSchema,
    private readonly types: TypeRegistry,
    /** Note [Backend-only permissions]: whether the request may use them. */
    private readonly backendOnly = false,
  ) {
    this.nested = new NestedSchema(this, types);
  }

  private named<T extends GraphQLNamedType>(name: string, make: () => T): T {
    return (this.types.get(name) as T | undefined) ?? this.types.define(make());
  }

  /** How the role may write `t`; null: not at all. */
  writeOf(t: RoleTable): WriteTable | null {
    const key = `${t.source.name}\0${t.model.key}`;
    let w = this.write.get(key);
    if (w !== undefined) return w;
    const m = t.model;
    if (this.rs.isAdmin) {
      const info = t.source.tables.get(m.key)?.info;
      const generated = new Set(info?.columns.filter((c) => c.isGenerated).map((c) => c.name));
      const columns = new Set(m.columns.filter((c) => !generated.has(c.name)).map((c) => c.name));
      w = {
        t,
        insert: m.mutable.insert ? { columns, check: TRUE, set: new Map(), backendOnly: false } : undefined,
        update: m.mutable.update ? { columns, filter: TRUE, check: TRUE, set: new Map(), backendOnly: false } : undefined,
        delete: m.mutable.delete ? { filter: TRUE, backendOnly: false } : undefined,
        insertColumns: [],
        updateColumns: [],
      };
    } else {
      const role = this.rs.role;
      // Note [Backend-only permissions].
      const usable = <P extends { backendOnly: boolean }>(p: P | undefined) => (p && (!p.backendOnly || this.backendOnly) ? p : undefined);
      w = {
        t,
        insert: m.mutable.insert ? usable(m.insert.get(role)) : undefined,
        update: m.mutable.update ? usable(m.update.get(role)) : undefined,
        delete: m.mutable.delete ? usable(m.delete.get(role)) : undefined,
        insertColumns: [],
        updateColumns: [],
      };
    }
    // A generated column takes no value, whatever a permission lists (PostgreSQL refuses one).
    const generated = new Set(t.source.tables.get(m.key)?.info.columns.filter((c) => c.isGenerated).map((c) => c.name));
    w.insertColumns = w.insert ? m.columns.filter((c) => w!.insert!.columns.has(c.name) && !generated.has(c.name)) : [];
    w.updateColumns = w.update ? m.columns.filter((c) => w!.update!.columns.has(c.name) && !generated.has(c.name)) : [];
    if (!w.insert && !w.update && !w.delete) w = null;
    this.write.set(key, w);
    return w;
  }

  private writeByKey(sourceName: string, key: string): WriteTable | null {
    const t = this.rs.writable.get(`${sourceName}\0${key}`);
    return t ? this.writeOf(t) : null;
  }

  /** Relationships the role may insert through: to tables it may insert into. */
  insertRelationships(w: WriteTable): { rel: ResolvedRelationship; remote: WriteTable }[] {
    const out: { rel: ResolvedRelationship; remote: WriteTable }[] = [];
    if (!w.t.source.kind.dialect.nestedInserts) return out;
    for (const rel of w.t.model.relationships) {
      const remote = this.writeByKey(w.t.source.name, rel.remoteKey);
      if (remote?.insert && remote.insertColumns.length > 0) out.push({ rel, remote });
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Types

  insertInput(w: WriteTable): GraphQLInputObjectType {
    const name = `${tn(w.t, `_insert_input`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `input type for inserting data into table "${w.t.model.table.name}"`,
        fields: () => {
          const fields: GraphQLInputFieldConfigMap = {};
          for (const c of w.insertColumns) fields[c.field] = { type: this.rs.columnType(w.t, c), ...columnValue(c.scalar), ...(c.description ? { description: c.description } : {}) };
          for (const { rel, remote } of this.insertRelationships(w)) {
            fields[rel.name] = { type: rel.kind === 'object' ? this.objRelInput(remote) : this.arrRelInput(remote) };
          }
          return Object.fromEntries(Object.keys(fields).sort().map((k) => [k, fields[k]!]));
        },
      }),
    );
  }

  private objRelInput(w: WriteTable): GraphQLInputObjectType {
    const name = `${tn(w.t, `_obj_rel_insert_input`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `input type for inserting object relation for remote table "${w.t.model.table.name}"`,
        fields: () => ({ data: { type: nn(this.insertInput(w)) }, ...this.onConflictArg(w, true) }),
      }),
    );
  }

  private arrRelInput(w: WriteTable): GraphQLInputObjectType {
    const name = `${tn(w.t, `_arr_rel_insert_input`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `input type for inserting array relation for remote table "${w.t.model.table.name}"`,
        fields: () => ({ data: { type: nn(list(nn(this.insertInput(w)))) }, ...this.onConflictArg(w, true) }),
      }),
    );
  }

  /** The upsert argument of an insert (Note [Upsert arguments]): `on_conflict`, when the table
   * has a primary key or unique constraint; or, for a kind whose dialect upserts `if_matched`, that
   * argument on the root fields only (`nested`: a relationship's rows take none). */
  onConflictArg(w: WriteTable, nested = false): GraphQLInputFieldConfigMap {
    if (w.t.source.kind.dialect.upsert === 'if_matched') {
      const o = nested ? undefined : this.ifMatched(w);
      return o ? { if_matched: { type: o, description: 'upsert condition' } } : {};
    }
    if (w.t.model.constraints.length === 0) return {};
    return { on_conflict: { type: this.onConflict(w), description: 'upsert condition' } };
  }

  /** The columns `if_matched` may match on: those the role selects that the database can compare. */
  matchColumns(w: WriteTable): ResolvedColumn[] {
    return w.t.columns.filter((c) => c.scalar.comparable);
  }

  /** `<t>_if_matched`, as Hasura's MSSQL backend has it: for a role that may update the table
   * and select a column of it. */
  private ifMatched(w: WriteTable): GraphQLInputObjectType | undefined {
    const t = w.t;
    const match = this.matchColumns(w);
    if (!w.update || match.length === 0) return undefined;
    const name = `${tn(t, `_if_matched`)}`;
    const columnsName = `${tn(t, `_insert_match_column`)}`;
    const columns = this.named(columnsName, () =>
      new GraphQLEnumType({
        name: columnsName,
        description: `select match_columns of table "${t.model.table.name}"`,
        values: Object.fromEntries(match.map((c) => [c.field, { description: 'column name' }])),
      }),
    );
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `upsert condition type for table "${t.model.table.name}"`,
        fields: () => ({
          match_columns: { type: nn(list(nn(columns))), defaultValue: [] },
          update_columns: { type: nn(list(nn(this.updateColumnEnum(w)))), defaultValue: [] },
          where: { type: this.rs.boolExp(t) },
        }),
      }),
    );
  }

  private onConflict(w: WriteTable): GraphQLInputObjectType {
    const t = w.t;
    const name = `${tn(t, `_on_conflict`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        description: `on_conflict condition type for table "${t.model.table.name}"`,
        fields: () => ({
          constraint: { type: nn(this.constraintEnum(w)) },
          update_columns: { type: nn(list(nn(this.updateColumnEnum(w)))), defaultValue: [] },
          where: { type: this.rs.boolExp(t) },
        }),
      }),
    );
  }

  private constraintEnum(w: WriteTable): GraphQLEnumType {
    const t = w.t;
    const name = `${tn(t, `_constraint`)}`;
    return this.named(name, () =>
      new GraphQLEnumType({
        name,
        description: `unique or primary key constraints on table "${t.model.table.name}"`,
        values: Object.fromEntries(
          t.model.constraints.map((c) => [c.name, { value: c.name, description: `unique or primary key constraint on columns ${c.columns.map((x) => `"${x}"`).join(', ')}` }]),
        ),
      }),
    );
  }

  private updateColumnEnum(w: WriteTable): GraphQLEnumType {
    const t = w.t;
    const name = `${tn(t, `_update_column`)}`;
    return this.named(name, () =>
      new GraphQLEnumType({
        name,
        description: `update columns of table "${t.model.table.name}"`,
        values: w.updateColumns.length
          ? Object.fromEntries(w.updateColumns.map((c) => [c.field, { description: 'column name' }]))
          : { _PLACEHOLDER: { description: 'placeholder (do not use)' } },
      }),
    );
  }

  mutationResponse(w: WriteTable): GraphQLObjectType {
    const t = w.t;
    const name = `${tn(t, `_mutation_response`)}`;
    return this.named(name, () =>
      new GraphQLObjectType({
        name,
        description: `response of any mutation on the table "${t.model.table.name}"`,
        fields: () => ({
          affected_rows: { type: nn(GraphQLInt), description: 'number of rows affected by the mutation' },
          ...(t.hasObject ? { returning: { type: nn(list(nn(this.rs.object(t)))), description: 'data from the rows affected by the mutation' } } : {}),
        }),
      }),
    );
  }

  /** The update operator arguments that apply to the table's updatable columns. */
  updateArgs(w: WriteTable): GraphQLFieldConfigArgumentMap {
    const t = w.t;
    const args: GraphQLFieldConfigArgumentMap = {};
    const cols = w.updateColumns;
    const input = (suffix: string, description: string, columns: ResolvedColumn[], type: (c: ResolvedColumn) => GraphQLInputType) =>
      this.named(`${tn(t, `${suffix}`)}`, () =>
        new GraphQLInputObjectType({
          name: `${tn(t, `${suffix}`)}`,
          description,
          // By name, as Hasura lists input fields.
          fields: Object.fromEntries([...columns].sort((a, b) => (a.field < b.field ? -1 : 1)).map((c) => [c.field, { type: type(c), ...columnValue(c.scalar) }])),
        }),
      );
    const jsonb = cols.filter(isJsonb);
    for (const j of JSONB_OPS.slice(0, 1)) if (jsonb.length) args[j.arg] = { type: input(`${j.arg}_input`, j.typeDesc, jsonb, (c) => this.rs.columnType(t, c)), description: j.desc };
    for (const j of JSONB_OPS.slice(1, 4)) {
      if (!jsonb.length) continue;
      const kind = j.field(jsonb[0]!.scalar);
      args[j.arg] = { type: input(`${j.arg}_input`, j.typeDesc, jsonb, () => (kind === 'int' ? GraphQLInt : kind === 'strings' ? list(GraphQLString) : GraphQLString)), description: j.desc };
    }
    const numeric = cols.filter((c) => c.scalar.category === 'numeric' && !c.scalar.array && !t.enums.has(c.name));
    if (numeric.length) args._inc = { type: input('_inc_input', `input type for incrementing numeric columns in table "${t.model.table.name}"`, numeric, (c) => this.rs.columnType(t, c)), description: 'increments the numeric columns with given value of the filtered values' };
    for (const j of JSONB_OPS.slice(4)) if (jsonb.length) args[j.arg] = { type: input(`${j.arg}_input`, j.typeDesc, jsonb, (c) => this.rs.columnType(t, c)), description: j.desc };
    if (cols.length) args._set = { type: input('_set_input', `input type for updating data in table "${t.model.table.name}"`, cols, (c) => this.rs.columnType(t, c)), description: 'sets the columns of the filtered rows to the given values' };
    return args;
  }

  pkColumnsInput(w: WriteTable): GraphQLInputObjectType | undefined {
    const pk = this.rs.pkArgs(w.t);
    if (!pk) return undefined;
    const name = `${tn(w.t, `_pk_columns_input`)}`;
    return this.named(name, () => new GraphQLInputObjectType({ name, description: `primary key columns input for table: ${tn(w.t)}`, fields: pk as GraphQLInputFieldConfigMap }));
  }

  private updatesInput(w: WriteTable): GraphQLInputObjectType {
    const name = `${tn(w.t, `_updates`)}`;
    return this.named(name, () =>
      new GraphQLInputObjectType({
        name,
        fields: () => ({ ...this.nested.updateFields(w), where: { type: nn(this.rs.boolExp(w.t)), description: 'filter the rows which have to be updated' } }),
      }),
    );
  }

  // -------------------------------------------------------------------------------------------
  // Root fields

  /** The role's mutation root fields of the tables of the sources `only` takes (all by default). */
  rootFields(only?: (s: ResolvedSource) => boolean): Record<string, RootFieldDef> {
    const out: Record<string, RootFieldDef> = {};
    for (const t of this.rs.writable.of(only)) for (const kind of this.kinds(t)) out[sourceNames(t.source).field(t.model.rootFields[kind].name)] = this.field(kind, t);
    return out;
  }

  /** The mutation root fields the role has of a table it may write, in the root's order. */
  kinds(t: RoleTable): MutationKind[] {
    const w = this.writeOf(t);
    const out: MutationKind[] = [];
    if (!w) return out;
    // An input object needs a field: a role whose every column is preset gets no insert field
    // (nor does a table with no column it may give).
    if (w.insert && (w.insertColumns.length > 0 || this.insertRelationships(w).length > 0)) {
      out.push('insert');
      if (t.hasObject) out.push('insert_one');
    }
    if (w.update && w.updateColumns.length + w.update.set.size > 0) {
      out.push('update');
      if (t.hasObject && this.rs.hasPk(t)) out.push('update_by_pk');
      out.push('update_many');
    }
    if (w.delete) {
      out.push('delete');
      if (t.hasObject && this.rs.hasPk(t)) out.push('delete_by_pk');
    }
    return out;
  }

  /** The root field `kind` of a table (one of `kinds(t)`). */
  field(kind: MutationKind, t: RoleTable): RootFieldDef {
    return ofSource(t.source, new TableMutationField(kind, this.writeOf(t)!, this));
  }

  /** A mutation root field's type and arguments (made when the schema first reads them). */
  fieldConfig(kind: MutationKind, w: WriteTable): FieldConfig {
    const t = w.t;
    const table = `"${t.model.table.name}"`;
    const made = ((): FieldConfig => {
      switch (kind) {
        case 'insert':
          return {
            type: this.mutationResponse(w),
            args: { objects: { type: nn(list(nn(this.insertInput(w)))), description: 'the rows to be inserted' }, ...(this.onConflictArg(w) as GraphQLFieldConfigArgumentMap) },
            description: `insert data into the table: ${table}`,
          };
        case 'insert_one':
          return {
            type: this.rs.object(t),
            args: { object: { type: nn(this.insertInput(w)), description: 'the row to be inserted' }, ...(this.onConflictArg(w) as GraphQLFieldConfigArgumentMap) },
            description: `insert a single row into the table: ${table}`,
          };
        case 'update':
          return {
            type: this.mutationResponse(w),
            args: { ...(this.nested.updateFields(w) as GraphQLFieldConfigArgumentMap), where: { type: nn(this.rs.boolExp(t)), description: 'filter the rows which have to be updated' } },
            description: `update data of the table: ${table}`,
          };
        case 'update_by_pk':
          return { type: this.rs.object(t), args: { ...(this.nested.updateFields(w) as GraphQLFieldConfigArgumentMap), pk_columns: { type: nn(this.pkColumnsInput(w)!) } }, description: `update single row of the table: ${table}` };
        case 'update_many':
          return {
            type: list(this.mutationResponse(w)),
            args: { updates: { type: nn(list(nn(this.updatesInput(w)))), description: 'updates to execute, in order' } },
            description: `update multiples rows of table: ${table}`,
          };
        case 'delete':
          return { type: this.mutationResponse(w), args: { where: { type: nn(this.rs.boolExp(t)), description: 'filter the rows which have to be deleted' } }, description: `delete data from the table: ${table}` };
        case 'delete_by_pk':
          return { type: this.rs.object(t), args: this.rs.pkArgs(t)!, description: `delete single row from the table: ${table}` };
      }
    })();
    const comment = t.model.rootFields[kind].comment;
    return comment ? { ...made, description: comment } : made;
  }
}

/** A mutation root field of a table: as the query root's (Note [Table root fields as instances]
 * in ./contributor.ts), an instance whose type and arguments are made when the schema first
 * reads them (Note [Lazy query schemas] in core/schema/assembly.ts): a role's first mutation
 * after a change makes those of the fields it selects, not of every table's seven. */
class TableMutationField implements RootFieldDef {
  #config: FieldConfig | undefined;
  constructor(
    private readonly kind: MutationKind,
    private readonly w: WriteTable,
    private readonly ms: MutationSchema,
  ) {}

  get config(): FieldConfig {
    return (this.#config ??= this.ms.fieldConfig(this.kind, this.w));
  }

  plan(input: PlanInput): FieldPlan {
    return planMutation(this.kind, this.w, this.ms, input);
  }

  /** Read only where another plugin's field collides with this one. */
  get owner(): string {
    return tableOwnerName(this.w.t);
  }
}

/** Where row `i` of a list of rows at `path` is (Hasura's error paths: indexed or not, as in
 * MutationPlanner.insert). */
const rowPath = (path: string, indexed: boolean, i: number) => (indexed ? `${path}[${i}]` : path);

/** The columns a row's object gives by its fields. */
const given = (obj: Record<string, Arg>, byField: ReadonlyMap<string, { name: string }>) => Object.keys(obj).flatMap((k) => byField.get(k)?.name ?? []);

export type MutationKind = 'insert' | 'insert_one' | 'update' | 'update_by_pk' | 'update_many' | 'delete' | 'delete_by_pk';

// ---------------------------------------------------------------------------------------------
// Planning

/** Hasura's order of the update operators (its "at least any one of ..." message). */
const UPDATE_ARGS_ORDER = ['_set', '_inc', '_prepend', '_append', '_delete_key', '_delete_elem', '_delete_at_path'];

const UPDATE_ARGS: Record<string, UpdateOp> = {
  _set: 'set',
  _inc: 'inc',
  _append: 'append',
  _prepend: 'prepend',
  _delete_key: 'delete_key',
  _delete_elem: 'delete_elem',
  _delete_at_path: 'delete_at_path',
};

class MutationPlanner {
  constructor(
    readonly p: Planner,
    readonly ms: MutationSchema,
    private readonly field: string,
  ) {}

  listOf(x: Arg | undefined): Arg[] {
    const v = this.p.shape(x);
    if (v === null || v === undefined) return [];
    // GraphQL input coercion: a single value where a list is expected is a list of one.
    return (Array.isArray(v) ? v : [v]) as Arg[];
  }

  objectOf(x: Arg | undefined, what: string): Record<string, Arg> | undefined {
    const v = this.p.shape(x);
    if (v === null || v === undefined) return undefined;
    if (!isObj(v)) throw fail(`expected an object for "${what}"`);
    return v;
  }

  /** The rows of `objects` for `w` (and what they insert through relationships). `path`: where
   * they are, each at `[i]` when `indexed` (Hasura's error paths: a list of rows is indexed, an
   * object relationship's `data` is not); `parentColumns`: the columns a parent's row gives them
   * (array relationship rows). */
  insert(w: WriteTable, objects: Arg[], onConflict: Arg | undefined, path: string, indexed = true, parentColumns: readonly string[] = [], ifMatched?: Arg): InsertIR {
    const perm = w.insert!;
    const t = w.t;
    const columns = insertIrColumns(w);
    const rels = this.ms.insertRelationships(w);
    const byField = insertColumnsByField(w);
    const rows: InsertRowIR[] = objects.map((o, i) => {
      const obj = this.objectOf(o, 'objects');
      if (!obj) throw fail(`expected an object for "objects"`);
      const values = new Map<string, ColumnValue>();
      const row: InsertRowIR = { values, before: [], after: [] };
      // Hasura's validateInsert: a column is given by the request, a parent's row or an object
      // relationship's row, never by two of them (without it, the parent's value would silently
      // win over the one given).
      if (parentColumns.length > 0) {
        // A loop, not given(): rows under a parent are most of a batch's rows.
        let twice: string[] | undefined;
        for (const k in obj) {
          const c = byField.get(k)?.name;
          if (c !== undefined && parentColumns.includes(c)) (twice ??= []).push(c);
        }
        if (twice) throw new SvcError('validation-failed', `cannot insert ${twice.map((c) => `"${c}"`).join(', ')} columns as their values are already being determined by parent insert`, { path: rowPath(path, indexed, i) });
      }
      for (const k in obj) {
        const val = obj[k];
        const col = byField.get(k);
        if (col) {
          values.set(col.name, { k: 'value', value: this.p.leaf(val, false) });
          continue;
        }
        const r = rels.find((x) => x.rel.name === k);
        if (!r) throw fail(`field "${k}" not found in type: '${tn(t, `_insert_input`)}'`);
        const nested = this.objectOf(val, k);
        if (!nested) continue;
        if (r.rel.kind === 'object') {
          const data = this.p.shape(nested.data);
          if (data === null || data === undefined) continue;
          const determined = r.rel.mapping.map(([own]) => own).filter((c) => given(obj, byField).includes(c) || parentColumns.includes(c));
          if (determined.length) {
            throw new SvcError('validation-failed', `cannot insert object relationship "${r.rel.name}" as ${determined.map((c) => `"${c}"`).join(', ')} column values are already determined`, { path: `${rowPath(path, indexed, i)}.${k}` });
          }
          const b: NestedInsert = { relationship: r.rel.name, mapping: r.rel.mapping, insert: this.insert(r.remote, [data as Arg], nested.on_conflict, `${rowPath(path, indexed, i)}.${k}.data`, false) };
          ZERO_PATHS.set(b, `${rowPath(path, indexed, i)}.${k}`);
          row.before.push(b);
        } else {
          const data = this.listOf(nested.data);
          // Hasura: an empty array relationship insert is no insert.
          if (data.length === 0) continue;
          const theirs = r.rel.mapping.map(([, remote]) => remote);
          row.after.push({ relationship: r.rel.name, mapping: r.rel.mapping, insert: this.insert(r.remote, data, nested.on_conflict, `${rowPath(path, indexed, i)}.${k}.data`, true, theirs) });
        }
      }
      // Only a row with rows under it has a zero check of its own.
      if (row.after.length > 0) ZERO_PATHS.set(row, rowPath(path, indexed, i));
      // Presets win over anything given (preset columns are not in the input type).
      for (const [c, v] of perm.set) values.set(c, { k: 'value', value: v });
      return row;
    });
    const ir: InsertIR = { table: t.model.table, columns, rows, check: perm.check, tableColumns: tableColumnsOf(t), ...(parentColumns.length > 0 ? { parentColumns } : {}) };
    // A level inserted as a set reports its zero check here (Note [Levels inserted as sets]).
    ZERO_PATHS.set(ir, path);
    const oc = this.objectOf(onConflict, 'on_conflict');
    if (oc) {
      const constraint = this.p.shape(oc.constraint);
      if (typeof constraint !== 'string' || !t.model.constraints.some((c) => c.name === constraint)) throw fail(`unexpected value for "constraint": ${JSON.stringify(constraint)}`);
      const update = this.listOf(oc.update_columns).map((f) => {
        const name = this.p.shape(f);
        const col = w.updateColumns.find((c) => c.field === name);
        if (!col) throw fail(`unexpected value for "update_columns": ${JSON.stringify(name)}`);
        return col.name;
      });
      const up = w.update;
      if (update.length > 0 && !up) throw new SvcError('permission-error', `upsert is not allowed for role "${this.ms.rs.role}"`);
      const where = and(this.p.where(oc.where, t), up?.filter ?? TRUE);
      // The constraint's columns beside it: the key by which the compiler reads an updated row in
      // its new version only (Note [Nested inserts]).
      const key = t.model.constraints.find((c) => c.name === constraint)!.columns;
      ir.onConflict = { constraint, columns: [...key], update, set: update.length && up ? new Map([...up.set].map(([c, v]) => [c, { k: 'value', value: v } as ColumnValue])) : undefined, where, check: up?.check ?? TRUE };
    }
    const im = this.objectOf(ifMatched, 'if_matched');
    if (im) {
      // Note [Upsert arguments]: the schema offers if_matched only to a role that may update.
      const up = w.update!;
      const columnOf = (x: Arg, what: string, from: readonly ResolvedColumn[]) => {
        const name = this.p.shape(x);
        const col = from.find((c) => c.field === name);
        if (!col) throw fail(`unexpected value for "${what}": ${JSON.stringify(name)}`);
        return col.name;
      };
      const match = this.listOf(im.match_columns).map((x) => columnOf(x, 'match_columns', this.ms.matchColumns(w)));
      const update = this.listOf(im.update_columns).map((x) => columnOf(x, 'update_columns', w.updateColumns));
      ir.onConflict = {
        columns: match,
        update,
        set: update.length ? new Map([...up.set].map(([c, v]) => [c, { k: 'value', value: v } as ColumnValue])) : undefined,
        where: and(this.p.where(im.where, t), up.filter),
        check: up.check,
      };
    }
    return ir;
  }

  /** The update operators of `args` (and the role's presets) for `w`; `path`: where `args` are
   * (a field's arguments, or one of `update_<t>_many`'s updates). */
  updateSet(w: WriteTable, args: Record<string, Arg>, path = `$.selectionSet.${this.field}.args`): UpdateIR['set'] | undefined {
    const perm = w.update!;
    const set: UpdateIR['set'] = [];
    let given = false;
    const seen = new Map<string, number>();
    for (const [arg, op] of Object.entries(UPDATE_ARGS)) {
      if (args[arg] === undefined) continue;
      given = true;
      const o = this.objectOf(args[arg], arg);
      if (!o) continue;
      for (const [k, val] of Object.entries(o)) {
        const col = w.updateColumns.find((c) => c.field === k);
        if (!col) throw fail(`field "${k}" not found in type: '${tn(w.t, `${arg}_input`)}'`);
        seen.set(col.field, (seen.get(col.field) ?? 0) + 1);
        set.push({ column: col.name, scalar: col.scalar, op, value: this.p.leaf(val, false) });
      }
    }
    const twice = [...seen].filter(([, n]) => n > 1).map(([c]) => `'${c}'`);
    if (twice.length) throw new SvcError('validation-failed', `Column found in multiple operators: [${twice.join(', ')}].`, { path });
    if (!given && perm.set.size === 0) {
      // The table's operators in the order Hasura lists them in this message.
      const offered = this.ms.updateArgs(w);
      const ops = UPDATE_ARGS_ORDER.filter((a) => a in offered).join(', ');
      throw new SvcError('validation-failed', `at least any one of ${ops} is expected`, { path });
    }
    // Hasura: operators given but empty change nothing, and no row is updated.
    if (set.length === 0 && perm.set.size === 0) return undefined;
    for (const [c, v] of perm.set) {
      const col = w.t.model.columnsByName.get(c);
      if (col) set.push({ column: c, scalar: col.scalar, op: 'set', value: v });
    }
    return set;
  }

  pkWhere(w: WriteTable, obj: Record<string, Arg> | undefined): BoolIR {
    const conds: BoolIR[] = (w.t.model.primaryKey ?? []).map((name) => {
      const col = w.t.columns.find((c) => c.name === name)!;
      const val = obj?.[col.field];
      if (val === undefined) throw fail(`missing required field '${col.field}'`);
      return { t: 'cmp', column: col.name, type: col.type, scalar: col.scalar, op: 'eq', value: this.p.leaf(val, false) };
    });
    return { t: 'and', of: conds };
  }

  /** What the field returns: the row (single) or the fields of `<t>_mutation_response`. */
  output(node: FieldNode, w: WriteTable, single: boolean): MutationOutput {
    const t = w.t;
    const filter = t.selectable ? filterOf(t) : TRUE;
    if (single) return { k: 'single', select: this.p.object(node.selectionSet, t), filter };
    const fields: MutationField[] = [];
    for (const [key, nodes] of node.selectionSet ? this.p.collect(node.selectionSet) : []) {
      const n = this.p.merged(nodes);
      const name = n.name.value;
      if (name === '__typename') fields.push({ key, k: 'typename', name: `${tn(t, `_mutation_response`)}` });
      else if (name === 'affected_rows') fields.push({ key, k: 'affected_rows' });
      else if (name === 'returning' && t.hasObject) fields.push({ key, k: 'returning', select: this.p.nested(key, () => this.p.object(n.selectionSet, t)), filter });
      else throw fail(`field "${name}" not found in type: '${tn(t, `_mutation_response`)}'`);
    }
    return { k: 'multi', fields };
  }
}

/** The IRs of a mutation field (several for `update_<t>_many`); undefined entries change nothing. */
function irsFor(
  kind: MutationKind,
  w: WriteTable,
  ms: MutationSchema,
  rs: RoleSchema,
  input: PlanInput,
  vars: Readonly<Record<string, unknown>> | undefined,
): { irs: (MutationIR | { empty: MutationOutput })[]; planner: Planner; byValues?: boolean } {
  // `byValues`: the statements follow values the plan read (Note [Updates by key]): of the
  // variables given; without them (a plan for any values), of variables it has yet to read.
  const planner = new Planner(rs, input.fragments, defaultsOf(input), vars);
  // Remote relationships in the output (Note [Joined fields] in ./joins.ts).
  planner.joinInput = input;
  const field = input.field;
  const mp = new MutationPlanner(planner, ms, field.name.value);
  const args = planner.args(field);
  const t = w.t;
  const single = kind === 'insert_one' || kind === 'update_by_pk' || kind === 'delete_by_pk';
  switch (kind) {
    case 'insert':
    case 'insert_one': {
      const objects = kind === 'insert' ? mp.listOf(args.objects) : [args.object!];
      // Hasura: no object to insert is no insert, and an empty response (buildEmptyMutResp).
      if (objects.length === 0) return { irs: [{ empty: mp.output(field, w, single) }], planner };
      const path = `$.selectionSet.${field.name.value}.args.${kind === 'insert' ? 'objects' : 'object'}`;
      return { irs: [{ k: 'insert', insert: mp.insert(w, objects, args.on_conflict, path, true, [], args.if_matched), output: mp.output(field, w, single) }], planner };
    }
    case 'update':
    case 'update_by_pk': {
      const where = kind === 'update' ? planner.where(args.where, t) : mp.pkWhere(w, mp.objectOf(args.pk_columns, 'pk_columns'));
      const output = mp.output(field, w, single);
      const path = `$.selectionSet.${field.name.value}.args`;
      // Note [Nested updates] in ./nested-update.ts.
      const set = ownSet(mp, w, args, path);
      const nested = planNested(mp, w, args._nested, `${path}._nested`);
      if (!set || (set.length === 0 && nested.length === 0)) return { irs: [{ empty: output }], planner };
      if (nested.length > 0) refuseKeyChange(w, set, path);
      const more = nested.length > 0 ? { nested, key: t.model.primaryKey! } : {};
      return { irs: [{ k: 'update', table: t.model.table, where: and(where, w.update!.filter), set, check: w.update!.check, output, tableColumns: tableColumnsOf(t), ...more }], planner };
    }
    case 'update_many': {
      const output = mp.output(field, w, false);
      const wheres: (BoolIR | undefined)[] = [];
      const irs = mp.listOf(args.updates).map((u, i): MutationIR | { empty: MutationOutput } => {
        const o = mp.objectOf(u, 'updates') ?? {};
        // Hasura parses each update of the list at its index.
        const path = `$.selectionSet.${field.name.value}.args.updates[${i}]`;
        const set = ownSet(mp, w, o, path);
        const nested = planNested(mp, w, o._nested, `${path}._nested`);
        if (!set || (set.length === 0 && nested.length === 0)) return { empty: output };
        if (nested.length > 0) refuseKeyChange(w, set, path);
        const more = nested.length > 0 ? { nested, key: t.model.primaryKey! } : {};
        const where = planner.where(o.where, t);
        wheres[i] = where;
        // Every update of the list gets the role's filter and check (no CVE-2022-46792 here).
        return { k: 'update', table: t.model.table, where: and(where, w.update!.filter), set, check: w.update!.check, output, tableColumns: tableColumnsOf(t), ...more };
      });
      // Note [Updates by key]: runs of updates each naming a row by its key, as one statement.
      // A variable's value as the statement will bind it (paramText: the request's value, or its default).
      const valueOf = (v: Value): unknown => (v.k === 'lit' ? v.v : v.k === 'var' && vars ? (v.path ? valueAt(vars[v.name], v.path) : vars[v.name]) : undefined);
      const { irs: joined, byValues, unresolved } = updatesByKey(irs, wheres, t, w.update!.filter, w.update!.check, valueOf);
      return { irs: joined, planner, byValues: vars === undefined ? unresolved : byValues };
    }
    case 'delete':
    case 'delete_by_pk': {
      const where = kind === 'delete' ? planner.where(args.where, t) : mp.pkWhere(w, args as Record<string, Arg>);
      return { irs: [{ k: 'delete', table: t.model.table, where: and(where, w.delete!.filter), output: mp.output(field, w, single), tableColumns: tableColumnsOf(t) }], planner };
    }
  }
}

/** The JSON of an output when nothing was written (`_set: {}`, `objects: []`): Hasura's
 * buildEmptyMutResp, whose single row is an empty object, not null. */
function emptyOutput(out: MutationOutput): string {
  if (out.k === 'single') return '{}';
  const parts = out.fields.map((f) => `${JSON.stringify(f.key)}:${f.k === 'typename' ? JSON.stringify(f.name) : f.k === 'affected_rows' ? '0' : '[]'}`);
  return `{${parts.join(',')}}`;
}

/** The source's pool, for a statement that runs alone. */
function pool(w: WriteTable): SqlExecutor {
  const conn = w.t.source.connection;
  if (!conn) throw new SvcError('unexpected', `source "${w.t.source.name}" is not connected`);
  return conn.executor;
}

const CHECK_FAILED = 'check constraint of an insert/update permission has failed';

/** Where Hasura reports that a nested insert's parent row was not written: an object
 * relationship's insert at the relationship, a row with array relationship rows at the row; and
 * a level inserted as a set at its list (Note [Levels inserted as sets] in the PostgreSQL
 * compiler). */
const ZERO_PATHS = new WeakMap<InsertRowIR | NestedInsert | InsertIR, string>();

/** Hasura's errors for an insert's nested parents that write no row, one per zero check of the
 * compiled statement (Note [Nested inserts] in the PostgreSQL compiler): an object
 * relationship's insert (`relationship`), and a row with array relationship rows or a level of
 * them. A table outside the dialect's default schema is `schema.name`. */
function zeroErrors(zeroes: readonly ZeroCheck[], defaultSchema: string): { message: string; path: string }[] {
  return zeroes.map((z) => ({
    message:
      z.relationship !== undefined
        ? `cannot proceed to insert object relation "${z.relationship}" since insert to table "${qtDisplay(z.table, defaultSchema)}" affects zero rows`
        : `cannot proceed to insert array relations since insert to table "${qtDisplay(z.table, defaultSchema)}" affects zero rows`,
    path: ZERO_PATHS.get(z.at)!,
  }));
}

/** The error of a statement that wrote a column's default in, which changed since the table
 * was introspected (Note [Defaults bound by column] in plugins/postgres/sql/compile-mutation.ts):
 * nothing was written, and reloading the metadata reads the new one. */
function defaultChanged(d: { table: QualifiedTable; column: string } | undefined, defaultSchema: string, path: string): SvcError {
  const table = d === undefined ? 'a table' : `table "${qtDisplay(d.table, defaultSchema)}"`;
  const column = d === undefined ? 'a column' : `column "${d.column}"`;
  return new SvcError('unexpected', `the default of ${column} of ${table} changed since the metadata was loaded: reload the metadata (reload_metadata) and send the request again`, { path });
}

/** A mutation's statement as it is kept: with its zero checks' errors, and its steps' (Note
 * [Batches in steps] in plugins/postgres/sql/insert-plan.ts). */
type Statement = CompiledQuery & { zeros?: { message: string; path: string }[]; steps?: readonly Statement[] };

/** A statement with its zero checks' errors (`zeroErrors`), and its steps'. */
function withZeros(q: CompiledQuery, defaultSchema: string): Statement {
  const steps = q.steps?.map((s) => withZeros(s, defaultSchema));
  if (!q.zeroes) return steps ? { ...q, steps } : q;
  // The messages only: the IR the checks name is not kept with the statement.
  const { zeroes, ...rest } = q;
  return { ...rest, zeros: zeroErrors(zeroes, defaultSchema), ...(steps ? { steps } : {}) };
}

/*
 * Note [Statements pipelined]
 * A mutation field of several statements (update_many's updates, an insert's steps: Note
 * [Batches in steps] in plugins/postgres/sql/insert-plan.ts) runs them in the request's
 * transaction, on one connection, which takes a statement while one before it still runs
 * (postgres.js pipelines them): so each is sent without waiting for the answers before it, and
 * the answers are read in order. The first statement that failed is the request's error; those
 * sent after it fail only because the transaction had, and the request's transaction is rolled
 * back. A transaction pooler keeps the server connection for the transaction (Note [Poolers] in
 * plugins/postgres/connection/connection.ts). Only a kind that says so (Dialect.pipelines: PostgreSQL's)
 * is sent statements so; another's transaction may take one request at a time (SQL Server's
 * driver, mssql, refuses a second while one runs: "There is another request in progress"), and
 * each statement there is sent once the one before succeeded. One update_many of 100 updates on
 * the two-core machine: 22-29 ms a request awaited one by one, 8.6-8.9 ms pipelined
 * (PostgreSQL's CPU 8-11 -> 3 ms); of 1,000: 216-243 -> 176-188 ms (docs/benchmarks.md "Bulk
 * inserts", `--update-many`), with postgres.js writing at most 100 ahead of their answers, since
 * raised (MAX_PIPELINE in plugins/postgres/connection/connection.ts). A request's fields are sent so too
 * (Note [Fields pipelined] in plugins/graphql/engine.ts); updates by key are one statement
 * (Note [Updates by key] in ./update-rows.ts).
 */

/** The values of `pending` in order: the first rejection in that order is thrown, the ones after
 * it are left handled (Note [Statements pipelined]). */
async function inOrder<T>(pending: readonly Promise<T>[]): Promise<T[]> {
  for (const p of pending) p.catch(() => {});
  const out: T[] = [];
  for (const p of pending) out.push(await p);
  return out;
}

/** The length of a statement's SQL and its steps'. */
const sqlLength = (q: CompiledQuery): number => q.sql.length + (q.steps?.reduce((n, s) => n + sqlLength(s), 0) ?? 0);

/** The zero check `index`'s error (`zeroErrors`). */
function zeroError(zeros: readonly { message: string; path: string }[] | undefined, index: number): SvcError | undefined {
  const z = zeros?.[index];
  return z ? new SvcError('not-supported', z.message, { path: z.path }) : undefined;
}

/** The columns of an InsertIR of `w`'s table, made once per table: each column's type, and
 * whether a row that leaves it out writes null (no default, identity or generation, and not of
 * a domain, which may have a default of its own) or its default's SQL (InsertColumn; Note [Rows
 * bound by column]). Only a table's columns say so: a view's column takes its base table's
 * default, which its own does not show (nor does a foreign table's show the remote one). */
const irColumnsMemo = new WeakMap<WriteTable, InsertIR['columns']>();
function insertIrColumns(w: WriteTable): InsertIR['columns'] {
  let columns = irColumnsMemo.get(w);
  if (columns) return columns;
  const t = w.t;
  const table = t.source.tables.get(t.model.key)?.info;
  const own = table?.relation === 'table' || table?.relation === 'partitioned_table';
  const info = new Map(own ? table.columns.map((c) => [c.name, c]) : []);
  const out = new Map<string, InsertColumn>();
  for (const c of t.model.columns) {
    const i = info.get(c.name);
    const nullDefault = i !== undefined && !i.hasDefault && !i.isIdentity && !i.isGenerated && i.typeKind !== 'domain';
    // An identity's default is no expression (and needs no privilege on its sequence): none.
    const given = i !== undefined && i.hasDefault && !i.isIdentity && !i.isGenerated ? i.default : undefined;
    out.set(c.name, nullDefault ? { scalar: c.scalar, nullDefault: true } : given ? { scalar: c.scalar, default: given } : { scalar: c.scalar });
  }
  irColumnsMemo.set(w, (columns = out));
  return columns;
}

/** A role's insertable columns of a table by their GraphQL field name, made once per list. */
const byFieldMemo = new WeakMap<readonly ResolvedColumn[], ReadonlyMap<string, ResolvedColumn>>();
function insertColumnsByField(w: WriteTable): ReadonlyMap<string, ResolvedColumn> {
  let m = byFieldMemo.get(w.insertColumns);
  if (!m) byFieldMemo.set(w.insertColumns, (m = new Map(w.insertColumns.map((c) => [c.field, c]))));
  return m;
}

/** Shapes kept per mutation plan, and the largest kept (Note [Statements per variable shape]):
 * a batch of thousands of rows is compiled per request, as its statement would be kept once per
 * row count otherwise. */
const SHAPES_LIMIT = 64;
const SHAPE_KEY_MAX = 16_384;
const SHAPE_SQL_MAX = 65_536;

export function planMutation(kind: MutationKind, w: WriteTable, ms: MutationSchema, input: PlanInput): FieldPlan {
  const rs = ms.rs;
  const dialect = w.t.source.kind.dialect;
  const compile = (ir: MutationIR): CompiledQuery => {
    try {
      return dialect.compileMutation!(ir);
    } catch (e) {
      throw new SvcError('not-supported', (e as Error).message);
    }
  };
  const defaults: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(defaultsOf(input))) defaults[k] = resolveMarks(v, () => null);
  type Statements = (Statement | { empty: string })[];
  // The joined fields of the output: the same for every build (they follow the selection).
  let joins: readonly PlannedJoin[] = [];
  const build = (vars: Readonly<Record<string, unknown>> | undefined): { qs: Statements; planner: Planner; byValues?: boolean } => {
    const { irs, planner, byValues } = irsFor(kind, w, ms, rs, input, vars);
    joins = planner.joins;
    return { qs: irs.map((ir) => ('empty' in ir ? { empty: emptyOutput(ir.empty) } : withZeros(compile(ir), dialect.defaultSchema))), planner, byValues };
  };
  // Compiled once when no variable shapes the statement (Note [Variables that shape the query]);
  // otherwise per request: the text is the same for the same shape, so the source's prepared
  // statement (where it prepares them) is still reused.
  let ahead: { qs: Statements; planner: Planner; byValues?: boolean } | undefined;
  try {
    ahead = build(undefined);
  } catch (e) {
    if (!(e instanceof NeedsVariables)) throw e;
  }
  const comparisons = ahead ? [...ahead.planner.comparisons] : [];
  // Note [Statements per variable shape]: the statements of each shape seen, or null where
  // they cannot be generalised (compiled per request).
  const shapes = new Map<string, Statements | null>();
  const types = variableTypes(input);
  const statements = (vars: Readonly<Record<string, unknown>>): Statements => {
    if (ahead && !ahead.byValues && comparisons.every((n) => (vars[n] ?? defaults[n] ?? null) !== null)) return ahead.qs;
    const all = { ...defaults, ...vars };
    const key = types && shapeKey(types, all, SHAPE_KEY_MAX);
    if (key === undefined) return build(all).qs;
    let qs = shapes.get(key);
    if (qs === undefined) {
      // The same walk as shapeKey's (walkShape), which accepted these variables.
      const a = abstractVariables(types!, all)!;
      try {
        const built = build(a.variables);
        // A plan that follows the values (Note [Updates by key]) is made per request.
        const general = built.byValues ? [undefined] : built.qs.map((q) => ('empty' in q ? q : generalise(q, a)));
        const size = general.reduce((n, q) => n + (q && 'sql' in q ? sqlLength(q) : 0), 0);
        qs = general.every((q) => q !== undefined) && size <= SHAPE_SQL_MAX ? (general as Statements) : null;
      } catch {
        qs = null; // the request's own planning says what is wrong
      }
      if (shapes.size >= SHAPES_LIMIT) shapes.delete(shapes.keys().next().value!);
      shapes.set(key, qs);
    }
    return qs ?? build(all).qs;
  };
  const errorPath = kind === 'insert' || kind === 'insert_one' ? `$.selectionSet.${input.field.name.value}.args.${kind === 'insert' ? 'objects' : 'object'}` : '$';
  /** `q`'s answer; `steps`: its steps' answers (Note [Batches in steps] in
   * plugins/postgres/sql/insert-plan.ts). */
  const runStatement = async (exec: SqlExecutor, q: Statement, ctx: RunContext, steps?: string, answers?: ReadonlyMap<number, string>): Promise<string> => {
    const params: (string | null)[] = new Array(q.params.length);
    for (let i = 0; i < params.length; i++) {
      const p = q.params[i]!;
      params[i] = p.k === 'steps' ? steps! : p.k === 'answer' ? answers!.get(p.step)! : paramText(p, ctx, defaults);
    }
    try {
      return (await exec.query<{ json: string }>(q.sql, params, ctx.signal ? { prepare: true, signal: ctx.signal } : PREPARED))[0]!.json;
    } catch (e) {
      const failure = dialect.mutationFailure?.(e);
      if (failure?.k === 'check') throw new SvcError('permission-error', CHECK_FAILED, { path: errorPath });
      if (failure?.k === 'zero') throw zeroError(q.zeros, failure.index) ?? new SvcError('not-supported', 'a nested insert affects zero rows', { path: errorPath });
      if (failure?.k === 'default') throw defaultChanged(q.defaults?.[failure.index], dialect.defaultSchema, errorPath);
      throw dbError(e, dialect, errorPath);
    }
  };
  /** Several statements, or one with steps, in the request's transaction (Note [Statements
   * pipelined]): each sent without waiting for the answers of those before it where the kind
   * pipelines them, else after the one before succeeded; their answers in order. */
  const runAll = async (qs: Statements, ctx: RunContext, queued?: () => void): Promise<string[]> => {
    let chain: Promise<unknown> = Promise.resolve();
    // Each answer is handled from the start (inOrder reports the first failure in order): one
    // may fail while a later step waits for another's answer.
    const send = (statement: () => Promise<string>): Promise<string> => {
      const p = dialect.pipelines ? statement() : chain.then(statement);
      if (!dialect.pipelines) chain = p;
      p.catch(() => {});
      return p;
    };
    const pending: Promise<string>[] = [];
    for (const q of qs) {
      if ('empty' in q) {
        pending.push(Promise.resolve(q.empty));
        continue;
      }
      const exec = await sourceTransaction(ctx, w.t.source);
      let steps: string | undefined;
      if (q.steps) {
        // A step that binds an earlier step's answer (Note [Batches in steps]) is sent once
        // that is in, and the steps after it after it; its statement binds the steps' answers:
        // sent once they and all before them are in.
        const answers: Promise<string>[] = [];
        for (const step of q.steps) {
          const needs = step.params.flatMap((p) => (p.k === 'answer' ? [p.step] : []));
          let bound: Map<number, string> | undefined;
          if (needs.length > 0) {
            try {
              const got = await Promise.all(needs.map((i) => answers[i]!));
              bound = new Map(needs.map((i, j) => [i, got[j]!]));
            } catch (e) {
              // The first failure in order is the request's (those after it failed with it).
              await inOrder([...pending, ...answers]);
              throw e;
            }
          }
          answers.push(send(() => runStatement(exec, step, ctx, undefined, bound)));
        }
        steps = `[${(await inOrder([...pending, ...answers])).slice(pending.length).join(',')}]`;
      }
      pending.push(send(() => runStatement(exec, q, ctx, steps)));
    }
    queued?.();
    return inOrder(pending);
  };
  return {
    // Note [Fields pipelined] in plugins/graphql/engine.ts: where the kind pipelines a
    // transaction's statements.
    pipelined: dialect.pipelines === true,
    async run(ctx: RunContext, queued?: () => void): Promise<string> {
      const qs = statements(ctx.variables);
      const only = qs.length === 1 ? qs[0]! : undefined;
      let texts: string[];
      if (only && !('empty' in only) && !only.steps) {
        // One statement (a single-row mutation): sent and answered, with nothing to order; alone
        // in its request it needs no transaction (Note [Mutations in one round trip]).
        const answer = runStatement(ctx.alone ? pool(w) : await sourceTransaction(ctx, w.t.source), only, ctx);
        queued?.();
        texts = [await answer];
      } else texts = await runAll(qs, ctx, queued);
      const text = kind === 'update_many' ? `[${texts.join(',')}]` : texts[0]!;
      return joins.length > 0 ? spliceJoins(text, joins, ctx) : text;
    },
  };
}

