/**
 * The event log's and the invocation log's rows as every kind's event capture reads them
 * (`EventCapture.events`, `invocations`, `eventById` in ./types.ts): Hasura's
 * `get_event_logs` and `get_event_invocation_logs` shapes, JSON stored as text and answered as
 * JSON, flags answered as booleans (SQL Server's bit columns come as 0 and 1).
 */
export interface EventRow {
  id: string;
  schema_name: string;
  table_name: string;
  trigger_name: string;
  payload: string;
  delivered: boolean | number;
  error: boolean | number;
  tries: number;
  created_at: string;
  locked: string | null;
  next_retry_at: string | null;
  archived: boolean | number;
}

/** An event row as the log operations answer it. */
export const eventOf = (r: EventRow) => ({ ...r, payload: JSON.parse(r.payload), delivered: !!r.delivered, error: !!r.error, archived: !!r.archived });

export interface InvocationRow {
  id: string;
  trigger_name: string;
  event_id: string;
  http_status: number | null;
  request: string | null;
  response: string | null;
  duration_ms: number | null;
  created_at: string;
}

/** An invocation row as the log operations answer it. */
export const invocationOf = (r: InvocationRow) => ({
  ...r,
  request: r.request === null ? null : JSON.parse(r.request),
  response: r.response === null ? null : JSON.parse(r.response),
});
