/**
 * MS SQL Server's event capture (SourceKind.events; Note [Event capture] in
 * plugins/database/model/types.ts): the engine's tables in the database's schema `svc_catalog`
 * (`event_log`, `event_invocation_logs`, shaped after Hasura's MSSQL `hdb_catalog` ones), one
 * T-SQL AFTER trigger per event trigger and operation (Note [MSSQL capture triggers]), their
 * reconciliation with the metadata (Note [Reconciling MSSQL capture]), and the event log's
 * statements: the worker's claim, outcomes and release, and the operations' reads and changes.
 * SQL Server has no LISTEN: the worker polls (no `channel`).
 */
import { createHash } from 'node:crypto';
import { SvcError } from '../../core/errors.js';
import { eventOf, invocationOf, type EventRow, type CaptureDef, type CaptureSpec, type ClaimedEvent, type EventCapture, type InvocationRow, type QualifiedTable, type SqlExecutor, type TableInfo } from '../database/index.js';
import { nlit, quoteIdent } from './identifiers.js';

type Op = CaptureDef['op'];

export const CATALOG = 'svc_catalog';
export const EVENT_LOG = `[${CATALOG}].[event_log]`;
export const INVOCATION_LOGS = `[${CATALOG}].[event_invocation_logs]`;
const TRIGGER_PREFIX = 'notify_svc_';
/** sp_getapplock's resource serialising capture changes of several instances on one database. */
const LOCK = `EXEC sp_getapplock @Resource = N'svc_event_capture', @LockMode = N'Exclusive', @LockOwner = N'Transaction'`;

/** The engine's tables (Hasura's MSSQL event_log and event_invocation_logs, with a claim token
 * and the invocation's duration), made when missing: one batch, safe to run again. */
export const CATALOG_DDL = `IF SCHEMA_ID(N'${CATALOG}') IS NULL EXEC(N'CREATE SCHEMA [${CATALOG}]');
IF OBJECT_ID(N'${CATALOG}.event_log', N'U') IS NULL
BEGIN
  CREATE TABLE ${EVENT_LOG} (
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
  CREATE INDEX [event_log_fetch_events] ON ${EVENT_LOG} ([locked], [next_retry_at], [created_at]) WHERE [delivered] = 0 AND [error] = 0 AND [archived] = 0;
  CREATE INDEX [event_log_trigger_name] ON ${EVENT_LOG} ([trigger_name]);
END;
IF OBJECT_ID(N'${CATALOG}.event_invocation_logs', N'U') IS NULL
BEGIN
  CREATE TABLE ${INVOCATION_LOGS} (
    [id] uniqueidentifier NOT NULL DEFAULT NEWID() PRIMARY KEY,
    [trigger_name] nvarchar(850) NULL,
    [event_id] uniqueidentifier NULL,
    [status] int NULL,
    [request] nvarchar(max) NULL,
    [response] nvarchar(max) NULL,
    [duration_ms] float NULL,
    [created_at] datetimeoffset(7) NOT NULL DEFAULT SYSDATETIMEOFFSET()
  );
  CREATE INDEX [event_invocation_logs_event_id] ON ${INVOCATION_LOGS} ([event_id]);
  CREATE INDEX [event_invocation_logs_trigger_name] ON ${INVOCATION_LOGS} ([trigger_name], [created_at]);
END;`;

export const HAS_CATALOG = `SELECT CASE WHEN OBJECT_ID(N'${CATALOG}.event_log', N'U') IS NOT NULL AND OBJECT_ID(N'${CATALOG}.event_invocation_logs', N'U') IS NOT NULL THEN 1 ELSE 0 END AS [ok]`;

async function hasCatalog(exec: SqlExecutor): Promise<boolean> {
  const [r] = await exec.query<{ ok: number | boolean }>(HAS_CATALOG);
  return !!r?.ok;
}

/** Creates the engine's tables when they are missing (in a transaction: takes the lock). */
async function ensureCatalog(exec: SqlExecutor): Promise<boolean> {
  if (await hasCatalog(exec)) return false;
  await exec.query(LOCK);
  if (await hasCatalog(exec)) return false;
  await exec.query(CATALOG_DDL);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Triggers

/*
 * Note [MSSQL capture triggers]
 * SQL Server has statement-level triggers only: an AFTER trigger sees the statement's rows in
 * the pseudo-tables `inserted` and `deleted`, and writes one event per row with INSERT ... SELECT
 * over them, in the changing statement's transaction (as Hasura's MSSQL backend does).
 *   - A row's JSON is built with FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES from
 *     the payload columns named one by one (`*`: the table's columns as introspected, so a column
 *     added later is in the payload once the source is introspected again and the trigger made
 *     again; `define` is called with the table's TableInfo). CLR columns (geography, geometry,
 *     hierarchyid) are written as their text, as the compiler writes them.
 *   - An UPDATE's old and new rows are paired by the primary key, as Hasura pairs them: an
 *     update trigger on a table without one is refused (Hasura's message). A row whose key the
 *     statement changed has no old row: its event has `old: null` (Hasura's MSSQL spec too).
 *   - An UPDATE fires only when a listened column changed: `NOT EXISTS (SELECT new INTERSECT
 *     SELECT old)`, which treats two NULLs as equal; types SQL Server cannot compare (xml, text,
 *     ntext, image, geography, geometry) are compared as nvarchar(max)/varbinary(max).
 *   - Session variables: Hasura's MSSQL triggers record none (its payload has op and data only).
 *     Svc writes `session_variables: null`: SESSION_CONTEXT outlives a transaction on a pooled
 *     connection and a single-statement mutation runs on the pool (connection.ts), so it could
 *     only be had for some requests.
 *   - The trigger's body begins with a line naming the source that made it (Note [Reconciling
 *     MSSQL capture]); only identifiers (bracket-quoted) and N'' literals are spliced.
 */

export const triggerName = (trigger: string, op: Op) => `${TRIGGER_PREFIX}${trigger}_${op}`;

export function triggerOf(name: string): { trigger: string; op: Op } | undefined {
  const m = /^notify_svc_(.+)_(INSERT|UPDATE|DELETE)$/.exec(name);
  return m ? { trigger: m[1]!, op: m[2] as Op } : undefined;
}

/** The first line of a trigger's body: which source made it. */
export const ownerLine = (source: string) => `-- svc event trigger of source ${JSON.stringify(source)}\n`;

/** Types INTERSECT cannot compare, and what they are compared as (CLR spatial types by their
 * serialized bytes). */
const UNCOMPARABLE: Record<string, string> = { xml: 'nvarchar(max)', text: 'nvarchar(max)', ntext: 'nvarchar(max)', image: 'varbinary(max)', geography: 'varbinary(max)', geometry: 'varbinary(max)' };
const CLR = new Set(['geography', 'geometry', 'hierarchyid']);

export interface TriggerDef extends CaptureDef {
  /** `CREATE OR ALTER TRIGGER ... AS` up to the body. */
  header: string;
  /** The body without the owner line (`hash` is its md5). */
  body: string;
}

export function triggerDef(trigger: string, table: QualifiedTable, op: Op, spec: CaptureSpec, info?: TableInfo): TriggerDef {
  if (!info) throw new Error(`table "${table.schema}.${table.name}" is not known to the source`);
  const udt = new Map(info.columns.map((c) => [c.name, c.udt]));
  const payloadCols = spec.payload === undefined || spec.payload === '*' ? info.columns.map((c) => c.name) : spec.payload;
  const value = (alias: string, c: string) => (CLR.has(udt.get(c) ?? '') ? `${alias}.${quoteIdent(c)}.ToString()` : `${alias}.${quoteIdent(c)}`);
  const rowSelect = (alias: string) => `(SELECT ${payloadCols.map((c) => `${value(alias, c)} AS ${quoteIdent(c)}`).join(', ')} FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)`;
  // JSON_QUERY: FOR JSON embeds the text as JSON, not as a string.
  const row = (alias: string) => `JSON_QUERY(${rowSelect(alias)})`;
  const name = triggerName(trigger, op);
  let oldJson = 'NULL';
  let newJson = 'NULL';
  let from: string;
  let where = '';
  if (op === 'INSERT') {
    newJson = row('i');
    from = 'inserted AS i';
  } else if (op === 'DELETE') {
    oldJson = row('d');
    from = 'deleted AS d';
  } else {
    const pk = info.primaryKey?.columns ?? [];
    if (info.relation !== 'table' || pk.length === 0) throw new Error('Update event triggers for MS-SQL sources are only supported on tables with primary keys');
    const listen = spec.columns === '*' ? info.columns.map((c) => c.name) : spec.columns;
    const cmp = (alias: string) => listen.map((c) => (UNCOMPARABLE[udt.get(c) ?? ''] ? `CAST(${alias}.${quoteIdent(c)} AS ${UNCOMPARABLE[udt.get(c)!]})` : `${alias}.${quoteIdent(c)}`)).join(', ');
    oldJson = `JSON_QUERY(CASE WHEN d.${quoteIdent(pk[0]!)} IS NULL THEN NULL ELSE ${rowSelect('d')} END)`;
    newJson = row('i');
    from = `inserted AS i LEFT JOIN deleted AS d ON ${pk.map((c) => `i.${quoteIdent(c)} = d.${quoteIdent(c)}`).join(' AND ')}`;
    where = `\n  WHERE d.${quoteIdent(pk[0]!)} IS NULL OR NOT EXISTS (SELECT ${cmp('i')} INTERSECT SELECT ${cmp('d')})`;
  }
  const header = `CREATE OR ALTER TRIGGER ${quoteIdent(table.schema)}.${quoteIdent(name)} ON ${quoteIdent(table.schema)}.${quoteIdent(table.name)} AFTER ${op} AS\n`;
  const body = `BEGIN
  SET NOCOUNT ON;
  INSERT INTO ${EVENT_LOG} ([schema_name], [table_name], [trigger_name], [payload])
  SELECT ${nlit(table.schema)}, ${nlit(table.name)}, ${nlit(trigger)},
    (SELECT N'${op}' AS [op], ${oldJson} AS [data.old], ${newJson} AS [data.new], NULL AS [session_variables] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)
  FROM ${from}${where};
END`;
  return { id: name, trigger, op, table, hash: createHash('md5').update(header + body).digest('hex'), header, body };
}

// ---------------------------------------------------------------------------------------------
// Reconciliation

/*
 * Note [Reconciling MSSQL capture]
 * As PostgreSQL's (Note [Reconciling capture] in plugins/postgres/event-capture.ts): read what
 * exists, and only when something differs take the build's transaction, the capture lock
 * (sp_getapplock, held to the transaction's end), read again, and make the difference.
 *   - A trigger is SQL Server's own object in its table's schema, named `notify_svc_<trigger>_<OP>`
 *     as Hasura names its `notify_hasura_...`; its body's first line names the source that made
 *     it (`ownerLine`), so several sources on one database each reconcile only their own.
 *   - What exists is compared by its text (sys.sql_modules.definition from the owner line on,
 *     and the table it is on): a trigger changed by hand, or made by an older engine, is made
 *     again with CREATE OR ALTER; one on another table (the metadata moved it) is dropped first,
 *     since ALTER cannot move a trigger.
 *   - Triggers the metadata no longer has are dropped, and the pending events of the event
 *     triggers not in `keep` archived.
 */

export const READ_TRIGGERS = `SELECT tr.[name] AS [name], s.[name] AS [schema_name], t.[name] AS [table_name], m.[definition] AS [definition]
FROM sys.triggers AS tr
JOIN sys.tables AS t ON t.[object_id] = tr.[parent_id]
JOIN sys.schemas AS s ON s.[schema_id] = t.[schema_id]
JOIN sys.sql_modules AS m ON m.[object_id] = tr.[object_id]
WHERE tr.[name] LIKE N'notify[_]svc[_]%' AND CHARINDEX(@p1, m.[definition]) > 0`;

interface Existing {
  name: string;
  schema_name: string;
  table_name: string;
  definition: string;
}

async function readExisting(exec: SqlExecutor, source: string): Promise<Existing[]> {
  const owner = ownerLine(source);
  const rows = await exec.query<Existing>(READ_TRIGGERS, [owner]);
  // CHARINDEX follows the database's collation (case-insensitive by default): check exactly.
  return rows.filter((r) => r.definition.includes(owner) && triggerOf(r.name));
}

/** The text of an existing trigger from its owner line on (what `create` writes after the header). */
const installed = (e: Existing, owner: string) => e.definition.slice(e.definition.indexOf(owner)).trimEnd();

interface Plan {
  drop: { schema: string; name: string }[];
  create: TriggerDef[];
  gone: string[];
  needsCatalog: boolean;
}

function plan(source: string, existing: Existing[], desired: readonly TriggerDef[], catalog: boolean): Plan {
  const owner = ownerLine(source);
  const out: Plan = { drop: [], create: [], gone: [], needsCatalog: desired.length > 0 && !catalog };
  const want = new Map(desired.map((d) => [d.id, d]));
  for (const e of existing) {
    const d = want.get(e.name);
    if (!d) {
      out.drop.push({ schema: e.schema_name, name: e.name });
      out.gone.push(e.name);
    } else if (e.schema_name !== d.table.schema || e.table_name !== d.table.name) {
      out.drop.push({ schema: e.schema_name, name: e.name });
    }
  }
  for (const d of desired) {
    const same = existing.find((e) => e.name === d.id && e.schema_name === d.table.schema && e.table_name === d.table.name);
    if (!same || installed(same, owner) !== (owner + d.body).trimEnd()) out.create.push(d);
  }
  return out;
}

const isEmpty = (p: Plan) => !p.needsCatalog && !p.drop.length && !p.create.length;

export async function reconcile(source: string, read: SqlExecutor, tx: () => Promise<SqlExecutor>, desired: readonly TriggerDef[], keep: ReadonlySet<string>) {
  const first = plan(source, await readExisting(read, source), desired, desired.length === 0 || (await hasCatalog(read)));
  if (isEmpty(first)) return { changed: false, archived: [] as string[] };
  const exec = await tx();
  await exec.query(LOCK);
  const catalog = await hasCatalog(exec);
  const p = plan(source, await readExisting(exec, source), desired, desired.length === 0 || catalog);
  if (isEmpty(p)) return { changed: false, archived: [] as string[] };
  if (p.needsCatalog) await exec.query(CATALOG_DDL);
  for (const d of p.drop) await exec.query(`DROP TRIGGER IF EXISTS ${quoteIdent(d.schema)}.${quoteIdent(d.name)}`);
  // CREATE TRIGGER must be the only statement of its batch.
  for (const d of p.create) await exec.query(d.header + ownerLine(source) + d.body);
  const archived = [...new Set(p.gone.map((n) => triggerOf(n)!.trigger).filter((t) => !keep.has(t)))];
  if (archived.length > 0 && (catalog || p.needsCatalog)) {
    await exec.query(`UPDATE ${EVENT_LOG} SET [archived] = 1 WHERE [trigger_name] IN (SELECT [value] FROM OPENJSON(@p1)) AND [archived] = 0`, [JSON.stringify(archived)]);
  }
  return { changed: true, archived };
}

// ---------------------------------------------------------------------------------------------
// The event log

/** A datetimeoffset as ISO 8601 in UTC with six fraction digits, as PostgreSQL's capture writes
 * it (style 126 alone drops a zero fraction). */
const ts = (col: string) => {
  const utc = `CAST(SWITCHOFFSET(${col}, '+00:00') AS datetime2(6))`;
  return `CONVERT(nvarchar(19), ${utc}, 126) + N'.' + RIGHT(N'00000' + CAST(DATEPART(MICROSECOND, ${utc}) AS nvarchar(6)), 6) + N'Z'`;
};
const eid = (col: string) => `LOWER(CONVERT(nvarchar(36), ${col}))`;

export const EVENT_COLUMNS = `${eid('[id]')} AS [id], [schema_name], [table_name], [trigger_name], [payload], [delivered], [error], [tries], ${ts('[created_at]')} AS [created_at], CASE WHEN [locked] IS NULL THEN NULL ELSE ${ts('[locked]')} END AS [locked], CASE WHEN [next_retry_at] IS NULL THEN NULL ELSE ${ts('[next_retry_at]')} END AS [next_retry_at], [archived]`;
export const INVOCATION_COLUMNS = `${eid('[id]')} AS [id], [trigger_name], ${eid('[event_id]')} AS [event_id], [status] AS [http_status], [request], [response], [duration_ms], ${ts('[created_at]')} AS [created_at]`;


export const INSERT_MANUAL = `SET NOCOUNT ON;
DECLARE @id uniqueidentifier = NEWID();
INSERT INTO ${EVENT_LOG} ([id], [schema_name], [table_name], [trigger_name], [payload]) VALUES (@id, @p1, @p2, @p3, @p4);
SELECT ${eid('@id')} AS [id];`;

/** A manual event: its payload is made here (it is all values), `op: MANUAL`, the row as `new`. */
async function insertManual(exec: SqlExecutor, table: QualifiedTable, trigger: string, payload: unknown, session: Record<string, string>): Promise<string> {
  const doc = JSON.stringify({ op: 'MANUAL', data: { old: null, new: payload ?? null }, session_variables: session });
  const [r] = await exec.query<{ id: string }>(INSERT_MANUAL, [table.schema, table.name, trigger, doc]);
  return r!.id;
}

export const REDELIVER_READ = `SELECT [trigger_name], CAST(DATEDIFF_BIG(MILLISECOND, [locked], SYSDATETIMEOFFSET()) AS float) / 1000 AS [locked_for] FROM ${EVENT_LOG} WITH (UPDLOCK, ROWLOCK) WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1)`;
export const REDELIVER = `UPDATE ${EVENT_LOG} SET [delivered] = 0, [error] = 0, [tries] = 0, [next_retry_at] = NULL, [locked] = NULL, [token] = NULL WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1)`;

/** Hasura's redeliver: the event must exist and not be held by a delivery. */
async function redeliver(exec: SqlExecutor, id: string, leaseSec: (trigger: string) => number): Promise<void> {
  if (!(await hasCatalog(exec))) throw new SvcError('not-exists', 'event not found', { path: '$.args' });
  const [ev] = await exec.query<{ trigger_name: string; locked_for: number | null }>(REDELIVER_READ, [id]);
  if (!ev) throw new SvcError('not-exists', 'event not found', { path: '$.args' });
  if (ev.locked_for !== null && ev.locked_for < leaseSec(ev.trigger_name)) throw new SvcError('busy', 'event is already being processed', { path: '$.args' });
  await exec.query(REDELIVER, [id]);
}

const page = `ORDER BY [created_at] DESC, [id] OFFSET CAST(@p3 AS int) ROWS FETCH NEXT CAST(@p2 AS int) ROWS ONLY`;

export const eventsSql = (status: 'processed' | 'pending' | undefined) =>
  `SELECT ${EVENT_COLUMNS} FROM ${EVENT_LOG} WHERE [trigger_name] = @p1${
    status === 'pending' ? ' AND [delivered] = 0 AND [error] = 0 AND [archived] = 0' : status === 'processed' ? ' AND ([delivered] = 1 OR [error] = 1) AND [archived] = 0' : ''
  } ${page}`;
export const INVOCATIONS = `SELECT ${INVOCATION_COLUMNS} FROM ${INVOCATION_LOGS} WHERE [trigger_name] = @p1 ${page}`;
export const EVENT_BY_ID = `SELECT ${EVENT_COLUMNS} FROM ${EVENT_LOG} WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1)`;
export const INVOCATIONS_OF_EVENT = `SELECT ${INVOCATION_COLUMNS} FROM ${INVOCATION_LOGS} WHERE [event_id] = TRY_CONVERT(uniqueidentifier, @p1) ${page}`;

async function events(exec: SqlExecutor, trigger: string, status: 'processed' | 'pending' | undefined, limit: number, offset: number) {
  if (!(await hasCatalog(exec))) return [];
  return (await exec.query<EventRow>(eventsSql(status), [trigger, limit, offset])).map(eventOf);
}

async function invocations(exec: SqlExecutor, trigger: string, limit: number, offset: number) {
  if (!(await hasCatalog(exec))) return [];
  return (await exec.query<InvocationRow>(INVOCATIONS, [trigger, limit, offset])).map(invocationOf);
}

async function eventById(exec: SqlExecutor, id: string, limit: number, offset: number) {
  const missing = () => new SvcError('not-exists', `event id ${id} does not exist`, { path: '$.args' });
  if (!(await hasCatalog(exec))) throw missing();
  const [ev] = await exec.query<EventRow>(EVENT_BY_ID, [id]);
  if (!ev) throw missing();
  const inv = await exec.query<InvocationRow>(INVOCATIONS_OF_EVENT, [id, limit, offset]);
  return { event: eventOf(ev), invocations: inv.map(invocationOf) };
}

/*
 * The claim, in the shape of Hasura's MSSQL fetch: the oldest claimable events of the leased
 * triggers, in its order (ascending puts NULLs first in SQL Server: unclaimed, then never
 * retried, then by age), chosen by a TOP (n) ... ORDER BY subquery that takes update locks on
 * them and skips rows another claim holds (UPDLOCK, READPAST, ROWLOCK), so that two instances
 * never take one event; the UPDATE around it (UPDATE TOP would not keep the order) sets the
 * claim's time and a new token (NEWID), the fence of the outcome, and OUTPUTs the events.
 */
export const CLAIM = `SET NOCOUNT ON;
UPDATE ${EVENT_LOG} SET [locked] = SYSDATETIMEOFFSET(), [token] = NEWID()
OUTPUT ${eid('inserted.[id]')} AS [id], inserted.[schema_name], inserted.[table_name], inserted.[trigger_name], inserted.[payload], inserted.[tries], ${ts('inserted.[created_at]')} AS [created_at], ${eid('inserted.[token]')} AS [token]
WHERE [id] IN (
  SELECT TOP (CAST(@p2 AS int)) l.[id]
  FROM ${EVENT_LOG} AS l WITH (UPDLOCK, READPAST, ROWLOCK)
  JOIN OPENJSON(@p1) WITH ([name] nvarchar(850) '$.name', [secs] int '$.secs') AS x ON x.[name] = l.[trigger_name]
  WHERE l.[delivered] = 0 AND l.[error] = 0 AND l.[archived] = 0
    AND (l.[locked] IS NULL OR l.[locked] < DATEADD(SECOND, -x.[secs], SYSDATETIMEOFFSET()))
    AND (l.[next_retry_at] IS NULL OR l.[next_retry_at] <= SYSDATETIMEOFFSET())
  ORDER BY l.[locked], l.[next_retry_at], l.[created_at]
);`;

const OUTCOMES = `OPENJSON(@p1) WITH ([id] nvarchar(36) '$.id', [trigger_name] nvarchar(850) '$.trigger_name', [status] int '$.status', [request] nvarchar(max) '$.request' AS JSON, [response] nvarchar(max) '$.response' AS JSON, [duration_ms] float '$.duration_ms', [token] nvarchar(36) '$.token', [delivered] bit '$.delivered', [error] bit '$.error', [retry_in] float '$.retry_in') AS x`;

/** The outcomes and their invocation logs in one batch and transaction; an event's row only
 * where its claim still holds (its token). */
export const RECORD = `SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION;
INSERT INTO ${INVOCATION_LOGS} ([event_id], [trigger_name], [status], [request], [response], [duration_ms])
SELECT TRY_CONVERT(uniqueidentifier, x.[id]), x.[trigger_name], x.[status], x.[request], x.[response], x.[duration_ms] FROM ${OUTCOMES};
UPDATE e SET [tries] = e.[tries] + 1, [delivered] = x.[delivered], [error] = x.[error], [locked] = NULL, [token] = NULL,
  [next_retry_at] = CASE WHEN x.[retry_in] IS NULL THEN NULL ELSE DATEADD(MILLISECOND, CAST(x.[retry_in] * 1000 AS int), SYSDATETIMEOFFSET()) END
FROM ${EVENT_LOG} AS e JOIN ${OUTCOMES} ON e.[id] = TRY_CONVERT(uniqueidentifier, x.[id]) AND e.[token] = TRY_CONVERT(uniqueidentifier, x.[token]);
COMMIT TRANSACTION;`;

export const RELEASE = `UPDATE ${EVENT_LOG} SET [locked] = NULL, [token] = NULL WHERE [id] = TRY_CONVERT(uniqueidentifier, @p1) AND [token] = TRY_CONVERT(uniqueidentifier, @p2)`;

/** T-SQL savepoints: SAVE TRANSACTION and ROLLBACK TRANSACTION <name>; none is released. The
 * name is the build's constant, a plain identifier (checked, not quoted). */
const savepoint = (name: string) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,31}$/.test(name)) throw new Error(`not a savepoint name: ${name}`);
  return { set: `SAVE TRANSACTION ${name}`, release: null, rollback: `ROLLBACK TRANSACTION ${name}` };
};

/** MS SQL Server's event capture and log (SourceKind.events). No `channel`: the worker polls. */
export const mssqlEvents: EventCapture = {
  notifyEverySec: 0,
  savepoint,
  define: triggerDef,
  reconcile: (source, read, tx, desired, keep) => reconcile(source, read, tx, desired as readonly TriggerDef[], keep),
  ensureLog: ensureCatalog,
  insertManual,
  redeliver,
  events,
  invocations,
  eventById,
  claim: (exec, lease, n) => exec.query<ClaimedEvent>(CLAIM, [JSON.stringify(lease), n]),
  record: async (exec, outcomes) => {
    await exec.query(RECORD, [`[${outcomes.join(',')}]`]);
  },
  release: async (exec, id, token) => {
    await exec.query(RELEASE, [id, token]);
  },
};
