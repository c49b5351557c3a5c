/**
 * PostgreSQL's aggregate functions (Note [Aggregates of a kind] in plugins/database): Hasura's
 * ten, on the columns Hasura's PostgreSQL backend offers them for (numeric types the statistics
 * and `sum`; numeric, string and date-time types `max` and `min`: ScalarType.category), each
 * written as PostgreSQL names it, which is the name GraphQL shows (`stddev_pop(...)`). The
 * dialect declares them, and the compilers (./compile.ts, ./compile-groups.ts) write them.
 */
import { hasuraAggregates, isNumericScalar, isOrderedScalar, type Aggregates } from '../../database/index.js';

export const PG_AGGREGATES: Aggregates = hasuraAggregates(isNumericScalar, isOrderedScalar, {
  sum: 'sum',
  avg: 'avg',
  max: 'max',
  min: 'min',
  stddev: 'stddev',
  stddev_samp: 'stddev_samp',
  stddev_pop: 'stddev_pop',
  variance: 'variance',
  var_samp: 'var_samp',
  var_pop: 'var_pop',
});

/** The aggregate GraphQL names `fn`, as PostgreSQL writes it (a name outside the table is refused:
 * it would be spliced). */
export function pgAggregate(fn: string): string {
  const f = Object.hasOwn(PG_AGGREGATES, fn) ? PG_AGGREGATES[fn] : undefined;
  if (!f) throw new Error(`the aggregate ${fn} is not one of PostgreSQL's`);
  return f.fn;
}
