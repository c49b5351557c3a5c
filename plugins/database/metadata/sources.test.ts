/** Golden tests of the source operations against real PostgreSQL databases. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase, startServer, type TestServer } from '../../../test/helpers.js';

let s: TestServer;
let other: { name: string; url: string };
beforeAll(async () => {
  other = await createDatabase('svc_other');
  s = await startServer({ env: { OTHER_DB_URL: other.url } });
  const sql = postgres(other.url, { max: 1, onnotice: () => {} });
  await sql.unsafe('create table remote_t (id int primary key, v text)');
  await sql.end();
});
afterAll(async () => {
  await s?.stop();
});

const sources = async () => (await s.metadata({ type: 'export_metadata', args: {} })).body.sources;

describe('pg_add_source', () => {
  it('adds a source from an env var and tracks a table in it; drops it', async () => {
    const add = await s.metadata({
      type: 'pg_add_source',
      args: { name: 'other', configuration: { connection_info: { database_url: { from_env: 'OTHER_DB_URL' }, pool_settings: { max_connections: 5, idle_timeout: 30 } } } },
    });
    expect(add).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await sources()).map((x: { name: string }) => x.name)).toEqual(['default', 'other']);
    expect((await sources())[1]).toEqual({
      name: 'other',
      kind: 'postgres',
      tables: [],
      configuration: { connection_info: { database_url: { from_env: 'OTHER_DB_URL' }, pool_settings: { max_connections: 5, idle_timeout: 30 } } },
    });
    expect((await s.metadata({ type: 'pg_track_table', args: { source: 'other', table: 'remote_t' } })).status).toBe(200);
    // The table lives in the other database only.
    expect(await s.metadata({ type: 'pg_track_table', args: { table: 'remote_t' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'no such table/view exists in source: "remote_t"' },
    });
    const drop = await s.metadata({ type: 'pg_drop_source', args: { name: 'other' } });
    expect(drop).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await sources()).map((x: { name: string }) => x.name)).toEqual(['default']);
  });

  it('accepts a URL string; refuses a duplicate name unless replace_configuration', async () => {
    const cfg = { connection_info: { database_url: other.url } };
    expect((await s.metadata({ type: 'pg_add_source', args: { name: 'o2', configuration: cfg } })).status).toBe(200);
    expect(await s.metadata({ type: 'pg_add_source', args: { name: 'o2', configuration: cfg } })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args', error: 'source with name "o2" already exists' },
    });
    const replaced = { connection_info: { database_url: other.url, isolation_level: 'serializable' } };
    expect((await s.metadata({ type: 'pg_add_source', args: { name: 'o2', configuration: replaced, replace_configuration: true } })).status).toBe(200);
    expect((await sources()).find((x: { name: string }) => x.name === 'o2').configuration).toEqual(replaced);
    expect((await s.metadata({ type: 'pg_drop_source', args: { name: 'o2' } })).status).toBe(200);
  });

  it('reads null settings as absent and does not store them (Hasura parses them as optional)', async () => {
    const configuration = {
      connection_info: {
        database_url: { from_env: 'OTHER_DB_URL' },
        pool_settings: { max_connections: 50, idle_timeout: 180, retries: null },
        use_prepared_statements: null,
        isolation_level: null,
      },
    };
    expect(await s.metadata({ type: 'pg_add_source', args: { name: 'nulls', configuration } })).toMatchObject({ status: 200, body: { message: 'success' } });
    expect((await sources()).find((x: { name: string }) => x.name === 'nulls').configuration).toEqual({
      connection_info: { database_url: { from_env: 'OTHER_DB_URL' }, pool_settings: { max_connections: 50, idle_timeout: 180 } },
    });
    expect(await s.metadata({ type: 'pg_add_source', args: { name: 'nulls2', configuration: { connection_info: { database_url: other.url, pool_settings: { retries: 'x' } } } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.connection_info.pool_settings.retries', error: 'parsing Number failed, expected Number, but encountered String' },
    });
    expect((await s.metadata({ type: 'pg_drop_source', args: { name: 'nulls' } })).status).toBe(200);
  });

  it('a missing env var is an inconsistency: the operation is rejected and nothing changes', async () => {
    const r = await s.metadata({ type: 'pg_add_source', args: { name: 'bad', configuration: { connection_info: { database_url: { from_env: 'NOT_SET_ANYWHERE' } } } } });
    expect(r.status).toBe(400);
    expect(r.body.internal[0]).toMatchObject({ type: 'source', name: 'source bad', reason: 'Inconsistent object: environment variable "NOT_SET_ANYWHERE" not set' });
    expect((await sources()).map((x: { name: string }) => x.name)).toEqual(['default']);
  });

  it('an unreachable source is an inconsistency, never a crash or a hang', async () => {
    const t = Date.now();
    const r = await s.metadata({
      type: 'pg_add_source',
      args: { name: 'down', configuration: { connection_info: { database_url: 'postgres://nobody:x@127.0.0.1:1/none', pool_settings: { pool_timeout: 2 } } } },
    });
    expect(Date.now() - t).toBeLessThan(10_000);
    expect(r.status).toBe(400);
    expect(r.body.internal[0]).toMatchObject({ type: 'source', name: 'source down' });
    expect(r.body.internal[0].reason).toMatch(/^Inconsistent object: could not connect to the source: /);
    // With allow_inconsistent_metadata it is stored and reported.
    const { metadata } = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const doc = { ...metadata, sources: [...metadata.sources, { name: 'down', kind: 'postgres', tables: [], configuration: { connection_info: { database_url: 'postgres://nobody:x@127.0.0.1:1/none', pool_settings: { pool_timeout: 2 } } } }] };
    const rep = await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: doc } });
    expect(rep).toMatchObject({ status: 200, body: { is_consistent: false } });
    expect((await s.metadata({ type: 'export_metadata', args: {} })).status).toBe(200);
    expect((await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).status).toBe(200);
    expect((await sources()).map((x: { name: string }) => x.name)).toEqual(['default']);
  });

  it('validates the configuration', async () => {
    expect(await s.metadata({ type: 'pg_add_source', args: { name: 'x', configuration: {} } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration', error: 'key "connection_info" not found' },
    });
    expect(
      await s.metadata({ type: 'pg_add_source', args: { name: 'x', configuration: { connection_info: { database_url: other.url, isolation_level: 'chaos' } } } }),
    ).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.configuration.connection_info.isolation_level' } });
    expect(await s.metadata({ type: 'pg_add_source', args: { name: '', configuration: { connection_info: { database_url: other.url } } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.name', error: 'empty string not allowed' },
    });
  });

  it('replace_metadata parses a source\'s configuration as pg_add_source does: the same errors, nothing stored', async () => {
    const before = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    const replace = (connection_info: unknown) => {
      const doc = structuredClone(before);
      doc.sources.push({ name: 'x', kind: 'postgres', tables: [], configuration: { connection_info } });
      return s.metadata({ type: 'replace_metadata', args: doc });
    };
    const at = '$.args.sources[1].configuration.connection_info';
    expect(await replace({ database_url: other.url, isolation_level: 'chaos' })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: `${at}.isolation_level` } });
    expect(await replace({ database_url: other.url, pool_settings: { max_connections: 'x' } })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: `${at}.pool_settings.max_connections` } });
    expect(await replace({ database_url: 5 })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: `${at}.database_url` } });
    expect(await replace({ database_url: other.url, ssl_configuration: { sslmode: 'sometimes' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: `${at}.ssl_configuration.sslmode` },
    });
    expect((await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body).toEqual(before);
    // What parses is kept as it was written (an export gives the document back the same).
    expect(await replace({ pool_settings: { idle_timeout: null, max_connections: 3 }, database_url: other.url })).toMatchObject({ status: 200 });
    expect(JSON.stringify((await sources())[1].configuration)).toBe(JSON.stringify({ connection_info: { pool_settings: { idle_timeout: null, max_connections: 3 }, database_url: other.url } }));
    expect((await s.metadata({ type: 'replace_metadata', args: before })).status).toBe(200);
  });
});

describe('pg_update_source, pg_drop_source, rename_source', () => {
  it('updating or dropping a source that does not exist fails', async () => {
    expect(await s.metadata({ type: 'pg_update_source', args: { name: 'pg-not-previously-added', configuration: { connection_info: { database_url: other.url } } } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'source with name "pg-not-previously-added" does not exist' },
    });
    expect(await s.metadata({ type: 'pg_drop_source', args: { name: 'nope' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'source with name "nope" does not exist' },
    });
  });

  it('renames a source keeping its tables and settings', async () => {
    await s.metadata({ type: 'pg_add_source', args: { name: 'r1', configuration: { connection_info: { database_url: other.url } } } });
    await s.metadata({ type: 'pg_track_table', args: { source: 'r1', table: 'remote_t' } });
    expect(await s.metadata({ type: 'rename_source', args: { name: 'r1', new_name: 'default' } })).toMatchObject({
      status: 400,
      body: { code: 'already-exists' },
    });
    expect(await s.metadata({ type: 'rename_source', args: { name: 'r9', new_name: 'r2' } })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
    expect((await s.metadata({ type: 'rename_source', args: { name: 'r1', new_name: 'r2' } })).status).toBe(200);
    const r2 = (await sources()).find((x: { name: string }) => x.name === 'r2');
    expect(r2).toEqual({ name: 'r2', kind: 'postgres', tables: [{ table: { schema: 'public', name: 'remote_t' } }], configuration: { connection_info: { database_url: other.url } } });
    expect((await s.metadata({ type: 'pg_drop_source', args: { name: 'r2' } })).status).toBe(200);
  });

  it('updates a source configuration', async () => {
    await s.metadata({ type: 'pg_add_source', args: { name: 'u1', configuration: { connection_info: { database_url: other.url } } } });
    const cfg = { connection_info: { database_url: other.url, use_prepared_statements: true } };
    expect((await s.metadata({ type: 'pg_update_source', args: { name: 'u1', configuration: cfg } })).status).toBe(200);
    expect((await sources()).find((x: { name: string }) => x.name === 'u1').configuration).toEqual(cfg);
    expect((await s.metadata({ type: 'pg_drop_source', args: { name: 'u1' } })).status).toBe(200);
  });
});
