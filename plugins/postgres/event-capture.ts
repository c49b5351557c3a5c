/**
 * PostgreSQL's event capture (SourceKind.events; Note [Event capture] in
 * plugins/database/model/types.ts): the engine's tables in the source's schema `svc_catalog`
 * (`event_log`, `event_invocation_logs`), one PL/pgSQL trigger function and one SQL trigger per
 * event trigger and operation, their reconciliation with the metadata (Note [Reconciling
 * capture]), and the event log's statements: the delivery worker's claim, outcomes and release
 * (Notes [Claiming events] and [Recording outcomes] in plugins/event-triggers/worker.ts), and the
 * operations' reads and changes.
 */
import { createHash } from 'node:crypto';
import { SvcError } from '../../core/errors.js';
import { eventOf, invocationOf, type EventRow, type CaptureDef, type CaptureSpec, type ClaimedEvent, type EventCapture, type InvocationRow, type QualifiedTable, type SqlExecutor } from '../database/index.js';

type Op = CaptureDef['op'];
type SubscribeColumns = CaptureSpec['columns'];

export const CATALOG = 'svc_catalog';
export const EVENT_LOG = `${CATALOG}.event_log`;
export const INVOCATION_LOGS = `${CATALOG}.event_invocation_logs`;
/** The channel a transaction that wrote events notifies at commit (Note [Waking on commit] in
 * plugins/event-triggers/worker.ts). */
export const NOTIFY_CHANNEL = 'svc_event_log';
/** A session notifies at most once in this many seconds (Note [Waking on commit] in
 * plugins/event-triggers/worker.ts). */
export const NOTIFY_EVERY_SEC = 2;
const FUNCTION_PREFIX = 'notify_svc_';
/** pg_advisory_xact_lock key serialising capture changes of several instances on one source. */
const LOCK_KEY = 7_364_231_984_511n;

export const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;
const quoteTable = (t: QualifiedTable) => `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;

/** A text literal; with backslashes, an escape string, whatever standard_conforming_strings says. */
export function quoteLiteral(s: string): string {
  const q = `'${s.replace(/'/g, "''")}'`;
  return s.includes('\\') ? `E${q.replace(/\\/g, '\\\\')}` : q;
}

/** The engine's tables in a source. Idempotent; run under the capture lock (`lock`). */
const CATALOG_DDL = [
  `create schema if not exists ${CATALOG}`,
  `create table if not exists ${EVENT_LOG} (
    id text primary key default gen_random_uuid()::text,
    schema_name text not null,
    table_name text not null,
    trigger_name text not null,
    payload jsonb not null,
    delivered boolean not null default false,
    error boolean not null default false,
    tries integer not null default 0,
    -- clock_timestamp: the events of one transaction keep the order of its row changes.
    created_at timestamptz not null default clock_timestamp(),
    locked timestamptz,
    next_retry_at timestamptz,
    archived boolean not null default false
  )`,
  // The worker's claim scans this index in its order (CLAIM below).
  `create index if not exists event_log_fetch_events on ${EVENT_LOG} (locked nulls first, next_retry_at nulls first, created_at)
    where delivered = false and error = false and archived = false`,
  `create index if not exists event_log_trigger_name on ${EVENT_LOG} (trigger_name)`,
  `create table if not exists ${INVOCATION_LOGS} (
    id text primary key default gen_random_uuid()::text,
    trigger_name text,
    event_id text,
    status integer,
    request json,
    response json,
    duration_ms double precision,
    created_at timestamptz not null default now()
  )`,
  `create index if not exists event_invocation_logs_event_id on ${INVOCATION_LOGS} (event_id)`,
  `create index if not exists event_invocation_logs_trigger_name on ${INVOCATION_LOGS} (trigger_name, created_at)`,
];

/** Takes the capture lock of the source for the rest of the transaction. */
export async function lock(exec: SqlExecutor): Promise<void> {
  await exec.query(`select pg_advisory_xact_lock(${LOCK_KEY})`);
}

/** Whether the engine's tables exist in the source. */
export async function hasCatalog(exec: SqlExecutor): Promise<boolean> {
  const [r] = await exec.query<{ ok: boolean }>(`select to_regclass('${EVENT_LOG}') is not null and to_regclass('${INVOCATION_LOGS}') is not null as ok`);
  return !!r?.ok;
}

/** Creates the engine's tables when they are missing (inside a transaction: takes the lock). */
export async function ensureCatalog(exec: SqlExecutor): Promise<boolean> {
  if (await hasCatalog(exec)) return false;
  await lock(exec);
  if (await hasCatalog(exec)) return false;
  for (const ddl of CATALOG_DDL) await exec.query(ddl);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Trigger functions

/** The SQL trigger (and its function) of an event trigger's operation: `notify_svc_<name>_<OP>`. */
export const functionName = (trigger: string, op: Op) => `${FUNCTION_PREFIX}${trigger}_${op}`;

/** The event trigger's name of a function name made by `functionName`. */
export function triggerOfFunction(fn: string): { trigger: string; op: Op } | undefined {
  const m = /^notify_svc_(.+)_(INSERT|UPDATE|DELETE)$/.exec(fn);
  return m ? { trigger: m[1]!, op: m[2] as Op } : undefined;
}

/** What a row's JSON is: all its columns, or the listed ones (under their names). `payload.*` is
 * the whole row even when a column is named like the subquery. */
function rowJson(rec: 'OLD' | 'NEW', cols: SubscribeColumns): string {
  if (cols === '*') return `to_jsonb(${rec})`;
  const fields = cols.map((c) => `${rec}.${quoteIdent(c)} as ${quoteIdent(c)}`).join(', ');
  return `(select to_jsonb(payload.*) from (select ${fields}) payload)`;
}

/** An UPDATE fires only when a listened column changed. record_image_ne (the `*<>` operator,
 * which the parser would expand column by column between two row constructors) compares the
 * values' binary images, so it also works for types without an equality operator (json) and
 * treats two NULLs as equal. */
function changed(cols: SubscribeColumns): string {
  if (cols === '*') return 'record_image_ne(OLD, NEW)';
  const row = (rec: string) => `row(${cols.map((c) => `${rec}.${quoteIdent(c)}`).join(', ')})`;
  return `record_image_ne(${row('OLD')}, ${row('NEW')})`;
}

/** A capture as PostgreSQL installs it: `id` is the trigger function's name, `hash` the md5 of
 * its body (pg_proc.prosrc: a function changed by hand, or made by an older version, is made
 * again), `create` the statement that makes it. */
export interface FunctionDef extends CaptureDef {
  create: string;
}

/**
 * The trigger function of an event trigger's operation. It writes one event row in the same
 * transaction as the row change: `{op, data: {old, new}, session_variables}`, the payload columns
 * as the spec says, the session variables from the transaction-local setting `svc.user` (set by
 * the GraphQL mutation path; NULL when unset), and notifies NOTIFY_CHANNEL unless its session did
 * within NOTIFY_EVERY_SEC (Note [Waking on commit] in plugins/event-triggers/worker.ts). Only identifiers and the trigger's name (checked
 * against `[A-Za-z][A-Za-z0-9_-]*`, and quoted anyway) are spliced; the body is dollar-quoted with
 * a tag it does not contain.
 */
export function functionDef(trigger: string, table: QualifiedTable, op: Op, spec: CaptureSpec): FunctionDef {
  const fn = functionName(trigger, op);
  const payload = spec.payload ?? '*';
  const oldJson = op === 'INSERT' ? 'null' : rowJson('OLD', payload);
  const newJson = op === 'DELETE' ? 'null' : rowJson('NEW', payload);
  const fire = op === 'UPDATE' ? changed(spec.columns) : 'true';
  const body = `
begin
  if ${fire} then
    insert into ${EVENT_LOG} (schema_name, table_name, trigger_name, payload)
    values (tg_table_schema, tg_table_name, ${quoteLiteral(trigger)}, jsonb_build_object(
      'op', tg_op,
      'data', jsonb_build_object('old', ${oldJson}, 'new', ${newJson}),
      'session_variables', nullif(current_setting('svc.user', true), '')::jsonb));
    if coalesce(current_setting('svc.event_notified_at', true), '') = ''
       or current_setting('svc.event_notified_at', true)::float8 < extract(epoch from clock_timestamp()) - ${NOTIFY_EVERY_SEC} then
      perform pg_notify(${quoteLiteral(NOTIFY_CHANNEL)}, '');
      perform set_config('svc.event_notified_at', extract(epoch from clock_timestamp())::text, false);
    end if;
  end if;
  return null;
end
`;
  let tag = '$svc$';
  for (let i = 0; body.includes(tag); i++) tag = `$svc${i}$`;
  const create = `create or replace function ${CATALOG}.${quoteIdent(fn)}() returns trigger language plpgsql as ${tag}${body}${tag}`;
  const hash = createHash('md5').update(body).digest('hex');
  return { id: fn, trigger, op, table, hash, create };
}

// ---------------------------------------------------------------------------------------------
// Reconciliation

/*
 * Note [Reconciling capture]
 * The SQL side of event triggers is derived from the metadata at every build that may have
 * changed it (the source's event triggers, a reload of the source, the first build of a process),
 * in the build's unit of work: in the same source transaction as the request's run_sql, committed
 * with the catalog write (Note [Unit of work] in core/uow.ts), or on its own at boot and sync. It
 * is idempotent: it reads what exists (functions in `svc_catalog` named `notify_svc_*`, the md5
 * of their bodies, and their triggers), then creates what is missing or stale
 * and drops what the metadata no longer has. So a crash between a catalog write and the trigger
 * DDL (or a function dropped by hand) heals at the next build: boot, sync or reload_metadata.
 *   - Several instances serialise on a transaction-level advisory lock and read after taking it.
 *   - A function's comment names the source that made it: two sources on one database each
 *     reconcile their own (an event trigger's name must then be unique in the database).
 *   - When a source leaves the metadata (pg_drop_source, replace_metadata), its capture is
 *     removed in the same unit of work, unless another source has the same configuration
 *     (rename_source: that source takes the functions over).
 *   - A trigger that is inconsistent only for its webhook or headers (an environment variable not
 *     set) still captures: its events wait until it is consistent. One whose columns are gone
 *     does not (its function would fail every write to the table).
 *   - The pending events of an event trigger that left the metadata are archived (Hasura's
 *     dropTriggerAndArchiveEvents), so that a trigger created later with its name does not get them.
 *   - A known window: an instance whose metadata is older than another's uncommitted change may
 *     drop that change's new function between the other's source commit and its catalog commit;
 *     it is made again when the first instance syncs (within --metadata-sync-interval).
 */

interface Existing {
  fn: string;
  tag: string;
  triggers: { schema: string; table: string; trigger: string }[];
}

/** The comment that says which source made a function: several sources may be one database. */
const ownerTag = (source: string) => `svc event trigger of source ${JSON.stringify(source)}`;

/** The trigger functions of `source` in the database (those other sources made are not its). */
async function readExisting(exec: SqlExecutor, source: string): Promise<Map<string, Existing>> {
  const rows = await exec.query<{ fn: string; tag: string; triggers: string }>(
    `select p.proname as fn, md5(p.prosrc) as tag,
       coalesce((select json_agg(json_build_object('schema', tn.nspname, 'table', c.relname, 'trigger', t.tgname))
                 from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace tn on tn.oid = c.relnamespace
                 where t.tgfoid = p.oid and not t.tgisinternal), '[]')::text as triggers
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = '${CATALOG}' and p.proname like 'notify\\_svc\\_%' and p.prorettype = 'trigger'::regtype
       and obj_description(p.oid, 'pg_proc') = $1`,
    [ownerTag(source)],
  );
  return new Map(rows.map((r) => [r.fn, { fn: r.fn, tag: r.tag, triggers: JSON.parse(r.triggers) }]));
}

export interface Plan {
  create: FunctionDef[];
  attach: FunctionDef[];
  detach: { fn: string; schema: string; table: string }[];
  drop: string[];
  needsCatalog: boolean;
}

function plan(existing: Map<string, Existing>, desired: readonly FunctionDef[], catalog: boolean): Plan {
  const want = new Map(desired.map((d) => [d.id, d]));
  const out: Plan = { create: [], attach: [], detach: [], drop: [], needsCatalog: desired.length > 0 && !catalog };
  for (const d of desired) {
    const cur = existing.get(d.id);
    if (!cur || cur.tag !== d.hash) out.create.push(d);
    if (!cur?.triggers.some((t) => t.schema === d.table.schema && t.table === d.table.name && t.trigger === d.id)) out.attach.push(d);
    for (const t of cur?.triggers ?? []) {
      if (!(t.schema === d.table.schema && t.table === d.table.name && t.trigger === d.id)) out.detach.push({ fn: t.trigger, schema: t.schema, table: t.table });
    }
  }
  for (const fn of existing.keys()) if (!want.has(fn)) out.drop.push(fn);
  return out;
}

const isEmpty = (p: Plan) => !p.needsCatalog && !p.create.length && !p.attach.length && !p.detach.length && !p.drop.length;

export interface ReconcileResult {
  changed: boolean;
  /** Event triggers whose events were archived (they left the metadata). */
  archived: string[];
}

/**
 * Makes the capture of `source` what `desired` says (Note [Reconciling capture]). `read` runs the
 * first look (outside any transaction when the request has none, so that an unchanged source
 * costs one query); `tx()` gives the transaction the changes are made in. `keep` names the event
 * triggers the metadata still has (their events are not archived when their function goes).
 */
export async function reconcile(
  source: string,
  read: SqlExecutor,
  tx: () => Promise<SqlExecutor>,
  desired: readonly FunctionDef[],
  keep: ReadonlySet<string>,
): Promise<ReconcileResult> {
  const first = plan(await readExisting(read, source), desired, desired.length === 0 || (await hasCatalog(read)));
  if (isEmpty(first)) return { changed: false, archived: [] };
  const exec = await tx();
  await lock(exec);
  const catalog = await hasCatalog(exec);
  const p = plan(await readExisting(exec, source), desired, catalog);
  if (isEmpty(p)) return { changed: false, archived: [] };
  if (p.needsCatalog) await ensureCatalog(exec);
  for (const d of p.detach) await exec.query(`drop trigger if exists ${quoteIdent(d.fn)} on ${quoteIdent(d.schema)}.${quoteIdent(d.table)}`);
  for (const d of p.create) {
    await exec.query(d.create);
    await exec.query(`comment on function ${CATALOG}.${quoteIdent(d.id)}() is ${quoteLiteral(ownerTag(source))}`);
  }
  for (const d of p.attach) {
    await exec.query(`drop trigger if exists ${quoteIdent(d.id)} on ${quoteTable(d.table)}`);
    await exec.query(`create trigger ${quoteIdent(d.id)} after ${d.op.toLowerCase()} on ${quoteTable(d.table)} for each row execute procedure ${CATALOG}.${quoteIdent(d.id)}()`);
  }
  const archived = new Set<string>();
  for (const fn of p.drop) {
    await exec.query(`drop function if exists ${CATALOG}.${quoteIdent(fn)}() cascade`);
    const of = triggerOfFunction(fn);
    if (of && !keep.has(of.trigger)) archived.add(of.trigger);
  }
  if (archived.size > 0 && (catalog || p.needsCatalog)) {
    await exec.query(`update ${EVENT_LOG} set archived = true where trigger_name in (select json_array_elements_text($1::text::json)) and not archived`, [JSON.stringify([...archived])]);
  }
  return { changed: true, archived: [...archived] };
}

// ---------------------------------------------------------------------------------------------
// The event log: what the operations read and change (manual events, redelivery, the log reads
// Hasura added), and the delivery worker's statements (Note [Claiming events] in
// plugins/event-triggers/worker.ts).

/** Wakes the delivery workers at commit (Note [Waking on commit] in plugins/event-triggers/worker.ts). */
const notify = (exec: SqlExecutor) => exec.query(`select pg_notify('${NOTIFY_CHANNEL}', '')`);

const ts = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const EVENT_COLUMNS = `id, schema_name, table_name, trigger_name, payload::text as payload, delivered, error, tries,
  ${ts('created_at')} as created_at, ${ts('locked')} as locked, ${ts('next_retry_at')} as next_retry_at, archived`;

const INVOCATION_COLUMNS = `id, trigger_name, event_id, status as http_status, request::text as request, response::text as response,
  duration_ms, ${ts('created_at')} as created_at`;


/** Inserts a manual event (`op: MANUAL`, the payload as `new`); returns its id. */
async function insertManualEvent(exec: SqlExecutor, table: QualifiedTable, trigger: string, payload: unknown, session: Record<string, string>): Promise<string> {
  const [r] = await exec.query<{ id: string }>(
    `insert into ${EVENT_LOG} (schema_name, table_name, trigger_name, payload)
     values ($1, $2, $3, jsonb_build_object('op', 'MANUAL', 'data', jsonb_build_object('old', null, 'new', $4::text::jsonb), 'session_variables', $5::text::jsonb))
     returning id`,
    [table.schema, table.name, trigger, JSON.stringify(payload ?? null), JSON.stringify(session)],
  );
  await notify(exec);
  return r!.id;
}

/** Hasura's redeliver: the event must exist and not be claimed by a delivery; its retry count is
 * reset and it is delivered again (even after `error` or `delivered`). */
async function redeliverEvent(exec: SqlExecutor, id: string, leaseSec: (trigger: string) => number): Promise<void> {
  if (!(await hasCatalog(exec))) throw new SvcError('not-exists', 'event not found', { path: '$.args' });
  const [ev] = await exec.query<{ trigger_name: string; locked_for: number | null }>(
    `select trigger_name, extract(epoch from now() - locked)::float8 as locked_for from ${EVENT_LOG} where id = $1 for update`,
    [id],
  );
  if (!ev) throw new SvcError('not-exists', 'event not found', { path: '$.args' });
  if (ev.locked_for !== null && ev.locked_for < leaseSec(ev.trigger_name)) throw new SvcError('busy', 'event is already being processed', { path: '$.args' });
  await exec.query(`update ${EVENT_LOG} set delivered = false, error = false, tries = 0, next_retry_at = null, locked = null where id = $1`, [id]);
  await notify(exec);
}

async function eventLogs(exec: SqlExecutor, trigger: string, status: 'processed' | 'pending' | undefined, limit: number, offset: number) {
  if (!(await hasCatalog(exec))) return [];
  const where =
    status === 'pending'
      ? 'and delivered = false and error = false and archived = false'
      : status === 'processed'
        ? 'and (delivered = true or error = true) and archived = false'
        : '';
  const rows = await exec.query<EventRow>(
    `select ${EVENT_COLUMNS} from ${EVENT_LOG} where trigger_name = $1 ${where} order by created_at desc, id limit $2 offset $3`,
    [trigger, limit, offset],
  );
  return rows.map(eventOf);
}

async function invocationLogs(exec: SqlExecutor, trigger: string, limit: number, offset: number) {
  if (!(await hasCatalog(exec))) return [];
  const rows = await exec.query<InvocationRow>(
    `select ${INVOCATION_COLUMNS} from ${INVOCATION_LOGS} where trigger_name = $1 order by created_at desc, id limit $2 offset $3`,
    [trigger, limit, offset],
  );
  return rows.map(invocationOf);
}

async function eventById(exec: SqlExecutor, id: string, limit: number, offset: number) {
  const missing = () => new SvcError('not-exists', `event id ${id} does not exist`, { path: '$.args' });
  if (!(await hasCatalog(exec))) throw missing();
  const [ev] = await exec.query<EventRow>(`select ${EVENT_COLUMNS} from ${EVENT_LOG} where id = $1`, [id]);
  if (!ev) throw missing();
  const invocations = await exec.query<InvocationRow>(
    `select ${INVOCATION_COLUMNS} from ${INVOCATION_LOGS} where event_id = $1 order by created_at desc, id limit $2 offset $3`,
    [id, limit, offset],
  );
  return { event: eventOf(ev), invocations: invocations.map(invocationOf) };
}

// No join in the claim's scan: the trigger names are an init plan and a claim's lease a lookup, so
// that PostgreSQL walks event_log_fetch_events in its order and stops at the limit, however large
// the backlog. `trigger_name || ''` keeps the index on trigger_name out of it: with the statistics
// of a table that grows by 1,000 rows a second, PostgreSQL ANDed bitmaps of both indexes, reading
// every entry of both (tens of thousands, the dead ones too: a bitmap scan never marks them dead),
// and a claim took 10-20 ms instead of well under one (bench/events).
const CLAIM = `
with lease as materialized (select * from json_to_recordset($1::text::json) as x(name text, secs int))
update ${EVENT_LOG} e set locked = now()
where e.id in (
  select l.id from ${EVENT_LOG} l
  where l.delivered = false and l.error = false and l.archived = false
    and l.trigger_name || '' = any(array(select name from lease))
    and (l.locked is null or l.locked < now() - make_interval(secs => (select secs from lease where lease.name = l.trigger_name)))
    and (l.next_retry_at is null or l.next_retry_at <= now())
  order by l.locked nulls first, l.next_retry_at nulls first, l.created_at
  limit $2
  for update skip locked
)
returning e.id, e.schema_name, e.table_name, e.trigger_name, e.payload::text as payload, e.tries,
  to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, e.locked::text as token`;

const RECORD = `
with x as materialized (
  select * from json_to_recordset($1::text::json) as x(id text, trigger_name text, status int, request json, response json,
    duration_ms float8, token text, delivered boolean, error boolean, retry_in float8)
), inv as (
  insert into ${INVOCATION_LOGS} (event_id, trigger_name, status, request, response, duration_ms)
  select id, trigger_name, status, request, response, duration_ms from x
)
update ${EVENT_LOG} e set tries = e.tries + 1, delivered = x.delivered, error = x.error, locked = null,
  next_retry_at = case when x.retry_in is null then null else now() + make_interval(secs => x.retry_in) end
from x where e.id = any($2::text[]) and e.id = x.id and e.locked = x.token::timestamptz`;

/* \`e.id = any($2)\` (the batch's ids again) makes the event rows an index lookup: joined to the
 * recordset alone (estimated at 100 rows), PostgreSQL chose a hash join over a sequential scan of
 * event_log, whose cost grew with the table (bench/events: deliveries fell to 200/s). */

const RELEASE = `update ${EVENT_LOG} set locked = null where id = $1 and locked = $2::text::timestamptz`;

/** PostgreSQL's event capture and log (SourceKind.events). */
export const postgresEvents: EventCapture = {
  channel: NOTIFY_CHANNEL,
  notifyEverySec: NOTIFY_EVERY_SEC,
  define: functionDef,
  reconcile: (source, read, tx, desired, keep) => reconcile(source, read, tx, desired as readonly FunctionDef[], keep),
  ensureLog: ensureCatalog,
  insertManual: insertManualEvent,
  redeliver: redeliverEvent,
  events: eventLogs,
  invocations: invocationLogs,
  eventById,
  claim: (exec, lease, n) => exec.query<ClaimedEvent>(CLAIM, [JSON.stringify(lease), n], { prepare: true }),
  record: async (exec, outcomes, ids) => {
    await exec.query(RECORD, [`[${outcomes.join(',')}]`, ids], { prepare: true });
  },
  release: async (exec, id, token) => {
    await exec.query(RELEASE, [id, token], { prepare: true });
  },
};
