/**
 * A third-party plugin, as a template: "table notes". It adds
 * - a metadata section `table_notes` (exported, replaced and cleared with the rest),
 * - two operations, `add_table_note` and `drop_table_note` (admin only, validated with valibot),
 * - a build step that checks every note against the tracked tables and records an inconsistent
 *   object (instead of failing) when its table is not tracked,
 * - a route, `GET /v1/table-notes`, that lists the notes of the committed metadata.
 *
 * It reaches the database plugin only through the service that plugin exports (DatabaseToken).
 */
import * as v from '../core/valibot.js';
import { definePlugin, type Metadata } from '../core/plugin.js';
import { SvcError } from '../core/errors.js';
import { nonEmptyText } from '../core/validation.js';
import { DatabaseToken, qtDisplay, qtKey, QualifiedTableSchema, SourceNameSchema } from '../plugins/database/index.js';

const Note = v.object({ source: SourceNameSchema, table: QualifiedTableSchema, note: nonEmptyText });
type Note = v.InferOutput<typeof Note>;

const notesOf = (md: Metadata) => (md.table_notes as Note[] | undefined) ?? [];
const sameNote = (a: Note, b: { source: string; table: Note['table'] }) => a.source === b.source && qtKey(a.table) === qtKey(b.table);

export default definePlugin({
  name: 'table-notes',
  after: ['database'],
  setup(k) {
    const db = k.use(DatabaseToken);

    k.metadataSection({ key: 'table_notes', order: 900, schema: v.array(Note), empty: () => [] });

    k.operation({
      type: 'add_table_note',
      args: Note,
      mutates: true,
      run: (a, ctx) => {
        if (notesOf(ctx.metadata).some((n) => sameNote(n, a))) {
          throw new SvcError('already-exists', `table "${qtDisplay(a.table)}" already has a note`, { path: '$.args' });
        }
        return { metadata: { ...ctx.metadata, table_notes: [...notesOf(ctx.metadata), a] }, response: { message: 'success' } };
      },
    });

    k.operation({
      type: 'drop_table_note',
      args: v.object({ source: SourceNameSchema, table: QualifiedTableSchema }),
      mutates: true,
      run: (a, ctx) => {
        const notes = notesOf(ctx.metadata);
        if (!notes.some((n) => sameNote(n, a))) {
          throw new SvcError('not-exists', `table "${qtDisplay(a.table)}" has no note`, { path: '$.args' });
        }
        return { metadata: { ...ctx.metadata, table_notes: notes.filter((n) => !sameNote(n, a)) }, response: { message: 'success' } };
      },
    });

    // Runs after the database plugin's `sources` step, so the tracked tables are known.
    k.buildStep({
      name: 'table-notes',
      after: ['sources'],
      run(ctx) {
        const resolved = db.resolved(ctx);
        for (const n of notesOf(ctx.metadata)) {
          if (resolved.sources.get(n.source)?.tables.has(qtKey(n.table))) continue;
          ctx.inconsistent({
            type: 'table_note',
            name: `table_note on ${qtDisplay(n.table)} in source ${n.source}`,
            reason: `Inconsistent object: table "${qtDisplay(n.table)}" is not tracked in source: ${n.source}`,
            definition: n,
            id: `table_note:${n.source}:${qtKey(n.table)}`,
            remove: (md) => ({ ...md, table_notes: notesOf(md).filter((x) => !sameNote(x, n)) }),
          });
        }
      },
    });

    k.route({
      method: 'GET',
      path: '/v1/table-notes',
      api: 'metadata',
      handler: (c) => c.json(notesOf(k.state().metadata)),
    });
  },
});
