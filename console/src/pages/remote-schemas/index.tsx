/**
 * Remote schemas: added, modified (update_remote_schema), reloaded and removed; and, with
 * --enable-remote-schema-permissions, each role's permission as a GraphQL SDL that is a subset of
 * the remote's schema (`@preset(value: ...)` on arguments), which starts as the remote's whole
 * schema (introspect_remote_schema) for the user to cut down.
 */
import { useState } from 'react';
import { buildClientSchema, printSchema } from 'graphql';
import { bulk, exportMetadata, metadata, serverConfig, type HeaderConf, type RemoteSchemaEntry } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { AreaLayout, CheckField, CodeField, DangerButton, filledHeaders, HeadersEditor, parseCount, parseJson, pretty, SelectField, TextField } from '../../forms';
import { navigate, segments } from '../../router';

const BASE = '/remote-schemas';

export function RemoteSchemasPage({ path }: { path: string }) {
  const [name] = segments(path, BASE);
  const md = useLoad(exportMetadata, []);
  const list = md.data?.remote_schemas ?? [];
  const selected = list.find((r) => r.name === name);
  return (
    <AreaLayout title="Remote schemas" base={BASE} items={list.map((r) => r.name)} selected={name} newLabel="+ Add a remote schema" testid="remote">
      <ErrorBox error={md.error} />
      {name === undefined && (
        <>
          <h2>Add a remote schema</h2>
          <RemoteForm key="new" onSaved={(n) => (md.reload(), navigate(`${BASE}/${encodeURIComponent(n)}`))} />
        </>
      )}
      {name !== undefined && md.data && !selected && <p>No remote schema is named {name}.</p>}
      {selected && <RemoteDetail key={selected.name} remote={selected} onChange={md.reload} />}
    </AreaLayout>
  );
}

function RemoteForm({ existing, onSaved }: { existing?: RemoteSchemaEntry; onSaved: (name: string) => void }) {
  const d = existing?.definition;
  const [name, setName] = useState(existing?.name ?? '');
  const [urlFrom, setUrlFrom] = useState<'url' | 'env'>(d?.url_from_env ? 'env' : 'url');
  const [url, setUrl] = useState(d?.url ?? d?.url_from_env ?? '');
  const [headers, setHeaders] = useState<HeaderConf[]>(d?.headers ?? []);
  const [forward, setForward] = useState(d?.forward_client_headers ?? false);
  const [timeout, setTimeout_] = useState(d?.timeout_seconds === undefined ? '' : String(d.timeout_seconds));
  const [customization, setCustomization] = useState(pretty(d?.customization));
  const [comment, setComment] = useState(existing?.comment ?? '');
  const action = useAction();
  const save = () =>
    action.run(async () => {
      const definition: Record<string, unknown> = { [urlFrom === 'url' ? 'url' : 'url_from_env']: url.trim(), forward_client_headers: forward };
      const hs = filledHeaders(headers);
      if (hs.length) definition.headers = hs;
      const t = parseCount(timeout, 'Timeout');
      if (t !== undefined) definition.timeout_seconds = t;
      const c = parseJson(customization, 'Customization');
      if (c !== undefined) definition.customization = c;
      const args = { name: name.trim(), definition, ...(comment.trim() ? { comment: comment.trim() } : {}) };
      await metadata(existing ? 'update_remote_schema' : 'add_remote_schema', args);
      onSaved(args.name);
    }, existing ? 'Remote schema updated.' : 'Remote schema added.');
  return (
    <form
      className="editor wide"
      data-testid="remote-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <TextField label="Name" value={name} onChange={setName} testid="remote-name" disabled={existing !== undefined} />
      <div className="row">
        <SelectField
          label="GraphQL server URL"
          value={urlFrom}
          options={[
            ['url', 'URL'],
            ['env', 'from environment variable'],
          ]}
          onChange={setUrlFrom}
          testid="remote-url-from"
        />
        <TextField label={urlFrom === 'url' ? 'URL' : 'Variable'} value={url} onChange={setUrl} testid="remote-url" size={50} placeholder={urlFrom === 'url' ? 'https://example.com/graphql' : 'REMOTE_URL'} />
      </div>
      <HeadersEditor value={headers} onChange={setHeaders} testid="remote-headers" />
      <CheckField label="forward the client's headers" checked={forward} onChange={setForward} testid="remote-forward" />
      <TextField label="Timeout (seconds)" value={timeout} onChange={setTimeout_} size={6} testid="remote-timeout" placeholder="60" />
      <CodeField label="Customization (JSON: root_fields_namespace, type_names, field_names)" value={customization} onChange={setCustomization} rows={4} testid="remote-customization" />
      <TextField label="Comment" value={comment} onChange={setComment} size={50} testid="remote-comment" />
      <button type="submit" disabled={action.busy} data-testid="remote-save">
        {existing ? 'Save' : 'Add remote schema'}
      </button>
      <Status action={action} />
    </form>
  );
}

function RemoteDetail({ remote, onChange }: { remote: RemoteSchemaEntry; onChange: () => void }) {
  const action = useAction();
  return (
    <>
      <h2>{remote.name}</h2>
      <div className="row">
        <button onClick={() => action.run(() => metadata('reload_remote_schema', { name: remote.name }), 'Reloaded: the remote schema was introspected again.')} disabled={action.busy} data-testid="remote-reload">
          Reload
        </button>
        <DangerButton
          label="Remove"
          question={`Remove the remote schema ${remote.name}?`}
          disabled={action.busy}
          testid="remote-remove"
          onConfirm={() => action.run(async () => (await metadata('remove_remote_schema', { name: remote.name }), onChange(), navigate(BASE)))}
        />
      </div>
      <Status action={action} />
      <h3>Definition</h3>
      <RemoteForm existing={remote} onSaved={onChange} />
      <RemotePermissions remote={remote} onChange={onChange} />
    </>
  );
}

function RemotePermissions({ remote, onChange }: { remote: RemoteSchemaEntry; onChange: () => void }) {
  const config = useLoad(serverConfig, []);
  const [editing, setEditing] = useState<string | undefined>();
  const [newRole, setNewRole] = useState('');
  const action = useAction();
  const perms = remote.permissions ?? [];
  if (config.data && !config.data.is_remote_schema_permissions_enabled)
    return (
      <section>
        <h3>Permissions</h3>
        <p className="muted" data-testid="remote-permissions-off">
          Remote schema permissions are off: start the server with <code>--enable-remote-schema-permissions</code> to give roles part of this schema.
        </p>
      </section>
    );
  return (
    <section>
      <h3>Permissions</h3>
      <ErrorBox error={config.error} />
      <ul className="list" data-testid="remote-permissions">
        {perms.map((p) => (
          <li key={p.role}>
            <b>{p.role}</b>{' '}
            <button className="small" aria-expanded={editing === p.role} onClick={() => setEditing(editing === p.role ? undefined : p.role)} data-testid={`remote-perm-edit-${p.role}`}>
              Edit
            </button>{' '}
            <DangerButton
              small
              label="Remove"
              question={`Remove the permission of ${p.role} on ${remote.name}?`}
              testid={`remote-perm-drop-${p.role}`}
              onConfirm={() => action.run(async () => (await metadata('drop_remote_schema_permissions', { remote_schema: remote.name, role: p.role }), setEditing(undefined), onChange()), `Removed the permission of ${p.role}.`)}
            />
          </li>
        ))}
      </ul>
      {perms.length === 0 && <p className="muted">No role has a permission: only the admin sees this remote schema.</p>}
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (newRole.trim()) setEditing(newRole.trim());
          setNewRole('');
        }}
      >
        <TextField label="Role" value={newRole} onChange={setNewRole} testid="remote-perm-role" />
        <button className="small" data-testid="remote-perm-new">
          New permission
        </button>
      </form>
      <Status action={action} />
      {editing !== undefined && (
        <PermissionEditor key={editing} remote={remote} role={editing} existing={perms.find((p) => p.role === editing)?.definition.schema} onSaved={() => (setEditing(undefined), onChange())} />
      )}
    </section>
  );
}

/** The remote's whole schema as SDL: where a new permission starts. */
async function remoteSdl(name: string): Promise<string> {
  const r = await metadata<{ data: any }>('introspect_remote_schema', { name });
  return printSchema(buildClientSchema(r.data));
}

function PermissionEditor({ remote, role, existing, onSaved }: { remote: RemoteSchemaEntry; role: string; existing?: string; onSaved: () => void }) {
  const [sdl, setSdl] = useState<string | undefined>(existing);
  const full = useLoad(async () => (existing === undefined ? remoteSdl(remote.name) : existing), [remote.name, existing]);
  const text = sdl ?? full.data ?? '';
  const action = useAction();
  const save = () =>
    action.run(async () => {
      const add = { type: 'add_remote_schema_permissions', args: { remote_schema: remote.name, role, definition: { schema: text } } };
      // A permission is replaced by dropping it first, in one bulk (all or nothing).
      if (existing !== undefined) await bulk([{ type: 'drop_remote_schema_permissions', args: { remote_schema: remote.name, role } }, add]);
      else await metadata(add.type, add.args);
      onSaved();
    }, `Saved the permission of ${role}.`);
  return (
    <div className="editor wide" data-testid="remote-perm-editor">
      <h4>
        {role} on {remote.name}
      </h4>
      <p className="muted">
        The part of the remote's schema this role may use: delete the types, fields and arguments it may not. <code>@preset(value: "x-svc-user-id")</code> on an argument sets it
        from the session (the role cannot pass it); <code>static: true</code> passes the value as it is.
      </p>
      <ErrorBox error={full.error} />
      <CodeField label="Schema (GraphQL SDL)" value={text} onChange={setSdl} rows={16} testid="remote-perm-sdl" />
      <button onClick={save} disabled={action.busy || text.trim() === ''} data-testid="remote-perm-save">
        Save permission
      </button>
      <Status action={action} />
    </div>
  );
}
