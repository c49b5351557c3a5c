/**
 * One table or view: tracked or not (track/untrack), and its tabs: columns (with the changes of
 * the table: columns added, altered and dropped, the table renamed or dropped, each as DDL shown
 * and then run through run_sql), rows, relationships and permissions.
 */
import { useState } from 'react';
import { metadata, migrationName, tableEntry, type MetadataDoc, type QualifiedTable } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { TextField } from '../../forms';
import { Link } from '../../router';
import { Browse } from './Browse';
import { addColumnSql, alterColumnSql, dropColumnSql, dropTableSql, renameTableSql, type ColumnSpec } from './ddl';
import { columnsOf, type Column } from './introspect';
import { Permissions } from './Permissions';
import { Relationships } from './Relationships';
import { ColumnFields, ColumnTypes, SqlChange } from './SqlChange';

export const TABS = ['columns', 'browse', 'relationships', 'permissions'] as const;
export type Tab = (typeof TABS)[number];

export const dataUrl = (source: string, schema: string, table?: string, tab?: Tab) =>
  `/data/${[source, schema, table, tab]
    .filter((x) => x !== undefined)
    .map((x) => encodeURIComponent(x!))
    .join('/')}`;

export function TableView(props: { source: string; table: QualifiedTable; kind: 'table' | 'view'; tab: Tab; md: MetadataDoc; onChange: () => void; onSchemaChange: (goTo?: string) => void }) {
  const { source, table, tab, md, onChange } = props;
  const entry = tableEntry(md, source, table);
  const action = useAction();
  const columns = useLoad(() => columnsOf(source, table), [source, table.schema, table.name]);
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
      <nav className="tabs" aria-label="Table">
        {TABS.map((t) => (
          <Link key={t} to={dataUrl(source, table.schema, table.name, t)} className={t === tab ? 'active' : ''} testid={`tab-${t}`}>
            {t}
          </Link>
        ))}
      </nav>
      <ErrorBox error={columns.error} />
      {tab === 'columns' && columns.data && (
        <Columns source={source} table={table} kind={props.kind} columns={columns.data} onChange={() => (columns.reload(), onChange())} onSchemaChange={props.onSchemaChange} />
      )}
      {tab !== 'columns' && !entry && <p className="muted">Track the table first.</p>}
      {tab === 'browse' && entry && columns.data && <Browse entry={entry} columns={columns.data} />}
      {tab === 'relationships' && entry && <Relationships source={source} table={table} entry={entry} md={md} onChange={onChange} />}
      {tab === 'permissions' && entry && columns.data && <Permissions source={source} table={table} entry={entry} md={md} columns={columns.data.map((c) => c.column_name)} onChange={onChange} />}
    </div>
  );
}

const specOf = (c: Column): ColumnSpec => ({ name: c.column_name, type: c.data_type, nullable: c.is_nullable === 'YES', unique: c.unique_constraint !== '', default: c.column_default });

function Columns(props: { source: string; table: QualifiedTable; kind: 'table' | 'view'; columns: Column[]; onChange: () => void; onSchemaChange: (goTo?: string) => void }) {
  const { source, table, columns } = props;
  const [editing, setEditing] = useState<string | undefined>();
  const [adding, setAdding] = useState(false);
  const [newName, setNewName] = useState(table.name);
  const isTable = props.kind === 'table';
  return (
    <div>
      <ColumnTypes />
      <table className="grid" data-testid="columns">
        <thead>
          <tr>
            {['column', 'type', 'nullable', 'default', 'primary key', 'unique', ''].map((h) => (
              <th key={h}>{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {columns.map((c) => (
            <tr key={c.column_name}>
              <td>{c.column_name}</td>
              <td>{c.data_type}</td>
              <td>{c.is_nullable}</td>
              <td>{c.column_default}</td>
              <td>{c.pk}</td>
              <td>{c.unique_constraint ? 'yes' : ''}</td>
              <td>
                {isTable && (
                  <button className="small" aria-expanded={editing === c.column_name} onClick={() => setEditing(editing === c.column_name ? undefined : c.column_name)} data-testid={`edit-col-${c.column_name}`}>
                    Edit
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {editing !== undefined && columns.some((c) => c.column_name === editing) && (
        <ColumnEditor key={editing} source={source} table={table} column={columns.find((c) => c.column_name === editing)!} onDone={() => (setEditing(undefined), props.onChange())} />
      )}
      {isTable && (
        <div className="row">
          <button className="small" aria-expanded={adding} onClick={() => setAdding(!adding)} data-testid="add-column">
            + Add a column
          </button>
        </div>
      )}
      {adding && <AddColumn source={source} table={table} onDone={() => (setAdding(false), props.onChange())} />}
      <section className="editor">
        <h4>The {props.kind}</h4>
        {isTable && (
          <>
            <TextField label="Rename to" value={newName} onChange={setNewName} testid="rename-table-to" />
            <SqlChange
              source={source}
              sql={() => (newName.trim() === table.name ? '' : renameTableSql(table.schema, table.name, newName))}
              migration={{ name: migrationName('rename_table', table.schema, table.name), down: () => renameTableSql(table.schema, newName.trim(), table.name) }}
              label="Rename table"
              testid="rename-table"
              onDone={() => props.onSchemaChange(newName.trim())}
            />
          </>
        )}
        <SqlChange
          source={source}
          sql={() => dropTableSql(table.schema, table.name, props.kind)}
          migration={{ name: migrationName(`drop_${props.kind}`, table.schema, table.name) }}
          label={`Drop ${props.kind}`}
          testid="drop-table"
          danger
          offerCascade
          onDone={() => props.onSchemaChange()}
        />
      </section>
    </div>
  );
}

function ColumnEditor({ source, table, column, onDone }: { source: string; table: QualifiedTable; column: Column; onDone: () => void }) {
  const before = specOf(column);
  const [after, setAfter] = useState(before);
  return (
    <div className="editor wide" data-testid="column-editor">
      <h4>Column {column.column_name}</h4>
      <ColumnFields value={after} onChange={setAfter} testid="col" />
      <SqlChange
        source={source}
        sql={() => alterColumnSql(table.schema, table.name, before, after, column.unique_constraint || undefined)}
        // The inverse: `after` back to `before`; a UNIQUE added here is dropped by the name it was
        // added under, one dropped here is added back under its own.
        migration={{
          name: migrationName('alter_table', table.schema, table.name, 'alter_column', column.column_name),
          down: () => alterColumnSql(table.schema, table.name, { ...after, name: after.name.trim() }, before, column.unique_constraint || `${table.name}_${before.name}_key`),
        }}
        label="Save column"
        testid="alter-column"
        onDone={onDone}
      />
      <SqlChange
        source={source}
        sql={() => dropColumnSql(table.schema, table.name, column.column_name)}
        migration={{ name: migrationName('alter_table', table.schema, table.name, 'drop_column', column.column_name) }}
        label="Drop column"
        testid="drop-column"
        danger
        offerCascade
        onDone={onDone}
      />
    </div>
  );
}

function AddColumn({ source, table, onDone }: { source: string; table: QualifiedTable; onDone: () => void }) {
  const [c, setC] = useState<ColumnSpec>({ name: '', type: 'text', nullable: true, unique: false, default: '' });
  return (
    <div className="editor wide" data-testid="column-adder">
      <h4>New column</h4>
      <ColumnFields value={c} onChange={setC} testid="add-col" />
      <SqlChange
        source={source}
        sql={() => addColumnSql(table.schema, table.name, c)}
        migration={{ name: migrationName('alter_table', table.schema, table.name, 'add_column', c.name.trim()), down: () => dropColumnSql(table.schema, table.name, c.name.trim()) }}
        label="Add column"
        testid="add-column"
        onDone={onDone}
      />
    </div>
  );
}
