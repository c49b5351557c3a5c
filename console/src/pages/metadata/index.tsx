/** Metadata: export (download), import (replace_metadata), reload, inconsistent objects and their drop. */
import { useRef, useState } from 'react';
import { metadata } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';

export function MetadataPage() {
  const action = useAction();
  const file = useRef<HTMLInputElement>(null);
  const [reloadSources, setReloadSources] = useState(true);
  const [allowInconsistent, setAllowInconsistent] = useState(false);
  const inconsistent = useLoad(() => metadata<{ is_consistent: boolean; inconsistent_objects: any[] }>('get_inconsistent_metadata', {}), []);
  const version = useLoad(() => metadata<{ resource_version: number }>('export_metadata', {}, { version: 2 }), []);
  const refresh = () => {
    inconsistent.reload();
    version.reload();
  };

  const exportIt = () =>
    action.run(async () => {
      const md = await metadata('export_metadata', {}, { version: 1 });
      const blob = new Blob([JSON.stringify(md, null, 2)], { type: 'application/json' });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = 'svc_metadata.json';
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    }, 'Metadata exported.');

  const importIt = (f: File) =>
    action.run(async () => {
      let doc: unknown;
      try {
        doc = JSON.parse(await f.text());
      } catch (e) {
        throw new Error(`${f.name} is not JSON: ${(e as Error).message}`);
      }
      // An export of version 2 ({resource_version, metadata}) is taken too.
      if (doc && typeof doc === 'object' && 'metadata' in doc && 'resource_version' in doc) doc = (doc as { metadata: unknown }).metadata;
      const r = await metadata<{ is_consistent?: boolean }>('replace_metadata', { allow_inconsistent_metadata: allowInconsistent, metadata: doc }, { version: 2 });
      refresh();
      if (r && r.is_consistent === false) throw new Error('Metadata imported, with inconsistent objects: see below.');
    }, 'Metadata imported.');

  return (
    <div className="page">
      <h2>Metadata</h2>
      <p className="muted">resource_version: {version.data?.resource_version ?? '…'}</p>
      <section>
        <h3>Export / import</h3>
        <div className="row">
          <button onClick={exportIt} disabled={action.busy} data-testid="export-metadata">
            Export metadata
          </button>
          <button onClick={() => file.current?.click()} disabled={action.busy} data-testid="import-metadata">
            Import metadata
          </button>
          <label>
            <input type="checkbox" checked={allowInconsistent} onChange={(e) => setAllowInconsistent(e.target.checked)} data-testid="allow-inconsistent" /> import even with inconsistent objects
          </label>
          <input
            ref={file}
            type="file"
            accept="application/json,.json"
            style={{ display: 'none' }}
            data-testid="import-file"
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) void importIt(f);
              e.target.value = '';
            }}
          />
        </div>
      </section>
      <section>
        <h3>Reload</h3>
        <div className="row">
          <label>
            <input type="checkbox" checked={reloadSources} onChange={(e) => setReloadSources(e.target.checked)} /> reload sources (after the databases changed)
          </label>
          <button onClick={() => action.run(async () => (await metadata('reload_metadata', { reload_sources: reloadSources, reload_remote_schemas: true }), refresh()), 'Metadata reloaded.')} disabled={action.busy} data-testid="reload-metadata">
            Reload metadata
          </button>
        </div>
      </section>
      <Status action={action} />
      <section>
        <h3>Inconsistent objects</h3>
        <ErrorBox error={inconsistent.error} />
        {inconsistent.data && inconsistent.data.inconsistent_objects.length === 0 && <p data-testid="consistent">The metadata is consistent.</p>}
        {inconsistent.data && inconsistent.data.inconsistent_objects.length > 0 && (
          <>
            <table className="grid" data-testid="inconsistent">
              <thead>
                <tr>
                  <th>type</th>
                  <th>name</th>
                  <th>reason</th>
                  <th>definition</th>
                </tr>
              </thead>
              <tbody>
                {inconsistent.data.inconsistent_objects.map((o, i) => (
                  <tr key={i}>
                    <td>{String(o.type ?? '')}</td>
                    <td>{String(o.name ?? '')}</td>
                    <td>{String(o.reason ?? '')}</td>
                    <td>
                      <code>{JSON.stringify(o.definition)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <button className="danger" onClick={() => action.run(async () => (await metadata('drop_inconsistent_metadata', {}), refresh()), 'Inconsistent objects dropped.')} data-testid="drop-inconsistent">
              Drop all inconsistent objects
            </button>
          </>
        )}
      </section>
    </div>
  );
}
