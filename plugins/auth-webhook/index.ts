/**
 * Webhook mode (Note [Authentication modes] in core/types.ts; Hasura v2's webhook mode): a
 * request's session comes from an authentication webhook the engine calls with the request's
 * headers (GET) or with them and the GraphQL request (POST), its answers cached as it says
 * (./webhook.ts). Options: `--auth-hook`, `--auth-hook-mode`, `--auth-hook-timeout`; the hook
 * needs the admin secret, and excludes the JWT mode (the kernel refuses two modes at boot).
 */
import * as v from '../../core/valibot.js';
import { definePlugin, type AuthMode } from '../../core/plugin.js';
import { optionSchemas, type OptionValues } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import { WebhookAuth, type WebhookOptions } from './webhook.js';

export { WebhookAuth, type WebhookOptions } from './webhook.js';

export const WEBHOOK_OPTIONS = {
  authHook: { flag: 'auth-hook', env: 'SVC_GRAPHQL_AUTH_HOOK', schema: optionSchemas.httpUrl, default: undefined },
  authHookMode: {
    flag: 'auth-hook-mode',
    env: 'SVC_GRAPHQL_AUTH_HOOK_MODE',
    schema: v.pipe(v.string(), v.trim(), v.toUpperCase(), v.picklist(['GET', 'POST'], 'expected GET or POST')),
    default: 'GET' as 'GET' | 'POST',
  },
  authHookTimeout: { flag: 'auth-hook-timeout', env: 'SVC_GRAPHQL_AUTH_HOOK_TIMEOUT', schema: optionSchemas.positiveInt, default: 10_000 },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof WEBHOOK_OPTIONS> {}
}

/** The mode of this hook: a request with Authorization or Cookie is the hook's to decide. */
export function webhookMode(opts: WebhookOptions, log: Logger): AuthMode & { readonly hook: WebhookAuth } {
  const auth = new WebhookAuth(opts, log);
  return {
    name: 'webhook',
    hook: auth,
    needsRequest: opts.mode === 'POST',
    hasCredentials: (headers) => headers.has('authorization') || headers.has('cookie'),
    resolve: (headers, request) => auth.resolve(headers, request),
  };
}

export default definePlugin({
  name: 'auth-webhook',
  options: WEBHOOK_OPTIONS,
  checkOptions(c) {
    if (c.authHook !== undefined && c.adminSecret === undefined) return '--auth-hook (SVC_GRAPHQL_AUTH_HOOK) requires --admin-secret (SVC_GRAPHQL_ADMIN_SECRET) to be set';
    return undefined;
  },
  setup(k) {
    const url = k.config.authHook;
    if (url !== undefined) k.authMode(webhookMode({ url, mode: k.config.authHookMode, timeoutMs: k.config.authHookTimeout }, k.log));
  },
});
