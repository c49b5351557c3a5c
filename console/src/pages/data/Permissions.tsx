/**
 * The permissions matrix of a tracked table: role x insert/select/update/delete, each cell a button
 * that opens its editor (row filter and check as JSON, columns, presets, row limit, aggregations),
 * saved with pg_create_*_permission (a drop first, in one bulk, when it replaces one) and removed
 * with pg_drop_*_permission.
 */
import { useMemo, useState } from 'react';
import { bulk, knownRoles, metadata, type MetadataDoc, type QualifiedTable, type TableEntry } from '../../api';
import { Status, useAction } from '../../components';

const OPS = ['insert', 'select', 'update', 'delete'] as const;
type Op = (typeof OPS)[number];

function permissionOf(entry: TableEntry, role: string, op: Op): any | undefined {
  return entry[`${op}_permissions`]?.find((p) => p.role === role)?.permission;
}

function summary(p: any, op: Op): string {
  if (!p) return '✗';
  const rowRule = op === 'insert' ? p.check : p.filter;
  return rowRule && Object.keys(rowRule).length > 0 ? 'partial' : 'full';
}

export function Permissions({ source, table, entry, md, columns, onChange }: { source: string; table: QualifiedTable; entry: TableEntry; md: MetadataDoc; columns: string[]; onChange: () => void }) {
  const [added, setAdded] = useState<string[]>([]);
  const [newRole, setNewRole] = useState('');
  const [editing, setEditing] = useState<{ role: string; op: Op } | undefined>();
  const roles = useMemo(() => [...new Set([...knownRoles(md), ...added])].sort(), [md, added]);
  return (
    <div>
      <h3>Permissions</h3>
      <table className="grid perms" data-testid="permissions-matrix">
        <thead>
          <tr>
            <th>role</th>
            {OPS.map((op) => (
              <th key={op}>{op}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>admin</td>
            {OPS.map((op) => (
              <td key={op}>full</td>
            ))}
          </tr>
          {roles.map((role) => (
            <tr key={role}>
              <td>{role}</td>
              {OPS.map((op) => {
                const s = summary(permissionOf(entry, role, op), op);
                const active = editing?.role === role && editing.op === op;
                return (
                  <td key={op} className={active ? 'active' : ''}>
                    <button className={`cell ${s === '✗' ? 'none' : s}`} onClick={() => setEditing({ role, op })} aria-label={`${op} permission of ${role}: ${s === '✗' ? 'none' : s}`} aria-pressed={active} data-testid={`perm-${role}-${op}`}>
                      {s}
                    </button>
                  </td>
                );
              })}
            </tr>
          ))}
          <tr>
            <td colSpan={5}>
              <form
                onSubmit={(e) => {
                  e.preventDefault();
                  const r = newRole.trim();
                  if (!r || r === 'admin') return;
                  setAdded([...added, r]);
                  setNewRole('');
                }}
              >
                <input value={newRole} onChange={(e) => setNewRole(e.target.value)} placeholder="new role" aria-label="New role" data-testid="new-role" /> <button className="small" data-testid="add-role">Add role</button>
              </form>
            </td>
          </tr>
        </tbody>
      </table>
      {editing && (
        <PermissionEditor
          key={`${editing.role}.${editing.op}`}
          source={source}
          table={table}
          role={editing.role}
          op={editing.op}
          existing={permissionOf(entry, editing.role, editing.op)}
          columns={columns}
          onClose={() => setEditing(undefined)}
          onChange={onChange}
        />
      )}
    </div>
  );
}

function PermissionEditor(props: { source: string; table: QualifiedTable; role: string; op: Op; existing: any; columns: string[]; onClose: () => void; onChange: () => void }) {
  const { source, table, role, op, existing, columns } = props;
  const action = useAction();
  const pretty = (x: unknown) => JSON.stringify(x ?? {}, null, 2);
  const [filter, setFilter] = useState(pretty(existing?.filter));
  const [check, setCheck] = useState(pretty(existing?.check));
  const [set, setSet] = useState(pretty(existing?.set));
  const [cols, setCols] = useState<Set<string>>(new Set(existing?.columns === '*' ? columns : (existing?.columns ?? [])));
  const [limit, setLimit] = useState(existing?.limit === undefined ? '' : String(existing.limit));
  const [aggregations, setAggregations] = useState(Boolean(existing?.allow_aggregations));
  const hasFilter = op !== 'insert';
  const hasCheck = op === 'insert' || op === 'update';
  const hasColumns = op !== 'delete';
  const hasSet = op === 'insert' || op === 'update';

  const save = () =>
    action.run(async () => {
      const json = (text: string, what: string) => {
        try {
          return JSON.parse(text || '{}');
        } catch (e) {
          throw new Error(`${what}: invalid JSON (${(e as Error).message})`);
        }
      };
      const permission: Record<string, unknown> = {};
      if (hasFilter) permission.filter = json(filter, 'filter');
      if (hasCheck) {
        const c = json(check, 'check');
        if (op === 'insert' || Object.keys(c).length > 0) permission.check = c;
      }
      if (hasColumns) permission.columns = columns.filter((c) => cols.has(c));
      if (hasSet) {
        const s = json(set, 'set');
        if (Object.keys(s).length > 0) permission.set = s;
      }
      if (op === 'select') {
        if (limit.trim() !== '') permission.limit = Number(limit);
        if (aggregations) permission.allow_aggregations = true;
      }
      const create = { type: `pg_create_${op}_permission`, args: { source, table, role, permission } };
      if (existing) await bulk([{ type: `pg_drop_${op}_permission`, args: { source, table, role } }, create]);
      else await metadata(create.type, create.args);
      props.onChange();
    }, `Saved the ${op} permission of ${role}.`);

  const remove = () =>
    action.run(async () => {
      await metadata(`pg_drop_${op}_permission`, { source, table, role });
      props.onChange();
    }, `Removed the ${op} permission of ${role}.`);

  return (
    <div className="editor" data-testid="permission-editor">
      <h4>
        {role} — {op} on {table.schema}.{table.name}
      </h4>
      {hasFilter && (
        <label>
          Row filter{op === 'update' ? ' (pre-update check)' : ''} — a boolean expression, e.g. <code>{'{"owner": {"_eq": "X-Svc-User-Id"}}'}</code>
          <textarea className="code" rows={5} value={filter} onChange={(e) => setFilter(e.target.value)} data-testid="perm-filter" />
        </label>
      )}
      {hasCheck && (
        <label>
          {op === 'insert' ? 'Row check' : 'Post-update check'}
          <textarea className="code" rows={4} value={check} onChange={(e) => setCheck(e.target.value)} data-testid="perm-check" />
        </label>
      )}
      {hasColumns && (
        <fieldset>
          <legend>
            Columns{' '}
            <button type="button" className="small" onClick={() => setCols(new Set(cols.size === columns.length ? [] : columns))} data-testid="perm-all-columns">
              {cols.size === columns.length ? 'none' : 'all'}
            </button>
          </legend>
          {columns.map((c) => (
            <label key={c} className="check">
              <input
                type="checkbox"
                checked={cols.has(c)}
                onChange={(e) => {
                  const next = new Set(cols);
                  if (e.target.checked) next.add(c);
                  else next.delete(c);
                  setCols(next);
                }}
                data-testid={`perm-col-${c}`}
              />{' '}
              {c}
            </label>
          ))}
        </fieldset>
      )}
      {hasSet && (
        <label>
          Column presets (set)
          <textarea className="code" rows={3} value={set} onChange={(e) => setSet(e.target.value)} data-testid="perm-set" />
        </label>
      )}
      {op === 'select' && (
        <div className="row">
          <label>
            Row limit <input value={limit} onChange={(e) => setLimit(e.target.value)} size={6} data-testid="perm-limit" />
          </label>
          <label>
            <input type="checkbox" checked={aggregations} onChange={(e) => setAggregations(e.target.checked)} data-testid="perm-aggregations" /> allow aggregations
          </label>
        </div>
      )}
      <div className="row">
        <button onClick={save} disabled={action.busy} data-testid="perm-save">
          Save permission
        </button>
        {existing && (
          <button className="danger" onClick={remove} disabled={action.busy} data-testid="perm-delete">
            Delete permission
          </button>
        )}
        <button className="link" onClick={props.onClose}>
          Close
        </button>
      </div>
      <Status action={action} />
    </div>
  );
}

