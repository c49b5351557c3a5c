/**
 * The kernel: plugin boot order, registries, the committed state (metadata, resource_version,
 * build) and the entry of metadata requests (authentication, the metadata lock), whose steps are
 * in ./pipeline.ts (ARCHITECTURE "The metadata change pipeline"). It knows no feature.
 */
import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import { TypedEmitter } from 'tiny-typed-emitter';
import type postgres from 'postgres';
import type {
  AuthMode,
  BuildStepDef,
  ReloadKeyDef,
  Endpoint,
  KernelApi,
  KernelEvents,
  Metadata,
  OperationDef,
  PluginDef,
  ReloadSpec,
  RouteDef,
  SchemaContributorDef,
  SectionDef,
  Session,
  Token,
  UpgradeDef,
  WorkerDef,
} from '../plugin.js';
import type { ServerConfig } from '../config.js';
import { errorDetail, type Logger } from '../log.js';
import { SvcError } from '../errors.js';
import { Authenticator } from '../auth/session.js';
import { withPluginDefaults } from '../config.js';
import { orderByDeps, OrderError } from './order.js';
import { OperationRegistry } from '../registry/registry.js';
import { CatalogStore, type Part, type Stamp } from '../catalog/store.js';
import { publicInconsistency, runBuild } from '../schema-cache/build.js';
import { UnitOfWork } from '../uow.js';
import { parseEnvelope, type Envelope } from '../envelope/envelope.js';
import { parseWith } from '../validation.js';
import { Mutex } from './mutex.js';
import { registerMetadataOperations, replaceWith } from './metadata-ops.js';
import { exportMetadata } from './document.js';
import { MetadataPipeline, resolveItems, type Committed, type DryRunReport, type Items } from './pipeline.js';
import { buildRoleSchema, roleSchema } from '../schema/assembly.js';
import { mapChanged } from '../../lib/lists.js';

export interface KernelOptions {
  config: ServerConfig;
  env?: Record<string, string | undefined>;
  log: Logger;
  plugins: PluginDef[];
  /** Connection to the metadata database (holds the catalog). */
  catalogSql: postgres.Sql;
  /** Applied to the empty document when the catalog is created (first boot): e.g. the default source. */
  initialMetadata?: (md: Metadata) => Metadata;
  /** Catalog schema name (tests may use several kernels on one database). */
  catalogSchema?: string;
}

export class BootError extends Error {}

export class Kernel {
  readonly config: ServerConfig;
  readonly env: Record<string, string | undefined>;
  readonly log: Logger;
  readonly events = new TypedEmitter<KernelEvents>();
  readonly registry = new OperationRegistry();
  readonly sections = new Map<string, SectionDef>();
  /** Sections of disabled plugins, used only to store and load them in their catalog format
   * (Note [Disabled plugins]). */
  private readonly storedSections = new Map<string, SectionDef>();
  readonly contributors: (SchemaContributorDef & { plugin: string })[] = [];
  readonly routes: (RouteDef & { plugin: string })[] = [];
  readonly workers: (WorkerDef & { plugin: string })[] = [];
  /** Note [Upgrades] in core/plugin.ts. */
  readonly upgrades: (UpgradeDef & { plugin: string })[] = [];
  /** Note [Reload keys] in core/types.ts. */
  readonly reloadKeys: ReloadKeyDef[] = [];
  readonly plugins: string[] = [];
  readonly disabledPlugins: string[] = [];
  private steps: BuildStepDef[] = [];
  private readonly rawSteps: (BuildStepDef & { plugin: string })[] = [];
  private readonly container: DependencyContainer = rootContainer.createChildContainer();
  private readonly shutdownFns: (() => void | Promise<void>)[] = [];
  private readonly catalog: CatalogStore;
  private readonly lock = new Mutex();
  private committed: Committed | undefined;
  /** Steps 2-5 of a metadata request (core/kernel/pipeline.ts). */
  private readonly pipeline: MetadataPipeline;
  private syncTimer: NodeJS.Timeout | undefined;
  private workersStarted = false;
  private stopped = false;
  readonly api: KernelApi;

  private constructor(private readonly opts: KernelOptions) {
    // Every plugin's options, at their defaults where unset (Note [Options by plugin]).
    this.config = withPluginDefaults(opts.config, opts.plugins);
    this.env = opts.env ?? process.env;
    this.log = opts.log;
    this.catalog = new CatalogStore(
      opts.catalogSql,
      { split: (md) => this.splitDocument(md), join: (parts) => this.joinDocument(parts) },
      opts.catalogSchema,
    );
    this.api = this.makeApi('kernel');
    this.pipeline = new MetadataPipeline({
      steps: () => this.steps,
      log: this.log,
      api: this.api,
      events: this.events,
      catalog: this.catalog,
      committed: () => this.state(),
      install: (next) => {
        this.committed = next;
      },
      exportDocument: (md) => exportMetadata(md, this.sortedSections()),
    });
  }

  /** Orders and sets up the plugins. A missing dependency or a cycle fails with BootError. */
  static async create(opts: KernelOptions): Promise<Kernel> {
    const k = new Kernel(opts);
    const disabled = new Set(opts.config.disabledPlugins);
    for (const name of disabled) {
      if (!opts.plugins.some((p) => p.name === name)) throw new BootError(`cannot disable unknown plugin "${name}"`);
    }
    const enabled = opts.plugins.filter((p) => !disabled.has(p.name));
    for (const p of enabled) {
      for (const r of p.requires ?? p.after ?? []) {
        if (!enabled.some((q) => q.name === r)) {
          const why = disabled.has(r) ? 'is disabled' : 'is missing';
          throw new BootError(`plugin "${p.name}" requires plugin "${r}", which ${why}`);
        }
      }
    }
    let ordered: PluginDef[];
    try {
      ordered = orderByDeps(enabled, 'plugin');
    } catch (e) {
      throw new BootError((e as Error).message);
    }
    registerMetadataOperations(k);
    for (const p of ordered) {
      await p.setup(k.makeApi(p.name));
      k.plugins.push(p.name);
    }
    for (const p of opts.plugins) if (disabled.has(p.name)) k.disabledPlugins.push(p.name);
    if (disabled.size > 0) await Kernel.learnDisabledPlugins(k, opts, disabled);
    try {
      k.steps = orderByDeps(k.rawSteps, 'build step');
    } catch (e) {
      throw new BootError((e as Error).message);
    }
    return k;
  }

  private makeApi(plugin: string): KernelApi {
    const k = this;
    return {
      config: k.config,
      env: k.env,
      log: k.log,
      events: k.events,
      operation: (def) => k.registry.add(def as OperationDef, plugin),
      metadataSection: (def) => {
        if (k.sections.has(def.key)) throw new BootError(`metadata section "${def.key}" is registered twice`);
        k.sections.set(def.key, def);
      },
      buildStep: (def) => k.rawSteps.push({ ...(def as BuildStepDef), plugin }),
      schemaContributor: (def) => k.contributors.push({ ...def, plugin }),
      route: (def) => {
        if (!def.handler === !def.exchange) throw new BootError(`plugin ${plugin}: route ${def.method} ${def.path} needs a handler or an exchange, one of the two`);
        k.routes.push({ ...def, plugin });
      },
      worker: (def) => k.workers.push({ ...def, plugin }),
      provide: <T>(t: Token<T>, value: T) => {
        if (k.container.isRegistered(t.key)) throw new BootError(`service "${t.key}" is provided twice`);
        k.container.register(t.key, { useValue: value });
      },
      use: <T>(t: Token<T>): T => {
        if (!k.container.isRegistered(t.key)) throw new BootError(`plugin "${plugin}" uses service "${t.key}", which no enabled plugin provides`);
        return k.container.resolve<T>(t.key);
      },
      optional: <T>(t: Token<T>): T | undefined => (k.container.isRegistered(t.key) ? k.container.resolve<T>(t.key) : undefined),
      state: () => k.state(),
      execute: (endpoint, body, session) => k.execute(endpoint, body, session),
      session: (headers) => k.session(headers),
      authenticate: (headers, request) => k.authenticate(headers, request),
      onShutdown: (fn) => k.shutdownFns.push(fn),
      upgrade: (def) => {
        if (k.upgrades.some((u) => u.path === def.path)) throw new BootError(`upgrades of "${def.path}" are taken twice (plugin ${plugin})`);
        k.upgrades.push({ ...def, plugin });
      },
      reloadKey: (def) => k.reloadKeys.push(def),
      authMode: (mode) => {
        // As Hasura's setupAuthMode: one mode at a time, beside the admin secret.
        if (k.authModeOf) throw new BootError(`both ${k.authModeOf.mode.name} and ${mode.name} mode cannot be enabled at the same time (plugins ${k.authModeOf.plugin} and ${plugin})`);
        if (k.config.adminSecret === undefined) throw new BootError(`the ${mode.name} authentication mode (plugin ${plugin}) requires --admin-secret (SVC_GRAPHQL_ADMIN_SECRET) to be set`);
        k.authModeOf = { mode, plugin };
      },
      roleRoots: (role, build) => buildRoleSchema(role, { metadata: build.metadata, outputs: build.outputs, inconsistencies: [], schemas: new Map() }, k.contributors).roots,
      roleSchema: (role, build, backendOnly) => roleSchema(role, build, k.contributors, backendOnly),
      authNeedsRequest: () => k.auth.needsRequest,
      catalogExtension: (def) => k.catalog.extend(def),
      exportDocument: (md) => exportMetadata(md, k.sortedSections()),
      replacement: (doc, allow, path) => replaceWith(k, doc, allow, path),
    };
  }

  /*
   * Note [Disabled plugins]
   * A disabled plugin is never set up in the kernel, not even against a recorder: its setup may
   * reach other plugins' services, and what it registers through them is registered with their
   * API, not its own (the postgres plugin adds its source kind to the database service, which then
   * registers every `pg_` operation as the database plugin's). So a recorder would still let the
   * plugin contribute, or lose its operations when a service it uses is disabled too.
   *
   * To learn the operations a disabled plugin would have added, so that calling one answers
   * `not-supported` rather than `unknown operation`, every plugin is set up in a scratch kernel:
   * its own registries, service container and event emitter, never started, never touching the
   * catalog. The operations that appear there while a disabled plugin is set up are that
   * plugin's; those that appear while an enabled plugin that depends on disabled ones is set up
   * (a group it adds for a source kind that is gone) are put down to the first of those. The real
   * kernel's operations always win over these names (OperationRegistry.find).
   *
   * The scratch kernel also gives the metadata sections that only disabled plugins define. The
   * kernel neither validates, builds nor empties them (they are kept as they are), but stores and
   * loads them with their own split/join, so that a section stored as several catalog rows (the
   * database plugin's `sources`) is read back whole and saved without losing rows.
   */
  private static async learnDisabledPlugins(k: Kernel, opts: KernelOptions, disabled: ReadonlySet<string>): Promise<void> {
    const scratch = new Kernel(opts);
    registerMetadataOperations(scratch);
    let all: PluginDef[];
    try {
      all = orderByDeps(opts.plugins, 'plugin');
    } catch {
      all = opts.plugins;
    }
    const byName = new Map(opts.plugins.map((p) => [p.name, p]));
    const disabledDependency = (p: PluginDef): string | undefined => {
      const seen = new Set<string>();
      const walk = (q: PluginDef): string | undefined => {
        for (const r of [...(q.requires ?? []), ...(q.after ?? [])]) {
          if (seen.has(r)) continue;
          seen.add(r);
          if (disabled.has(r)) return r;
          const dep = byName.get(r);
          const found = dep && walk(dep);
          if (found) return found;
        }
        return undefined;
      };
      return walk(p);
    };
    for (const p of all) {
      const before = new Set(scratch.registry.definitions());
      try {
        await p.setup(scratch.makeApi(p.name));
      } catch {
        /* best effort: e.g. a plugin that requires one that is missing */
      }
      const owner = disabled.has(p.name) ? p.name : disabledDependency(p);
      if (!owner) continue;
      for (const def of scratch.registry.definitions()) if (!before.has(def)) k.registry.addDisabled(def, owner);
    }
    for (const [key, def] of scratch.sections) if (!k.sections.has(key)) k.storedSections.set(key, def);
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycle

  /** Initialises or loads the catalog, builds the schema cache, starts sync and workers. */
  async start(): Promise<void> {
    const empty: Metadata = { version: 3 };
    await this.catalog.init(this.opts.initialMetadata ? this.opts.initialMetadata(this.emptyDocument()) : empty);
    const loaded = await this.catalog.load();
    const metadata = this.normalizeStored(loaded.metadata);
    const uow = new UnitOfWork();
    const build = await runBuild(this.steps, metadata, undefined, this.syncReload(), uow, this.log);
    await uow.commit();
    this.committed = { metadata, resourceVersion: loaded.resourceVersion, epoch: loaded.epoch, build };
    if (build.inconsistencies.length) {
      this.log.warn('metadata', { message: 'inconsistent objects in metadata', inconsistent_objects: build.inconsistencies.map(publicInconsistency) });
    }
    this.events.emit('metadataChanged', build, loaded.resourceVersion);
    if (this.config.metadataSyncInterval > 0) this.scheduleSync();
    await this.startWorkers();
  }

  /** What the builds at boot and after another instance's change refresh (ReloadKeyDef.onSync). */
  private syncReload(): ReloadSpec {
    return Object.fromEntries(this.reloadKeys.filter((r) => r.onSync).map((r) => [r.key, true]));
  }

  private async startWorkers() {
    if (this.workersStarted) return;
    this.workersStarted = true;
    for (const w of this.workers) {
      try {
        await w.start();
      } catch (e) {
        this.log.error('worker', { worker: w.name, plugin: w.plugin, message: 'worker failed to start', error: errorDetail(e) });
      }
    }
  }

  /** Stops sync and workers, runs shutdown hooks (pools). Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    await this.lock.run(async () => {});
    for (const w of [...this.workers].reverse()) {
      try {
        await w.stop();
      } catch (e) {
        this.log.error('worker', { worker: w.name, message: 'worker failed to stop', error: errorDetail(e) });
      }
    }
    for (const fn of [...this.shutdownFns].reverse()) {
      try {
        await fn();
      } catch (e) {
        this.log.error('shutdown', { message: 'shutdown hook failed', error: errorDetail(e) });
      }
    }
  }

  private scheduleSync() {
    this.syncTimer = setTimeout(async () => {
      try {
        await this.syncFromCatalog();
      } catch (e) {
        this.log.warn('metadata-sync', { message: 'could not poll the catalog', error: errorDetail(e) });
      }
      if (!this.stopped) this.scheduleSync();
    }, this.config.metadataSyncInterval);
    this.syncTimer.unref();
  }

  /** Catches up with changes other instances made (metadata, or a source's schema), rebuilding.
   * Returns whether it did. */
  async syncFromCatalog(): Promise<boolean> {
    const stamp = await this.catalog.stamp();
    if (!this.committed || this.isCurrent(stamp)) return false;
    return this.lock.run(() => this.syncLocked());
  }

  private isCurrent(stamp: Stamp): boolean {
    return stamp.resourceVersion === this.committed!.resourceVersion && stamp.epoch === this.committed!.epoch;
  }

  private async syncLocked(): Promise<boolean> {
    const stamp = await this.catalog.stamp();
    if (this.isCurrent(stamp)) return false;
    const c = this.committed!;
    const loaded = stamp.resourceVersion !== c.resourceVersion ? await this.catalog.load() : { metadata: c.metadata, resourceVersion: c.resourceVersion, epoch: stamp.epoch };
    const metadata = loaded.metadata === c.metadata ? c.metadata : this.normalizeStored(loaded.metadata);
    const uow = new UnitOfWork();
    // Another instance changed the metadata or a source's schema (run_sql): refresh what the
    // plugins refresh then (the database plugin's sources).
    const build = await runBuild(this.steps, metadata, c.build, this.syncReload(), uow, this.log);
    await uow.commit();
    this.committed = { metadata, resourceVersion: loaded.resourceVersion, epoch: loaded.epoch, build };
    this.log.info('metadata-sync', { message: 'rebuilt after a change made by another instance', resource_version: loaded.resourceVersion, epoch: loaded.epoch });
    this.events.emit('metadataChanged', build, loaded.resourceVersion);
    return true;
  }

  private authenticator: Authenticator | undefined;
  /** The authentication mode a plugin provides, if any (Note [Authentication modes]). */
  private authModeOf: { mode: AuthMode; plugin: string } | undefined;

  /** The server's session resolver (core/auth), built on first use. */
  get auth(): Authenticator {
    this.authenticator ??= new Authenticator({ adminSecret: this.config.adminSecret, unauthorizedRole: this.config.unauthorizedRole }, this.authModeOf?.mode);
    return this.authenticator;
  }

  /** The session of a request: admin secret, JWT or webhook (Note [Resolution order] in
   * core/auth/session.ts). `request`: the GraphQL request, which webhook POST mode sends. */
  authenticate(headers: Headers | Iterable<[string, string]>, request?: unknown): Promise<Session> {
    return this.auth.resolve(headers, request);
  }

  /** Synchronous resolution for callers that cannot wait: a token or the hook is refused as not
   * admin (Authenticator.resolveSync); use `authenticate`. */
  session(headers: Headers): Session {
    return this.auth.resolveSync(headers);
  }

  state(): Committed {
    if (!this.committed) throw new Error('kernel not started');
    return this.committed;
  }

  // -------------------------------------------------------------------------------------------
  // Documents

  emptyDocument(): Metadata {
    const md: Metadata = { version: 3 };
    for (const s of this.sortedSections()) md[s.key] = s.empty();
    return md;
  }

  sortedSections(): SectionDef[] {
    return [...this.sections.values()].sort((a, b) => a.order - b.order);
  }

  /** The catalog rows of a document: one per section, or per element of a section that splits
   * itself (Note [Catalog parts] in core/catalog/store.ts). */
  private splitDocument(md: Metadata): Part[] {
    const parts: Part[] = [];
    for (const [key, value] of Object.entries(md)) {
      const children = this.splitSection(key, value);
      if (!children) {
        parts.push([key, value]);
        continue;
      }
      parts.push([key, null]);
      for (const c of this.prefixedParts(key, children)) parts.push(c);
    }
    return parts;
  }

  /** A section's parts with their keys prefixed (`prefixed`): the parts of the last split's run
   * of unchanged parts are taken from it, not looked up one by one (lib/lists.ts). */
  private prefixedParts(section: string, children: Part[]): Part[] {
    const last = this.lastSplit.get(section);
    const parts = mapChanged(last?.children, last?.parts, children, (c) => prefixed(section, c));
    this.lastSplit.set(section, { children, parts });
    return parts;
  }
  private readonly lastSplit = new Map<string, { children: Part[]; parts: Part[] }>();

  /** A section's catalog rows, or null to store it as one row: when it does not split itself, or
   * when it belongs to a disabled plugin and was not validated (replace_metadata keeps such
   * sections as they are), so that its split cannot cope with it. */
  private splitSection(key: string, value: unknown): [string, unknown][] | null {
    const own = this.sections.get(key)?.split;
    if (own) return own(value);
    const stored = this.storedSections.get(key)?.split;
    if (!stored) return null;
    try {
      const children = stored(value);
      return new Set(children.map(([child]) => child)).size === children.length ? children : null;
    } catch {
      return null;
    }
  }

  private joinDocument(parts: Part[]): Metadata {
    const md: Record<string, unknown> = {};
    const children = new Map<string, Part[]>();
    for (const [key, value] of parts) {
      const slash = key.indexOf('/');
      if (slash < 0) {
        md[key] = value;
        continue;
      }
      const section = key.slice(0, slash);
      let list = children.get(section);
      if (!list) children.set(section, (list = []));
      list.push([key.slice(slash + 1), value]);
    }
    // A split section is stored as a null row followed by its children's rows.
    for (const s of [...this.sections.values(), ...this.storedSections.values()]) {
      if (s.join && md[s.key] === null) md[s.key] = s.join(children.get(s.key) ?? []);
    }
    return md as Metadata;
  }

  /** Stored documents are trusted; only fill in missing sections. */
  private normalizeStored(md: Metadata): Metadata {
    const out: Metadata = { ...md, version: md.version ?? 3 };
    for (const s of this.sections.values()) if (out[s.key] === undefined) out[s.key] = s.empty();
    return out;
  }

  /** Validates and normalises a client-supplied document (replace_metadata). */
  parseDocument(doc: unknown, path: string, current: Metadata = this.state().metadata): Metadata {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
      throw new SvcError('parse-failed', 'parsing Metadata failed, expected Object', { path });
    }
    const src = doc as Record<string, unknown>;
    const version = src.version ?? 1;
    if (version !== 1 && version !== 2 && version !== 3) {
      throw new SvcError('parse-failed', `unexpected metadata version: ${JSON.stringify(version)}`, { path: `${path}.version` });
    }
    const out: Metadata = { version: 3 };
    for (const s of this.sortedSections()) {
      const raw = s.fromDocument ? s.fromDocument(src, version as number, current) : src[s.key];
      out[s.key] = raw === undefined || raw === null ? s.empty() : s.schema ? parseWith(s.schema, raw, `${path}.${s.key}`) : raw;
    }
    // Sections no enabled plugin owns (a disabled plugin's, or newer) are kept as they are.
    const consumed = new Set(['version', ...[...this.sections.values()].flatMap((s) => s.legacyKeys ?? [])]);
    for (const [key, val] of Object.entries(src)) if (!(key in out) && !consumed.has(key)) out[key] = val;
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  /** Executes one metadata/legacy request: parses its items, checks the caller may run them, and
   * runs the pipeline, under the metadata lock when an item mutates. Returns the response body. */
  async execute(endpoint: Endpoint, body: unknown, session: Session): Promise<unknown> {
    const env = parseEnvelope(body);
    const argsBase = endpoint === 'metadata' ? '$.args' : '$';
    // A caller who may run nothing on this endpoint is refused before its request is read: as in
    // Hasura, a non-admin gets access-denied for any operation type (another backend's too), and
    // learns nothing of which types or arguments this server knows.
    if (!session.isAdmin && !this.registry.openToRoles(endpoint)) {
      throw new SvcError('access-denied', 'restricted access : admin only', { path: '$.args' });
    }
    if (env.dryRun) return this.dryRun(endpoint, env, argsBase, session);
    const items = resolveItems(this.registry, endpoint, env, argsBase);
    this.checkAccess(items, session);
    const mutates = items.some((it) => it.op.mutates);
    if (!mutates) return this.pipeline.apply(endpoint, env, items, session, false);
    return this.lock.run(async () => {
      // Catch up with other instances before deciding anything (cheap: one small row).
      await this.syncLocked();
      return this.pipeline.apply(endpoint, env, items, session, true);
    });
  }

  private checkAccess(items: Items, session: Session): void {
    for (const it of items) {
      if (it.op.adminOnly !== false && !session.isAdmin) {
        throw new SvcError('access-denied', 'restricted access : admin only', { path: '$.args' });
      }
    }
  }

  /**
   * A dry run (Note [Dry runs] in ./pipeline.ts): the request's own errors, from its items' args
   * on, are in the report; who may run it and whether its items can be dry-run are checked as
   * for the request itself, and refused as errors.
   */
  private async dryRun(endpoint: Endpoint, env: Envelope, argsBase: string, session: Session): Promise<DryRunReport> {
    let items: Items;
    try {
      items = resolveItems(this.registry, endpoint, env, argsBase);
    } catch (e) {
      if (!(e instanceof SvcError)) throw e;
      // The type or the args: what the request would answer, tried or not.
      return { dry_run: true, would_succeed: false, status: e.status, response: e.toBody(), diff: null, inconsistencies_added: null, inconsistencies_removed: null };
    }
    this.checkAccess(items, session);
    items.forEach((it, i) => {
      const why = it.op.dryRun === false ? 'its effects cannot be undone' : it.op.dryRun?.(it.args as never);
      if (why === undefined) return;
      const name = endpoint === 'query' ? (it.op.legacy ?? it.op.type) : (it.op.type ?? it.op.legacy);
      throw new SvcError('not-supported', `operation "${name}" cannot be dry-run: ${why}`, { path: items.bulk ? (it.at ?? `${argsBase}[${i}]`).replace(/\.args$/, '') : '$.dry_run' });
    });
    if (!items.some((it) => it.op.mutates)) return this.pipeline.dryRun(endpoint, env, items, session, false);
    return this.lock.run(async () => {
      await this.syncLocked();
      return this.pipeline.dryRun(endpoint, env, items, session, true);
    });
  }

  /** The export of the committed metadata (v1 shape). */
  exportCurrent(): Record<string, unknown> {
    return exportMetadata(this.state().metadata, this.sortedSections());
  }

  /** Lists the operation names, for diagnostics. */
  operationNames(endpoint: Endpoint): string[] {
    return this.registry.names(endpoint);
  }
}

export { OrderError };

/** A section's part with its key prefixed by the section's, made once per part object: a
 * section that splits itself returns the same part objects for its unchanged elements (the
 * database plugin's tables), so a save at thousands of tables makes no new rows for them, and
 * the catalog compares them by reference (Note [Catalog parts]). */
function prefixed(section: string, part: Part): Part {
  const hit = prefixedParts.get(part);
  if (hit && hit.section === section) return hit.part;
  const made: Part = [`${section}/${part[0]}`, part[1]];
  prefixedParts.set(part, { section, part: made });
  return made;
}
const prefixedParts = new WeakMap<Part, { section: string; part: Part }>();
