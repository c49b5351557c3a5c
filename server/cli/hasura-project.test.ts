/**
 * A project as `hasura init` and `hasura metadata export` write it (Hasura v2.x, config v3),
 * applied as it is with --from-hasura: migrations, metadata, seeds; then the same tree through
 * this engine's export and back.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { readTree, svc, tempDir, writeTree } from './test-support.js';

const HASURA_PROJECT: Record<string, string> = {
  'config.yaml': [
    'version: 3',
    'endpoint: http://localhost:8080',
    'admin_secret: myadminsecretkey',
    'metadata_directory: metadata',
    'actions:',
    '  kind: synchronous',
    '  handler_webhook_baseurl: http://localhost:3000',
    '',
  ].join('\n'),
  'migrations/default/1700000000000_init/up.sql': [
    'SET check_function_bodies = false;',
    'CREATE TABLE "public"."users" ("id" serial NOT NULL, "name" text NOT NULL, PRIMARY KEY ("id") );',
    'CREATE TABLE "public"."todos" ("id" serial NOT NULL, "title" text NOT NULL, "user_id" integer NOT NULL, "done" boolean NOT NULL DEFAULT false, PRIMARY KEY ("id") , FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON UPDATE restrict ON DELETE cascade);',
    '',
  ].join('\n'),
  'migrations/default/1700000000000_init/down.sql': 'DROP TABLE "public"."todos";\nDROP TABLE "public"."users";\n',
  'seeds/default/1700000000001_users.sql': `INSERT INTO public.users (id, name) VALUES (1, 'ann'), (2, 'bo');\nINSERT INTO public.todos (title, user_id) VALUES ('a', 1), ('b', 2), ('c', 2);\n`,
  'metadata/version.yaml': 'version: 3\n',
  'metadata/databases/databases.yaml': [
    '- name: default',
    '  kind: postgres',
    '  configuration:',
    '    connection_info:',
    '      database_url:',
    '        from_env: HASURA_GRAPHQL_DATABASE_URL',
    '      isolation_level: read-committed',
    '      pool_settings:',
    '        connection_lifetime: 600',
    '        idle_timeout: 180',
    '        max_connections: 50',
    '        retries: 1',
    '      use_prepared_statements: true',
    '  tables: "!include default/tables/tables.yaml"',
    '  functions: "!include default/functions/functions.yaml"',
    '',
  ].join('\n'),
  'metadata/databases/default/tables/tables.yaml': '- "!include public_todos.yaml"\n- "!include public_users.yaml"\n',
  'metadata/databases/default/functions/functions.yaml': '[]\n',
  'metadata/databases/default/tables/public_users.yaml': [
    'table:',
    '  name: users',
    '  schema: public',
    'array_relationships:',
    '  - name: todos',
    '    using:',
    '      foreign_key_constraint_on:',
    '        column: user_id',
    '        table:',
    '          name: todos',
    '          schema: public',
    'select_permissions:',
    '  - role: user',
    '    permission:',
    '      columns:',
    '        - id',
    '        - name',
    '      filter:',
    '        id:',
    '          _eq: X-Hasura-User-Id',
    '',
  ].join('\n'),
  'metadata/databases/default/tables/public_todos.yaml': [
    'table:',
    '  name: todos',
    '  schema: public',
    'object_relationships:',
    '  - name: user',
    '    using:',
    '      foreign_key_constraint_on: user_id',
    'insert_permissions:',
    '  - role: user',
    '    permission:',
    '      check: {}',
    '      set:',
    '        user_id: x-hasura-User-Id',
    '      columns:',
    '        - title',
    '    comment: ""',
    'select_permissions:',
    '  - role: user',
    '    permission:',
    '      columns:',
    '        - done',
    '        - id',
    '        - title',
    '      filter:',
    '        user:',
    '          id:',
    '            _eq: X-Hasura-User-Id',
    '      allow_aggregations: true',
    '    comment: ""',
    'update_permissions:',
    '  - role: user',
    '    permission:',
    '      columns:',
    '        - done',
    '      filter:',
    '        user_id:',
    '          _eq: X-Hasura-User-Id',
    '      check: null',
    '    comment: ""',
    '',
  ].join('\n'),
  'metadata/actions.graphql': '',
  'metadata/actions.yaml': 'actions: []\ncustom_types:\n  enums: []\n  input_objects: []\n  objects: []\n  scalars: []\n',
  'metadata/allow_list.yaml': '[]\n',
  'metadata/api_limits.yaml': '{}\n',
  'metadata/backend_configs.yaml': '{}\n',
  'metadata/cron_triggers.yaml': '[]\n',
  'metadata/graphql_schema_introspection.yaml': '{}\n',
  'metadata/inherited_roles.yaml': '[]\n',
  'metadata/metrics_config.yaml': '{}\n',
  'metadata/network.yaml': '{}\n',
  'metadata/opentelemetry.yaml': '{}\n',
  'metadata/query_collections.yaml': '[]\n',
  'metadata/remote_schemas.yaml': '[]\n',
  'metadata/rest_endpoints.yaml': '[]\n',
};

describe('a project written by the Hasura CLI', () => {
  const s = useServer();
  const port = useListening(s);
  const url = (p: number) => `http://127.0.0.1:${p}`;

  it('migrate apply, metadata apply, seed apply with --from-hasura; then a stable round trip', async () => {
    const dir = writeTree(tempDir(), HASURA_PROJECT);
    // config.yaml's endpoint and admin secret are Hasura's: the command line's endpoint wins,
    // and this server has no secret (the header is then ignored)
    s.env.SVC_GRAPHQL_DATABASE_URL = s.url;
    const m = await svc(url(port.port), dir, ['--endpoint', url(port.port), 'migrate', 'apply', '--from-hasura']);
    expect(m.err).toBe('');
    expect(m.out).toBe('default: applied 1700000000000_init');
    const a = await svc(url(port.port), dir, ['--endpoint', url(port.port), '--from-hasura', 'metadata', 'apply']);
    expect(a.err).toBe('');
    expect(a.out.split('\n')).toEqual([
      '--from-hasura: renamed 5 occurrence(s) of Hasura names:',
      '  HASURA_GRAPHQL_DATABASE_URL -> SVC_GRAPHQL_DATABASE_URL  [metadata/databases/databases.yaml:6]',
      '  x-hasura-User-Id -> x-svc-User-Id  [metadata/databases/default/tables/public_todos.yaml:13]',
      '  X-Hasura-User-Id -> X-Svc-User-Id (3 times)  [metadata/databases/default/tables/public_todos.yaml:27]',
      'applied metadata: metadata is consistent',
    ]);
    const seeded = await svc(url(port.port), dir, ['--endpoint', url(port.port), 'seed', 'apply']);
    expect(seeded.out).toBe('default: applied seed 1700000000001_users.sql');

    const user2 = { 'x-svc-role': 'user', 'x-svc-user-id': '2' };
    expect(await s.gql('{ todos(order_by: {id: asc}) { title user { name } } }', undefined, user2)).toEqual({
      data: { todos: [{ title: 'b', user: { name: 'bo' } }, { title: 'c', user: { name: 'bo' } }] },
    });
    expect(await s.gql('mutation { insert_todos_one(object: {title: "d"}) { title } }', undefined, user2)).toEqual({ data: { insert_todos_one: { title: 'd' } } });
    expect((await s.sql`select user_id from todos where title = 'd'`)[0]!.user_id).toBe(2);

    // this engine's export of it, applied back, exports the same tree
    const out = tempDir();
    expect((await svc(url(port.port), out, ['metadata', 'export'])).code).toBe(0);
    const tree = readTree(join(out, 'metadata'));
    expect(tree['databases/default/tables/tables.yaml']).toBe('- "!include public_todos.yaml"\n- "!include public_users.yaml"\n');
    expect(tree['databases/default/tables/public_todos.yaml']).toContain('_eq: X-Svc-User-Id');
    expect((await svc(url(port.port), out, ['metadata', 'apply'])).err).toBe('');
    const again = tempDir();
    await svc(url(port.port), again, ['metadata', 'export']);
    expect(readTree(join(again, 'metadata'))).toEqual(tree);
    // and the Hasura tree differs from it only by the renames
    const d = await svc(url(port.port), dir, ['--endpoint', url(port.port), '--from-hasura', 'metadata', 'diff']);
    expect(d.out.split('\n').slice(-1)).toEqual(['no differences']);
    expect(d.out.split('\n')[0]).toBe('--from-hasura: renamed 5 occurrence(s) of Hasura names:');

    // down: the tables go (and with them their metadata, as run_sql does in Hasura), the record too
    const down = await svc(url(port.port), dir, ['--endpoint', url(port.port), 'migrate', 'apply', '--down', 'all']);
    expect(down.err).toBe('');
    expect(down.out).toBe('default: reverted 1700000000000_init');
    expect(await s.tables()).toEqual([]);
    expect((await s.sql`select count(*)::int as n from svc_catalog.cli_migrations`)[0]!.n).toBe(0);
    expect((await svc(url(port.port), dir, ['--endpoint', url(port.port), 'migrate', 'status'])).out.split('\n')[1]).toBe('1700000000000\tinit\tPresent\tNot Present');
  });
});
