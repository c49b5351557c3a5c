/**
 * The BigQuery source kind (`bigquery_` operations), on the source-kind contract
 * (docs/source-kinds.md): Google's client behind a small boundary (./driver.ts), introspection of
 * the configured datasets' INFORMATION_SCHEMA (./introspect.ts), the GoogleSQL dialect and
 * compiler (./dialect.ts, ./compile.ts; read-only, as Hasura's BigQuery backend), tables named
 * `{dataset, name}` (Note [Table names of a kind] in plugins/database), `bigquery_run_sql`.
 */
import * as v from '../../core/valibot.js';
import { definePlugin, type PluginDef } from '../../core/plugin.js';
import { DatabaseToken, type SourceKind } from '../database/index.js';
import { BigQueryConnection, type BigQueryConfiguration } from './connection.js';
import { bigqueryDialect } from './dialect.js';
import { googleDriver, type BigQueryDriver } from './driver.js';
import { runSqlOperations } from './run-sql.js';

export type { BigQueryDriver, BigQueryClient, BigQueryClientConfig, BigQueryResult } from './driver.js';
export { bigqueryDialect } from './dialect.js';

const nonEmpty = v.pipe(v.string(), v.minLength(1, 'empty string not allowed'));
const FromEnv = v.object({ from_env: nonEmpty });
const numberish = v.union([v.pipe(v.number(), v.integer(), v.minValue(0)), v.pipe(v.string(), v.regex(/^\d+$/, 'expected a non-negative integer'))], 'expected a non-negative integer');

/** Hasura v2's BigQuery configuration: the service account's key (JSON text, the object, or an
 * environment variable holding the text), the project, the datasets (a list, comma-separated
 * text, or an environment variable holding that text), the global select limit, retries. */
export const BigQueryConfigSchema = v.looseObject({
  service_account: v.union([nonEmpty, FromEnv, v.record(v.string(), v.unknown())], 'expected the service account key as JSON text, an object or {from_env}'),
  project_id: v.union([nonEmpty, FromEnv], 'expected a project id or {from_env}'),
  datasets: v.union([v.array(nonEmpty), nonEmpty, FromEnv], 'expected a list of datasets, comma-separated text or {from_env}'),
  global_select_limit: v.optional(numberish),
  retry_limit: v.optional(numberish),
  retry_base_delay: v.optional(numberish),
});

export function bigqueryKind(driver: BigQueryDriver = googleDriver): SourceKind {
  return {
    kind: 'bigquery',
    prefix: 'bigquery',
    legacy: false,
    configSchema: BigQueryConfigSchema,
    connect: (name, configuration, env) => new BigQueryConnection(name, v.parse(BigQueryConfigSchema, configuration) as unknown as BigQueryConfiguration, env, driver),
    dialect: bigqueryDialect,
    operations: (bind) => runSqlOperations(bind),
  };
}

/** The plugin with another driver (tests: a stand-in at the connection boundary). */
export function bigqueryPlugin(driver: BigQueryDriver = googleDriver): PluginDef {
  return definePlugin({
    name: 'bigquery',
    after: ['database'],
    setup(k) {
      k.use(DatabaseToken).registerKind(bigqueryKind(driver));
    },
  });
}

export default bigqueryPlugin();
