/**
 * Boots a kernel with the built-in plugins on the configured databases (or an embedded
 * PostgreSQL), ready to serve. Used by server/main.ts and by the tests.
 */
import postgres from 'postgres';
import type { ServerConfig } from '../core/config.js';
import { Kernel } from '../core/kernel/kernel.js';
import type { Metadata, PluginDef } from '../core/plugin.js';
import { createLogger, type Logger } from '../core/log.js';
import { createServer, type RequestListener, type ServerOptions } from 'node:http';
import { createApp, nodeRoutes } from './app.js';
import { graphqlEngine, type GraphQLEngine } from '../plugins/graphql/index.js';
import { Upgrades } from './upgrades.js';
import { EMBEDDED_SETTINGS, startEmbeddedPostgres, type EmbeddedPg } from './embedded.js';
import { builtinPlugins, defaultSource } from './plugins.js';
import { driverFor } from '../plugins/postgres/index.js';
import { withPluginDefaults } from '../core/config.js';
import { withServerDefaults } from './options.js';

export interface Running {
  kernel: Kernel;
  app: ReturnType<typeof createApp>;
  /** The GraphQL engine of the app (its plan-cache counters: `graphql.stats()`); undefined when
   * the graphql plugin is disabled. */
  graphql: GraphQLEngine | undefined;
  /** The plugins' upgrade paths (GraphQL over WebSocket on /v1/graphql): attach it to the HTTP
   * server that serves `app`; close it on shutdown. */
  websocket: Upgrades;
  embedded?: EmbeddedPg;
  inFlight: { n: number };
  /** Node's request listener for `app`: hono's, with the routes that can be served from Node's
   * request answered before it (Note [Routes served from Node's request] in core/types.ts).
   * Give it to @hono/node-server's `serve` as `createServer` (`serveOptions`). */
  serveOptions: { createServer: typeof createServer };
  stop(): Promise<void>;
}

export async function boot(opts: {
  config: ServerConfig;
  env?: Record<string, string | undefined>;
  plugins?: PluginDef[];
  extraPlugins?: PluginDef[];
  log?: Logger;
  catalogSchema?: string;
  /** Aborted (SIGTERM during boot): stop what was started and reject with the signal's reason. */
  signal?: AbortSignal;
}): Promise<Running> {
  // The server's own options, at their default where unset (a configuration from defaultConfig).
  const config = withServerDefaults(opts.config);
  const env = opts.env ?? process.env;
  const log = opts.log ?? createLogger(config.logLevel);
  let embedded: EmbeddedPg | undefined;
  let databaseUrl = config.databaseUrl;
  const signal = opts.signal;
  if (!databaseUrl && !config.metadataDatabaseUrl) {
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      settings: EMBEDDED_SETTINGS,
      signal,
      onLog: (text) => log.debug('startup', { kind: 'embedded_postgres_log', text }),
      onNotice: (message) => log.warn('startup', { kind: 'embedded_postgres', message, data_dir: config.dataDir }),
    });
    databaseUrl = embedded.url('postgres');
    log.info('startup', { kind: 'embedded_postgres', message: 'started the embedded PostgreSQL', data_dir: config.dataDir, port: embedded.port });
  }
  // The default source reads its URL from the environment, as Hasura's does, so the stored
  // metadata holds no credentials and an embedded server may change port between runs.
  if (databaseUrl) env.SVC_GRAPHQL_DATABASE_URL = databaseUrl;
  const metadataUrl = config.metadataDatabaseUrl ?? databaseUrl!;
  // No named prepared statement, whatever the URL: the metadata database may be behind a
  // transaction pooler, and the catalog's statements are few (Note [Poolers] in
  // plugins/postgres/connection/connection.ts; the catalog's one statement outside a transaction is sent
  // alone on its connection, CatalogStore.stamp).
  // TLS as the sources' (Note [TLS as libpq] in plugins/postgres/connection/tls.ts): the URL's sslmode.
  let catalog: ReturnType<typeof driverFor>;
  try {
    catalog = driverFor(metadataUrl, undefined, env);
  } catch (e) {
    await embedded?.stop();
    throw e;
  }
  const catalogSql = postgres(catalog.url, { ...catalog.options, max: 4, prepare: false, onnotice: () => {}, connection: { application_name: 'svc-catalog' } });
  let kernel: Kernel | undefined;
  try {
    signal?.throwIfAborted();
    kernel = await Kernel.create({
      config,
      env,
      log,
      plugins: [...(opts.plugins ?? builtinPlugins), ...(opts.extraPlugins ?? [])],
      catalogSql,
      catalogSchema: opts.catalogSchema,
      initialMetadata: databaseUrl ? (md: Metadata) => ({ ...md, sources: [defaultSource(withPluginDefaults(config, builtinPlugins).usePreparedStatements)] }) : undefined,
    });
    await kernel.start();
    signal?.throwIfAborted();
  } catch (e) {
    await kernel?.stop().catch(() => {});
    await catalogSql.end({ timeout: 1 });
    await embedded?.stop();
    throw e;
  }
  const inFlight = { n: 0 };
  const graphql = graphqlEngine(kernel.api);
  const app = createApp(kernel, { inFlight });
  const websocket = new Upgrades(kernel);
  const routes = nodeRoutes(kernel, { inFlight });
  return {
    kernel,
    app,
    serveOptions: { createServer: ((options: ServerOptions, listener: RequestListener) => createServer(options, routes(listener))) as typeof createServer },
    graphql,
    websocket,
    embedded,
    inFlight,
    async stop() {
      // Subscriptions stop refetching before the pools close (the graphql plugin's worker).
      await kernel.stop();
      await catalogSql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}

/** A useful message for anything thrown: boot failures are not always Errors (strings, objects, undefined). */
export function describeError(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause === undefined ? '' : `: ${describeError(e.cause)}`;
    return (e.message || e.name) + cause;
  }
  if (typeof e === 'string') return e;
  if (e === undefined || e === null) return `unknown error (${e})`;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}
