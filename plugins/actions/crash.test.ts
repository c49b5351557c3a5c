/**
 * Asynchronous actions with a real server process killed by SIGKILL: calls written before the
 * kill, and one in flight at the kill, are all made and recorded after a restart, the one in
 * flight again once its claim's lease ran out (at least once), the others exactly once; and three
 * instances on one database sharing the calls, one killed mid-delivery (issue 26).
 */
import { afterAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase } from '../../test/helpers.js';
import { post, spawnServer, waitReady, type ServerProcess } from '../../test/server-process.js';
import { freePort } from '../../server/embedded.js';
import { startHandler, type TestHandler } from './testing.js';

const procs: ServerProcess[] = [];
const handlers: TestHandler[] = [];
const pools: postgres.Sql[] = [];
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const h of handlers) await h.close();
  for (const s of pools) await s.end({ timeout: 1 });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function server(db: { url: string }, port: number, h: TestHandler, handler = h.url): Promise<ServerProcess> {
  const p = spawnServer({
    SVC_GRAPHQL_DATABASE_URL: db.url,
    SVC_GRAPHQL_SERVER_PORT: String(port),
    SVC_GRAPHQL_LOG_LEVEL: 'error',
    SVC_GRAPHQL_ASYNC_ACTIONS_FETCH_INTERVAL: '100',
    HANDLER: handler,
  });
  procs.push(p);
  await waitReady(p, 60_000);
  return p;
}

describe('asynchronous actions with a server process', () => {
  it('kill -9 with calls pending and one in flight: all made after the restart, none lost', async () => {
    const db = await createDatabase();
    // The first call hangs (the instance is killed while it waits); the others answer at once.
    let hung = false;
    const h = await startHandler({
      '/do': async (c, res) => {
        if (c.body.input.n === 0 && !hung) {
          hung = true;
          return; // never answers
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n: c.body.input.n }));
      },
    });
    handlers.push(h);
    const port = await freePort();
    let p = await server(db, port, h);
    const ok = async (body: unknown) => {
      const r = await post(port, '/v1/query', body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    };
    await ok({ type: 'set_custom_types', args: { objects: [{ name: 'Out', fields: [{ name: 'n', type: 'Int!' }] }] } });
    // A 1 s timeout: the killed instance's claim is taken over 11 s after it was made.
    await ok({ type: 'create_action', args: { name: 'work', definition: { kind: 'asynchronous', arguments: [{ name: 'n', type: 'Int!' }], output_type: 'Out', handler: '{{HANDLER}}/do', timeout: 1 } } });
    const ids: string[] = [];
    const first = await post(port, '/v1/graphql', { query: 'mutation { work(n: 0) }' });
    ids.push(first.body.data.work);
    while (!hung) await sleep(20);
    p.child.kill('SIGKILL');
    await p.exited;
    // Calls written while no instance runs: straight into the log, as a mutation writes them.
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    pools.push(sql);
    for (let n = 1; n <= 20; n++) {
      const rows = await sql`insert into svc_catalog.action_log (action_name, input_payload, session_variables, lease_sec) values ('work', ${sql.json({ n })}, ${sql.json({ 'x-svc-role': 'admin' })}, 11) returning id::text as id`;
      ids.push(rows[0]!.id);
    }
    p = await server(db, port, h);
    const end = Date.now() + 40_000;
    let done: { id: string; status: string; output: { n: number } | null }[] = [];
    while (Date.now() < end) {
      done = (await sql`select id::text as id, status, response_payload as output from svc_catalog.action_log where id = any(${ids}::uuid[])`) as unknown as typeof done;
      if (done.length === ids.length && done.every((d) => d.status === 'completed')) break;
      await sleep(200);
    }
    expect(done.filter((d) => d.status === 'completed')).toHaveLength(ids.length);
    // Each call made once, the one in flight at the kill twice (at least once).
    const calls = h.calls.map((c) => c.body.input.n as number);
    for (let n = 1; n <= 20; n++) expect(calls.filter((x) => x === n), `call ${n}`).toHaveLength(1);
    expect(calls.filter((x) => x === 0)).toHaveLength(2);
    const r = await post(port, '/v1/graphql', { query: `query { work(id: "${ids[0]}") { output { n } errors } }` });
    expect(r.body).toEqual({ data: { work: { output: { n: 0 }, errors: null } } });
  }, 120_000);

  it('three instances share 600 calls, one killed with SIGKILL mid-delivery: each call made and recorded, none lost', async () => {
    const db = await createDatabase();
    // Each instance calls its own path (HANDLER differs per process), so every call is known by
    // who made it; a call takes 15 ms, so the killed instance has calls in flight.
    const made: { instance: number; n: number; at: number }[] = [];
    const route = (instance: number) => async (c: { body: any }, res: import('node:http').ServerResponse) => {
      made.push({ instance, n: c.body.input.n, at: Date.now() });
      await sleep(15);
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ n: c.body.input.n }));
    };
    const h = await startHandler({ '/i0/do': route(0), '/i1/do': route(1), '/i2/do': route(2) });
    handlers.push(h);
    const ports = [await freePort(), await freePort(), await freePort()];
    const ps = await Promise.all(ports.map((port, i) => server(db, port, h, `${h.url}/i${i}`)));
    const ok = async (port: number, body: unknown) => {
      const r = await post(port, '/v1/query', body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    await ok(ports[0]!, { type: 'set_custom_types', args: { objects: [{ name: 'Out', fields: [{ name: 'n', type: 'Int!' }] }] } });
    // A 5 s timeout (a call takes 15 ms): on a loaded two-core machine 1 s timed out some calls
    // (recorded as errors, not retried), which is not what this test is about.
    await ok(ports[0]!, { type: 'create_action', args: { name: 'work', definition: { kind: 'asynchronous', arguments: [{ name: 'n', type: 'Int!' }], output_type: 'Out', handler: '{{HANDLER}}/do', timeout: 5 } } });
    // Every instance has the action (metadata sync) before any call is written.
    for (const port of ports.slice(1)) {
      const end = Date.now() + 20_000;
      while ((await ok(port, { type: 'export_metadata', args: {} })).actions?.length !== 1) {
        if (Date.now() > end) throw new Error(`instance on ${port} never saw the action`);
        await sleep(100);
      }
    }
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    pools.push(sql);
    const N = 600;
    const rows = await sql`insert into svc_catalog.action_log (action_name, input_payload, session_variables, lease_sec)
      select 'work', jsonb_build_object('n', n), ${sql.json({ 'x-svc-role': 'admin' })}, 15 from generate_series(1, ${N}) as n returning id::text as id`;
    const ids = rows.map((r) => r.id as string);
    // Instance 1 dies once it has made 60 calls, with more claimed and in flight.
    const killAt = Date.now() + 30_000;
    while (made.filter((m) => m.instance === 1).length < 60 && Date.now() < killAt) await sleep(5);
    ps[1]!.child.kill('SIGKILL');
    await ps[1]!.exited;
    const killed = Date.now();
    const end = Date.now() + 60_000;
    let done: { id: string; status: string; n: number | null }[] = [];
    while (Date.now() < end) {
      done = (await sql`select id::text as id, status, (response_payload->>'n')::int as n from svc_catalog.action_log where id = any(${ids}::uuid[])`) as unknown as typeof done;
      if (done.length === N && done.every((d) => d.status === 'completed')) break;
      await sleep(200);
    }
    // Recorded: every call completed, with its own answer.
    expect(done.filter((d) => d.status === 'completed')).toHaveLength(N);
    const inputs = new Map(((await sql`select id::text as id, (input_payload->>'n')::int as n from svc_catalog.action_log`) as unknown as { id: string; n: number }[]).map((r) => [r.id, r.n]));
    for (const d of done) expect(d.n, d.id).toBe(inputs.get(d.id));
    // Made: every call at least once; twice only for a call the killed instance had in flight,
    // made again by another instance after the kill.
    // (What the killed instance called is known only once the handler has read it all, which
    // may be after the kill.)
    const byKilled = new Set(made.filter((m) => m.instance === 1).map((m) => m.n));
    const count = new Map<number, number>();
    for (const m of made) count.set(m.n, (count.get(m.n) ?? 0) + 1);
    for (let n = 1; n <= N; n++) expect(count.get(n) ?? 0, `call ${n}`).toBeGreaterThanOrEqual(1);
    const twice = [...count].filter(([, c]) => c > 1).map(([n]) => n);
    for (const n of twice) {
      expect(count.get(n), `call ${n}`).toBe(2);
      expect(byKilled.has(n), `call ${n} made twice but not by the killed instance`).toBe(true);
      expect(made.some((m) => m.n === n && m.instance !== 1 && m.at >= killed), `call ${n}`).toBe(true);
    }
    // All three shared the work, and the two left finished it.
    for (const i of [0, 1, 2]) expect(made.some((m) => m.instance === i), `instance ${i}`).toBe(true);
    expect(made.filter((m) => m.at > killed && m.instance !== 1).length).toBeGreaterThan(0);
  }, 150_000);
});
