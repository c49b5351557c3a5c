/**
 * The engine-owned tables of scheduled triggers, in the schema `svc_catalog` of the default
 * PostgreSQL source (where event triggers keep theirs):
 *   - `cron_triggers`: the cron triggers with `include_in_metadata: false` (they live here only);
 *   - `scheduled_events`: cron instances (`kind = 'cron'`, unique per (trigger, scheduled_time), so
 *     that instances generating the same slot insert it once) and one-off events (`kind =
 *     'one_off'`, their definition in the row);
 *   - `scheduled_event_invocation_logs`: every delivery attempt, deleted with its event.
 */
import type { SqlExecutor } from '../database/index.js';

export const CATALOG = 'svc_catalog';
export const CRON_TRIGGERS = `${CATALOG}.cron_triggers`;
export const EVENTS = `${CATALOG}.scheduled_events`;
export const INVOCATIONS = `${CATALOG}.scheduled_event_invocation_logs`;

// One DO block: one transaction, serialised by an advisory lock so that two instances booting on
// one database do not race on `create ... if not exists`.
const DDL = `do $ddl$ begin
  perform pg_advisory_xact_lock(7358211);
  create schema if not exists ${CATALOG};
  create table if not exists ${CRON_TRIGGERS} (name text primary key, definition json not null);
  create table if not exists ${EVENTS} (
    id text primary key default gen_random_uuid()::text,
    kind text not null,
    trigger_name text,
    scheduled_time timestamptz not null,
    webhook_conf json,
    payload json,
    header_conf json,
    retry_conf json,
    comment text,
    status text not null default 'scheduled',
    tries int not null default 0,
    created_at timestamptz not null default now(),
    next_retry_at timestamptz,
    locked timestamptz,
    unique (trigger_name, scheduled_time)
  );
  create index if not exists scheduled_events_due on ${EVENTS} (status, scheduled_time);
  create table if not exists ${INVOCATIONS} (
    id text primary key default gen_random_uuid()::text,
    event_id text not null references ${EVENTS} (id) on delete cascade,
    status int,
    request json,
    response json,
    created_at timestamptz not null default now()
  );
  create index if not exists scheduled_event_invocation_logs_event on ${INVOCATIONS} (event_id);
end $ddl$`;

const ready = new WeakSet<SqlExecutor>();

/** Creates the tables once per executor (idempotent). */
export async function ensureCatalog(exec: SqlExecutor): Promise<void> {
  if (ready.has(exec)) return;
  await exec.query(DDL);
  ready.add(exec);
}

/** How many instances of a cron trigger are kept ahead (Hasura generates 100). */
export const AHEAD = 100;

/** Inserts the given slots of a trigger; a slot already there (another instance) is kept. */
export async function insertCronEvents(exec: SqlExecutor, trigger: string, times: Date[], retryConf: unknown): Promise<void> {
  if (times.length === 0) return;
  await exec.query(
    `insert into ${EVENTS} (kind, trigger_name, scheduled_time, retry_conf)
     select 'cron', $1, t, $3::text::json from unnest($2::timestamptz[]) as t
     on conflict (trigger_name, scheduled_time) do nothing`,
    [trigger, times.map((t) => t.toISOString()), JSON.stringify(retryConf)],
  );
}

/** Drops the instances of a trigger that have not fired (all of them: `future` only those ahead). */
export async function dropPendingCronEvents(exec: SqlExecutor, trigger: string, futureOnly: boolean): Promise<void> {
  await exec.query(
    `delete from ${EVENTS} where kind = 'cron' and trigger_name = $1 and status = 'scheduled' and tries = 0 and locked is null
       ${futureOnly ? 'and scheduled_time > now()' : ''}`,
    [trigger],
  );
}

/** Per trigger: how many instances are ahead of now and the last one. */
export async function cronHorizon(exec: SqlExecutor, names: string[]): Promise<Map<string, { ahead: number; last: Date | null }>> {
  const rows = await exec.query<{ trigger_name: string; ahead: string; last: string | null }>(
    `select n as trigger_name,
            (select count(*) from ${EVENTS} e where e.kind = 'cron' and e.trigger_name = n and e.scheduled_time > now())::text as ahead,
            (select max(scheduled_time)::text from ${EVENTS} e where e.kind = 'cron' and e.trigger_name = n) as last
     from unnest($1::text[]) as n`,
    [names],
  );
  return new Map(rows.map((r) => [r.trigger_name, { ahead: Number(r.ahead), last: r.last ? new Date(r.last) : null }]));
}
