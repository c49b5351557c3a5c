/**
 * `svc console`'s server without a browser (Note [The console of a project]): its API (/apis/project,
 * /apis/migrate: the migration written and applied with its record, removed again when it fails or
 * the engine refuses the secret, bad input refused), the console's requests forwarded to the engine
 * with the metadata directory exported after each change (and not after reads or refusals), the
 * GraphQL WebSocket tunnelled, and the `svc console` command itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { commentedDown, startConsoleServer, type ConsoleServer } from './console-server.js';
import { readProject } from './project.js';
import { svc, tempDir } from './test-support.js';

const SECRET = 'cli-console-secret';
const ADMIN = { 'x-svc-admin-secret': SECRET };

describe('svc console: the server in front of the engine', () => {
  const s = useServer(undefined, { config: { adminSecret: SECRET } });
  const engine = useListening(s);
  let dir: string;
  let cs: ConsoleServer;
  const logs: string[] = [];
  const endpoint = () => `http://127.0.0.1:${engine.port}`;

  beforeAll(async () => {
    dir = tempDir('svc-console-');
    expect((await svc(endpoint(), dir, ['init', 'app'])).code).toBe(0);
    dir = join(dir, 'app');
    // a stand-in for console/dist: this file tests the server, not the app's build
    const dist = join(dir, '..', 'dist');
    mkdirSync(dist);
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>console</title>');
    cs = await startConsoleServer({ endpoint: endpoint(), project: readProject(dir), port: 0, address: '127.0.0.1', log: (l) => logs.push(l), consoleDir: dist });
  });
  afterAll(async () => {
    await cs?.close();
  });

  const post = async (path: string, body: unknown, headers: Record<string, string> = ADMIN) => {
    const r = await fetch(cs.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await r.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: r.status, body: json };
  };
  const migrations = () => (existsSync(join(dir, 'migrations', 'default')) ? readdirSync(join(dir, 'migrations', 'default')).sort() : []);
  const recorded = async () => (await s.sql`select version::text as v, name from svc_catalog.cli_migrations order by version`).map((r) => `${r.v}_${r.name}`);
  const tableFile = (t: string) => join(dir, 'metadata', 'databases', 'default', 'tables', `public_${t}.yaml`);
  const exports = () => logs.filter((l) => l.includes('exported the metadata')).length;

  it('says that it is a project\'s console, and serves the console', async () => {
    const p = await fetch(`${cs.url}/apis/project`);
    expect(p.status).toBe(200);
    expect(await p.json()).toEqual({ cli: 'svc', project: 'app', metadata_directory: 'metadata', migrations_directory: 'migrations' });
    const page = await fetch(`${cs.url}/console/data/default`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>console</title>');
    const none = await fetch(`${cs.url}/apis/nothing`);
    expect(none.status).toBe(404);
    expect(await none.json()).toMatchObject({ code: 'not-found', path: '$' });
  });

  it('writes a migration, applies it with its record, and exports the metadata', async () => {
    const r = await post('/apis/migrate', { source: 'default', name: 'create_table_public_author', up: 'CREATE TABLE "public"."author" ("id" serial PRIMARY KEY, "name" text);', down: 'DROP TABLE "public"."author";' });
    expect(r.status).toBe(200);
    const name = `${r.body.version}_create_table_public_author`;
    expect(r.body).toEqual({ version: r.body.version, name: 'create_table_public_author', directory: `migrations/default/${name}`, files: [`migrations/default/${name}/up.sql`, `migrations/default/${name}/down.sql`] });
    expect(migrations()).toEqual([name]);
    expect(readFileSync(join(dir, r.body.files[0]), 'utf8')).toBe('CREATE TABLE "public"."author" ("id" serial PRIMARY KEY, "name" text);\n');
    expect(readFileSync(join(dir, r.body.files[1]), 'utf8')).toBe('DROP TABLE "public"."author";\n');
    expect(await recorded()).toEqual([name]);
    expect((await s.sql`select to_regclass('public.author') is not null as e`)[0]!.e).toBe(true);
    // `svc migrate status` of the project agrees
    const st = await svc(endpoint(), dir, ['migrate', 'status'], { SVC_GRAPHQL_ADMIN_SECRET: SECRET });
    expect(st.out.split('\n')[1]).toBe(`${r.body.version}\tcreate_table_public_author\tPresent\tPresent`);
    expect(existsSync(join(dir, 'metadata', 'version.yaml'))).toBe(true);
  });

  it('a second migration gets a later version; without down SQL, down.sql says so as Hasura\'s does', async () => {
    const before = migrations();
    const r = await post('/apis/migrate', { name: 'add_index', up: 'create index author_name on author (name);' });
    expect(r.status).toBe(200);
    expect(BigInt(r.body.version) > BigInt(before[0]!.split('_')[0]!)).toBe(true);
    expect(readFileSync(join(dir, r.body.files[1]), 'utf8')).toBe(commentedDown('create index author_name on author (name);'));
    expect(commentedDown('a;\nb;')).toBe('-- Could not auto-generate a down migration.\n-- Please write an appropriate down migration for the SQL below:\n-- a;\n-- b;\n');
  });

  it('a failing migration leaves no file, no record and none of its statements; the error names the line', async () => {
    const before = migrations();
    const records = await recorded();
    const r = await post('/apis/migrate', { name: 'broken', up: 'create table half (id int);\nalter table nope add column x int;' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('postgres-error');
    expect(r.body.error).toMatch(/^default: migration \d+_broken \(up, migrations\/default\/\d+_broken\/up\.sql:2\) failed and was rolled back: .*"nope"/);
    expect(migrations()).toEqual(before);
    expect(await recorded()).toEqual(records);
    expect((await s.sql`select to_regclass('public.half') is not null as e`)[0]!.e).toBe(false);
  });

  it('a request the engine refuses (no admin secret) writes nothing, and keeps the engine\'s status', async () => {
    const before = migrations();
    const r = await post('/apis/migrate', { name: 'sneaky', up: 'create table sneaky (id int);' }, {});
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('access-denied');
    expect(migrations()).toEqual(before);
    expect((await s.sql`select to_regclass('public.sneaky') is not null as e`)[0]!.e).toBe(false);
  });

  it('refuses bad input before anything is written', async () => {
    const before = migrations();
    const cases: [unknown, string][] = [
      [{ name: '../escape', up: 'select 1' }, '$.name'],
      [{ name: 'x', up: '   ' }, '$.up'],
      [{ name: 'x', up: 'select 1', source: '../../etc' }, '$.source'],
      // One segment only: `..` would write beside migrations/, `.` into it.
      [{ name: 'x', up: 'select 1', source: '..' }, '$.source'],
      [{ name: 'x', up: 'select 1', source: '.' }, '$.source'],
      [{ name: '..', up: 'select 1' }, '$.name'],
      [{ name: 'x', up: 'select 1', down: 3 }, '$.down'],
      [{ name: 'x', up: 'select 1', cascade: 'yes' }, '$.cascade'],
      [[1], '$'],
    ];
    for (const [body, path] of cases) {
      const r = await post('/apis/migrate', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toMatchObject({ code: 'parse-failed', path });
    }
    const bad = await post('/apis/migrate', '{not json');
    expect(bad).toEqual({ status: 400, body: { code: 'invalid-json', error: 'the body is not JSON', path: '$' } });
    expect(migrations()).toEqual(before);
  });

  it('forwards the console\'s calls; the metadata directory follows each change, not reads or refusals', async () => {
    expect(existsSync(tableFile('author'))).toBe(false);
    const n = exports();
    const t = await post('/v1/metadata', { type: 'pg_track_table', args: { table: 'author' } });
    expect(t.status).toBe(200);
    expect(exports()).toBe(n + 1);
    expect(readFileSync(tableFile('author'), 'utf8')).toBe('table:\n  schema: public\n  name: author\n');
    // reads: forwarded, nothing written
    const e = await post('/v1/metadata', { type: 'export_metadata', args: {} });
    expect(e.status).toBe(200);
    expect(e.body.sources[0].tables).toEqual([{ table: { name: 'author', schema: 'public' } }]);
    expect((await post('/v2/query', { type: 'run_sql', args: { sql: 'select 1', read_only: true } })).status).toBe(200);
    expect(exports()).toBe(n + 1);
    // a refusal: the engine's answer as it is, nothing written
    const bad = await post('/v1/metadata', { type: 'pg_track_table', args: { table: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('$.args');
    const denied = await post('/v1/metadata', { type: 'pg_untrack_table', args: { table: 'author' } }, {});
    expect(denied.status).toBe(401);
    expect(exports()).toBe(n + 1);
    // a run_sql that is not read-only but changes no metadata: exported once more only if it moved
    await post('/v2/query', { type: 'run_sql', args: { sql: 'select 2' } });
    // a permission: the table's file has it
    const p = await post('/v1/metadata', { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: {} } } });
    expect(p.status).toBe(200);
    expect(readFileSync(tableFile('author'), 'utf8')).toContain('select_permissions:\n  - role: user\n');
    // dropped with cascade through a migration: the file goes from the metadata directory too
    const d = await post('/apis/migrate', { name: 'drop_table_public_author', up: 'DROP TABLE "public"."author" CASCADE;', cascade: true });
    expect(d.status).toBe(200);
    expect(existsSync(tableFile('author'))).toBe(false);
    // GETs are forwarded too
    const h = await fetch(`${cs.url}/healthz`);
    expect(h.status).toBe(200);
  });

  it('tunnels the GraphQL WebSocket to the engine', async () => {
    const ws = new WebSocket(`${cs.url.replace('http', 'ws')}/v1/graphql`, 'graphql-transport-ws');
    const first = new Promise<any>((resolve, reject) => {
      ws.once('message', (m) => resolve(JSON.parse(String(m))));
      ws.once('error', reject);
    });
    await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { headers: ADMIN } }));
    expect(await first).toEqual({ type: 'connection_ack' });
    ws.close();
  });
});

describe('svc console (the command)', () => {
  const s = useServer(undefined, { config: { adminSecret: SECRET } });
  const engine = useListening(s);

  it('serves until it is stopped, on the port asked for; a port in use is an error', async () => {
    const dir = tempDir('svc-console-cmd-');
    let stop!: () => void;
    const until = new Promise<void>((r) => (stop = r));
    const { run } = await import('./main.js');
    const out: string[] = [];
    const err: string[] = [];
    const done = run(['console', '--console-port', '0'], { out: (l) => out.push(l), err: (l) => err.push(l), env: { SVC_GRAPHQL_ENDPOINT: `http://127.0.0.1:${engine.port}` }, cwd: dir, until });
    await expect.poll(() => out.length, { timeout: 10_000 }).toBe(1);
    const url = /^svc console: (http:\/\/127\.0\.0\.1:\d+)\/console /.exec(out[0]!)?.[1];
    expect(url).toBeDefined();
    expect((await fetch(`${url}/apis/project`)).status).toBe(200);
    // a project where the migration cannot be written: said, and nothing runs
    writeFileSync(join(dir, 'migrations'), 'not a folder');
    const w = await fetch(`${url}/apis/migrate`, { method: 'POST', headers: { 'content-type': 'application/json', ...ADMIN }, body: JSON.stringify({ name: 'unwritten', up: 'create table unwritten (id int);' }) });
    expect(w.status).toBe(500);
    expect(await w.json()).toMatchObject({ code: 'unexpected', error: expect.stringMatching(/^svc console: the migration could not be written to migrations\/default: .*ENOTDIR/), path: '$' });
    expect((await s.sql`select to_regclass('public.unwritten') is not null as e`)[0]!.e).toBe(false);
    const port = new URL(url!).port;
    // the same port again, while it is held
    const again = await svc(`http://127.0.0.1:${engine.port}`, dir, ['console', '--console-port', port]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(new RegExp(`^error: svc console: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
    stop();
    expect(await done).toBe(0);
    await expect(fetch(`${url}/apis/project`)).rejects.toThrow();
    const bad = await svc(`http://127.0.0.1:${engine.port}`, dir, ['console', '--console-port', 'x']);
    expect(bad).toMatchObject({ code: 1, err: 'error: --console-port: expected a port number, got "x"' });
  });
});
