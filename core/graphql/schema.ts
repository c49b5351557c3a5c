/**
 * Per-role GraphQL schema assembly from the plugins' contributors (Note [Planned root fields] in
 * core/plugin.ts). A role's schema is built lazily on its first request and cached on the build,
 * so a metadata change (a new build) drops it. It keeps the root fields' definitions next to the
 * graphql-js schema: the engine plans with them; the schema serves validation and introspection.
 */
import {
  getNamedType,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isUnionType,
  validateSchema,
  type GraphQLFieldConfigMap,
  type GraphQLNamedType,
  type GraphQLType,
} from 'graphql';
import type { BuildResult, RootFieldDef, SchemaContributorDef } from '../plugin.js';
import { SvcError } from '../errors.js';
import { collision, RoleTypeRegistry } from './registry.js';

export type OperationKind = 'query' | 'mutation' | 'subscription';

/*
 * Note [Schemas without the mutation root]
 * A role's schema is assembled on its first request, but graphql-js builds a schema by walking
 * every type it reaches (and validates every one): with mutations, about half the types of a
 * large source are their input and response types (`<t>_insert_input`, `<t>_set_input`, ...),
 * and half the memory, and the subscription root adds its own (`<t>_stream_cursor_input`...).
 * A query that does not introspect never reaches them, and validating it against the query
 * root alone gives the same answer. So a role has two graphql-js schemas, each built when first
 * needed: `schemaFor` gives the query root's to such queries, and the full one (`schema`) to
 * mutations, subscriptions and introspection.
 */
export interface RoleSchema {
  readonly role: string;
  /** The full schema: every root (built when first read). */
  readonly schema: GraphQLSchema;
  /** The schema a document is validated and planned against (Note [Schemas without the mutation root]). */
  schemaFor(kind: OperationKind, introspects: boolean): GraphQLSchema;
  /** The root fields by operation kind and name. */
  readonly roots: Readonly<Record<OperationKind, ReadonlyMap<string, RootFieldDef>>>;
}

export type Contributor = SchemaContributorDef & { plugin: string };

const NO_QUERIES = JSON.stringify(
  "There are no queries available to the current role. Either there are no sources or remote schemas configured, or the current role doesn't have the required permissions.",
);

/** GraphQL requires a query root with a field; Hasura exposes this placeholder. */
const noQueriesAvailable: RootFieldDef = {
  config: { type: GraphQLString },
  plan: () => ({ run: async () => NO_QUERIES }),
};

/** A failed build of a role's schema is cached too, so it is not retried on every request. */
interface FailedSchema {
  failed: SvcError;
}

/** The role's schema, built on first use. Throws (an SvcError naming the plugins) when its
 * contributors collide. */
export function roleSchema(role: string, build: BuildResult, contributors: readonly Contributor[], backendOnly = false): RoleSchema {
  // Note [Backend-only permissions]: a variant of the role's schema, cached beside it.
  const key = backendOnly ? `${role}\u0000backend-only` : role;
  const cached = build.schemas.get(key) as RoleSchema | FailedSchema | undefined;
  if (cached) {
    if ('failed' in cached) throw cached.failed;
    return cached;
  }
  try {
    const built = buildRoleSchema(role, build, contributors, backendOnly);
    build.schemas.set(key, built);
    return built;
  } catch (e) {
    if (e instanceof SvcError) build.schemas.set(key, { failed: e } satisfies FailedSchema);
    throw e;
  }
}

/**
 * The named types reachable from `roots`, walked without recursion. graphql-js collects a
 * schema's types depth first, recursing into every type not among the `types` it is given: a
 * chain of 2,000 tables, each with a relationship to the next, overflows the stack. Given every
 * type, it recurses one level only (Note [Schemas without the mutation root]).
 */
function reachable(roots: (GraphQLObjectType | undefined)[]): GraphQLNamedType[] {
  const seen = new Set<GraphQLNamedType>();
  const stack: GraphQLNamedType[] = [];
  const add = (t: GraphQLType) => {
    const n = getNamedType(t);
    if (n && !seen.has(n)) {
      seen.add(n);
      stack.push(n);
    }
  };
  for (const r of roots) if (r) add(r);
  while (stack.length) {
    const t = stack.pop()!;
    if (isObjectType(t) || isInterfaceType(t)) {
      for (const f of Object.values(t.getFields())) {
        add(f.type);
        for (const a of f.args) add(a.type);
      }
      for (const i of t.getInterfaces()) add(i);
    } else if (isInputObjectType(t)) {
      for (const f of Object.values(t.getFields())) add(f.type);
    } else if (isUnionType(t)) {
      for (const m of t.getTypes()) add(m);
    }
  }
  return [...seen];
}

export function buildRoleSchema(role: string, build: BuildResult, contributors: readonly Contributor[], backendOnly = false): RoleSchema {
  const registry = new RoleTypeRegistry();
  const roots: Record<OperationKind, Map<string, RootFieldDef>> = { query: new Map(), mutation: new Map(), subscription: new Map() };
  const owner = new Map<string, string>();
  for (const c of contributors) {
    const part = c.contribute(role, build, registry.as(c.plugin), { backendOnly });
    for (const kind of ['query', 'mutation', 'subscription'] as const) {
      for (const [name, field] of Object.entries(part[kind] ?? {})) {
        const key = `${kind}.${name}`;
        const prior = owner.get(key);
        if (prior) throw collision(`the ${kind} root field "${name}" is contributed by both "${prior}" and "${c.plugin}"`);
        owner.set(key, c.plugin);
        roots[kind].set(name, field);
      }
    }
  }
  if (roots.query.size === 0) roots.query.set('no_queries_available', noQueriesAvailable);
  const obj = (name: string, fields: Map<string, RootFieldDef>) => {
    if (fields.size === 0) return undefined;
    const config: GraphQLFieldConfigMap<unknown, unknown> = {};
    for (const [n, f] of fields) config[n] = f.config as GraphQLFieldConfigMap<unknown, unknown>[string];
    return new GraphQLObjectType({ name, fields: config });
  };
  // The root types are made once and shared by both schemas.
  const query = obj('query_root', roots.query);
  const subscription = obj('subscription_root', roots.subscription);
  const assemble = (full: boolean): GraphQLSchema => {
    let schema: GraphQLSchema;
    try {
      schema = full
        ? new GraphQLSchema({ query, mutation: obj('mutation_root', roots.mutation), subscription, types: registry.definedTypes() })
        : new GraphQLSchema({ query, types: reachable([query]) });
      registry.checkExtensions(schema, !full);
    } catch (e) {
      if (e instanceof SvcError) throw e;
      // graphql-js refuses e.g. two types of one name that bypassed the registry.
      throw new SvcError('unexpected', `the GraphQL schema of role "${role}" cannot be built: ${(e as Error).message}`);
    }
    // Checked once here rather than by the first validate(), which would throw a bare Error.
    const invalid = validateSchema(schema);
    if (invalid.length > 0) throw new SvcError('unexpected', `the GraphQL schema of role "${role}" is invalid: ${invalid[0]!.message}`);
    return schema;
  };
  // Each built once; a failure is kept too, so that it is not retried on every request.
  const once = (full: boolean) => {
    let made: { schema: GraphQLSchema } | { error: unknown } | undefined;
    return () => {
      if (!made) {
        try {
          made = { schema: assemble(full) };
        } catch (error) {
          made = { error };
        }
      }
      if ('error' in made) throw made.error;
      return made.schema;
    };
  };
  const full = once(true);
  const partial = once(false);
  const rs: RoleSchema = {
    role,
    roots,
    get schema() {
      return full();
    },
    schemaFor(kind, introspects) {
      if (kind !== 'query' || introspects || (roots.mutation.size === 0 && roots.subscription.size === 0)) return full();
      return partial();
    },
  };
  return rs;
}
