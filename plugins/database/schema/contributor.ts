/**
 * The database plugin's schema contributor: for a role, the select root fields of every tracked
 * table it may select (admin: all) and of every tracked function it may call, as Hasura v2 names
 * them, each planning through plan.ts.
 */
import { GraphQLList, GraphQLNonNull, type GraphQLFieldConfig, type GraphQLFieldConfigArgumentMap, type GraphQLObjectType } from 'graphql';
import { tableKey } from '../model/meta.js';
import type { BuildResult, FieldPlan, PlanInput, RootFieldDef, RootFieldLookup, SchemaContribution, SchemaContributorDef, TypeRegistry } from '../../../core/plugin.js';
import type { DatabaseService } from '../model/service.js';
import type { JoinedField } from '../model/types.js';
import { MutationSchema, type MutationKind } from './mutation.js';
import type { ResolvedSource } from '../model/resolved.js';
import { candidates, rootLookup, tableFieldName, type Candidate, type RoleTableFields, type Root, type TableFieldKind } from './root-lookup.js';
import { fieldSources, ofSource, sourceNames, tableOwnerName } from './names.js';
import { namespaceField } from './namespace.js';
import { planRootField, type RootKind } from './plan.js';
import { RoleSchema, type RoleFunction, type RoleTable } from './role.js';
import { hasStream, liveOf, streamField, streamRootFields } from './subscription.js';
import { GroupsSchema } from './groups.js';

/** Hasura's admin role: every table, no permission. */
export const ADMIN_ROLE = 'admin';

type FieldConfig = Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>;

export function roleSchema(db: DatabaseService, role: string, build: BuildResult, types: TypeRegistry): RoleSchema {
  const rs = new RoleSchema(role, role === ADMIN_ROLE, db.resolved(build).sources.values(), types, db.inferFunctionPermissions, db.stringifyNumericTypes);
  // `<rel>_groups` (./groups.ts): where the remote offers groups and no field of the table has the name.
  const groups = new GroupsSchema(rs, types);
  rs.groupsField = (t, r) => {
    const remote = rs.remote(t, r);
    const name = `${r.name}_groups`;
    const taken = t.columns.some((c) => c.field === name) || t.computedFields.some((cf) => cf.name === name) || t.relationships.some((x) => x.name === name);
    return r.kind === 'array' && !taken && groups.offered(remote) ? { ...groups.field(remote), description: 'Grouped aggregates of the relationship' } : undefined;
  };
  groupsOf.set(rs, groups);
  // Note [Joined fields] in ./joins.ts.
  const providers = db.joinedFields;
  if (providers.length > 0) {
    // Every source's tables by their names before any namespace: found by name (Note [Root
    // fields by name] in core/schema/assembly.ts), those of a source with a namespace made whole.
    let roots: RootFieldLookup | undefined;
    const tableRoot = (name: string) =>
      (roots ??= rootLookup((n) => candidates(build, db.resolved(build), 'query', n), tableRootFields(rs, 'query', inNamespace), selectTables(rs, types, 'query', outside))).get(name);
    rs.joinedOf = (t) => {
      let out: Record<string, JoinedField> | undefined;
      for (const p of providers) {
        const f = p.fields(role, t.source.name, t.model.table, build, types, tableRoot);
        if (f) out = { ...out, ...f };
      }
      return out;
    };
  }
  return rs;
}

/** Whether a source's root fields are under its namespace (namespace.ts). */
const inNamespace = (s: ResolvedSource): boolean => sourceNames(s).namespace !== undefined;
const outside = (s: ResolvedSource): boolean => !inNamespace(s);

/** The role schema's GroupsSchema (set where the role schema is made). */
const groupsOf = new WeakMap<RoleSchema, GroupsSchema>();

/** `root`: the query root, or the subscription root, where the same fields are live queries
 * (Note [Live queries] in core/schema/contract.ts) as `subscription_root_fields` allows; the
 * tables of the sources `only` takes (all by default). */
export function tableRootFields(rs: RoleSchema, root: 'query' | 'subscription' = 'query', only?: (s: ResolvedSource) => boolean): Record<string, RootFieldDef> {
  const query: Record<string, RootFieldDef> = {};
  for (const t of rs.tables.of(only)) {
    for (const kind of selectKinds(rs, t, root)) query[tableFieldName(t.source, t.model, kind)] = selectField(rs, kind, t);
  }
  // `<t>_groups` (Note [The groups' shape] in ./groups.ts), after every other field, so that a
  // field of that name (a table's own) keeps it. `query_root_fields` shows it with the aggregate.
  for (const t of groupsOf.has(rs) ? rs.tables.of(only) : []) {
    if (!hasGroups(rs, t, root)) continue;
    const name = tableFieldName(t.source, t.model, 'select_groups');
    if (name in query) continue;
    query[name] = selectField(rs, 'select_groups', t);
  }
  return query;
}

/** The select root fields (but `<t>_groups`) the role has of a table, in the root's order. */
function selectKinds(rs: RoleSchema, t: RoleTable, root: 'query' | 'subscription'): TableRootKind[] {
  const allowed = root === 'query' ? t.perm?.queryRootFields : t.perm?.subscriptionRootFields;
  const out: TableRootKind[] = [];
  const add = (kind: TableRootKind) => (!allowed || allowed.includes(kind)) && out.push(kind);
  if (t.hasObject) add('select');
  if (t.hasObject && rs.hasPk(t)) add('select_by_pk');
  if (t.aggregates) add('select_aggregate');
  return out;
}

/** Whether the role has `<t>_groups` on the root. */
function hasGroups(rs: RoleSchema, t: RoleTable, root: 'query' | 'subscription'): boolean {
  const allowed = root === 'query' ? t.perm?.queryRootFields : t.perm?.subscriptionRootFields;
  return groupsOf.get(rs)?.offered(t) === true && (!allowed || allowed.includes('select_aggregate'));
}

const selectField = (rs: RoleSchema, kind: TableRootKind | 'select_groups', t: RoleTable): RootFieldDef => ofSource(t.source, new TableRootField(kind, t, rs));

/** The role's query or subscription root fields of the tables of the sources `only` takes, found
 * by name (Note [Root fields by name] in core/schema/assembly.ts). */
function selectTables(rs: RoleSchema, types: TypeRegistry, root: 'query' | 'subscription', only: (s: ResolvedSource) => boolean): RoleTableFields {
  const tableOf = (c: Candidate) => rs.tables.get(`${c.source.name}\0${c.key}`);
  return {
    has(c) {
      const t = only(c.source) ? tableOf(c) : undefined;
      if (!t) return false;
      if (c.kind === 'select_groups') return hasGroups(rs, t, root);
      if (c.kind === 'select_stream') return hasStream(t);
      return (selectKinds(rs, t, root) as TableFieldKind[]).includes(c.kind);
    },
    make(c) {
      const t = tableOf(c)!;
      return c.kind === 'select_stream' ? streamField(rs, types, t) : selectField(rs, c.kind as TableRootKind | 'select_groups', t);
    },
    *fields() {
      const field = (t: RoleTable, kind: TableFieldKind): [string, Candidate] => [tableFieldName(t.source, t.model, kind), { source: t.source, key: t.model.key, kind }];
      for (const t of rs.tables.of(only)) {
        for (const kind of selectKinds(rs, t, root)) yield field(t, kind);
        if (root === 'subscription' && hasStream(t)) yield field(t, 'select_stream');
      }
      for (const t of groupsOf.has(rs) ? rs.tables.of(only) : []) if (hasGroups(rs, t, root)) yield field(t, 'select_groups');
    },
  };
}

/** The role's mutation root fields of tables, found by name, as `selectTables`. */
function mutationTables(rs: RoleSchema, ms: () => MutationSchema, only: (s: ResolvedSource) => boolean): RoleTableFields {
  const tableOf = (c: Candidate) => rs.writable.get(`${c.source.name}\0${c.key}`);
  return {
    has(c) {
      const t = only(c.source) ? tableOf(c) : undefined;
      return t !== undefined && (ms().kinds(t) as TableFieldKind[]).includes(c.kind);
    },
    make: (c) => ms().field(c.kind as MutationKind, tableOf(c)!),
    *fields() {
      for (const t of rs.writable.of(only)) {
        for (const kind of ms().kinds(t)) yield [tableFieldName(t.source, t.model, kind), { source: t.source, key: t.model.key, kind }];
      }
    },
  };
}

type TableRootKind = 'select' | 'select_by_pk' | 'select_aggregate';

/*
 * Note [Table root fields as instances]
 * A role's schema has a root field per table and kind (three for most tables: 6,000 at 2,000
 * tables), and the schema keeps those it made until the next change: since Note [Root fields by
 * name] (core/schema/assembly.ts), those a request named, or all of them for a whole schema
 * (introspection). Each is an instance of one class, its state three fields and its
 * behaviour on the prototype, rather than an object literal with three closures, their
 * context and two accessor pairs of its own, recorded in a WeakMap too. With the copies of the
 * roots the contributor and the assembly no longer make, at 2,000 tables a change and the first
 * requests after it as admin and as a role went from 26.4 to 9.3 MiB allocated, and a role's
 * schema from 4.6 to 1.3 MiB kept (bench/metadata/memory.ts; docs/benchmarks.md, "Metadata").
 * Each field's type and arguments are made when the schema first reads them (Note [Lazy query
 * schemas] in core/schema/assembly.ts): a request reads those of the fields it selects.
 */
class TableRootField implements RootFieldDef {
  #config: FieldConfig | undefined;
  constructor(
    private readonly kind: TableRootKind | 'select_groups',
    private readonly t: RoleTable,
    private readonly rs: RoleSchema,
  ) {}

  get config(): FieldConfig {
    return (this.#config ??= this.make());
  }

  private make(): FieldConfig {
    const { kind, t, rs } = this;
    if (kind === 'select_groups') return groupsOf.get(rs)!.field(t);
    const table = t.model.table.name;
    const comment = t.model.rootFields[kind].comment;
    const made: FieldConfig =
      kind === 'select'
        ? { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(rs.object(t)))), args: rs.selectArgs(t), description: `fetch data from the table: "${table}"` }
        : kind === 'select_by_pk'
          ? { type: rs.object(t), args: rs.pkArgs(t)!, description: `fetch data from the table: "${table}" using primary key columns` }
          : { type: new GraphQLNonNull(rs.aggregate(t)), args: rs.selectArgs(t), description: `fetch aggregated fields from the table: "${table}"` };
    return comment ? { ...made, description: comment } : made;
  }

  plan(input: PlanInput): FieldPlan {
    return planned(this.kind, this.t, this.rs, input);
  }

  /** Read only where another plugin's field collides with this one: made then. */
  get owner(): string | undefined {
    return this.kind === 'select_groups' ? undefined : tableOwnerName(this.t);
  }
}

/** A query root field's plan (./plan.ts) with its subscription (Note [Live queries]: ./subscription.ts,
 * compiled on first use); put together here, so that neither module imports the other. */
function planned(kind: RootKind, t: RoleTable, rs: RoleSchema, input: PlanInput, fn?: RoleFunction): FieldPlan {
  return { ...planRootField(kind, t, rs, input, fn), live: liveOf(kind, t, rs, input, fn) };
}

/*
 * Note [Tracked functions as root fields]
 * A tracked function is `<fn>(args: <fn>_args, distinct_on, limit, offset, order_by, where)`
 * returning its table's rows, and `<fn>_aggregate` when the role may aggregate the table, under
 * the query root; a VOLATILE function (or one with `exposed_as: mutation`) is `<fn>` under the
 * mutation root, as Hasura exposes it. A role sees a function when it may select its table and
 * has a function permission, or with inferred function permissions (the default). The rows
 * always pass the table's select permission (filter, columns, limit): a function that returns
 * rows outside the role's filter gives nothing of them.
 *
 * Mutation root fields run one after the other (the engine's rule), each as its own statement on
 * the source's pool: one function call is atomic, but two in one request are not one
 * transaction, as Hasura makes them. That needs the engine to hand plans a transaction per
 * request (plugins/graphql, RunContext), which is not in this slice.
 */
export function functionRootFields(rs: RoleSchema): { query: Record<string, RootFieldDef>; mutation: Record<string, RootFieldDef> } {
  const query: Record<string, RootFieldDef> = {};
  const mutation: Record<string, RootFieldDef> = {};
  for (const f of rs.functions) {
    const m = f.model;
    const t = f.table;
    const fn = `"${m.function.name}"`;
    const names = sourceNames(f.source);
    const table = `"${t.model.table.name}"`;
    const args = m.call.inputs.length
      ? { args: { type: new GraphQLNonNull(rs.functionArgs(names.type(`${m.name}_args`), m.call.inputs)), description: `input parameters for function ${fn}` }, ...rs.selectArgs(t) }
      : rs.selectArgs(t);
    // Hasura (its issue 6631): a function that returns one row (not SETOF) gives the row or null,
    // as `_by_pk` does; a SETOF function a list. Both have `_aggregate`.
    const list = m.returnsSet ? new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(rs.object(t)))) : rs.object(t);
    const def = (kind: 'function' | 'function_aggregate', config: FieldConfig, rf: RoleFunction): RootFieldDef =>
      ofSource(f.source, {
        config: m.description ? { ...config, description: m.description } : config,
        plan: (input) => planned(kind, rf.table, rs, input, rf),
      });
    if (m.exposedAs === 'mutation') {
      mutation[names.field(m.rootFields.function)] = def('function', { type: list, args, description: `execute VOLATILE function ${fn} which returns ${table}` }, f);
      continue;
    }
    query[names.field(m.rootFields.function)] = def('function', { type: list, args, description: `execute function ${fn} which returns ${table}` }, f);
    if (t.aggregates) {
      query[names.field(m.rootFields.function_aggregate)] = def(
        'function_aggregate',
        { type: new GraphQLNonNull(rs.aggregate(t)), args, description: `execute function ${fn} and query aggregates on result of table type ${table}` },
        f,
      );
    }
  }
  return { query, mutation };
}

/** The fields of sources with a `root_fields.namespace` moved under one field per source (namespace.ts). */
function namespaced(fields: Record<string, RootFieldDef>, kind: 'query' | 'mutation' | 'subscription', types: TypeRegistry): Record<string, RootFieldDef> {
  const out: Record<string, RootFieldDef> = {};
  const groups = new Map<string, { names: ReturnType<typeof sourceNames>; fields: Record<string, RootFieldDef> }>();
  for (const [name, def] of Object.entries(fields)) {
    const source = fieldSources.get(def);
    const names = source ? sourceNames(source) : undefined;
    if (!names?.namespace) {
      out[name] = def;
      continue;
    }
    let g = groups.get(names.namespace);
    if (!g) groups.set(names.namespace, (g = { names, fields: {} }));
    g.fields[name] = def;
  }
  for (const [ns, g] of groups) {
    out[ns] = namespaceField(ns, g.names.type(`${ns}_${kind === 'mutation' ? 'mutation_frontend' : kind}`), kind, g.fields, types);
  }
  return out;
}

export function databaseContributor(db: DatabaseService): SchemaContributorDef {
  return {
    name: 'tables',
    contribute(role, build, types, scope): SchemaContribution {
      const rs = roleSchema(db, role, build, types);
      const fns = functionRootFields(rs);
      const resolved = db.resolved(build);
      // The fields of a source with a namespace are under it (namespace.ts): made whole, with the
      // functions (few); the other tables' are found by name (Note [Root fields by name] in
      // core/schema/assembly.ts).
      const anyNamespace = [...resolved.sources.values()].some((s) => sourceNames(s).namespace);
      const first = (tables: () => Record<string, RootFieldDef>, own: Record<string, RootFieldDef>, kind: Root) =>
        anyNamespace ? namespaced(Object.assign(tables(), own), kind, types) : own;
      let mutations: MutationSchema | undefined;
      const ms = () => (mutations ??= new MutationSchema(rs, types, scope?.backendOnly === true));
      // The mutation and subscription roots only when a request needs them (Note [Lazy query
      // schemas] in core/schema/assembly.ts): most of a role's types are theirs.
      return {
        query: rootLookup((n) => candidates(build, resolved, 'query', n), first(() => tableRootFields(rs, 'query', inNamespace), fns.query, 'query'), selectTables(rs, types, 'query', outside)),
        mutation: () => rootLookup((n) => candidates(build, resolved, 'mutation', n), first(() => ms().rootFields(inNamespace), fns.mutation, 'mutation'), mutationTables(rs, ms, outside)),
        // Every query root field is a live query too, and each table has its stream (./subscription.ts).
        subscription: () =>
          rootLookup(
            (n) => candidates(build, resolved, 'subscription', n),
            first(() => Object.assign(tableRootFields(rs, 'subscription', inNamespace), streamRootFields(rs, types, inNamespace)), fns.query, 'subscription'),
            selectTables(rs, types, 'subscription', outside),
          ),
      };
    },
  };
}

/** What a plugin that joins to a tracked table needs of it for one role (TableJoinTypes). */
export interface TableJoinTypes {
  /** `<t>`: the role's object type of the table, in the role's type registry. */
  object: GraphQLObjectType;
  /** `<t>_aggregate`, when the role may aggregate the table. */
  aggregate?: GraphQLObjectType;
  /** The arguments of a select (`where`, `order_by`, `limit`, `offset`, `distinct_on`). */
  selectArgs: GraphQLFieldConfigArgumentMap;
  /** The query root fields that select the table and its aggregate for this role (none when
   * `query_root_fields` hides them or the source has a namespace). */
  selectField?: string;
  aggregateField?: string;
  /** GraphQL field name and GraphQL scalar name of each column the role may select, by column. */
  columns: ReadonlyMap<string, { field: string; scalar: string }>;
}

/**
 * The GraphQL side of tracked tables for one role, for plugins whose types have fields that
 * join to tables (action relationships): `(source, schema, name)` gives the table's types as the
 * role sees them (defined in `types`, shared with the tables' own root fields), or undefined when
 * the role may not select the table.
 */
export function tableJoinTypes(db: DatabaseService, role: string, build: BuildResult, types: TypeRegistry): (source: string, schema: string, name: string) => TableJoinTypes | undefined {
  let rs: RoleSchema | undefined;
  return (source, schema, name) => {
    rs ??= roleSchema(db, role, build, types);
    const t = rs.tables.get(`${source}\0${tableKey(schema, name)}`);
    if (!t || !t.hasObject) return undefined;
    const names = sourceNames(t.source);
    const visible = (kind: 'select' | 'select_aggregate') => !names.namespace && (!t.perm?.queryRootFields || t.perm.queryRootFields.includes(kind));
    return {
      object: rs.object(t),
      ...(t.aggregates ? { aggregate: rs.aggregate(t) } : {}),
      selectArgs: rs.selectArgs(t),
      ...(visible('select') ? { selectField: names.field(t.model.rootFields.select.name) } : {}),
      ...(t.aggregates && visible('select_aggregate') ? { aggregateField: names.field(t.model.rootFields.select_aggregate.name) } : {}),
      columns: new Map(t.columns.map((c) => [c.name, { field: c.field, scalar: c.scalar.graphql }])),
    };
  };
}
