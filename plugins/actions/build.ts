/**
 * The `actions` build step: the custom types checked against each other and against the tracked
 * tables (Hasura's validateCustomTypeDefinitions, its messages), then every action against the
 * custom types and the environment (Hasura's resolveAction). A bad object is recorded as an
 * inconsistency, never thrown: the custom types as a whole (Hasura reports them as one object,
 * `custom_types custom_types`), an action by itself.
 */
import { Kind, parseType, type TypeNode } from 'graphql';
import type { BuildContext, Metadata } from '../../core/plugin.js';
import { EnvError, resolveHeaders, resolveUrlTemplate, type HeaderConf } from '../event-triggers/index.js';
import { tableKey, type DatabaseService, type InheritedRoleDef, type ResolvedTable, type SqlExecutor } from '../database/index.js';
import * as v from '../../core/valibot.js';
import {
  compileRequestTransform,
  compileResponseTransform,
  RequestTransformSchema,
  ResponseTransformSchema,
  TransformError,
  type CompiledRequestTransform,
  type CompiledResponseTransform,
} from '../webhook-transforms/index.js';
import {
  actionsOf,
  customTypesOf,
  DEFAULT_TIMEOUT_SEC,
  fullAction,
  fullCustomTypes,
  type ActionMeta,
  type CustomTypes,
  type EnumDef,
  type InputObjectDef,
  type ObjectDef,
  type ScalarDef,
  type TypeRelationshipDef,
} from './definition.js';

export const STEP = 'actions';
export const CUSTOM_TYPES_ID = 'custom_types';
export const actionId = (name: string) => `action:${name}`;

/** GraphQL's own scalars, which custom types may use without defining them. */
export const BUILTIN_SCALARS = new Set(['Int', 'Float', 'String', 'Boolean', 'ID']);

/*
 * Note [Postgres scalars in custom types]
 * As in Hasura, custom types and action arguments may name a PostgreSQL scalar by its GraphQL
 * name (`uuid`, `timestamptz`, `geography`, `json`), which the schema then shares with the
 * tables' columns. A name is taken as such a scalar when a tracked table has a column of that
 * type, or when it is one of PostgreSQL's usual base types (which exist in every database); any
 * other unknown name is refused (`the type "x" ... does not exist`).
 */
const PG_SCALARS = [
  'smallint', 'bigint', 'float8', 'numeric', 'money', 'oid', 'json', 'jsonb', 'date', 'time', 'timetz', 'timestamp', 'timestamptz',
  'interval', 'uuid', 'bpchar', 'name', 'bytea', 'inet', 'cidr', 'macaddr', 'bit', 'varbit', 'xml', 'point', 'line', 'lseg', 'box',
  'path', 'polygon', 'circle', 'tsvector', 'tsquery', 'int4range', 'int8range', 'numrange', 'tsrange', 'tstzrange', 'daterange',
];

export interface ResolvedRelationship {
  readonly def: TypeRelationshipDef;
  readonly source: string;
  readonly table: ResolvedTable;
  /** (object field, table column) pairs. */
  readonly mapping: readonly (readonly [string, string])[];
}

export interface ResolvedObject {
  readonly def: ObjectDef;
  readonly relationships: readonly ResolvedRelationship[];
}

export interface ResolvedTypes {
  readonly scalars: ReadonlyMap<string, ScalarDef>;
  readonly enums: ReadonlyMap<string, EnumDef>;
  readonly inputs: ReadonlyMap<string, InputObjectDef>;
  readonly objects: ReadonlyMap<string, ResolvedObject>;
  /** PostgreSQL scalars the custom types or actions name (Note [Postgres scalars in custom types]). */
  readonly pgScalars: ReadonlySet<string>;
}

export interface ResolvedAction {
  readonly meta: ActionMeta;
  readonly name: string;
  readonly root: 'query' | 'mutation';
  readonly async: boolean;
  readonly output: TypeNode;
  /** The output's named type and what it is. */
  readonly outputBase: string;
  readonly outputKind: 'object' | 'scalar' | 'enum';
  readonly args: readonly { name: string; type: TypeNode; description?: string }[];
  /** Resolved at every call (the environment is read at build time, as Hasura does). */
  readonly url: string;
  readonly headers: readonly [string, string][];
  readonly forwardClientHeaders: boolean;
  readonly timeoutMs: number;
  /** Roles with a permission. */
  readonly roles: ReadonlySet<string>;
  /** Hasura's `request_transform` and `response_transform` (plugins/webhook-transforms). */
  readonly request?: CompiledRequestTransform;
  readonly response?: CompiledResponseTransform;
}

export interface ActionsBuild {
  readonly types: ResolvedTypes;
  readonly actions: ReadonlyMap<string, ResolvedAction>;
  /** Where asynchronous actions keep their log (the default PostgreSQL source). */
  readonly catalog?: SqlExecutor;
}

const EMPTY_TYPES: ResolvedTypes = { scalars: new Map(), enums: new Map(), inputs: new Map(), objects: new Map(), pgScalars: new Set() };
export const EMPTY: ActionsBuild = { types: EMPTY_TYPES, actions: new Map() };

export const baseName = (t: TypeNode): string => (t.kind === Kind.NAMED_TYPE ? t.name.value : baseName(t.type));
export const isListType = (t: TypeNode): boolean => (t.kind === Kind.NON_NULL_TYPE ? isListType(t.type) : t.kind === Kind.LIST_TYPE);

const dq = (s: string) => `"${s}"`;
const dquoteList = (xs: Iterable<string>) => [...xs].map(dq).join(', ');
const duplicates = (xs: string[]) => {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const x of xs) (seen.has(x) ? dup : seen).add(x);
  return [...dup];
};
/** A table as Hasura's `<<>` shows a QualifiedTable: the name alone in `public`. */
const tableText = (t: { schema: string; name: string }) => (t.schema === 'public' ? t.name : `${t.schema}.${t.name}`);

/** The scalar names of the databases (Note [Postgres scalars in custom types]). */
function databaseScalars(db: DatabaseService, ctx: BuildContext): Set<string> {
  const out = new Set(PG_SCALARS);
  for (const s of db.resolved(ctx).sources.values()) {
    for (const t of s.tables.values()) for (const c of t.model?.columns ?? []) out.add(c.scalar.graphql);
  }
  return out;
}

function findTable(db: DatabaseService, ctx: BuildContext, source: string, t: { schema: string; name: string }): ResolvedTable | undefined {
  return db.resolved(ctx).sources.get(source)?.tables.get(tableKey(t.schema, t.name));
}

/*
 * Note [Type names of tables]
 * Custom types share the schema's type names with the types the database plugin makes for
 * tracked tables (`<t>`, `<t>_bool_exp`, ...). A custom object, input object or enum with such a
 * name would make the schema of every role that reaches both fail to assemble, so it is refused
 * when the custom types are set (a custom scalar may have a PostgreSQL scalar's name: it is then
 * that scalar). The names checked are each table's type and the types derived from it.
 */
const TABLE_TYPE_SUFFIXES = [
  '', '_bool_exp', '_order_by', '_select_column', '_aggregate', '_aggregate_fields', '_aggregate_order_by', '_avg_fields', '_max_fields',
  '_min_fields', '_sum_fields', '_stddev_fields', '_variance_fields', '_mutation_response', '_insert_input', '_obj_rel_insert_input',
  '_arr_rel_insert_input', '_on_conflict', '_constraint', '_update_column', '_set_input', '_inc_input', '_pk_columns_input',
  '_updates', '_stream_cursor_input', '_stream_cursor_value_input', '_aggregate_bool_exp',
];

/** Which table's GraphQL types a name is among (the table's name), looked up by stripping each
 * suffix: one index entry per table, built only when there are custom types. */
function tableTypeNames(db: DatabaseService, ctx: BuildContext): { get(name: string): string | undefined } {
  const byName = new Map<string, string>();
  for (const s of db.resolved(ctx).sources.values()) {
    for (const t of s.tables.values()) if (t.model?.inSchema) byName.set(t.model.name, tableText(t.model.table));
  }
  return {
    get(name) {
      for (const suffix of TABLE_TYPE_SUFFIXES) {
        if (!name.endsWith(suffix)) continue;
        const table = byName.get(name.slice(0, name.length - suffix.length));
        if (table) return table;
      }
      return undefined;
    },
  };
}

/** Hasura's validateCustomTypeDefinitions: the reasons the custom types are refused (empty: none). */
function validateTypes(c: CustomTypes, db: DatabaseService, ctx: BuildContext, pg: ReadonlySet<string>): { errors: string[]; types: ResolvedTypes } {
  const errors: string[] = [];
  const scalars = new Map((c.scalars ?? []).map((s) => [s.name, s]));
  const enums = new Map((c.enums ?? []).map((e) => [e.name, e]));
  const inputs = new Map((c.input_objects ?? []).map((o) => [o.name, o]));
  const objectDefs = new Map((c.objects ?? []).map((o) => [o.name, o]));
  const usedPg = new Set<string>();
  // The tables' own GraphQL types (Note [Type names of tables]).
  const taken = tableTypeNames(db, ctx);
  for (const [kind, list] of [['input object', c.input_objects], ['object', c.objects], ['enum', c.enums]] as const) {
    for (const t of list ?? []) {
      const table = taken.get(t.name);
      if (table) errors.push(`the ${kind} type ${dq(t.name)} has the name of a GraphQL type of the table ${dq(table)}`);
    }
  }
  for (const t of c.scalars ?? []) {
    const table = taken.get(t.name);
    if (table && !pg.has(t.name)) errors.push(`the scalar type ${dq(t.name)} has the name of a GraphQL type of the table ${dq(table)}`);
  }
  const dupTypes = duplicates([...(c.scalars ?? []).map((s) => s.name), ...(c.enums ?? []).map((e) => e.name), ...(c.input_objects ?? []).map((o) => o.name), ...(c.objects ?? []).map((o) => o.name)]);
  if (dupTypes.length) errors.push(`duplicate type names: ${dquoteList(dupTypes)}`);
  const isScalar = (n: string) => {
    if (BUILTIN_SCALARS.has(n) || scalars.has(n)) return true;
    if (pg.has(n)) {
      usedPg.add(n);
      return true;
    }
    return false;
  };
  for (const e of c.enums ?? []) {
    const dup = duplicates(e.values.map((x) => x.value));
    if (dup.length) errors.push(`the enum type ${dq(e.name)} has duplicate values: ${dquoteList(dup)}`);
  }
  for (const o of c.input_objects ?? []) {
    const dup = duplicates(o.fields.map((f) => f.name));
    if (dup.length) errors.push(`the input object ${dq(o.name)} has duplicate fields: ${dquoteList(dup)}`);
    for (const f of o.fields) {
      const base = baseName(parseType(f.type));
      if (!isScalar(base) && !enums.has(base) && !inputs.has(base)) errors.push(`the type ${dq(base)} for field ${dq(f.name)} in  input object type ${dq(o.name)} does not exist`);
    }
  }
  const objects = new Map<string, ResolvedObject>();
  for (const o of c.objects ?? []) {
    const rels = o.relationships ?? [];
    const dup = duplicates([...o.fields.map((f) => f.name), ...rels.map((r) => r.name)]);
    if (dup.length) errors.push(`the object ${dq(o.name)} has duplicate fields: ${dquoteList(dup)}`);
    const scalarFields = new Map<string, boolean>(); // field -> is a list
    for (const f of o.fields) {
      if (f.arguments != null) errors.push(`the object ${dq(o.name)} can't have arguments`);
      const t = parseType(f.type);
      const base = baseName(t);
      if (isScalar(base) || enums.has(base)) scalarFields.set(f.name, isListType(t));
      else if (!objectDefs.has(base)) errors.push(`the type ${dq(base)} for field ${dq(f.name)} in  object type ${dq(o.name)} does not exist`);
    }
    const resolvedRels: ResolvedRelationship[] = [];
    for (const r of rels) {
      const source = r.source ?? 'default';
      const table = findTable(db, ctx, source, r.remote_table);
      if (!table?.model) {
        errors.push(`the remote table ${dq(tableText(r.remote_table))} for relationship ${dq(r.name)} of object type ${dq(o.name)} does not exist`);
        continue;
      }
      let ok = true;
      for (const [field, column] of Object.entries(r.field_mapping)) {
        const list = scalarFields.get(field);
        if (list === undefined) {
          errors.push(`the field ${dq(field)} for relationship ${dq(r.name)} in object type ${dq(o.name)} does not exist`);
          ok = false;
        } else if (list) {
          errors.push(`the type of the field ${dq(field)} for relationship ${dq(r.name)} in object type ${dq(o.name)} is a list type`);
          ok = false;
        }
        if (!table.model.columnsByName.has(column)) {
          errors.push(`the column ${dq(column)} of remote table ${dq(tableText(r.remote_table))} for relationship ${dq(r.name)} of object type ${dq(o.name)} does not exist`);
          ok = false;
        }
      }
      if (ok) resolvedRels.push({ def: r, source, table, mapping: Object.entries(r.field_mapping) });
    }
    objects.set(o.name, { def: o, relationships: resolvedRels });
  }
  return { errors, types: { scalars, enums, inputs, objects, pgScalars: usedPg } };
}

const withoutCustomTypes = (md: Metadata): Metadata => {
  const { custom_types: _drop, ...rest } = md;
  return rest as Metadata;
};
const withoutAction = (name: string) => (md: Metadata): Metadata => ({ ...md, actions: actionsOf(md).filter((a) => a.name !== name) });

/** The object types reachable from `name` through object-typed fields (itself included). */
function nestedObjectFields(types: ResolvedTypes, o: ResolvedObject): string[] {
  return o.def.fields.filter((f) => types.objects.has(baseName(parseType(f.type)))).map((f) => f.name);
}

/** The admin's root fields that other plugins give (tables, functions, ...), by name; their
 * owners (RootFieldDef.owner) are read only for a name an action takes. */
type Owned = ReadonlyMap<string, { readonly owner?: string }>;
export type OtherRoots = () => { query: Owned; mutation: Owned } | undefined;

/*
 * Note [Action root fields]
 * An action's root field shares the root types with the tables' (and other plugins') fields: a
 * name taken twice would make every schema of a role fail to assemble. So the build checks each
 * action's root field names against the admin's other root fields (KernelApi.roleRoots on the
 * build in progress, where this step has no output yet and so contributes nothing) and makes an
 * action that collides inconsistent, as Hasura refuses it, instead of serving no schema at all.
 */

export function buildActions(ctx: BuildContext, db: DatabaseService, env: Readonly<Record<string, string | undefined>>, catalog: SqlExecutor | undefined, otherRoots?: OtherRoots): ActionsBuild {
  const c = customTypesOf(ctx.metadata);
  const metas = actionsOf(ctx.metadata);
  let types = EMPTY_TYPES;
  if (Object.keys(c).length > 0) {
    const pg = databaseScalars(db, ctx);
    const v = validateTypes(c, db, ctx, pg);
    if (v.errors.length) {
      const why = v.errors.length === 1 ? `because ${v.errors[0]}` : `for the following reasons:\n${v.errors.map((e) => `  • ${e}\n`).join('')}`;
      ctx.inconsistent({
        type: 'custom_types',
        name: 'custom_types custom_types',
        reason: `Inconsistent object: validation for the given custom types failed ${why}`,
        definition: fullCustomTypes(c),
        id: CUSTOM_TYPES_ID,
        remove: withoutCustomTypes,
      });
    } else types = v.types;
  }
  const pg = metas.length ? databaseScalars(db, ctx) : new Set<string>();
  const actions = new Map<string, ResolvedAction>();
  const usedPg = new Set(types.pgScalars);
  const roots = metas.length ? otherRoots?.() : undefined;
  for (const a of metas) {
    const fail = (why: string) =>
      ctx.inconsistent({ type: 'action', name: `action ${a.name}`, reason: `Inconsistent object: in action ${dq(a.name)}; ${why}`, definition: fullAction(a), id: actionId(a.name), remove: withoutAction(a.name) });
    const d = a.definition;
    const args: { name: string; type: TypeNode; description?: string }[] = [];
    let bad: string | undefined;
    for (const arg of d.arguments ?? []) {
      const t = parseType(arg.type);
      const base = baseName(t);
      const isPg = !BUILTIN_SCALARS.has(base) && !types.scalars.has(base) && pg.has(base);
      if (!(BUILTIN_SCALARS.has(base) || types.scalars.has(base) || types.enums.has(base) || types.inputs.has(base) || isPg)) {
        bad = `the type: ${dq(base)} is not defined in custom types or it is not a scalar/enum/input_object`;
        break;
      }
      if (isPg) usedPg.add(base);
      args.push({ name: arg.name, type: t, ...(arg.description ? { description: arg.description } : {}) });
    }
    if (bad) {
      fail(bad);
      continue;
    }
    const output = parseType(d.output_type);
    const outputBase = baseName(output);
    let outputKind: ResolvedAction['outputKind'];
    if (types.objects.has(outputBase)) outputKind = 'object';
    else if (types.enums.has(outputBase)) outputKind = 'enum';
    else if (BUILTIN_SCALARS.has(outputBase) || types.scalars.has(outputBase)) outputKind = 'scalar';
    else if (pg.has(outputBase)) {
      outputKind = 'scalar';
      usedPg.add(outputBase);
    } else {
      fail(`the type: ${dq(outputBase)} is not an object type defined in custom types`);
      continue;
    }
    const async = d.type === 'mutation' && d.kind === 'asynchronous';
    // An asynchronous action's result type is named after the action.
    if (async && (types.objects.has(a.name) || types.inputs.has(a.name) || types.enums.has(a.name) || types.scalars.has(a.name))) {
      fail(`the name of the asynchronous action is the name of a custom type, which its result type would take`);
      continue;
    }
    if (roots) {
      const root = d.type === 'mutation' && roots.mutation.has(a.name) ? 'mutation' : (d.type === 'query' || async) && roots.query.has(a.name) ? 'query' : undefined;
      if (root) {
        // Hasura answers a request that makes such a collision with a 500 `unexpected` naming
        // both owners, as the tables' own collisions (Note [Root field conflicts]).
        const owners = [`action ${a.name}`, roots[root].get(a.name)?.owner ?? 'another root field'].sort();
        ctx.inconsistent({
          type: 'action',
          name: `action ${a.name}`,
          reason: `Inconsistent object: in action ${dq(a.name)}; the root field ${dq(a.name)} conflicts with an existing root field`,
          definition: fullAction(a),
          id: actionId(a.name),
          remove: withoutAction(a.name),
          error: {
            code: 'unexpected',
            status: 500,
            message: `Encountered conflicting definitions in the selection set for '${root}_root' for field '${a.name}' defined in [${owners.join(', ')}]. Fields must not be defined more than once across all sources.`,
          },
        });
        continue;
      }
    }
    if (async && outputKind === 'object') {
      // Hasura: an asynchronous action's output with relationships may not nest objects (the
      // relationships are joined on the stored output's top level only).
      const o = types.objects.get(outputBase)!;
      const nested = nestedObjectFields(types, o);
      if (o.def.relationships?.length && nested.length) {
        fail(`Async action relations cannot be used with object fields: ${dquoteList(nested)}`);
        continue;
      }
    }
    let request: CompiledRequestTransform | undefined;
    let response: CompiledResponseTransform | undefined;
    try {
      // Parsed again: a stored document is not re-validated at boot, and one written by an
      // older version may hold a transform in a shape the schema now refuses.
      if (d.request_transform) request = compileRequestTransform(storedTransform(RequestTransformSchema, d.request_transform));
    } catch (e) {
      if (!(e instanceof TransformError)) throw e;
      fail(`request_transform: ${e.message}`);
      continue;
    }
    try {
      if (d.response_transform) response = compileResponseTransform(storedTransform(ResponseTransformSchema, d.response_transform));
    } catch (e) {
      if (!(e instanceof TransformError)) throw e;
      fail(`response_transform: ${e.message}`);
      continue;
    }
    let url: string;
    let headers: [string, string][];
    try {
      url = resolveUrlTemplate(d.handler, env);
      headers = resolveHeaders(d.headers as HeaderConf[] | undefined, env);
    } catch (e) {
      if (e instanceof EnvError) {
        fail(e.message);
        continue;
      }
      throw e;
    }
    actions.set(a.name, {
      meta: a,
      name: a.name,
      root: d.type,
      async,
      output,
      outputBase,
      outputKind,
      args,
      url,
      headers,
      forwardClientHeaders: d.forward_client_headers === true,
      timeoutMs: (d.timeout ?? DEFAULT_TIMEOUT_SEC) * 1000,
      roles: new Set((a.permissions ?? []).map((p) => p.role)),
      ...(request ? { request } : {}),
      ...(response ? { response } : {}),
    });
  }
  if (usedPg.size !== types.pgScalars.size) types = { ...types, pgScalars: usedPg };
  return { types, actions, ...(catalog ? { catalog } : {}) };
}


/** The roles that see each action, with the inherited roles any of whose parents sees it
 * (`roles` lists parents before children, so inheritance through several levels holds). */
export function inheritActionRoles(b: ActionsBuild, roles: readonly InheritedRoleDef[]): ActionsBuild {
  if (roles.length === 0) return b;
  const actions = new Map<string, ResolvedAction>();
  for (const [name, a] of b.actions) {
    const set = new Set(a.roles);
    for (const r of roles) if (!set.has(r.role) && r.parents.some((p) => set.has(p))) set.add(r.role);
    actions.set(name, set.size === a.roles.size ? a : { ...a, roles: set });
  }
  return { ...b, actions };
}

/** A stored transform checked against its schema; a bad one is a TransformError (an
 * inconsistency of its action). */
function storedTransform<T>(schema: v.GenericSchema<unknown, T>, raw: unknown): T {
  const r = v.safeParse(schema, raw);
  if (!r.success) throw new TransformError([{ error_code: 'Parse Error', message: r.issues[0].message }]);
  return r.output;
}
