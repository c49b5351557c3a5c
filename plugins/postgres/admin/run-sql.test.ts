/**
 * Golden HTTP tests of run_sql: results, errors, transactions (bulk, read_only, no_transaction),
 * and what SQL does to the metadata (renames, dropped tables/columns/foreign keys/functions,
 * refused changes). A small test plugin adds a command group whose objects refer to columns, to
 * exercise the general mechanism (dependents, `onType`, the `rename` hook) on its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { startServer, type TestServer } from '../../../test/helpers.js';
import { definePlugin } from '../../../core/plugin.js';
import {
  DatabaseToken,
  qtDisplay,
  qtKey,
  sameTable,
  sourcesOf,
  updateTable,
  updateTableIfPresent,
  type Metadata,
  type SchemaRename,
  type TableMeta,
} from '../../database/index.js';

interface TestRef {
  name: string;
  column: string;
  /** Compares the column with a static value: depends on its type. */
  static: boolean;
}
const refsOf = (t: TableMeta) => (t.test_refs as TestRef[] | undefined) ?? [];
const renames: SchemaRename[] = [];

/** Objects kept under `test_refs` in a table entry, each naming one column of the table. */
const testRefs = definePlugin({
  name: 'test-refs',
  after: ['database'],
  setup(k) {
    k.use(DatabaseToken).registerGroup({
      name: 'test-refs',
      operations: (bind) => [
        {
          type: bind.name('add_test_ref'),
          args: v.object({ table: bind.table, name: v.string(), column: v.string(), static: v.boolean() }),
          mutates: true,
          run: (a, ctx) => ({
            metadata: updateTable(ctx.metadata, 'default', a.table, bind.kind.dialect.defaultSchema, (t) => ({ ...t, test_refs: [...refsOf(t), { name: a.name, column: a.column, static: a.static }] })),
            response: { message: 'success' },
          }),
        },
      ],
      dependents(md, target) {
        if (target.kind !== 'column') return [];
        const t = sourcesOf(md)
          .find((s) => s.name === target.source)
          ?.tables.find((x) => sameTable(x.table, target.table));
        return (t ? refsOf(t) : [])
          .filter((r) => r.column === target.column)
          .map((r) => ({
            id: `test_ref@${target.source}:${qtKey(target.table)}:${r.name}`,
            description: `test ref ${qtDisplay(target.table, 'public')}.${r.name}`,
            onType: r.static,
            remove: (m: Metadata) => updateTableIfPresent(m, target.source, target.table, (x) => ({ ...x, test_refs: refsOf(x).filter((y) => y.name !== r.name) })),
          }));
      },
      rename(md, r) {
        renames.push(r);
        if (r.kind !== 'column') return md;
        return updateTableIfPresent(md, r.source, r.table, (t) => ({ ...t, test_refs: refsOf(t).map((x) => (x.column === r.from ? { ...x, column: r.to } : x)) }));
      },
    });
  },
});

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ extraPlugins: [testRefs] });
});
afterAll(async () => {
  await s?.stop();
});

const runSql = (sql: string, extra: Record<string, unknown> = {}) => s.query({ type: 'run_sql', args: { sql, ...extra } });
const track = (name: string) => s.query({ type: 'track_table', args: { schema: 'public', name } });
const commandOk = { status: 200, body: { result_type: 'CommandOk', result: null } };
const success = { status: 200, body: { message: 'success' } };
const tables = async (): Promise<TableMeta[]> => (await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].tables;
const table = async (name: string) => (await tables()).find((t) => t.table.name === name);
const exists = async (name: string) => (await s.sql`select to_regclass(${name}) is not null as e`)[0]!.e as boolean;
const dependencyError = (error: string) => ({ status: 400, body: { code: 'dependency-error', path: '$.args', error } });

describe('results', () => {
  it('returns rows as text with a header row, NULL as "NULL"', async () => {
    await s.runSql(`create table people (id int, name text); insert into people values (1, 'ann'), (2, null)`);
    const r = await runSql('select * from people order by id');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ result_type: 'TuplesOk', result: [['id', 'name'], ['1', 'ann'], ['2', 'NULL']] });
    expect((await runSql('select * from people where false')).body).toEqual({ result_type: 'TuplesOk', result: [['id', 'name']] });
  });

  it('returns only the last statement result; commands give CommandOk', async () => {
    expect((await runSql(`select 1 as one; select 'x' as two, 2 as three`)).body).toEqual({ result_type: 'TuplesOk', result: [['two', 'three'], ['x', '2']] });
    expect(await runSql(`select 1 as one; insert into people values (3, 'c')`)).toMatchObject(commandOk);
    expect((await runSql(`insert into people values (4, 'd') returning id`)).body).toEqual({ result_type: 'TuplesOk', result: [['id'], ['4']] });
    expect(await runSql(`SET TIME ZONE 'UTC'`)).toMatchObject(commandOk);
    expect(await runSql('-- nothing to run\n')).toMatchObject(commandOk);
  });

  it('runs a SQL-standard function body with semicolons as one statement', async () => {
    expect(await runSql(`create function add_one(x int) returns int language sql begin atomic select x + 1; end; select add_one(41) as answer`)).toMatchObject({
      status: 200,
      body: { result_type: 'TuplesOk', result: [['answer'], ['42']] },
    });
  });

  it('does not leak session settings to other requests', async () => {
    expect(await runSql(`set time zone 'Pacific/Chatham'`)).toMatchObject(commandOk);
    expect((await runSql('show timezone')).body.result[1][0]).not.toBe('Pacific/Chatham');
  });
});

describe('errors', () => {
  it('reports SQL errors as Hasura does, with the whole SQL as the statement', async () => {
    const sql = 'select 1;\nselect * from nope';
    expect(await runSql(sql)).toMatchObject({
      status: 400,
      body: {
        code: 'postgres-error',
        path: '$.args',
        error: 'query execution failed',
        internal: {
          statement: sql,
          prepared: false,
          arguments: [],
          error: { exec_status: 'FatalError', message: 'relation "nope" does not exist', status_code: '42P01', hint: null, description: null },
        },
      },
    });
    expect((await runSql(`SET TIME ZONE 'ABC'`)).body).toMatchObject({ code: 'postgres-error', internal: { error: { status_code: '22023' } } });
    expect((await runSql('insert into people values (1, 2, 3, 4)')).status).toBe(400);
  });

  it('is admin only', async () => {
    expect(await s.query({ type: 'run_sql', args: { sql: 'select 1' } }, { 'x-svc-role': 'user' })).toMatchObject({
      status: 400,
      body: { code: 'access-denied', path: '$.args', error: 'restricted access : admin only' },
    });
  });

  it('validates its arguments', async () => {
    expect(await s.query({ type: 'run_sql', args: { sql: 1 } })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.sql' } });
    expect(await runSql('select 1', { source: 'nowhere' })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args.source', error: 'source with name "nowhere" does not exist' },
    });
  });
});

describe('transactions', () => {
  it('runs in the request transaction: a bulk sees its own SQL and is all or nothing', async () => {
    const ok = await s.query({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table bulk_ok (id int primary key)' } },
        { type: 'track_table', args: { schema: 'public', name: 'bulk_ok' } },
        { type: 'run_sql', args: { sql: 'select count(*) from bulk_ok' } },
      ],
    });
    expect(ok).toMatchObject({ status: 200, body: [{ result_type: 'CommandOk', result: null }, { message: 'success' }, { result_type: 'TuplesOk', result: [['count'], ['0']] }] });

    const failed = await s.query({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table bulk_failed (id int primary key); insert into bulk_ok values (1)' } },
        { type: 'track_table', args: { schema: 'public', name: 'bulk_failed' } },
        { type: 'track_table', args: { schema: 'public', name: 'no_such_table' } },
      ],
    });
    expect(failed.status).toBe(400);
    expect(await exists('bulk_failed')).toBe(false);
    expect(await s.sql`select * from bulk_ok`).toEqual([]);
    expect(await table('bulk_failed')).toBeUndefined();
  });

  it('read_only: selects see the request transaction, writes fail, the transaction stays writable', async () => {
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table ro (id int)' } },
        { type: 'run_sql', args: { sql: 'select count(*) from ro', read_only: true } },
        { type: 'run_sql', args: { sql: 'insert into ro values (1)' } },
      ],
    });
    expect(r).toMatchObject({ status: 200, body: [{ result_type: 'CommandOk' }, { result_type: 'TuplesOk', result: [['count'], ['0']] }, { result_type: 'CommandOk' }] });
    expect(await s.sql`select id from ro`).toEqual([{ id: 1 }]);
    expect(await runSql('DROP TABLE ro\n', { read_only: true })).toMatchObject({
      status: 400,
      body: {
        code: 'postgres-error',
        path: '$.args',
        error: 'query execution failed',
        internal: { statement: 'DROP TABLE ro\n', error: { message: 'cannot execute DROP TABLE in a read-only transaction', status_code: '25006' } },
      },
    });
    expect(await exists('ro')).toBe(true);
  });

  it('no_transaction runs statements that cannot run in a transaction', async () => {
    const sql = 'create table nt (id int); create index concurrently nt_idx on nt (id)';
    expect(await runSql(sql)).toMatchObject({
      status: 400,
      body: { code: 'postgres-error', internal: { error: { message: 'CREATE INDEX CONCURRENTLY cannot run inside a transaction block', status_code: '25001' } } },
    });
    expect(await exists('nt')).toBe(false);
    expect(await runSql(sql, { no_transaction: true })).toMatchObject(commandOk);
    expect(await exists('nt_idx')).toBe(true);
    expect(
      await s.query({
        type: 'bulk',
        args: [
          { type: 'run_sql', args: { sql: 'create table nt2 (id int)' } },
          { type: 'run_sql', args: { sql: 'create index concurrently nt2_idx on nt2 (id)', no_transaction: true } },
        ],
      }),
    ).toMatchObject({
      status: 400,
      body: { code: 'not-supported', path: '$.args', error: 'no_transaction cannot be used after an operation of the same request that ran SQL on the source' },
    });
    expect(await exists('nt2')).toBe(false);
  });
});

describe('tables', () => {
  it('drops a tracked table without other dependents from the metadata', async () => {
    const r = await s.query({
      type: 'bulk',
      args: [
        { type: 'run_sql', args: { sql: 'create table no_cols ()' } },
        { type: 'track_table', args: { schema: 'public', name: 'no_cols' } },
        { type: 'run_sql', args: { sql: 'drop table no_cols' } },
      ],
    });
    expect(r).toMatchObject({ status: 200, body: [{ result_type: 'CommandOk' }, { message: 'success' }, { result_type: 'CommandOk' }] });
    expect(await table('no_cols')).toBeUndefined();
  });

  it('carries table and column renames into the tracked entry and its configuration', async () => {
    await s.runSql('create table old_name (id int primary key, title text, body text)');
    expect(
      await s.query({ type: 'track_table', version: 2, args: { table: 'old_name', configuration: { custom_column_names: { title: 'heading', body: 'text' } } } }),
    ).toMatchObject(success);
    expect(await runSql('alter table old_name rename to new_name; alter table new_name rename column title to headline')).toMatchObject(commandOk);
    expect(await table('old_name')).toBeUndefined();
    // Both column-keyed maps of the configuration (column_config when the export carries it).
    const columnKeys = async () => {
      const c = (await table('new_name'))?.configuration;
      return { names: c?.custom_column_names, config: Object.keys(c?.column_config ?? c?.custom_column_names ?? {}).sort() };
    };
    expect(await columnKeys()).toEqual({ names: { headline: 'heading', body: 'text' }, config: ['body', 'headline'] });
    // A dropped column's custom name goes with it.
    expect(await runSql('alter table new_name drop column headline')).toMatchObject(commandOk);
    expect(await columnKeys()).toEqual({ names: { body: 'text' }, config: ['body'] });
  });
});

describe('relationships', () => {
  beforeAll(async () => {
    await s.runSql(`
      create table author (id serial primary key, name text);
      create table article (id serial primary key, title text, author_id int references author(id));`);
    for (const t of ['author', 'article']) expect(await track(t)).toMatchObject(success);
    expect(await s.query({ type: 'create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } })).toMatchObject(
      success,
    );
    expect(
      await s.query({
        type: 'create_array_relationship',
        args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } },
      }),
    ).toMatchObject(success);
  });

  it('refuses to drop a table, column or foreign key that relationships use, and leaves nothing behind', async () => {
    expect(await runSql('drop table article')).toMatchObject(
      dependencyError('cannot drop due to the following dependent objects: relationship author.articles in source "default"'),
    );
    expect(await runSql('alter table article drop column author_id')).toMatchObject(
      dependencyError('cannot drop due to the following dependent objects: relationship author.articles in source "default", relationship article.author in source "default"'),
    );
    expect(await runSql('alter table article drop constraint article_author_id_fkey')).toMatchObject(
      dependencyError('cannot drop due to the following dependent objects: relationship author.articles in source "default", relationship article.author in source "default"'),
    );
    expect(await exists('article')).toBe(true);
    expect((await s.sql`select count(*)::int as n from pg_constraint where conname = 'article_author_id_fkey'`)[0]!.n).toBe(1);
    expect((await table('author'))?.array_relationships).toHaveLength(1);
  });

  it('follows renamed tables and columns in the relationships', async () => {
    expect(await runSql('alter table article rename to articles; alter table articles rename column author_id to writer_id')).toMatchObject(commandOk);
    expect((await table('author'))?.array_relationships).toEqual([
      { name: 'articles', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'articles' }, column: 'writer_id' } } },
    ]);
    expect((await table('articles'))?.object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'writer_id' } }]);
    expect(await runSql('alter table articles rename to article; alter table article rename column writer_id to author_id')).toMatchObject(commandOk);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('with cascade, removes the dependents of a dropped foreign key, then of a dropped table', async () => {
    expect(await runSql('alter table article drop constraint article_author_id_fkey', { cascade: true })).toMatchObject(commandOk);
    expect((await table('author'))?.array_relationships).toBeUndefined();
    expect((await table('article'))?.object_relationships).toBeUndefined();
    expect(
      await s.query({ type: 'create_array_relationship', args: { table: 'author', name: 'articles', using: { manual_configuration: { remote_table: 'article', column_mapping: { id: 'author_id' } } } } }),
    ).toMatchObject(success);
    expect(await runSql('drop table article', { cascade: true })).toMatchObject(commandOk);
    expect(await table('article')).toBeUndefined();
    expect(await table('author')).toEqual({ table: { schema: 'public', name: 'author' } });
  });
});

describe('functions', () => {
  beforeAll(async () => {
    await s.runSql(`
      create table writer (id int primary key, first text, last text);
      create function writers() returns setof writer as $$ select * from writer $$ language sql stable;
      create function full_name(w writer) returns text as $$ select w.first || ' ' || w.last $$ language sql stable;`);
    expect(await track('writer')).toMatchObject(success);
    expect(await s.query({ type: 'track_function', args: { schema: 'public', name: 'writers' } })).toMatchObject(success);
    expect(
      await s.query({ type: 'add_computed_field', args: { table: 'writer', name: 'full_name', definition: { function: 'full_name', table_argument: 'w' } } }),
    ).toMatchObject(success);
  });
  const functions = async () => (await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].functions;

  it('refuses to overload a tracked function or a computed field function', async () => {
    expect(await runSql('create function writers(n int) returns setof writer as $$ select * from writer limit n $$ language sql stable')).toMatchObject({
      status: 400,
      body: { code: 'not-supported', path: '$.args', error: 'the following tracked function(s) cannot be overloaded: writers' },
    });
    expect(await runSql('create function full_name(w writer, sep text) returns text as $$ select w.first || sep || w.last $$ language sql stable')).toMatchObject({
      status: 400,
      body: { code: 'not-supported', error: 'The function "full_name" associated with computed field"full_name" of table "writer" is being overloaded' },
    });
  });

  it('refuses to make a tracked function VOLATILE', async () => {
    expect(await runSql('create or replace function writers() returns setof writer as $$ select * from writer $$ language sql volatile')).toMatchObject({
      status: 400,
      body: { code: 'not-supported', path: '$.args', error: 'type of function "writers" is altered to "VOLATILE" which is not supported now' },
    });
  });

  it('follows a renamed tracked function', async () => {
    expect(await runSql('alter function writers() rename to all_writers')).toMatchObject(commandOk);
    expect(await functions()).toEqual([{ function: { schema: 'public', name: 'all_writers' } }]);
  });

  it('counts a computed field whose function is renamed or dropped as dropped: refused without cascade, with what uses it', async () => {
    const cfError = 'cannot drop due to the following dependent objects: computed field writer.full_name in source "default"';
    expect(await runSql('alter function full_name(writer) rename to display_name')).toMatchObject(dependencyError(cfError));
    expect(await runSql('drop function full_name(writer)')).toMatchObject(dependencyError(cfError));
    // Dropped and created again: another function (another oid), as Hasura sees it.
    expect(await runSql('drop function full_name(writer); create function full_name(w writer) returns text as $$ select w.first $$ language sql stable')).toMatchObject(
      dependencyError(cfError),
    );
    expect(
      await s.query({ type: 'create_select_permission', args: { table: 'writer', role: 'user', permission: { columns: ['id'], computed_fields: ['full_name'], filter: {} } } }),
    ).toMatchObject(success);
    expect(await runSql('alter function full_name(writer) rename to display_name')).toMatchObject(
      dependencyError(`${cfError}, permission writer.user.select in source "default"`),
    );
    expect((await table('writer'))?.computed_fields).toHaveLength(1);
    expect(await runSql('alter function full_name(writer) rename to display_name', { cascade: true })).toMatchObject(commandOk);
    expect(await table('writer')).toEqual({ table: { schema: 'public', name: 'writer' } });
    expect(await runSql('alter function display_name(writer) rename to full_name')).toMatchObject(commandOk);
  });

  it('removes a dropped tracked function without cascade; a computed field function only with cascade', async () => {
    expect(
      await s.query({ type: 'add_computed_field', args: { table: 'writer', name: 'full_name', definition: { function: 'full_name', table_argument: 'w' } } }),
    ).toMatchObject(success);
    expect(await runSql('drop function all_writers(); drop function full_name(writer)')).toMatchObject(
      dependencyError('cannot drop due to the following dependent objects: computed field writer.full_name in source "default"'),
    );
    expect(await functions()).toEqual([{ function: { schema: 'public', name: 'all_writers' } }]);
    expect(await runSql('drop function all_writers()')).toMatchObject(commandOk);
    expect(await functions()).toBeUndefined();
    expect(await runSql('drop function full_name(writer)', { cascade: true })).toMatchObject(commandOk);
    expect(await table('writer')).toEqual({ table: { schema: 'public', name: 'writer' } });
  });
});

describe('objects that refer to columns (the general mechanism)', () => {
  beforeAll(async () => {
    await s.runSql('create table refs (id int primary key, flag boolean, label text)');
    expect(await track('refs')).toMatchObject(success);
    for (const [name, column, isStatic] of [
      ['static_flag', 'flag', true],
      ['session_flag', 'flag', false],
      ['session_label', 'label', false],
    ] as const) {
      expect(await s.metadata({ type: 'pg_add_test_ref', args: { table: 'refs', name, column, static: isStatic } })).toMatchObject(success);
    }
  });
  const refs = async (name = 'refs') => (await table(name))?.test_refs as TestRef[] | undefined;

  it('refuses to change the type of a column that a dependent relies on, even with cascade', async () => {
    const error = 'cannot change type of column "flag" in table "refs" because of the following dependencies: test ref refs.static_flag';
    expect(await runSql('alter table refs alter column flag type text')).toMatchObject(dependencyError(error));
    expect(await runSql('alter table refs alter column flag type text', { cascade: true })).toMatchObject(dependencyError(error));
    expect((await s.sql`select data_type from information_schema.columns where table_name = 'refs' and column_name = 'flag'`)[0]!.data_type).toBe('boolean');
    // Dependents that do not rely on the type do not stop it.
    expect(await runSql('alter table refs alter column label type varchar(20)')).toMatchObject(commandOk);
  });

  it('calls the groups\' rename hook with the new table name, and keeps their references', async () => {
    renames.length = 0;
    expect(await runSql('alter table refs rename to refs2; alter table refs2 rename column flag to enabled')).toMatchObject(commandOk);
    expect(renames).toEqual([
      { kind: 'table', source: 'default', from: { schema: 'public', name: 'refs' }, to: { schema: 'public', name: 'refs2' } },
      { kind: 'column', source: 'default', table: { schema: 'public', name: 'refs2' }, from: 'flag', to: 'enabled' },
    ]);
    expect(await refs('refs2')).toEqual([
      { name: 'static_flag', column: 'enabled', static: true },
      { name: 'session_flag', column: 'enabled', static: false },
      { name: 'session_label', column: 'label', static: false },
    ]);
  });

  it('check_metadata_consistency false leaves the metadata as it is', async () => {
    expect(await runSql('alter table refs2 rename column label to caption', { check_metadata_consistency: false })).toMatchObject(commandOk);
    expect((await refs('refs2'))?.[2]).toEqual({ name: 'session_label', column: 'label', static: false });
    expect(await runSql('alter table refs2 rename column caption to label')).toMatchObject(commandOk);
  });

  it('drops a column only with cascade when objects refer to it', async () => {
    expect(await runSql('alter table refs2 drop column enabled')).toMatchObject(
      dependencyError('cannot drop due to the following dependent objects: test ref refs2.static_flag, test ref refs2.session_flag'),
    );
    expect(await runSql('alter table refs2 drop column enabled', { cascade: true })).toMatchObject(commandOk);
    expect(await refs('refs2')).toEqual([{ name: 'session_label', column: 'label', static: false }]);
  });
});
