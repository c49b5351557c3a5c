/**
 * Golden HTTP tests of the metadata history (Note [Metadata history] in ./store.ts) and its
 * operations (./operations.ts): versions recorded per request, retention, reading, diffing and
 * rolling back to a version, another instance following a rollback, and the plugin disabled.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase, startServer, useServer, type TestServer } from '../../test/helpers.js';

const s = useServer(`
  create table author (id serial primary key, name text);
  create table article (id serial primary key, title text, author_id int references author(id));
  insert into author (name) values ('ann');
`);

const m = async (body: unknown, server: TestServer = s) => {
  const r = await server.metadata(body);
  return { status: r.status, body: r.body };
};
const exportV2 = async (server: TestServer = s) => (await m({ type: 'export_metadata', version: 2, args: {} }, server)).body as { resource_version: number; metadata: any };
const history = async (args: unknown = {}) => (await m({ type: 'get_metadata_history', args })).body;
const ok = { status: 200, body: { message: 'success' } };
const track = (name: string) => ({ type: 'pg_track_table', args: { table: name } });
const untrack = (name: string) => ({ type: 'pg_untrack_table', args: { table: name } });

beforeEach(async () => {
  expect(await m({ type: 'clear_metadata', args: {} })).toEqual(ok);
});

describe('versions are recorded', () => {
  it('one per committed request, with its operation types, time and role; reads and refusals add none', async () => {
    const before = await exportV2();
    const h0 = await history();
    expect(h0.versions[0]).toMatchObject({ resource_version: before.resource_version });

    expect(await m(track('author'))).toEqual(ok);
    expect(await m({ type: 'export_metadata', args: {} })).toMatchObject({ status: 200 });
    expect(await m(track('no_such_table'))).toMatchObject({ status: 400 });
    expect(
      await m({
        type: 'bulk',
        args: [track('article'), { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id'], filter: {} } } }],
      }),
    ).toMatchObject({ status: 200 });
    expect((await s.query({ type: 'untrack_table', args: { table: 'article' } })).status).toBe(200);
    // SQL that changes no metadata bumps the epoch, not the resource_version: no version.
    await s.runSql('create table scratch (id int)');

    const h = await history({ limit: 3 });
    const rv = before.resource_version;
    expect(h.total).toBe(h0.total + 3);
    expect(h.versions.map((x: any) => [x.resource_version, x.operations, x.role])).toEqual([
      [rv + 3, ['untrack_table'], 'admin'],
      [rv + 2, ['pg_track_table', 'pg_create_select_permission'], 'admin'],
      [rv + 1, ['pg_track_table'], 'admin'],
    ]);
    for (const x of h.versions) {
      expect(Object.keys(x)).toEqual(['resource_version', 'time', 'operations', 'role']);
      expect(Date.now() - Date.parse(x.time)).toBeLessThan(60_000);
    }
    expect((await exportV2()).resource_version).toBe(rv + 3);
    await s.runSql('drop table scratch');
  });

  it('pages with limit and offset, newest first', async () => {
    const all = await history({ limit: 1000 });
    const page = await history({ limit: 2, offset: 1 });
    expect(page.total).toBe(all.total);
    expect(page.versions).toEqual(all.versions.slice(1, 3));
    expect((await history({ limit: 0 })).versions).toEqual([]);
    expect((await m({ type: 'get_metadata_history', args: null })).body.versions).toEqual(all.versions.slice(0, 100));
  });

  it('get_metadata_version answers the document exactly as export_metadata gave it then', async () => {
    expect(await m(track('author'))).toMatchObject({ status: 200 });
    const at = await exportV2();
    expect(await m(untrack('author'))).toEqual(ok);
    const r = await m({ type: 'get_metadata_version', args: { resource_version: at.resource_version } });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['resource_version', 'time', 'operations', 'role', 'metadata']);
    expect(r.body).toMatchObject({ resource_version: at.resource_version, operations: ['pg_track_table'], role: 'admin' });
    expect(r.body.metadata).toEqual(at.metadata);
    expect(JSON.stringify(r.body.metadata)).toBe(JSON.stringify(at.metadata));
  });
});

describe('diff_metadata', () => {
  it('names what changed between two versions, by object path', async () => {
    const a = (await exportV2()).resource_version;
    expect(await m(track('author'))).toMatchObject({ status: 200 });
    expect(
      await m({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: { id: { _eq: 1 } } } } }),
    ).toMatchObject({ status: 200 });
    const b = (await exportV2()).resource_version;
    expect(
      await m({
        type: 'bulk',
        args: [
          { type: 'pg_drop_select_permission', args: { table: 'author', role: 'user' } },
          { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: { id: { _eq: 2 } } } } },
        ],
      }),
    ).toMatchObject({ status: 200 });

    expect(await m({ type: 'diff_metadata', args: { from: a, to: b } })).toEqual({
      status: 200,
      body: {
        from: a,
        to: b,
        changes: [
          {
            kind: 'added',
            path: 'sources[default].tables[public.author]',
            value: { table: { schema: 'public', name: 'author' }, select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { id: { _eq: 1 } } } }] },
          },
        ],
      },
    });
    // `to` defaults to the current version; named list elements are matched by name.
    const r = await m({ type: 'diff_metadata', args: { from: b } });
    expect(r.body.to).toBe(b + 1);
    expect(r.body.changes).toEqual([
      { kind: 'changed', path: 'sources[default].tables[public.author].select_permissions[user].permission.columns', from: ['id'], to: ['id', 'name'] },
      { kind: 'changed', path: 'sources[default].tables[public.author].select_permissions[user].permission.filter.id._eq', from: 1, to: 2 },
    ]);
    expect((await m({ type: 'diff_metadata', args: { from: b + 1, to: b + 1 } })).body.changes).toEqual([]);
    // Backwards: the same changes the other way round.
    expect((await m({ type: 'diff_metadata', args: { from: b, to: a } })).body.changes).toEqual([
      { kind: 'removed', path: 'sources[default].tables[public.author]', value: expect.objectContaining({ table: { schema: 'public', name: 'author' } }) },
    ]);
    expect(await m(untrack('author'))).toMatchObject({ status: 200 });
  });
});

describe('rollback_metadata', () => {
  it('restores a version exactly, as a new version, and the GraphQL schema follows', async () => {
    expect(await m(track('author'))).toMatchObject({ status: 200 });
    const target = await exportV2();
    expect(await m(track('article'))).toMatchObject({ status: 200 });
    expect(await m(untrack('author'))).toMatchObject({ status: 200 });
    const now = await exportV2();
    expect(now.metadata).not.toEqual(target.metadata);
    expect((await s.gql('{ author { name } }')).errors).toBeDefined();

    const r = await m({ type: 'rollback_metadata', args: { to_resource_version: target.resource_version } });
    expect(r).toEqual({ status: 200, body: { message: 'success', resource_version: now.resource_version + 1, rolled_back_to: target.resource_version } });
    const after = await exportV2();
    expect(after.resource_version).toBe(now.resource_version + 1);
    expect(JSON.stringify(after.metadata)).toBe(JSON.stringify(target.metadata));
    expect(await s.gql('{ author { name } }')).toEqual({ data: { author: [{ name: 'ann' }] } });
    expect((await history({ limit: 1 })).versions[0]).toMatchObject({ resource_version: after.resource_version, operations: ['rollback_metadata'] });
    expect(await m(untrack('author'))).toMatchObject({ status: 200 });
  });

  it('a stale resource_version is a 409 and changes nothing', async () => {
    const target = (await exportV2()).resource_version;
    expect(await m(track('author'))).toMatchObject({ status: 200 });
    const now = await exportV2();
    const r = await m({ type: 'rollback_metadata', resource_version: now.resource_version - 1, args: { to_resource_version: target } });
    expect(r).toEqual({ status: 409, body: { path: '$', code: 'conflict', error: `metadata resource version referenced (${now.resource_version - 1}) did not match current version` } });
    expect(await exportV2()).toEqual(now);
    // With the current one it applies.
    expect(await m({ type: 'rollback_metadata', resource_version: now.resource_version, args: { to_resource_version: target } })).toMatchObject({ status: 200 });
  });

  it('a version whose document is inconsistent now is refused as replace_metadata refuses it, unless allowed', async () => {
    await s.runSql('create table gone (id int primary key)');
    expect(await m(track('gone'))).toMatchObject({ status: 200 });
    const target = (await exportV2()).resource_version;
    expect(await m(untrack('gone'))).toMatchObject({ status: 200 });
    await s.runSql('drop table gone');
    const now = await exportV2();

    const r = await m({ type: 'rollback_metadata', args: { to_resource_version: target } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'unexpected', path: '$.args', error: 'cannot continue due to inconsistent metadata' });
    expect(r.body.internal).toEqual([expect.objectContaining({ type: 'table', name: 'table gone in source default' })]);
    expect(await exportV2()).toEqual(now);

    const allowed = await m({ type: 'rollback_metadata', args: { to_resource_version: target, allow_inconsistent_metadata: true } });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ message: 'success', resource_version: now.resource_version + 1, rolled_back_to: target, is_consistent: false });
    expect(allowed.body.inconsistent_objects).toEqual([expect.objectContaining({ type: 'table' })]);
    expect(await m({ type: 'drop_inconsistent_metadata', args: {} })).toEqual(ok);
  });
});

describe('errors', () => {
  const e = (status: number, code: string, path: string, error: string | RegExp) => ({ status, body: { code, path, error: typeof error === 'string' ? error : expect.stringMatching(error) } });

  it('bad arguments are 400 parse-failed at the argument', async () => {
    expect(await m({ type: 'get_metadata_history', args: { limit: -1 } })).toEqual(e(400, 'parse-failed', '$.args.limit', 'limit must not be negative'));
    expect(await m({ type: 'get_metadata_history', args: { offset: 1.5 } })).toEqual(e(400, 'parse-failed', '$.args.offset', 'offset must be an integer'));
    expect(await m({ type: 'get_metadata_history', args: { limit: 'ten' } })).toEqual(e(400, 'parse-failed', '$.args.limit', 'parsing Number failed, expected Number, but encountered String'));
    expect(await m({ type: 'get_metadata_version', args: {} })).toEqual(e(400, 'parse-failed', '$.args', 'key "resource_version" not found'));
    expect(await m({ type: 'get_metadata_version', args: { resource_version: 0 } })).toEqual(e(400, 'parse-failed', '$.args.resource_version', 'a resource_version is at least 1'));
    // Past exact JSON integers (and PostgreSQL's bigint): refused, not a 500 (found by the fuzz suite).
    expect(await m({ type: 'get_metadata_version', args: { resource_version: 9223372036854776000 } })).toEqual(
      e(400, 'parse-failed', '$.args.resource_version', 'a resource_version is at most 9007199254740991'),
    );
    expect(await m({ type: 'get_metadata_history', args: { offset: 1e300 } })).toEqual(e(400, 'parse-failed', '$.args.offset', 'offset must be at most 9007199254740991'));
    expect(await m({ type: 'rollback_metadata', args: { to_resource_version: 2, allow_inconsistent_metadata: 'yes' } })).toEqual(
      e(400, 'parse-failed', '$.args.allow_inconsistent_metadata', 'parsing Boolean failed, expected Boolean, but encountered String'),
    );
    expect(await m({ type: 'diff_metadata', args: { to: 2 } })).toEqual(e(400, 'parse-failed', '$.args', 'key "from" not found'));
  });

  it('a version the history does not have is 400 not-exists naming what it keeps', async () => {
    const { resource_version: rv } = await exportV2();
    const oldest = (await history({ limit: 1000 })).versions.at(-1).resource_version;
    const missing = `resource_version ${rv + 50} is not in the metadata history (it keeps versions ${oldest} to ${rv})`;
    expect(await m({ type: 'get_metadata_version', args: { resource_version: rv + 50 } })).toEqual(e(400, 'not-exists', '$.args.resource_version', missing));
    expect(await m({ type: 'rollback_metadata', args: { to_resource_version: rv + 50 } })).toEqual(e(400, 'not-exists', '$.args.to_resource_version', missing));
    expect(await m({ type: 'diff_metadata', args: { from: rv + 50 } })).toEqual(e(400, 'not-exists', '$.args.from', missing));
    expect(await m({ type: 'diff_metadata', args: { from: rv, to: rv + 50 } })).toEqual(e(400, 'not-exists', '$.args.to', missing));
    expect((await exportV2()).resource_version).toBe(rv);
  });

  it('are admin only', async () => {
    const r = await s.metadata({ type: 'get_metadata_history', args: {} }, { 'x-svc-role': 'user' });
    expect(r).toMatchObject({ status: 400, body: { code: 'access-denied' } });
  });
});

describe('retention', () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startServer({ config: { metadataHistoryLimit: 3 } });
    await small.runSql('create table t (id int primary key)');
  });
  afterAll(async () => {
    await small.stop();
  });

  it('keeps the last N versions; older ones are gone', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await m(track('t'), small)).toMatchObject({ status: 200 });
      expect(await m(untrack('t'), small)).toMatchObject({ status: 200 });
    }
    const rv = (await exportV2(small)).resource_version;
    const h = (await m({ type: 'get_metadata_history', args: {} }, small)).body;
    expect(h.total).toBe(3);
    expect(h.versions.map((x: any) => x.resource_version)).toEqual([rv, rv - 1, rv - 2]);
    // The oldest kept version still reads whole: t tracked.
    const oldest = await m({ type: 'get_metadata_version', args: { resource_version: rv - 2 } }, small);
    expect(oldest.body.metadata.sources[0].tables).toEqual([]);
    const mid = await m({ type: 'get_metadata_version', args: { resource_version: rv - 1 } }, small);
    expect(mid.body.metadata.sources[0].tables).toEqual([{ table: { schema: 'public', name: 't' } }]);
    expect(await m({ type: 'get_metadata_version', args: { resource_version: rv - 3 } }, small)).toMatchObject({ status: 400, body: { code: 'not-exists' } });
  });
});

describe('with the history off', () => {
  let off: TestServer;
  beforeAll(async () => {
    off = await startServer({ config: { metadataHistoryLimit: 0 } });
  });
  afterAll(async () => {
    await off.stop();
  });

  it('the operations are refused, and writes record nothing', async () => {
    const refused = { status: 400, body: { code: 'not-supported', path: '$.type', error: 'the metadata history is off: --metadata-history-limit (SVC_GRAPHQL_METADATA_HISTORY_LIMIT) is 0' } };
    expect(await m({ type: 'reload_metadata', args: {} }, off)).toMatchObject({ status: 200 });
    for (const body of [
      { type: 'get_metadata_history', args: {} },
      { type: 'get_metadata_version', args: { resource_version: 1 } },
      { type: 'diff_metadata', args: { from: 1 } },
      { type: 'rollback_metadata', args: { to_resource_version: 1 } },
    ]) {
      expect(await m(body, off)).toEqual(refused);
    }
    const [{ n }] = await off.sql`select count(*)::int as n from svc_catalog.metadata_history`;
    expect(n).toBe(0);
  });
});

describe('with the plugin disabled', () => {
  it('its operations answer not-supported, the kernel works, and enabling it again restarts the history', async () => {
    const db = await createDatabase();
    const off = await startServer({ database: db, config: { disabledPlugins: ['metadata-history'] } });
    try {
      for (const [type, args] of [
        ['get_metadata_history', {}],
        ['get_metadata_version', { resource_version: 1 }],
        ['diff_metadata', { from: 1 }],
        ['rollback_metadata', { to_resource_version: 1 }],
      ] as const) {
        expect(await m({ type, args }, off)).toEqual({
          status: 400,
          body: { code: 'not-supported', path: '$.type', error: `operation "${type}" is not supported: the plugin "metadata-history" is disabled` },
        });
      }
      // The rest of the metadata API is untouched; the history's tables are never made.
      await off.runSql('create table pet (id int primary key)');
      expect(await m(track('pet'), off)).toMatchObject({ status: 200 });
      expect(await m({ type: 'replace_metadata', args: (await exportV2(off)).metadata }, off)).toEqual(ok);
      const [{ t }] = await off.sql`select to_regclass('svc_catalog.metadata_history')::text as t`;
      expect(t).toBeNull();
    } finally {
      await off.stop();
    }
    // Enabled on the same catalog: the history starts at the version it finds.
    const on = await startServer({ database: db });
    try {
      const rv = (await exportV2(on)).resource_version;
      expect((await m({ type: 'get_metadata_history', args: {} }, on)).body).toMatchObject({ total: 1, versions: [{ resource_version: rv, operations: [], role: null }] });
      expect(await m(untrack('pet'), on)).toMatchObject({ status: 200 });
      const back = await m({ type: 'get_metadata_version', args: { resource_version: rv } }, on);
      expect(back.body.metadata.sources[0].tables).toEqual([{ table: { schema: 'public', name: 'pet' } }]);
    } finally {
      await on.stop();
    }
  }, 60_000);
});

describe('several instances', () => {
  it('another server on the same metadata database follows a rollback', async () => {
    const db = await createDatabase();
    const a = await startServer({ database: db, config: { metadataSyncInterval: 50 } });
    const b = await startServer({ database: db, config: { metadataSyncInterval: 50 } });
    try {
      await a.runSql("create table pet (id int primary key, name text); insert into pet values (1, 'rex')");
      expect(await m(track('pet'), a)).toMatchObject({ status: 200 });
      const target = await exportV2(a);
      expect(await m(untrack('pet'), a)).toMatchObject({ status: 200 });
      const until = async (f: () => Promise<boolean>) => {
        for (let i = 0; i < 200 && !(await f()); i++) await new Promise((r) => setTimeout(r, 25));
        expect(await f()).toBe(true);
      };
      await until(async () => (await exportV2(b)).resource_version === target.resource_version + 1);
      expect((await b.gql('{ pet { name } }')).errors).toBeDefined();

      // The rollback on a; b sees it and serves the table again.
      expect(await m({ type: 'rollback_metadata', args: { to_resource_version: target.resource_version } }, a)).toMatchObject({ status: 200 });
      await until(async () => (await exportV2(b)).resource_version === target.resource_version + 2);
      expect((await exportV2(b)).metadata).toEqual(target.metadata);
      expect(await b.gql('{ pet { name } }')).toEqual({ data: { pet: [{ name: 'rex' }] } });
      // Both read the same history.
      expect((await m({ type: 'get_metadata_history', args: {} }, b)).body).toEqual((await m({ type: 'get_metadata_history', args: {} }, a)).body);
    } finally {
      await a.stop();
      await b.stop();
    }
  }, 60_000);
});
