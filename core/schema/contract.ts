/**
 * The kernel's contract, second part: GraphQL root fields as schema contributors give them
 * (Note [Planned root fields]), and the schema the kernel assembles from them for a role
 * (./assembly.ts). The transports that serve the schema are plugins (plugins/graphql: HTTP, the
 * plan cache, live queries; plugins/graphql-ws); they, and whatever else runs root fields, use
 * this contract. Re-exported by core/plugin.ts.
 */
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
import type { BuildResult, Session } from '../types.js';
import type { UnitOfWork } from '../uow.js';
import { KeyedView } from '../../lib/keyed-view.js';


/*
 * Note [Planned root fields]
 * A schema contributor gives root fields that PLAN, not resolvers. For a (role, document,
 * operation) the engine (plugins/graphql) parses and validates once, asks each root field of the
 * operation for a plan, and caches the plans in a bounded LRU. A request then only coerces its
 * variables and runs the plans: each returns its field's JSON value as text (for a table field,
 * the text PostgreSQL built), and the engine splices the texts into `{"data":{...}}` without
 * parsing them. So a plan depends on the document only: variable and session values are bound
 * when it runs (`FieldPlan.run`), never baked into it. graphql-js `execute` is used for
 * introspection fields only.
 *
 * How the engine keeps its side (plugins/graphql/engine.ts, Note [The plan cache] there):
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
  /** Headers a field adds to the HTTP response (a remote schema's or an action handler's
   * `Set-Cookie`, which Hasura passes on); absent where the transport has none to send
   * (WebSocket, saved documents). */
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

/*
 * Note [Answers as bytes]
 * A field whose JSON is written from bytes (a list as records, Note [Lists as records] in
 * plugins/postgres/records/records.ts), or read as the bytes its source sent (a PostgreSQL statement's
 * JSON text, CompiledQuery.bytes), may return those UTF-8 bytes instead of a string: decoding them to a
 * JavaScript string and encoding the response back costs about as much again as writing them (on
 * 368 KB of Chinook's tracks, 1.3 ms to decode and 0.7 ms to encode against 1.3 ms to write; the
 * two-core machine, 2026-11-27). The GraphQL engine splices bytes into the response's bytes and
 * sends those; whoever needs the text (a batch, a subscription, a remote join, an action's
 * relationship) decodes it once with `jsonString`.
 */

/** A field's JSON text: a string, or its UTF-8 bytes (Note [Answers as bytes]). */
export type AnswerText = string | Uint8Array;

/*
 * Note [Lent answer bytes]
 * A field that writes its answer's bytes itself (a list as records) writes them into a buffer it
 * keeps for the purpose and lends them (`lendAnswer`): whoever sends the answer and keeps nothing
 * of it gives them back (`answerWritten`) once the client has them, and the buffer is written
 * into again. The GraphQL engine's HTTP answer does (HttpAnswer.written, called when Node has
 * handed the response to the operating system, or when hono's path has copied it); bytes that
 * nobody gives back (a batch, a subscription, a remote join, a client that went away) are never
 * written into again and the collector frees them, as it would a copy. Giving back is the only
 * way a buffer is reused, so a holder that forgets is slower, never wrong; one that gives back
 * bytes it still reads would be wrong, hence only the sender does, and only after the write.
 *
 * Why not a copy per answer, as before: memory outside V8's heap (a Buffer's) costs an allocation
 * and a free each time (about 6 µs for a 22 KB Buffer in a loop, Node 20), and V8 counts it toward
 * starting a full collection, which marks the whole live heap. `npm run bench:gc` (docs/
 * benchmarks.md, two-core machine, 2026-11-27): the bench's nested query at 1,000 req/s ran 8-11
 * mark-compacts in each 10 s run with a copy per answer and none with the buffers given back,
 * the main thread 258-368 µs per request against 212-311; with 2,000 more tables tracked, 4 in
 * each run taking about 2 s of the main thread in all (the engine fell to 817-882 req/s) against
 * 0-1. A small buffer is a slice of Node's shared pool: only that slice is written into again.
 */

/** Where lent bytes keep their give-back: a property of the view itself, not a WeakMap, whose
 * table in the old space every answer would write into and shrink (twice the mark-compacts). */
const GIVE_BACK = Symbol('giveBack');
type Lent = Uint8Array & { [GIVE_BACK]?: (() => void) | undefined };

/** `bytes`, lent until `answerWritten(bytes)`, which calls `giveBack` (once) (Note [Lent answer
 * bytes]). */
export function lendAnswer(bytes: Uint8Array, giveBack: () => void): Uint8Array {
  (bytes as Lent)[GIVE_BACK] = giveBack;
  return bytes;
}

/** The client has `t`, and nothing reads it any more: if its bytes were lent, they go back to
 * their lender (Note [Lent answer bytes]). Only the last holder may call it. */
export function answerWritten(t: AnswerText): void {
  if (typeof t === 'string') return;
  const giveBack = (t as Lent)[GIVE_BACK];
  if (giveBack === undefined) return;
  (t as Lent)[GIVE_BACK] = undefined;
  giveBack();
}

const decoder = new TextDecoder();

/** The JSON text as a string (Note [Answers as bytes]). */
export const jsonString = (t: AnswerText): string => (typeof t === 'string' ? t : decoder.decode(t));

/** A root field planned for one (role, document, operation); cached and reused across requests. */
export interface FieldPlan {
  /** Runs the field and returns its value as JSON text (`null` included), spliced into the
   * response as it is: it must be valid JSON. The text may be its UTF-8 bytes (`AnswerText`, Note
   * [Answers as bytes]). A `SvcError` thrown here becomes the request's
   * GraphQL error with its code and path (Hasura reports execution errors at `$`, SvcError's
   * default; set a path such as `$.selectionSet.<field>.args.limit` where one helps). */
  run(ctx: RunContext, queued?: () => void): Promise<AnswerText>;
  /** A mutation field that may be started before the answers of the fields before it (Note
   * [Fields pipelined] in plugins/graphql/engine.ts): its `run` calls `queued()` once every
   * statement it sends is queued on the request's transaction, after those of the fields started
   * before it and before any of a field started after; it sends them without waiting for another
   * field's answer, and fails only through its answer. */
  pipelined?: boolean;
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
 * subscribers share each statement (plugins/graphql/live.ts, Note [Multiplexed live queries]). A
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
  /** Where the statement answers the source's own text of a list's rows instead of JSON: how its
   * rows are written as JSON, as the source kind describes it (PostgreSQL: Note [Lists as records]
   * in plugins/postgres/records/records.ts). */
  records?: unknown;
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
  /** The document's text as the client sent it (or as it was saved): plans are per document, so
   * a field may keep it (an action sends it to its handler as Hasura's `request_query`). */
  query?: string;
  role: string;
  build: BuildResult;
}

export interface RootFieldDef {
  /** Type, arguments and description, as graphql-js takes them; no resolver. */
  config: Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>;
  plan(input: PlanInput): FieldPlan;
  /** What defines the field, in Hasura's words (`table user in source default`): another
   * plugin whose field collides with it names it in its inconsistency. */
  owner?: string;
}

/** A root's fields by name, or a thunk of them: the engine calls a thunk only when a request
 * needs that root, so a contributor puts what only mutations or subscriptions use (their input
 * and response types) there (Note [Lazy query schemas] in core/schema/assembly.ts). */
export type RootFieldMap = Record<string, RootFieldDef>;

/**
 * A root's fields found by name, for a contributor of thousands (a source's tables): a role's
 * request after a metadata change makes the fields it names rather than a map of every one
 * (Note [Root fields by name] in core/schema/assembly.ts).
 */
export class RootFieldLookup {
  constructor(
    /** The field of that name, or undefined; the same definition each time it is asked. */
    readonly get: (name: string) => RootFieldDef | undefined,
    /** Every name once, lazily (a whole schema, introspection, whether the root has any field). */
    readonly names: () => Iterable<string>,
  ) {}
}

export type LazyRootFields = RootFieldMap | RootFieldLookup | (() => RootFieldMap | RootFieldLookup | undefined);

/** Whether a root has no field, without making them all (Note [Root fields by name]); a role's
 * root says so once. */
export const isEmpty = (root: ReadonlyMap<string, unknown>): boolean => (root instanceof KeyedView ? root.empty : root.keys().next().done === true);

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
   * is caught as a collision naming both plugins (core/schema/registry.ts). */
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

/** The roots of a GraphQL operation. */
export type OperationKind = 'query' | 'mutation' | 'subscription';

/** A role's schema as the kernel assembles it from the contributors (core/schema/assembly.ts,
 * Note [Lazy query schemas] there): what a transport validates and plans documents against. */
export interface RoleSchema {
  readonly role: string;
  /** The full schema: every root (built when first read). */
  readonly schema: GraphQLSchema;
  /** The schema a document is validated and planned against (Note [Schemas without the mutation
   * root]); given the document, the types on its paths are made first (Note [Lazy query schemas]). */
  schemaFor(kind: OperationKind, introspects: boolean, document?: DocumentNode): GraphQLSchema;
  /** Makes the full schema's types in steps of about `stepMs` (10 by default), awaiting
   * `turn()` between them, so that reading `schema` next costs only its last step (Note [The
   * full schema in steps] in assembly.ts). Never rejects: a failure is `schema`'s to report. */
  fullInSteps(turn: () => Promise<void>, stepMs?: number): Promise<void>;
  /** The root fields by operation kind and name (each root's made when first read: Note [Lazy
   * query schemas]); a field is made when first asked for, and `size` and iteration make every
   * one (Note [Root fields by name]): `isEmpty` asks whether a root has any. */
  readonly roots: Readonly<Record<OperationKind, ReadonlyMap<string, RootFieldDef>>>;
}
