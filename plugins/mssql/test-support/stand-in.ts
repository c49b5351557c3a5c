/**
 * A stand-in for SQL Server at the driver boundary (Note [The driver boundary] in ../driver.ts),
 * for tests only: no SQL Server can run on the development machines. It answers the kind's four
 * catalog queries with the fixture rows of ./fixtures/catalog.json (hand-written, shaped after
 * sys.*: see ./fixtures/README.md), `SELECT 1` (ping), and any other statement with what the
 * test registered for it (`answer`); a statement nobody answers fails as SQL Server fails an
 * unknown object (error 208). Every batch is recorded with its parameters, so tests assert what
 * the kind sent. A connection string naming the server `unreachable` fails to connect the way
 * the mssql driver does (a ConnectionError, ESOCKET), for the inconsistent-source paths.
 *
 * It does not run T-SQL: an answer is what the test says SQL Server would answer. What the
 * compiled statements mean is pinned by the golden tests (../compile.test.ts) and checked only
 * against a real server by ../live.test.ts.
 */
import { readFileSync } from 'node:fs';
import type { MssqlClientConfig, MssqlDriver, MssqlResult } from '../driver.js';
import { COLUMNS_SQL, FOREIGN_KEYS_SQL, KEYS_SQL, TABLES_SQL } from '../introspect.js';

export type Catalog = Record<'tables' | 'columns' | 'keys' | 'foreign_keys', MssqlResult>;

export function fixtureCatalog(): Catalog {
  const doc = JSON.parse(readFileSync(new URL('./fixtures/catalog.json', import.meta.url), 'utf8')) as Catalog & { _comment?: string };
  const { _comment, ...catalog } = doc;
  return catalog;
}

export interface Recorded {
  sql: string;
  params: readonly (string | null)[];
  /** Whether it ran in a transaction (and which: its number). */
  tx?: number;
  /** The server of the pool it was sent on (the connection string's Server). */
  server?: string;
}

type Answer = MssqlResult | ((sql: string, params: readonly (string | null)[]) => MssqlResult);

export interface StandIn {
  driver: MssqlDriver;
  /** The catalog the four queries are answered from (tests may change it: a DDL's effect). */
  catalog: Catalog;
  /** Every batch sent, in order (catalog queries included). */
  readonly statements: Recorded[];
  /** The pools made, with what the kind configured. */
  readonly configs: MssqlClientConfig[];
  /** Answers the batches `match` accepts (the last registered first). */
  answer(match: (sql: string) => boolean, result: Answer): void;
  /** Transactions' ends, in order. */
  readonly ends: ('commit' | 'rollback')[];
  /** Batches other than the catalog queries and pings. */
  sent(): Recorded[];
}

/** A one-column result set of one row: what a compiled statement answers (`json`). */
export const jsonAnswer = (json: unknown, column = 'json'): MssqlResult => ({ columns: [column], rows: [[typeof json === 'string' ? json : JSON.stringify(json)]] });

const serverError = (message: string, number: number) => Object.assign(new Error(message), { name: 'RequestError', code: 'EREQUEST', number });

export function standIn(catalog: Catalog = fixtureCatalog()): StandIn {
  const statements: Recorded[] = [];
  const configs: MssqlClientConfig[] = [];
  const ends: ('commit' | 'rollback')[] = [];
  const answers: { match: (sql: string) => boolean; result: Answer }[] = [];
  let txs = 0;
  const self: StandIn = {
    catalog,
    statements,
    configs,
    ends,
    answer: (match, result) => void answers.unshift({ match, result }),
    sent: () => statements.filter((s) => ![TABLES_SQL, COLUMNS_SQL, KEYS_SQL, FOREIGN_KEYS_SQL, 'SELECT 1 AS [one]'].includes(s.sql)),
    driver: (config) => {
      configs.push(config);
      const server = /(?:server|data source)\s*=\s*(?:tcp:)?([^;,]+)/i.exec(config.connectionString)?.[1]?.trim();
      const run = async (sql: string, params: readonly (string | null)[], tx?: number): Promise<MssqlResult> => {
        if (server === 'unreachable') {
          throw Object.assign(new Error(`Failed to connect to ${server}:1433 - getaddrinfo ENOTFOUND ${server}`), { name: 'ConnectionError', code: 'ESOCKET' });
        }
        statements.push({ sql, params: [...params], ...(tx !== undefined ? { tx } : {}), ...(server ? { server } : {}) });
        if (sql === TABLES_SQL) return self.catalog.tables;
        if (sql === COLUMNS_SQL) return self.catalog.columns;
        if (sql === KEYS_SQL) return self.catalog.keys;
        if (sql === FOREIGN_KEYS_SQL) return self.catalog.foreign_keys;
        if (sql === 'SELECT 1 AS [one]') return { columns: ['one'], rows: [[1]] };
        const a = answers.find((x) => x.match(sql));
        if (!a) throw serverError(`Invalid object name (the stand-in has no answer for: ${sql.slice(0, 120)})`, 208);
        return typeof a.result === 'function' ? a.result(sql, params) : a.result;
      };
      return {
        query: (sql, params) => run(sql, params),
        begin: async () => {
          const id = ++txs;
          if (server === 'unreachable') await run('BEGIN TRANSACTION', []);
          // As mssql's Transaction: one request at a time, a second refused while one runs.
          let busy = false;
          return {
            query: async (sql, params) => {
              if (busy) throw Object.assign(new Error("Can't acquire connection for the request. There is another request in progress."), { name: 'TransactionError', code: 'EREQINPROG' });
              busy = true;
              try {
                await new Promise((r) => setImmediate(r));
                return await run(sql, params, id);
              } finally {
                busy = false;
              }
            },
            commit: async () => void ends.push('commit'),
            rollback: async () => void ends.push('rollback'),
          };
        },
        stats: () => ({ inUse: 0, max: config.max }),
        close: async () => {},
      };
    },
  };
  return self;
}
