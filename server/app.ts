/**
 * HTTP routes (hono): the metadata and legacy APIs, the config API, health, and the routes plugins
 * register (GraphQL's among them: plugins/graphql). Every request gets one `http-log` line.
 */
import { Hono, type Context } from 'hono';
import type { Kernel } from '../core/kernel/kernel.js';
import type { Endpoint, Session } from '../core/plugin.js';
import { encodeResponse, hasJsonText } from '../core/plugin.js';
import type { ApiName } from './options.js';
import { jwtConfigs } from '../plugins/auth-jwt/index.js';
import { SvcError } from '../core/errors.js';
import { errorDetail } from '../core/log.js';
import { readJsonBody } from '../lib/http/body.js';

export const VERSION = '0.1.0';

type Env = { Variables: { operation?: string } };

function errorResponse(c: Context, e: unknown, kernel: Kernel): Response {
  if (e instanceof SvcError) return c.json(e.toBody(), e.status as 400);
  kernel.log.error('unexpected-error', { path: c.req.path, error: errorDetail(e) });
  const body: Record<string, unknown> = { error: 'internal error: the request could not be completed; see the server log' };
  // Dev mode shows the cause to admins (never to other roles).
  if (kernel.config.devMode && isAdmin(c, kernel)) body.internal = errorDetail(e);
  return c.json(body, 500);
}

function isAdmin(c: Context, kernel: Kernel): boolean {
  try {
    return kernel.session(c.req.raw.headers).isAdmin;
  } catch {
    return false;
  }
}


/** `inFlight`: requests being answered, and whether the server is draining (Note [Draining] in
 * server/main.ts: /healthz then answers 503). */
export function createApp(kernel: Kernel, opts: { inFlight?: { n: number; draining?: boolean } } = {}): Hono<Env> {
  const app = new Hono<Env>();
  const cfg = kernel.config;
  const enabled = (api: ApiName | string) => (cfg.enabledApis as string[]).includes(api);
  const session = (c: Context): Promise<Session> => kernel.authenticate(c.req.raw.headers);
  const readJson = (c: Context) => readJsonBody(c, cfg);
  const notFound = (c: Context) => c.json({ path: '$', error: 'resource does not exist', code: 'not-found' }, 404);

  app.use('*', async (c, next) => {
    const start = performance.now();
    if (opts.inFlight) opts.inFlight.n++;
    try {
      await next();
    } finally {
      if (opts.inFlight) opts.inFlight.n--;
      const durationMs = Math.round((performance.now() - start) * 1000) / 1000;
      const operation = c.get('operation') ?? null;
      kernel.log.info('http-log', {
        operation: { type: operation },
        http_info: {
          status: c.res.status,
          method: c.req.method,
          url: c.req.path,
          duration_ms: durationMs,
        },
      });
      if (kernel.events.listenerCount('request') > 0) kernel.events.emit('request', { route: c.req.routePath, method: c.req.method, status: c.res.status, operation, durationMs });
    }
  });

  app.get('/healthz', (c) => {
    if (opts.inFlight?.draining) return c.text('ERROR: shutting down', 503);
    let inconsistent = false;
    try {
      inconsistent = kernel.state().build.inconsistencies.length > 0;
    } catch {
      return c.text('ERROR', 500);
    }
    if (!inconsistent) return c.text('OK', 200);
    if (c.req.query('strict') === 'true') return c.text('ERROR: inconsistent objects in schema', 500);
    return c.text('WARN: inconsistent objects in schema', 200);
  });

  app.get('/v1/version', (c) => c.json({ version: VERSION }));

  const metadataRoute = (endpoint: Endpoint, check?: (body: unknown) => void) => async (c: Context<Env>) => {
    if (!enabled('metadata')) return notFound(c);
    try {
      const s = await session(c);
      const body = await readJson(c);
      check?.(body);
      if (body && typeof body === 'object' && typeof (body as { type?: unknown }).type === 'string') {
        c.set('operation', (body as { type: string }).type);
      }
      const result = await kernel.execute(endpoint, body, s);
      // Rows PostgreSQL built as JSON text go out as they are (JsonText in core/plugin.ts).
      if (hasJsonText(result)) return c.body(encodeResponse(result), 200, { 'content-type': 'application/json' });
      return c.json(result as object, 200);
    } catch (e) {
      return errorResponse(c, e, kernel);
    }
  };
  app.post('/v1/metadata', metadataRoute('metadata'));
  app.post('/v1/query', metadataRoute('query'));
  // Hasura v2's query API (/v2/query): run_sql and the data operations, on the legacy endpoint's
  // operations. The Hasura CLI applies its migrations through it.
  app.post('/v2/query', metadataRoute('query', onlyV2QueryTypes));

  app.get('/v1alpha1/config', async (c) => {
    if (!enabled('config')) return notFound(c);
    try {
      const s = await session(c);
      if (!s.isAdmin) throw new SvcError('access-denied', 'restricted access : admin only', { path: '$' });
      const jwt = kernel.plugins.includes('auth-jwt') ? jwtConfigs(cfg) : [];
      return c.json({
        version: VERSION,
        is_function_permissions_inferred: cfg.inferFunctionPermissions,
        is_remote_schema_permissions_enabled: kernel.plugins.includes('remote-schemas') && cfg.enableRemoteSchemaPermissions,
        is_admin_secret_set: cfg.adminSecret !== undefined,
        // A disabled mode's options are ignored (docs/configuration.md "Plugins").
        is_auth_hook_set: kernel.plugins.includes('auth-webhook') && cfg.authHook !== undefined,
        is_jwt_set: jwt.length > 0,
        // As Hasura reports them: the claims' place and format of each configuration, no key.
        jwt: jwt.map((j) => j.info),
        is_allow_list_enabled: cfg.enableAllowlist,
        live_queries: {
          batch_size: cfg.liveQueriesBatchSize,
          refetch_delay: Math.round(cfg.liveQueriesRefetchInterval / 1000),
        },
        experimental_features: [],
        plugins: { enabled: kernel.plugins, disabled: kernel.disabledPlugins },
      });
    } catch (e) {
      return errorResponse(c, e, kernel);
    }
  });

  for (const r of kernel.routes) {
    const handler = async (c: Context) => {
      if (r.api && !enabled(r.api)) return notFound(c);
      try {
        return await r.handler(c);
      } catch (e) {
        return errorResponse(c, e, kernel);
      }
    };
    if (r.method === 'ALL') app.all(r.path, handler);
    else app.on(r.method, r.path, handler);
  }

  app.notFound(notFound);
  app.onError((e, c) => errorResponse(c, e, kernel));
  return app;
}

/** The operations of Hasura v2's /v2/query (its RQLQuery): the rest of the legacy endpoint's are
 * refused there, as Hasura refuses them. */
const V2_QUERY_TYPES = new Set(['run_sql', 'insert', 'select', 'update', 'delete', 'count', 'bulk']);

function onlyV2QueryTypes(body: unknown): void {
  const check = (b: unknown, path: string): void => {
    const type = (b as { type?: unknown } | null)?.type;
    if (typeof type !== 'string') return; // the envelope's own check says what is wrong
    if (!V2_QUERY_TYPES.has(type)) {
      throw new SvcError('parse-failed', `unknown operation type "${type}" on /v2/query: expected one of ${[...V2_QUERY_TYPES].join(', ')}`, { path: `${path}.type` });
    }
    const args = (b as { args?: unknown }).args;
    if (type === 'bulk' && Array.isArray(args)) args.forEach((x, i) => check(x, `${path}.args[${i}]`));
  };
  check(body, '$');
}
