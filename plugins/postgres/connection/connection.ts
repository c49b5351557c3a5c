/**
 * A PostgreSQL source connection over postgres.js: the pool built from `connection_info`,
 * request-scoped transactions (for run_sql and bulk), and introspection.
 */
import postgres from 'postgres';
import { SvcError } from '../../../core/errors.js';
import type { CancelSignal } from '../../../core/plugin.js';
import { ReadReplicas, type Introspection, type SourceConnection, type QueryOptions, type SqlExecutor, type SqlTransaction } from '../../database/index.js';
import { introspect } from './introspect.js';
import { driverOptions, lendRead } from './pg-socket.js';
import { pgTls, type PgSslConfiguration } from './tls.js';

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
  ssl_configuration?: PgSslConfiguration;
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

/**
 * postgres.js's URL and options for a database: TLS as libpq does it, negotiated by the socket
 * (Note [TLS as libpq] in ./tls.ts), whole messages read, large ones into buffers given back
 * (Note [Read buffers given back] in ./pg-socket.ts). The sources' pools and the catalog's.
 */
export function driverFor(
  databaseUrl: string,
  ssl: PgSslConfiguration | undefined,
  env: Readonly<Record<string, string | undefined>>,
): { url: string; options: ReturnType<typeof driverOptions> } {
  const { url, tls } = pgTls(databaseUrl, ssl, env);
  return { url, options: driverOptions(url, tls) };
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
 * round trip before its Bind/Execute. A source with `use_prepared_statements: true` (the default
 * source's setting, as Hasura's --use-prepared-statements defaults to true) gets a pool created
 * with `prepare: true`, and every query says what it wants: the source's setting, or prepared
 * when the caller asks (`query(text, params, {prepare: true})`, which the GraphQL plans and the
 * event worker do: their statement texts are fixed, so PostgreSQL parses and plans each once per
 * connection). postgres.js sends a query without parameters by the simple protocol, unprepared,
 * unless told `simple: false`: a caller's request to prepare says it (ASKED), so a GraphQL plan
 * with no variables is not parsed and planned again at each request (the benchmark's simple
 * list: 0.51 ms a statement unprepared, 0.28 ms prepared). The source's setting does not, as its
 * parameterless queries may hold several statements. Simple-protocol queries are never prepared.
 * A source with `use_prepared_statements: false` (Hasura's default for a source added through the
 * metadata API) prepares nothing, whoever asks: see Note [Poolers].
 */
const PREPARED = { prepare: true } as const;
const ASKED = { prepare: true, simple: false } as const;

/** postgres.js's `onexecute` hook (not in its typings) answering false: the connection takes no
 * other statement until this one is answered, i.e. nothing is pipelined behind it (Note [Poolers]). */
export const ALONE = { onexecute: () => false } as const;
/** A source that prepares nothing (Note [Poolers]): statements unnamed, each alone on its
 * connection; a caller's request to prepare still sends a parameterless statement by the extended
 * protocol (Parse/Bind/Execute/Sync in one round trip), as one statement. */
const POOLED = { prepare: false, ...ALONE } as const;
/** How many statements of a transaction postgres.js writes ahead of their answers. */
const MAX_PIPELINE = 10_000;
const POOLED_ASKED = { prepare: false, simple: false, ...ALONE } as const;

/*
 * Note [Poolers]
 * `use_prepared_statements: false` is what Hasura tells users of PgBouncer (or any pooler in
 * transaction mode) to keep, and what the engine then guarantees: nothing that only works on a
 * server connection of its own. A transaction pooler lends a client a server connection for one
 * transaction (or one statement outside one), then to another client. So, on such a source:
 *   - No named prepared statement, for anything (GraphQL queries, mutations and subscriptions,
 *     the event worker's claim/record/release, capture DDL, run_sql, scheduled events on the
 *     default source, introspection): the pool is created with `prepare: false`, which also makes
 *     postgres.js ignore a query's own `{prepare: true}`. A statement prepared on one server
 *     connection is missing on the next ("prepared statement ... does not exist").
 *   - Nothing written to a connection behind a statement that is still running outside a
 *     transaction: each statement is sent ALONE (postgres.js's `onexecute` hook answering false,
 *     which makes the pool queue the next statement rather than pipeline it). postgres.js
 *     pipelines by default (up to `max_pipeline` behind a running one: 100 by default, MAX_PIPELINE
 *     here), and a statement with parameters that is not prepared goes out as
 *     Parse+Describe+Flush, its Bind+Execute+Sync only after the answer. PgBouncer (1.18, Debian 12's) counts the Syncs it forwards and keeps the
 *     server connection while answers are due, but a Flush is no Sync: once the statement ahead
 *     is answered (ReadyForQuery, idle) it lends the server connection to another client, and the
 *     Describe's answer, or the Bind that follows, meets another client's statement. Requests got
 *     each other's answers (other roles' rows among them) or hung (test/pgbouncer.test.ts).
 *     `max_pipeline` is no way out: 1 still writes one statement behind a running one (postgres.js
 *     counts only the statements waiting behind the running one), which through PgBouncer hung 64
 *     callers after 16 answers (3,000 statements, half of them with parameters, a client pool of
 *     8 on a PgBouncer pool of 2; the default hung after 356; ALONE: 3,000 of 3,000 right, in
 *     1.2 s), and 0 breaks the `onexecute` hand-over that reserved connections and `sql.begin`
 *     rely on. Inside a
 *     transaction the pooler keeps the server connection until it ends, so pipelining there
 *     would be safe; a statement with parameters is not pipelined anyway when it is not prepared.
 * What it costs on a direct connection: each statement with parameters is Parse+Describe, then
 * Bind+Execute (two round trips: postgres.js needs the parameter types to bind) and is parsed and
 * planned every time. Measured in-process on a 2-core machine (the same table on two sources of
 * one database, 1,000 requests a run, medians of 6 runs): a `_by_pk` query as a role took 0.68 ms
 * a request prepared and 1.12 ms not, one request at a time, and 0.48 / 0.75 ms with 16 at once; a
 * list of 20 rows 0.98 / 1.20 ms and 0.67 / 0.89 ms. So the source's setting decides, as in
 * Hasura, and the default source keeps `use_prepared_statements: true` (Hasura's --use-prepared-statements
 * default): behind a pooler it is set false on the source (pg_update_source or replace_metadata),
 * as Hasura's users set the flag; a server flag for the default source would need core/config.ts.
 * A cancel (RunContext.signal) goes through the pooler to the server connection the client holds
 * then; one that arrives after its statement ended may cancel the next statement there, another
 * client's behind a pooler (an error for that request, as PostgreSQL's own protocol allows on a
 * direct connection for the client's next statement), never another's answer.
 *
 * The catalog's pool (server/boot.ts) is always made so, whatever its URL (Note [The catalog
 * behind a pooler] in core/catalog/store.ts): the metadata database may be behind a pooler too
 * (--metadata-database-url), nothing says so, and its statements are few.
 *
 * Session state does not survive a transaction pooler; what uses it:
 *   - LISTEN (SourceConnection.listen: the event worker's wake-up on commit, Note [Waking on
 *     commit] in plugins/event-triggers/worker.ts) is not only deaf through a pooler (it runs on
 *     one server connection, which goes back to the pool, and no notification reaches the
 *     listening client) but harmful: that server connection keeps listening, and PgBouncer 1.18
 *     takes a NotificationResponse arriving on it as leaving the connection's state as it was, so
 *     one arriving while a client's Parse+Describe+Flush is due ("ready" since the last
 *     ReadyForQuery, no Sync to count) or while PgBouncer's own server_check_query runs made it
 *     lend the connection to the next client, which got the other's answer: a `_by_pk` field
 *     answered `[{"?column?": 1}]`, the check query's row (test/pgbouncer.test.ts, about once in
 *     2,500 requests). So a source without prepared statements has no `listen`: the event worker
 *     polls (after a round that found events within 10 ms, doubling to --events-fetch-interval
 *     when idle; Hasura only polls), also on a direct connection. Immediate wake-ups would need
 *     a direct URL for the LISTEN (a setting the engine does not have yet).
 *   - The capture functions' `set_config('svc.event_notified_at', ..., false)` is session state
 *     on purpose (at most one NOTIFY per server session per NOTIFY_EVERY_SEC); behind a pooler it
 *     is per server connection, which is what the rate limit is about anyway.
 *   - The request's session variables (`svc.user`) are set with `set_config(..., true)` inside the
 *     request's transaction, or in a query's own statement: transaction-local, so safe.
 *   - A read-only transaction (`set session characteristics ... read only; begin ...` in one
 *     simple query) holds its server connection from its first statement, and its cleanup (RESET
 *     ALL right behind the ROLLBACK, in one message) resets it before the pooler takes it back.
 *   - run_sql with `no_transaction` runs each statement on whatever server connection the pooler
 *     lends: a session-level SET or SET ROLE, temporary tables, session advisory locks, LISTEN and
 *     cursors WITH HOLD do not carry from one statement to the next, and a SET or SET ROLE stays on
 *     a server connection that other clients get next (RESET_SESSION runs on another one). Such
 *     SQL needs a direct URL, LISTEN above all (see above); run_sql in its transaction (the
 *     default) is safe: its cleanup (RESET_SESSION, UNLISTEN * included) runs before COMMIT.
 */

/** A statement cancelled when `signal` aborts (RunContext.signal: the request was answered
 * without it); one whose request was answered already is not sent. The cancel goes to
 * PostgreSQL on a connection of its own, as its protocol has it.
 *
 * A cancel that reaches the server while the statement is between its round trips (after
 * Parse+Describe, before Bind+Execute: a statement not prepared yet takes two) finds nothing
 * running and is lost, and the statement then runs to its end (a clean-clone CI run saw a
 * 20 s pg_sleep finish). So the cancel is sent again every CANCEL_RETRY_MS until the statement
 * has settled, at most CANCEL_TRIES times (through postgres.js's own canceller: its public
 * cancel() sends only the first). */
async function cancellable<T>(start: () => postgres.PendingQuery<postgres.Row[]>, signal: CancelSignal | undefined): Promise<T> {
  if (!signal) return (await start()) as T;
  if (signal.aborted) throw signal.reason;
  const q = start();
  // postgres.js sends one cancel: Query.cancel() drops its canceller after the first call, so a
  // second call did nothing. Its canceller, kept here, sends another (it takes the query).
  const canceller = (q as unknown as { canceller?: (query: unknown) => Promise<unknown> | undefined }).canceller;
  let settled = false;
  let tries = 0;
  const cancel = () => {
    if (settled) return;
    if (tries === 0 || typeof canceller !== 'function') void q.cancel();
    else void canceller(q)?.catch(() => {});
    if (++tries < CANCEL_TRIES) setTimeout(cancel, CANCEL_RETRY_MS).unref();
  };
  signal.addEventListener('abort', cancel, { once: true });
  try {
    return (await q) as T;
  } finally {
    settled = true;
    signal.removeEventListener('abort', cancel);
  }
}
const CANCEL_RETRY_MS = 200;
const CANCEL_TRIES = 25;

/** The query options of a source's statements: `plain` for a query that does not ask to be
 * prepared, `asked` for one that does (SqlExecutor.query's `prepare`). */
interface Statements {
  plain: typeof PREPARED | typeof POOLED;
  asked: typeof ASKED | typeof POOLED_ASKED;
}

type RawList = postgres.RowList<postgres.Row[]> & { columns?: { name: string }[] };

/** The query as asked: its rows as their values' bytes with `raw` (SqlExecutor.query). */
const rawIf = (q: postgres.PendingQuery<postgres.Row[]>, opts: QueryOptions | undefined): postgres.PendingQuery<postgres.Row[]> =>
  opts?.raw ? (q.raw() as unknown as postgres.PendingQuery<postgres.Row[]>) : q;

function toRaw(res: RawList | RawList[]): PgRawResult {
  // postgres.js answers a multi-statement text with one result per statement that returned rows.
  const last = (res as RawList).command === undefined && res.length > 0 && (res[0] as RawList).command !== undefined ? (res.at(-1) as RawList) : (res as RawList);
  const rows = (last as unknown as (Buffer | null)[][]).map((r) => r.map((b) => (b === null ? null : b.toString('utf8'))));
  return { command: last.command, columns: last.columns?.map((c) => c.name), rows };
}

export class PgConnection implements SourceConnection {
  private pool: postgres.Sql | undefined;
  readonly executor: PgExecutor;
  /** A large raw value lent to its answer, its read buffer given back once sent (Note [Read
   * buffers given back]). */
  readonly answerBytes = lendRead;
  /** The pool's URL and postgres.js's options for it (TLS, the socket). */
  private readonly driver: ReturnType<typeof driverFor>;
  /** Whether the source prepares statements at all (Note [Poolers]). */
  private readonly prepared: boolean;
  /** How a query that does not ask, and one that asks, is sent (Note [Prepared statements per query]). */
  private readonly statements: Statements;

  constructor(
    readonly name: string,
    private readonly config: PgConfiguration,
    private readonly env: Readonly<Record<string, string | undefined>>,
  ) {
    // Resolve the URL and its TLS settings now, so that a missing environment variable or a bad
    // certificate is reported at build time.
    this.driver = driverFor(resolveDatabaseUrl(config.connection_info, env), config.connection_info.ssl_configuration, env);
    this.prepared = config.connection_info.use_prepared_statements === true;
    this.statements = this.prepared ? { plain: PREPARED, asked: ASKED } : { plain: POOLED, asked: POOLED_ASKED };
    this.executor = this.makeExecutor(() => this.sql());
    // Note [Read replicas] in plugins/database: each replica a connection of its own kind.
    this.replicaConnections = (config.read_replicas ?? []).map((info, i) => new PgConnection(`${name}-replica-${i + 1}`, { connection_info: info }, env));
    if (this.replicaConnections.length > 0) {
      this.replicas = new ReadReplicas(this.replicaConnections, this.executor, isStatementError);
      this.readExecutor = this.replicas.executor;
    }
    if (this.prepared) {
      this.listen = async (channel, onNotify, onListen) => {
        const r = await this.sql().listen(channel, onNotify, onListen);
        return { unlisten: () => r.unlisten() };
      };
    }
  }

  private sql(): postgres.Sql {
    if (this.pool) return this.pool;
    const info = this.config.connection_info;
    const ps = info.pool_settings ?? {};
    const { url, options } = this.driver;
    this.pool = postgres(url, {
      ...options,
      max: this.poolSize(),
      idle_timeout: ps.idle_timeout ?? 180,
      max_lifetime: ps.connection_lifetime ?? 600,
      connect_timeout: ps.pool_timeout && ps.pool_timeout > 0 ? ps.pool_timeout : 10,
      // Each query says whether it is prepared (Note [Prepared statements per query]); without
      // use_prepared_statements nothing is (Note [Poolers]).
      prepare: this.prepared,
      // A transaction's statements are written without waiting for answers (Notes [Statements
      // pipelined], [Fields pipelined]); postgres.js's default of 100 in flight made each one
      // past the 100th wait for an answer before it was written (500 updates as root fields:
      // 105-113 -> 33 ms a request, PostgreSQL's CPU 45 -> 22 ms; docs/benchmarks.md "Bulk
      // inserts"). Statements outside a transaction are sent ALONE either way (Note [Poolers]).
      // Not in the typings.
      ...({ max_pipeline: MAX_PIPELINE } as object),
      onnotice: () => {},
      connection: { application_name: `svc-source-${this.name}` },
    });
    return this.pool;
  }

  private makeExecutor(get: () => postgres.Sql): PgExecutor {
    return {
      query: async <T>(text: string, params: unknown[] = [], opts?: QueryOptions) => {
        this.active++;
        try {
          return (await cancellable(() => rawIf(get().unsafe(text, params as postgres.ParameterOrJSON<never>[], opts?.prepare ? this.statements.asked : this.statements.plain), opts), opts?.signal)) as unknown as T[];
        } finally {
          this.active--;
        }
      },
      simple: async (text: string) => toRaw((await get().unsafe(text, [], (this.prepared ? {} : ALONE) as never).simple().raw()) as never),
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
  async transaction(opts: { readOnly?: boolean; session?: Readonly<Record<string, string>> } = {}): Promise<PgExecutor & SqlTransaction> {
    const level = ISOLATION[this.config.connection_info.isolation_level ?? 'read-committed'] ?? 'read committed';
    const begin = opts.readOnly
      ? `set session characteristics as transaction read only; begin isolation level ${level} read only; select 1`
      : `begin isolation level ${level}`;
    const conn = await this.hold(ReservedConnection.open(this.sql(), begin, this.statements));
    const tx = Object.assign(conn.executor, {
      commit: () => this.release(conn, `${RESET_SESSION}; commit`),
      // Nothing to report: a transaction that could not be rolled back was lost, or is discarded.
      rollback: () => this.release(conn, `rollback; ${RESET_SESSION}`).catch(() => {}),
    });
    return opts.session ? withSessionVariables(tx, opts.session) : tx;
  }

  /** EXPLAIN's lines for the statement with these parameters. */
  async explain(sql: string, params: readonly (string | null)[]): Promise<string[]> {
    const rows = await this.executor.query<{ 'QUERY PLAN': string }>(`explain ${sql}`, [...params]);
    return rows.map((r) => r['QUERY PLAN']);
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
   * when it reconnects. None on a source without prepared statements, which may be behind a
   * transaction pooler (Note [Poolers]): SourceConnection.listen is optional, and the event
   * worker then polls. */
  readonly listen?: (channel: string, onNotify: (payload: string) => void, onListen?: () => void) => Promise<{ unlisten(): Promise<void> }>;

  async ping(): Promise<void> {
    await this.sql().unsafe('select 1', [], this.statements.plain);
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = undefined;
    await Promise.all([p?.end({ timeout: 5 }), ...this.replicaConnections.map((r) => r.close())]);
  }

  private readonly replicaConnections: PgConnection[];
  private readonly replicas?: ReadReplicas;
  readonly readExecutor?: SqlExecutor;

  /** Each replica: whether reads go to it now, the reads it could not serve, its pool (metrics). */
  replicaStates(): { name: string; up: boolean; failures: number; inUse: number; max: number }[] {
    return this.replicas?.states() ?? [];
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
    statements: Statements,
  ) {
    const run = <T>(q: () => Promise<T>) => this.run(q);
    this.executor = {
      query: async <T>(text: string, params: unknown[] = [], opts?: QueryOptions) =>
        (await run(() => cancellable(() => rawIf(reserved.unsafe(text, params as postgres.ParameterOrJSON<never>[], opts?.prepare ? statements.asked : statements.plain), opts), opts?.signal))) as unknown as T[],
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
  static async open(pool: postgres.Sql, first: string, statements: Statements): Promise<ReservedConnection> {
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

/**
 * The transaction with the request's session variables set for it as `svc.user` (their JSON),
 * as Hasura sets `hasura.user`, for triggers to read (SourceConnection.transaction `session`).
 * The setting is not awaited: the first statement goes right behind it on the connection
 * (pipelined, one round trip for both), and its failure is reported before that statement's.
 */
function withSessionVariables<T extends PgExecutor & SqlTransaction>(tx: T, session: Readonly<Record<string, string>>): T {
  let setup: Promise<unknown> | undefined = tx.query('select set_config($1, $2, true)', ['svc.user', JSON.stringify(session)]);
  setup.catch(() => {});
  const settled = async () => {
    const s = setup;
    setup = undefined;
    if (s) await s;
  };
  const { query, commit } = tx;
  return Object.assign(tx, {
    query: async <R>(text: string, params?: unknown[], opts?: QueryOptions): Promise<R[]> => {
      const q = query.call(tx, text, params, opts) as Promise<R[]>;
      try {
        await settled();
      } catch (e) {
        q.catch(() => {});
        throw e;
      }
      return q;
    },
    commit: async () => {
      await settled();
      await commit.call(tx);
    },
  });
}
