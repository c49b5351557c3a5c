/**
 * The event log of a PostgreSQL source, as the operations read and change it: manual events
 * (`pg_invoke_event_trigger`), redelivery, and the reads Hasura added (`pg_get_event_logs`,
 * `pg_get_event_invocation_logs`, `pg_get_event_by_id`). Values are bind parameters.
 */
import { SvcError } from '../../core/errors.js';
import type { QualifiedTable, SqlExecutor } from '../database/index.js';
import { EVENT_LOG, hasCatalog, INVOCATION_LOGS, NOTIFY_CHANNEL } from './capture.js';

/** Wakes the delivery workers at commit (Note [Waking on commit] in worker.ts). */
const notify = (exec: SqlExecutor) => exec.query(`select pg_notify('${NOTIFY_CHANNEL}', '')`);

/** Seconds an event stays claimed by a delivery beyond its webhook timeout before another
 * instance may take it (Note [Claiming events] in worker.ts). */
export const LEASE_MARGIN_SEC = 10;

const ts = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const EVENT_COLUMNS = `id, schema_name, table_name, trigger_name, payload::text as payload, delivered, error, tries,
  ${ts('created_at')} as created_at, ${ts('locked')} as locked, ${ts('next_retry_at')} as next_retry_at, archived`;

const INVOCATION_COLUMNS = `id, trigger_name, event_id, status as http_status, request::text as request, response::text as response,
  duration_ms, ${ts('created_at')} as created_at`;

interface EventRow {
  id: string;
  schema_name: string;
  table_name: string;
  trigger_name: string;
  payload: string;
  delivered: boolean;
  error: boolean;
  tries: number;
  created_at: string;
  locked: string | null;
  next_retry_at: string | null;
  archived: boolean;
}

interface InvocationRow {
  id: string;
  trigger_name: string;
  event_id: string;
  http_status: number | null;
  request: string | null;
  response: string | null;
  duration_ms: number | null;
  created_at: string;
}

const eventOf = (r: EventRow) => ({ ...r, payload: JSON.parse(r.payload) });
const invocationOf = (r: InvocationRow) => ({
  ...r,
  request: r.request === null ? null : JSON.parse(r.request),
  response: r.response === null ? null : JSON.parse(r.response),
});

/** Inserts a manual event (`op: MANUAL`, the payload as `new`); returns its id. */
export async function insertManualEvent(exec: SqlExecutor, table: QualifiedTable, trigger: string, payload: unknown, session: Record<string, string>): Promise<string> {
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
export async function redeliverEvent(exec: SqlExecutor, id: string, leaseSec: (trigger: string) => number): Promise<void> {
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

export async function eventLogs(exec: SqlExecutor, trigger: string, status: 'processed' | 'pending' | undefined, limit: number, offset: number) {
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

export async function invocationLogs(exec: SqlExecutor, trigger: string, limit: number, offset: number) {
  if (!(await hasCatalog(exec))) return [];
  const rows = await exec.query<InvocationRow>(
    `select ${INVOCATION_COLUMNS} from ${INVOCATION_LOGS} where trigger_name = $1 order by created_at desc, id limit $2 offset $3`,
    [trigger, limit, offset],
  );
  return rows.map(invocationOf);
}

export async function eventById(exec: SqlExecutor, id: string, limit: number, offset: number) {
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
