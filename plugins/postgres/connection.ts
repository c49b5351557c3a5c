/**
 * A PostgreSQL source connection over postgres.js: the pool built from `connection_info`,
 * request-scoped transactions (for run_sql and bulk), and introspection.
 */
import postgres from 'postgres';
import { SvcError } from '../../core/errors.js';
import type { CancelSignal } from '../../core/plugin.js';
import type { Introspection, SourceConnection, SqlExecutor, SqlTransaction } from '../database/index.js';
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

/*
 * Note [Prepared statements per query]
 * postgres.js decides per query whether to prepare a named statement, but only when the pool was
 * created with `prepare: true`: with `prepare: false` a query's own `{prepare: true}` is ignored
 * (its connection.js ANDs the two), and every statement with parameters costs a Parse+Describe
 * round trip before its Bind/Execute. So the pool is created with `prepare: true` and every
 * query says what it wants: the source's `use_prepared_statements` (default false, as Hasura),
 * or prepared when the caller asks (`query(text, params, {prepare: true})`, which the GraphQL
 * plans do: their statement texts are fixed, so PostgreSQL parses and plans each once per
 * connection). postgres.js sends a query without parameters by the simple protocol, unprepared,
 * unless told `simple: false`: a caller's request to prepare says it (ASKED), so a GraphQL plan
 * with no variables is not parsed and planned again at each request (the benchmark's simple
 * list: 0.51 ms a statement unprepared, 0.28 ms prepared). The source's setting does not, as its
 * parameterless queries may hold several statements. Simple-protocol queries are never prepared.
 */
const PREPARED = { prepare: true } as const;
const ASKED = { prepare: true, simple: false } as const;
const UNPREPARED = { prepare: false } as const;

/** A statement cancelled when `signal` aborts (RunContext.signal: the request was answered
 * without it); one whose request was answered already is not sent. The cancel goes to
 * PostgreSQL on a connection of its own, as its protocol has it. */
async function cancellable<T>(start: () => postgres.PendingQuery<postgres.Row[]>, signal: CancelSignal | undefined): Promise<T> {
  if (!signal) return (await start()) as T;
  if (signal.aborted) throw signal.reason;
  const q = start();
  const onAbort = () => void q.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return (await q) as T;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

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
  /** Whether a query that does not ask is prepared (Note [Prepared statements per query]). */
  private readonly statements: typeof PREPARED | typeof UNPREPARED;

  constructor(
    readonly name: string,
    private readonly config: PgConfiguration,
    private readonly env: Readonly<Record<string, string | undefined>>,
  ) {
    // Resolve the URL now so that a missing environment variable is reported at build time.
    resolveDatabaseUrl(config.connection_info, env);
    this.statements = config.connection_info.use_prepared_statements ? PREPARED : UNPREPARED;
    this.executor = this.makeExecutor(() => this.sql());
  }

  private sql(): postgres.Sql {
    if (this.pool) return this.pool;
    const info = this.config.connection_info;
    const ps = info.pool_settings ?? {};
    this.pool = postgres(resolveDatabaseUrl(info, this.env), {
      max: this.poolSize(),
      idle_timeout: ps.idle_timeout ?? 180,
      max_lifetime: ps.connection_lifetime ?? 600,
      connect_timeout: ps.pool_timeout && ps.pool_timeout > 0 ? ps.pool_timeout : 10,
      // Each query says whether it is prepared (Note [Prepared statements per query]).
      prepare: true,
      onnotice: () => {},
      connection: { application_name: `svc-source-${this.name}` },
    });
    return this.pool;
  }

  private makeExecutor(get: () => postgres.Sql): PgExecutor {
    return {
      query: async <T>(text: string, params: unknown[] = [], opts?: { prepare?: boolean; signal?: CancelSignal }) => {
        this.active++;
        try {
          return (await cancellable(() => get().unsafe(text, params as postgres.ParameterOrJSON<never>[], opts?.prepare ? ASKED : this.statements), opts?.signal)) as unknown as T[];
        } finally {
          this.active--;
        }
      },
      simple: async (text: string) => toRaw((await get().unsafe(text).simple().raw()) as never),
    };
  }

  /** Statements running on the pool (each holds a connection while it runs; more wait). */
  private active = 0;
  /** Connections held by transactions and sessions. */
  private held = 0;

  stats(): { inUse: number; max: number } {
    const max = this.poolSize();
    return { inUse: Math.max(0, Math.min(max, this.active + this.held)), max };
  }

  private poolSize(): number {
    const ps = this.config.connection_info.pool_settings ?? {};
    return ps.max_connections ?? ps.total_max_connections ?? 10;
  }

  async introspect(exec?: SqlExecutor): Promise<Introspection> {
    return introspect(exec ?? this.executor);
  }

  /**
   * A transaction on a connection of its own. `readOnly` also makes read-only the transactions
   * that would follow a COMMIT slipped into it, and takes a snapshot so that it cannot be made
   * writable again (Note [Reserved connections]).
   */
  async transaction(opts: { readOnly?: boolean } = {}): Promise<PgExecutor & SqlTransaction> {
    const level = ISOLATION[this.config.connection_info.isolation_level ?? 'read-committed'] ?? 'read committed';
    const begin = opts.readOnly
      ? `set session characteristics as transaction read only; begin isolation level ${level} read only; select 1`
      : `begin isolation level ${level}`;
    const conn = await this.hold(ReservedConnection.open(this.sql(), begin, this.statements));
    return Object.assign(conn.executor, {
      commit: () => this.release(conn, `${RESET_SESSION}; commit`),
      // Nothing to report: a transaction that could not be rolled back was lost, or is discarded.
      rollback: () => this.release(conn, `rollback; ${RESET_SESSION}`).catch(() => {}),
    });
  }

  /** A connection of its own outside a transaction; a transaction left open is rolled back. */
  async session(): Promise<PgSession> {
    const conn = await this.hold(ReservedConnection.open(this.sql(), 'select 1', this.statements));
    // What the session ran is committed: a connection that cannot be cleaned is discarded, silently.
    return Object.assign(conn.executor, { release: () => this.release(conn, `rollback; ${RESET_SESSION}`).catch(() => {}) });
  }

  /** Counts a reserved connection as held until `release` (for `stats`). */
  private async hold(opening: Promise<ReservedConnection>): Promise<ReservedConnection> {
    const conn = await opening;
    this.held++;
    return conn;
  }

  private async release(conn: ReservedConnection, cleanup: string): Promise<void> {
    if (conn.isFinished) return conn.finish(cleanup);
    try {
      await conn.finish(cleanup);
    } finally {
      this.held--;
    }
  }

  /** postgres.js's LISTEN: one connection of the pool's client for all channels, listening again
   * when it reconnects. */
  async listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<{ unlisten(): Promise<void> }> {
    const r = await this.sql().listen(channel, onNotify, onListen);
    return { unlisten: () => r.unlisten() };
  }

  async ping(): Promise<void> {
    await this.sql().unsafe('select 1', [], UNPREPARED);
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    await p?.end({ timeout: 5 });
  }
}

/** What a connection must not keep from one use to the next (what DISCARD ALL resets, but the
 * prepared statements of the driver). RESET ALL leaves the role and the session user alone. */
const RESET_SESSION = 'reset all; reset session authorization; reset role; close all; unlisten *; select pg_advisory_unlock_all(); discard temp';

/*
 * Note [Reserved connections]
 * postgres.js hands out a reserved connection (`sql.reserve()`) and takes it back with
 * `release()`, as it is: nothing checks that it is still open or clean. Two ways this went wrong:
 *   - A lost connection (a terminated backend, a restarted server, the network). When the socket
 *     closes, postgres.js moves the connection to its closed queue, but the reserved handle still
 *     sends to it: the query is buffered and written from a timer to a null socket, a TypeError
 *     (`Cannot read properties of null (reading 'write')`) that nothing catches and that ended the
 *     process; and `release()` put the dead connection in the open queue, where the next pool
 *     query met the same fate. So the close is watched (postgres.js's own `begin()` does it the
 *     same way: the `onexecute` hook gives the driver connection, whose `onclose` the pool calls),
 *     nothing is sent after it, the request fails with a connection error, and the connection is
 *     not released: the pool already has it back and reconnects it when needed.
 *   - A dirty connection: left in a transaction, in COPY, with session state (a SET, a role, a
 *     temporary table). The connection is released only after its cleanup (COMMIT or ROLLBACK,
 *     then RESET_SESSION) succeeded; after anything else (an error of the cleanup, an error that
 *     is not a statement's ERROR, a COPY stream) it is discarded: the driver connection is
 *     terminated and the pool opens a fresh one in its slot.
 */

/** The part of a postgres.js driver connection used here (not in its typings). */
interface DriverConnection {
  onclose: ((e: unknown) => void) | null;
  terminate(): void;
}

class ReservedConnection {
  private lost = false;
  private dirty = false;
  private finished = false;
  private driver: DriverConnection | undefined;
  readonly executor: PgExecutor;

  private constructor(
    private readonly reserved: postgres.ReservedSql,
    statements: typeof PREPARED | typeof UNPREPARED,
  ) {
    const run = <T>(q: () => Promise<T>) => this.run(q);
    this.executor = {
      query: async <T>(text: string, params: unknown[] = [], opts?: { prepare?: boolean; signal?: CancelSignal }) =>
        (await run(() => cancellable(() => reserved.unsafe(text, params as postgres.ParameterOrJSON<never>[], opts?.prepare ? ASKED : statements), opts?.signal))) as unknown as T[],
      simple: async (text: string) => {
        const res = await run(() => reserved.unsafe(text).simple().raw() as unknown as Promise<unknown>);
        // COPY FROM STDIN / TO STDOUT answers a stream and leaves the connection in COPY.
        if (!Array.isArray(res)) {
          this.dirty = true;
          throw connectionError('the statement left the connection in COPY mode');
        }
        return toRaw(res as never);
      },
    };
  }

  /** Reserves a connection and runs `first` on it (which also hands over the driver connection). */
  static async open(pool: postgres.Sql, first: string, statements: typeof PREPARED | typeof UNPREPARED): Promise<ReservedConnection> {
    const conn = new ReservedConnection(await pool.reserve(), statements);
    const onexecute = (c: DriverConnection) => {
      conn.driver = c;
      c.onclose = () => {
        conn.lost = true;
      };
      return true;
    };
    try {
      await conn.run(() => conn.reserved.unsafe(first, [], { onexecute } as never).simple() as unknown as Promise<unknown>);
      if (!conn.driver) throw connectionError('the database driver did not hand over its connection');
    } catch (e) {
      conn.dirty = true;
      await conn.finish('').catch(() => {});
      throw e;
    }
    return conn;
  }

  private async run<T>(q: () => Promise<T>): Promise<T> {
    if (this.lost) throw connectionError('the connection to the database was lost');
    if (this.dirty || this.finished) throw connectionError('the connection is no longer usable');
    try {
      return await q();
    } catch (e) {
      // A statement's ERROR leaves the connection usable (at worst in an aborted transaction);
      // anything else (FATAL, a driver error) does not.
      if (this.lost || !isStatementError(e)) {
        this.dirty = true;
        throw this.lost ? connectionError(`the connection to the database was lost (${(e as Error)?.message ?? e})`) : e;
      }
      throw e;
    }
  }

  get isFinished(): boolean {
    return this.finished;
  }

  /** Ends the use of the connection: runs `cleanup` and releases it, or discards it. Throws when
   * the cleanup could not run (for a commit: the transaction was not committed). */
  async finish(cleanup: string): Promise<void> {
    if (this.finished) return;
    let failure: unknown;
    if (!this.lost && !this.dirty && cleanup) {
      try {
        await this.run(() => this.reserved.unsafe(cleanup).simple() as unknown as Promise<unknown>);
      } catch (e) {
        failure = e;
        this.dirty = true;
      }
    }
    this.finished = true;
    if (this.lost) {
      // Already back in the pool's closed queue: releasing it would hand a dead connection out.
      throw failure ?? connectionError('the connection to the database was lost');
    }
    if (this.dirty || !cleanup) {
      this.driver?.terminate();
      if (!this.driver) this.reserved.release();
    } else {
      if (this.driver) this.driver.onclose = null;
      this.reserved.release();
    }
    if (failure) throw failure;
  }
}

function isStatementError(e: unknown): boolean {
  return e instanceof postgres.PostgresError && e.severity === 'ERROR';
}

/** Hasura's `postgres-error` for a connection error: a 500, since the request itself may be fine. */
function connectionError(detail: string): SvcError {
  return new SvcError('postgres-error', `connection error: ${detail}`, { path: '$', status: 500 });
}
