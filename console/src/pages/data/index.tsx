/**
 * Data: a source's schemas and tables (from the catalog through read-only run_sql), tables created
 * here (CreateTable) or picked on the left (TableView: columns and their changes, rows,
 * relationships, permissions). Tracking goes through the metadata API, DDL through run_sql.
 */
import { useState } from 'react';
import { exportMetadata, lit, metadata, rowsOf, runSql, tableEntry, type MetadataDoc } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { Link, navigate } from '../../router';
import { CreateTable } from './CreateTable';
import { dataUrl, TableView, TABS, type Tab } from './TableView';

/** /data[/<source>[/<schema>[/<table>[/<tab>]]]] */
function parse(path: string): { source: string; schema: string; table?: string; tab: Tab } {
  const [source, schema, table, tab] = path
    .split('/')
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
  return { source: source ?? 'default', schema: schema ?? 'public', table, tab: (TABS as readonly string[]).includes(tab ?? '') ? (tab as Tab) : 'columns' };
}

export function DataPage({ path }: { path: string }) {
  const { source, schema, table, tab } = parse(path);
  const md = useLoad(exportMetadata, []);
  const schemas = useLoad(
    async () =>
      rowsOf(
        await runSql(
          "select schema_name from information_schema.schemata where schema_name not in ('information_schema', 'pg_catalog') and schema_name not like 'pg\\_%' order by 1",
          { source, read_only: true },
        ),
      ).map((r) => r.schema_name!),
    [source],
  );
  const tables = useLoad(
    async () => rowsOf(await runSql(`select table_name, table_type from information_schema.tables where table_schema = ${lit(schema)} order by 1`, { source, read_only: true })),
    [source, schema],
  );
  const sources = md.data?.sources ?? [];
  return (
    <div className="data">
      <aside className="sidebar">
        <label>
          Source
          <select value={source} onChange={(e) => navigate(dataUrl(e.target.value, 'public'))} data-testid="source-select">
            {sources.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name} ({s.kind})
              </option>
            ))}
          </select>
        </label>
        <label>
          Schema
          <select value={schema} onChange={(e) => navigate(dataUrl(source, e.target.value))} data-testid="schema-select">
            {(schemas.data ?? [schema]).map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <div className="row">
          <button className="small" onClick={() => (md.reload(), tables.reload(), schemas.reload())} data-testid="refresh-tables">
            Refresh
          </button>
        </div>
        <ErrorBox error={md.error ?? schemas.error ?? tables.error} />
        <ul className="tables" data-testid="tables">
          {(tables.data ?? []).map((t) => {
            const tracked = md.data ? tableEntry(md.data, source, { schema, name: t.table_name! }) !== undefined : false;
            return (
              <li key={t.table_name} className={t.table_name === table ? 'active' : ''}>
                <Link to={dataUrl(source, schema, t.table_name)} testid={`table-${t.table_name}`}>
                  {t.table_name}
                </Link>
                {t.table_type === 'VIEW' && <span className="badge">view</span>}
                {!tracked && <span className="badge muted">untracked</span>}
              </li>
            );
          })}
        </ul>
        {tables.data && tables.data.length === 0 && <p className="muted">No tables in {schema}.</p>}
      </aside>
      <section className="content">
        {table === undefined ? (
          <SchemaOverview
            source={source}
            schema={schema}
            md={md.data}
            tables={tables.data ?? []}
            onChange={md.reload}
            onCreated={(name) => {
              md.reload();
              tables.reload();
              navigate(dataUrl(source, schema, name));
            }}
          />
        ) : (
          md.data && (
            <TableView
              key={`${source}.${schema}.${table}`}
              source={source}
              table={{ schema, name: table }}
              kind={tables.data?.find((t) => t.table_name === table)?.table_type === 'VIEW' ? 'view' : 'table'}
              tab={tab}
              md={md.data}
              onChange={md.reload}
              onSchemaChange={(goTo) => {
                md.reload();
                tables.reload();
                navigate(dataUrl(source, schema, goTo));
              }}
            />
          )
        )}
      </section>
    </div>
  );
}

function SchemaOverview(props: { source: string; schema: string; md: MetadataDoc | undefined; tables: Record<string, string>[]; onChange: () => void; onCreated: (name: string) => void }) {
  const { source, schema, md, tables, onChange } = props;
  const action = useAction();
  const [creating, setCreating] = useState(false);
  const untracked = md ? tables.filter((t) => !tableEntry(md, source, { schema, name: t.table_name! })) : [];
  return (
    <div className="page">
      <h2>
        {source} / {schema}
      </h2>
      <p className="muted">Pick a table on the left, or create one.</p>
      <button aria-expanded={creating} onClick={() => setCreating(!creating)} data-testid="create-table-open">
        Create table
      </button>
      {creating && <CreateTable source={source} schema={schema} onCreated={props.onCreated} />}
      {untracked.length > 0 && (
        <>
          <h3>Untracked tables and views</h3>
          <ul className="list" data-testid="untracked">
            {untracked.map((t) => (
              <li key={t.table_name}>
                {t.table_name}{' '}
                <button
                  className="small"
                  data-testid={`track-${t.table_name}`}
                  onClick={() => action.run(async () => (await metadata('pg_track_table', { source, table: { schema, name: t.table_name } }), onChange()), `Tracked ${t.table_name}.`)}
                >
                  Track
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
      <Status action={action} />
    </div>
  );
}
