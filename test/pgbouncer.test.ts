/**
 * The engine behind PgBouncer in transaction-pooling mode (issue 26; Note [Poolers] in
 * plugins/postgres/connection/connection.ts): the catalog (--metadata-database-url) and a source added with
 * Hasura's default `use_prepared_statements: false` both reach PostgreSQL through one PgBouncer
 * whose pool (4 server connections) is smaller than the concurrency (12 clients, each sending its
 * next request as soon as the last is answered). PgBouncer hands a server connection to a client
 * for one transaction: a named prepared statement made on one server connection is missing on the
 * next, and queries pipelined on one client connection can be answered to another client. Both
 * gave requests each other's answers (another role's rows among them).
 *
 * Every answer is checked against what its own request must get: each client is a user (role
 * `user`, its own X-Svc-User-Id) that reads, inserts, updates and deletes only its own rows, so
 * what each of its requests must answer follows from its own earlier requests; team readers (role
 * `team`, X-Svc-Team) read fixed rows. An event trigger on inserts captures through the same
 * PgBouncer, and its events (claimed and recorded through it) must each come once, with the
 * session variables of the request that inserted the row.
 *
 * Needs Debian's pgbouncer (`apt-get install pgbouncer`; .ci/run installs it): without it the
 * tests are skipped, with a message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { adminUrl, createDatabase, startServer, type TestServer } from './helpers.js';
import { findPgbouncer, PGBOUNCER_INSTALL, startPgbouncer, type Pgbouncer } from './pgbouncer.js';
import { startHook, type TestHook } from '../plugins/event-triggers/hook.js';

const bin = findPgbouncer();
if (!bin) console.warn(`pgbouncer is not installed (${PGBOUNCER_INSTALL}): the PgBouncer tests are skipped`);

const CLIENTS = 12;
const REQUESTS = 200;
const POOL = 4;
const OWNERS = CLIENTS;
const SEED_PER_OWNER = 5;
const TEAMS = 3;
const NOTES = 30;

interface Row {
  id: number;
  owner: number;
  label: string;
  n: number;
}

describe.skipIf(!bin)(`through PgBouncer in transaction mode (pool of ${POOL})`, () => {
  let bouncer: Pgbouncer;
  let s: TestServer;
  let hook: TestHook;
  let direct: postgres.Sql;
  let pooledUrl: string;

  beforeAll(async () => {
    const db = await createDatabase('svc_pgbouncer');
    // server_check_delay 0: PgBouncer runs its server_check_query between any two clients of a
    // server connection (30 s idle by default), which makes a connection lent too early show at once.
    bouncer = await startPgbouncer(adminUrl(), { poolSize: POOL, extra: { server_check_delay: 0 } });
    pooledUrl = bouncer.urlFor(db.url);
    hook = await startHook();
    // The catalog through PgBouncer (no default source: none is made without --database-url).
    s = await startServer({
      database: db,
      config: { databaseUrl: undefined, metadataDatabaseUrl: pooledUrl, metadataSyncInterval: 200, eventsFetchInterval: 100 },
      env: { HOOK: hook.url },
    });
    direct = postgres(db.url, { max: 1, onnotice: () => {} });
    const ok = async (body: unknown) => {
      const r = await s.metadata(body);
      expect(r.status, `${r.text}\n${JSON.stringify(s.logs.filter((l) => l.level === 'error').slice(-3))}`).toBe(200);
      return r.body;
    };
    // Hasura's default for an added source: use_prepared_statements false (not given).
    await ok({ type: 'pg_add_source', args: { name: 'pooled', configuration: { connection_info: { database_url: pooledUrl, pool_settings: { max_connections: 3 * POOL } } } } });
    const seeded = await s.query({
      type: 'run_sql',
      args: {
        source: 'pooled',
        sql: `
          create table item (id serial primary key, owner int not null, label text not null, n int not null default 0);
          create table note (id int primary key, team text not null, body text not null);
          insert into item (owner, label, n) select o, 'o' || o || '-' || i, i from generate_series(1, ${OWNERS}) o, generate_series(1, ${SEED_PER_OWNER}) i order by o, i;
          insert into note select i, 't' || (i % ${TEAMS}), 'note ' || i from generate_series(1, ${NOTES}) i;`,
      },
    });
    expect(seeded.status, seeded.text).toBe(200);
    const own = { owner: { _eq: 'X-Svc-User-Id' } };
    await ok({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { source: 'pooled', table: 'item' } },
        { type: 'pg_track_table', args: { source: 'pooled', table: 'note' } },
        { type: 'pg_create_select_permission', args: { source: 'pooled', table: 'item', role: 'user', permission: { columns: ['id', 'owner', 'label', 'n'], filter: own, allow_aggregations: true } } },
        { type: 'pg_create_insert_permission', args: { source: 'pooled', table: 'item', role: 'user', permission: { columns: ['label', 'n'], check: own, set: { owner: 'X-Svc-User-Id' } } } },
        { type: 'pg_create_update_permission', args: { source: 'pooled', table: 'item', role: 'user', permission: { columns: ['label', 'n'], filter: own, check: own } } },
        { type: 'pg_create_delete_permission', args: { source: 'pooled', table: 'item', role: 'user', permission: { filter: own } } },
        { type: 'pg_create_select_permission', args: { source: 'pooled', table: 'note', role: 'team', permission: { columns: ['id', 'team', 'body'], filter: { team: { _eq: 'X-Svc-Team' } }, allow_aggregations: true } } },
        { type: 'pg_create_event_trigger', args: { source: 'pooled', name: 'item_inserted', table: 'item', webhook: '{{HOOK}}', insert: { columns: '*' } } },
      ],
    });
  }, 120_000);

  afterAll(async () => {
    try {
      await direct?.end({ timeout: 1 });
      // A server left with statements that PgBouncer never answers (the failure this test is
      // about) may not stop in time: PgBouncer is stopped anyway.
      await Promise.race([s?.stop(), new Promise((r) => setTimeout(r, 60_000))]);
      await hook?.close();
    } finally {
      await bouncer?.stop();
    }
  }, 120_000);

  it(`${CLIENTS} clients x ${REQUESTS} requests as different roles: every answer is its own request's`, async () => {
    const seed = (await direct<Row[]>`select id, owner, label, n from item order by id`).map((r) => ({ ...r }));
    const notes = (await direct<{ id: number; team: string; body: string }[]>`select id, team, body from note order by id`).map((r) => ({ ...r }));
    const wrong: string[] = [];
    const inserted = new Map<number, number>(); // id -> owner
    let answered = 0;

    /** One request, failed after 60 s rather than hanging the run (a lost answer hung for minutes). */
    const gql = async (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 60 s')), 60_000)));
      try {
        const r = await Promise.race([s.request('POST', '/v1/graphql', { query, variables }, headers), late]);
        answered++;
        return r;
      } finally {
        clearTimeout(timer);
      }
    };

    const user = async (owner: number) => {
      const headers = { 'x-svc-role': 'user', 'x-svc-user-id': String(owner) };
      const rows = new Map<number, Row>(seed.filter((r) => r.owner === owner).map((r) => [r.id, { ...r }]));
      const seedIds = [...rows.keys()];
      const other = seed.find((r) => r.owner === (owner % OWNERS) + 1)!; // never deleted: seed rows stay
      const mine: number[] = []; // rows this client inserted (the ones it deletes)
      const list = () => [...rows.values()].sort((a, b) => a.id - b.id);
      const agg = () => ({ count: rows.size, sum: { n: rows.size ? [...rows.values()].reduce((t, r) => t + r.n, 0) : null } });
      const check = (what: string, got: { status: number; body: any; text: string }, expected: unknown) => {
        const ok = got.status === 200 && JSON.stringify(got.body) === JSON.stringify({ data: expected });
        if (!ok) wrong.push(`user ${owner}, ${what}: expected ${JSON.stringify({ data: expected })}, got ${got.status} ${got.text.slice(0, 300)}`);
        return ok;
      };
      for (let k = 0; k < REQUESTS; k++) {
        const kind = (k + owner) % 9;
        const target = seedIds[k % seedIds.length]!;
        if (kind === 0) {
          check('list', await gql('query { item(order_by: {id: asc}) { id owner label n } }', {}, headers), { item: list() });
        } else if (kind === 1) {
          check('by_pk', await gql('query q($id: Int!) { item_by_pk(id: $id) { id owner label n } }', { id: target }, headers), { item_by_pk: rows.get(target) ?? null });
        } else if (kind === 2) {
          // Another user's row: this role's filter hides it.
          check("another's by_pk", await gql('query q($id: Int!) { item_by_pk(id: $id) { id owner label n } }', { id: other.id }, headers), { item_by_pk: null });
        } else if (kind === 3) {
          check('aggregate', await gql('query { item_aggregate { aggregate { count sum { n } } } }', {}, headers), { item_aggregate: { aggregate: agg() } });
        } else if (kind === 4) {
          const label = `u${owner}-k${k}`;
          const r = await gql('mutation m($label: String!, $n: Int!) { insert_item_one(object: {label: $label, n: $n}) { id owner label n } }', { label, n: k }, headers);
          const id = r.body?.data?.insert_item_one?.id;
          if (check('insert', r, { insert_item_one: { id, owner, label, n: k } }) && typeof id === 'number') {
            rows.set(id, { id, owner, label, n: k });
            mine.push(id);
            inserted.set(id, owner);
          }
        } else if (kind === 5) {
          const n = owner * 1000 + k;
          if (check('update_by_pk', await gql('mutation m($id: Int!, $n: Int!) { update_item_by_pk(pk_columns: {id: $id}, _set: {n: $n}) { id owner n } }', { id: target, n }, headers), { update_item_by_pk: { id: target, owner, n } })) {
            rows.get(target)!.n = n;
          }
        } else if (kind === 6) {
          const id = mine.shift();
          if (id === undefined) {
            // Nothing of its own to delete yet: another user's row is not deleted.
            check("another's delete", await gql('mutation m($id: Int!) { delete_item_by_pk(id: $id) { id } }', { id: other.id }, headers), { delete_item_by_pk: null });
          } else {
            const row = rows.get(id)!;
            if (check('delete_by_pk', await gql('mutation m($id: Int!) { delete_item_by_pk(id: $id) { id owner label } }', { id }, headers), { delete_item_by_pk: { id, owner, label: row.label } })) rows.delete(id);
          }
        } else if (kind === 7) {
          // Several root fields in one request (run side by side on the pool).
          check('three root fields', await gql('query q($id: Int!) { a: item(order_by: {id: asc}) { id owner label n } b: item_aggregate { aggregate { count sum { n } } } c: item_by_pk(id: $id) { id owner } }', { id: target }, headers), {
            a: list(),
            b: { aggregate: agg() },
            c: rows.has(target) ? { id: target, owner } : null,
          });
        } else {
          // An update of several rows by a filter, and its returning rows.
          const bump = k;
          const r = await gql('mutation m($b: Int!) { update_item(where: {n: {_gte: 0}}, _inc: {n: $b}) { affected_rows returning { id owner } } }', { b: bump }, headers);
          // The order of `returning` is not fixed: sorted by id before the comparison.
          r.body?.data?.update_item?.returning?.sort((a: { id: number }, b: { id: number }) => a.id - b.id);
          const after = list();
          if (check('update by filter', r, { update_item: { affected_rows: after.length, returning: after.map((x) => ({ id: x.id, owner })) } })) for (const x of after) x.n += bump;
        }
      }
      // What the database holds in the end is what this client was told.
      const stored = await direct<Row[]>`select id, owner, label, n from item where owner = ${owner} order by id`;
      if (JSON.stringify(stored.map((r) => ({ ...r }))) !== JSON.stringify(list())) wrong.push(`user ${owner}: the stored rows differ from what its requests were answered`);
    };

    const team = async (t: number) => {
      const name = `t${t}`;
      const headers = { 'x-svc-role': 'team', 'x-svc-team': name };
      const expected = notes.filter((x) => x.team === name);
      for (let k = 0; k < REQUESTS / 4; k++) {
        const r = await gql('query { note(order_by: {id: asc}) { id team body } note_aggregate { aggregate { count } } }', {}, headers);
        const want = { data: { note: expected, note_aggregate: { aggregate: { count: expected.length } } } };
        if (r.status !== 200 || JSON.stringify(r.body) !== JSON.stringify(want)) wrong.push(`team ${name}: expected ${JSON.stringify(want)}, got ${r.status} ${r.text.slice(0, 300)}`);
      }
    };

    // A client whose request got no answer stops; the others go on, and all is reported.
    const ends = await Promise.allSettled([...Array.from({ length: CLIENTS }, (_, i) => user(i + 1)), ...Array.from({ length: TEAMS }, (_, t) => team(t))]);
    for (const e of ends) if (e.status === 'rejected') wrong.push(`a client stopped: ${(e.reason as Error)?.message ?? e.reason}`);
    const errorLogs = () => JSON.stringify(s.logs.filter((l) => l.level === 'error' || l.level === 'warn').slice(0, 5));
    expect(wrong.slice(0, 10), `${wrong.length} of ${answered} answers were wrong; server log: ${errorLogs()}`).toEqual([]);
    expect(answered).toBe(CLIENTS * REQUESTS + TEAMS * (REQUESTS / 4));

    // The requests went through PgBouncer's pool of POOL server connections.
    const admin = postgres(bouncer.adminUrl, { max: 1, fetch_types: false, onnotice: () => {} });
    try {
      const pools = (await admin.unsafe('show pools').simple()) as unknown as Record<string, string>[];
      const mine = pools.filter((p) => p.database === new URL(pooledUrl).pathname.slice(1));
      expect(mine.length).toBe(1);
      expect(Number(mine[0]!.sv_active) + Number(mine[0]!.sv_idle) + Number(mine[0]!.sv_used) + Number(mine[0]!.sv_tested) + Number(mine[0]!.sv_login)).toBeLessThanOrEqual(POOL);
      const stats = (await admin.unsafe('show stats').simple()) as unknown as Record<string, string>[];
      const st = stats.find((p) => p.database === new URL(pooledUrl).pathname.slice(1))!;
      expect(Number(st.total_xact_count)).toBeGreaterThan(CLIENTS * REQUESTS);
    } finally {
      await admin.end({ timeout: 1 });
    }

    // Each insert's event: delivered once, with the session variables of the request that made it.
    const received = await hook.waitFor(inserted.size, 60_000);
    await new Promise((r) => setTimeout(r, 500)); // a duplicate would come now
    const seen = new Map<number, number>();
    for (const r of hook.received) {
      const ev = r.body?.event;
      const id = ev?.data?.new?.id;
      seen.set(id, (seen.get(id) ?? 0) + 1);
      if (inserted.get(id) === undefined) wrong.push(`an event for a row no request inserted: ${JSON.stringify(r.body).slice(0, 300)}`);
      else if (ev.data.new.owner !== inserted.get(id) || ev.session_variables?.['x-svc-user-id'] !== String(inserted.get(id)) || ev.session_variables?.['x-svc-role'] !== 'user') {
        wrong.push(`event of row ${id} (owner ${inserted.get(id)}) carries ${JSON.stringify({ new: ev.data.new, session_variables: ev.session_variables })}`);
      }
    }
    for (const [id, n] of seen) if (n !== 1) wrong.push(`row ${id}: ${n} events`);
    expect(wrong.slice(0, 10), `${wrong.length} wrong events; server log: ${errorLogs()}`).toEqual([]);
    expect(received.length).toBe(inserted.size);
    // Recorded as delivered (through PgBouncer too), each once.
    const deadline = Date.now() + 30_000;
    let delivered = -1;
    while (Date.now() < deadline) {
      delivered = (await direct`select count(*)::int as n from svc_catalog.event_log where trigger_name = 'item_inserted' and delivered`)[0]!.n as number;
      if (delivered === inserted.size) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(delivered).toBe(inserted.size);
    const invocations = await direct`select count(*)::int as n from svc_catalog.event_invocation_logs where trigger_name = 'item_inserted'`;
    expect(invocations[0]!.n).toBe(inserted.size);

    // No named prepared statement was left on any server connection of the pool, which the
    // catalog and the source share: POOL transactions at once hold every server connection, and
    // each reads its own backend's statements.
    const holders = Array.from({ length: POOL }, () => postgres(pooledUrl, { max: 1, prepare: false, fetch_types: false, onnotice: () => {} }));
    try {
      let release!: () => void;
      const all = new Promise<void>((r) => (release = r));
      let seenCount = 0;
      const backends = await Promise.all(
        holders.map((h) =>
          h.begin(async (tx) => {
            const [row] = await tx.unsafe(
              `select pg_backend_pid() as pid, coalesce((select string_agg(name, ',') from pg_prepared_statements), '') as names,
                 coalesce((select string_agg(c, ',') from pg_listening_channels() c), '') as channels`,
            );
            if (++seenCount === POOL) release();
            await all;
            return row as unknown as { pid: number; names: string; channels: string };
          }),
        ),
      );
      expect(new Set(backends.map((b) => b.pid)).size).toBe(POOL);
      expect(backends.map((b) => b.names)).toEqual(backends.map(() => ''));
      // Nor a LISTEN (Note [Poolers]: a notification on a server connection made PgBouncer lend it
      // with an answer still due).
      expect(backends.map((b) => b.channels)).toEqual(backends.map(() => ''));
    } finally {
      await Promise.all(holders.map((h) => h.end({ timeout: 1 })));
    }
  }, 300_000);

  it('objects inserted in steps (Note [Batches in steps]), pipelined in one transaction: every row under its own object; a failing step keeps nothing; rows under one object in steps bound to its answered row', async () => {
    const seeded = await s.query({
      type: 'run_sql',
      args: { source: 'pooled', sql: `create table box (id serial primary key, code text unique not null, label text not null); create table thing (id serial primary key, box_id int not null references box(id), name text not null);` },
    });
    expect(seeded.status, seeded.text).toBe(200);
    const md = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { source: 'pooled', table: 'box' } },
        { type: 'pg_track_table', args: { source: 'pooled', table: 'thing' } },
        { type: 'pg_create_array_relationship', args: { source: 'pooled', table: 'box', name: 'things', using: { foreign_key_constraint_on: { table: 'thing', column: 'box_id' } } } },
      ],
    });
    expect(md.status, md.text).toBe(200);
    // An update with a where: each object a step of its own.
    const insert = `mutation ($o: [box_insert_input!]!) { insert_box(objects: $o, on_conflict: {constraint: box_code_key, update_columns: [label], where: {label: {_like: "x%"}}}) { affected_rows returning { code things { name } } } }`;
    const boxes = (from: number) => Array.from({ length: 200 }, (_, i) => ({ code: `c${from + i}`, label: `l${i}`, things: { data: [{ name: `a${from + i}` }, { name: `b${from + i}` }] } }));
    const r = await s.gql(insert, { o: boxes(0) });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_box).toEqual({ affected_rows: 600, returning: boxes(0).map((b) => ({ code: b.code, things: b.things.data })) });
    const stored = async () => (await direct<{ code: string; name: string }[]>`select b.code, t.name from thing t join box b on b.id = t.box_id order by t.id`).map((x) => `${x.code}:${x.name}`);
    expect(await stored()).toEqual(boxes(0).flatMap((b) => b.things.data.map((t) => `${b.code}:${t.name}`)));
    // The 150th object's box is there, and its label no update's where admits: that step writes
    // nothing, and the steps before it are rolled back with it.
    const failing = boxes(1000);
    failing[150]!.code = 'c7';
    const bad = await s.gql(insert, { o: failing });
    expect(bad.errors?.[0]).toEqual({
      message: 'cannot proceed to insert array relations since insert to table "box" affects zero rows',
      extensions: { code: 'not-supported', path: '$.selectionSet.insert_box.args.objects[150]' },
    });
    expect((await stored()).length).toBe(400);

    // Rows under one object in steps, each binding the row an earlier step answered (a level
    // that cannot be a set: things upserting doing nothing, each with a bit under it).
    const more = await s.query({ type: 'run_sql', args: { source: 'pooled', sql: `create table bit (id serial primary key, thing_id int not null references thing(id), n int not null);` } });
    expect(more.status, more.text).toBe(200);
    const md2 = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { source: 'pooled', table: 'bit' } },
        { type: 'pg_create_array_relationship', args: { source: 'pooled', table: 'thing', name: 'bits', using: { foreign_key_constraint_on: { table: 'bit', column: 'thing_id' } } } },
      ],
    });
    expect(md2.status, md2.text).toBe(200);
    const things = Array.from({ length: 500 }, (_, i) => ({ name: `u${i}`, bits: { data: [{ n: i }] } }));
    const one = await s.gql(`mutation ($o: box_insert_input!) { insert_box_one(object: $o) { code } }`, {
      o: { code: 'one', label: 'one', things: { data: things, on_conflict: { constraint: 'thing_pkey', update_columns: [] } } },
    });
    expect(one).toEqual({ data: { insert_box_one: { code: 'one' } } });
    const under = await direct<{ name: string; n: number; code: string }[]>`select t.name, x.n, b.code from bit x join thing t on t.id = x.thing_id join box b on b.id = t.box_id order by x.id`;
    expect(under).toEqual(things.map((t, i) => ({ name: t.name, n: i, code: 'one' })));
  }, 120_000);
});
