/**
 * A MS SQL Server source's connection (the contract's SourceConnection) over the driver boundary
 * (Note [The driver boundary] in ./driver.ts): a pool made on first use, statements with text
 * parameters, transactions, introspection, explain.
 */
import { SvcError } from '../../core/errors.js';
import type { CancelSignal } from '../../core/plugin.js';
import { ReadReplicas, type Introspection, type SourceConnection, type SqlExecutor, type SqlTransaction } from '../database/index.js';
import type { MssqlDriver, MssqlPool, MssqlResult, MssqlSession } from './driver.js';
import { errorChain } from './dialect.js';
import { nlit } from './identifiers.js';
import { introspect } from './introspect.js';

export type ConnectionString = string | { from_env: string };

export interface MssqlConnectionInfo {
  connection_string: ConnectionString;
  pool_settings?: { max_connections?: number; total_max_connections?: number; idle_timeout?: number };
  isolation_level?: 'read-uncommitted' | 'read-committed' | 'repeatable-read' | 'snapshot' | 'serializable';
}

export interface MssqlConfiguration {
  connection_info: MssqlConnectionInfo;
  read_replicas?: MssqlConnectionInfo[] | null;
}

/** The connection string, from the configuration or the environment variable it names. */
export function resolveConnectionString(cs: ConnectionString, env: Readonly<Record<string, string | undefined>>): string {
  if (typeof cs === 'string') return cs;
  const val = env[cs.from_env];
  if (!val) throw new SvcError('invalid-configuration', `environment variable "${cs.from_env}" not set`);
  return val;
}

/** A result set's rows as objects (the executor's answer). */
export const rowObjects = <T>(r: MssqlResult): T[] => r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])) as T);

/** Parameters as the boundary takes them: text or null (the framework binds text already). */
const texts = (params: readonly unknown[] = []): (string | null)[] => params.map((p) => (p === null || p === undefined ? null : typeof p === 'string' ? p : JSON.stringify(p)));

/** A transaction of this kind: the contract's, and its raw result sets (run_sql, introspection). */
export interface MssqlTransaction extends SqlTransaction {
  raw(text: string, params?: readonly (string | null)[], signal?: CancelSignal): Promise<MssqlResult>;
}

function transactionOf(s: MssqlSession): MssqlTransaction {
  return {
    raw: (text, params = [], signal) => s.query(text, params, signal),
    query: async <T>(text: string, params?: unknown[], opts?: { signal?: CancelSignal }) => rowObjects<T>(await s.query(text, texts(params), opts?.signal)),
    commit: () => s.commit(),
    rollback: () => s.rollback(),
  };
}

const ISOLATION = { 'read-committed': 'read-committed', 'repeatable-read': 'repeatable-read', serializable: 'serializable', snapshot: 'snapshot' } as const;

export class MssqlConnection implements SourceConnection {
  private pool: MssqlPool | undefined;
  readonly executor: SqlExecutor;
  private readonly connectionString: string;

  constructor(
    readonly name: string,
    private readonly config: MssqlConfiguration,
    env: Readonly<Record<string, string | undefined>>,
    private readonly driver: MssqlDriver,
  ) {
    // Resolved now, so that a missing environment variable makes the source inconsistent at once.
    this.connectionString = resolveConnectionString(config.connection_info.connection_string, env);
    this.executor = { query: async <T>(text: string, params?: unknown[], opts?: { signal?: CancelSignal }) => rowObjects<T>(await this.raw(text, texts(params), opts?.signal)) };
    // Note [Read replicas] in plugins/database: each replica a connection of its own, reads spread
    // over them; a statement's own error is one SQL Server numbered (Note [MSSQL errors]).
    this.replicaConnections = (config.read_replicas ?? []).map((info, i) => new MssqlConnection(`${name}-replica-${i + 1}`, { connection_info: info }, env, driver));
    if (this.replicaConnections.length > 0) {
      this.replicas = new ReadReplicas(this.replicaConnections, this.executor, (e) => errorChain(e).some((x) => x.number !== undefined));
      this.readExecutor = this.replicas.executor;
    }
  }

  private readonly replicaConnections: MssqlConnection[];
  private readonly replicas?: ReadReplicas;
  readonly readExecutor?: SqlExecutor;

  /** Each replica: whether reads go to it now, the reads it could not serve, its pool (metrics). */
  replicaStates(): { name: string; up: boolean; failures: number; inUse: number; max: number }[] {
    return this.replicas?.states() ?? [];
  }

  private get(): MssqlPool {
    if (this.pool) return this.pool;
    const ps = this.config.connection_info.pool_settings ?? {};
    // Hasura's MSSQL defaults: 50 connections, idle for 5 seconds.
    this.pool = this.driver({
      connectionString: this.connectionString,
      source: this.name,
      max: ps.max_connections ?? ps.total_max_connections ?? 50,
      idleTimeoutMs: (ps.idle_timeout ?? 5) * 1000,
      requestTimeoutMs: 0,
    });
    return this.pool;
  }

  /** A batch on the pool, its last result set. */
  raw(text: string, params: readonly (string | null)[] = [], signal?: CancelSignal): Promise<MssqlResult> {
    return this.get().query(text, params, signal);
  }

  async introspect(exec?: SqlExecutor): Promise<Introspection> {
    const run = (sql: string): Promise<MssqlResult> => {
      if (!exec) return this.raw(sql);
      if ('raw' in exec) return (exec as MssqlTransaction).raw(sql);
      // Another kind's executor never reaches here; an executor of objects is read back.
      return exec.query<Record<string, unknown>>(sql).then((rows) => ({ columns: Object.keys(rows[0] ?? {}), rows: rows.map((r) => Object.values(r)) }));
    };
    return introspect(run);
  }

  /** A transaction on a connection of its own. The session variables are not made readable:
   * SQL Server's SESSION_CONTEXT outlives the transaction on a pooled connection (Hasura's
   * MSSQL backend does not give them to triggers either). */
  async transaction(): Promise<MssqlTransaction> {
    const level = this.config.connection_info.isolation_level;
    const session = await this.get().begin(level && level !== 'read-uncommitted' ? ISOLATION[level] : 'read-committed');
    const tx = transactionOf(session);
    if (level === 'read-uncommitted') await tx.raw('SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED');
    return tx;
  }

  /**
   * SQL Server's estimated plan (SET SHOWPLAN_TEXT ON): the statement is compiled, not run. The
   * parameters are declared in the batch with their values (showplan compiles a batch, it binds
   * nothing), each as the NVARCHAR(MAX) it is bound as; the answer is the plan's lines.
   */
  async explain(sql: string, params: readonly (string | null)[]): Promise<string[]> {
    const declare = params.map((p, i) => `DECLARE @p${i + 1} nvarchar(max) = ${p === null ? 'NULL' : nlit(p)};`).join(' ');
    const tx = await this.get().begin();
    try {
      await tx.query('SET SHOWPLAN_TEXT ON', []);
      const plan = await tx.query(`${declare} ${sql}`, []);
      return plan.rows.map((r) => String(r[0]));
    } finally {
      await tx.query('SET SHOWPLAN_TEXT OFF', []).catch(() => {});
      await tx.rollback();
    }
  }

  async ping(): Promise<void> {
    await this.raw('SELECT 1 AS [one]');
  }

  stats(): { inUse: number; max: number } {
    return this.pool?.stats?.() ?? { inUse: 0, max: this.config.connection_info.pool_settings?.max_connections ?? 50 };
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    await Promise.all([p?.close(), ...this.replicaConnections.map((r) => r.close())]);
  }
}
