/**
 * Session resolution: which role a request runs as, and its session variables, for every way in
 * (HTTP endpoints now; WebSocket connection_init and REST endpoints call the same
 * `Authenticator.resolve(headers, request?)`). Modes, as Hasura v2's Auth.hs: no
 * authentication, admin secret, admin secret + JWT (./jwt.ts), admin secret + webhook
 * (./webhook.ts).
 *
 * Note [Admin secret comparison]: both sides are hashed to a fixed length and compared with
 * timingSafeEqual, so neither the content nor the length of the secret leaks through timing.
 *
 * Note [Resolution order]
 * 1. No admin secret configured (and so no JWT or webhook, which require one): every request is
 *    admin unless it asks for another role with X-Svc-Role; X-Svc-* headers are its variables.
 * 2. The request sends X-Svc-Admin-Secret (or X-Svc-Access-Key): right, it is admin and may pick
 *    a role with X-Svc-Role; wrong, 401, whatever else it carries (no falling back to a token).
 * 3. JWT mode: the token decides (./jwt.ts); no token: the unauthorized role if configured, else
 *    400 invalid-headers "Missing Authorization header in JWT authentication mode".
 * 4. Webhook mode: the hook decides. With an unauthorized role configured, a request with neither
 *    Authorization nor Cookie gets that role without calling the hook (Hasura refuses to start
 *    with both; the issue asks for the unauthorized role in every mode).
 * 5. Admin secret only: the unauthorized role if configured, else 401.
 * In JWT and webhook modes the session variables come only from the token or the hook, never
 * from the client's X-Svc-* headers (which anyone can send).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Session } from '../plugin.js';
import { SvcError } from '../errors.js';
import type { Logger } from '../log.js';
import type { JwtSettings } from './jwt-config.js';
import { JwtAuth } from './jwt.js';
import type { JwkSourceOptions } from './jwks.js';
import { WebhookAuth, type WebhookOptions } from './webhook.js';

export interface AuthConfig {
  adminSecret?: string;
  unauthorizedRole?: string;
  /** JWT mode: one or more configurations (Note [Several JWT configurations] in ./jwt.ts). */
  jwt?: JwtSettings[];
  /** Webhook mode. */
  authHook?: WebhookOptions;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** The configured secret's digest, computed once (a server has one admin secret). */
let expectedDigest: { secret: string; digest: Buffer } | undefined;

export function secretMatches(given: string, expected: string): boolean {
  if (expectedDigest?.secret !== expected) expectedDigest = { secret: expected, digest: digest(expected) };
  return timingSafeEqual(digest(given), expectedDigest.digest);
}

/** Session variables from headers: every `x-svc-*` header, lower-cased. */
export function sessionVariables(headers: Iterable<[string, string]>): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [k, val] of headers) {
    const key = k.toLowerCase();
    if (key.startsWith('x-svc-') && key !== 'x-svc-admin-secret' && key !== 'x-svc-access-key') vars[key] = val;
  }
  return vars;
}

/** `headers`: name-value pairs, or a Map whose names are lower-cased already (`lowerMap`'s, which
 * Authenticator passes): read as it is, without copying it into a list. */
export function resolveSession(headers: Iterable<[string, string]> | Map<string, string>, cfg: AuthConfig): Session {
  // No closure per request: a Map is read as it is; a list gives a Map of each name's first
  // value (what a search of the list found), its variables read from the list as before.
  let map: Map<string, string>;
  let variables: Record<string, string>;
  if (headers instanceof Map) {
    map = headers;
    variables = sessionVariables(map);
  } else {
    const list = [...headers];
    map = new Map();
    for (const [k, val] of list) {
      const key = k.toLowerCase();
      if (!map.has(key)) map.set(key, val);
    }
    variables = sessionVariables(list);
  }
  const requestedRole = map.get('x-svc-role');

  // Note [Backend-only permissions]: only with the admin secret, or when there is none.
  const backendOnly = map.get('x-svc-use-backend-only-permissions')?.toLowerCase() === 'true';
  if (cfg.adminSecret === undefined) {
    const role = requestedRole ?? 'admin';
    return { role, variables: { ...variables, 'x-svc-role': role }, isAdmin: role === 'admin', ...(backendOnly ? { backendOnly } : {}) };
  }
  const given = map.get('x-svc-admin-secret') ?? map.get('x-svc-access-key');
  if (given === undefined) {
    if (cfg.unauthorizedRole) {
      const role = cfg.unauthorizedRole;
      return { role, variables: { ...variables, 'x-svc-role': role }, isAdmin: false };
    }
    throw new SvcError('access-denied', 'x-svc-admin-secret/x-svc-access-key required, but not found', { status: 401 });
  }
  if (!secretMatches(given, cfg.adminSecret)) {
    throw new SvcError('access-denied', 'invalid x-svc-admin-secret/x-svc-access-key', { status: 401 });
  }
  const role = requestedRole ?? 'admin';
  return { role, variables: { ...variables, 'x-svc-role': role }, isAdmin: role === 'admin', ...(backendOnly ? { backendOnly } : {}) };
}

/** The headers by lower-cased name, repeated ones joined with ", " (iterated, which Headers
 * allows too, without a callback created per request). */
function lowerMap(headers: Iterable<[string, string]> | Headers): Map<string, string> {
  const m = new Map<string, string>();
  for (const [k, val] of headers as Iterable<[string, string]>) {
    const key = k.toLowerCase();
    const prev = m.get(key);
    m.set(key, prev === undefined ? val : `${prev}, ${val}`);
  }
  return m;
}

/** The session resolver of a server: one per kernel, built from its configuration. */
export class Authenticator {
  readonly jwt: JwtAuth | undefined;
  readonly hook: WebhookAuth | undefined;

  constructor(
    private readonly cfg: AuthConfig,
    log: Logger,
    opts: { jwk?: JwkSourceOptions } = {},
  ) {
    if ((cfg.jwt?.length || cfg.authHook) && cfg.adminSecret === undefined) {
      throw new Error('JWT and webhook modes require an admin secret');
    }
    if (cfg.jwt?.length && cfg.authHook) throw new Error('Both webhook and JWT mode cannot be enabled at the same time');
    this.jwt = cfg.jwt?.length ? new JwtAuth(cfg.jwt, log, opts.jwk) : undefined;
    this.hook = cfg.authHook ? new WebhookAuth(cfg.authHook, log) : undefined;
  }

  /** Whether resolution reads the GraphQL request (webhook POST mode): callers then read the
   * body before resolving and pass it. */
  get needsRequest(): boolean {
    return this.cfg.authHook?.mode === 'POST';
  }

  /** The session of a request (Note [Resolution order]). `request`: the GraphQL request (or
   * batch) when there is one, for webhook POST mode. Throws SvcError (401/400/500) to refuse. */
  async resolve(headers: Iterable<[string, string]> | Headers, request?: unknown): Promise<Session> {
    const map = lowerMap(headers);
    const byMode = this.bySecret(map);
    if (byMode) return byMode;
    if (this.jwt) return this.jwt.resolve(map, this.cfg.unauthorizedRole, () => sessionVariables(map));
    if (this.cfg.unauthorizedRole && !map.has('authorization') && !map.has('cookie')) return this.unauthorized(map);
    return this.hook!.resolve(map, request ?? null);
  }

  /** Synchronous resolution, for callers that cannot wait (KernelApi.session): everything but
   * verifying a token or calling the hook, which it refuses as not admin. */
  resolveSync(headers: Iterable<[string, string]> | Headers): Session {
    const map = lowerMap(headers);
    const byMode = this.bySecret(map);
    if (byMode) return byMode;
    if (this.jwt && !this.jwt.hasCredentials(map) && this.cfg.unauthorizedRole) return this.unauthorized(map);
    if (this.hook && this.cfg.unauthorizedRole && !map.has('authorization') && !map.has('cookie')) return this.unauthorized(map);
    throw new SvcError('access-denied', 'restricted access : admin only');
  }

  /** Steps 1, 2 and 5 of Note [Resolution order]; undefined when a token or the hook decides. */
  private bySecret(map: Map<string, string>): Session | undefined {
    if (this.cfg.adminSecret === undefined || map.has('x-svc-admin-secret') || map.has('x-svc-access-key') || (!this.jwt && !this.hook)) {
      return resolveSession(map, this.cfg);
    }
    return undefined;
  }

  private unauthorized(map: Map<string, string>): Session {
    const role = this.cfg.unauthorizedRole!;
    return { role, variables: { ...sessionVariables(map), 'x-svc-role': role }, isAdmin: false };
  }
}
