/**
 * Cron triggers and one-off scheduled events: the stored form (Hasura's CronTriggerMetadata and
 * CreateScheduledEvent) and the operations' args, with Hasura's parser messages where known.
 */
import { Cron } from 'croner';
import * as v from '../../core/valibot.js';
import { nameText } from '../../core/validation.js';
import { HeaderConfSchema, type HeaderConf } from '../event-triggers/index.js';

export const DEFAULT_RETRY_CONF = { num_retries: 0, retry_interval_seconds: 10, timeout_seconds: 60, tolerance_seconds: 21600 };
export type RetryConfST = typeof DEFAULT_RETRY_CONF;

const int = v.pipe(v.number(), v.integer());

/** Hasura's STRetryConf: every field optional with its default; negative values refused. */
const seconds = v.pipe(v.number(), v.finite());

/** Hasura's STRetryConf: every field optional with its default; negative values refused. */
export const RetryConfSTSchema: v.GenericSchema<unknown, RetryConfST> = v.pipe(
  v.object({
    num_retries: v.optional(int, DEFAULT_RETRY_CONF.num_retries),
    retry_interval_seconds: v.optional(seconds, DEFAULT_RETRY_CONF.retry_interval_seconds),
    timeout_seconds: v.optional(seconds, DEFAULT_RETRY_CONF.timeout_seconds),
    tolerance_seconds: v.optional(seconds, DEFAULT_RETRY_CONF.tolerance_seconds),
  }),
  v.check((r) => r.num_retries >= 0, 'num_retries cannot be a negative value'),
  v.check((r) => r.retry_interval_seconds >= 0, 'retry_interval_seconds cannot be a negative value'),
  v.check((r) => r.timeout_seconds >= 0, 'timeout_seconds cannot be a negative value'),
  v.check((r) => r.tolerance_seconds >= 0, 'tolerance_seconds cannot be a negative value'),
);

/** Five fields, UTC, as croner reads them; the error names the schedule. */
export function parseSchedule(s: string): Cron {
  const fields = s.trim().split(/\s+/);
  if (fields.length !== 5) throw new Error(`invalid cron schedule "${s}": expected 5 fields`);
  try {
    return new Cron(s, { paused: true, timezone: 'UTC' });
  } catch (e) {
    throw new Error(`invalid cron schedule "${s}": ${(e as Error).message}`);
  }
}

export const ScheduleSchema = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    try {
      parseSchedule(dataset.value);
    } catch (e) {
      addIssue({ message: (e as Error).message });
    }
  }),
);

export interface CronTriggerMeta {
  name: string;
  webhook: string;
  schedule: string;
  payload?: unknown;
  retry_conf?: RetryConfST;
  headers?: HeaderConf[];
  include_in_metadata: boolean;
  comment?: string;
}

const webhookFields = {
  webhook: v.optional(v.nullable(v.string())),
  webhook_from_env: v.optional(v.nullable(v.string())),
};

/** webhook, or webhook_from_env (stored as Hasura's `{{VAR}}` template). */
function webhookOf(a: { webhook?: string | null; webhook_from_env?: string | null }): string | undefined {
  if (a.webhook != null) return a.webhook;
  if (a.webhook_from_env != null) return `{{${a.webhook_from_env}}}`;
  return undefined;
}

const cronFields = {
  name: nameText,
  ...webhookFields,
  schedule: ScheduleSchema,
  payload: v.optional(v.unknown()),
  headers: v.optional(v.nullable(v.array(HeaderConfSchema))),
  retry_conf: v.optional(v.nullable(RetryConfSTSchema)),
  include_in_metadata: v.boolean(),
  comment: v.optional(v.nullable(v.string())),
};

/** Hasura's key order; a default retry_conf is left out (Hasura exports it only when set). */
function toMeta(a: v.InferOutput<v.ObjectSchema<typeof cronFields, undefined>>, webhook: string): CronTriggerMeta {
  const m: CronTriggerMeta = { name: a.name, webhook, schedule: a.schedule } as CronTriggerMeta;
  if (a.payload !== undefined && a.payload !== null) m.payload = a.payload;
  if (a.retry_conf && !isDefaultRetryConf(a.retry_conf)) m.retry_conf = a.retry_conf;
  if (a.headers && a.headers.length > 0) m.headers = a.headers as HeaderConf[];
  m.include_in_metadata = a.include_in_metadata;
  if (a.comment != null) m.comment = a.comment;
  return m;
}

export const isDefaultRetryConf = (r: RetryConfST) =>
  (Object.keys(DEFAULT_RETRY_CONF) as (keyof RetryConfST)[]).every((k) => r[k] === DEFAULT_RETRY_CONF[k]);

/** A trigger as get_cron_triggers shows it: retry_conf and headers always there, in Hasura's key
 * order (the export leaves out their defaults). */
export function withRetryConf(t: CronTriggerMeta): CronTriggerMeta {
  const { name, webhook, schedule, payload, retry_conf, headers, include_in_metadata, comment } = t;
  return {
    name,
    webhook,
    schedule,
    ...(payload !== undefined ? { payload } : {}),
    retry_conf: { ...DEFAULT_RETRY_CONF, ...retry_conf },
    headers: headers ?? [],
    include_in_metadata,
    ...(comment !== undefined ? { comment } : {}),
  };
}

const withWebhook = <T extends { webhook?: string | null; webhook_from_env?: string | null }>() =>
  v.check<T, string>((a) => (a.webhook == null) !== (a.webhook_from_env == null), 'expecting exactly one of webhook or webhook_from_env');

/** A cron trigger as the metadata keeps it (replace_metadata). */
export const CronTriggerMetaSchema: v.GenericSchema<unknown, CronTriggerMeta> = v.pipe(
  v.looseObject(cronFields),
  withWebhook(),
  v.transform((a) => toMeta(a, webhookOf(a)!)),
);

export const CronTriggersSectionSchema = v.pipe(
  v.array(CronTriggerMetaSchema),
  v.check((l) => new Set(l.map((t) => t.name)).size === l.length, 'multiple cron triggers with the same name'),
);

export const CreateCronTriggerSchema: v.GenericSchema<unknown, { meta: CronTriggerMeta; replace: boolean }> = v.pipe(
  v.object({ ...cronFields, replace: v.optional(v.boolean(), false) }),
  withWebhook(),
  v.transform((a) => ({ meta: toMeta(a, webhookOf(a)!), replace: a.replace })),
);

export interface ScheduledEventArgs {
  webhook: string;
  schedule_at: Date;
  payload?: unknown;
  headers: HeaderConf[];
  retry_conf: RetryConfST;
  comment?: string;
}

export const CreateScheduledEventSchema: v.GenericSchema<unknown, ScheduledEventArgs> = v.pipe(
  v.object({
    ...webhookFields,
    schedule_at: v.pipe(
      v.string(),
      v.check((s) => /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d(:?\d\d)?)?$/i.test(s) && !Number.isNaN(Date.parse(s)), 'could not parse timestamp'),
    ),
    payload: v.optional(v.unknown()),
    headers: v.optional(v.nullable(v.array(HeaderConfSchema))),
    retry_conf: v.optional(v.nullable(RetryConfSTSchema)),
    comment: v.optional(v.nullable(v.string())),
  }),
  withWebhook(),
  v.transform((a) => {
    // A timestamp without zone is UTC, as Hasura reads it.
    const s = /(Z|[+-]\d\d(:?\d\d)?)$/i.test(a.schedule_at) ? a.schedule_at : `${a.schedule_at}Z`;
    const out: ScheduledEventArgs = {
      webhook: webhookOf(a)!,
      schedule_at: new Date(s),
      headers: (a.headers ?? []) as HeaderConf[],
      retry_conf: a.retry_conf ?? { ...DEFAULT_RETRY_CONF },
    };
    if (a.payload !== undefined && a.payload !== null) out.payload = a.payload;
    if (a.comment != null) out.comment = a.comment;
    return out;
  }),
);

export const EventTypeSchema = v.picklist(['one_off', 'cron'], 'expected "one_off" or "cron"');

/** Hasura reads `limit` and `offset` at the top of the args. */
const pagination = { limit: v.optional(v.nullable(v.pipe(int, v.minValue(0)))), offset: v.optional(v.nullable(v.pipe(int, v.minValue(0)))) };
const STATUSES = ['scheduled', 'locked', 'delivered', 'error', 'dead'] as const;

export const GetScheduledEventsSchema = v.pipe(
  v.object({
    type: EventTypeSchema,
    trigger_name: v.optional(nameText),
    ...pagination,
    status: v.optional(v.array(v.picklist(STATUSES)), []),
    get_rows_count: v.optional(v.boolean(), false),
  }),
  v.check((a) => a.type !== 'cron' || a.trigger_name !== undefined, 'trigger_name is required for cron events'),
);

export const GetInvocationsSchema = v.pipe(
  v.object({
    type: EventTypeSchema,
    event_id: v.optional(v.string()),
    trigger_name: v.optional(nameText),
    ...pagination,
    get_rows_count: v.optional(v.boolean(), false),
  }),
  v.check((a) => a.type !== 'cron' || a.event_id !== undefined || a.trigger_name !== undefined, 'expected event_id or trigger_name'),
);

export const DeleteScheduledEventSchema = v.object({ type: EventTypeSchema, event_id: v.string() });
