/**
 * `svc deploy` against a real server: metadata apply, migrate apply, metadata reload, in that
 * order (a fresh database: the metadata names a table that only the migration creates, consistent
 * at the end); a second deploy changes nothing; it stops at the first failure (metadata refused:
 * no migration runs; a migration failing: no reload, the ones before it kept); metadata
 * inconsistent at the end is listed with its file and line and exits 2 (0 with
 * --allow-inconsistent-metadata); SVC_GRAPHQL_NO_TRANSACTION for its migrations.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { useServer } from '../../test/helpers.js';
import { useListening } from '../../test/ws-helpers.js';
import { svc, tempDir, writeTree } from './test-support.js';

describe('svc deploy', () => {
  const s = useServer();
  const port = useListening(s);
  const http = () => `http://127.0.0.1:${port.port}`;
  let dir: string;
  const deploy = (args: string[] = [], env: Record<string, string> = {}) => svc(http(), dir, ['deploy', ...args], env);
  const tables = async () => (await s.sql`select table_name::text as t from information_schema.tables where table_schema = 'public' order by 1`).map((r) => r.t as string);
  const recorded = async () => (await s.sql`select version::text as v, name from svc_catalog.cli_migrations order by version`).map((r) => `${r.v}_${r.name}`);
  const tracked = async () => (await s.tables()).map((t: any) => t.table.name).sort();
  const authorYaml = 'table:\n  schema: public\n  name: author\nselect_permissions:\n  - role: user\n    permission:\n      columns:\n        - id\n        - name\n      filter: {}\n';

  beforeAll(async () => {
    const parent = tempDir('svc-deploy-');
    expect((await svc(http(), parent, ['init', 'app'])).code).toBe(0);
    dir = join(parent, 'app');
    // the engine's source `default` into the project (databases.yaml), then the project's tables
    expect((await svc(http(), dir, ['metadata', 'export'])).code).toBe(0);
    writeTree(dir, {
      'metadata/databases/default/tables/tables.yaml': '- "!include public_author.yaml"\n',
      'metadata/databases/default/tables/public_author.yaml': authorYaml,
      'migrations/default/1000_create_author/up.sql': 'create table author (id serial primary key, name text not null);\n',
      'migrations/default/1000_create_author/down.sql': 'drop table author;\n',
    });
  });

  it('applies the metadata, then the migrations, then reloads: consistent on a fresh database', async () => {
    const r = await deploy();
    expect(r.err).toBe('');
    expect(r.out.split('\n')).toEqual([
      'deploy: 1/3 applied metadata (1 inconsistent object(s) until the migrations ran)',
      'deploy: 2/3 default: applied 1000_create_author',
      'deploy: 3/3 metadata reloaded',
      'deploy: done, the metadata is consistent',
    ]);
    expect(r.code).toBe(0);
    expect(await tables()).toEqual(['author']);
    expect(await recorded()).toEqual(['1000_create_author']);
    expect(await tracked()).toEqual(['author']);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body.is_consistent).toBe(true);
    await s.sql`insert into author (name) values ('ann')`;
    expect(await s.gql('{ author { name } }', undefined, { 'x-svc-role': 'user' })).toEqual({ data: { author: [{ name: 'ann' }] } });
    // again: nothing to do
    const again = await deploy();
    expect(again.out.split('\n')).toEqual(['deploy: 1/3 applied metadata', 'deploy: 2/3 default: nothing to apply', 'deploy: 3/3 metadata reloaded', 'deploy: done, the metadata is consistent']);
    expect(again.code).toBe(0);
  });

  it('metadata the engine refuses: nothing else runs', async () => {
    writeTree(dir, {
      'metadata/databases/default/tables/public_author.yaml': `${authorYaml}insert_permissions:\n  - role: user\n    permission: 7\n`,
      'migrations/default/2000_create_book/up.sql': 'create table book (id serial primary key);\n',
    });
    const r = await deploy();
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe('deploy: stopped at metadata apply (1/3): nothing was changed');
    expect(r.err).toMatch(/^metadata\/databases\/default\/tables\/public_author\.yaml:\d+: /);
    expect(r.out).toBe('');
    expect(await tables()).toEqual(['author']);
    expect(await recorded()).toEqual(['1000_create_author']);
    writeTree(dir, { 'metadata/databases/default/tables/public_author.yaml': authorYaml });
  });

  it('a failing migration stops it: the ones before it kept, no reload', async () => {
    writeTree(dir, { 'migrations/default/3000_broken/up.sql': 'create table half (id int);\nselect * from nope;\n' });
    const r = await deploy();
    expect(r.code).toBe(1);
    expect(r.out.split('\n')).toEqual(['deploy: 1/3 applied metadata', 'deploy: 2/3 default: applied 2000_create_book']);
    expect(r.err.split('\n')).toEqual([
      expect.stringMatching(/^error: default: migration 3000_broken \(up, migrations\/default\/3000_broken\/up\.sql:2\) failed and was rolled back: .*"nope"/),
      'deploy: stopped at migrate apply (2/3): the metadata is applied, and the migrations before this one; the metadata was not reloaded',
    ]);
    expect(await tables()).toEqual(['author', 'book']);
    expect(await recorded()).toEqual(['1000_create_author', '2000_create_book']);
    rmSync(join(dir, 'migrations/default/3000_broken'), { recursive: true });
  });

  it('metadata inconsistent at the end is listed with its file and line: exit 2, or 0 when allowed', async () => {
    writeTree(dir, {
      'metadata/databases/default/tables/tables.yaml': '- "!include public_author.yaml"\n- "!include public_ghost.yaml"\n',
      'metadata/databases/default/tables/public_ghost.yaml': 'table:\n  schema: public\n  name: ghost\n',
    });
    const r = await deploy();
    expect(r.code).toBe(2);
    expect(r.out.split('\n')).toEqual(['deploy: 1/3 applied metadata (1 inconsistent object(s) until the migrations ran)', 'deploy: 2/3 default: nothing to apply', 'deploy: 3/3 metadata reloaded']);
    expect(r.err.split('\n')[0]).toBe('the metadata is inconsistent: 1 object(s):');
    expect(r.err.split('\n')[1]).toMatch(/^  metadata\/databases\/default\/tables\/public_ghost\.yaml:1: .*ghost/);
    const allowed = await deploy(['--allow-inconsistent-metadata']);
    expect(allowed.code).toBe(0);
    expect(allowed.err.split('\n')[0]).toBe('the metadata is inconsistent: 1 object(s):');
    writeTree(dir, { 'metadata/databases/default/tables/tables.yaml': '- "!include public_author.yaml"\n' });
    rmSync(join(dir, 'metadata/databases/default/tables/public_ghost.yaml'));
  });

  it('runs its migrations outside a transaction with SVC_GRAPHQL_NO_TRANSACTION=true', async () => {
    writeTree(dir, { 'migrations/default/4000_two/up.sql': 'BEGIN;\ncreate table t1 (id int);\nCOMMIT;\nBEGIN;\ncreate table t2 (id int);\nCOMMIT;\n' });
    const refused = await deploy();
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/4000_two .*was not applied: COMMIT here cannot be applied all or nothing/);
    const r = await deploy([], { SVC_GRAPHQL_NO_TRANSACTION: 'true' });
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[1]).toBe('deploy: 2/3 default: applied 4000_two');
    expect(await tables()).toEqual(['author', 'book', 't1', 't2']);
  });
});
