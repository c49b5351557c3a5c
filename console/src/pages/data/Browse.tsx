/** Browse: a tracked table's rows through GraphQL (as the admin), 10 a page, limit/offset. */
import { useState } from 'react';
import { columnField, graphql, selectRootField, type TableEntry } from '../../api';
import { ErrorBox, ResultTable, useLoad } from '../../components';
import type { Column } from './introspect';

const PAGE = 10;

export function Browse({ entry, columns }: { entry: TableEntry; columns: Column[] }) {
  const [offset, setOffset] = useState(0);
  const root = selectRootField(entry);
  const fields = columns.map((c) => columnField(entry, c.column_name));
  const pk = columns.filter((c) => c.pk).map((c) => columnField(entry, c.column_name));
  const order = pk.length ? `, order_by: {${pk.map((p) => `${p}: asc`).join(', ')}}` : '';
  const query = `query BrowseRows($limit: Int!, $offset: Int!) { ${root}(limit: $limit, offset: $offset${order}) { ${fields.join(' ')} } }`;
  const rows = useLoad(async () => (await graphql(query, { limit: PAGE + 1, offset }))[root] as Record<string, unknown>[], [query, offset]);
  const shown = (rows.data ?? []).slice(0, PAGE);
  const show = (v: unknown) => (v === null ? null : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return (
    <div>
      <ErrorBox error={rows.error} />
      {rows.data && <ResultTable header={fields} rows={shown.map((r) => fields.map((f) => show(r[f])))} testid="browse" />}
      <div className="row">
        <button className="small" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))} data-testid="browse-prev">
          ← Previous
        </button>
        <span className="muted">
          rows {offset + 1}–{offset + shown.length}
        </span>
        <button className="small" disabled={(rows.data?.length ?? 0) <= PAGE} onClick={() => setOffset(offset + PAGE)} data-testid="browse-next">
          Next →
        </button>
      </div>
      <details>
        <summary className="muted">GraphQL</summary>
        <pre>{query}</pre>
      </details>
    </div>
  );
}

