/**
 * The scheduler: every --scheduled-events-fetch-interval it tops up each cron trigger's instances
 * to AHEAD slots, claims the due events (cron instances and one-off events) and delivers them
 * (Note [Scheduled deliveries]).
 */
import { errorDetail, type Logger } from '../../core/log.js';
import type { SqlExecutor } from '../database/index.js';
import {
  drainDeliveries,
  EnvError,
  invocationRequest,
  invocationResponse,
  nextAttempt,
  postWebhook,
  resolveHeaders,
  resolveUrlTemplate,
  Semaphore,
  type HeaderConf,
  type InFlightDelivery,
  type WebhookResult,
} from '../event-triggers/index.js';
import { AHEAD, cronHorizon, CRON_TRIGGERS, EVENTS, insertCronEvents, INVOCATIONS } from './catalog.js';
import { DEFAULT_RETRY_CONF, parseSchedule, type CronTriggerMeta, type RetryConfST } from './definition.js';

/*
 * Note [Scheduled deliveries]
 * Cron instances are generated ahead into `scheduled_events` with a unique (trigger, scheduled_time)
 * key: two instances topping up the same trigger insert each slot once (`on conflict do nothing`).
 * Due events are claimed as event triggers claim theirs (Note [Claiming events] in
 * plugins/event-triggers/worker.ts): one `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP
 * LOCKED)` stamps `locked`, which is the claim's token; a claim lasts the event's timeout and
 * LEASE_MARGIN_SEC, after which any instance takes it over. Outcomes are written only where the
 * token still holds. An event claimed for its first try more than `tolerance_seconds` after its
 * time is marked `dead`, not fired late (Hasura's behaviour after downtime). A failed delivery is
 * retried `num_retries` times, `retry_interval_seconds` apart (Retry-After wins), then `error`.
 */

export const LEASE_MARGIN_SEC = 30;

export interface SchedulerOptions {
  fetchIntervalMs: number;
  batchSize: number;
  poolSize: number;
  graceMs: number;
}

export interface SchedulerState {
  /** Where the catalog lives (the default source), or undefined when there is none. */
  executor: SqlExecutor | undefined;
  /** The cron triggers of the metadata. */
  triggers: readonly CronTriggerMeta[];
}

interface Claimed {
  id: string;
  kind: 'cron' | 'one_off';
  trigger_name: string | null;
  scheduled_time: string;
  created_at: string;
  webhook_conf: string | null;
  payload: string | null;
  header_conf: string | null;
  retry_conf: string | null;
  comment: string | null;
  tries: number;
  token: string;
  /** Seconds since the event's time, by the database's clock. */
  age_sec: number;
}

/** A timestamp as aeson writes a UTCTime: `2026-01-01T00:05:00Z`, fractions only when not zero. */
const ISO = (col: string) => `(rtrim(rtrim(to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), '0'), '.') || 'Z')`;

const CLAIM = `
update ${EVENTS} e set locked = now(), status = 'locked'
where e.id in (
  select l.id from ${EVENTS} l
  where l.status in ('scheduled', 'locked') and l.scheduled_time <= now()
    and (l.next_retry_at is null or l.next_retry_at <= now())
    and (l.locked is null or l.locked < now() - make_interval(secs => coalesce((l.retry_conf->>'timeout_seconds')::int, 60) + ${LEASE_MARGIN_SEC}))
  order by l.scheduled_time
  limit $1
  for update skip locked
)
returning e.id, e.kind, e.trigger_name, ${ISO('e.scheduled_time')} as scheduled_time, ${ISO('e.created_at')} as created_at,
  e.webhook_conf::text as webhook_conf, e.payload::text as payload, e.header_conf::text as header_conf,
  e.retry_conf::text as retry_conf, e.comment, e.tries, e.locked::text as token,
  extract(epoch from now() - e.scheduled_time)::float8 as age_sec`;

const RECORD = `
with inv as (
  insert into ${INVOCATIONS} (event_id, status, request, response) values ($1, $2::int, $3::text::json, $4::text::json)
)
update ${EVENTS} set tries = tries + 1, status = $6, locked = null,
  next_retry_at = case when $7::float8 is null then null else now() + make_interval(secs => $7::float8) end
where id = $1 and locked = $5::text::timestamptz`;

const SET_STATUS = `update ${EVENTS} set status = $3, locked = null, next_retry_at = case when $4::float8 is null then next_retry_at else now() + make_interval(secs => $4::float8) end
  where id = $1 and locked = $2::text::timestamptz`;

export class Scheduler {
  private readonly slots: Semaphore;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly inFlight = new Map<string, InFlightDelivery>();
  /** Triggers being deleted or replaced here: not topped up until the operation's metadata is
   * committed (name -> until when, ms), so that a round reading the previous build does not
   * generate slots the operation just dropped. */
  private readonly tombstones = new Map<string, number>();
  private generating: Promise<void> = Promise.resolve();
  readonly stats = { claimed: 0, delivered: 0, failed: 0, errored: 0, dead: 0 };

  constructor(
    private readonly state: () => SchedulerState,
    private readonly env: Readonly<Record<string, string | undefined>>,
    private readonly opts: SchedulerOptions,
    private readonly log: Logger,
  ) {
    this.slots = new Semaphore(Math.max(1, opts.poolSize));
  }

  start(): void {
    if (!this.loopDone) this.loopDone = this.loop();
  }

  poke(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loopDone;
    await drainDeliveries(this.inFlight, this.opts.graceMs, (stage, n) =>
      this.log.info('scheduled-trigger', { message: stage === 'waiting' ? 'waiting for deliveries in flight' : 'grace period over: releasing deliveries in flight', in_flight: n }),
    );
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let full = false;
      try {
        full = await this.round();
      } catch (e) {
        this.log.warn('scheduled-trigger', { message: 'could not process scheduled events', error: errorDetail(e) });
      }
      if (this.stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, full ? 10 : this.opts.fetchIntervalMs);
        const self = this;
        function done() {
          clearTimeout(timer);
          self.wake = undefined;
          resolve();
        }
        this.wake = done;
      });
    }
  }

  /** All cron triggers: the metadata's and the catalog's. */
  private async triggers(exec: SqlExecutor): Promise<Map<string, CronTriggerMeta>> {
    const out = new Map<string, CronTriggerMeta>();
    for (const t of this.state().triggers) out.set(t.name, t);
    const rows = await exec.query<{ definition: CronTriggerMeta }>(`select definition from ${CRON_TRIGGERS}`);
    for (const r of rows) out.set(r.definition.name, r.definition);
    return out;
  }

  /** One round; true when it claimed a full batch. */
  async round(): Promise<boolean> {
    const exec = this.state().executor;
    if (!exec) return false;
    const triggers = await this.triggers(exec);
    await this.generate(exec, triggers);
    const n = Math.min(this.opts.batchSize, this.slots.available);
    if (n === 0) return false;
    const events = await exec.query<Claimed>(CLAIM, [n]);
    this.stats.claimed += events.length;
    for (const e of events) this.launch(exec, triggers, e);
    return events.length === n;
  }

  /** Runs `fn` (an operation dropping a trigger's slots) once no round is topping up, with the
   * trigger kept from rounds for `holdMs`. */
  async exclusive<T>(name: string, fn: () => Promise<T>, holdMs = 30_000): Promise<T> {
    this.tombstones.set(name, Date.now() + holdMs);
    await this.generating;
    return fn();
  }

  /** The operation's metadata is committed: rounds may top the trigger up again. */
  release(name: string): void {
    this.tombstones.delete(name);
  }

  private generate(exec: SqlExecutor, triggers: Map<string, CronTriggerMeta>): Promise<void> {
    const p = this.generateNow(exec, triggers);
    this.generating = p.catch(() => {});
    return p;
  }

  private async generateNow(exec: SqlExecutor, all: Map<string, CronTriggerMeta>): Promise<void> {
    const triggers = new Map(all);
    const now = Date.now();
    for (const [name, until] of this.tombstones) {
      if (until < now) this.tombstones.delete(name);
      else triggers.delete(name);
    }
    if (triggers.size === 0) return;
    const horizon = await cronHorizon(exec, [...triggers.keys()]);
    for (const t of triggers.values()) {
      const h = horizon.get(t.name);
      if (h && h.ahead >= AHEAD / 2) continue;
      await topUp(exec, t, h?.ahead ?? 0, h?.last ?? null);
    }
  }

  private launch(exec: SqlExecutor, triggers: Map<string, CronTriggerMeta>, e: Claimed): void {
    this.slots.tryAcquire();
    const ctl = new AbortController();
    const done = this.deliver(exec, triggers, e, ctl.signal)
      .catch((err) => this.log.error('scheduled-trigger', { message: 'delivery failed', event_id: e.id, error: errorDetail(err) }))
      .finally(() => {
        this.inFlight.delete(e.id);
        this.slots.release();
      });
    this.inFlight.set(e.id, { ctl, done });
  }

  private async deliver(exec: SqlExecutor, triggers: Map<string, CronTriggerMeta>, e: Claimed, signal: AbortSignal): Promise<void> {
    let webhook: string;
    let headerConf: HeaderConf[];
    let retry: RetryConfST;
    let body: Record<string, unknown>;
    if (e.kind === 'cron') {
      // A trigger created after this round read the triggers (its slots claimed by the same
      // round) is known by now: looked up again before the slot is put back for 10 s.
      const t = triggers.get(e.trigger_name ?? '') ?? (await this.triggers(exec)).get(e.trigger_name ?? '');
      if (!t) {
        // Not (yet) known here: another instance's newer metadata, or a trigger being deleted.
        // A slot nobody knew for longer than the default tolerance is an orphan: dropped.
        if (e.tries === 0 && e.age_sec > DEFAULT_RETRY_CONF.tolerance_seconds) await exec.query(`delete from ${EVENTS} where id = $1 and locked = $2::text::timestamptz`, [e.id, e.token]);
        else await exec.query(SET_STATUS, [e.id, e.token, 'scheduled', 10]);
        return;
      }
      webhook = t.webhook;
      headerConf = t.headers ?? [];
      retry = { ...DEFAULT_RETRY_CONF, ...t.retry_conf };
      body = { scheduled_time: e.scheduled_time, payload: t.payload ?? null, name: t.name, id: e.id, comment: t.comment ?? null };
    } else {
      webhook = JSON.parse(e.webhook_conf ?? 'null');
      headerConf = JSON.parse(e.header_conf ?? '[]') ?? [];
      retry = { ...DEFAULT_RETRY_CONF, ...JSON.parse(e.retry_conf ?? '{}') };
      body = { scheduled_time: e.scheduled_time, payload: JSON.parse(e.payload ?? 'null'), id: e.id, comment: e.comment, created_at: e.created_at };
    }
    if (e.tries === 0 && e.age_sec > retry.tolerance_seconds) {
      this.stats.dead++;
      await exec.query(SET_STATUS, [e.id, e.token, 'dead', null]);
      this.log.warn('scheduled-trigger', { message: 'event missed its tolerance: marked dead', event_id: e.id, scheduled_time: e.scheduled_time });
      return;
    }
    const text = JSON.stringify(body);
    let r: WebhookResult;
    try {
      const url = resolveUrlTemplate(webhook, this.env);
      const headers = resolveHeaders(headerConf, this.env);
      r = await postWebhook({ url, body: text, headers, timeoutMs: retry.timeout_seconds * 1000, signal });
    } catch (err) {
      if (!(err instanceof EnvError)) throw err;
      r = { ok: false, headers: [], body: '', truncated: false, error: err.message, durationMs: 0 };
    }
    if (r.status === undefined && r.error === 'aborted') {
      await exec.query(SET_STATUS, [e.id, e.token, 'scheduled', null]);
      return;
    }
    let status = 'delivered';
    let retryIn: number | null = null;
    if (!r.ok) {
      const next = nextAttempt({ numRetries: retry.num_retries, intervalSec: retry.retry_interval_seconds }, e.tries, r.retryAfterSec);
      if ('error' in next) status = 'error';
      else {
        status = 'scheduled';
        retryIn = next.retryInSec;
      }
    }
    const request = JSON.stringify(invocationRequest(body, headerConf));
    const response = JSON.stringify(invocationResponse(r));
    await exec.query(RECORD, [e.id, r.status ?? null, request, response, e.token, status, retryIn]);
    if (status === 'delivered') this.stats.delivered++;
    else if (status === 'error') this.stats.errored++;
    else this.stats.failed++;
    const detail = { event_id: e.id, kind: e.kind, trigger_name: e.trigger_name, status: r.status ?? null, outcome: status === 'scheduled' ? 'retry' : status };
    if (status === 'delivered') this.log.debug('scheduled-trigger', detail);
    else this.log.warn('scheduled-trigger', { ...detail, ...(r.error ? { error: r.error } : {}) });
  }
}

/** Adds slots after the last generated one (or now) until AHEAD are ahead of now. */
export async function topUp(exec: SqlExecutor, t: CronTriggerMeta, ahead: number, last: Date | null): Promise<void> {
  const now = new Date();
  const from = last && last > now ? last : now;
  const times = parseSchedule(t.schedule).nextRuns(AHEAD - ahead, from);
  await insertCronEvents(exec, t.name, times, { ...DEFAULT_RETRY_CONF, ...t.retry_conf });
}
