/**
 * Table tracking: `<prefix>_track_table`, `<prefix>_untrack_table` (legacy `track_table` v1/v2,
 * `untrack_table`), and enum tables: `<prefix>_set_table_is_enum` (legacy `set_table_is_enum`) and
 * the check of an enum table's shape and values in the build.
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { OperationDef } from '../../../core/plugin.js';
import type { ColumnInfo, CommandGroup, EnumValue, Introspection, KindBinding, RootFieldOwner, TableCheck, TableCheckContext, TableInfo, TableMeta } from '../model/types.js';
import {
  appendTable,
  findFunction,
  findSource,
  findTable,
  orderTable,
  qtDisplay,
  qtKey,
  requireSource,
  requireTable,
  SourceNameSchema,
  updateSource,
  updateTable,
  withoutTable,
} from '../model/meta.js';
import { checkConstraintNames, englishList, isGraphQLName, tableRootFields, TableConfigSchema } from './customization.js';
import type { DatabaseService } from '../model/service.js';
import { bulkTables } from './bulk-tables.js';
import { mapChanged } from '../../../lib/lists.js';

const success = { message: 'success' };

/** Legacy v1 also accepts the table flattened into args: `{schema, name}` (schema defaults to the kind's). */
const legacyFlatTable = (defaultSchema: string) =>
  v.pipe(
    v.looseObject({ schema: v.optional(v.string(), defaultSchema), name: v.string() }),
    v.transform((o) => ({ ...o, table: { schema: o.schema, name: o.name } })),
  );

export function tablesGroup(db: DatabaseService): CommandGroup {
  /** Each source's last tables list and their root-field owners (Note [Root field conflicts]). */
  const lastOwners = new Map<string, { tables: readonly TableMeta[]; intro: Introspection | undefined; defaultSchema: string; owners: RootFieldOwner[] }>();
  return {
    name: 'tables',
    operations(bind: KindBinding): OperationDef[] {
      const flatTable = legacyFlatTable(bind.kind.dialect.defaultSchema);
      const trackArgs = v.object({
        table: bind.table,
        source: SourceNameSchema,
        is_enum: v.optional(v.boolean(), false),
        configuration: v.optional(v.nullable(TableConfigSchema)),
        apollo_federation_config: v.optional(v.unknown()),
      });
      const track: OperationDef<v.InferOutput<typeof trackArgs>>['run'] = async (a, ctx) => {
        const source = requireSource(ctx.metadata, a.source);
        if (findTable(source, a.table)) {
          throw new SvcError('already-tracked', `view/table already tracked: "${bind.display(a.table)}"`, { path: '$.args' });
        }
        // A table and a function of the same qualified name would generate the same root fields.
        if (findFunction(source, a.table)) {
          throw new SvcError('not-supported', `function with name "${bind.display(a.table)}" already exists`, { path: '$.args' });
        }
        const intro = await db.introspection(ctx, a.source);
        const info = intro.tables.get(qtKey(a.table));
        if (!info) {
          throw new SvcError('not-exists', `no such table/view exists in source: "${bind.display(a.table)}"`, { path: '$.args' });
        }
        const entry: TableMeta = orderTable({ table: a.table, is_enum: a.is_enum, configuration: a.configuration ?? undefined });
        checkConstraintNames(entry, info, bind.kind.dialect.defaultSchema);
        const md = updateSource(ctx.metadata, a.source, (s) => ({ ...s, tables: appendTable(s.tables, entry) }));
        return { metadata: md, response: success, defines: [`table:${a.source}:${qtKey(a.table)}`] };
      };

      const isEnumArgs = v.object({ table: bind.table, source: SourceNameSchema, is_enum: v.boolean() });
      const setIsEnum: OperationDef<v.InferOutput<typeof isEnumArgs>>['run'] = (a, ctx) => {
        requireTable(ctx.metadata, a.source, a.table, bind.kind.dialect.defaultSchema, '$.args');
        return {
          metadata: updateTable(ctx.metadata, a.source, a.table, bind.kind.dialect.defaultSchema, (t) => ({ ...t, is_enum: a.is_enum })),
          response: success,
          defines: [`table:${a.source}:${qtKey(a.table)}`],
        };
      };

      const untrackArgs = v.object({ table: bind.table, source: SourceNameSchema, cascade: v.optional(v.boolean(), false) });
      const untrack: OperationDef<v.InferOutput<typeof untrackArgs>>['run'] = (a, ctx) => {
        const source = requireSource(ctx.metadata, a.source);
        if (!findTable(source, a.table)) {
          throw new SvcError('already-untracked', `view/table already untracked: "${bind.display(a.table)}"`, { path: '$.args' });
        }
        // The table's own relationships and permissions go with it; only other objects are dependents.
        const key = qtKey(a.table);
        let md = db.cascade(ctx.metadata, { kind: 'table', source: a.source, table: a.table }, a.cascade, (d) => d.id.includes(`@${a.source}:${key}:`));
        md = updateSource(md, a.source, (s) => ({ ...s, tables: withoutTable(s.tables, a.table) }));
        return { metadata: md, response: success };
      };

      const ops: OperationDef[] = [
        { type: bind.name('track_table'), args: trackArgs, mutates: true, run: track },
        { type: bind.name('untrack_table'), args: untrackArgs, mutates: true, run: untrack },
        bulkTables(bind, 'track_tables', trackArgs, track),
        bulkTables(bind, 'untrack_tables', untrackArgs, untrack),
        { type: bind.name('set_table_is_enum'), legacy: bind.legacy('set_table_is_enum'), args: isEnumArgs, mutates: true, run: setIsEnum },
      ];
      const legacyTrack = bind.legacy('track_table');
      if (legacyTrack) {
        ops.push({
          type: null,
          legacy: legacyTrack,
          versions: [1, 2],
          args: (version) =>
            version === 2
              ? trackArgs
              : v.union([
                  trackArgs,
                  v.pipe(flatTable, v.transform((o) => v.parse(trackArgs, o))),
                  // Version 1 also takes the bare table name as args.
                  v.pipe(v.string(), v.transform((name) => v.parse(trackArgs, { table: name }))),
                ]),
          mutates: true,
          run: track,
        });
        ops.push({
          type: null,
          legacy: bind.legacy('untrack_table'),
          args: v.union([untrackArgs, v.pipe(flatTable, v.transform((o) => v.parse(untrackArgs, o)))]),
          mutates: true,
          run: untrack,
        });
      }
      return ops;
    },
    checkTable: (ctx) => (ctx.table.is_enum ? enumCheck(ctx) : undefined),
    rootFields: (source, intro) => {
      const defaultSchema = db.defaultSchemaOf(source) ?? '';
      // The previous build's owners outside the run in which the tables list differs from the
      // previous one (lib/lists.ts: every table but the changed ones, wherever in the list they
      // are), the previous list itself where the tables are the same; the per-entry cache
      // (tableOwner) for the others.
      const last = lastOwners.get(source.name);
      const same = last !== undefined && last.intro === intro && last.defaultSchema === defaultSchema;
      const tables = source.tables;
      const make = (t: TableMeta) => tableOwner(source.name, defaultSchema, t, intro?.tables.get(qtKey(t.table)));
      const owners = same ? mapChanged(last.tables, last.owners, tables, make) : tables.map(make);
      lastOwners.set(source.name, { tables, intro, defaultSchema, owners });
      return owners;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Enum tables

/*
 * Note [Enum values]
 * An enum table's values are read when the table's metadata or its structure change, or when its
 * source is reloaded (reload_metadata), not when rows change: as in Hasura, rows added by run_sql
 * show up (or make the table inconsistent) on the next reload. The cache is keyed by the table's
 * metadata object, which untouched metadata shares from build to build (Note [Sharing]).
 */
const enumCache = new WeakMap<TableMeta, { structure: string; check: TableCheck }>();

async function enumCheck(ctx: TableCheckContext): Promise<TableCheck> {
  const reload = ctx.build.reload.sources;
  const reloaded = reload === true || (Array.isArray(reload) && reload.includes(ctx.source.name));
  const structure = JSON.stringify(ctx.info);
  const cached = enumCache.get(ctx.table);
  if (cached && !reloaded && cached.structure === structure) return cached.check;
  const check = await validateEnumTable(ctx);
  enumCache.set(ctx.table, { structure, check });
  return check;
}


/** An enum value must be a GraphQL name other than `true`, `false` and `null`. */
const isEnumValueName = (s: string) => isGraphQLName(s) && !['true', 'false', 'null'].includes(s);

/**
 * An enum table has a single-column text primary key, at most one other column (a text comment),
 * and at least one row, whose keys are valid GraphQL enum value names. All problems found are
 * reported together, in Hasura's words.
 */
async function validateEnumTable(ctx: TableCheckContext): Promise<TableCheck> {
  const { info } = ctx;
  const dialect = ctx.kind.dialect;
  const isText = (c: ColumnInfo) => dialect.enumTable.isText(c);
  const typeMismatch = (what: string, c: ColumnInfo) => `the table’s ${what} ("${c.name}") must have type "text", not type "${dialect.scalar(c).name}"`;
  const errors: string[] = [];
  const fail = (): TableCheck => {
    const what = `the table "${qtDisplay(ctx.table.table, dialect.defaultSchema)}" cannot be used as an enum `;
    const why = errors.length === 1 ? `because ${errors[0]}` : `for the following reasons:\n${errors.map((e) => `  • ${e}\n`).join('')}`;
    return { reason: what + why };
  };
  let key: ColumnInfo | undefined;
  const pk = info.primaryKey;
  if (!pk) errors.push('the table must have a primary key');
  else if (pk.columns.length > 1) errors.push(`the table’s primary key must not span multiple columns (${[...pk.columns].sort().join(', ')})`);
  else {
    const col = info.columns.find((c) => c.name === pk.columns[0]);
    if (col && isText(col)) key = col;
    else if (col) errors.push(typeMismatch('primary key', col));
  }
  const others = info.columns.filter((c) => c !== key);
  let comment: ColumnInfo | undefined;
  if (others.length === 1) {
    if (isText(others[0]!)) comment = others[0];
    else errors.push(typeMismatch('comment column', others[0]!));
  } else if (others.length > 1) {
    errors.push(
      `the table must have exactly one primary key and optionally one comment column, not ${others.length} columns (${others
        .map((c) => c.name)
        .sort()
        .join(', ')})`,
    );
  }
  if (!key) return fail();
  let rows: EnumValue[];
  try {
    rows = await ctx.executor.query<EnumValue>(dialect.enumTable.valuesQuery(ctx.table.table, key.name, comment?.name));
  } catch (e) {
    errors.push(`postgres error: ${(e as Error).message}`);
    return fail();
  }
  if (rows.length === 0) errors.push('the table must have at least one row');
  const bad = rows.map((r) => r.value).filter((val) => !isEnumValueName(val)).sort();
  if (bad.length === 1) errors.push(`the value "${bad[0]}" is not a valid GraphQL enum value name`);
  else if (bad.length === 2) errors.push(`the values "${bad[0]}" and "${bad[1]}" are not valid GraphQL enum value names`);
  else if (bad.length > 2) errors.push(`the values ${englishList(bad.slice(0, -1).concat(`"${bad[bad.length - 1]}"`))} are not valid GraphQL enum value names`);
  return errors.length > 0 ? fail() : { enumValues: rows };
}

export { findSource };

/** A table's root-field owner entry, kept per table entry so that builds compare by reference
 * (Note [Root field conflicts]). */
function tableOwner(source: string, defaultSchema: string, t: TableMeta, info: TableInfo | undefined): RootFieldOwner {
  const hit = ownerCache.get(t);
  const fields = tableRootFields(t, info, defaultSchema);
  if (hit && hit.source === source && hit.defaultSchema === defaultSchema && hit.owner.fields === fields) return hit.owner;
  const owner = { owner: `table ${qtDisplay(t.table, defaultSchema)} in source ${source}`, fields, table: { source, key: qtKey(t.table) } };
  ownerCache.set(t, { source, defaultSchema, owner });
  return owner;
}
const ownerCache = new WeakMap<TableMeta, { source: string; defaultSchema: string; owner: RootFieldOwner }>();
