/**
 * The engine on Chinook, as the GraphQL benchmarks set it up: its metadata (every table, a
 * relationship per foreign key both ways, the `user` role), and the statements it compiles for
 * the benchmark's queries (/v1/graphql/explain). Shared by run.ts and shapes.ts.
 */
import type postgres from 'postgres';
import type { BenchQuery } from './queries.js';

export async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
  return { status: r.status, text: await r.text() };
}

/** Database connections per server (PostGraphile's pg Pool default; handwritten.ts's `max`). */
export const DB_CONNECTIONS = 10;

/** The engine's metadata for Chinook: every table, a relationship per foreign key both ways
 * (named as Hasura's console suggests: albums.artist, artists.albums, playlists.playlist_tracks),
 * and the `user` role's row filter on albums. */
export async function chinookMetadata(sql: postgres.Sql): Promise<unknown[]> {
  const tables = await sql<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`;
  const columns = await sql<{ t: string; c: string }[]>`select table_name as t, column_name as c from information_schema.columns where table_schema = 'public'`;
  const fks = await sql<{ t: string; c: string; ref: string }[]>`
    select cl.relname as t, a.attname as c, rf.relname as ref
    from pg_constraint k
    join pg_class cl on cl.oid = k.conrelid join pg_namespace n on n.oid = cl.relnamespace
    join pg_class rf on rf.oid = k.confrelid
    join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1]
    where k.contype = 'f' and n.nspname = 'public' and cardinality(k.conkey) = 1
    order by 1, 2`;
  const singular = (s: string) => (s.endsWith('ies') ? `${s.slice(0, -3)}y` : s.endsWith('s') ? s.slice(0, -1) : s);
  const plural = (s: string) => (s.endsWith('s') ? s : s.endsWith('y') ? `${s.slice(0, -1)}ies` : `${s}s`);
  // A suggested name that is taken (a column, or another relationship) gets the column appended.
  const taken = new Map<string, Set<string>>(tables.map((t) => [t.name, new Set(columns.filter((c) => c.t === t.name).map((c) => c.c))]));
  const name = (table: string, wanted: string, column: string) => {
    const used = taken.get(table)!;
    const n = used.has(wanted) ? `${wanted}_by_${column}` : wanted;
    used.add(n);
    return n;
  };
  // The same pool as the other servers' (10 connections): the source the engine makes from its
  // database URL has Hasura's default of 50.
  const ops: unknown[] = [
    {
      type: 'pg_update_source',
      args: {
        name: 'default',
        configuration: {
          connection_info: {
            database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' },
            isolation_level: 'read-committed',
            pool_settings: { connection_lifetime: 600, idle_timeout: 180, max_connections: DB_CONNECTIONS, retries: 1 },
            use_prepared_statements: true,
          },
        },
      },
    },
  ];
  for (const t of tables) ops.push({ type: 'pg_track_table', args: { source: 'default', table: { schema: 'public', name: t.name } } });
  for (const fk of fks) {
    ops.push({ type: 'pg_create_object_relationship', args: { source: 'default', table: fk.t, name: name(fk.t, singular(fk.ref), fk.c), using: { foreign_key_constraint_on: fk.c } } });
    ops.push({
      type: 'pg_create_array_relationship',
      args: { source: 'default', table: fk.ref, name: name(fk.ref, plural(fk.t), fk.c), using: { foreign_key_constraint_on: { table: fk.t, column: fk.c } } },
    });
  }
  ops.push({
    type: 'pg_create_select_permission',
    args: { source: 'default', table: 'albums', role: 'user', permission: { columns: ['id', 'title', 'artist_id'], filter: { artist_id: { _eq: 'X-Svc-User-Id' } } } },
  });
  return ops;
}

/** A root field's statement as the engine's /v1/graphql/explain gives it: `$n` bind parameters
 * and their values for the query's fixed variables and session. */
export type ExplainedField = { field: string; sql: string; params: (string | null)[]; records?: unknown };

/**
 * "The SQL this engine generates": Hasura's POST /v1/graphql/explain answers [{field, sql, plan}]
 * per root field, and this engine adds `params`. For each query the engine explains, the
 * hand-written handler runs the engine's statements with those parameters (valid for the query's
 * fixed variables and headers, which the benchmark never changes); for a query it cannot
 * explain, the hand-written SQL of queries.ts, and `label` says which it ran and why.
 */
export async function engineSql(svcPort: number, selected: BenchQuery[]): Promise<{ sql: Record<string, ExplainedField[]>; label: Record<string, string> }> {
  const sql: Record<string, ExplainedField[]> = {};
  const label: Record<string, string> = {};
  for (const q of selected) {
    const r = await post(`http://127.0.0.1:${svcPort}/v1/graphql/explain`, { query: { query: q.svc.query, variables: q.svc.variables ?? {} }, user: q.svc.headers ?? {} });
    let fields: unknown;
    try {
      fields = JSON.parse(r.text);
    } catch {
      /* not JSON */
    }
    const ok =
      r.status === 200 &&
      Array.isArray(fields) &&
      fields.length > 0 &&
      fields.every((f) => typeof f?.field === 'string' && typeof f?.sql === 'string' && Array.isArray(f?.params));
    if (!ok) {
      label[q.name] = `hand-written SQL (the engine's /v1/graphql/explain answered ${r.status} ${r.text.slice(0, 120)})`;
      continue;
    }
    sql[q.name] = (fields as ExplainedField[]).map((f) => ({ field: f.field, sql: f.sql, params: f.params, ...(f.records !== undefined ? { records: f.records } : {}) }));
    label[q.name] = (fields as ExplainedField[]).some((f) => f.records !== undefined)
      ? "the engine's SQL and parameters, from /v1/graphql/explain (lists as records, written by the engine's records writer)"
      : "the engine's SQL and parameters, from /v1/graphql/explain";
  }
  return { sql, label };
}

/** The sub-plans of a statement's plan (EXPLAIN ANALYZE), each `SubPlan xN` with N the times it
 * ran: a per-row sub-query shows there. */
export async function subPlans(sql: postgres.Sql, text: string, params: readonly unknown[] = []): Promise<string> {
  const [row] = await sql.unsafe(`explain (analyze, format json) ${text}`, params as postgres.ParameterOrJSON<never>[]);
  const found: string[] = [];
  const walk = (node: any) => {
    if (node['Parent Relationship'] === 'SubPlan') found.push(`SubPlan x${node['Actual Loops']}`);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk((row as any)['QUERY PLAN'][0].Plan);
  return found.length ? found.join(', ') : 'no SubPlan';
}
