/**
 * The GraphQL names of a tracked table and its columns and root fields, from its configuration
 * (Hasura's TableConfig): the naming layer between the contract (./types.ts) and the model
 * (./resolved.ts), which both the model and the customization operations
 * (metadata/customization.ts) read.
 */
import { isGraphQLName } from '../../../core/validation.js';
import type { SourceMeta, TableConfig, TableMeta } from './types.js';

/** The custom root field keys, in Hasura's order (which is also the order fields are generated in). */
export const ROOT_FIELD_KEYS = [
  'select',
  'select_by_pk',
  'select_aggregate',
  'select_stream',
  'insert',
  'insert_one',
  'update',
  'update_by_pk',
  'update_many',
  'delete',
  'delete_by_pk',
] as const;
export type RootFieldKey = (typeof ROOT_FIELD_KEYS)[number];

export const rootFieldName = (f: unknown): string | null =>
  typeof f === 'string' ? f : f && typeof f === 'object' ? ((f as { name?: string | null }).name ?? null) : null;

/** The GraphQL field name of a column. */
export function columnGraphQLName(config: TableConfig | undefined, column: string): string {
  return config?.column_config?.[column]?.custom_name ?? config?.custom_column_names?.[column] ?? column;
}

/** The name a table's GraphQL nodes are generated from: its custom name, else `<name>` in the
 * source kind's default schema (`Dialect.defaultSchema`) and `<schema>_<name>` elsewhere. */
export function tableGraphQLName(t: TableMeta, defaultSchema: string): string {
  const c = t.configuration;
  return c?.custom_name ?? c?.identifier ?? (t.table.schema === defaultSchema ? t.table.name : `${t.table.schema}_${t.table.name}`);
}

/** The names of a table's select root fields (custom root fields replace the defaults), with the
 * comments custom root fields may carry. */
export function rootFieldNames(t: TableMeta, name: string): Record<RootFieldKey, { name: string; comment?: string }> {
  const custom = (t.configuration?.custom_root_fields ?? {}) as Record<string, unknown>;
  const field = (key: RootFieldKey, dflt: string) => {
    const f = custom[key];
    const comment = f && typeof f === 'object' ? ((f as { comment?: string | null }).comment ?? undefined) : undefined;
    return { name: rootFieldName(f) ?? dflt, ...(comment != null ? { comment } : {}) };
  };
  return {
    select: field('select', name),
    select_by_pk: field('select_by_pk', `${name}_by_pk`),
    select_aggregate: field('select_aggregate', `${name}_aggregate`),
    select_stream: field('select_stream', `${name}_stream`),
    insert: field('insert', `insert_${name}`),
    insert_one: field('insert_one', `insert_${name}_one`),
    update: field('update', `update_${name}`),
    update_by_pk: field('update_by_pk', `update_${name}_by_pk`),
    update_many: field('update_many', `update_${name}_many`),
    delete: field('delete', `delete_${name}`),
    delete_by_pk: field('delete_by_pk', `delete_${name}_by_pk`),
  };
}

/** Whether a table appears in the GraphQL schema: a table whose name is not a GraphQL name stays
 * tracked (for the metadata API) but gets no GraphQL nodes until it is given a custom name. */
export const inGraphQLSchema = (t: TableMeta, defaultSchema: string): boolean => isGraphQLName(tableGraphQLName(t, defaultSchema));

// ---------------------------------------------------------------------------------------------
// Source customization of GraphQL names (Hasura v2's `customization` of `pg_add_source`):
// `type_names: {prefix, suffix, mapping}` on every type generated for the source's tables and
// functions (the whole name: `<prefix>author_aggregate<suffix>`), `root_fields: {prefix,
// suffix}` on every root field, and `root_fields.namespace`: the source's root fields under one
// field of that name. Shared types (scalars, `<scalar>_comparison_exp`, `order_by`) keep their
// names. Computed once per source entry.

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

export function sourceNames(source: { readonly meta: SourceMeta }): SourceNames {
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
