/**
 * A change of the database made as Hasura's console makes it: the DDL is generated from the form,
 * shown as it will be sent, and sent through run_sql when the button is pressed. `cascade` (when
 * offered) is run_sql's: metadata that depends on what is dropped goes too, else the engine
 * refuses the SQL and says what depends on it.
 *
 * From a CLI project (`svc console`) the change is a migration unless unchecked, as in Hasura's
 * console: written to migrations/<source>/<version>_<name>/ with its down SQL where the page knows
 * the inverse (else down.sql says it could not be made), and applied with its record.
 */
import { useState } from 'react';
import { cliProject, runMigration, runSql } from '../../api';
import { COMMON_TYPES, type ColumnSpec } from './ddl';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { CheckField, Preview, TextField } from '../../forms';

export function SqlChange(props: {
  source: string;
  sql: () => string;
  label: string;
  testid: string;
  offerCascade?: boolean;
  danger?: boolean;
  /** The migration's name, and its down SQL when known. */
  migration: { name: string; down?: () => string };
  onDone: () => void | Promise<void>;
}) {
  const action = useAction();
  const [cascade, setCascade] = useState(false);
  const cli = useLoad(cliProject, []);
  const [asMigration, setAsMigration] = useState(true);
  const [written, setWritten] = useState<string | undefined>();
  let text = '';
  let invalid: unknown;
  try {
    text = props.sql();
  } catch (e) {
    invalid = e;
  }
  const migrate = !!cli.data && asMigration;
  const send = async () => {
    setWritten(undefined);
    if (migrate) {
      let down: string | undefined;
      try {
        down = props.migration.down?.();
      } catch {
        down = undefined; // (the server writes that it could not be made)
      }
      const r = await runMigration({ source: props.source, name: props.migration.name, up: text, down, cascade });
      setWritten(r.directory);
    } else await runSql(text, { source: props.source, cascade });
    await props.onDone();
  };
  return (
    <div className="sql-change">
      {invalid ? <ErrorBox error={invalid} /> : text === '' ? <p className="muted">Nothing to change.</p> : <Preview title="SQL to run" text={text} testid={`${props.testid}-sql`} />}
      <div className="row">
        {props.offerCascade && <CheckField label="cascade to dependent metadata" checked={cascade} onChange={setCascade} testid={`${props.testid}-cascade`} />}
        {cli.data && <CheckField label={`This is a migration (${cli.data.migrations_directory}/${props.source}/)`} checked={asMigration} onChange={setAsMigration} testid={`${props.testid}-migration`} />}
        <button
          type="button"
          className={props.danger ? 'danger' : undefined}
          disabled={action.busy || invalid !== undefined || text === ''}
          onClick={() => action.run(send, 'Done.')}
          data-testid={`${props.testid}-run`}
        >
          {props.label}
        </button>
      </div>
      <Status action={action} />
      {written && (
        <p className="muted" data-testid={`${props.testid}-written`}>
          Migration written: {written}
        </p>
      )}
    </div>
  );
}

/** The fields of one column (create table, add column, edit column). */
export function ColumnFields({ value, onChange, testid }: { value: ColumnSpec; onChange: (c: ColumnSpec) => void; testid: string }) {
  const set = (patch: Partial<ColumnSpec>) => onChange({ ...value, ...patch });
  return (
    <div className="row column-fields" role="group" aria-label={`column ${value.name}`}>
      <TextField label="Name" value={value.name} onChange={(name) => set({ name })} testid={`${testid}-name`} size={16} />
      <TextField label="Type" value={value.type} onChange={(type) => set({ type })} testid={`${testid}-type`} list="column-types" size={18} />
      <CheckField label="nullable" checked={value.nullable} onChange={(nullable) => set({ nullable })} testid={`${testid}-nullable`} />
      <CheckField label="unique" checked={value.unique} onChange={(unique) => set({ unique })} testid={`${testid}-unique`} />
      <TextField label="Default" value={value.default} onChange={(d) => set({ default: d })} testid={`${testid}-default`} placeholder="SQL, e.g. now()" size={14} />
    </div>
  );
}

/** The type names offered in every type field. */
export function ColumnTypes() {
  return (
    <datalist id="column-types">
      {COMMON_TYPES.map((t) => (
        <option key={t} value={t} />
      ))}
    </datalist>
  );
}
