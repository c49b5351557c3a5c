/**
 * The engine's own cost on a cached request (ARCHITECTURE "Where the time goes"): 10,000 requests
 * of a 2-field query whose plans return fixed texts, through the real app (session, body, plan
 * cache, variables, splice, http-log middleware), next to a bare hono route that answers the
 * same bytes. It prints the figures; it asserts only what the requests answered, never a time.
 */
import { expect, it } from 'vitest';
import { Hono } from 'hono';
import { GraphQLInt, GraphQLString } from 'graphql';
import { definePlugin } from '../core/plugin.js';
import { useServer } from './helpers.js';

let plans = 0;
const fixed = definePlugin({
  name: 'fixed_text',
  setup(k) {
    k.schemaContributor({
      name: 'fixed_text',
      contribute: () => ({
        query: {
          a: { config: { type: GraphQLString, args: { n: { type: GraphQLInt } } }, plan: () => (plans++, { run: async () => '"a"' }) },
          b: { config: { type: GraphQLInt }, plan: () => (plans++, { run: async () => '42' }) },
        },
      }),
    });
  },
});

const s = useServer(undefined, { extraPlugins: [fixed], config: { logLevel: 'info' } });
const N = 10_000;
const ANSWER = '{"data":{"a":"a","b":42}}';

async function time(label: string, send: () => Promise<Response>): Promise<number> {
  for (let i = 0; i < 500; i++) await (await send()).text(); // warm up (JIT, caches)
  const start = performance.now();
  for (let i = 0; i < N; i++) {
    const text = await (await send()).text();
    if (text !== ANSWER) throw new Error(`${label}: unexpected answer ${text}`);
  }
  const us = ((performance.now() - start) * 1000) / N;
  console.log(`${label}: ${us.toFixed(1)} µs per request (${N} requests)`);
  return us;
}

it(`times ${N} cached requests of a 2-field query (no assertion on time)`, async () => {
  const body = JSON.stringify({ query: 'query Q($n: Int) { a(n: $n) b }', variables: { n: 1 }, operationName: 'Q' });
  const init = () => ({ method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const bare = new Hono();
  bare.post('/v1/graphql', async (c) => {
    await c.req.raw.text();
    return c.body(ANSWER, 200, { 'content-type': 'application/json; charset=utf-8' });
  });
  // The engine mounted alone: without the app's http-log middleware, whose line the test
  // logger also parses back (a cost of the test helper, not of the server).
  const alone = new Hono();
  alone.post('/v1/graphql', s.graphql.handle);
  const hits = s.graphql.stats().hits;
  const app = await time('whole app (app.request)', () => Promise.resolve(s.app.request('/v1/graphql', init())));
  const engine = await time('engine alone (hono + GraphQLEngine.handle)', () => Promise.resolve(alone.request('/v1/graphql', init())));
  const baseline = await time('bare hono handler, same answer', () => Promise.resolve(bare.request('/v1/graphql', init())));
  console.log(`engine over a bare hono handler: ${(engine - baseline).toFixed(1)} µs per request; whole app over it: ${(app - baseline).toFixed(1)} µs`);
  expect(plans).toBe(2);
  expect(s.graphql.stats().hits - hits).toBe(2 * (N + 500) - 1);
});
