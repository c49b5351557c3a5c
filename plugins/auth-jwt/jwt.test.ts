/**
 * JWT mode (issue 10): the security table of crafted tokens, each with its expected verdict,
 * resolved by the server's Authenticator exactly as every endpoint resolves them; then the
 * endpoints' statuses and shapes through the app, rotated JWK sets from a loopback server, and
 * the logs (no token, key or secret in them).
 *
 * The table is generated: every key type (HS256/384/512, RS256/384/512, PS256, ES256/384/512,
 * Ed25519, a JWK set) crossed with every defect; then the claims layouts (namespace path,
 * stringified JSON, claims_map, cookie header) crossed with theirs.
 */
import { createServer, type Server } from 'node:http';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { CompactSign, exportJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../core/auth/session.js';
import { SvcError } from '../../core/errors.js';
import { loadConfig } from '../../core/config.js';
import { captureLogger, startServer, type TestServer } from '../../test/helpers.js';
import { builtinPlugins } from '../../server/plugins.js';
import { jwtMode, MAX_TOKEN_LENGTH, parseJwtSettings } from './index.js';

const enc = (x: unknown) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);
const NS = 'https://hasura.io/jwt/claims';
const SECRET = 'the-admin-secret';

// ---------------------------------------------------------------------------------------------
// Keys

interface Kind {
  name: string;
  /** The algorithm tokens are signed with. */
  alg: string;
  /** `type` in the configuration. */
  type: string;
  sign: KeyObject | Uint8Array;
  /** Another key of the same kind (wrong signature). */
  other: KeyObject | Uint8Array;
  /** What the configuration holds: the HMAC text or the public key PEM. */
  key: string;
  publicKey?: KeyObject;
}

const hmac = (alg: string, bytes: number): Kind => {
  const text = 'k'.repeat(bytes - 3) + alg.slice(2);
  return { name: alg, alg, type: alg, sign: new TextEncoder().encode(text), other: new TextEncoder().encode('x'.repeat(bytes)), key: text };
};
const pair = (type: 'rsa' | 'ec' | 'ed25519', curve?: string) => {
  const p = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : type === 'ec' ? generateKeyPairSync('ec', { namedCurve: curve! }) : generateKeyPairSync('ed25519');
  return p;
};
const rsa = pair('rsa');
const rsa2 = pair('rsa');
const asym = (name: string, alg: string, type: string, p: ReturnType<typeof pair>, q: ReturnType<typeof pair>): Kind => ({
  name,
  alg,
  type,
  sign: p.privateKey,
  other: q.privateKey,
  key: p.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  publicKey: p.publicKey,
});
const p256 = [pair('ec', 'prime256v1'), pair('ec', 'prime256v1')] as const;
const p384 = [pair('ec', 'secp384r1'), pair('ec', 'secp384r1')] as const;
const p521 = [pair('ec', 'secp521r1'), pair('ec', 'secp521r1')] as const;
const ed = [pair('ed25519'), pair('ed25519')] as const;

const KINDS: Kind[] = [
  hmac('HS256', 32),
  hmac('HS384', 48),
  hmac('HS512', 64),
  asym('RS256', 'RS256', 'RS256', rsa, rsa2),
  asym('RS384', 'RS384', 'RS384', rsa, rsa2),
  asym('RS512', 'RS512', 'RS512', rsa, rsa2),
  asym('PS256', 'PS256', 'PS256', rsa, rsa2),
  asym('ES256', 'ES256', 'ES256', p256[0], p256[1]),
  asym('ES384', 'ES384', 'ES384', p384[0], p384[1]),
  asym('ES512', 'ES512', 'ES512', p521[0], p521[1]),
  asym('Ed25519', 'EdDSA', 'Ed25519', ed[0], ed[1]),
];

async function sign(alg: string, key: KeyObject | Uint8Array, payload: unknown, header: Record<string, unknown> = {}): Promise<string> {
  const bytes = new TextEncoder().encode(typeof payload === 'string' ? payload : JSON.stringify(payload));
  return new CompactSign(bytes).setProtectedHeader({ alg, ...header }).sign(key);
}

// ---------------------------------------------------------------------------------------------
// Verdicts

type Verdict = { role: string; vars?: Record<string, string>; admin?: boolean } | { code: string; message: string | RegExp };

interface Case {
  name: string;
  /** Index into the configurations of the case's group. */
  config: string;
  headers: () => Promise<Record<string, string>>;
  expect: Verdict;
}

const claims = (over: Record<string, unknown> = {}, ns = NS) => ({
  sub: 'u1',
  iat: now() - 10,
  exp: now() + 600,
  [ns]: { 'x-svc-allowed-roles': ['user', 'editor'], 'x-svc-default-role': 'user', 'x-svc-user-id': '42', ...over },
});
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const jwtErr = (what: string) => ({ code: 'invalid-jwt', message: `Could not verify JWT: ${what}` });

/** The defects every key kind is tried with. `cfg` names the configuration: `plain` (the key),
 * `strict` (audience, issuer, 60 s skew). */
function defects(k: Kind, sgn: (payload: unknown, header?: Record<string, unknown>) => Promise<string>): Omit<Case, 'name'>[] & { label: string }[] {
  const list: (Omit<Case, 'name'> & { label: string })[] = [];
  const add = (label: string, config: string, headers: () => Promise<Record<string, string>>, v: Verdict) => list.push({ label, config, headers, expect: v });
  const tok = (payload: unknown, header?: Record<string, unknown>) => async () => bearer(await sgn(payload, header));
  const ok = { role: 'user', vars: { 'x-svc-user-id': '42', 'x-svc-role': 'user' } };
  add('valid', 'plain', tok(claims()), ok);
  add('valid, X-Svc-Role picks an allowed role', 'plain', async () => ({ ...(await tok(claims())()), 'x-svc-role': 'editor' }), { role: 'editor' });
  add('X-Svc-Role outside the allowed roles', 'plain', async () => ({ ...(await tok(claims())()), 'x-svc-role': 'admin' }), { code: 'access-denied', message: 'Your requested role is not in allowed roles' });
  add('default role outside the allowed roles', 'plain', tok(claims({ 'x-svc-default-role': 'boss' })), { code: 'access-denied', message: 'Your requested role is not in allowed roles' });
  add('admin among the allowed roles is admin', 'plain', tok(claims({ 'x-svc-allowed-roles': ['admin'], 'x-svc-default-role': 'admin' })), { role: 'admin', admin: true });
  add('client X-Svc-* headers do not become variables', 'plain', async () => ({ ...(await tok(claims())()), 'x-svc-user-id': '999', 'x-svc-org': '7' }), ok);
  add('x-hasura-* claims are read as x-svc-*', 'plain', tok({ exp: now() + 60, [NS]: { 'x-hasura-allowed-roles': ['user'], 'x-hasura-default-role': 'user', 'x-hasura-user-id': '7' } }), { role: 'user', vars: { 'x-svc-user-id': '7', 'x-svc-role': 'user' } });
  add('x-svc-* wins over x-hasura-*', 'plain', tok(claims({ 'x-hasura-user-id': '1' })), ok);
  add('non-string claims become JSON text', 'plain', tok(claims({ 'x-svc-user-id': 42, 'x-svc-ids': [1, 2] })), { role: 'user', vars: { 'x-svc-user-id': '42', 'x-svc-ids': '[1,2]', 'x-svc-role': 'user' } });
  add('alg none, no signature', 'plain', async () => bearer(`${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims())}.`), jwtErr('JWSError AlgorithmNotImplemented'));
  add('alg none, with the original signature', 'plain', async () => {
    const [, p, s] = (await sgn(claims())).split('.');
    return bearer(`${enc({ alg: 'none' })}.${p}.${s}`);
  }, jwtErr('JWSError AlgorithmNotImplemented'));
  add('alg NONE (case)', 'plain', async () => bearer(`${enc({ alg: 'NONE' })}.${enc(claims())}.`), jwtErr('JWSError AlgorithmNotImplemented'));
  add('signed with another key', 'plain', async () => bearer(await sign(k.alg, k.other, claims())), jwtErr('JWSError JWSInvalidSignature'));
  add('payload changed after signing', 'plain', async () => {
    const [h, , s] = (await sgn(claims())).split('.');
    return bearer(`${h}.${enc(claims({ 'x-svc-allowed-roles': ['admin'], 'x-svc-default-role': 'admin' }))}.${s}`);
  }, jwtErr('JWSError JWSInvalidSignature'));
  add('signature stripped', 'plain', async () => {
    const [h, p] = (await sgn(claims())).split('.');
    return bearer(`${h}.${p}.`);
  }, jwtErr('JWSError JWSInvalidSignature'));
  add('signature of garbage', 'plain', async () => {
    const [h, p] = (await sgn(claims())).split('.');
    return bearer(`${h}.${p}.${enc('garbage-garbage-garbage')}`);
  }, jwtErr('JWSError JWSInvalidSignature'));
  if (k.publicKey) {
    // Key confusion: the verifier's public key PEM used as an HMAC secret.
    const pem = new TextEncoder().encode(k.key);
    add('HS256 signed with the public key PEM as secret', 'plain', async () => bearer(await sign('HS256', pem, claims())), jwtErr('JWSError NoUsableKeys'));
    add('HS512 signed with the public key PEM as secret', 'plain', async () => bearer(await sign('HS512', pem, claims())), jwtErr('JWSError NoUsableKeys'));
  } else {
    add('RS256 token against an HMAC key', 'plain', async () => bearer(await sign('RS256', rsa.privateKey, claims())), jwtErr('JWSError NoUsableKeys'));
    const otherHs = k.alg === 'HS256' ? 'HS512' : 'HS256';
    add(`${otherHs} token with the same secret`, 'plain', async () => bearer(await sign(otherHs, k.sign, claims())), jwtErr('JWSError NoUsableKeys'));
  }
  add('expired', 'plain', tok({ ...claims(), exp: now() - 30 }), jwtErr('JWTExpired'));
  add('expired long ago', 'plain', tok({ ...claims(), exp: 1000 }), jwtErr('JWTExpired'));
  add('expired, within the allowed skew', 'strict', tok({ ...claims(), aud: 'app', iss: 'issuer', exp: now() - 30 }), ok);
  add('expired, beyond the allowed skew', 'strict', tok({ ...claims(), aud: 'app', iss: 'issuer', exp: now() - 120 }), jwtErr('JWTExpired'));
  add('not yet valid', 'plain', tok({ ...claims(), nbf: now() + 30 }), jwtErr('JWTNotYetValid'));
  add('not yet valid, within the allowed skew', 'strict', tok({ ...claims(), aud: 'app', iss: 'issuer', nbf: now() + 30 }), ok);
  add('not yet valid, beyond the allowed skew', 'strict', tok({ ...claims(), aud: 'app', iss: 'issuer', nbf: now() + 300 }), jwtErr('JWTNotYetValid'));
  add('issued in the future', 'plain', tok({ ...claims(), iat: now() + 300 }), jwtErr('JWTIssuedAtFuture'));
  add('exp is not a number', 'plain', tok({ ...claims(), exp: String(now() + 600) }), { code: 'invalid-jwt', message: /^Could not verify JWT: JWTClaimsSetDecodeError/ });
  add('wrong audience', 'strict', tok({ ...claims(), aud: 'other', iss: 'issuer' }), jwtErr('JWTNotInAudience'));
  add('audience among several', 'strict', tok({ ...claims(), aud: ['x', 'app'], iss: 'issuer' }), ok);
  add('no audience where one is required', 'strict', tok({ ...claims(), iss: 'issuer' }), jwtErr('JWTNotInAudience'));
  add('wrong issuer', 'strict', tok({ ...claims(), aud: 'app', iss: 'evil' }), jwtErr('JWTNotInIssuer'));
  add('no issuer where one is required', 'strict', tok({ ...claims(), aud: 'app' }), jwtErr('JWTNotInIssuer'));
  add('no claims namespace', 'plain', tok({ exp: now() + 60, sub: 'x' }), { code: 'jwt-invalid-claims', message: `claims key: '${NS}' not found` });
  add('claims in another namespace', 'plain', tok(claims({}, 'https://svc.io/jwt/claims')), { code: 'jwt-invalid-claims', message: `claims key: '${NS}' not found` });
  add('claims namespace is a string', 'plain', tok({ exp: now() + 60, [NS]: '{"x-svc-allowed-roles":["user"]}' }), { code: 'jwt-invalid-claims', message: 'expecting a json object when claims_format is json' });
  add('claims namespace is a list', 'plain', tok({ exp: now() + 60, [NS]: ['user'] }), { code: 'jwt-invalid-claims', message: 'expecting a json object when claims_format is json' });
  add('no allowed roles', 'plain', tok({ exp: now() + 60, [NS]: { 'x-svc-default-role': 'user' } }), { code: 'jwt-missing-role-claims', message: 'JWT claim does not contain x-svc-allowed-roles' });
  add('no default role', 'plain', tok({ exp: now() + 60, [NS]: { 'x-svc-allowed-roles': ['user'] } }), { code: 'jwt-missing-role-claims', message: 'JWT claim does not contain x-svc-default-role' });
  add('allowed roles is a string', 'plain', tok(claims({ 'x-svc-allowed-roles': 'user' })), { code: 'jwt-invalid-claims', message: /^invalid x-svc-allowed-roles; should be a list of roles/ });
  add('allowed roles holds a number', 'plain', tok(claims({ 'x-svc-allowed-roles': ['user', 1] })), { code: 'jwt-invalid-claims', message: /^invalid x-svc-allowed-roles/ });
  add('default role is a list', 'plain', tok(claims({ 'x-svc-default-role': ['user'] })), { code: 'jwt-invalid-claims', message: /^invalid x-svc-default-role; should be a single role name/ });
  add('payload is not JSON', 'plain', async () => bearer(await sgn('this is not json')), { code: 'invalid-jwt', message: /^Could not verify JWT: JWTClaimsSetDecodeError/ });
  add('two parts', 'plain', async () => bearer((await sgn(claims())).split('.').slice(0, 2).join('.')), jwtErr('JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got 2)'));
  add('four parts', 'plain', async () => bearer(`${await sgn(claims())}.x`), jwtErr('JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got 4)'));
  add('header is not JSON', 'plain', async () => {
    const [, p, s] = (await sgn(claims())).split('.');
    return bearer(`${enc('{{{')}.${p}.${s}`);
  }, { code: 'invalid-jwt', message: /^Could not verify JWT: JWSError \(CompactDecodeError/ });
  add('huge token', 'plain', async () => bearer(await sgn(claims({ 'x-svc-pad': 'p'.repeat(MAX_TOKEN_LENGTH) }))), jwtErr(`JWSError (CompactDecodeError the token is longer than ${MAX_TOKEN_LENGTH} characters)`));
  add('Authorization without Bearer', 'plain', async () => ({ authorization: await sgn(claims()) }), { code: 'invalid-headers', message: 'Malformed Authorization header' });
  add('Authorization Basic', 'plain', async () => ({ authorization: `Basic ${enc('a:b')}` }), { code: 'invalid-headers', message: 'Malformed Authorization header' });
  add('Bearer with two tokens', 'plain', async () => ({ authorization: `Bearer ${await sgn(claims())} x` }), { code: 'invalid-headers', message: 'Malformed Authorization header' });
  add('lower-case bearer', 'plain', async () => ({ authorization: `bearer ${await sgn(claims())}` }), ok);
  add('a wrong admin secret beside a valid token', 'plain', async () => ({ ...(await tok(claims())()), 'x-svc-admin-secret': 'nope' }), { code: 'access-denied', message: 'invalid x-svc-admin-secret/x-svc-access-key' });
  add('the admin secret beside an expired token', 'plain', async () => ({ ...bearer(await sgn({ ...claims(), exp: 1 })), 'x-svc-admin-secret': SECRET, 'x-svc-role': 'user' }), { role: 'user' });
  return list;
}

async function runCase(auth: Authenticator, headers: Record<string, string>): Promise<Verdict & { vars?: Record<string, string> }> {
  try {
    const s = await auth.resolve(Object.entries(headers));
    return { role: s.role, vars: s.variables, admin: s.isAdmin };
  } catch (e) {
    if (e instanceof SvcError) return { code: e.code!, message: e.message };
    throw e;
  }
}

function matches(got: Verdict & { vars?: Record<string, string>; admin?: boolean }, want: Verdict): boolean {
  if ('role' in want) {
    if (!('role' in got) || got.role !== want.role) return false;
    if (want.vars && JSON.stringify(got.vars) !== JSON.stringify(want.vars)) return false;
    if ((want.admin ?? false) !== got.admin) return false;
    return true;
  }
  if (!('code' in got) || got.code !== want.code) return false;
  return typeof want.message === 'string' ? got.message === want.message : want.message.test(String(got.message));
}

// ---------------------------------------------------------------------------------------------
// A loopback JWK set server

interface JwksServer {
  url: string;
  set(body: unknown, headers?: Record<string, string>, status?: number): void;
  hang(on: boolean): void;
  hits: number;
  close(): Promise<void>;
}

async function jwksServer(): Promise<JwksServer> {
  let body: unknown = { keys: [] };
  let headers: Record<string, string> = {};
  let status = 200;
  let hang = false;
  const state = { hits: 0 };
  const server: Server = createServer((req, res) => {
    state.hits++;
    if (hang) return; // never answers
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    set(b, h = {}, s = 200) {
      body = b;
      headers = h;
      status = s;
    },
    hang(on) {
      hang = on;
    },
    get hits() {
      return state.hits;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const jwk = async (k: KeyObject, kid: string, alg: string) => ({ ...(await exportJWK(k)), kid, alg, use: 'sig' });

// ---------------------------------------------------------------------------------------------

describe('JWT security table', () => {
  const logs: Record<string, any>[] = [];
  const log = captureLogger(logs);
  let jwks: JwksServer;
  const cases: Case[] = [];
  const auths = new Map<string, Authenticator>();
  const mk = (name: string, cfgs: Record<string, unknown>[], extra: { unauthorizedRole?: string } = {}) =>
    auths.set(name, new Authenticator({ adminSecret: SECRET, ...extra }, jwtMode(cfgs.map((c) => parseJwtSettings(JSON.stringify(c))), log)));

  beforeAll(async () => {
    jwks = await jwksServer();
    jwks.set({ keys: [await jwk(rsa.publicKey, 'k1', 'RS256'), await jwk(p256[0].publicKey, 'k2', 'ES256')] }, { 'cache-control': 'max-age=600' });
    for (const k of KINDS) {
      mk(`${k.name}/plain`, [{ type: k.type, key: k.key }]);
      mk(`${k.name}/strict`, [{ type: k.type, key: k.key, audience: ['app', 'other-app'], issuer: 'issuer', allowed_skew: 60 }]);
      const sgn = (payload: unknown, header?: Record<string, unknown>) => sign(k.alg, k.sign, payload, header);
      for (const d of defects(k, sgn)) cases.push({ name: `${k.name}: ${d.label}`, config: `${k.name}/${d.config}`, headers: d.headers, expect: d.expect });
    }
    // A JWK set: the same defects, keys picked by kid.
    mk('jwks/plain', [{ jwk_url: jwks.url }]);
    mk('jwks/strict', [{ jwk_url: jwks.url, audience: 'app', issuer: 'issuer', allowed_skew: 60 }]);
    const rsKind = KINDS.find((k) => k.name === 'RS256')!;
    const jwkSign = (payload: unknown, header?: Record<string, unknown>) => sign('RS256', rsa.privateKey, payload, { kid: 'k1', ...header });
    for (const d of defects(rsKind, jwkSign)) {
      if (d.label.startsWith('signed with another key')) continue;
      cases.push({ name: `jwks: ${d.label}`, config: `jwks/${d.config}`, headers: d.headers, expect: d.expect });
    }
    const jwksExtra: [string, () => Promise<Record<string, string>>, Verdict][] = [
      ['ES256 key of the set by kid', async () => bearer(await sign('ES256', p256[0].privateKey, claims(), { kid: 'k2' })), { role: 'user' }],
      ['unknown kid', async () => bearer(await sign('RS256', rsa.privateKey, claims(), { kid: 'nope' })), jwtErr('JWSError NoUsableKeys')],
      ['kid of an RS key with ES256', async () => bearer(await sign('ES256', p256[0].privateKey, claims(), { kid: 'k1' })), jwtErr('JWSError NoUsableKeys')],
      ['another key under a known kid', async () => bearer(await sign('RS256', rsa2.privateKey, claims(), { kid: 'k1' })), jwtErr('JWSError JWSInvalidSignature')],
      ['HS256 with the JWK set text as secret', async () => bearer(await sign('HS256', new TextEncoder().encode(JSON.stringify(await jwk(rsa.publicKey, 'k1', 'RS256'))), claims(), { kid: 'k1' })), jwtErr('JWSError NoUsableKeys')],
    ];
    for (const [label, headers, v] of jwksExtra) cases.push({ name: `jwks: ${label}`, config: 'jwks/plain', headers, expect: v });

    // Claims layouts, each with an HS256 key.
    const key = 'l'.repeat(40);
    const hs = new TextEncoder().encode(key);
    const hsTok = (payload: unknown) => async () => bearer(await sign('HS256', hs, payload));
    mk('path', [{ type: 'HS256', key, claims_namespace_path: '$.app.session' }]);
    mk('stringified', [{ type: 'HS256', key, claims_format: 'stringified_json' }]);
    mk('custom-ns', [{ type: 'HS256', key, claims_namespace: 'https://svc.io/jwt/claims' }]);
    mk('map', [{
      type: 'HS256', key,
      claims_map: {
        'x-svc-allowed-roles': { path: '$.roles' },
        'x-svc-default-role': { path: '$.roles[0]' },
        'x-hasura-user-id': { path: '$.sub' },
        'x-svc-org': { path: "$['https://example.com/org']", default: 'none' },
        'x-svc-tier': 'gold',
      },
    }]);
    mk('map-defaults', [{ type: 'HS256', key, claims_map: { 'x-svc-allowed-roles': { path: '$.r', default: ['anon'] }, 'x-svc-default-role': { path: '$.d', default: 'anon' } } }]);
    mk('cookie', [{ type: 'HS256', key, header: { type: 'Cookie', name: 'session' } }]);
    mk('unauth', [{ type: 'HS256', key }], { unauthorizedRole: 'anonymous' });
    mk('two', [{ type: 'HS256', key, issuer: 'a' }, { type: 'RS256', key: rsKind.key, issuer: 'b' }]);
    const ok = (role = 'user') => ({ role });
    const inner = { 'x-svc-allowed-roles': ['user'], 'x-svc-default-role': 'user', 'x-svc-user-id': '42' };
    const layout: [string, string, () => Promise<Record<string, string>>, Verdict][] = [
      ['path', 'claims at the path', hsTok({ exp: now() + 60, app: { session: inner } }), { role: 'user', vars: { 'x-svc-user-id': '42', 'x-svc-role': 'user' } }],
      ['path', 'nothing at the path', hsTok({ exp: now() + 60, app: {} }), { code: 'jwt-invalid-claims', message: "claims not found at claims_namespace_path: '$.app.session'" }],
      ['path', 'the path runs into a string', hsTok({ exp: now() + 60, app: 'x' }), { code: 'jwt-invalid-claims', message: "claims not found at claims_namespace_path: '$.app.session'" }],
      ['path', 'the default namespace is not read', hsTok(claims()), { code: 'jwt-invalid-claims', message: "claims not found at claims_namespace_path: '$.app.session'" }],
      ['stringified', 'stringified claims', hsTok({ exp: now() + 60, [NS]: JSON.stringify(inner) }), { role: 'user', vars: { 'x-svc-user-id': '42', 'x-svc-role': 'user' } }],
      ['stringified', 'stringified claims that are not JSON', hsTok({ exp: now() + 60, [NS]: '{x-svc-allowed-roles: [user]' }), { code: 'jwt-invalid-claims', message: `expecting stringified json at: 'claims_namespace ${NS}'` }],
      ['stringified', 'stringified claims that are a JSON list', hsTok({ exp: now() + 60, [NS]: '["user"]' }), { code: 'jwt-invalid-claims', message: `expecting a json object (stringified) at: 'claims_namespace ${NS}'` }],
      ['stringified', 'stringified claims that are empty', hsTok({ exp: now() + 60, [NS]: '' }), { code: 'jwt-invalid-claims', message: `expecting stringified json at: 'claims_namespace ${NS}'` }],
      ['stringified', 'an object where a string is expected', hsTok(claims()), { code: 'jwt-invalid-claims', message: 'expecting a string when claims_format is stringified_json' }],
      ['custom-ns', 'claims in the configured namespace', hsTok(claims({}, 'https://svc.io/jwt/claims')), ok()],
      ['custom-ns', "claims in Hasura's namespace", hsTok(claims()), { code: 'jwt-invalid-claims', message: "claims key: 'https://svc.io/jwt/claims' not found" }],
      ['map', 'claims from paths', hsTok({ exp: now() + 60, sub: 'u9', roles: ['editor', 'user'], 'https://example.com/org': 'acme' }), { role: 'editor', vars: { 'x-svc-user-id': 'u9', 'x-svc-org': 'acme', 'x-svc-tier': 'gold', 'x-svc-role': 'editor' } }],
      ['map', 'a path default', hsTok({ exp: now() + 60, sub: 'u9', roles: ['user'] }), { role: 'user', vars: { 'x-svc-user-id': 'u9', 'x-svc-org': 'none', 'x-svc-tier': 'gold', 'x-svc-role': 'user' } }],
      ['map', 'a required claim missing', hsTok({ exp: now() + 60, roles: ['user'] }), { code: 'jwt-invalid-claims', message: 'JWT claim from claims_map, x-svc-user-id not found' }],
      ['map', 'roles missing', hsTok({ exp: now() + 60, sub: 'u' }), { code: 'jwt-missing-role-claims', message: 'JWT claim does not contain x-svc-allowed-roles' }],
      ['map', 'roles not a list', hsTok({ exp: now() + 60, sub: 'u', roles: 'user' }), { code: 'jwt-invalid-claims', message: /^invalid x-svc-allowed-roles/ }],
      ['map', 'the namespace is not read', hsTok({ ...claims(), sub: 'u', roles: ['user'] }), { role: 'user', vars: { 'x-svc-user-id': 'u', 'x-svc-org': 'none', 'x-svc-tier': 'gold', 'x-svc-role': 'user' } }],
      ['map-defaults', 'defaults for both roles', hsTok({ exp: now() + 60 }), { role: 'anon' }],
      ['cookie', 'token in the named cookie', async () => ({ cookie: `a=b; session=${await sign('HS256', hs, claims())}; c=d` }), ok()],
      ['cookie', 'cookie header without the name', async () => ({ cookie: 'a=b' }), { code: 'invalid-headers', message: 'Could not find session in Cookie header' }],
      ['cookie', 'the Authorization header is not read', async () => bearer(await sign('HS256', hs, claims())), { code: 'invalid-headers', message: 'Missing Cookie header in JWT authentication mode' }],
      ['cookie', 'an expired token in the cookie', async () => ({ cookie: `session=${await sign('HS256', hs, { ...claims(), exp: 5 })}` }), jwtErr('JWTExpired')],
      ['plain-none', 'no token, no unauthorized role', async () => ({}), { code: 'invalid-headers', message: 'Missing Authorization header in JWT authentication mode' }],
      ['unauth', 'no token: the unauthorized role, variables from headers', async () => ({ 'x-svc-user-id': '5' }), { role: 'anonymous', vars: { 'x-svc-user-id': '5', 'x-svc-role': 'anonymous' } }],
      ['unauth', 'a bad token is not the unauthorized role', async () => bearer('a.b.c'), { code: 'invalid-jwt', message: /^Could not verify JWT: JWSError/ }],
      ['unauth', 'an expired token is not the unauthorized role', async () => bearer(await sign('HS256', hs, { ...claims(), exp: 5 })), jwtErr('JWTExpired')],
      ['unauth', 'the admin secret', async () => ({ 'x-svc-admin-secret': SECRET }), { role: 'admin', admin: true }],
      ['two', 'first configuration', hsTok({ ...claims(), iss: 'a' }), ok()],
      ['two', 'second configuration', async () => bearer(await sign('RS256', rsa.privateKey, { ...claims(), iss: 'b' })), ok()],
      ['two', 'issuer of one, key of the other', async () => bearer(await sign('RS256', rsa.privateKey, { ...claims(), iss: 'a' })), jwtErr('JWSError NoUsableKeys')],
      ['two', 'HS256 with the RS public key as secret', async () => bearer(await sign('HS256', new TextEncoder().encode(rsKind.key), { ...claims(), iss: 'b' })), jwtErr('JWSError NoUsableKeys')],
    ];
    mk('plain-none', [{ type: 'HS256', key }]);
    for (const [config, label, headers, v] of layout) cases.push({ name: `${config}: ${label}`, config, headers, expect: v });
  });

  afterAll(async () => {
    await jwks?.close();
  });

  it('has at least 200 crafted tokens, and every one gets its expected verdict', async () => {
    expect(cases.length).toBeGreaterThanOrEqual(200);
    const wrong: string[] = [];
    for (const c of cases) {
      const got = await runCase(auths.get(c.config)!, await c.headers());
      if (!matches(got, c.expect)) wrong.push(`${c.name}: expected ${JSON.stringify(c.expect, (_, v) => (v instanceof RegExp ? String(v) : v))}, got ${JSON.stringify(got)}`);
    }
    console.log(`JWT security table: ${cases.length - wrong.length}/${cases.length} tokens got the expected verdict`);
    expect(wrong).toEqual([]);
  }, 60_000);

  it('no message or log line holds a token, key or secret', async () => {
    const token = await sign('HS256', new TextEncoder().encode('k'.repeat(29) + '256'), { ...claims(), exp: 5 });
    const auth = auths.get('HS256/plain')!;
    const r = await runCase(auth, bearer(token));
    const text = JSON.stringify(r) + JSON.stringify(logs);
    for (const part of token.split('.')) expect(text).not.toContain(part);
    for (const k of KINDS) expect(text).not.toContain(k.key.split('\n')[1] ?? k.key);
    expect(text).not.toContain(SECRET);
  });
});

describe('JWK set from a URL', () => {
  let jwks: JwksServer;
  beforeAll(async () => {
    jwks = await jwksServer();
  });
  afterAll(async () => {
    await jwks.close();
  });
  const tokenFor = (key: KeyObject, kid: string) => sign('RS256', key, claims(), { kid });
  const verdict = async (auth: Authenticator, key: KeyObject, kid: string) => runCase(auth, bearer(await tokenFor(key, kid)));

  it('keys rotated while running: refreshed when max-age runs out; a failing refresh keeps the last good keys and logs without key material', async () => {
    const logs: Record<string, any>[] = [];
    jwks.set({ keys: [await jwk(rsa.publicKey, 'a', 'RS256')] }, { 'cache-control': 'max-age=1' });
    const auth = new Authenticator({ adminSecret: SECRET }, jwtMode([parseJwtSettings({ jwk_url: jwks.url })], captureLogger(logs), { jwk: { cooldownMs: 60_000, retryMs: 500 } }));
    expect(await verdict(auth, rsa.privateKey, 'a')).toMatchObject({ role: 'user' });
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject(jwtErr('JWSError NoUsableKeys'));
    // Rotation: b replaces a.
    jwks.set({ keys: [await jwk(rsa2.publicKey, 'b', 'RS256')] }, { 'cache-control': 'max-age=1' });
    await new Promise((r) => setTimeout(r, 1100));
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject({ role: 'user' });
    expect(await verdict(auth, rsa.privateKey, 'a')).toMatchObject(jwtErr('JWSError NoUsableKeys'));
    // The provider fails: b keeps working, the failure is logged.
    jwks.set('<html>down</html>', {}, 503);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject({ role: 'user' });
    const failed = logs.filter((l) => l.type === 'jwk-refresh' && l.level === 'error');
    expect(failed.length).toBe(1);
    expect(failed[0].detail).toMatchObject({ message: 'JWK refresh failed; keeping the last good keys', reason: 'Non-2xx response on fetching JWK (status 503)' });
    // Not JSON, then not a JWK set: still the last good keys.
    await new Promise((r) => setTimeout(r, 600));
    jwks.set('not json', { 'cache-control': 'max-age=1' });
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject({ role: 'user' });
    const b = (await jwk(rsa2.publicKey, 'b', 'RS256')) as { n: string };
    expect(JSON.stringify(logs)).not.toContain(b.n.slice(0, 40));
    expect(logs.filter((l) => l.type === 'jwk-refresh' && l.level === 'error').map((l) => l.detail.reason)).toContain('Error parsing JWK: the answer is not JSON');
    // Back up with a: a works again after the retry delay.
    await new Promise((r) => setTimeout(r, 600));
    jwks.set({ keys: [await jwk(rsa.publicKey, 'a', 'RS256')] }, { expires: new Date(Date.now() + 60_000).toUTCString() });
    expect(await verdict(auth, rsa.privateKey, 'a')).toMatchObject({ role: 'user' });
  }, 15_000);

  it('an unknown kid fetches the set again (keys rotated before max-age ran out), at most once per cooldown', async () => {
    jwks.set({ keys: [await jwk(rsa.publicKey, 'a', 'RS256')] }, { 'cache-control': 'max-age=600' });
    const auth = new Authenticator({ adminSecret: SECRET }, jwtMode([parseJwtSettings({ jwk_url: jwks.url })], captureLogger([]), { jwk: { cooldownMs: 300 } }));
    expect(await verdict(auth, rsa.privateKey, 'a')).toMatchObject({ role: 'user' });
    jwks.set({ keys: [await jwk(rsa.publicKey, 'a', 'RS256'), await jwk(rsa2.publicKey, 'b', 'RS256')] }, { 'cache-control': 'max-age=600' });
    const hits = jwks.hits;
    // Within the cooldown: no fetch.
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject(jwtErr('JWSError NoUsableKeys'));
    expect(jwks.hits).toBe(hits);
    await new Promise((r) => setTimeout(r, 350));
    expect(await verdict(auth, rsa2.privateKey, 'b')).toMatchObject({ role: 'user' });
    expect(jwks.hits).toBe(hits + 1);
    // A flood of unknown kids costs at most one fetch per cooldown.
    await Promise.all(Array.from({ length: 20 }, () => verdict(auth, rsa2.privateKey, 'zzz')));
    expect(jwks.hits).toBeLessThanOrEqual(hits + 2);
  });

  it('a JWK endpoint that never answers: refused after the timeout, no keys, logged', async () => {
    const logs: Record<string, any>[] = [];
    jwks.hang(true);
    try {
      const auth = new Authenticator({ adminSecret: SECRET }, jwtMode([parseJwtSettings({ jwk_url: jwks.url })], captureLogger(logs), { jwk: { timeoutMs: 200 } }));
      const t0 = Date.now();
      expect(await verdict(auth, rsa.privateKey, 'a')).toMatchObject(jwtErr('JWSError NoUsableKeys'));
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(logs.find((l) => l.type === 'jwk-refresh' && l.level === 'error')?.detail).toMatchObject({ reason: 'no answer within 200 ms' });
    } finally {
      jwks.hang(false);
    }
  });
});

describe('JWT mode through the server', () => {
  const key = 's'.repeat(48);
  const hs = new TextEncoder().encode(key);
  let s: TestServer;
  beforeAll(async () => {
    const cfg = loadConfig(['--admin-secret', SECRET, '--jwt-secret', JSON.stringify({ type: 'HS256', key })], {}, builtinPlugins);
    s = await startServer({ config: { adminSecret: cfg.adminSecret, jwtSecret: cfg.jwtSecret } });
  });
  afterAll(async () => {
    await s?.stop();
  });
  const gql = (headers: Record<string, string>) => s.request('POST', '/v1/graphql', { query: '{ __typename }' }, headers);

  it('GraphQL: a valid token runs as its role; refusals are 200 in the GraphQL shape, as Hasura answers on /v1/graphql', async () => {
    expect(await gql(bearer(await sign('HS256', hs, claims())))).toMatchObject({ status: 200, body: { data: { __typename: 'query_root' } } });
    expect(await gql(bearer(await sign('HS256', hs, { ...claims(), exp: 5 })))).toMatchObject({
      status: 200,
      body: { errors: [{ message: 'Could not verify JWT: JWTExpired', extensions: { path: '$', code: 'invalid-jwt' } }] },
    });
    expect(await gql({})).toMatchObject({ status: 200, body: { errors: [{ message: 'Missing Authorization header in JWT authentication mode', extensions: { code: 'invalid-headers' } }] } });
    expect(await gql({ 'x-svc-admin-secret': 'wrong' })).toMatchObject({ status: 200, body: { errors: [{ extensions: { code: 'access-denied' } }] } });
    expect(await gql({ ...bearer(await sign('HS256', hs, claims())), 'x-svc-role': 'admin' })).toMatchObject({
      status: 200,
      body: { errors: [{ message: 'Your requested role is not in allowed roles', extensions: { code: 'access-denied' } }] },
    });
    // A malformed body with a bad token: the authentication error comes first.
    const r = await s.request('POST', '/v1/graphql', '{not json', bearer('x.y.z'));
    expect(r).toMatchObject({ status: 200, body: { errors: [{ extensions: { code: 'invalid-jwt' } }] } });
  });

  it('metadata and config: 400 for token errors, 401 for a wrong secret; the admin secret still works and picks a role; an admin token is admin', async () => {
    const body = { type: 'export_metadata', args: {} };
    expect(await s.metadata(body, bearer(await sign('HS256', hs, { ...claims(), exp: 5 })))).toMatchObject({ status: 400, body: { path: '$', code: 'invalid-jwt', error: 'Could not verify JWT: JWTExpired' } });
    expect(await s.metadata(body, { authorization: 'Token x' })).toMatchObject({ status: 400, body: { code: 'invalid-headers', error: 'Malformed Authorization header' } });
    expect(await s.metadata(body, bearer(await sign('HS256', hs, claims())))).toMatchObject({ status: 400, body: { code: 'access-denied', error: 'restricted access : admin only' } });
    expect(await s.metadata(body, { 'x-svc-admin-secret': 'bad' })).toMatchObject({ status: 401, body: { code: 'access-denied' } });
    expect((await s.metadata(body, { 'x-svc-admin-secret': SECRET })).status).toBe(200);
    expect((await s.metadata(body, { 'x-svc-admin-secret': SECRET, 'x-svc-role': 'user' })).status).toBe(400);
    const admin = await sign('HS256', hs, claims({ 'x-svc-allowed-roles': ['admin'], 'x-svc-default-role': 'admin' }));
    expect((await s.metadata(body, bearer(admin))).status).toBe(200);
    expect(await s.metadata(body, bearer(await sign('HS256', hs, claims({ 'x-svc-allowed-roles': 'user' }))))).toMatchObject({ status: 400, body: { code: 'jwt-invalid-claims' } });
  });

  it('pg_dump takes the same sessions: an admin token may use it, a user token may not', async () => {
    const admin = await sign('HS256', hs, claims({ 'x-svc-allowed-roles': ['admin'], 'x-svc-default-role': 'admin' }));
    const r = await s.request('POST', '/v1alpha1/pg_dump', { opts: ['-s'] }, bearer(admin));
    // A dump, or (where the machine's pg_dump is older than the server) the version error: not a refusal.
    expect(r.body?.code).not.toBe('access-denied');
    expect(r.status === 200 || r.body.code === 'not-supported').toBe(true);
    const user = await s.request('POST', '/v1alpha1/pg_dump', { opts: ['-s'] }, bearer(await sign('HS256', hs, claims())));
    expect(user).toMatchObject({ status: 400, body: { code: 'access-denied' } });
  });

  it('the config API reports JWT mode as Hasura does', async () => {
    const r = await s.request('GET', '/v1alpha1/config', undefined, { 'x-svc-admin-secret': SECRET });
    expect(r.body).toMatchObject({ is_admin_secret_set: true, is_jwt_set: true, is_auth_hook_set: false, jwt: [{ claims_namespace: NS, claims_format: 'json' }] });
    expect(r.text).not.toContain(key);
  });

  it("huge headers: Node's header limit answers 431 before any parsing; a huge token inside the limit of an app is refused", async () => {
    const server = serve({ fetch: s.app.fetch, port: 0, hostname: '127.0.0.1' });
    try {
      await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
      const port = (server.address() as AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/v1/graphql`, { method: 'POST', body: '{"query":"{ __typename }"}', headers: { authorization: `Bearer ${'a'.repeat(20_000)}.b.c` } });
      expect(res.status).toBe(431);
      await res.body?.cancel();
      const ok = await fetch(`http://127.0.0.1:${port}/v1/graphql`, { method: 'POST', body: '{"query":"{ __typename }"}', headers: bearer(await sign('HS256', hs, claims())) });
      expect(await ok.json()).toEqual({ data: { __typename: 'query_root' } });
    } finally {
      (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      await new Promise((r) => server.close(r));
    }
    expect(await gql(bearer(`${'a'.repeat(MAX_TOKEN_LENGTH)}.b.c`))).toMatchObject({ status: 200, body: { errors: [{ extensions: { code: 'invalid-jwt' } }] } });
  });

  it('no log line holds a token or the key', async () => {
    const token = await sign('HS256', hs, { ...claims(), exp: 5 });
    await gql(bearer(token));
    await s.metadata({ type: 'export_metadata', args: {} }, bearer(token));
    const text = JSON.stringify(s.logs);
    for (const part of token.split('.')) expect(text).not.toContain(part);
    expect(text).not.toContain(key);
    expect(text).not.toContain(SECRET);
  });
});

describe('JWT configuration at boot', () => {
  const bad: [string, Record<string, string>][] = [
    ['Key size too small; should be atleast 256 bits', { SVC_GRAPHQL_JWT_SECRET: '{"type":"HS256","key":"short-secret-key"}' }],
    ['the RS256 key is not a PEM public key', { SVC_GRAPHQL_JWT_SECRET: '{"type":"RS256","key":"-----BEGIN PUBLIC KEY-----\\nnope\\n-----END PUBLIC KEY-----"}' }],
    ['the key does not fit type ES256', { SVC_GRAPHQL_JWT_SECRET: JSON.stringify({ type: 'ES256', key: KINDS[3]!.key }) }],
    ['Key type: HS257 is not supported', { SVC_GRAPHQL_JWT_SECRET: '{"type":"HS257","key":"x"}' }],
    ['key and jwk_url both cannot be empty', { SVC_GRAPHQL_JWT_SECRET: '{"type":"HS256"}' }],
    ['claims_namespace and claims_namespace_path both cannot be set', { SVC_GRAPHQL_JWT_SECRET: `{"type":"HS256","key":"${'k'.repeat(32)}","claims_namespace":"a","claims_namespace_path":"$.a"}` }],
    ['claims_format', { SVC_GRAPHQL_JWT_SECRET: `{"type":"HS256","key":"${'k'.repeat(32)}","claims_format":"xml"}` }],
    ['x-svc-allowed-roles is expected but not found', { SVC_GRAPHQL_JWT_SECRET: `{"type":"HS256","key":"${'k'.repeat(32)}","claims_map":{"x-svc-default-role":"u"}}` }],
    ["expected 'type' is 'Authorization' or 'Cookie'", { SVC_GRAPHQL_JWT_SECRET: `{"type":"HS256","key":"${'k'.repeat(32)}","header":{"type":"Query"}}` }],
    ['unknown key "claims_namespace_pth"', { SVC_GRAPHQL_JWT_SECRET: `{"type":"HS256","key":"${'k'.repeat(32)}","claims_namespace_pth":"$"}` }],
    ['expected a JSON list of JWT configurations', { SVC_GRAPHQL_JWT_SECRETS: '{"type":"HS256"}' }],
    ['expected a JSON object', { SVC_GRAPHQL_JWT_SECRET: 'not json' }],
  ];
  it.each(bad)('fails the boot: %s (and never repeats the key)', (message, env) => {
    let err: Error | undefined;
    try {
      loadConfig([], { SVC_GRAPHQL_ADMIN_SECRET: SECRET, ...env }, builtinPlugins);
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).toContain(message);
    expect(err?.message).not.toContain('short-secret-key');
    expect(err?.message).not.toContain('k'.repeat(32));
    expect(err?.message).not.toContain('nope');
  });

  it('JWT mode needs the admin secret and excludes webhook mode; SVC_GRAPHQL_JWT_SECRETS takes a list', async () => {
    const one = `{"type":"HS256","key":"${'k'.repeat(32)}"}`;
    expect(() => loadConfig([], { SVC_GRAPHQL_JWT_SECRET: one }, builtinPlugins)).toThrow('requires --admin-secret');
    // Both modes: refused when the kernel sets the plugins up (each plugin alone is fine).
    const both = loadConfig([], { SVC_GRAPHQL_ADMIN_SECRET: 'x', SVC_GRAPHQL_JWT_SECRET: one, SVC_GRAPHQL_AUTH_HOOK: 'http://h/' }, builtinPlugins);
    await expect(startServer({ config: both })).rejects.toThrow('both JWT and webhook mode cannot be enabled at the same time');
    const c = loadConfig([], { SVC_GRAPHQL_ADMIN_SECRET: 'x', SVC_GRAPHQL_JWT_SECRETS: `[${one},{"jwk_url":"https://example.com/jwks"}]` }, builtinPlugins);
    expect(c.jwtSecrets?.map((j) => j.source.kind)).toEqual(['key', 'url']);
  });
});
