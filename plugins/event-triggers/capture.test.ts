/**
 * Capture is reconciled from the metadata (Note [Reconciling capture]): what a crash between the
 * catalog write and the trigger DDL leaves, a function dropped or changed by hand, a function the
 * metadata does not know, all heal at the next boot or reload; a build that changes nothing about
 * event triggers does not touch the source.
 */
import { afterAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

const cfg = { eventsFetchInterval: 3_600_000 };
let db: { name: string; url: string };
let sql: postgres.Sql;
const servers: TestServer[] = [];

async function start(): Promise<TestServer> {
  db ??= await createDatabase();
  sql ??= postgres(db.url, { max: 1, onnotice: () => {} });
  const s = await startServer({ database: db, config: cfg, env: { HOOK: 'http://127.0.0.1:1/' } });
  servers.push(s);
  return s;
}
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => {});
  await sql?.end();
});

const functions = async () =>
  (await sql`select p.proname, obj_description(p.oid, 'pg_proc') as tag,
               (select array_agg(c.relname::text order by c.relname) from pg_trigger t join pg_class c on c.oid = t.tgrelid where t.tgfoid = p.oid) as tables
             from pg_proc p join pg_namespace n on n.oid = p.pronamespace
             where n.nspname = 'svc_catalog' and p.proname like 'notify%' order by 1`).map((r) => [r.proname, r.tables]);
const reconciled = (s: TestServer) => s.logs.filter((l) => l.type === 'event-trigger' && l.detail.message === 'event capture reconciled with the metadata').length;

describe('reconciling capture with the metadata', () => {
  it('heals at boot, on reload_metadata, and leaves the source alone otherwise', async () => {
    let s = await start();
    await s.runSql('create table a (id serial primary key, v text); create table b (id serial primary key); create table c (id int)');
    for (const name of ['a', 'b']) expect((await s.query({ type: 'track_table', args: { name } })).status).toBe(200);
    expect((await s.query({ type: 'create_event_trigger', args: { name: 'ta', table: 'a', webhook: '{{HOOK}}', insert: { columns: '*' }, update: { columns: ['v'] } } })).status).toBe(200);
    expect(await functions()).toEqual([
      ['notify_svc_ta_INSERT', ['a']],
      ['notify_svc_ta_UPDATE', ['a']],
    ]);

    // An operation that does not change event triggers does not reconcile.
    const before = reconciled(s);
    expect((await s.query({ type: 'untrack_table', args: { table: 'b' } })).status).toBe(200);
    expect((await s.query({ type: 'track_table', args: { name: 'b' } })).status).toBe(200);
    expect(reconciled(s)).toBe(before);

    // By hand: one function dropped, the other replaced by a body that records nothing.
    await sql.unsafe(`drop function svc_catalog."notify_svc_ta_INSERT"() cascade;
      create or replace function svc_catalog."notify_svc_ta_UPDATE"() returns trigger language plpgsql as $$ begin return null; end $$`);
    expect((await s.query({ type: 'reload_metadata', args: {} })).status).toBe(200);
    expect(await functions()).toEqual([
      ['notify_svc_ta_INSERT', ['a']],
      ['notify_svc_ta_UPDATE', ['a']],
    ]);
    await sql`insert into a (v) values ('x')`;
    await sql`update a set v = 'y'`;
    expect((await sql`select payload->>'op' as op from svc_catalog.event_log order by created_at`).map((r) => r.op)).toEqual(['INSERT', 'UPDATE']);
    await s.stop();

    // A crash after the catalog write and before the source's DDL committed: the metadata has
    // trigger `tb`, the source has nothing of it. And the other way round: the source has a
    // trigger `ghost` (with a pending event) that the metadata never got.
    await sql.unsafe(`drop function svc_catalog."notify_svc_ta_INSERT"() cascade;
      create function svc_catalog."notify_svc_ghost_INSERT"() returns trigger language plpgsql as $$ begin return null; end $$;
      comment on function svc_catalog."notify_svc_ghost_INSERT"() is 'svc event trigger of source "default"';
      create trigger "notify_svc_ghost_INSERT" after insert on c for each row execute procedure svc_catalog."notify_svc_ghost_INSERT"();
      insert into svc_catalog.event_log (schema_name, table_name, trigger_name, payload) values ('public', 'c', 'ghost', '{}')`);
    const md = await sql`select key, value::text as value from svc_catalog.metadata_part where key like 'sources/%' and value::text like '%"name":"b"%'`;
    expect(md).toHaveLength(1);
    const entry = JSON.parse(md[0]!.value as string);
    entry.event_triggers = [{ name: 'tb', definition: { delete: { columns: '*' }, enable_manual: false }, retry_conf: { num_retries: 0, interval_sec: 10 }, webhook: '{{HOOK}}' }];
    await sql`update svc_catalog.metadata_part set value = ${JSON.stringify(entry)} where key = ${md[0]!.key}`;

    s = await start();
    expect(await functions()).toEqual([
      ['notify_svc_ta_INSERT', ['a']],
      ['notify_svc_ta_UPDATE', ['a']],
      ['notify_svc_tb_DELETE', ['b']],
    ]);
    expect((await sql`select trigger_name, archived from svc_catalog.event_log where trigger_name = 'ghost'`).map((r) => r.archived)).toEqual([true]);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });

    // A second instance booting on the same database finds nothing to do.
    const t = await start();
    expect(reconciled(t)).toBe(0);
    await t.stop();
  });

  it('a variable the trigger needs, unset at boot: the server boots, the trigger is inconsistent and still captures', async () => {
    const own = await createDatabase();
    const boot = (env: Record<string, string>) => startServer({ database: own, config: cfg, env });
    let s = await boot({ HOOK_FROM_ENV: 'http://127.0.0.1:1/' });
    await s.runSql('create table e (id int)');
    expect((await s.query({ type: 'track_table', args: { name: 'e' } })).status).toBe(200);
    const r = await s.query({ type: 'create_event_trigger', args: { name: 'te', table: 'e', webhook_from_env: 'HOOK_FROM_ENV', insert: { columns: '*' }, headers: [{ name: 'x', value_from_env: 'HOOK_FROM_ENV' }] } });
    expect(r.status, r.text).toBe(200);
    await s.stop();
    s = await boot({});
    servers.push(s);
    expect((await s.request('GET', '/healthz')).text).toBe('WARN: inconsistent objects in schema');
    const inc = (await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body;
    expect(inc.inconsistent_objects.map((o: any) => [o.type, o.reason])).toEqual([
      ['event_trigger', 'Inconsistent object: in table "e": in event trigger "te": environment variable \'HOOK_FROM_ENV\' not set'],
    ]);
    await s.runSql('insert into e values (1)');
    expect((await s.runSql(`select count(*) from svc_catalog.event_log where trigger_name = 'te'`)).result).toEqual([['count'], ['1']]);
  });

  it('two sources on one database keep their own capture; a dropped source takes its capture along', async () => {
    const s = servers.at(-3)!;
    const add = await s.metadata({ type: 'pg_add_source', args: { name: 'second', configuration: { connection_info: { database_url: db.url } } } });
    expect(add.status, add.text).toBe(200);
    expect((await s.metadata({ type: 'pg_track_table', args: { source: 'second', table: 'c' } })).status).toBe(200);
    const r = await s.metadata({ type: 'pg_create_event_trigger', args: { source: 'second', name: 'tc', table: 'c', webhook: '{{HOOK}}', insert: { columns: '*' } } });
    expect(r.status, r.text).toBe(200);
    const all = [
      ['notify_svc_ta_INSERT', ['a']],
      ['notify_svc_ta_UPDATE', ['a']],
      ['notify_svc_tb_DELETE', ['b']],
      ['notify_svc_tc_INSERT', ['c']],
    ];
    expect(await functions()).toEqual(all);
    // Each source's builds leave the other's functions alone.
    expect((await s.query({ type: 'reload_metadata', args: {} })).status).toBe(200);
    expect(await functions()).toEqual(all);
    // rename_source: the renamed source takes its functions over.
    expect((await s.metadata({ type: 'rename_source', args: { name: 'second', new_name: 'third' } })).status).toBe(200);
    expect(await functions()).toEqual(all);
    await sql`insert into c (id) values (1)`;
    expect((await sql`select count(*)::int as n from svc_catalog.event_log where trigger_name = 'tc'`)[0]!.n).toBe(1);
    expect((await s.metadata({ type: 'pg_drop_source', args: { name: 'third', cascade: true } })).status).toBe(200);
    expect(await functions()).toEqual(all.slice(0, 3));
    expect((await sql`select archived from svc_catalog.event_log where trigger_name = 'tc'`).map((x) => x.archived)).toEqual([true]);
  });
});
