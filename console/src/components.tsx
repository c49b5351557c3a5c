import { useCallback, useEffect, useState } from 'react';

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <div className="error" role="alert" data-testid="error">
      {error instanceof Error ? error.message : String(error)}
    </div>
  );
}

/** A table of rows: the first row of `rows` is the header when `header` is not given. */
export function ResultTable({ header, rows, testid }: { header: string[]; rows: (string | null)[][]; testid?: string }) {
  return (
    <div className="table-wrap">
      <table className="grid" data-testid={testid}>
        <thead>
          <tr>
            {header.map((h, i) => (
              <th key={i}>{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {r.map((c, j) => (
                <td key={j}>{c === null ? <span className="null">NULL</span> : c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && <p className="muted">No rows.</p>}
    </div>
  );
}

/** Loads a value with `load`, again whenever `deps` change or `reload()` is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { ...state, reload };
}

/** Runs an action, keeping its error and a busy flag. */
export function useAction(): { busy: boolean; error: unknown; message: string | undefined; run: (f: () => Promise<unknown>, ok?: string) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [message, setMessage] = useState<string | undefined>(undefined);
  const run = useCallback(async (f: () => Promise<unknown>, ok?: string) => {
    setBusy(true);
    setError(undefined);
    setMessage(undefined);
    try {
      await f();
      setMessage(ok);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  const clear = useCallback(() => {
    setError(undefined);
    setMessage(undefined);
  }, []);
  return { busy, error, message, run, clear };
}

export function Status({ action }: { action: { error: unknown; message: string | undefined } }) {
  return (
    <>
      <ErrorBox error={action.error} />
      {action.message && (
        <div className="ok" role="status" data-testid="ok">
          {action.message}
        </div>
      )}
    </>
  );
}
