// PostGraphile v5 for bench/graphql (run by run.ts with Node 22 from this folder's node_modules):
//   node_modules/.bin/node node_modules/.bin/postgraphile -C graphile.config.mjs
// The amber preset (what `--preset postgraphile/presets/amber` gives), extended here rather than on
// the command line because a preset given with -P comes after this file and would re-enable the
// plugin disabled below; plus the two community plugins the benchmark's queries need to be asked
// at all: relational filters (playlists with a Jazz track) and aggregates (sum, avg, max).
// Production mode (GRAPHILE_ENV unset), no explain, no watch: PostGraphile as deployed.
import { makePgService } from 'postgraphile/adaptors/pg';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter';
import { PgAggregatesPreset } from '@graphile/pg-aggregates';

/** Month truncation for pg-aggregates' groupedAggregates (the `groups` query: invoices by month),
 * which ships hour and day only; added as its README shows, after its own specs. */
const MonthTruncationPlugin = {
  name: 'BenchMonthTruncationPlugin',
  version: '0.0.0',
  after: ['PgAggregatesSpecsPlugin'],
  schema: {
    hooks: {
      build(build) {
        const {
          sql,
          dataplanPg: { TYPES },
        } = build;
        build.pgAggregateGroupBySpecs.push({
          id: 'truncated-to-month',
          isSuitableType: (codec) => codec === TYPES.timestamp || codec === TYPES.timestamptz,
          sqlWrap: (frag) => sql`date_trunc('month', ${frag})`,
          sqlWrapCodec: (codec) => codec,
        });
        return build;
      },
    },
  },
};

const port = Number(process.env.BENCH_PORT);
if (!process.env.BENCH_DATABASE_URL || !port) throw new Error('BENCH_DATABASE_URL and BENCH_PORT are required');

/** @type {GraphileConfig.Preset} */
export default {
  extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset, PgAggregatesPreset],
  plugins: [MonthTruncationPlugin],
  pgServices: [
    makePgService({
      connectionString: process.env.BENCH_DATABASE_URL,
      schemas: ['public'],
      // The row filter the PostGraphile way: a request of role `user` runs as the PostgreSQL role
      // bench_user with its id in a setting that the RLS policy on albums reads (run.ts creates both).
      pgSettings(requestContext) {
        const headers = requestContext.node?.req?.headers ?? {};
        if (headers['x-svc-role'] !== 'user') return {};
        return { role: 'bench_user', 'jwt.claims.user_id': String(headers['x-svc-user-id'] ?? '') };
      },
    }),
  ],
  // By default v5 offers filters and orderings only on indexed columns; genres.name has no index,
  // so "playlists with a Jazz track" could not be asked. The engine does not restrict them either.
  disablePlugins: ['PgIndexBehaviorsPlugin'],
  schema: { connectionFilterRelations: true },
  grafserv: { port, host: '127.0.0.1', graphqlPath: '/graphql', watch: false, websockets: false },
  grafast: { explain: false },
};
