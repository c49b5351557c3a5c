/**
 * HTTP routes (hono): the metadata and legacy APIs, the config API, health, and the routes plugins
 * register (GraphQL's among them: plugins/graphql). Every request gets one `http-log` line.
 */
import { Hono, type Context } from 'hono';
import type { Kernel } from '../core/kernel/kernel.js';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Endpoint, HttpAnswer, RouteDef, Session } from '../core/plugin.js';
import { encodeResponse, hasJsonText } from '../core/plugin.js';
import type { ApiName } from './options.js';
import { jwtConfigs } from '../plugins/auth-jwt/index.js';
import { SvcError } from '../core/errors.js';
import { errorDetail } from '../core/log.js';
import { readJsonBody } from '../lib/http/body.js';
import { closeIfUnread, contextAnswer, contextExchange, nodeAnswer, nodeExchange, nodeIncoming, nodeOutgoing } from '../lib/http/node-request.js';

export const VERSION = '0.1.0';

type Env = { Variables: { operation?: string } };

/** The answer of a path no route takes, or of a disabled API's route. */
const NOT_FOUND = { path: '$', error: 'resource does not exist', code: 'not-found' };

function errorResponse(c: Context, e: unknown, kernel: Kernel): Response {
  const { status, body } = errorAnswer(e, kernel, c.req.path, () => c.req.raw.headers);
  return c.json(body, status as 400);
}

/** The answer of a request whose handler threw: an SvcError's own, else a 500 (logged). */
function errorAnswer(e: unknown, kernel: Kernel, path: string, headers: () => Headers): { status: number; body: Record<string, unknown> } {
  if (e instanceof SvcError) return { status: e.status, body: e.toBody() };
  kernel.log.error('unexpected-error', { path, error: errorDetail(e) });
  const body: Record<string, unknown> = { error: 'internal error: the request could not be completed; see the server log' };
  // Dev mode shows the cause to admins (never to other roles).
  if (kernel.config.devMode && isAdmin(headers, kernel)) body.internal = errorDetail(e);
  return { status: 500, body };
}

function isAdmin(headers: () => Headers, kernel: Kernel): boolean {
  try {
    return kernel.session(headers()).isAdmin;
  } catch {
    return false;
  }
}

/** What is done when any request has been answered: its `http-log` line and the `request` event
 * (the request series). */
function answered(kernel: Kernel, r: { route: string; method: string; url: string; status: number; operation: string | null; start: number }): void {
  const durationMs = Math.round((performance.now() - r.start) * 1000) / 1000;
  if (kernel.log.enabled?.('info') !== false) {
    kernel.log.info('http-log', {
      operation: { type: r.operation },
      http_info: {
        status: r.status,
        method: r.method,
        url: r.url,
        duration_ms: durationMs,
      },
    });
  }
  if (kernel.events.listenerCount('request') > 0) kernel.events.emit('request', { route: r.route, method: r.method, status: r.status, operation: r.operation, durationMs });
}


/** `inFlight`: requests being answered, and whether the server is draining (Note [Draining] in
 * server/main.ts: /healthz then answers 503). */
export function createApp(kernel: Kernel, opts: { inFlight?: { n: number; draining?: boolean } } = {}): Hono<Env> {
  const app = new Hono<Env>();
  const cfg = kernel.config;
  const enabled = (api: ApiName | string) => (cfg.enabledApis as string[]).includes(api);
  const session = (c: Context): Promise<Session> => kernel.authenticate(c.req.raw.headers);
  const readJson = (c: Context) => readJsonBody(c, cfg);
  const notFound = (c: Context) => c.json(NOT_FOUND, 404);

  app.use('*', async (c, next) => {
    const start = performance.now();
    if (opts.inFlight) opts.inFlight.n++;
    try {
      await next();
    } finally {
      closeIfUnread(nodeIncoming(c), nodeOutgoing(c));
      if (opts.inFlight) opts.inFlight.n--;
      answered(kernel, { route: c.req.routePath, method: c.req.method, url: c.req.path, status: c.res.status, operation: c.get('operation') ?? null, start });
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
    const exchange = r.exchange;
    const answer = exchange ? async (c: Context<Env>) => contextAnswer(c, await exchange(contextExchange(c))) : r.handler!;
    const handler = async (c: Context<Env>) => {
      if (r.api && !enabled(r.api)) return notFound(c);
      if (r.operation) c.set('operation', r.operation);
      try {
        return await answer(c);
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

/**
 * `fallback` (hono's request listener) with the routes that give `exchange` answered from Node's
 * request before it (Note [Routes served from Node's request] in core/types.ts): a request for
 * such a route's path exactly (no query string) and method, answered as hono's middleware and
 * the route's handler answer it there.
 */
export function nodeRoutes(kernel: Kernel, opts: { inFlight?: { n: number; draining?: boolean } } = {}): (fallback: RequestListener) => RequestListener {
  const byPath = new Map<string, RouteDef[]>();
  for (const r of kernel.routes) {
    if (!r.exchange || r.method === 'ALL' || /[:*]/.test(r.path)) continue;
    byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  }
  const enabled = (api: string) => (kernel.config.enabledApis as string[]).includes(api);
  const json = (status: number, body: unknown): HttpAnswer => ({ status, contentType: 'application/json', body: JSON.stringify(body) });
  const serveNode = async (r: RouteDef, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const start = performance.now();
    if (opts.inFlight) opts.inFlight.n++;
    let status = 500;
    // As hono's route handler: a disabled API's 404 is logged with no operation.
    const off = r.api !== undefined && !enabled(r.api);
    try {
      let a: HttpAnswer;
      if (off) a = json(404, NOT_FOUND);
      else {
        const x = nodeExchange(req);
        try {
          a = await r.exchange!(x);
        } catch (e) {
          const failed = errorAnswer(e, kernel, r.path, () => new Headers(x.headerPairs as [string, string][]));
          a = json(failed.status, failed.body);
        }
      }
      status = a.status;
      closeIfUnread(req, res);
      await nodeAnswer(res, a);
    } catch (e) {
      // Writing the answer failed: the client is gone, or the answer's stream broke.
      kernel.log.error('unexpected-error', { path: r.path, error: errorDetail(e) });
      res.destroy();
    } finally {
      if (opts.inFlight) opts.inFlight.n--;
      answered(kernel, { route: r.path, method: r.method, url: r.path, status, operation: off ? null : (r.operation ?? null), start });
    }
  };
  return (fallback) => {
    if (byPath.size === 0) return fallback;
    return (req, res) => {
      const routes = req.url === undefined ? undefined : byPath.get(req.url);
      const r = routes?.find((x) => x.method === req.method);
      if (!r) return fallback(req, res);
      void serveNode(r, req, res);
    };
  };
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
