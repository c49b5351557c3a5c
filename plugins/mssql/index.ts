/**
 * The MS SQL Server source kind (`mssql_` operations), on the source-kind contract
 * (docs/source-kinds.md): a driver over `mssql` (tedious) behind a small boundary (./driver.ts),
 * introspection from sys.* (./introspect.ts), the T-SQL dialect and compiler (./dialect.ts,
 * ./compile.ts), `mssql_run_sql` (./run-sql.ts) and event capture (./event-capture.ts).
 */
import * as v from '../../core/valibot.js';
import { definePlugin, type PluginDef } from '../../core/plugin.js';
import { DatabaseToken, type SourceKind } from '../database/index.js';
import { MssqlConnection, type MssqlConfiguration } from './connection.js';
import { mssqlDialect } from './dialect.js';
import { tediousDriver, type MssqlDriver } from './driver.js';
import { mssqlEvents } from './event-capture.js';
import { runSqlOperations } from './run-sql.js';

export type { MssqlDriver, MssqlPool, MssqlResult, MssqlSession, MssqlClientConfig } from './driver.js';
export { mssqlDialect } from './dialect.js';

const nonEmpty = v.pipe(v.string(), v.minLength(1, 'empty string not allowed'));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));
/** Hasura reads optional settings with `.:?`: null is absent (and is not kept). */
const setting = <T extends v.GenericSchema>(s: T) => v.nullish(s);
const withoutAbsent = <T extends Record<string, unknown>>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, x]) => x != null)) as T;

/** Hasura v2's MSSQL `connection_info`: the connection string (ODBC or ADO.NET keywords) by
 * value or from an environment variable, pool settings, the isolation level. */
export const MssqlConnectionInfoSchema = v.pipe(
  v.object({
    connection_string: v.union([nonEmpty, v.object({ from_env: nonEmpty })], 'expected a connection string or {from_env}'),
    pool_settings: setting(
      v.pipe(
        v.object({ max_connections: setting(count), total_max_connections: setting(count), idle_timeout: setting(count) }),
        v.transform(withoutAbsent),
      ),
    ),
    isolation_level: setting(
      v.picklist(['read-uncommitted', 'read-committed', 'repeatable-read', 'snapshot', 'serializable'], 'expected one of read-uncommitted, read-committed, repeatable-read, snapshot, serializable'),
    ),
  }),
  v.transform(withoutAbsent),
);

/** Hasura v2's MSSQL configuration: `connection_info`, and `read_replicas`, connection infos of
 * their own that serve the reads that may lag (Note [Read replicas] in plugins/database). */
export const MssqlConfigSchema = v.looseObject({ connection_info: MssqlConnectionInfoSchema, read_replicas: setting(v.array(MssqlConnectionInfoSchema)) });

/** The kind, with the driver its connections use (the real one, or a test's stand-in). */
export function mssqlKind(driver: MssqlDriver = tediousDriver): SourceKind {
  return {
    kind: 'mssql',
    prefix: 'mssql',
    legacy: false,
    configSchema: MssqlConfigSchema,
    connect: (name, configuration, env) => {
      // mssql_add_source checked it; replace_metadata keeps a configuration as given.
      const config = v.parse(MssqlConfigSchema, configuration) as unknown as MssqlConfiguration;
      return new MssqlConnection(name, config, env, driver);
    },
    dialect: mssqlDialect,
    operations: (bind) => runSqlOperations(bind),
    // Event triggers (Note [MSSQL capture triggers] in ./event-capture.ts).
    events: mssqlEvents,
  };
}

/** The plugin with another driver (tests: a stand-in at the connection boundary). */
export function mssqlPlugin(driver: MssqlDriver = tediousDriver): PluginDef {
  return definePlugin({
    name: 'mssql',
    after: ['database'],
    setup(k) {
      k.use(DatabaseToken).registerKind(mssqlKind(driver));
    },
  });
}

export default mssqlPlugin();
