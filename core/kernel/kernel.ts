/**
 * The kernel: plugin boot order, registries, the committed state (metadata, resource_version,
 * build) and the metadata change pipeline (ARCHITECTURE steps 1-5). It knows no feature.
 */
import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import { TypedEmitter } from 'tiny-typed-emitter';
import * as v from 'valibot';
import type postgres from 'postgres';
import type {
  BuildResult,
  BuildStepDef,
  Endpoint,
  KernelApi,
  KernelEvents,
  Metadata,
  OperationContext,
  OperationDef,
  OperationResult,
  PluginDef,
  ReloadSpec,
  RouteDef,
  SchemaContributorDef,
  SectionDef,
  Session,
  Token,
  WorkerDef,
} from '../plugin.js';
import type { ServerConfig } from '../config.js';
import { errorDetail, type Logger } from '../log.js';
import { SvcError } from '../errors.js';
import { resolveSession } from '../auth/session.js';
import { orderByDeps, OrderError } from './order.js';
import { OperationRegistry } from '../registry/registry.js';
import { CatalogStore, type Part, type Stamp } from '../catalog/store.js';
import { newInconsistencies, publicInconsistency, runBuild } from '../schema-cache/build.js';
import { UnitOfWork } from '../uow.js';
import { parseEnvelope, type Envelope } from '../envelope/envelope.js';
import { parseWith } from '../validation.js';
import { Mutex } from './mutex.js';
import { registerMetadataOperations } from './metadata-ops.js';
import { exportMetadata } from './document.js';

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

interface Committed {
  metadata: Metadata;
  resourceVersion: number;
  /** The catalog epoch this build saw (see CatalogState.epoch). */
  epoch: number;
  build: BuildResult;
}

export class Kernel {
  readonly config: ServerConfig;
  readonly env: Record<string, string | undefined>;
  readonly log: Logger;
  readonly events = new TypedEmitter<KernelEvents>();
  readonly registry = new OperationRegistry();
  readonly sections = new Map<string, SectionDef>();
  readonly contributors: (SchemaContributorDef & { plugin: string })[] = [];
  readonly routes: (RouteDef & { plugin: string })[] = [];
  readonly workers: (WorkerDef & { plugin: string })[] = [];
  readonly plugins: string[] = [];
  readonly disabledPlugins: string[] = [];
  private steps: BuildStepDef[] = [];
  private readonly rawSteps: (BuildStepDef & { plugin: string })[] = [];
  private readonly container: DependencyContainer = rootContainer.createChildContainer();
  private readonly shutdownFns: (() => void | Promise<void>)[] = [];
  private readonly catalog: CatalogStore;
  private readonly lock = new Mutex();
  private committed: Committed | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private workersStarted = false;
  private stopped = false;
  readonly api: KernelApi;

  private constructor(private readonly opts: KernelOptions) {
    this.config = opts.config;
    this.env = opts.env ?? process.env;
    this.log = opts.log;
    this.catalog = new CatalogStore(opts.catalogSql, { split: (md) => this.splitDocument(md), join: (parts) => this.joinDocument(parts) }, opts.catalogSchema);
    this.api = this.makeApi('kernel');
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
    // Disabled plugins: record their operation names only, so callers get `not-supported`.
    for (const p of opts.plugins.filter((q) => disabled.has(q.name))) {
      k.disabledPlugins.push(p.name);
      try {
        await p.setup(k.recorderApi(p.name));
      } catch {
        /* a disabled plugin's setup may need services that are absent; its names are best effort */
      }
    }
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
      route: (def) => k.routes.push({ ...def, plugin }),
      worker: (def) => k.workers.push({ ...def, plugin }),
      provide: <T>(t: Token<T>, value: T) => {
        if (k.container.isRegistered(t.key)) throw new BootError(`service "${t.key}" is provided twice`);
        k.container.register(t.key, { useValue: value });
      },
      use: <T>(t: Token<T>): T => {
        if (!k.container.isRegistered(t.key)) throw new BootError(`plugin "${plugin}" uses service "${t.key}", which no enabled plugin provides`);
        return k.container.resolve<T>(t.key);
      },
      state: () => k.state(),
      execute: (endpoint, body, session) => k.execute(endpoint, body, session),
      session: (headers) => k.session(headers),
      onShutdown: (fn) => k.shutdownFns.push(fn),
    };
  }

  private recorderApi(plugin: string): KernelApi {
    const api = this.makeApi(plugin);
    const noop = () => {};
    return {
      ...api,
      operation: (def) => this.registry.addDisabled(def as OperationDef, plugin),
      metadataSection: noop,
      buildStep: noop,
      schemaContributor: noop,
      route: noop,
      worker: noop,
      provide: noop,
      onShutdown: noop,
    };
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
    const build = await runBuild(this.steps, metadata, undefined, { sources: true }, uow, this.log);
    await uow.commit();
    this.committed = { metadata, resourceVersion: loaded.resourceVersion, epoch: loaded.epoch, build };
    if (build.inconsistencies.length) {
      this.log.warn('metadata', { message: 'inconsistent objects in metadata', inconsistent_objects: build.inconsistencies.map(publicInconsistency) });
    }
    this.events.emit('metadataChanged', build, loaded.resourceVersion);
    if (this.config.metadataSyncInterval > 0) this.scheduleSync();
    await this.startWorkers();
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
    // Another instance changed the metadata or a source's schema (run_sql): refresh the sources.
    const build = await runBuild(this.steps, metadata, c.build, { sources: true }, uow, this.log);
    await uow.commit();
    this.committed = { metadata, resourceVersion: loaded.resourceVersion, epoch: loaded.epoch, build };
    this.log.info('metadata-sync', { message: 'rebuilt after a change made by another instance', resource_version: loaded.resourceVersion, epoch: loaded.epoch });
    this.events.emit('metadataChanged', build, loaded.resourceVersion);
    return true;
  }

  /** Resolves the session of a request from its headers (admin secret; JWT/webhook later). */
  session(headers: Headers): Session {
    const pairs: [string, string][] = [];
    headers.forEach((val, key) => pairs.push([key, val]));
    return resolveSession(pairs, { adminSecret: this.config.adminSecret, unauthorizedRole: this.config.unauthorizedRole });
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
      const split = this.sections.get(key)?.split;
      if (!split) {
        parts.push([key, value]);
        continue;
      }
      parts.push([key, null]);
      for (const [child, v] of split(value)) parts.push([`${key}/${child}`, v]);
    }
    return parts;
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
    for (const [key, s] of this.sections) {
      if (s.join && key in md) md[key] = s.join(children.get(key) ?? []);
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

  /** Executes one metadata/legacy request: the whole pipeline. Returns the response body. */
  async execute(endpoint: Endpoint, body: unknown, session: Session): Promise<unknown> {
    const env = parseEnvelope(body);
    const argsBase = endpoint === 'metadata' ? '$.args' : '$';
    const items = this.resolveItems(endpoint, env, argsBase);
    for (const it of items) {
      if (it.op.adminOnly !== false && !session.isAdmin) {
        throw new SvcError('access-denied', 'restricted access : admin only', { path: '$.args' });
      }
    }
    const mutates = items.some((it) => it.op.mutates);
    if (!mutates) return this.runItems(endpoint, env, items, session, false);
    return this.lock.run(async () => {
      // Catch up with other instances before deciding anything (cheap: one small row).
      await this.syncLocked();
      return this.runItems(endpoint, env, items, session, true);
    });
  }

  private resolveItems(endpoint: Endpoint, env: Envelope, argsBase: string) {
    type Item = { op: OperationDef; args: unknown; version: number };
    const one = (e: Envelope, base: string): Item => {
      const { def } = this.registry.find(endpoint, e.type);
      const versions = def.versions ?? [1];
      const version = e.version ?? (def.inferVersion ? def.inferVersion(e.args, endpoint) : versions[0]!);
      if (!versions.includes(version)) {
        throw new SvcError('parse-failed', `expected ${versions.join(' or ')}, encountered ${version}`, { path: '$.version' });
      }
      const schema = typeof def.args === 'function' ? def.args(version, endpoint) : def.args;
      return { op: def, args: parseWith(schema as v.GenericSchema, e.args, base), version };
    };
    if (env.type === 'bulk' || env.type === 'concurrent_bulk' || env.type === 'bulk_atomic') {
      if (env.version !== undefined && env.version !== 1) {
        throw new SvcError('parse-failed', `expected 1, encountered ${env.version}`, { path: '$.version' });
      }
      if (!Array.isArray(env.args)) {
        throw new SvcError('parse-failed', 'parsing [] failed, expected Array', { path: argsBase });
      }
      const out: Item[] = [];
      env.args.forEach((inner, i) => {
        const ie = parseEnvelope(inner, `${argsBase}[${i}]`);
        if (ie.type === 'bulk') {
          out.push(...this.resolveItems(endpoint, ie, `${argsBase}[${i}].args`));
          return;
        }
        out.push(one(ie, endpoint === 'metadata' ? `${argsBase}[${i}].args` : '$'));
      });
      return Object.assign(out, { bulk: true as const });
    }
    return [one(env, argsBase)];
  }

  private async runItems(
    endpoint: Endpoint,
    env: Envelope,
    items: { op: OperationDef; args: unknown; version: number }[] & { bulk?: true },
    session: Session,
    locked: boolean,
  ): Promise<unknown> {
    const start = this.state();
    if (env.resourceVersion !== undefined && env.resourceVersion !== start.resourceVersion) {
      throw new SvcError(
        'conflict',
        `metadata resource version referenced (${env.resourceVersion}) did not match current version`,
        { path: '$' },
      );
    }
    const uow = new UnitOfWork();
    let draft = start.metadata;
    let changed = false;
    let bump = false;
    let policy: 'new' | 'any' | 'allow' = 'new';
    const reload: ReloadSpec = {};
    const defined = new Set<string>();
    const responses: OperationResult['response'][] = [];
    try {
      for (const it of items) {
        const ctx: OperationContext = {
          metadata: draft,
          version: it.version,
          session,
          endpoint,
          uow,
          current: start.build,
          resourceVersion: start.resourceVersion,
          kernel: this.api,
          build: (md, rl = {}) => runBuild(this.steps, md, start.build, rl, uow, this.log),
        };
        const res = await it.op.run(it.args as never, ctx);
        if (res.metadata && res.metadata !== draft) {
          if (!locked) throw new Error(`operation ${it.op.type ?? it.op.legacy} changed metadata but is declared mutates: false`);
          draft = res.metadata;
          changed = true;
        }
        for (const id of res.defines ?? []) defined.add(id);
        if (res.bumpVersion) bump = true;
        if (res.inconsistencies === 'allow' || (res.inconsistencies === 'any' && policy === 'new')) policy = res.inconsistencies;
        for (const [kind, spec] of Object.entries(res.reload ?? {})) {
          const prev = reload[kind];
          reload[kind] = prev === true || spec === true ? true : [...(prev ?? []), ...spec];
        }
        responses.push(res.response);
      }

      let build = start.build;
      let resourceVersion = start.resourceVersion;
      if (changed || bump || Object.keys(reload).length > 0) {
        build = await runBuild(this.steps, draft, start.build, reload, uow, this.log);
        const offending = policy === 'any' ? build.inconsistencies : policy === 'new' ? newInconsistencies(start.build, build) : [];
        const fatal = offending.find((o) => o.error);
        if (fatal) throw new SvcError(fatal.error!.code, fatal.reason, { path: '$.args', status: fatal.error!.status });
        const own = offending.filter((o) => defined.has(o.id));
        if (own.length > 0) {
          throw new SvcError('invalid-configuration', own.map((o) => o.reason).join(', '), {
            path: '$.args',
            internal: own.map(publicInconsistency),
          });
        }
        if (offending.length > 0) {
          throw new SvcError('unexpected', policy === 'any' ? 'cannot continue due to inconsistent metadata' : 'cannot continue due to new inconsistent metadata', {
            path: '$.args',
            internal: offending.map(publicInconsistency),
          });
        }
        let epoch = start.epoch;
        if (changed || bump) {
          const saved = await this.catalog.save(draft, start.resourceVersion, () => uow.commit());
          if (saved === null) {
            throw new SvcError('conflict', 'metadata resource version referenced did not match current version', { path: '$' });
          }
          resourceVersion = saved;
        } else {
          // The sources changed (run_sql) but not the metadata: tell other instances. If another
          // instance bumped the epoch meanwhile, keep the old one so the next sync rebuilds.
          const bumped = await this.catalog.bumpEpoch(() => uow.commit());
          if (bumped === start.epoch + 1) epoch = bumped;
        }
        this.committed = { metadata: draft, resourceVersion, epoch, build };
        this.events.emit('metadataChanged', build, resourceVersion);
      } else {
        await uow.commit();
      }
      const out = responses.map((r) => (typeof r === 'function' ? (r as (b: BuildResult) => unknown)(build) : r));
      return items.bulk ? out : out[0];
    } catch (e) {
      await uow.rollback();
      throw e;
    }
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
