/**
 * Session resolution: which role a request runs as, and its session variables, for every way in
 * (HTTP endpoints now; WebSocket connection_init and REST endpoints call the same
 * `Authenticator.resolve(headers, request?)`). Modes, as Hasura v2's Auth.hs: no
 * authentication, admin secret, and admin secret with an authentication mode that a plugin
 * provides (Note [Authentication modes] in core/types.ts): JWT (plugins/auth-jwt), webhook
 * (plugins/auth-webhook).
 *
 * Note [Admin secret comparison]: both sides are hashed to a fixed length and compared with
 * timingSafeEqual, so neither the content nor the length of the secret leaks through timing.
 *
 * Note [Resolution order]
 * 1. No admin secret configured (and so no JWT or webhook, which require one): every request is
 *    admin unless it asks for another role with X-Svc-Role; X-Svc-* headers are its variables.
 * 2. The request sends X-Svc-Admin-Secret (or X-Svc-Access-Key): right, it is admin and may pick
 *    a role with X-Svc-Role; wrong, 401, whatever else it carries (no falling back to a token).
 * 3. An authentication mode (JWT, webhook): a request that carries the mode's credentials (a
 *    token; for the webhook, Authorization or Cookie) is resolved by the mode; one that carries
 *    none gets the unauthorized role if one is configured (without calling a webhook: Hasura
 *    refuses to start with both, the issue asks for the unauthorized role in every mode), else the
 *    mode refuses it (JWT: 400 invalid-headers "Missing Authorization header in JWT
 *    authentication mode").
 * 4. Admin secret only: the unauthorized role if configured, else 401.
 * In JWT and webhook modes the session variables come only from the token or the hook, never
 * from the client's X-Svc-* headers (which anyone can send).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthMode, Session } from '../plugin.js';
import { SvcError } from '../errors.js';

export interface AuthConfig {
  adminSecret?: string;
  unauthorizedRole?: string;
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

/** The session resolver of a server: one per kernel, built from its configuration and the
 * authentication mode a plugin provides, if any (Note [Resolution order]). */
export class Authenticator {
  constructor(
    private readonly cfg: AuthConfig,
    readonly mode?: AuthMode,
  ) {
    if (mode && cfg.adminSecret === undefined) throw new Error(`the ${mode.name} authentication mode requires an admin secret`);
  }

  /** Whether resolution reads the GraphQL request (webhook POST mode): callers then read the
   * body before resolving and pass it. */
  get needsRequest(): boolean {
    return this.mode?.needsRequest === true;
  }

  /** The session of a request (Note [Resolution order]). `request`: the GraphQL request (or
   * batch) when there is one, for webhook POST mode. Throws SvcError (401/400/500) to refuse. */
  async resolve(headers: Iterable<[string, string]> | Headers, request?: unknown): Promise<Session> {
    const map = lowerMap(headers);
    const bySecret = this.bySecret(map);
    if (bySecret) return bySecret;
    const mode = this.mode!;
    if (this.cfg.unauthorizedRole && !mode.hasCredentials(map)) return this.unauthorized(map);
    return mode.resolve(map, request ?? null);
  }

  /** Synchronous resolution, for callers that cannot wait (KernelApi.session): everything but
   * what the mode decides, which it refuses as not admin. */
  resolveSync(headers: Iterable<[string, string]> | Headers): Session {
    const map = lowerMap(headers);
    const bySecret = this.bySecret(map);
    if (bySecret) return bySecret;
    if (this.cfg.unauthorizedRole && !this.mode!.hasCredentials(map)) return this.unauthorized(map);
    throw new SvcError('access-denied', 'restricted access : admin only');
  }

  /** Steps 1, 2 and 4 of Note [Resolution order]; undefined when the mode decides. */
  private bySecret(map: Map<string, string>): Session | undefined {
    if (this.cfg.adminSecret === undefined || map.has('x-svc-admin-secret') || map.has('x-svc-access-key') || !this.mode) {
      return resolveSession(map, this.cfg);
    }
    return undefined;
  }

  private unauthorized(map: Map<string, string>): Session {
    const role = this.cfg.unauthorizedRole!;
    return { role, variables: { ...sessionVariables(map), 'x-svc-role': role }, isAdmin: false };
  }
}
