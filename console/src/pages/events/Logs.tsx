/** The tables of scheduled events and of their invocations (get_scheduled_events and
 * get_scheduled_event_invocations), shared by cron triggers and one-off events. */
import { ResultTable } from '../../components';

export interface ScheduledEvent {
  id: string;
  trigger_name?: string;
  webhook_conf?: unknown;
  scheduled_time: string;
  status: string;
  tries: number;
  created_at: string;
  comment?: string | null;
}

export interface Invocation {
  id: string;
  event_id: string;
  status: number | null;
  request: unknown;
  response: unknown;
  created_at: string;
}

const json = (x: unknown) => (x === null || x === undefined ? null : typeof x === 'string' ? x : JSON.stringify(x));

export function InvocationTable({ rows, testid }: { rows: Invocation[]; testid: string }) {
  return (
    <ResultTable
      header={['event', 'HTTP status', 'at', 'request', 'response']}
      rows={rows.map((i) => [i.event_id, i.status === null ? null : String(i.status), i.created_at, json(i.request), json(i.response)])}
      testid={testid}
    />
  );
}

export function EventTable({ rows, testid, actions }: { rows: ScheduledEvent[]; testid: string; actions?: (e: ScheduledEvent) => React.ReactNode }) {
  return (
    <div className="table-wrap">
      <table className="grid" data-testid={testid}>
        <thead>
          <tr>
            <th>id</th>
            <th>scheduled for</th>
            <th>status</th>
            <th>tries</th>
            <th>comment</th>
            {actions && <th></th>}
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr key={e.id}>
              <td>
                <code>{e.id}</code>
              </td>
              <td>{e.scheduled_time}</td>
              <td>{e.status}</td>
              <td>{e.tries}</td>
              <td>{e.comment ?? ''}</td>
              {actions && <td>{actions(e)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && <p className="muted">None.</p>}
    </div>
  );
}
