/**
 * REST endpoints: a URL template and methods over a saved GraphQL query. As in Hasura's console,
 * the query is written here and saved in the query collection `allowed-queries` under the
 * endpoint's name (or an existing saved query is picked). Saving an endpoint that exists drops it
 * and creates it again, in one bulk (there is no update operation).
 */
import { useState } from 'react';
import { bulk, exportMetadata, metadata, type MetadataDoc, type RestEndpointEntry } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { AreaLayout, CheckField, CodeField, DangerButton, SelectField, TextField } from '../../forms';
import { navigate, segments } from '../../router';

const BASE = '/rest';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const DEFAULT_COLLECTION = 'allowed-queries';

export function RestPage({ path }: { path: string }) {
  const [name] = segments(path, BASE);
  const md = useLoad(exportMetadata, []);
  const list = md.data?.rest_endpoints ?? [];
  const selected = list.find((e) => e.name === name);
  return (
    <AreaLayout title="REST endpoints" base={BASE} items={list.map((e) => e.name)} selected={name} newLabel="+ Create an endpoint" testid="rest">
      <ErrorBox error={md.error} />
      {md.data && name === undefined && (
        <>
          <h2>Create a REST endpoint</h2>
          <EndpointForm key="new" md={md.data} onSaved={(n) => (md.reload(), navigate(`${BASE}/${encodeURIComponent(n)}`))} />
        </>
      )}
      {md.data && name !== undefined && !selected && <p>No REST endpoint is named {name}.</p>}
      {md.data && selected && <EndpointDetail key={selected.name} md={md.data} endpoint={selected} onChange={md.reload} />}
    </AreaLayout>
  );
}

const queryOf = (md: MetadataDoc, collection: string, query: string) => md.query_collections?.find((c) => c.name === collection)?.definition.queries.find((q) => q.name === query)?.query;

function EndpointDetail({ md, endpoint: e, onChange }: { md: MetadataDoc; endpoint: RestEndpointEntry; onChange: () => void }) {
  const action = useAction();
  const q = e.definition.query;
  return (
    <>
      <h2>{e.name}</h2>
      <p>
        <code data-testid="rest-route">
          {e.methods.join(', ')} /api/rest/{e.url}
        </code>{' '}
        <span className="muted">
          runs {q.collection_name}/{q.query_name}
        </span>
      </p>
      <DangerButton
        label="Drop endpoint"
        question={`Drop the REST endpoint ${e.name}? Its saved query stays in ${q.collection_name}.`}
        testid="rest-drop"
        disabled={action.busy}
        onConfirm={() => action.run(async () => (await metadata('drop_rest_endpoint', { name: e.name }), onChange(), navigate(BASE)))}
      />
      <Status action={action} />
      <h3>Edit</h3>
      <EndpointForm md={md} existing={e} onSaved={onChange} />
    </>
  );
}

function EndpointForm({ md, existing, onSaved }: { md: MetadataDoc; existing?: RestEndpointEntry; onSaved: (name: string) => void }) {
  const collections = md.query_collections ?? [];
  const q = existing?.definition.query;
  const [name, setName] = useState(existing?.name ?? '');
  const [url, setUrl] = useState(existing?.url ?? '');
  const [methods, setMethods] = useState<string[]>(existing?.methods ?? ['GET']);
  const [comment, setComment] = useState(existing?.comment ?? '');
  const [mode, setMode] = useState<'write' | 'saved'>(!q || q.collection_name === DEFAULT_COLLECTION ? 'write' : 'saved');
  const [query, setQuery] = useState((q && queryOf(md, q.collection_name, q.query_name)) ?? '');
  const [collection, setCollection] = useState(q?.collection_name ?? collections[0]?.name ?? '');
  const [saved, setSaved] = useState(q?.query_name ?? '');
  const action = useAction();
  const savedQueries = collections.find((c) => c.name === collection)?.definition.queries ?? [];
  const save = () =>
    action.run(async () => {
      const n = name.trim();
      const ops: { type: string; args: unknown }[] = [];
      if (existing) ops.push({ type: 'drop_rest_endpoint', args: { name: existing.name } });
      let ref = { collection_name: collection, query_name: saved };
      if (mode === 'write') {
        ref = { collection_name: DEFAULT_COLLECTION, query_name: n };
        const c = collections.find((x) => x.name === DEFAULT_COLLECTION);
        if (!c) ops.push({ type: 'create_query_collection', args: { name: DEFAULT_COLLECTION, definition: { queries: [{ name: n, query }] } } });
        else {
          if (c.definition.queries.some((x) => x.name === n)) ops.push({ type: 'drop_query_from_collection', args: { collection_name: DEFAULT_COLLECTION, query_name: n } });
          ops.push({ type: 'add_query_to_collection', args: { collection_name: DEFAULT_COLLECTION, query_name: n, query } });
        }
      } else if (!saved) throw new Error('Pick a saved query.');
      ops.push({ type: 'create_rest_endpoint', args: { name: n, url: url.trim().replace(/^\/+/, ''), methods, definition: { query: ref }, ...(comment.trim() ? { comment: comment.trim() } : {}) } });
      await bulk(ops);
      onSaved(n);
    }, existing ? 'Endpoint saved.' : 'Endpoint created.');
  return (
    <form
      className="editor wide"
      data-testid="rest-form"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <TextField label="Name" value={name} onChange={setName} testid="rest-name" disabled={existing !== undefined} />
      <TextField label="URL: /api/rest/" value={url} onChange={setUrl} size={30} testid="rest-url" placeholder="articles/:id" hint=" (:name is a variable of the query)" />
      <fieldset>
        <legend>Methods</legend>
        {METHODS.map((m) => (
          <CheckField key={m} label={m} checked={methods.includes(m)} onChange={(on) => setMethods(on ? [...methods, m] : methods.filter((x) => x !== m))} testid={`rest-method-${m}`} />
        ))}
      </fieldset>
      <SelectField
        label="Query"
        value={mode}
        options={[
          ['write', `written here (saved in ${DEFAULT_COLLECTION})`],
          ['saved', 'a saved query of a collection'],
        ]}
        onChange={setMode}
        testid="rest-mode"
      />
      {mode === 'write' ? (
        <CodeField label="GraphQL query" value={query} onChange={setQuery} rows={6} testid="rest-query" placeholder="query ($id: Int!) { article_by_pk(id: $id) { id title } }" />
      ) : (
        <div className="row">
          <SelectField label="Collection" value={collection} options={collections.map((c) => c.name)} onChange={setCollection} testid="rest-collection" />
          <SelectField label="Saved query" value={saved} options={['', ...savedQueries.map((x) => x.name)]} onChange={setSaved} testid="rest-saved-query" />
        </div>
      )}
      <TextField label="Comment" value={comment} onChange={setComment} size={40} testid="rest-comment" />
      <button type="submit" disabled={action.busy} data-testid="rest-save">
        {existing ? 'Save endpoint' : 'Create endpoint'}
      </button>
      <Status action={action} />
    </form>
  );
}
