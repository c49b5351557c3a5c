/**
 * The delivery worker: claims batches of pending events in each source, POSTs them to their
 * webhooks (at most --events-http-pool-size at a time), records every invocation and moves each
 * event to `delivered`, a later retry or `error` (Note [Claiming events]).
 */
import { errorDetail, type Logger } from '../../core/log.js';
import type { ClaimedEvent as Claimed, EventCapture, SourceConnection, SqlExecutor } from '../database/index.js';
import type { EventTriggersBuild, ResolvedTrigger, SourceTriggers } from './build.js';
import { LEASE_MARGIN_SEC } from './definition.js';
import { drainDeliveries, invocationResponse, nextAttempt, postWebhook, Semaphore, type InFlightDelivery, type WebhookResult } from './webhook.js';
import { applyRequestTransform, applyResponseTransform, TransformError, type WebhookCall } from '../webhook-transforms/index.js';

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
 * Outcomes are written in batches (Note [Recording outcomes]): an event is `delivered` only once
 * its batch is committed, so a crash before that redelivers it (at least once).
 */

/*
 * Note [Recording outcomes]
 * One statement per outcome made PostgreSQL and the worker pay a round trip per event: at 1,000
 * events a second that was most of the engine's CPU (bench/events). Outcomes are queued per
 * source and written by one statement per batch (the invocation rows and the event updates, from
 * one json_to_recordset), a batch being whatever queued while the previous one was written, so
 * an idle source writes an outcome at once and a busy one in fewer, larger statements; up to
 * MAX_RECORD_WRITERS batches are written at once (on a loaded machine a batch took 50-100 ms:
 * one writer at a time capped deliveries at a few hundred a second). Each row keeps its fencing
 * (`locked` = the claim's token). A delivery's slot (--events-http-pool-size bounds requests to
 * webhooks) is freed when the webhook has answered, not when the outcome is written: the
 * request has then ended within its claim, and an outcome written after the claim ran out
 * changes nothing (the event goes out again: at least once). A batch that fails leaves its
 * events claimed: they are claimed again when their lease ends.
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


/** Most outcomes written by one statement. */
const MAX_RECORD_BATCH = 500;
/** Most statements writing outcomes at once per source. */
const MAX_RECORD_WRITERS = 3;

interface Outcome {
  id: string;
  /** The row of RECORD's recordset, as JSON text (the request and response spliced as JSON). */
  json: string;
  resolve(): void;
  reject(e: unknown): void;
}

interface OutcomeQueue {
  /** The source kind's event log the batches are written to. */
  capture: EventCapture;
  queued: Outcome[];
  /** Statements writing batches now (at most MAX_RECORD_WRITERS). */
  writers: number;
}


/** A source's LISTEN (Note [Waking on commit]). */
interface Listener {
  /** Whether the LISTEN is in place (until it is, events are found by polling only). */
  live: boolean;
  unlisten: (() => Promise<void>) | undefined;
  dropped: boolean;
}

export class EventWorker {
  private readonly slots: Semaphore;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** A poke came while no wait was pending: the next wait ends at once. */
  private poked = false;
  private waitingForRoom = false;
  private readonly inFlight = new Map<string, InFlightDelivery>();
  private readonly outcomes = new Map<SqlExecutor, OutcomeQueue>();
  private readonly listeners = new Map<SourceConnection, Listener>();
  /** How long after a claim the loop keeps polling (ACTIVE_EXTRA_MS). */
  private activeMs = ACTIVE_EXTRA_MS;
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

  /** Wakes the loop now (a notification, a test, or an event known to be waiting); when it is
   * in a round, the next round starts as soon as this one ends. */
  poke(): void {
    this.poked = true;
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loopDone;
    await drainDeliveries(this.inFlight, this.opts.graceMs, (stage, n) =>
      stage === 'waiting'
        ? this.log.info('event-trigger', { message: 'waiting for deliveries in flight', in_flight: n })
        : this.log.warn('event-trigger', { message: 'grace period over: releasing deliveries in flight', in_flight: n }),
    );
    await Promise.all([...this.listeners.keys()].map((c) => this.unlisten(c)));
  }

  /*
   * Note [Waking on commit]
   * A transaction that writes events notifies the kind's channel (EventCapture.channel;
   * PostgreSQL: a capture function runs `pg_notify`, and so do manual events and redelivery),
   * and PostgreSQL delivers a notification when (and only if) the transaction commits.
   * The worker LISTENs on each source that has event triggers (SourceConnection.listen: a
   * connection of its own, listening again after a reconnect) and a notification starts a round
   * at once, so an event committed while the worker is idle waits for no polling interval. A
   * notification is only a hint: the claim is what decides, several instances are woken and SKIP
   * LOCKED gives each event to one of them.
   *
   * Not every transaction notifies. PostgreSQL serialises the commits of notifying transactions
   * (PreCommit_Notify holds a database-wide lock until after the commit's WAL flush): with a
   * notification per transaction, 1,000 single-row inserts a second from 8 connections fell to
   * ~400 a second on one disk (bench/events). So a session notifies at most once per
   * the kind's `notifyEverySec` (PostgreSQL: the time of its last notification is the session
   * setting `svc.event_notified_at`, set with the notification, so a rolled-back transaction
   * resets it too), and a worker that claimed events in the last `activeMs` (notifyEverySec and
   * ACTIVE_EXTRA_MS more) keeps polling with short pauses (at most ACTIVE_PAUSE_MAX_MS): the
   * transactions a session commits without notifying come within notifyEverySec of one it
   * notified for, whose event (claimed by this worker or by another woken instance) made that
   * worker active for activeMs after it was claimed, which is after it was committed.
   *
   * Polling stays for what no notification announces (a retry's time, a lease that ran out, a
   * trigger that became consistent) and for a LISTEN that is not in place (not yet, or lost with
   * its connection: when it is back a round runs at once, to catch what was committed meanwhile),
   * or that a source cannot have: a PostgreSQL source with `use_prepared_statements: false` has
   * no `listen`, as it may be behind a transaction pooler (Note [Poolers] in
   * plugins/postgres/connection/connection.ts). So: while every source is listened to, an idle worker waits
   * for the interval or a notification; otherwise it backs off as Note [Polling for events] says.
   */
  private syncListeners(sources: Iterable<[string, SourceTriggers]>): boolean {
    let allLive = true;
    const seen = new Set<SourceConnection>();
    this.activeMs = ACTIVE_EXTRA_MS;
    for (const [source, st] of sources) {
      if (st.triggers.size === 0) continue;
      seen.add(st.connection);
      this.activeMs = Math.max(this.activeMs, st.capture.notifyEverySec * 1000 + ACTIVE_EXTRA_MS);
      let l = this.listeners.get(st.connection);
      if (!l) {
        if (!st.connection.listen || st.capture.channel === undefined) {
          allLive = false;
          continue;
        }
        const listener: Listener = { live: false, unlisten: undefined, dropped: false };
        this.listeners.set(st.connection, (l = listener));
        st.connection
          .listen(st.capture.channel, () => this.poke(), () => {
            listener.live = true;
            this.poke();
          })
          .then(
            (h) => {
              listener.unlisten = h.unlisten;
              if (listener.dropped) void h.unlisten().catch(() => {});
            },
            (e) => {
              // Polling goes on; the LISTEN is tried again in a later round.
              if (this.listeners.get(st.connection) === listener) this.listeners.delete(st.connection);
              this.log.warn('event-trigger', { message: 'could not listen for events: polling only', source, error: errorDetail(e) });
            },
          );
      }
      if (!l.live) allLive = false;
    }
    for (const c of [...this.listeners.keys()]) if (!seen.has(c)) void this.unlisten(c);
    return allLive;
  }

  private async unlisten(c: SourceConnection): Promise<void> {
    const l = this.listeners.get(c);
    if (!l) return;
    this.listeners.delete(c);
    l.dropped = true;
    l.live = false;
    await l.unlisten?.().catch(() => {});
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
    /** When a round last claimed events (Note [Waking on commit]). */
    let lastClaimAt = -Infinity;
    while (!this.stopping) {
      let claimed = 0;
      let full = false;
      let listening = false;
      /** The build changed during a claim: look again at once, with the new one. */
      let again = false;
      // A notification from now on is for a commit this round may not see: it starts another.
      this.poked = false;
      try {
        const sources = this.builds().sources;
        listening = this.syncListeners(sources);
        for (const [source, st] of sources) {
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
          if (events.length > 0 && this.builds().sources.get(source) !== st) {
            // Note [Claims across builds]
            await Promise.all(events.map((e) => this.release(st.capture, st.connection.executor, e)));
            again = true;
            break;
          }
          claimed += events.length;
          for (const e of events) this.launch(source, st, e);
          if (events.length === n) full = true;
        }
      } catch (e) {
        this.log.warn('event-trigger', { message: 'could not fetch events', error: errorDetail(e) });
      }
      if (this.stopping) break;
      if (again) continue;
      if (full) {
        if (this.slots.available > 0) continue;
        await this.waitUntil(undefined, true);
        continue;
      }
      const interval = this.opts.fetchIntervalMs;
      const at = performance.now();
      if (claimed > 0) lastClaimAt = at;
      const next = claimed > 0 ? Math.min(MIN_PAUSE_MS, interval) : pause === 0 ? interval : Math.min(pause * 2, interval);
      if (!listening) pause = next;
      else if (at - lastClaimAt < this.activeMs) pause = Math.min(next, ACTIVE_PAUSE_MAX_MS);
      else pause = interval;
      await this.waitUntil(pause, false);
    }
  }

  /** Sleeps `ms` (forever when undefined), or until poked or stopped; `forRoom`: also until a
   * delivery ends. */
  private waitUntil(ms: number | undefined, forRoom: boolean): Promise<void> {
    if (this.poked) {
      this.poked = false;
      return Promise.resolve();
    }
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

  /*
   * Note [Claims across builds]
   * A round reads the build, then claims; a delivery uses the triggers of the build its event was
   * claimed with (its lease came from their timeouts). A trigger replaced while the claim was on
   * its way, and an event written after the replacement returned, would then go out with the old
   * configuration: its old webhook, template or headers. So when the source's part of the build
   * changed while a claim ran, the round gives the claimed events back (`locked = null`) and the
   * next round, at once, claims them with the new build. A build installed after a claim returned
   * cannot hold an event that claim took: the claim's snapshot came first, and a metadata change
   * is installed before it answers. (Another instance's change reaches this one when it syncs;
   * until then this instance delivers with what it has, as Hasura's instances do.)
   */
  private async claim(st: SourceTriggers, n: number): Promise<Claimed[]> {
    const lease = [...st.triggers.values()].map((t) => ({ name: t.meta.name, secs: t.timeoutSec + LEASE_MARGIN_SEC }));
    return st.capture.claim(st.connection.executor, lease, n);
  }

  private launch(source: string, st: SourceTriggers, e: Claimed): void {
    if (!this.slots.tryAcquire()) throw new Error('event worker: claimed more events than free delivery slots');
    const ctl = new AbortController();
    let held = true;
    /** The slot bounds requests to webhooks: it is free once the webhook answered (Note
     * [Recording outcomes]). */
    const free = () => {
      if (!held) return;
      held = false;
      this.slots.release();
      if (this.waitingForRoom) this.wake?.();
    };
    const done = this.deliver(source, st, e, ctl.signal, free)
      .catch((err) => this.log.error('event-trigger', { message: 'delivery failed', event_id: e.id, error: errorDetail(err) }))
      .finally(() => {
        this.inFlight.delete(e.id);
        free();
      });
    this.inFlight.set(e.id, { ctl, done });
  }

  private async deliver(source: string, st: SourceTriggers, e: Claimed, signal: AbortSignal, answered: () => void): Promise<void> {
    const exec = st.connection.executor;
    // The configuration the event was claimed with: its lease was computed from its timeout.
    const trigger = st.triggers.get(e.trigger_name);
    if (!trigger) {
      await this.release(st.capture, exec, e);
      return;
    }
    const body = payloadText(e, trigger);
    let call: WebhookCall = { method: 'POST', url: trigger.url, body, headers: trigger.headers };
    let payload: { event?: { session_variables?: Record<string, unknown> | null } } | undefined;
    let requestContext: unknown = null;
    if (trigger.request || trigger.response) payload = JSON.parse(body) as typeof payload;
    const sessionVariables = payload?.event?.session_variables ?? null;
    if (trigger.request) {
      try {
        const out = applyRequestTransform(trigger.request, { url: trigger.url, payload, payloadText: body, sessionVariables, headers: trigger.headers });
        call = out.call;
        requestContext = out.context;
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        // Note [Transform failures]
        answered();
        await this.record(st.capture, exec, source, trigger, e, body, { ok: false, headers: [], body: '', truncated: false, error: JSON.stringify(err.bundle), durationMs: 0 }, true);
        return;
      }
    }
    let r = await postWebhook({ url: call.url, method: call.method, body: call.body, headers: call.headers, timeoutMs: trigger.timeoutSec * 1000, signal });
    if (r.status === undefined && r.error === 'aborted') {
      await this.release(st.capture, exec, e);
      return;
    }
    answered();
    if (trigger.response && r.ok && r.status !== undefined) {
      let answer: unknown = null;
      try {
        answer = JSON.parse(r.body);
      } catch {
        /* not JSON: the template sees null, as in Hasura */
      }
      try {
        r = { ...r, body: JSON.stringify(applyResponseTransform(trigger.response, { body: answer, status: r.status, request: requestContext, sessionVariables }) ?? null) };
      } catch (err) {
        if (!(err instanceof TransformError)) throw err;
        // Note [Transform failures]
        const { retryAfterSec: _r, ...rest } = r;
        r = { ...rest, ok: false, status: 500, body: JSON.stringify(err.bundle), headers: [] };
      }
    }
    await this.record(st.capture, exec, source, trigger, e, body, r);
  }

  /** Queues an outcome for the source's next batch; resolves once it is written (Note
   * [Recording outcomes]). */
  private write(capture: EventCapture, exec: SqlExecutor, id: string, json: string): Promise<void> {
    let q = this.outcomes.get(exec);
    if (!q) this.outcomes.set(exec, (q = { capture, queued: [], writers: 0 }));
    const queue = q;
    const p = new Promise<void>((resolve, reject) => queue.queued.push({ id, json, resolve, reject }));
    if (queue.writers < MAX_RECORD_WRITERS) {
      queue.writers++;
      void this.writeQueued(exec, queue);
    }
    return p;
  }

  private async writeQueued(exec: SqlExecutor, q: OutcomeQueue): Promise<void> {
    try {
      while (q.queued.length > 0) {
        const batch = q.queued.splice(0, MAX_RECORD_BATCH);
        try {
          await q.capture.record(exec, batch.map((o) => o.json), batch.map((o) => o.id));
          for (const o of batch) o.resolve();
        } catch (e) {
          for (const o of batch) o.reject(e);
        }
      }
    } finally {
      q.writers--;
      if (this.outcomes.get(exec) === q && q.writers === 0 && q.queued.length === 0) this.outcomes.delete(exec);
    }
  }

  private async release(capture: EventCapture, exec: SqlExecutor, e: Claimed): Promise<void> {
    this.stats.released++;
    await capture.release(exec, e.id, e.token);
  }

  /** Writes an attempt's outcome; `final` ends the event in error whatever its retries left. */
  private async record(capture: EventCapture, exec: SqlExecutor, source: string, trigger: ResolvedTrigger, e: Claimed, body: string, r: WebhookResult, final = false): Promise<void> {
    const request = `{"payload":${body},"headers":${JSON.stringify(trigger.meta.headers ?? [])},"version":"2"}`;
    const response = JSON.stringify(invocationResponse(r));
    let delivered = false;
    let error = false;
    let retryIn: number | null = null;
    if (r.ok) delivered = true;
    else if (final) error = true;
    else {
      const next = nextAttempt({ numRetries: trigger.numRetries, intervalSec: trigger.intervalSec }, e.tries, r.retryAfterSec);
      if ('error' in next) error = true;
      else retryIn = next.retryInSec;
    }
    const json =
      `{"id":${JSON.stringify(e.id)},"trigger_name":${JSON.stringify(e.trigger_name)},"status":${r.status ?? null},"request":${request},` +
      `"response":${response},"duration_ms":${r.durationMs},"token":${JSON.stringify(e.token)},"delivered":${delivered},"error":${error},"retry_in":${retryIn}}`;
    await this.write(capture, exec, e.id, json);
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

/*
 * Note [Transform failures]
 * A trigger's transforms are compiled in the build (a template that does not parse makes the
 * trigger inconsistent), but applying one can still fail on an event: an unbound variable, a
 * function given the wrong type, a URL template that gives no URL. Such a failure never crashes
 * the worker or leaves the event claimed:
 *   - a request transform that fails sends nothing, and the event ends in `error` at once (the
 *     same event would fail the same way on every retry; Hasura's PESetError). Hasura records no
 *     invocation for it; here one is recorded, so that the reason can be read where deliveries
 *     are read: status null, and a `client_error` whose message is Hasura's TransformErrorBundle
 *     as JSON text (`[{"error_code": ..., "message": ...}]`);
 *   - a response transform that fails makes a delivered answer a failed attempt, as Hasura's
 *     `HOther` error: status 500, the bundle as the message, and the trigger's retries apply.
 * The invocation's `request` is the payload before the transform, as Hasura records it.
 */

/** Hasura's delivery payload, with the event's JSON spliced as PostgreSQL gave it. */
export function payloadText(e: Pick<Claimed, 'id' | 'created_at' | 'trigger_name' | 'schema_name' | 'table_name' | 'payload' | 'tries'>, trigger: Pick<ResolvedTrigger, 'numRetries'>): string {
  return (
    `{"id":${JSON.stringify(e.id)},"created_at":${JSON.stringify(e.created_at)},"trigger":{"name":${JSON.stringify(e.trigger_name)}},` +
    `"table":{"schema":${JSON.stringify(e.schema_name)},"name":${JSON.stringify(e.table_name)}},"event":${e.payload},` +
    `"delivery_info":{"current_retry":${e.tries},"max_retries":${trigger.numRetries}}}`
  );
}

/** The shortest pause between two looks for events (Note [Polling for events]). */
const MIN_PAUSE_MS = 5;
/** A listening worker keeps polling after it claimed events for its sources' notifyEverySec and
 * this much more, with this longest pause (Note [Waking on commit]). */
const ACTIVE_EXTRA_MS = 3000;
const ACTIVE_PAUSE_MAX_MS = 25;

