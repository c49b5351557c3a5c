/**
 * The MS SQL Server kind end to end through the HTTP API, with a stand-in for SQL Server at the
 * connection boundary only (./test-support/stand-in.ts: the catalog queries answered from
 * hand-written fixtures shaped after sys.*, compiled statements answered with what the test
 * says SQL Server would answer). Everything above the boundary is the real server: the metadata
 * API, the framework's command groups under `mssql_`, the build, the GraphQL schema, planning,
 * the T-SQL compiler, the kind's connection and error mapping. What this does not show is that
 * SQL Server answers the compiled T-SQL as intended: that is live.test.ts's, against a real
 * server, which none of the development machines has.
 *
 * The last group runs the real driver (mssql/tedious) against a port where nothing listens: an
 * unreachable server makes the source inconsistent and never fails a boot.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../server/plugins.js';
import { createDatabase, startServer, useServer, type TestServer } from '../../test/helpers.js';
import { Client, until, useListening } from '../../test/ws-helpers.js';
import { mssqlPlugin } from './index.js';
import { jsonAnswer, standIn } from './test-support/stand-in.js';

const stand = standIn();
const CONN = 'Server=db.example,1433;Database=svc;User Id=svc;Password=secret;Encrypt=false';
const s = useServer(undefined, {
  plugins: builtinPlugins.map((p) => (p.name === 'mssql' ? mssqlPlugin(stand.driver) : p)),
  env: { MSSQL_CONN: CONN },
  config: { liveQueriesRefetchInterval: 40 },
});
const net = useListening(s);
afterEach(() => Client.closeAll());

const source = 'ms';
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
const exported = async () => (await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === source);
/** The last batch sent that `match` accepts. */
const lastSent = (match: (sql: string) => boolean) => stand.sent().filter((x) => match(x.sql)).at(-1);

describe('mssql_add_source', () => {
  it('validates the configuration in the SPEC shape', async () => {
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'x', configuration: {} } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration', error: 'key "connection_info" not found' },
    });
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'x', configuration: { connection_info: { connection_string: '' } } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.connection_info.connection_string' },
    });
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'x', configuration: { connection_info: { connection_string: CONN, pool_settings: { max_connections: 'ten' } } } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.connection_info.pool_settings.max_connections' },
    });
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: 'x', configuration: { connection_info: { connection_string: CONN, isolation_level: 'chaos' } } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration.connection_info.isolation_level' },
    });
  });

  it('a missing environment variable or an unreachable server is an inconsistency: refused, nothing kept', async () => {
    const env = await s.metadata({ type: 'mssql_add_source', args: { name: 'bad', configuration: { connection_info: { connection_string: { from_env: 'NOT_SET_ANYWHERE' } } } } });
    expect(env.status).toBe(400);
    expect(env.body.internal[0]).toMatchObject({ type: 'source', name: 'source bad', reason: 'Inconsistent object: environment variable "NOT_SET_ANYWHERE" not set' });
    const down = await s.metadata({ type: 'mssql_add_source', args: { name: 'down', configuration: { connection_info: { connection_string: 'Server=unreachable;User Id=sa;Password=x' } } } });
    expect(down.status).toBe(400);
    expect(down.body.internal[0].reason).toBe('Inconsistent object: could not connect to the source: Failed to connect to unreachable:1433 - getaddrinfo ENOTFOUND unreachable');
    const names = (await s.metadata({ type: 'export_metadata', args: {} })).body.sources.map((x: { name: string }) => x.name);
    expect(names).toEqual(['default']);
  });

  it('adds a source from an environment variable with pool settings; the pool gets them', async () => {
    await ok({
      type: 'mssql_add_source',
      args: { name: source, configuration: { connection_info: { connection_string: { from_env: 'MSSQL_CONN' }, pool_settings: { max_connections: 7, idle_timeout: 30 }, isolation_level: null } } },
    });
    expect(await exported()).toEqual({
      name: source,
      kind: 'mssql',
      tables: [],
      configuration: { connection_info: { connection_string: { from_env: 'MSSQL_CONN' }, pool_settings: { max_connections: 7, idle_timeout: 30 } } },
    });
    expect(stand.configs.at(-1)).toMatchObject({ connectionString: CONN, source, max: 7, idleTimeoutMs: 30_000 });
    expect(await s.metadata({ type: 'mssql_add_source', args: { name: source, configuration: { connection_info: { connection_string: CONN } } } })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', error: `source with name "${source}" already exists` },
    });
    // Another kind's operations do not reach it.
    expect(await s.metadata({ type: 'pg_drop_source', args: { name: source } })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
  });

  it("refuses a kind's operation on a source of another kind as a source that does not exist, as Hasura's askSourceInfo does", async () => {
    await s.runSql('create table if not exists public.other_kind (id int primary key)');
    const refused = (source: string, path = '$.args.source') => ({ status: 400, body: { code: 'not-exists', error: `source with name "${source}" does not exist`, path } });
    // The fuzzer's find: mssql_redeliver_event on the (PostgreSQL) source `default` reached
    // MSSQL's capture with PostgreSQL's connection, a 500.
    for (const body of [
      { type: 'mssql_redeliver_event', args: { event_id: 'author' } },
      { type: 'mssql_get_event_by_id', args: { event_id: '1' } },
      { type: 'mssql_track_table', args: { table: { schema: 'public', name: 'other_kind' } } },
      { type: 'mssql_run_sql', args: { sql: 'SELECT 1' } },
    ]) {
      expect(await s.metadata(body), body.type).toMatchObject(refused('default'));
    }
    for (const body of [
      { type: 'pg_track_table', args: { source, table: 'author' } },
      { type: 'pg_redeliver_event', args: { source, event_id: 'author' } },
      { type: 'pg_create_select_permission', args: { source, table: 'author', role: 'user', permission: { columns: '*', filter: {} } } },
    ]) {
      expect(await s.metadata(body), body.type).toMatchObject(refused(source));
    }
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === 'default').tables ?? []).not.toContainEqual(expect.objectContaining({ table: { schema: 'public', name: 'other_kind' } }));
  });
});

describe('tables, relationships, permissions, customization through the mssql_ command groups', () => {
  it('tracks tables and a view by their introspection (dbo is the default schema); refuses a table that is not there', async () => {
    await ok({ type: 'mssql_track_table', args: { source, table: 'author' } });
    await ok({ type: 'mssql_track_table', args: { source, table: { schema: 'dbo', name: 'article' } } });
    await ok({ type: 'mssql_track_table', args: { source, table: { schema: 'sales', name: 'customer' } } });
    await ok({ type: 'mssql_track_table', args: { source, table: 'author_names' } });
    expect(await s.metadata({ type: 'mssql_track_table', args: { source, table: 'ghost' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'no such table/view exists in source: "ghost"' },
    });
    expect(await s.metadata({ type: 'mssql_track_table', args: { source, table: 'author' } })).toMatchObject({ status: 400, body: { code: 'already-tracked' } });
    expect((await exported()).tables.map((t: { table: unknown }) => t.table)).toEqual([
      { schema: 'dbo', name: 'author' },
      { schema: 'dbo', name: 'article' },
      { schema: 'sales', name: 'customer' },
      { schema: 'dbo', name: 'author_names' },
    ]);
  });

  it('the GraphQL schema shows the types as Hasura maps SQL Server types, descriptions from MS_Description', async () => {
    const r = await s.gql(`{
      author: __type(name: "author") { description fields { name description type { kind name ofType { name } } } }
      customer: __type(name: "sales_customer") { fields { name type { name ofType { name } } } }
    }`);
    const type = (f: { type: { name: string | null; ofType: { name: string } | null } }) => f.type.name ?? f.type.ofType!.name;
    expect(r.data.author.description).toBe('Authors of articles');
    expect(Object.fromEntries(r.data.author.fields.map((f: never) => [(f as { name: string }).name, type(f)]))).toEqual({ id: 'Int', name: 'String', born: 'date', score: 'decimal' });
    expect(r.data.author.fields.find((f: { name: string }) => f.name === 'name').description).toBe('The name as printed');
    expect(Object.fromEntries(r.data.customer.fields.map((f: never) => [(f as { name: string }).name, type(f)]))).toEqual({ customer_id: 'uniqueidentifier', email: 'String', notes: 'String' });
  });

  it("its comparison types are its own (String_MSSQL_comparison_exp), apart from a PostgreSQL source's in the same schema", async () => {
    await s.runSql('create table note (id int primary key, body text)');
    await ok({ type: 'pg_track_table', args: { table: 'note' } });
    const r = await s.gql(`{
      ms: __type(name: "String_MSSQL_comparison_exp") { inputFields { name } }
      pg: __type(name: "String_comparison_exp") { inputFields { name } }
      msInt: __type(name: "Int_MSSQL_comparison_exp") { inputFields { name } }
      author: __type(name: "author_bool_exp") { inputFields { name type { name } } }
    }`);
    const names = (t: { inputFields: { name: string }[] }) => t.inputFields.map((f) => f.name);
    expect(names(r.data.ms)).toEqual(['_eq', '_gt', '_gte', '_in', '_is_null', '_like', '_lt', '_lte', '_neq', '_nin', '_nlike']);
    expect(names(r.data.pg)).toEqual(expect.arrayContaining(['_ilike', '_regex', '_similar']));
    expect(names(r.data.msInt)).not.toContain('_like');
    expect(r.data.author.inputFields.find((f: { name: string }) => f.name === 'name').type.name).toBe('String_MSSQL_comparison_exp');
    await ok({ type: 'pg_untrack_table', args: { table: 'note' } });
  });

  it('creates relationships by foreign key and manually, permissions, customization; refuses bad ones', async () => {
    await ok({ type: 'mssql_create_object_relationship', args: { source, table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    await ok({ type: 'mssql_create_array_relationship', args: { source, table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } });
    await ok({
      type: 'mssql_create_object_relationship',
      args: { source, table: 'author_names', name: 'author', using: { manual_configuration: { remote_table: 'author', column_mapping: { id: 'id' } } } },
    });
    expect(await s.metadata({ type: 'mssql_create_object_relationship', args: { source, table: 'article', name: 'nope', using: { foreign_key_constraint_on: 'title' } } })).toMatchObject({ status: 400 });
    await ok({
      type: 'mssql_create_select_permission',
      args: { source, table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 10, allow_aggregations: true } },
    });
    await ok({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } });
    await ok({ type: 'mssql_create_insert_permission', args: { source, table: 'article', role: 'user', permission: { columns: ['title'], set: { author_id: 'X-Svc-User-Id' }, check: { rating: { _lt: 10 } } } } });
    await ok({ type: 'mssql_create_update_permission', args: { source, table: 'article', role: 'user', permission: { columns: ['title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, check: {} } } });
    await ok({ type: 'mssql_create_delete_permission', args: { source, table: 'article', role: 'user', permission: { filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } });
    // A filter on a column the table does not have, or a value of the wrong type, is refused.
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'other', permission: { columns: ['id'], filter: { nope: { _eq: 1 } } } } })).toMatchObject({ status: 400 });
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'other', permission: { columns: ['id'], filter: { id: { _eq: 'x' } } } } })).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('parsing Int failed') },
    });
    // SQL Server's own operators: _like on a string column, not on an int.
    await ok({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'reader', permission: { columns: ['id'], filter: { name: { _like: 'a%' } } } } });
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'other', permission: { columns: ['id'], filter: { id: { _like: 'a%' } } } } })).toMatchObject({ status: 400 });
    await ok({ type: 'mssql_drop_select_permission', args: { source, table: 'author', role: 'reader' } });
    await ok({
      type: 'mssql_set_table_customization',
      args: { source, table: { schema: 'sales', name: 'customer' }, configuration: { custom_name: 'client', column_config: { customer_id: { custom_name: 'clientId' } }, custom_root_fields: { select: 'clients' } } },
    });
    const t = (await exported()).tables.find((x: { table: { name: string } }) => x.table.name === 'article');
    expect(t.object_relationships).toEqual([{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }]);
    expect(t.select_permissions[0].permission.filter).toEqual({ author_id: { _eq: 'X-Svc-User-Id' } });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
    stand.answer((sql) => sql.includes('FROM [sales].[customer]'), jsonAnswer([{ clientId: 'c0ffee00-0000-0000-0000-000000000000', email: 'a@b.c' }]));
    expect(await s.gql('{ clients { clientId email } }')).toEqual({ data: { clients: [{ clientId: 'c0ffee00-0000-0000-0000-000000000000', email: 'a@b.c' }] } });
    expect(lastSent((x) => x.includes('[sales].[customer]'))!.sql).toContain('_t0.[customer_id] AS [clientId], _t0.[email] AS [email] FROM');
  });
});

describe('GraphQL over the stand-in: planned, compiled to T-SQL, sent, answered', () => {
  it('an admin query: where, order_by, limit, a relationship; the field is what the statement answers', async () => {
    stand.answer((sql) => sql.startsWith('SELECT ISNULL((SELECT _t0.[id] AS [id], _t0.[name] AS [name], JSON_QUERY'), jsonAnswer([{ id: 1, name: 'ann', articles: [{ title: 'first' }] }]));
    const r = await s.gql('{ author(where: {name: {_eq: "ann"}}, order_by: {id: asc}, limit: 2) { id name articles(order_by: {id: desc}) { title } } }');
    expect(r).toEqual({ data: { author: [{ id: 1, name: 'ann', articles: [{ title: 'first' }] }] } });
    const sent = lastSent((x) => x.includes('FROM [dbo].[author] AS _t0'))!;
    expect(sent.params).toEqual(['ann']);
    expect(sent.sql).toContain('WHERE (_t0.[name] = @p1)');
    expect(sent.sql).toContain('SELECT TOP (2) _t0.*');
    expect(sent.sql).toContain('AND _t1.[author_id] = _t0.[id]');
    expect(sent.tx).toBeUndefined();
  });

  it("a role's query: its filter with the session variable as a parameter, its columns only", async () => {
    stand.answer((sql) => sql.includes('FROM [dbo].[article] AS _t0 WHERE (_t0.[author_id] = CAST(@p1 AS int))'), jsonAnswer([{ id: 3, title: 'mine' }]));
    expect(await s.gql('{ article { id title } }', undefined, user('7'))).toEqual({ data: { article: [{ id: 3, title: 'mine' }] } });
    expect(lastSent((x) => x.includes('[dbo].[article]'))!).toMatchObject({ params: ['7'] });
    // The permission's limit is the statement's TOP.
    expect(lastSent((x) => x.includes('[dbo].[article]'))!.sql).toContain('SELECT TOP (10)');
    const hidden = await s.gql('{ article { rating } }', undefined, user('7'));
    expect(hidden.errors[0].message).toContain("field 'rating' not found in type: 'article'");
    const missing = await s.gql('{ article { id } }', undefined, { 'x-svc-role': 'user' });
    expect(missing.errors[0]).toMatchObject({ message: 'missing session variable: "x-svc-user-id"' });
  });

  it('an aggregate with nodes', async () => {
    stand.answer((sql) => sql.startsWith('SELECT (SELECT JSON_QUERY'), jsonAnswer({ aggregate: { count: 2, max: { rating: 9 } }, nodes: [{ id: 1 }, { id: 2 }] }));
    const r = await s.gql('{ article_aggregate { aggregate { count max { rating } } nodes { id } } }');
    expect(r).toEqual({ data: { article_aggregate: { aggregate: { count: 2, max: { rating: 9 } }, nodes: [{ id: 1 }, { id: 2 }] } } });
    expect(lastSent((x) => x.startsWith('SELECT (SELECT JSON_QUERY'))!.sql).toContain('MAX(_x.[v0]) AS [a1]');
  });

  it('a database error is answered in the SPEC shape, classified by its number', async () => {
    stand.answer(
      (sql) => sql.includes('[dbo].[author]') && sql.includes('[born]'),
      () => {
        throw Object.assign(new Error("Conversion failed when converting date and/or time from character string."), { number: 241 });
      },
    );
    const r = await s.gql('{ author(where: {born: {_eq: "not a date"}}) { id } }');
    expect(r.errors[0]).toMatchObject({ message: 'Conversion failed when converting date and/or time from character string.', extensions: { code: 'data-exception' } });
  });

  it('explain: SQL Server\'s estimated plan of the statement, parameters declared (SET SHOWPLAN_TEXT)', async () => {
    stand.answer((sql) => sql.startsWith('DECLARE @p1'), { columns: ['StmtText'], rows: [['  |--Clustered Index Scan(OBJECT:([svc].[dbo].[author].[PK__author]))']] });
    stand.answer((sql) => sql.startsWith('SET SHOWPLAN_TEXT'), { columns: [], rows: [] });
    const r = await s.request('POST', '/v1/graphql/explain', { query: { query: '{ author(where: {name: {_eq: "o\'brien"}}) { id } }' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body[0]).toMatchObject({ field: 'author', params: ["o'brien"], plan: ['  |--Clustered Index Scan(OBJECT:([svc].[dbo].[author].[PK__author]))'] });
    const declared = lastSent((x) => x.startsWith('DECLARE'))!;
    expect(declared.sql.startsWith("DECLARE @p1 nvarchar(max) = N'o''brien'; SELECT ISNULL(")).toBe(true);
    const tx = declared.tx;
    expect(stand.statements.filter((x) => x.tx === tx).map((x) => x.sql.slice(0, 22))).toEqual(['SET SHOWPLAN_TEXT ON', declared.sql.slice(0, 22), 'SET SHOWPLAN_TEXT OFF']);
  });
});

describe('mutations over the stand-in', () => {
  it('insert_<t>_one alone: one batch on the pool (no transaction of the engine), returning the row', async () => {
    stand.answer((sql) => sql.startsWith('SET NOCOUNT ON') && sql.includes('INSERT INTO [dbo].[author]'), jsonAnswer({ id: 5, name: 'eve' }));
    const r = await s.gql('mutation { insert_author_one(object: {name: "eve"}) { id name } }');
    expect(r).toEqual({ data: { insert_author_one: { id: 5, name: 'eve' } } });
    const sent = lastSent((x) => x.includes('INSERT INTO [dbo].[author]'))!;
    expect(sent.tx).toBeUndefined();
    expect(sent.params).toEqual(['eve']);
    expect(sent.sql).toContain('INSERT INTO [dbo].[author] ([name]) OUTPUT N\'INSERT\', INSERTED.* INTO #svc_w VALUES (@p1)');
  });

  it("a role's insert: presets from the session, its check; a failed check is the statement's THROW, answered as permission-error", async () => {
    stand.answer(
      (sql) => sql.includes('INSERT INTO [dbo].[article]'),
      () => {
        throw Object.assign(new Error('svc:check'), { number: 51000, precedingErrors: [] });
      },
    );
    const r = await s.gql('mutation { insert_article(objects: [{title: "t"}]) { affected_rows } }', undefined, user('7'));
    expect(r.errors[0]).toMatchObject({ message: 'check constraint of an insert/update permission has failed', extensions: { code: 'permission-error' } });
    const sent = lastSent((x) => x.includes('INSERT INTO [dbo].[article]'))!;
    expect(sent.sql).toContain('([title], [author_id])');
    expect(sent.params).toEqual(['t', '7', '10']);
    expect(sent.sql).toContain("THROW 51000, N'svc:check', 1");
  });

  it('a key violation is constraint-violation with Hasura\'s prefix', async () => {
    stand.answer(
      (sql) => sql.includes('INSERT INTO [dbo].[author]'),
      () => {
        throw Object.assign(new Error("Violation of UNIQUE KEY constraint 'UQ_author_name'. Cannot insert duplicate key in object 'dbo.author'. The duplicate key value is (eve)."), { number: 2627 });
      },
    );
    const r = await s.gql('mutation { insert_author(objects: [{name: "eve"}]) { affected_rows } }');
    expect(r.errors[0]).toMatchObject({ message: expect.stringMatching(/^Uniqueness violation\. Violation of UNIQUE KEY constraint 'UQ_author_name'/), extensions: { code: 'constraint-violation' } });
  });

  it('if_matched (Note [Upsert arguments]): the schema has it instead of on_conflict; it compiles to MERGE', async () => {
    const r = await s.gql(`{
      m: __type(name: "mutation_root") { fields { name args { name } } }
      im: __type(name: "author_if_matched") { inputFields { name type { kind ofType { kind ofType { kind ofType { name } } } } } }
      mc: __type(name: "author_insert_match_column") { enumValues { name } }
    }`);
    const insert = r.data.m.fields.find((f: { name: string }) => f.name === 'insert_author');
    expect(insert.args.map((a: { name: string }) => a.name)).toEqual(['objects', 'if_matched']);
    expect(r.data.im.inputFields.map((f: { name: string }) => f.name)).toEqual(['match_columns', 'update_columns', 'where']);
    expect(r.data.mc.enumValues.map((v: { name: string }) => v.name)).toEqual(['id', 'name', 'born', 'score']);
    stand.answer((sql) => sql.includes('MERGE INTO [dbo].[author]'), jsonAnswer({ affected_rows: 1, returning: [{ id: 1, name: 'ann' }] }));
    const up = await s.gql('mutation { insert_author(objects: [{name: "ann", born: "1990-01-02"}], if_matched: {match_columns: [name], update_columns: [born]}) { affected_rows returning { id name } } }');
    expect(up).toEqual({ data: { insert_author: { affected_rows: 1, returning: [{ id: 1, name: 'ann' }] } } });
    const sent = lastSent((x) => x.includes('MERGE INTO'))!;
    expect(sent.sql).toContain('ON (_t0.[name] = _s.[name]) WHEN MATCHED THEN UPDATE SET [born] = _s.[born] WHEN NOT MATCHED THEN INSERT');
    // A role without an update permission on author gets no if_matched.
    const role = await s.gql('{ __type(name: "mutation_root") { fields { name args { name } } } }', undefined, user('7'));
    expect(role.data.__type.fields.find((f: { name: string }) => f.name === 'insert_article').args.map((a: { name: string }) => a.name)).toEqual(['objects', 'if_matched']);
    expect(await s.gql('mutation { insert_author(objects: [{name: "x"}], if_matched: {match_columns: [nope]}) { affected_rows } }')).toMatchObject({ errors: [{ extensions: { code: 'validation-failed' } }] });
  });

  it('update and delete by primary key; two fields run in one transaction of the engine, committed once', async () => {
    stand.answer((sql) => sql.includes('UPDATE _t0 SET [title]'), jsonAnswer({ id: 1, title: 'new' }));
    stand.answer((sql) => sql.includes('DELETE _t0 OUTPUT'), jsonAnswer({ affected_rows: 2 }));
    const ends = stand.ends.length;
    const r = await s.gql('mutation { u: update_article_by_pk(pk_columns: {id: 1}, _set: {title: "new"}) { id title } d: delete_article(where: {rating: {_gt: 5}}) { affected_rows } }');
    expect(r).toEqual({ data: { u: { id: 1, title: 'new' }, d: { affected_rows: 2 } } });
    const u = lastSent((x) => x.includes('UPDATE _t0'))!;
    const d = lastSent((x) => x.includes('DELETE _t0'))!;
    expect(u.tx).toBeDefined();
    expect(d.tx).toBe(u.tx);
    expect(stand.ends.slice(ends)).toEqual(['commit']);
    expect(u.params).toEqual(['new', '1']);
    expect(d.params).toEqual(['5']);
  });

  it('update_many: its updates one after the other in one transaction (the driver takes one request at a time: Note [Statements pipelined]), answered in order', async () => {
    stand.answer((sql) => sql.includes('UPDATE _t0 SET [title]'), (_sql, params) => jsonAnswer({ affected_rows: params[1] === '1' ? 1 : 0 }));
    const ends = stand.ends.length;
    const r = await s.gql('mutation { update_article_many(updates: [{where: {id: {_eq: 1}}, _set: {title: "a"}}, {where: {id: {_eq: 2}}, _set: {title: "b"}}, {where: {id: {_eq: 1}}, _set: {title: "c"}}]) { affected_rows } }');
    expect(r).toEqual({ data: { update_article_many: [{ affected_rows: 1 }, { affected_rows: 0 }, { affected_rows: 1 }] } });
    const sent = stand.sent().filter((x) => x.sql.includes('UPDATE _t0 SET [title]')).slice(-3);
    expect(sent.map((x) => x.params[0])).toEqual(['a', 'b', 'c']);
    expect(new Set(sent.map((x) => x.tx)).size).toBe(1);
    expect(stand.ends.slice(ends)).toEqual(['commit']);
  });

  it('offers no nested inserts (Dialect.nestedInserts unset, as Hasura\'s MSSQL schema): no relationship in the insert input, and one given is a validation error with no statement sent', async () => {
    const before = stand.sent().length;
    const t = await s.gql('{ __type(name: "article_insert_input") { inputFields { name } } }');
    expect(t.data.__type.inputFields.map((f: { name: string }) => f.name)).not.toContain('author');
    expect(t.data.__type.inputFields.map((f: { name: string }) => f.name)).toContain('title');
    const r = await s.gql('mutation { insert_article_one(object: {title: "t", author: {data: {name: "n"}}}) { id } }');
    expect(r.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    expect(r.errors[0].message).toContain('author');
    expect(stand.sent().length).toBe(before);
  });
});

describe('live queries over the stand-in: one multiplexed batch for every subscriber (Note [Multiplexed T-SQL])', () => {
  it('answers each subscriber from its row of the batch', async () => {
    const seen: unknown[] = [];
    stand.answer(
      (sql) => sql.startsWith('SELECT _svc_m.[i], _svc_r.[json] FROM OPENJSON(@p1)'),
      (_sql, params) => {
        const bindings = JSON.parse(params[0]!) as [number, string | null][];
        seen.push(bindings);
        return { columns: ['i', 'json'], rows: bindings.map(([i, id]) => [i, JSON.stringify([{ id: Number(id), title: `of ${id}` }])]) };
      },
    );
    const a = await Client.init(net.url, 'graphql-transport-ws', { headers: user('1') });
    const b = await Client.init(net.url, 'graphql-transport-ws', { headers: user('2') });
    a.send({ type: 'subscribe', id: 'a', payload: { query: 'subscription { article { id title } }' } });
    b.send({ type: 'subscribe', id: 'b', payload: { query: 'subscription { article { id title } }' } });
    expect((await a.next('a')).payload).toEqual({ data: { article: [{ id: 1, title: 'of 1' }] } });
    expect((await b.next('b')).payload).toEqual({ data: { article: [{ id: 2, title: 'of 2' }] } });
    // The two are one cohort: a refetch binds both in one batch.
    await until(() => seen.some((x) => (x as unknown[]).length === 2), 'a batch of both subscribers');
    expect(seen.find((x) => (x as unknown[]).length === 2)).toEqual([
      [1, expect.any(String)],
      [2, expect.any(String)],
    ]);
    a.close();
    b.close();
  });
});

describe('mssql_run_sql', () => {
  it('answers the last result set as rows with a header; refuses transaction control and other kinds\' sources', async () => {
    stand.answer((sql) => sql === 'SELECT name, object_id FROM sys.tables', { columns: ['name', 'object_id'], rows: [['author', 581577110], ['article', null]] });
    expect(await ok({ type: 'mssql_run_sql', args: { source, sql: 'SELECT name, object_id FROM sys.tables' } })).toEqual({ result_type: 'TuplesOk', result: [['name', 'object_id'], ['author', 581577110], ['article', null]] });
    expect(await s.metadata({ type: 'mssql_run_sql', args: { source, sql: 'BEGIN TRAN; DELETE FROM dbo.article; COMMIT' } })).toMatchObject({ status: 400, body: { code: 'not-supported' } });
    // Words in strings and comments are not statements.
    stand.answer((sql) => sql.startsWith("SELECT 'commit'"), { columns: ['x'], rows: [['commit']] });
    expect((await s.metadata({ type: 'mssql_run_sql', args: { source, sql: "SELECT 'commit' AS x -- rollback" } })).status).toBe(200);
    expect(await s.metadata({ type: 'mssql_run_sql', args: { source: 'default', sql: 'SELECT 1' } })).toMatchObject({ status: 400, body: { code: 'not-exists', error: 'source with name "default" does not exist' } });
    expect(await s.metadata({ type: 'mssql_run_sql', args: { source: 'nope', sql: 'SELECT 1' } })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
  });

  it("a server error is the SPEC's error shape with SQL Server's number; the request's transaction is rolled back", async () => {
    const ends = stand.ends.length;
    const r = await s.metadata({ type: 'mssql_run_sql', args: { source, sql: 'SELECT * FROM dbo.nothing_here' } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'unexpected', path: '$.args', error: expect.stringContaining('Invalid object name') });
    expect(stand.ends.slice(ends)).toEqual(['rollback']);
  });

  it('a rename (sp_rename) is carried into the metadata: object_id and column_id follow the column', async () => {
    await ok({ type: 'mssql_create_select_permission', args: { source, table: 'author', role: 'born_reader', permission: { columns: ['id', 'born'], filter: { born: { _is_null: false } } } } });
    stand.answer(
      (sql) => sql.startsWith('EXEC sp_rename'),
      () => {
        // What the rename does to the catalog: the column keeps its column_id under a new name.
        stand.catalog = { ...stand.catalog, columns: { ...stand.catalog.columns, rows: stand.catalog.columns.rows.map((r) => (r[0] === 581577110 && r[2] === 'born' ? [...r.slice(0, 2), 'birth_date', ...r.slice(3)] : r)) } };
        return { columns: [], rows: [] };
      },
    );
    expect(await ok({ type: 'mssql_run_sql', args: { source, sql: "EXEC sp_rename 'dbo.author.born', 'birth_date', 'COLUMN'" } })).toEqual({ result_type: 'CommandOk', result: null });
    const author = (await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author');
    const perm = author.select_permissions.find((p: { role: string }) => p.role === 'born_reader');
    expect(perm.permission).toMatchObject({ columns: ['id', 'birth_date'], filter: { birth_date: { _is_null: false } } });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });
});

describe('untrack and drop', () => {
  it('untracks with cascade, drops the source', async () => {
    expect(await s.metadata({ type: 'mssql_untrack_table', args: { source, table: 'author' } })).toMatchObject({ status: 400, body: { code: 'dependency-error' } });
    await ok({ type: 'mssql_untrack_table', args: { source, table: 'author', cascade: true } });
    expect((await exported()).tables.map((t: { table: { name: string } }) => t.table.name)).toEqual(['article', 'customer', 'author_names']);
    await ok({ type: 'mssql_drop_source', args: { name: source } });
    expect(await exported()).toBeUndefined();
  });
});

describe('the real driver (mssql/tedious) against a port where no server listens', () => {
  let db: { url: string };
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  beforeAll(async () => {
    db = await createDatabase('svc_mssql_down');
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('makes the source inconsistent, and a server whose metadata holds it still boots', async () => {
    a = await startServer({ database: db });
    const configuration = { connection_info: { connection_string: 'Server=127.0.0.1,1;Database=x;User Id=sa;Password=x;Encrypt=false' } };
    const r = await a.metadata({ type: 'mssql_add_source', args: { name: 'down', configuration } });
    expect(r.status).toBe(400);
    expect(r.body.internal[0].reason).toMatch(/^Inconsistent object: could not connect to the source: Failed to connect to 127\.0\.0\.1:1/);
    const { metadata } = (await a.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const doc = { ...metadata, sources: [...metadata.sources, { name: 'down', kind: 'mssql', tables: [{ table: { schema: 'dbo', name: 't' } }], configuration }] };
    expect(await a.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: doc } })).toMatchObject({ status: 200, body: { is_consistent: false } });
    await a.stop();
    a = undefined;
    b = await startServer({ database: db });
    const inc = (await b.metadata({ type: 'get_inconsistent_metadata', args: {} })).body;
    expect(inc.is_consistent).toBe(false);
    expect(inc.inconsistent_objects[0]).toMatchObject({ type: 'source', name: 'source down' });
    // The server answers meanwhile.
    expect(await b.gql('{ __typename }')).toEqual({ data: { __typename: 'query_root' } });
  });
});
