/**
 * The metadata change pipeline (ARCHITECTURE "The metadata change pipeline (the heart)"), as the
 * named steps it is made of. Kernel.execute is the entry: it resolves the items (below), checks
 * that the caller may run them (admin only, unless an operation says otherwise), and when one of
 * them mutates, takes the metadata lock and catches up with other instances first. The steps:
 *
 *   resolveItems      parse the envelope (one item, or the items of a bulk) and validate each
 *                     item's args against its operation                               (step 1)
 *   apply             the request: checks the client's resource_version, then
 *     run             runs the items, one after the other, on one draft               (step 2)
 *     buildAndCheck   builds the draft and applies the inconsistency policy           (step 3)
 *     commit          writes the catalog (or bumps its epoch) with the unit of work   (step 4)
 *     swap            installs the committed state and tells the plugins              (step 5)
 *   and answers each item's response, some of which are functions of the new build.
 *
 * A bulk goes through build, commit and swap once: all or nothing, one build, one write. Every
 * failure from run to commit rolls the unit of work back (Note [Unit of work] in core/uow.ts); the
 * steps after a failure do not run, so nothing is written and nothing is swapped.
 *
 * Note [Dry runs]
 * `"dry_run": true` beside `type` and `args` (on the outer request of a bulk; either endpoint)
 * asks what the request would do. The kernel runs it as it would (`dryRun` below): the same
 * lock and catch-up with other instances, the same resource_version check, the items' run with
 * `ctx.dryRun`, the build and the inconsistency policy; but its unit of work never commits
 * (`new UnitOfWork(true)`: commit() rolls back) and it stops before step 4. So the catalog is not
 * written (no new resource_version, no epoch bump, no catalog extension hears of it), nothing is swapped and no
 * plugin hears `metadataChanged`: other instances see nothing, and no worker (event delivery,
 * cron slots) sees a change. SQL run through the unit of work (run_sql, the legacy data
 * operations, event capture that a build installs, an operation's writes to its own tables) is
 * rolled back. That is one rule for every operation, not a case per operation: an operation that
 * writes elsewhere writes through the unit of work when `ctx.dryRun` says so (cron triggers and
 * scheduled events), or declares that it cannot be dry-run (`OperationDef.dryRun`: run_sql with
 * `no_transaction`), which refuses the request with 400 `not-supported` naming it.
 *
 * The answer is 200 `{dry_run: true, would_succeed, status, response, diff,
 * inconsistencies_added, inconsistencies_removed}`: `response` is the request's answer, or its
 * error body with `status` the HTTP status it would have had; `diff` the change of the exported
 * document (lib/diff.ts); the inconsistencies those of the build against the committed
 * one. When the request fails before its draft is built, the last three are null. Errors about
 * the dry run itself (a malformed envelope or `dry_run`, a caller who may not run an item, an
 * item that cannot be dry-run) are answered as errors.
 *
 * Not undone, as a rolled back transaction does not undo them: sequence values that the SQL took;
 * the engine's own tables that build steps create when missing (as at every boot); the connection
 * pool of a source the draft adds (closed at the next metadata change); requests that read
 * remote servers (a remote schema's introspection).
 */
import type * as v from 'valibot';
import type { TypedEmitter } from 'tiny-typed-emitter';
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
  ReloadSpec,
  Session,
} from '../plugin.js';
import type { Logger } from '../log.js';
import { SvcError } from '../errors.js';
import type { OperationRegistry } from '../registry/registry.js';
import type { CatalogStore, VersionRecord } from '../catalog/store.js';
import { newInconsistencies, publicInconsistency, runBuild } from '../schema-cache/build.js';
import { diffDocuments, type Change } from '../../lib/diff.js';
import { UnitOfWork } from '../uow.js';
import { parseEnvelope, type Envelope } from '../envelope/envelope.js';
import { parseWith } from '../validation.js';

/** The state requests are served from: what the catalog holds and its build. */
export interface Committed {
  metadata: Metadata;
  resourceVersion: number;
  /** The catalog epoch this build saw (see CatalogState.epoch). */
  epoch: number;
  build: BuildResult;
}

/** One operation of a request, with its validated args. */
export interface Item {
  op: OperationDef;
  args: unknown;
  version: number;
  /** Where a bulk's item has its args (`$.args[1].args`): errors about the objects it defines
   * point there, as Hasura's do. */
  at?: string;
}

/** A `resource_version` given on an item inside a bulk, and where. */
export interface VersionCheck {
  resourceVersion: number;
  path: string;
}

/** The items of a request; a bulk's answer is a list, and carries its inner resource_versions. */
export type Items = Item[] & { bulk?: true; versions?: VersionCheck[] };

export type InconsistencyPolicy = NonNullable<OperationResult['inconsistencies']>;

/** What the run step leaves for the others: the draft and what the operations asked for. */
export interface Draft {
  /** The committed state the draft started from (the CAS expects its resource_version). */
  readonly start: Committed;
  /** The request's source work, committed with the catalog write or rolled back. */
  readonly uow: UnitOfWork;
  metadata: Metadata;
  /** Some operation returned another document. */
  changed: boolean;
  /** Some operation asked for a new resource_version even without a change (reload_metadata). */
  bump: boolean;
  policy: InconsistencyPolicy;
  /** External state the build must refresh (sources whose schema run_sql changed, ...). */
  reload: ReloadSpec;
  /** Ids of the objects the operations define (OperationResult.defines), with where the
   * operation that defines each is (a bulk's item), when it is not the request itself. */
  defined: Map<string, string | undefined>;
  responses: OperationResult['response'][];
  /** Who makes the version this request makes, for the catalog's extensions (Note [Catalog
   * extensions] in core/catalog/store.ts). */
  record: VersionRecord;
}

/** The answer to a dry run (Note [Dry runs]). */
export interface DryRunReport {
  dry_run: true;
  would_succeed: boolean;
  status: number;
  response: unknown;
  diff: Change[] | null;
  inconsistencies_added: Record<string, unknown>[] | null;
  inconsistencies_removed: Record<string, unknown>[] | null;
}

/** What the pipeline needs of the kernel. */
export interface PipelineHost {
  /** The build steps in dependency order (read per request: the kernel orders them once every
   * plugin is set up, after the pipeline is made). */
  steps(): readonly BuildStepDef[];
  readonly log: Logger;
  /** Given to operations as `ctx.kernel`. */
  readonly api: KernelApi;
  readonly events: TypedEmitter<KernelEvents>;
  readonly catalog: CatalogStore;
  committed(): Committed;
  install(next: Committed): void;
  /** The exported form of a document (what dry runs diff). */
  exportDocument(md: Metadata): Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Step 1: the items of a request

/** The operations of a request, found by type (and version) and with their args validated; a
 * bulk's (nested bulks flattened) with the resource_versions given on its items. */
export function resolveItems(registry: OperationRegistry, endpoint: Endpoint, env: Envelope, argsBase: string, dryRun = env.dryRun): Items {
  const one = (e: Envelope, base: string): Item => {
    const { def } = registry.find(endpoint, e.type);
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
    // `resource_version` given on an inner request is checked like the outer one, for the whole
    // bulk (checkResourceVersions): ignoring it would apply a change its sender meant to be
    // conditional.
    const versions: VersionCheck[] = [];
    env.args.forEach((inner, i) => {
      const ie = parseEnvelope(inner, `${argsBase}[${i}]`);
      // A dry run is the whole request's: one item cannot be tried while the others are done.
      if (ie.dryRun && !dryRun) {
        throw new SvcError('not-supported', 'dry_run applies to a whole request: give it beside the type "bulk", not on one of its requests', { path: `${argsBase}[${i}].dry_run` });
      }
      if (ie.resourceVersion !== undefined) versions.push({ resourceVersion: ie.resourceVersion, path: `${argsBase}[${i}]` });
      if (ie.type === 'bulk') {
        const nested = resolveItems(registry, endpoint, ie, `${argsBase}[${i}].args`, dryRun);
        out.push(...nested);
        versions.push(...(nested.versions ?? []));
        return;
      }
      // (The legacy endpoint parses args at `$`, but Hasura names the item `$.args[i].args` there too.)
      out.push({ ...one(ie, endpoint === 'metadata' ? `${argsBase}[${i}].args` : '$'), at: `${argsBase === '$' ? '$.args' : argsBase}[${i}].args` });
    });
    return Object.assign(out, { bulk: true as const, versions });
  }
  return [one(env, argsBase)];
}

/** The client's optimistic lock: the envelope's resource_version, then those of a bulk's items,
 * must be the one the draft starts from. */
export function checkResourceVersions(env: Envelope, items: Items, current: number): void {
  if (env.resourceVersion !== undefined && env.resourceVersion !== current) {
    throw new SvcError(
      'conflict',
      `metadata resource version referenced (${env.resourceVersion}) did not match current version`,
      { path: '$' },
    );
  }
  for (const inner of items.versions ?? []) {
    if (inner.resourceVersion !== current) {
      throw new SvcError('conflict', `metadata resource version referenced (${inner.resourceVersion}) did not match current version`, { path: inner.path });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Step 3's policy

/**
 * Rejects a build that the draft's policy does not accept, with the most precise error: an
 * offending object that carries its own error code (e.g. conflicting root fields), then the
 * objects the operations define (Hasura's `invalid-configuration` with their reasons), then the
 * generic error listing every offending object. `new` judges only what the previous build did
 * not already have, so an operation is not blamed for older inconsistencies.
 */
export function checkInconsistencies(previous: BuildResult, build: BuildResult, policy: InconsistencyPolicy, defined: ReadonlySet<string> | ReadonlyMap<string, string | undefined>): void {
  const offending = policy === 'any' ? build.inconsistencies : policy === 'new' ? newInconsistencies(previous, build) : [];
  const fatal = offending.find((o) => o.error);
  if (fatal) {
    const { code, status, message } = fatal.error!;
    throw new SvcError(code, message ?? fatal.reason, { path: '$.args', status, ...(message ? { internal: offending.map(publicInconsistency) } : {}) });
  }
  const own = offending.filter((o) => defined.has(o.id));
  if (own.length > 0) {
    const at = defined instanceof Map ? (defined.get(own[0]!.id) as string | undefined) : undefined;
    throw new SvcError('invalid-configuration', own.map((o) => o.reason).join(', '), {
      path: at ?? '$.args',
      internal: own.map(publicInconsistency),
    });
  }
  if (offending.length > 0) {
    throw new SvcError('unexpected', policy === 'any' ? 'cannot continue due to inconsistent metadata' : 'cannot continue due to new inconsistent metadata', {
      path: '$.args',
      internal: offending.map(publicInconsistency),
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The pipeline

export class MetadataPipeline {
  constructor(private readonly host: PipelineHost) {}

  /**
   * Runs a request's items and, when they change anything, builds, commits and swaps in the
   * result. `locked` says the caller holds the metadata lock (some item mutates); without it an
   * item that changes the metadata is a bug in its plugin.
   */
  async apply(endpoint: Endpoint, env: Envelope, items: Items, session: Session, locked: boolean): Promise<unknown> {
    const start = this.host.committed();
    checkResourceVersions(env, items, start.resourceVersion);
    const uow = new UnitOfWork();
    try {
      const draft = await this.run(start, uow, items, endpoint, session, locked);
      if (!needsBuild(draft)) {
        // A read, or source work that changed no schema (run_sql DML): nothing to build or
        // write, so the unit of work commits on its own and the responses see the current build.
        await uow.commit();
        return respond(draft, start.build, items, start.resourceVersion);
      }
      const build = await this.buildAndCheck(draft);
      const next = await this.commit(draft, build);
      this.swap(next);
      return respond(draft, next.build, items, next.resourceVersion);
    } catch (e) {
      // After a commit the unit of work is done and this is a no-op.
      await uow.rollback();
      throw e;
    }
  }

  /**
   * A dry run (Note [Dry runs]): steps 1 to 3 with a unit of work that never commits, and the
   * report of what the request would have done. Errors of the request are the report's; others
   * (a bug) are thrown as they would be.
   */
  async dryRun(endpoint: Endpoint, env: Envelope, items: Items, session: Session, locked: boolean): Promise<DryRunReport> {
    const start = this.host.committed();
    const uow = new UnitOfWork(true);
    let draft: Draft | undefined;
    let build: BuildResult | undefined;
    const report = (ok: boolean, status: number, response: unknown): DryRunReport => {
      const known = draft !== undefined && (build !== undefined || !needsBuild(draft));
      const before = new Set(start.build.inconsistencies.map((o) => o.id));
      const after = new Set((build ?? start.build).inconsistencies.map((o) => o.id));
      return {
        dry_run: true,
        would_succeed: ok,
        status,
        response,
        diff: known ? (draft!.changed ? diffDocuments(this.host.exportDocument(start.metadata), this.host.exportDocument(draft!.metadata)) : []) : null,
        inconsistencies_added: known ? (build ?? start.build).inconsistencies.filter((o) => !before.has(o.id)).map(publicInconsistency) : null,
        inconsistencies_removed: known ? start.build.inconsistencies.filter((o) => !after.has(o.id)).map(publicInconsistency) : null,
      };
    };
    try {
      checkResourceVersions(env, items, start.resourceVersion);
      draft = await this.run(start, uow, items, endpoint, session, locked, true);
      if (needsBuild(draft)) {
        build = await runBuild(this.host.steps(), draft.metadata, start.build, draft.reload, uow, this.host.log);
        checkInconsistencies(start.build, build, draft.policy, draft.defined);
      }
      const rv = draft.changed || draft.bump ? start.resourceVersion + 1 : start.resourceVersion;
      return report(true, 200, respond(draft, build ?? start.build, items, rv));
    } catch (e) {
      if (!(e instanceof SvcError)) throw e;
      return report(false, e.status, e.toBody());
    } finally {
      await uow.rollback();
    }
  }

  /** Step 2: runs the items in order, each on the draft the previous one left, and gathers what
   * they ask of the following steps. Writes nothing but the unit of work's source work. */
  async run(start: Committed, uow: UnitOfWork, items: readonly Item[], endpoint: Endpoint, session: Session, locked: boolean, dryRun = false): Promise<Draft> {
    const draft: Draft = {
      start,
      uow,
      metadata: start.metadata,
      changed: false,
      bump: false,
      policy: 'new',
      reload: {},
      defined: new Map(),
      responses: [],
      record: {
        operations: items.map((it) => (endpoint === 'query' ? (it.op.legacy ?? it.op.type) : (it.op.type ?? it.op.legacy)) ?? ''),
        role: session.role,
      },
    };
    for (const it of items) {
      const ctx: OperationContext = {
        metadata: draft.metadata,
        version: it.version,
        session,
        endpoint,
        uow,
        current: start.build,
        resourceVersion: start.resourceVersion,
        kernel: this.host.api,
        // Against the committed build, so that a trial build reuses what the draft did not touch.
        build: (md, rl = {}) => runBuild(this.host.steps(), md, start.build, rl, uow, this.host.log),
        dryRun,
      };
      const res = await it.op.run(it.args as never, ctx);
      if (res.metadata && res.metadata !== draft.metadata) {
        if (!locked) throw new Error(`operation ${it.op.type ?? it.op.legacy} changed metadata but is declared mutates: false`);
        draft.metadata = res.metadata;
        draft.changed = true;
      }
      for (const id of res.defines ?? []) draft.defined.set(id, it.at);
      if (res.bumpVersion) draft.bump = true;
      // An explicit policy replaces the default `new`; once an item allows inconsistencies
      // (replace_metadata v2 with allow_inconsistent_metadata) a later `any` does not undo it.
      if (res.inconsistencies === 'allow' || (res.inconsistencies === 'any' && draft.policy === 'new')) draft.policy = res.inconsistencies;
      for (const [kind, spec] of Object.entries(res.reload ?? {})) {
        const prev = draft.reload[kind];
        draft.reload[kind] = prev === true || spec === true ? true : [...(prev ?? []), ...spec];
      }
      draft.responses.push(res.response);
    }
    return draft;
  }

  /** Step 3: builds the draft on the committed build (cost follows the change) and rejects it
   * when its policy does not accept the inconsistencies it has. */
  async buildAndCheck(draft: Draft): Promise<BuildResult> {
    const build = await runBuild(this.host.steps(), draft.metadata, draft.start.build, draft.reload, draft.uow, this.host.log);
    checkInconsistencies(draft.start.build, build, draft.policy, draft.defined);
    return build;
  }

  /**
   * Step 4: makes the change durable. A metadata change (or a bump) is a compare-and-set of the
   * catalog on the resource_version the draft started from; when only the sources changed
   * (run_sql DDL), the catalog's epoch is bumped so that other instances rebuild too. Either way
   * the unit of work commits inside the catalog transaction, after the write succeeded and before
   * it commits (Note [Unit of work] in core/uow.ts): a conflict leaves the source work to be
   * rolled back. Returns the state to swap in.
   */
  async commit(draft: Draft, build: BuildResult): Promise<Committed> {
    const { start, uow } = draft;
    if (draft.changed || draft.bump) {
      const saved = await this.host.catalog.save(draft.metadata, start.resourceVersion, () => uow.commit(), draft.record);
      if (saved === null) {
        throw new SvcError('conflict', 'metadata resource version referenced did not match current version', { path: '$' });
      }
      return { metadata: draft.metadata, resourceVersion: saved, epoch: start.epoch, build };
    }
    // If another instance bumped the epoch meanwhile, keep the old one so the next sync rebuilds.
    const bumped = await this.host.catalog.bumpEpoch(() => uow.commit());
    return { metadata: draft.metadata, resourceVersion: start.resourceVersion, epoch: bumped === start.epoch + 1 ? bumped : start.epoch, build };
  }

  /** Step 5: new requests are served from `next` (those in flight keep the state they read), and
   * the plugins hear of it. */
  swap(next: Committed): void {
    this.host.install(next);
    this.host.events.emit('metadataChanged', next.build, next.resourceVersion);
  }
}

/** Whether the items left anything to build: a new document, a bump, or state to refresh. */
function needsBuild(draft: Draft): boolean {
  return draft.changed || draft.bump || Object.keys(draft.reload).length > 0;
}

/** The answer: each item's response (a function gets the build now served and the
 * resource_version); a list for a bulk. */
function respond(draft: Draft, build: BuildResult, items: Items, resourceVersion: number): unknown {
  const out = draft.responses.map((r) => (typeof r === 'function' ? (r as (b: BuildResult, rv: number) => unknown)(build, resourceVersion) : r));
  return items.bulk ? out : out[0];
}
