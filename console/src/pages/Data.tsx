/**
 * Data: a source's schemas and tables (from information_schema through run_sql), track and
 * untrack, and for a table: its columns, its rows (paginated through GraphQL, limit/offset),
 * relationships (suggested from foreign keys) and a permissions matrix role × operation with its
 * editor. Every change goes through the metadata API.
 */
import { useMemo, useState } from 'react';
import {
  bulk,
  columnField,
  exportMetadata,
  graphql,
  lit,
  metadata,
  normTable,
  rowsOf,
  runSql,
  selectRootField,
  tableEntry,
  type MetadataDoc,
  type QualifiedTable,
  type TableEntry,
} from '../api';
import { ErrorBox, ResultTable, Status, useAction, useLoad } from '../components';
import { Link, navigate } from '../router';

const TABS = ['columns', 'browse', 'relationships', 'permissions'] as const;
type Tab = (typeof TABS)[number];

/** /data[/<source>[/<schema>[/<table>[/<tab>]]]] */
function parse(path: string): { source: string; schema: string; table?: string; tab: Tab } {
  const [source, schema, table, tab] = path
    .split('/')
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  return { source: source ?? 'default', schema: schema ?? 'public', table, tab: (TABS as readonly string[]).includes(tab ?? '') ? (tab as Tab) : 'columns' };
}
const url = (source: string, schema: string, table?: string, tab?: Tab) => `/data/${[source, schema, table, tab].filter((x) => x !== undefined).map((x) => encodeURIComponent(x!)).join('/')}`;

export function DataPage({ path }: { path: string }) {
  const { source, schema, table, tab } = parse(path);
  const md = useLoad(exportMetadata, []);
  const schemas = useLoad(
    async () =>
      rowsOf(
        await runSql(
          "select schema_name from information_schema.schemata where schema_name not in ('information_schema', 'pg_catalog') and schema_name not like 'pg\\_%' order by 1",
          { source, read_only: true },
        ),
      ).map((r) => r.schema_name!),
    [source],
  );
  const tables = useLoad(
    async () => rowsOf(await runSql(`select table_name, table_type from information_schema.tables where table_schema = ${lit(schema)} order by 1`, { source, read_only: true })),
    [source, schema],
  );
  const sources = md.data?.sources ?? [];
  return (
    <div className="data">
      <aside className="sidebar">
        <label>
          Source
          <select value={source} onChange={(e) => navigate(url(e.target.value, 'public'))} data-testid="source-select">
            {sources.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name} ({s.kind})
              </option>
            ))}
          </select>
        </label>
        <label>
          Schema
          <select value={schema} onChange={(e) => navigate(url(source, e.target.value))} data-testid="schema-select">
            {(schemas.data ?? [schema]).map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <div className="row">
          <button className="small" onClick={() => (md.reload(), tables.reload(), schemas.reload())} data-testid="refresh-tables">
            Refresh
          </button>
        </div>
        <ErrorBox error={md.error ?? schemas.error ?? tables.error} />
        <ul className="tables" data-testid="tables">
          {(tables.data ?? []).map((t) => {
            const tracked = md.data ? tableEntry(md.data, source, { schema, name: t.table_name! }) !== undefined : false;
            return (
              <li key={t.table_name} className={t.table_name === table ? 'active' : ''}>
                <Link to={url(source, schema, t.table_name)} testid={`table-${t.table_name}`}>
                  {t.table_name}
                </Link>
                {t.table_type === 'VIEW' && <span className="badge">view</span>}
                {!tracked && <span className="badge muted">untracked</span>}
              </li>
            );
          })}
        </ul>
        {tables.data && tables.data.length === 0 && <p className="muted">No tables in {schema}.</p>}
      </aside>
      <section className="content">
        {table === undefined ? (
          <SchemaOverview source={source} schema={schema} md={md.data} tables={tables.data ?? []} onChange={md.reload} />
        ) : (
          md.data && <TableView key={`${source}.${schema}.${table}`} source={source} table={{ schema, name: table }} tab={tab} md={md.data} onChange={md.reload} />
        )}
      </section>
    </div>
  );
}

function SchemaOverview({ source, schema, md, tables, onChange }: { source: string; schema: string; md: MetadataDoc | undefined; tables: Record<string, string>[]; onChange: () => void }) {
  const action = useAction();
  const untracked = md ? tables.filter((t) => !tableEntry(md, source, { schema, name: t.table_name! })) : [];
  return (
    <div className="page">
      <h2>
        {source} / {schema}
      </h2>
      <p className="muted">Pick a table on the left. Create tables on the SQL page.</p>
      {untracked.length > 0 && (
        <>
          <h3>Untracked tables and views</h3>
          <ul className="list" data-testid="untracked">
            {untracked.map((t) => (
              <li key={t.table_name}>
                {t.table_name}{' '}
                <button
                  className="small"
                  data-testid={`track-${t.table_name}`}
                  onClick={() => action.run(async () => (await metadata('pg_track_table', { source, table: { schema, name: t.table_name } }), onChange()), `Tracked ${t.table_name}.`)}
                >
                  Track
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
      <Status action={action} />
    </div>
  );
}

interface Column {
  column_name: string;
  data_type: string;
  is_nullable: string;
  column_default: string;
  pk: string;
}

function TableView({ source, table, tab, md, onChange }: { source: string; table: QualifiedTable; tab: Tab; md: MetadataDoc; onChange: () => void }) {
  const entry = tableEntry(md, source, table);
  const action = useAction();
  const columns = useLoad(
    async () =>
      rowsOf(
        await runSql(
          `select c.column_name, c.data_type, c.is_nullable, coalesce(c.column_default, '') as column_default,
             case when exists (select 1 from information_schema.table_constraints tc join information_schema.key_column_usage k
               on k.constraint_name = tc.constraint_name and k.table_schema = tc.table_schema and k.table_name = tc.table_name
               where tc.constraint_type = 'PRIMARY KEY' and tc.table_schema = c.table_schema and tc.table_name = c.table_name and k.column_name = c.column_name)
             then 'yes' else '' end as pk
           from information_schema.columns c where c.table_schema = ${lit(table.schema)} and c.table_name = ${lit(table.name)} order by c.ordinal_position`,
          { source, read_only: true },
        ),
      ) as unknown as Column[],
    [source, table.schema, table.name],
  );
  const track = () => action.run(async () => (await metadata('pg_track_table', { source, table }), onChange()), `Tracked ${table.name}.`);
  const untrack = () => {
    if (!confirm(`Untrack ${table.schema}.${table.name}? Its relationships and permissions are removed from the metadata (the table stays in the database).`)) return;
    void action.run(async () => (await metadata('pg_untrack_table', { source, table, cascade: true }), onChange()), `Untracked ${table.name}.`);
  };
  return (
    <div className="page">
      <h2>
        {table.schema}.{table.name}{' '}
        {entry ? (
          <>
            <span className="badge ok" data-testid="tracked">
              tracked
            </span>{' '}
            <button className="small" onClick={untrack} disabled={action.busy} data-testid="untrack">
              Untrack
            </button>
          </>
        ) : (
          <button onClick={track} disabled={action.busy} data-testid="track">
            Track
          </button>
        )}
      </h2>
      <Status action={action} />
      <nav className="tabs">
        {TABS.map((t) => (
          <Link key={t} to={url(source, table.schema, table.name, t)} className={t === tab ? 'active' : ''} testid={`tab-${t}`}>
            {t}
          </Link>
        ))}
      </nav>
      <ErrorBox error={columns.error} />
      {tab === 'columns' && columns.data && (
        <ResultTable header={['column', 'type', 'nullable', 'default', 'primary key']} rows={columns.data.map((c) => [c.column_name, c.data_type, c.is_nullable, c.column_default, c.pk])} testid="columns" />
      )}
      {tab !== 'columns' && !entry && <p className="muted">Track the table first.</p>}
      {tab === 'browse' && entry && columns.data && <Browse entry={entry} columns={columns.data} />}
      {tab === 'relationships' && entry && <Relationships source={source} table={table} entry={entry} md={md} onChange={onChange} />}
      {tab === 'permissions' && entry && columns.data && <Permissions source={source} table={table} entry={entry} md={md} columns={columns.data.map((c) => c.column_name)} onChange={onChange} />}
    </div>
  );
}

// ---------------------------------------------------------------------------------------------

const PAGE = 10;

function Browse({ entry, columns }: { entry: TableEntry; columns: Column[] }) {
  const [offset, setOffset] = useState(0);
  const root = selectRootField(entry);
  const fields = columns.map((c) => columnField(entry, c.column_name));
  const pk = columns.filter((c) => c.pk).map((c) => columnField(entry, c.column_name));
  const order = pk.length ? `, order_by: {${pk.map((p) => `${p}: asc`).join(', ')}}` : '';
  const query = `query BrowseRows($limit: Int!, $offset: Int!) { ${root}(limit: $limit, offset: $offset${order}) { ${fields.join(' ')} } }`;
  const rows = useLoad(async () => (await graphql(query, { limit: PAGE + 1, offset }))[root] as Record<string, unknown>[], [query, offset]);
  const shown = (rows.data ?? []).slice(0, PAGE);
  const show = (v: unknown) => (v === null ? null : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return (
    <div>
      <ErrorBox error={rows.error} />
      {rows.data && <ResultTable header={fields} rows={shown.map((r) => fields.map((f) => show(r[f])))} testid="browse" />}
      <div className="row">
        <button className="small" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))} data-testid="browse-prev">
          ← Previous
        </button>
        <span className="muted">
          rows {offset + 1}–{offset + shown.length}
        </span>
        <button className="small" disabled={(rows.data?.length ?? 0) <= PAGE} onClick={() => setOffset(offset + PAGE)} data-testid="browse-next">
          Next →
        </button>
      </div>
      <details>
        <summary className="muted">GraphQL</summary>
        <pre>{query}</pre>
      </details>
    </div>
  );
}

// ---------------------------------------------------------------------------------------------

interface ForeignKey {
  conname: string;
  src_schema: string;
  src_table: string;
  ref_schema: string;
  ref_table: string;
  src_cols: string;
  ref_cols: string;
}

interface Suggestion {
  kind: 'object' | 'array';
  name: string;
  using: unknown;
  about: string;
}

function Relationships({ source, table, entry, md, onChange }: { source: string; table: QualifiedTable; entry: TableEntry; md: MetadataDoc; onChange: () => void }) {
  const action = useAction();
  const fks = useLoad(
    async () =>
      rowsOf(
        await runSql(
          `select c.conname, sn.nspname as src_schema, s.relname as src_table, tn.nspname as ref_schema, t.relname as ref_table,
             (select json_agg(a.attname order by k.n) from unnest(c.conkey) with ordinality k(attnum, n) join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum)::text as src_cols,
             (select json_agg(a.attname order by k.n) from unnest(c.confkey) with ordinality k(attnum, n) join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum)::text as ref_cols
           from pg_constraint c
             join pg_class s on s.oid = c.conrelid join pg_namespace sn on sn.oid = s.relnamespace
             join pg_class t on t.oid = c.confrelid join pg_namespace tn on tn.oid = t.relnamespace
           where c.contype = 'f' and ((sn.nspname = ${lit(table.schema)} and s.relname = ${lit(table.name)}) or (tn.nspname = ${lit(table.schema)} and t.relname = ${lit(table.name)}))
           order by c.conname`,
          { source, read_only: true },
        ),
      ) as unknown as ForeignKey[],
    [source, table.schema, table.name],
  );
  const existing = [...(entry.object_relationships ?? []).map((r) => ({ ...r, kind: 'object' as const })), ...(entry.array_relationships ?? []).map((r) => ({ ...r, kind: 'array' as const }))];
  const taken = new Set(existing.map((r) => JSON.stringify(r.using)));
  const names = new Set(existing.map((r) => r.name));
  const suggestions: Suggestion[] = [];
  for (const fk of fks.data ?? []) {
    const src: string[] = JSON.parse(fk.src_cols);
    const ref: string[] = JSON.parse(fk.ref_cols);
    if (fk.src_schema === table.schema && fk.src_table === table.name) {
      suggestions.push({ kind: 'object', name: fk.ref_table, using: { foreign_key_constraint_on: src.length === 1 ? src[0] : src }, about: `${src.join(', ')} → ${fk.ref_schema}.${fk.ref_table} (${ref.join(', ')})` });
    }
    if (fk.ref_schema === table.schema && fk.ref_table === table.name && tableEntry(md, source, { schema: fk.src_schema, name: fk.src_table })) {
      const remote = { schema: fk.src_schema, name: fk.src_table };
      suggestions.push({
        kind: 'array',
        name: fk.src_table.endsWith('s') ? fk.src_table : `${fk.src_table}s`,
        using: { foreign_key_constraint_on: src.length === 1 ? { table: remote, column: src[0] } : { table: remote, columns: src } },
        about: `${fk.src_schema}.${fk.src_table} (${src.join(', ')}) → ${ref.join(', ')}`,
      });
    }
  }
  const open = suggestions.filter((s) => !taken.has(JSON.stringify(s.using)) && !existing.some((e) => JSON.stringify(normUsing(e.using)) === JSON.stringify(normUsing(s.using))));
  const [edited, setEdited] = useState<Record<number, string>>({});
  return (
    <div>
      <Status action={action} />
      <h3>Relationships</h3>
      {existing.length === 0 && <p className="muted">None.</p>}
      <ul className="list" data-testid="relationships">
        {existing.map((r) => (
          <li key={r.name}>
            <b>{r.name}</b> <span className="badge">{r.kind}</span> <code>{JSON.stringify(r.using)}</code>{' '}
            <button className="small" onClick={() => action.run(async () => (await metadata('pg_drop_relationship', { source, table, relationship: r.name }), onChange()), `Dropped ${r.name}.`)} data-testid={`drop-rel-${r.name}`}>
              Drop
            </button>
          </li>
        ))}
      </ul>
      <h3>Suggested from foreign keys</h3>
      <ErrorBox error={fks.error} />
      {fks.data && open.length === 0 && <p className="muted">No suggestions.</p>}
      <ul className="list" data-testid="suggestions">
        {open.map((s, i) => {
          const name = edited[i] ?? (names.has(s.name) ? `${s.name}_${s.kind}` : s.name);
          return (
            <li key={i}>
              <span className="badge">{s.kind}</span> {s.about}{' '}
              <input value={name} onChange={(e) => setEdited({ ...edited, [i]: e.target.value })} data-testid={`suggest-name-${i}`} />{' '}
              <button
                className="small"
                data-testid={`suggest-add-${i}`}
                onClick={() => action.run(async () => (await metadata(`pg_create_${s.kind}_relationship`, { source, table, name, using: s.using }), onChange()), `Created ${name}.`)}
              >
                Add
              </button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function normUsing(u: unknown): unknown {
  const fk = (u as { foreign_key_constraint_on?: any })?.foreign_key_constraint_on;
  if (fk && typeof fk === 'object' && !Array.isArray(fk) && fk.table) return { ...fk, table: normTable(fk.table) };
  return u;
}

// ---------------------------------------------------------------------------------------------

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

function Permissions({ source, table, entry, md, columns, onChange }: { source: string; table: QualifiedTable; entry: TableEntry; md: MetadataDoc; columns: string[]; onChange: () => void }) {
  const [added, setAdded] = useState<string[]>([]);
  const [newRole, setNewRole] = useState('');
  const [editing, setEditing] = useState<{ role: string; op: Op } | undefined>();
  const roles = useMemo(() => {
    const all = new Set<string>();
    for (const s of md.sources ?? []) for (const t of s.tables) for (const op of OPS) for (const p of t[`${op}_permissions`] ?? []) all.add(p.role);
    for (const r of added) all.add(r);
    return [...all].sort();
  }, [md, added]);
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
                    <button className={`cell ${s === '✗' ? 'none' : s}`} onClick={() => setEditing({ role, op })} data-testid={`perm-${role}-${op}`}>
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
                <input value={newRole} onChange={(e) => setNewRole(e.target.value)} placeholder="new role" data-testid="new-role" /> <button className="small" data-testid="add-role">Add role</button>
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
            <input type="checkbox" checked={aggregations} onChange={(e) => setAggregations(e.target.checked)} /> allow aggregations
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
