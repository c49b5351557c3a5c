/**
 * JWT mode: the token from the configured header (Authorization bearer or a cookie), verified
 * with jose, its claims made into a session as Hasura v2 does (server/src-lib/Hasura/Server/Auth/
 * JWT.hs), with Svc's names: `x-svc-allowed-roles`, `x-svc-default-role`, every other `x-svc-*`
 * claim a session variable; `x-hasura-*` claims are read as `x-svc-*` (Note [Hasura's claims]).
 *
 * Note [JWT verification]
 * - Algorithms are pinned by the configuration, never taken from the token: a `type`+`key` accepts
 *   exactly its `type` (Ed25519: EdDSA), a `jwk_url` only asymmetric algorithms (RS*, PS*, ES*,
 *   EdDSA) with a key of the matching kind from the set. So `alg: none` and HS/RS key confusion
 *   (an RS public key used as an HMAC secret) have no way in.
 * - exp, nbf and iat (in the future) are checked with `allowed_skew` seconds of tolerance. When
 *   `audience` or `issuer` is configured the token must carry a matching `aud` / `iss` (stricter
 *   than Hasura, which lets a token without the claim pass).
 * - Messages are Hasura's (`Could not verify JWT: JWTExpired`, `... JWSError JWSInvalidSignature`)
 *   and never contain the token, its claims' values or a key.
 *
 * Note [Hasura's claims]
 * Tokens issued for Hasura setups carry `https://hasura.io/jwt/claims` (the default namespace
 * here too) with `x-hasura-allowed-roles`, `x-hasura-default-role`, `x-hasura-user-id`... They work
 * unchanged: every `x-hasura-` key is read as `x-svc-`. When a token has both spellings of one
 * variable, the `x-svc-` one wins. Other namespaces are used only when configured
 * (`claims_namespace`, `claims_namespace_path`, `claims_map`): one default, so the place a
 * session comes from is never ambiguous.
 *
 * Note [Several JWT configurations]
 * With `SVC_GRAPHQL_JWT_SECRETS` (and `SVC_GRAPHQL_JWT_SECRET`, which joins the list first), the
 * configurations whose header the request carries are tried in order; when the token's (unverified)
 * `iss` names the `issuer` of some of them, only those. The first that verifies gives the
 * session; when none does, the first one's error is reported.
 */
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Session } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { atPath } from './jsonpath.js';
import { JwkSource } from './jwks.js';
import { printJsonPath } from './jsonpath.js';
import type { ClaimSource, JwtSettings } from './jwt-config.js';

/** Longer tokens are refused before any parsing (Node's 16 KiB header limit stops most before). */
export const MAX_TOKEN_LENGTH = 64 * 1024;

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

const invalidJwt = (what: string) => new SvcError('invalid-jwt', `Could not verify JWT: ${what}`);
const invalidClaims = (msg: string) => new SvcError('jwt-invalid-claims', msg);
const missingRoleClaim = (claim: string) => new SvcError('jwt-missing-role-claims', `JWT claim does not contain ${claim}`);

/** Request headers, names lower-cased. */
export type HeaderMap = ReadonlyMap<string, string>;

interface Verifier {
  settings: JwtSettings;
  jwks?: JwkSource;
}

export class JwtAuth {
  private readonly verifiers: Verifier[];

  constructor(settings: JwtSettings[], log: Logger, jwkOptions?: ConstructorParameters<typeof JwkSource>[2]) {
    this.verifiers = settings.map((s) => ({ settings: s, jwks: s.source.kind === 'url' ? new JwkSource(s.source.url, log, jwkOptions) : undefined }));
  }

  /** The JWK sources (tests). */
  get jwkSources(): JwkSource[] {
    return this.verifiers.flatMap((v) => (v.jwks ? [v.jwks] : []));
  }

  /** The header a configuration reads, for the "missing header" message. */
  private expectedHeader(): string {
    return this.verifiers[0]!.settings.header.type;
  }

  /** Whether the request carries a token for any configuration (its header is present). */
  hasCredentials(headers: HeaderMap): boolean {
    return this.verifiers.some((v) => headers.has(v.settings.header.type.toLowerCase()));
  }

  /** The session of a request that carries no admin secret. */
  async resolve(headers: HeaderMap, unauthorizedRole: string | undefined, headerVariables: () => Record<string, string>): Promise<Session> {
    const candidates = this.verifiers.filter((v) => headers.has(v.settings.header.type.toLowerCase()));
    if (candidates.length === 0) {
      if (unauthorizedRole) return { role: unauthorizedRole, variables: { ...headerVariables(), 'x-svc-role': unauthorizedRole }, isAdmin: false };
      throw new SvcError('invalid-headers', `Missing ${this.expectedHeader()} header in JWT authentication mode`);
    }
    let first: unknown;
    let claims: Record<string, unknown> | undefined;
    let exp: unknown;
    for (const v of narrowByIssuer(candidates, headers)) {
      try {
        const token = tokenOf(v.settings, headers.get(v.settings.header.type.toLowerCase())!);
        const payload = await verify(token, v);
        claims = claimsOf(payload, v.settings);
        exp = (payload as { exp?: unknown }).exp;
        break;
      } catch (e) {
        first ??= e;
      }
    }
    if (!claims) throw first;
    const session = sessionFromClaims(claims, headers.get('x-svc-role'));
    // A WebSocket keeps the session: it ends when the token expires (Session.expiresAt).
    if (typeof exp === 'number' && Number.isFinite(exp)) session.expiresAt = exp * 1000;
    return session;
  }
}

/** With several configurations, those whose issuer the token names (unverified: it only picks
 * which key to try). */
function narrowByIssuer(candidates: Verifier[], headers: HeaderMap): Verifier[] {
  if (candidates.length < 2) return candidates;
  let iss: unknown;
  try {
    const v = candidates[0]!;
    const token = tokenOf(v.settings, headers.get(v.settings.header.type.toLowerCase())!);
    iss = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')).iss;
  } catch {
    return candidates;
  }
  const named = candidates.filter((v) => v.settings.issuer !== undefined && v.settings.issuer === iss);
  return named.length > 0 ? named : candidates;
}

function tokenOf(s: JwtSettings, value: string): string {
  if (s.header.type === 'Authorization') {
    const parts = value.trim().split(/\s+/);
    if (parts.length !== 2 || parts[0]!.toLowerCase() !== 'bearer') throw new SvcError('invalid-headers', 'Malformed Authorization header');
    return parts[1]!;
  }
  const name = s.header.name;
  for (const pair of value.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    if (pair.slice(0, eq).trim() !== name) continue;
    let v = pair.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
    try {
      return decodeURIComponent(v);
    } catch {
      return v;
    }
  }
  throw new SvcError('invalid-headers', `Could not find ${name} in Cookie header`);
}

async function verify(token: string, v: Verifier): Promise<JWTPayload> {
  const s = v.settings;
  if (token.length > MAX_TOKEN_LENGTH) throw invalidJwt(`JWSError (CompactDecodeError the token is longer than ${MAX_TOKEN_LENGTH} characters)`);
  const parts = token.split('.').length;
  if (parts !== 3) throw invalidJwt(`JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got ${parts})`);
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token).alg;
  } catch {
    throw invalidJwt('JWSError (CompactDecodeError the protected header is not base64url-encoded JSON)');
  }
  if (typeof alg !== 'string' || alg.toLowerCase() === 'none') throw invalidJwt('JWSError AlgorithmNotImplemented');
  const algorithms = s.source.kind === 'key' ? s.source.algorithms : ASYMMETRIC;
  // Another algorithm than the configuration's, e.g. HS256 against an RS256 key: no key can be used.
  if (!algorithms.includes(alg)) throw invalidJwt('JWSError NoUsableKeys');
  let payload: JWTPayload;
  try {
    const key = s.source.kind === 'key' ? s.source.key : v.jwks!.key;
    const r = await jwtVerify(token, key as Parameters<typeof jwtVerify>[1] & object, {
      algorithms,
      audience: s.audience,
      issuer: s.issuer,
      clockTolerance: s.allowedSkew,
    });
    payload = r.payload;
  } catch (e) {
    throw fromJose(e);
  }
  if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + s.allowedSkew) throw invalidJwt('JWTIssuedAtFuture');
  return payload;
}

function fromJose(e: unknown): SvcError {
  if (e instanceof SvcError) return e;
  if (e instanceof joseErrors.JWTExpired) return invalidJwt('JWTExpired');
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf') return invalidJwt('JWTNotYetValid');
    if (e.claim === 'aud') return invalidJwt('JWTNotInAudience');
    if (e.claim === 'iss') return invalidJwt('JWTNotInIssuer');
    // jose's reasons are fixed texts ('"exp" claim must be a number'), never the claim's value.
    return invalidJwt(`JWTClaimsSetDecodeError "${e.message}"`);
  }
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return invalidJwt('JWSError JWSInvalidSignature');
  if (e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWKSMultipleMatchingKeys || e instanceof joseErrors.JOSEAlgNotAllowed) return invalidJwt('JWSError NoUsableKeys');
  if (e instanceof joseErrors.JWTInvalid) return invalidJwt(`JWTClaimsSetDecodeError "${e.message}"`);
  if (e instanceof joseErrors.JWSInvalid) return invalidJwt(`JWSError (CompactDecodeError ${e.message})`);
  if (e instanceof joseErrors.JOSENotSupported) return invalidJwt('JWSError AlgorithmNotImplemented');
  if (e instanceof joseErrors.JOSEError) return invalidJwt(`JWSError (${e.code})`);
  // A key that jose cannot use with the token's algorithm, and the like.
  if (e instanceof TypeError) return invalidJwt('JWSError NoUsableKeys');
  throw e;
}

/** The token's `x-svc-*` claims, keys lower-cased, `x-hasura-*` read as `x-svc-*`. */
function claimsOf(payload: JWTPayload, s: JwtSettings): Record<string, unknown> {
  const c = s.claims;
  if (c.kind === 'map') {
    const out: Record<string, unknown> = {};
    const pick = (name: string, src: ClaimSource, required: 'role' | 'claim') => {
      if ('value' in src) return src.value;
      const found = atPath(payload, src.path);
      if (found !== undefined) return found;
      if ('default' in src) return src.default;
      if (required === 'role') throw missingRoleClaim(name);
      throw invalidClaims(`JWT claim from claims_map, ${name} not found`);
    };
    // Checked before the default role is looked for, as Hasura parses them in that order.
    out['x-svc-allowed-roles'] = checkAllowedRoles(pick('x-svc-allowed-roles', c.allowedRoles, 'role'));
    out['x-svc-default-role'] = pick('x-svc-default-role', c.defaultRole, 'role');
    for (const [k, src] of c.others) out[k] = pick(k, src, 'claim');
    return out;
  }
  const where = c.key !== undefined ? `claims_namespace ${c.key}` : `claims_namespace_path ${printJsonPath(c.path)}`;
  const value = c.key !== undefined ? (Object.hasOwn(payload, c.key) ? payload[c.key] : undefined) : atPath(payload, c.path);
  if (value === undefined) {
    throw invalidClaims(c.key !== undefined ? `claims key: '${c.key}' not found` : `claims not found at claims_namespace_path: '${printJsonPath(c.path)}'`);
  }
  let obj: unknown = value;
  if (c.format === 'stringified_json') {
    if (typeof value !== 'string') throw invalidClaims('expecting a string when claims_format is stringified_json');
    try {
      obj = JSON.parse(value);
    } catch {
      // Hasura quotes the value here; it is the token's content, so it stays out of the message.
      throw invalidClaims(`expecting stringified json at: '${where}'`);
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw invalidClaims(`expecting a json object (stringified) at: '${where}'`);
  } else if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw invalidClaims('expecting a json object when claims_format is json');
  }
  const svc: Record<string, unknown> = {};
  const hasura: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(obj as Record<string, unknown>)) {
    const key = k.toLowerCase();
    if (key.startsWith('x-svc-')) svc[key] = val;
    else if (key.startsWith('x-hasura-')) hasura[`x-svc-${key.slice('x-hasura-'.length)}`] = val;
  }
  return { ...hasura, ...svc };
}

/** Roles and variables from verified claims; `requested` is the X-Svc-Role header. */
export function sessionFromClaims(claims: Record<string, unknown>, requested: string | undefined): Session {
  const allowed = claims['x-svc-allowed-roles'];
  const def = claims['x-svc-default-role'];
  if (allowed === undefined) throw missingRoleClaim('x-svc-allowed-roles');
  if (def === undefined) throw missingRoleClaim('x-svc-default-role');
  checkAllowedRoles(allowed);
  if (typeof def !== 'string' || def.trim() === '') throw invalidClaims(`invalid x-svc-default-role; should be a single role name: expected a non-empty string, but encountered ${jsonType(def)}`);
  const role = requested !== undefined && requested.trim() !== '' ? requested.trim() : def;
  if (!(allowed as string[]).includes(role)) throw new SvcError('access-denied', 'Your requested role is not in allowed roles');
  const variables: Record<string, string> = {};
  for (const [k, val] of Object.entries(claims)) {
    if (k === 'x-svc-allowed-roles' || k === 'x-svc-default-role' || k === 'x-svc-role') continue;
    // Strings as they are; other JSON values (numbers, lists for `_in`) as their JSON text.
    variables[k] = typeof val === 'string' ? val : JSON.stringify(val);
  }
  variables['x-svc-role'] = role;
  return { role, variables, isAdmin: role === 'admin' };
}

function checkAllowedRoles(allowed: unknown): string[] {
  if (!Array.isArray(allowed) || !allowed.every((r) => typeof r === 'string' && r.trim() !== '')) {
    throw invalidClaims(`invalid x-svc-allowed-roles; should be a list of roles: expected a list of non-empty strings, but encountered ${jsonType(allowed)}`);
  }
  return allowed as string[];
}

function jsonType(x: unknown): string {
  return x === null ? 'Null' : Array.isArray(x) ? 'Array' : typeof x === 'string' ? 'String' : typeof x === 'number' ? 'Number' : typeof x === 'boolean' ? 'Boolean' : 'Object';
}
