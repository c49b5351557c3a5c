/**
 * The kernel's contract, first part: what plugins and the kernel exchange about metadata,
 * sessions, builds, operations, routes and workers. core/plugin.ts adds the KernelApi and the
 * plugin definition on top, and re-exports this file and core/schema/contract.ts, so a plugin
 * imports everything from core/plugin.js. Nothing in here knows any feature.
 */
import type * as v from 'valibot';
import type postgres from 'postgres';
import type { Context as HonoContext } from 'hono';
import type { UnitOfWork } from './uow.js';
import type { Logger } from './log.js';
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
  /** The section as export_metadata writes it, when that differs from how it is kept (default:
   * as kept). `fromDocument` and `schema` must read it back (plugins/database: Note [Table names
   * of a kind]). */
  toDocument?: (value: unknown) => unknown;
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
  /** Not a metadata object's own inconsistency but one between objects that are each fine (an
   * inherited role's parents that disagree: Hasura's ConflictingInheritedPermission): an
   * operation is never blamed for it as a new inconsistency. Give it no `remove`. */
  objectless?: boolean;
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
 * refreshes the keys that say `onReplace`, the builds at boot and after another instance's change
those that say `onSync`. An argument no enabled plugin declares is accepted and
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
  /** The builds at boot and after another instance's change (of the metadata, or of a source's
   * schema: the catalog's epoch) refresh it too. */
  onSync?: boolean;
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

// ---------------------------------------------------------------------------------------------
// Routes, workers

/**
 * A route: `handler` answers it through hono, or `exchange` answers it from what any transport
 * gives (Note [Routes served from Node's request]); a route has one of the two.
 */
export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'ALL';
  path: string;
  /** The API the route belongs to (`--enabled-apis`); a disabled API's routes answer 404. */
  api?: string;
  handler?: (c: HonoContext) => Response | Promise<Response>;
  exchange?: (x: HttpExchange) => Promise<HttpAnswer>;
  /** What its requests are logged and counted as (`http-log`'s operation type, the request
   * series' `operation` label); a hono handler may set it per request (`c.set('operation')`). */
  operation?: string;
}

/*
 * Note [Routes served from Node's request]
 * hono with @hono/node-server costs a small request 20-45 µs of CPU on the two-core machine
 * against Node's own `http` answering the same (2026-11-27: a POST of a GraphQL body answered
 * with 2 KB of JSON at 2,500 req/s, the server pinned to one core: 87-102 µs per request for
 * Node's, 109-135 for hono's; the web Request, the routing, the context and the web Response
 * made and taken apart), which is a quarter of a by-pk query's whole CPU. So a route whose work
 * is per request and small (POST /v1/graphql) gives `exchange`: a function of the request as
 * headers, a body to read and the client's address, to an answer as status, headers and body.
 * The server answers a request for such a route's exact path and method from Node's request,
 * before hono (server/app.ts, `nodeRoutes`), with what hono's middleware does for every route
 * (the request counted in flight, `http-log`, the `request` event, a disabled API's 404, an
 * error's answer); hono serves the same route through the same function where there is no Node
 * request (app.request in tests) or the path differs (a query string). In the engine (two-core
 * machine, 2026-11-27, at 2,000 req/s pinned, two rounds against the commit before, log
 * bench/results/2026-11-27-bench-graphql-2core-node-routes.log), the server's CPU per request
 * over the expert-SQL handler's, which stayed on hono: simple 1.17-1.19x -> 0.96-1.26x, user
 * 1.16-1.26x -> 1.02-1.17x, aggregate 1.03-1.05x -> 0.96-0.97x, by_pk 1.03-1.09x -> 1.06-1.08x.
 */

/** The headers of a request by lower-case name, repeated ones joined by `, ` (as web Headers). */
export interface HeaderList {
  forEach(fn: (value: string, name: string) => void): void;
}

/** A request as a route's `exchange` reads it (Note [Routes served from Node's request]). */
export interface HttpExchange {
  /** Each header as sent, its name in the case it came in, repeated names repeated. */
  readonly headerPairs: Iterable<[string, string]>;
  readonly headers: HeaderList;
  /** The body, for lib/http/body.ts to read within the request limits. */
  readonly body: Request | HonoContext | import('node:http').IncomingMessage;
  /** The client's IP address as its socket reports it (not X-Forwarded-For). */
  clientAddress(): string | undefined;
}

/** A route's answer: a body as text, bytes, bytes in parts (sent one after the other), or a
 * stream of bytes. */
export interface HttpAnswer {
  status: number;
  contentType: string;
  /** Headers added to the response, in order; a name may repeat. */
  headers?: readonly [string, string][];
  body: string | Uint8Array | readonly Uint8Array[] | ReadableStream<Uint8Array>;
  /** Called once the body's bytes are no longer needed (Node has handed the last of them to the
   * operating system, or they were copied): what lent them may reuse them (Note [Lent answer
   * bytes] in core/schema/contract.ts). Not called if the client went away first. */
  written?: () => void;
}

export interface WorkerDef {
  name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Catalog extensions (Note [Catalog extensions] in core/catalog/store.ts)

/** A row of the catalog: a section, or an element of a section that splits itself. */
export type Part = [key: string, value: unknown];

/** Who made a version: the types of its request's operations (a bulk's inner ones), the role of
 * its session (null for the catalog's first version). */
export interface VersionRecord {
  operations: string[];
  role: string | null;
}

/** The catalog as an extension reaches it (Note [Catalog extensions]). */
export interface CatalogAccess {
  readonly sql: postgres.Sql;
  /** The catalog's schema, as an identifier fragment for postgres.js (`${c.schema}.my_table`). */
  readonly schema: postgres.Helper<string>;
  /** A document from its parts, as the catalog joins what it loads. */
  join(parts: Part[]): Metadata;
}

/** A metadata write, as its extensions see it. */
export interface CatalogWrite {
  /** The resource_version the write replaced, and the one it made. */
  previous: number;
  next: number;
  /** The keys of the parts written (their rows are in `metadata_part`) and removed. */
  written: string[];
  removed: string[];
  record: VersionRecord;
}

/** Note [Catalog extensions]. */
export interface CatalogExtension {
  init?(tx: postgres.TransactionSql, c: CatalogAccess): Promise<void>;
  saved?(tx: postgres.TransactionSql, c: CatalogAccess, write: CatalogWrite): Promise<void>;
}

