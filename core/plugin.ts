/**
 * The public contract between the kernel and a plugin. A plugin is a value built with
 * `definePlugin({...})`; its `setup(k)` registers everything it contributes through the KernelApi.
 * Nothing in here knows any feature.
 */
import type * as v from 'valibot';
import type {
  DocumentNode,
  FieldNode,
  FragmentDefinitionNode,
  GraphQLFieldConfig,
  GraphQLFieldConfigMap,
  GraphQLNamedType,
  GraphQLSchema,
  VariableDefinitionNode,
} from 'graphql';
import type { Context as HonoContext } from 'hono';
import type { TypedEmitter } from 'tiny-typed-emitter';
import type { OptionDef, ServerConfig } from './config.js';
import type { Logger } from './log.js';
import type { UnitOfWork } from './uow.js';
import type { ErrorCode } from './errors.js';
import type { DocumentCost } from './graphql/cost.js';

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
  /** The request may use backend-only permissions (Note [Backend-only permissions]). */
  backendOnly?: boolean;
  /** When the credentials the session comes from expire (a JWT's `exp`), in milliseconds since
   * the epoch: a connection that keeps the session (a WebSocket) ends then, as Hasura's does. */
  expiresAt?: number;
}

/*
 * Note [Authentication modes]
 * Besides the admin secret and the unauthorized role (core/auth/session.ts, Note [Resolution
 * order]), a request's session may come from credentials the engine checks with someone else's
 * help: a JWT (plugins/auth-jwt), an authentication webhook (plugins/auth-webhook). A plugin that
 * provides such a mode registers it when its options configure it (KernelApi.authMode); a server
 * has at most one, and only beside an admin secret, as Hasura requires. The kernel asks the mode
 * only for requests that do not send the admin secret: whether they carry the mode's credentials
 * (one that carries none gets the unauthorized role when there is one) and, if so, their session.
 */
export interface AuthMode {
  /** For messages: `JWT`, `webhook`. */
  readonly name: string;
  /** Whether resolving reads the GraphQL request (the webhook's POST mode sends it): the body is
   * then read before authentication. */
  readonly needsRequest?: boolean;
  /** Whether the request (lower-cased header names) carries this mode's credentials. */
  hasCredentials(headers: ReadonlyMap<string, string>): boolean;
  /** The session the credentials give; throws an SvcError to refuse (400, 401, 500). `request`:
   * the GraphQL request or batch, or null. */
  resolve(headers: ReadonlyMap<string, string>, request: unknown): Promise<Session>;
}

/*
 * Note [Backend-only permissions]
 * A permission marked `backend_only` is for trusted backends, not for end users: as in Hasura,
 * a role's mutation that only such a permission allows exists for a request only when it came
 * with the admin secret (or the server has none) and asked for it with
 * `X-Svc-Use-Backend-Only-Permissions: true`. Such a request gets its own variant of the role's
 * schema (SchemaContributorDef.contribute's `scope`), cached beside the role's.
 */

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
   * `unexpected`, as in Hasura. With `message`, that is the error's message and the new
   * inconsistent objects are its `internal` (Hasura's 500 "cannot continue due to newly found
   * inconsistent metadata" of withNewInconsistentObjsCheck). */
  error?: { code: ErrorCode; status: number; message?: string };
  /** What clients are shown, when Hasura shows this kind in a shape of its own rather than
   * {type, name, reason, definition} (ambiguous REST endpoints: {reason, conflicts}). */
  shown?: Record<string, unknown>;
}

/** Which cached external state a build must refresh, by kind (`sources`, `remote_schemas`, ...).
 * `true` means all, a list names the objects. */
export type ReloadSpec = Record<string, true | string[]>;

/*
 * Note [Reload keys]
 * What `reload_metadata` refreshes is named by the plugins that own it, not by the kernel: a
 * plugin declares a key (KernelApi.reloadKey) that its build steps read in `ctx.reload` (the
 * database plugin `sources`, the event triggers `event_triggers`), the argument that asks for it
 * (`reload_sources`: true, false or a list of names) and its default; `replace_metadata`
 * refreshes the keys that say `onReplace`. An argument no enabled plugin declares is accepted and
 * does nothing (a server without remote schemas takes `reload_remote_schemas`, as Hasura's
 * clients send it).
 */
export interface ReloadKeyDef {
  /** The key of ReloadSpec that build steps read. */
  key: string;
  /** reload_metadata's argument for it. */
  arg: string;
  /** Its value when a request leaves the argument out. */
  default: boolean;
  /** replace_metadata refreshes it. */
  onReplace?: boolean;
  /** On the legacy endpoint (/v1/query) the argument is not read: it is always refreshed. */
  alwaysOnLegacy?: boolean;
}

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
  /** The outputs of the steps that ran so far (what `output` reads): with `metadata`, the build
   * in progress as KernelApi.roleRoots takes it. */
  readonly outputs: ReadonlyMap<string, unknown>;
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

/**
 * A response (or an item of a bulk's list) that is JSON text already, such as rows PostgreSQL
 * built: the HTTP route splices the text into the body as it is (`encodeResponse`), so it is
 * never parsed and re-serialised in Node. Whoever encodes it otherwise (callers of
 * KernelApi.execute) gets the value through `toJSON`.
 */
export class JsonText {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** Whether a response holds JsonText (itself, or an item of a bulk's list). */
export function hasJsonText(x: unknown): boolean {
  return x instanceof JsonText || (Array.isArray(x) && x.some((i) => i instanceof JsonText));
}

/** A response's JSON text, JsonText spliced as it is. */
export function encodeResponse(x: unknown): string {
  if (x instanceof JsonText) return x.text;
  if (Array.isArray(x) && hasJsonText(x)) return `[${x.map(encodeResponse).join(',')}]`;
  return JSON.stringify(x) ?? 'null';
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

/*
 * Note [Planned root fields]
 * A schema contributor gives root fields that PLAN, not resolvers. For a (role, document,
 * operation) the engine (core/graphql) parses and validates once, asks each root field of the
 * operation for a plan, and caches the plans in a bounded LRU. A request then only coerces its
 * variables and runs the plans: each returns its field's JSON value as text (for a table field,
 * the text PostgreSQL built), and the engine splices the texts into `{"data":{...}}` without
 * parsing them. So a plan depends on the document only: variable and session values are bound
 * when it runs (`FieldPlan.run`), never baked into it. graphql-js `execute` is used for
 * introspection fields only.
 *
 * How the engine keeps its side (core/graphql/engine.ts, Note [The plan cache] there):
 *   - `plan` is called once per root field of a cached (role, document, operation), after
 *     fragments and `@include`/`@skip` of the root selection; fields of one response key come
 *     merged into one FieldNode. `@include`/`@skip` deeper down are the plan's to honour.
 *   - `plan` runs on a document already validated against the role's schema: arguments and
 *     selections exist and have the right types (variables are coerced per request).
 *   - A plan is kept until the build changes, so it may hold on to the build's resolved model.
 *   - Query root fields run concurrently, mutation root fields one after the other in document
 *     order. If one fails the response is `{"errors":[...]}` without `data`, as Hasura answers.
 *   - `__typename` at the root answers the root type's name without any plan.
 */

/** What a plan gets when it runs. */
export interface RunContext {
  session: Session;
  /** The request's variables, coerced to their declared types (defaults applied). */
  variables: Readonly<Record<string, unknown>>;
  /** The request's headers (lower-cased names), for fields that forward them. */
  headers: Readonly<Record<string, string>>;
  /** A mutation request's unit of work (Note [One transaction per mutation request]); absent
   * for queries. */
  uow?: UnitOfWork;
  /** The request's only mutation root field: a field that is one atomic statement may run it
   * outside a transaction (one round trip). */
  alone?: boolean;
  /** Aborted when the request's answer is decided without this field (another field failed,
   * the response grew past its limit, the request's time ran out): a field cancels the
   * statements it has running. Absent when nothing can abort the request. */
  signal?: CancelSignal;
  /** Headers a field adds to the HTTP response (a remote schema's `Set-Cookie`, as Hasura passes
   * them on); absent where the transport sends none (WebSocket, batches, saved documents). */
  responseHeaders?: [string, string][];
}

/** The part of AbortSignal a field needs to cancel its statements (an AbortSignal is one). */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/*
 * Note [One transaction per mutation request]
 * The root fields of a mutation run one after the other, in document order, and all of them or
 * none: the engine gives the request a UnitOfWork (`RunContext.uow`), a field opens its source's
 * transaction in it once (`uow.get(key, open)`) and runs its statements there, and the engine
 * commits the unit after the last field succeeded, or rolls it back when any field failed (then
 * the response has no `data`). Several sources are committed one after the other: not a
 * two-phase commit, as in Hasura.
 */

/** A root field planned for one (role, document, operation); cached and reused across requests. */
export interface FieldPlan {
  /** Runs the field and returns its value as JSON text (`null` included), spliced into the
   * response as it is: it must be valid JSON. A `SvcError` thrown here becomes the request's
   * GraphQL error with its code and path (Hasura reports execution errors at `$`, SvcError's
   * default; set a path such as `$.selectionSet.<field>.args.limit` where one helps). */
  run(ctx: RunContext): Promise<string>;
  /** What `run` would send to its source for this context, and the source's plan of it, without
   * running it (`POST /v1/graphql/explain`). Optional: a field that runs no statement has none. */
  explain?(ctx: RunContext): Promise<FieldExplain>;
  /** How the field serves a subscription (Note [Live queries]): the statement it runs and this
   * context's bind values in it. A field without it cannot be subscribed to. `resume`: where a
   * stream left off (LiveResult.next.resume) when the subscription is planned again after a
   * metadata change. A `SvcError` thrown here refuses the subscription (a missing session
   * variable, say). */
  live?(ctx: RunContext, resume?: unknown): LiveBinding;
}

/*
 * Note [Live queries]
 * A subscription root field is refetched for its subscribers every refetch interval, and many
 * subscribers share each statement (core/graphql/live.ts, Note [Multiplexed live queries]). A
 * field's plan says how with `live(ctx)`: a LiveBinding names the statement (`group`: the same
 * object for every subscriber whose statement text is the same), this subscriber's bind values
 * in it (`values`, opaque to the engine) and their identity (`key`: subscribers of one group and
 * key get one result). The engine batches the distinct keys of a group and asks the group to
 * run them together (`fetch`: one statement per batch, its results in order), compares each
 * result with the last one sent to that key, and sends only what changed.
 *
 * A group in `stream` mode is a streaming subscription: every result holds the rows after the
 * subscriber's cursor; it is sent unless empty, and moves the cursor (`next`: the binding after
 * it), so the key of a stream changes as it advances.
 */

/** One subscriber's part of a live statement (Note [Live queries]). */
export interface LiveBinding {
  readonly group: LiveGroup;
  /** Subscribers with the same group and key get one result. */
  readonly key: string;
  /** What `group.fetch` needs of this subscriber (its bind values). */
  readonly values: unknown;
}

/** A statement that serves many subscribers at once (Note [Live queries]). */
export interface LiveGroup {
  /** `live`: a result is sent when it differs from the last one; `stream`: every non-empty result
   * is sent and moves the subscriber's cursor. */
  readonly mode: 'live' | 'stream';
  /** Runs the statement once for all these bindings' values: a result per binding, in order.
   * A failure (thrown) is the failure of every binding of the call. */
  fetch(values: readonly unknown[]): Promise<readonly LiveResult[]>;
}

export interface LiveResult {
  /** The field's JSON text for that binding (as FieldPlan.run would give it). */
  text: string;
  /** `stream`: no new rows; nothing is sent. */
  empty?: boolean;
  /** `stream`: the binding after these rows (its cursor moved), and what `live` needs to resume
   * there after a metadata change. */
  next?: { key: string; values: unknown; resume: unknown };
}

/** A root field's statement as `FieldPlan.explain` gives it. */
export interface FieldExplain {
  /** The statement's text, values as bind parameters (`$1`, ...), as it is prepared. */
  sql: string;
  /** The bind parameters' values for this context, in order. */
  params: readonly unknown[];
  /** The source's plan of the statement with these values (PostgreSQL: EXPLAIN's lines). */
  plan: readonly string[];
}

/** What `plan` gets: the field as written in the document and the document's context. */
export interface PlanInput {
  /** The field node: alias, arguments (literals or variables) and selection set, as written. */
  field: FieldNode;
  /** The role's schema (field definitions, fragment type conditions). */
  schema: GraphQLSchema;
  fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  /** The operation's variable definitions (types, defaults). */
  variableDefinitions: readonly VariableDefinitionNode[];
  /** The operation's name, when it has one (a remote schema passes it on). */
  operationName?: string;
  role: string;
  build: BuildResult;
}

export interface RootFieldDef {
  /** Type, arguments and description, as graphql-js takes them; no resolver. */
  config: Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>;
  plan(input: PlanInput): FieldPlan;
}

/** A root's fields by name, or a thunk of them: the engine calls a thunk only when a request
 * needs that root, so a contributor puts what only mutations or subscriptions use (their input
 * and response types) there (Note [Lazy query schemas] in core/graphql/schema.ts). */
export type RootFieldMap = Record<string, RootFieldDef>;
export type LazyRootFields = RootFieldMap | (() => RootFieldMap | undefined);

export interface SchemaContribution {
  query?: LazyRootFields;
  mutation?: LazyRootFields;
  subscription?: LazyRootFields;
}

/**
 * The named types of one role's schema, shared by its contributors: a plugin defines its types
 * here, and another plugin may add fields to them (remote and action relationships will). A
 * name defined twice, or a field added twice, is an error naming both plugins.
 */
export interface TypeRegistry {
  /** Defines a named type on behalf of the calling plugin; returns it. */
  define<T extends GraphQLNamedType>(type: T): T;
  /** A type defined by any contributor so far, or undefined. */
  get(name: string): GraphQLNamedType | undefined;
  /** Adds fields to an object type (defined now or later by any plugin); the type's owner takes
   * them into its fields in a thunk, added fields first:
   * `fields: () => ({ ...types.extensions(name), ...ownFields })`, so that a field both define
   * is caught as a collision naming both plugins (core/graphql/registry.ts). */
  extend(typeName: string, fields: GraphQLFieldConfigMap<unknown, unknown>): void;
  /** The fields other plugins added to `typeName`. */
  extensions(typeName: string): GraphQLFieldConfigMap<unknown, unknown>;
}

/** What besides the role a schema is made for (Note [Backend-only permissions]). */
export interface SchemaScope {
  backendOnly: boolean;
}

export interface SchemaContributorDef {
  name: string;
  /** The contributor's root fields for `role` (admin: `isAdmin`), built from `build`. Called once
   * per role and build, lazily, on the role's first request. */
  contribute(role: string, build: BuildResult, types: TypeRegistry, scope?: SchemaScope): SchemaContribution;
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
// Document gates and saved documents

/*
 * Note [Document gates]
 * A plugin may refuse GraphQL documents as a whole before they are validated: the allow-list
 * (plugins/query-collections) lets a role run only the documents it lists. The engine consults
 * the gates once per plan-cache entry (core/graphql/prepare.ts `prepareDocument`), right after
 * the document parsed and was measured within the server's limits (Note [GraphQL request
 * limits] in core/graphql/limits.ts), before the operation is chosen, where Hasura checks its allow-list;
 * a refusal is cached with the entry like any other error of the document, so a cached request
 * pays nothing for the gates. Hence a gate's answer may depend only on what an entry is keyed by
 * and built on: the role, the document (its text and its parsed form) and the build, never on
 * variables, headers or session values. Gates run in registration order and the first refusal
 * wins. Every transport goes through them: POST, WebSocket and saved documents (below). A gate
 * with nothing to do in a server's configuration (the allow-list when it is off) is simply not
 * registered.
 */
export interface DocumentGateInput {
  readonly document: DocumentNode;
  /** What the document selects (Note [Document cost] in core/graphql/cost.ts), measured once. */
  readonly cost: DocumentCost;
  /** The document's text, as the client sent it (or as it was saved). */
  readonly query: string;
  readonly role: string;
  readonly build: BuildResult;
}

/** Why a gate refuses a document: a GraphQL error at `path` (default `$`). */
export interface DocumentRefusal {
  code: ErrorCode;
  message: string;
  path?: string;
}

export interface DocumentGateDef {
  name: string;
  check(input: DocumentGateInput): DocumentRefusal | undefined;
}

/*
 * Note [Request gates]
 * A plugin may also admit or refuse each GraphQL operation as it arrives, on what a document
 * gate may not read: the session, the client's address, how many operations a batch holds
 * (the api-limits plugin: per-role batch and rate limits, and the time a request may run). The
 * engine asks the gates once per HTTP request after authentication (`operations`: the batch's
 * length, 1 for a single request), once per WebSocket operation and once per saved-document
 * run. A gate answers nothing to admit, a refusal (answered as a GraphQL error, nothing run), or
 * a time limit: past it the engine cancels the statements still running (RunContext.signal) and
 * answers an error. It may be asynchronous (a rate limit shared through PostgreSQL); a gate with
 * nothing to do for a build should answer synchronously, as the engine then adds no wait.
 */
export interface RequestGateInput {
  readonly session: Session;
  /** Operations in the request: a batch's length, else 1. */
  readonly operations: number;
  /** The client's IP address as the socket reports it (undefined where there is none). */
  readonly clientAddress: string | undefined;
  readonly build: BuildResult;
}

export interface RequestAdmission {
  readonly refusal?: DocumentRefusal;
  /** Milliseconds the request may run. */
  readonly timeLimitMs?: number;
}

export interface RequestGateDef {
  name: string;
  admit(input: RequestGateInput): RequestAdmission | undefined | Promise<RequestAdmission | undefined>;
}

/*
 * Note [Saved documents]
 * Some transports run documents that a plugin keeps rather than documents a client sends: a REST
 * endpoint runs its saved query. The plugin parses such a document once (when it builds its
 * metadata) and hands the engine the DocumentNode with its text (`GraphQLRunner.runSaved`). The
 * engine prepares it (gates, operation, validation, plans) once per (document, role, variant)
 * and build, and keeps that beside the document outside the plan cache's LRU (saved documents
 * are few, and client traffic must not evict them); a call then costs what a plan-cache hit
 * costs: coerce the variables, run the plans. The outcome is the data's JSON text (the root
 * fields spliced into one object, without the `{"data": ...}` envelope) or the first error with
 * its HTTP status (400, as Hasura throws a request's errors, or 500 for a coded 500 and for an
 * unexpected failure), for a transport that answers in the metadata API's shape.
 */
export interface SavedRequest {
  /** The client's address, for request gates (Note [Request gates]). */
  readonly clientAddress?: string;
  /** Parsed once by its owner and kept: the engine's prepared entries are keyed on this object. */
  readonly document: DocumentNode;
  readonly query: string;
  readonly operationName?: string;
  readonly variables?: Record<string, unknown>;
}

export type SavedOutcome =
  | { readonly data: string }
  | {
      readonly error: {
        status: number;
        /** Absent for an unexpected failure (logged; answered `{error}` with status 500). */
        code?: string;
        message: string;
        path: string;
        internal?: unknown;
      };
    };

/** What plugins may ask of the server's GraphQL engine (core/graphql/engine.ts). */
export interface GraphQLRunner {
  /** Runs a saved document for a session (Note [Saved documents]). */
  runSaved(req: SavedRequest, session: Session, headers: Headers): Promise<SavedOutcome>;
  /** A role's GraphQL schema of the committed build, every root included (built on first use,
   * as for its first request); for documentation such as an OpenAPI description. Throws an
   * SvcError when the role's contributors collide. */
  schema(role: string): GraphQLSchema;
  /** The plan cache's counters (Note [The plan cache]), for metrics. */
  stats(): { hits: number; misses: number; evictions: number; size: number };
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
   * hook. Throws an SvcError to refuse (401, 400 invalid-jwt, ..., 500 for a failing hook). */
  authenticate(headers: Headers, request?: unknown): Promise<Session>;
  /** Synchronous and partial: resolves the admin secret and requests without credentials, and
   * refuses a JWT or webhook request as not admin (access-denied). Only for admin-only routes
   * that cannot wait; prefer `authenticate`. */
  session(headers: Headers): Session;
  /** Called on shutdown, after workers stopped (close pools here). */
  onShutdown(fn: () => void | Promise<void>): void;
  /** Refuses GraphQL documents before they are validated (Note [Document gates]). */
  documentGate(def: DocumentGateDef): void;
  /** Admits GraphQL requests by session, client and batch size (Note [Request gates]). */
  requestGate(def: RequestGateDef): void;
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
  /** The server's GraphQL engine, for plugins that run saved documents (Note [Saved
   * documents]). Call it when serving, not during setup. */
  graphql(): GraphQLRunner;
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
