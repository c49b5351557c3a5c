/**
 * Golden HTTP tests of dry runs (Note [Dry runs] in core/kernel/pipeline.ts): the report of what
 * a request would do, and that nothing is left behind: no metadata, no resource_version, no
 * history entry, no epoch bump, no SQL (tables, rows, event capture), no cron slot or event.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';

const s = useServer(`
  create table author (id serial primary key, name text);
  create table article (id serial primary key, title text, author_id int references author(id));
  insert into author (name) values ('ann');
`);

const m = async (body: unknown, headers?: Record<string, string>) => {
  const r = await s.metadata(body, headers);
  return { status: r.status, body: r.body };
};
const ok = { status: 200, body: { message: 'success' } };
const track = (name: string) => ({ type: 'pg_track_table', args: { table: name } });
const dry = (body: Record<string, unknown>) => m({ ...body, dry_run: true });

/** Everything a dry run must leave as it was. */
async function state() {
  const exp = (await m({ type: 'export_metadata', version: 2, args: {} })).body;
  const [catalog] = await s.sql`select resource_version, epoch from svc_catalog.state`;
  const [hist] = await s.sql`select count(*)::int as n, max(resource_version)::int as last from svc_catalog.metadata_history`;
  const tables = await s.sql`select table_name from information_schema.tables where table_schema = 'public' order by 1`;
  const fns = await s.sql`select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'svc_catalog' and p.proname like 'notify%' order by 1`;
  const triggers = await s.sql`select tgname from pg_trigger where not tgisinternal order by 1`;
  const authors = await s.sql`select id, name from author order by id`;
  return { exp, catalog, hist, tables: tables.map((r) => r.table_name), fns: fns.map((r) => r.proname), triggers: triggers.map((r) => r.tgname), authors };
}

/** Runs `f` and checks that it left `state()` as it was. */
async function leavesNothing<T>(f: () => Promise<T>): Promise<T> {
  const before = await state();
  const out = await f();
  expect(await state()).toEqual(before);
  return out;
}

beforeEach(async () => {
  expect(await m({ type: 'clear_metadata', args: {} })).toEqual(ok);
});

describe('a dry run reports what the request would do', () => {
  it('a change that would succeed: its response, the diff, no inconsistency; nothing written', async () => {
    const r = await leavesNothing(() => dry(track('author')));
    expect(r).toEqual({
      status: 200,
      body: {
        dry_run: true,
        would_succeed: true,
        status: 200,
        response: { message: 'success' },
        diff: [{ kind: 'added', path: 'sources[default].tables[public.author]', value: { table: { schema: 'public', name: 'author' } } }],
        inconsistencies_added: [],
        inconsistencies_removed: [],
      },
    });
    // The same request for real does what the dry run said.
    expect(await m(track('author'))).toEqual(ok);
    expect(await s.gql('{ author { name } }')).toEqual({ data: { author: [{ name: 'ann' }] } });
  });

  it('a change that would fail: the error the request answers, with its status', async () => {
    const real = await leavesNothing(() => m(track('no_such_table')));
    expect(real.status).toBe(400);
    const r = await leavesNothing(() => dry(track('no_such_table')));
    // It fails in its run step: no draft, so nothing is known of a change.
    expect(r).toEqual({
      status: 200,
      body: { dry_run: true, would_succeed: false, status: 400, response: real.body, diff: null, inconsistencies_added: null, inconsistencies_removed: null },
    });
  });

  it('a change refused for its inconsistencies: the error, and the diff and inconsistencies that made it', async () => {
    const doc = (await m({ type: 'export_metadata', args: {} })).body;
    const withGhost = { ...doc, sources: [{ ...doc.sources[0], tables: [{ table: { schema: 'public', name: 'ghost' } }, { table: { schema: 'public', name: 'author' } }] }] };
    const req = { type: 'replace_metadata', version: 2, args: { metadata: withGhost } };
    const real = await leavesNothing(() => m(req));
    expect(real.body).toMatchObject({ code: 'unexpected', error: 'cannot continue due to inconsistent metadata' });
    const r = await leavesNothing(() => dry(req));
    expect(r.body).toEqual({
      dry_run: true,
      would_succeed: false,
      status: 400,
      response: real.body,
      diff: [
        { kind: 'added', path: 'sources[default].tables[public.ghost]', value: { table: { schema: 'public', name: 'ghost' } } },
        { kind: 'added', path: 'sources[default].tables[public.author]', value: { table: { schema: 'public', name: 'author' } } },
      ],
      inconsistencies_added: [expect.objectContaining({ type: 'table', name: 'table ghost in source default' })],
      inconsistencies_removed: [],
    });
  });

  it('arguments that do not parse and unknown types are the report\'s error; nothing is known of the change', async () => {
    const r = await dry({ type: 'pg_track_table', args: { table: 5 } });
    expect(r).toMatchObject({ status: 200, body: { would_succeed: false, status: 400, response: { code: 'parse-failed', path: '$.args.table' }, diff: null, inconsistencies_added: null, inconsistencies_removed: null } });
    expect(await dry({ type: 'no_such_operation', args: {} })).toMatchObject({ status: 200, body: { would_succeed: false, status: 400, response: { code: 'parse-failed', path: '$.type' } } });
    // An error of the run step: no draft, nothing known.
    expect(await dry({ type: 'pg_untrack_table', args: { table: 'author' } })).toMatchObject({
      status: 200,
      body: { would_succeed: false, status: 400, response: { code: 'already-untracked' }, diff: null, inconsistencies_added: null },
    });
  });

  it('a stale resource_version: 409 in the report', async () => {
    const { resource_version: rv } = (await m({ type: 'export_metadata', version: 2, args: {} })).body;
    const r = await leavesNothing(() => dry({ ...track('author'), resource_version: rv - 1 }));
    expect(r.body).toMatchObject({ would_succeed: false, status: 409, response: { code: 'conflict', path: '$' } });
    expect((await dry({ ...track('author'), resource_version: rv })).body).toMatchObject({ would_succeed: true, status: 200 });
  });

  it('a read: its answer, no change', async () => {
    const exp = (await m({ type: 'export_metadata', args: {} })).body;
    expect(await dry({ type: 'export_metadata', args: {} })).toEqual({
      status: 200,
      body: { dry_run: true, would_succeed: true, status: 200, response: exp, diff: [], inconsistencies_added: [], inconsistencies_removed: [] },
    });
  });

  it('reload_metadata: its answer, and no new resource_version', async () => {
    const r = await leavesNothing(() => dry({ type: 'reload_metadata', args: {} }));
    expect(r.body).toEqual({ dry_run: true, would_succeed: true, status: 200, response: { is_consistent: true, message: 'success' }, diff: [], inconsistencies_added: [], inconsistencies_removed: [] });
  });

  it('inconsistencies the request would add and remove', async () => {
    const doc = (await m({ type: 'export_metadata', args: {} })).body;
    const withGhost = { ...doc, sources: [{ ...doc.sources[0], tables: [{ table: { schema: 'public', name: 'ghost' } }] }] };
    const r = await leavesNothing(() => dry({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: withGhost } }));
    expect(r.body).toMatchObject({ would_succeed: true, status: 200, response: { is_consistent: false } });
    expect(r.body.inconsistencies_added).toEqual([expect.objectContaining({ type: 'table', name: 'table ghost in source default' })]);
    expect(r.body.inconsistencies_removed).toEqual([]);

    // Now for real, then a dry drop_inconsistent_metadata removes it.
    expect((await m({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: withGhost } })).status).toBe(200);
    const drop = await leavesNothing(() => dry({ type: 'drop_inconsistent_metadata', args: {} }));
    expect(drop.body).toMatchObject({ would_succeed: true, response: { message: 'success' }, inconsistencies_added: [] });
    expect(drop.body.inconsistencies_removed).toEqual([expect.objectContaining({ type: 'table', name: 'table ghost in source default' })]);
    expect(drop.body.diff).toEqual([{ kind: 'removed', path: 'sources[default].tables[public.ghost]', value: { table: { schema: 'public', name: 'ghost' } } }]);
  });
});

describe('bulk', () => {
  it('a bulk that would succeed: the list of responses and one diff', async () => {
    const r = await leavesNothing(() =>
      dry({
        type: 'bulk',
        args: [track('author'), track('article'), { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } }],
      }),
    );
    expect(r.body).toMatchObject({ would_succeed: true, status: 200, response: [{ message: 'success' }, { message: 'success' }, { message: 'success' }] });
    expect(r.body.diff.map((c: any) => [c.kind, c.path])).toEqual([
      ['added', 'sources[default].tables[public.author]'],
      ['added', 'sources[default].tables[public.article]'],
    ]);
  });

  it('a bulk with a failing step: the error the bulk answers, nothing of the others done', async () => {
    const req = { type: 'bulk', args: [{ type: 'pg_run_sql', args: { source: 'default', sql: 'create table bulk_made (id int primary key)' } }, track('bulk_made'), track('no_such_table')] };
    const real = await leavesNothing(() => m(req));
    expect(real).toMatchObject({ status: 400, body: { code: 'not-exists' } });
    const r = await leavesNothing(() => dry(req));
    expect(r.body).toEqual({ dry_run: true, would_succeed: false, status: 400, response: real.body, diff: null, inconsistencies_added: null, inconsistencies_removed: null });
  });

  it('run_sql with DDL and a track of the new table: would succeed, and no table is left', async () => {
    const r = await leavesNothing(() =>
      dry({ type: 'bulk', args: [{ type: 'pg_run_sql', args: { source: 'default', sql: 'create table made_here (id int primary key, v text)' } }, track('made_here')] }),
    );
    expect(r.body).toMatchObject({ would_succeed: true, response: [{ result_type: 'CommandOk', result: null }, { message: 'success' }] });
    expect(r.body.diff).toEqual([{ kind: 'added', path: 'sources[default].tables[public.made_here]', value: { table: { schema: 'public', name: 'made_here' } } }]);
    expect(await s.sql`select to_regclass('public.made_here') as t`).toEqual([{ t: null }]);
  });
});

describe('SQL and side effects are undone', () => {
  it('run_sql alone: DDL and data roll back, the epoch stays (no other instance hears of it)', async () => {
    const r = await leavesNothing(() => dry({ type: 'pg_run_sql', args: { source: 'default', sql: "create table solo (id int); insert into author (name) values ('bo'); select count(*) from author" } }));
    expect(r.body).toMatchObject({ would_succeed: true, response: { result_type: 'TuplesOk', result: [['count'], ['2']] } });
    // The legacy endpoint and its data operations too.
    expect(await m(track('author'))).toEqual(ok);
    const ins = await leavesNothing(async () => {
      const x = await s.query({ type: 'insert', args: { table: 'author', objects: [{ name: 'cy' }], returning: ['name'] }, dry_run: true });
      return { status: x.status, body: x.body };
    });
    expect(ins).toEqual({
      status: 200,
      body: { dry_run: true, would_succeed: true, status: 200, response: { affected_rows: 1, returning: [{ name: 'cy' }] }, diff: [], inconsistencies_added: [], inconsistencies_removed: [] },
    });
  });

  it('an event trigger: no SQL trigger or function is left, where the real request makes them', async () => {
    expect(await m(track('author'))).toEqual(ok);
    const create = { type: 'pg_create_event_trigger', args: { source: 'default', table: 'author', name: 'on_author', webhook: 'http://127.0.0.1:1/hook', insert: { columns: '*' } } };
    const r = await leavesNothing(() => dry(create));
    expect(r.body).toMatchObject({ would_succeed: true, response: { message: 'success' } });
    expect(r.body.diff).toEqual([{ kind: 'added', path: 'sources[default].tables[public.author].event_triggers', value: [expect.objectContaining({ name: 'on_author' })] }]);
    // The check above can fail: for real, the capture exists.
    expect(await m(create)).toEqual(ok);
    expect((await state()).fns).toEqual(['notify_svc_on_author_INSERT']);
    // A dry delete leaves it in place.
    await leavesNothing(() => dry({ type: 'pg_delete_event_trigger', args: { source: 'default', name: 'on_author' } }));
    expect(await m({ type: 'pg_delete_event_trigger', args: { source: 'default', name: 'on_author' } })).toEqual(ok);
    expect((await state()).fns).toEqual([]);
  });

  it('cron triggers and scheduled events: no slot, no event, no catalog row', async () => {
    const events = async () => (await s.sql`select count(*)::int as n from svc_catalog.scheduled_events`)[0]!.n;
    const crons = async () => (await s.sql`select count(*)::int as n from svc_catalog.cron_triggers`)[0]!.n;
    const before = [await events(), await crons()];
    for (const include_in_metadata of [true, false]) {
      const r = await leavesNothing(() => dry({ type: 'create_cron_trigger', args: { name: `c_${include_in_metadata}`, webhook: 'http://127.0.0.1:1/cron', schedule: '* * * * *', include_in_metadata } }));
      expect(r.body).toMatchObject({ would_succeed: true, response: { message: 'success' } });
      expect(r.body.diff).toEqual(include_in_metadata ? [{ kind: 'added', path: 'cron_triggers', value: [expect.objectContaining({ name: 'c_true' })] }] : []);
    }
    const one = await leavesNothing(() => dry({ type: 'create_scheduled_event', args: { webhook: 'http://127.0.0.1:1/one', schedule_at: new Date(Date.now() + 3_600_000).toISOString() } }));
    expect(one.body).toMatchObject({ would_succeed: true, response: { message: 'success', event_id: expect.any(String) } });
    expect([await events(), await crons()]).toEqual(before);
    // For real, the same request makes slots (so the count above can fail).
    expect(await m({ type: 'create_cron_trigger', args: { name: 'real', webhook: 'http://127.0.0.1:1/cron', schedule: '* * * * *', include_in_metadata: true } })).toEqual(ok);
    expect(await events()).toBeGreaterThan(before[0]!);
    await leavesNothing(() => dry({ type: 'delete_cron_trigger', args: { name: 'real' } }));
    expect(await m({ type: 'delete_cron_trigger', args: { name: 'real' } })).toEqual(ok);
  });

  it('rollback_metadata: the diff back to the version, and no new version', async () => {
    const { resource_version: target } = (await m({ type: 'export_metadata', version: 2, args: {} })).body;
    expect(await m(track('author'))).toEqual(ok);
    const r = await leavesNothing(() => dry({ type: 'rollback_metadata', args: { to_resource_version: target } }));
    expect(r.body).toMatchObject({ would_succeed: true, response: { message: 'success', rolled_back_to: target } });
    expect(r.body.diff).toEqual([{ kind: 'removed', path: 'sources[default].tables[public.author]', value: { table: { schema: 'public', name: 'author' } } }]);
  });
});

describe('what a dry run refuses', () => {
  it('an operation whose effects cannot be undone: 400 not-supported naming it', async () => {
    const r = await leavesNothing(async () => {
      const x = await s.query({ type: 'run_sql', args: { sql: 'vacuum author', no_transaction: true }, dry_run: true });
      return { status: x.status, body: x.body };
    });
    expect(r).toEqual({
      status: 400,
      body: {
        code: 'not-supported',
        path: '$.dry_run',
        error: 'operation "run_sql" cannot be dry-run: with "no_transaction": true its statements run and commit outside any transaction, which cannot be rolled back',
      },
    });
    const inBulk = await dry({ type: 'bulk', args: [track('author'), { type: 'pg_run_sql', args: { source: 'default', sql: 'vacuum author', no_transaction: true } }] });
    expect(inBulk).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$.args[1]', error: expect.stringContaining('operation "pg_run_sql" cannot be dry-run') } });
  });

  it('a dry_run that is not a boolean, or given on one request of a bulk', async () => {
    expect(await m({ ...track('author'), dry_run: 'yes' })).toEqual({ status: 400, body: { code: 'parse-failed', path: '$.dry_run', error: 'parsing Bool failed, expected Boolean, but encountered String' } });
    const inner = await leavesNothing(() => m({ type: 'bulk', args: [track('author'), { ...track('article'), dry_run: true }] }));
    expect(inner).toEqual({
      status: 400,
      body: { code: 'not-supported', path: '$.args[1].dry_run', error: 'dry_run applies to a whole request: give it beside the type "bulk", not on one of its requests' },
    });
    // dry_run: false is a request like any other.
    expect(await m({ ...track('author'), dry_run: false })).toEqual(ok);
  });

  it('a caller who may not run the request', async () => {
    expect(await dry({ type: 'export_metadata', args: {} }).then(() => s.metadata({ type: 'export_metadata', args: {}, dry_run: true }, { 'x-svc-role': 'user' }))).toMatchObject({
      status: 400,
      body: { code: 'access-denied' },
    });
  });
});
