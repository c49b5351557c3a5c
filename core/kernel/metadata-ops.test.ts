/**
 * Golden HTTP tests of the kernel-owned operations (SPEC "Metadata management") and the
 * envelope's error paths, against a real PostgreSQL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, useServer } from '../../test/helpers.js';

const s = useServer(`
    create table author (id serial primary key, name text);
    create table article (id serial primary key, title text, author_id int references author(id));
  `);

const exportV2 = async () => (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
const defaultSourceConfig = {
  connection_info: {
    database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' },
    isolation_level: 'read-committed',
    pool_settings: { connection_lifetime: 600, idle_timeout: 180, max_connections: 50, retries: 1 },
    use_prepared_statements: true,
  },
};

beforeEach(async () => {
  const r = await s.metadata({ type: 'clear_metadata', args: {} });
  expect(r.status).toBe(200);
});

describe('export_metadata', () => {
  it('v1 returns the document with the default source registered on first boot', async () => {
    const r = await s.metadata({ type: 'export_metadata', args: {} });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      version: 3,
      sources: [{ name: 'default', kind: 'postgres', tables: [], configuration: defaultSourceConfig }],
    });
    expect(Object.keys(r.body)).toEqual(['version', 'sources']);
  });

  it('v2 returns {resource_version, metadata}', async () => {
    const r = await s.metadata({ type: 'export_metadata', version: 2, args: {} });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['resource_version', 'metadata']);
    expect(typeof r.body.resource_version).toBe('number');
    expect(r.body.metadata.version).toBe(3);
  });

  it('is available on the legacy endpoint (v1 only)', async () => {
    const r = await s.query({ type: 'export_metadata', args: {} });
    expect(r.status).toBe(200);
    expect(r.body.version).toBe(3);
    const v2 = await s.query({ type: 'export_metadata', version: 2, args: {} });
    expect(v2).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.version', error: 'expected 1, encountered 2' } });
  });

  it('rejects an unknown version', async () => {
    const r = await s.metadata({ type: 'export_metadata', version: 3, args: {} });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.version', error: 'expected 1 or 2, encountered 3' } });
  });
});

describe('resource_version', () => {
  it('increments on every metadata change and on reload_metadata, not on reads', async () => {
    const rv0 = (await exportV2()).resource_version;
    await s.metadata({ type: 'export_metadata', args: {} });
    expect((await exportV2()).resource_version).toBe(rv0);
    expect((await s.metadata({ type: 'pg_track_table', args: { table: 'author' } })).status).toBe(200);
    expect((await exportV2()).resource_version).toBe(rv0 + 1);
    const reload = await s.metadata({ type: 'reload_metadata', args: {} });
    expect(reload).toMatchObject({ status: 200, body: { is_consistent: true, message: 'success' } });
    expect((await exportV2()).resource_version).toBe(rv0 + 2);
  });

  it('a stale resource_version is a 409 with the SPEC body and changes nothing', async () => {
    const before = await exportV2();
    const r = await s.metadata({
      type: 'pg_track_table',
      resource_version: before.resource_version - 1,
      args: { table: 'author' },
    });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      path: '$',
      code: 'conflict',
      error: `metadata resource version referenced (${before.resource_version - 1}) did not match current version`,
    });
    expect(await exportV2()).toEqual(before);
  });

  it('the current resource_version is accepted', async () => {
    const before = await exportV2();
    const r = await s.metadata({ type: 'pg_track_table', resource_version: before.resource_version, args: { table: 'author' } });
    expect(r.status).toBe(200);
    expect((await exportV2()).resource_version).toBe(before.resource_version + 1);
  });

  it('survives a restart, with the metadata', async () => {
    await s.metadata({ type: 'pg_track_table', args: { table: 'author' } });
    const before = await exportV2();
    const second = await startServer({ database: { url: s.url } });
    try {
      const r = await second.metadata({ type: 'export_metadata', version: 2, args: {} });
      expect(r.body).toEqual(before);
    } finally {
      await second.stop();
    }
  });
});

describe('replace_metadata', () => {
  it('v1 replaces with an exported document; exporting again gives the same document', async () => {
    await s.metadata({ type: 'pg_track_table', args: { table: 'author' } });
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    await s.metadata({ type: 'clear_metadata', args: {} });
    const r = await s.metadata({ type: 'replace_metadata', args: exported });
    expect(r).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual(exported);
  });

  it('infers v2 from the shape of args and checks resource_version', async () => {
    const { resource_version, metadata } = await exportV2();
    const stale = await s.metadata({ type: 'replace_metadata', resource_version: resource_version - 1, args: { metadata } });
    expect(stale.status).toBe(409);
    const ok = await s.metadata({ type: 'replace_metadata', resource_version, args: { metadata } });
    expect(ok).toMatchObject({ status: 200, body: { message: 'success' } });
    expect(await exportV2()).toEqual({ resource_version: resource_version + 1, metadata });
  });

  it('accepts a version 2 document (tables at the top level) into the default source', async () => {
    const r = await s.metadata({ type: 'replace_metadata', args: { version: 2, tables: [{ table: 'author' }], functions: [] } });
    expect(r.status).toBe(200);
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    expect(md.sources).toEqual([
      { name: 'default', kind: 'postgres', tables: [{ table: { schema: 'public', name: 'author' } }], configuration: defaultSourceConfig },
    ]);
  });

  it('a source without kind defaults to postgres', async () => {
    const r = await s.metadata({
      type: 'replace_metadata',
      version: 2,
      args: { metadata: { version: 3, sources: [{ name: 'default', tables: [], configuration: defaultSourceConfig }] } },
    });
    expect(r.status).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].kind).toBe('postgres');
  });

  it('rejects inconsistent metadata with 400 and an internal list, changing nothing', async () => {
    const before = await exportV2();
    const doc = { version: 3, sources: [{ name: 'default', kind: 'postgres', tables: [{ table: { schema: 'public', name: 'nope' } }], configuration: defaultSourceConfig }] };
    const r = await s.metadata({ type: 'replace_metadata', args: doc });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'unexpected', path: '$.args' });
    expect(r.body.internal).toEqual([
      {
        type: 'table',
        name: 'table nope in source default',
        reason: 'Inconsistent object: no such table/view exists in source: "nope"',
        definition: { schema: 'public', name: 'nope' },
      },
    ]);
    expect(await exportV2()).toEqual(before);
  });

  it('v2 with allow_inconsistent_metadata stores it and reports the inconsistencies', async () => {
    const doc = { version: 3, sources: [{ name: 'default', kind: 'postgres', tables: [{ table: { schema: 'public', name: 'nope' } }], configuration: defaultSourceConfig }] };
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: doc } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      is_consistent: false,
      inconsistent_objects: [
        {
          type: 'table',
          name: 'table nope in source default',
          reason: 'Inconsistent object: no such table/view exists in source: "nope"',
          definition: { schema: 'public', name: 'nope' },
        },
      ],
    });
    const inc = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(inc.body.is_consistent).toBe(false);
    expect((await s.request('GET', '/healthz')).text).toBe('WARN: inconsistent objects in schema');
    expect((await s.request('GET', '/healthz?strict=true')).status).toBe(500);

    const drop = await s.metadata({ type: 'drop_inconsistent_metadata', args: {} });
    expect(drop).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toEqual({ is_consistent: true, inconsistent_objects: [] });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].tables).toEqual([]);
    expect((await s.request('GET', '/healthz')).text).toBe('OK');
  });

  it('rejects a malformed document with a path into it', async () => {
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: { version: 3, sources: [{ name: 'default', tables: [{}], configuration: {} }] } } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.metadata.sources[0].tables[0]', error: 'key "table" not found' } });
  });

  it('rejects duplicate tables', async () => {
    const t = { table: { schema: 'public', name: 'author' } };
    const r = await s.metadata({ type: 'replace_metadata', args: { version: 3, sources: [{ name: 'default', kind: 'postgres', tables: [t, t], configuration: defaultSourceConfig }] } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.sources[0]', error: 'multiple declarations exist for the following tables : author' } });
  });

  it('keeps sections that no enabled plugin owns', async () => {
    const { metadata } = await exportV2();
    const doc = { ...metadata, future_section: [{ a: 1 }] };
    expect((await s.metadata({ type: 'replace_metadata', args: doc })).status).toBe(200);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.future_section).toEqual([{ a: 1 }]);
  });
});

describe('reload_metadata', () => {
  it('accepts booleans and name lists', async () => {
    for (const args of [{}, { reload_sources: false }, { reload_sources: ['default'], reload_remote_schemas: [] }, { reload_remote_schemas: true }]) {
      const r = await s.metadata({ type: 'reload_metadata', args });
      expect(r).toMatchObject({ status: 200, body: { is_consistent: true, message: 'success' } });
    }
  });

  it('reports objects whose table vanished behind the engine\'s back', async () => {
    await s.runSql('create table gone (id int primary key)');
    await s.metadata({ type: 'pg_track_table', args: { table: 'gone' } });
    await s.sql.unsafe('drop table gone');
    const r = await s.metadata({ type: 'reload_metadata', args: {} });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      is_consistent: false,
      message: 'success',
      inconsistent_objects: [
        {
          type: 'table',
          name: 'table gone in source default',
          reason: 'Inconsistent object: no such table/view exists in source: "gone"',
          definition: { schema: 'public', name: 'gone' },
        },
      ],
    });
    expect((await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).status).toBe(200);
  });

  it('rejects a bad argument type with a path', async () => {
    const r = await s.metadata({ type: 'reload_metadata', args: { reload_sources: 'yes' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.reload_sources' } });
  });
});

describe('clear_metadata', () => {
  it('forgets tables but keeps the default source', async () => {
    await s.metadata({ type: 'pg_track_table', args: { table: 'author' } });
    const r = await s.metadata({ type: 'clear_metadata', args: {} });
    expect(r).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body).toEqual({
      version: 3,
      sources: [{ name: 'default', kind: 'postgres', tables: [], configuration: defaultSourceConfig }],
    });
  });
});

describe('bulk', () => {
  it('runs all operations with one build and one write, returning the responses as a list', async () => {
    const rv = (await exportV2()).resource_version;
    const r = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'author' } },
        { type: 'pg_track_table', args: { table: 'article' } },
        { type: 'export_metadata', args: {} },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(3);
    expect(r.body[0]).toEqual({ message: 'success' });
    // The export inside the bulk sees the draft of the operations before it.
    expect(r.body[2].sources[0].tables).toHaveLength(2);
    expect((await exportV2()).resource_version).toBe(rv + 1);
  });

  it('is all or nothing: a failing operation leaves metadata and data as they were', async () => {
    const before = await exportV2();
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table bulk_tmp (id int primary key)' } },
        { type: 'track_table', args: { table: 'bulk_tmp' } },
        { type: 'track_table', args: { table: 'author' } },
        { type: 'track_table', args: { table: 'author' } },
      ],
    });
    expect(r).toMatchObject({ status: 400, body: { code: 'already-tracked' } });
    expect(await exportV2()).toEqual(before);
    const [row] = await s.sql`select to_regclass('public.bulk_tmp') as t`;
    expect(row!.t).toBeNull();
  });

  it('validates inner requests', async () => {
    const r = await s.metadata({ type: 'bulk', args: [{ type: 'pg_track_table', args: {} }] });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args[0].args', error: 'key "table" not found' } });
    const notList = await s.metadata({ type: 'bulk', args: {} });
    expect(notList).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args' } });
  });
});

describe('envelope errors', () => {
  it('malformed JSON is invalid-json', async () => {
    const r = await s.request('POST', '/v1/metadata', '{"type": ');
    expect(r).toMatchObject({ status: 400, body: { code: 'invalid-json', path: '$', error: 'invalid json' } });
  });

  it('a body that is not an object', async () => {
    const r = await s.query('"type: count"');
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$', error: 'parsing Object failed, expected Object, but encountered String' } });
  });

  it('an unknown type names it', async () => {
    const r = await s.metadata({ type: 'random', args: { foo: 'bar' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.type', error: 'unknown operation type "random"' } });
  });

  it('missing type or args', async () => {
    expect(await s.metadata({ args: {} })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$', error: 'key "type" not found' } });
    expect(await s.metadata({ type: 'export_metadata' })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$', error: 'key "args" not found' } });
  });

  it('args that fail their schema get a path into the args', async () => {
    const r = await s.metadata({ type: 'pg_track_table', args: { table: 5 } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.table' } });
    const legacy = await s.query({ type: 'rename_source', args: { name: '' } });
    expect(legacy.status).toBe(400);
  });

  it('a non-admin role is refused', async () => {
    const r = await s.metadata({ type: 'clear_metadata', args: {} }, { 'x-svc-role': 'user' });
    expect(r).toMatchObject({ status: 400, body: { code: 'access-denied', path: '$.args', error: 'restricted access : admin only' } });
    const legacy = await s.query({ type: 'export_metadata', args: {} }, { 'x-svc-role': 'user' });
    expect(legacy).toMatchObject({ status: 400, body: { code: 'access-denied' } });
  });

  it("a non-admin is refused whatever the type or args (another backend's, unknown, malformed)", async () => {
    const denied = { status: 400, body: { code: 'access-denied', path: '$.args', error: 'restricted access : admin only' } };
    for (const body of [
      { type: 'mssql_add_source', args: { name: 'm', configuration: {} } },
      { type: 'random', args: {} },
      { type: 'pg_track_table', args: { table: 5 } },
      { type: 'bulk', args: [{ type: 'export_metadata', args: {} }] },
    ]) {
      expect(await s.metadata(body, { 'x-svc-role': 'user' })).toMatchObject(denied);
    }
    // The admin still gets the parse error.
    expect(await s.metadata({ type: 'random', args: {} })).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
  });

  it('unknown paths answer 404 in the SPEC shape', async () => {
    const r = await s.request('GET', '/v1/nothing');
    expect(r).toMatchObject({ status: 404, body: { code: 'not-found', path: '$' } });
  });
});
