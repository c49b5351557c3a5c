/**
 * A PostgreSQL source connection over postgres.js: the pool built from `connection_info`,
 * request-scoped transactions (for run_sql and bulk), and introspection.
 */
import postgres from 'postgres';
import { SvcError } from '../../core/errors.js';
import type { Introspection, SourceConnection, SqlExecutor, SqlTransaction } from '../database/types.js';
import { introspect } from './introspect.js';

export interface PgConnectionInfo {
  database_url:
    | string
    | { from_env: string }
    | { connection_parameters: { username: string; password?: string; host: string; port: number; database: string } };
  pool_settings?: {
    max_connections?: number;
    total_max_connections?: number;
    idle_timeout?: number;
    retries?: number;
    pool_timeout?: number;
    connection_lifetime?: number;
  };
  use_prepared_statements?: boolean;
  isolation_level?: 'read-committed' | 'repeatable-read' | 'serializable';
}

export interface PgConfiguration {
  connection_info: PgConnectionInfo;
  read_replicas?: PgConnectionInfo[];
  extensions_schema?: string;
}

/** An executor that can also run one statement in simple mode and return the raw text values. */
export interface PgExecutor extends SqlExecutor {
  /** Runs SQL text over the simple query protocol (no prepared statement, no parameters); when the
   * text holds several statements, the result is the last one's. */
  simple(text: string): Promise<PgRawResult>;
}

/** A connection of its own, outside any transaction (run_sql with `no_transaction`). */
export interface PgSession extends PgExecutor {
  release(): Promise<void>;
}

export interface PgRawResult {
  command: string | undefined;
  columns: string[] | undefined;
  rows: (string | null)[][];
}

export function resolveDatabaseUrl(info: PgConnectionInfo, env: Readonly<Record<string, string | undefined>>): string {
  const u = info.database_url;
  if (typeof u === 'string') return u;
  if ('from_env' in u) {
    const val = env[u.from_env];
    if (!val) throw new SvcError('invalid-configuration', `environment variable "${u.from_env}" not set`);
    return val;
  }
  const p = u.connection_parameters;
  const auth = `${encodeURIComponent(p.username)}${p.password ? ':' + encodeURIComponent(p.password) : ''}`;
  return `postgres://${auth}@${p.host}:${p.port}/${encodeURIComponent(p.database)}`;
}

const ISOLATION: Record<string, string> = {
  'read-committed': 'read committed',
  'repeatable-read': 'repeatable read',
  serializable: 'serializable',
};

type RawList = postgres.RowList<postgres.Row[]> & { columns?: { name: string }[] };

function toRaw(res: RawList | RawList[]): PgRawResult {
  // postgres.js answers a multi-statement text with one result per statement that returned rows.
  const last = (res as RawList).command === undefined && res.length > 0 && (res[0] as RawList).command !== undefined ? (res.at(-1) as RawList) : (res as RawList);
  const rows = (last as unknown as (Buffer | null)[][]).map((r) => r.map((b) => (b === null ? null : b.toString('utf8'))));
  return { command: last.command, columns: last.columns?.map((c) => c.name), rows };
}

export class PgConnection implements SourceConnection {
  private pool: postgres.Sql | undefined;
  readonly executor: PgExecutor;

  constructor(
    readonly name: string,
    private readonly config: PgConfiguration,
    private readonly env: Readonly<Record<string, string | undefined>>,
  ) {
    // Resolve the URL now so that a missing environment variable is reported at build time.
    resolveDatabaseUrl(config.connection_info, env);
    this.executor = this.makeExecutor(() => this.sql());
  }

  private sql(): postgres.Sql {
    if (this.pool) return this.pool;
    const info = this.config.connection_info;
    const ps = info.pool_settings ?? {};
    this.pool = postgres(resolveDatabaseUrl(info, this.env), {
      max: ps.max_connections ?? ps.total_max_connections ?? 10,
      idle_timeout: ps.idle_timeout ?? 180,
      max_lifetime: ps.connection_lifetime ?? 600,
      connect_timeout: ps.pool_timeout && ps.pool_timeout > 0 ? ps.pool_timeout : 10,
      prepare: info.use_prepared_statements ?? false,
      onnotice: () => {},
      connection: { application_name: `svc-source-${this.name}` },
    });
    return this.pool;
  }

  private makeExecutor(get: () => postgres.Sql | postgres.ReservedSql): PgExecutor {
    return {
      query: async <T>(text: string, params: unknown[] = []) => (await get().unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as T[],
      simple: async (text: string) => toRaw((await get().unsafe(text).simple().raw()) as never),
    };
  }

  async introspect(exec?: SqlExecutor): Promise<Introspection> {
    return introspect(exec ?? this.executor);
  }

  async transaction(opts: { readOnly?: boolean } = {}): Promise<PgExecutor & SqlTransaction> {
    const reserved = await this.sql().reserve();
    const level = ISOLATION[this.config.connection_info.isolation_level ?? 'read-committed'] ?? 'read committed';
    try {
      await reserved.unsafe(`begin isolation level ${level}${opts.readOnly ? ' read only' : ''}`);
    } catch (e) {
      reserved.release();
      throw e;
    }
    const exec = this.makeExecutor(() => reserved);
    let finished = false;
    const finish = async (cmd: 'commit' | 'rollback') => {
      if (finished) return;
      finished = true;
      try {
        // run_sql may have changed session settings (SET TIME ZONE): do not hand them to the pool.
        await reserved.unsafe(`${cmd}; reset all`).simple();
      } finally {
        reserved.release();
      }
    };
    return Object.assign(exec, { commit: () => finish('commit'), rollback: () => finish('rollback') });
  }

  async session(): Promise<PgSession> {
    const reserved = await this.sql().reserve();
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      try {
        await reserved.unsafe('reset all');
      } finally {
        reserved.release();
      }
    };
    return Object.assign(this.makeExecutor(() => reserved), { release });
  }

  async ping(): Promise<void> {
    await this.sql().unsafe('select 1');
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    await p?.end({ timeout: 5 });
  }
}
