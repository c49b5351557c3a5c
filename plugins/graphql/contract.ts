/**
 * The GraphQL plugin's contract (exported by ./index.ts): what other plugins may ask of the
 * server's GraphQL engine: gates on documents and requests, saved documents, the plan cache's
 * counters. A plugin that uses it declares `after: ['graphql']` and reaches it through the
 * GRAPHQL service (`k.use(GRAPHQL)`, or `k.optional(GRAPHQL)` when it also works without it).
 */
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { token, type BuildResult, type Session } from '../../core/plugin.js';
import type { ErrorCode } from '../../core/errors.js';
import type { DocumentCost } from './cost.js';

/*
 * Note [Document gates]
 * A plugin may refuse GraphQL documents as a whole before they are validated: the allow-list
 * (plugins/query-collections) lets a role run only the documents it lists. The engine consults
 * the gates once per plan-cache entry (plugins/graphql/prepare.ts `prepareDocument`), right after
 * the document parsed and was measured within the server's limits (Note [GraphQL request
 * limits] in plugins/graphql/limits.ts), before the operation is chosen, where Hasura checks its allow-list;
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
  /** What the document selects (Note [Document cost] in plugins/graphql/cost.ts), measured once. */
  readonly cost: DocumentCost;
  /** The document's text, as the client sent it (or as it was saved). */
  readonly query: string;
  /** The operation the request names (plans are cached per operation too); undefined for none. */
  readonly operationName?: string;
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

/** What plugins may ask of the server's GraphQL engine (plugins/graphql/engine.ts). */
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

/** The GraphQL plugin's service (the GRAPHQL token). */
export interface GraphQLService {
  /** Refuses GraphQL documents before they are validated (Note [Document gates]). Call it in
   * setup. */
  documentGate(def: DocumentGateDef): void;
  /** Admits GraphQL requests by session, client and batch size (Note [Request gates]). Call it
   * in setup. */
  requestGate(def: RequestGateDef): void;
  /** The server's GraphQL engine, for plugins that run saved documents (Note [Saved
   * documents]). Call it when serving, not during setup. */
  runner(): GraphQLRunner;
}

export const GRAPHQL = token<GraphQLService>('graphql');
