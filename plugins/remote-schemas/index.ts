/**
 * Remote schemas (SPEC "Remote schema", "Remote schema permission"; Hasura v2's
 * Hasura/RemoteSchema): other GraphQL servers whose query and mutation root fields the engine
 * serves beside its own.
 *   - metadata: the `remote_schemas` section (each with its permissions), exported and replaced
 *     with the rest;
 *   - operations: add/update/remove/reload/introspect_remote_schema, and
 *     add/drop_remote_schema_permissions (with --enable-remote-schema-permissions);
 *   - the `remote-schemas` build step: each remote introspected (again only when its definition
 *     changed or reload_metadata asks: the `remote_schemas` reload key), a remote that cannot be
 *     reached an inconsistent `remote_schema` object, root field collisions inconsistencies;
 *   - a schema contributor: the remote's root fields (under its namespace when it has one), in
 *     the customized names, planned by ./plan.ts.
 */
import { GraphQLObjectType, isObjectType, Kind, OperationTypeNode, type OperationDefinitionNode, type SelectionSetNode, type GraphQLField, type GraphQLOutputType, type GraphQLSchema } from 'graphql';
import { optionSchemas, type OptionValues } from '../../core/config.js';
import * as v from '../../core/valibot.js';
import { definePlugin, token, type BuildContext, type BuildResult, type TypeRegistry, type InconsistentObject, type KernelApi, type Metadata, type OperationDef, type RootFieldDef, type RootFieldMap, type SchemaContribution } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { nameText, optionalComment } from '../../core/validation.js';
import { ExposedTypes, signature, type Preset } from './customize.js';
import { DefinitionSchema, PermissionSchema, remoteSchemasOf, SectionSchema, withRemoteSchemas, type RemoteSchemaMeta } from './definition.js';
import { planRemoteField } from './plan.js';
import { exposedTypes, resolveRemote, rootFieldNames, type ResolvedRemote } from './remote.js';
import { rolePermission, type RolePermission } from './permissions.js';
import { inheritPermissions } from './inherit.js';
import { allRelationships, joinedField, readJoin, readSourceJoin, registerRelationshipOperations, relationshipGroup, relationshipId, relationshipProvider, sourceJoinedField, walkPath, type RelationshipContext, type RemoteRelationshipMeta } from './relationships.js';
import { checkSchemaRelationship, registerSchemaRelationshipOperations, schemaJoins, schemaRelationshipId, schemaRelationshipsOf, schemaRelationshipTargets, schemaRelationshipUsers, withSchemaRelationship } from './schema-relationships.js';
import { GRAPHQL } from '../graphql/index.js';
import { DatabaseToken, sourceNames, tableJoinTypes, updateTableIfPresent, type DatabaseService, type InheritedRoleDef, type QualifiedTable } from '../database/index.js';

const STEP = 'remote-schemas';
const ADMIN = 'admin';
const SUCCESS = { message: 'success' };
const RELOAD_KEY = 'remote_schemas';

/** Hasura's HASURA_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS (Note [Remote schema permissions]) and
 * HASURA_GRAPHQL_REMOTE_SCHEMA_PRIORITIZE_DATA (Note [Data and errors from a remote]). */
export const REMOTE_SCHEMA_OPTIONS = {
  enableRemoteSchemaPermissions: {
    flag: 'enable-remote-schema-permissions',
    env: 'SVC_GRAPHQL_ENABLE_REMOTE_SCHEMA_PERMISSIONS',
    schema: optionSchemas.bool,
    default: false,
  },
  remoteSchemaPrioritizeData: { flag: 'remote-schema-prioritize-data', env: 'SVC_GRAPHQL_REMOTE_SCHEMA_PRIORITIZE_DATA', schema: optionSchemas.bool, default: false },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof REMOTE_SCHEMA_OPTIONS> {}
}

/** What the build step gives the contributor and the operations. */
export interface RemoteBuild {
  /** The consistent remotes, in metadata order. */
  readonly remotes: ReadonlyMap<string, ResolvedRemote>;
  /** Why each inconsistent remote is so (introspect_remote_schema reports it). */
  readonly failures: ReadonlyMap<string, SvcError>;
  /** Per remote, the roles' permissions (Note [Remote schema permissions]). */
  readonly permissions: ReadonlyMap<string, ReadonlyMap<string, RolePermission>>;
  /** The ids of the remote relationships that are inconsistent (not served). */
  readonly badRelationships: ReadonlySet<string>;
  /** Per consistent remote, its types' relationships that are served, by type (Note [Remote
   * schema relationships] in ./schema-relationships.ts). */
  readonly schemaRelationships: ReadonlyMap<string, ReadonlyMap<string, readonly RemoteRelationshipMeta[]>>;
}
/** What other plugins may tell this one (`k.optional(RemoteSchemasToken)`). */
export interface RemoteSchemasService {
  /** Declares inherited roles (the inherited-roles plugin does): `roles` gives, for a metadata
   * document, the inherited roles, every parent before its children (cycles and unknown parents
   * left out); the build gives each the permissions of its parents on each remote where it has
   * none of its own (Note [Inherited remote schema permissions] in ./inherit.ts). */
  setRoleInheritance(roles: (md: Metadata) => readonly InheritedRoleDef[]): void;
}
export const RemoteSchemasToken = token<RemoteSchemasService>('remote-schemas');

const EMPTY: RemoteBuild = { remotes: new Map(), failures: new Map(), permissions: new Map(), badRelationships: new Set(), schemaRelationships: new Map() };

const quoted = (s: string) => JSON.stringify(s);
const idOf = (name: string) => `remote_schema:${name}`;
const notExists = (name: string) => new SvcError('not-exists', `remote schema with name ${quoted(name)} does not exist`, { path: '$.args' });

export default definePlugin({
  name: 'remote-schemas',
  after: ['database', 'graphql'],
  requires: [],
  options: REMOTE_SCHEMA_OPTIONS,
  setup(k) {
    const of = (b: { outputs: ReadonlyMap<string, unknown> }): RemoteBuild => (b.outputs.get(STEP) as RemoteBuild | undefined) ?? EMPTY;
    /** Remotes introspected by an operation before its build (add_remote_schema checks the remote
     * first, as Hasura does): the build takes them rather than asking again. */
    const fresh = new WeakMap<object, ResolvedRemote>();
    let inheritance: ((md: Metadata) => readonly InheritedRoleDef[]) | undefined;
    k.provide(RemoteSchemasToken, {
      setRoleInheritance(roles) {
        if (inheritance) throw new Error('role inheritance is provided twice');
        inheritance = roles;
      },
    });

    k.metadataSection({ key: 'remote_schemas', order: 20, schema: SectionSchema, empty: () => [] });
    // Note [Reload keys]: reload_metadata's reload_remote_schemas (true or a list, default true).
    k.reloadKey({ key: RELOAD_KEY, arg: 'reload_remote_schemas', default: true });

    const find = (md: Metadata, name: string) => remoteSchemasOf(md).find((r) => r.name === name);
    const replace = (md: Metadata, name: string, next: RemoteSchemaMeta | undefined) =>
      withRemoteSchemas(md, remoteSchemasOf(md).flatMap((r) => (r.name === name ? (next ? [next] : []) : [r])));
    const op = <A>(def: Omit<OperationDef<A>, 'mutates'> & { mutates?: boolean }) => k.operation<A>({ mutates: true, ...def });

    const RemoteArgs = v.object({ name: nameText, definition: DefinitionSchema, comment: optionalComment });

    op({
      type: 'add_remote_schema',
      legacy: 'add_remote_schema',
      args: RemoteArgs,
      async run(a, ctx) {
        if (find(ctx.metadata, a.name)) throw new SvcError('already-exists', `remote schema with name ${quoted(a.name)} already exists`, { path: '$.args' });
        const meta: RemoteSchemaMeta = { name: a.name, definition: a.definition };
        if (a.comment != null) meta.comment = a.comment;
        // Hasura fetches the remote's schema before anything else: an unreachable or invalid
        // remote is this request's error (remote-schema-error), not an inconsistency.
        try {
          fresh.set(a.definition, await resolveRemote(meta, k.env));
        } catch (e) {
          if (e instanceof SvcError) throw new SvcError(e.code, e.message, { path: '$.args', internal: e.internal });
          throw e;
        }
        return { metadata: withRemoteSchemas(ctx.metadata, [...remoteSchemasOf(ctx.metadata), meta]), response: SUCCESS, defines: [idOf(a.name)] };
      },
    });

    op({
      type: 'update_remote_schema',
      legacy: 'update_remote_schema',
      args: RemoteArgs,
      run(a, ctx) {
        const prior = find(ctx.metadata, a.name);
        if (!prior) throw notExists(a.name);
        const meta: RemoteSchemaMeta = { ...prior, definition: a.definition };
        if (a.comment != null) meta.comment = a.comment;
        else delete meta.comment;
        // The build introspects it again (its definition is a new object); what that breaks
        // (a permission that no longer fits) becomes inconsistent, as Hasura reports it.
        return { metadata: replace(ctx.metadata, a.name, meta), response: SUCCESS, defines: [idOf(a.name)], reload: { [RELOAD_KEY]: [a.name] } };
      },
    });

    op({
      type: 'remove_remote_schema',
      legacy: 'remove_remote_schema',
      args: v.object({ name: nameText }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.name)) throw notExists(a.name);
        const users = [...remoteRelationshipUsers(ctx.metadata, a.name), ...schemaRelationshipUsers(remoteSchemasOf(ctx.metadata), a.name)];
        if (users.length) {
          throw new SvcError('dependency-error', `cannot drop due to the following dependent objects : ${users.join(', ')}`, { path: '$.args' });
        }
        return { metadata: replace(ctx.metadata, a.name, undefined), response: SUCCESS };
      },
    });

    op({
      type: 'reload_remote_schema',
      legacy: 'reload_remote_schema',
      args: v.object({ name: nameText }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.name)) throw notExists(a.name);
        return { response: SUCCESS, reload: { [RELOAD_KEY]: [a.name] }, inconsistencies: 'allow' };
      },
    });

    op({
      type: 'introspect_remote_schema',
      legacy: 'introspect_remote_schema',
      mutates: false,
      args: v.object({ name: nameText }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.name)) throw notExists(a.name);
        const b = of(ctx.current);
        const r = b.remotes.get(a.name);
        if (!r) {
          const why = b.failures.get(a.name);
          throw new SvcError('remote-schema-error', why?.message ?? `remote schema ${quoted(a.name)} is inconsistent`, { path: '$.args' });
        }
        return { response: r.introspection };
      },
    });

    registerPermissionOperations(k, find, replace, op);
    registerSchemaRelationshipOperations(op, find, replace);

    // Remote relationships from tables (./relationships.ts), when the database plugin is there.
    let db: DatabaseService | undefined;
    try {
      db = k.use(DatabaseToken);
    } catch {
      db = undefined;
    }
    /** A remote as a role may join to it: its permission, its types' relationships. */
    const contextOf = (build: Pick<BuildResult, 'metadata' | 'outputs'>, remote: string, role: string, types: TypeRegistry): RelationshipContext | undefined => {
      const rb = of(build);
      const r = rb.remotes.get(remote);
      if (!r) return undefined;
      let permission: RolePermission | undefined;
      if (role !== ADMIN && k.config.enableRemoteSchemaPermissions) {
        permission = rb.permissions.get(remote)?.get(role);
        if (!permission) return undefined;
      }
      return { remote: r, permission, maxBytes: k.config.graphqlMaxResponseSize, prioritizeData: k.config.remoteSchemaPrioritizeData, joins: joinsOf(build, remote, role, types) };
    };
    /** Note [Remote schema relationships] in ./schema-relationships.ts: a remote's types'
     * relationships for a role (none without the database plugin). */
    const joinsOf = (build: Pick<BuildResult, 'metadata' | 'outputs'>, remote: string, role: string, types: TypeRegistry) => {
      if (!db) return undefined;
      const database = db;
      let tables: ReturnType<typeof tableJoinTypes> | undefined;
      return schemaJoins(of(build).schemaRelationships.get(remote), (rel, typeName) => {
        const sj = readSourceJoin(rel);
        if (sj && typeof sj !== 'string') {
          // Through the table's select field for the role: where it may not select the table
          // or a join column, the relationship is not in its schema.
          tables ??= tableJoinTypes(database, role, build as BuildResult, types);
          const t = tables(sj.source, sj.table.schema, sj.table.name);
          const keys = sj.mapping.map(([, c]) => t?.columns.get(c));
          if (!t?.selectField || keys.some((x) => !x)) return undefined;
          const rootName = t.selectField;
          return sourceJoinedField(sj, {
            root: () => k.roleRoots(role, build).query.get(rootName),
            rootName,
            object: t.object,
            args: t.selectArgs,
            keys: keys.map((x) => ({ field: x!.field, scalar: x!.scalar })),
          });
        }
        const j = readJoin(rel);
        const rc = j ? contextOf(build, j.remoteSchema, role, types) : undefined;
        const owner = of(build).remotes.get(remote)?.customizer.typeName(typeName);
        return j && rc ? joinedField(j, rc, types, owner) : undefined;
      });
    };
    if (db) {
      registerRelationshipOperations(op);
      db.registerGroup(relationshipGroup(schemaRelationshipTargets));
      db.registerJoinedFields(
        relationshipProvider(
          contextOf,
          (build, id) => !of(build).badRelationships.has(id),
          (build, sj) => {
            const src = db!.resolved(build).sources.get(sj.source);
            const t = src ? [...src.tables.values()].find((x) => x.meta.table.schema === sj.table.schema && x.meta.table.name === sj.table.name)?.model : undefined;
            const cols = sj.mapping.map(([, to]) => t?.columns.find((c) => c.name === to));
            if (!src || !t || cols.some((c) => !c)) return undefined;
            return { rootName: sourceNames(src).field(t.rootFields.select.name), keys: cols.map((c) => ({ field: c!.field, scalar: c!.scalar.graphql })) };
          },
          (build, source, table) => {
            const src = db!.resolved(build).sources.get(source);
            const t = src ? [...src.tables.values()].find((x) => x.meta.table.schema === table.schema && x.meta.table.name === table.name)?.model : undefined;
            return src && t ? sourceNames(src).type(t.name) : undefined;
          },
        ),
      );
    }

    // A subscription to a remote's field is refused as Hasura refuses it ("subscription to
    // remote server is not supported"), before the operation is chosen: Hasura's subscription
    // root offers the remotes' query fields and refuses them when it plans, which comes before
    // its refusal of subscriptions over HTTP. A document gate sees the whole document, so a
    // document with a subscription to a remote field is refused whichever operation it names.
    const graphql = k.optional(GRAPHQL);
    if (graphql) {
      graphql.documentGate({
        name: 'remote-subscriptions',
        check({ document, operationName, role, build }) {
          const rb = of(build);
          // The operation the request runs (the named one, or the only one); a document whose
          // other operations subscribe to remote fields is not refused for them.
          const ops = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
          const op = operationName === undefined ? (ops.length === 1 ? ops[0] : undefined) : ops.find((d) => d.name?.value === operationName);
          if (rb.remotes.size === 0 || op?.operation !== OperationTypeNode.SUBSCRIPTION) return undefined;
          const names = new Set<string>();
          for (const r of rb.remotes.values()) {
            let schema: GraphQLSchema = r.schema;
            if (role !== ADMIN && k.config.enableRemoteSchemaPermissions) {
              const p = rb.permissions.get(r.name)?.get(role);
              if (!p) continue;
              schema = p.schema;
            }
            const q = schema.getQueryType();
            if (r.customizer.namespace) names.add(r.customizer.namespace);
            else if (q) for (const f of Object.keys(q.getFields())) names.add(r.customizer.fieldName(q.name, f));
          }
          const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
          const selects = (set: SelectionSetNode, seen: Set<string>): boolean =>
            set.selections.some((x) => {
              if (x.kind === Kind.FIELD) return names.has(x.name.value);
              if (x.kind === Kind.INLINE_FRAGMENT) return selects(x.selectionSet, seen);
              const f = fragments.get(x.name.value);
              if (!f || seen.has(f.name.value)) return false;
              seen.add(f.name.value);
              return selects(f.selectionSet, seen);
            });
          return selects(op.selectionSet, new Set()) ? { code: 'not-supported', message: 'subscription to remote server is not supported' } : undefined;
        },
      });
    }

    k.buildStep<RemoteBuild>({
      name: STEP,
      // The database's root fields are made from these (conflicts are checked against them).
      after: ['sources', 'root-fields'],
      run: (ctx) => buildRemotes(k, ctx, fresh, db, inheritance?.(ctx.metadata) ?? []),
    });

    k.schemaContributor({
      name: 'remote-schemas',
      contribute(role, build, types): SchemaContribution {
        const rb = of(build);
        if (rb.remotes.size === 0) return {};
        const query: RootFieldMap = {};
        const mutation: RootFieldMap = {};
        const maxBytes = k.config.graphqlMaxResponseSize;
        const prioritizeData = k.config.remoteSchemaPrioritizeData;
        for (const r of rb.remotes.values()) {
          let source: GraphQLSchema = r.schema;
          let presets: ReadonlyMap<string, ReadonlyMap<string, Preset>> | undefined;
          // Note [Remote schema permissions]: with the flag, a role sees only what its permission
          // gives; without it every role sees the whole remote, as in Hasura.
          if (role !== ADMIN && k.config.enableRemoteSchemaPermissions) {
            const p = rb.permissions.get(r.name)?.get(role);
            if (!p) continue;
            source = p.schema;
            presets = p.presets;
          }
          const ex = new ExposedTypes(source, r.customizer, types, presets, joinsOf(build, r.name, role, types));
          const cz = r.customizer;
          // Every type now (their fields stay thunks): a type only an interface or a union leads
          // to (`... on Droid`) must be in the schema, and a name lookup must find it.
          for (const t of exposedTypes(source, r)) if (!ex.hidden(t)) ex.named(t);
          const add = (kind: 'query' | 'mutation', rootType: GraphQLObjectType | null | undefined, into: RootFieldMap) => {
            if (!rootType) return;
            if (cz.namespace) {
              let exposed: GraphQLObjectType | undefined;
              const type = () => (exposed ??= ex.named(rootType) as GraphQLObjectType);
              into[cz.namespace] = {
                get config() {
                  return { type: type() };
                },
                plan: (input) => planRemoteField({ remote: r, root: type(), kind, namespaced: true, prioritizeData, maxBytes }, input),
              };
              return;
            }
            for (const f of Object.values(rootType.getFields()) as GraphQLField<unknown, unknown>[]) {
              const key = `${rootType.name}.${f.name}`;
              let config: RootFieldDef['config'] | undefined;
              const make = () => (config ??= { type: ex.wrap(f.type) as GraphQLOutputType, args: ex.args(key, f.args), description: f.description, deprecationReason: f.deprecationReason, extensions: ex.fieldExtensions(rootType.name, f) });
              into[cz.fieldName(rootType.name, f.name)] = {
                get config() {
                  return make();
                },
                plan: (input) => planRemoteField({ remote: r, root: rootType, rootField: make(), kind, namespaced: false, prioritizeData, maxBytes }, input),
              };
            }
          };
          add('query', source.getQueryType(), query);
          add('mutation', source.getMutationType(), mutation);
          // A remote's subscriptions are not served (Hasura refuses them): its subscription root
          // is left out, so that it cannot collide with the tables' subscription fields.
        }
        const out: SchemaContribution = { query };
        if (Object.keys(mutation).length) out.mutation = mutation;
        return out;
      },
    });
  },
});

/** The tables' remote relationships that join to this remote (its removal is refused while
 * there are some, as Hasura refuses it). */
function remoteRelationshipUsers(md: Metadata, remote: string): string[] {
  const out: string[] = [];
  const sources = (md.sources as { name: string; tables?: { table: { schema?: string; name: string }; remote_relationships?: { name: string; definition?: Record<string, unknown> }[] }[] }[] | undefined) ?? [];
  for (const s of sources) {
    for (const t of s.tables ?? []) {
      for (const rel of t.remote_relationships ?? []) {
        const d = rel.definition ?? {};
        const target = (d.remote_schema as string | undefined) ?? ((d.to_remote_schema as { remote_schema?: string } | undefined)?.remote_schema);
        if (target === remote) out.push(`remote_relationship ${rel.name} of table ${t.table.schema ?? 'public'}.${t.table.name} in source ${s.name}`);
      }
    }
  }
  return out;
}

/** Whether the build must introspect this remote again. */
function reloads(ctx: BuildContext, name: string): boolean {
  const r = ctx.reload[RELOAD_KEY];
  return r === true || (Array.isArray(r) && r.includes(name));
}

const defKey = new WeakMap<object, string>();
const keyOf = (d: object) => {
  let s = defKey.get(d);
  if (s === undefined) defKey.set(d, (s = JSON.stringify(d)));
  return s;
};

async function buildRemotes(k: KernelApi, ctx: BuildContext, fresh: WeakMap<object, ResolvedRemote>, db: DatabaseService | undefined, inherited: readonly InheritedRoleDef[]): Promise<RemoteBuild> {
  const list = remoteSchemasOf(ctx.metadata);
  const rels = db ? allRelationships(ctx.metadata) : [];
  if (list.length === 0 && rels.length === 0) return EMPTY;
  const prev = (ctx.previous?.outputs.get(STEP) as RemoteBuild | undefined) ?? EMPTY;
  const remotes = new Map<string, ResolvedRemote>();
  const failures = new Map<string, SvcError>();
  const inconsistent = (meta: RemoteSchemaMeta, reason: string, id = idOf(meta.name)): InconsistentObject => ({
    type: 'remote_schema',
    name: `remote_schema ${meta.name}`,
    reason: `Inconsistent object: ${reason}`,
    definition: { name: meta.name, definition: meta.definition, ...(meta.comment !== undefined ? { comment: meta.comment } : {}) },
    id,
    remove: (md) => withRemoteSchemas(md, remoteSchemasOf(md).filter((r) => r.name !== meta.name)),
  });
  // Introspected concurrently: a slow remote does not hold up the others.
  const resolved = await Promise.all(
    list.map(async (meta): Promise<ResolvedRemote | SvcError> => {
      const got = fresh.get(meta.definition);
      fresh.delete(meta.definition);
      if (got && got.name === meta.name) return got;
      const before = prev.remotes.get(meta.name);
      if (before && !reloads(ctx, meta.name) && (before.definition === meta.definition || keyOf(before.definition) === keyOf(meta.definition))) return before;
      try {
        return await resolveRemote(meta, k.env);
      } catch (e) {
        if (e instanceof SvcError) return e;
        return new SvcError('remote-schema-error', e instanceof Error ? e.message : String(e));
      }
    }),
  );
  // Root fields taken by the other contributors (the tables), then by the remotes in order.
  let others: ReturnType<KernelApi['roleRoots']> | undefined;
  try {
    others = k.roleRoots(ADMIN, ctx);
  } catch {
    // Colliding root fields among the others: reported by the step that finds them.
  }
  // The others' names are asked for one by one (a role's roots find a field by name: Note [Root
  // fields by name] in core/schema/assembly.ts); '' is their owner.
  const taken = { query: new Map<string, string>(), mutation: new Map<string, string>() };
  const ownerOf = (kind: 'query' | 'mutation', n: string) => taken[kind].get(n) ?? (others?.[kind].has(n) ? '' : undefined);
  const typeOwners = new Map<string, { remote: string; signature: string }>();
  // The tables' type names (and the `<table>_...` names generated from them): a remote type of
  // such a name would stand for the table's in the schema.
  // A remote object type that has exactly the table's columns (names and types) is the table's
  // type: Hasura accepts such a remote, and both are one type in the schema.
  const tableTypes = new Map<string, string>();
  for (const src of db?.resolved(ctx).sources.values() ?? []) {
    for (const t of src.tables.values()) {
      if (!t.model?.inSchema || t.model.relationships.length > 0 || t.model.computedFields.length > 0) {
        if (t.model?.inSchema) tableTypes.set(sourceNames(src).type(t.model.name), '');
        continue;
      }
      const fields = t.model.columns.map((c) => `${c.field}:${c.scalar.graphql}${c.nullable ? '' : '!'}`).sort();
      tableTypes.set(sourceNames(src).type(t.model.name), fields.join(','));
    }
  }
  const sameAsTable = (r: ResolvedRemote, exposed: string): boolean => {
    const shape = tableTypes.get(exposed);
    if (!shape) return false;
    const t = Object.values(r.schema.getTypeMap()).find((x) => r.customizer.typeName(x.name) === exposed);
    if (!t || !isObjectType(t)) return false;
    const fields = Object.values(t.getFields()).map((f) => `${r.customizer.fieldName(t.name, f.name)}:${String(f.type)}`).sort();
    return fields.join(',') === shape;
  };
  const tableType = (name: string) => {
    if (tableTypes.has(name)) return name;
    for (let i = name.indexOf('_'); i > 0; i = name.indexOf('_', i + 1)) if (tableTypes.has(name.slice(0, i))) return name.slice(0, i);
    return undefined;
  };
  const typesOf = (r: ResolvedRemote) => exposedTypes(r.schema, r).map((t) => ({ name: r.customizer.typeName(t.name), signature: `${t.name}\u0000${signature(t)}` }));
  list.forEach((meta, i) => {
    const r = resolved[i]!;
    if (r instanceof SvcError) {
      failures.set(meta.name, r);
      ctx.inconsistent(inconsistent(meta, r.message));
      return;
    }
    const names = rootFieldNames(r);
    for (const kind of ['query', 'mutation'] as const) {
      for (const n of names[kind]) {
        const owner = ownerOf(kind, n);
        if (owner === undefined) continue;
        const root = kind === 'query' ? 'query_root' : 'mutation_root';
        failures.set(meta.name, new SvcError('remote-schema-error', `conflicting root field ${n}`));
        if (owner === '') {
          // With a table's field: the request that adds the remote is refused as invalid; one
          // that tracks the table while the remote is there, with Hasura's remote-schema-conflicts.
          const o = inconsistent(meta, `Encountered conflicting definitions in the selection set for '${root}' for field '${n}' defined in [remote schema ${meta.name}, a source]. Fields must not be defined more than once across all sources.`);
          if (prev.remotes.get(meta.name) === r) o.error = { code: 'remote-schema-conflicts', status: 400 };
          ctx.inconsistent(o);
        } else {
          ctx.inconsistent(
            inconsistent(meta, `Encountered conflicting definitions in the selection set for '${root}' for field '${n}' defined in [remote schema ${owner}, remote schema ${meta.name}]. Fields must not be defined more than once across all sources.`, `remote_schema_conflict:${meta.name}`),
          );
        }
        return;
      }
    }
    // Note [Types shared by remotes] in ./customize.ts.
    const own = typesOf(r);
    for (const t of own) {
      const table = tableType(t.name);
      if (table !== undefined && !t.signature.includes('\u0000scalar ') && !(table === t.name && sameAsTable(r, t.name))) {
        failures.set(meta.name, new SvcError('remote-schema-error', `conflicting type ${t.name}`));
        ctx.inconsistent(inconsistent(meta, `the GraphQL type ${quoted(t.name)} of remote schema ${quoted(meta.name)} conflicts with the types of table ${quoted(table)}`));
        return;
      }
      const owner = typeOwners.get(t.name);
      if (owner === undefined || owner.signature === t.signature) continue;
      failures.set(meta.name, new SvcError('remote-schema-error', `conflicting type ${t.name}`));
      ctx.inconsistent(inconsistent(meta, `Found conflicting definitions for GraphQL type ${quoted(t.name)} in remote schemas ${quoted(owner.remote)} and ${quoted(meta.name)}`, `remote_schema_conflict:${meta.name}`));
      return;
    }
    for (const kind of ['query', 'mutation'] as const) for (const n of names[kind]) taken[kind].set(n, meta.name);
    for (const t of own) if (!typeOwners.has(t.name)) typeOwners.set(t.name, { remote: meta.name, signature: t.signature });
    remotes.set(meta.name, r);
  });
  // Note [Remote schema permissions]: each role's SDL checked against its remote.
  const permissions = new Map<string, Map<string, RolePermission>>();
  for (const meta of list) {
    const r = remotes.get(meta.name);
    if (!r || !meta.permissions?.length) continue;
    const byRole = new Map<string, RolePermission>();
    const prevByRole = prev.permissions.get(meta.name);
    for (const p of meta.permissions) {
      const before = prevByRole?.get(p.role);
      if (before && before.remote === r && before.sdl === p.definition.schema) {
        byRole.set(p.role, before);
        continue;
      }
      const got = rolePermission(r, p.role, p.definition.schema);
      if ('error' in got) {
        ctx.inconsistent({
          type: 'remote_schema_permission',
          name: `remote_schema_permission ${p.role}.${meta.name}`,
          reason: `Inconsistent object: ${got.error}`,
          definition: { remote_schema: meta.name, role: p.role, definition: p.definition, ...(p.comment !== undefined ? { comment: p.comment } : {}) },
          id: `remote_schema_permission:${meta.name}:${p.role}`,
          remove: (md) => withRemoteSchemas(md, remoteSchemasOf(md).map((x) => (x.name === meta.name ? withoutPermission(x, p.role) : x))),
        });
        continue;
      }
      byRole.set(p.role, got);
    }
    // Note [Inherited remote schema permissions] in ./inherit.ts.
    if (inherited.length && byRole.size) {
      const got = inheritPermissions(byRole, inherited);
      for (const [role, p] of got.permissions) byRole.set(role, p);
      for (const role of got.conflicts) {
        const reason = `Could not inherit permission for the role '${role}' for the entity: 'remote schema: '${meta.name}''`;
        const type = 'inherited role permission inconsistency';
        ctx.inconsistent({
          type,
          name: role,
          reason,
          definition: undefined,
          id: `inherited-permission:remote_schema:${meta.name}:${role}`,
          objectless: true,
          shown: { reason, name: role, type, entity: { remote_schema: meta.name } },
        });
      }
    }
    permissions.set(meta.name, byRole);
  }
  // Remote relationships: their remote, path, arguments and join columns checked.
  const badRelationships = new Set<string>();
  const resolvedSources = db?.resolved(ctx).sources;
  for (const { source, table, rel } of rels) {
    const id = relationshipId(source, table, rel.name);
    const j = readJoin(rel);
    let why: string | undefined;
    const sj = readSourceJoin(rel);
    const tableOf = (src: string, qt: QualifiedTable) => [...(resolvedSources?.get(src)?.tables.values() ?? [])].find((x) => x.meta.table.schema === qt.schema && x.meta.table.name === qt.name);
    if (typeof sj === 'string') why = sj;
    else if (sj) {
      const from = tableOf(source, table);
      const to = tableOf(sj.source, sj.table);
      if (!to) why = `table ${quoted(`${sj.table.schema}.${sj.table.name}`)} is not tracked in source ${quoted(sj.source)}`;
      else {
        const fromMissing = from ? sj.mapping.find(([c]) => !from.info.columns.some((x) => x.name === c)) : undefined;
        const toMissing = sj.mapping.find(([, c]) => !to.info.columns.some((x) => x.name === c));
        if (fromMissing) why = `column ${quoted(fromMissing[0])} does not exist in table ${quoted(table.name)}`;
        else if (toMissing) why = `column ${quoted(toMissing[1])} does not exist in table ${quoted(sj.table.name)}`;
      }
      if (!why && from?.model && [...from.model.columns.map((c) => c.field), ...from.model.relationships.map((r) => r.name)].includes(rel.name)) why = `the name ${quoted(rel.name)} is already a field of table ${quoted(table.name)}`;
    } else if (!j) why = 'expected a relationship to a remote schema (remote_schema, remote_field and the join fields)';
    else {
      const r = remotes.get(j.remoteSchema);
      if (!r) why = list.some((m) => m.name === j.remoteSchema) ? `remote schema ${quoted(j.remoteSchema)} is inconsistent` : `remote schema with name ${quoted(j.remoteSchema)} not found`;
      else {
        const path = walkPath(r.schema, j);
        if (typeof path === 'string') why = path;
        const t = resolvedSources ? [...(resolvedSources.get(source)?.tables.values() ?? [])].find((x) => x.meta.table.schema === table.schema && x.meta.table.name === table.name) : undefined;
        const columns = new Set([...(t?.info.columns ?? []).map((c) => c.name), ...((t?.meta.computed_fields ?? []) as { name: string }[]).map((c) => c.name)]);
        const missing = t ? j.lhs.find((c) => !columns.has(c)) : undefined;
        if (!why && missing !== undefined) why = `column or computed field ${quoted(missing)} does not exist in table ${quoted(table.name)}`;
        // Its name is a field of the table's type: no column, relationship or computed field has it.
        const taken = t?.model ? [...t.model.columns.map((c) => c.field), ...t.model.relationships.map((r) => r.name), ...t.model.computedFields.map((c) => c.name)] : [];
        if (!why && taken.includes(rel.name)) why = `the name ${quoted(rel.name)} is already a field of table ${quoted(table.name)}`;
        // A computed field joins only when it is scalar and takes no argument of its own.
        const unfit = t?.model?.computedFields.find((c) => j.lhs.includes(c.name) && (c.returns.k !== 'scalar' || c.call.inputs.length > 0));
        if (!why && unfit) why = `computed field ${quoted(unfit.name)} cannot be a join field: it must return a scalar and take no arguments besides the row and the session`;
      }
    }
    if (!why) continue;
    badRelationships.add(id);
    ctx.inconsistent({
      type: 'remote_relationship',
      name: `remote_relationship ${rel.name} in table ${table.schema}.${table.name} in source ${source}`,
      reason: `Inconsistent object: in remote relationship ${quoted(rel.name)}: ${why}`,
      definition: { source, table, name: rel.name, definition: rel.definition },
      id,
      remove: (md) => updateTableIfPresent(md, source, table, (t) => {
        const list = ((t.remote_relationships ?? []) as { name: string }[]).filter((x) => x.name !== rel.name);
        const { remote_relationships: _old, ...rest } = t;
        return list.length ? { ...rest, remote_relationships: list } : (rest as typeof t);
      }),
    });
  }
  // Note [Remote schema relationships] in ./schema-relationships.ts: each checked against its
  // remote's type, its target table or remote.
  const schemaRelationships = new Map<string, Map<string, RemoteRelationshipMeta[]>>();
  const env = {
    remotes,
    known: (name: string) => list.some((m) => m.name === name),
    columns: (src: string, schema: string, name: string) => [...(resolvedSources?.get(src)?.tables.values() ?? [])].find((x) => x.meta.table.schema === schema && x.meta.table.name === name)?.info.columns.map((c) => c.name),
  };
  for (const meta of list) {
    if (!remotes.has(meta.name)) continue;
    for (const x of schemaRelationshipsOf(meta)) {
      const why = db ? checkSchemaRelationship(x, env) : 'remote relationships need the database plugin';
      if (!why) {
        let byType = schemaRelationships.get(meta.name);
        if (!byType) schemaRelationships.set(meta.name, (byType = new Map()));
        const rels = byType.get(x.typeName);
        if (rels) rels.push(x.rel);
        else byType.set(x.typeName, [x.rel]);
        continue;
      }
      ctx.inconsistent({
        type: 'remote_schema_remote_relationship',
        // Hasura's moiName: the type, then the object.
        name: `remote_schema_remote_relationship remote_relationship ${x.rel.name} on type ${x.typeName} in remote schema ${meta.name}`,
        reason: `Inconsistent object: in remote relationship ${quoted(x.rel.name)}: ${why}`,
        definition: { remote_schema: meta.name, type_name: x.typeName, name: x.rel.name, definition: x.rel.definition },
        id: schemaRelationshipId(meta.name, x.typeName, x.rel.name),
        remove: (md) => withRemoteSchemas(md, remoteSchemasOf(md).map((r) => (r.name === meta.name ? withSchemaRelationship(r, x.typeName, x.rel.name, undefined) : r))),
      });
    }
  }
  return { remotes, failures, permissions, badRelationships, schemaRelationships };
}

function withoutPermission(r: RemoteSchemaMeta, role: string): RemoteSchemaMeta {
  const permissions = (r.permissions ?? []).filter((p) => p.role !== role);
  const out: RemoteSchemaMeta = { ...r, permissions };
  if (permissions.length === 0) delete out.permissions;
  return out;
}

type Find = (md: Metadata, name: string) => RemoteSchemaMeta | undefined;
type Replace = (md: Metadata, name: string, next: RemoteSchemaMeta | undefined) => Metadata;

function registerPermissionOperations(k: KernelApi, find: Find, replace: Replace, op: <A>(def: Omit<OperationDef<A>, 'mutates'> & { mutates?: boolean }) => void) {
  const disabled = () => new SvcError('constraint-violation', 'remote schema permissions can only be added when remote schema permissions are enabled in the graphql-engine', { path: '$.args' });
  op({
    type: 'add_remote_schema_permissions',
    legacy: 'add_remote_schema_permissions',
    args: v.object({ remote_schema: nameText, role: nameText, definition: PermissionSchema.entries.definition, comment: optionalComment }),
    run(a, ctx) {
      if (!k.config.enableRemoteSchemaPermissions) throw disabled();
      const r = find(ctx.metadata, a.remote_schema);
      if (!r) throw notExists(a.remote_schema);
      if (a.role === ADMIN) throw new SvcError('constraint-violation', 'cannot define permission for admin role', { path: '$.args' });
      if ((r.permissions ?? []).some((p) => p.role === a.role)) {
        throw new SvcError('already-exists', `permissions for role: ${quoted(a.role)} for remote schema:${quoted(a.remote_schema)} already exist`, { path: '$.args' });
      }
      const built = (ctx.current.outputs.get(STEP) as RemoteBuild | undefined)?.remotes.get(a.remote_schema);
      if (built) {
        const got = rolePermission(built, a.role, a.definition.schema);
        if ('error' in got) throw new SvcError('validation-failed', got.error, { path: '$.args' });
      }
      const perm = { role: a.role, definition: { schema: a.definition.schema }, ...(a.comment != null ? { comment: a.comment } : {}) };
      return { metadata: replace(ctx.metadata, r.name, { ...r, permissions: [...(r.permissions ?? []), perm] }), response: SUCCESS, defines: [`remote_schema_permission:${r.name}:${a.role}`] };
    },
  });
  op({
    type: 'drop_remote_schema_permissions',
    legacy: 'drop_remote_schema_permissions',
    args: v.object({ remote_schema: nameText, role: nameText }),
    run(a, ctx) {
      if (!k.config.enableRemoteSchemaPermissions) throw disabled();
      const r = find(ctx.metadata, a.remote_schema);
      if (!r) throw notExists(a.remote_schema);
      if (!(r.permissions ?? []).some((p) => p.role === a.role)) {
        throw new SvcError('not-exists', `permissions for role: ${quoted(a.role)} for remote schema:${quoted(a.remote_schema)} does not exist`, { path: '$.args' });
      }
      return { metadata: replace(ctx.metadata, r.name, withoutPermission(r, a.role)), response: SUCCESS };
    },
  });
}
