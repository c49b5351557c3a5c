/**
 * `svc metadata ...` against a real server listening on a port: export in the Hasura CLI's
 * directory format, apply (directory, !include in both spellings, a single file, two databases),
 * round trips, diff, errors naming file and line, --from-hasura, reload and inconsistencies.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { createDatabase, startServer, useServer, type TestServer } from '../../test/helpers.js';
import { listen, useListening } from '../../test/ws-helpers.js';
import { readTree, svc, tempDir, writeTree } from './test-support.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, author_id int not null references author(id));
insert into author (name) values ('ann'), ('bo');
insert into article (title, author_id) values ('a1', 1), ('b1', 2);
create function search_authors(q text) returns setof author language sql stable as $$ select * from author where name ilike q $$;
`;

const http = (port: number) => `http://127.0.0.1:${port}`;

async function ok(s: TestServer, body: unknown) {
  const r = await s.metadata(body);
  if (r.status !== 200) throw new Error(`${JSON.stringify(body)}: ${r.status} ${r.text}`);
  return r.body;
}

/** A metadata state touching most sections. */
async function populate(s: TestServer) {
  await ok(s, {
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: { schema: 'public', name: 'author' } } },
      { type: 'pg_track_table', args: { table: { schema: 'public', name: 'article' } } },
      { type: 'pg_track_function', args: { function: { schema: 'public', name: 'search_authors' } } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      {
        type: 'pg_create_array_relationship',
        args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } },
      },
      {
        type: 'pg_create_select_permission',
        args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } } } },
      },
      {
        type: 'pg_create_insert_permission',
        args: { table: 'article', role: 'user', permission: { columns: ['title'], check: {}, set: { author_id: 'x-svc-user-id' } } },
      },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'editor', permission: { columns: ['id'], filter: {} } } },
      {
        type: 'create_query_collection',
        args: { name: 'allowed', definition: { queries: [{ name: 'authors', query: 'query authors {\n  author {\n    id\n    name\n  }\n}' }] } },
      },
      { type: 'add_collection_to_allowlist', args: { collection: 'allowed' } },
      { type: 'create_rest_endpoint', args: { name: 'authors', url: 'authors', methods: ['GET'], definition: { query: { collection_name: 'allowed', query_name: 'authors' } } } },
      { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } },
      { type: 'set_api_limits', args: { depth_limit: { global: 10, per_role: { user: 5 } }, node_limit: { global: 100 } } },
      { type: 'set_graphql_schema_introspection_options', args: { disabled_for_roles: ['user'] } },
      {
        type: 'create_cron_trigger',
        args: { name: 'nightly', webhook: 'http://127.0.0.1:9/nightly', schedule: '0 3 * * *', payload: { job: 'cleanup' }, include_in_metadata: true },
      },
    ],
  });
}

describe('svc metadata export / apply', () => {
  const s = useServer(SEED);
  const port = useListening(s);
  beforeAll(() => populate(s));

  it('exports the Hasura CLI directory format, and export -> apply -> export gives the same tree', async () => {
    const dir = tempDir();
    const e1 = await svc(http(port.port), dir, ['metadata', 'export']);
    expect(e1.err).toBe('');
    expect(e1.code).toBe(0);
    expect(e1.out).toMatch(/exported metadata \(resource_version \d+\) to metadata: \d+ files/);
    const tree = readTree(join(dir, 'metadata'));
    expect(tree['version.yaml']).toBe('version: 3\n');
    expect(tree['databases/databases.yaml']).toContain('tables: "!include default/tables/tables.yaml"');
    expect(tree['databases/default/tables/tables.yaml']).toBe('- "!include public_author.yaml"\n- "!include public_article.yaml"\n');
    expect(tree['databases/default/tables/public_article.yaml']).toMatch(/^table:\n  (name: article\n  schema: public|schema: public\n  name: article)\n/);
    expect(tree['databases/default/tables/public_article.yaml']).toContain('select_permissions:\n  - role: user\n');
    expect(tree['databases/databases.yaml']).toContain('functions: "!include default/functions/functions.yaml"');
    expect(tree['databases/default/functions/functions.yaml']).toBe('- "!include public_search_authors.yaml"\n');
    expect(tree['databases/default/functions/public_search_authors.yaml']).toMatch(/^function:\n/);
    for (const f of ['actions.graphql', 'actions.yaml', 'remote_schemas.yaml', 'cron_triggers.yaml', 'query_collections.yaml', 'allow_list.yaml', 'rest_endpoints.yaml', 'inherited_roles.yaml', 'api_limits.yaml', 'graphql_schema_introspection.yaml']) {
      expect(tree, f).toHaveProperty([f]);
    }
    expect(tree['cron_triggers.yaml']).toContain('name: nightly');
    expect(tree['query_collections.yaml']).toContain('query: |-\n');
    expect(tree['remote_schemas.yaml']).toBe('[]\n');
    expect(tree['graphql_schema_introspection.yaml']).toBe('disabled_for_roles:\n  - user\n');
    expect(tree['api_limits.yaml']).toContain('depth_limit:\n');
    expect(tree['inherited_roles.yaml']).toContain('role_name: both');
    expect(tree['rest_endpoints.yaml']).toContain('name: authors');
    expect(tree['allow_list.yaml']).toContain('collection: allowed');

    const a = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(a.err).toBe('');
    expect(a.out).toBe('applied metadata: metadata is consistent');
    const e2 = await svc(http(port.port), dir, ['metadata', 'export']);
    expect(e2.code).toBe(0);
    expect(readTree(join(dir, 'metadata'))).toEqual(tree);
    expect((await svc(http(port.port), dir, ['metadata', 'diff'])).out).toBe('no differences');

    // The tree on a fresh server: the same tree back, and the permissions work there.
    const other = await startServer();
    const l = await listen(other);
    try {
      const b = await svc(http(l.port), dir, ['metadata', 'apply']);
      expect(b.err).toContain('');
      // the fresh database has no tables yet: inconsistent, refused, naming the files
      expect(b.code).toBe(1);
      expect(b.err).toMatch(/metadata\/databases\/default\/tables\/public_a(rticle|uthor)\.yaml:1: /);
      await other.runSql(SEED);
      const c = await svc(http(l.port), dir, ['metadata', 'apply']);
      expect(c.err).toBe('');
      const copy = tempDir();
      expect((await svc(http(l.port), copy, ['metadata', 'export'])).code).toBe(0);
      expect(readTree(join(copy, 'metadata'))).toEqual(tree);
      const r = await other.gql('{ article { id title } }', undefined, { 'x-svc-role': 'user', 'x-svc-user-id': '2' });
      expect(r).toEqual({ data: { article: [{ id: 2, title: 'b1' }] } });
    } finally {
      await l.close();
      await other.stop();
    }
  });

  it('diff shows what apply would change, file by file and path by path', async () => {
    const dir = tempDir();
    await svc(http(port.port), dir, ['metadata', 'export']);
    const f = join(dir, 'metadata/databases/default/tables/public_author.yaml');
    writeFileSync(f, readFileSync(f, 'utf8').replace("columns:\n        - id\n        - name", 'columns:\n        - id'));
    const d = await svc(http(port.port), dir, ['metadata', 'diff']);
    expect(d.code).toBe(0);
    expect(d.out).toBe('~ databases/default/tables/public_author.yaml\n  - select_permissions[0].permission.columns[1]: "name"');
    const dry = await svc(http(port.port), dir, ['metadata', 'apply', '--dry-run']);
    expect(dry.out).toBe(d.out);
    expect((await svc(http(port.port), dir, ['metadata', 'apply'])).code).toBe(0);
    expect((await svc(http(port.port), dir, ['metadata', 'diff'])).out).toBe('no differences');
  });

  it('errors name the file and line: YAML syntax, a bad !include, an engine error inside an included file', async () => {
    const dir = tempDir();
    await svc(http(port.port), dir, ['metadata', 'export']);
    const f = join(dir, 'metadata/databases/default/tables/public_author.yaml');
    const good = readFileSync(f, 'utf8');
    writeFileSync(f, good.replace('table:\n', 'table:\n  name: [unclosed\n'));
    let r = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: metadata\/databases\/default\/tables\/public_author\.yaml:\d+: /);

    writeFileSync(join(dir, 'metadata/databases/default/tables/tables.yaml'), '- "!include public_article.yaml"\n- "!include public_nope.yaml"\n');
    r = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(r.err).toBe('error: cannot read metadata/databases/default/tables/public_nope.yaml: ENOENT');

    writeFileSync(join(dir, 'metadata/databases/default/tables/tables.yaml'), '- "!include public_author.yaml"\n- "!include public_article.yaml"\n');
    // a permission on a column that does not exist, on line 12 of the table's file
    writeFileSync(f, good.replace(/columns:\n(\s+)- id\n/, (m, ind) => `${m}${ind}- no_such_column\n`));
    expect(readFileSync(f, 'utf8')).toContain('no_such_column');
    const line = readFileSync(f, 'utf8').split('\n').findIndex((l) => l.includes('select_permissions')) + 1;
    r = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('metadata/databases/default/tables/public_author.yaml:');
    expect(r.err).toContain('no_such_column');
    // the line of the permission: the one after `select_permissions:`
    expect(r.err).toContain(`  metadata/databases/default/tables/public_author.yaml:${line + 1}: select_permission user in table author in source default: `);
    // nothing was changed
    expect((await svc(http(port.port), dir, ['metadata', 'inconsistency', 'list'])).out).toBe('metadata is consistent');
  });
});

describe('svc metadata apply: hand-written Hasura projects', () => {
  const s = useServer(SEED, { env: {} });
  const port = useListening(s);

  it('the directory format with the !include tag, a single metadata.json, and --from-hasura', async () => {
    const dir = writeTree(tempDir(), {
      'config.yaml': 'version: 3\nendpoint: http://127.0.0.1:1\nmetadata_directory: metadata\n',
      'metadata/version.yaml': 'version: 3\n',
      'metadata/databases/databases.yaml': [
        '- name: default',
        '  kind: postgres',
        '  configuration:',
        '    connection_info:',
        '      database_url:',
        '        from_env: HASURA_GRAPHQL_DATABASE_URL',
        '  tables: !include default/tables/tables.yaml',
        '',
      ].join('\n'),
      'metadata/databases/default/tables/tables.yaml': '- !include public_author.yaml\n- "!include public_article.yaml"\n',
      'metadata/databases/default/tables/public_author.yaml': 'table:\n  schema: public\n  name: author\n',
      'metadata/databases/default/tables/public_article.yaml': [
        'table:',
        '  schema: public',
        '  name: article',
        'select_permissions:',
        '  - role: user',
        '    permission:',
        '      columns: [id, title]',
        '      filter:',
        '        author_id:',
        '          _eq: X-Hasura-User-Id',
        '',
      ].join('\n'),
      'metadata/remote_schemas.yaml': '[]\n',
      'metadata/actions.graphql': '',
      'metadata/actions.yaml': 'actions: []\ncustom_types:\n  enums: []\n  input_objects: []\n  objects: []\n  scalars: []\n',
    });
    s.env.SVC_GRAPHQL_DATABASE_URL = s.url;
    // the endpoint of the command line wins over config.yaml's
    const r = await svc('http://127.0.0.1:1', dir, ['--endpoint', http(port.port), 'metadata', 'apply', '--from-hasura']);
    expect(r.err).toBe('');
    expect(r.out).toBe(
      [
        '--from-hasura: renamed 2 occurrence(s) of Hasura names:',
        '  HASURA_GRAPHQL_DATABASE_URL -> SVC_GRAPHQL_DATABASE_URL  [metadata/databases/databases.yaml:6]',
        '  X-Hasura-User-Id -> X-Svc-User-Id  [metadata/databases/default/tables/public_article.yaml:10]',
        'applied metadata: metadata is consistent',
      ].join('\n'),
    );
    const g = await s.gql('{ article { id title } }', undefined, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
    expect(g).toEqual({ data: { article: [{ id: 1, title: 'a1' }] } });

    // Without --from-hasura the env reference is Hasura's, which this server does not have.
    const plain = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(plain.code).toBe(1);
    expect(plain.err.split('\n')[0]).toBe(
      "note: the metadata uses Hasura's names (HASURA_GRAPHQL_DATABASE_URL at metadata/databases/databases.yaml:6 and 1 more); --from-hasura reads them as this engine's",
    );
    expect(plain.err).toContain('HASURA_GRAPHQL_DATABASE_URL');

    // The same metadata as one JSON document (as `hasura metadata export -o json` writes it).
    const exported = await svc(http(port.port), dir, ['metadata', 'export', '-o', 'json']);
    const single = writeTree(tempDir(), { 'metadata.json': exported.out });
    const j = await svc(http(port.port), single, ['metadata', 'apply']);
    expect(j.out).toBe('applied metadata.json: metadata is consistent');
    // an error in a single JSON document names its line too
    const broken = exported.out.replace('"name": "article"', '"name": "no_such_table"');
    writeTree(single, { 'metadata.json': broken });
    const bad = await svc(http(port.port), single, ['metadata', 'apply']);
    expect(bad.code).toBe(1);
    // the line of the table's object (the `{` that opens it)
    const lines = broken.split('\n');
    const nameIdx = lines.findIndex((l) => l.includes('no_such_table'));
    const open = nameIdx - [...lines.slice(0, nameIdx)].reverse().findIndex((l) => l.trim() === '{');
    expect(bad.err).toContain(`  metadata.json:${open}: table no_such_table in source default: `);
    const y = await svc(http(port.port), single, ['metadata', 'apply', '--file', join(dir, 'metadata/databases/../../metadata.json')]);
    expect(y.err).toMatch(/cannot read .*metadata\.json: ENOENT/);
  });

  it('two databases, one from the environment of the server', async () => {
    const second = await createDatabase('svc_cli_two');
    const two = await startServer({ database: second });
    await two.runSql('create table note (id serial primary key, body text)');
    await two.stop();
    s.env.NOTES_DB = second.url;
    const dir = writeTree(tempDir(), {
      'metadata/version.yaml': 'version: 3\n',
      'metadata/databases/databases.yaml': [
        '- name: default',
        '  kind: postgres',
        '  configuration:',
        '    connection_info:',
        '      database_url:',
        '        from_env: SVC_GRAPHQL_DATABASE_URL',
        '  tables: "!include default/tables/tables.yaml"',
        '- name: notes',
        '  kind: postgres',
        '  configuration:',
        '    connection_info:',
        '      database_url:',
        '        from_env: NOTES_DB',
        '  tables: "!include notes/tables/tables.yaml"',
        '',
      ].join('\n'),
      'metadata/databases/default/tables/tables.yaml': '- "!include public_author.yaml"\n',
      'metadata/databases/default/tables/public_author.yaml': 'table:\n  schema: public\n  name: author\n',
      'metadata/databases/notes/tables/tables.yaml': '- "!include public_note.yaml"\n',
      'metadata/databases/notes/tables/public_note.yaml': 'table:\n  schema: public\n  name: note\n',
    });
    const r = await svc(http(port.port), dir, ['metadata', 'apply']);
    expect(r.err).toBe('');
    const out = tempDir();
    await svc(http(port.port), out, ['metadata', 'export']);
    const tree = readTree(join(out, 'metadata'));
    expect(tree['databases/notes/tables/tables.yaml']).toBe('- "!include public_note.yaml"\n');
    expect(tree['databases/databases.yaml']).toContain('tables: "!include notes/tables/tables.yaml"');
    // round trip of this tree too
    await svc(http(port.port), out, ['metadata', 'apply']);
    const again = tempDir();
    await svc(http(port.port), again, ['metadata', 'export']);
    expect(readTree(join(again, 'metadata'))).toEqual(tree);
    expect(existsSync(join(again, 'metadata/databases/notes/tables/public_note.yaml'))).toBe(true);

    // migrations of both databases, each recorded in its own database
    writeTree(dir, {
      'migrations/default/1_a/up.sql': 'alter table author add column nick text;\n',
      'migrations/notes/1_a/up.sql': 'alter table note add column tag text;\n',
      'migrations/notes/2_b/up.sql': 'create table label (id int);\n',
    });
    const m = await svc(http(port.port), dir, ['migrate', 'apply', '--all-databases']);
    expect(m.err).toBe('');
    expect(m.out).toBe('default: applied 1_a\nnotes: applied 1_a\nnotes: applied 2_b');
    const st = await svc(http(port.port), dir, ['migrate', 'status', '--database-name', 'notes']);
    expect(st.out.split('\n').slice(1)).toEqual(['1\ta\tPresent\tPresent', '2\tb\tPresent\tPresent']);
    const notes = postgres(second.url, { max: 1, onnotice: () => {} });
    try {
      expect((await notes`select version::int as v from svc_catalog.cli_migrations order by 1`).map((r) => r.v)).toEqual([1, 2]);
    } finally {
      await notes.end();
    }
    expect((await s.sql`select version::int as v from svc_catalog.cli_migrations`).map((r) => r.v)).toEqual([1]);
  });

  it('reload and inconsistency list / drop', async () => {
    const dir = tempDir();
    expect((await svc(http(port.port), dir, ['metadata', 'reload'])).out).toBe('metadata reloaded');
    await s.runSql('create table gone (id int primary key)');
    await ok(s, { type: 'pg_track_table', args: { table: 'gone' } });
    await s.sql.unsafe('drop table gone'); // behind the engine's back
    await svc(http(port.port), dir, ['metadata', 'reload']);
    const l = await svc(http(port.port), dir, ['metadata', 'ic', 'list']);
    expect(l.code).toBe(2);
    expect(l.out).toBe('1 inconsistent object(s):\n  table gone in source default: Inconsistent object: no such table/view exists in source: "gone"');
    const d = await svc(http(port.port), dir, ['metadata', 'inconsistency', 'drop']);
    expect(d.out).toBe('inconsistent objects dropped');
    expect((await svc(http(port.port), dir, ['metadata', 'inconsistency', 'list'])).out).toBe('metadata is consistent');
  });

  it('the admin secret: --admin-secret over SVC_GRAPHQL_ADMIN_SECRET over config.yaml', async () => {
    const locked = await startServer({ config: { adminSecret: 'right' } });
    const l = await listen(locked);
    try {
      const dir = writeTree(tempDir(), { 'config.yaml': 'version: 3\nadmin_secret: right\n' });
      expect((await svc(http(l.port), dir, ['metadata', 'ic', 'list'])).out).toBe('metadata is consistent');
      const wrongEnv = await svc(http(l.port), dir, ['metadata', 'ic', 'list'], { SVC_GRAPHQL_ADMIN_SECRET: 'wrong' });
      expect(wrongEnv.code).toBe(1);
      expect(wrongEnv.err).toMatch(/^error: .*\(access-denied/);
      const flag = await svc(http(l.port), dir, ['metadata', 'ic', 'list', '--admin-secret', 'right'], { SVC_GRAPHQL_ADMIN_SECRET: 'wrong' });
      expect(flag.out).toBe('metadata is consistent');
      const none = await svc(http(l.port), tempDir(), ['metadata', 'export']);
      expect(none.code).toBe(1);
    } finally {
      await l.close();
      await locked.stop();
    }
  });

  it('cannot reach the engine: says so', async () => {
    const r = await svc('http://127.0.0.1:2', tempDir(), ['metadata', 'reload']);
    expect(r.code).toBe(1);
    expect(r.err).toBe('error: cannot reach the engine at http://127.0.0.1:2: ECONNREFUSED');
  });
});
