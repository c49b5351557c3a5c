/**
 * The invocation log's rows as every kind's event capture reads them (`EventCapture.invocations`,
 * `eventById` in ./types.ts): Hasura's `get_event_invocation_logs` shape, the request and
 * response stored as JSON text and answered as JSON.
 */
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
