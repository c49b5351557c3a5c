/**
 * Source customization of GraphQL names (Hasura v2's `customization` of `pg_add_source`):
 * `type_names: {prefix, suffix, mapping}` on every type generated for the source's tables and
 * functions (the whole name: `<prefix>author_aggregate<suffix>`), `root_fields: {prefix, suffix}`
 * on every root field, and `root_fields.namespace`: the source's root fields under one field of
 * that name (contributor.ts `namespaced`). Shared types (scalars, `<scalar>_comparison_exp`,
 * `order_by`) keep their names. Computed once per source entry.
 */
import type { RootFieldDef } from '../../../core/plugin.js';
import type { ResolvedSource, TableModel } from '../model/resolved.js';

export interface SourceNames {
  /** A type's name as the source customizes it. */
  type(name: string): string;
  /** A root field's name as the source customizes it. */
  field(name: string): string;
  /** The field the source's root fields are under, if any. */
  namespace?: string;
}

const PLAIN: SourceNames = { type: (n) => n, field: (n) => n };
const cache = new WeakMap<object, SourceNames>();

const str = (x: unknown): string => (typeof x === 'string' ? x : '');
const obj = (x: unknown): Record<string, unknown> => (x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : {});

export function sourceNames(source: Pick<ResolvedSource, 'meta'>): SourceNames {
  const c = source.meta.customization;
  if (!c) return PLAIN;
  let names = cache.get(c);
  if (names) return names;
  const rf = obj(c.root_fields);
  const tn = obj(c.type_names);
  const [fp, fs, tp, ts] = [str(rf.prefix), str(rf.suffix), str(tn.prefix), str(tn.suffix)];
  const mapping = obj(tn.mapping);
  names = {
    type: (n) => (typeof mapping[n] === 'string' ? (mapping[n] as string) : `${tp}${n}${ts}`),
    field: fp || fs ? (n) => `${fp}${n}${fs}` : (n) => n,
    ...(str(rf.namespace) ? { namespace: str(rf.namespace) } : {}),
  };
  cache.set(c, names);
  return names;
}

/** The name of a type generated for a table: its GraphQL name, then `rest`, customized. */
export const tn = (t: { source: Pick<ResolvedSource, 'meta'>; model: Pick<TableModel, 'name'> }, rest = ''): string => sourceNames(t.source).type(t.model.name + rest);

/** The source of each root field the plugin makes, for the namespaces (contributor.ts `namespaced`). */
export const fieldSources = new WeakMap<RootFieldDef, Pick<ResolvedSource, 'name' | 'meta'>>();
export function ofSource(source: Pick<ResolvedSource, 'name' | 'meta'>, def: RootFieldDef): RootFieldDef {
  fieldSources.set(def, source);
  return def;
}
