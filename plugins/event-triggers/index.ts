/**
 * Event triggers (SPEC "Event trigger", "Events"): webhooks fired on row changes of tracked
 * tables, delivered at least once, in the sources whose kind captures row changes
 * (SourceKind.events, Note [Event capture] in plugins/database/model/types.ts: PostgreSQL's and
 * MS SQL Server's).
 *   - metadata: a tracked table's `event_triggers` (exported and replaced with the table), checked
 *     against the table's columns and the environment in the build (an unset variable makes the
 *     trigger inconsistent, never a failed boot);
 *   - operations (command group of the database framework): create/delete, redeliver, invoke, and
 *     the event-log reads (group.ts);
 *   - capture: the kind's (PostgreSQL: one plpgsql trigger per event trigger and operation writing
 *     to `svc_catalog.event_log` in the row change's transaction, plugins/postgres/event-capture.ts;
 *     MSSQL: T-SQL AFTER triggers, plugins/mssql/event-capture.ts),
 *     reconciled from the metadata at every build (build.ts);
 *   - delivery: the `event-delivery` worker (worker.ts).
 *
 * What another plugin may use (cron triggers and scheduled events deliver the same way): the
 * webhook helpers of webhook.ts, exported below, and `drainDeliveries` (graceful shutdown).
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { definePlugin } from '../../core/plugin.js';
import { DatabaseToken } from '../database/index.js';
import { buildEventTriggers, STEP, triggersBuild } from './build.js';
import { EventTriggersKeySchema } from './definition.js';
import { eventTriggersGroup } from './group.js';
import { EventWorker } from './worker.js';

// The public contract.
export {
  drainDeliveries,
  EnvError,
  HeaderConfSchema,
  invocationRequest,
  invocationResponse,
  MAX_LOGGED_BODY,
  nextAttempt,
  parseRetryAfter,
  postWebhook,
  resolveEnv,
  resolveHeaders,
  resolveUrlTemplate,
  Semaphore,
  type HeaderConf,
  type InFlightDelivery,
  type RetryPolicy,
  type WebhookRequest,
  type WebhookResult,
} from './webhook.js';
export type { EventTriggerMeta, RetryConf } from './definition.js';
export { STEP as EVENT_TRIGGERS_STEP, type EventTriggersBuild, type ResolvedTrigger } from './build.js';

/** Event-trigger delivery: Hasura's HASURA_GRAPHQL_EVENTS_* options (Note [Options by plugin] in
 * core/config.ts). The scheduled triggers share the batch and pool sizes. */
export const EVENT_OPTIONS = {
  eventsHttpPoolSize: { flag: 'events-http-pool-size', env: 'SVC_GRAPHQL_EVENTS_HTTP_POOL_SIZE', schema: optionSchemas.atLeastOne, default: 100 },
  eventsFetchInterval: { flag: 'events-fetch-interval', env: 'SVC_GRAPHQL_EVENTS_FETCH_INTERVAL', schema: optionSchemas.atLeastOne, default: 1000 },
  eventsFetchBatchSize: { flag: 'events-fetch-batch-size', env: 'SVC_GRAPHQL_EVENTS_FETCH_BATCH_SIZE', schema: optionSchemas.atLeastOne, default: 100 },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof EVENT_OPTIONS> {}
}

export default definePlugin({
  name: 'event-triggers',
  options: EVENT_OPTIONS,
  after: ['database', 'postgres'],
  requires: ['database'],
  setup(k) {
    // reload_metadata's recreate_event_triggers (Note [Reload keys]): install the triggers again.
    k.reloadKey({ key: 'event_triggers', arg: 'recreate_event_triggers', default: false });
    const db = k.use(DatabaseToken);
    db.registerTableKey('event_triggers', EventTriggersKeySchema);
    db.registerGroup(eventTriggersGroup(db));
    k.buildStep({ name: STEP, after: ['sources'], run: (ctx) => buildEventTriggers(ctx, db, k.env) });

    let worker: EventWorker | undefined;
    // A new build may bring a source to listen to, or a trigger that became consistent.
    const onBuild = () => worker?.poke();
    k.worker({
      name: 'event-delivery',
      start() {
        k.events.on('metadataChanged', onBuild);
        worker = new EventWorker(
          () => triggersBuild(k.state().build),
          {
            fetchIntervalMs: k.config.eventsFetchInterval,
            batchSize: k.config.eventsFetchBatchSize,
            poolSize: k.config.eventsHttpPoolSize,
            graceMs: k.config.gracefulShutdownTimeout * 1000,
          },
          k.log,
        );
        worker.start();
      },
      async stop() {
        k.events.off('metadataChanged', onBuild);
        await worker?.stop();
      },
    });
  },
});
