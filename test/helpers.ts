/**
 * Test helpers: a fresh database per test file on the run's PostgreSQL, a kernel booted on it,
 * and an HTTP client that goes through the real hono app (request -> status, body).
 */
import { afterAll, beforeAll, inject } from 'vitest';
import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { defaultConfig, type ServerConfig } from '../core/config.js';
import { createLogger, type Logger } from '../core/log.js';
import type { PluginDef } from '../core/plugin.js';
import { boot, type Running } from '../server/boot.js';
import type { GraphQLEngine } from '../plugins/graphql/index.js';

export function adminUrl(): string {
  return inject('pgAdminUrl');
}

/** The URL of `database` on the server of `admin` (by default the run's cluster). */
export function urlFor(database: string, admin = adminUrl()): string {
  const u = new URL(admin);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Creates an empty database and returns its URL. */
export async function createDatabase(prefix = 'svc_test'): Promise<{ name: string; url: string }> {
  return createDatabaseOn(adminUrl(), prefix);
}

/** Creates a database on the server of `admin`, runs `setup` statements in it, and returns its URL. */
export async function createDatabaseOn(admin: string, prefix: string, setup: string[] = []): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`create database "${name}"`);
  } finally {
    await sql.end();
  }
  const url = urlFor(name, admin);
  if (setup.length) {
    const db = postgres(url, { max: 1, onnotice: () => {} });
    try {
      for (const statement of setup) await db.unsafe(statement);
    } finally {
      await db.end();
    }
  }
  return { name, url };
}

export interface HttpResult {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export interface TestServer extends Omit<Running, 'graphql'> {
  /** The GraphQL plugin's engine (throws when the test disabled that plugin). */
  readonly graphql: GraphQLEngine;
  url: string;
  sql: postgres.Sql;
  logs: Record<string, any>[];
  env: Record<string, string | undefined>;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  metadata(body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  query(body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  /** run_sql through the legacy API; throws unless 200. */
  runSql(sql: string): Promise<any>;
  /** The exported tracked tables of a source; throws unless the export succeeds. */
  tables(source?: string): Promise<any[]>;
  /** POST /v1/graphql; throws unless the status is 200 (GraphQL errors come with 200); the body. */
  gql(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
}

export function captureLogger(lines: Record<string, any>[], level: ServerConfig['logLevel'] = 'debug'): Logger {
  return createLogger(level, (l) => lines.push(JSON.parse(l)));
}

export async function startServer(opts: {
  config?: Partial<ServerConfig>;
  plugins?: PluginDef[];
  extraPlugins?: PluginDef[];
  database?: { url: string };
  env?: Record<string, string | undefined>;
} = {}): Promise<TestServer> {
  const db = opts.database ?? (await createDatabase());
  const logs: Record<string, any>[] = [];
  const env: Record<string, string | undefined> = { ...(opts.env ?? {}) };
  const config = defaultConfig({ databaseUrl: db.url, metadataSyncInterval: 0, ...opts.config });
  const running = await boot({ config, env, plugins: opts.plugins, extraPlugins: opts.extraPlugins, log: captureLogger(logs) });
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> => {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const res = await running.app.request(path, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
  const server: TestServer = {
    ...running,
    get graphql(): GraphQLEngine {
      if (!running.graphql) throw new Error('the graphql plugin is disabled in this test server');
      return running.graphql;
    },
    url: db.url,
    sql,
    logs,
    env,
    request,
    metadata: (body, headers) => request('POST', '/v1/metadata', body, headers),
    query: (body, headers) => request('POST', '/v1/query', body, headers),
    async runSql(text: string) {
      const r = await request('POST', '/v1/query', { type: 'run_sql', args: { sql: text } }, opts.config?.adminSecret ? { 'x-svc-admin-secret': opts.config.adminSecret } : {});
      if (r.status !== 200) throw new Error(`run_sql failed: ${r.status} ${r.text}`);
      return r.body;
    },
    async tables(source = 'default') {
      const r = await request('POST', '/v1/metadata', { type: 'export_metadata', version: 1, args: {} }, opts.config?.adminSecret ? { 'x-svc-admin-secret': opts.config.adminSecret } : {});
      if (r.status !== 200) throw new Error(`export_metadata failed: ${r.status} ${r.text}`);
      return r.body.sources.find((x: { name: string }) => x.name === source).tables;
    },
    async gql(query, variables, headers) {
      const r = await request('POST', '/v1/graphql', { query, variables }, headers);
      if (r.status !== 200) throw new Error(`graphql answered ${r.status}: ${r.text}`);
      return r.body;
    },
    async stop() {
      await sql.end({ timeout: 1 });
      await running.stop();
    },
  };
  return server;
}

/** `columns` of `from`'s rows (a table, with a `where` if need be) as JSON objects in the order of
 * their `id`, read as admin through run_sql. */
/** A small deterministic random generator (mulberry32): a randomized test names its seed, so
 * that a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function rowsById(server: TestServer, from: string, columns = '*'): Promise<any[]> {
  const r = await server.runSql(`select coalesce(json_agg(to_jsonb(t) - '__o' order by t.__o), '[]')::text from (select ${columns}, id as __o from ${from}) as t`);
  return JSON.parse(r.result[1][0]);
}

/**
 * The server of a test file: started (on a fresh database, with `seed` SQL run through run_sql)
 * before the file's tests and stopped after them. The returned object forwards to it.
 */
export function useServer(seed?: string, opts: Parameters<typeof startServer>[0] = {}): TestServer {
  return useServerWith(() => startServer(opts), seed);
}

/** useServer's contract with the server started by `start` (in beforeAll). */
export function useServerWith(start: () => Promise<TestServer>, seed?: string): TestServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await start();
    if (seed) await server.runSql(seed);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return new Proxy({} as TestServer, {
    get: (_, key) => {
      if (!server) throw new Error('useServer: the server is used before beforeAll ran');
      return server[key as keyof TestServer];
    },
  });
}
