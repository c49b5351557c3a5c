/** SQL: run_sql on the chosen source, the last statement's rows shown as a table. */
import { useState } from 'react';
import { runSql, type SqlResult } from '../../api';
import { ResultTable, Status, useAction, useLoad } from '../../components';
import { exportMetadata } from '../../api';

export function SqlPage() {
  const [sql, setSql] = useState('');
  const [source, setSource] = useState('default');
  const [cascade, setCascade] = useState(false);
  const [readOnly, setReadOnly] = useState(false);
  const [result, setResult] = useState<SqlResult | undefined>();
  const action = useAction();
  const sources = useLoad(async () => (await exportMetadata()).sources?.map((s) => s.name) ?? [], []);
  const run = () =>
    action.run(async () => {
      setResult(undefined);
      setResult(await runSql(sql, { source, cascade, read_only: readOnly }));
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
        <button onClick={run} disabled={action.busy || !sql.trim()} data-testid="sql-run">
          Run (Ctrl+Enter)
        </button>
      </div>
      <Status action={action} />
      {result && result.result_type === 'TuplesOk' && result.result && <ResultTable header={result.result[0] ?? []} rows={result.result.slice(1)} testid="sql-result" />}
      {result && result.result_type === 'CommandOk' && <p data-testid="sql-result">Command OK.</p>}
    </div>
  );
}
