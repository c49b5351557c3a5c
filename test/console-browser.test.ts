/**
 * Issue 12: the console in a real browser. Debian's headless Chromium (`apt-get install chromium`;
 * no browser is downloaded) driven by playwright-core through what a person does: log in with the
 * admin secret, create a table on the SQL page, track it on the Data page, give a role a select
 * permission with a row filter, run a query as that role in GraphiQL (role and session variable
 * set in the header editor) and see only the permitted rows, export the metadata (a download
 * holding the table and its permission). A screenshot of each step goes to
 * test/artifacts/console/tour/ (git-ignored); the areas' own files are in test/console/. Without /usr/bin/chromium the tests are skipped, saying so.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './helpers.js';
import { ensureConsoleBuilt, ROOT } from './console-build.js';
import { listen, type Listening } from './ws-helpers.js';

const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`console-browser.test.ts: SKIPPED, no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian) to run the console's browser test.`);
}

const SECRET = 'console-test-secret';
const SHOTS = join(ROOT, 'test', 'artifacts', 'console', 'tour');

describe.skipIf(!hasChromium)('the console in Chromium', () => {
  let server: TestServer;
  let http: Listening;
  let base: string;
  let browser: Browser;
  let page: Page;
  let step = 0;
  /** Every URL the page asked for, and the errors it logged (a CSP refusal is one). */
  const requested: string[] = [];
  const pageErrors: string[] = [];
  const shot = async (name: string) => {
    step++;
    await page.screenshot({ path: join(SHOTS, `${String(step).padStart(2, '0')}-${name}.png`), fullPage: true });
  };
  /** The text of a CodeMirror editor of GraphiQL (query, headers, response): the first shown. */
  const editorText = (selector: string) =>
    page.evaluate((sel) => {
      const shown = [...document.querySelectorAll(sel)].find((e) => !e.closest('.hidden'));
      return (shown as any)?.CodeMirror?.getValue() as string | undefined;
    }, selector);

  /** Puts a document in GraphiQL's query editor and runs it (after GraphiQL's debounced look at
   * the document's operations). */
  const runQuery = async (query: string) => {
    await page.evaluate((q) => {
      const editor = [...document.querySelectorAll('.graphiql-query-editor .CodeMirror')].find((e) => !e.closest('.hidden'));
      (editor as any).CodeMirror.setValue(q);
    }, query);
    await page.waitForTimeout(400);
    await page.locator('.graphiql-execute-button').click();
  };

  beforeAll(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    await ensureConsoleBuilt();
    server = await startServer({ config: { adminSecret: SECRET } });
    // On a real port, the GraphQL WebSocket attached (as server/main.ts serves it).
    http = await listen(server);
    base = `http://127.0.0.1:${http.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    page.on('request', (r) => requested.push(r.url()));
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await http?.close();
    await server?.stop();
  });

  it('asks for the admin secret, refuses a wrong one, keeps the right one for the session', async () => {
    await page.goto(`${base}/console`);
    await page.getByTestId('login-form').waitFor();
    await shot('login');
    await page.getByTestId('admin-secret').fill('wrong');
    await page.getByTestId('login').click();
    await expect.poll(() => page.getByTestId('error').textContent()).toMatch(/access|invalid|denied/i);
    await page.getByTestId('admin-secret').fill(SECRET);
    await page.getByTestId('login').click();
    await page.getByTestId('nav-sql').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('svc-console-admin-secret'))).toBe(SECRET);
    // A reload keeps the session: no login form.
    await page.reload();
    await page.getByTestId('nav-sql').waitFor();
    // A secret the server no longer takes brings the login back, on the page asked for.
    await page.evaluate(() => sessionStorage.setItem('svc-console-admin-secret', 'stale'));
    await page.goto(`${base}/console/metadata`);
    await page.getByTestId('login-form').waitFor();
    await page.getByTestId('admin-secret').fill(SECRET);
    await page.getByTestId('login').click();
    await page.getByTestId('consistent').waitFor();
    await page.getByTestId('nav-api').click();
    await shot('graphiql-admin');
  }, 60_000);

  it('creates a table with SQL and shows rows as a table', async () => {
    await page.getByTestId('nav-sql').click();
    await page.getByTestId('sql-input').fill(
      "create table note (id serial primary key, owner text not null, body text);\ninsert into note (owner, body) values ('alice', 'first of alice'), ('bob', 'of bob'), ('alice', 'second of alice');",
    );
    await page.getByTestId('sql-run').click();
    await page.getByTestId('ok').waitFor();
    await page.getByTestId('sql-input').fill('select id, owner, body from note order by id');
    await page.getByTestId('sql-run').click();
    const table = page.getByTestId('sql-result');
    await table.waitFor();
    expect(await table.locator('th').allTextContents()).toEqual(['id', 'owner', 'body']);
    expect(await table.locator('tbody tr').count()).toBe(3);
    expect(await table.locator('tbody tr').nth(1).locator('td').allTextContents()).toEqual(['2', 'bob', 'of bob']);
    await shot('sql');
  }, 60_000);

  it('tracks the table on the Data page, shows its columns and browses its rows', async () => {
    await page.getByTestId('nav-data').click();
    await page.getByTestId('table-note').click();
    await page.getByTestId('track').click();
    await page.getByTestId('tracked').waitFor();
    expect(await page.getByTestId('columns').locator('tbody td:first-child').allTextContents()).toEqual(['id', 'owner', 'body']);
    await shot('data-tracked');
    expect((await server.tables()).map((t: any) => t.table.name)).toEqual(['note']);
    await page.getByTestId('tab-browse').click();
    const rows = page.getByTestId('browse').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(3);
    expect(await rows.nth(2).locator('td').allTextContents()).toEqual(['3', 'alice', 'second of alice']);
    await shot('data-browse');
  }, 60_000);

  it('gives the role "user" a select permission with a row filter in the permissions editor', async () => {
    await page.getByTestId('tab-permissions').click();
    await page.getByTestId('new-role').fill('user');
    await page.getByTestId('add-role').click();
    await page.getByTestId('perm-user-select').click();
    await page.getByTestId('perm-filter').fill('{"owner": {"_eq": "X-Svc-User-Id"}}');
    await page.getByTestId('perm-all-columns').click();
    await page.getByTestId('perm-col-id').uncheck();
    await page.getByTestId('perm-limit').fill('10');
    await page.getByTestId('perm-save').click();
    await page.getByTestId('permission-editor').getByTestId('ok').waitFor();
    await expect.poll(() => page.getByTestId('perm-user-select').textContent()).toBe('partial');
    expect(await page.getByTestId('perm-user-insert').textContent()).toBe('✗');
    await shot('permissions');
    const [note] = await server.tables();
    expect(note.select_permissions).toEqual([{ role: 'user', permission: { columns: ['owner', 'body'], filter: { owner: { _eq: 'X-Svc-User-Id' } }, limit: 10 } }]);

    // An insert permission with a check, one column and a preset; then removed again.
    await page.getByTestId('perm-user-insert').click();
    await page.getByTestId('perm-check').fill('{"owner": {"_eq": "X-Svc-User-Id"}}');
    await page.getByTestId('perm-col-body').check();
    await page.getByTestId('perm-set').fill('{"owner": "X-Svc-User-Id"}');
    await page.getByTestId('perm-save').click();
    await expect.poll(() => page.getByTestId('perm-user-insert').textContent()).toBe('partial');
    expect((await server.tables())[0].insert_permissions).toEqual([{ role: 'user', permission: { check: { owner: { _eq: 'X-Svc-User-Id' } }, columns: ['body'], set: { owner: 'X-Svc-User-Id' } } }]);
    await shot('permissions-insert');
    await page.getByTestId('perm-delete').click();
    await expect.poll(() => page.getByTestId('perm-user-insert').textContent()).toBe('✗');
    expect((await server.tables())[0].insert_permissions).toBeUndefined();
  }, 60_000);

  it('runs a query as that role in GraphiQL and sees only the permitted rows', async () => {
    await page.getByTestId('nav-api').click();
    await page.locator('.graphiql-container').waitFor();
    // The role bar writes X-Svc-Role and the session variable into GraphiQL's header editor.
    await page.getByTestId('role-input').fill('user');
    await page.getByTestId('add-var').click();
    await page.getByTestId('var-name-0').fill('X-Svc-User-Id');
    await page.getByTestId('var-value-0').fill('alice');
    await page.getByTestId('apply-headers').click();
    await expect.poll(async () => JSON.parse((await editorText('.graphiql-editor-tool .CodeMirror')) || '{}')).toEqual({ 'X-Svc-Role': 'user', 'X-Svc-User-Id': 'alice' });
    await runQuery('query Notes {\n  note(order_by: {body: asc}) {\n    owner\n    body\n  }\n}\n');
    await expect.poll(() => editorText('.graphiql-response .CodeMirror'), { timeout: 15_000 }).toMatch(/second of alice/);
    const response = JSON.parse((await editorText('.graphiql-response .CodeMirror'))!);
    expect(response).toEqual({ data: { note: [{ owner: 'alice', body: 'first of alice' }, { owner: 'alice', body: 'second of alice' }] } });
    await shot('graphiql-as-user');

    // The role sees no `id` (not among its columns): the validation error comes back.
    await runQuery('{ note { id } }');
    await expect.poll(() => editorText('.graphiql-response .CodeMirror')).toMatch(/field 'id' not found in type: 'note'/);

    // The schema explorer shows the role's schema: no mutations, no aggregates, no id.
    await page.getByRole('button', { name: /documentation explorer/i }).click();
    const docs = page.locator('.graphiql-doc-explorer');
    await docs.getByText('query_root').first().waitFor();
    expect(await docs.getByText('mutation_root').count()).toBe(0);
    expect(await docs.getByText('note_aggregate').count()).toBe(0);
    await shot('graphiql-docs');
  }, 60_000);

  it('runs a subscription as that role in GraphiQL: rows arrive as they are inserted', async () => {
    await runQuery('subscription Live {\n  note(order_by: {body: asc}) {\n    body\n  }\n}\n');
    const bodies = async () => {
      try {
        return JSON.parse((await editorText('.graphiql-response .CodeMirror')) ?? '').data.note.map((n: { body: string }) => n.body);
      } catch {
        return undefined;
      }
    };
    await expect.poll(bodies, { timeout: 15_000 }).toEqual(['first of alice', 'second of alice']);
    await server.runSql("insert into note (owner, body) values ('alice', 'live of alice'), ('bob', 'live of bob')");
    await expect.poll(bodies, { timeout: 15_000 }).toEqual(['first of alice', 'live of alice', 'second of alice']);
    await shot('graphiql-subscription');
    // Stopped by the button (the execute button stops a running subscription); the rows stay.
    await page.locator('.graphiql-execute-button').click();
    await server.runSql("delete from note where body like 'live of %'");
  }, 60_000);

  it('exports the metadata as a download holding the table and its permission', async () => {
    await page.getByTestId('nav-metadata').click();
    await page.getByTestId('consistent').waitFor();
    const download = page.waitForEvent('download');
    await page.getByTestId('export-metadata').click();
    const file = await (await download).path();
    const md = JSON.parse(readFileSync(file, 'utf8'));
    const tables = md.sources.find((s: { name: string }) => s.name === 'default').tables;
    expect(tables).toEqual([
      { table: { name: 'note', schema: 'public' }, select_permissions: [{ role: 'user', permission: { columns: ['owner', 'body'], filter: { owner: { _eq: 'X-Svc-User-Id' } }, limit: 10 } }] },
    ]);
    expect((await download).suggestedFilename()).toBe('svc_metadata.json');
    await shot('metadata-exported');
  }, 60_000);

  it('suggests relationships from foreign keys and creates them (a deep link to the tab)', async () => {
    await server.runSql(
      "create table author (id serial primary key, name text); create table article (id serial primary key, title text, author_id int references author (id)); insert into author (name) values ('ann'); insert into article (title, author_id) values ('hello', 1);",
    );
    for (const name of ['author', 'article']) expect((await server.metadata({ type: 'pg_track_table', args: { table: name } }, { 'x-svc-admin-secret': SECRET })).status).toBe(200);
    await page.goto(`${base}/console/data/default/public/article/relationships`);
    const suggestions = page.getByTestId('suggestions');
    await suggestions.getByText('author_id → public.author (id)').waitFor();
    expect(await page.getByTestId('suggest-name-0').inputValue()).toBe('author');
    await page.getByTestId('suggest-add-0').click();
    await page.getByTestId('relationships').getByText('author', { exact: true }).waitFor();
    await shot('relationships-object');
    await page.getByTestId('table-author').click();
    await page.getByTestId('tab-relationships').click();
    await suggestions.getByText('public.article (author_id) → id').waitFor();
    expect(await page.getByTestId('suggest-name-0').inputValue()).toBe('articles');
    await page.getByTestId('suggest-add-0').click();
    await page.getByTestId('relationships').getByText('articles', { exact: true }).waitFor();
    await shot('relationships-array');
    const tables = Object.fromEntries((await server.tables()).map((t: any) => [t.table.name, t]));
    expect(tables.article.object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }]);
    expect(tables.author.array_relationships).toEqual([{ name: 'articles', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } } }]);
    // Browsing goes through GraphQL, 10 rows a page.
    await server.runSql("insert into author (name) select 'a' || g from generate_series(1, 14) g");
    await page.getByTestId('tab-browse').click();
    const rows = page.getByTestId('browse').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(10);
    await page.getByTestId('browse-next').click();
    await expect.poll(() => rows.count()).toBe(5);
    expect(await rows.last().locator('td').allTextContents()).toEqual(['15', 'a14']);
    expect(await page.getByTestId('browse-next').isDisabled()).toBe(true);
  }, 60_000);

  it('lists event triggers with their events, cron triggers and REST endpoints (each on its page)', async () => {
    const admin = { 'x-svc-admin-secret': SECRET };
    for (const body of [
      { type: 'pg_create_event_trigger', args: { name: 'article_created', source: 'default', table: { schema: 'public', name: 'article' }, webhook: 'http://127.0.0.1:9/hook', insert: { columns: '*' } } },
      { type: 'create_cron_trigger', args: { name: 'nightly', webhook: 'http://127.0.0.1:9/cron', schedule: '0 3 * * *', include_in_metadata: true } },
      { type: 'create_query_collection', args: { name: 'c', definition: { queries: [{ name: 'q', query: 'query { article { title } }' }] } } },
      { type: 'create_rest_endpoint', args: { name: 'articles', url: 'articles', methods: ['GET'], definition: { query: { collection_name: 'c', query_name: 'q' } } } },
    ]) {
      const r = await server.metadata(body, admin);
      expect(r.status, r.text).toBe(200);
    }
    await server.runSql("insert into article (title, author_id) values ('second', 1)");
    await page.getByTestId('nav-events').click();
    await page.getByTestId('trigger-article_created').click();
    const logs = page.getByTestId('event-logs-article_created');
    await expect.poll(() => logs.locator('tbody tr').count()).toBe(1);
    expect(await logs.locator('tbody tr td').nth(1).textContent()).toBe('INSERT');
    await shot('events');
    await page.getByTestId('events-tab-cron').click();
    expect(await page.getByTestId('cron-triggers').locator('tbody td').first().textContent()).toBe('nightly');
    await page.getByTestId('nav-rest').click();
    await page.getByTestId('rest-item-articles').click();
    expect(await page.getByTestId('rest-route').textContent()).toBe('GET /api/rest/articles');
  }, 60_000);

  it('imports metadata, shows its inconsistent objects, drops them and reloads', async () => {
    const admin = { 'x-svc-admin-secret': SECRET };
    const md = (await server.metadata({ type: 'export_metadata', args: {} }, admin)).body;
    md.sources[0].tables.push({ table: { schema: 'public', name: 'ghost' } });
    await page.getByTestId('nav-metadata').click();
    await page.getByTestId('consistent').waitFor();
    // Refused as it is: the error says why.
    await page.getByTestId('import-file').setInputFiles({ name: 'md.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(md)) });
    await expect.poll(() => page.getByTestId('error').textContent()).toMatch(/inconsistent|ghost/i);
    // Allowed: imported, then listed as inconsistent.
    await page.getByTestId('allow-inconsistent').check();
    await page.getByTestId('import-file').setInputFiles({ name: 'md.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(md)) });
    await page.getByTestId('inconsistent').getByText('ghost').first().waitFor();
    await shot('metadata-inconsistent');
    await page.getByTestId('drop-inconsistent').click();
    await page.getByTestId('consistent').waitFor();
    expect((await server.tables()).map((t: any) => t.table.name).sort()).toEqual(['article', 'author', 'note']);
    const before = (await server.metadata({ type: 'export_metadata', version: 2, args: {} }, admin)).body.resource_version;
    await page.getByTestId('reload-metadata').click();
    await page.getByText('Metadata reloaded.').waitFor();
    expect((await server.metadata({ type: 'export_metadata', version: 2, args: {} }, admin)).body.resource_version).toBe(before + 1);
    await shot('metadata-reloaded');
  }, 60_000);

  it('loaded nothing from anywhere but the server, and nothing broke the content security policy', () => {
    const origin = new URL(base).origin;
    const elsewhere = requested.filter((u) => !u.startsWith(`${origin}/`) && !/^(data|blob):/.test(u));
    expect(elsewhere).toEqual([]);
    expect(requested.filter((u) => u.startsWith(`${origin}/console/assets/`)).length).toBeGreaterThan(0);
    // The page's own errors: only the refusals the tests asked for (401s of the wrong and the
    // stale secret, the 400 of the inconsistent import, the 404 of the /v2/query probe).
    expect(pageErrors.filter((e) => !/^Failed to load resource: the server responded with a status of 40[014] /.test(e))).toEqual([]);
  });
});

describe.skipIf(!hasChromium)('the console of a server without an admin secret', () => {
  let server: TestServer;
  let http: Listening;
  let browser: Browser;

  beforeAll(async () => {
    await ensureConsoleBuilt();
    server = await startServer();
    http = await listen(server);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await http?.close();
    await server?.stop();
  });

  it('takes an empty secret and works as the admin', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(`http://127.0.0.1:${http.port}/`);
    await page.getByTestId('login-form').waitFor();
    expect(new URL(page.url()).pathname).toBe('/console');
    await page.getByTestId('login').click();
    await page.getByTestId('nav-metadata').click();
    await page.getByTestId('consistent').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('svc-console-admin-secret'))).toBe('');
  }, 60_000);
});
