/** Events: event triggers with their recent events, cron triggers, REST endpoints (lists). */
import { useState } from 'react';
import { exportMetadata, metadata, normTable } from '../api';
import { ErrorBox, useLoad } from '../components';

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

export function EventsPage() {
  const md = useLoad(exportMetadata, []);
  const cron = useLoad(() => metadata<{ cron_triggers: any[] }>('get_cron_triggers', {}), []);
  const [open, setOpen] = useState<string | undefined>();
  const triggers = (md.data?.sources ?? []).flatMap((s) => s.tables.flatMap((t) => (t.event_triggers ?? []).map((e) => ({ source: s.name, table: normTable(t.table), trigger: e }))));
  return (
    <div className="page">
      <h2>Events</h2>
      <ErrorBox error={md.error} />
      <section>
        <h3>Event triggers</h3>
        {triggers.length === 0 && <p className="muted">No event triggers.</p>}
        <ul className="list" data-testid="event-triggers">
          {triggers.map(({ source, table, trigger }) => {
            const key = `${source}.${trigger.name}`;
            return (
              <li key={key}>
                <button className="link" onClick={() => setOpen(open === key ? undefined : key)} data-testid={`trigger-${trigger.name}`}>
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
      <section>
        <h3>Cron triggers</h3>
        <ErrorBox error={cron.error} />
        {cron.data && cron.data.cron_triggers.length === 0 && <p className="muted">No cron triggers.</p>}
        {cron.data && cron.data.cron_triggers.length > 0 && (
          <table className="grid" data-testid="cron-triggers">
            <thead>
              <tr>
                <th>name</th>
                <th>schedule</th>
                <th>webhook</th>
                <th>in metadata</th>
                <th>comment</th>
              </tr>
            </thead>
            <tbody>
              {cron.data.cron_triggers.map((c: any) => (
                <tr key={c.name}>
                  <td>{c.name}</td>
                  <td>
                    <code>{c.schedule}</code>
                  </td>
                  <td>{c.webhook ?? c.webhook_conf ?? ''}</td>
                  <td>{String(c.include_in_metadata ?? '')}</td>
                  <td>{c.comment ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section>
        <h3>REST endpoints</h3>
        {(md.data?.rest_endpoints ?? []).length === 0 && <p className="muted">No REST endpoints.</p>}
        {(md.data?.rest_endpoints ?? []).length > 0 && (
          <table className="grid" data-testid="rest-endpoints">
            <thead>
              <tr>
                <th>name</th>
                <th>methods</th>
                <th>url</th>
                <th>query</th>
              </tr>
            </thead>
            <tbody>
              {md.data!.rest_endpoints!.map((r) => (
                <tr key={r.name}>
                  <td>{r.name}</td>
                  <td>{r.methods.join(', ')}</td>
                  <td>
                    <code>/api/rest/{r.url}</code>
                  </td>
                  <td>
                    <code>{JSON.stringify(r.definition)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
