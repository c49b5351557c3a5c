/**
 * Relationships of a tracked table: the existing ones (dropped here), and suggestions from the
 * foreign keys in the database (the engine has no suggest_relationships operation): an object
 * relationship for each key of this table, an array relationship for each key of a tracked table
 * that points to it.
 */
import { useState } from 'react';
import { metadata, normTable, tableEntry, type MetadataDoc, type QualifiedTable, type TableEntry } from '../../api';
import { ErrorBox, Status, useAction, useLoad } from '../../components';
import { foreignKeys } from './introspect';

interface Suggestion {
  kind: 'object' | 'array';
  name: string;
  using: unknown;
  about: string;
}

export function Relationships({ source, table, entry, md, onChange }: { source: string; table: QualifiedTable; entry: TableEntry; md: MetadataDoc; onChange: () => void }) {
  const action = useAction();
  const fks = useLoad(() => foreignKeys(source, table), [source, table.schema, table.name]);
  const existing = [...(entry.object_relationships ?? []).map((r) => ({ ...r, kind: 'object' as const })), ...(entry.array_relationships ?? []).map((r) => ({ ...r, kind: 'array' as const }))];
  const taken = new Set(existing.map((r) => JSON.stringify(r.using)));
  const names = new Set(existing.map((r) => r.name));
  const suggestions: Suggestion[] = [];
  for (const fk of fks.data ?? []) {
    const src: string[] = JSON.parse(fk.src_cols);
    const ref: string[] = JSON.parse(fk.ref_cols);
    if (fk.src_schema === table.schema && fk.src_table === table.name) {
      suggestions.push({ kind: 'object', name: fk.ref_table, using: { foreign_key_constraint_on: src.length === 1 ? src[0] : src }, about: `${src.join(', ')} → ${fk.ref_schema}.${fk.ref_table} (${ref.join(', ')})` });
    }
    if (fk.ref_schema === table.schema && fk.ref_table === table.name && tableEntry(md, source, { schema: fk.src_schema, name: fk.src_table })) {
      const remote = { schema: fk.src_schema, name: fk.src_table };
      suggestions.push({
        kind: 'array',
        name: fk.src_table.endsWith('s') ? fk.src_table : `${fk.src_table}s`,
        using: { foreign_key_constraint_on: src.length === 1 ? { table: remote, column: src[0] } : { table: remote, columns: src } },
        about: `${fk.src_schema}.${fk.src_table} (${src.join(', ')}) → ${ref.join(', ')}`,
      });
    }
  }
  const open = suggestions.filter((s) => !taken.has(JSON.stringify(s.using)) && !existing.some((e) => JSON.stringify(normUsing(e.using)) === JSON.stringify(normUsing(s.using))));
  const [edited, setEdited] = useState<Record<number, string>>({});
  return (
    <div>
      <Status action={action} />
      <h3>Relationships</h3>
      {existing.length === 0 && <p className="muted">None.</p>}
      <ul className="list" data-testid="relationships">
        {existing.map((r) => (
          <li key={r.name}>
            <b>{r.name}</b> <span className="badge">{r.kind}</span> <code>{JSON.stringify(r.using)}</code>{' '}
            <button className="small" onClick={() => action.run(async () => (await metadata('pg_drop_relationship', { source, table, relationship: r.name }), onChange()), `Dropped ${r.name}.`)} data-testid={`drop-rel-${r.name}`}>
              Drop
            </button>
          </li>
        ))}
      </ul>
      <h3>Suggested from foreign keys</h3>
      <ErrorBox error={fks.error} />
      {fks.data && open.length === 0 && <p className="muted">No suggestions.</p>}
      <ul className="list" data-testid="suggestions">
        {open.map((s, i) => {
          const name = edited[i] ?? (names.has(s.name) ? `${s.name}_${s.kind}` : s.name);
          return (
            <li key={i}>
              <span className="badge">{s.kind}</span> {s.about}{' '}
              <input value={name} onChange={(e) => setEdited({ ...edited, [i]: e.target.value })} data-testid={`suggest-name-${i}`} />{' '}
              <button
                className="small"
                data-testid={`suggest-add-${i}`}
                onClick={() => action.run(async () => (await metadata(`pg_create_${s.kind}_relationship`, { source, table, name, using: s.using }), onChange()), `Created ${name}.`)}
              >
                Add
              </button>
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function normUsing(u: unknown): unknown {
  const fk = (u as { foreign_key_constraint_on?: any })?.foreign_key_constraint_on;
  if (fk && typeof fk === 'object' && !Array.isArray(fk) && fk.table) return { ...fk, table: normTable(fk.table) };
  return u;
}

