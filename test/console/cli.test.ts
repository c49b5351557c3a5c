/**
 * The console served by `svc console` in Chromium (Note [The console of a project] in
 * server/cli/console-server.ts): a table created, a column added and a column altered from the
 * Data pages become migrations of the project (up.sql as shown, down.sql the inverse, which `svc
 * migrate apply --type down` runs), applied with their records;
 * the metadata directory follows the tracking; a change with "This is a migration" unchecked writes
 * none; SQL run with "This is a migration" checked is written under its name, and SQL that fails
 * leaves no migration behind.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/cli/main.js';
import { svc, tempDir } from '../../server/cli/test-support.js';
import { checkCleanRun, hasChromium, openConsole, SECRET, unlabelled, warnSkipped, type Console } from './harness.js';

warnSkipped('test/console/cli.test.ts');

describe.skipIf(!hasChromium)('the console of a CLI project (svc console)', () => {
  let c: Console;
  let dir: string;
  const logs: string[] = [];
  const migrations = () => (existsSync(join(dir, 'migrations', 'default')) ? readdirSync(join(dir, 'migrations', 'default')).sort() : []);
  const file = (m: string, f: string) => readFileSync(join(dir, 'migrations', 'default', m, f), 'utf8');
  const recorded = async () => (await c.server.sql`select version::text as v, name from svc_catalog.cli_migrations order by version`).map((r) => `${r.v}_${r.name}`);

  beforeAll(async () => {
    const parent = tempDir('svc-console-browser-');
    expect((await svc('http://127.0.0.1:1', parent, ['init', 'app'])).code).toBe(0);
    dir = join(parent, 'app');
    // `svc console --console-port 0` itself, in this process, in front of the test's engine
    c = await openConsole('cli', {
      via: async (engine) => {
        let stop!: () => void;
        const until = new Promise<void>((r) => (stop = r));
        const out: string[] = [];
        const done = run(['console', '--console-port', '0'], { out: (l) => out.push(l), err: (l) => logs.push(l), env: { SVC_GRAPHQL_ENDPOINT: engine }, cwd: dir, until });
        const end = Date.now() + 30_000;
        while (!out.length) {
          if (Date.now() > end) throw new Error(`svc console did not start: ${logs.join('\n')}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const url = /^svc console: (http:\/\/[^ ]+)\/console /.exec(out[0]!)?.[1];
        if (!url) throw new Error(`svc console said: ${out[0]}`);
        return { url, close: async () => (stop(), void (await done)) };
      },
    });
  }, 240_000);
  afterAll(async () => c?.close());

  it('creates a table as a migration of the project, with its down SQL; the metadata directory has it tracked', async () => {
    const { page } = c;
    await c.go('/data/default/public');
    await page.getByTestId('create-table-open').click();
    await page.getByTestId('new-table-name').fill('author');
    await page.getByTestId('new-col-add').click();
    await page.getByTestId('new-col-1-name').fill('name');
    expect(await page.getByTestId('new-table-migration').isChecked()).toBe(true);
    expect(await unlabelled(page)).toEqual([]);
    const shown = await page.getByTestId('new-table-sql').textContent();
    await c.shot('create-table-as-migration');
    await page.getByTestId('new-table-run').click();
    await page.getByTestId('tracked').waitFor();
    const [m, ...rest] = migrations();
    expect(rest).toEqual([]);
    expect(m).toMatch(/^\d+_create_table_public_author$/);
    expect(file(m!, 'up.sql')).toBe(`${shown}\n`);
    expect(file(m!, 'down.sql')).toBe('DROP TABLE "public"."author";\n');
    expect(await recorded()).toEqual([m]);
    // tracked after the migration (pg_track_table through the CLI's server): exported
    await expect.poll(() => existsSync(join(dir, 'metadata', 'databases', 'default', 'tables', 'public_author.yaml'))).toBe(true);
    expect(readFileSync(join(dir, 'metadata', 'databases', 'default', 'tables', 'tables.yaml'), 'utf8')).toBe('- "!include public_author.yaml"\n');
  }, 60_000);

  it('adds a column as a migration; unchecked, a change writes none', async () => {
    const { page } = c;
    await page.getByTestId('add-column').click();
    await page.getByTestId('add-col-name').fill('bio');
    await page.getByTestId('add-column-run').click();
    await page.getByTestId('column-adder').waitFor({ state: 'detached' });
    expect(migrations().length).toBe(2);
    const m = migrations()[1]!;
    expect(m).toMatch(/^\d+_alter_table_public_author_add_column_bio$/);
    expect(file(m, 'up.sql')).toBe('ALTER TABLE "public"."author" ADD COLUMN "bio" text;\n');
    expect(file(m, 'down.sql')).toBe('ALTER TABLE "public"."author" DROP COLUMN "bio";\n');
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'name', 'bio']);

    await page.getByTestId('add-column').click();
    await page.getByTestId('add-col-name').fill('scratch');
    await page.getByTestId('add-column-migration').uncheck();
    await page.getByTestId('add-column-run').click();
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'name', 'bio', 'scratch']);
    expect(migrations().length).toBe(2);
    await c.shot('columns-added');

    // altered: its down.sql is the inverse, which `svc migrate apply --type down` runs
    await page.getByTestId('edit-col-name').click();
    await page.getByTestId('col-name').fill('full_name');
    await page.getByTestId('col-nullable').uncheck();
    expect(await page.getByTestId('alter-column-migration').isChecked()).toBe(true);
    await page.getByTestId('alter-column-run').click();
    // (the files are written before the migration runs: the editor closes once it ran)
    await page.getByTestId('column-editor').waitFor({ state: 'detached' });
    expect(migrations().length).toBe(3);
    const alter = migrations()[2]!;
    expect(alter).toMatch(/^\d+_alter_table_public_author_alter_column_name$/);
    expect(file(alter, 'up.sql')).toBe('ALTER TABLE "public"."author" ALTER COLUMN "name" SET NOT NULL;\nALTER TABLE "public"."author" RENAME COLUMN "name" TO "full_name";\n');
    expect(file(alter, 'down.sql')).toBe('ALTER TABLE "public"."author" ALTER COLUMN "full_name" DROP NOT NULL;\nALTER TABLE "public"."author" RENAME COLUMN "full_name" TO "name";\n');
    const nameColumn = async () => (await c.server.sql`select column_name::text as c, is_nullable::text as n from information_schema.columns where table_name = 'author' and column_name in ('name', 'full_name')`).map((r) => `${r.c} ${r.n}`);
    expect(await nameColumn()).toEqual(['full_name NO']);
    const version = alter.split('_')[0]!;
    const down = await svc(c.base, dir, ['migrate', 'apply', '--version', version, '--type', 'down'], { SVC_GRAPHQL_ADMIN_SECRET: SECRET });
    expect(down.out).toBe(`default: reverted ${alter}`);
    expect(await nameColumn()).toEqual(['name YES']);
    expect((await svc(c.base, dir, ['migrate', 'apply', '--version', version], { SVC_GRAPHQL_ADMIN_SECRET: SECRET })).out).toBe(`default: applied ${alter}`);
    expect(await nameColumn()).toEqual(['full_name NO']);
  }, 60_000);

  it('runs SQL as a migration under its name; SQL that fails leaves none', async () => {
    const { page } = c;
    await page.getByTestId('nav-sql').click();
    await page.getByTestId('sql-input').fill('create index author_name on author (full_name);');
    await page.getByTestId('sql-migration').check();
    await page.getByTestId('sql-migration-name').fill('author_name_index');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('sql-as-migration');
    await page.getByTestId('sql-run').click();
    await page.getByTestId('sql-migration-written').waitFor();
    const m = migrations()[3]!;
    expect(m).toMatch(/^\d+_author_name_index$/);
    expect(await page.getByTestId('sql-migration-written').textContent()).toBe(`Migration written: migrations/default/${m}`);
    expect(file(m, 'up.sql')).toBe('create index author_name on author (full_name);\n');
    expect(file(m, 'down.sql')).toMatch(/^-- Could not auto-generate a down migration\./);
    expect((await c.server.sql`select to_regclass('public.author_name') is not null as e`)[0]!.e).toBe(true);

    await page.getByTestId('sql-input').fill('create table half (id int);\nselect nope;');
    await page.getByTestId('sql-run').click();
    await page.getByTestId('error').getByText(/up\.sql:2\) failed and was rolled back: .*"nope"/).waitFor();
    await c.shot('sql-migration-failed');
    expect(migrations().length).toBe(4);
    expect((await c.server.sql`select to_regclass('public.half') is not null as e`)[0]!.e).toBe(false);

    // the project's own view: every migration written is applied
    const st = await svc(c.base, dir, ['migrate', 'status'], { SVC_GRAPHQL_ADMIN_SECRET: SECRET });
    expect(st.out.split('\n').slice(1)).toEqual(migrations().map((x) => `${x.replace('_', '\t')}\tPresent\tPresent`));
    expect(await recorded()).toEqual(migrations());
    checkCleanRun(c);
  }, 60_000);
});
