/**
 * The console's Data area in Chromium: tables created (with a primary key and a foreign key),
 * columns added, altered and dropped, a table renamed and dropped, all through the DDL the page
 * shows and then runs (run_sql); the permissions matrix (select, update: filter, check, columns,
 * presets, limit, aggregations; replaced and removed); relationships from the foreign keys,
 * created and dropped. Each step is checked in the database and through the metadata API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCleanRun, hasChromium, openConsole, unlabelled, warnSkipped, type Console } from './harness.js';

warnSkipped('test/console/data.test.ts');

describe.skipIf(!hasChromium)('the Data area of the console', () => {
  let c: Console;
  const table = async (name: string) => (await c.exported()).sources[0].tables.find((t: any) => t.table.name === name);
  const columns = async (name: string) =>
    (await c.server.sql`select column_name, data_type, is_nullable, column_default from information_schema.columns where table_schema = 'public' and table_name = ${name} order by ordinal_position`).map(
      (r) => [r.column_name, r.data_type, r.is_nullable, r.column_default],
    );

  beforeAll(async () => {
    c = await openConsole('data');
  }, 240_000);
  afterAll(async () => c?.close());

  it('creates a table from the form: the DDL is shown, run, and the table tracked', async () => {
    const { page } = c;
    await c.go('/data/default/public');
    await page.getByTestId('create-table-open').click();
    await page.getByTestId('new-table-name').fill('author');
    // The first column is the id (serial, the primary key); a second one, not null.
    await page.getByTestId('new-col-add').click();
    await page.getByTestId('new-col-1-name').fill('name');
    await page.getByTestId('new-col-1-nullable').uncheck();
    expect(await page.getByTestId('new-table-sql').textContent()).toBe('CREATE TABLE "public"."author" (\n  "id" serial NOT NULL,\n  "name" text NOT NULL,\n  PRIMARY KEY ("id")\n);');
    // A type that is no type: said at once, nothing can be sent.
    await page.getByTestId('new-col-1-type').fill('text; drop table x');
    await page.getByTestId('create-table').getByTestId('error').getByText('is not a column type').waitFor();
    expect(await page.getByTestId('new-table-run').isDisabled()).toBe(true);
    await page.getByTestId('new-col-1-type').fill('text');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('create-table-form');
    await page.getByTestId('new-table-run').click();
    await page.getByTestId('tracked').waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/data/default/public/author');
    expect(await columns('author')).toEqual([
      ['id', 'integer', 'NO', "nextval('author_id_seq'::regclass)"],
      ['name', 'text', 'NO', null],
    ]);
    expect(await table('author')).toEqual({ table: { name: 'author', schema: 'public' } });
    await c.shot('author-created');
  }, 60_000);

  it('creates a table with a foreign key', async () => {
    const { page } = c;
    await c.go('/data/default/public');
    await page.getByTestId('create-table-open').click();
    await page.getByTestId('new-table-name').fill('book');
    await page.getByTestId('new-col-add').click();
    await page.getByTestId('new-col-1-name').fill('title');
    await page.getByTestId('new-col-add').click();
    await page.getByTestId('new-col-2-name').fill('author_id');
    await page.getByTestId('new-col-2-type').fill('integer');
    await page.getByTestId('new-fk-add').click();
    await page.getByTestId('new-fk-0-columns').fill('author_id');
    await page.getByTestId('new-fk-0-table').fill('author');
    await page.getByTestId('new-fk-0-on-delete').selectOption('cascade');
    expect(await page.getByTestId('new-table-sql').textContent()).toContain('FOREIGN KEY ("author_id") REFERENCES "public"."author" ("id") ON UPDATE restrict ON DELETE cascade');
    await c.shot('create-book-form');
    await page.getByTestId('new-table-run').click();
    await page.getByTestId('tracked').waitFor();
    const [fk] = await c.server.sql`select pg_get_constraintdef(oid) as def from pg_constraint where conrelid = 'book'::regclass and contype = 'f'`;
    expect(fk!.def).toBe('FOREIGN KEY (author_id) REFERENCES author(id) ON UPDATE RESTRICT ON DELETE CASCADE');
    await c.server.sql`insert into author (name) values ('ann'); `;
    await c.server.sql`insert into book (title, author_id) values ('first', 1), (null, 1)`;
  }, 60_000);

  it('adds, alters and drops columns', async () => {
    const { page } = c;
    await page.getByTestId('add-column').click();
    await page.getByTestId('add-col-name').fill('pages');
    await page.getByTestId('add-col-type').fill('integer');
    await page.getByTestId('add-col-default').fill('0');
    expect(await page.getByTestId('add-column-sql').textContent()).toBe('ALTER TABLE "public"."book" ADD COLUMN "pages" integer DEFAULT 0;');
    // served by the engine, not by `svc console`: no project to write a migration into
    expect(await page.getByTestId('add-column-migration').count()).toBe(0);
    await page.getByTestId('add-column-run').click();
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'title', 'author_id', 'pages']);
    expect((await columns('book'))[3]).toEqual(['pages', 'integer', 'YES', '0']);

    // title: renamed, typed varchar(80), a default; not null refused while a row has none.
    await page.getByTestId('edit-col-title').click();
    await page.getByTestId('col-name').fill('headline');
    await page.getByTestId('col-type').fill('varchar(80)');
    await page.getByTestId('col-nullable').uncheck();
    await page.getByTestId('col-default').fill("'untitled'");
    expect((await page.getByTestId('alter-column-sql').textContent())!.split('\n')).toEqual([
      'ALTER TABLE "public"."book" ALTER COLUMN "title" TYPE varchar(80) USING "title"::varchar(80);',
      'ALTER TABLE "public"."book" ALTER COLUMN "title" SET NOT NULL;',
      `ALTER TABLE "public"."book" ALTER COLUMN "title" SET DEFAULT 'untitled';`,
      'ALTER TABLE "public"."book" RENAME COLUMN "title" TO "headline";',
    ]);
    await page.getByTestId('alter-column-run').click();
    const editor = page.getByTestId('column-editor');
    await editor.getByTestId('error').getByText(/null values|not-null|contains null/i).waitFor();
    await c.shot('alter-column-refused');
    // Nothing of it was applied (run_sql runs it all in one transaction).
    expect((await columns('book'))[1]).toEqual(['title', 'text', 'YES', null]);
    await c.server.sql`update book set title = 'second' where title is null`;
    await page.getByTestId('alter-column-run').click();
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'headline', 'author_id', 'pages']);
    expect((await columns('book'))[1]).toEqual(['headline', 'character varying', 'NO', "'untitled'::character varying"]);
    await c.shot('column-altered');

    await page.getByTestId('edit-col-pages').click();
    expect(await page.getByTestId('drop-column-sql').textContent()).toBe('ALTER TABLE "public"."book" DROP COLUMN "pages";');
    await page.getByTestId('drop-column-run').click();
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'headline', 'author_id']);
    expect((await columns('book')).map((r) => r[0])).toEqual(['id', 'headline', 'author_id']);
  }, 60_000);

  it('edits the permissions matrix: select and update with filter, check, columns, presets, limit and aggregations', async () => {
    const { page } = c;
    await page.getByTestId('tab-permissions').click();
    await page.getByTestId('new-role').fill('reader');
    await page.getByTestId('add-role').click();
    await page.getByTestId('perm-reader-select').click();
    // Bad JSON: said, nothing saved.
    await page.getByTestId('perm-filter').fill('{"headline": ');
    await page.getByTestId('perm-save').click();
    await page.getByTestId('permission-editor').getByTestId('error').getByText('filter: invalid JSON').waitFor();
    expect((await table('book')).select_permissions).toBeUndefined();
    await page.getByTestId('perm-filter').fill('{"headline": {"_neq": ""}}');
    await page.getByTestId('perm-all-columns').click();
    await page.getByTestId('perm-limit').fill('5');
    await page.getByTestId('perm-aggregations').check();
    expect(await unlabelled(page)).toEqual([]);
    await page.getByTestId('perm-save').click();
    await expect.poll(() => page.getByTestId('perm-reader-select').textContent()).toBe('partial');
    expect((await table('book')).select_permissions).toEqual([
      { role: 'reader', permission: { columns: ['id', 'headline', 'author_id'], filter: { headline: { _neq: '' } }, limit: 5, allow_aggregations: true } },
    ]);
    await c.shot('permission-select');

    await page.getByTestId('perm-reader-update').click();
    await page.getByTestId('perm-filter').fill('{"author_id": {"_eq": "X-Svc-User-Id"}}');
    await page.getByTestId('perm-check').fill('{"headline": {"_neq": ""}}');
    await page.getByTestId('perm-col-headline').check();
    await page.getByTestId('perm-set').fill('{"author_id": "X-Svc-User-Id"}');
    await page.getByTestId('perm-save').click();
    await expect.poll(() => page.getByTestId('perm-reader-update').textContent()).toBe('partial');
    expect((await table('book')).update_permissions).toEqual([
      { role: 'reader', permission: { columns: ['headline'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, check: { headline: { _neq: '' } }, set: { author_id: 'X-Svc-User-Id' } } },
    ]);
    await c.shot('permission-update');

    // An existing permission edited: replaced as a whole.
    await page.getByTestId('perm-reader-select').click();
    expect(await page.getByTestId('perm-limit').inputValue()).toBe('5');
    await page.getByTestId('perm-limit').fill('');
    await page.getByTestId('perm-aggregations').uncheck();
    await page.getByTestId('perm-col-id').uncheck();
    await page.getByTestId('perm-save').click();
    await page.getByTestId('permission-editor').getByTestId('ok').waitFor();
    expect((await table('book')).select_permissions).toEqual([{ role: 'reader', permission: { columns: ['headline', 'author_id'], filter: { headline: { _neq: '' } } } }]);

    await page.getByTestId('perm-reader-update').click();
    await page.getByTestId('perm-delete').click();
    await expect.poll(() => page.getByTestId('perm-reader-update').textContent()).toBe('✗');
    expect((await table('book')).update_permissions).toBeUndefined();
    await c.shot('permission-matrix');
  }, 60_000);

  it('creates relationships suggested by the foreign key and drops one', async () => {
    const { page } = c;
    await page.getByTestId('tab-relationships').click();
    await page.getByTestId('suggestions').getByText('author_id → public.author (id)').waitFor();
    await page.getByTestId('suggest-add-0').click();
    await page.getByTestId('relationships').getByText('author', { exact: true }).waitFor();
    await page.getByTestId('table-author').click();
    await page.getByTestId('tab-relationships').click();
    await page.getByTestId('suggest-name-0').fill('books');
    await page.getByTestId('suggest-add-0').click();
    await page.getByTestId('relationships').getByText('books', { exact: true }).waitFor();
    await c.shot('relationships');
    expect((await table('book')).object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }]);
    expect((await table('author')).array_relationships).toEqual([{ name: 'books', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'book' }, column: 'author_id' } } }]);
    await page.getByTestId('drop-rel-books').click();
    await expect.poll(async () => (await table('author')).array_relationships).toBeUndefined();
    // The suggestion is offered again.
    await page.getByTestId('suggestions').getByText('public.book (author_id) → id').waitFor();
  }, 60_000);

  it('renames a table (its metadata follows) and drops a column that a permission uses only with cascade', async () => {
    const { page } = c;
    await c.go('/data/default/public/book/columns');
    await page.getByTestId('rename-table-to').fill('novel');
    expect(await page.getByTestId('rename-table-sql').textContent()).toBe('ALTER TABLE "public"."book" RENAME TO "novel";');
    await page.getByTestId('rename-table-run').click();
    await page.waitForURL(/\/data\/default\/public\/novel$/);
    await page.getByTestId('tracked').waitFor();
    const novel = await table('novel');
    expect(novel.select_permissions[0].role).toBe('reader');
    expect(novel.object_relationships[0].name).toBe('author');
    expect(await table('book')).toBeUndefined();
    await c.shot('renamed');

    await page.getByTestId('edit-col-headline').click();
    await page.getByTestId('drop-column-run').click();
    await page.getByTestId('column-editor').getByTestId('error').getByText(/depend/i).waitFor();
    expect((await columns('novel')).map((r) => r[0])).toEqual(['id', 'headline', 'author_id']);
    await c.shot('drop-column-refused');
    await page.getByTestId('drop-column-cascade').check();
    await page.getByTestId('drop-column-run').click();
    await expect.poll(() => page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'author_id']);
    expect((await table('novel')).select_permissions).toBeUndefined();
  }, 60_000);

  it('drops a table with its metadata', async () => {
    const { page } = c;
    expect(await page.getByTestId('drop-table-sql').textContent()).toBe('DROP TABLE "public"."novel";');
    await page.getByTestId('drop-table-cascade').check();
    await page.getByTestId('drop-table-run').click();
    await page.waitForURL(/\/data\/default\/public$/);
    await expect.poll(async () => (await c.exported()).sources[0].tables.map((t: any) => t.table.name)).toEqual(['author']);
    expect((await c.server.sql`select to_regclass('public.novel') as t`)[0]!.t).toBeNull();
    await expect.poll(() => page.getByTestId('tables').locator('li a').allTextContents()).toEqual(['author']);
    await c.shot('dropped');
  }, 60_000);

  it('asked nothing of another origin and logged no unexpected error', () => {
    // 400s: the refused ALTER and DROP (run_sql answers 400); 404: the /v2/query probe.
    checkCleanRun(c, /^Failed to load resource: the server responded with a status of 40[04] /);
  });
});
