/**
 * valibot schemas of the `sources` section as stored and exported (replace_metadata validates
 * and normalises documents with these). Parts owned by other plugins stay loose objects.
 *
 * A source is parsed as its kind says: an unqualified table or function name is in the kind's
 * default schema (`Dialect.defaultSchema`). A source whose kind no enabled plugin provides is kept
 * as it is (its names must then be qualified: no default schema is known for them).
 */
import * as v from '../../../core/valibot.js';
import { nameText, optionalComment } from '../../../core/validation.js';
import { documentName, orderTable, qualifiedFunctionSchema, qualifiedTableSchema, qtDisplay, qtKey } from '../model/meta.js';
import type { SourceKind, SourceMeta, TableMeta } from '../model/types.js';
import { DEFAULT_SOURCE_KIND } from '../model/types.js';
import { SourceCustomizationSchema, TableConfigSchema } from './customization.js';
import { relationshipSchema } from './relationships.js';
import { permissionsSchema } from './permissions.js';

const comment = optionalComment;

const computedFieldSchema = (defaultSchema: string, namespace?: string) => v.object({
  name: nameText,
  definition: v.object({
    function: qualifiedFunctionSchema(defaultSchema, namespace),
    table_argument: v.optional(v.nullable(v.string())),
    session_argument: v.optional(v.nullable(v.string())),
    // Note [Computed fields by argument mapping] in ./computed-fields.ts (BigQuery's).
    argument_mapping: v.optional(v.record(v.string(), v.string())),
    return_table: v.optional(qualifiedTableSchema(defaultSchema, namespace)),
  }),
  comment,
});

// A table's configuration is parsed and normalised by its command group.
export { TableConfigSchema };

const list = <T extends v.GenericSchema>(s: T) => v.optional(v.nullable(v.array(s)));

const tableEntries = (defaultSchema: string, namespace?: string) => ({
  table: qualifiedTableSchema(defaultSchema, namespace),
  is_enum: v.optional(v.boolean()),
  configuration: v.optional(v.nullable(TableConfigSchema)),
  object_relationships: list(relationshipSchema('object', defaultSchema, namespace)),
  array_relationships: list(relationshipSchema('array', defaultSchema, namespace)),
  computed_fields: list(computedFieldSchema(defaultSchema, namespace)),
  insert_permissions: permissionsSchema('insert', defaultSchema),
  select_permissions: permissionsSchema('select', defaultSchema),
  update_permissions: permissionsSchema('update', defaultSchema),
  delete_permissions: permissionsSchema('delete', defaultSchema),
});

/*
 * Note [Table keys of other plugins]
 * A tracked table's entry also holds objects that other plugins own (`event_triggers`). Such a
 * plugin registers the key's schema (DatabaseService.registerTableKey) during its setup, which
 * runs after this section was registered: the table schema is made on first use, and again when
 * keys were added since, so that replace_metadata validates and normalises those objects with
 * the table (paths such as `$.args.sources[0].tables[0].event_triggers[0].name`). A key whose
 * plugin is disabled, or that no plugin owns, is kept as it is.
 */
/** The schema of a tracked table entry in a source whose kind's default schema is `defaultSchema`,
 * with the keys other plugins registered in `extra`. */
export function tableMetaSchema(extra: ReadonlyMap<string, v.GenericSchema>, defaultSchema: string, namespace?: string): v.GenericSchema<unknown, TableMeta> {
  let made: { size: number; schema: v.GenericSchema<unknown, TableMeta> } | undefined;
  const own = tableEntries(defaultSchema, namespace);
  return v.lazy(() => {
    if (!made || made.size !== extra.size) {
      const entries: Record<string, v.GenericSchema> = { ...own };
      for (const [key, schema] of extra) if (!(key in entries)) entries[key] = schema;
      made = { size: extra.size, schema: v.pipe(v.looseObject(entries), v.transform((t) => orderTable(t as unknown as TableMeta))) };
    }
    return made.schema;
  });
}

const functionMetaSchema = (defaultSchema: string, namespace?: string) => v.pipe(
  v.union([
    v.looseObject({
      function: qualifiedFunctionSchema(defaultSchema, namespace),
      configuration: v.optional(v.nullable(v.record(v.string(), v.unknown()))),
      permissions: v.optional(v.nullable(v.array(v.object({ role: nameText })))),
      comment: optionalComment,
    }),
    // Version 1 documents list functions as bare `{schema, name}`.
    v.pipe(
      v.object({ schema: v.optional(v.string(), defaultSchema), name: v.string() }),
      v.transform((f) => ({ function: { schema: f.schema, name: f.name } })),
    ),
  ]),
  v.transform((f) => {
    const out: Record<string, unknown> = { function: f.function };
    const cfg = (f as { configuration?: Record<string, unknown> | null }).configuration;
    if (cfg && Object.keys(cfg).length) out.configuration = cfg;
    const perms = (f as { permissions?: unknown[] | null }).permissions;
    if (perms && perms.length) out.permissions = perms;
    for (const [k, val] of Object.entries(f)) if (!(k in out) && k !== 'configuration' && k !== 'permissions' && val != null) out[k] = val;
    return out;
  }),
);

function duplicates(keys: string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const k of keys) (seen.has(k) ? dup : seen).add(k);
  return [...dup];
}

/** A table or function name of a source whose kind is not known: `{schema, name}`. */
const explicitName = (what: string, kind: string) =>
  v.object(
    { schema: v.string(), name: v.string() },
    `expected a ${what} name {schema, name}: the default schema of source kind "${kind}" is not known (no enabled plugin provides the kind)`,
  );

/** The fields of a source, parsed as its kind says (`defaultSchema`), or kept as they are when the
 * kind is not known (`defaultSchema` undefined). */
function sourceFields(extra: ReadonlyMap<string, v.GenericSchema>, kind: string, defaultSchema: string | undefined, namespace?: string, configuration?: v.GenericSchema) {
  return v.looseObject({
    name: nameText,
    kind: v.optional(v.string(), DEFAULT_SOURCE_KIND),
    tables: v.optional(
      v.array(defaultSchema === undefined ? v.looseObject({ table: explicitName('table', kind) }) : tableMetaSchema(extra, defaultSchema, namespace)),
      [],
    ),
    functions: v.optional(
      v.nullable(v.array(defaultSchema === undefined ? v.looseObject({ function: explicitName('function', kind) }) : functionMetaSchema(defaultSchema, namespace))),
    ),
    // Checked as pg_add_source parses it (the kind's configSchema), so that a document cannot
    // store what that operation refuses, and kept as written (an export gives it back the same).
    configuration: configuration ? v.checkedAsGiven(configuration) : v.record(v.string(), v.unknown()),
    customization: v.optional(v.nullable(SourceCustomizationSchema)),
  });
}

function oneSource(extra: ReadonlyMap<string, v.GenericSchema>, kind: string, defaultSchema: string | undefined, namespace?: string, configuration?: v.GenericSchema) {
  // Messages name tables as the kind does; unknown kinds' names in full.
  const display = (qt: TableMeta['table']) => qtDisplay(qt, defaultSchema ?? '');
  return v.pipe(
    sourceFields(extra, kind, defaultSchema, namespace, configuration),
    v.check(
      (s) => duplicates((s.tables as TableMeta[]).map((t) => qtKey(t.table))).length === 0,
      (issue) => {
        const s = issue.input as { tables: TableMeta[] };
        const dups = duplicates(s.tables.map((t) => qtKey(t.table)));
        const names = s.tables.filter((t) => dups.includes(qtKey(t.table))).map((t) => display(t.table));
        return `multiple declarations exist for the following tables : ${[...new Set(names)].join(', ')}`;
      },
    ),
    v.transform((s) => {
      const out: Record<string, unknown> = { name: s.name, kind: s.kind, tables: s.tables };
      if (s.functions && s.functions.length) out.functions = s.functions;
      out.configuration = s.configuration;
      if (s.customization && Object.keys(s.customization).length) out.customization = s.customization;
      for (const [k, val] of Object.entries(s)) if (!(k in out) && val != null && k !== 'functions' && k !== 'customization') out[k] = val;
      return out as SourceMeta;
    }),
  );
}

/** A source's schema: as its kind (registered in `kinds`) says, its tables' entries with the keys
 * other plugins registered in `extra`. One schema is made per kind and default schema. */
export const sourceSchema = (extra: ReadonlyMap<string, v.GenericSchema> = new Map(), kinds: ReadonlyMap<string, SourceKind> = new Map()) => {
  const made = new Map<string, ReturnType<typeof oneSource>>();
  return v.lazy((input: unknown) => {
    const given = typeof input === 'object' && input !== null ? (input as { kind?: unknown }).kind : undefined;
    const kind = typeof given === 'string' ? given : DEFAULT_SOURCE_KIND;
    const known = kinds.get(kind);
    const dialect = known?.dialect;
    const defaultSchema = dialect?.defaultSchema;
    const key = JSON.stringify([kind, defaultSchema ?? null, dialect?.namespace ?? null]);
    let schema = made.get(key);
    if (!schema) made.set(key, (schema = oneSource(extra, kind, defaultSchema, dialect?.namespace, known?.configSchema)));
    return schema;
  });
};

/** The `sources` section, with the table keys other plugins registered in `extra` (Note [Table
 * keys of other plugins]) and each source parsed as its kind (in `kinds`) says. */
export const sourcesSchema = (extra: ReadonlyMap<string, v.GenericSchema> = new Map(), kinds: ReadonlyMap<string, SourceKind> = new Map()) => v.pipe(
  v.array(sourceSchema(extra, kinds)),
  v.check(
    (list) => duplicates(list.map((s) => s.name)).length === 0,
    (issue) => `multiple declarations exist for the following sources : ${duplicates((issue.input as SourceMeta[]).map((s) => s.name)).join(', ')}`,
  ),
);

/** The `sources` section as a document shows it (Note [Table names of a kind] in
 * model/types.ts): the table and function names of a source whose kind names its namespace
 * otherwise than `schema` written with that key; every other source as it is kept (the same
 * objects). */
export function documentSources(sources: readonly SourceMeta[], kinds: ReadonlyMap<string, SourceKind>): SourceMeta[] {
  return sources.map((s) => {
    const ns = kinds.get(s.kind ?? DEFAULT_SOURCE_KIND)?.dialect.namespace;
    if (!ns || ns === 'schema') return s;
    const name = (qt: unknown) => (qt && typeof qt === 'object' && 'schema' in qt ? documentName(qt as TableMeta['table'], ns) : qt);
    const using = (u: Record<string, unknown>) => {
      const fk = u.foreign_key_constraint_on as Record<string, unknown> | undefined;
      const manual = u.manual_configuration as Record<string, unknown> | undefined;
      if (fk && typeof fk === 'object' && !Array.isArray(fk) && 'table' in fk) return { ...u, foreign_key_constraint_on: { ...fk, table: name(fk.table) } };
      if (manual && 'remote_table' in manual) return { ...u, manual_configuration: { ...manual, remote_table: name(manual.remote_table) } };
      return u;
    };
    const rels = (list: TableMeta['object_relationships']) => list?.map((r) => ({ ...r, using: using(r.using) }));
    const out: SourceMeta = {
      ...s,
      tables: s.tables.map((t) => {
        const o: TableMeta = { ...t, table: name(t.table) as TableMeta['table'] };
        if (t.object_relationships) o.object_relationships = rels(t.object_relationships);
        if (t.array_relationships) o.array_relationships = rels(t.array_relationships);
        if (t.computed_fields) o.computed_fields = t.computed_fields.map((c) => ({ ...c, definition: { ...c.definition, function: name(c.definition.function) as TableMeta['table'], ...(c.definition.return_table ? { return_table: name(c.definition.return_table) as TableMeta['table'] } : {}) } }));
        return o;
      }),
    };
    if (s.functions) out.functions = s.functions.map((f) => ({ ...f, function: name(f.function) as TableMeta['table'] }));
    return out;
  });
}
