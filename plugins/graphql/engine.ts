/**
 * The GraphQL request path (ARCHITECTURE "The GraphQL engine"; Note [Planned root fields] in
 * core/plugin.ts): body -> each request of a batch -> the role's schema -> plan cache (parse,
 * validate, operation, plans) -> coerce variables -> run the plans -> splice their JSON texts
 * into `{"data":{...}}`. The graphql plugin's route gives `serve` (Note [Routes served from
 * Node's request] in core/types.ts).
 */
import { getVariableValues, Kind, type GraphQLSchema } from 'graphql';
import { answerWritten, type AnswerText, type BuildResult, type HeaderList, type HttpAnswer, type HttpExchange, type RoleSchema, type RunContext, type Session } from '../../core/plugin.js';
import type { DocumentGateDef, RequestAdmission, RequestGateDef, SavedOutcome, SavedRequest } from './contract.js';
import type { ServerConfig } from '../../core/config.js';
import { ExecErrors, SvcError, type ErrorCode } from '../../core/errors.js';
import { errorDetail, type Logger } from '../../core/log.js';
import { readJsonBody } from '../../lib/http/body.js';
import { jsonTypeName } from '../../core/validation.js';
import { UnitOfWork } from '../../core/uow.js';
import { LruCache, type CacheStats } from './cache.js';
import { IntrospectionAnswers, type IntrospectionTexts } from './introspection-cache.js';
import { IntrospectionTooLarge, writeIntrospection } from './introspection.js';
import { Cancellation } from './cancel.js';
import { errorsText, fromSvcError, fromVariableError, gqlError, type GqlError } from './errors.js';
import { mayIntrospect, measureDocument, parseDocument, prepareDocument, rootFields, textFits, validateDocument, type Failed, type Prepared, type RootEntry, type RootFields } from './prepare.js';
import { checkBatch, responseTooLarge, responseTooLargeError, type GraphQLLimits } from './limits.js';
import { LiveQueries } from './live.js';
import { coerceValid, operationVariables, type OperationVariables } from './variables.js';
import type { Answer, PreparedRequest } from './request.js';

/*
 * Note [The plan cache]
 * A cached request skips parse, validation, operation selection and planning: the engine looks
 * up (role, query text, operation name), coerces the variables against the operation's
 * definitions, and runs the plans. The key holds the role because the schema, and so validation
 * and every plan, is per role: an entry is never used for another role. The query text is the
 * key as sent (no normalisation: hashing or printing the document would cost what the cache
 * saves, and clients send the same text again).
 *
 * Variable values are not in the key, since plans bind them when they run; the one exception is
 * `@include`/`@skip(if: $v)` on the root selection, which decides which root fields there are.
 * Those values are read per request, and each combination gets its plans inside the entry
 * (prepare.ts `rootFields`), so RootFieldDef.plan runs once per (entry, combination).
 *
 * Documents that fail (syntax, validation, operation selection) are cached as their error.
 * Plans are valid for one build (they may capture its resolved model): when the committed build
 * changes, the cache is emptied, and an entry prepared against an older build is not stored.
 *
 * The bound is `--graphql-plan-cache-size` entries (0: no cache); least recently used goes first.
 * Hits, misses and evictions are counted (`stats()`), for tests and metrics.
 */

/** What the engine needs of the kernel (the Kernel class has it). */
export interface EngineHost {
  readonly config: Pick<
    ServerConfig,
    'maxRequestBodySize' | 'maxJsonDepth' | 'maxListLength' | 'graphqlPlanCacheSize' | 'devMode' | 'liveQueriesBatchSize' | 'liveQueriesRefetchInterval'
  > &
    GraphQLLimits;
  readonly log: Logger;
  /** KernelApi.roleSchema. */
  roleSchema(role: string, build: BuildResult, backendOnly?: boolean): RoleSchema;
  state(): { build: BuildResult };
  /** The session of a request; `request` is the GraphQL request or batch (webhook POST mode
   * sends it). Throws an SvcError to refuse. */
  authenticate(headers: Headers | Iterable<[string, string]>, request?: unknown): Promise<Session>;
  /** Whether `authenticate` needs the request: the body is then read first. */
  authNeedsRequest?(): boolean;
  /** Note [Document gates] in ./contract.ts. */
  readonly documentGates?: readonly DocumentGateDef[];
  /** Note [Request gates] in ./contract.ts. */
  readonly requestGates?: readonly RequestGateDef[];
}

export type { Answer, PreparedRequest } from './request.js';

/** RunContext with the headers made into a record only when a plan asks for them. */
class Run implements RunContext {
  private record: Record<string, string> | undefined;
  uow: UnitOfWork | undefined;
  alone: boolean | undefined;
  signal: Cancellation | undefined;
  responseHeaders: [string, string][] | undefined;
  constructor(
    readonly session: Session,
    readonly variables: Readonly<Record<string, unknown>>,
    private readonly raw: HeaderList,
  ) {}
  get headers(): Readonly<Record<string, string>> {
    if (!this.record) {
      const r: Record<string, string> = {};
      this.raw.forEach((v, k) => (r[k] = v));
      this.record = r;
    }
    return this.record;
  }
}

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/** What is known of an operation's variables, per cache entry (Note [Coercing valid variables]). */
const knownVariables = new WeakMap<Prepared, OperationVariables>();

function variablesOf(p: Prepared): OperationVariables {
  let v = knownVariables.get(p);
  if (!v) knownVariables.set(p, (v = operationVariables(p.schema, p.operation)));
  return v;
}

const failure = (error: GqlError, status = 200): Answer => ({ text: errorsText([error]), status });

/** What request gates decided for a request (Note [Request gates] in ./contract.ts), and the
 * part of the response budget it may use. */
export interface RunLimits {
  readonly timeLimitMs?: number;
  /** Characters of answer left (--graphql-max-response-size less what a batch answered so far). */
  readonly budget?: number;
}
const NO_LIMITS: RunLimits = Object.freeze({});
export type Admitted = { limits: RunLimits } | { error: GqlError };
const ADMITTED: Admitted = Object.freeze({ limits: NO_LIMITS });

/** Root fields of one query run at once at most: a request of many root fields takes its turns
 * on the source's pool with other requests rather than queueing all its statements ahead of them
 * (Note [GraphQL request limits] in ./limits.ts). */
const FIELDS_AT_ONCE = 8;
/** Documents longer than this are prepared in steps, letting other requests run between them. */
const PREPARE_IN_STEPS_ABOVE = 16 * 1024;
/** Answers longer than this are sent in slices, a turn of the event loop each (`inSlices`). */
const STREAM_ABOVE = 1024 * 1024;
const SLICE = 1024 * 1024;

/**
 * A long answer as a stream of UTF-8 slices of about a megabyte, each encoded in its own turn of
 * the event loop: encoding a 50 MB answer at once (and measuring its byte length first) held the
 * loop for about 120 ms on the development machine, other clients waiting. A slice never ends
 * between the two halves of a surrogate pair.
 */
function inSlices(text: string): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let at = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (at > 0) await nextTurn();
      let end = Math.min(at + SLICE, text.length);
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
      controller.enqueue(encoder.encode(text.slice(at, end)));
      at = end;
      if (at >= text.length) controller.close();
    },
  });
}

/** Characters of document text the plan cache keeps at most (./cache.ts): 32 MiB. */
const PLAN_CACHE_TEXT = 32 * 1024 * 1024;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class GraphQLEngine {
  private readonly cache: LruCache<Prepared | Failed>;
  /** Note [Introspection answers cached] in ./introspection-cache.ts, by plan cache entry. */
  private readonly introspected = new IntrospectionAnswers<Prepared>();
  private cacheBuild: BuildResult | undefined;
  private liveQueries: LiveQueries | undefined;

  constructor(private readonly host: EngineHost) {
    this.cache = new LruCache(host.config.graphqlPlanCacheSize, PLAN_CACHE_TEXT);
  }

  /** Plan-cache counters (Note [The plan cache]). */
  stats(): CacheStats {
    return this.cache.stats();
  }

  /** The introspection answers' counters (Note [Introspection answers cached]). */
  introspectionStats(): { hits: number; misses: number; size: number; chars: number } {
    return this.introspected.stats();
  }

  /** The subscriptions' refetching (./live.ts), made on first use. */
  get live(): LiveQueries {
    this.liveQueries ??= new LiveQueries(
      { log: this.host.log, currentBuild: () => this.host.state().build, prepareRequest: (req, session, headers) => this.prepareRequest(req, session, headers) },
      { batchSize: this.host.config.liveQueriesBatchSize, refetchInterval: this.host.config.liveQueriesRefetchInterval, maxResponseSize: this.host.config.graphqlMaxResponseSize },
    );
    return this.liveQueries;
  }

  /** Stops every subscription's refetching (shutdown). */
  close(): void {
    this.liveQueries?.close();
  }

  /** Note [Requests over other transports] (./request.ts): the request parsed, validated, planned and its
   * variables coerced, or the error that stops it before it runs. Subscriptions are accepted. */
  async prepareRequest(req: unknown, session: Session, headers: Headers, limits: RunLimits = NO_LIMITS): Promise<PreparedRequest | { error: GqlError }> {
    const detail = session.isAdmin || this.host.config.devMode;
    try {
      const { query, variables, operationName } = checkRequest(req);
      const found = this.entry(session.role, query, operationName, session.backendOnly === true, true);
      const entry = found instanceof Promise ? await found : found;
      if ('error' in entry) return { error: entry.error };
      const coerced = this.coerce(entry, variables);
      if ('error' in coerced) return coerced;
      const fields = rootFields(entry, coerced.values);
      const ctx = new Run(session, coerced.values, headers);
      return {
        kind: entry.kind,
        fields,
        ctx,
        build: entry.build,
        run: async () => {
          try {
            return await this.run(entry, fields, ctx, variables, limits);
          } catch (e) {
            return this.failed(e, session);
          }
        },
      };
    } catch (e) {
      if (e instanceof SvcError && e.status < 500) return { error: fromSvcError(e, detail) };
      throw e;
    }
  }

  /** `POST /v1/graphql` (Note [Routes served from Node's request] in core/types.ts). Every
   * refusal, authentication's included, is answered in the GraphQL shape with status 200, as
   * Hasura's `allMod200` does on this route (a 401 or a failing webhook's 500 too). */
  serve = async (x: HttpExchange): Promise<HttpAnswer> => {
    const headers = x.headers;
    // Authentication comes first, unless it needs the request (webhook POST mode): then the body
    // is read first, and a body that cannot be read is reported after authentication, as Hasura
    // calls the hook without the request when it does not parse.
    // The session reads every header once: from the Node request's list (headerPairs).
    const pairs = x.headerPairs;
    const early = this.host.authNeedsRequest?.() ? undefined : this.authenticate(pairs, undefined);
    let body: unknown;
    let bodyError: SvcError | undefined;
    if (early) {
      const s = await early;
      if ('error' in s) return httpAnswer(s.error);
    }
    try {
      body = await readJsonBody(x.body, this.host.config, this.batchFits);
    } catch (e) {
      if (!(e instanceof SvcError && e.status < 500)) throw e;
      bodyError = e;
    }
    const resolved = early ? await early : await this.authenticate(pairs, bodyError ? undefined : body);
    if ('error' in resolved) return httpAnswer(resolved.error);
    if (bodyError) return httpAnswer(failure(fromSvcError(bodyError)));
    const session = resolved.session;
    const batch = Array.isArray(body) ? (body as unknown[]) : undefined;
    if (batch) {
      const over = checkBatch(batch.length, this.host.config);
      if (over) return httpAnswer(failure(over));
    }
    // The client's address is asked of its socket only when a gate may read it.
    const found = this.admit(session, batch ? batch.length : 1, this.host.requestGates?.length ? x.clientAddress() : undefined);
    const admitted = found instanceof Promise ? await found : found;
    if ('error' in admitted) return httpAnswer(failure(admitted.error));
    if (batch) {
      // A batch: each request answered as alone, in order (a mutation before a query sees its
      // effect), within one response budget; other requests get turns between its items.
      const max = this.host.config.graphqlMaxResponseSize;
      let text = '[';
      let turn = Date.now();
      const added: [string, string][] = [];
      for (let i = 0; i < batch.length; i++) {
        if (i > 0) text += ',';
        const a = await this.request(batch[i], session, headers, { ...admitted.limits, budget: max - text.length });
        text += a.text;
        if (a.headers) added.push(...a.headers);
        if (text.length > max) return httpAnswer(failure(responseTooLarge(max)));
        if (Date.now() - turn > 10) {
          await nextTurn();
          turn = Date.now();
        }
      }
      return httpAnswer({ text: `${text}]`, status: 200, ...(added.length ? { headers: added } : {}) });
    }
    return httpAnswer(await this.request(body, session, headers, admitted.limits));
  };

  /** A batch longer than the limit is refused before the body's limits walk all of it. */
  private readonly batchFits = (body: unknown): void => {
    if (!Array.isArray(body)) return;
    const over = checkBatch(body.length, this.host.config);
    if (over) throw new SvcError('validation-failed', over.message);
  };

  /** The request gates' decision (Note [Request gates] in ./contract.ts): synchronous when no
   * gate waits. `operations`: how many the request holds. */
  admit(session: Session, operations: number, clientAddress: string | undefined): Admitted | Promise<Admitted> {
    const gates = this.host.requestGates;
    if (!gates || gates.length === 0) return ADMITTED;
    const build = this.host.state().build;
    // Nothing is allocated when every gate admits at once (the common case).
    let answers: (RequestAdmission | Promise<RequestAdmission | undefined>)[] | undefined;
    for (let i = 0; i < gates.length; i++) {
      const a = gates[i]!.admit({ session, operations, clientAddress, build });
      if (a !== undefined) (answers ??= []).push(a);
    }
    if (!answers) return ADMITTED;
    const decide = (settled: readonly (RequestAdmission | undefined)[]): Admitted => {
      let timeLimitMs: number | undefined;
      for (const a of settled) {
        if (!a) continue;
        if (a.refusal) return { error: gqlError(a.refusal.code, a.refusal.message, a.refusal.path ?? '$') };
        if (a.timeLimitMs !== undefined && (timeLimitMs === undefined || a.timeLimitMs < timeLimitMs)) timeLimitMs = a.timeLimitMs;
      }
      return timeLimitMs === undefined ? ADMITTED : { limits: { timeLimitMs } };
    };
    return answers.some((a) => a instanceof Promise) ? Promise.all(answers).then(decide) : decide(answers as RequestAdmission[]);
  }

  private async authenticate(headers: Headers | Iterable<[string, string]>, request: unknown): Promise<{ session: Session } | { error: Answer }> {
    try {
      return { session: await this.host.authenticate(headers, request) };
    } catch (e) {
      if (e instanceof SvcError) return { error: failure(fromSvcError(e)) };
      throw e;
    }
  }

  /** One GraphQL request `{query, variables?, operationName?, extensions?}`. */
  async request(req: unknown, session: Session, headers: HeaderList, limits: RunLimits = NO_LIMITS): Promise<Answer> {
    try {
      return await this.requestOrThrow(req, session, headers, limits);
    } catch (e) {
      return this.failed(e, session);
    }
  }

  /** The answer of a request that threw: its error, or an unexpected failure (logged). */
  private failed(e: unknown, session: Session): Answer {
    if (e instanceof ExecErrors) return { text: JSON.stringify({ data: null, errors: e.errors }), status: 200 };
    if (e instanceof SvcError && e.status < 500) return failure(fromSvcError(e, session.isAdmin || this.host.config.devMode));
    return this.unexpected(e, session);
  }

  private unexpected(e: unknown, session: Session): Answer {
    this.host.log.error('unexpected-error', { path: '/v1/graphql', error: errorDetail(e) });
    const err = gqlError('unexpected', 'internal error: the request could not be completed; see the server log');
    // Dev mode shows the cause to admins (never to other roles), as the other endpoints do.
    if (this.host.config.devMode && session.isAdmin) err.extensions.internal = errorDetail(e);
    return failure(err, 500);
  }

  private async requestOrThrow(req: unknown, session: Session, headers: HeaderList, limits: RunLimits): Promise<Answer> {
    const { query, variables, operationName } = checkRequest(req);
    const found = this.entry(session.role, query, operationName, session.backendOnly === true);
    const entry = found instanceof Promise ? await found : found;
    if ('error' in entry) return failure(entry.error);
    const coerced = this.coerce(entry, variables);
    if ('error' in coerced) return failure(coerced.error);
    const fields = rootFields(entry, coerced.values);
    const ctx = new Run(session, coerced.values, headers);
    ctx.responseHeaders = [];
    return this.run(entry, fields, ctx, variables, limits);
  }

  /** The plan cache's entry of (role, document, operation) (Note [The plan cache]): at once when
   * cached, else prepared (in steps, for a long document). */
  private entry(role: string, query: string, opName: string | undefined, backendOnly = false, subscriptions = false): Prepared | Failed | Promise<Prepared | Failed> {
    const build = this.host.state().build;
    if (build !== this.cacheBuild) {
      this.cache.clear();
      this.introspected.clear();
      this.cacheBuild = build;
    }
    // Entries that accept subscriptions (Note [Requests over other transports]) are kept apart.
    const key = `${subscriptions ? '\u0001' : ''}${backendOnly ? `${role}\u0000backend-only` : role}\u0000${opName ?? ''}\u0000${query}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const store = (entry: Prepared | Failed) => {
      // A request that began before a metadata change must not leave the old build's plans.
      if (this.cacheBuild === build) this.cache.set(key, entry);
      return entry;
    };
    const opts = { subscriptions, gates: this.host.documentGates, limits: this.host.config };
    const schema = () => this.host.roleSchema(role, build, backendOnly);
    const introspects = mayIntrospect(query);
    if (query.length <= PREPARE_IN_STEPS_ABOVE && !introspects) {
      const document = parseDocument(query, this.host.config);
      return store('error' in document ? document : prepareDocument(document, query, opName, schema(), build, opts));
    }
    // Parsing and validating a long document take up to about 100 ms each at the limits (Note
    // [GraphQL request limits]), and a document that introspects reads the role's full schema
    // (Note [The full schema in steps] in core/schema/assembly.ts): other requests get a turn
    // between the steps.
    return (async () => {
      const document = parseDocument(query, this.host.config);
      if ('error' in document) return store(document);
      const cost = measureDocument(document, this.host.config);
      if ('error' in cost) return store(cost);
      if (introspects) await schema().fullInSteps(nextTurn);
      await nextTurn();
      const entry = validateDocument(document, cost, query, opName, schema(), build, opts);
      if ('kind' in entry && entry.conditionVariables.length === 0) {
        // Planning, in a turn of its own too (the request would plan at once otherwise); a plan
        // that fails is reported when the request plans it.
        await nextTurn();
        try {
          rootFields(entry, EMPTY);
        } catch {
          /* reported by the request */
        }
      }
      await nextTurn();
      return store(entry);
    })();
  }

  /** Prepared entries of saved documents, for one build (Note [Saved documents] in
   * core/plugin.ts): per document, by role variant and operation name. */
  private saved = new WeakMap<object, Map<string, Prepared | Failed>>();
  private savedBuild: BuildResult | undefined;

  /** Runs a saved document (Note [Saved documents] in plugins/graphql/contract.ts): the data's JSON text, or
   * the first error with its HTTP status. */
  async runSaved(req: SavedRequest, session: Session, headers: Headers): Promise<SavedOutcome> {
    const detail = session.isAdmin || this.host.config.devMode;
    try {
      const found = this.admit(session, 1, req.clientAddress);
      const admitted = found instanceof Promise ? await found : found;
      if ('error' in admitted) return savedError(admitted.error);
      const entry = this.savedEntry(req, session.role, session.backendOnly === true);
      if ('error' in entry) return savedError(entry.error);
      const coerced = this.coerce(entry, req.variables);
      if ('error' in coerced) return savedError(coerced.error);
      const answer = await this.run(entry, rootFields(entry, coerced.values), new Run(session, coerced.values, headers), req.variables, admitted.limits);
      // `run` answers `{"data":{...}}`, or the error of an introspection field.
      if (answer.text.startsWith(DATA_PREFIX)) return { data: answer.text.slice(DATA_PREFIX.length, -1) };
      return savedError((JSON.parse(answer.text) as { errors: GqlError[] }).errors[0]!);
    } catch (e) {
      if (e instanceof ExecErrors) {
        // A source's own GraphQL errors (a remote schema's): the first, as a 400.
        const first = e.errors[0] as { message?: unknown } | undefined;
        return { error: { status: 400, code: 'unexpected', message: typeof first?.message === 'string' ? first.message : 'the source answered errors', path: '$', ...(detail ? { internal: e.errors } : {}) } };
      }
      if (e instanceof SvcError && e.code) {
        // Hasura throws a request's errors as 400s whatever their code (`not-found` for a missing
        // session variable included); a coded 500 stays one.
        return { error: { status: e.status >= 500 ? e.status : 400, code: e.code, message: e.message, path: e.path, ...(detail && e.internal !== undefined ? { internal: e.internal } : {}) } };
      }
      this.host.log.error('unexpected-error', { path: 'saved document', error: errorDetail(e) });
      return { error: { status: 500, message: 'internal error: the request could not be completed; see the server log', path: '$', ...(this.host.config.devMode && session.isAdmin ? { internal: errorDetail(e) } : {}) } };
    }
  }

  /** A role's full schema of the committed build (GraphQLRunner.schema in ./contract.ts). */
  schema(role: string): GraphQLSchema {
    return this.host.roleSchema(role, this.host.state().build).schema;
  }

  private savedEntry(req: SavedRequest, role: string, backendOnly: boolean): Prepared | Failed {
    const build = this.host.state().build;
    if (build !== this.savedBuild) {
      this.saved = new WeakMap();
      this.savedBuild = build;
    }
    let byKey = this.saved.get(req.document);
    if (!byKey) this.saved.set(req.document, (byKey = new Map()));
    const key = `${backendOnly ? `${role}\u0000backend-only` : role}\u0000${req.operationName ?? ''}`;
    let entry = byKey.get(key);
    if (!entry) {
      const rs = this.host.roleSchema(role, build, backendOnly);
      entry = prepareDocument(req.document, req.query, req.operationName, rs, build, { gates: this.host.documentGates, limits: this.host.config });
      // Bounded like the plan cache is: past that many roles a document is prepared per call.
      if (this.savedBuild === build && byKey.size < MAX_SAVED_VARIANTS) byKey.set(key, entry);
    }
    return entry;
  }

  /**
   * `POST /v1/graphql/explain`, Hasura v2's Explain API: `{query: {query, variables?,
   * operationName?}, user?: {x-svc-role?, x-svc-*...}}` -> `[{field, sql, params, plan}]`, one per
   * root field, as the request would run for that role and those session variables (admin when
   * `user` names no role). `sql` has bind parameters (`$1`...) where Hasura inlines the values,
   * so `params` gives them; a field without a statement (`__typename`, introspection, a plugin's
   * field without `FieldPlan.explain`) has `sql`, `params` and `plan` null. A statement that
   * answers a list's rows as its source's text instead of JSON also has `records`, how they are
   * written (FieldExplain.records). Admin only (the
   * caller checks); errors are thrown as SvcError, in the metadata API's shape.
   */
  async explain(body: unknown, headers: Headers): Promise<{ field: string; sql: string | null; params: readonly unknown[] | null; plan: readonly string[] | null; records?: unknown }[]> {
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new SvcError('parse-failed', `parsing Object failed, expected Object, but encountered ${jsonTypeName(body)}`, { path: '$' });
    const { query: req, user } = body as { query?: unknown; user?: unknown };
    if (req === undefined) throw new SvcError('parse-failed', 'key "query" not found', { path: '$' });
    if (user != null && (typeof user !== 'object' || Array.isArray(user))) {
      throw new SvcError('parse-failed', `parsing Object failed, expected Object, but encountered ${jsonTypeName(user)}`, { path: '$.user' });
    }
    const variables: Record<string, string> = {};
    for (const [k, v] of Object.entries((user ?? {}) as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new SvcError('parse-failed', `parsing Text failed, expected String, but encountered ${jsonTypeName(v)}`, { path: `$.user.${k}` });
      const name = k.toLowerCase();
      if (name.startsWith('x-svc-')) variables[name] = v;
    }
    const role = variables['x-svc-role'] ?? 'admin';
    variables['x-svc-role'] = role;
    const session: Session = { role, variables, isAdmin: role === 'admin' };
    const { query, variables: vars, operationName } = checkRequest(req, '$.query');
    const found = this.entry(role, query, operationName);
    const entry = found instanceof Promise ? await found : found;
    if ('error' in entry) throw svcErrorOf(entry.error);
    if (entry.kind !== 'query') throw new SvcError('invalid-params', 'only queries can be explained', { path: '$' });
    const coerced = this.coerce(entry, vars);
    if ('error' in coerced) throw svcErrorOf(coerced.error);
    const ctx = new Run(session, coerced.values, headers);
    const out = [];
    for (const e of rootFields(entry, coerced.values).entries) {
      const x = e.plan?.explain ? await e.plan.explain(ctx) : undefined;
      out.push({ field: e.responseKey, sql: x?.sql ?? null, params: x?.params ?? null, plan: x?.plan ?? null, ...(x?.records !== undefined ? { records: x.records } : {}) });
    }
    return out;
  }

  /** The request's variables coerced against the operation's definitions (defaults applied). */
  private coerce(p: Prepared, vars: Record<string, unknown> | undefined): { values: Readonly<Record<string, unknown>> } | { error: GqlError } {
    const defs = p.operation.variableDefinitions ?? [];
    let given = 0;
    if (vars) for (const _ in vars) given++;
    if (defs.length === 0 && given === 0) return { values: EMPTY };
    const v = variablesOf(p);
    if (given > 0) {
      // Hasura refuses values for variables the operation does not have.
      let unexpected: string[] | undefined;
      for (const k in vars) if (!v.declared.has(k)) (unexpected ??= []).push(k);
      if (unexpected) return { error: gqlError('validation-failed', `unexpected variables in variableValues: ${unexpected.join(', ')}`) };
    }
    const values = coerceValid(v, vars);
    if (values) return { values };
    // A string for a variable used only where a column's value goes is passed on as it is (Note
    // [Text literals at marked positions] in ./prepare.ts); the others are coerced by graphql-js.
    let texts: Record<string, string> | undefined;
    let checked = defs;
    if (p.textVariables.size > 0 && vars) {
      checked = defs.filter((d) => {
        const name = d.variable.name.value;
        const val = vars[name];
        const named = d.type.kind === Kind.NON_NULL_TYPE ? d.type.type : d.type;
        if (!p.textVariables.has(name) || typeof val !== 'string' || named.kind !== Kind.NAMED_TYPE || !textFits(named.name.value, val)) return true;
        (texts ??= {})[name] = val;
        return false;
      });
    }
    const r = getVariableValues(p.schema, checked, vars ?? {}, { maxErrors: 1 });
    if (r.errors) return { error: fromVariableError(r.errors[0]!) };
    return { values: texts ? { ...r.coerced, ...texts } : r.coerced };
  }

  private async run(p: Prepared, fields: RootFields, ctx: Run, rawVariables: Record<string, unknown> | undefined, limits: RunLimits = NO_LIMITS): Promise<Answer> {
    const { entries } = fields;
    const budget = limits.budget ?? this.host.config.graphqlMaxResponseSize;
    let introspected: IntrospectionTexts | undefined;
    if (fields.introspection.length > 0) {
      const r = await this.introspect(p, fields, rawVariables, budget);
      if ('error' in r) return failure(r.error);
      introspected = r.texts;
    }
    let texts: AnswerText[];
    const ms = limits.timeLimitMs;
    if (ms === undefined && entries.length === 1) {
      // The common case, with nothing to cancel: one field, no time limit.
      const e = entries[0]!;
      if (p.kind === 'mutation') texts = await this.runMutation(entries, ctx, introspected, budget, undefined);
      else {
        texts = [e.plan ? await e.plan.run(ctx) : unplanned(e, introspected)];
        if (charsOf(e, texts[0]!, introspected) > budget) throw responseTooLargeError(this.host.config.graphqlMaxResponseSize);
      }
    } else {
      const abort = new Cancellation();
      ctx.signal = abort;
      const work = p.kind === 'mutation' ? this.runMutation(entries, ctx, introspected, budget, abort) : this.runQuery(entries, ctx, introspected, budget, abort);
      if (ms === undefined) texts = await work;
      else {
        const timeout = new SvcError('validation-failed', `the request ran longer than its time limit of ${ms / 1000} s (set_api_limits time_limit)`);
        let timer: NodeJS.Timeout | undefined;
        // A query is answered when its time is up, its statements cancelled behind it; a
        // mutation's statements are cancelled and it is answered when it has rolled back, so
        // that the answer never says "failed" of a transaction that commits.
        const expired = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            abort.abort(timeout);
            if (p.kind !== 'mutation') reject(timeout);
          }, ms);
        });
        expired.catch(() => {});
        work.catch(() => {});
        try {
          texts = await Promise.race([work, expired]);
        } finally {
          clearTimeout(timer);
        }
      }
    }
    const headers = ctx.responseHeaders?.length ? ctx.responseHeaders : undefined;
    let bytes = false;
    for (let i = 0; i < texts.length && !bytes; i++) bytes = typeof texts[i] !== 'string';
    if (bytes) return bytesAnswer(entries, texts, headers);
    let out = '{"data":{';
    for (let i = 0; i < entries.length; i++) {
      if (i > 0) out += ',';
      out += entries[i]!.key + texts[i];
    }
    return { text: `${out}}}`, status: 200, ...(headers ? { headers } : {}) };
  }

  /** A query's root fields, at most FIELDS_AT_ONCE at a time. The first failure in document
   * order is reported, as if all had run; an answer past `budget` or the abort of the request
   * (its time limit) stops it and cancels what runs. */
  private async runQuery(entries: readonly RootEntry[], ctx: Run, introspected: IntrospectionTexts | undefined, budget: number, abort: Cancellation): Promise<AnswerText[]> {
    const n = entries.length;
    const texts: AnswerText[] = new Array(n);
    let total = 0;
    let next = 0;
    let failedAt = n;
    let failure: unknown;
    const worker = async (): Promise<void> => {
      while (next < n && failedAt === n && !abort.aborted) {
        const i = next++;
        const e = entries[i]!;
        try {
          const text = e.plan ? await e.plan.run(ctx) : unplanned(e, introspected);
          texts[i] = text;
          total += charsOf(e, text, introspected);
          if (total > budget && !abort.aborted) abort.abort(responseTooLargeError(this.host.config.graphqlMaxResponseSize));
        } catch (err) {
          // A later field's failure does not stop fields already running: one before it in
          // document order may fail too, and its error is the one reported.
          if (i < failedAt) {
            failedAt = i;
            failure = err;
          }
        }
      }
    };
    const workers: Promise<void>[] = [];
    for (let w = 0; w < Math.min(FIELDS_AT_ONCE, n); w++) workers.push(worker());
    await Promise.all(workers);
    if (abort.aborted) throw abort.reason;
    if (failedAt < n) throw failure;
    return texts;
  }

  /*
   * Note [Fields pipelined]
   * A mutation's root fields run in document order, each seeing what the ones before it wrote,
   * in one transaction (Note [One transaction per mutation request]). Waiting for each field's
   * answer before sending the next field's statement costs a round trip per field: a request of
   * 100 aliased `update_<t>_by_pk` fields is 100 round trips. A field whose plan says so
   * (FieldPlan.pipelined: PostgreSQL's mutation fields, which queue their statements on the
   * request's transaction in order, as Note [Statements pipelined] in
   * plugins/database/schema/mutation.ts sends one field's) is started once the field before it
   * has queued its statements, without waiting for that one's answer: the database runs them in
   * order all the same. The answers are read in order, and the first failure in that order is
   * the request's error (the statements queued after a failed one fail with the transaction,
   * which is rolled back; an insert in steps whose later steps bind earlier answers has queued
   * its statements only once its last step is sent). Any other field (a remote schema's, an
   * action's, a function's) waits for every answer before it, so that nothing outside the
   * transaction happens after a failure.
   */
  /** A mutation's root fields, one after the other, in document order, in one unit of work; the
   * first failure ends the request and takes back what the earlier fields did (Note [One
   * transaction per mutation request]). An abort (time limit, answer past `budget`) rolls back.
   * The answer of a request's only mutation field is not bounded: that field may have run as one
   * statement outside a transaction (Note [Mutations in one round trip]), its change made, and
   * an error would say otherwise; it is bounded by the rows its permissions let it touch. */
  private async runMutation(entries: readonly RootEntry[], ctx: Run, introspected: IntrospectionTexts | undefined, budget: number, abort: Cancellation | undefined): Promise<AnswerText[]> {
    const texts: AnswerText[] = new Array(entries.length);
    const uow = new UnitOfWork();
    ctx.uow = uow;
    let planned = 0;
    for (let i = 0; i < entries.length; i++) if (entries[i]!.plan) planned++;
    ctx.alone = planned === 1;
    let total = 0;
    // Note [Fields pipelined]: the answers of the fields started and not yet read, in order.
    let pending: { at: number; answer: Promise<AnswerText> }[] = [];
    const answered = (i: number, text: AnswerText) => {
      texts[i] = text;
      total += charsOf(entries[i]!, text, introspected);
      if (total > budget && !ctx.alone) throw responseTooLargeError(this.host.config.graphqlMaxResponseSize);
      if (abort?.aborted) throw abort.reason;
    };
    // The started fields' answers, in order: the first failure in that order is the request's.
    const settle = async () => {
      const waiting = pending;
      pending = [];
      for (const p of waiting) answered(p.at, await p.answer);
    };
    try {
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i]!;
        if (e.plan?.pipelined && !ctx.alone) {
          let queued!: () => void;
          const sent = new Promise<void>((resolve) => (queued = resolve));
          const answer = e.plan.run(ctx, queued);
          // Read in order by `settle`; a failure before then is handled there.
          answer.catch(() => {});
          await Promise.race([sent, answer.then(noop, noop)]);
          pending.push({ at: i, answer });
          if (abort?.aborted) throw abort.reason;
          continue;
        }
        await settle();
        answered(i, e.plan ? await e.plan.run(ctx) : unplanned(e, introspected));
      }
      await settle();
      await uow.commit();
    } catch (err) {
      await uow.rollback();
      throw abort?.aborted ? abort.reason : err;
    }
    return texts;
  }

  /** `__schema` and `__type` at the root, written as JSON text within the answer's budget (Note
   * [Introspection written as text] in ./introspection.ts); each root field's text, kept for the
   * entry where no variable can change it (Note [Introspection answers cached]) and the entry is
   * one the plan cache keeps. */
  private async introspect(p: Prepared, fields: RootFields, rawVariables: Record<string, unknown> | undefined, budget: number): Promise<{ texts: IntrospectionTexts } | { error: GqlError }> {
    const defs = p.operation.variableDefinitions ?? [];
    const kept = defs.length === 0 && this.host.config.graphqlPlanCacheSize > 0;
    const cached = kept ? this.introspected.get(p) : undefined;
    const tooLarge = () => ({ error: responseTooLarge(this.host.config.graphqlMaxResponseSize) });
    if (cached && 'over' in cached) {
      if (budget <= cached.over) return tooLarge();
    } else if (cached) return cached.chars > budget ? tooLarge() : { texts: cached.texts };
    let variables: Readonly<Record<string, unknown>> = EMPTY;
    if (defs.length > 0) {
      const r = getVariableValues(p.schema, defs, rawVariables ?? {}, { maxErrors: 1 });
      if (r.errors) return { error: fromVariableError(r.errors[0]!) };
      variables = r.coerced;
    }
    let texts: IntrospectionTexts;
    try {
      // Note [Introspection written in steps].
      texts = await writeIntrospection(p.schema, p.operation, p.fragments, variables, fields.introspection, budget, nextTurn);
    } catch (e) {
      if (e instanceof IntrospectionTooLarge) {
        if (kept && p.build === this.cacheBuild) this.introspected.setOver(p, budget);
        return tooLarge();
      }
      return { error: gqlError('validation-failed', e instanceof Error ? e.message : String(e)) };
    }
    if (kept && p.build === this.cacheBuild) this.introspected.set(p, texts);
    return { texts };
  }
}

const noop = (): void => {};

/** A root field answered without a plan: a literal (`__typename`) or introspection's text. */
const unplanned = (e: RootEntry, introspected: IntrospectionTexts | undefined): AnswerText => e.text ?? introspected?.[e.responseKey]?.text ?? 'null';

/** What a field's answer counts against the size limit: its characters where known
 * (introspection's, Note [Long introspection answers as bytes] in ./introspection.ts), else its
 * length (a plan's bytes counted as bytes). */
function charsOf(e: RootEntry, text: AnswerText, introspected: IntrospectionTexts | undefined): number {
  return (!e.plan && e.text === undefined ? introspected?.[e.responseKey]?.chars : undefined) ?? text.length;
}

/** A GraphQL request's parts, checked as Hasura parses them (`at`: where the request is). */
function checkRequest(req: unknown, at = '$'): { query: string; variables: Record<string, unknown> | undefined; operationName: string | undefined } {
  if (!req || typeof req !== 'object' || Array.isArray(req) || typeof (req as { query?: unknown }).query !== 'string') {
    if (req && typeof req === 'object' && !Array.isArray(req) && (req as { query?: unknown }).query !== undefined) {
      throw new SvcError('parse-failed', `parsing Text failed, expected String, but encountered ${jsonTypeName((req as { query: unknown }).query)}`, { path: `${at}.query` });
    }
    throw new SvcError('parse-failed', 'key "query" not found', { path: at });
  }
  const { query, variables, operationName, extensions } = req as { query: string; variables?: unknown; operationName?: unknown; extensions?: unknown };
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) {
    throw new SvcError('parse-failed', `parsing HashMap failed, expected Object, but encountered ${jsonTypeName(variables)}`, { path: `${at}.variables` });
  }
  if (operationName != null && typeof operationName !== 'string') {
    throw new SvcError('parse-failed', `parsing Name failed, expected String, but encountered ${jsonTypeName(operationName)}`, { path: `${at}.operationName` });
  }
  if (extensions != null && typeof extensions === 'object' && (extensions as { persistedQuery?: unknown }).persistedQuery != null) {
    throw new SvcError('not-supported', 'Automatic Persisted Queries is not enabled');
  }
  return { query, variables: (variables ?? undefined) as Record<string, unknown> | undefined, operationName: operationName ?? undefined };
}

/** An answer as the route's (an answer's text longer than STREAM_ABOVE in slices). */
function httpAnswer(a: Answer): HttpAnswer {
  const { parts } = a;
  const body = parts ?? (a.text.length > STREAM_ABOVE ? inSlices(a.text) : a.text);
  return {
    status: a.status,
    contentType: 'application/json; charset=utf-8',
    body,
    ...(a.headers?.length ? { headers: a.headers } : {}),
    // The answer is this request's alone: once sent, its lent bytes go back (Note [Lent answer
    // bytes] in core/schema/contract.ts).
    ...(parts ? { written: () => partsWritten(parts) } : {}),
  };
}

function partsWritten(parts: readonly Uint8Array[]): void {
  for (const p of parts) answerWritten(p);
}

/** The answer `{"data":{...}}` of fields some of which answered bytes (Note [Answers as bytes] in
 * core/schema/contract.ts), as bytes; its text decoded only if read. */
function bytesAnswer(entries: readonly RootEntry[], texts: readonly AnswerText[], headers: readonly [string, string][] | undefined): Answer {
  const parts: Uint8Array[] = [];
  let pending = '{"data":{';
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) pending += ',';
    pending += entries[i]!.key;
    const t = texts[i]!;
    if (typeof t === 'string') pending += t;
    else {
      parts.push(Buffer.from(pending), t);
      pending = '';
    }
  }
  parts.push(Buffer.from(`${pending}}}`));
  let text: string | undefined;
  // Not to be spread ({...answer}): that would read `text`.
  return {
    parts,
    status: 200,
    ...(headers ? { headers } : {}),
    get text() {
      return (text ??= Buffer.concat(parts).toString('utf8'));
    },
  };
}

const DATA_PREFIX = '{"data":';
const MAX_SAVED_VARIANTS = 256;

/** A GraphQL error of a saved document (parse, validation, variables: Note [Saved documents]):
 * a 400, as Hasura throws them. */
function savedError(e: GqlError): SavedOutcome {
  // A client past its rate limit is told so in HTTP's words too.
  return { error: { status: e.extensions.code === 'rate-limit-exceeded' ? 429 : 400, code: e.extensions.code, message: e.message, path: e.extensions.path, ...(e.extensions.internal !== undefined ? { internal: e.extensions.internal } : {}) } };
}

/** A GraphQL error as the SvcError of an endpoint that answers in the metadata API's shape. */
function svcErrorOf(e: GqlError): SvcError {
  return new SvcError(e.extensions.code as ErrorCode, e.message, { path: e.extensions.path });
}

