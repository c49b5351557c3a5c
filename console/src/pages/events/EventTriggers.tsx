/**
 * Event triggers: listed with their recent events (pg_get_event_logs), created and modified as in
 * Hasura's console (name, table, operations insert/update/delete/manual with the update's columns,
 * webhook URL or environment variable, retries, headers: pg_create_event_trigger, with `replace`
 * for a change), deleted (pg_delete_event_trigger).
 */
import { useState } from 'react';
import { exportMetadata, metadata, normTable, type HeaderConf, type MetadataDoc, type QualifiedTable } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { CheckField, DangerButton, filledHeaders, HeadersEditor, parseCount, SelectField, TextField } from '../../forms';

interface OpSpec {
  columns: '*' | string[];
  payload?: '*' | string[];
}
interface Trigger {
  name: string;
  definition: { insert?: OpSpec; update?: OpSpec; delete?: OpSpec; enable_manual?: boolean };
  retry_conf?: { num_retries?: number; interval_sec?: number; timeout_sec?: number };
  webhook?: string;
  webhook_from_env?: string;
  headers?: HeaderConf[];
}
interface Listed {
  source: string;
  table: QualifiedTable;
  trigger: Trigger;
}

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
  const [creating, setCreating] = useState(false);
  const action = useAction();
  const triggers: Listed[] = (md.data?.sources ?? []).flatMap((s) => s.tables.flatMap((t) => ((t.event_triggers ?? []) as Trigger[]).map((e) => ({ source: s.name, table: normTable(t.table), trigger: e }))));
  const remove = (l: Listed) =>
    action.run(async () => {
      await metadata('pg_delete_event_trigger', { name: l.trigger.name, source: l.source });
      if (open === `${l.source}.${l.trigger.name}`) setOpen(undefined);
      md.reload();
    }, `Event trigger ${l.trigger.name} deleted.`);
  return (
    <section>
      <ErrorBox error={md.error} />
      {md.data && triggers.length === 0 && <p className="muted">No event triggers.</p>}
      <ul className="list" data-testid="event-triggers">
        {triggers.map((l) => {
          const { source, table, trigger } = l;
          const key = `${source}.${trigger.name}`;
          return (
            <li key={key}>
              <button className="link" aria-expanded={open === key} onClick={() => setOpen(open === key ? undefined : key)} data-testid={`trigger-${trigger.name}`}>
                {trigger.name}
              </button>{' '}
              <span className="muted">
                on {source}.{table.schema}.{table.name} → {trigger.webhook ?? `env ${trigger.webhook_from_env ?? ''}`}
              </span>{' '}
              <DangerButton
                small
                label="Delete"
                question={`Delete the event trigger ${trigger.name}? Its pending events go with it.`}
                testid={`trigger-delete-${trigger.name}`}
                disabled={action.busy}
                onConfirm={() => void remove(l)}
              />
              {open === key && (
                <>
                  <TriggerLogs name={trigger.name} source={source} />
                  <TriggerForm key={key} md={md.data!} existing={l} onSaved={() => md.reload()} />
                </>
              )}
            </li>
          );
        })}
      </ul>
      <Status action={action} />
      {!creating && (
        <button className="small" onClick={() => setCreating(true)} data-testid="new-trigger-open">
          + Create an event trigger
        </button>
      )}
      {creating && md.data && (
        <TriggerForm
          key="new"
          md={md.data}
          onSaved={(key) => {
            setCreating(false);
            setOpen(key);
            md.reload();
          }}
        />
      )}
    </section>
  );
}

const RETRY: [keyof NonNullable<Trigger['retry_conf']>, string, string][] = [
  ['num_retries', 'Retries', '0'],
  ['interval_sec', 'Retry interval (s)', '10'],
  ['timeout_sec', 'Timeout (s)', '60'],
];
const OPS = ['insert', 'update', 'delete'] as const;
const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** A new trigger's form, or an existing one's (its name and table fixed; saved with `replace`). */
function TriggerForm({ md, existing, onSaved }: { md: MetadataDoc; existing?: Listed; onSaved: (key: string) => void }) {
  const t = existing?.trigger;
  const tables = (md.sources ?? []).flatMap((s) => s.tables.map((e) => ({ source: s.name, table: normTable(e.table) })));
  const id = (x: { source: string; table: QualifiedTable }) => `${x.source}.${x.table.schema}.${x.table.name}`;
  const [name, setName] = useState(t?.name ?? '');
  const [on, setOn] = useState(existing ? id(existing) : tables[0] ? id(tables[0]) : '');
  const [ops, setOps] = useState<Record<(typeof OPS)[number], boolean>>({ insert: !!t?.definition.insert, update: !!t?.definition.update, delete: !!t?.definition.delete });
  const [manual, setManual] = useState(!!t?.definition.enable_manual);
  const cols = t?.definition.update?.columns;
  const [updateColumns, setUpdateColumns] = useState(Array.isArray(cols) ? cols.join(', ') : '');
  const [fromEnv, setFromEnv] = useState<'url' | 'env'>(t?.webhook_from_env !== undefined ? 'env' : 'url');
  const [webhook, setWebhook] = useState(t?.webhook ?? t?.webhook_from_env ?? '');
  const [retry, setRetry] = useState<Record<string, string>>(Object.fromEntries(RETRY.map(([k, , d]) => [k, t?.retry_conf?.[k] === undefined || String(t.retry_conf[k]) === d ? '' : String(t.retry_conf[k])])));
  const [headers, setHeaders] = useState<HeaderConf[]>(t?.headers ?? []);
  const action = useAction();
  const p = existing ? `trigger-${t!.name}-` : 'new-trigger-';
  const save = () =>
    action.run(async () => {
      if (!name.trim()) throw new Error('the event trigger needs a name');
      const target = tables.find((x) => id(x) === on);
      if (!target) throw new Error('pick a tracked table (a table is tracked on the Data pages)');
      if (!OPS.some((o) => ops[o]) && !manual) throw new Error('pick at least one operation (insert, update, delete or manual)');
      if (!webhook.trim()) throw new Error(fromEnv === 'env' ? 'the webhook needs the name of an environment variable' : 'the webhook needs a URL');
      const args: Record<string, unknown> = { name: name.trim(), source: target.source, table: target.table, replace: existing !== undefined };
      for (const o of OPS) {
        if (!ops[o]) continue;
        const c = o === 'update' ? list(updateColumns) : [];
        // kept: what the payload carries, which the form does not edit
        const payload = t?.definition[o]?.payload;
        args[o] = { columns: c.length ? c : '*', ...(payload !== undefined ? { payload } : {}) };
      }
      args.enable_manual = manual;
      args[fromEnv === 'env' ? 'webhook_from_env' : 'webhook'] = webhook.trim();
      const rc: Record<string, number> = {};
      for (const [k, label] of RETRY) {
        const n = parseCount(retry[k] ?? '', label);
        if (n !== undefined) rc[k] = n;
      }
      if (Object.keys(rc).length) args.retry_conf = rc;
      const hs = filledHeaders(headers);
      if (hs.length) args.headers = hs;
      await metadata('pg_create_event_trigger', args);
      onSaved(`${target.source}.${name.trim()}`);
    }, existing ? 'Event trigger saved.' : 'Event trigger created.');
  return (
    <form
      className="editor wide"
      data-testid={existing ? `trigger-${t!.name}-form` : 'new-trigger-form'}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h3>{existing ? `Modify ${t!.name}` : 'Create an event trigger'}</h3>
      <TextField label="Name" value={name} onChange={setName} testid={`${p}name`} disabled={existing !== undefined} />
      <label>
        Table{' '}
        <select value={on} onChange={(e) => setOn(e.target.value)} disabled={existing !== undefined} data-testid={`${p}table`}>
          {tables.length === 0 && <option value="">(no tracked table)</option>}
          {tables.map((x) => (
            <option key={id(x)} value={id(x)}>
              {x.source}: {x.table.schema}.{x.table.name}
            </option>
          ))}
        </select>
      </label>
      <fieldset>
        <legend>Operations</legend>
        {OPS.map((o) => (
          <CheckField key={o} label={o} checked={ops[o]} onChange={(x) => setOps({ ...ops, [o]: x })} testid={`${p}op-${o}`} />
        ))}
        <CheckField label="manual (invoked from the console or the API)" checked={manual} onChange={setManual} testid={`${p}op-manual`} />
        {ops.update && <TextField label="Update on columns" value={updateColumns} onChange={setUpdateColumns} placeholder="all columns" hint=" comma-separated; empty: any column" testid={`${p}update-columns`} />}
      </fieldset>
      <div className="row">
        <SelectField<'url' | 'env'>
          label="Webhook"
          value={fromEnv}
          options={[
            ['url', 'URL'],
            ['env', 'from environment variable'],
          ]}
          onChange={setFromEnv}
          testid={`${p}webhook-kind`}
        />
        <TextField label={fromEnv === 'env' ? 'Variable' : 'URL'} value={webhook} onChange={setWebhook} size={50} testid={`${p}webhook`} placeholder={fromEnv === 'env' ? 'SVC_GRAPHQL_WEBHOOK' : 'https://example.com/events or {{ENV_VAR}}/path'} />
      </div>
      <fieldset>
        <legend>Retries</legend>
        <div className="row">
          {RETRY.map(([k, label, d]) => (
            <TextField key={k} label={label} value={retry[k] ?? ''} placeholder={d} size={6} onChange={(x) => setRetry({ ...retry, [k]: x })} testid={`${p}retry-${k}`} />
          ))}
        </div>
      </fieldset>
      <HeadersEditor value={headers} onChange={setHeaders} testid={`${p}headers`} />
      <button type="submit" disabled={action.busy} data-testid={`${p}save`}>
        {existing ? 'Save event trigger' : 'Create event trigger'}
      </button>
      <Status action={action} />
    </form>
  );
}
