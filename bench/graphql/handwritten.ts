/**
 * The benchmark's floor: a minimal hono + postgres.js server that answers the benchmark's
 * requests (and nothing else) by running fixed SQL, one prepared statement per root field, and
 * splicing each field's JSON bytes into the response without parsing or decoding them. What it skips compared
 * with the engine (GraphQL parse, validation, planning, permissions) is what the engine must make
 * cheap: the target is >= 0.85x this handler's req/s.
 *
 * The SQL is, per query, the SQL the engine generates when BENCH_SQL_FILE names a JSON file
 * `{ [query name]: [{field, sql, params, records?}] }` holding it (run.ts writes it from the
 * engine's /v1/graphql/explain: `$n` bind parameters and their values; a list the engine asks as
 * records is written by the engine's own writer, Note [Lists as records] in
 * plugins/postgres/records/records.ts), else (and always with
 * BENCH_SQL=expert, the benchmark's "expert SQL" server) the expert SQL of queries.ts. The explained parameters are those of the benchmark's fixed variables and
 * session, the only ones it sends. Every statement is prepared (postgres.js `prepare: true`, and
 * `simple: false` for those without parameters, which it would otherwise send unprepared).
 * Mutations (mutations.ts) run their hand-written SQL, one statement per root field, in
 * autocommit (no explicit transaction), their values bound from each request's variables.
 *
 *   BENCH_DATABASE_URL=postgres://... BENCH_PORT=8090 node --import tsx bench/graphql/handwritten.ts
 */
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import postgres from 'postgres';
import { recordsWriter, type RecordRow } from '../../plugins/postgres/records/records.js';
import { mutations } from './mutations.js';
import { queries, type RootFieldSql } from './queries.js';

const url = process.env.BENCH_DATABASE_URL;
const port = Number(process.env.BENCH_PORT);
if (!url || !port) throw new Error('BENCH_DATABASE_URL and BENCH_PORT are required');

// BENCH_SQL=expert: the expert SQL of queries.ts for every query, whatever the engine explained.
const expertOnly = process.env.BENCH_SQL === 'expert';
const engineSql: Record<string, { field: string; sql: string; params: (string | null)[]; records?: RecordRow }[]> =
  process.env.BENCH_SQL_FILE && !expertOnly ? JSON.parse(readFileSync(process.env.BENCH_SQL_FILE, 'utf8')) : {};

// A request is known by its role and document, as the engine caches its plans.
const routeKey = (role: string | undefined, query: string) => `${role ?? 'admin'}\n${query}`;
const routes = new Map<string, RootFieldSql[]>();
for (const q of queries) {
  const explained = engineSql[q.name];
  routes.set(
    routeKey(q.svc.headers?.['x-svc-role'], q.svc.query),
    explained ? explained.map((f) => ({ field: f.field, sql: f.sql, params: () => f.params, ...(f.records ? { write: recordsWriter(f.records) } : {}) })) : q.expert,
  );
}
// Mutations: always the hand-written SQL of mutations.ts (the engine does not explain mutations),
// one statement per root field in autocommit, its values from the request's variables.
for (const m of mutations) routes.set(routeKey(m.svc.headers?.['x-svc-role'], m.svc.query), m.sql);

// The same pool size as PostGraphile's default (pg's Pool: 10).
const sql = postgres(url, { max: 10, onnotice: () => {} });

const NULL = Buffer.from('null');
const END = Buffer.from('}}');

const app = new Hono();
app.get('/healthz', (c) => c.text('OK'));
app.post('/v1/graphql', async (c) => {
  const body = (await c.req.json()) as { query?: string; variables?: Record<string, unknown> };
  const fields = routes.get(routeKey(c.req.header('x-svc-role'), String(body.query)));
  if (!fields) return c.json({ errors: [{ message: 'the hand-written handler answers only the benchmark documents', extensions: { code: 'not-supported' } }] });
  const headers = Object.fromEntries(Object.entries(c.req.header()).map(([k, v]) => [k.toLowerCase(), v]));
  try {
    const parts = await Promise.all(
      fields.map(async (f, i) => {
        // raw(): the column's bytes as they came from PostgreSQL, JSON text that is never parsed
        // nor decoded: the response is those bytes between the keys'.
        const rows = await sql.unsafe(f.sql, f.params(body.variables ?? {}, headers) as any[], { prepare: true, simple: false } as { prepare: true }).raw();
        const value = rows[0]?.[0] as Uint8Array | null | undefined;
        const key = Buffer.from(`${i === 0 ? '{"data":{' : ','}${JSON.stringify(f.field)}:`);
        return [key, f.write ? await f.write(value ?? null) : (value ?? NULL)];
      }),
    );
    return c.body(Buffer.concat([...parts.flat(), END]), 200, { 'content-type': 'application/json' });
  } catch (e) {
    return c.json({ errors: [{ message: e instanceof Error ? e.message : String(e), extensions: { code: 'postgres-error' } }] });
  }
});

const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' });
const stop = () => server.close(() => void sql.end({ timeout: 1 }).then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
