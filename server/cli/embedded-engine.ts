/**
 * `--embedded`: the engine started inside the CLI's process for one command, when no server runs:
 * configured as `npm start` configures it (the same SVC_GRAPHQL_* variables; with no database URL
 * the embedded PostgreSQL on the data directory, `--data-dir`, SVC_GRAPHQL_DATA_DIR or the
 * project's .svc-data), served on a free
 * loopback port for the command's requests, and stopped after it. A data directory that a running
 * server uses is refused by the boot ("in use"): then the command is meant for that server
 * (--endpoint).
 *
 * The engine is imported here only, lazily, so that commands against a running server do not
 * load it.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';

export interface Embedded {
  endpoint: string;
  adminSecret?: string;
  /** What it runs on, for the output: the database URL's variable or the data directory. */
  describe: string;
  stop(): Promise<void>;
}

export async function startEmbedded(env: Record<string, string | undefined>, dataDir: string | undefined, log: (line: string) => void): Promise<Embedded> {
  const [{ serve }, { loadConfig }, { builtinOptions }, { createLogger }, { boot, describeError }] = await Promise.all([
    import('@hono/node-server'),
    import('../../core/config.js'),
    import('../plugins.js'),
    import('../../core/log.js'),
    import('../boot.js'),
  ]);
  const config = loadConfig(dataDir ? ['--data-dir', dataDir] : [], env, builtinOptions);
  // Only the engine's errors, as JSON lines on stderr: the command's output stays its own.
  const logger = createLogger('error', log);
  let running;
  try {
    running = await boot({ config, env, log: logger });
  } catch (e) {
    throw new Error(`the embedded engine did not start: ${describeError(e)}`);
  }
  const started = running;
  let resolveInfo!: (i: AddressInfo) => void;
  const ready = new Promise<AddressInfo>((r) => (resolveInfo = r));
  const server = serve({ fetch: started.app.fetch, port: 0, hostname: '127.0.0.1', ...started.serveOptions }, (info) => resolveInfo(info)) as Server;
  // the GraphQL WebSocket too, as server/main.ts serves it (GraphiQL's subscriptions in `svc console`)
  started.websocket.attach(server);
  const info = await ready;
  return {
    endpoint: `http://127.0.0.1:${info.port}`,
    adminSecret: config.adminSecret ?? undefined,
    describe: config.databaseUrl ? 'on the database of SVC_GRAPHQL_DATABASE_URL' : `embedded PostgreSQL on ${config.dataDir}`,
    async stop() {
      await started.websocket.close(1000);
      await new Promise<void>((r) => {
        server.close(() => r());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await started.stop();
    },
  };
}
