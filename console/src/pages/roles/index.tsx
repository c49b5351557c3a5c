/**
 * Roles: every role the metadata names, and the inherited roles (add_inherited_role, which also
 * replaces one of the same name, and drop_inherited_role). An inherited role gets its parents'
 * permissions where it has none of its own.
 */
import { useState } from 'react';
import { exportMetadata, knownRoles, metadata, type MetadataDoc } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { DangerButton, RolePicker, TextField } from '../../forms';

export function RolesPage() {
  const md = useLoad(exportMetadata, []);
  const [editing, setEditing] = useState<string | undefined>();
  const action = useAction();
  const inherited = md.data?.inherited_roles ?? [];
  return (
    <div className="page">
      <h2>Roles</h2>
      <ErrorBox error={md.error} />
      <p className="muted">
        Roles in the metadata: <span data-testid="known-roles">{md.data ? knownRoles(md.data).join(', ') || 'none' : '…'}</span> (and admin).
      </p>
      <h3>Inherited roles</h3>
      <table className="grid" data-testid="inherited-roles">
        <thead>
          <tr>
            <th>role</th>
            <th>made of</th>
            <th>comment</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          {inherited.map((r) => (
            <tr key={r.role_name}>
              <td>{r.role_name}</td>
              <td>{r.role_set.join(', ')}</td>
              <td>{r.comment ?? ''}</td>
              <td>
                <button className="small" aria-expanded={editing === r.role_name} onClick={() => setEditing(editing === r.role_name ? undefined : r.role_name)} data-testid={`inherited-edit-${r.role_name}`}>
                  Edit
                </button>{' '}
                <DangerButton
                  small
                  label="Drop"
                  question={`Drop the inherited role ${r.role_name}?`}
                  testid={`inherited-drop-${r.role_name}`}
                  onConfirm={() => action.run(async () => (await metadata('drop_inherited_role', { role_name: r.role_name }), setEditing(undefined), md.reload()), `Dropped ${r.role_name}.`)}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {inherited.length === 0 && <p className="muted">No inherited roles.</p>}
      <Status action={action} />
      {md.data && <InheritedRoleForm key={editing ?? ''} md={md.data} name={editing} onSaved={() => (setEditing(undefined), md.reload())} />}
    </div>
  );
}

function InheritedRoleForm({ md, name, onSaved }: { md: MetadataDoc; name?: string; onSaved: () => void }) {
  const existing = md.inherited_roles?.find((r) => r.role_name === name);
  const [role, setRole] = useState(existing?.role_name ?? '');
  const [set, setSet] = useState<string[]>(existing?.role_set ?? []);
  const [comment, setComment] = useState(existing?.comment ?? '');
  const action = useAction();
  return (
    <form
      className="editor"
      data-testid="inherited-form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(
          async () => (await metadata('add_inherited_role', { role_name: role.trim(), role_set: set, ...(comment.trim() ? { comment: comment.trim() } : {}) }), onSaved()),
          existing ? `Saved ${role.trim()}.` : `Added ${role.trim()}.`,
        );
      }}
    >
      <h4>{existing ? `Edit ${existing.role_name}` : 'Add an inherited role'}</h4>
      <TextField label="Role name" value={role} onChange={setRole} testid="inherited-name" disabled={existing !== undefined} />
      <RolePicker legend="Made of the roles" known={knownRoles(md).filter((r) => r !== role.trim())} value={set} onChange={setSet} testid="inherited-set" />
      <TextField label="Comment" value={comment} onChange={setComment} size={40} testid="inherited-comment" />
      <button type="submit" disabled={action.busy} data-testid="inherited-save">
        {existing ? 'Save' : 'Add inherited role'}
      </button>
      <Status action={action} />
    </form>
  );
}
