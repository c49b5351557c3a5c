/**
 * Per-role GraphQL schema assembly from the plugins' contributors. A role's schema is built
 * lazily on its first request and cached on the build (so a metadata change drops it).
 * Every root field carries its plugin's name, so a collision names both sides.
 */
import {
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  type GraphQLFieldConfigMap,
} from 'graphql';
import type { BuildResult, SchemaContributorDef, TypeRegistry } from '../plugin.js';
import { SvcError } from '../errors.js';

type Fields = GraphQLFieldConfigMap<unknown, unknown>;

export function schemaFor(role: string, build: BuildResult, contributors: (SchemaContributorDef & { plugin: string })[]): GraphQLSchema {
  const cached = build.schemas.get(role);
  if (cached) return cached as GraphQLSchema;
  const roots: Record<'query' | 'mutation' | 'subscription', Fields> = { query: {}, mutation: {}, subscription: {} };
  const owner: Record<string, string> = {};
  // Placeholder until the engine of Note [Planned root fields] lands: no contributor uses types yet.
  const named = new Map<string, unknown>();
  const types: TypeRegistry = {
    define: (t) => (named.set(t.name, t), t),
    get: (n) => named.get(n) as never,
    extend: () => {},
    extensions: () => ({}),
  };
  for (const c of contributors) {
    const part = c.contribute(role, build, types);
    for (const kind of ['query', 'mutation', 'subscription'] as const) {
      for (const [name, field] of Object.entries(part[kind] ?? {})) {
        const key = `${kind}.${name}`;
        if (owner[key]) {
          throw new SvcError('unexpected', `the ${kind} root field "${name}" is contributed by both "${owner[key]}" and "${c.plugin}"`);
        }
        owner[key] = c.plugin;
        roots[kind][name] = field.config as Fields[string];
      }
    }
  }
  if (Object.keys(roots.query).length === 0) {
    // GraphQL requires a query root with a field (Hasura exposes the same placeholder).
    roots.query.no_queries_available = { type: GraphQLString, resolve: () => 'There are no queries available to the current role. Either there are no sources or remote schemas configured, or the current role doesn\'t have the required permissions.' };
  }
  const obj = (name: string, fields: Fields) => (Object.keys(fields).length ? new GraphQLObjectType({ name, fields }) : undefined);
  const schema = new GraphQLSchema({
    query: obj('query_root', roots.query),
    mutation: obj('mutation_root', roots.mutation),
    subscription: obj('subscription_root', roots.subscription),
  });
  build.schemas.set(role, schema);
  return schema;
}
