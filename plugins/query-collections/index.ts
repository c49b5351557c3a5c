/**
 * Query collections and the allow-list (SPEC "Query collection and allow-list", Hasura v2's
 * Hasura/RQL/DDL/QueryCollection.hs):
 *   - metadata: `query_collections` (named lists of saved GraphQL documents) and `allowlist` (the
 *     collections whose documents may run, for every role or for some), exported and replaced
 *     with the rest;
 *   - operations: create/rename/drop collections, add/drop their queries, add/update/drop
 *     allow-list entries (both endpoints as Hasura serves them);
 *   - the `query-collections` build step: every saved query parsed once per text, and the
 *     allow-list as a set of normalised documents (Note [Allow-list matching]);
 *   - with `--enable-allowlist`, a document gate (Note [Document gates] in plugins/graphql/contract.ts) that
 *     lets a non-admin role run only allow-listed documents.
 * Other plugins (REST endpoints) use the saved queries through QueryCollectionsToken.
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import type { DocumentNode } from 'graphql';
import * as v from '../../core/valibot.js';
import { definePlugin, type Metadata, type OperationDef } from '../../core/plugin.js';
import { GRAPHQL } from '../graphql/index.js';
import { SvcError } from '../../core/errors.js';
import { nameText, optionalComment } from '../../core/validation.js';
import {
  allowlistOf,
  AllowlistSectionSchema,
  collectionsOf,
  CollectionsSectionSchema,
  duplicateQueryNames,
  GLOBAL,
  ListedQuerySchema,
  parseExecutable,
  QueryText,
  ScopeSchema,
  type AllowlistEntry,
  type Collection,
} from './definition.js';
import { normalizedKey } from './normalize.js';
import { diagnose, type Roots } from './validate.js';
import { QueryCollectionsToken, type CollectionsBuild, type Referrer, type SavedQuery } from './service.js';

export { QueryCollectionsToken } from './service.js';
export type { CollectionsBuild, QueryCollectionsService, Referrer, SavedQuery } from './service.js';
export { normalizedKey } from './normalize.js';
export { parseExecutable } from './definition.js';

const STEP = 'query-collections';
const VALIDATION_STEP = 'query-collections-validation';
const ADMIN = 'admin';
const SUCCESS = { message: 'success' };

const quoted = (s: string) => JSON.stringify(s);
const notExists = (name: string, path: string) => new SvcError('not-exists', `query collection with name ${quoted(name)} does not exist`, { path });
/** Hasura's `throw400 NotFound`: the code of a 404 with status 400. */
const notFound = (message: string, path = '$.args') => new SvcError('not-found', message, { path, status: 400 });

/** Hasura's --enable-allowlist (Note [Options by plugin] in core/config.ts). */
export const ALLOWLIST_OPTIONS = {
  enableAllowlist: { flag: 'enable-allowlist', env: 'SVC_GRAPHQL_ENABLE_ALLOWLIST', schema: optionSchemas.bool, default: false },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof ALLOWLIST_OPTIONS> {}
}

export default definePlugin({
  name: 'query-collections',
  // The allow-list is a gate of the GraphQL plugin; without it, collections are metadata only.
  after: ['graphql'],
  requires: [],
  options: ALLOWLIST_OPTIONS,
  setup(k) {
    const referrers: Referrer[] = [];
    const of = (b: { outputs: ReadonlyMap<string, unknown> } | { output<T>(step: string): T | undefined }): CollectionsBuild =>
      (('outputs' in b ? b.outputs.get(STEP) : b.output(STEP)) as CollectionsBuild | undefined) ?? EMPTY_BUILD;
    k.provide(QueryCollectionsToken, { step: STEP, of, referrer: (r) => referrers.push(r) });

    // Hasura's export order: sources, remote_schemas, query_collections, allowlist, actions, ...
    k.metadataSection({ key: 'query_collections', order: 30, schema: CollectionsSectionSchema, empty: () => [] });
    k.metadataSection({ key: 'allowlist', order: 40, schema: AllowlistSectionSchema, empty: () => [] });

    const dependents = (md: Metadata, collection: string, query?: string) => referrers.flatMap((r) => r.dependents(md, collection, query).map((n) => `the ${r.label} ${quoted(n)}`));
    const refuseDependents = (md: Metadata, collection: string, query: string | undefined, what: string, path: string) => {
      const deps = dependents(md, collection, query);
      if (deps.length) throw new SvcError('dependency-error', `${what} is used by ${deps.join(', ')}; cannot proceed to drop`, { path });
    };
    const find = (md: Metadata, name: string) => collectionsOf(md).find((c) => c.name === name);
    const withCollections = (md: Metadata, list: Collection[]): Metadata => ({ ...md, query_collections: list });
    const withAllowlist = (md: Metadata, list: AllowlistEntry[]): Metadata => ({ ...md, allowlist: list });
    const replaceCollection = (md: Metadata, name: string, next: Collection) => withCollections(md, collectionsOf(md).map((c) => (c.name === name ? next : c)));

    const op = <A>(def: Omit<OperationDef<A>, 'mutates'> & { legacy?: string }) => k.operation<A>({ mutates: true, ...def });

    op({
      type: 'create_query_collection',
      legacy: 'create_query_collection',
      args: v.object({ name: nameText, definition: v.object({ queries: v.array(ListedQuerySchema) }), comment: optionalComment }),
      run(a, ctx) {
        if (find(ctx.metadata, a.name)) throw new SvcError('already-exists', `query collection with name ${quoted(a.name)} already exists`, { path: '$.args.name' });
        const dup = duplicateQueryNames(a.definition.queries);
        if (dup) throw new SvcError('not-supported', dup, { path: '$.args.definition.queries' });
        const c: Collection = { name: a.name, definition: { queries: a.definition.queries.map((q) => ({ name: q.name, query: q.query })) } };
        if (a.comment !== undefined) c.comment = a.comment;
        return { metadata: withCollections(ctx.metadata, [...collectionsOf(ctx.metadata), c]), response: SUCCESS };
      },
    });

    op({
      type: 'rename_query_collection',
      args: v.object({ name: nameText, new_name: nameText }),
      run(a, ctx) {
        const c = find(ctx.metadata, a.name);
        if (!c) throw notExists(a.name, '$.args');
        if (find(ctx.metadata, a.new_name)) throw new SvcError('already-exists', `query collection with name ${quoted(a.new_name)} already exists`, { path: '$.args.new_name' });
        let md = replaceCollection(ctx.metadata, a.name, { ...c, name: a.new_name });
        // The allow-list entry and other plugins' references follow the collection (Hasura leaves
        // them naming the old one).
        if (allowlistOf(md).some((e) => e.collection === a.name)) {
          md = withAllowlist(md, allowlistOf(md).map((e) => (e.collection === a.name ? { ...e, collection: a.new_name } : e)));
        }
        for (const r of referrers) if (r.rename) md = r.rename(md, a.name, a.new_name);
        return { metadata: md, response: SUCCESS };
      },
    });

    op({
      type: 'drop_query_collection',
      legacy: 'drop_query_collection',
      args: v.object({ collection: nameText, cascade: v.boolean() }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.collection)) throw notExists(a.collection, '$.args.collection');
        let md = ctx.metadata;
        if (allowlistOf(md).some((e) => e.collection === a.collection)) {
          if (!a.cascade) {
            throw new SvcError(
              'dependency-error',
              `query collection with name ${quoted(a.collection)} is present in the allowlist; cannot proceed to drop. please use cascade to confirm you wish to drop it from the allowlist as well`,
              { path: '$.args.collection' },
            );
          }
          md = withAllowlist(md, allowlistOf(md).filter((e) => e.collection !== a.collection));
        }
        refuseDependents(md, a.collection, undefined, `query collection with name ${quoted(a.collection)}`, '$.args.collection');
        return { metadata: withCollections(md, collectionsOf(md).filter((c) => c.name !== a.collection)), response: SUCCESS };
      },
    });

    op({
      type: 'add_query_to_collection',
      legacy: 'add_query_to_collection',
      args: v.object({ collection_name: nameText, query_name: nameText, query: QueryText }),
      run(a, ctx) {
        const c = find(ctx.metadata, a.collection_name);
        if (!c) throw notExists(a.collection_name, '$.args');
        if (c.definition.queries.some((q) => q.name === a.query_name)) {
          throw new SvcError('already-exists', `query with name ${quoted(a.query_name)} already exists in collection ${quoted(a.collection_name)}`, { path: '$.args' });
        }
        const next: Collection = { ...c, definition: { ...c.definition, queries: [...c.definition.queries, { name: a.query_name, query: a.query }] } };
        return { metadata: replaceCollection(ctx.metadata, c.name, next), response: SUCCESS };
      },
    });

    op({
      type: 'drop_query_from_collection',
      legacy: 'drop_query_from_collection',
      args: v.object({ collection_name: nameText, query_name: nameText }),
      run(a, ctx) {
        const c = find(ctx.metadata, a.collection_name);
        if (!c) throw notExists(a.collection_name, '$.args');
        if (!c.definition.queries.some((q) => q.name === a.query_name)) {
          throw notFound(`query with name ${quoted(a.query_name)} not found in collection ${quoted(a.collection_name)}`);
        }
        refuseDependents(ctx.metadata, c.name, a.query_name, `query with name ${quoted(a.query_name)} in collection ${quoted(c.name)}`, '$.args');
        const next: Collection = { ...c, definition: { ...c.definition, queries: c.definition.queries.filter((q) => q.name !== a.query_name) } };
        return { metadata: replaceCollection(ctx.metadata, c.name, next), response: SUCCESS };
      },
    });

    op({
      type: 'add_collection_to_allowlist',
      legacy: 'add_collection_to_allowlist',
      args: v.object({ collection: nameText, scope: v.optional(v.nullable(ScopeSchema)) }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.collection)) throw notExists(a.collection, '$.args.collection');
        const list = allowlistOf(ctx.metadata);
        if (list.some((e) => e.collection === a.collection)) {
          // Hasura answers 200 and changes nothing.
          return {
            response: {
              message: `collection ${quoted(a.collection)} already exists in the allowlist, scope ignored; to change scope, use update_scope_of_collection_in_allowlist`,
            },
          };
        }
        return { metadata: withAllowlist(ctx.metadata, [...list, { collection: a.collection, scope: a.scope ?? GLOBAL }]), response: SUCCESS };
      },
    });

    op({
      type: 'update_scope_of_collection_in_allowlist',
      args: v.object({ collection: nameText, scope: ScopeSchema }),
      run(a, ctx) {
        if (!find(ctx.metadata, a.collection)) throw notExists(a.collection, '$.args.collection');
        const list = allowlistOf(ctx.metadata);
        if (!list.some((e) => e.collection === a.collection)) throw notFound(`collection ${quoted(a.collection)} doesn't exist in the allowlist`);
        return { metadata: withAllowlist(ctx.metadata, list.map((e) => (e.collection === a.collection ? { collection: e.collection, scope: a.scope } : e))), response: SUCCESS };
      },
    });

    op({
      type: 'drop_collection_from_allowlist',
      legacy: 'drop_collection_from_allowlist',
      // Hasura's generic parser names its type when the key is missing.
      args: v.pipe(
        v.object({ collection: v.optional(nameText) }),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          if (dataset.value.collection === undefined) {
            addIssue({ message: 'parsing Hasura.RQL.Types.Allowlist.DropCollectionFromAllowlist(DropCollectionFromAllowlist) failed, key "collection" not found' });
            return NEVER;
          }
          return { collection: dataset.value.collection };
        }),
      ),
      run(a, ctx) {
        if (!find(ctx.metadata, a.collection)) throw notExists(a.collection, '$.args.collection');
        const list = allowlistOf(ctx.metadata);
        if (!list.some((e) => e.collection === a.collection)) throw notFound(`collection ${quoted(a.collection)} doesn't exist in the allowlist`);
        return { metadata: withAllowlist(ctx.metadata, list.filter((e) => e.collection !== a.collection)), response: SUCCESS };
      },
    });

    k.buildStep<CollectionsBuild>({
      name: STEP,
      run(ctx) {
        const collections = collectionsOf(ctx.metadata);
        const allowlist = allowlistOf(ctx.metadata);
        const previous = ctx.previous ? of(ctx.previous) : undefined;
        // Reuse the build when neither section changed (Note [Sharing] in core/types.ts).
        if (previous && previous !== EMPTY_BUILD && built.get(previous) === collections && builtAllowlist.get(previous) === allowlist) return previous;
        // Documents are parsed once per text: the previous build's are reused.
        const parsed = new Map<string, DocumentNode>();
        for (const byName of previous?.queries.values() ?? []) for (const q of byName.values()) parsed.set(q.query, q.document);
        const queries = new Map<string, Map<string, SavedQuery>>();
        for (const c of collections) {
          const byName = new Map<string, SavedQuery>();
          for (const q of c.definition.queries) {
            let document = parsed.get(q.query);
            if (!document) {
              // The section's schema made sure every stored text parses.
              document = parseExecutable(q.query)!;
              parsed.set(q.query, document);
            }
            byName.set(q.name, { collection: c.name, name: q.name, query: q.query, document });
          }
          queries.set(c.name, byName);
        }
        const keys = (collection: string) => [...(queries.get(collection)?.values() ?? [])].map((q) => normalizedKey(q.document, q.query));
        const global = new Set<string>();
        const roles = new Map<string, Set<string>>();
        for (const e of allowlist) {
          if (e.scope.global) for (const key of keys(e.collection)) global.add(key);
          else {
            for (const role of e.scope.roles) {
              let set = roles.get(role);
              if (!set) roles.set(role, (set = new Set()));
              for (const key of keys(e.collection)) set.add(key);
            }
          }
        }
        const out: CollectionsBuild = { queries, allowed: { global, roles } };
        built.set(out, collections);
        builtAllowlist.set(out, allowlist);
        return out;
      },
    });

    // Note [Saved queries against the schema]: after the steps the admin schema is made from.
    k.buildStep<Validation>({
      name: VALIDATION_STEP,
      after: [STEP, 'sources', 'root-fields'],
      run(ctx) {
        const { queries } = of(ctx);
        if (queries.size === 0) return NO_VALIDATION;
        const before = ctx.previous?.outputs.get(VALIDATION_STEP) as Validation | undefined;
        // The schema is the previous build's when nothing else of the metadata changed and no
        // source is reloaded: the previous answers hold, and its admin roots serve new queries.
        const own = new Set(['query_collections', 'allowlist', ...referrers.flatMap((r) => r.sections ?? [])]);
        const same = before !== undefined && before.roots !== undefined && Object.keys(ctx.reload).length === 0 && sameOutside(ctx.metadata, ctx.previous!.metadata, own);
        let roots = same ? before.roots : undefined;
        let failed = false;
        const results = new Map<string, readonly string[]>();
        const global = new Set(allowlistOf(ctx.metadata).flatMap((e) => (e.scope.global ? [e.collection] : [])));
        for (const [collection, byName] of queries) {
          for (const q of byName.values()) {
            const key = JSON.stringify([collection, q.name, q.query]);
            let errors = same ? before.results.get(key) : undefined;
            if (!errors) {
              if (!roots && !failed) {
                try {
                  roots = k.roleRoots(ADMIN, ctx);
                } catch {
                  // Colliding root fields: reported by the step that finds them.
                  failed = true;
                }
              }
              if (!roots) continue;
              errors = diagnose(q.document, roots);
            }
            results.set(key, errors);
            if (errors.length === 0) continue;
            const list = (xs: readonly string[]) => xs.map(quoted).join(', ');
            let reason = `Inconsistent object: In query collection ${quoted(collection)} the query ${quoted(q.name)} is invalid with the following error(s): ${list([...errors].reverse())}`;
            for (const r of referrers) {
              const names = r.dependents(ctx.metadata, collection, q.name);
              if (names.length) reason += `. This query is being used in the following ${r.label}(s): ${list(names)}`;
            }
            if (global.has(collection)) reason += '. This query is in allowlist.';
            ctx.inconsistent({
              type: 'query_collections',
              name: `query_collections ${q.name} in ${collection}`,
              reason,
              definition: { name: q.name, query: q.query },
              id: `query_collections:${JSON.stringify([collection, q.name])}`,
              remove: (md) => withCollections(md, collectionsOf(md).map((c) => (c.name === collection ? { ...c, definition: { ...c.definition, queries: c.definition.queries.filter((x) => x.name !== q.name) } } : c))),
              // Hasura's withNewInconsistentObjsCheck, which its operations build under.
              error: { code: 'unexpected', status: 500, message: 'cannot continue due to newly found inconsistent metadata' },
            });
          }
        }
        return { results, roots };
      },
    });

    // Note [Document gates]: the configuration is fixed at boot, so without --enable-allowlist the
    // gate is not there at all.
    const graphql = k.optional(GRAPHQL);
    if (k.config.enableAllowlist && graphql) {
      graphql.documentGate({
        name: 'allowlist',
        check({ document, query, role, build }) {
          // Admin is never held to the allow-list (Hasura's checkQueryInAllowlist).
          if (role === ADMIN) return undefined;
          const { allowed } = of(build);
          const key = normalizedKey(document, query);
          if (allowed.global.has(key) || allowed.roles.get(role)?.has(key)) return undefined;
          return { code: 'validation-failed', message: 'query is not allowed' };
        },
      });
    }
  },
});

/** The validation step's output: each saved query's analysis (by collection, name and text),
 * and the admin roots it was made against, for the next build when the schema is the same. */
interface Validation {
  results: ReadonlyMap<string, readonly string[]>;
  roots: Roots | undefined;
}
const NO_VALIDATION: Validation = { results: new Map(), roots: undefined };

/** Whether two documents are the same object for object (Note [Sharing]) outside `own`. */
function sameOutside(a: Metadata, b: Metadata, own: ReadonlySet<string>): boolean {
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) if (!own.has(key) && a[key] !== b[key]) return false;
  return true;
}

const EMPTY_BUILD: CollectionsBuild = { queries: new Map(), allowed: { global: new Set(), roles: new Map() } };
/** The sections each build was made from, to reuse it when they are untouched. */
const built = new WeakMap<CollectionsBuild, Collection[]>();
const builtAllowlist = new WeakMap<CollectionsBuild, AllowlistEntry[]>();
