/**
 * Note [GraphQL request limits] (plugins/graphql/limits.ts): the attacks of the security review, as
 * the unauthorized role and as the admin, over a real socket. Each is refused with an error that
 * names its limit, a health check on another connection answers within 200 ms while it runs, and
 * the server serves normally afterwards. Then each limit at its edge, set lower by its flag.
 */
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { startServer, useServer, useServerWith } from '../../test/helpers.js';
import { Client, useListening } from '../../test/ws-helpers.js';

const SECRET = 'limits-secret';
const SEED = `
create table artists (id serial primary key, name text not null);
create table tracks (id serial primary key, name text not null, artist_id int references artists(id));
insert into artists (name) select 'artist ' || i from generate_series(1, 20) i;
insert into tracks (name, artist_id) select 'track ' || i, 1 + i % 20 from generate_series(1, 200) i;
create function slow_artists(seconds float) returns setof artists language sql stable as $$ select a.* from artists a, pg_sleep(seconds) $$;
`;
const server = useServer(SEED, { config: { adminSecret: SECRET, unauthorizedRole: 'anon' } });
const net = useListening(server);
const ADMIN = { 'x-svc-admin-secret': SECRET };
const HEALTH_MS = 200;

beforeAll(async () => {
  const r = await server.metadata(
    {
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'artists' } },
        { type: 'pg_track_table', args: { table: 'tracks' } },
        { type: 'pg_track_function', args: { function: 'slow_artists' } },
        { type: 'pg_create_object_relationship', args: { table: 'tracks', name: 'artist', using: { foreign_key_constraint_on: 'artist_id' } } },
        { type: 'pg_create_array_relationship', args: { table: 'artists', name: 'tracks', using: { foreign_key_constraint_on: { table: 'tracks', column: 'artist_id' } } } },
        { type: 'pg_create_select_permission', args: { table: 'artists', role: 'anon', permission: { columns: ['id', 'name'], filter: {}, limit: 10 } } },
        { type: 'pg_create_select_permission', args: { table: 'tracks', role: 'anon', permission: { columns: ['id', 'name'], filter: {} } } },
      ],
    },
    ADMIN,
  );
  expect(r.status, r.text).toBe(200);
});

/** POSTs a body (text) to /v1/graphql over its own connection. */
async function post(body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(`http://127.0.0.1:${net.port}/v1/graphql`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text), ms: performance.now() - t0 };
}

/** GET /healthz on a connection of its own (not the attack's): its latency in ms. */
function health(agent: http.Agent): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: net.port, path: '/healthz', agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`healthz ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

/**
 * Runs `attack` while probing /healthz every 20 ms: the attack's outcome and the slowest probe.
 * On a two-core machine that also runs other test files, a probe can wait for the CPU whatever
 * the server does; so an attack whose slowest probe is over the bound is tried again, up to three
 * times, and the best of the tries is reported. A server that holds its event loop for longer
 * fails every try.
 */
async function underAttack<T>(attack: () => Promise<T>): Promise<{ result: T; worstHealthMs: number; probes: number }> {
  let best: { result: T; worstHealthMs: number; probes: number } | undefined;
  for (let i = 0; i < 3 && !(best && best.worstHealthMs < HEALTH_MS); i++) {
    const r = await probed(attack);
    if (!best || r.worstHealthMs < best.worstHealthMs) best = r;
  }
  return best!;
}

async function probed<T>(attack: () => Promise<T>): Promise<{ result: T; worstHealthMs: number; probes: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  await health(agent); // the probe's connection is open before the attack starts
  let done = false;
  let worst = 0;
  let probes = 0;
  const probing = (async () => {
    while (!done) {
      worst = Math.max(worst, await health(agent));
      probes++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let result: T;
  try {
    result = await attack();
  } finally {
    done = true;
    await probing;
    agent.destroy();
  }
  return { result, worstHealthMs: worst, probes };
}

async function stillServes(): Promise<void> {
  const r = await post(JSON.stringify({ query: '{ artists(order_by: {id: asc}, limit: 2) { id name } }' }));
  expect(r.body).toEqual({ data: { artists: [{ id: 1, name: 'artist 1' }, { id: 2, name: 'artist 2' }] } });
}

function fragmentBomb(levels: number): string {
  let doc = `{ artists(limit: 1) { ...F${levels} } } fragment F0 on artists { id name }`;
  for (let i = 1; i <= levels; i++) doc += ` fragment F${i} on artists { ...F${i - 1} ...F${i - 1} }`;
  return doc;
}


describe('the attacks of the review, refused without starving other clients', () => {
  for (const levels of [20, 30, 40]) {
    it(`a fragment bomb of ${levels} levels, unauthenticated (anon)`, async () => {
      const body = JSON.stringify({ query: fragmentBomb(levels) });
      const { result, worstHealthMs } = await underAttack(() => post(body));
      expect(result.status).toBe(200);
      expect(result.body.errors[0].extensions.code).toBe('validation-failed');
      expect(result.body.errors[0].message).toMatch(/number of fields selected \(\d+\) is more than the limit of 10000 \(--graphql-max-fields\)/);
      expect(result.body.data).toBeUndefined();
      expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
      await stillServes();
    });
  }

  it('a fragment bomb as the admin is refused too (the server limits bind every role)', async () => {
    const r = await post(JSON.stringify({ query: fragmentBomb(30) }), ADMIN);
    expect(r.body.errors[0].message).toMatch(/--graphql-max-fields/);
  });

  it('a chain of thousands of fragments, each spreading the next, is refused (no walker overflows its stack)', async () => {
    for (const n of [60, 2000, 4133, 7000]) {
      let doc = `{ artists { ...F${n} } } fragment F0 on artists { id }`;
      for (let i = 1; i <= n; i++) doc += ` fragment F${i} on artists { ...F${i - 1} }`;
      for (const headers of [{}, ADMIN]) {
        const r = await post(JSON.stringify({ query: doc }), headers);
        expect(r.status).toBe(200);
        expect(r.body.errors[0].message).toMatch(n < 7000 ? /--graphql-max-depth/ : /--graphql-max-(depth|tokens)/);
      }
    }
    await stillServes();
  });

  it('the bomb counted, not expanded: 2^40 fields reported exactly', async () => {
    const r = await post(JSON.stringify({ query: fragmentBomb(40) }));
    // F0 is 2 fields; F40 is 2^40 F0s; plus the root field `artists`.
    expect(r.body.errors[0].message).toContain(`(${2 ** 41 + 1})`);
  });

  for (const n of [10_000, 100_000]) {
    it(`${n.toLocaleString('en')} aliases of tracks { id name }`, async () => {
      const body = JSON.stringify({ query: `{ ${Array.from({ length: n }, (_, i) => `a${i}: tracks { id name }`).join(' ')} }` });
      const { result, worstHealthMs } = await underAttack(() => post(body, ADMIN));
      expect(result.body.errors[0].extensions.code).toBe('validation-failed');
      // 10,000 aliases fit in the document size and are refused by their count; 100,000 are a
      // document longer than the limit, refused before parsing.
      expect(result.body.errors[0].message).toMatch(n === 10_000 ? /--graphql-max-(fields|root-fields|tokens)/ : /query text length \(\d+\) is more than the limit of 1048576 \(--graphql-max-document-size\)/);
      expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
      await stillServes();
    });
  }

  it('200,000 repeated fields', async () => {
    const body = JSON.stringify({ query: `{ tracks { ${'id '.repeat(200_000)}} }` });
    const { result, worstHealthMs } = await underAttack(() => post(body));
    expect(result.body.errors[0].message).toMatch(/more tokens than the limit of 50000 \(--graphql-max-tokens\)/);
    expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
    await stillServes();
  });

  it('a 4.8 MB document of repeated fields (over the document size)', async () => {
    const body = JSON.stringify({ query: `{ tracks { ${'name id '.repeat(600_000)}} }` });
    expect(body.length).toBeGreaterThan(4_800_000);
    const { result, worstHealthMs } = await underAttack(() => post(body));
    expect(result.body.errors[0].message).toMatch(/--graphql-max-document-size/);
    expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
    await stillServes();
  });

  it('a batch of 100,000 items', async () => {
    const body = JSON.stringify(Array.from({ length: 100_000 }, () => ({ query: '{ artists { id } }' })));
    const { result, worstHealthMs } = await underAttack(() => post(body));
    expect(result.status).toBe(200);
    expect(result.body.errors[0]).toEqual({
      message: 'the number of requests in the batch (100000) is more than the limit of 100 (--graphql-max-batch-size)',
      extensions: { code: 'validation-failed', path: '$' },
    });
    expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
    await stillServes();
  });

  it('the largest document the limits admit is served, with the health check answering meanwhile', async () => {
    // 480 root fields of 3 fields each, about 9,000 tokens: under every default.
    const body = JSON.stringify({ query: `{ ${Array.from({ length: 480 }, (_, i) => `a${i}: tracks(limit: 1, order_by: {id: asc}) { id name }`).join(' ')} }` });
    const { result, worstHealthMs, probes } = await underAttack(() => post(body));
    expect(result.body.errors).toBeUndefined();
    expect(result.body.data.a479).toEqual([{ id: 1, name: 'track 1' }]);
    expect(probes).toBeGreaterThan(0);
    expect(worstHealthMs).toBeLessThan(HEALTH_MS);
    if (process.env.SHOW_HEALTH) console.log(expect.getState().currentTestName, worstHealthMs.toFixed(1));
  });

  it('a 50 MB answer is sent in slices: the health check answers meanwhile, and the memory is given back', async () => {
    await server.runSql(`create table big (id serial primary key, payload text); insert into big (payload) select repeat('x', 1000) from generate_series(1, 50000)`);
    expect((await server.metadata({ type: 'pg_track_table', args: { table: 'big' } }, ADMIN)).status).toBe(200);
    const heap = () => {
      (vm.runInNewContext('gc') as () => void)();
      return process.memoryUsage().heapUsed;
    };
    v8.setFlagsFromString('--expose-gc');
    const before = heap();
    const body = JSON.stringify({ query: '{ big(order_by: {id: asc}) { id payload } }' });
    const { result, worstHealthMs } = await underAttack(async () => {
      const r = await fetch(`http://127.0.0.1:${net.port}/v1/graphql`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...ADMIN } });
      const bytes = new Uint8Array(await r.arrayBuffer());
      return { status: r.status, length: bytes.length, head: new TextDecoder().decode(bytes.subarray(0, 40)), tail: new TextDecoder().decode(bytes.subarray(bytes.length - 10)) };
    });
    expect(result.status).toBe(200);
    expect(result.length).toBeGreaterThan(50_000_000);
    expect(result.head).toBe('{"data":{"big":[{"id":1,"payload":"xxxxx');
    expect(result.tail).toBe('xxxxx"}]}}');
    // Twice the others' bound: postgres.js reads the 50 MB row in one synchronous step that no
    // slicing of ours can split (quiet machine, best of three tries: 64-144 ms before and after
    // objects from rows), and a clean-clone CI run on the loaded two-core machine saw 245 ms. A
    // starved health check (the answer written in one piece) waits for seconds.
    expect(worstHealthMs).toBeLessThan(2 * HEALTH_MS);
    expect(heap() - before).toBeLessThan(20_000_000);
    await server.metadata({ type: 'pg_untrack_table', args: { table: 'big' } }, ADMIN);
    await server.runSql('drop table big');
  }, 120_000);

  it('a batch of the largest admitted size, each item answered', async () => {
    const body = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ query: `{ artists(where: {id: {_eq: ${(i % 20) + 1}}}) { id } }` })));
    const r = await post(body);
    expect(r.body).toHaveLength(100);
    expect(r.body[99]).toEqual({ data: { artists: [{ id: 20 }] } });
  });
});

describe('each limit at its edge, set by its flag', () => {
  const s = useServerWith(
    () =>
      startServer({
        config: {
          graphqlMaxDocumentSize: 200,
          graphqlMaxTokens: 60,
          graphqlMaxFields: 12,
          graphqlMaxDepth: 2,
          graphqlMaxRootFields: 3,
          graphqlMaxBatchSize: 2,
          graphqlMaxResponseSize: 400,
        },
      }),
    SEED,
  );
  beforeAll(async () => {
    for (const table of ['artists', 'tracks']) expect((await s.metadata({ type: 'pg_track_table', args: { table } })).status).toBe(200);
    expect((await s.metadata({ type: 'pg_track_function', args: { function: 'slow_artists' } })).status).toBe(200);
    const rel = { type: 'pg_create_object_relationship', args: { table: 'tracks', name: 'artist', using: { foreign_key_constraint_on: 'artist_id' } } };
    expect((await s.metadata(rel)).status).toBe(200);
    const rel2 = { type: 'pg_create_array_relationship', args: { table: 'artists', name: 'tracks', using: { foreign_key_constraint_on: { table: 'tracks', column: 'artist_id' } } } };
    expect((await s.metadata(rel2)).status).toBe(200);
  });
  const gql = async (body: unknown) => (await s.request('POST', '/v1/graphql', body)).body;
  const message = async (body: unknown) => (await gql(body)).errors?.[0]?.message as string | undefined;

  it('document size: 200 characters pass, 201 do not', async () => {
    const fit = `{ artists(limit: 1) { id } }`.padEnd(200, ' ');
    expect(await message({ query: fit })).toBeUndefined();
    expect(await message({ query: `${fit} ` })).toBe('the query text length (201) is more than the limit of 200 (--graphql-max-document-size)');
  });

  it('tokens', async () => {
    // `{ a1: artists(limit: 1) { id } }` is 12 tokens: 5 aliases 56 tokens, 6 are 68.
    const doc = (n: number) => `{${Array.from({ length: n }, (_, i) => ` a${i}: artists(limit: 1) { id }`).join('')} }`;
    expect(await message({ query: doc(5) })).toMatch(/root fields \(5\)/);
    expect(await message({ query: doc(6) })).toBe('the query has more tokens than the limit of 60 (--graphql-max-tokens)');
  });

  it('fields: counted through fragments and inline fragments', async () => {
    const q = (extra: string) => `{ tracks(limit: 1) { ...T ... on tracks { id } ${extra} } } fragment T on tracks { id name }`;
    // tracks, id, name, id = 4
    expect(await message({ query: q('') })).toBeUndefined();
    expect(await message({ query: q('a: id b: id c: id d: id e: id f: id g: id h: id') })).toBeUndefined();
    expect(await message({ query: q('a: id b: id c: id d: id e: id f: id g: id h: id i: id') })).toBe('the number of fields selected (13) is more than the limit of 12 (--graphql-max-fields)');
  });

  it('depth: fields with selection sets, fragments and inline fragments', async () => {
    expect(await message({ query: '{ tracks(limit: 1) { artist { name } } }' })).toBeUndefined();
    const over = (n: number) => `the nesting of the query (fields with selection sets, fragments and inline fragments) (${n}) is more than the limit of 2 (--graphql-max-depth)`;
    expect(await message({ query: '{ tracks(limit: 1) { artist { tracks(limit: 1) { id } } } }' })).toBe(over(3));
    expect(await message({ query: '{ tracks(limit: 1) { artist { ... on artists { id } } } }' })).toBe(over(3));
    expect(await message({ query: '{ tracks(limit: 1) { ...T } } fragment T on tracks { artist { id } }' })).toBe(over(3));
    expect(await message({ query: '{ tracks(limit: 1) { ...T } } fragment T on tracks { id }' })).toBeUndefined();
  });

  it('root fields: aliases each count, through fragments', async () => {
    expect(await message({ query: '{ a: artists(limit: 1) { id } b: artists(limit: 1) { id } ...R } fragment R on query_root { __typename }' })).toBeUndefined();
    expect(await message({ query: '{ a: artists(limit: 1) { id } b: artists(limit: 1) { id } ...R } fragment R on query_root { __typename c: __typename }' })).toBe(
      'the number of root fields (4) is more than the limit of 3 (--graphql-max-root-fields)',
    );
  });

  it('batch', async () => {
    const item = { query: '{ artists(limit: 1) { id } }' };
    expect(await gql([item, item])).toEqual([{ data: { artists: [{ id: 1 }] } }, { data: { artists: [{ id: 1 }] } }]);
    expect((await gql([item, item, item])).errors[0].message).toBe('the number of requests in the batch (3) is more than the limit of 2 (--graphql-max-batch-size)');
  });

});

describe('the response size limit', () => {
  const s = useServerWith(() => startServer({ config: { graphqlMaxResponseSize: 400, liveQueriesRefetchInterval: 50 } }), SEED);
  const ws = useListening(s);
  beforeAll(async () => {
    for (const table of ['artists', 'tracks']) expect((await s.metadata({ type: 'pg_track_table', args: { table } })).status).toBe(200);
    expect((await s.metadata({ type: 'pg_track_function', args: { function: 'slow_artists' } })).status).toBe(200);
  });
  const gql = async (body: unknown) => (await s.request('POST', '/v1/graphql', body)).body;
  const message = async (body: unknown) => (await gql(body)).errors?.[0]?.message as string | undefined;

  it('response: an answer past the limit is an error, in a single field, across fields and across a batch', async () => {
    const over = 'the response is larger than the limit of 400 characters (--graphql-max-response-size)';
    expect(await message({ query: '{ artists(limit: 5) { id name } }' })).toBeUndefined();
    expect(await message({ query: '{ artists { id name } }' })).toBe(over);
    expect(await message({ query: '{ a: artists(limit: 10) { id name } }' })).toBeUndefined();
    expect(await message({ query: '{ a: artists(limit: 10) { id name } b: artists(limit: 10) { id name } }' })).toBe(over);
    const ten = { query: '{ artists(limit: 10) { id name } }' };
    expect(await gql([ten])).toHaveLength(1);
    expect((await gql([ten, ten])).errors[0].message).toBe(over);
  });

  it('response: the statements still running are cancelled, and the answer does not wait for them', async () => {
    const t0 = performance.now();
    const r = await gql({ query: '{ big: artists { id name } slow: slow_artists(args: {seconds: 20}) { id } }' });
    expect(r.errors[0].message).toMatch(/--graphql-max-response-size/);
    expect(performance.now() - t0).toBeLessThan(10_000);
    // The sleeping statement was cancelled, not left to run.
    let running = 1;
    for (let i = 0; i < 50 && running > 0; i++) {
      running = (await s.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and query like '%pg_sleep%' and pid <> pg_backend_pid() and state = 'active'`)[0]!.n;
      if (running) await new Promise((res) => setTimeout(res, 100));
    }
    expect(running).toBe(0);
  });

  it('a subscription whose result is too large gets the error instead, and one within the limit its data', async () => {
    const c = await Client.init(ws.url, 'graphql-transport-ws');
    try {
      c.send({ type: 'subscribe', id: 'big', payload: { query: 'subscription { artists { id name } }' } });
      const big = await c.next('big');
      expect(big.type).toBe('next');
      expect(big.payload.errors[0]).toEqual({ message: 'the response is larger than the limit of 400 characters (--graphql-max-response-size)', extensions: { code: 'validation-failed', path: '$' } });
      c.send({ type: 'subscribe', id: 'small', payload: { query: 'subscription { artists(limit: 2, order_by: {id: asc}) { id } }' } });
      expect(await c.next('small')).toEqual({ type: 'next', id: 'small', payload: { data: { artists: [{ id: 1 }, { id: 2 }] } } });
    } finally {
      c.close();
    }
  });

  it('a mutation of several fields whose answer grows too large is rolled back', async () => {
    const r = await gql({ query: 'mutation { a: update_artists(where: {id: {_lte: 10}}, _set: {name: "x"}) { returning { id name } } b: update_artists(where: {id: {_gt: 10}}, _set: {name: "y"}) { returning { id name } } }' });
    expect(r.errors[0].message).toMatch(/--graphql-max-response-size/);
    expect((await s.sql`select count(*)::int as n from artists where name in ('x', 'y')`)[0]!.n).toBe(0);
  });

  it("a mutation's only field is answered whatever its size: its change is made", async () => {
    const r = await gql({ query: 'mutation { update_artists(where: {}, _set: {name: "z"}) { returning { id name } } }' });
    expect(r.data.update_artists.returning).toHaveLength(20);
    await s.sql`update artists set name = 'artist ' || id`;
  });
});
