/**
 * Actions and custom types. An action is written as Hasura's console writes it: its definition as
 * SDL (`type Mutation { login(...): Token }`), the types it uses as SDL beside it, and its handler,
 * kind, headers and timeout; saving sends set_custom_types (the types merged into the existing
 * ones) and create_action or update_action in one bulk. Each action's roles
 * (create/drop_action_permission). /custom-types edits all the custom types at once.
 */
import { useState } from 'react';
import { bulk, exportMetadata, knownRoles, metadata, type ActionEntry, type CustomTypes, type HeaderConf, type MetadataDoc } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { AreaLayout, CheckField, CodeField, DangerButton, filledHeaders, HeadersEditor, parseCount, SelectField, TextField } from '../../forms';
import { Link, navigate, segments } from '../../router';
import { actionSdl, mergeTypes, parseActionSdl, parseTypesSdl, typesSdl, typesUsed } from './sdl';

const BASE = '/actions';

const SAMPLE_ACTION = `type Mutation {
  actionName(arg1: SampleInput!): SampleOutput
}
`;
const SAMPLE_TYPES = `type SampleOutput {
  accessToken: String!
}

input SampleInput {
  username: String!
  password: String!
}
`;

export function ActionsPage({ path }: { path: string }) {
  const md = useLoad(exportMetadata, []);
  const types = path.startsWith('/custom-types');
  const [name] = types ? [] : segments(path, BASE);
  const list = md.data?.actions ?? [];
  const selected = list.find((a) => a.name === name);
  const extra = (
    <Link to="/custom-types" className={types ? 'new active' : 'new'} testid="custom-types-link">
      Custom types
    </Link>
  );
  return (
    <AreaLayout title="Actions" base={BASE} items={list.map((a) => a.name)} selected={types ? '' : name} newLabel="+ Create an action" testid="action" extra={extra}>
      <ErrorBox error={md.error} />
      {md.data && types && <CustomTypesEditor md={md.data} onChange={md.reload} />}
      {md.data && !types && name === undefined && (
        <>
          <h2>Create an action</h2>
          <ActionForm key="new" md={md.data} onSaved={(n) => (md.reload(), navigate(`${BASE}/${encodeURIComponent(n)}`))} />
        </>
      )}
      {md.data && name !== undefined && !selected && <p>No action is named {name}.</p>}
      {md.data && selected && <ActionDetail key={selected.name} md={md.data} action={selected} onChange={md.reload} />}
    </AreaLayout>
  );
}

function ActionForm({ md, existing, onSaved }: { md: MetadataDoc; existing?: ActionEntry; onSaved: (name: string) => void }) {
  const ct = md.custom_types ?? {};
  const d = existing?.definition;
  const [sdl, setSdl] = useState(existing ? actionSdl(existing) : SAMPLE_ACTION);
  const [types, setTypes] = useState(existing ? typesSdl(ct, typesUsed(existing.definition, ct)) : SAMPLE_TYPES);
  const [handler, setHandler] = useState(d?.handler ?? '');
  const [kind, setKind] = useState<'synchronous' | 'asynchronous'>(d?.kind ?? 'synchronous');
  const [headers, setHeaders] = useState<HeaderConf[]>(d?.headers ?? []);
  const [forward, setForward] = useState(d?.forward_client_headers ?? false);
  const [timeout, setTimeout_] = useState(d?.timeout === undefined ? '' : String(d.timeout));
  const action = useAction();
  let parsed: ReturnType<typeof parseActionSdl> | undefined;
  try {
    parsed = parseActionSdl(sdl);
  } catch {
    parsed = undefined;
  }
  const save = () =>
    action.run(async () => {
      const a = parseActionSdl(sdl);
      if (existing && a.name !== existing.name) throw new Error(`An action is not renamed: create ${a.name} as a new action, then drop ${existing.name}.`);
      const definition: Record<string, unknown> = { handler: handler.trim(), output_type: a.output_type, arguments: a.arguments, type: a.type, forward_client_headers: forward };
      if (a.type === 'mutation') definition.kind = kind;
      const hs = filledHeaders(headers);
      if (hs.length) definition.headers = hs;
      const t = parseCount(timeout, 'Timeout');
      if (t !== undefined) definition.timeout = t;
      const merged = mergeTypes(ct, parseTypesSdl(types));
      const ops: { type: string; args: unknown }[] = [];
      if (JSON.stringify(merged) !== JSON.stringify(ct)) ops.push({ type: 'set_custom_types', args: merged });
      ops.push({ type: existing ? 'update_action' : 'create_action', args: { name: a.name, definition, ...(a.description ? { comment: a.description } : {}) } });
      await bulk(ops);
      onSaved(a.name);
    }, existing ? 'Action saved.' : 'Action created.');
  return (
    <form
      className="editor wide"
      data-testid="action-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <div className="two">
        <CodeField label="Action definition (GraphQL SDL; a description above the field is the action's comment)" value={sdl} onChange={setSdl} rows={8} testid="action-sdl" />
        <CodeField label="Types it uses (added to the custom types, or replacing those of the same name)" value={types} onChange={setTypes} rows={8} testid="action-types" />
      </div>
      <TextField label="Handler (webhook URL; {{ENV_VAR}} templates allowed)" value={handler} onChange={setHandler} size={50} testid="action-handler" placeholder="https://example.com/login" />
      {(parsed?.type ?? 'mutation') === 'mutation' && (
        <SelectField
          label="Kind"
          value={kind}
          options={[
            ['synchronous', 'synchronous'],
            ['asynchronous', 'asynchronous (answers with an id; the result is queried later)'],
          ]}
          onChange={setKind}
          testid="action-kind"
        />
      )}
      <HeadersEditor value={headers} onChange={setHeaders} testid="action-headers" />
      <CheckField label="forward the client's headers" checked={forward} onChange={setForward} testid="action-forward" />
      <TextField label="Timeout (seconds)" value={timeout} onChange={setTimeout_} size={6} placeholder="30" testid="action-timeout" />
      <button type="submit" disabled={action.busy} data-testid="action-save">
        {existing ? 'Save action' : 'Create action'}
      </button>
      <Status action={action} />
    </form>
  );
}

function ActionDetail({ md, action: a, onChange }: { md: MetadataDoc; action: ActionEntry; onChange: () => void }) {
  const action = useAction();
  const [clearData, setClearData] = useState(false);
  return (
    <>
      <h2>{a.name}</h2>
      <div className="row">
        {a.definition.kind === 'asynchronous' && <CheckField label="also delete its asynchronous calls' logs" checked={clearData} onChange={setClearData} />}
        <DangerButton
          label="Drop action"
          question={`Drop the action ${a.name}? Its permissions go with it; its custom types stay.`}
          testid="action-drop"
          disabled={action.busy}
          onConfirm={() => action.run(async () => (await metadata('drop_action', { name: a.name, ...(clearData ? { clear_data: true } : {}) }), onChange(), navigate(BASE)))}
        />
      </div>
      <Status action={action} />
      <ActionForm md={md} existing={a} onSaved={onChange} />
      <ActionPermissions md={md} action={a} onChange={onChange} />
    </>
  );
}

function ActionPermissions({ md, action: a, onChange }: { md: MetadataDoc; action: ActionEntry; onChange: () => void }) {
  const action = useAction();
  const [role, setRole] = useState('');
  const have = (a.permissions ?? []).map((p) => p.role);
  const offered = knownRoles(md).filter((r) => !have.includes(r));
  const add = (r: string) => action.run(async () => (await metadata('create_action_permission', { action: a.name, role: r }), onChange()), `${r} may run ${a.name}.`);
  return (
    <section>
      <h3>Permissions</h3>
      <p className="muted">The roles that may run this action (the admin always may).</p>
      <ul className="list" data-testid="action-permissions">
        {have.map((r) => (
          <li key={r}>
            <b>{r}</b>{' '}
            <button
              className="small danger"
              onClick={() => action.run(async () => (await metadata('drop_action_permission', { action: a.name, role: r }), onChange()), `${r} may no longer run ${a.name}.`)}
              data-testid={`action-perm-drop-${r}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      {have.length === 0 && <p className="muted">No role yet.</p>}
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (role.trim()) void add(role.trim());
          setRole('');
        }}
      >
        <TextField label="Role" value={role} onChange={setRole} testid="action-perm-role" list="action-roles" />
        <datalist id="action-roles">
          {offered.map((r) => (
            <option key={r} value={r} />
          ))}
        </datalist>
        <button className="small" disabled={action.busy} data-testid="action-perm-add">
          Allow
        </button>
      </form>
      <Status action={action} />
    </section>
  );
}

function CustomTypesEditor({ md, onChange }: { md: MetadataDoc; onChange: () => void }) {
  const current: CustomTypes = md.custom_types ?? {};
  const [text, setText] = useState(typesSdl(current));
  const action = useAction();
  return (
    <>
      <h2>Custom types</h2>
      <p className="muted">
        Every custom type, as SDL: the scalars, enums, input objects and object types that actions use. Saving replaces them all (set_custom_types); object types keep their
        relationships to tables.
      </p>
      <CodeField label="Custom types (GraphQL SDL)" value={text} onChange={setText} rows={20} testid="custom-types-sdl" />
      <button onClick={() => action.run(async () => (await metadata('set_custom_types', mergeTypes(current, parseTypesSdl(text), true)), onChange()), 'Custom types saved.')} disabled={action.busy} data-testid="custom-types-save">
        Save custom types
      </button>
      <Status action={action} />
    </>
  );
}
