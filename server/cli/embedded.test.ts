/**
 * `--embedded`: the engine started in the CLI's process for one command, on a database URL as
 * `npm start` takes it (the embedded PostgreSQL on a data directory is the engine's own, tested
 * with the server), and stopped after it.
 */
import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase } from '../../test/helpers.js';
import { readTree, svc, tempDir, writeTree } from './test-support.js';
import { join } from 'node:path';

describe('svc --embedded', () => {
  it('migrates, applies and exports with no server running', async () => {
    const db = await createDatabase('svc_cli_embedded');
    const env = { SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_ADMIN_SECRET: 's3cret' };
    const dir = writeTree(tempDir(), {
      'migrations/default/1_init/up.sql': 'create table thing (id serial primary key, name text);\n',
      'migrations/default/1_init/down.sql': 'drop table thing;\n',
      'metadata/version.yaml': 'version: 3\n',
      'metadata/databases/databases.yaml':
        '- name: default\n  kind: postgres\n  configuration:\n    connection_info:\n      database_url:\n        from_env: SVC_GRAPHQL_DATABASE_URL\n  tables: "!include default/tables/tables.yaml"\n',
      'metadata/databases/default/tables/tables.yaml': '- "!include public_thing.yaml"\n',
      'metadata/databases/default/tables/public_thing.yaml': 'table:\n  name: thing\n  schema: public\n',
    });
    // the endpoint given is not used: nothing listens there
    const m = await svc('http://127.0.0.1:2', dir, ['--embedded', 'migrate', 'apply'], env);
    expect(m.err).toBe('');
    expect(m.out).toBe('default: applied 1_init');
    const a = await svc('http://127.0.0.1:2', dir, ['--embedded', 'metadata', 'apply'], env);
    expect(a.err).toBe('');
    expect(a.out).toBe('applied metadata: metadata is consistent');
    const out = tempDir();
    expect((await svc('http://127.0.0.1:2', out, ['--embedded', 'metadata', 'export'], env)).code).toBe(0);
    expect(readTree(join(out, 'metadata'))['databases/default/tables/tables.yaml']).toBe('- "!include public_thing.yaml"\n');
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      expect((await sql`select version::text as v from svc_catalog.cli_migrations`).map((r) => r.v)).toEqual(['1']);
    } finally {
      await sql.end();
    }
    // a boot failure is reported as such
    const bad = await svc('http://127.0.0.1:2', dir, ['--embedded', 'metadata', 'reload'], { SVC_GRAPHQL_DATABASE_URL: 'postgres://127.0.0.1:2/none' });
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/error: the embedded engine did not start: /);
  });
});
