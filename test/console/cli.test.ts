/**
 * The console served by `svc console` in Chromium (Note [The console of a project] in
 * server/cli/console-server.ts): a table created and a column added from the Data pages become
 * migrations of the project (up.sql as shown, down.sql the inverse), applied with their records;
 * the metadata directory follows the tracking; a change with "This is a migration" unchecked writes
 * none; SQL run with "This is a migration" checked is written under its name, and SQL that fails
 * leaves no migration behind.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer } from '../../server/cli/console-server.js';
import { readProject } from '../../server/cli/project.js';
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
    c = await openConsole('cli', { via: (engine) => startConsoleServer({ endpoint: engine, project: readProject(dir), port: 0, address: '127.0.0.1', log: (l) => logs.push(l) }) });
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
    await expect.poll(() => migrations().length).toBe(2);
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
  }, 60_000);

  it('runs SQL as a migration under its name; SQL that fails leaves none', async () => {
    const { page } = c;
    await page.getByTestId('nav-sql').click();
    await page.getByTestId('sql-input').fill('create index author_name on author (name);');
    await page.getByTestId('sql-migration').check();
    await page.getByTestId('sql-migration-name').fill('author_name_index');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('sql-as-migration');
    await page.getByTestId('sql-run').click();
    await page.getByTestId('sql-migration-written').waitFor();
    const m = migrations()[2]!;
    expect(m).toMatch(/^\d+_author_name_index$/);
    expect(await page.getByTestId('sql-migration-written').textContent()).toBe(`Migration written: migrations/default/${m}`);
    expect(file(m, 'up.sql')).toBe('create index author_name on author (name);\n');
    expect(file(m, 'down.sql')).toMatch(/^-- Could not auto-generate a down migration\./);
    expect((await c.server.sql`select to_regclass('public.author_name') is not null as e`)[0]!.e).toBe(true);

    await page.getByTestId('sql-input').fill('create table half (id int);\nselect nope;');
    await page.getByTestId('sql-run').click();
    await page.getByTestId('error').getByText(/up\.sql:2\) failed and was rolled back: .*"nope"/).waitFor();
    await c.shot('sql-migration-failed');
    expect(migrations().length).toBe(3);
    expect((await c.server.sql`select to_regclass('public.half') is not null as e`)[0]!.e).toBe(false);

    // the project's own view: every migration written is applied
    const st = await svc(c.base, dir, ['migrate', 'status'], { SVC_GRAPHQL_ADMIN_SECRET: SECRET });
    expect(st.out.split('\n').slice(1)).toEqual(migrations().map((x) => `${x.replace('_', '\t')}\tPresent\tPresent`));
    expect(await recorded()).toEqual(migrations());
    checkCleanRun(c);
  }, 60_000);
});
