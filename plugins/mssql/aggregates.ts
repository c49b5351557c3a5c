/**
 * SQL Server's aggregate functions (Note [MSSQL aggregates]), declared by the dialect
 * (./dialect.ts) and written by the T-SQL compiler (./compile.ts).
 */
import { hasuraAggregates, type Aggregates, type ScalarType } from '../database/index.js';

/*
 * Note [MSSQL aggregates]
 * Hasura's ten names (Note [Aggregates of a kind] in plugins/database), on the types Hasura's
 * MSSQL backend offers them for (Hasura.Backends.MSSQL.Types.Internal isNumType and
 * isComparableType):
 * - `sum`, `avg` and the statistics on the exact and approximate numbers: tinyint, smallint,
 *   int, bigint, decimal, numeric, float, real. Not money or smallmoney: Hasura's backend knows
 *   them as types of its own (UnknownType), which are not numeric there.
 * - `max` and `min` on every type but binary, varbinary, bit and uniqueidentifier (Hasura's
 *   exceptions), and but those SQL Server cannot compare at all (ScalarType.comparable: text,
 *   ntext, image, xml, geography, geometry, sql_variant), which Hasura offers and SQL Server
 *   refuses ("Operand data type text is invalid for max operator"); and but rowversion (reported
 *   as `timestamp`), a binary(8). geometry and geography are `comparable` for their `_st_*`
 *   operators (Note [MSSQL spatial values] in ./geo.ts), not ordered: named here too.
 * Written as T-SQL names them: STDEV and STDEVP, VAR and VARP (`stddev` and `variance` are the
 * samples', as in PostgreSQL); AVG of an integer column is an integer in T-SQL, so the compiler
 * averages the value times 1.0 (./compile.ts aggregateFn).
 */
const NUMERIC = new Set(['tinyint', 'smallint', 'int', 'bigint', 'decimal', 'numeric', 'float', 'real']);
const NOT_ORDERED = new Set(['binary', 'varbinary', 'bit', 'uniqueidentifier', 'timestamp', 'geometry', 'geography']);

export const MSSQL_AGGREGATES: Aggregates = hasuraAggregates(
  (s: ScalarType) => NUMERIC.has(s.name),
  (s: ScalarType) => s.comparable && !NOT_ORDERED.has(s.name),
  { stddev: 'STDEV', stddev_samp: 'STDEV', stddev_pop: 'STDEVP', variance: 'VAR', var_samp: 'VAR', var_pop: 'VARP' },
);
