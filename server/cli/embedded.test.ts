/**
 * `--embedded`: the engine started in the CLI's process for one command, on a database URL as
 * `npm start` takes it (the embedded PostgreSQL on a data directory is the engine's own, tested
 * with the server), and stopped after it.
 */
import { describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createServer } from 'node:net';
import { createDatabase, useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { run } from './main.js';
import { readTree, svc, tempDir, writeTree, type CliResult } from './test-support.js';
import { join } from 'node:path';

/** `svc <args>` with no endpoint given (svc() of test-support gives one). */
async function svcDefault(cwd: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, { out: (l) => out.push(l), err: (l) => err.push(l), env, cwd });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** A loopback port nothing listens on (taken and given back). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const project = {
  'migrations/default/1_init/up.sql': 'BEGIN;\ncreate table thing (id serial primary key, name text);\nCOMMIT;\n',
  'migrations/default/1_init/down.sql': 'drop table thing;\n',
};

describe('svc with no endpoint given (Note [Which engine])', () => {
  const s = useServer();
  const listening = useListening(s);

  it('uses the server that answers at the default endpoint (SVC_GRAPHQL_SERVER_PORT), and says so', async () => {
    const dir = writeTree(tempDir(), project);
    const r = await svcDefault(dir, ['migrate', 'apply'], { SVC_GRAPHQL_SERVER_PORT: String(listening.port) });
    expect(r.err).toBe(`svc: using the engine at http://localhost:${listening.port}`);
    expect(r.out).toBe('default: applied 1_init');
    // the test server's database got it
    expect((await s.sql`select count(*)::int as n from thing`)[0]!.n).toBe(0);
    // config.yaml's endpoint is the default when it is given
    writeTree(dir, { 'config.yaml': `version: 3\nendpoint: http://127.0.0.1:${listening.port}\n` });
    const st = await svcDefault(dir, ['migrate', 'status'], {});
    expect(st.err).toBe(`svc: using the engine at config.yaml's endpoint http://127.0.0.1:${listening.port}`);
    expect(st.out.split('\n')[1]).toBe('1\tinit\tPresent\tPresent');
  });

  it('starts the engine embedded when nothing answers there, and says so', async () => {
    const db = await createDatabase('svc_cli_auto_embedded');
    const port = await freePort();
    const dir = writeTree(tempDir(), project);
    const env = { SVC_GRAPHQL_DATABASE_URL: db.url, SVC_GRAPHQL_SERVER_PORT: String(port) };
    const m = await svcDefault(dir, ['migrate', 'apply'], env);
    expect(m.err).toBe(`svc: no engine answers at http://localhost:${port}: started one embedded (on the database of SVC_GRAPHQL_DATABASE_URL) for this command`);
    expect(m.out).toBe('default: applied 1_init');
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      expect((await sql`select version::text as v from svc_catalog.cli_migrations`).map((r) => r.v)).toEqual(['1']);
      expect((await sql`select to_regclass('public.thing') is not null as made`)[0]!.made).toBe(true);
    } finally {
      await sql.end();
    }
    // nothing was left listening: the next command starts its own again
    const st = await svcDefault(dir, ['migrate', 'status'], env);
    expect(st.err).toContain('started one embedded');
    expect(st.out.split('\n')[1]).toBe('1\tinit\tPresent\tPresent');
    // `migrate create` needs no engine: it neither probes nor starts one
    const c = await svcDefault(dir, ['migrate', 'create', 'next', '--version', '2'], env);
    expect(c).toEqual({ code: 0, out: 'created migration migrations/default/2_next', err: '' });
  });

  it('does not start a local engine for a remote endpoint of config.yaml that does not answer', async () => {
    const dir = writeTree(tempDir(), { ...project, 'config.yaml': 'version: 3\nendpoint: http://svc-no-such-host.invalid:8080\n' });
    const r = await svcDefault(dir, ['migrate', 'status'], {});
    expect(r.code).toBe(1);
    expect(r.err.split('\n')).toEqual([
      "svc: using the engine at config.yaml's endpoint http://svc-no-such-host.invalid:8080",
      expect.stringMatching(/^error: cannot reach the engine at http:\/\/svc-no-such-host\.invalid:8080: /),
    ]);
  });
});

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
