/**
 * One-off scheduled events: created (create_scheduled_event), listed with their state
 * (get_scheduled_events), their invocation logs (get_scheduled_event_invocations), deleted
 * (delete_scheduled_event).
 */
import { useState } from 'react';
import { metadata, type HeaderConf } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { CodeField, filledHeaders, HeadersEditor, parseJson, TextField } from '../../forms';
import { EventTable, InvocationTable, type Invocation, type ScheduledEvent } from './Logs';
import { retryConf, RetryFields, retryText } from './RetryFields';

/** datetime-local's value (the browser's time zone) as an ISO timestamp in UTC. */
function isoOf(local: string): string {
  const d = new Date(local);
  if (Number.isNaN(d.getTime())) throw new Error('Pick the time of the event.');
  return d.toISOString();
}

export function OneOffEvents() {
  const events = useLoad(async () => (await metadata<{ events: ScheduledEvent[] }>('get_scheduled_events', { type: 'one_off', limit: 50 })).events, []);
  const [open, setOpen] = useState<string | undefined>();
  const action = useAction();
  return (
    <div>
      <ErrorBox error={events.error} />
      <button className="small" onClick={events.reload} data-testid="one-off-refresh">
        Refresh
      </button>
      {events.data && (
        <EventTable
          rows={events.data}
          testid="one-off-events"
          actions={(e) => (
            <>
              <button className="small" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? undefined : e.id)} data-testid={`one-off-logs-${e.comment ?? e.id}`}>
                Invocations
              </button>{' '}
              <button
                className="small danger"
                onClick={() => action.run(async () => (await metadata('delete_scheduled_event', { type: 'one_off', event_id: e.id }), events.reload()), 'Event deleted.')}
                data-testid={`one-off-delete-${e.comment ?? e.id}`}
              >
                Delete
              </button>
            </>
          )}
        />
      )}
      <Status action={action} />
      {open && <Invocations key={open} eventId={open} />}
      <OneOffForm onSaved={events.reload} />
    </div>
  );
}

function Invocations({ eventId }: { eventId: string }) {
  const logs = useLoad(async () => (await metadata<{ invocations: Invocation[] }>('get_scheduled_event_invocations', { type: 'one_off', event_id: eventId, limit: 20 })).invocations, [eventId]);
  return (
    <section>
      <h4>Invocations of {eventId}</h4>
      <ErrorBox error={logs.error} />
      {logs.data && <InvocationTable rows={logs.data} testid="one-off-invocations" />}
    </section>
  );
}

function OneOffForm({ onSaved }: { onSaved: () => void }) {
  const [webhook, setWebhook] = useState('');
  const [at, setAt] = useState('');
  const [payload, setPayload] = useState('');
  const [headers, setHeaders] = useState<HeaderConf[]>([]);
  const [retry, setRetry] = useState(retryText());
  const [comment, setComment] = useState('');
  const action = useAction();
  return (
    <form
      className="editor wide"
      data-testid="one-off-form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          const args: Record<string, unknown> = { webhook: webhook.trim(), schedule_at: isoOf(at) };
          const p = parseJson(payload, 'Payload');
          if (p !== undefined) args.payload = p;
          const hs = filledHeaders(headers);
          if (hs.length) args.headers = hs;
          const r = retryConf(retry);
          if (r) args.retry_conf = r;
          if (comment.trim()) args.comment = comment.trim();
          await metadata('create_scheduled_event', args);
          onSaved();
        }, 'Event scheduled.');
      }}
    >
      <h3>Schedule an event</h3>
      <TextField label="Webhook" value={webhook} onChange={setWebhook} size={50} testid="one-off-webhook" />
      <TextField label="At (your local time)" type="datetime-local" value={at} onChange={setAt} testid="one-off-at" />
      <CodeField label="Payload (JSON)" value={payload} onChange={setPayload} rows={3} testid="one-off-payload" />
      <HeadersEditor value={headers} onChange={setHeaders} testid="one-off-headers" />
      <RetryFields value={retry} onChange={setRetry} testid="one-off-retry" />
      <TextField label="Comment" value={comment} onChange={setComment} size={40} testid="one-off-comment" />
      <button type="submit" disabled={action.busy} data-testid="one-off-save">
        Schedule event
      </button>
      <Status action={action} />
    </form>
  );
}
