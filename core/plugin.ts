/**
 * The public contract between the kernel and a plugin. A plugin is a value built with
 * `definePlugin({...})`; its `setup(k)` registers everything it contributes through the KernelApi.
 * Nothing in here knows any feature.
 */
import type * as v from 'valibot';
import type { GraphQLFieldConfigMap } from 'graphql';
import type { Context as HonoContext } from 'hono';
import type { TypedEmitter } from 'tiny-typed-emitter';
import type { ServerConfig } from './config.js';
import type { Logger } from './log.js';
import type { UnitOfWork } from './uow.js';
import type { ErrorCode } from './errors.js';

// ---------------------------------------------------------------------------------------------
// Metadata

/** The metadata document (Hasura v2 shape, `version: 3`). Treated as immutable: an operation
 * returns a new document that shares every untouched part with the old one (see Note [Sharing]). */
export interface Metadata {
  version: number;
  [section: string]: unknown;
}

/*
 * Note [Sharing]
 * Operations never mutate the metadata they are given; they copy the path to what they change and
 * keep every other object by reference. Build steps rely on that: an object that is `===` to the
 * one of the previous build was not touched, so its resolved form can be reused. This is what
 * makes the cost of an operation follow the change, not the size of the metadata.
 */

export interface SectionDef {
  /** Top-level key of the metadata document, e.g. `cron_triggers`. */
  key: string;
  /** Position in the exported document (Hasura's order: sources 10, remote_schemas 20, ...). */
  order: number;
  /** Validates (and normalises) the section in replace_metadata. */
  schema?: v.GenericSchema;
  /** The section's value when absent. */
  empty: () => unknown;
  /** Whether a value is empty (empty sections are left out of the export). Default: empty array/object. */
  isEmpty?: (value: unknown) => boolean;
  /** What clear_metadata leaves in the section (default: `empty()`). */
  clear?: (value: unknown) => unknown;
  /** Reads the section from a client document of metadata `version` 1, 2 or 3 (default: doc[key]);
   * lets a section take over keys of older document versions (listed in `legacyKeys`). */
  fromDocument?: (doc: Record<string, unknown>, version: number, current: Metadata) => unknown;
  legacyKeys?: string[];
  /** Store the section as several catalog rows (Note [Catalog parts] in core/catalog/store.ts):
   * `split` returns `[key, value]` pairs in document order (keys unique within the section, the
   * values' untouched objects kept by reference); `join` puts them back together. */
  split?: (value: unknown) => [string, unknown][];
  join?: (parts: [string, unknown][]) => unknown;
}

// ---------------------------------------------------------------------------------------------
// Sessions

export interface Session {
  role: string;
  /** Session variables, keys lower-cased (`x-svc-role`, `x-svc-user-id`, ...). */
  variables: Record<string, string>;
  isAdmin: boolean;
}

// ---------------------------------------------------------------------------------------------
// Build pipeline

export interface InconsistentObject {
  type: string;
  name?: string;
  reason: string;
  definition: unknown;
  /** Stable identity used to tell new inconsistencies from old ones. Not sent to clients. */
  id: string;
  /** Removes the object (and only it) from a metadata document: used by drop_inconsistent_metadata. */
  remove?: (md: Metadata) => Metadata;
  /** When an operation introduces this object, fail with this error (message: `reason`) rather
   * than the generic new-inconsistency one; e.g. conflicting GraphQL root fields are a 500
   * `unexpected`, as in Hasura. */
  error?: { code: ErrorCode; status: number };
}

/** Which cached external state a build must refresh, by kind (`sources`, `remote_schemas`, ...).
 * `true` means all, a list names the objects. */
export type ReloadSpec = Record<string, true | string[]>;

export interface BuildContext {
  readonly metadata: Metadata;
  /** The previous successful build, for reuse of untouched objects. */
  readonly previous: BuildResult | undefined;
  readonly reload: ReloadSpec;
  readonly uow: UnitOfWork;
  readonly log: Logger;
  /** Record an inconsistent object. Build steps never throw for a bad object; they record it. */
  inconsistent(o: InconsistentObject): void;
  /** The output of an earlier step (declare it in `after`). */
  output<T>(step: string): T | undefined;
}

export interface BuildStepDef<T = unknown> {
  name: string;
  before?: string[];
  after?: string[];
  run(ctx: BuildContext): Promise<T> | T;
}

export interface BuildResult {
  readonly metadata: Metadata;
  readonly inconsistencies: readonly InconsistentObject[];
  readonly outputs: ReadonlyMap<string, unknown>;
  /** Per-role GraphQL schemas, built lazily on first use. */
  readonly schemas: Map<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Operations

export type Endpoint = 'metadata' | 'query';

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
}

export interface OperationResult {
  /** The response body, or a function of the build that follows the operation. */
  response: unknown | ((build: BuildResult) => unknown);
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
  run(args: A, ctx: OperationContext): Promise<OperationResult> | OperationResult;
}

// ---------------------------------------------------------------------------------------------
// GraphQL, routes, workers

export interface SchemaContribution {
  query?: GraphQLFieldConfigMap<unknown, GraphQLRequestContext>;
  mutation?: GraphQLFieldConfigMap<unknown, GraphQLRequestContext>;
  subscription?: GraphQLFieldConfigMap<unknown, GraphQLRequestContext>;
}

export interface GraphQLRequestContext {
  session: Session;
  build: BuildResult;
  headers: Record<string, string>;
}

export interface SchemaContributorDef {
  name: string;
  contribute(role: string, build: BuildResult): SchemaContribution;
}

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'ALL';
  path: string;
  /** The API the route belongs to (`--enabled-apis`); a disabled API's routes answer 404. */
  api?: string;
  handler: (c: HonoContext) => Response | Promise<Response>;
}

export interface WorkerDef {
  name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
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

export interface KernelEvents {
  metadataChanged: (build: BuildResult, resourceVersion: number) => void;
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
  /** The session of a request with these headers (throws a 401 SvcError for bad credentials). */
  session(headers: Headers): Session;
  /** Called on shutdown, after workers stopped (close pools here). */
  onShutdown(fn: () => void | Promise<void>): void;
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
}

export function definePlugin(def: PluginDef): PluginDef {
  return def;
}
