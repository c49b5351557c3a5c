/**
 * Cron triggers: listed (get_cron_triggers: those in the metadata and those kept in the catalog
 * only), created and modified (create_cron_trigger, with `replace` for a change), deleted
 * (delete_cron_trigger), and for each its events and their invocation logs.
 */
import { useState } from 'react';
import { metadata, type HeaderConf } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { CheckField, CodeField, DangerButton, filledHeaders, HeadersEditor, parseJson, pretty, TextField } from '../../forms';
import { Link, navigate } from '../../router';
import { EventTable, InvocationTable, type Invocation, type ScheduledEvent } from './Logs';
import { retryConf, RetryFields, retryText } from './RetryFields';

export interface CronTrigger {
  name: string;
  webhook: string;
  schedule: string;
  payload?: unknown;
  retry_conf?: Record<string, number>;
  headers?: HeaderConf[];
  include_in_metadata: boolean;
  comment?: string;
}

const BASE = '/events/cron';

export function CronTriggers({ name }: { name?: string }) {
  const list = useLoad(async () => (await metadata<{ cron_triggers: CronTrigger[] }>('get_cron_triggers', {})).cron_triggers, []);
  const selected = list.data?.find((c) => c.name === name);
  return (
    <div>
      <ErrorBox error={list.error} />
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
          {(list.data ?? []).map((c) => (
            <tr key={c.name} className={c.name === name ? 'active' : ''}>
              <td>
                <Link to={`${BASE}/${encodeURIComponent(c.name)}`} testid={`cron-${c.name}`}>
                  {c.name}
                </Link>
              </td>
              <td>
                <code>{c.schedule}</code>
              </td>
              <td>{c.webhook}</td>
              <td>{String(c.include_in_metadata)}</td>
              <td>{c.comment ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data?.length === 0 && <p className="muted">No cron triggers.</p>}
      {name !== undefined && (
        <p>
          <Link to={BASE} testid="cron-new">
            + Create a cron trigger
          </Link>
        </p>
      )}
      {name === undefined && <CronForm key="new" onSaved={(n) => (list.reload(), navigate(`${BASE}/${encodeURIComponent(n)}`))} />}
      {name !== undefined && list.data && !selected && <p>No cron trigger is named {name}.</p>}
      {selected && <CronDetail key={selected.name} trigger={selected} onChange={list.reload} />}
    </div>
  );
}

function CronForm({ existing, onSaved }: { existing?: CronTrigger; onSaved: (name: string) => void }) {
  const [name, setName] = useState(existing?.name ?? '');
  const [webhook, setWebhook] = useState(existing?.webhook ?? '');
  const [schedule, setSchedule] = useState(existing?.schedule ?? '*/5 * * * *');
  const [payload, setPayload] = useState(pretty(existing?.payload));
  const [headers, setHeaders] = useState<HeaderConf[]>(existing?.headers ?? []);
  const [retry, setRetry] = useState(retryText(existing?.retry_conf));
  const [inMetadata, setInMetadata] = useState(existing?.include_in_metadata ?? true);
  const [comment, setComment] = useState(existing?.comment ?? '');
  const action = useAction();
  const save = () =>
    action.run(async () => {
      const args: Record<string, unknown> = { name: name.trim(), webhook: webhook.trim(), schedule: schedule.trim(), include_in_metadata: inMetadata, replace: existing !== undefined };
      const p = parseJson(payload, 'Payload');
      if (p !== undefined) args.payload = p;
      const hs = filledHeaders(headers);
      if (hs.length) args.headers = hs;
      const r = retryConf(retry);
      if (r) args.retry_conf = r;
      if (comment.trim()) args.comment = comment.trim();
      await metadata('create_cron_trigger', args);
      onSaved(name.trim());
    }, existing ? 'Cron trigger saved.' : 'Cron trigger created.');
  return (
    <form
      className="editor wide"
      data-testid="cron-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h3>{existing ? `Modify ${existing.name}` : 'Create a cron trigger'}</h3>
      <TextField label="Name" value={name} onChange={setName} testid="cron-name" disabled={existing !== undefined} />
      <TextField label="Webhook" value={webhook} onChange={setWebhook} size={50} testid="cron-webhook" placeholder="https://example.com/cron or {{ENV_VAR}}/path" />
      <TextField label="Schedule (cron, UTC)" value={schedule} onChange={setSchedule} testid="cron-schedule" hint=" minute hour day-of-month month day-of-week" />
      <CodeField label="Payload (JSON)" value={payload} onChange={setPayload} rows={3} testid="cron-payload" />
      <HeadersEditor value={headers} onChange={setHeaders} testid="cron-headers" />
      <RetryFields value={retry} onChange={setRetry} testid="cron-retry" />
      <CheckField label="include in the metadata (else kept in the catalog only)" checked={inMetadata} onChange={setInMetadata} testid="cron-in-metadata" />
      <TextField label="Comment" value={comment} onChange={setComment} size={40} testid="cron-comment" />
      <button type="submit" disabled={action.busy} data-testid="cron-save">
        {existing ? 'Save cron trigger' : 'Create cron trigger'}
      </button>
      <Status action={action} />
    </form>
  );
}

function CronDetail({ trigger: t, onChange }: { trigger: CronTrigger; onChange: () => void }) {
  const action = useAction();
  const events = useLoad(async () => (await metadata<{ events: ScheduledEvent[] }>('get_scheduled_events', { type: 'cron', trigger_name: t.name, limit: 20 })).events, [t.name]);
  const logs = useLoad(async () => (await metadata<{ invocations: Invocation[] }>('get_scheduled_event_invocations', { type: 'cron', trigger_name: t.name, limit: 20 })).invocations, [t.name]);
  return (
    <section>
      <h3>{t.name}</h3>
      <div className="row">
        <button className="small" onClick={() => (events.reload(), logs.reload())} data-testid="cron-refresh">
          Refresh events
        </button>
        <DangerButton
          label="Delete cron trigger"
          question={`Delete the cron trigger ${t.name}? Its pending events go with it.`}
          testid="cron-delete"
          disabled={action.busy}
          onConfirm={() => action.run(async () => (await metadata('delete_cron_trigger', { name: t.name }), onChange(), navigate(BASE)))}
        />
      </div>
      <Status action={action} />
      <h4>Events (the earliest 20)</h4>
      <ErrorBox error={events.error} />
      {events.data && <EventTable rows={events.data} testid="cron-events" />}
      <h4>Invocation logs</h4>
      <ErrorBox error={logs.error} />
      {logs.data && <InvocationTable rows={logs.data} testid="cron-invocations" />}
      <CronForm existing={t} onSaved={onChange} />
    </section>
  );
}
