/**
 * The console's schema areas in Chromium: remote schemas (added, modified, reloaded, a role's
 * permission written as SDL with a session preset, replaced and removed, the remote removed),
 * actions and custom types (an action written as SDL with its types, modified, its roles, the
 * custom types editor, dropped), inherited roles (added and edited from the keyboard alone, then
 * dropped), and the GraphiQL query builder. Each step is checked through the metadata API, and
 * the remote and role permissions through GraphQL as the role.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, checkCleanRun, hasChromium, openConsole, unlabelled, warnSkipped, type Console } from './harness.js';

warnSkipped('test/console/schema.test.ts');

const REMOTE_SDL = `
  type Person { id: ID! name: String email: String }
  type Query { person(id: ID!): Person whoami(user_id: Int): Int }
  type Mutation { rename(id: ID!, name: String!): Person }
`;

/** A GraphQL server on loopback: the remote schema; it keeps the headers it was sent. */
async function remoteServer(seen: IncomingMessage['headers'][]): Promise<{ server: Server; url: string }> {
  const schema = buildSchema(REMOTE_SDL);
  const root = { person: ({ id }: { id: string }) => ({ id, name: `person ${id}`, email: `${id}@example.com` }), whoami: ({ user_id }: { user_id?: number }) => user_id ?? -1 };
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    seen.push(req.headers);
    const body = JSON.parse(text);
    const result = await graphql({ schema, source: body.query, variableValues: body.variables, rootValue: root });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

describe.skipIf(!hasChromium)('the schema areas of the console', () => {
  let c: Console;
  let remote: { server: Server; url: string };
  const seen: IncomingMessage['headers'][] = [];
  const md = () => c.exported();
  /** Presses Tab until the element with the test id has the focus: what a keyboard user does. */
  const tabTo = async (testid: string, max = 80) => {
    for (let i = 0; i < max; i++) {
      await c.page.keyboard.press('Tab');
      if ((await c.page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)) === testid) return;
    }
    throw new Error(`${testid} not reached with Tab`);
  };

  beforeAll(async () => {
    remote = await remoteServer(seen);
    c = await openConsole('schema', { config: { enableRemoteSchemaPermissions: true }, env: { ACTION_SECRET: 'shh' } });
    await c.server.runSql("create table item (id serial primary key, name text); insert into item (name) values ('one'), ('two'), ('three');");
    await c.api('pg_track_table', { table: 'item' });
    await c.api('pg_create_select_permission', { table: 'item', role: 'viewer', permission: { columns: ['id', 'name'], filter: {} } });
    await c.api('pg_create_select_permission', { table: 'item', role: 'editor', permission: { columns: ['id'], filter: { id: { _gt: 1 } } } });
  }, 240_000);
  afterAll(async () => {
    await c?.close();
    remote?.server.close();
  });

  it('adds a remote schema, refusing one it cannot reach', async () => {
    const { page } = c;
    await page.getByTestId('nav-remote-schemas').click();
    await page.getByTestId('remote-name').fill('people');
    await page.getByTestId('remote-url').fill('http://127.0.0.1:9/graphql');
    await page.getByTestId('remote-save').click();
    await page.getByTestId('remote-form').getByTestId('error').waitFor();
    expect((await md()).remote_schemas).toBeUndefined();
    await page.getByTestId('remote-url').fill(remote.url);
    await page.getByTestId('remote-headers-add').click();
    await page.getByTestId('remote-headers-name-0').fill('X-Token');
    await page.getByTestId('remote-headers-value-0').fill('abc');
    await page.getByTestId('remote-timeout').fill('10');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('remote-add');
    await page.getByTestId('remote-save').click();
    await page.waitForURL(/\/remote-schemas\/people$/);
    expect((await md()).remote_schemas).toEqual([{ name: 'people', definition: { url: remote.url, headers: [{ name: 'X-Token', value: 'abc' }], forward_client_headers: false, timeout_seconds: 10 } }]);
    expect(seen.at(-1)!['x-token']).toBe('abc');
  }, 60_000);

  it('modifies and reloads it', async () => {
    const { page } = c;
    await page.getByTestId('remote-forward').check();
    await page.getByTestId('remote-timeout').fill('20');
    await page.getByTestId('remote-comment').fill('the people service');
    await page.getByTestId('remote-save').click();
    await page.getByTestId('remote-form').getByTestId('ok').waitFor();
    expect((await md()).remote_schemas[0]).toEqual({
      name: 'people',
      definition: { url: remote.url, headers: [{ name: 'X-Token', value: 'abc' }], forward_client_headers: true, timeout_seconds: 20 },
      comment: 'the people service',
    });
    const before = seen.length;
    await page.getByTestId('remote-reload').click();
    await page.getByText('Reloaded: the remote schema was introspected again.').waitFor();
    expect(seen.length).toBeGreaterThan(before);
    await c.shot('remote-modified');
  }, 60_000);

  it("gives a role part of the remote schema, with a session preset, then changes and removes it", async () => {
    const { page } = c;
    await page.getByTestId('remote-perm-role').fill('viewer');
    await page.getByTestId('remote-perm-new').click();
    const sdl = page.getByTestId('remote-perm-sdl');
    // It starts as the remote's whole schema.
    await expect.poll(() => sdl.inputValue()).toContain('rename(id: ID!, name: String!): Person');
    await sdl.fill('type Query { nothere: String }');
    await page.getByTestId('remote-perm-save').click();
    await page.getByTestId('remote-perm-editor').getByTestId('error').getByText(/nothere/).waitFor();
    await sdl.fill('type Person { id: ID! name: String }\ntype Query {\n  person(id: ID!): Person\n  whoami(user_id: Int @preset(value: "x-svc-user-id")): Int\n}');
    await c.shot('remote-permission');
    await page.getByTestId('remote-perm-save').click();
    await page.getByTestId('remote-permissions').getByText('viewer').waitFor();
    expect((await md()).remote_schemas[0].permissions).toEqual([
      { role: 'viewer', definition: { schema: 'type Person { id: ID! name: String }\ntype Query {\n  person(id: ID!): Person\n  whoami(user_id: Int @preset(value: "x-svc-user-id")): Int\n}' } },
    ]);
    const viewer = { ...ADMIN, 'x-svc-role': 'viewer', 'x-svc-user-id': '7' };
    expect(await c.server.gql('{ whoami person(id: "1") { name } }', undefined, viewer)).toEqual({ data: { whoami: 7, person: { name: 'person 1' } } });
    expect((await c.server.gql('{ person(id: "1") { email } }', undefined, viewer)).errors[0].message).toMatch(/email/);

    // Changed: email allowed too (the permission is replaced).
    await page.getByTestId('remote-perm-edit-viewer').click();
    await sdl.fill('type Person { id: ID! name: String email: String }\ntype Query { person(id: ID!): Person }');
    await page.getByTestId('remote-perm-save').click();
    await expect.poll(async () => (await md()).remote_schemas[0].permissions[0].definition.schema).toContain('email: String');
    expect(await c.server.gql('{ person(id: "2") { email } }', undefined, viewer)).toEqual({ data: { person: { email: '2@example.com' } } });

    await page.getByTestId('remote-perm-drop-viewer').click();
    await expect.poll(async () => (await md()).remote_schemas[0].permissions).toBeUndefined();
    expect((await c.server.gql('{ person(id: "1") { name } }', undefined, viewer)).errors).toBeDefined();
  }, 60_000);

  it('removes the remote schema', async () => {
    const { page } = c;
    await page.getByTestId('remote-remove').click();
    await page.waitForURL(/\/remote-schemas$/);
    await expect.poll(async () => (await md()).remote_schemas).toBeUndefined();
    await expect.poll(() => page.getByTestId('remote-list').locator('li').count()).toBe(0);
  }, 60_000);

  it('creates an action from its SDL and its types', async () => {
    const { page } = c;
    await page.getByTestId('nav-actions').click();
    await page.getByTestId('action-sdl').fill('type Mutation {\n  "Logs a user in"\n  login(username: String!, password: String!): LoginResponse\n}');
    await page.getByTestId('action-types').fill('type LoginResponse {\n  accessToken: String!\n}');
    await page.getByTestId('action-handler').fill('http://127.0.0.1:9/login');
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('action-create');
    await page.getByTestId('action-save').click();
    await page.waitForURL(/\/actions\/login$/);
    const m = await md();
    expect(m.actions).toEqual([
      {
        name: 'login',
        definition: {
          handler: 'http://127.0.0.1:9/login',
          output_type: 'LoginResponse',
          arguments: [
            { name: 'username', type: 'String!' },
            { name: 'password', type: 'String!' },
          ],
          type: 'mutation',
          kind: 'synchronous',
        },
        comment: 'Logs a user in',
      },
    ]);
    expect(m.custom_types).toEqual({ objects: [{ name: 'LoginResponse', fields: [{ name: 'accessToken', type: 'String!' }] }] });
  }, 60_000);

  it('modifies the action and gives a role the right to run it', async () => {
    const { page } = c;
    // The edit page shows the action and the types it uses as they are.
    expect(await page.getByTestId('action-sdl').inputValue()).toBe('type Mutation {\n  "Logs a user in"\n  login(username: String!, password: String!): LoginResponse\n}\n');
    expect(await page.getByTestId('action-types').inputValue()).toBe('type LoginResponse {\n  accessToken: String!\n}\n');
    // A renamed action is refused (drop and create instead).
    await page.getByTestId('action-sdl').fill('type Mutation { signIn(username: String!): LoginResponse }');
    await page.getByTestId('action-save').click();
    await page.getByTestId('action-form').getByTestId('error').getByText('An action is not renamed').waitFor();
    await page.getByTestId('action-sdl').fill('type Mutation {\n  login(username: String!, password: String!, remember: Boolean): LoginResponse\n}');
    await page.getByTestId('action-types').fill('type LoginResponse {\n  accessToken: String!\n  expiresIn: Int\n}');
    await page.getByTestId('action-kind').selectOption('asynchronous');
    await page.getByTestId('action-timeout').fill('15');
    await page.getByTestId('action-headers-add').click();
    await page.getByTestId('action-headers-name-0').fill('X-Secret');
    await page.getByTestId('action-headers-kind-0').selectOption('env');
    await page.getByTestId('action-headers-value-0').fill('ACTION_SECRET');
    await page.getByTestId('action-save').click();
    await page.getByTestId('action-form').getByTestId('ok').waitFor();
    const m = await md();
    expect(m.actions[0]).toEqual({
      name: 'login',
      definition: {
        handler: 'http://127.0.0.1:9/login',
        output_type: 'LoginResponse',
        arguments: [
          { name: 'username', type: 'String!' },
          { name: 'password', type: 'String!' },
          { name: 'remember', type: 'Boolean' },
        ],
        headers: [{ name: 'X-Secret', value_from_env: 'ACTION_SECRET' }],
        type: 'mutation',
        kind: 'asynchronous',
        timeout: 15,
      },
    });
    expect(m.custom_types.objects).toEqual([{ name: 'LoginResponse', fields: [{ name: 'accessToken', type: 'String!' }, { name: 'expiresIn', type: 'Int' }] }]);

    await page.getByTestId('action-perm-role').fill('viewer');
    await page.getByTestId('action-perm-add').click();
    await page.getByTestId('action-permissions').getByText('viewer').waitFor();
    expect((await md()).actions[0].permissions).toEqual([{ role: 'viewer' }]);
    await c.shot('action-modified');
    await page.getByTestId('action-perm-drop-viewer').click();
    await expect.poll(async () => (await md()).actions[0].permissions).toBeUndefined();
  }, 60_000);

  it('edits all the custom types, refusing SDL that is not custom types', async () => {
    const { page } = c;
    await page.getByTestId('custom-types-link').click();
    const sdl = page.getByTestId('custom-types-sdl');
    expect(await sdl.inputValue()).toBe('type LoginResponse {\n  accessToken: String!\n  expiresIn: Int\n}\n');
    await sdl.fill('interface Nope { a: Int }');
    await page.getByTestId('custom-types-save').click();
    await page.getByTestId('error').getByText('only scalar, enum, input and type definitions').waitFor();
    await sdl.fill('type LoginResponse {\n  accessToken: String!\n  expiresIn: Int\n}\n\nenum Color { RED GREEN }\nscalar Email');
    await page.getByTestId('custom-types-save').click();
    await page.getByText('Custom types saved.').waitFor();
    expect((await md()).custom_types).toEqual({
      objects: [{ name: 'LoginResponse', fields: [{ name: 'accessToken', type: 'String!' }, { name: 'expiresIn', type: 'Int' }] }],
      scalars: [{ name: 'Email' }],
      enums: [{ name: 'Color', values: [{ value: 'RED' }, { value: 'GREEN' }] }],
    });
    await c.shot('custom-types');
  }, 60_000);

  it('drops the action', async () => {
    const { page } = c;
    await page.getByTestId('action-item-login').click();
    await page.getByTestId('action-drop').click();
    await page.waitForURL(/\/actions$/);
    await expect.poll(async () => (await md()).actions).toBeUndefined();
  }, 60_000);

  it('adds and edits an inherited role with the keyboard alone, then drops it', async () => {
    const { page } = c;
    await c.go('/graphiql');
    // From the top of the page: Tab to the Roles link, Enter.
    await tabTo('nav-roles');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/roles$/);
    await tabTo('inherited-name');
    await page.keyboard.type('staff');
    await tabTo('inherited-set-viewer');
    await page.keyboard.press('Space');
    await tabTo('inherited-set-editor');
    await page.keyboard.press('Space');
    await tabTo('inherited-save');
    await page.keyboard.press('Enter');
    await page.getByTestId('inherited-roles').getByText('staff').waitFor();
    expect((await md()).inherited_roles).toEqual([{ role_name: 'staff', role_set: ['viewer', 'editor'] }]);
    // The inherited role reads what viewer and editor may (all rows; name from viewer).
    expect(await c.server.gql('{ item(order_by: {id: asc}, limit: 1) { name } }', undefined, { ...ADMIN, 'x-svc-role': 'staff' })).toEqual({ data: { item: [{ name: 'one' }] } });
    await c.shot('inherited-added');

    await tabTo('inherited-edit-staff');
    await page.keyboard.press('Enter');
    await tabTo('inherited-set-editor');
    await page.keyboard.press('Space');
    await tabTo('inherited-comment');
    await page.keyboard.type('read only');
    await tabTo('inherited-save');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await md()).inherited_roles).toEqual([{ role_name: 'staff', role_set: ['viewer'], comment: 'read only' }]);
    expect(await unlabelled(page)).toEqual([]);
    await c.shot('inherited-edited');

    await page.getByTestId('inherited-drop-staff').click();
    await expect.poll(async () => (await md()).inherited_roles).toBeUndefined();
  }, 60_000);

  it('builds a query in the GraphiQL explorer by clicking fields and typing arguments', async () => {
    const { page } = c;
    await page.getByTestId('nav-api').click();
    await page.locator('.graphiql-container').waitFor();
    const editorText = () =>
      page.evaluate(() => ([...document.querySelectorAll('.graphiql-query-editor .CodeMirror')].find((e) => !e.closest('.hidden')) as any).CodeMirror.getValue() as string);
    const setEditor = (q: string) =>
      page.evaluate((text) => ([...document.querySelectorAll('.graphiql-query-editor .CodeMirror')].find((e) => !e.closest('.hidden')) as any).CodeMirror.setValue(text), q);
    await setEditor('');
    await page.getByRole('button', { name: 'Show Explorer' }).click();
    const explorer = page.getByTestId('explorer');
    await explorer.getByTestId('explorer-field-item').check();
    await expect.poll(editorText).toBe('query MyQuery {\n  item {\n    id\n  }\n}');
    await explorer.getByTestId('explorer-field-item.name').check();
    await explorer.getByTestId('explorer-arg-item.limit').fill('2');
    await expect.poll(editorText).toBe('query MyQuery {\n  item(limit: 2) {\n    id\n    name\n  }\n}');
    await explorer.getByTestId('explorer-field-item.id').uncheck();
    await expect.poll(editorText).toBe('query MyQuery {\n  item(limit: 2) {\n    name\n  }\n}');
    await c.shot('explorer');
    await page.waitForTimeout(400);
    await page.locator('.graphiql-execute-button').click();
    const response = () => page.evaluate(() => ([...document.querySelectorAll('.graphiql-response .CodeMirror')].find((e) => !e.closest('.hidden')) as any)?.CodeMirror.getValue() as string);
    await expect.poll(async () => JSON.parse((await response()) || '{}')).toEqual({ data: { item: [{ name: 'one' }, { name: 'two' }] } });

    // Typed in the editor: the tree follows.
    await setEditor('{ item_by_pk(id: 3) { name } }');
    await expect.poll(() => explorer.getByTestId('explorer-field-item_by_pk').isChecked()).toBe(true);
    expect(await explorer.getByTestId('explorer-field-item').isChecked()).toBe(false);
    expect(await explorer.getByTestId('explorer-arg-item_by_pk.id').inputValue()).toBe('3');
    expect(await explorer.getByTestId('explorer-field-item_by_pk.name').isChecked()).toBe(true);
    // A mutation, from the operation list.
    await explorer.getByTestId('explorer-kind').selectOption('mutation');
    await explorer.getByTestId('explorer-filter').fill('delete_item_by');
    await explorer.getByTestId('explorer-field-delete_item_by_pk').check();
    await expect.poll(editorText).toBe('{\n  item_by_pk(id: 3) {\n    name\n  }\n}\n\nmutation MyMutation {\n  delete_item_by_pk {\n    id\n  }\n}');
    await c.shot('explorer-mutation');
  }, 60_000);

  it('asked nothing of another origin and logged no unexpected error', () => {
    checkCleanRun(c);
  });
});
