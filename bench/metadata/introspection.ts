/**
 * The standard introspection query (graphql-js's getIntrospectionQuery(), as GraphiQL, the
 * console and code generators send it) at N tracked tables (./in-process.ts: the tables of
 * ./run.ts, the role `user` may select each), as admin and as `user`: after each metadata
 * change (`pg_track_table` / `pg_untrack_table` of one more table, alternately), the time of the
 * first answer (the role's whole schema built, then walked by graphql-js) and of the same
 * request again (Note [Introspection answers cached] in plugins/graphql/introspection-cache.ts),
 * and the answer's size. The response size limit is raised to 1 Gi characters so that the
 * admin's answer is timed as far as it can be (the default, 64 Mi, refuses it from about 1,100
 * tables of this shape; past 512 Mi characters, the longest string V8 makes, it is refused).
 *
 *   npm run build:server && npx tsx bench/metadata/introspection.ts [N] [rounds]
 */
// First: it puts graphql-js in production mode, as the server runs it, before graphql loads.
import { mib, table, withEngineAt } from './in-process.js';
import { getIntrospectionQuery } from 'graphql';

const n = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const query = { query: getIntrospectionQuery() };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

await withEngineAt(n, ['user'], { graphqlMaxResponseSize: 1024 * 1024 * 1024 }, async (e) => {
  const extra = table(n + 1);
  let change = 0;
  console.log(`N = ${n} tables; ${rounds} rounds per role, each after a metadata change; ms`);
  console.log('role    first (each round)      again (each round)      answer MiB');
  for (const role of ['admin', 'user']) {
    const first: number[] = [];
    const again: number[] = [];
    let size = 0;
    let refused: string | undefined;
    for (let i = 0; i < rounds; i++) {
      await e.ok('/v1/metadata', { type: change++ % 2 ? 'pg_untrack_table' : 'pg_track_table', args: { table: extra } });
      const asRole = role === 'admin' ? undefined : role;
      let t = performance.now();
      const { text } = await e.post('/v1/graphql', query, asRole);
      first.push(performance.now() - t);
      t = performance.now();
      const { text: text2 } = await e.post('/v1/graphql', query, asRole);
      again.push(performance.now() - t);
      if (text2 !== text) throw new Error('the repeated answer differs');
      // An answer past the longest string V8 makes is refused (Note [Introspection written as text]).
      if (text.startsWith('{"errors"')) refused = text.slice(0, 200);
      size = text.length;
    }
    const list = (xs: number[]) => `${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})`.padEnd(24) + " ";
    console.log(`${role.padEnd(8)}${list(first)}${list(again)}${refused ? `refused: ${refused}` : mib(size)}`);
  }
});
