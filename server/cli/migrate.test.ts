/**
 * `svc migrate ...` and `svc seed apply` against a real server: migrations up and down, one
 * version, a failing migration rolled back with its record, status, seeds; and the bin itself.
 */
import { describe, expect, it } from 'vitest';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { svc, tempDir, writeTree } from './test-support.js';

const http = (port: number) => `http://127.0.0.1:${port}`;

describe('svc migrate / seed', () => {
  const s = useServer();
  const port = useListening(s);

  const tables = async () =>
    (await s.sql`select table_name::text as t from information_schema.tables where table_schema = 'public' order by 1`).map((r) => r.t as string);
  const recorded = async () => (await s.sql`select version::text as v, name from svc_catalog.cli_migrations order by version`).map((r) => `${r.v}_${r.name}`);

  it('applies pending migrations in order, each with its record in one transaction; a failing one is rolled back', async () => {
    const dir = writeTree(tempDir(), {
      'config.yaml': 'version: 3\n',
      'migrations/default/1000_create_author/up.sql': 'create table author (id serial primary key, name text not null);\n',
      'migrations/default/1000_create_author/down.sql': 'drop table author;\n',
      'migrations/default/2000_create_article/up.sql': 'create table article (id serial primary key, author_id int references author(id));\n',
      'migrations/default/2000_create_article/down.sql': 'drop table article;\n',
      // the first statement succeeds, the second fails: neither may remain, nor a record
      'migrations/default/3000_broken/up.sql': 'create table half (id int);\nalter table nope add column x int;\n',
      'migrations/default/3000_broken/down.sql': 'drop table half;\n',
      'migrations/default/4000_after/up.sql': 'create table after_broken (id int);\n',
    });
    const st0 = await svc(http(port.port), dir, ['migrate', 'status']);
    expect(st0.out.split('\n')).toEqual([
      'VERSION\tNAME\tSOURCE STATUS\tDATABASE STATUS',
      '1000\tcreate_author\tPresent\tNot Present',
      '2000\tcreate_article\tPresent\tNot Present',
      '3000\tbroken\tPresent\tNot Present',
      '4000\tafter\tPresent\tNot Present',
    ]);

    const a = await svc(http(port.port), dir, ['migrate', 'apply']);
    expect(a.code).toBe(1);
    expect(a.out).toBe('default: applied 1000_create_author\ndefault: applied 2000_create_article');
    // the file and the line of the statement that failed
    expect(a.err).toMatch(/^error: default: migration 3000_broken \(up, migrations\/default\/3000_broken\/up\.sql:2\) failed and was rolled back: .*"nope"/);
    expect(await tables()).toEqual(['article', 'author']);
    expect(await recorded()).toEqual(['1000_create_author', '2000_create_article']);

    // fixed, it applies, and the one after it too
    writeTree(dir, { 'migrations/default/3000_broken/up.sql': 'create table half (id int);\n' });
    const b = await svc(http(port.port), dir, ['migrate', 'apply', '--up', '1']);
    expect(b.out).toBe('default: applied 3000_broken');
    const c = await svc(http(port.port), dir, ['migrate', 'apply', '--up', 'all']);
    expect(c.out).toBe('default: applied 4000_after');
    expect((await svc(http(port.port), dir, ['migrate', 'apply'])).out).toBe('default: nothing to apply');

    // down 2: the last two, newest first (4000 has no down.sql: only its record goes)
    const d = await svc(http(port.port), dir, ['migrate', 'apply', '--down', '2']);
    expect(d.out).toBe('default: reverted 4000_after\ndefault: reverted 3000_broken');
    expect(await tables()).toEqual(['after_broken', 'article', 'author']);
    expect(await recorded()).toEqual(['1000_create_author', '2000_create_article']);

    // one version, down then up
    expect((await svc(http(port.port), dir, ['migrate', 'apply', '--version', '2000', '--type', 'down'])).out).toBe('default: reverted 2000_create_article');
    expect(await tables()).toEqual(['after_broken', 'author']);
    const again = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '1000']);
    expect(again.err).toBe('error: migration 1000 is applied already');
    expect((await svc(http(port.port), dir, ['migrate', 'apply', '--version', '2000'])).out).toBe('default: applied 2000_create_article');

    // a down migration that fails keeps its record (and the table)
    writeTree(dir, { 'migrations/default/2000_create_article/down.sql': 'drop table article;\nselect 1/0;\n' });
    const e = await svc(http(port.port), dir, ['migrate', 'apply', '--down', '1']);
    expect(e.code).toBe(1);
    expect(e.err).toContain('migration 2000_create_article (down, migrations/default/2000_create_article/down.sql:2) failed and was rolled back: query execution failed: division by zero (postgres-error at $.args)');
    expect(await tables()).toContain('article');
    expect(await recorded()).toEqual(['1000_create_author', '2000_create_article']);

    const st = await svc(http(port.port), dir, ['migrate', 'status']);
    expect(st.out.split('\n').slice(1)).toEqual([
      '1000\tcreate_author\tPresent\tPresent',
      '2000\tcreate_article\tPresent\tPresent',
      '3000\tbroken\tPresent\tNot Present',
      '4000\tafter\tPresent\tNot Present',
    ]);
    expect((await svc(http(port.port), dir, ['migrate', 'apply', '--up', '0'])).err).toContain('--up takes a positive number or "all"');
    expect((await svc(http(port.port), dir, ['migrate', 'apply', '--up', '1', '--down', '1'])).err).toBe('error: give one of --up, --down and --version');
  });

  it('migrations with their own BEGIN ... COMMIT (as the Hasura CLI writes them) apply atomically with their record, up and down', async () => {
    // (the tables and versions of this test: the other tests' stay in the database)
    const mine = async () => (await tables()).filter((t) => ['account', 'ledger', 'c1', 'c2'].includes(t));
    const mine7 = async () => (await recorded()).filter((v) => v.startsWith('700'));
    const dir = writeTree(tempDir(), {
      'config.yaml': 'version: 3\nendpoint: http://localhost:8080\n',
      'migrations/default/7001_init/up.sql':
        '-- written by the Hasura console\nBEGIN;\ncreate table account (id int primary key, owner text not null);\ninsert into account values (1, \'ann\');\nCOMMIT;\n',
      'migrations/default/7001_init/down.sql': 'BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE;\ndrop table account;\nEND;\n',
      // fails at line 5 (a duplicate key) after creating a table: neither may remain, nor a record
      'migrations/default/7002_dup/up.sql':
        "begin;\ncreate table ledger (id int);\ninsert into account values (2, 'bo');\n\ninsert into account values (1, 'again');\ncommit;\n",
      'migrations/default/7002_dup/down.sql': 'BEGIN;\ndrop table ledger;\nCOMMIT;\n',
      // two transactions: cannot be all or nothing
      'migrations/default/7003_two/up.sql': 'BEGIN;\ncreate table c1 (id int);\nCOMMIT;\nBEGIN;\ncreate table c2 (id int);\nCOMMIT;\n',
      'migrations/default/7003_two/down.sql': 'drop table c1;\ndrop table c2;\n',
    });
    const a = await svc(http(port.port), dir, ['migrate', 'apply']);
    expect(a.out).toBe('default: applied 7001_init');
    expect(a.code).toBe(1);
    expect(a.err).toBe(
      'error: default: migration 7002_dup (up, migrations/default/7002_dup/up.sql:5) failed and was rolled back: query execution failed: duplicate key value violates unique constraint "account_pkey" (Key (id)=(1) already exists.) (postgres-error at $.args)',
    );
    expect(await mine()).toEqual(['account']);
    expect((await s.sql`select id, owner from account order by id`).map((r) => `${r.id}:${r.owner}`)).toEqual(['1:ann']);
    expect(await mine7()).toEqual(['7001_init']);

    // the one with two transactions is refused before anything of it runs
    const two = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7003']);
    expect(two.code).toBe(1);
    expect(two.err).toMatch(/^error: default: migration 7003_two \(up, migrations\/default\/7003_two\/up\.sql:3\) was not applied: COMMIT here cannot be applied all or nothing: .*--no-transaction/);
    expect(await mine()).toEqual(['account']);
    // --no-transaction runs it as written, and records it after
    const nt = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7003', '--no-transaction']);
    expect(nt.err).toBe('');
    expect(nt.out).toBe('default: applied 7003_two');
    expect(await mine()).toEqual(['account', 'c1', 'c2']);
    expect(await mine7()).toEqual(['7001_init', '7003_two']);
    // --no-transaction: a failure keeps what ran before it, and no record
    writeTree(dir, { 'migrations/default/7002_dup/up.sql': 'create table ledger (id int);\nselect 1/0;\n' });
    const ntf = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7002', '--no-transaction']);
    expect(ntf.code).toBe(1);
    expect(ntf.err).toContain('migration 7002_dup (up, migrations/default/7002_dup/up.sql) failed (--no-transaction: the statements before the failing one stay applied; not recorded): query execution failed: division by zero');
    expect(await mine()).toContain('ledger');
    expect(await mine7()).toEqual(['7001_init', '7003_two']);
    await s.runSql('drop table ledger');

    // fixed, 2000 applies inside its BEGIN ... COMMIT; then down, newest first, each with its own
    writeTree(dir, { 'migrations/default/7002_dup/up.sql': "BEGIN;\ncreate table ledger (id int);\ninsert into account values (2, 'bo');\nCOMMIT;\n" });
    expect((await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7002'])).out).toBe('default: applied 7002_dup');
    expect(await mine7()).toEqual(['7001_init', '7002_dup', '7003_two']);
    // a failing down inside BEGIN ... COMMIT keeps the table and the record
    writeTree(dir, { 'migrations/default/7002_dup/down.sql': 'BEGIN;\ndrop table ledger;\nselect 1/0;\nCOMMIT;\n' });
    const df = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7002', '--type', 'down']);
    expect(df.err).toContain('migration 7002_dup (down, migrations/default/7002_dup/down.sql:3) failed and was rolled back: query execution failed: division by zero');
    expect(await mine()).toContain('ledger');
    expect(await mine7()).toEqual(['7001_init', '7002_dup', '7003_two']);
    writeTree(dir, { 'migrations/default/7002_dup/down.sql': 'BEGIN;\ndrop table ledger;\nCOMMIT;\n' });
    const down = await svc(http(port.port), dir, ['migrate', 'apply', '--down', 'all']);
    expect(down.err).toBe('');
    expect(down.out).toBe('default: reverted 7003_two\ndefault: reverted 7002_dup\ndefault: reverted 7001_init');
    expect(await mine()).toEqual([]);
    expect(await mine7()).toEqual([]);
  });

  it('migrate create writes <version>_<name>/up.sql, down.sql, from a file or empty', async () => {
    const dir = writeTree(tempDir(), { 'schema.sql': 'create table from_file (id int);\n' });
    const r = await svc(http(port.port), dir, ['migrate', 'create', 'init', '--sql-from-file', 'schema.sql', '--database-name', 'default']);
    expect(r.out).toMatch(/^created migration migrations\/default\/\d{13}_init$/);
    const [name] = readdirSync(join(dir, 'migrations/default'));
    expect(readFileSync(join(dir, 'migrations/default', name!, 'up.sql'), 'utf8')).toBe('create table from_file (id int);\n');
    expect(readFileSync(join(dir, 'migrations/default', name!, 'down.sql'), 'utf8')).toBe('');
    const v = await svc(http(port.port), dir, ['migrate', 'create', 'second', '--version', '42', '--up-sql', 'select 1', '--down-sql', 'select 2']);
    expect(v.out).toBe('created migration migrations/default/42_second');
    expect(existsSync(join(dir, 'migrations/default/42_second/down.sql'))).toBe(true);
    expect((await svc(http(port.port), dir, ['migrate', 'create', 'bad name'])).err).toContain('migration name "bad name"');
  });

  it('SVC_GRAPHQL_NO_TRANSACTION=true is --no-transaction; a value that is no boolean applies nothing', async () => {
    const mine = async () => (await tables()).filter((t) => ['e1', 'e2', 'e3', 'e4'].includes(t));
    const mine71 = async () => (await recorded()).filter((v) => v.startsWith('710'));
    const two = (a: string, b: string) => `BEGIN;\ncreate table ${a} (id int);\nCOMMIT;\nBEGIN;\ncreate table ${b} (id int);\nCOMMIT;\n`;
    const dir = writeTree(tempDir(), {
      'config.yaml': 'version: 3\n',
      // two transactions each: applied only outside a transaction
      'migrations/default/7101_two/up.sql': two('e1', 'e2'),
      'migrations/default/7102_two/up.sql': two('e3', 'e4'),
    });
    const bad = await svc(http(port.port), dir, ['migrate', 'apply'], { SVC_GRAPHQL_NO_TRANSACTION: 'sometimes' });
    expect(bad).toMatchObject({ code: 1, out: '', err: 'error: SVC_GRAPHQL_NO_TRANSACTION: expected a boolean (true or false), got "sometimes"' });
    expect(await mine71()).toEqual([]);
    // false (and unset, above in this file) keeps the transaction: refused
    const f = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7101'], { SVC_GRAPHQL_NO_TRANSACTION: 'false' });
    expect(f.err).toMatch(/7101_two .*was not applied: COMMIT here cannot be applied all or nothing/);
    // Hasura's name is read with --from-hasura only
    const h = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7101'], { HASURA_GRAPHQL_NO_TRANSACTION: 'true' });
    expect(h.err).toMatch(/7101_two .*was not applied/);
    expect(await mine()).toEqual([]);
    const t = await svc(http(port.port), dir, ['migrate', 'apply', '--version', '7101'], { SVC_GRAPHQL_NO_TRANSACTION: 'true' });
    expect(t).toMatchObject({ code: 0, out: 'default: applied 7101_two', err: '' });
    const ht = await svc(http(port.port), dir, ['--from-hasura', 'migrate', 'apply'], { HASURA_GRAPHQL_NO_TRANSACTION: '1' });
    expect(ht).toMatchObject({ code: 0, out: 'default: applied 7102_two' });
    expect(await mine()).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(await mine71()).toEqual(['7101_two', '7102_two']);
  });

  it('seed apply runs seeds/<db>/*.sql in file-name order, each in one transaction', async () => {
    await s.runSql('create table fruit (id int primary key, name text)');
    const dir = writeTree(tempDir(), {
      'seeds/default/2_more.sql': "insert into fruit values (2, 'pear');\n",
      'seeds/default/1_first.sql': "insert into fruit values (1, 'apple');\n",
    });
    const r = await svc(http(port.port), dir, ['seed', 'apply']);
    expect(r.out).toBe('default: applied seed 1_first.sql\ndefault: applied seed 2_more.sql');
    writeTree(dir, { 'seeds/default/3_bad.sql': "insert into fruit values (3, 'fig');\ninsert into fruit values (1, 'dup');\n" });
    const bad = await svc(http(port.port), dir, ['seed', 'apply', '--file', '3_bad.sql']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('seed seeds/default/3_bad.sql:2 failed and was rolled back');
    expect((await s.sql`select count(*)::int as n from fruit`)[0]!.n).toBe(2);
    // A seed with its own transaction applies as one; other transaction control is refused, nothing run.
    writeTree(dir, {
      'seeds/default/4_tx.sql': "BEGIN;\ninsert into fruit values (4, 'kiwi');\ninsert into fruit values (5, 'lime');\nCOMMIT;\n",
      'seeds/default/5_two.sql': "insert into fruit values (6, 'plum');\nCOMMIT;\ninsert into fruit values (7, 'date');\n",
    });
    const tx = await svc(http(port.port), dir, ['seed', 'apply', '--file', '4_tx.sql']);
    expect(tx).toMatchObject({ code: 0, out: 'default: applied seed 4_tx.sql' });
    const two = await svc(http(port.port), dir, ['seed', 'apply', '--file', '5_two.sql']);
    expect(two.code).toBe(1);
    expect(two.err).toContain('seed seeds/default/5_two.sql:2 was not applied: COMMIT here cannot be applied all or nothing');
    expect((await s.sql`select id from fruit order by id`).map((r) => r.id)).toEqual([1, 2, 4, 5]);
  });

  it('--from-hasura renames the session setting and its keys in migrations and seeds, and says so', async () => {
    const dir = writeTree(tempDir(), {
      'migrations/default/5000_me/up.sql':
        "create function me() returns text language sql stable as $$ select current_setting('hasura.user', true)::json->>'x-hasura-user-id' $$;\n",
      'migrations/default/5000_me/down.sql': 'drop function me();\n',
      'seeds/default/1.sql': "create table seen (v text); insert into seen values ('X-Hasura-Role');\n",
    });
    const r = await svc(http(port.port), dir, ['migrate', 'apply', '--from-hasura', '--version', '5000']);
    expect(r.err).toBe('');
    expect(r.out).toBe(
      "--from-hasura: migrations/default/5000_me/up.sql: renamed 'hasura.user' -> 'svc.user', x-hasura-user-id -> x-svc-user-id\ndefault: applied 5000_me",
    );
    const [fn] = await s.sql`select prosrc from pg_proc where proname = 'me'`;
    expect(fn!.prosrc).toBe(" select current_setting('svc.user', true)::json->>'x-svc-user-id' ");
    const seeded = await svc(http(port.port), dir, ['--from-hasura', 'seed', 'apply']);
    expect(seeded.out).toBe('--from-hasura: seeds/default/1.sql: renamed X-Hasura-Role -> X-Svc-Role\ndefault: applied seed 1.sql');
  });

  it('the svc bin: help, and a command against the server', async () => {
    const root = new URL('../..', import.meta.url).pathname;
    const help = spawnSync(process.execPath, ['--import', 'tsx', 'server/cli/svc.ts', '--help'], { cwd: root, encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: svc [options] [command]');
    for (const c of ['metadata', 'migrate', 'seed']) expect(help.stdout).toContain(c);
    // run from another directory: tsx's loader by its path
    const tsx = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
    // (not spawnSync: the server answering it is in this process)
    const st = await promisify(execFile)(process.execPath, ['--import', tsx, join(root, 'server/cli/svc.ts'), 'metadata', 'inconsistency', 'list'], {
      cwd: tempDir(),
      encoding: 'utf8',
      env: { ...process.env, SVC_GRAPHQL_ENDPOINT: http(port.port) },
      timeout: 20_000,
    });
    expect(st.stderr).toBe('');
    expect(st.stdout).toBe('metadata is consistent\n');
  });
});
