/**
 * The relational-source framework. Owns the `sources` metadata section and the `sources` build
 * step; command groups (tables, relationships, permissions, ...) are written once here and
 * registered for every source kind a driver plugin adds (`pg_track_table`, `mssql_track_table`).
 */
import { definePlugin, type Metadata } from '../../core/plugin.js';
import { DatabaseService, DatabaseToken, SOURCES_STEP } from './model/service.js';
import { DATABASE_OPTIONS } from './model/options.js';
import { mapChanged } from '../../lib/lists.js';
import { documentSources, sourcesSchema } from './metadata/section.js';
import { registerRenameSource, sourcesGroup } from './metadata/sources.js';
import { tablesGroup } from './metadata/tables.js';
import { customizationGroup, reportRootFieldConflicts } from './metadata/customization.js';
import { relationshipsGroup } from './metadata/relationships.js';
import { computedFieldsGroup } from './metadata/computed-fields.js';
import { functionsGroup } from './metadata/functions.js';
import { permissionsGroup } from './metadata/permissions.js';
import { sourcesOf } from './model/meta.js';
import { databaseContributor } from './schema/contributor.js';
import { legacyDataGroup } from './data/legacy.js';
import type { SourceMeta } from './model/types.js';
import { DEFAULT_SOURCE_KIND } from './model/types.js';

// The public contract: what other plugins (source kinds, plugins whose metadata refers to tables)
// may import. They import this file only, never the folders below it.
export { DatabaseToken, DatabaseService, SOURCES_STEP } from './model/service.js';
export { DEFAULT_SOURCE_KIND } from './model/types.js';
export { DEFAULT_AGGREGATES, hasuraAggregates, isNumericScalar, isOrderedScalar, STANDARD_AGGREGATES } from './model/scalars.js';
export type * from './model/types.js';
export type * from './model/resolved.js';
export type * from './ir/types.js';
export type { InheritedRoleDef } from './model/inherit.js';
export {
  findSource,
  findTable,
  orderTable,
  TABLE_KEY_ORDER,
  type QualifiedNameSchema,
  qualifiedFunctionSchema,
  qualifiedTableSchema,
  qtDisplay,
  qtKey,
  removeTable,
  requireSource,
  requireTable,
  sameTable,
  SourceNameSchema,
  sourcesOf,
  tableKey,
  updateSource,
  updateTable,
  updateTableIfPresent,
} from './model/meta.js';
export { applySchemaChange } from './metadata/schema-diff.js';
export { ReadReplicas, REPLICA_RETRY_MS, type Replica } from './model/replicas.js';
export { parseJsonPath } from './ir/json-path.js';
export { aggregateByOrderKeys } from './ir/order-keys.js';
export { eventOf, invocationOf, type EventRow, type InvocationRow } from './model/event-log.js';
// The default SQL compiler a SQL source kind's compiler extends (Note [The default SQL compiler]).
export {
  SqlCompiler,
  UnsupportedQuery,
  joinStep,
  literalCount,
  plainDecimal,
  STANDARD_OPERATORS,
  type Joins,
  type Mapping,
} from './sql/compiler.js';
// The IR cases every SQL kind's golden tests compile (plugins/<kind>/compile.test.ts).
export { goldenCases, type GoldenFixture } from './sql/golden-cases.js';
export { tableJoinTypes, type TableJoinTypes } from './schema/contributor.js';
export { sourceNames } from './model/naming.js';

/** The env var that holds the default source's URL (Hasura: HASURA_GRAPHQL_DATABASE_URL). */
export const DEFAULT_SOURCE_ENV = 'SVC_GRAPHQL_DATABASE_URL';

/** Whether a source is the default source configured from the server's database URL. */
export function isEnvDefaultSource(s: SourceMeta): boolean {
  const url = (s.configuration as { connection_info?: { database_url?: unknown } })?.connection_info?.database_url;
  return s.name === 'default' && typeof url === 'object' && url !== null && (url as { from_env?: string }).from_env === DEFAULT_SOURCE_ENV;
}

export default definePlugin({
  name: 'database',
  options: DATABASE_OPTIONS,
  setup(k) {
    const db = new DatabaseService(k);
    k.provide(DatabaseToken, db);
    // reload_metadata's reload_sources (Note [Reload keys]): introspect the sources again; the
    // legacy endpoint always does, and so does replace_metadata.
    k.reloadKey({ key: 'sources', arg: 'reload_sources', default: true, onReplace: true, alwaysOnLegacy: true, onSync: true });
    k.metadataSection({
      key: 'sources',
      order: 10,
      schema: sourcesSchema(db.tableKeys, db.kinds),
      empty: () => [],
      // Older documents (version 1 and 2) hold the default source's tables and functions at the top.
      legacyKeys: ['tables', 'functions'],
      fromDocument: (doc, version, current) => {
        if (version >= 3) return doc.sources;
        const def = sourcesOf(current).find((s) => s.name === 'default');
        return [{ name: 'default', kind: DEFAULT_SOURCE_KIND, tables: doc.tables ?? [], functions: doc.functions ?? [], configuration: def?.configuration ?? {} }];
      },
      // One catalog row per source and per tracked table, so tracking a table writes one row.
      split: (value) => {
        // Every save splits the whole document (thousands of tables): one list, no copies.
        const parts: [string, unknown][] = [];
        for (const s of value as SourceMeta[]) {
          parts.push(shellPart(s));
          for (const part of tableParts(s.name, s.tables)) parts.push(part);
        }
        return parts;
      },
      join: (parts) => {
        const out: SourceMeta[] = [];
        for (const [key, value] of parts) {
          if ((JSON.parse(key) as string[]).length === 1) {
            const { name, kind, ...rest } = value as Omit<SourceMeta, 'tables'>;
            out.push({ name, kind, tables: [], ...rest } as unknown as SourceMeta);
          } else out[out.length - 1]!.tables.push(value as SourceMeta['tables'][number]);
        }
        return out;
      },
      // clear_metadata keeps the default source that comes from the server's database URL.
      // Note [Table names of a kind]: a kind's own namespace key in the document.
      toDocument: (value) => documentSources(value as SourceMeta[], db.kinds),
      clear: (value) => (value as SourceMeta[]).filter(isEnvDefaultSource).map((s) => ({ name: s.name, kind: s.kind, tables: [], configuration: s.configuration })),
    });
    k.buildStep({ name: SOURCES_STEP, run: (ctx) => db.build(ctx) });
    k.buildStep({ name: 'root-fields', after: [SOURCES_STEP], run: (ctx) => reportRootFieldConflicts(db, ctx) });
    db.registerGroup(sourcesGroup);
    db.registerGroup(tablesGroup(db));
    db.registerGroup(customizationGroup(db));
    db.registerGroup(relationshipsGroup(db));
    db.registerGroup(computedFieldsGroup(db));
    db.registerGroup(functionsGroup(db));
    db.registerGroup(permissionsGroup(db));
    db.registerGroup(legacyDataGroup(db));
    registerRenameSource(k);
    k.schemaContributor(databaseContributor(db));
  },
});

export type { Metadata };

/** The catalog row of a tracked table, kept per table entry (saves run over every table). */
function tablePart(source: string, t: SourceMeta['tables'][number]): [string, unknown] {
  const hit = tablePartCache.get(t);
  if (hit && hit.source === source) return hit.part;
  const part: [string, unknown] = [JSON.stringify([source, t.table.schema, t.table.name]), t];
  tablePartCache.set(t, { source, part });
  return part;
}
const tablePartCache = new WeakMap<object, { source: string; part: [string, unknown] }>();

/** The catalog rows of a source's tables. A save after an operation on one table reuses the rows
 * of the tables around it from the source's last split (lib/lists.ts), where looking up every
 * table's row cost a save at 2,000 tables about 0.1 ms. By identity, so it is the same function
 * of the list whichever kernel split it last. */
function tableParts(source: string, tables: SourceMeta['tables']): [string, unknown][] {
  const last = lastTableParts.get(source);
  const parts = mapChanged(last?.tables, last?.parts, tables, (t) => tablePart(source, t));
  lastTableParts.set(source, { tables, parts });
  return parts;
}
const lastTableParts = new Map<string, { tables: SourceMeta['tables']; parts: [string, unknown][] }>();

/** A source without its tables (its own catalog row). The same object is returned while the
 * source's other fields are unchanged, so that the catalog sees it as untouched. */
function sourceShell(s: SourceMeta): Omit<SourceMeta, 'tables'> {
  const { tables: _tables, ...shell } = s;
  const prev = shells.get(s.name);
  if (prev && Object.keys(prev).length === Object.keys(shell).length && Object.entries(shell).every(([k, v]) => (prev as Record<string, unknown>)[k] === v)) {
    return prev;
  }
  shells.set(s.name, shell);
  return shell;
}
const shells = new Map<string, Omit<SourceMeta, 'tables'>>();

/** A source's own catalog row, the same object while its shell is (so the rows after it are
 * taken from the last split as they are: Note [Catalog parts] in core/catalog/store.ts). */
function shellPart(s: SourceMeta): [string, unknown] {
  const shell = sourceShell(s);
  let part = shellParts.get(shell);
  if (!part) shellParts.set(shell, (part = [JSON.stringify([s.name]), shell]));
  return part;
}
const shellParts = new WeakMap<object, [string, unknown]>();
