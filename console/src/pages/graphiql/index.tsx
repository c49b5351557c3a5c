/**
 * GraphiQL (from npm, bundled) on /v1/graphql, with its documentation explorer and header editor;
 * subscriptions over the same path's WebSocket, and our query builder (./Explorer.tsx).
 * The admin secret is added to every request unless the header editor sets X-Svc-Admin-Secret
 * itself; the role bar above writes X-Svc-Role and X-Svc-* session variables into the header
 * editor, where they can be edited further, and reload the schema (the explorer shows the
 * role's); after editing the headers by hand, GraphiQL's re-fetch button does that.
 */
import { useMemo, useState } from 'react';
import { GraphiQL } from 'graphiql';
import type { Fetcher, FetcherParams } from '@graphiql/toolkit';
import { getOperationAST, parse } from 'graphql';
import { createClient } from 'graphql-ws';
import 'graphiql/graphiql.css';
import { adminHeaders } from '../../api';
import { explorerPlugin } from './Explorer';

/** A new fetcher each time the role bar sets headers: GraphiQL introspects again when its fetcher
 * changes, so the explorer shows that role's schema. */
const makeFetcher = (): Fetcher => async (params, opts) => {
  const given = (opts?.headers ?? {}) as Record<string, unknown>;
  const headers: Record<string, string> = {};
  const lower = new Set(Object.keys(given).map((k) => k.toLowerCase()));
  for (const [k, v] of Object.entries(adminHeaders())) if (!lower.has(k.toLowerCase())) headers[k] = v;
  for (const [k, v] of Object.entries(given)) headers[k] = String(v);
  if (isSubscription(params.query, params.operationName)) return subscribe(params, headers);
  const r = await fetch('/v1/graphql', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(params) });
  const text = await r.text();
  try {
    return JSON.parse(text);
  } catch {
    return { errors: [{ message: `HTTP ${r.status}: ${text}` }] };
  }
};

function isSubscription(query: string, operationName?: string | null): boolean {
  try {
    return getOperationAST(parse(query), operationName ?? undefined)?.operation === 'subscription';
  } catch {
    return false;
  }
}

/** A subscription over /v1/graphql's WebSocket (graphql-transport-ws), the headers in the
 * connection_init payload as the server reads them; one connection per subscription, closed when
 * GraphiQL stops it. Errors come out as a result with `errors`, then the end. */
function subscribe(params: FetcherParams, headers: Record<string, string>): AsyncIterableIterator<unknown> {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/graphql`;
  const client = createClient({ url, connectionParams: { headers }, lazy: true, retryAttempts: 0 });
  const results = client.iterate({ query: params.query, variables: params.variables ?? undefined, operationName: params.operationName ?? undefined });
  let finished = false;
  const finish = () => {
    finished = true;
    void client.dispose();
  };
  const describe = (e: unknown): string =>
    Array.isArray(e) ? e.map(describe).join('; ') : e instanceof Error ? e.message : e && typeof e === 'object' && 'reason' in e ? `connection closed (${(e as CloseEvent).code}): ${(e as CloseEvent).reason}` : String(e);
  return {
    async next() {
      if (finished) return { done: true, value: undefined };
      try {
        const r = await results.next();
        if (r.done) finish();
        return r;
      } catch (e) {
        finish();
        return { done: false, value: { errors: [{ message: describe(e) }] } };
      }
    },
    async return() {
      finish();
      await results.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

const PLUGINS = [explorerPlugin];

interface Var {
  name: string;
  value: string;
}

export function GraphiQLPage() {
  const [role, setRole] = useState('');
  const [vars, setVars] = useState<Var[]>([]);
  const [headers, setHeaders] = useState<string | undefined>(undefined);
  const [generation, setGeneration] = useState(0);
  const fetcher = useMemo(makeFetcher, [generation]);
  const apply = (r: string, vs: Var[]) => {
    const h: Record<string, string> = {};
    if (r) h['X-Svc-Role'] = r;
    for (const v of vs) if (v.name.trim()) h[v.name.trim().toLowerCase().startsWith('x-svc-') ? v.name.trim() : `X-Svc-${v.name.trim()}`] = v.value;
    setHeaders(JSON.stringify(h, null, 2));
    // After the header editor took the new text (GraphiQL introspects with what it holds).
    setTimeout(() => setGeneration((g) => g + 1), 100);
  };
  const defaultQuery = useMemo(() => '# Run a query as the admin, or as a role set in the bar above (it writes the Headers tab).\n{\n  __typename\n}\n', []);
  return (
    <div className="graphiql-page">
      <form
        className="role-bar"
        data-testid="role-bar"
        onSubmit={(e) => {
          e.preventDefault();
          apply(role, vars);
        }}
      >
        <label>
          Role (X-Svc-Role)
          <input value={role} placeholder="admin" onChange={(e) => setRole(e.target.value)} data-testid="role-input" />
        </label>
        {vars.map((v, i) => (
          <span key={i} className="var">
            <input value={v.name} placeholder="X-Svc-User-Id" onChange={(e) => setVars(vars.map((x, j) => (j === i ? { ...x, name: e.target.value } : x)))} data-testid={`var-name-${i}`} />
            <input value={v.value} placeholder="value" onChange={(e) => setVars(vars.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))} data-testid={`var-value-${i}`} />
            <button type="button" className="link" onClick={() => setVars(vars.filter((_, j) => j !== i))}>
              ×
            </button>
          </span>
        ))}
        <button type="button" onClick={() => setVars([...vars, { name: '', value: '' }])} data-testid="add-var">
          + session variable
        </button>
        <button type="submit" data-testid="apply-headers">
          Set headers
        </button>
        <span className="muted">The admin secret is sent with every request unless the headers set X-Svc-Admin-Secret.</span>
      </form>
      <div className="graphiql-wrap">
        <GraphiQL fetcher={fetcher} plugins={PLUGINS} headers={headers} defaultQuery={defaultQuery} defaultEditorToolsVisibility="headers" isHeadersEditorEnabled shouldPersistHeaders={false} />
      </div>
    </div>
  );
}
