/**
 * `svc init DIR`: the skeleton `hasura init` writes, which `svc metadata apply` takes as it is and
 * `svc metadata export` writes back the same; and its refusals.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { readTree, svc, tempDir, writeTree } from './test-support.js';

describe('svc init', () => {
  const s = useServer();
  const port = useListening(s);
  const endpoint = () => `http://127.0.0.1:${port.port}`;

  it('writes config.yaml, metadata/ (version 3, empty sections), migrations/ and seeds/; metadata apply takes it', async () => {
    const cwd = tempDir();
    const r = await svc(endpoint(), cwd, ['init', 'app']);
    expect(r).toEqual({ code: 0, out: 'created project app: config.yaml, metadata/ (16 files), migrations/, seeds/', err: '' });
    const dir = join(cwd, 'app');
    expect(readTree(dir)['config.yaml']).toBe(
      'version: 3\nendpoint: http://localhost:8080\nmetadata_directory: metadata\nactions:\n  kind: synchronous\n  handler_webhook_baseurl: http://localhost:3000\n',
    );
    for (const d of ['migrations', 'seeds']) expect(statSync(join(dir, d)).isDirectory()).toBe(true);
    const metadata = readTree(join(dir, 'metadata'));
    // the files `hasura init` writes (CLI v2.x), each empty
    const list = '[]\n';
    const map = '{}\n';
    expect(metadata).toEqual({
      'actions.graphql': '',
      'actions.yaml': 'actions: []\ncustom_types:\n  enums: []\n  input_objects: []\n  objects: []\n  scalars: []\n',
      'allow_list.yaml': list,
      'api_limits.yaml': map,
      'backend_configs.yaml': map,
      'cron_triggers.yaml': list,
      'databases/databases.yaml': list,
      'graphql_schema_introspection.yaml': map,
      'inherited_roles.yaml': list,
      'metrics_config.yaml': map,
      'network.yaml': map,
      'opentelemetry.yaml': map,
      'query_collections.yaml': list,
      'remote_schemas.yaml': list,
      'rest_endpoints.yaml': list,
      'version.yaml': 'version: 3\n',
    });

    // applied as it is (the endpoint of the environment wins over config.yaml's)
    await s.runSql('create table kept (id int primary key)');
    const a = await svc(endpoint(), dir, ['metadata', 'apply']);
    expect(a).toEqual({ code: 0, out: 'applied metadata: metadata is consistent', err: '' });
    const md = await s.metadata({ type: 'export_metadata', version: 2, args: {} });
    expect(md.body.metadata).toEqual({ version: 3 });
    // and exported back, the same tree
    expect((await svc(endpoint(), dir, ['metadata', 'export'])).code).toBe(0);
    expect(readTree(join(dir, 'metadata'))).toEqual(metadata);
    expect((await svc(endpoint(), dir, ['metadata', 'diff'])).out).toBe('no differences');
    // the empty metadata has no source: a migration of "default" is refused, naming it
    expect((await svc(endpoint(), dir, ['migrate', 'create', 'init', '--up-sql', 'select 1', '--version', '1'])).out).toBe('created migration migrations/default/1_init');
    const m = await svc(endpoint(), dir, ['migrate', 'apply']);
    expect(m.code).toBe(1);
    expect(m.err).toBe('error: source with name "default" does not exist (not-exists at $.args.source)');
  });

  it('--endpoint and --admin-secret are written to config.yaml', async () => {
    const cwd = tempDir();
    const r = await svc(endpoint(), cwd, ['init', 'p', '--endpoint', 'https://svc.example.com', '--admin-secret', 'abc']);
    expect(r.code).toBe(0);
    expect(readTree(join(cwd, 'p'))['config.yaml']).toMatch(/^version: 3\nendpoint: https:\/\/svc\.example\.com\nadmin_secret: abc\nmetadata_directory: metadata\n/);
  });

  it('refuses a directory that is not empty, or a file, and writes nothing', async () => {
    const cwd = writeTree(tempDir(), { 'full/readme.md': 'mine\n', 'afile': 'x' });
    const r = await svc(endpoint(), cwd, ['init', 'full']);
    expect(r).toEqual({ code: 1, out: '', err: 'error: full exists already and is not an empty directory' });
    expect(readdirSync(join(cwd, 'full'))).toEqual(['readme.md']);
    expect((await svc(endpoint(), cwd, ['init', 'afile'])).err).toBe('error: afile exists already and is not an empty directory');
    expect((await svc(endpoint(), cwd, ['init'])).err).toContain("missing required argument 'dir'");
    // an empty directory is fine
    writeTree(cwd, {});
    const empty = join(cwd, 'empty');
    await import('node:fs').then((fs) => fs.mkdirSync(empty));
    expect((await svc(endpoint(), cwd, ['init', 'empty'])).code).toBe(0);
    expect(existsSync(join(empty, 'metadata/version.yaml'))).toBe(true);
  });
});
