/**
 * Event triggers as the metadata holds them (a tracked table's `event_triggers`, Hasura v2's
 * EventTriggerConf) and the arguments of the operations, with Hasura's parsers' messages.
 */
import * as v from '../../core/valibot.js';
import { nonEmptyText } from '../../core/validation.js';
import { SourceNameSchema, type QualifiedNameSchema, type QualifiedTable } from '../database/index.js';
import { RequestTransformSchema, ResponseTransformSchema, type RequestTransformDef, type ResponseTransformDef } from '../webhook-transforms/index.js';
import { HeaderConfSchema, type HeaderConf } from './webhook.js';

export type Op = 'INSERT' | 'UPDATE' | 'DELETE';
export const OPS: readonly Op[] = ['INSERT', 'UPDATE', 'DELETE'];
export const opKey = (op: Op) => op.toLowerCase() as 'insert' | 'update' | 'delete';

/** `*` or a list of column names. */
export type SubscribeColumns = '*' | string[];

export interface OpSpec {
  columns: SubscribeColumns;
  payload?: SubscribeColumns;
}

export interface RetryConf {
  num_retries: number;
  interval_sec: number;
  timeout_sec?: number;
}

/** An event trigger as stored and exported. Keys Hasura has and this engine does not use
 * (`cleanup_config`, `trigger_on_replication`, ...) are kept as they came. */
export interface EventTriggerMeta {
  name: string;
  definition: { insert?: OpSpec; update?: OpSpec; delete?: OpSpec; enable_manual?: boolean };
  retry_conf: RetryConf;
  webhook?: string;
  webhook_from_env?: string;
  headers?: HeaderConf[];
  /** Hasura's webhook transforms (plugins/webhook-transforms), in its export shape. */
  request_transform?: RequestTransformDef;
  response_transform?: ResponseTransformDef;
  [key: string]: unknown;
}

export const DEFAULT_RETRY: RetryConf = { num_retries: 0, interval_sec: 10, timeout_sec: 60 };
export const DEFAULT_TIMEOUT_SEC = 60;

/** Seconds an event stays claimed by a delivery beyond its webhook timeout before another
 * instance may take it (Note [Claiming events] in worker.ts). */
export const LEASE_MARGIN_SEC = 10;

/** PostgreSQL identifiers are at most 63 bytes: `notify_svc_` + name + `_INSERT` must fit. */
export const MAX_TRIGGER_NAME_LENGTH = 42;

const NAME_PATTERN = /^[A-Za-z]+[A-Za-z0-9_-]*$/;
export const isLegalTriggerName = (name: string) => NAME_PATTERN.test(name);

const SubscribeColumnsSchema: v.GenericSchema<unknown, SubscribeColumns> = v.pipe(
  v.unknown(),
  v.check((x) => typeof x !== 'string' || x === '*', 'only * or [] allowed'),
  v.check((x) => typeof x === 'string' || Array.isArray(x), 'unexpected columns'),
  v.union([v.literal('*'), v.array(v.string())]),
) as v.GenericSchema<unknown, SubscribeColumns>;

const OpSpecSchema = v.pipe(
  v.object({ columns: SubscribeColumnsSchema, payload: v.optional(v.nullable(SubscribeColumnsSchema)) }),
  v.transform((o): OpSpec => (o.payload == null ? { columns: o.columns } : { columns: o.columns, payload: o.payload })),
);

const count = (what: string) =>
  v.pipe(v.number(), v.integer(`${what} must be an integer`), v.minValue(0, `${what} must not be negative`), v.maxValue(2147483647, `${what} is too large`));

/** `retry_conf`: Hasura requires `num_retries` and `interval_sec`; the SPEC gives them defaults,
 * which are taken when they are left out. */
export const RetryConfSchema = v.pipe(
  v.object({
    num_retries: v.optional(count('num_retries'), DEFAULT_RETRY.num_retries),
    interval_sec: v.optional(count('interval_sec'), DEFAULT_RETRY.interval_sec),
    timeout_sec: v.optional(v.nullable(v.pipe(count('timeout_sec'), v.minValue(1, 'timeout_sec must be at least 1')))),
  }),
  v.transform((r): RetryConf => (r.timeout_sec == null ? { num_retries: r.num_retries, interval_sec: r.interval_sec } : { ...r, timeout_sec: r.timeout_sec })),
);

const DefinitionSchema = v.pipe(
  v.looseObject({
    insert: v.optional(v.nullable(OpSpecSchema)),
    update: v.optional(v.nullable(OpSpecSchema)),
    delete: v.optional(v.nullable(OpSpecSchema)),
    enable_manual: v.optional(v.nullable(v.boolean())),
  }),
  v.transform((d) => {
    const out: EventTriggerMeta['definition'] = {};
    for (const k of ['insert', 'update', 'delete'] as const) if (d[k]) out[k] = d[k];
    if (d.enable_manual != null) out.enable_manual = d.enable_manual;
    return out;
  }),
);

/** The stored form (replace_metadata, and a guard in the build). */
export const EventTriggerMetaSchema: v.GenericSchema<unknown, EventTriggerMeta> = v.pipe(
  v.looseObject({
    name: nonEmptyText,
    definition: DefinitionSchema,
    retry_conf: RetryConfSchema,
    webhook: v.optional(v.nullable(v.string())),
    webhook_from_env: v.optional(v.nullable(v.string())),
    headers: v.optional(v.nullable(v.array(HeaderConfSchema))),
    request_transform: v.optional(v.nullable(RequestTransformSchema)),
    response_transform: v.optional(v.nullable(ResponseTransformSchema)),
  }),
  v.transform((t) => orderTrigger(t as unknown as EventTriggerMeta)),
);

/** The `event_triggers` key of a table entry: an absent or null list is no list. */
export const EventTriggersKeySchema = v.pipe(
  v.optional(v.nullable(v.array(EventTriggerMetaSchema))),
  v.transform((list) => (list && list.length > 0 ? list : undefined)),
);

/** Hasura's export order: name, definition, retry_conf, webhook, webhook_from_env, headers,
 * request_transform, response_transform, the rest. */
export function orderTrigger(t: EventTriggerMeta): EventTriggerMeta {
  const out: Record<string, unknown> = { name: t.name, definition: t.definition, retry_conf: t.retry_conf };
  if (t.webhook != null) out.webhook = t.webhook;
  if (t.webhook_from_env != null) out.webhook_from_env = t.webhook_from_env;
  if (t.headers != null && t.headers.length > 0) out.headers = t.headers;
  if (t.request_transform != null) out.request_transform = t.request_transform;
  if (t.response_transform != null) out.response_transform = t.response_transform;
  for (const [k, val] of Object.entries(t)) if (!(k in out) && val != null && k !== 'headers' && k !== 'webhook' && k !== 'webhook_from_env') out[k] = val;
  return out as EventTriggerMeta;
}

// ---------------------------------------------------------------------------------------------
// Operation arguments

const emptyList = (spec: OpSpec | null | undefined) =>
  spec && Array.isArray(spec.columns) && spec.columns.length === 0
    ? 'found empty column specification'
    : spec && Array.isArray(spec.payload) && spec.payload.length === 0
      ? 'found empty payload specification'
      : undefined;

const KEPT_KEYS = ['cleanup_config', 'trigger_on_replication'];

/** `pg_create_event_trigger` (legacy `create_event_trigger`): Hasura's CreateEventTriggerQuery,
 * its checks in its order and words. `table` is the source kind's TableName schema (`bind.table`). */
export const createEventTriggerArgs = (table: QualifiedNameSchema) => v.pipe(
  v.looseObject({
    source: SourceNameSchema,
    name: nonEmptyText,
    table,
    insert: v.optional(v.nullable(OpSpecSchema)),
    update: v.optional(v.nullable(OpSpecSchema)),
    delete: v.optional(v.nullable(OpSpecSchema)),
    enable_manual: v.optional(v.nullable(v.boolean())),
    retry_conf: v.optional(v.nullable(RetryConfSchema)),
    webhook: v.optional(v.nullable(v.string())),
    webhook_from_env: v.optional(v.nullable(v.string())),
    headers: v.optional(v.nullable(v.array(HeaderConfSchema))),
    request_transform: v.optional(v.nullable(RequestTransformSchema)),
    response_transform: v.optional(v.nullable(ResponseTransformSchema)),
    replace: v.optional(v.nullable(v.boolean())),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const a = dataset.value;
    const fail = (message: string) => addIssue({ message });
    if (!isLegalTriggerName(a.name)) return fail('only alphanumeric and underscore and hyphens allowed for name');
    if (a.name.length > MAX_TRIGGER_NAME_LENGTH) return fail(`event trigger name can be at most ${MAX_TRIGGER_NAME_LENGTH} characters`);
    if (!a.insert && !a.update && !a.delete && !a.enable_manual) return fail('atleast one amongst insert/update/delete/enable_manual spec must be provided');
    const hook = a.webhook != null;
    const env = a.webhook_from_env != null;
    if (hook && env) return fail('only one of webhook or webhook_from_env should be given');
    if (!hook && !env) return fail('must provide webhook or webhook_from_env');
    for (const spec of [a.insert, a.update, a.delete]) {
      const why = emptyList(spec);
      if (why) return fail(why);
    }
  }),
  v.transform((a) => {
    const definition: EventTriggerMeta['definition'] = {};
    if (a.insert) definition.insert = a.insert;
    if (a.update) definition.update = a.update;
    if (a.delete) definition.delete = a.delete;
    definition.enable_manual = a.enable_manual ?? false;
    // Hasura's keys this engine keeps but does not apply (Hasura Cloud features among them).
    const kept: Record<string, unknown> = {};
    for (const k of KEPT_KEYS) if ((a as Record<string, unknown>)[k] != null) kept[k] = (a as Record<string, unknown>)[k];
    const trigger = orderTrigger({
      name: a.name,
      definition,
      retry_conf: a.retry_conf ?? DEFAULT_RETRY,
      webhook: a.webhook ?? undefined,
      webhook_from_env: a.webhook_from_env ?? undefined,
      headers: a.headers ?? undefined,
      request_transform: a.request_transform ?? undefined,
      response_transform: a.response_transform ?? undefined,
      ...kept,
    });
    return { source: a.source, table: a.table as QualifiedTable, replace: a.replace ?? false, trigger };
  }),
);

export const DeleteEventTriggerArgs = v.object({ name: nonEmptyText, source: SourceNameSchema });

export const RedeliverEventArgs = v.object({ event_id: nonEmptyText, source: SourceNameSchema });

export const InvokeEventTriggerArgs = v.pipe(
  v.object({ name: nonEmptyText, source: SourceNameSchema, payload: v.unknown() }),
  v.check((a) => a.payload !== undefined, 'key "payload" not found'),
);

const limit = (what: string, dflt: number) => v.optional(v.pipe(v.number(), v.integer(`${what} must be an integer`), v.minValue(0, `${what} must not be negative`)), dflt);

export const GetEventLogsArgs = v.object({
  name: nonEmptyText,
  source: SourceNameSchema,
  limit: limit('limit', 100),
  offset: limit('offset', 0),
  status: v.optional(
    v.picklist(['processed', 'pending'], 'event logs status can only be one of the following: processed or pending'),
  ),
});

export const GetEventInvocationLogsArgs = v.object({
  name: nonEmptyText,
  source: SourceNameSchema,
  limit: limit('limit', 100),
  offset: limit('offset', 0),
});

export const GetEventByIdArgs = v.object({
  event_id: nonEmptyText,
  source: SourceNameSchema,
  invocation_log_limit: limit('invocation_log_limit', 100),
  invocation_log_offset: limit('invocation_log_offset', 0),
});

// ---------------------------------------------------------------------------------------------
// Reading a table entry

export function triggersOf(t: { event_triggers?: unknown[] }): EventTriggerMeta[] {
  return (t.event_triggers as EventTriggerMeta[] | undefined) ?? [];
}

/** The columns a trigger names (listen and payload columns of every operation). */
export function namedColumns(t: EventTriggerMeta): string[] {
  const out = new Set<string>();
  for (const k of ['insert', 'update', 'delete'] as const) {
    const spec = t.definition?.[k];
    if (!spec) continue;
    if (Array.isArray(spec.columns)) for (const c of spec.columns) out.add(c);
    if (Array.isArray(spec.payload)) for (const c of spec.payload) out.add(c);
  }
  return [...out];
}
