/**
 * The `event-triggers` build step: checks every event trigger against its table and the
 * environment, records the inconsistent ones, reconciles the SQL side in each source (Note
 * [Reconciling capture] in plugins/postgres/event-capture.ts, through the kind's EventCapture:
 * Note [Event capture]) and gives the worker what it delivers with.
 */
import * as v from '../../core/valibot.js';
import type { BuildContext, BuildResult, InconsistentObject } from '../../core/plugin.js';
import { errorDetail } from '../../core/log.js';
import {
  DEFAULT_SOURCE_KIND,
  qtDisplay,
  qtKey,
  sourcesOf,
  updateTableIfPresent,
  type CaptureDef,
  type DatabaseService,
  type EventCapture,
  type QualifiedTable,
  type SourceConnection,
  type SqlExecutor,
  type TableInfo,
} from '../database/index.js';
import {
  DEFAULT_TIMEOUT_SEC,
  EventTriggerMetaSchema,
  isLegalTriggerName,
  MAX_TRIGGER_NAME_LENGTH,
  namedColumns,
  opKey,
  OPS,
  triggersOf,
  type EventTriggerMeta,
} from './definition.js';
import { EnvError, resolveEnv, resolveHeaders, resolveUrlTemplate } from './webhook.js';
import {
  compileRequestTransform,
  compileResponseTransform,
  TransformError,
  type CompiledRequestTransform,
  type CompiledResponseTransform,
} from '../webhook-transforms/index.js';

export const STEP = 'event-triggers';

/** An event trigger ready to deliver: its webhook and headers resolved from the environment. */
export interface ResolvedTrigger {
  source: string;
  table: QualifiedTable;
  meta: EventTriggerMeta;
  url: string;
  headers: [string, string][];
  numRetries: number;
  intervalSec: number;
  timeoutSec: number;
  /** Hasura's `request_transform` and `response_transform`, compiled (plugins/webhook-transforms). */
  request?: CompiledRequestTransform;
  response?: CompiledResponseTransform;
}

export interface SourceTriggers {
  connection: SourceConnection;
  /** The source kind's capture and event log. */
  capture: EventCapture;
  /** Consistent triggers by name: the ones the worker delivers. */
  triggers: Map<string, ResolvedTrigger>;
  /** What capture was reconciled with; a build whose signature is the same skips it. */
  signature: string;
}

export interface EventTriggersBuild {
  sources: Map<string, SourceTriggers>;
}

export const emptyBuild = (): EventTriggersBuild => ({ sources: new Map() });

export function triggersBuild(build: Pick<BuildResult, 'outputs'>): EventTriggersBuild {
  return (build.outputs.get(STEP) as EventTriggersBuild | undefined) ?? emptyBuild();
}

export const triggerId = (source: string, table: QualifiedTable, name: string) => `event_trigger:${source}:${qtKey(table)}:${name}`;

/** Removes one event trigger from a table entry (drop_inconsistent_metadata, cascades). */
export function removeTrigger(md: Parameters<typeof updateTableIfPresent>[0], source: string, table: QualifiedTable, name: string) {
  return updateTableIfPresent(md, source, table, (t) => ({ ...t, event_triggers: triggersOf(t).filter((x) => x.name !== name) }));
}

/** Problems of a trigger's definition against its table's columns (no environment). */
function definitionProblem(t: EventTriggerMeta, info: TableInfo, defaultSchema: string): string | undefined {
  if (!isLegalTriggerName(t.name)) return 'only alphanumeric and underscore and hyphens allowed for name';
  if (t.name.length > MAX_TRIGGER_NAME_LENGTH) return `event trigger name can be at most ${MAX_TRIGGER_NAME_LENGTH} characters`;
  if (info.relation !== 'table' && info.relation !== 'partitioned_table') return `event triggers can only be defined on tables, "${qtDisplay(info, defaultSchema)}" is not a table`;
  const have = new Set(info.columns.map((c) => c.name));
  for (const c of namedColumns(t)) if (!have.has(c)) return `column "${c}" does not exist`;
  return undefined;
}

export function resolveTrigger(source: string, table: QualifiedTable, t: EventTriggerMeta, env: Readonly<Record<string, string | undefined>>): ResolvedTrigger {
  let url: string;
  if (t.webhook != null && t.webhook_from_env == null) url = resolveUrlTemplate(t.webhook, env);
  else if (t.webhook_from_env != null && t.webhook == null) url = resolveEnv(t.webhook_from_env, env);
  else throw new EnvError('expected webhook or webhook_from_env');
  return {
    source,
    table,
    meta: t,
    url,
    headers: resolveHeaders(t.headers, env),
    numRetries: t.retry_conf.num_retries,
    intervalSec: t.retry_conf.interval_sec,
    timeoutSec: t.retry_conf.timeout_sec ?? DEFAULT_TIMEOUT_SEC,
    ...(t.request_transform ? { request: transform('request_transform', () => compileRequestTransform(t.request_transform!)) } : {}),
    ...(t.response_transform ? { response: transform('response_transform', () => compileResponseTransform(t.response_transform!)) } : {}),
  };
}

/** A transform whose templates do not parse makes the trigger inconsistent (as an unset
 * variable does), with the reason naming the transform. */
function transform<T>(which: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof TransformError) throw new TransformError(e.bundle, `${which}: ${e.message}`);
    throw e;
  }
}

export async function buildEventTriggers(ctx: BuildContext, db: DatabaseService, env: Readonly<Record<string, string | undefined>>): Promise<EventTriggersBuild> {
  const resolved = db.resolved(ctx);
  const previous = ctx.previous ? triggersBuild(ctx.previous) : undefined;
  const out = emptyBuild();
  const reload = ctx.reload.sources;
  for (const source of sourcesOf(ctx.metadata)) {
    const rs = resolved.sources.get(source.name);
    const withTriggers = source.tables.filter((t) => triggersOf(t).length > 0);
    // Tables are named as the source's kind names them (in full when no enabled plugin provides it).
    const defaultSchema = db.defaultSchemaOf(source) ?? '';
    const report = (table: QualifiedTable, t: EventTriggerMeta | { name: string }, reason: string) => {
      const o: InconsistentObject = {
        type: 'event_trigger',
        name: `event_trigger ${t.name} in table ${qtDisplay(table, defaultSchema)} in source ${source.name}`,
        reason: `Inconsistent object: ${reason}`,
        definition: { source: source.name, table, configuration: t },
        id: triggerId(source.name, table, t.name),
        remove: (md) => removeTrigger(md, source.name, table, t.name),
      };
      ctx.inconsistent(o);
    };
    if (!rs?.connection || !rs.introspection) continue; // the source is inconsistent: reported by the framework
    const capture = rs.kind.events;
    if (!capture) {
      for (const t of withTriggers) for (const et of triggersOf(t)) report(t.table, et, `event triggers are not supported on sources of kind "${rs.kind.kind}"`);
      continue;
    }
    const triggers = new Map<string, ResolvedTrigger>();
    const desired: CaptureDef[] = [];
    const names = new Set<string>();
    for (const t of withTriggers) {
      const key = qtKey(t.table);
      const info = rs.introspection.tables.get(key);
      // A table that failed its own checks is reported as such (and its objects with it).
      const reportable = rs.tables.has(key);
      for (const raw of triggersOf(t)) {
        const parsed = v.safeParse(EventTriggerMetaSchema, raw);
        if (!parsed.success) {
          if (reportable) report(t.table, raw as { name: string }, `invalid event trigger definition: ${parsed.issues[0]!.message}`);
          continue;
        }
        const et = parsed.output;
        if (names.has(et.name)) {
          if (reportable) report(t.table, et, `event trigger "${et.name}" is defined more than once in source "${source.name}"`);
          continue;
        }
        names.add(et.name);
        if (!info) continue;
        const problem = definitionProblem(et, info, defaultSchema);
        if (problem) {
          if (reportable) report(t.table, et, `in table "${qtDisplay(t.table, defaultSchema)}": in event trigger "${et.name}": ${problem}`);
          continue;
        }
        // A kind may refuse a capture it cannot make (MSSQL: an update trigger on a table
        // without a primary key): that trigger is inconsistent, the rest go on.
        const defs: CaptureDef[] = [];
        try {
          for (const op of OPS) {
            const spec = et.definition[opKey(op)];
            if (spec) defs.push(capture.define(et.name, t.table, op, spec, info));
          }
        } catch (e) {
          if (reportable) report(t.table, et, `in table "${qtDisplay(t.table, defaultSchema)}": in event trigger "${et.name}": ${(e as Error).message}`);
          continue;
        }
        desired.push(...defs);
        if (!reportable) continue;
        try {
          triggers.set(et.name, resolveTrigger(source.name, t.table, et, env));
        } catch (e) {
          if (!(e instanceof EnvError) && !(e instanceof TransformError)) throw e;
          report(t.table, et, `in table "${qtDisplay(t.table, defaultSchema)}": in event trigger "${et.name}": ${e.message}`);
        }
      }
    }
    const signature = desired.map((d) => `${d.id}@${qtKey(d.table)}#${d.hash}`).sort().join('\n');
    const before = previous?.sources.get(source.name);
    const reloaded = reload === true || (Array.isArray(reload) && reload.includes(source.name));
    let reconciled = signature;
    if (!before || before.signature !== signature || before.connection !== rs.connection || reloaded || db.inTransaction(ctx.uow, source.name)) {
      try {
        await reconcileSource(ctx, db, capture, source.name, rs.connection, desired, names);
      } catch (e) {
        ctx.log.error('event-trigger', { source: source.name, message: 'could not set up event capture in the source', error: errorDetail(e) });
        reconciled = `failed:${signature}`;
        for (const d of desired) {
          const et = triggers.get(d.trigger);
          if (et) report(et.table, et.meta, `could not set up the event trigger in the source: ${(e as Error).message}`);
          triggers.delete(d.trigger);
        }
      }
    }
    out.sources.set(source.name, { connection: rs.connection, capture, triggers, signature: reconciled });
  }
  if (previous && ctx.previous) await dropLeftSources(ctx, previous, out);
  return out;
}

/** Removes the capture of the sources that left the metadata (Note [Reconciling capture]), in a
 * transaction of the unit of work on their last connection. A failure (the database is gone) is
 * logged: the source is gone from the metadata anyway. */
async function dropLeftSources(ctx: BuildContext, previous: EventTriggersBuild, out: EventTriggersBuild) {
  const now = sourcesOf(ctx.metadata);
  const config = (s: { kind?: string; configuration?: unknown }) => JSON.stringify([s.kind ?? DEFAULT_SOURCE_KIND, s.configuration]);
  for (const [name, before] of previous.sources) {
    if (out.sources.has(name) || now.some((s) => s.name === name)) continue;
    const meta = sourcesOf(ctx.previous!.metadata).find((s) => s.name === name);
    if (!meta || before.signature === '' || now.some((s) => config(s) === config(meta))) continue;
    try {
      const tx = await ctx.uow.get(`event-triggers:left-source:${name}`, async () => {
        const t = await before.connection.transaction();
        return { value: t, resource: t };
      });
      await inSavepoint(before.capture, tx, async () => {
        const r = await before.capture.reconcile(name, tx, async () => tx, [], new Set());
        if (r.changed) ctx.log.info('event-trigger', { source: name, message: 'event capture removed with its source', archived: r.archived });
      });
    } catch (e) {
      ctx.log.warn('event-trigger', { source: name, message: 'could not remove the event capture of a dropped source', error: errorDetail(e) });
    }
  }
}

/** The savepoint the build reconciles in, in the kind's words (EventCapture.savepoint). */
function savepointOf(capture: EventCapture) {
  const sp = capture.savepoint?.(SAVEPOINT) ?? { set: `savepoint ${SAVEPOINT}`, release: `release savepoint ${SAVEPOINT}`, rollback: `rollback to savepoint ${SAVEPOINT}` };
  return {
    set: (tx: SqlExecutor) => tx.query(sp.set),
    release: async (tx: SqlExecutor) => {
      if (sp.release !== null) await tx.query(sp.release);
    },
    rollback: async (tx: SqlExecutor) => {
      await tx.query(sp.rollback).catch(() => {});
      if (sp.release !== null) await tx.query(sp.release).catch(() => {});
    },
  };
}
const SAVEPOINT = 'svc_event_triggers';

async function inSavepoint(capture: EventCapture, tx: SqlExecutor, f: () => Promise<void>): Promise<void> {
  const sp = savepointOf(capture);
  await sp.set(tx);
  try {
    await f();
    await sp.release(tx);
  } catch (e) {
    await sp.rollback(tx);
    throw e;
  }
}

/** Reconciles one source in a savepoint of the build's transaction on it, so that a failure
 * leaves the rest of the request's source work (run_sql) intact. */
async function reconcileSource(ctx: BuildContext, db: DatabaseService, capture: EventCapture, name: string, conn: SourceConnection, desired: CaptureDef[], keep: Set<string>) {
  const inTx = db.inTransaction(ctx.uow, name);
  const sp = savepointOf(capture);
  let tx: SqlExecutor | undefined;
  const open = async () => {
    if (!tx) {
      tx = await db.transaction(ctx, name);
      await sp.set(tx);
    }
    return tx;
  };
  const read = inTx ? await open() : conn.executor;
  try {
    const r = await capture.reconcile(name, read, open, desired, keep);
    if (tx) await sp.release(tx);
    if (r.changed) ctx.log.info('event-trigger', { source: name, message: 'event capture reconciled with the metadata', triggers: [...keep], archived: r.archived });
  } catch (e) {
    if (tx) await sp.rollback(tx);
    throw e;
  }
}
