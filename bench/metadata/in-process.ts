/**
 * The engine at N tracked tables, booted in the benchmark's own process (so that V8's accounting
 * and profiler can be read), for ./memory.ts (and scratch profiles): an embedded PostgreSQL with
 * N + 1 tables (each with a foreign key to the previous one), N of them tracked with their
 * relationships and each role's select permission (`owner_id = X-Svc-User-Id`), as ./run.ts's.
 * The engine is the compiled one (`npm run build:server` first), in production mode as
 * `npm start` runs it (server/production-mode.ts).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { createTables, trackOps } from './tables.js';

process.env.NODE_ENV ??= 'production'; // before graphql-js loads, as server/main.ts does

const root = new URL('../..', import.meta.url).pathname;
const dist = (p: string) => import(path.join(root, 'dist', p));

export { table } from './tables.js';
export const mib = (bytes: number) => (bytes / 1048576).toFixed(1);

export interface InProcess {
  /** POST a JSON body, as `role` (with `x-svc-user-id: 1`) where given; the answer's text. */
  post(p: string, body: unknown, role?: string): Promise<{ status: number; text: string }>;
  /** The same, failing on any status but 200 or a GraphQL error. */
  ok(p: string, body: unknown, role?: string): Promise<string>;
}

export async function withEngineAt(n: number, roles: readonly string[], config: Record<string, unknown>, body: (e: InProcess) => Promise<void>): Promise<void> {
  const { startEmbeddedPostgres } = await dist('server/embedded.js');
  const { boot } = await dist('server/boot.js');
  const { defaultConfig } = await dist('core/config.js');
  const { createLogger } = await dist('core/log.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-in-process-'));
  chmodSync(dir, 0o755); // PostgreSQL runs as another user when this runs as root
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  try {
    await pg.createDatabase('bench');
    const url = pg.url('bench');
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await createTables(sql, n);
    await sql.end();

    const running = await boot({ config: defaultConfig({ databaseUrl: url, logLevel: 'warn', ...config }), env: { SVC_GRAPHQL_DATABASE_URL: url }, log: createLogger('warn') });
    try {
      const post = async (p: string, b: unknown, role?: string) => {
        const r = await running.app.request(p, {
          method: 'POST',
          body: JSON.stringify(b),
          headers: { 'content-type': 'application/json', ...(role ? { 'x-svc-role': role, 'x-svc-user-id': '1' } : {}) },
        });
        return { status: r.status as number, text: await r.text() };
      };
      const ok = async (p: string, b: unknown, role?: string) => {
        const r = await post(p, b, role);
        if (r.status !== 200 || r.text.startsWith('{"errors"')) throw new Error(`${p} -> ${r.status} ${r.text.slice(0, 300)}`);
        return r.text;
      };
      await ok('/v1/metadata', { type: 'bulk', args: trackOps(n, roles) });
      await body({ post, ok });
    } finally {
      await running.stop();
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
