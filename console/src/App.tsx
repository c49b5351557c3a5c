import { useEffect, useState } from 'react';
import { checkSecret, clearSecret, getSecret, setSecret, whenSecretRefused } from './api';
import { ErrorBox } from './components';
import { Link, usePath } from './router';
import { metadata, METADATA_CHANGED } from './api';
import { GraphiQLPage } from './pages/graphiql';
import { DataPage } from './pages/data';
import { SqlPage } from './pages/sql';
import { MetadataPage } from './pages/metadata';
import { EventsPage } from './pages/events';
import { RemoteSchemasPage } from './pages/remote-schemas';
import { ActionsPage } from './pages/actions';
import { RolesPage } from './pages/roles';
import { RestPage } from './pages/rest';
import { AllowListPage } from './pages/allow-list';

function Login({ onDone }: { onDone: () => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <div className="login">
      <form
        data-testid="login-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          setSecret(value);
          try {
            await checkSecret();
            onDone();
          } catch (err) {
            clearSecret();
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>Svc console</h1>
        <label>
          Admin secret
          <input type="password" name="admin-secret" autoFocus value={value} onChange={(e) => setValue(e.target.value)} data-testid="admin-secret" />
        </label>
        <button type="submit" disabled={busy} data-testid="login">
          Enter
        </button>
        <p className="muted">Kept in this tab's session storage only. A server without an admin secret takes any value.</p>
        <ErrorBox error={error} />
      </form>
    </div>
  );
}

/** The areas: path, label, test id, the page (given the path), and other paths it owns. */
interface Area {
  to: string;
  label: string;
  testid: string;
  page: (path: string) => React.ReactNode;
  also?: string[];
  full?: boolean;
}
const AREAS: Area[] = [
  { to: '/graphiql', label: 'API', testid: 'nav-api', page: () => <GraphiQLPage />, full: true },
  { to: '/data', label: 'Data', testid: 'nav-data', page: (p) => <DataPage path={p.slice('/data'.length)} /> },
  { to: '/sql', label: 'SQL', testid: 'nav-sql', page: () => <SqlPage /> },
  { to: '/actions', label: 'Actions', testid: 'nav-actions', page: (p) => <ActionsPage path={p} />, also: ['/custom-types'] },
  { to: '/remote-schemas', label: 'Remote Schemas', testid: 'nav-remote-schemas', page: (p) => <RemoteSchemasPage path={p} /> },
  { to: '/events', label: 'Events', testid: 'nav-events', page: (p) => <EventsPage path={p} /> },
  { to: '/rest', label: 'REST', testid: 'nav-rest', page: (p) => <RestPage path={p} /> },
  { to: '/allow-list', label: 'Allow-list', testid: 'nav-allow-list', page: (p) => <AllowListPage path={p} /> },
  { to: '/roles', label: 'Roles', testid: 'nav-roles', page: () => <RolesPage /> },
  { to: '/metadata', label: 'Metadata', testid: 'nav-metadata', page: () => <MetadataPage /> },
];

const owns = (a: Area, page: string) => [a.to, ...(a.also ?? [])].some((p) => page === p || page.startsWith(`${p}/`));

export function App() {
  const [authed, setAuthed] = useState(getSecret() !== null);
  const path = usePath();
  useEffect(() => {
    // The secret no longer works (the server's changed): ask again.
    whenSecretRefused(() => {
      clearSecret();
      setAuthed(false);
    });
    return () => whenSecretRefused(undefined);
  }, []);
  if (!authed) return <Login onDone={() => setAuthed(true)} />;
  const page = path === '/' ? '/graphiql' : path;
  const area = AREAS.find((a) => owns(a, page));
  return (
    <div className="app">
      <header className="top">
        <span className="brand">Svc</span>
        <nav aria-label="Areas">
          {AREAS.map((a) => (
            <Link key={a.to} to={a.to} className={a === area ? 'active' : ''} testid={a.testid}>
              {a.label}
              {a.to === '/metadata' && <Inconsistent path={page} />}
            </Link>
          ))}
        </nav>
        <button
          className="link"
          onClick={() => {
            clearSecret();
            setAuthed(false);
          }}
          data-testid="logout"
        >
          Log out
        </button>
      </header>
      <main className={area?.full ? 'main full' : 'main'}>{area ? area.page(page) : <p className="page">Page not found: {path}</p>}</main>
    </div>
  );
}

/** A mark on Metadata while the metadata has inconsistent objects (looked at on every page change
 * and after every change of the metadata made here). */
function Inconsistent({ path }: { path: string }) {
  const [n, setN] = useState(0);
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const on = () => setChanges((x) => x + 1);
    addEventListener(METADATA_CHANGED, on);
    return () => removeEventListener(METADATA_CHANGED, on);
  }, []);
  useEffect(() => {
    let live = true;
    metadata<{ inconsistent_objects: unknown[] }>('get_inconsistent_metadata', {}).then(
      (r) => live && setN(r.inconsistent_objects.length),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [path, changes]);
  if (n === 0) return null;
  return (
    <span className="badge warn" data-testid="nav-inconsistent" title={`${n} inconsistent object(s)`}>
      {n} inconsistent
    </span>
  );
}
