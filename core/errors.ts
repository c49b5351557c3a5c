/**
 * The one error table (SPEC.md "Errors"). Every code the server can send is listed here with its
 * HTTP status; `core/errors.test.ts` checks this table against the SPEC and docs/api.md.
 *
 * Body shapes:
 *   400 and most others: {path, error, code} (plus `internal` where the SPEC shows it)
 *   401: {path, error, code} (Hasura sends the same keys; the SPEC requires at least `error`)
 *   500: {error} (never a stack trace; the cause is logged); a coded 500 also has path and code
 */
export const ERROR_CODES = {
  'parse-failed': 400,
  'invalid-json': 400,
  'invalid-params': 400,
  'invalid-headers': 400,
  // JWT mode (core/auth/jwt.ts), Hasura's codes: a token that does not verify, claims that are
  // not what the configuration says, a token without the role claims.
  'invalid-jwt': 400,
  'jwt-invalid-claims': 400,
  'jwt-missing-role-claims': 400,
  'invalid-configuration': 400,
  'not-exists': 400,
  'already-exists': 400,
  'already-tracked': 400,
  'already-untracked': 400,
  'already-initialised': 400,
  'access-denied': 400,
  'not-supported': 400,
  'dependency-error': 400,
  /** Inherited roles that form a cycle (Hasura's CyclicDependency). */
  'cyclic-dependency': 400,
  'constraint-error': 400,
  'constraint-violation': 400,
  'permission-error': 400,
  'permission-denied': 400,
  'unexpected-payload': 400,
  'validation-failed': 400,
  'remote-schema-error': 400,
  'postgres-error': 400,
  'data-exception': 400,
  'bad-request': 400,
  'unexpected': 400,
  // An event that a delivery holds (pg_redeliver_event), Hasura's `busy`.
  'busy': 400,
  // GraphQL over WebSocket (plugins/graphql-ws): Hasura's `start-failed`, an operation that cannot
  // start (before connection_init, or with an id in use).
  'start-failed': 400,
  // A session variable a remote schema permission presets (plugins/remote-schemas) that is not
  // of the argument's type: Hasura's `coercion-error`.
  'coercion-error': 400,
  // A change of a source (a table tracked) whose root fields collide with a remote schema's
  // (plugins/remote-schemas), Hasura's `remote-schema-conflicts`.
  'remote-schema-conflicts': 400,
  // A bulk track or untrack (`<prefix>_track_tables`) with `allow_warnings: false` that left a
  // table out: Hasura's `metadata-warnings`, with the warnings as `internal`.
  'metadata-warnings': 400,
  // API limits (plugins/api-limits): Hasura's code for a client past its rate limit.
  'rate-limit-exceeded': 429,
  'not-found': 404,
  'method-not-allowed': 405,
  'conflict': 409,
  'internal-error': 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class SvcError extends Error {
  readonly status: number;
  readonly code: ErrorCode | undefined;
  path: string;
  readonly internal: unknown;
  /** A GraphQL error's `extensions` as given, in place of its path and code: an action handler's
   * error (plugins/actions) is passed on with the extensions the handler chose, as Hasura does. */
  readonly extensions: Readonly<Record<string, unknown>> | undefined;
  constructor(
    code: ErrorCode | undefined,
    message: string,
    opts: { path?: string; status?: number; internal?: unknown; extensions?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(message);
    this.code = code;
    this.status = opts.status ?? (code ? ERROR_CODES[code] : 400);
    this.path = opts.path ?? '$';
    this.internal = opts.internal;
    this.extensions = opts.extensions;
  }

  /** The JSON body sent to the client. */
  toBody(): Record<string, unknown> {
    // An unexpected failure is `{error}`; a coded 500 (SPEC: `unexpected (status 500)`, e.g.
    // conflicting root fields) keeps its code and path as Hasura sends them.
    if (this.status === 500 && (!this.code || this.code === 'internal-error')) return { error: this.message };
    const body: Record<string, unknown> = { path: this.path, error: this.message };
    if (this.code) body.code = this.code;
    if (this.internal !== undefined) body.internal = this.internal;
    return body;
  }
}

/**
 * Errors that a root field's source answered as GraphQL errors (a remote schema's), sent to the
 * client as they are, with `"data": null`: Hasura's GQExecError. Thrown by a field's plan; the
 * GraphQL engine answers `{"data":null,"errors":[...]}` (status 200).
 */
export class ExecErrors extends Error {
  constructor(readonly errors: readonly unknown[]) {
    super('the source answered errors');
  }
}

/** Shorthand: `throw svcError('not-exists', 'table "x" does not exist', '$.args.table')`. */
export function svcError(code: ErrorCode | undefined, message: string, path?: string, internal?: unknown): SvcError {
  return new SvcError(code, message, { path, internal });
}

/** Prefix an error's path (used when an inner request of `bulk` fails, or args are nested). */
export function withPathPrefix(e: unknown, prefix: string): unknown {
  if (e instanceof SvcError && !e.path.startsWith(prefix)) {
    e.path = prefix + e.path.slice(1);
  }
  return e;
}
