/** Event triggers (made through the metadata API) with their recent events (pg_get_event_logs). */
import { useState } from 'react';
import { exportMetadata, metadata, normTable } from '../../api';
import { ErrorBox, useLoad } from '../../components';

function TriggerLogs({ name, source }: { name: string; source: string }) {
  const logs = useLoad(() => metadata<any[]>('pg_get_event_logs', { name, source, limit: 20, offset: 0 }), [name, source]);
  if (logs.error) return <ErrorBox error={logs.error} />;
  if (!logs.data) return <p className="muted">Loading…</p>;
  const rows = Array.isArray(logs.data) ? logs.data : [];
  // The newest 20; refreshed by opening the trigger again.
  if (rows.length === 0) return <p className="muted">No events.</p>;
  return (
    <table className="grid" data-testid={`event-logs-${name}`}>
      <thead>
        <tr>
          <th>id</th>
          <th>op</th>
          <th>delivered</th>
          <th>error</th>
          <th>tries</th>
          <th>created_at</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((e: any) => (
          <tr key={e.id}>
            <td>{e.id}</td>
            <td>{e.payload?.op ?? e.payload?.event?.op ?? ''}</td>
            <td>{String(e.delivered ?? '')}</td>
            <td>{String(e.error ?? '')}</td>
            <td>{String(e.tries ?? '')}</td>
            <td>{String(e.created_at ?? '')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function EventTriggers() {
  const md = useLoad(exportMetadata, []);
  const [open, setOpen] = useState<string | undefined>();
  const triggers = (md.data?.sources ?? []).flatMap((s) => s.tables.flatMap((t) => (t.event_triggers ?? []).map((e) => ({ source: s.name, table: normTable(t.table), trigger: e }))));
  return (
    <section>
      <ErrorBox error={md.error} />
      {triggers.length === 0 && <p className="muted">No event triggers.</p>}
      <ul className="list" data-testid="event-triggers">
        {triggers.map(({ source, table, trigger }) => {
          const key = `${source}.${trigger.name}`;
          return (
            <li key={key}>
              <button className="link" aria-expanded={open === key} onClick={() => setOpen(open === key ? undefined : key)} data-testid={`trigger-${trigger.name}`}>
                {trigger.name}
              </button>{' '}
              <span className="muted">
                on {source}.{table.schema}.{table.name} → {trigger.webhook ?? `env ${trigger.webhook_from_env ?? ''}`}
              </span>
              {open === key && <TriggerLogs name={trigger.name} source={source} />}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
