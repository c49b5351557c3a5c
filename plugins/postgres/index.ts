/**
 * The PostgreSQL source kind (`pg_` operations, and the unprefixed legacy names on /v1/query):
 * connections, introspection, run_sql.
 */
import * as v from 'valibot';
import { definePlugin } from '../../core/plugin.js';
import { DatabaseToken } from '../database/service.js';
import type { SourceKind, SourceMeta } from '../database/types.js';
import { DEFAULT_SOURCE_ENV } from '../database/index.js';
import { PgConnection, type PgConfiguration } from './connection.js';
import { runSqlOperations } from './run-sql.js';
import { pgDumpRoute } from './pg-dump.js';

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
export const ConnectionInfoSchema = v.object({
  database_url: DatabaseUrl,
  pool_settings: v.optional(
    v.object({
      max_connections: v.optional(int),
      total_max_connections: v.optional(int),
      idle_timeout: v.optional(int),
      retries: v.optional(int),
      pool_timeout: v.optional(int),
      connection_lifetime: v.optional(int),
    }),
  ),
  use_prepared_statements: v.optional(v.boolean()),
  isolation_level: v.optional(v.picklist(['read-committed', 'repeatable-read', 'serializable'], 'expected one of read-committed, repeatable-read, serializable')),
  ssl_configuration: v.optional(v.unknown()),
});

export const PgConfigSchema = v.looseObject({
  connection_info: ConnectionInfoSchema,
  read_replicas: v.optional(v.nullable(v.array(ConnectionInfoSchema))),
  extensions_schema: v.optional(v.nullable(v.string())),
});

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export const postgresKind: SourceKind = {
  kind: 'postgres',
  prefix: 'pg',
  legacy: true,
  configSchema: PgConfigSchema,
  connect: (name, configuration, env) => new PgConnection(name, configuration as unknown as PgConfiguration, env),
  quoteIdent,
  operations: (bind) => runSqlOperations(bind),
};

/** The default source registered on first boot: the server's own database, from the environment. */
export function defaultSource(): SourceMeta {
  return {
    name: 'default',
    kind: 'postgres',
    tables: [],
    configuration: {
      connection_info: {
        database_url: { from_env: DEFAULT_SOURCE_ENV },
        isolation_level: 'read-committed',
        pool_settings: { connection_lifetime: 600, idle_timeout: 180, max_connections: 50, retries: 1 },
        use_prepared_statements: true,
      },
    },
  };
}

export default definePlugin({
  name: 'postgres',
  after: ['database'],
  setup(k) {
    k.use(DatabaseToken).registerKind(postgresKind);
    k.route(pgDumpRoute(k));
  },
});
