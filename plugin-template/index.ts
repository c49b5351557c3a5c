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
import { DatabaseToken, findSource, qtDisplay, qtKey, qualifiedTableSchema, SourceNameSchema, type QualifiedTable } from '../plugins/database/index.js';

/** A note as stored: its table's name in full. */
const Note = v.object({ source: SourceNameSchema, table: v.object({ schema: v.string(), name: v.string() }), note: nonEmptyText });
type Note = v.InferOutput<typeof Note>;

/** A note as an operation names it: the table's schema may be left out, it is then the default
 * schema of the source's kind (`Dialect.defaultSchema`, PostgreSQL's `public`). */
const NoteArgs = v.object({ source: SourceNameSchema, table: v.unknown(), note: nonEmptyText });
const NoteTable = v.object({ source: SourceNameSchema, table: v.unknown() });

const notesOf = (md: Metadata) => (md.table_notes as Note[] | undefined) ?? [];
const sameNote = (a: Note, b: { source: string; table: Note['table'] }) => a.source === b.source && qtKey(a.table) === qtKey(b.table);

export default definePlugin({
  name: 'table-notes',
  after: ['database'],
  setup(k) {
    const db = k.use(DatabaseToken);
    /** The default schema of a source's kind; the source must exist and its kind be enabled. */
    const defaultSchema = (md: Metadata, source: string): string => {
      const s = findSource(md, source);
      const schema = s && db.defaultSchemaOf(s);
      if (schema === undefined) throw new SvcError('not-exists', `source with name "${source}" does not exist`, { path: '$.args.source' });
      return schema;
    };
    const tableName = (md: Metadata, source: string, table: unknown): { table: QualifiedTable; defaultSchema: string } => {
      const schema = defaultSchema(md, source);
      const r = v.safeParse(qualifiedTableSchema(schema), table);
      if (!r.success) throw new SvcError('parse-failed', r.issues[0].message, { path: '$.args.table' });
      return { table: r.output, defaultSchema: schema };
    };

    k.metadataSection({ key: 'table_notes', order: 900, schema: v.array(Note), empty: () => [] });

    k.operation({
      type: 'add_table_note',
      args: NoteArgs,
      mutates: true,
      run: (args, ctx) => {
        const { table, defaultSchema } = tableName(ctx.metadata, args.source, args.table);
        const a: Note = { source: args.source, table, note: args.note };
        if (notesOf(ctx.metadata).some((n) => sameNote(n, a))) {
          throw new SvcError('already-exists', `table "${qtDisplay(a.table, defaultSchema)}" already has a note`, { path: '$.args' });
        }
        return { metadata: { ...ctx.metadata, table_notes: [...notesOf(ctx.metadata), a] }, response: { message: 'success' } };
      },
    });

    k.operation({
      type: 'drop_table_note',
      args: NoteTable,
      mutates: true,
      run: (args, ctx) => {
        const { table, defaultSchema } = tableName(ctx.metadata, args.source, args.table);
        const a = { source: args.source, table };
        const notes = notesOf(ctx.metadata);
        if (!notes.some((n) => sameNote(n, a))) {
          throw new SvcError('not-exists', `table "${qtDisplay(a.table, defaultSchema)}" has no note`, { path: '$.args' });
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
          const source = resolved.sources.get(n.source);
          if (source?.tables.has(qtKey(n.table))) continue;
          // Named as the source's kind names tables (in full when the source is unknown).
          const name = qtDisplay(n.table, source?.kind.dialect.defaultSchema ?? '');
          ctx.inconsistent({
            type: 'table_note',
            name: `table_note on ${name} in source ${n.source}`,
            reason: `Inconsistent object: table "${name}" is not tracked in source: ${n.source}`,
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
