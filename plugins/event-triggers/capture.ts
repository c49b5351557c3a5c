/**
 * Capture in a PostgreSQL source: the engine's tables in the source's schema `svc_catalog`
 * (`event_log`, `event_invocation_logs`), one trigger function and one SQL trigger per event
 * trigger and operation, and their reconciliation with the metadata (Note [Reconciling capture]).
 */
import { createHash } from 'node:crypto';
import type { QualifiedTable, SqlExecutor } from '../database/index.js';
import type { EventTriggerMeta, Op, OpSpec, SubscribeColumns } from './definition.js';

export const CATALOG = 'svc_catalog';
export const EVENT_LOG = `${CATALOG}.event_log`;
export const INVOCATION_LOGS = `${CATALOG}.event_invocation_logs`;
/** The channel a transaction that wrote events notifies at commit (Note [Waking on commit] in
 * worker.ts). */
export const NOTIFY_CHANNEL = 'svc_event_log';
/** A session notifies at most once in this many seconds (Note [Waking on commit] in worker.ts). */
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
  // The worker's claim scans this index in its order (Note [Claiming events] in worker.ts).
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

export interface FunctionDef {
  fn: string;
  trigger: string;
  op: Op;
  table: QualifiedTable;
  /** md5 of the function's body (pg_proc.prosrc): a function changed by hand, or made by an
   * older version, is made again. */
  hash: string;
  create: string;
}

/**
 * The trigger function of an event trigger's operation. It writes one event row in the same
 * transaction as the row change: `{op, data: {old, new}, session_variables}`, the payload columns
 * as the spec says, the session variables from the transaction-local setting `svc.user` (set by
 * the GraphQL mutation path; NULL when unset), and notifies NOTIFY_CHANNEL unless its session did
 * within NOTIFY_EVERY_SEC (Note [Waking on commit] in worker.ts). Only identifiers and the trigger's name (checked
 * against `[A-Za-z][A-Za-z0-9_-]*`, and quoted anyway) are spliced; the body is dollar-quoted with
 * a tag it does not contain.
 */
export function functionDef(trigger: EventTriggerMeta, table: QualifiedTable, op: Op, spec: OpSpec): FunctionDef {
  const fn = functionName(trigger.name, op);
  const payload = spec.payload ?? '*';
  const oldJson = op === 'INSERT' ? 'null' : rowJson('OLD', payload);
  const newJson = op === 'DELETE' ? 'null' : rowJson('NEW', payload);
  const fire = op === 'UPDATE' ? changed(spec.columns) : 'true';
  const body = `
begin
  if ${fire} then
    insert into ${EVENT_LOG} (schema_name, table_name, trigger_name, payload)
    values (tg_table_schema, tg_table_name, ${quoteLiteral(trigger.name)}, jsonb_build_object(
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
  return { fn, trigger: trigger.name, op, table, hash, create };
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
  const want = new Map(desired.map((d) => [d.fn, d]));
  const out: Plan = { create: [], attach: [], detach: [], drop: [], needsCatalog: desired.length > 0 && !catalog };
  for (const d of desired) {
    const cur = existing.get(d.fn);
    if (!cur || cur.tag !== d.hash) out.create.push(d);
    if (!cur?.triggers.some((t) => t.schema === d.table.schema && t.table === d.table.name && t.trigger === d.fn)) out.attach.push(d);
    for (const t of cur?.triggers ?? []) {
      if (!(t.schema === d.table.schema && t.table === d.table.name && t.trigger === d.fn)) out.detach.push({ fn: t.trigger, schema: t.schema, table: t.table });
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
    await exec.query(`comment on function ${CATALOG}.${quoteIdent(d.fn)}() is ${quoteLiteral(ownerTag(source))}`);
  }
  for (const d of p.attach) {
    await exec.query(`drop trigger if exists ${quoteIdent(d.fn)} on ${quoteTable(d.table)}`);
    await exec.query(`create trigger ${quoteIdent(d.fn)} after ${d.op.toLowerCase()} on ${quoteTable(d.table)} for each row execute procedure ${CATALOG}.${quoteIdent(d.fn)}()`);
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
