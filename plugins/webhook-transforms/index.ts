/**
 * Webhook transforms (Hasura v2's `request_transform` / `response_transform` with Kriti
 * templates): one implementation for every plugin that calls webhooks (actions, event triggers).
 * This plugin only adds the `test_webhook_transform` metadata operation; what others use is the
 * library exported below (plain functions: a plugin that uses them need not list this one in
 * `requires`, and works with it disabled).
 */
import { SvcError } from '../../core/errors.js';
import { definePlugin } from '../../core/plugin.js';
import * as v from '../../core/valibot.js';
import {
  applyRequestTransform,
  compileRequestTransform,
  RequestTransformSchema,
  ResponseTransformSchema,
  TransformError,
} from './transform.js';

export { compileTemplate, compileTextTemplate, KritiError, type KritiErrorCode, type Template } from './kriti.js';
export {
  applyRequestTransform,
  applyResponseTransform,
  compileRequestTransform,
  compileResponseTransform,
  METHODS,
  RequestTransformSchema,
  ResponseTransformSchema,
  TransformError,
  type BodyTransform,
  type CompiledRequestTransform,
  type CompiledResponseTransform,
  type RequestInput,
  type RequestTransformDef,
  type ResponseInput,
  type ResponseTransformDef,
  type TransformedRequest,
  type TransformErrorItem,
  type WebhookCall,
} from './transform.js';

/** test_webhook_transform's args (Hasura's TestWebhookTransform). */
const TestWebhookTransformArgs = v.object({
  webhook_url: v.union([v.string(), v.object({ from_env: v.string() })], 'expected a URL text or {from_env}'),
  body: v.unknown(),
  env: v.optional(v.nullable(v.record(v.string(), v.string()))),
  request_headers: v.optional(v.nullable(v.union([v.array(v.tuple([v.string(), v.string()])), v.record(v.string(), v.string())], 'expected [[name, value], ...] or {name: value}'))),
  session_variables: v.optional(v.nullable(v.record(v.string(), v.string()))),
  request_transform: RequestTransformSchema,
  response_transform: v.optional(v.nullable(ResponseTransformSchema)),
});

const missingEnv = (name: string) =>
  new SvcError(
    'not-found',
    `Missing Env Var: ${name}. For security reasons when testing request options real environment variable values are not available. Please enter a mock value for ${name} in the Sample Env Variables list.`,
    { status: 400, path: '$.args.webhook_url' },
  );

const validationFailed = (e: TransformError) => new SvcError('validation-failed', 'request transform validation failed', { internal: e.bundle, path: '$.args.request_transform' });

export default definePlugin({
  name: 'webhook-transforms',
  setup(k) {
    // Hasura's test_webhook_transform: the request a transform makes of a sample payload, without
    // sending it. The environment is the sample `env` of the args, never the server's (which
    // holds secrets an admin of the console should not read back this way).
    k.operation({
      type: 'test_webhook_transform',
      args: TestWebhookTransformArgs,
      mutates: false,
      run(a) {
        const env = a.env ?? {};
        let url: string;
        if (typeof a.webhook_url === 'string') {
          url = a.webhook_url.replace(/\{\{([^}]*)\}\}/g, (_, name: string) => {
            const val = env[name];
            if (val === undefined) throw missingEnv(name);
            return val;
          });
        } else {
          const val = env[a.webhook_url.from_env];
          if (val === undefined) throw new SvcError('not-found', 'Missing Env Var', { status: 400, path: '$.args.webhook_url' });
          url = val;
        }
        try {
          new URL(url);
        } catch {
          throw new SvcError('validation-failed', 'request transform validation failed', {
            internal: [{ error_code: 'Request Initialization Error', message: `Invalid URL: ${url}` }],
            path: '$.args.webhook_url',
          });
        }
        const headers: [string, string][] = a.request_headers == null ? [] : Array.isArray(a.request_headers) ? a.request_headers.map(([n, x]) => [n, x]) : Object.entries(a.request_headers);
        const sessionVariables = a.session_variables ? Object.fromEntries(Object.entries(a.session_variables).map(([n, x]) => [n.toLowerCase(), x])) : null;
        try {
          const t = compileRequestTransform(a.request_transform);
          const r = applyRequestTransform(t, { url, payload: a.body ?? null, sessionVariables, headers });
          return {
            response: {
              webhook_url: r.call.url,
              method: r.call.method,
              headers: r.call.headers.map(([n, x]) => [n.toLowerCase(), x]),
              body: r.bodyValue,
            },
          };
        } catch (e) {
          if (e instanceof TransformError) throw validationFailed(e);
          throw e;
        }
      },
    });
  },
});
