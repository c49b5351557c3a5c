/**
 * The connection boundary of the MS SQL Server kind: the little it needs of a SQL Server client
 * (Note [The driver boundary]), and that boundary implemented over `mssql` (tedious).
 */
import type sql from 'mssql';
import type { CancelSignal } from '../../core/plugin.js';

/** `mssql` is loaded when a source first connects: a server without MSSQL sources never loads it. */
let loaded: Promise<typeof sql> | undefined;
const mssql = (): Promise<typeof sql> => (loaded ??= import('mssql').then((m) => (m as unknown as { default: typeof sql }).default ?? (m as unknown as typeof sql)));

/*
 * Note [The driver boundary]
 * Everything the kind asks of SQL Server goes through `MssqlPool`: a statement with text
 * parameters (each bound as NVARCHAR(MAX), @p1, @p2, ...; the statement casts them to the
 * column's type, as the PostgreSQL kind casts its text parameters), a transaction on a connection
 * of its own, and closing. Its answer is the last result set of the batch, as column names and
 * rows of values (arrays, so that run_sql keeps columns of the same name apart). Nothing else of
 * the client leaks into the kind: introspection, the compiler's statements, run_sql and explain
 * all go through it. That is also where the tests put their stand-in (test-support/stand-in.ts):
 * a pool that answers the catalog queries with fixture rows and the compiled statements with
 * answers the test gives, so that the metadata API and the GraphQL pipeline run end to end
 * without a server (none can run on the development machines).
 */

/** The last result set of a batch: its column names and rows. */
export interface MssqlResult {
  columns: string[];
  rows: unknown[][];
}

export interface MssqlSession {
  /** A batch on the transaction's connection. */
  query(text: string, params: readonly (string | null)[], signal?: CancelSignal): Promise<MssqlResult>;
  commit(): Promise<void>;
  /** Rolls back; resolves even when the server already rolled the transaction back (XACT_ABORT). */
  rollback(): Promise<void>;
}

export interface MssqlPool {
  query(text: string, params: readonly (string | null)[], signal?: CancelSignal): Promise<MssqlResult>;
  begin(isolation?: 'read-committed' | 'repeatable-read' | 'serializable' | 'snapshot'): Promise<MssqlSession>;
  /** Connections in use and the pool's size (metrics). */
  stats?(): { inUse: number; max: number };
  close(): Promise<void>;
}

/** What the kind hands the driver: a connection string (ADO.NET or ODBC keywords) and pool sizes. */
export interface MssqlClientConfig {
  connectionString: string;
  /** The source's name (the application name the server sees). */
  source: string;
  max: number;
  idleTimeoutMs: number;
  /** How long a statement may run before the driver gives up (ms); 0: no limit. */
  requestTimeoutMs: number;
}

export type MssqlDriver = (config: MssqlClientConfig) => MssqlPool;

/** ODBC's `Encrypt` values that mean no encryption (Hasura's connection strings are ODBC's:
 * `Encrypt=optional` with ODBC Driver 18), which the `mssql` parser reads as true. */
const NO_ENCRYPT = /(^|;)\s*encrypt\s*=\s*(optional|no|false)\s*(;|$)/i;

/** Parses a connection string into `mssql`'s configuration; throws with the parser's message. */
export function clientConfig(m: typeof sql, c: MssqlClientConfig): sql.config {
  const parsed = m.ConnectionPool.parseConnectionString(c.connectionString) as sql.config;
  if (!parsed.server) throw new Error('the connection string names no server (Server=host,port)');
  const options = { ...(parsed.options ?? {}), appName: `svc-source-${c.source}` };
  if (NO_ENCRYPT.test(c.connectionString)) options.encrypt = false;
  return {
    ...parsed,
    options,
    pool: { ...(parsed.pool ?? {}), max: c.max, min: 0, idleTimeoutMillis: c.idleTimeoutMs },
    requestTimeout: c.requestTimeoutMs,
  };
}

/** `mssql`'s answer as the boundary's: the last result set (arrayRowMode: rows are arrays). */
function toResult(r: sql.IResult<unknown>): MssqlResult {
  const sets = (r.recordsets ?? []) as unknown as unknown[][][];
  const cols = ((r as unknown as { columns?: { name: string }[][] }).columns ?? []) as { name: string }[][];
  if (sets.length === 0) return { columns: [], rows: [] };
  const last = sets.length - 1;
  return { columns: (cols[last] ?? []).map((c) => c.name), rows: sets[last] ?? [] };
}

async function run(m: typeof sql, req: sql.Request, text: string, params: readonly (string | null)[], signal: CancelSignal | undefined): Promise<MssqlResult> {
  req.arrayRowMode = true;
  params.forEach((p, i) => req.input(`p${i + 1}`, m.NVarChar(m.MAX), p));
  if (!signal) return toResult(await req.query(text));
  if (signal.aborted) throw signal.reason;
  const cancel = () => req.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    return toResult(await req.query(text));
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

const ISOLATION = { 'read-committed': 'READ_COMMITTED', 'repeatable-read': 'REPEATABLE_READ', serializable: 'SERIALIZABLE', snapshot: 'SNAPSHOT' } as const;

/** The boundary over `mssql` (tedious): a pool that connects on first use, and again after a
 * failed connect (a server that was down at boot is tried again by the next statement). */
export const tediousDriver: MssqlDriver = (c) => {
  let pool: sql.ConnectionPool | undefined;
  let connecting: Promise<sql.ConnectionPool> | undefined;
  let held = 0;
  const ready = (): Promise<sql.ConnectionPool> => {
    if (pool?.connected) return Promise.resolve(pool);
    connecting ??= (async () => {
      const m = await mssql();
      // A connection string the parser refuses fails here, as a server that cannot be reached.
      const p = new m.ConnectionPool(clientConfig(m, c));
      p.on('error', () => {});
      try {
        await p.connect();
      } catch (e) {
        connecting = undefined;
        void p.close().catch(() => {});
        throw e;
      }
      pool = p;
      connecting = undefined;
      return p;
    })();
    return connecting;
  };
  return {
    query: async (text, params, signal) => {
      const p = await ready();
      return run(await mssql(), p.request(), text, params, signal);
    },
    begin: async (isolation = 'read-committed') => {
      const p = await ready();
      const m = await mssql();
      const tx = new m.Transaction(p);
      await tx.begin(m.ISOLATION_LEVEL[ISOLATION[isolation]]);
      held++;
      let done = false;
      const finish = () => {
        if (!done) held--;
        done = true;
      };
      return {
        query: (text, params, signal) => run(m, new m.Request(tx), text, params, signal),
        commit: async () => {
          try {
            await tx.commit();
          } finally {
            finish();
          }
        },
        rollback: async () => {
          try {
            await tx.rollback();
          } catch {
            // Already rolled back by the server (XACT_ABORT after an error) or lost with its
            // connection: nothing is left to undo.
          } finally {
            finish();
          }
        },
      };
    },
    stats: () => ({ inUse: Math.min(c.max, held + (pool ? pool.borrowed : 0)), max: c.max }),
    close: async () => {
      const p = pool ?? (connecting ? await connecting.catch(() => undefined) : undefined);
      pool = undefined;
      await p?.close();
    },
  };
};
