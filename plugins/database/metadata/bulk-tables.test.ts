/**
 * pg_track_tables / pg_untrack_tables (Note [Tables left out of a bulk track]): a table that
 * fails its own checks, or that makes the build newly inconsistent (root fields that collide with
 * another table's or a remote schema's), is left out and named in `warnings`; the others are
 * tracked in the same request; `allow_warnings: false` turns any warning into a failed request.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildSchema } from 'graphql';
import { serveGraphQL, type TestGraphQLServer } from '../../../test/graphql-server.js';
import { startServer, type TestServer } from '../../../test/helpers.js';

let s: TestServer;
let remote: TestGraphQLServer;
let remoteUrl: string;

const names = async () => (await s.tables()).map((x: any) => x.table.name).sort();
const t = (name: string, extra: Record<string, unknown> = {}) => ({ table: { schema: 'public', name }, ...extra });

beforeAll(async () => {
  // A remote schema whose root field `user` a table named "user" would collide with.
  remote = await serveGraphQL(buildSchema('type Query { user(id: Int): String }'), { user: () => 'remote' });
  remoteUrl = remote.url;
  s = await startServer();
  await s.runSql(`
    create table "user" (id int primary key);
    create table innocent1 (id int primary key);
    create table innocent2 (id int primary key);
    create table c1 (id int primary key);
    create table c2 (id int primary key);
    ${Array.from({ length: 12 }, (_, i) => `create table many${i} (id int primary key);`).join('\n')}
  `);
});
afterAll(async () => {
  await s?.stop();
  await remote?.close();
});
beforeEach(async () => {
  expect(await s.metadata({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
});

describe('pg_track_tables', () => {
  it('tracks every table when none fails, with a plain success and one new resource_version', async () => {
    const before = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.resource_version;
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('innocent1'), t('innocent2')] } });
    expect(r).toMatchObject({ status: 200, body: { message: 'success' } });
    expect(r.body.warnings).toBeUndefined();
    expect((await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body.resource_version).toBe(before + 1);
    expect(await names()).toEqual(['innocent1', 'innocent2']);
    const q = { body: await s.gql('{ innocent1 { id } innocent2 { id } }') };
    expect(q.body).toEqual({ data: { innocent1: [], innocent2: [] } });
  });

  it('leaves out a table that does not exist or is tracked already, with its error as a warning', async () => {
    expect(await s.metadata({ type: 'pg_track_table', args: t('innocent1') })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('nope'), t('innocent1'), t('innocent2')] } });
    expect(r).toEqual(
      expect.objectContaining({
        status: 200,
        body: {
          message: 'success',
          warnings: [
            { type: 'table', name: 'nope', source: 'default', code: 'track-table-failed', message: 'no such table/view exists in source: "nope"' },
            { type: 'table', name: 'innocent1', source: 'default', code: 'track-table-failed', message: 'view/table already tracked: "innocent1"' },
          ],
        },
      }),
    );
    expect(await names()).toEqual(['innocent1', 'innocent2']);
  });

  it('leaves out the table whose root fields collide with a remote schema, and tracks the rest', async () => {
    expect(await s.metadata({ type: 'add_remote_schema', args: { name: 'users', definition: { url: remoteUrl } } })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('user'), t('innocent1'), t('innocent2')], allow_warnings: true } });
    expect(r.status).toBe(200);
    expect(r.body.warnings).toHaveLength(1);
    expect(r.body.warnings[0]).toMatchObject({ type: 'table', name: 'user', code: 'track-table-failed' });
    expect(r.body.warnings[0].message).toContain("'user'");
    expect(await names()).toEqual(['innocent1', 'innocent2']);
    // The remote schema is still consistent and served.
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
    expect(await s.gql('{ user(id: 1) }')).toEqual({ data: { user: 'remote' } });
    // The single-table operation refuses the same table, as before.
    expect(await s.metadata({ type: 'pg_track_table', args: t('user') })).toMatchObject({ status: 400, body: { code: 'remote-schema-conflicts' } });
  });

  it('leaves out the later of two tables whose root fields collide with each other', async () => {
    const same = { configuration: { custom_name: 'thing' } };
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('c1', same), t('innocent1'), t('c2', same)] } });
    expect(r.status).toBe(200);
    expect(r.body.warnings.map((w: any) => [w.name, w.code])).toEqual([['c2', 'track-table-failed']]);
    expect(r.body.warnings[0].message).toMatch(/conflicting definitions/);
    expect(await names()).toEqual(['c1', 'innocent1']);
  });

  it('finds the one culprit among many tables', async () => {
    expect(await s.metadata({ type: 'pg_track_table', args: t('c1', { configuration: { custom_name: 'taken' } }) })).toMatchObject({ status: 200 });
    const tables = Array.from({ length: 12 }, (_, i) => t(`many${i}`, i === 9 ? { configuration: { custom_name: 'taken' } } : {}));
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables } });
    expect(r.status).toBe(200);
    expect(r.body.warnings.map((w: any) => w.name)).toEqual(['many9']);
    const tracked = await names();
    expect(tracked).toHaveLength(12);
    expect(tracked).not.toContain('many9');
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('with allow_warnings false fails the whole request and tracks nothing', async () => {
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('innocent1'), t('nope')], allow_warnings: false } });
    expect(r).toMatchObject({ status: 400, body: { code: 'metadata-warnings', error: 'failed due to metadata warnings', path: '$.args' } });
    expect(r.body.internal).toEqual([{ type: 'table', name: 'nope', source: 'default', code: 'track-table-failed', message: 'no such table/view exists in source: "nope"' }]);
    expect(await names()).toEqual([]);
    // Without warnings, allow_warnings false tracks as usual.
    expect(await s.metadata({ type: 'pg_track_tables', args: { tables: [t('innocent1')], allow_warnings: false } })).toMatchObject({ status: 200, body: { message: 'success' } });
  });

  it('refuses a table named twice and malformed args', async () => {
    const r = await s.metadata({ type: 'pg_track_tables', args: { tables: [t('innocent1'), t('innocent2'), { table: 'innocent1' }] } });
    expect(r).toMatchObject({ status: 400, body: { code: 'bad-request', path: '$.args.tables' } });
    expect(r.body.error).toContain('innocent1');
    expect(await s.metadata({ type: 'pg_track_tables', args: { tables: 'innocent1' } })).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
    expect(await s.metadata({ type: 'pg_track_tables', args: {} })).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
    expect(await names()).toEqual([]);
  });

  it('answers a dry run without tracking anything', async () => {
    const r = await s.metadata({ type: 'pg_track_tables', dry_run: true, args: { tables: [t('innocent1'), t('nope')] } });
    expect(r).toMatchObject({ status: 200, body: { dry_run: true, would_succeed: true, response: { message: 'success', warnings: [{ name: 'nope' }] } } });
    expect(await names()).toEqual([]);
  });
});

describe('pg_untrack_tables', () => {
  it('untracks the tracked tables and warns about the others', async () => {
    expect(await s.metadata({ type: 'pg_track_tables', args: { tables: [t('innocent1'), t('innocent2')] } })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'pg_untrack_tables', args: { tables: [t('innocent1'), t('c1')] } });
    expect(r).toEqual(
      expect.objectContaining({
        status: 200,
        body: { message: 'success', warnings: [{ type: 'table', name: 'c1', source: 'default', code: 'untrack-table-failed', message: 'view/table already untracked: "c1"' }] },
      }),
    );
    expect(await names()).toEqual(['innocent2']);
    expect(await s.metadata({ type: 'pg_untrack_tables', args: { tables: [t('innocent2'), t('c1')], allow_warnings: false } })).toMatchObject({ status: 400, body: { code: 'metadata-warnings' } });
    expect(await names()).toEqual(['innocent2']);
  });
});
