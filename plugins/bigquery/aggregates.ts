/**
 * BigQuery's aggregate functions (Note [BigQuery aggregates]), declared by the dialect
 * (./dialect.ts) and written by the GoogleSQL compiler (./compile.ts).
 */
import { hasuraAggregates, type Aggregates, type ScalarType } from '../database/index.js';

/*
 * Note [BigQuery aggregates]
 * Hasura's ten names (Note [Aggregates of a kind] in plugins/database), on the types Hasura's
 * BigQuery backend offers them for (Hasura.Backends.BigQuery.Types isNumType and
 * isComparableType):
 * - `sum`, `avg` and the statistics on INT64, FLOAT64, NUMERIC and BIGNUMERIC;
 * - `max` and `min` on every type BigQuery can order: all but GEOGRAPHY and JSON (Hasura's
 *   exceptions), ARRAY (no scalar in Hasura) and STRUCT (Hasura offers it; BigQuery refuses MAX
 *   of a STRUCT): ScalarType.comparable says the same. So BOOL, BYTES (and INTERVAL, which Hasura does not
 *   know) columns have them too.
 * GoogleSQL names them as standard SQL does (SUM, AVG, STDDEV_POP, VAR_SAMP, ...).
 */
const NUMERIC = new Set(['INT64', 'FLOAT64', 'NUMERIC', 'BIGNUMERIC']);

export const BIGQUERY_AGGREGATES: Aggregates = hasuraAggregates(
  (s: ScalarType) => NUMERIC.has(s.name),
  (s: ScalarType) => s.comparable,
);
