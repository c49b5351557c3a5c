/**
 * The fuzz suite (hardening): generated requests for every registered operation on both
 * endpoints, and for the other JSON endpoints, with hostile envelopes and args
 * (test/fuzz/generators.ts). Properties (test/fuzz/probe.ts): no 5xx, an answer within a bound,
 * a refused request leaves the metadata unchanged, refusals in the SPEC's shape; and the server
 * stays healthy. `npm run fuzz` is the long run of the same properties over HTTP.
 * SVC_FUZZ_RUNS sets the cases per operation (default 200); SVC_FUZZ_SEED replays a run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { useServer } from './helpers.js';
import { argKeys, costlyGraphqlArb, mutationRequestArb, requestArb, SEED_METADATA, SEED_SQL } from './fuzz/generators.js';
import { createProbe, formatHistogram, type Probe } from './fuzz/probe.js';

const RUNS = Number(process.env.SVC_FUZZ_RUNS ?? 200);
const SEED = process.env.SVC_FUZZ_SEED === undefined ? undefined : Number(process.env.SVC_FUZZ_SEED);

const s = useServer(SEED_SQL);
let probe: Probe;
let seedMetadata: unknown;

beforeAll(async () => {
  for (const op of SEED_METADATA) expect((await s.metadata(op)).status).toBe(200);
  seedMetadata = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
  probe = createProbe(async (method, path, body, headers) => {
    const res = await s.app.request(path, { method, body: body as BodyInit | undefined, headers });
    return { status: res.status, text: await res.text() };
  }, { snapshot: () => JSON.stringify([s.kernel.state().resourceVersion, s.kernel.exportCurrent()]) });
});

afterAll(() => {
  if (probe) console.log(`fuzz: ${probe.sent} requests\n${formatHistogram(probe.histogram)}`);
});

/** Puts the seeded metadata back, so that every operation is fuzzed against the same state. */
async function restore() {
  const r = await s.metadata({ type: 'replace_metadata', args: seedMetadata });
  expect(r.status, r.text).toBe(200);
  probe.resync();
}

async function fuzz(arb: fc.Arbitrary<Parameters<Probe['check']>[0]>, runs: number) {
  await fc.assert(
    fc.asyncProperty(arb, async (r) => {
      expect(await probe.check(r)).toEqual([]);
    }),
    { numRuns: runs, seed: SEED, endOnFailure: false },
  );
}

describe('fuzz', () => {
  for (const endpoint of ['metadata', 'query'] as const) {
    it(`every operation of /v1/${endpoint}`, async () => {
      const types = { metadata: s.kernel.operationNames('metadata'), query: s.kernel.operationNames('query') };
      for (const type of types[endpoint]) {
        const { def } = s.kernel.registry.find(endpoint, type);
        const keys = argKeys(typeof def.args === 'function' ? def.args(def.versions?.[0] ?? 1, endpoint) : def.args);
        await fuzz(requestArb(types, { endpoint, type, keys }), RUNS);
        await restore();
      }
    }, 1_200_000);
  }

  it('GraphQL mutations: hostile rows, nested rows, conflicts, update operators and filters in variables', async () => {
    await fuzz(mutationRequestArb(), RUNS);
  }, 600_000);

  it('GraphQL documents and batches that cost more than their size (Note [GraphQL request limits])', async () => {
    await fuzz(costlyGraphqlArb(), Math.max(10, Math.round(RUNS / 4)));
  }, 600_000);

  it('every endpoint, mixed', async () => {
    const types = { metadata: s.kernel.operationNames('metadata'), query: s.kernel.operationNames('query') };
    await fuzz(requestArb(types), RUNS * 5);
    await restore();
  }, 600_000);

  it('the server is healthy afterwards', async () => {
    expect((await s.request('GET', '/healthz')).status).toBe(200);
    expect(await s.runSql('select count(*) from author')).toMatchObject({ result_type: 'TuplesOk' });
    expect((await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body).toEqual(seedMetadata);
  });
});
