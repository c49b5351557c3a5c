/**
 * The engine's own cost on a cached request (docs/benchmarks.md "Where the time goes"): 10,000 requests
 * of a 2-field query whose plans return fixed texts, through the real app (session, body, plan
 * cache, variables, splice, http-log middleware), next to a bare hono route that answers the
 * same bytes. It prints the figures; it asserts only what the requests answered, never a time.
 */
import { expect, it } from 'vitest';
import { Hono } from 'hono';
import { GraphQLInt, GraphQLString } from 'graphql';
import { definePlugin } from '../../core/plugin.js';
import { useServer } from '../../test/helpers.js';
import { contextAnswer, contextExchange } from '../../lib/http/node-request.js';

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
// A benchmark, not a test (`npm run bench:overhead`, bench/vitest.config.ts): never in npm test.
const N = Number(process.env.GRAPHQL_OVERHEAD_N ?? 10_000);
const ANSWER = '{"data":{"a":"a","b":42}}';

/** Microseconds per request of `n` requests in a row. */
async function time(label: string, send: () => Promise<Response>, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const text = await (await send()).text();
    if (text !== ANSWER) throw new Error(`${label}: unexpected answer ${text}`);
  }
  return ((performance.now() - start) * 1000) / n;
}

/** The variants timed in interleaved rounds (so that a busy moment of the machine hits them
 * alike); each one's best round is reported, the least disturbed. */
async function compare(variants: [string, () => Promise<Response>][], rounds = 5): Promise<Record<string, number>> {
  for (const [label, send] of variants) await time(label, send, 500); // warm up (JIT, caches)
  const best: Record<string, number> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [label, send] of variants) best[label] = Math.min(best[label] ?? Infinity, await time(label, send, Math.ceil(N / rounds)));
  }
  for (const [label, us] of Object.entries(best)) console.log(`${label}: ${us.toFixed(1)} µs per request (best of ${rounds} rounds of ${Math.ceil(N / rounds)})`);
  return best;
}

it(`times ${N} cached requests of a 2-field query (no assertion on time)`, { timeout: 180_000 }, async () => {
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
  alone.post('/v1/graphql', async (c) => contextAnswer(c, await s.graphql.serve(contextExchange(c))));
  const hits = s.graphql.stats().hits;
  const t = await compare([
    ['whole app (app.request)', () => Promise.resolve(s.app.request('/v1/graphql', init()))],
    ['engine alone (hono + GraphQLEngine.serve)', () => Promise.resolve(alone.request('/v1/graphql', init()))],
    ['bare hono handler, same answer', () => Promise.resolve(bare.request('/v1/graphql', init()))],
  ]);
  const base = t['bare hono handler, same answer']!;
  console.log(`over a bare hono handler: engine ${(t['engine alone (hono + GraphQLEngine.serve)']! - base).toFixed(1)} µs, whole app ${(t['whole app (app.request)']! - base).toFixed(1)} µs per request`);
  expect(plans).toBe(2);
  expect(s.graphql.stats().hits - hits).toBe(2 * (500 + 5 * Math.ceil(N / 5)) - 1);
});
