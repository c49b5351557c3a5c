/**
 * The public contract between the kernel and a plugin. A plugin is a value built with
 * `definePlugin({...})`; its `setup(k)` registers everything it contributes through the KernelApi.
 * The types it exchanges are in ./types.ts (metadata, sessions, builds, operations, routes) and
 * ./schema/contract.ts (GraphQL root fields), both re-exported here. Nothing in here knows any
 * feature.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TypedEmitter } from 'tiny-typed-emitter';
import type { OptionDef, ServerConfig } from './config.js';
import type { Logger } from './log.js';
import type * as v from 'valibot';
import type { UnitOfWork } from './uow.js';
import type {
  AuthMode,
  BuildResult,
  CatalogAccess,
  CatalogExtension,
  BuildStepDef,
  Endpoint,
  Metadata,
  ReloadKeyDef,
  ReloadSpec,
  RouteDef,
  SectionDef,
  Session,
  WorkerDef,
} from './types.js';
import type { RoleSchema, RootFieldDef, SchemaContributorDef } from './schema/contract.js';

export * from './types.js';
export * from './schema/contract.js';

// ---------------------------------------------------------------------------------------------
// Operations

export interface OperationContext {
  /** The draft metadata: the committed one, or the one left by the previous operation of a bulk. */
  readonly metadata: Metadata;
  readonly version: number;
  readonly session: Session;
  readonly endpoint: Endpoint;
  /** Request-scoped resources (source transactions); committed with the catalog write. */
  readonly uow: UnitOfWork;
  /** The build of the committed metadata. */
  readonly current: BuildResult;
  readonly resourceVersion: number;
  readonly kernel: KernelApi;
  /** Runs the build pipeline on a document without committing anything. */
  build(md: Metadata, reload?: ReloadSpec): Promise<BuildResult>;
  /** The request is a dry run (Note [Dry runs] in core/kernel/pipeline.ts): `uow` never commits.
   * An operation that writes anywhere else must write through `uow` instead, or declare
   * `OperationDef.dryRun`. */
  readonly dryRun: boolean;
}

export interface OperationResult {
  /** The response body, or a function of the build that follows the operation and of the
   * resource_version the request leaves. */
  response: unknown | ((build: BuildResult, resourceVersion: number) => unknown);
  /** The next metadata document, when the operation changes it. */
  metadata?: Metadata;
  /** External state to refresh (forces a build even when the metadata is unchanged). */
  reload?: ReloadSpec;
  /** Increment resource_version even when the metadata is unchanged (reload_metadata). */
  bumpVersion?: boolean;
  /** How inconsistencies after the operation are treated: `new` (default) rejects new ones,
   * `any` rejects any, `allow` accepts them. */
  inconsistencies?: 'new' | 'any' | 'allow';
  /** Ids of the objects the operation defines (Hasura's `buildSchemaCacheFor`): when the build
   * finds one of them newly inconsistent, the operation fails with `invalid-configuration` and
   * that object's reasons instead of the generic new-inconsistency error. */
  defines?: string[];
}

export interface OperationDef<A = any> {
  /** Name on /v1/metadata, e.g. `pg_track_table`; `null` when the operation is legacy-only. */
  type: string | null;
  /** Name on /v1/query (legacy), e.g. `track_table`; omitted when not available there. */
  legacy?: string;
  /** Accepted `version` values (default [1]). */
  versions?: number[];
  /** Version to use when the envelope omits it (default: the first of `versions`). */
  inferVersion?: (args: unknown, endpoint: Endpoint) => number;
  /** valibot schema for `args`, or one per version. */
  args: v.GenericSchema<unknown, A> | ((version: number, endpoint: Endpoint) => v.GenericSchema<unknown, A>);
  /** Whether the operation can change metadata (it then runs under the metadata lock). */
  mutates: boolean;
  /** Default true: only admins may call it. */
  adminOnly?: boolean;
  /** Whether a dry run may run it (Note [Dry runs] in core/kernel/pipeline.ts). By default it
   * may: an operation writes only its metadata and through the unit of work, both undone by a
   * dry run. `false`, or a function answering why not for these args, refuses the dry run with
   * 400 `not-supported`: for an operation whose effects cannot be undone. */
  dryRun?: false | ((args: A) => string | undefined);
  run(args: A, ctx: OperationContext): Promise<OperationResult> | OperationResult;
}

// ---------------------------------------------------------------------------------------------
// Services (dependency injection with explicit tokens; see ARCHITECTURE "tsyringe")

export interface Token<T> {
  readonly key: string;
  /** phantom */
  readonly __type?: T;
}
export function token<T>(key: string): Token<T> {
  return { key };
}

/*
 * Note [Upgrades]
 * A plugin may serve HTTP upgrade requests (WebSocket) on a path, such as plugins/graphql-ws on
 * /v1/graphql. The server hands each upgrade to the plugin whose path it asks for, and answers
 * 404 for any other path; on shutdown it closes every plugin's connections (`close`), giving
 * them the grace period, before the kernel stops.
 */
export interface UpgradeDef {
  path: string;
  /** The API the path belongs to (`--enabled-apis`); refused with 404 when it is disabled. */
  api?: string;
  /** Takes the upgrade (or answers it on the socket). */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Shutdown: stop taking upgrades, close the connections; resolve when they are gone or
   * after `graceMs`, when the rest are cut. */
  close(graceMs: number): Promise<void>;
}

/** One HTTP request, as the `http-log` line records it (for metrics). */
export interface RequestRecord {
  /** The route's pattern (`/v1/graphql`, `/api/rest/*`), not the path asked: a bounded set. */
  route: string;
  method: string;
  status: number;
  /** The metadata operation's type, `graphql`, `explain`..., or null. */
  operation: string | null;
  durationMs: number;
}

export interface KernelEvents {
  metadataChanged: (build: BuildResult, resourceVersion: number) => void;
  /** After every HTTP request has been answered. */
  request: (r: RequestRecord) => void;
}

export interface KernelApi {
  readonly config: ServerConfig;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly log: Logger;
  readonly events: TypedEmitter<KernelEvents>;
  operation<A>(def: OperationDef<A>): void;
  metadataSection(def: SectionDef): void;
  buildStep<T>(def: BuildStepDef<T>): void;
  schemaContributor(def: SchemaContributorDef): void;
  route(def: RouteDef): void;
  worker(def: WorkerDef): void;
  provide<T>(t: Token<T>, value: T): void;
  use<T>(t: Token<T>): T;
  /** The committed state: metadata, resource_version, build. */
  state(): { metadata: Metadata; resourceVersion: number; build: BuildResult };
  /** Runs a metadata-API request as the kernel does for HTTP (used by plugins and tests). */
  execute(endpoint: Endpoint, body: unknown, session: Session): Promise<unknown>;
  /** The session of a request: admin secret, JWT or webhook (core/auth/session.ts). `request`
   * is the GraphQL request (or batch) when there is one, which webhook POST mode sends to the
   * hook. Throws an SvcError to refuse (401, 400 invalid-jwt, ..., 500 for a failing hook).
   * `headers`: a Headers, or name-value pairs (lib/http/node-request.ts `headerPairs`). */
  authenticate(headers: Headers | Iterable<[string, string]>, request?: unknown): Promise<Session>;
  /** Synchronous and partial: resolves the admin secret and requests without credentials, and
   * refuses a JWT or webhook request as not admin (access-denied). Only for admin-only routes
   * that cannot wait; prefer `authenticate`. */
  session(headers: Headers): Session;
  /** Called on shutdown, after workers stopped (close pools here). */
  onShutdown(fn: () => void | Promise<void>): void;
  /** Provides the server's authentication mode (Note [Authentication modes]): at most one per
   * server, which needs the admin secret. */
  authMode(mode: AuthMode): void;
  /** Declares what reload_metadata can refresh for this plugin (Note [Reload keys]). */
  reloadKey(def: ReloadKeyDef): void;
  /** The root fields of a role's GraphQL schema for a build, or for a build in progress (a
   * BuildContext: declare in `after` the steps the contributors read). Made afresh, not cached,
   * and without assembling the schema: the fields' types are graphql-js types whose fields are
   * made when first read, so a step can check documents against the schema at the cost of what
   * they select (Hasura checks saved queries against the admin schema at every build). Throws
   * an SvcError when the role's contributors collide. */
  roleRoots(role: string, build: Pick<BuildResult, 'metadata' | 'outputs'>): Readonly<Record<'query' | 'mutation' | 'subscription', ReadonlyMap<string, RootFieldDef>>>;
  /** A role's GraphQL schema for a build (the committed one, or one being served by a live
   * query), assembled from the contributors on first use and cached on the build (Note [Lazy
   * query schemas] in core/schema/assembly.ts). `backendOnly`: the variant of Note
   * [Backend-only permissions]. Throws an SvcError when the role's contributors collide. */
  roleSchema(role: string, build: BuildResult, backendOnly?: boolean): RoleSchema;
  /** Whether authenticating a request needs the request itself (an auth mode that reads it:
   * Note [Authentication modes]): a transport then reads the body first. */
  authNeedsRequest(): boolean;
  /** Takes the HTTP server's upgrade requests for a path (Note [Upgrades]). */
  upgrade(def: UpgradeDef): void;
  /** A service if some enabled plugin provides it, else undefined: for a plugin that works
   * with or without another (declare it in `after`, not `requires`). */
  optional<T>(t: Token<T>): T | undefined;
  /** Keeps tables beside the catalog's, written in its transactions (Note [Catalog extensions]
   * in core/catalog/store.ts). Returns the catalog, for the extension's own reads. */
  catalogExtension(def: CatalogExtension): CatalogAccess;
  /** A document in its exported form (export_metadata's). */
  exportDocument(md: Metadata): Record<string, unknown>;
  /** What replace_metadata does with a document, but its response (for an operation that
   * applies a whole document): the parsed document (a 400 at `path` when it is not one), the
   * reload of what the plugins refresh on a replace, its inconsistency policy, a new version. */
  replacement(doc: unknown, allowInconsistent: boolean, path: string): Omit<OperationResult, 'response'>;
}

export interface PluginDef {
  name: string;
  /** Plugins that must be set up before this one (and must exist). */
  after?: string[];
  /** Plugins that must be set up after this one, if present. */
  before?: string[];
  /** Plugins that must be present (defaults to `after`). */
  requires?: string[];
  /** Registers what the plugin contributes. It may run more than once, also in a scratch kernel
   * that is never started (Note [Disabled plugins] in core/kernel/kernel.ts): it must have no
   * effect beyond the KernelApi calls (no I/O, no timers, no global state); start work in a
   * worker or on `metadataChanged`. */
  setup(k: KernelApi): void | Promise<void>;
  /** The plugin's own options (Note [Options by plugin] in core/config.ts): read from flags and
   * the environment with the kernel's, listed under the plugin by `--help`, given their default
   * when unset. */
  options?: Readonly<Record<string, OptionDef>>;
  /** Checks the plugin's options together with the rest of the configuration, when it is read:
   * what is wrong, in a message that names the flags, or undefined. */
  checkOptions?(config: ServerConfig): string | undefined;
}

export function definePlugin(def: PluginDef): PluginDef {
  return def;
}
