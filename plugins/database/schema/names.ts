/**
 * The names the generated schema gives a source's types and root fields, by its customization
 * (`sourceNames`, in the naming layer: ../model/naming.ts), and the source of each root field
 * the plugin makes (for the namespaces: contributor.ts `namespaced`).
 */
import type { RootFieldDef } from '../../../core/plugin.js';
import { sourceNames } from '../model/naming.js';
import { qtDisplay } from '../model/meta.js';
import type { ResolvedSource, TableModel } from '../model/resolved.js';

export { sourceNames, type SourceNames } from '../model/naming.js';

/** The name of a type generated for a table: its GraphQL name, then `rest`, customized. */
export const tn = (t: { source: Pick<ResolvedSource, 'meta'>; model: Pick<TableModel, 'name'> }, rest = ''): string => sourceNames(t.source).type(t.model.name + rest);

/** The source of each root field the plugin makes of a source with a namespace, for the
 * namespaces (contributor.ts `namespaced`); a field of a source without one is not recorded (a
 * role's schema makes thousands: Note [Table root fields as instances] in contributor.ts). */
export const fieldSources = new WeakMap<RootFieldDef, Pick<ResolvedSource, 'name' | 'meta'>>();
export function ofSource(source: Pick<ResolvedSource, 'name' | 'meta'>, def: RootFieldDef): RootFieldDef {
  if (sourceNames(source).namespace) fieldSources.set(def, source);
  return def;
}

/** A table's root fields' owner in Hasura's words (RootFieldDef.owner), as the root-field
 * conflicts of the metadata name it (metadata/tables.ts `tableOwner`). */
export const tableOwnerName = (t: { source: Pick<ResolvedSource, 'name' | 'kind'>; model: Pick<TableModel, 'table'> }): string =>
  `table ${qtDisplay(t.model.table, t.source.kind.dialect.defaultSchema)} in source ${t.source.name}`;
