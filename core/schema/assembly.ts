/**
 * Per-role GraphQL schema assembly from the plugins' contributors (Note [Planned root fields] in
 * core/plugin.ts). A role's schema is built lazily on its first request and cached on the build,
 * so a metadata change (a new build) drops it. It keeps the root fields' definitions next to the
 * graphql-js schema: the engine plans with them; the schema serves validation and introspection.
 */
import {
  getNamedType,
  GraphQLObjectType,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  specifiedScalarTypes,
  type GraphQLAbstractType,
  type GraphQLInterfaceType,
  GraphQLSchema,
  GraphQLString,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isUnionType,
  validateSchema,
  type GraphQLField,
  type GraphQLFieldConfig,
  type GraphQLFieldMap,
  type GraphQLNamedType,
  type GraphQLType,
} from 'graphql';
import type { BuildResult } from '../types.js';
import { isEmpty, RootFieldLookup, type OperationKind, type RoleSchema, type RootFieldDef, type RootFieldMap, type SchemaContribution, type SchemaContributorDef } from './contract.js';

export type { OperationKind, RoleSchema } from './contract.js';
import { SvcError } from '../errors.js';
import { KeyedView } from '../../lib/keyed-view.js';
import { collision, RoleTypeRegistry } from './registry.js';


/*
 * Note [Schemas without the mutation root]
 * graphql-js builds a schema by walking every type it reaches (and validates every one): with
 * mutations, about half the types of a large source are their input and response types
 * (`<t>_insert_input`, `<t>_set_input`, ...), and half the memory, and the subscription root
 * adds its own (`<t>_stream_cursor_input`...). A query that does not introspect never reaches
 * them, and validating it against the query root alone gives the same answer. So `schemaFor`
 * gives such queries a schema of the query root (lazy too: Note [Lazy query schemas]), a
 * mutation one of the query and mutation roots, a subscription one of the query and
 * subscription roots, and the full one (`schema`, built when first needed) to introspection.
 *
 * Note [Lazy query schemas]
 * Even the query root's schema, built whole, costs its role's first request (after any metadata
 * change) time in proportion to the metadata: at 2,000 tables graphql-js's walk over every type
 * reachable from the query root (each type's fields made from their thunks), its type map and
 * its schema validation took about a second and a half of one. But validating a document and
 * reading its variables touch only the types on its paths: the fields of the types it selects
 * in, and the types it names (variables, fragment conditions). So the schema a query that does
 * not introspect gets is lazy: a GraphQLSchema over the query root whose type lookups go to the
 * role's type registry (the types its contributors made so far), and only for a name that is
 * not there (or a type map asked for whole, as when an error suggests names) to the role's full
 * schema. Its fields stay thunks until a document goes through
 * them, so memory follows what the role's requests use as well. Contributors put the mutation
 * and subscription roots' fields in thunks (LazyRootFields in core/plugin.ts), made on the first
 * request that needs them. The types are the very objects the whole schemas hold, so the answers
 * are the same; the whole schema is validated (graphql-js's validateSchema) when it is built,
 * the lazy one is assumed valid: it is a view of the same types.
 */

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
function reachable(roots: (GraphQLObjectType | undefined)[]): Set<GraphQLNamedType> {
  const walk = reachableWalk(roots);
  while (!walk.step(Infinity));
  return walk.seen;
}

/** `reachable` as a walk taken `step` by `step`: each step visits types until the stack is empty
 * (true) or `until` (performance.now()) has passed (Note [The full schema in steps]). */
function reachableWalk(roots: (GraphQLObjectType | undefined)[]): { seen: Set<GraphQLNamedType>; step(until: number): boolean } {
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
  const step = (until: number): boolean => {
    for (let n = 1; stack.length; n++) {
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
      // A type's fields are made as it is visited (Note [Lazy query schemas]): the clock is
      // read every 64 types.
      if ((n & 63) === 0 && until !== Infinity && performance.now() > until) return stack.length === 0;
    }
    return true;
  };
  return { seen, step };
}

/*
 * Note [The full schema in steps]
 * A role's full schema (introspection, Note [Lazy query schemas]) makes every type of every root
 * field: at 2,000 tables (bench/metadata's) the admin's took about 4 s of the first
 * introspection after a change, during which the server answered nobody. A request that may
 * introspect first makes the types in steps (`fullInSteps`), each of about STEP_MS, giving
 * other requests a turn between them; the schema is then made of the types found, with no walk
 * of its own, in a step of its own, and validated when read (graphql-js's constructor and
 * validateSchema, about half a second each at that size, cannot be cut). Should the steps fail,
 * `full()` fails the same way when read, and reports it as it does.
 */
const STEP_MS = 10;

export function buildRoleSchema(role: string, build: BuildResult, contributors: readonly Contributor[], backendOnly = false): RoleSchema {
  const registry = new RoleTypeRegistry();
  const parts: { plugin: string; part: SchemaContribution }[] = [];
  for (const c of contributors) parts.push({ plugin: c.plugin, part: c.contribute(role, build, registry.as(c.plugin), { backendOnly }) });
  // Each root's fields from every contributor, on first use (Note [Lazy query schemas]).
  const rootOf = (kind: OperationKind) =>
    once(() => {
      const fields = mergedRoot(
        kind,
        parts.map(({ plugin, part }) => {
          const g = part[kind];
          return { plugin, fields: (typeof g === 'function' ? g() : g) ?? {} };
        }),
      );
      return kind === 'query' && isEmpty(fields) ? mergedRoot(kind, [{ plugin: '', fields: { no_queries_available: noQueriesAvailable } }]) : fields;
    });
  const rootFields = { query: rootOf('query'), mutation: rootOf('mutation'), subscription: rootOf('subscription') };
  // Every request needs the query root (a mutation's schema has it too): its collisions are
  // the build's failure, kept by roleSchema.
  rootFields.query();
  const roots = {
    get query() {
      return rootFields.query();
    },
    get mutation() {
      return rootFields.mutation();
    },
    get subscription() {
      return rootFields.subscription();
    },
  };
  const obj = (name: string, fields: ReadonlyMap<string, RootFieldDef>) => (isEmpty(fields) ? undefined : rootType(name, fields));
  // The root types are made once and shared by the schemas.
  const query = once(() => obj('query_root', roots.query)!);
  const mutation = once(() => obj('mutation_root', roots.mutation));
  const subscription = once(() => obj('subscription_root', roots.subscription));
  const failure = (e: unknown): SvcError =>
    e instanceof SvcError
      ? e
      : // graphql-js refuses e.g. two types of one name that bypassed the registry.
        new SvcError('unexpected', `the GraphQL schema of role "${role}" cannot be built: ${(e as Error).message}`);
  // The types fullInSteps found, for `full` to make the schema of.
  let found: Set<GraphQLNamedType> | undefined;
  // The schema of every type, not yet validated (a step of its own: Note [The full schema in steps]).
  const assembled = once((): GraphQLSchema => {
    try {
      const rootTypes = [query(), mutation(), subscription()] as const;
      // Every type, walked without recursion (reachable), then any defined but not reached.
      const types = found ?? reachable([...rootTypes]);
      found = undefined;
      for (const t of registry.definedTypes()) types.add(t);
      const schema = new GraphQLSchema({ query: rootTypes[0], mutation: rootTypes[1], subscription: rootTypes[2], types: [...types] });
      registry.checkExtensions(schema);
      return schema;
    } catch (e) {
      throw failure(e);
    }
  });
  const full = once((): GraphQLSchema => {
    const schema = assembled();
    // Checked once here rather than by the first validate(), which would throw a bare Error.
    const invalid = validateSchema(schema);
    if (invalid.length > 0) throw new SvcError('unexpected', `the GraphQL schema of role "${role}" is invalid: ${invalid[0]!.message}`);
    return schema;
  });
  // One lazy schema per kind of operation: its root and the query root (every schema has one).
  const lazyOf = (kind: OperationKind) =>
    once(() => {
      try {
        return lazySchema({ query: query(), mutation: kind === 'mutation' ? mutation() : undefined, subscription: kind === 'subscription' ? subscription() : undefined }, registry, full);
      } catch (e) {
        throw failure(e);
      }
    });
  const lazy = { query: lazyOf('query'), mutation: lazyOf('mutation'), subscription: lazyOf('subscription') };
  let stepping: Promise<void> | undefined;
  return {
    role,
    roots,
    get schema() {
      return full();
    },
    fullInSteps(turn, stepMs = STEP_MS) {
      // Note [The full schema in steps].
      if (assembled.made()) return Promise.resolve();
      return (stepping ??= (async () => {
        let walk: ReturnType<typeof reachableWalk>;
        try {
          walk = reachableWalk([query(), mutation(), subscription()]);
          while (!walk.step(performance.now() + stepMs)) await turn();
        } catch {
          return; // full() fails the same way and reports it
        }
        if (assembled.made()) return;
        found = walk.seen;
        await turn();
        try {
          assembled();
        } catch {
          /* full() reports it */
        }
      })());
    },
    schemaFor(kind, introspects, document) {
      if (introspects) return full();
      const l = lazy[kind]();
      if (document) l.reach(document);
      return l.schema;
    },
  };
}

/*
 * Note [Root fields by name]
 * A role's schema has a root field per table and kind: at 10,000 tables 30,000 on the query root
 * and 70,000 on the mutation root, made again for each role after every metadata change. Copied
 * into one map of the root, with each contributor's map made whole first, they cost a role's
 * first query after a change about 100 ms, and its first mutation 300-400 (the two-core
 * development machine, 2026-11-29). A request names a few of them. So a contributor of many
 * gives a RootFieldLookup (contract.ts), which finds a field by its name (the database plugin
 * through an index of its build's names: plugins/database/schema/root-lookup.ts), and a root is
 * a view of its contributors' fields (`mergedRoot`) that asks them in turn; only what needs every
 * field (a whole schema, introspection, an error's suggestions, `size`) walks their names.
 * Two contributors that give one name collide when the root is made, as before, found by
 * walking the names of the contributor whose names cost little (a map) and asking the other
 * (two lookups: the later one's names are walked, each looked up in the earlier).
 */

/** A contributor's fields of one root, as `mergedRoot` asks them. */
interface RootPart {
  plugin: string;
  fields: RootFieldMap | RootFieldLookup;
}

const partGet = (p: RootPart, name: string): RootFieldDef | undefined =>
  p.fields instanceof RootFieldLookup ? p.fields.get(name) : Object.hasOwn(p.fields, name) ? p.fields[name] : undefined;
const partNames = (p: RootPart): Iterable<string> => (p.fields instanceof RootFieldLookup ? p.fields.names() : Object.keys(p.fields));

/** The root's fields from the contributors' parts, in order (Note [Root fields by name]); throws
 * the collision of two that give one name. */
function mergedRoot(kind: OperationKind, parts: readonly RootPart[]): ReadonlyMap<string, RootFieldDef> {
  const clash = (name: string, i: number, j: number) => collision(`the ${kind} root field "${name}" is contributed by both "${parts[i]!.plugin}" and "${parts[j]!.plugin}"`);
  for (let j = 1; j < parts.length; j++) {
    const later = parts[j]!;
    if (!(later.fields instanceof RootFieldLookup)) {
      // Each of its names, the first contributor that gave it before.
      for (const name of Object.keys(later.fields)) {
        for (let i = 0; i < j; i++) if (partGet(parts[i]!, name)) throw clash(name, i, j);
      }
      continue;
    }
    for (let i = 0; i < j; i++) {
      const earlier = parts[i]!;
      const [walked, asked] = earlier.fields instanceof RootFieldLookup ? [later, earlier] : [earlier, later];
      for (const name of partNames(walked)) if (partGet(asked, name)) throw clash(name, i, j);
    }
  }
  return new MergedRoot(parts);
}

class MergedRoot extends KeyedView<string, RootFieldDef> {
  constructor(private readonly parts: readonly RootPart[]) {
    super();
  }

  get(name: string): RootFieldDef | undefined {
    for (const p of this.parts) {
      const f = partGet(p, name);
      if (f) return f;
    }
    return undefined;
  }

  *keys(): MapIterator<string> {
    for (const p of this.parts) yield* partNames(p);
  }
}

/**
 * A root type whose fields are made from their definitions one by one, as they are read
 * (Note [Lazy query schemas]): a document that selects one of 2,000 tables' root fields makes
 * one field, its argument types and its type, not 6,000. Reading them all (a whole schema,
 * introspection, an error's suggestions) makes them all.
 */
function rootType(name: string, defs: ReadonlyMap<string, RootFieldDef>): GraphQLObjectType {
  const type = new GraphQLObjectType({ name, fields: {} });
  const made = new Map<string, GraphQLField<unknown, unknown>>();
  const field = (n: string): GraphQLField<unknown, unknown> | undefined => {
    let f = made.get(n);
    if (!f) {
      const def = defs.get(n);
      if (!def) return undefined;
      // graphql-js makes a field (its arguments) from a config only through a type's fields.
      f = new GraphQLObjectType({ name, fields: { [n]: def.config as GraphQLFieldConfig<unknown, unknown> } }).getFields()[n]!;
      made.set(n, f);
    }
    return f;
  };
  // Hasura lists a type's fields by name (its ObjectInfo keeps them sorted), whatever plugin gave
  // them: introspection and the SDL show the roots in that order (code point order, as Text's).
  let names: string[] | undefined;
  const fields = new Proxy({} as GraphQLFieldMap<unknown, unknown>, {
    get: (_, n) => (typeof n === 'string' ? field(n) : undefined),
    has: (_, n) => typeof n === 'string' && defs.has(n),
    ownKeys: () => (names ??= [...defs.keys()].sort()),
    getOwnPropertyDescriptor: (_, n) => {
      const f = typeof n === 'string' ? field(n) : undefined;
      return f ? { value: f, writable: false, enumerable: true, configurable: true } : undefined;
    },
  });
  type.getFields = () => fields;
  return type;
}

/** `make`'s result on first call, then the same result (or the same failure, so that a schema
 * that cannot be built is not retried on every request). */
function once<T>(make: () => T): (() => T) & { made(): boolean } {
  let made: { value: T } | { error: unknown } | undefined;
  const get = () => {
    if (!made) {
      try {
        made = { value: make() };
      } catch (error) {
        made = { error };
      }
    }
    if ('error' in made) throw made.error;
    return made.value;
  };
  return Object.assign(get, { made: () => made !== undefined });
}

/**
 * Note [Lazy query schemas]: a schema of the query root (and of the mutation or the subscription
 * root, for those operations) whose types are found by name in the role's registry, and in the
 * role's full schema (`full`) only when not there. What graphql-js's validation, TypeInfo and
 * variable coercion read of a schema: the root types, `getType`, `getTypeMap` (KnownTypeNamesRule
 * looks names up in it), the directives, and, for abstract types (a remote schema's), the
 * possible types: those go to the full schema.
 *
 * The registry has the types that the fields read so far have made: a document's variables
 * (`$w: author_bool_exp`) and fragments' type conditions are looked up by name, and validation
 * reads the variables before the selection that reaches their types, and a fragment defined
 * before the operation before the path to its type. So `reach(document)` first walks the
 * document's selections from its roots, as validation's TypeInfo will, looking names up in the
 * registry alone: the types on its paths are made, and a name then missing from the registry is
 * on none of them (or is no type): only that goes to the full schema. Without it, at 2,000
 * tables the first request with a variable after every metadata change built the whole schema,
 * 2.2-2.9 s as admin.
 */
interface LazySchema {
  schema: GraphQLSchema;
  reach(document: DocumentNode): void;
}

function lazySchema(
  roots: { query: GraphQLObjectType; mutation?: GraphQLObjectType; subscription?: GraphQLObjectType },
  registry: RoleTypeRegistry,
  full: () => GraphQLSchema,
): LazySchema {
  // A name missing from the registry may be a type of a root field that no request has read
  // yet: the full schema knows it, as Hasura's one schema does.
  // Placeholder roots keep graphql-js from walking the real ones; they are swapped in below.
  // Given the specified scalars, its type map holds them and the introspection types.
  const placeholder = (t: GraphQLObjectType | undefined) => t && new GraphQLObjectType({ name: t.name, fields: { _: { type: GraphQLString } } });
  const schema = new GraphQLSchema({
    query: placeholder(roots.query),
    mutation: placeholder(roots.mutation),
    subscription: placeholder(roots.subscription),
    types: specifiedScalarTypes,
    assumeValid: true,
  });
  const own = schema.getTypeMap();
  const rootsByName = new Map<string, GraphQLObjectType>();
  for (const t of [roots.query, roots.mutation, roots.subscription]) if (t) rootsByName.set(t.name, t);
  // While `reach` walks: the registry's types only.
  let registryOnly = false;
  const lookup = (name: string): GraphQLNamedType | undefined =>
    rootsByName.get(name) ?? (Object.hasOwn(own, name) ? own[name] : undefined) ?? registry.get(name) ?? (registryOnly ? undefined : full().getType(name));
  const typeMap = new Proxy({} as Record<string, GraphQLNamedType>, {
    get: (_, name) => (typeof name === 'string' ? lookup(name) : undefined),
    has: (_, name) => typeof name === 'string' && lookup(name) !== undefined,
    ownKeys: () => Reflect.ownKeys(full().getTypeMap()),
    getOwnPropertyDescriptor: (_, name) => {
      const type = typeof name === 'string' ? lookup(name) : undefined;
      return type ? { value: type, writable: false, enumerable: true, configurable: true } : undefined;
    },
  });
  Object.assign(schema, {
    _queryType: roots.query,
    _mutationType: roots.mutation,
    _subscriptionType: roots.subscription,
    getType: lookup,
    getTypeMap: () => typeMap,
    getPossibleTypes: (t: GraphQLAbstractType) => full().getPossibleTypes(t),
    getImplementations: (t: GraphQLInterfaceType) => full().getImplementations(t),
    isSubType: (a: GraphQLAbstractType, b: GraphQLObjectType | GraphQLInterfaceType) => full().isSubType(a, b),
  });
  const walk = (set: SelectionSetNode, type: GraphQLNamedType) => visit(set, visitWithTypeInfo(new TypeInfo(schema, type), {}));
  const reach = (document: DocumentNode) => {
    registryOnly = true;
    try {
      let fragments: FragmentDefinitionNode[] = [];
      for (const d of document.definitions) {
        if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.push(d);
        else if (d.kind === Kind.OPERATION_DEFINITION) {
          const root = schema.getRootType(d.operation);
          if (root) walk(d.selectionSet, root);
        }
      }
      // A fragment's type is made once a path reaches it, maybe through another fragment.
      for (let before = -1; fragments.length > 0 && fragments.length !== before; ) {
        before = fragments.length;
        fragments = fragments.filter((f) => {
          const type = lookup(f.typeCondition.name.value);
          if (type) walk(f.selectionSet, type);
          return !type;
        });
      }
    } finally {
      registryOnly = false;
    }
  };
  return { schema, reach };
}
