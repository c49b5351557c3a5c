/**
 * Migrations and seeds of a Hasura CLI project:
 *
 *   migrations/<db>/<version>_<name>/up.sql, down.sql   version: a number (the Hasura CLI uses
 *                                                        the creation time in milliseconds)
 *   seeds/<db>/*.sql                                     applied in file-name order
 *
 * Note [Where migrations are recorded]
 * The applied versions of a database are rows of `svc_catalog.cli_migrations` in THAT database
 * (the one the migration changes), written in the same /v2/query `bulk` as the migration's SQL.
 * The engine runs a bulk of run_sql in one transaction, all or nothing, so a migration and its
 * record commit together or not at all: a failing migration leaves neither its changes nor a
 * record, and there is no "dirty" state to repair by hand (Hasura's CLI keeps the versions in the
 * metadata database through set_catalog_state, a second request after the migration's, which
 * can fail in between). The schema is the engine's (`svc_catalog`, where its catalog lives in the
 * metadata database); the table is made by the CLI's first use through run_sql (`create ... if
 * not exists`), so that no server change is needed and a server without the CLI has none.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ApiError, type Client } from './client.js';
import { MigrationSqlError, prepareMigrationSql, type Prepared, type Statement } from './migration-sql.js';
import { fromHasuraSql } from './from-hasura.js';

/** A rewrite of the SQL before it runs (--from-hasura), told the file it comes from. */
export type SqlFilter = (sql: string, file: string) => string;
const asIs: SqlFilter = (sql) => sql;

/** --from-hasura's SQL filter: renames, and says so per file. */
export function hasuraSqlFilter(log: (s: string) => void): SqlFilter {
  return (sql, file) => {
    const r = fromHasuraSql(sql);
    if (r.renames.length) {
      const names = [...new Set(r.renames.map(([a, b]) => `${a} -> ${b}`))];
      log(`--from-hasura: ${file}: renamed ${names.join(', ')}`);
    }
    return r.sql;
  };
}

export interface Migration {
  version: string;
  name: string;
  dir: string;
  up?: string;
  down?: string;
}

const DIR = /^(\d+)_(.+)$/;
const TABLE = 'svc_catalog.cli_migrations';
const SETUP = `create schema if not exists svc_catalog;
create table if not exists ${TABLE} (
  version bigint primary key,
  name text not null,
  applied_at timestamptz not null default now()
)`;

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The migrations of one database, by version. */
export function readMigrations(dir: string): Migration[] {
  if (!existsSync(dir)) return [];
  const out: Migration[] = [];
  for (const entry of readdirSync(dir)) {
    const m = DIR.exec(entry);
    const full = join(dir, entry);
    if (!m || !statSync(full).isDirectory()) continue;
    const read = (f: string) => (existsSync(join(full, f)) ? readFileSync(join(full, f), 'utf8') : undefined);
    out.push({ version: m[1]!, name: m[2]!, dir: full, up: read('up.sql'), down: read('down.sql') });
  }
  return out.sort((a, b) => (BigInt(a.version) < BigInt(b.version) ? -1 : BigInt(a.version) > BigInt(b.version) ? 1 : 0));
}

/** Creates `<dir>/<version>_<name>/up.sql, down.sql`; returns the new directory. */
export function createMigration(dir: string, name: string, up = '', down = '', version = String(Date.now())): string {
  if (!/^[\w.-]+$/.test(name)) throw new Error(`migration name "${name}": use letters, digits, "_", "-" and "."`);
  const full = join(dir, `${version}_${name}`);
  if (existsSync(full)) throw new Error(`${full} exists already`);
  mkdirSync(full, { recursive: true });
  writeFileSync(join(full, 'up.sql'), up);
  writeFileSync(join(full, 'down.sql'), down);
  return full;
}

/** The applied versions of a database (making the table on first use). */
export async function appliedVersions(client: Client, source: string): Promise<Set<string>> {
  // Read-only first: a DDL run_sql makes the engine look at the schema again, which `status`
  // should not cost.
  const exists = await client.runSql(source, `select to_regclass('${TABLE}') is not null`, true);
  if (exists.result?.[1]?.[0] !== 't') await client.runSql(source, SETUP);
  const r = await client.runSql(source, `select version::text from ${TABLE} order by version`, true);
  return new Set(((r.result ?? []) as string[][]).slice(1).map((row) => row[0]!));
}

const hasSql = (s: string | undefined) => !!s && s.replace(/--[^\n]*/g, '').trim() !== '';

/** A migration step that failed, with what to say: where, and whether it was rolled back. */
class StepError extends Error {
  constructor(readonly where: string, message: string, readonly outcome: 'rolled back' | 'refused' | 'partial', cause?: unknown) {
    super(message, { cause });
  }
}

/**
 * Applies one migration in one direction, its SQL and its record in one transaction (Note [Where
 * migrations are recorded]; an outer BEGIN ... COMMIT of the file taken off, Note [Migrations
 * with their own transaction] in migration-sql.ts). With `noTransaction` the file runs as it is,
 * statement by statement outside any transaction (its own BEGIN ... COMMIT included), and is
 * recorded after it succeeded: Hasura's --no-transaction, for CREATE INDEX CONCURRENTLY and the
 * like, not atomic.
 */
async function step(client: Client, source: string, m: Migration, dir: 'up' | 'down', o: { skipExecution: boolean; noTransaction: boolean; cascade: boolean; filter: SqlFilter }, root: string): Promise<void> {
  const file = relative(root, join(m.dir, `${dir}.sql`));
  const raw = dir === 'up' ? m.up : m.down;
  const sql = raw === undefined ? raw : o.filter(raw, file);
  const record =
    dir === 'up'
      ? `insert into ${TABLE} (version, name) values (${m.version}, ${lit(m.name)})`
      : `delete from ${TABLE} where version = ${m.version}`;
  if (o.skipExecution || !hasSql(sql)) {
    await client.runSql(source, record);
    return;
  }
  if (o.noTransaction) {
    try {
      await client.query({ type: 'run_sql', args: { source, sql, no_transaction: true, ...(o.cascade ? { cascade: true } : {}) } });
    } catch (e) {
      throw new StepError(file, (e as Error).message, 'partial', e);
    }
    await client.runSql(source, record);
    return;
  }
  let prepared: Prepared;
  try {
    prepared = prepareMigrationSql(sql!);
  } catch (e) {
    if (e instanceof MigrationSqlError) throw new StepError(`${file}:${e.line}`, e.message, 'refused', e);
    throw e;
  }
  try {
    await client.query({ type: 'bulk', args: [{ type: 'run_sql', args: { source, sql: prepared.sql, ...(o.cascade ? { cascade: true } : {}) } }, { type: 'run_sql', args: { source, sql: record } }] });
  } catch (e) {
    const line = e instanceof ApiError && e.body?.code === 'postgres-error' ? await locate(client, source, prepared.statements) : undefined;
    throw new StepError(line === undefined ? file : `${file}:${line}`, (e as Error).message, 'rolled back', e);
  }
}

/**
 * The line of the statement of a failed migration that failed. The engine reports PostgreSQL's
 * error for the whole SQL of a run_sql (as Hasura does), not which statement, so the first
 * statements are run again, followed by one that always fails (rolling them back): the shortest
 * run that fails before its last statement ends with the statement, found by bisection. Only
 * after a failure, so a migration that applies costs one request; `check_metadata_consistency:
 * false` spares the schema diffs of runs rolled back anyway. Undefined when it cannot be told
 * (the first run fails as a whole, or none does).
 */
async function locate(client: Client, source: string, statements: Statement[]): Promise<number | undefined> {
  const marker = 'svc migrate: finding the failing statement (rolled back)';
  const guard = `do $svc$ begin raise exception '${marker}'; end $svc$`;
  // true: the first k statements run (the guard failed, not one of them)
  const runs = async (k: number) => {
    const sql = [...statements.slice(0, k).map((s) => `${s.text}\n;`), guard].join('\n');
    try {
      await client.query({ type: 'run_sql', args: { source, sql, check_metadata_consistency: false } });
    } catch (e) {
      return (e as Error).message.includes(marker);
    }
    return false; // cannot be: the guard always fails
  };
  let lo = 0; // runs(lo) holds
  let hi = statements.length; // runs(hi) does not, as the migration failed
  if (!(await runs(0)) || (await runs(hi))) return undefined;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (await runs(mid)) lo = mid;
    else hi = mid;
  }
  return statements[hi - 1]!.line;
}

export interface ApplyOptions {
  up?: number | 'all';
  down?: number | 'all';
  version?: string;
  type?: 'up' | 'down';
  skipExecution?: boolean;
  /** Hasura's --no-transaction: each file as it is, outside any transaction, recorded after it. */
  noTransaction?: boolean;
  /** run_sql's cascade: metadata that depends on what the SQL drops goes too (the console's
   * "cascade" of a drop written as a migration). */
  cascade?: boolean;
  filter?: SqlFilter;
}

/**
 * Applies the migrations of `source` from `dir`: every pending one (the default, or `up`: the next
 * N), the last N applied ones down, or one `version` up or down. Stops at the first failure (that
 * migration rolled back, those before it kept) and throws, naming the migration.
 */
export async function applyMigrations(client: Client, source: string, dir: string, opts: ApplyOptions, log: (s: string) => void, root: string): Promise<number> {
  const all = readMigrations(dir);
  const applied = await appliedVersions(client, source);
  let plan: [Migration, 'up' | 'down'][];
  if (opts.version !== undefined) {
    const m = all.find((x) => x.version === opts.version);
    if (!m) throw new Error(`no migration with version ${opts.version} in ${relative(root, dir)}`);
    const d = opts.type ?? 'up';
    if (d === 'up' && applied.has(m.version)) throw new Error(`migration ${m.version} is applied already`);
    if (d === 'down' && !applied.has(m.version)) throw new Error(`migration ${m.version} is not applied`);
    plan = [[m, d]];
  } else if (opts.down !== undefined) {
    const done = all.filter((m) => applied.has(m.version)).reverse();
    plan = (opts.down === 'all' ? done : done.slice(0, opts.down)).map((m) => [m, 'down']);
  } else {
    const pending = all.filter((m) => !applied.has(m.version));
    plan = (opts.up === undefined || opts.up === 'all' ? pending : pending.slice(0, opts.up)).map((m) => [m, 'up']);
  }
  if (!plan.length) {
    log(`${source}: nothing to apply`);
    return 0;
  }
  for (const [m, d] of plan) {
    try {
      await step(client, source, m, d, { skipExecution: !!opts.skipExecution, noTransaction: !!opts.noTransaction, cascade: !!opts.cascade, filter: opts.filter ?? asIs }, root);
    } catch (e) {
      if (!(e instanceof StepError)) throw e;
      const outcome =
        e.outcome === 'rolled back'
          ? 'failed and was rolled back'
          : e.outcome === 'refused'
            ? 'was not applied'
            : 'failed (--no-transaction: the statements before the failing one stay applied; not recorded)';
      // the engine's answer stays reachable (`cause`): `svc console` passes its status on
      throw new Error(`${source}: migration ${m.version}_${m.name} (${d}, ${e.where}) ${outcome}: ${e.message}`, { cause: e.cause });
    }
    log(`${source}: ${d === 'up' ? 'applied' : 'reverted'} ${m.version}_${m.name}`);
  }
  return plan.length;
}

/** `migrate status`: one row per migration known on disk or to the database. */
export async function migrationStatus(client: Client, source: string, dir: string): Promise<{ version: string; name: string; onDisk: boolean; applied: boolean }[]> {
  const all = readMigrations(dir);
  const applied = await appliedVersions(client, source);
  const rows = all.map((m) => ({ version: m.version, name: m.name, onDisk: true, applied: applied.has(m.version) }));
  for (const v of applied) if (!all.some((m) => m.version === v)) rows.push({ version: v, name: '', onDisk: false, applied: true });
  return rows.sort((a, b) => (BigInt(a.version) < BigInt(b.version) ? -1 : 1));
}

/** `seed apply`: each file of `dir` (or the named ones) through run_sql, in file-name order,
 * each in one transaction: an outer BEGIN ... COMMIT is taken off and other transaction control
 * refused, as for a migration (Note [Migrations with their own transaction] in
 * migration-sql.ts), and a failure names the line of the statement that failed. */
export async function applySeeds(client: Client, source: string, dir: string, files: string[] | undefined, log: (s: string) => void, root: string, filter: SqlFilter = asIs): Promise<number> {
  const names = files?.length ? files : existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.sql')).sort() : [];
  if (!names.length) {
    log(`${source}: no seeds in ${relative(root, dir)}`);
    return 0;
  }
  for (const f of names) {
    const path = join(dir, f);
    if (!existsSync(path)) throw new Error(`seed ${relative(root, path)} not found`);
    const file = relative(root, path);
    let prepared: Prepared;
    try {
      prepared = prepareMigrationSql(filter(readFileSync(path, 'utf8'), file));
    } catch (e) {
      if (e instanceof MigrationSqlError) throw new Error(`${source}: seed ${file}:${e.line} was not applied: ${e.message.replace(/the migration/g, 'the seed').replace(/Split the migration, or apply it with --no-transaction \(statement by statement, not atomic\)/, 'Split the seed')}`);
      throw e;
    }
    try {
      await client.runSql(source, prepared.sql);
    } catch (e) {
      const line = e instanceof ApiError && e.body?.code === 'postgres-error' ? await locate(client, source, prepared.statements) : undefined;
      throw new Error(`${source}: seed ${line === undefined ? file : `${file}:${line}`} failed and was rolled back: ${(e as Error).message}`);
    }
    log(`${source}: applied seed ${f}`);
  }
  return names.length;
}
