/**
 * The delivery worker: claims batches of pending events in each source, POSTs them to their
 * webhooks (at most --events-http-pool-size at a time), records every invocation and moves each
 * event to `delivered`, a later retry or `error` (Note [Claiming events]).
 */
import { errorDetail, type Logger } from '../../core/log.js';
import type { SqlExecutor } from '../database/index.js';
import { EVENT_LOG, INVOCATION_LOGS } from './capture.js';
import type { EventTriggersBuild, ResolvedTrigger, SourceTriggers } from './build.js';
import { LEASE_MARGIN_SEC } from './events.js';
import { invocationResponse, nextAttempt, postWebhook, Semaphore, type WebhookResult } from './webhook.js';

/*
 * Note [Claiming events]
 * An event row is written by the SQL trigger in the same transaction as the row change, so a
 * committed change has its event and a rolled-back one has none. The worker claims events with one
 * statement: `UPDATE ... SET locked = now() WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)`, so
 * two instances never claim one event at the same time, and the claim's timestamp is its token.
 * A claim lasts the trigger's `timeout_sec` and LEASE_MARGIN_SEC more: the webhook request is cut
 * at `timeout_sec`, and only as many events are claimed as there are free delivery slots, so a
 * delivery has started and ended within its claim. An event whose claim is older than that (its
 * instance crashed or was killed) is claimed again by any instance: at least once, never lost.
 * The outcome is written only where the claim still holds (`locked` = the token): a delivery that
 * outlived its claim (a stalled process) records its invocation but leaves the event to the one
 * that took it over. Graceful shutdown lets deliveries in flight finish within the grace period,
 * then cuts the others and releases their claims (`locked = null`), so they go out again at once.
 */

export interface WorkerOptions {
  /** Milliseconds between a look for events that found none and the next. */
  fetchIntervalMs: number;
  /** Most events claimed at once per source. */
  batchSize: number;
  /** Most webhook requests in flight. */
  poolSize: number;
  /** Milliseconds shutdown waits for deliveries in flight. */
  graceMs: number;
}

interface Claimed {
  id: string;
  schema_name: string;
  table_name: string;
  trigger_name: string;
  payload: string;
  tries: number;
  created_at: string;
  token: string;
}

// No join in the claim's scan: the trigger names are an init plan and a claim's lease a lookup, so
// that PostgreSQL walks event_log_fetch_events in its order and stops at the limit, however large
// the backlog.
const CLAIM = `
with lease as materialized (select * from json_to_recordset($1::text::json) as x(name text, secs int))
update ${EVENT_LOG} e set locked = now()
where e.id in (
  select l.id from ${EVENT_LOG} l
  where l.delivered = false and l.error = false and l.archived = false
    and l.trigger_name = any(array(select name from lease))
    and (l.locked is null or l.locked < now() - make_interval(secs => (select secs from lease where lease.name = l.trigger_name)))
    and (l.next_retry_at is null or l.next_retry_at <= now())
  order by l.locked nulls first, l.next_retry_at nulls first, l.created_at
  limit $2
  for update skip locked
)
returning e.id, e.schema_name, e.table_name, e.trigger_name, e.payload::text as payload, e.tries,
  to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, e.locked::text as token`;

const RECORD = `
with inv as (
  insert into ${INVOCATION_LOGS} (event_id, trigger_name, status, request, response, duration_ms)
  values ($1, $2, $3::int, $4::text::json, $5::text::json, $6::float8)
)
update ${EVENT_LOG} set tries = tries + 1, delivered = $8::boolean, error = $9::boolean, locked = null,
  next_retry_at = case when $10::float8 is null then null else now() + make_interval(secs => $10::float8) end
where id = $1 and locked = $7::text::timestamptz`;

const RELEASE = `update ${EVENT_LOG} set locked = null where id = $1 and locked = $2::text::timestamptz`;

interface InFlight {
  ctl: AbortController;
  done: Promise<void>;
}

export class EventWorker {
  private readonly slots: Semaphore;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private waitingForRoom = false;
  private readonly inFlight = new Map<string, InFlight>();
  /** Counters for tests and logs. */
  readonly stats = { claimed: 0, delivered: 0, failed: 0, errored: 0, released: 0 };

  constructor(
    private readonly builds: () => EventTriggersBuild,
    private readonly opts: WorkerOptions,
    private readonly log: Logger,
  ) {
    this.slots = new Semaphore(Math.max(1, opts.poolSize));
  }

  start(): void {
    if (this.loopDone) return;
    this.loopDone = this.loop();
  }

  /** Wakes the loop now (a test, or an event known to be waiting). */
  poke(): void {
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loopDone;
    if (this.inFlight.size > 0) {
      this.log.info('event-trigger', { message: 'waiting for deliveries in flight', in_flight: this.inFlight.size });
      const all = Promise.all([...this.inFlight.values()].map((f) => f.done));
      await Promise.race([all, sleep(this.opts.graceMs)]);
    }
    if (this.inFlight.size > 0) {
      this.log.warn('event-trigger', { message: 'grace period over: releasing deliveries in flight', in_flight: this.inFlight.size });
      for (const f of this.inFlight.values()) f.ctl.abort();
      await Promise.race([Promise.all([...this.inFlight.values()].map((f) => f.done)), sleep(5000)]);
    }
  }

  /*
   * Note [Polling for events]
   * A round claims what each source has pending, up to the free delivery slots. A full batch is
   * followed at once by another round (or, with no slot free, by one when a delivery ends). After
   * a round that found events the worker looks again within MIN_PAUSE_MS, and each empty round
   * after that doubles the pause until it is --events-fetch-interval again, which is also the
   * pause of an instance that found nothing since it started: under a stream of changes an event
   * waits milliseconds, an idle instance polls once per interval. (Hasura looks again at once
   * after a round that found events, and after the interval otherwise, so that an event that
   * comes just after an empty round waits for the interval.)
   */
  private async loop(): Promise<void> {
    /** The pause after the last round: 0 before the first, the interval when idle. */
    let pause = 0;
    while (!this.stopping) {
      let claimed = 0;
      let full = false;
      try {
        for (const [source, st] of this.builds().sources) {
          if (this.stopping) break;
          if (st.triggers.size === 0) continue;
          const room = this.slots.available;
          if (room === 0) {
            full = true;
            break;
          }
          const n = Math.min(this.opts.batchSize, room);
          const events = await this.claim(st, n);
          this.stats.claimed += events.length;
          claimed += events.length;
          for (const e of events) this.launch(source, st, e);
          if (events.length === n) full = true;
        }
      } catch (e) {
        this.log.warn('event-trigger', { message: 'could not fetch events', error: errorDetail(e) });
      }
      if (this.stopping) break;
      if (full) {
        if (this.slots.available > 0) continue;
        await this.waitUntil(undefined, true);
        continue;
      }
      const interval = this.opts.fetchIntervalMs;
      pause = claimed > 0 ? Math.min(MIN_PAUSE_MS, interval) : pause === 0 ? interval : Math.min(pause * 2, interval);
      await this.waitUntil(pause, false);
    }
  }

  /** Sleeps `ms` (forever when undefined), or until poked or stopped; `forRoom`: also until a
   * delivery ends. */
  private waitUntil(ms: number | undefined, forRoom: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      this.waitingForRoom = forRoom;
      const self = this;
      function done() {
        if (timer) clearTimeout(timer);
        self.wake = undefined;
        self.waitingForRoom = false;
        resolve();
      }
      this.wake = done;
    });
  }

  private async claim(st: SourceTriggers, n: number): Promise<Claimed[]> {
    const lease = [...st.triggers.values()].map((t) => ({ name: t.meta.name, secs: t.timeoutSec + LEASE_MARGIN_SEC }));
    return st.connection.executor.query<Claimed>(CLAIM, [JSON.stringify(lease), n], { prepare: true });
  }

  private launch(source: string, st: SourceTriggers, e: Claimed): void {
    if (!this.slots.tryAcquire()) throw new Error('event worker: claimed more events than free delivery slots');
    const ctl = new AbortController();
    const done = this.deliver(source, st, e, ctl.signal)
      .catch((err) => this.log.error('event-trigger', { message: 'delivery failed', event_id: e.id, error: errorDetail(err) }))
      .finally(() => {
        this.inFlight.delete(e.id);
        this.slots.release();
        if (this.waitingForRoom) this.wake?.();
      });
    this.inFlight.set(e.id, { ctl, done });
  }

  private async deliver(source: string, st: SourceTriggers, e: Claimed, signal: AbortSignal): Promise<void> {
    const exec = st.connection.executor;
    // The configuration the event was claimed with: its lease was computed from its timeout.
    const trigger = st.triggers.get(e.trigger_name);
    if (!trigger) {
      await this.release(exec, e);
      return;
    }
    const body = payloadText(e, trigger);
    const r = await postWebhook({ url: trigger.url, body, headers: trigger.headers, timeoutMs: trigger.timeoutSec * 1000, signal });
    if (r.status === undefined && r.error === 'aborted') {
      await this.release(exec, e);
      return;
    }
    await this.record(exec, source, trigger, e, body, r);
  }

  private async release(exec: SqlExecutor, e: Claimed): Promise<void> {
    this.stats.released++;
    await exec.query(RELEASE, [e.id, e.token], { prepare: true });
  }

  private async record(exec: SqlExecutor, source: string, trigger: ResolvedTrigger, e: Claimed, body: string, r: WebhookResult): Promise<void> {
    const request = `{"payload":${body},"headers":${JSON.stringify(trigger.meta.headers ?? [])},"version":"2"}`;
    const response = JSON.stringify(invocationResponse(r));
    let delivered = false;
    let error = false;
    let retryIn: number | null = null;
    if (r.ok) delivered = true;
    else {
      const next = nextAttempt({ numRetries: trigger.numRetries, intervalSec: trigger.intervalSec }, e.tries, r.retryAfterSec);
      if ('error' in next) error = true;
      else retryIn = next.retryInSec;
    }
    await exec.query(RECORD, [e.id, e.trigger_name, r.status ?? null, request, response, r.durationMs, e.token, delivered, error, retryIn], { prepare: true });
    const detail = {
      event_id: e.id,
      trigger_name: e.trigger_name,
      source,
      status: r.status ?? null,
      duration_ms: r.durationMs,
      outcome: delivered ? 'delivered' : error ? 'error' : 'retry',
      ...(retryIn !== null ? { retry_in_sec: retryIn } : {}),
      ...(r.error ? { error: r.error } : {}),
    };
    if (delivered) {
      this.stats.delivered++;
      this.log.debug('event-trigger', detail);
    } else {
      if (error) this.stats.errored++;
      else this.stats.failed++;
      this.log.warn('event-trigger', detail);
    }
  }
}

/** Hasura's delivery payload, with the event's JSON spliced as PostgreSQL gave it. */
export function payloadText(e: Pick<Claimed, 'id' | 'created_at' | 'trigger_name' | 'schema_name' | 'table_name' | 'payload' | 'tries'>, trigger: Pick<ResolvedTrigger, 'numRetries'>): string {
  return (
    `{"id":${JSON.stringify(e.id)},"created_at":${JSON.stringify(e.created_at)},"trigger":{"name":${JSON.stringify(e.trigger_name)}},` +
    `"table":{"schema":${JSON.stringify(e.schema_name)},"name":${JSON.stringify(e.table_name)}},"event":${e.payload},` +
    `"delivery_info":{"current_retry":${e.tries},"max_retries":${trigger.numRetries}}}`
  );
}

/** The shortest pause between two looks for events (Note [Polling for events]). */
const MIN_PAUSE_MS = 10;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

