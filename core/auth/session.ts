/**
 * Session resolution: which role a request runs as, and its session variables.
 * Modes: admin secret (here), JWT and webhook (later: add a resolver to `AuthMode`).
 * Note [Admin secret comparison]: both sides are hashed to a fixed length and compared with
 * timingSafeEqual, so neither the content nor the length of the secret leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Session } from '../plugin.js';
import { SvcError } from '../errors.js';

export interface AuthConfig {
  adminSecret?: string;
  unauthorizedRole?: string;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function secretMatches(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
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

export function resolveSession(headers: Iterable<[string, string]>, cfg: AuthConfig): Session {
  const list = [...headers].map(([k, val]) => [k.toLowerCase(), val] as [string, string]);
  const get = (n: string) => list.find(([k]) => k === n)?.[1];
  const variables = sessionVariables(list);
  const requestedRole = get('x-svc-role');

  if (cfg.adminSecret === undefined) {
    const role = requestedRole ?? 'admin';
    return { role, variables: { ...variables, 'x-svc-role': role }, isAdmin: role === 'admin' };
  }
  const given = get('x-svc-admin-secret') ?? get('x-svc-access-key');
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
  return { role, variables: { ...variables, 'x-svc-role': role }, isAdmin: role === 'admin' };
}
