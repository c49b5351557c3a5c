/**
 * The allow-list: query collections (named lists of saved GraphQL documents: created, their
 * queries added and dropped, dropped) and which of them are allowed, for every role or for some
 * (add_collection_to_allowlist, update_scope_of_collection_in_allowlist,
 * drop_collection_from_allowlist). With --enable-allowlist a role runs only allowed documents.
 */
import { useState } from 'react';
import { exportMetadata, knownRoles, metadata, serverConfig, type AllowlistScope, type CollectionEntry, type MetadataDoc } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { AreaLayout, CheckField, CodeField, DangerButton, RolePicker, SelectField, TextField } from '../../forms';
import { navigate, segments } from '../../router';

const BASE = '/allow-list';

export function AllowListPage({ path }: { path: string }) {
  const [name] = segments(path, BASE);
  const md = useLoad(exportMetadata, []);
  const config = useLoad(serverConfig, []);
  const list = md.data?.query_collections ?? [];
  const selected = list.find((c) => c.name === name);
  const extra = config.data && (
    <p className="muted" data-testid="allowlist-state">
      The allow-list is {config.data.is_allow_list_enabled ? 'enforced' : 'not enforced (start the server with --enable-allowlist)'}.
    </p>
  );
  return (
    <AreaLayout title="Allow-list" base={BASE} items={list.map((c) => c.name)} selected={name} newLabel="+ Create a collection" testid="collection" extra={extra}>
      <ErrorBox error={md.error} />
      {name === undefined && <NewCollection onSaved={(n) => (md.reload(), navigate(`${BASE}/${encodeURIComponent(n)}`))} />}
      {md.data && name !== undefined && !selected && <p>No query collection is named {name}.</p>}
      {md.data && selected && <CollectionDetail key={selected.name} md={md.data} collection={selected} onChange={md.reload} />}
    </AreaLayout>
  );
}

function NewCollection({ onSaved }: { onSaved: (name: string) => void }) {
  const [name, setName] = useState('');
  const [comment, setComment] = useState('');
  const action = useAction();
  return (
    <form
      className="editor"
      data-testid="collection-form"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => (await metadata('create_query_collection', { name: name.trim(), definition: { queries: [] }, ...(comment.trim() ? { comment: comment.trim() } : {}) }), onSaved(name.trim())));
      }}
    >
      <h2>Create a query collection</h2>
      <TextField label="Name" value={name} onChange={setName} testid="collection-name" />
      <TextField label="Comment" value={comment} onChange={setComment} size={40} testid="collection-comment" />
      <button type="submit" disabled={action.busy} data-testid="collection-save">
        Create collection
      </button>
      <Status action={action} />
    </form>
  );
}

function CollectionDetail({ md, collection: c, onChange }: { md: MetadataDoc; collection: CollectionEntry; onChange: () => void }) {
  const action = useAction();
  const [cascade, setCascade] = useState(false);
  const [qName, setQName] = useState('');
  const [qText, setQText] = useState('');
  return (
    <>
      <h2>{c.name}</h2>
      {c.comment && <p className="muted">{c.comment}</p>}
      <div className="row">
        <CheckField label="also remove it from the allow-list" checked={cascade} onChange={setCascade} testid="collection-cascade" />
        <DangerButton
          label="Drop collection"
          question={`Drop the query collection ${c.name}?`}
          testid="collection-drop"
          disabled={action.busy}
          onConfirm={() => action.run(async () => (await metadata('drop_query_collection', { collection: c.name, cascade }), onChange(), navigate(BASE)))}
        />
      </div>
      <Status action={action} />
      <AllowlistEntry md={md} collection={c.name} onChange={onChange} />
      <h3>Queries</h3>
      <ul className="list" data-testid="collection-queries">
        {c.definition.queries.map((q) => (
          <li key={q.name}>
            <b>{q.name}</b>{' '}
            <button
              className="small danger"
              onClick={() => action.run(async () => (await metadata('drop_query_from_collection', { collection_name: c.name, query_name: q.name }), onChange()), `Dropped ${q.name}.`)}
              data-testid={`collection-query-drop-${q.name}`}
            >
              Drop
            </button>
            <pre>{q.query}</pre>
          </li>
        ))}
      </ul>
      {c.definition.queries.length === 0 && <p className="muted">No queries yet.</p>}
      <form
        className="editor"
        data-testid="collection-query-form"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await metadata('add_query_to_collection', { collection_name: c.name, query_name: qName.trim(), query: qText });
            setQName('');
            setQText('');
            onChange();
          }, 'Query added.');
        }}
      >
        <h4>Add a query</h4>
        <TextField label="Name" value={qName} onChange={setQName} testid="collection-query-name" />
        <CodeField label="GraphQL document" value={qText} onChange={setQText} rows={5} testid="collection-query-text" />
        <button type="submit" disabled={action.busy} data-testid="collection-query-add">
          Add query
        </button>
      </form>
    </>
  );
}

function AllowlistEntry({ md, collection, onChange }: { md: MetadataDoc; collection: string; onChange: () => void }) {
  const entry = md.allowlist?.find((e) => e.collection === collection);
  const [global, setGlobal] = useState(entry?.scope?.global !== false);
  const [roles, setRoles] = useState<string[]>(entry?.scope && !entry.scope.global ? entry.scope.roles : []);
  const action = useAction();
  const scope: AllowlistScope = global ? { global: true } : { global: false, roles };
  return (
    <section className="editor" data-testid="allowlist-entry">
      <h3>
        Allow-list: <span data-testid="allowlist-status">{entry ? (entry.scope?.global === false ? `allowed for ${entry.scope.roles.join(', ')}` : 'allowed for every role') : 'not allowed'}</span>
      </h3>
      <SelectField
        label="Scope"
        value={global ? 'global' : 'roles'}
        options={[
          ['global', 'every role'],
          ['roles', 'some roles'],
        ]}
        onChange={(v) => setGlobal(v === 'global')}
        testid="allowlist-scope"
      />
      {!global && <RolePicker known={knownRoles(md)} value={roles} onChange={setRoles} testid="allowlist-roles" />}
      <div className="row">
        {entry ? (
          <>
            <button onClick={() => action.run(async () => (await metadata('update_scope_of_collection_in_allowlist', { collection, scope }), onChange()), 'Scope saved.')} disabled={action.busy} data-testid="allowlist-update">
              Save scope
            </button>
            <button className="danger" onClick={() => action.run(async () => (await metadata('drop_collection_from_allowlist', { collection }), onChange()), 'Removed from the allow-list.')} disabled={action.busy} data-testid="allowlist-drop">
              Remove from the allow-list
            </button>
          </>
        ) : (
          <button onClick={() => action.run(async () => (await metadata('add_collection_to_allowlist', { collection, scope }), onChange()), 'Added to the allow-list.')} disabled={action.busy} data-testid="allowlist-add">
            Add to the allow-list
          </button>
        )}
      </div>
      <Status action={action} />
    </section>
  );
}
