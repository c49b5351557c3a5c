/**
 * Cron triggers and one-off scheduled events (SPEC "Cron trigger", "Scheduled event", "Events"
 * 5-6; Hasura v2's Hasura/RQL/DDL/ScheduledTrigger.hs and Hasura/Eventing/ScheduledTrigger.hs):
 *   - metadata: `cron_triggers` holds the triggers with `include_in_metadata: true`; the others
 *     live in the catalog only (`svc_catalog.cron_triggers` of the default source, catalog.ts);
 *   - operations (both endpoints): create_cron_trigger, delete_cron_trigger, get_cron_triggers,
 *     create_scheduled_event, delete_scheduled_event, get_scheduled_events,
 *     get_scheduled_event_invocations;
 *   - the `scheduled-triggers` build step: where the catalog is (the default PostgreSQL source),
 *     created if missing;
 *   - the `scheduled-delivery` worker (worker.ts, Note [Scheduled deliveries]).
 * Delivery reuses the webhook helpers of plugins/event-triggers (its index.ts exports only).
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { definePlugin, type InconsistentObject, type Metadata, type OperationContext } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import * as v from '../../core/valibot.js';
import { nameText } from '../../core/validation.js';
import { DatabaseToken, sourcesOf, type SqlExecutor } from '../database/index.js';
import { EnvError, resolveHeaders, resolveUrlTemplate } from '../event-triggers/index.js';
import { CRON_TRIGGERS, dropPendingCronEvents, ensureCatalog, EVENTS, INVOCATIONS } from './catalog.js';
import {
  CreateCronTriggerSchema,
  CreateScheduledEventSchema,
  CronTriggersSectionSchema,
  DeleteScheduledEventSchema,
  GetInvocationsSchema,
  GetScheduledEventsSchema,
  withRetryConf,
  type CronTriggerMeta,
} from './definition.js';
import { Scheduler, topUp, type SchedulerState } from './worker.js';

export const STEP = 'scheduled-triggers';
const SUCCESS = { message: 'success' };

export const cronTriggersOf = (md: Metadata): CronTriggerMeta[] => (md.cron_triggers as CronTriggerMeta[] | undefined) ?? [];
const withCronTriggers = (md: Metadata, list: CronTriggerMeta[]): Metadata => ({ ...md, cron_triggers: list });

/** The catalog's executor of a build, or a 400 when there is no PostgreSQL source to keep it. */
function catalogOf(build: { outputs: ReadonlyMap<string, unknown> }): SqlExecutor {
  const st = build.outputs.get(STEP) as SchedulerState | undefined;
  if (!st?.executor) throw new SvcError('unexpected', 'scheduled triggers need a PostgreSQL source named "default" to keep their events', { status: 500 });
  return st.executor;
}

async function catalogTrigger(exec: SqlExecutor, name: string): Promise<CronTriggerMeta | undefined> {
  const rows = await exec.query<{ definition: CronTriggerMeta }>(`select definition from ${CRON_TRIGGERS} where name = $1`, [name]);
  return rows[0]?.definition;
}

/** Why the trigger's webhook or headers cannot be resolved in `env`, if they cannot. */
function envProblem(t: CronTriggerMeta, env: Readonly<Record<string, string | undefined>>): string | undefined {
  try {
    resolveUrlTemplate(t.webhook, env);
    resolveHeaders(t.headers, env);
    return undefined;
  } catch (e) {
    if (e instanceof EnvError) return e.message;
    throw e;
  }
}

const triggerId = (name: string) => `cron_trigger:${name}`;

function inconsistentTrigger(t: CronTriggerMeta, why: string): InconsistentObject {
  return {
    type: 'cron_trigger',
    name: `cron_trigger ${t.name}`,
    reason: `Inconsistent object: in cron trigger "${t.name}": ${why}`,
    definition: t,
    id: triggerId(t.name),
    remove: (md) => withCronTriggers(md, cronTriggersOf(md).filter((x) => x.name !== t.name)),
  };
}

const notExists = (name: string) => new SvcError('not-exists', `cron trigger with name: ${name} does not exist`, { path: '$.args' });

/** A timestamp as aeson writes a UTCTime: `2026-01-01T00:05:00Z`, fractions only when not zero. */
const ISO = (col: string) => `(rtrim(rtrim(to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z')`;

/** Cron triggers and scheduled events: milliseconds between two looks for due events (Note
 * [Options by plugin] in core/config.ts); the batch and pool sizes are the event triggers'. */
export const SCHEDULED_OPTIONS = {
  scheduledEventsFetchInterval: { flag: 'scheduled-events-fetch-interval', env: 'SVC_GRAPHQL_SCHEDULED_EVENTS_FETCH_INTERVAL', schema: optionSchemas.atLeastOne, default: 10000 },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof SCHEDULED_OPTIONS> {}
}

export default definePlugin({
  name: 'scheduled-triggers',
  options: SCHEDULED_OPTIONS,
  after: ['database', 'postgres', 'event-triggers'],
  requires: ['database'],
  setup(k) {
    const db = k.use(DatabaseToken);
    // Hasura's export order: ..., custom_types, cron_triggers (75), rest_endpoints (80), ...
    k.metadataSection({ key: 'cron_triggers', order: 75, schema: CronTriggersSectionSchema, empty: () => [] });

    k.buildStep<SchedulerState>({
      name: STEP,
      after: ['sources'],
      async run(ctx) {
        const resolved = db.resolved(ctx);
        const home = sourcesOf(ctx.metadata).find((s) => s.name === 'default');
        const rs = home ? resolved.sources.get(home.name) : undefined;
        let executor: SqlExecutor | undefined;
        if (rs?.connection && rs.kind.holdsEngineTables) {
          try {
            await ensureCatalog(rs.connection.executor);
            executor = rs.connection.executor;
          } catch (e) {
            k.log.warn('scheduled-trigger', { message: 'could not create the scheduled-events catalog', error: String(e) });
          }
        }
        const all = cronTriggersOf(ctx.metadata);
        // A webhook or header from an unset environment variable makes the trigger inconsistent
        // (Hasura's resolveCronTrigger): its slots wait until it is consistent again.
        const triggers: CronTriggerMeta[] = [];
        for (const t of all) {
          const why = envProblem(t, k.env);
          if (why === undefined) triggers.push(t);
          else ctx.inconsistent(inconsistentTrigger(t, why));
        }
        if (executor && triggers.length > 0) {
          // Hasura refuses metadata whose cron trigger has the name of one kept outside it.
          const rows = await executor.query<{ name: string }>(`select name from ${CRON_TRIGGERS} where name = any($1::text[])`, [triggers.map((t) => t.name)]);
          for (const { name } of rows)
            ctx.inconsistent(inconsistentTrigger(triggers.find((t) => t.name === name)!, `cron trigger with name "${name}" already exists as a cron trigger with "included_in_metadata" as false`));
        }
        return { executor, triggers };
      },
    });

    const both = (type: string) => ({ type, legacy: type });
    /** Where an operation writes the catalog: the pool, at once; in a dry run, the request's
     * transaction on the default source, which is rolled back (Note [Dry runs] in
     * core/kernel/pipeline.ts), so that no trigger, slot or event is touched. */
    const writerOf = async (ctx: OperationContext): Promise<SqlExecutor> => {
      const exec = catalogOf(ctx.current);
      return ctx.dryRun ? db.transaction(ctx, 'default') : exec;
    };

    k.operation({
      ...both('create_cron_trigger'),
      args: CreateCronTriggerSchema,
      mutates: true,
      async run({ meta, replace }, ctx) {
        const exec = await writerOf(ctx);
        const inMd = cronTriggersOf(ctx.metadata).findIndex((t) => t.name === meta.name);
        const inCatalog = await catalogTrigger(exec, meta.name);
        const exists = inMd >= 0 || inCatalog !== undefined;
        if (!replace && exists) throw new SvcError('already-exists', `cron trigger with name: ${meta.name} already exists`, { path: '$.args' });
        if (replace && !exists) throw notExists(meta.name);
        // Checked before anything is written (the build that follows checks one in the metadata too).
        const why = envProblem(meta, k.env);
        if (why !== undefined) throw new SvcError('invalid-configuration', `Inconsistent object: in cron trigger "${meta.name}": ${why}`, { path: '$.args' });
        let md: Metadata | undefined;
        const list = cronTriggersOf(ctx.metadata);
        if (meta.include_in_metadata) {
          md = withCronTriggers(ctx.metadata, inMd >= 0 ? list.map((t, i) => (i === inMd ? meta : t)) : [...list, meta]);
          if (inCatalog) await exec.query(`delete from ${CRON_TRIGGERS} where name = $1`, [meta.name]);
        } else {
          if (inMd >= 0) md = withCronTriggers(ctx.metadata, list.filter((_, i) => i !== inMd));
          await exec.query(`insert into ${CRON_TRIGGERS} (name, definition) values ($1, $2::text::json) on conflict (name) do update set definition = excluded.definition`, [
            meta.name,
            JSON.stringify(meta),
          ]);
        }
        // Hasura drops the future events of a replaced trigger and generates them afresh.
        if (replace) await sched.exclusive(meta.name, () => dropPendingCronEvents(exec, meta.name, true));
        await topUp(exec, meta, 0, null);
        return md ? { metadata: md, response: SUCCESS, defines: [triggerId(meta.name)] } : { response: SUCCESS };
      },
    });

    k.operation({
      ...both('delete_cron_trigger'),
      args: v.object({ name: nameText }),
      mutates: true,
      async run({ name }, ctx) {
        const exec = await writerOf(ctx);
        const list = cronTriggersOf(ctx.metadata);
        const inMd = list.some((t) => t.name === name);
        const inCatalog = await catalogTrigger(exec, name);
        if (!inMd && !inCatalog) throw notExists(name);
        await sched.exclusive(name, async () => {
          if (inCatalog) await exec.query(`delete from ${CRON_TRIGGERS} where name = $1`, [name]);
          await dropPendingCronEvents(exec, name, false);
        });
        return inMd ? { metadata: withCronTriggers(ctx.metadata, list.filter((t) => t.name !== name)), response: SUCCESS } : { response: SUCCESS };
      },
    });

    k.operation({
      ...both('get_cron_triggers'),
      args: v.optional(v.object({}), {}),
      mutates: false,
      async run(_a, ctx) {
        const list = [...cronTriggersOf(ctx.metadata)];
        const st = ctx.current.outputs.get(STEP) as SchedulerState | undefined;
        if (st?.executor) {
          const rows = await st.executor.query<{ definition: CronTriggerMeta }>(`select definition from ${CRON_TRIGGERS} order by name`);
          list.push(...rows.map((r) => r.definition));
        }
        return { response: { cron_triggers: list.map(withRetryConf) } };
      },
    });

    k.operation({
      ...both('create_scheduled_event'),
      args: CreateScheduledEventSchema,
      mutates: false,
      async run(a, ctx) {
        const exec = await writerOf(ctx);
        const rows = await exec.query<{ id: string }>(
          `insert into ${EVENTS} (kind, scheduled_time, webhook_conf, payload, header_conf, retry_conf, comment)
           values ('one_off', $1::timestamptz, $2::text::json, $3::text::json, $4::text::json, $5::text::json, $6) returning id`,
          [a.schedule_at.toISOString(), JSON.stringify(a.webhook), JSON.stringify(a.payload ?? null), JSON.stringify(a.headers), JSON.stringify(a.retry_conf), a.comment ?? null],
        );
        if (!ctx.dryRun) sched.poke();
        return { response: { message: 'success', event_id: rows[0]!.id } };
      },
    });

    k.operation({
      ...both('delete_scheduled_event'),
      args: DeleteScheduledEventSchema,
      mutates: false,
      async run(a, ctx) {
        const exec = await writerOf(ctx);
        await exec.query(`delete from ${EVENTS} where id = $1 and kind = $2`, [a.event_id, a.type]);
        return { response: SUCCESS };
      },
    });

    const checkCron = async (ctx: OperationContext, exec: SqlExecutor, name: string) => {
      if (!cronTriggersOf(ctx.metadata).some((t) => t.name === name) && !(await catalogTrigger(exec, name))) throw notExists(name);
    };

    k.operation({
      ...both('get_scheduled_events'),
      args: GetScheduledEventsSchema,
      mutates: false,
      async run(a, ctx) {
        const exec = catalogOf(ctx.current);
        if (a.type === 'cron') await checkCron(ctx, exec, a.trigger_name!);
        const where = `kind = $1 and ($2::text is null or trigger_name = $2) and (cardinality($3::text[]) = 0 or status = any($3::text[]))`;
        const params = [a.type, a.trigger_name ?? null, a.status];
        const cols =
          a.type === 'cron'
            ? `id, trigger_name, ${ISO('scheduled_time')} as scheduled_time, status, tries, ${ISO('created_at')} as created_at, ${ISO('next_retry_at')} as next_retry_at`
            : `id, webhook_conf, ${ISO('scheduled_time')} as scheduled_time, retry_conf, payload, header_conf, status, tries, ${ISO('created_at')} as created_at, ${ISO('next_retry_at')} as next_retry_at, comment, null::json as request_transform, null::json as response_transform`;
        const events = await exec.query(
          `select ${cols} from ${EVENTS} where ${where} order by scheduled_time, id limit $4 offset $5`,
          [...params, a.limit ?? null, a.offset ?? 0],
        );
        const out: Record<string, unknown> = { events };
        if (a.get_rows_count) out.count = Number((await exec.query<{ n: string }>(`select count(*)::text as n from ${EVENTS} where ${where}`, params))[0]!.n);
        return { response: out };
      },
    });

    k.operation({
      ...both('get_scheduled_event_invocations'),
      args: GetInvocationsSchema,
      mutates: false,
      async run(a, ctx) {
        const exec = catalogOf(ctx.current);
        if (a.type === 'cron' && a.event_id === undefined) await checkCron(ctx, exec, a.trigger_name!);
        const where = `e.kind = $1 and ($2::text is null or e.id = $2) and ($3::text is null or e.trigger_name = $3)`;
        const params = [a.type, a.event_id ?? null, a.trigger_name ?? null];
        const invocations = await exec.query(
          `select i.id, i.event_id, i.status, i.request, i.response, ${ISO('i.created_at')} as created_at
           from ${INVOCATIONS} i join ${EVENTS} e on e.id = i.event_id where ${where}
           order by i.created_at desc, i.id limit $4 offset $5`,
          [...params, a.limit ?? null, a.offset ?? 0],
        );
        const out: Record<string, unknown> = { invocations };
        if (a.get_rows_count)
          out.count = Number((await exec.query<{ n: string }>(`select count(*)::text as n from ${INVOCATIONS} i join ${EVENTS} e on e.id = i.event_id where ${where}`, params))[0]!.n);
        return { response: out };
      },
    });

    const state = (): SchedulerState => (k.state().build.outputs.get(STEP) as SchedulerState | undefined) ?? { executor: undefined, triggers: [] };
    const sched = new Scheduler(
      state,
      k.env,
      {
        fetchIntervalMs: k.config.scheduledEventsFetchInterval,
        batchSize: k.config.eventsFetchBatchSize,
        poolSize: k.config.eventsHttpPoolSize,
        graceMs: k.config.gracefulShutdownTimeout * 1000,
      },
      k.log,
    );

    // A trigger that left the metadata (replace_metadata, clear_metadata, an instance syncing
    // another's change) takes its pending slots along, unless it moved to the catalog.
    let known: Set<string> | undefined;
    k.events.on('metadataChanged', (build) => {
      const names = new Set(cronTriggersOf(build.metadata).map((t) => t.name));
      const exec = (build.outputs.get(STEP) as SchedulerState | undefined)?.executor;
      const gone = known ? [...known].filter((n) => !names.has(n)) : [];
      known = names;
      if (!exec) return;
      for (const name of gone)
        void sched
          .exclusive(name, async () => {
            if (!(await catalogTrigger(exec, name))) await dropPendingCronEvents(exec, name, false);
          })
          .catch((e) => k.log.warn('scheduled-trigger', { message: 'could not drop the events of a removed cron trigger', trigger_name: name, error: String(e) }));
    });

    k.worker({
      name: 'scheduled-delivery',
      start() {
        known = new Set(cronTriggersOf(k.state().metadata).map((t) => t.name));
        sched.start();
      },
      async stop() {
        await sched.stop();
      },
    });
  },
});
