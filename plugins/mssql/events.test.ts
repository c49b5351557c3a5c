/**
 * MS SQL Server event triggers (./event-capture.ts) through the HTTP API, with the stand-in for
 * SQL Server at the driver boundary (./test-support/stand-in.ts). The stand-in runs no T-SQL: the
 * test keeps a small model of what the statements would leave in the database (whether the
 * engine's tables exist, which triggers exist with which text) and answers the reconciliation's
 * reads from it, so that the metadata API, the build's reconciliation and the delivery worker run
 * end to end. The statements sent are checked as golden text with their parameters; what they do
 * on a real server is live.test.ts's (skipped without SVC_TEST_MSSQL_URL).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../server/plugins.js';
import { useServer } from '../../test/helpers.js';
import { startHook, until, type TestHook } from '../event-triggers/hook.js';
import type { TableInfo } from '../database/index.js';
import { CATALOG_DDL, CLAIM, EVENT_BY_ID, EVENT_LOG, HAS_CATALOG, INSERT_MANUAL, INVOCATIONS, READ_TRIGGERS, RECORD, REDELIVER, REDELIVER_READ, RELEASE, eventsSql, ownerLine, triggerDef } from './event-capture.js';
import { mssqlPlugin } from './index.js';
import type { MssqlResult } from './driver.js';
import { standIn, type Recorded } from './test-support/stand-in.js';

const stand = standIn();
const CONN = 'Server=db.example,1433;Database=svc;User Id=svc;Password=secret;Encrypt=false';
const s = useServer(undefined, {
  plugins: builtinPlugins.map((p) => (p.name === 'mssql' ? mssqlPlugin(stand.driver) : p)),
  env: { MSSQL_CONN: CONN },
  config: { eventsFetchInterval: 30 },
});

const source = 'ms';
const empty: MssqlResult = { columns: [], rows: [] };
const serverError = (message: string, number: number) => Object.assign(new Error(message), { name: 'RequestError', code: 'EREQUEST', number });

/** What the statements sent would have left in the database. */
const model = {
  catalog: false,
  triggers: [] as { name: string; schema_name: string; table_name: string; definition: string }[],
  /** A CREATE TRIGGER fails (SQL Server's error), to show a failed reconcile. */
  failCreate: false,
  /** The events the next claims answer (each at most once). */
  claimable: [] as Record<string, unknown>[],
  /** The rows the log reads answer. */
  eventRows: [] as unknown[][],
  redeliverRow: undefined as unknown[] | undefined,
};

const HEADER = /^CREATE OR ALTER TRIGGER \[(.+?)\]\.\[(.+?)\] ON \[(.+?)\]\.\[(.+?)\] AFTER/;
stand.answer((q) => q === HAS_CATALOG, () => ({ columns: ['ok'], rows: [[model.catalog ? 1 : 0]] }));
stand.answer(
  (q) => q === READ_TRIGGERS,
  (_q, p) => ({
    columns: ['name', 'schema_name', 'table_name', 'definition'],
    rows: model.triggers.filter((t) => t.definition.toLowerCase().includes(p[0]!.toLowerCase())).map((t) => [t.name, t.schema_name, t.table_name, t.definition]),
  }),
);
stand.answer((q) => q.startsWith('EXEC sp_getapplock') || q.startsWith('SAVE TRANSACTION') || q.startsWith('ROLLBACK TRANSACTION'), empty);
stand.answer((q) => q === CATALOG_DDL, () => ((model.catalog = true), empty));
stand.answer(
  (q) => q.startsWith('CREATE OR ALTER TRIGGER'),
  (q) => {
    if (model.failCreate) throw serverError("Cannot create trigger 'notify_svc_x' because the table is a system table.", 2108);
    const [, schema, name, , table] = HEADER.exec(q)!;
    model.triggers = model.triggers.filter((t) => !(t.schema_name === schema && t.name === name));
    model.triggers.push({ name: name!, schema_name: schema!, table_name: table!, definition: q });
    return empty;
  },
);
stand.answer(
  (q) => q.startsWith('DROP TRIGGER IF EXISTS'),
  (q) => {
    const [, schema, name] = /^DROP TRIGGER IF EXISTS \[(.+?)\]\.\[(.+?)\]$/.exec(q)!;
    model.triggers = model.triggers.filter((t) => !(t.schema_name === schema && t.name === name));
    return empty;
  },
);
stand.answer((q) => q.startsWith(`UPDATE ${EVENT_LOG} SET [archived]`), empty);
stand.answer(
  (q) => q === CLAIM,
  () => ({ columns: ['id', 'schema_name', 'table_name', 'trigger_name', 'payload', 'tries', 'created_at', 'token'], rows: model.claimable.splice(0).map((e) => Object.values(e)) }),
);
stand.answer((q) => q === RECORD || q === RELEASE || q === REDELIVER, empty);
stand.answer((q) => q === INSERT_MANUAL, () => ({ columns: ['id'], rows: [['0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11']] }));
const EVENT_COLS = ['id', 'schema_name', 'table_name', 'trigger_name', 'payload', 'delivered', 'error', 'tries', 'created_at', 'locked', 'next_retry_at', 'archived'];
stand.answer((q) => q.startsWith(eventsSql(undefined).slice(0, 40)) && q.includes('FROM [svc_catalog].[event_log] WHERE [trigger_name]'), () => ({ columns: EVENT_COLS, rows: model.eventRows }));
stand.answer((q) => q === EVENT_BY_ID, (_q, p) => ({ columns: EVENT_COLS, rows: model.eventRows.filter((r) => r[0] === p[0]) }));
stand.answer((q) => q === INVOCATIONS || q.includes('WHERE [event_id] ='), () => ({ columns: ['id', 'trigger_name', 'event_id', 'http_status', 'request', 'response', 'duration_ms', 'created_at'], rows: [] }));
stand.answer((q) => q === REDELIVER_READ, () => ({ columns: ['trigger_name', 'locked_for'], rows: model.redeliverRow ? [model.redeliverRow] : [] }));

let hook: TestHook;
beforeAll(async () => {
  hook = await startHook();
  s.env.HOOK = hook.url;
  const add = await s.metadata({ type: 'mssql_add_source', args: { name: source, configuration: { connection_info: { connection_string: { from_env: 'MSSQL_CONN' } } } } });
  expect(add.status, add.text).toBe(200);
  for (const name of ['author', 'author_names']) {
    const r = await s.metadata({ type: 'mssql_track_table', args: { source, table: { schema: 'dbo', name } } });
    expect(r.status, r.text).toBe(200);
  }
});
afterAll(async () => {
  await hook?.close();
});

const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const triggersOf = async (table: string) =>
  ((await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === source).tables.find((t: { table: { name: string } }) => t.table.name === table)
    ?.event_triggers ?? []) as { name: string }[];
/** What was sent from now on, but the worker's polling claims. */
const mark = () => {
  const from = stand.statements.length;
  return () => stand.statements.slice(from).filter((x: Recorded) => x.sql !== CLAIM);
};
const create = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'mssql_create_event_trigger',
  args: { source, name, table: { schema: 'dbo', name: 'author' }, webhook: '{{HOOK}}', insert: { columns: '*' }, ...extra },
});

beforeEach(async () => {
  model.failCreate = false;
  model.claimable = [];
  model.eventRows = [];
  model.redeliverRow = undefined;
  hook.received.length = 0;
  for (const name of ['author', 'author_names']) for (const t of await triggersOf(name)) await ok({ type: 'mssql_delete_event_trigger', args: { source, name: t.name } });
});

const AUTHOR: TableInfo = {
  schema: 'dbo',
  name: 'author',
  relation: 'table',
  columns: [
    { name: 'id', position: 1, type: 'int', udt: 'int', typeSchema: 'sys', typeKind: 'base', nullable: false, hasDefault: false, isIdentity: true, isGenerated: false, description: null },
    { name: 'name', position: 2, type: 'nvarchar(100)', udt: 'nvarchar', typeSchema: 'sys', typeKind: 'base', nullable: false, hasDefault: false, isIdentity: false, isGenerated: false, description: null },
    { name: 'doc', position: 3, type: 'xml', udt: 'xml', typeSchema: 'sys', typeKind: 'base', nullable: true, hasDefault: false, isIdentity: false, isGenerated: false, description: null },
    { name: 'place', position: 4, type: 'geography', udt: 'geography', typeSchema: 'sys', typeKind: 'base', nullable: true, hasDefault: false, isIdentity: false, isGenerated: false, description: null },
  ] as TableInfo['columns'],
  primaryKey: { name: 'PK_author', columns: ['id'] },
  uniqueConstraints: [],
  foreignKeys: [],
  description: null,
  viewInfo: null,
};
const T = { schema: 'dbo', name: 'author' };

describe('the capture triggers (golden T-SQL)', () => {
  it('INSERT writes every column of each inserted row; CLR types as their text', () => {
    const d = triggerDef("it's", T, 'INSERT', { columns: '*' }, AUTHOR);
    expect(d.id).toBe("notify_svc_it's_INSERT");
    expect(d.header + ownerLine('ms') + d.body).toMatchInlineSnapshot(`
      "CREATE OR ALTER TRIGGER [dbo].[notify_svc_it's_INSERT] ON [dbo].[author] AFTER INSERT AS
      -- svc event trigger of source "ms"
      BEGIN
        SET NOCOUNT ON;
        INSERT INTO [svc_catalog].[event_log] ([schema_name], [table_name], [trigger_name], [payload])
        SELECT N'dbo', N'author', N'it''s',
          (SELECT N'INSERT' AS [op], NULL AS [data.old], JSON_QUERY((SELECT i.[id] AS [id], i.[name] AS [name], i.[doc] AS [doc], i.[place].ToString() AS [place] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [data.new], NULL AS [session_variables] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)
        FROM inserted AS i;
      END"
    `);
  });

  it('UPDATE pairs old and new by the primary key and fires when a listened column changed', () => {
    const d = triggerDef('t', T, 'UPDATE', { columns: ['name', 'doc'], payload: ['id', 'name'] }, AUTHOR);
    expect(d.header + d.body).toMatchInlineSnapshot(`
      "CREATE OR ALTER TRIGGER [dbo].[notify_svc_t_UPDATE] ON [dbo].[author] AFTER UPDATE AS
      BEGIN
        SET NOCOUNT ON;
        INSERT INTO [svc_catalog].[event_log] ([schema_name], [table_name], [trigger_name], [payload])
        SELECT N'dbo', N'author', N't',
          (SELECT N'UPDATE' AS [op], JSON_QUERY(CASE WHEN d.[id] IS NULL THEN NULL ELSE (SELECT d.[id] AS [id], d.[name] AS [name] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) END) AS [data.old], JSON_QUERY((SELECT i.[id] AS [id], i.[name] AS [name] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [data.new], NULL AS [session_variables] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)
        FROM inserted AS i LEFT JOIN deleted AS d ON i.[id] = d.[id]
        WHERE d.[id] IS NULL OR NOT EXISTS (SELECT i.[name], CAST(i.[doc] AS nvarchar(max)) INTERSECT SELECT d.[name], CAST(d.[doc] AS nvarchar(max)));
      END"
    `);
  });

  it('DELETE writes the old row; the hash follows what is installed', () => {
    const d = triggerDef('t', { schema: 'we]ird', name: 'a]b' }, 'DELETE', { columns: '*', payload: ['id'] }, { ...AUTHOR, schema: 'we]ird', name: 'a]b' });
    expect(d.header + d.body).toMatchInlineSnapshot(`
      "CREATE OR ALTER TRIGGER [we]]ird].[notify_svc_t_DELETE] ON [we]]ird].[a]]b] AFTER DELETE AS
      BEGIN
        SET NOCOUNT ON;
        INSERT INTO [svc_catalog].[event_log] ([schema_name], [table_name], [trigger_name], [payload])
        SELECT N'we]ird', N'a]b', N't',
          (SELECT N'DELETE' AS [op], JSON_QUERY((SELECT d.[id] AS [id] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [data.old], NULL AS [data.new], NULL AS [session_variables] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)
        FROM deleted AS d;
      END"
    `);
    expect(triggerDef('t', T, 'DELETE', { columns: '*', payload: ['id'] }, AUTHOR).hash).not.toBe(triggerDef('t', T, 'DELETE', { columns: '*', payload: ['name'] }, AUTHOR).hash);
    expect(triggerDef('t', T, 'DELETE', { columns: '*' }, AUTHOR).hash).toBe(triggerDef('t', T, 'DELETE', { columns: '*' }, AUTHOR).hash);
  });

  it('UPDATE on every column compares the types INTERSECT cannot as text or bytes', () => {
    const d = triggerDef('t', T, 'UPDATE', { columns: '*' }, AUTHOR);
    expect(d.body).toContain(
      'NOT EXISTS (SELECT i.[id], i.[name], CAST(i.[doc] AS nvarchar(max)), CAST(i.[place] AS varbinary(max)) INTERSECT SELECT d.[id], d.[name], CAST(d.[doc] AS nvarchar(max)), CAST(d.[place] AS varbinary(max)))',
    );
  });

  it('refuses an update trigger without a primary key (Hasura\'s message)', () => {
    expect(() => triggerDef('t', T, 'UPDATE', { columns: '*' }, { ...AUTHOR, primaryKey: null })).toThrow('Update event triggers for MS-SQL sources are only supported on tables with primary keys');
    expect(() => triggerDef('t', T, 'INSERT', { columns: '*' }, { ...AUTHOR, primaryKey: null })).not.toThrow();
  });

  it('the event log statements', () => {
    expect({ CATALOG_DDL, CLAIM, RECORD, RELEASE, REDELIVER_READ, REDELIVER, INSERT_MANUAL, pending: eventsSql('pending'), processed: eventsSql('processed'), READ_TRIGGERS, HAS_CATALOG }).toMatchInlineSnapshot(`
      {
        "CATALOG_DDL": "IF SCHEMA_ID(N'svc_catalog') IS NULL EXEC(N'CREATE SCHEMA [svc_catalog]');
      IF OBJECT_ID(N'svc_catalog.event_log', N'U') IS NULL
      BEGIN
        CREATE TABLE [svc_catalog].[event_log] (
          [id] uniqueidentifier NOT NULL DEFAULT NEWID() PRIMARY KEY,
          [schema_name] nvarchar(max) NOT NULL,
          [table_name] nvarchar(max) NOT NULL,
          [trigger_name] nvarchar(850) NOT NULL,
          [payload] nvarchar(max) NOT NULL,
          [delivered] bit NOT NULL DEFAULT 0,
          [error] bit NOT NULL DEFAULT 0,
          [tries] int NOT NULL DEFAULT 0,
          [created_at] datetimeoffset(7) NOT NULL DEFAULT SYSDATETIMEOFFSET(),
          [locked] datetimeoffset(7) NULL,
          [token] uniqueidentifier NULL,
          [next_retry_at] datetimeoffset(7) NULL,
          [archived] bit NOT NULL DEFAULT 0
        );
        CREATE INDEX [event_log_fetch_events] ON [svc_catalog].[event_log] ([locked], [next_retry_at], [created_at]) WHERE [delivered] = 0 AND [error] = 0 AND [archived] = 0;
        CREATE INDEX [event_log_trigger_name] ON [svc_catalog].[event_log] ([trigger_name]);
      END;
      IF OBJECT_ID(N'svc_catalog.event_invocation_logs', N'U') IS NULL
      BEGIN
        CREATE TABLE [svc_catalog].[event_invocation_logs] (
          [id] uniqueidentifier NOT NULL DEFAULT NEWID() PRIMARY KEY,
          [trigger_name] nvarchar(850) NULL,
          [event_id] uniqueidentifier NULL,
          [status] int NULL,
          [request] nvarchar(max) NULL,
          [response] nvarchar(max) NULL,
          [duration_ms] float NULL,
          [created_at] datetimeoffset(7) NOT NULL DEFAULT SYSDATETIMEOFFSET()
        );
        CREATE INDEX [event_invocation_logs_event_id] ON [svc_catalog].[event_invocation_logs] ([event_id]);
        CREATE INDEX [event_invocation_logs_trigger_name] ON [svc_catalog].[event_invocation_logs] ([trigger_name], [created_at]);
      END;",
        "CLAIM": "SET NOCOUNT ON;
      UPDATE [svc_catalog].[event_log] SET [locked] = SYSDATETIMEOFFSET(), [token] = NEWID()
      OUTPUT LOWER(CONVERT(nvarchar(36), inserted.[id])) AS [id], inserted.[schema_name], inserted.[table_name], inserted.[trigger_name], inserted.[payload], inserted.[tries], CONVERT(nvarchar(19), CAST(SWITCHOFFSET(inserted.[created_at], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET(inserted.[created_at], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' AS [created_at], LOWER(CONVERT(nvarchar(36), inserted.[token])) AS [token]
      WHERE [id] IN (
        SELECT TOP (CAST(@p2 AS int)) l.[id]
        FROM [svc_catalog].[event_log] AS l WITH (UPDLOCK, READPAST, ROWLOCK)
        JOIN OPENJSON(@p1) WITH ([name] nvarchar(850) '$.name', [secs] int '$.secs') AS x ON x.[name] = l.[trigger_name]
        WHERE l.[delivered] = 0 AND l.[error] = 0 AND l.[archived] = 0
          AND (l.[locked] IS NULL OR l.[locked] < DATEADD(SECOND, -x.[secs], SYSDATETIMEOFFSET()))
          AND (l.[next_retry_at] IS NULL OR l.[next_retry_at] <= SYSDATETIMEOFFSET())
        ORDER BY l.[locked], l.[next_retry_at], l.[created_at]
      );",
        "HAS_CATALOG": "SELECT CASE WHEN OBJECT_ID(N'svc_catalog.event_log', N'U') IS NOT NULL AND OBJECT_ID(N'svc_catalog.event_invocation_logs', N'U') IS NOT NULL THEN 1 ELSE 0 END AS [ok]",
        "INSERT_MANUAL": "SET NOCOUNT ON;
      DECLARE @id uniqueidentifier = NEWID();
      INSERT INTO [svc_catalog].[event_log] ([id], [schema_name], [table_name], [trigger_name], [payload]) VALUES (@id, @p1, @p2, @p3, @p4);
      SELECT LOWER(CONVERT(nvarchar(36), @id)) AS [id];",
        "READ_TRIGGERS": "SELECT tr.[name] AS [name], s.[name] AS [schema_name], t.[name] AS [table_name], m.[definition] AS [definition]
      FROM sys.triggers AS tr
      JOIN sys.tables AS t ON t.[object_id] = tr.[parent_id]
      JOIN sys.schemas AS s ON s.[schema_id] = t.[schema_id]
      JOIN sys.sql_modules AS m ON m.[object_id] = tr.[object_id]
      WHERE tr.[name] LIKE N'notify[_]svc[_]%' AND CHARINDEX(@p1, m.[definition]) > 0",
        "RECORD": "SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION;
      INSERT INTO [svc_catalog].[event_invocation_logs] ([event_id], [trigger_name], [status], [request], [response], [duration_ms])
      SELECT TRY_CONVERT(uniqueidentifier, x.[id]), x.[trigger_name], x.[status], x.[request], x.[response], x.[duration_ms] FROM OPENJSON(@p1) WITH ([id] nvarchar(36) '$.id', [trigger_name] nvarchar(850) '$.trigger_name', [status] int '$.status', [request] nvarchar(max) '$.request' AS JSON, [response] nvarchar(max) '$.response' AS JSON, [duration_ms] float '$.duration_ms', [token] nvarchar(36) '$.token', [delivered] bit '$.delivered', [error] bit '$.error', [retry_in] float '$.retry_in') AS x;
      UPDATE e SET [tries] = e.[tries] + 1, [delivered] = x.[delivered], [error] = x.[error], [locked] = NULL, [token] = NULL,
        [next_retry_at] = CASE WHEN x.[retry_in] IS NULL THEN NULL ELSE DATEADD(MILLISECOND, CAST(x.[retry_in] * 1000 AS int), SYSDATETIMEOFFSET()) END
      FROM [svc_catalog].[event_log] AS e JOIN OPENJSON(@p1) WITH ([id] nvarchar(36) '$.id', [trigger_name] nvarchar(850) '$.trigger_name', [status] int '$.status', [request] nvarchar(max) '$.request' AS JSON, [response] nvarchar(max) '$.response' AS JSON, [duration_ms] float '$.duration_ms', [token] nvarchar(36) '$.token', [delivered] bit '$.delivered', [error] bit '$.error', [retry_in] float '$.retry_in') AS x ON e.[id] = TRY_CONVERT(uniqueidentifier, x.[id]) AND e.[token] = TRY_CONVERT(uniqueidentifier, x.[token]);
      COMMIT TRANSACTION;",
        "REDELIVER": "UPDATE [svc_catalog].[event_log] SET [delivered] = 0, [error] = 0, [tries] = 0, [next_retry_at] = NULL, [locked] = NULL, [token] = NULL WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1)",
        "REDELIVER_READ": "SELECT [trigger_name], CAST(DATEDIFF_BIG(MILLISECOND, [locked], SYSDATETIMEOFFSET()) AS float) / 1000 AS [locked_for] FROM [svc_catalog].[event_log] WITH (UPDLOCK, ROWLOCK) WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1)",
        "RELEASE": "UPDATE [svc_catalog].[event_log] SET [locked] = NULL, [token] = NULL WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1) AND [token] = TRY_CONVERT(uniqueidentifier, @p2)",
        "pending": "SELECT LOWER(CONVERT(nvarchar(36), [id])) AS [id], [schema_name], [table_name], [trigger_name], [payload], [delivered], [error], [tries], CONVERT(nvarchar(19), CAST(SWITCHOFFSET([created_at], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([created_at], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' AS [created_at], CASE WHEN [locked] IS NULL THEN NULL ELSE CONVERT(nvarchar(19), CAST(SWITCHOFFSET([locked], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([locked], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' END AS [locked], CASE WHEN [next_retry_at] IS NULL THEN NULL ELSE CONVERT(nvarchar(19), CAST(SWITCHOFFSET([next_retry_at], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([next_retry_at], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' END AS [next_retry_at], [archived] FROM [svc_catalog].[event_log] WHERE [trigger_name] = @p1 AND [delivered] = 0 AND [error] = 0 AND [archived] = 0 ORDER BY [created_at] DESC, [id] OFFSET CAST(@p3 AS int) ROWS FETCH NEXT CAST(@p2 AS int) ROWS ONLY",
        "processed": "SELECT LOWER(CONVERT(nvarchar(36), [id])) AS [id], [schema_name], [table_name], [trigger_name], [payload], [delivered], [error], [tries], CONVERT(nvarchar(19), CAST(SWITCHOFFSET([created_at], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([created_at], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' AS [created_at], CASE WHEN [locked] IS NULL THEN NULL ELSE CONVERT(nvarchar(19), CAST(SWITCHOFFSET([locked], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([locked], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' END AS [locked], CASE WHEN [next_retry_at] IS NULL THEN NULL ELSE CONVERT(nvarchar(19), CAST(SWITCHOFFSET([next_retry_at], '+00:00') AS datetime2(6)), 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, CAST(SWITCHOFFSET([next_retry_at], '+00:00') AS datetime2(6))) AS nvarchar(6)), 6) + N'Z' END AS [next_retry_at], [archived] FROM [svc_catalog].[event_log] WHERE [trigger_name] = @p1 AND ([delivered] = 1 OR [error] = 1) AND [archived] = 0 ORDER BY [created_at] DESC, [id] OFFSET CAST(@p3 AS int) ROWS FETCH NEXT CAST(@p2 AS int) ROWS ONLY",
      }
    `);
  });
});

describe('mssql_create_event_trigger and mssql_delete_event_trigger', () => {
  it('creates the log and the triggers in a transaction, once; a second build sends no DDL', async () => {
    model.catalog = false;
    const sent = mark();
    await ok(create('author_changes', { update: { columns: ['name'] }, delete: { columns: '*' } }));
    const tx = sent().filter((x) => x.tx !== undefined);
    const txId = tx[0]!.tx;
    expect(tx.every((x) => x.tx === txId)).toBe(true);
    // The first look outside the transaction, then: savepoint, lock, look again, make.
    expect(sent().map((x) => [x.tx === undefined ? 'pool' : 'tx', x.sql.split('\n')[0]!.slice(0, 60), x.params])).toEqual([
      ['pool', READ_TRIGGERS.slice(0, 60), [ownerLine(source)]],
      ['pool', HAS_CATALOG.slice(0, 60), []],
      ['tx', 'SAVE TRANSACTION svc_event_triggers', []],
      ['tx', "EXEC sp_getapplock @Resource = N'svc_event_capture', @LockMo", []],
      ['tx', HAS_CATALOG.slice(0, 60), []],
      ['tx', READ_TRIGGERS.slice(0, 60), [ownerLine(source)]],
      ['tx', CATALOG_DDL.slice(0, 60), []],
      ['tx', 'CREATE OR ALTER TRIGGER [dbo].[notify_svc_author_changes_INS', []],
      ['tx', 'CREATE OR ALTER TRIGGER [dbo].[notify_svc_author_changes_UPD', []],
      ['tx', 'CREATE OR ALTER TRIGGER [dbo].[notify_svc_author_changes_DEL', []],
    ]);
    expect(stand.ends.at(-1)).toBe('commit');
    expect(model.triggers.map((t) => t.name).sort()).toEqual(['notify_svc_author_changes_DELETE', 'notify_svc_author_changes_INSERT', 'notify_svc_author_changes_UPDATE']);
    expect(model.triggers.find((t) => t.name.endsWith('UPDATE'))!.definition).toContain('NOT EXISTS (SELECT i.[name] INTERSECT SELECT d.[name])');

    const again = mark();
    await ok({ type: 'reload_metadata', args: { reload_sources: [source] } });
    expect(again().filter((x) => /TRIGGER|sp_getapplock|CREATE SCHEMA/.test(x.sql))).toEqual([]);
  });

  it('a trigger changed by hand is made again at the next reload; another source\'s triggers are left alone', async () => {
    await ok(create('t1'));
    const other = { name: 'notify_svc_t9_INSERT', schema_name: 'dbo', table_name: 'author', definition: `CREATE TRIGGER x AS\n${ownerLine('other')}BEGIN END` };
    model.triggers.push(other);
    model.triggers.find((t) => t.name === 'notify_svc_t1_INSERT')!.definition += '\n-- edited';
    const sent = mark();
    await ok({ type: 'reload_metadata', args: { reload_sources: [source] } });
    const ddl = sent().filter((x) => /^(CREATE OR ALTER|DROP) TRIGGER/.test(x.sql)).map((x) => x.sql.split(' ON ')[0]);
    expect(ddl).toEqual(['CREATE OR ALTER TRIGGER [dbo].[notify_svc_t1_INSERT]']);
    expect(model.triggers).toContainEqual(other);
    model.triggers = model.triggers.filter((t) => t !== other);
  });

  it('delete drops the triggers and archives the pending events', async () => {
    await ok(create('gone', { update: { columns: '*' } }));
    const sent = mark();
    await ok({ type: 'mssql_delete_event_trigger', args: { source, name: 'gone' } });
    expect(sent().filter((x) => x.tx !== undefined && !/^(SAVE|EXEC|SELECT)/.test(x.sql)).map((x) => [x.sql, x.params])).toEqual([
      ['DROP TRIGGER IF EXISTS [dbo].[notify_svc_gone_INSERT]', []],
      ['DROP TRIGGER IF EXISTS [dbo].[notify_svc_gone_UPDATE]', []],
      ['UPDATE [svc_catalog].[event_log] SET [archived] = 1 WHERE [trigger_name] IN (SELECT [value] FROM OPENJSON(@p1)) AND [archived] = 0', ['["gone"]']],
    ]);
    expect(model.triggers).toEqual([]);
  });

  it('bad input answers in the SPEC shape and changes nothing', async () => {
    expect(await s.metadata(create('x', { table: { schema: 'dbo', name: 'nope' } }))).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args' } });
    expect(await s.metadata(create('x', { update: { columns: ['nope'] } }))).toMatchObject({ status: 400, body: { code: 'not-exists', error: 'column "nope" does not exist', path: '$.args' } });
    expect(await s.metadata(create('x', { source: 'nowhere' }))).toMatchObject({ status: 400, body: { path: '$.args.source' } });
    expect((await s.metadata({ type: 'mssql_delete_event_trigger', args: { source, name: 'never' } })).status).toBe(400);
    await ok(create('dup'));
    expect(await s.metadata(create('dup'))).toMatchObject({ status: 400, body: { code: 'already-exists', error: 'Event trigger with name "dup" already exists', path: '$.args' } });
    // A view cannot have one (the framework's refusal); an update trigger on a table without a
    // primary key is refused with Hasura's message. Both inconsistent: nothing kept.
    const view = await s.metadata(create('v', { table: { schema: 'dbo', name: 'author_names' } }));
    expect(view.status).toBe(400);
    expect(view.body.internal[0].reason).toBe('Inconsistent object: in table "author_names": in event trigger "v": event triggers can only be defined on tables, "author_names" is not a table');
    stand.catalog.tables.rows.push([700000001, 'dbo', 'note', 'U ', null]);
    stand.catalog.columns.rows.push([700000001, 1, 'body', 'nvarchar', 'nvarchar', 'sys', -1, 0, 0, true, false, false, false, null]);
    try {
      await ok({ type: 'reload_metadata', args: { reload_sources: [source] } });
      await ok({ type: 'mssql_track_table', args: { source, table: { schema: 'dbo', name: 'note' } } });
      const nopk = await s.metadata(create('np', { table: { schema: 'dbo', name: 'note' }, update: { columns: '*' } }));
      expect(nopk.status).toBe(400);
      expect(nopk.body.internal[0].reason).toBe('Inconsistent object: in table "note": in event trigger "np": Update event triggers for MS-SQL sources are only supported on tables with primary keys');
      expect(await triggersOf('note')).toEqual([]);
      // Insert alone needs no key.
      await ok(create('np', { table: { schema: 'dbo', name: 'note' } }));
      expect(model.triggers.map((t) => t.name)).toContain('notify_svc_np_INSERT');
      await ok({ type: 'mssql_delete_event_trigger', args: { source, name: 'np' } });
    } finally {
      await ok({ type: 'mssql_untrack_table', args: { source, table: { schema: 'dbo', name: 'note' } } });
      stand.catalog.tables.rows.pop();
      stand.catalog.columns.rows.pop();
    }
    expect(await triggersOf('author_names')).toEqual([]);
    expect((await triggersOf('author')).map((t) => t.name)).toEqual(['dup']);
  });

  it('a reconcile that fails rolls back to its savepoint and leaves the metadata unchanged', async () => {
    model.failCreate = true;
    const sent = mark();
    const r = await s.metadata(create('broken'));
    expect(r.status).toBe(400);
    expect(r.body.internal[0].reason).toContain('could not set up the event trigger in the source');
    expect(sent().some((x) => x.sql === 'ROLLBACK TRANSACTION svc_event_triggers')).toBe(true);
    expect(stand.ends.at(-1)).toBe('rollback');
    expect(await triggersOf('author')).toEqual([]);
  });

  it('replace_metadata with an event trigger on an MSSQL table installs it; without, removes it', async () => {
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const ms = md.sources.find((x: { name: string }) => x.name === source);
    ms.tables.find((t: { table: { name: string } }) => t.table.name === 'author').event_triggers = [
      { name: 'replaced', definition: { enable_manual: false, delete: { columns: '*' } }, webhook: '{{HOOK}}', retry_conf: { num_retries: 0, interval_sec: 10, timeout_sec: 60 } },
    ];
    await ok({ type: 'replace_metadata', args: md });
    expect(model.triggers.map((t) => t.name)).toEqual(['notify_svc_replaced_DELETE']);
    ms.tables.find((t: { table: { name: string } }) => t.table.name === 'author').event_triggers = [];
    await ok({ type: 'replace_metadata', args: md });
    expect(model.triggers).toEqual([]);
  });
});

describe('delivery and the log operations', () => {
  it('the worker delivers an event claimed from the log to the webhook and records the outcome with its token', async () => {
    await ok(create('deliver', { retry_conf: { num_retries: 2, interval_sec: 1 } }));
    const id = '5f0e2d9a-1b1c-4c8e-9d7a-0a1b2c3d4e5f';
    const token = 'a4b1c2d3-0000-4000-8000-000000000001';
    model.claimable.push({
      id,
      schema_name: 'dbo',
      table_name: 'author',
      trigger_name: 'deliver',
      payload: JSON.stringify({ op: 'INSERT', data: { old: null, new: { id: 1, name: 'Ann' } }, session_variables: null }),
      tries: 0,
      created_at: '2026-11-26T19:00:00.123456Z',
      token,
    });
    const [got] = await hook.waitFor(1);
    expect(got!.body).toEqual({
      id,
      created_at: '2026-11-26T19:00:00.123456Z',
      trigger: { name: 'deliver' },
      table: { schema: 'dbo', name: 'author' },
      event: { op: 'INSERT', data: { old: null, new: { id: 1, name: 'Ann' } }, session_variables: null },
      delivery_info: { current_retry: 0, max_retries: 2 },
    });
    const rec = await until(async () => stand.statements.find((x) => x.sql === RECORD));
    const [outcome] = JSON.parse(rec.params[0]!) as Record<string, unknown>[];
    expect(rec.params).toHaveLength(1);
    expect(outcome).toMatchObject({ id, trigger_name: 'deliver', status: 200, token, delivered: true, error: false, retry_in: null });
    const claim = stand.statements.filter((x) => x.sql === CLAIM && x.params[0]!.includes('"deliver"')).at(-1)!;
    expect(JSON.parse(claim.params[0]!)).toEqual([{ name: 'deliver', secs: expect.any(Number) }]);
    expect(Number(claim.params[1])).toBeGreaterThan(0);
  });

  it('invoke, get_event_logs, get_event_by_id and redeliver', async () => {
    await ok(create('manual', { enable_manual: true }));
    const sent = mark();
    const inv = await ok({ type: 'mssql_invoke_event_trigger', args: { source, name: 'manual', payload: { id: 7 } } });
    expect(inv).toEqual({ event_id: '0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11' });
    const ins = sent().find((x) => x.sql === INSERT_MANUAL)!;
    expect(ins.params.slice(0, 3)).toEqual(['dbo', 'author', 'manual']);
    expect(JSON.parse(ins.params[3]!)).toEqual({ op: 'MANUAL', data: { old: null, new: { id: 7 } }, session_variables: { 'x-svc-role': 'admin' } });
    expect(ins.tx).toBeDefined();

    expect(await s.metadata({ type: 'mssql_invoke_event_trigger', args: { source, name: 'deliverless', payload: {} } })).toMatchObject({ status: 400 });

    model.eventRows = [['0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11', 'dbo', 'author', 'manual', '{"op":"MANUAL"}', false, false, 0, '2026-11-26T19:00:00.000000Z', null, null, false]];
    const logs = await ok({ type: 'mssql_get_event_logs', args: { source, name: 'manual', status: 'pending', limit: 5, offset: 2 } });
    expect(logs).toEqual([expect.objectContaining({ id: '0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11', payload: { op: 'MANUAL' }, delivered: false, archived: false })]);
    const read = stand.statements.filter((x) => x.sql === eventsSql('pending')).at(-1)!;
    expect(read.params).toEqual(['manual', '5', '2']);

    const byId = await ok({ type: 'mssql_get_event_by_id', args: { source, event_id: '0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11' } });
    expect(byId).toMatchObject({ event: { trigger_name: 'manual' }, invocations: [] });
    expect(await s.metadata({ type: 'mssql_get_event_by_id', args: { source, event_id: 'not-a-guid' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'event id not-a-guid does not exist', path: '$.args' },
    });

    expect(await s.metadata({ type: 'mssql_redeliver_event', args: { source, event_id: 'missing' } })).toMatchObject({ status: 400, body: { code: 'not-exists', error: 'event not found' } });
    model.redeliverRow = ['manual', 1.5];
    expect(await s.metadata({ type: 'mssql_redeliver_event', args: { source, event_id: 'busy-one' } })).toMatchObject({ status: 400, body: { code: 'busy' } });
    model.redeliverRow = ['manual', null];
    const r = mark();
    await ok({ type: 'mssql_redeliver_event', args: { source, event_id: '0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11' } });
    expect(r().find((x) => x.sql === REDELIVER)).toMatchObject({ params: ['0b9f3c2e-6a53-4bb5-9a27-3f0c1b2a4d11'] });
  });
});

describe('a source dropped', () => {
  it('takes its triggers with it, in a transaction on its last connection', async () => {
    await ok(create('last', { delete: { columns: '*' } }));
    expect(model.triggers.map((t) => t.name).sort()).toEqual(['notify_svc_last_DELETE', 'notify_svc_last_INSERT']);
    const sent = mark();
    await ok({ type: 'mssql_drop_source', args: { name: source, cascade: true } });
    expect(sent().filter((x) => /^(SAVE|DROP|UPDATE)/.test(x.sql)).map((x) => [x.sql.slice(0, 60), x.params, x.tx !== undefined])).toEqual([
      ['SAVE TRANSACTION svc_event_triggers', [], true],
      ['DROP TRIGGER IF EXISTS [dbo].[notify_svc_last_INSERT]', [], true],
      ['DROP TRIGGER IF EXISTS [dbo].[notify_svc_last_DELETE]', [], true],
      ['UPDATE [svc_catalog].[event_log] SET [archived] = 1 WHERE [t', ['["last"]'], true],
    ]);
    expect(model.triggers).toEqual([]);
    expect(stand.ends.at(-1)).toBe('commit');
  });
});
