import { useEffect, useState } from 'react';
import { checkSecret, clearSecret, getSecret, setSecret, whenSecretRefused } from './api';
import { ErrorBox } from './components';
import { Link, usePath } from './router';
import { GraphiQLPage } from './pages/GraphiQLPage';
import { DataPage } from './pages/data';
import { SqlPage } from './pages/Sql';
import { MetadataPage } from './pages/Metadata';
import { EventsPage } from './pages/Events';

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

const NAV: [string, string][] = [
  ['/graphiql', 'API'],
  ['/data', 'Data'],
  ['/sql', 'SQL'],
  ['/metadata', 'Metadata'],
  ['/events', 'Events'],
];

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
  let body: React.ReactNode;
  if (page.startsWith('/graphiql')) body = <GraphiQLPage />;
  else if (page.startsWith('/data')) body = <DataPage path={page.slice('/data'.length)} />;
  else if (page.startsWith('/sql')) body = <SqlPage />;
  else if (page.startsWith('/metadata')) body = <MetadataPage />;
  else if (page.startsWith('/events')) body = <EventsPage />;
  else body = <p>Page not found: {path}</p>;
  return (
    <div className="app">
      <header className="top">
        <span className="brand">Svc</span>
        <nav>
          {NAV.map(([to, label]) => (
            <Link key={to} to={to} className={page.startsWith(to) ? 'active' : ''} testid={`nav-${label.toLowerCase()}`}>
              {label}
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
      <main className={page.startsWith('/graphiql') ? 'main full' : 'main'}>{body}</main>
    </div>
  );
}
