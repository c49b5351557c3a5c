/**
 * The PostgreSQL source kind (`pg_` operations, and the unprefixed legacy names on /v1/query):
 * connections, introspection, the dialect, run_sql, event capture (./event-capture.ts).
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import * as v from '../../core/valibot.js';
import { definePlugin } from '../../core/plugin.js';
import { DatabaseToken, DEFAULT_SOURCE_ENV, type SourceKind, type SourceMeta } from '../database/index.js';
import { PgConnection, type PgConfiguration } from './connection/connection.js';
import { postgresDialect } from './dialect.js';
import { runSqlOperations } from './admin/run-sql.js';
import { pgDumpRoute } from './admin/pg-dump.js';
import { postgresEvents } from './event-capture.js';
import { setRecordsWorkers } from './records/records-pool.js';
import { SSL_MODES } from './connection/tls.js';

const DatabaseUrl = v.union(
  [
    v.pipe(v.string(), v.minLength(1, 'empty string not allowed')),
    v.object({ from_env: v.pipe(v.string(), v.minLength(1, 'empty string not allowed')) }),
    v.object({
      connection_parameters: v.object({
        username: v.string(),
        password: v.optional(v.string()),
        host: v.string(),
        port: v.number(),
        database: v.string(),
      }),
    }),
  ],
  'expected a URL string, {from_env} or {connection_parameters}',
);

const int = v.pipe(v.number(), v.integer(), v.minValue(0));

const FromEnv = v.object({ from_env: v.pipe(v.string(), v.minLength(1, 'empty string not allowed')) });

/** An optional setting: Hasura reads these with `.:?`, so null means absent (and is not stored). */
const setting = <T extends v.GenericSchema>(s: T) => v.nullish(s);
const withoutAbsent = <T extends Record<string, unknown>>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, x]) => x != null)) as T;

export const ConnectionInfoSchema = v.pipe(
  v.object({
    database_url: DatabaseUrl,
    pool_settings: setting(
      v.pipe(
        v.object({
          max_connections: setting(int),
          total_max_connections: setting(int),
          idle_timeout: setting(int),
          retries: setting(int),
          pool_timeout: setting(int),
          connection_lifetime: setting(int),
        }),
        v.transform(withoutAbsent),
      ),
    ),
    use_prepared_statements: setting(v.boolean()),
    isolation_level: setting(v.picklist(['read-committed', 'repeatable-read', 'serializable'], 'expected one of read-committed, repeatable-read, serializable')),
    // Hasura's PGCertSettings: certificates as PEM text in environment variables (Note [TLS as
    // libpq] in ./tls.ts).
    ssl_configuration: setting(
      v.pipe(
        v.object({
          sslmode: v.picklist(SSL_MODES, `expected one of ${SSL_MODES.join(', ')}`),
          sslrootcert: setting(FromEnv),
          sslcert: setting(FromEnv),
          sslkey: setting(FromEnv),
          sslpassword: setting(v.union([v.string(), FromEnv], 'expected a string or {from_env}')),
        }),
        v.transform(withoutAbsent),
      ),
    ),
  }),
  v.transform(withoutAbsent),
);

export const PgConfigSchema = v.looseObject({
  connection_info: ConnectionInfoSchema,
  read_replicas: v.optional(v.nullable(v.array(ConnectionInfoSchema))),
  extensions_schema: v.optional(v.nullable(v.string())),
});

export const postgresKind: SourceKind = {
  kind: 'postgres',
  prefix: 'pg',
  legacy: true,
  configSchema: PgConfigSchema,
  connect: (name, configuration, env) => new PgConnection(name, configuration as unknown as PgConfiguration, env),
  dialect: postgresDialect,
  operations: (bind) => runSqlOperations(bind),
  events: postgresEvents,
  holdsEngineTables: true,
};

/** The default source registered on first boot: the server's own database, from the environment. */
/** Hasura's --use-prepared-statements: whether the source `default`, made from the database URL
 * at the first boot, prepares its statements (false behind a transaction pooler: Note [Poolers]
 * in ./connection.ts). Read at the first boot only; later, `pg_update_source` changes it. */
export const POSTGRES_OPTIONS = {
  usePreparedStatements: { flag: 'use-prepared-statements', env: 'SVC_GRAPHQL_USE_PREPARED_STATEMENTS', schema: optionSchemas.bool, default: true },
  /** Worker threads that write large lists' JSON (Note [Records written off the main thread] in
   * records-pool.ts); unset: one less than the cores, at most four; 0: none. */
  recordsWorkers: { flag: 'records-workers', env: 'SVC_GRAPHQL_RECORDS_WORKERS', schema: optionSchemas.positiveInt, default: undefined },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof POSTGRES_OPTIONS> {}
}

export function defaultSource(usePreparedStatements = true): SourceMeta {
  return {
    name: 'default',
    kind: 'postgres',
    tables: [],
    configuration: {
      connection_info: {
        database_url: { from_env: DEFAULT_SOURCE_ENV },
        isolation_level: 'read-committed',
        pool_settings: { connection_lifetime: 600, idle_timeout: 180, max_connections: 50, retries: 1 },
        use_prepared_statements: usePreparedStatements,
      },
    },
  };
}

export default definePlugin({
  name: 'postgres',
  options: POSTGRES_OPTIONS,
  after: ['database'],
  setup(k) {
    setRecordsWorkers(k.config.recordsWorkers);
    k.use(DatabaseToken).registerKind(postgresKind);
    k.route(pgDumpRoute(k));
  },
});

// For the CLI (server/cli/migration-sql.ts): a migration file is split and its transaction
// control found as run_sql finds them.
export { leadingWords, splitStatements } from './admin/split.js';
export { transactionControl } from './admin/run-sql.js';
export { recordsWriter, type RecordRow, type RecordCol } from './records/records.js';
export { driverFor } from './connection/connection.js';
