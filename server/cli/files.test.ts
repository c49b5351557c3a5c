/**
 * The project files without a server: actions.graphql/actions.yaml both ways, the metadata tree
 * both ways (functions, unknown sections, clashing file names), !include (cycles, line numbers),
 * and --from-hasura's renames.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { joinActions, splitActions } from './actions-graphql.js';
import { metadataToFiles, readMetadataDir, writeMetadataDir } from './metadata-dir.js';
import { describeRenames, fromHasura } from './from-hasura.js';
import { Origins, loadYamlFile } from './yaml-files.js';
import { readTree, tempDir, writeTree } from './test-support.js';

const ACTIONS = [
  {
    name: 'login',
    definition: {
      handler: '{{ACTIONS_BASE_URL}}/login',
      output_type: 'LoginResponse',
      arguments: [
        { name: 'username', type: 'String!' },
        { name: 'password', type: 'String!', description: 'in clear' },
      ],
      type: 'mutation',
      kind: 'synchronous',
      forward_client_headers: true,
    },
    permissions: [{ role: 'anonymous' }],
    comment: 'log in',
  },
  { name: 'me', definition: { handler: 'http://h/me', output_type: '[LoginResponse!]!', arguments: [], type: 'query' } },
];
const TYPES = {
  enums: [{ name: 'Color', values: [{ value: 'RED' }, { value: 'OLD', description: 'gone', is_deprecated: true }] }],
  input_objects: [{ name: 'Point', fields: [{ name: 'x', type: 'Int!' }] }],
  objects: [
    {
      name: 'LoginResponse',
      description: 'a token',
      fields: [{ name: 'accessToken', type: 'String!' }, { name: 'userId', type: 'Int' }],
      relationships: [{ name: 'user', type: 'object', remote_table: { schema: 'public', name: 'users' }, field_mapping: { userId: 'id' } }],
    },
  ],
  scalars: [{ name: 'Date', description: 'a day' }],
};

describe('actions.graphql and actions.yaml', () => {
  it('split as the Hasura CLI writes them, and joined back to the same metadata', () => {
    const parts = splitActions(ACTIONS, TYPES);
    expect(parts.graphql).toContain('type Mutation {\n  login(\n    username: String!\n    """in clear"""\n    password: String!\n  ): LoginResponse\n}\n');
    expect(parts.graphql).toContain('type Query {\n  me: [LoginResponse!]!\n}\n');
    expect(parts.graphql).toContain('"""a token"""\ntype LoginResponse {\n  accessToken: String!\n  userId: Int\n}\n');
    expect(parts.yaml.actions[0]).toEqual({
      name: 'login',
      definition: { handler: '{{ACTIONS_BASE_URL}}/login', kind: 'synchronous', forward_client_headers: true },
      permissions: [{ role: 'anonymous' }],
      comment: 'log in',
    });
    expect(parts.yaml.custom_types.objects).toEqual([{ name: 'LoginResponse', relationships: TYPES.objects[0]!.relationships }]);
    const back = joinActions(parts.graphql, parts.yaml);
    expect(back.actions).toEqual(ACTIONS.map((a) => ({ ...a, definition: expect.objectContaining(a.definition) })));
    expect(back.custom_types).toEqual(TYPES);
  });

  it('an action of actions.yaml not in actions.graphql, and a syntax error, are refused with the line', () => {
    expect(() => joinActions('', { actions: [{ name: 'x', definition: {} }] })).toThrow('action "x" of actions.yaml has no definition in actions.graphql');
    try {
      joinActions('type Mutation {\n  x: Int\n\n  y(: Int\n}\n', null);
      expect.unreachable();
    } catch (e) {
      expect((e as { line?: number }).line).toBe(4);
    }
  });

  it('a tree with actions round-trips through the directory', () => {
    const dir = tempDir();
    const doc = { version: 3, sources: [], actions: ACTIONS, custom_types: TYPES };
    writeMetadataDir(join(dir, 'metadata'), doc);
    const back = readMetadataDir(join(dir, 'metadata'), dir).doc;
    expect(back.actions.map((a: any) => a.name)).toEqual(['login', 'me']);
    expect(metadataToFiles(back)).toEqual(metadataToFiles(doc));
  });
});

describe('the metadata tree', () => {
  it('functions, sections this CLI has no name for, and clashing file names', () => {
    const doc = {
      version: 3,
      sources: [
        {
          name: 'default',
          kind: 'postgres',
          tables: [{ table: { schema: 'a_b', name: 'c' } }, { table: { schema: 'a', name: 'b_c' } }],
          functions: [{ function: { schema: 'public', name: 'search' }, configuration: { exposed_as: 'query' } }],
          configuration: { connection_info: { database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' } } },
        },
      ],
      future_section: { x: 1 },
    };
    const dir = tempDir();
    writeMetadataDir(join(dir, 'metadata'), doc);
    const tree = readTree(join(dir, 'metadata'));
    expect(tree['databases/default/tables/tables.yaml']).toBe('- "!include a_b_c.yaml"\n- "!include a_b_c_2.yaml"\n');
    expect(tree['databases/default/functions/functions.yaml']).toBe('- "!include public_search.yaml"\n');
    expect(tree['databases/databases.yaml']).toBe(
      [
        '- name: default',
        '  kind: postgres',
        '  configuration:',
        '    connection_info:',
        '      database_url:',
        '        from_env: SVC_GRAPHQL_DATABASE_URL',
        '  tables: "!include default/tables/tables.yaml"',
        '  functions: "!include default/functions/functions.yaml"',
        '',
      ].join('\n'),
    );
    expect(tree['future_section.yaml']).toBe('x: 1\n');
    // the same metadata, keys in the Hasura CLI's order (Note [A stable key order])
    expect(readMetadataDir(join(dir, 'metadata'), dir).doc).toEqual(doc);
    const shuffled = { ...doc, sources: [{ configuration: doc.sources[0]!.configuration, functions: doc.sources[0]!.functions, tables: doc.sources[0]!.tables, kind: 'postgres', name: 'default' }] };
    expect(metadataToFiles(shuffled)).toEqual(metadataToFiles(doc));
  });

  it('export replaces the tree, not what else is in the directory', () => {
    const dir = writeTree(tempDir(), {
      'config.yaml': 'version: 3\nmetadata_directory: .\n',
      'migrations/default/1_a/up.sql': 'select 1;\n',
      'databases/default/tables/public_gone.yaml': 'table: {name: gone}\n',
      'old_section.yaml': '[]\n',
      'README.md': 'kept\n',
    });
    writeMetadataDir(dir, { version: 3, sources: [] });
    const tree = readTree(dir);
    expect(tree['config.yaml']).toBe('version: 3\nmetadata_directory: .\n');
    expect(tree['migrations/default/1_a/up.sql']).toBe('select 1;\n');
    expect(tree['README.md']).toBe('kept\n');
    expect(tree).not.toHaveProperty(['databases/default/tables/public_gone.yaml']);
    expect(tree).not.toHaveProperty(['old_section.yaml']);
    expect(tree['version.yaml']).toBe('version: 3\n');
  });

  it('!include: a cycle, a missing file, and lines of values in included files', () => {
    const dir = writeTree(tempDir(), {
      'a.yaml': 'x: !include b.yaml\n',
      'b.yaml': '- "!include a.yaml"\n',
      'c.yaml': 'top:\n  inner: !include sub/d.yaml\n',
      'sub/d.yaml': '# a comment\nlist:\n  - one\n  - two: 2\n',
    });
    expect(() => loadYamlFile(join(dir, 'a.yaml'), dir, new Origins())).toThrow('!include cycle: a.yaml -> b.yaml -> a.yaml');
    const origins = new Origins();
    const c = loadYamlFile(join(dir, 'c.yaml'), dir, origins) as any;
    expect(c).toEqual({ top: { inner: { list: ['one', { two: 2 }] } } });
    expect(origins.locate(c, ['top', 'inner', 'list', 1, 'two'])).toEqual({ file: 'sub/d.yaml', line: 4 });
    expect(origins.locate(c, ['top'])).toEqual({ file: 'c.yaml', line: 1 });
    writeTree(dir, { 'e.yaml': 'a: 1\na: 2\n' });
    expect(() => loadYamlFile(join(dir, 'e.yaml'), dir, new Origins())).toThrow(/^e\.yaml:2: /);
  });
});

describe('--from-hasura', () => {
  it('renames session variables, environment references and hasura_fields, keeping their case, and says where', () => {
    const doc = {
      remote_schemas: [
        {
          name: 'rs',
          definition: { url_from_env: 'HASURA_GRAPHQL_RS_URL', headers: [{ name: 'X-Hasura-Role', value_from_env: 'HASURA_GRAPHQL_RS_ROLE' }] },
          permissions: [{ role: 'user', definition: { schema: 'type Query { me(id: Int @preset(value: "x-hasura-user-id")): Int }' } }],
        },
      ],
      sources: [
        {
          name: 'default',
          tables: [
            {
              table: 'a',
              remote_relationships: [{ name: 'r', definition: { hasura_fields: ['id'], remote_schema: 'rs' } }],
              insert_permissions: [{ role: 'user', permission: { set: { owner: 'X-HASURA-USER-ID' }, check: {} } }],
            },
          ],
        },
      ],
    };
    const r = fromHasura(doc);
    expect(r.doc).toEqual({
      remote_schemas: [
        {
          name: 'rs',
          definition: { url_from_env: 'SVC_GRAPHQL_RS_URL', headers: [{ name: 'X-Svc-Role', value_from_env: 'SVC_GRAPHQL_RS_ROLE' }] },
          permissions: [{ role: 'user', definition: { schema: 'type Query { me(id: Int @preset(value: "x-svc-user-id")): Int }' } }],
        },
      ],
      sources: [
        {
          name: 'default',
          tables: [
            {
              table: 'a',
              remote_relationships: [{ name: 'r', definition: { svc_fields: ['id'], remote_schema: 'rs' } }],
              insert_permissions: [{ role: 'user', permission: { set: { owner: 'X-SVC-USER-ID' }, check: {} } }],
            },
          ],
        },
      ],
    });
    expect(describeRenames(r.renames)).toEqual([
      '--from-hasura: renamed 6 occurrence(s) of Hasura names:',
      '  HASURA_GRAPHQL_RS_URL -> SVC_GRAPHQL_RS_URL',
      '  X-Hasura-Role -> X-Svc-Role',
      '  HASURA_GRAPHQL_RS_ROLE -> SVC_GRAPHQL_RS_ROLE',
      '  x-hasura-user-id -> x-svc-user-id',
      '  hasura_fields -> svc_fields',
      '  X-HASURA-USER-ID -> X-SVC-USER-ID',
    ]);
    expect(describeRenames([])).toEqual(['--from-hasura: nothing to rename']);
  });
});
