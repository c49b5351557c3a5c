/** SQL: run_sql on the chosen source, the last statement's rows shown as a table. From a CLI
 * project (`svc console`), "This is a migration" writes the SQL as a migration of the project
 * (migrations/<source>/<version>_<name>/), applied with its record, as Hasura's console does. */
import { useState } from 'react';
import { cliProject, runMigration, runSql, type SqlResult } from '../../api';
import { ResultTable, Status, useAction, useLoad } from '../../components';
import { exportMetadata } from '../../api';
import { TextField } from '../../forms';

export function SqlPage() {
  const [sql, setSql] = useState('');
  const [source, setSource] = useState('default');
  const [cascade, setCascade] = useState(false);
  const [readOnly, setReadOnly] = useState(false);
  const [result, setResult] = useState<SqlResult | undefined>();
  const [asMigration, setAsMigration] = useState(false);
  const [name, setName] = useState('run_sql_migration');
  const [written, setWritten] = useState<string | undefined>();
  const action = useAction();
  const sources = useLoad(async () => (await exportMetadata()).sources?.map((s) => s.name) ?? [], []);
  const cli = useLoad(cliProject, []);
  const migrate = !!cli.data && asMigration && !readOnly;
  const run = () =>
    action.run(async () => {
      setResult(undefined);
      setWritten(undefined);
      if (migrate) {
        // a migration runs in one transaction with its record; its rows are not returned
        setWritten((await runMigration({ source, name: name.trim(), up: sql, cascade })).directory);
        setResult({ result_type: 'CommandOk', result: null });
      } else setResult(await runSql(sql, { source, cascade, read_only: readOnly }));
    }, 'SQL executed.');
  return (
    <div className="page">
      <h2>Raw SQL</h2>
      <textarea
        aria-label="SQL"
        className="code"
        rows={10}
        value={sql}
        onChange={(e) => setSql(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) run();
        }}
        placeholder="select * from information_schema.tables limit 10"
        data-testid="sql-input"
      />
      <div className="row">
        <label>
          Source{' '}
          <select value={source} onChange={(e) => setSource(e.target.value)}>
            {(sources.data ?? ['default']).map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          <input type="checkbox" checked={cascade} onChange={(e) => setCascade(e.target.checked)} /> cascade metadata
        </label>
        <label>
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} /> read only
        </label>
        {cli.data && (
          <>
            <label>
              <input type="checkbox" checked={asMigration} disabled={readOnly} onChange={(e) => setAsMigration(e.target.checked)} data-testid="sql-migration" /> This is a migration
            </label>
            {asMigration && <TextField label="Migration name" value={name} onChange={setName} testid="sql-migration-name" size={24} />}
          </>
        )}
        <button onClick={run} disabled={action.busy || !sql.trim()} data-testid="sql-run">
          Run (Ctrl+Enter)
        </button>
      </div>
      <Status action={action} />
      {written && (
        <p className="muted" data-testid="sql-migration-written">
          Migration written: {written}
        </p>
      )}
      {result && result.result_type === 'TuplesOk' && result.result && <ResultTable header={result.result[0] ?? []} rows={result.result.slice(1)} testid="sql-result" />}
      {result && result.result_type === 'CommandOk' && <p data-testid="sql-result">Command OK.</p>}
    </div>
  );
}
