/**
 * The JWT configuration (`--jwt-secret`, `SVC_GRAPHQL_JWT_SECRET`, `SVC_GRAPHQL_JWT_SECRETS`): the
 * JSON document Hasura v2 reads, checked and prepared at boot (keys imported, paths parsed), so a
 * bad configuration stops the server with a message, and no request pays for parsing it.
 * Messages never quote the key.
 */
import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { parseJsonPath, printJsonPath, type JsonPath } from './jsonpath.js';

export const DEFAULT_CLAIMS_NAMESPACE = 'https://hasura.io/jwt/claims';

/** A claims_map entry: a literal, or a JSON path into the token's claims with an optional default. */
export type ClaimSource = { value: unknown } | { path: JsonPath; default?: unknown };

export type ClaimsSettings =
  | { kind: 'namespace'; key: string; path?: undefined; format: 'json' | 'stringified_json' }
  | { kind: 'namespace'; key?: undefined; path: JsonPath; format: 'json' | 'stringified_json' }
  | { kind: 'map'; allowedRoles: ClaimSource; defaultRole: ClaimSource; others: [string, ClaimSource][] };

export interface JwtSettings {
  source: { kind: 'key'; key: KeyObject; algorithms: string[] } | { kind: 'url'; url: string };
  audience?: string[];
  issuer?: string;
  claims: ClaimsSettings;
  /** Seconds of clock difference tolerated for exp, nbf and iat. */
  allowedSkew: number;
  header: { type: 'Authorization' } | { type: 'Cookie'; name: string };
  /** What the config API reports: `{claims_namespace | claims_namespace_path, claims_format}` or
   * `{claims_map}` (never the key). */
  info: Record<string, unknown>;
}

const KNOWN = new Set(['type', 'key', 'jwk_url', 'claims_namespace', 'claims_namespace_path', 'claims_format', 'claims_map', 'audience', 'issuer', 'allowed_skew', 'header']);

const HMAC_BITS: Record<string, number> = { HS256: 256, HS384: 384, HS512: 512 };
const CURVES: Record<string, string> = { ES256: 'prime256v1', ES384: 'secp384r1', ES512: 'secp521r1' };

const isObject = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x);

/** Session variable names in the configuration may be written `x-hasura-*` (Hasura's). */
export function svcClaimName(name: string): string {
  const k = name.toLowerCase();
  return k.startsWith('x-hasura-') ? `x-svc-${k.slice('x-hasura-'.length)}` : k;
}

/** Parses one JWT configuration (the JSON text or its value); throws Error with a message. */
export function parseJwtSettings(raw: unknown): JwtSettings {
  let o = raw;
  if (typeof raw === 'string') {
    try {
      o = JSON.parse(raw);
    } catch {
      throw new Error('expected a JSON object (the JWT configuration)');
    }
  }
  if (!isObject(o)) throw new Error('expected a JSON object (the JWT configuration)');
  for (const k of Object.keys(o)) if (!KNOWN.has(k)) throw new Error(`unknown key "${k}" in the JWT configuration`);

  let source: JwtSettings['source'];
  if (o.key !== undefined && o.jwk_url !== undefined) throw new Error('key, jwk_url both cannot be present');
  if (o.key === undefined && o.jwk_url === undefined) throw new Error('key and jwk_url both cannot be empty');
  if (o.jwk_url !== undefined) {
    if (typeof o.jwk_url !== 'string' || !/^https?:\/\/[^\s]+$/.test(o.jwk_url)) throw new Error('jwk_url: expected an http:// or https:// URL');
    source = { kind: 'url', url: o.jwk_url };
  } else {
    if (typeof o.type !== 'string') throw new Error('"type" is required with "key"');
    source = importKey(o.type, o.key);
  }

  let audience: string[] | undefined;
  if (o.audience !== undefined && o.audience !== null) {
    const list = Array.isArray(o.audience) ? o.audience : [o.audience];
    if (list.length === 0 || !list.every((a) => typeof a === 'string')) throw new Error('audience: expected a string or a list of strings');
    audience = list as string[];
  }
  if (o.issuer !== undefined && o.issuer !== null && typeof o.issuer !== 'string') throw new Error('issuer: expected a string');
  const issuer = (o.issuer ?? undefined) as string | undefined;
  let allowedSkew = 0;
  if (o.allowed_skew !== undefined && o.allowed_skew !== null) {
    if (typeof o.allowed_skew !== 'number' || !Number.isFinite(o.allowed_skew) || o.allowed_skew < 0) throw new Error('allowed_skew: expected a non-negative number of seconds');
    allowedSkew = o.allowed_skew;
  }

  let header: JwtSettings['header'] = { type: 'Authorization' };
  if (o.header !== undefined && o.header !== null) {
    const h = o.header;
    if (!isObject(h) || typeof h.type !== 'string') throw new Error(`header: expected {"type": "Authorization"} or {"type": "Cookie", "name": ...}`);
    if (h.type.toLowerCase() === 'authorization') header = { type: 'Authorization' };
    else if (h.type.toLowerCase() === 'cookie') {
      if (typeof h.name !== 'string' || h.name === '') throw new Error('header: a Cookie header needs a "name"');
      header = { type: 'Cookie', name: h.name };
    } else throw new Error("header: expected 'type' is 'Authorization' or 'Cookie'");
  }

  const format = o.claims_format ?? 'json';
  if (format !== 'json' && format !== 'stringified_json') throw new Error('claims_format: expected "json" or "stringified_json"');
  let claims: ClaimsSettings;
  let info: Record<string, unknown>;
  if (o.claims_map !== undefined && o.claims_map !== null) {
    if (o.claims_namespace !== undefined || o.claims_namespace_path !== undefined) throw new Error('claims_map cannot be set with claims_namespace or claims_namespace_path');
    claims = parseClaimsMap(o.claims_map);
    info = { claims_map: o.claims_map };
  } else if (o.claims_namespace !== undefined && o.claims_namespace_path !== undefined) {
    throw new Error('claims_namespace and claims_namespace_path both cannot be set');
  } else if (o.claims_namespace_path !== undefined) {
    if (typeof o.claims_namespace_path !== 'string') throw new Error('claims_namespace_path: expected a JSON path');
    let path: JsonPath;
    try {
      path = parseJsonPath(o.claims_namespace_path);
    } catch (e) {
      throw new Error(`invalid JSON path claims_namespace_path error: ${(e as Error).message}`);
    }
    claims = { kind: 'namespace', path, format };
    info = { claims_namespace_path: printJsonPath(path), claims_format: format };
  } else {
    const ns = o.claims_namespace ?? DEFAULT_CLAIMS_NAMESPACE;
    if (typeof ns !== 'string' || ns === '') throw new Error('claims_namespace: expected a string');
    claims = { kind: 'namespace', key: ns, format };
    info = { claims_namespace: ns, claims_format: format };
  }
  return { source, audience, issuer, claims, allowedSkew, header, info };
}

function importKey(type: string, key: unknown): JwtSettings['source'] {
  const hmac = HMAC_BITS[type];
  if (hmac !== undefined) {
    if (typeof key !== 'string') throw new Error(`Invalid JWK: the ${type} key must be a string`);
    const bytes = Buffer.from(key, 'utf8');
    if (bytes.length * 8 < hmac) throw new Error(`Invalid JWK: Key size too small; should be atleast ${hmac} bits`);
    return { kind: 'key', key: createSecretKey(bytes), algorithms: [type] };
  }
  const family = /^(RS|PS)(256|384|512)$/.test(type) ? 'rsa' : CURVES[type] ? 'ec' : type === 'Ed25519' || type === 'EdDSA' ? 'ed25519' : undefined;
  if (!family) throw new Error(`Invalid JWK: Key type: ${type} is not supported`);
  let k: KeyObject;
  try {
    if (isObject(key)) k = createPublicKey({ key: key as never, format: 'jwk' });
    else if (typeof key === 'string' && key.trim().startsWith('{')) k = createPublicKey({ key: JSON.parse(key), format: 'jwk' });
    else if (typeof key === 'string') k = createPublicKey(key);
    else throw new Error('not a key');
  } catch {
    throw new Error(`Invalid JWK: the ${type} key is not a PEM public key, an X.509 certificate or a JWK`);
  }
  const kt = k.asymmetricKeyType;
  const ok = family === 'rsa' ? kt === 'rsa' || (kt === 'rsa-pss' && type.startsWith('PS')) : family === 'ec' ? kt === 'ec' && k.asymmetricKeyDetails?.namedCurve === CURVES[type] : kt === 'ed25519';
  if (!ok) throw new Error(`Invalid JWK: the key does not fit type ${type}`);
  return { kind: 'key', key: k, algorithms: family === 'ed25519' ? ['EdDSA', 'Ed25519'] : [type] };
}

function parseClaimsMap(raw: unknown): Extract<ClaimsSettings, { kind: 'map' }> {
  if (!isObject(raw)) throw new Error('claims_map: expected an object');
  const entries = new Map<string, ClaimSource>();
  for (const [name, val] of Object.entries(raw)) {
    const key = svcClaimName(name);
    if (!key.startsWith('x-svc-')) throw new Error(`claims_map: "${name}" is not a session variable (x-svc-* or x-hasura-*)`);
    let src: ClaimSource;
    if (isObject(val)) {
      if (typeof val.path !== 'string') throw new Error(`claims_map: "${name}" needs a "path"`);
      let path: JsonPath;
      try {
        path = parseJsonPath(val.path);
      } catch (e) {
        throw new Error(`claims_map: "${name}": ${(e as Error).message}`);
      }
      src = 'default' in val ? { path, default: val.default } : { path };
    } else src = { value: val };
    entries.set(key, src);
  }
  const take = (k: string) => {
    const s = entries.get(k);
    if (!s) throw new Error(`claims_map: ${k} is expected but not found`);
    entries.delete(k);
    return s;
  };
  const allowedRoles = take('x-svc-allowed-roles');
  const defaultRole = take('x-svc-default-role');
  if ('value' in allowedRoles && !(Array.isArray(allowedRoles.value) && allowedRoles.value.every((r) => typeof r === 'string'))) {
    throw new Error('claims_map: x-svc-allowed-roles must be a list of roles or {path, default}');
  }
  if ('value' in defaultRole && typeof defaultRole.value !== 'string') throw new Error('claims_map: x-svc-default-role must be a role or {path, default}');
  for (const [k, s] of entries) if ('value' in s && typeof s.value !== 'string') throw new Error(`claims_map: ${k} must be a string or {path, default}`);
  return { kind: 'map', allowedRoles, defaultRole, others: [...entries] };
}
