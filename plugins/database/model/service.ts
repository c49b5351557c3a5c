/**
 * The relational-source framework's service: source kinds (drivers), command groups, live
 * connections, introspection (cached per source, refreshed on reload and by run_sql), and the
 * `sources` build step that resolves every tracked object against its source.
 */
import type * as v from 'valibot';
import { token, type BuildContext, type KernelApi, type OperationContext, type OperationDef } from '../../../core/plugin.js';
import { SvcError } from '../../../core/errors.js';
import { errorDetail } from '../../../core/log.js';
import type { UnitOfWork } from '../../../core/uow.js';
import type {
  CommandGroup,
  JoinedFieldsProvider,
  DepTarget,
  Dependent,
  Metadata,
  EnumValue,
  FunctionInfo,
  FunctionMeta,
  Introspection,
  KindBinding,
  SourceConnection,
  SourceKind,
  SourceMeta,
  SqlExecutor,
  TableInfo,
  TableMeta,
} from './types.js';
import { findSource, qtDisplay, qtKey, qualifiedFunctionSchema, qualifiedTableSchema, removeTable, sourcesOf, tablePosition } from './meta.js';
import type { SchemaRename } from './types.js';
import { DEFAULT_SOURCE_KIND } from './types.js';
import { renameOwnEntry } from './rename.js';
import { changedRun } from '../../../lib/lists.js';
import { LayeredMap } from '../../../lib/layered-map.js';
import { internIntrospection } from './intern.js';
import { resolveFunctionModel, resolveTableModel, type DatabaseBuild, type ResolvedSource, type ResolvedTable, type TableModel } from './resolved.js';
import { inheritFunction, inheritTable, type InheritedRoleDef, type PermissionConflict } from './inherit.js';

type Report = Parameters<BuildContext['inconsistent']>[0];
/** A resolved table with what its resolution reported, replayed when a later build reuses it. */
type Kept = ResolvedTable & { reports?: Report[] };
/** A table that passed its own checks, not yet resolved. */
type CheckedTable = { meta: TableMeta; info: TableInfo; enumValues?: EnumValue[]; fresh: true };
/** Every listed table that exists (those that failed their checks aside), for lookups. */
type TrackedTables = ReadonlyMap<string, { meta: TableMeta; info: TableInfo | undefined }>;

/** What one pass over a source's tables works with. */
interface TablePass {
  ctx: BuildContext;
  meta: SourceMeta;
  kind: SourceKind;
  intro: Introspection;
  executor: SqlExecutor;
  functions: Map<string, FunctionMeta>;
}

/** A source's tables with the inherited roles' permissions, and the conflicts among them by table
 * key (Note [Inherited permissions of a change]). */
interface InheritedTables {
  roles: readonly InheritedRoleDef[];
  tables: ReadonlyMap<string, ResolvedTable>;
  conflicted: ReadonlyMap<string, PermissionConflict[]>;
}

/** What a pass over a source's tables made, kept for the next build's (Note [Resolving a change]). */
interface TablePassResult {
  tables: ReadonlyMap<string, Kept>;
  tracked: TrackedTables;
  /** Nothing was reported: no table failed its checks, no resolution reported anything. */
  clean: boolean;
  /** The tables that depend on each key (a superset), made on first use and shared onwards. */
  rev?: Map<string, Set<string>>;
  /** A change pass's: the pass it started from and the keys it set or removed (Note [Inherited
   * permissions of a change]). */
  change?: { from: ReadonlyMap<string, Kept>; keys: readonly string[] };
}

/** The tables that depend on each key, from their `deps`. */
function reverseDependencies(tables: ReadonlyMap<string, ResolvedTable>): Map<string, Set<string>> {
  const rev = new Map<string, Set<string>>();
  for (const [key, t] of tables) {
    for (const d of t.deps) {
      let on = rev.get(d);
      if (!on) rev.set(d, (on = new Set()));
      on.add(key);
    }
  }
  return rev;
}

/** What `DatabaseService.tablesReaching` gives. */
export interface TablesReaching {
  tables: readonly TableMeta[];
  /** The source's entry of a table, by key (undefined when not tracked). */
  entry(key: string): TableMeta | undefined;
}

/** Where a document's list of a source's tables differs from the committed build's
 * (Note [Dependents through the build]). */
interface SourceChange {
  /** The committed build's pass (clean). */
  state: TablePassResult;
  /** The committed entries replaced or removed. */
  went: Set<TableMeta>;
  /** The entries that replaced them or were added, by key. */
  run: Map<string, TableMeta>;
  /** The keys of both. */
  keys: string[];
  entry(key: string): TableMeta | undefined;
}

/** More changed entries or candidates than this and every entry is looked at. */
const REACH_LIMIT = 16;
const byKeyCache = new WeakMap<readonly TableMeta[], Map<string, TableMeta>>();

/** Every entry, and lookups through a map of them (one per list). */
function wholeList(tables: readonly TableMeta[]): TablesReaching {
  let byKey = byKeyCache.get(tables);
  if (!byKey) {
    byKey = new Map();
    for (const t of tables) byKey.set(qtKey(t.table), t);
    byKeyCache.set(tables, byKey);
  }
  const map = byKey;
  return { tables, entry: (k) => map.get(k) };
}

export const DatabaseToken = token<DatabaseService>('database');
export const SOURCES_STEP = 'sources';

const introKey = (source: string) => `db:introspection:${source}`;
const txKey = (source: string) => `db:tx:${source}`;

interface LiveConnection {
  configKey: string;
  conn: SourceConnection;
}

export class DatabaseService {
  readonly kinds = new Map<string, SourceKind>();
  private readonly groups: CommandGroup[] = [];
  private readonly connections = new Map<string, LiveConnection>();
  /** Connections replaced or dropped, closed once no committed build refers to them. */
  private retired: SourceConnection[] = [];
  /** The resolved sources of the last committed build. */
  private last: DatabaseBuild | undefined;

  /** `--infer-function-permissions`: a role with a select permission on a function's table may
   * call the function without a function permission. */
  get inferFunctionPermissions(): boolean {
    return this.k.config.inferFunctionPermissions;
  }

  /** `--stringify-numeric-types`: big numbers as JSON strings in query results. */
  get stringifyNumericTypes(): boolean {
    return this.k.config.stringifyNumericTypes;
  }

  constructor(private readonly k: KernelApi) {
    k.events.on('metadataChanged', (build) => {
      this.last = build.outputs.get(SOURCES_STEP) as DatabaseBuild | undefined;
      this.lastChange = undefined;
      this.collect(this.last);
    });
    k.onShutdown(async () => {
      const all = [...this.connections.values()].map((c) => c.conn).concat(this.retired);
      this.connections.clear();
      this.retired = [];
      await Promise.all(all.map((c) => c.close().catch(() => {})));
    });
  }

  // -------------------------------------------------------------------------------------------
  // Registration

  private inheritance: ((md: Metadata) => readonly InheritedRoleDef[]) | undefined;
  /** What each resolved source's pass over its tables made (Note [Resolving a change]), also
   * under the copy of the source that inherited roles make. */
  private readonly passes = new WeakMap<ResolvedSource, TablePassResult>();
  /** The inherited permissions of each table model, by the base model, for the roles they were
   * made for (a build whose roles and table are untouched reuses them). */
  private readonly inherited = new WeakMap<TableModel, { roles: readonly InheritedRoleDef[]; model: TableModel; conflicts: PermissionConflict[] }>();
  private readonly inheritedEntries = new WeakMap<ResolvedTable, ResolvedTable>();
  /** What inherit made from a pass's tables, by those tables (Note [Inherited permissions of a
   * change]). */
  private readonly inheritedTables = new WeakMap<ReadonlyMap<string, ResolvedTable>, InheritedTables>();

  /** Lets a plugin declare inherited roles (Note [Inherited roles] in inherit.ts): `roles` gives,
   * for a metadata document, the inherited roles to build, every parent before its children
   * (cycles and unknown parents already left out); the `sources` step then gives each of them
   * the permissions of its parents where it has none of its own. */
  setRoleInheritance(roles: (md: Metadata) => readonly InheritedRoleDef[]): void {
    if (this.inheritance) throw new Error('role inheritance is provided twice');
    this.inheritance = roles;
  }

  registerKind(kind: SourceKind): void {
    if (this.kinds.has(kind.kind)) throw new Error(`source kind "${kind.kind}" is registered twice`);
    this.kinds.set(kind.kind, kind);
    const bind = this.binding(kind);
    for (const g of this.groups) this.registerOps(kind, g.operations(bind));
    if (kind.operations) this.registerOps(kind, kind.operations(bind));
  }

  /** Schemas of the keys of a tracked table's entry that other plugins own (`event_triggers`),
   * by key: replace_metadata validates them with the table (Note [Table keys of other plugins]
   * in metadata/section.ts). */
  readonly tableKeys = new Map<string, v.GenericSchema>();

  /** Registers the schema of a key of tracked table entries (call it from a plugin's setup). */
  registerTableKey(key: string, schema: v.GenericSchema): void {
    if (this.tableKeys.has(key)) throw new Error(`table key "${key}" is registered twice`);
    this.tableKeys.set(key, schema);
  }

  private readonly joinedProviders: JoinedFieldsProvider[] = [];

  /** Lets another plugin add fields to tables' object types whose values it fetches itself,
   * joined on columns (Note [Joined fields] in schema/joins.ts). */
  registerJoinedFields(provider: JoinedFieldsProvider): void {
    this.joinedProviders.push(provider);
  }

  get joinedFields(): readonly JoinedFieldsProvider[] {
    return this.joinedProviders;
  }

  registerGroup(group: CommandGroup): void {
    this.groups.push(group);
    for (const kind of this.kinds.values()) this.registerOps(kind, group.operations(this.binding(kind)));
  }

  get commandGroups(): readonly CommandGroup[] {
    return this.groups;
  }

  private registerOps(kind: SourceKind, ops: OperationDef[]) {
    for (const op of ops) this.k.operation(this.ofKind(kind, op));
  }

  /*
   * Note [Operations of a kind]
   * A kind's operations (`mssql_track_table`, `pg_redeliver_event`, the kind's own) take the
   * source they act on in `args.source`, `default` when absent. A source of another kind is, to
   * them, a source that does not exist: Hasura looks a source up with its backend's type
   * (askSourceInfo) and answers `source with name "..." does not exist`. Checked here once for
   * every operation a kind is bound to, before its run, so that no operation reaches a source
   * with another kind's SQL (the fuzzer found `mssql_redeliver_event` on the PostgreSQL source
   * `default` answering 500). `<prefix>_add_source` and `_drop_source` name theirs in `name`
   * and check it themselves.
   */
  private ofKind(kind: SourceKind, op: OperationDef): OperationDef {
    const run = op.run;
    return {
      ...op,
      run: (args, ctx) => {
        const name = (args as { source?: unknown } | undefined)?.source;
        if (typeof name === 'string') {
          const source = findSource(ctx.metadata, name);
          if (source && this.kinds.get(source.kind ?? DEFAULT_SOURCE_KIND) !== kind) throw new SvcError('not-exists', `source with name "${name}" does not exist`, { path: '$.args.source' });
        }
        return run(args, ctx);
      },
    };
  }

  binding(kind: SourceKind): KindBinding {
    return {
      kind,
      name: (op) => `${kind.prefix}_${op}`,
      legacy: (op) => (kind.legacy ? op : undefined),
      table: qualifiedTableSchema(kind.dialect.defaultSchema, kind.dialect.namespace),
      function: qualifiedFunctionSchema(kind.dialect.defaultSchema, kind.dialect.namespace),
      display: (qt) => qtDisplay(qt, kind.dialect.defaultSchema),
    };
  }

  /** The schema of a source's unqualified names (its kind's `Dialect.defaultSchema`); undefined
   * when no enabled plugin provides the source's kind. */
  defaultSchemaOf(source: Pick<SourceMeta, 'kind'>): string | undefined {
    return this.kinds.get(source.kind ?? DEFAULT_SOURCE_KIND)?.dialect.defaultSchema;
  }

  kindOf(source: SourceMeta): SourceKind {
    const kind = this.kinds.get(source.kind ?? DEFAULT_SOURCE_KIND);
    if (!kind) throw new SvcError('not-supported', `source kind "${source.kind}" is not supported (no enabled plugin provides it)`);
    return kind;
  }

  // -------------------------------------------------------------------------------------------
  // Connections

  /** The live connection for a source's configuration (one pool per source and configuration). */
  connection(source: SourceMeta): SourceConnection {
    const configKey = JSON.stringify([source.kind, source.configuration]);
    const live = this.connections.get(source.name);
    if (live && live.configKey === configKey) return live.conn;
    const conn = this.kindOf(source).connect(source.name, source.configuration, this.k.env);
    if (live) this.retired.push(live.conn);
    this.connections.set(source.name, { configKey, conn });
    return conn;
  }

  /** Closes connections that the committed build no longer uses. */
  private collect(build: DatabaseBuild | undefined) {
    const used = new Set<SourceConnection>();
    for (const s of build?.sources.values() ?? []) if (s.connection) used.add(s.connection);
    for (const [name, live] of this.connections) {
      if (!used.has(live.conn) && !build?.sources.has(name)) {
        this.connections.delete(name);
        this.retired.push(live.conn);
      }
    }
    const keep: SourceConnection[] = [];
    for (const c of this.retired) {
      if (used.has(c)) keep.push(c);
      else void c.close().catch(() => {});
    }
    this.retired = keep;
  }

  // -------------------------------------------------------------------------------------------
  // Request-scoped access (operations)

  /** A transaction on the source for this request (run_sql); later operations see its changes. */
  async transaction(ctx: { metadata: OperationContext['metadata']; uow: UnitOfWork }, sourceName: string): Promise<SqlExecutor> {
    const source = sourcesOf(ctx.metadata).find((s) => s.name === sourceName);
    if (!source) throw new SvcError('not-exists', `source with name "${sourceName}" does not exist`, { path: '$.args.source' });
    const conn = this.connection(source);
    return ctx.uow.get(txKey(sourceName), async () => {
      const tx = await conn.transaction();
      return { value: tx, resource: tx };
    });
  }

  /** Whether this request holds a transaction on the source (its later operations run in it). */
  inTransaction(uow: UnitOfWork, sourceName: string): boolean {
    return uow.has(txKey(sourceName));
  }

  /** Forget the request's introspection of a source (after SQL that may have changed its schema). */
  invalidate(uow: UnitOfWork, sourceName: string): void {
    uow.set(introKey(sourceName), undefined);
  }

  /**
   * The introspection an operation validates against: the request's own (inside its transaction,
   * when it ran SQL), else the committed build's, else a fresh one.
   */
  async introspection(ctx: Pick<OperationContext, 'metadata' | 'uow' | 'current'>, sourceName: string): Promise<Introspection> {
    const source = sourcesOf(ctx.metadata).find((s) => s.name === sourceName);
    if (!source) throw new SvcError('not-exists', `source with name "${sourceName}" does not exist`, { path: '$.args.source' });
    const cached = ctx.uow.peek<Introspection>(introKey(sourceName));
    if (cached) return cached;
    const tx = ctx.uow.peek<SqlExecutor>(txKey(sourceName));
    const conn = this.connection(source);
    // After `invalidate` (SQL that ran outside the request's transaction) the committed one is stale too.
    if (!tx && !ctx.uow.has(introKey(sourceName))) {
      const committed = (ctx.current.outputs.get(SOURCES_STEP) as DatabaseBuild | undefined)?.sources.get(sourceName);
      if (committed?.introspection && committed.connection === conn) return committed.introspection;
    }
    let intro: Introspection;
    try {
      intro = await conn.introspect(tx);
    } catch (e) {
      if (e instanceof SvcError) throw e;
      throw new SvcError('postgres-error', `source "${sourceName}" cannot be reached: ${(e as Error).message}`, { path: '$.args' });
    }
    ctx.uow.set(introKey(sourceName), intro);
    return intro;
  }

  /**
   * Everything that depends on `target`, transitively (a permission that uses a relationship that
   * uses a dropped table), in removal order: dependents of dependents first.
   */
  dependents(md: Metadata, target: DepTarget | DepTarget[]): Dependent[] {
    const out = new Map<string, Dependent>();
    const visit = (t: DepTarget) => {
      for (const g of this.groups) {
        for (const d of g.dependents?.(md, t) ?? []) {
          if (out.has(d.id)) continue;
          out.set(d.id, d);
          if (d.target) visit(d.target);
        }
      }
    };
    for (const t of [target].flat()) visit(t);
    return [...out.values()];
  }

  /*
   * Note [Dependents through the build]
   * `dependents` hooks (pg_untrack_table, pg_drop_relationship, a column that run_sql drops) ask
   * which of a source's table entries refer to a table, and the answer is nearly always an entry
   * or two; looking at every entry made an untrack at 2,000 tables cost half as much again as at
   * 100 (profiled: the permissions' and relationships' hooks, a lookup per table). The committed
   * build knows more: where its pass reported nothing, every table's resolution recorded the
   * tables it reaches (`deps`, whose reverse index Note [Resolving a change] keeps), and an object
   * that refers to a table reaches it. The document a request works on differs from the committed
   * one only in the run of entries that its operations replaced (compared by identity from both
   * ends, as there); an entry outside that run is the committed one and refers to what it did
   * then, unless an entry it reached is new. So the entries that may refer to a table are the
   * entries of that run, the table's own, and the committed entries listed in the index under
   * the table or under a key of the run (a permission that walks through a relationship of a
   * changed entry). The whole list stands in where the committed pass is not clean or unknown,
   * or where the run or the candidates are many; the hooks test each entry as before, so a
   * superset costs only time. The same run gives lookups by key without a map of every entry.
   */
  /** The table entries of `source` (a document's, maybe not committed) that may refer to the
   * table `key`, in list order, and its entries by key (Note [Dependents through the build]). */
  tablesReaching(source: SourceMeta, key: string): TablesReaching {
    const all = source.tables;
    const change = this.changeOf(source);
    if (!change) return wholeList(all);
    const { state, went, run } = change;
    const rev = (state.rev ??= reverseDependencies(state.tables));
    const picked = new Set<TableMeta>(run.values());
    const pick = (k: string) => {
      const t = state.tables.get(k)?.meta;
      if (t && !went.has(t)) picked.add(t);
    };
    for (const k of [key, ...change.keys]) {
      pick(k);
      for (const d of rev.get(k) ?? []) pick(d);
      if (picked.size > REACH_LIMIT) return wholeList(all);
    }
    const tables = [...picked].map((t) => [all.indexOf(t), t] as const).sort((x, y) => x[0] - y[0]).map(([, t]) => t);
    return { tables, entry: change.entry };
  }

  /** A source's table entry by key, without a map of every entry where the committed build's
   * pass can stand in for one (Note [Dependents through the build]). */
  tableEntry(source: SourceMeta, key: string): TableMeta | undefined {
    return (this.changeOf(source) ?? wholeList(source.tables)).entry(key);
  }

  /** The last answer of `changeOf`: an untrack asks each group for each dependent's dependents,
   * about the same list. One only, and dropped on a commit, so that it keeps no old build or
   * document alive (metadata history keeps documents). */
  private lastChange: { tables: readonly TableMeta[]; name: string; change: SourceChange | undefined } | undefined;

  /** How a source's list of tables differs from the committed build's, where that build's pass
   * was clean and the difference is small. */
  private changeOf(source: SourceMeta): SourceChange | undefined {
    const hit = this.lastChange;
    if (hit && hit.tables === source.tables && hit.name === source.name) return hit.change;
    const change = this.computeChange(source);
    this.lastChange = { tables: source.tables, name: source.name, change };
    return change;
  }

  private computeChange(source: SourceMeta): SourceChange | undefined {
    const all = source.tables;
    const src = this.last?.sources.get(source.name);
    const state = src && this.passes.get(src);
    if (!src || !state?.clean) return undefined;
    const a = src.meta.tables;
    const { start: lo, prevEnd: ha, nextEnd: hb } = changedRun(a, all);
    if (ha - lo + (hb - lo) > REACH_LIMIT) return undefined;
    const went = new Set<TableMeta>();
    const run = new Map<string, TableMeta>();
    for (let i = lo; i < ha; i++) went.add(a[i]!);
    for (let i = lo; i < hb; i++) run.set(qtKey(all[i]!.table), all[i]!);
    const goneKeys = new Set<string>();
    for (const t of went) goneKeys.add(qtKey(t.table));
    const entry = (k: string): TableMeta | undefined => {
      const fresh = run.get(k);
      if (fresh || goneKeys.has(k)) return fresh;
      return state.tables.get(k)?.meta;
    };
    return { state, went, run, keys: [...new Set([...goneKeys, ...run.keys()])], entry };
  }

  /** Removes the dependents of `target` when `cascade`, else fails with Hasura's dependency error. */
  cascade(md: Metadata, target: DepTarget | DepTarget[], cascade: boolean, exclude: (d: Dependent) => boolean = () => false): Metadata {
    const deps = this.dependents(md, target).filter((d) => !exclude(d));
    if (deps.length === 0) return md;
    if (!cascade) {
      throw new SvcError('dependency-error', `cannot drop due to the following dependent objects: ${deps.map((d) => d.description).join(', ')}`, { path: '$.args' });
    }
    // Remove the deepest dependents first so every removal finds its object.
    for (const d of [...deps].reverse()) md = d.remove(md);
    return md;
  }

  /*
   * Note [Renames]
   * run_sql finds the tables, columns and functions that it renamed in a source (same oid; for a
   * column, same table oid and attnum) and carries the new names into the metadata rather than
   * leaving the old entries inconsistent. `rename` first renames what the framework owns (see
   * rename.ts): the tracked table or function entry, and a renamed column's keys in its table's
   * configuration. Then each command group's `rename` hook rewrites its own references anywhere
   * in the document (a relationship's remote table or column mapping, a permission's columns and
   * filters, a computed field's function...); hooks see the entry under its new name. A plugin
   * whose metadata refers to tables (event triggers, remote relationships) registers a group with
   * just `rename` and `dependents`.
   */
  /** Carries one rename found in a source into the metadata (Note [Renames]). */
  rename(md: Metadata, r: SchemaRename): Metadata {
    md = renameOwnEntry(md, r);
    for (const g of this.groups) if (g.rename) md = g.rename(md, r);
    return md;
  }

  /** The resolved sources of the last committed build: introspection for lookups outside a build
   * (`dependents` sees metadata only, e.g. a tracked function's return table). */
  committed(): DatabaseBuild {
    return this.last ?? { sources: new Map() };
  }

  /** The resolved sources of a build, or of the build in progress (for steps after `sources`). */
  resolved(build: { outputs: ReadonlyMap<string, unknown> } | BuildContext): DatabaseBuild {
    const out = 'outputs' in build ? build.outputs.get(SOURCES_STEP) : (build as BuildContext).output(SOURCES_STEP);
    return (out as DatabaseBuild | undefined) ?? { sources: new Map() };
  }

  // -------------------------------------------------------------------------------------------
  // Build step

  async build(ctx: BuildContext): Promise<DatabaseBuild> {
    const prev = ctx.previous ? this.resolved(ctx.previous) : undefined;
    const out: DatabaseBuild = { sources: new Map() };
    const reload = ctx.reload.sources;
    for (const meta of sourcesOf(ctx.metadata)) {
      const sourceId = `source:${meta.name}`;
      const reportSource = (reason: string) =>
        ctx.inconsistent({
          type: 'source',
          name: `source ${meta.name}`,
          reason: `Inconsistent object: ${reason}`,
          definition: meta,
          id: sourceId,
          remove: (md) => ({ ...md, sources: sourcesOf(md).filter((s) => s.name !== meta.name) }),
        });
      let kind: SourceKind;
      let conn: SourceConnection;
      try {
        kind = this.kindOf(meta);
        conn = this.connection(meta);
      } catch (e) {
        reportSource((e as Error).message);
        continue;
      }
      const prevSrc = prev?.sources.get(meta.name);
      const refresh = reload === true || (Array.isArray(reload) && reload.includes(meta.name));
      let intro = ctx.uow.peek<Introspection>(introKey(meta.name));
      if (!intro) {
        const tx = ctx.uow.peek<SqlExecutor>(txKey(meta.name));
        if (!tx && !refresh && prevSrc?.introspection && prevSrc.connection === conn) intro = prevSrc.introspection;
        else {
          try {
            intro = await conn.introspect(tx);
          } catch (e) {
            ctx.log.warn('source', { source: meta.name, message: 'introspection failed', error: errorDetail(e) });
            reportSource(`could not connect to the source: ${(e as Error).message}`);
            out.sources.set(meta.name, { name: meta.name, kind, meta, connection: conn, introspection: null, tables: new Map(), functions: new Map() });
            continue;
          }
        }
      }
      out.sources.set(meta.name, await this.resolveSource(ctx, meta, kind, conn, internIntrospection(intro, prevSrc?.introspection), prevSrc));
    }
    const roles = this.inheritance?.(ctx.metadata);
    if (roles?.length) {
      for (const [name, src] of out.sources) {
        const inherited = this.inherit(ctx, src, roles);
        // The next build's change pass starts from the tables before inheritance (Note
        // [Resolving a change]), whichever source object it is given.
        const pass = this.passes.get(src);
        if (pass) this.passes.set(inherited, pass);
        out.sources.set(name, inherited);
      }
    }
    return out;
  }

  /*
   * Note [Inherited permissions of a change]
   * A source with inherited roles is a copy of the resolved source whose table entries carry the
   * inherited permissions too (Note [Inherited roles] in inherit.ts). Making that copy looked up
   * every table's inherited model and entry (two WeakMap lookups each): at 10,000 tables 11 ms
   * of a pg_track_table's 20. So what a copy made is kept by the pass's map of tables it was made
   * from, and a build whose change pass started from that map, with the same inherited roles
   * (the same array: roles.ts keeps it while they are unchanged), takes the previous copy in a
   * new layer (Note [Layered maps]) and makes again only the entries of the keys the pass set or
   * removed. The permission conflicts are reported again for every table that has them, in the
   * order of the source's tables list, as the whole copy reports them.
   */
  /** The source with the inherited roles' permissions (Note [Inherited roles] in inherit.ts). */
  private inherit(ctx: BuildContext, src: ResolvedSource, roles: readonly InheritedRoleDef[]): ResolvedSource {
    const change = this.passes.get(src)?.change;
    const before = change && this.inheritedTables.get(change.from);
    let made: InheritedTables;
    if (before && before.roles === roles) {
      const tables = LayeredMap.after(before.tables);
      const conflicted = new Map(before.conflicted);
      for (const key of change.keys) {
        const rt = src.tables.get(key);
        conflicted.delete(key);
        if (!rt) {
          tables.delete(key);
          continue;
        }
        const { entry, conflicts } = this.inheritedTable(rt, roles);
        tables.set(key, entry);
        if (conflicts.length) conflicted.set(key, conflicts);
      }
      made = { roles, tables, conflicted };
    } else {
      const tables = new Map<string, ResolvedTable>();
      const conflicted = new Map<string, PermissionConflict[]>();
      for (const [key, rt] of src.tables) {
        const { entry, conflicts } = this.inheritedTable(rt, roles);
        tables.set(key, entry);
        if (conflicts.length) conflicted.set(key, conflicts);
      }
      made = { roles, tables, conflicted };
    }
    this.inheritedTables.set(src.tables, made);
    // In the order of the tables list (a table added comes last in the map, wherever it is listed).
    const order = [...made.conflicted.keys()].map((key) => [key, tablePosition(src.meta.tables, src.tables.get(key)!.meta.table)] as const);
    for (const [key] of order.sort((a, b) => a[1] - b[1])) {
      const table = qtDisplay(src.tables.get(key)!.model!.table, src.kind.dialect.defaultSchema);
      for (const c of made.conflicted.get(key)!) {
        const reason = `Could not inherit permission for the role '${c.role}' for the entity: '${c.type} permission, table: ${table}, source: '${src.name}''`;
        const type = 'inherited role permission inconsistency';
        ctx.inconsistent({
          type,
          name: c.role,
          reason,
          definition: undefined,
          id: `inherited-permission:${src.name}:${key}:${c.type}:${c.role}`,
          // Hasura's ConflictingInheritedPermission: no metadata object is wrong, so no operation is
          // blamed for it and drop_inconsistent_metadata cannot remove it.
          objectless: true,
          shown: { reason, name: c.role, type, entity: { permission_type: c.type, source: src.name, table } },
        });
      }
    }
    const functions: ResolvedSource['functions'] = new Map();
    for (const [key, f] of src.functions) functions.set(key, f.model ? { ...f, model: inheritFunction(f.model, roles) } : f);
    return { ...src, tables: made.tables, functions };
  }

  /** A table's entry with the inherited roles' permissions, and the conflicts among them. */
  private inheritedTable(rt: ResolvedTable, roles: readonly InheritedRoleDef[]): { entry: ResolvedTable; conflicts: PermissionConflict[] } {
    if (!rt.model) return { entry: rt, conflicts: [] };
    let done = this.inherited.get(rt.model);
    if (done?.roles !== roles) {
      const conflicts: PermissionConflict[] = [];
      done = { roles, model: inheritTable(rt.model, roles, conflicts), conflicts };
      this.inherited.set(rt.model, done);
    }
    return { entry: done.model === rt.model ? rt : this.inheritedEntry(rt, done.model), conflicts: done.conflicts };
  }

  /** `rt` with its inherited model, the same object while both are (a build over thousands of
   * tables makes no copy of the tables it did not touch). */
  private inheritedEntry(rt: ResolvedTable, model: TableModel): ResolvedTable {
    const hit = this.inheritedEntries.get(rt);
    if (hit?.model === model) return hit;
    const entry = { ...rt, model, base: rt.model };
    this.inheritedEntries.set(rt, entry);
    return entry;
  }

  /*
   * Note [Table checks]
   * A tracked table is first checked by itself: it exists, its configuration fits its columns, an
   * enum table's values are valid (`CommandGroup.checkTable`, which may run SQL). A table that
   * fails is reported once, as a `table` inconsistency, and then counts as not tracked: the
   * relationships, permissions etc. on it are not resolved, and objects on other tables that
   * refer to it see it missing (Hasura drops such tables from its table cache before building
   * anything on them). Only then are the tables' own objects resolved (`resolveTable`).
   */
  /*
   * Note [Reuse of resolved tables]
   * A build resolves again only the tables a change can have touched: with the same introspection,
   * a table whose metadata entry is the previous build's object (Note [Sharing]) keeps its
   * resolved entry, unless a table it depends on (`deps`: the tables its relationships,
   * permissions etc. reach; a permission that reaches `author.articles` depends on author's
   * relationships) changed. What changed is collected once per build: the keys whose entry is new
   * or was checked again, and the previous build's tables no longer tracked (looked for only when
   * fewer of them are listed than it had; a guard, as pg_untrack_table refuses or cascades to
   * every table that depends on the one it removes). A table's entry is reused when none of its
   * dependencies is among them, so a change at 2,000 tables tests each table's few dependencies
   * against a set of one or two keys, where it looked each up in this build's and the previous
   * build's maps. A dependency tracked in neither build is no change: the table's entry was
   * resolved without it and would be again. A document never holds a table twice (the section's
   * check), so the count of listed tables that the previous build had says whether any went.
   * A build that follows a pass with nothing to report skips even that pass where it can (Note
   * [Resolving a change]).
   */
  private async resolveSource(
    ctx: BuildContext,
    meta: SourceMeta,
    kind: SourceKind,
    conn: SourceConnection,
    intro: Introspection,
    prevSrc: ResolvedSource | undefined,
  ): Promise<ResolvedSource> {
    const executor = ctx.uow.peek<SqlExecutor>(txKey(meta.name)) ?? conn.executor;
    const functions = new Map<string, FunctionMeta>();
    for (const f of meta.functions ?? []) functions.set(qtKey(f.function), f);
    const at: TablePass = { ctx, meta, kind, intro, executor, functions };
    // The change pass needs the previous introspection's functions and types (Note [Interned
    // introspection]); its tables it compares one by one.
    const before = prevSrc?.introspection;
    const state = before && (before === intro || (before.functions === intro.functions && before.types === intro.types)) ? this.passes.get(prevSrc!) : undefined;
    const pass = (state && (await this.resolveChange(at, prevSrc!, state))) ?? (await this.resolveTables(at, prevSrc));
    const { tables, tracked } = pass;
    const fns: ResolvedSource['functions'] = new Map();
    const owner = this.groups.find((g) => g.resolveFunction);
    for (const f of meta.functions ?? []) {
      const key = qtKey(f.function);
      const info = owner?.resolveFunction?.({
        source: meta,
        kind,
        fn: f,
        introspection: intro,
        tracked,
        build: ctx,
        report: (o) => ctx.inconsistent({ ...o, id: o.id ?? `function:${meta.name}:${key}` }),
      });
      if (info) fns.set(key, { meta: f, info, model: resolveFunctionModel(f, info, kind.dialect) });
    }
    const src: ResolvedSource = { name: meta.name, kind, meta, connection: conn, introspection: intro, tables, functions: fns };
    this.passes.set(src, pass);
    return src;
  }

  /** The whole pass over a source's tables: each table checked and resolved, or its previous
   * entry reused (Note [Reuse of resolved tables]). */
  private async resolveTables(at: TablePass, prevSrc: ResolvedSource | undefined): Promise<TablePassResult> {
    const { ctx, meta, intro } = at;
    const sameIntro = prevSrc?.introspection === intro;
    const tracked = new Map<string, { meta: TableMeta; info: TableInfo | undefined }>();
    // Tables that passed their own checks: the previous build's entry when untouched (no
    // allocation per table on the common path), else what the checks found.
    const checked: (Kept | CheckedTable)[] = [];
    const checkedKeys: string[] = [];
    // The keys whose table is not the previous build's entry (Note [Reuse of resolved tables]).
    const changed = new Set<string>();
    let stillListed = 0;
    let clean = true;
    for (const t of meta.tables) {
      const key = qtKey(t.table);
      const before = prevSrc?.tables.get(key) as Kept | undefined;
      if (before) stillListed++;
      if (sameIntro && before && before.meta === t) {
        tracked.set(key, before);
        checked.push(before);
        checkedKeys.push(key);
        continue;
      }
      changed.add(key);
      const c = await this.checkTable(at, ctx, t, key);
      if (c === 'missing') tracked.set(key, { meta: t, info: undefined });
      if (typeof c === 'string') {
        clean = false;
        continue;
      }
      tracked.set(key, { meta: t, info: c.info });
      checked.push(c);
      checkedKeys.push(key);
    }
    // The previous build's tables that are no longer listed.
    if (prevSrc && stillListed < prevSrc.tables.size) for (const key of prevSrc.tables.keys()) if (!tracked.has(key)) changed.add(key);
    const tables = new Map<string, Kept>();
    const unchanged = (deps: Set<string>) => {
      if (changed.size === 0) return true;
      for (const d of deps) if (changed.has(d)) return false;
      return true;
    };
    for (let i = 0; i < checked.length; i++) {
      const entry = checked[i]!;
      const key = checkedKeys[i]!;
      if (!('fresh' in entry) && unchanged(entry.deps)) {
        if (entry.reports?.length) {
          clean = false;
          for (const r of entry.reports) ctx.inconsistent(r);
        }
        // The model of its own permissions: inherited ones are added again for this build's roles.
        tables.set(key, entry.base ? { ...entry, model: entry.base, base: undefined } : entry);
        continue;
      }
      const kept = this.resolveTable(at, ctx, tracked, key, entry);
      if (kept.reports?.length) clean = false;
      tables.set(key, kept);
    }
    return { tables, tracked, clean };
  }

  /*
   * Note [Resolving a change]
   * Most builds follow one operation that touched a table or two, yet the pass over every table
   * (Note [Reuse of resolved tables]) costs about a microsecond a table: at 2,000 tables it was a
   * third of a pg_track_table's time in the engine. So a build whose previous pass found nothing
   * wrong resolves only what changed, over the same introspection or a new one with the same
   * functions and types (Note [Interned introspection]):
   *   - the entries that differ are found by comparing the two lists of table entries by identity
   *     (Note [Sharing]) from both ends: an operation replaces, adds or removes entries in one run;
   *   - after a new introspection, so are the tables whose info is not the previous object, and
   *     every enum table (a new introspection reads enum values again: Note [Enum values]);
   *   - the previous pass's map of tables is taken as it is, in a new layer (Note [Layered maps]
   *     in lib/layered-map.ts: a copy cost 3-4 ms at 10,000 tables), and those entries checked,
   *     resolved, added or removed (with nothing reported, every listed table is in it: it serves
   *     as `tracked` too);
   *   - the tables that depended on a changed key are resolved again, found through a reverse
   *     index of every pass's `deps` (built from the previous tables on first use). It only grows
   *     while passes succeed one another (a table that no longer depends on a key stays listed
   *     under it), and a superset is safe: a table resolved again comes out the same.
   * It gives way to the whole pass, which reports in table order, whenever any check or
   * resolution reports an inconsistency, when more than half the entries changed, or when the
   * result's order (the tables in the order of the list, which schemas follow) would differ from
   * the whole pass's: entries moved, or a table added other than at the end.
   */
  /** The pass over only the tables a change touched (Note [Resolving a change]), or undefined
   * where the whole pass must run. */
  private async resolveChange(at: TablePass, prevSrc: ResolvedSource, state: TablePassResult): Promise<TablePassResult | undefined> {
    if (!state.clean) return undefined;
    const a = prevSrc.meta.tables;
    const b = at.meta.tables;
    const { start: lo, prevEnd: ha, nextEnd: hb } = changedRun(a, b);
    if (ha - lo + (hb - lo) > Math.max(16, b.length / 2)) return undefined;
    // The previous pass's own tables: a source with inherited roles was given copies after it.
    const prev = state.tables;
    const listed: string[] = [];
    for (let i = lo; i < hb; i++) listed.push(qtKey(b[i]!.table));
    const listedSet = new Set(listed);
    // The previous pass passed every table, so `prev` holds all of `a`: the tables of the new run
    // that it had keep their places in the new map, and must be in the same order in both runs.
    const went: string[] = [];
    const stayed: string[] = [];
    for (let i = lo; i < ha; i++) {
      const k = qtKey(a[i]!.table);
      if (listedSet.has(k)) stayed.push(k);
      else went.push(k);
    }
    let j = 0;
    let added = false;
    for (const k of listed) {
      if (!prev.has(k)) added = true;
      else if (added || stayed[j++] !== k) return undefined;
    }
    if (added && hb < b.length) return undefined;

    let reported = false;
    const probe: BuildContext = Object.assign(Object.create(at.ctx) as BuildContext, { inconsistent: () => void (reported = true) });
    // Every listed table passes its checks here, so the tables are the tracked ones: the checked
    // entries stand in the map (in their final places) until they are resolved. The previous
    // pass's map is not copied but layered (Note [Layered maps] in lib/layered-map.ts).
    const tables = LayeredMap.after<string, Kept | CheckedTable>(prev);
    for (const k of went) tables.delete(k);
    // After a new introspection, the tables whose info is new (Note [Interned introspection]) and
    // every enum table (whose values a new introspection reads again: Note [Enum values]) are
    // checked again too, in their places.
    const redo: string[] = [];
    if (at.intro !== prevSrc.introspection) {
      for (const [k, e] of prev) if (!listedSet.has(k) && tables.has(k) && (e.meta.is_enum || at.intro.tables.get(k) !== e.info)) redo.push(k);
      if (redo.length + (ha - lo) + (hb - lo) > Math.max(16, b.length / 2)) return undefined;
    }
    const checked: [string, CheckedTable][] = [];
    for (const [k, t] of [...listed.map((k, i) => [k, b[lo + i]!] as const), ...redo.map((k) => [k, prev.get(k)!.meta] as const)]) {
      const c = await this.checkTable(at, probe, t, k);
      if (typeof c === 'string' || reported) return undefined;
      tables.set(k, c);
      checked.push([k, c]);
    }
    const redone = new Set([...listedSet, ...redo]);
    const rev = (state.rev ??= reverseDependencies(prev));
    const again = new Set<string>();
    for (const changed of [went, stayed, listed, redo]) {
      for (const c of changed) for (const d of rev.get(c) ?? []) if (!redone.has(d) && tables.has(d)) again.add(d);
    }
    const resolve = (key: string, entry: Kept | CheckedTable) => {
      const kept = this.resolveTable(at, probe, tables, key, entry);
      for (const d of kept.deps) {
        let on = rev.get(d);
        if (!on) rev.set(d, (on = new Set()));
        on.add(key);
      }
      tables.set(key, kept);
    };
    for (const [k, c] of checked) resolve(k, c);
    for (const k of again) resolve(k, prev.get(k)!);
    if (reported) return undefined;
    return { tables: tables as ReadonlyMap<string, Kept>, tracked: tables, clean: true, rev, change: { from: prev, keys: [...went, ...listed, ...redo, ...again] } };
  }

  /** A table's own checks (Note [Table checks]): what it passed with, or why it counts as not
   * tracked (reported through `ctx`). */
  private async checkTable(at: TablePass, ctx: BuildContext, t: TableMeta, key: string): Promise<CheckedTable | 'missing' | 'failed'> {
    const { meta, kind, intro, executor } = at;
    const info = intro.tables.get(key);
    const reportTable = (reason: string) =>
      ctx.inconsistent({
        type: 'table',
        name: `table ${qtDisplay(t.table, kind.dialect.defaultSchema)} in source ${meta.name}`,
        reason: `Inconsistent object: ${reason}`,
        definition: t.table,
        id: `table:${meta.name}:${key}`,
        remove: (md) => removeTable(md, meta.name, t.table),
      });
    if (!info) {
      reportTable(`no such table/view exists in source: "${qtDisplay(t.table, kind.dialect.defaultSchema)}"`);
      return 'missing';
    }
    let enumValues: EnumValue[] | undefined;
    for (const g of this.groups) {
      const r = await g.checkTable?.({ source: meta, table: t, info, introspection: intro, kind, executor, build: ctx });
      if (r?.enumValues) enumValues = r.enumValues;
      if (r?.reason !== undefined) {
        reportTable(r.reason);
        return 'failed';
      }
    }
    return { meta: t, info, enumValues, fresh: true };
  }

  /** Resolves a table that passed its checks: every group's objects on it, then its model. */
  private resolveTable(at: TablePass, ctx: BuildContext, tracked: TrackedTables, key: string, entry: Kept | CheckedTable): Kept {
    const { meta, kind, intro, functions } = at;
    const { meta: t, info, enumValues } = entry;
    const deps = new Set<string>();
    const reports: Report[] = [];
    for (const g of this.groups) {
      g.resolveTable?.({
        source: meta,
        kind,
        table: t,
        info,
        introspection: intro,
        tracked,
        functions,
        build: ctx,
        dependsOn: (k) => deps.add(k),
        report: (o) => {
          const full = { ...o, id: o.id ?? `${o.type}:${meta.name}:${key}:${o.name ?? ''}` };
          reports.push(full);
          ctx.inconsistent(full);
        },
      });
    }
    const model = resolveTableModel(t, info, {
      dialect: kind.dialect,
      introspection: intro,
      tracked,
      inconsistentRelationships: new Set(reports.filter((r) => r.type === 'object_relation' || r.type === 'array_relation').map((r) => (r.definition as { name: string }).name)),
      inconsistentSelectRoles: new Set(reports.filter((r) => r.type === 'select_permission').map((r) => (r.definition as { role: string }).role)),
      inconsistentPermissions: new Set(
        reports.filter((r) => /^(insert|update|delete)_permission$/.test(r.type)).map((r) => `${r.type.replace('_permission', '')}.${(r.definition as { role: string }).role}`),
      ),
      inconsistentComputedFields: new Set(reports.filter((r) => r.type === 'computed_field').map((r) => (r.definition as { name: string }).name)),
    });
    return { meta: t, info, enumValues, deps, reports, model };
  }
}
