/**
 * Create table: columns, primary key, foreign keys and a comment, as CREATE TABLE (shown, then run
 * through run_sql), and the new table tracked (pg_track_table) when asked.
 */
import { useState } from 'react';
import { metadata, migrationName } from '../../api';
import { CheckField, SelectField, TextField } from '../../forms';
import { ColumnFields, ColumnTypes, SqlChange } from './SqlChange';
import { createTableSql, dropTableSql, FK_ACTIONS, type Action, type ColumnSpec, type ForeignKeySpec } from './ddl';

const blank = (): ColumnSpec => ({ name: '', type: 'text', nullable: true, unique: false, default: '' });
const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function CreateTable({ source, schema, onCreated }: { source: string; schema: string; onCreated: (name: string) => void }) {
  const [name, setName] = useState('');
  const [columns, setColumns] = useState<ColumnSpec[]>([{ name: 'id', type: 'serial', nullable: false, unique: false, default: '' }]);
  const [primaryKey, setPrimaryKey] = useState<string[]>(['id']);
  const [fks, setFks] = useState<(Omit<ForeignKeySpec, 'columns' | 'refColumns'> & { columns: string; refColumns: string })[]>([]);
  const [comment, setComment] = useState('');
  const [track, setTrack] = useState(true);
  const setFk = (i: number, patch: Partial<(typeof fks)[number]>) => setFks(fks.map((f, j) => (j === i ? { ...f, ...patch } : f)));
  const spec = () =>
    createTableSql({ schema, name, columns, primaryKey: primaryKey.filter((k) => columns.some((c) => c.name === k)), foreignKeys: fks.map((f) => ({ ...f, columns: list(f.columns), refColumns: list(f.refColumns) })), comment });
  return (
    <form className="editor wide" data-testid="create-table" onSubmit={(e) => e.preventDefault()} aria-label="Create table">
      <h3>Create a table in {schema}</h3>
      <ColumnTypes />
      <TextField label="Table name" value={name} onChange={setName} testid="new-table-name" />
      <fieldset>
        <legend>Columns</legend>
        {columns.map((c, i) => (
          <div key={i} className="row">
            <ColumnFields value={c} onChange={(x) => setColumns(columns.map((y, j) => (j === i ? x : y)))} testid={`new-col-${i}`} />
            <button type="button" className="link" onClick={() => setColumns(columns.filter((_, j) => j !== i))} aria-label={`Remove column ${c.name || i + 1}`}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" className="small" onClick={() => setColumns([...columns, blank()])} data-testid="new-col-add">
          + column
        </button>
      </fieldset>
      <fieldset data-testid="new-pk">
        <legend>Primary key</legend>
        {columns
          .filter((c) => c.name.trim())
          .map((c) => (
            <CheckField key={c.name} label={c.name} checked={primaryKey.includes(c.name)} onChange={(on) => setPrimaryKey(on ? [...primaryKey, c.name] : primaryKey.filter((k) => k !== c.name))} testid={`new-pk-${c.name}`} />
          ))}
      </fieldset>
      <fieldset>
        <legend>Foreign keys</legend>
        {fks.map((f, i) => (
          <div key={i} className="row" role="group" aria-label={`foreign key ${i + 1}`}>
            <TextField label="Columns" value={f.columns} onChange={(columns) => setFk(i, { columns })} testid={`new-fk-${i}-columns`} placeholder="author_id" size={12} />
            <TextField label="→ table" value={f.refTable} onChange={(refTable) => setFk(i, { refTable })} testid={`new-fk-${i}-table`} size={12} />
            <TextField label="in schema" value={f.refSchema} onChange={(refSchema) => setFk(i, { refSchema })} size={8} />
            <TextField label="columns" value={f.refColumns} onChange={(refColumns) => setFk(i, { refColumns })} testid={`new-fk-${i}-ref-columns`} placeholder="id" size={8} />
            <SelectField<Action> label="on update" value={f.onUpdate} options={FK_ACTIONS} onChange={(onUpdate) => setFk(i, { onUpdate })} />
            <SelectField<Action> label="on delete" value={f.onDelete} options={FK_ACTIONS} onChange={(onDelete) => setFk(i, { onDelete })} testid={`new-fk-${i}-on-delete`} />
            <button type="button" className="link" onClick={() => setFks(fks.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" className="small" onClick={() => setFks([...fks, { columns: '', refSchema: schema, refTable: '', refColumns: 'id', onUpdate: 'restrict', onDelete: 'restrict' }])} data-testid="new-fk-add">
          + foreign key
        </button>
      </fieldset>
      <TextField label="Comment" value={comment} onChange={setComment} size={50} />
      <CheckField label="track the table once created" checked={track} onChange={setTrack} testid="new-table-track" />
      <SqlChange
        source={source}
        sql={spec}
        migration={{ name: migrationName('create_table', schema, name.trim()), down: () => dropTableSql(schema, name.trim()) }}
        label="Create table"
        testid="new-table"
        onDone={async () => {
          if (track) await metadata('pg_track_table', { source, table: { schema, name: name.trim() } });
          onCreated(name.trim());
        }}
      />
    </form>
  );
}
