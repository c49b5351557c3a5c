/** A small client-side router over history: paths under /console (the server answers index.html for them). */
import { useEffect, useState } from 'react';

const BASE = '/console';

function current(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return p === '' ? '/' : p;
}

export function navigate(path: string): void {
  history.pushState(null, '', BASE + path);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function usePath(): string {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const on = () => setPath(current());
    addEventListener('popstate', on);
    return () => removeEventListener('popstate', on);
  }, []);
  return path;
}

export function Link(props: { to: string; children: React.ReactNode; className?: string; testid?: string }) {
  return (
    <a
      href={BASE + props.to}
      className={props.className}
      data-testid={props.testid}
      onClick={(e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

/** The decoded segments of a page's path below its area: `/actions/a%20b/permissions` under
 * `/actions` is ['a b', 'permissions']. */
export function segments(path: string, area: string): string[] {
  return path
    .slice(area.length)
    .split('/')
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
}
