/**
 * JWT mode (Note [Authentication modes] in core/types.ts; Hasura v2's JWT mode): a request's
 * session comes from a JSON Web Token it carries, checked against the configured keys or JWK
 * sets (./jwt.ts, ./jwks.ts), its claims read as the configuration says (./jwt-config.ts).
 * Options: `--jwt-secret` (one configuration) and `--jwt-secrets` (a list); either needs the
 * admin secret, and excludes the webhook mode (the kernel refuses two modes at boot).
 */
import * as v from '../../core/valibot.js';
import { definePlugin, type AuthMode } from '../../core/plugin.js';
import type { OptionValues, ServerConfig } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import { parseJwtSettings, type JwtSettings } from './jwt-config.js';
import { JwtAuth } from './jwt.js';
import type { JwkSourceOptions } from './jwks.js';

export { parseJwtSettings, type JwtSettings } from './jwt-config.js';
export { JwtAuth, MAX_TOKEN_LENGTH } from './jwt.js';
export type { JwkSourceOptions } from './jwks.js';

/** A JWT configuration, checked and its key imported when the options are read. */
const jwtSecret = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return parseJwtSettings(dataset.value);
    } catch (e) {
      addIssue({ message: (e as Error).message });
      return NEVER;
    }
  }),
);
const jwtSecrets = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    let list: unknown;
    try {
      list = JSON.parse(dataset.value);
    } catch {
      list = undefined;
    }
    if (!Array.isArray(list)) {
      addIssue({ message: 'expected a JSON list of JWT configurations' });
      return NEVER;
    }
    try {
      return list.map((x, i) => {
        try {
          return parseJwtSettings(x);
        } catch (e) {
          throw new Error(`[${i}]: ${(e as Error).message}`);
        }
      });
    } catch (e) {
      addIssue({ message: (e as Error).message });
      return NEVER;
    }
  }),
);

export const JWT_OPTIONS = {
  jwtSecret: { flag: 'jwt-secret', env: 'SVC_GRAPHQL_JWT_SECRET', schema: jwtSecret, default: undefined, secret: true },
  jwtSecrets: { flag: 'jwt-secrets', env: 'SVC_GRAPHQL_JWT_SECRETS', schema: jwtSecrets, default: undefined, secret: true },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof JWT_OPTIONS> {}
}

/** The JWT configurations of a server: SVC_GRAPHQL_JWT_SECRET first, then SVC_GRAPHQL_JWT_SECRETS. */
export function jwtConfigs(cfg: Pick<ServerConfig, 'jwtSecret' | 'jwtSecrets'>): JwtSettings[] {
  return [...(cfg.jwtSecret ? [cfg.jwtSecret] : []), ...(cfg.jwtSecrets ?? [])];
}

/** The mode for these configurations; its JWK sets are fetched when first needed. */
export function jwtMode(settings: JwtSettings[], log: Logger, opts: { jwk?: JwkSourceOptions } = {}): AuthMode & { readonly auth: JwtAuth } {
  let auth: JwtAuth | undefined;
  const get = () => (auth ??= new JwtAuth(settings, log, opts.jwk));
  return {
    name: 'JWT',
    get auth() {
      return get();
    },
    hasCredentials: (headers) => get().hasCredentials(headers),
    resolve: (headers) => get().resolve(headers, undefined, () => ({})),
  };
}

export default definePlugin({
  name: 'auth-jwt',
  options: JWT_OPTIONS,
  checkOptions(c) {
    if (jwtConfigs(c).length > 0 && c.adminSecret === undefined) {
      return '--jwt-secret (SVC_GRAPHQL_JWT_SECRET, SVC_GRAPHQL_JWT_SECRETS) requires --admin-secret (SVC_GRAPHQL_ADMIN_SECRET) to be set';
    }
    return undefined;
  },
  setup(k) {
    const settings = jwtConfigs(k.config);
    if (settings.length > 0) k.authMode(jwtMode(settings, k.log));
  },
});
