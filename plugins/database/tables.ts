/**
 * Table tracking: `<prefix>_track_table`, `<prefix>_untrack_table` (legacy `track_table` v1/v2,
 * `untrack_table`).
 */
import * as v from 'valibot';
import { SvcError } from '../../core/errors.js';
import type { OperationDef } from '../../core/plugin.js';
import type { CommandGroup, KindBinding, TableMeta } from './types.js';
import { findFunction, findSource, findTable, orderTable, QualifiedTableSchema, qtDisplay, qtKey, requireSource, SourceNameSchema, updateSource } from './meta.js';
import { TableConfigSchema } from './schemas.js';
import type { DatabaseService } from './service.js';

const success = { message: 'success' };

/** Legacy v1 also accepts the table flattened into args: `{schema, name}`. */
const legacyFlatTable = v.pipe(
  v.looseObject({ schema: v.optional(v.string(), 'public'), name: v.string() }),
  v.transform((o) => ({ ...o, table: { schema: o.schema, name: o.name } })),
);

export function tablesGroup(db: DatabaseService): CommandGroup {
  return {
    name: 'tables',
    operations(bind: KindBinding): OperationDef[] {
      const trackArgs = v.object({
        table: QualifiedTableSchema,
        source: SourceNameSchema,
        is_enum: v.optional(v.boolean(), false),
        configuration: v.optional(v.nullable(TableConfigSchema)),
        apollo_federation_config: v.optional(v.unknown()),
      });
      const track: OperationDef<v.InferOutput<typeof trackArgs>>['run'] = async (a, ctx) => {
        const source = requireSource(ctx.metadata, a.source);
        if (findTable(source, a.table)) {
          throw new SvcError('already-tracked', `view/table already tracked: "${qtDisplay(a.table)}"`, { path: '$.args' });
        }
        // A table and a function of the same qualified name would generate the same root fields.
        if (findFunction(source, a.table)) {
          throw new SvcError('not-supported', `function with name "${qtDisplay(a.table)}" already exists`, { path: '$.args' });
        }
        const intro = await db.introspection(ctx, a.source);
        if (!intro.tables.has(qtKey(a.table))) {
          throw new SvcError('not-exists', `no such table/view exists in source: "${qtDisplay(a.table)}"`, { path: '$.args' });
        }
        const entry: TableMeta = orderTable({ table: a.table, is_enum: a.is_enum, configuration: (a.configuration ?? undefined) as TableMeta['configuration'] });
        return {
          metadata: updateSource(ctx.metadata, a.source, (s) => ({ ...s, tables: [...s.tables, entry] })),
          response: success,
        };
      };

      const untrackArgs = v.object({ table: QualifiedTableSchema, source: SourceNameSchema, cascade: v.optional(v.boolean(), false) });
      const untrack: OperationDef<v.InferOutput<typeof untrackArgs>>['run'] = (a, ctx) => {
        const source = requireSource(ctx.metadata, a.source);
        if (!findTable(source, a.table)) {
          throw new SvcError('already-untracked', `view/table already untracked: "${qtDisplay(a.table)}"`, { path: '$.args' });
        }
        // The table's own relationships and permissions go with it; only other objects are dependents.
        const key = qtKey(a.table);
        let md = db.cascade(ctx.metadata, { kind: 'table', source: a.source, table: a.table }, a.cascade, (d) => d.id.includes(`@${a.source}:${key}:`));
        md = updateSource(md, a.source, (s) => ({ ...s, tables: s.tables.filter((t) => qtKey(t.table) !== key) }));
        return { metadata: md, response: success };
      };

      const ops: OperationDef[] = [
        { type: bind.name('track_table'), args: trackArgs, mutates: true, run: track },
        { type: bind.name('untrack_table'), args: untrackArgs, mutates: true, run: untrack },
      ];
      const legacyTrack = bind.legacy('track_table');
      if (legacyTrack) {
        ops.push({
          type: null,
          legacy: legacyTrack,
          versions: [1, 2],
          args: (version) => (version === 2 ? trackArgs : v.union([trackArgs, v.pipe(legacyFlatTable, v.transform((o) => v.parse(trackArgs, o)))])),
          mutates: true,
          run: track,
        });
        ops.push({
          type: null,
          legacy: bind.legacy('untrack_table'),
          args: v.union([untrackArgs, v.pipe(legacyFlatTable, v.transform((o) => v.parse(untrackArgs, o)))]),
          mutates: true,
          run: untrack,
        });
      }
      return ops;
    },
  };
}

export { findSource };
