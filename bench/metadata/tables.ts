/**
 * The metadata benchmarks' tables (./run.ts, ./history.ts, ./in-process.ts): N + 1 tables
 * `t00001`..., each with a foreign key to the previous one; N of them tracked with an object
 * relationship to the previous table, an array relationship from it, and each role's select
 * permission (`owner_id = X-Svc-User-Id`). The N + 1st is the one the benchmarks track and
 * untrack.
 */
import type postgres from 'postgres';

export const table = (i: number) => `t${String(i).padStart(5, '0')}`;

/** Creates the N + 1 tables, in batches: one multi-statement query is one transaction, whose
 * locks (a table and the one its foreign key names, each) overflow max_locks_per_transaction
 * from about 5,000 tables. */
export async function createTables(sql: postgres.Sql, n: number): Promise<void> {
  const ddl: string[] = [];
  for (let i = 1; i <= n + 1; i++) ddl.push(`create table ${table(i)} (id serial primary key, ${i > 1 ? `prev_id int references ${table(i - 1)}(id),` : ''} owner_id int, name text)`);
  for (let i = 0; i < ddl.length; i += 1000) await sql.unsafe(ddl.slice(i, i + 1000).join(';\n'));
}

/** The bulk's operations that track N tables with their relationships and `roles`' permissions. */
export function trackOps(n: number, roles: readonly string[]): unknown[] {
  const ops: unknown[] = [];
  for (let i = 1; i <= n; i++) ops.push({ type: 'pg_track_table', args: { table: table(i) } });
  for (let i = 2; i <= n; i++) {
    ops.push({ type: 'pg_create_object_relationship', args: { table: table(i), name: 'prev', using: { foreign_key_constraint_on: 'prev_id' } } });
    ops.push({ type: 'pg_create_array_relationship', args: { table: table(i - 1), name: 'nexts', using: { foreign_key_constraint_on: { table: table(i), column: 'prev_id' } } } });
  }
  for (let i = 1; i <= n; i++) {
    for (const role of roles) ops.push({ type: 'pg_create_select_permission', args: { table: table(i), role, permission: { columns: ['id', 'name'], filter: { owner_id: { _eq: 'X-Svc-User-Id' } } } } });
  }
  return ops;
}
