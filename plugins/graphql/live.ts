/**
 * Subscriptions' refetching, for every transport that serves them (plugins/graphql-ws): live queries
 * and streams, multiplexed (Note [Multiplexed live queries]). It knows no database: a root
 * field's plan says how it is refetched (FieldPlan.live, Note [Live queries] in core/schema/contract.ts).
 */
import { responseTooLarge } from './limits.js';
import { createHash } from 'node:crypto';
import type { BuildResult, LiveBinding, LiveGroup, LiveResult, Session } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { errorDetail, type Logger } from '../../core/log.js';
import { errorsText, fromSvcError, gqlError, type GqlError } from './errors.js';
import type { PreparedRequest } from './request.js';

/*
 * Note [Multiplexed live queries]
 * As Hasura does it (its Execute/Subscription): subscribers are grouped in three levels.
 *   - A poller per statement (LiveGroup): one document of one role, whose statement text is the
 *     same for all its subscribers; the values they bind differ (variables, session variables).
 *     A live query may select several root fields, as in Hasura: its poller has a statement per
 *     field (each multiplexed), and a result is the fields' texts together.
 *   - A cohort per distinct binding (LiveBinding.key) of a poller: subscribers with the same
 *     values get the same result, computed once.
 *   - The subscribers of a cohort, each a sink (a WebSocket operation).
 * Every refetch interval a poller splits its cohorts into batches of `batch_size` and runs each
 * batch as ONE statement (`LiveGroup.fetch`: the values of all its cohorts go in as arrays and
 * are joined with `unnest ... with ordinality`, Note [Multiplexed statements] in the PostgreSQL
 * compiler), the batches concurrently. Each cohort's result is hashed; a result whose hash is the
 * last one sent costs nothing on the wire. A new subscriber gets the cohort's last result at once;
 * a new cohort is fetched right away (new cohorts arriving together are fetched together) rather
 * than at the next interval. The fetches of one poller run one after the other, so results of a
 * cohort are delivered in the order they were read.
 *
 * A stream (LiveGroup `stream`) is the same with a cursor: a result is sent when it has rows,
 * and moves the cohort's cursor, so its key changes (a new subscriber joins a cohort only at the
 * same position; a cohort that reaches the key of another keeps apart, Hasura's Note [Streaming
 * subscriptions rebuilding cohort map]).
 *
 * A failed batch is run again cohort by cohort, so that one subscriber's bad value (a text that
 * is not a uuid) fails only its own cohort; a failure is sent like a result (`{"errors":[...]}`,
 * as Hasura sends it in a `data` message) and the subscription goes on.
 *
 * Lifecycle: a subscriber that stops leaves its cohort at once; an empty cohort leaves its poller,
 * an empty poller stops. A poller's plans belong to one build: at its first tick after the
 * committed build changed, every subscriber is planned again (Note [Re-planning subscriptions]).
 */

/*
 * Note [Re-planning subscriptions]
 * A metadata change makes a new build, and a subscription must follow it: a permission may have
 * changed, or the field may be gone. At its next tick a poller whose build is not the current one
 * stops, and each of its subscribers is prepared again from its request and session, on the new
 * build. One that no longer validates (its field was removed, its role lost it) gets the error
 * and ends; the others join the pollers of the new plans, keeping the hash of the last result
 * they got (an unchanged result is not sent again) and, for a stream, its cursor (`resume`).
 */

export interface LiveOptions {
  /** Most cohorts per statement. */
  batchSize: number;
  /** Milliseconds between refetches of a poller. */
  refetchInterval: number;
  /** Characters of one result at most (--graphql-max-response-size, Note [GraphQL request
   * limits]): a longer one is sent as that error instead. */
  maxResponseSize?: number;
}

/** What the live queries need of the engine. */
export interface LiveHost {
  readonly log: Logger;
  currentBuild(): BuildResult;
  prepareRequest(req: unknown, session: Session, headers: Headers): Promise<PreparedRequest | { error: GqlError }>;
}

/** Where a subscription's messages go (a transport's operation). Called synchronously. */
export interface LiveSink {
  /** A result to send: `{"data":...}`, or `{"errors":[...]}` when refetching failed. */
  next(text: string): void;
  /** The subscription ended with this error (planning it again failed); it is stopped. */
  fail(error: GqlError): void;
}

export interface LiveHandle {
  stop(): void;
}

/** The request a subscription was made with, to plan it again. */
export interface LiveSource {
  req: unknown;
  session: Session;
  headers: Headers;
}

export interface LiveStats {
  pollers: number;
  cohorts: number;
  subscribers: number;
  /** Statements run (fetch calls), since the start. */
  fetches: number;
}

class Subscriber {
  poller: Poller | undefined;
  cohort: Cohort | undefined;
  /** The hash of the last result sent to it. */
  hash: string | undefined;
  stopped = false;
  constructor(
    readonly sink: LiveSink,
    readonly source: LiveSource,
  ) {}
}

class Cohort {
  readonly subscribers = new Set<Subscriber>();
  /** Per root field, the values its statement binds. */
  values: unknown[];
  /** Subscribers that joined before the cohort had a result: the next one goes to them. */
  readonly waiting = new Set<Subscriber>();
  /** The last result's hash and text (a live query's, or a stream's last error). */
  hash: string | undefined;
  text: string | undefined;
  /** A stream's position, for re-planning (LiveResult.next.resume). */
  resume: unknown;
  dead = false;
  constructor(
    public key: string,
    values: unknown[],
  ) {
    this.values = values;
  }
}

const hashOf = (text: string) => createHash('md5').update(text).digest('base64');

function* chunks<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

class Poller {
  readonly cohorts = new Map<string, Cohort>();
  /** Cohorts made since the last fetch, fetched together right away. */
  private readonly fresh = new Set<Cohort>();
  private timer: NodeJS.Timeout | undefined;
  private kicked = false;
  private tail: Promise<void> = Promise.resolve();
  private seq = 0;
  closed = false;

  readonly mode: LiveGroup['mode'];

  constructor(
    private readonly live: LiveQueries,
    readonly id: string,
    /** A statement per root field, in the document's order. */
    readonly groups: readonly LiveGroup[],
    /** The root fields' response keys, as JSON followed by a colon. */
    private readonly keys: readonly string[],
    readonly build: BuildResult,
    /** Whether errors carry `internal` (the role is admin). */
    private readonly detail: boolean,
  ) {
    this.mode = groups[0]!.mode;
  }

  private compose(texts: readonly string[]): string {
    let out = '{"data":{';
    for (let i = 0; i < texts.length; i++) out += `${i > 0 ? ',' : ''}${this.keys[i]}${texts[i]}`;
    return `${out}}}`;
  }

  add(sub: Subscriber, bindings: readonly LiveBinding[], resume: unknown): void {
    const key = bindings.length === 1 ? bindings[0]!.key : JSON.stringify(bindings.map((b) => b.key));
    let c = this.cohorts.get(key);
    if (!c) {
      c = new Cohort(key, bindings.map((b) => b.values));
      c.resume = resume;
      this.cohorts.set(key, c);
      this.fresh.add(c);
      this.kick();
    }
    c.subscribers.add(sub);
    sub.poller = this;
    sub.cohort = c;
    if (this.mode === 'live' && c.text !== undefined) this.send(sub, c.hash!, c.text);
    else if (c.text === undefined) c.waiting.add(sub);
    this.schedule();
  }

  remove(sub: Subscriber): void {
    const c = sub.cohort;
    sub.poller = undefined;
    sub.cohort = undefined;
    if (!c) return;
    c.subscribers.delete(sub);
    c.waiting.delete(sub);
    if (c.subscribers.size > 0) return;
    c.dead = true;
    if (this.cohorts.get(c.key) === c) this.cohorts.delete(c.key);
    this.fresh.delete(c);
    if (this.cohorts.size === 0) this.live.drop(this);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.closed || this.timer || this.cohorts.size === 0) return;
    this.timer = setTimeout(this.tick, this.live.options.refetchInterval);
    this.timer.unref();
  }

  private readonly tick = () => {
    this.timer = undefined;
    void this.enqueue(async () => {
      this.fresh.clear();
      if (this.live.stale(this)) return this.live.replan(this);
      await this.fetch([...this.cohorts.values()]);
    }).then(() => this.schedule());
  };

  /** Fetches the new cohorts soon: those made in the same turn of the event loop together. */
  private kick(): void {
    if (this.kicked) return;
    this.kicked = true;
    setImmediate(() => {
      this.kicked = false;
      void this.enqueue(async () => {
        const list = [...this.fresh];
        this.fresh.clear();
        if (list.length === 0) return;
        if (this.live.stale(this)) return this.live.replan(this);
        await this.fetch(list);
      });
    });
  }

  /** Runs `fn` after the poller's earlier work (its fetches never overlap). */
  private enqueue(fn: () => Promise<void>): Promise<void> {
    const p = this.tail.then(() => (this.closed ? undefined : fn())).catch((e) => this.live.host.log.error('live-query', { message: 'refetch failed', error: errorDetail(e) }));
    this.tail = p;
    return p;
  }

  private async fetch(cohorts: readonly Cohort[]): Promise<void> {
    const live = cohorts.filter((c) => !c.dead);
    if (live.length === 0) return;
    await Promise.all([...chunks(live, Math.max(1, this.live.options.batchSize))].map((b) => this.fetchBatch(b)));
  }

  private async fetchBatch(batch: Cohort[]): Promise<void> {
    let results: (readonly LiveResult[])[];
    this.live.fetches += this.groups.length;
    try {
      results = await Promise.all(this.groups.map((g, i) => g.fetch(batch.map((c) => c.values[i]))));
    } catch (e) {
      // One cohort's values may be what fails: each alone, so the others still get theirs.
      if (batch.length > 1) {
        await Promise.all(batch.map((c) => this.fetchBatch([c])));
        return;
      }
      this.deliverError(batch[0]!, e);
      return;
    }
    for (let i = 0; i < batch.length; i++) this.deliver(batch[i]!, results.map((r) => r[i]!));
  }

  private deliver(c: Cohort, rs: readonly LiveResult[]): void {
    if (c.dead || this.closed) return;
    if (this.mode === 'live') {
      this.deliverText(c, this.bounded(this.compose(rs.map((r) => r.text))));
      return;
    }
    // A stream has one root field.
    const r = rs[0]!;
    if (!r.empty) {
      const text = this.bounded(this.compose([r.text]));
      c.hash = undefined;
      c.text = '';
      c.waiting.clear();
      for (const s of c.subscribers) s.sink.next(text);
    } else if (c.text === undefined) {
      c.text = '';
      c.waiting.clear();
    }
    if (r.next) this.rekey(c, r.next);
  }

  /** The result, or the error that replaces one too long to send. */
  private bounded(text: string): string {
    const max = this.live.options.maxResponseSize;
    if (max === undefined || text.length <= max) return text;
    return errorsText([responseTooLarge(max)]);
  }

  /** Sends a result to those of the cohort that do not have it. */
  private deliverText(c: Cohort, text: string): void {
    const hash = hashOf(text);
    if (hash !== c.hash) {
      c.hash = hash;
      c.text = text;
      c.waiting.clear();
      for (const s of c.subscribers) this.send(s, hash, text);
      return;
    }
    for (const s of c.waiting) this.send(s, hash, text);
    c.waiting.clear();
  }

  private send(s: Subscriber, hash: string, text: string): void {
    if (s.hash === hash) return;
    s.hash = hash;
    s.sink.next(text);
  }

  private deliverError(c: Cohort, e: unknown): void {
    if (c.dead || this.closed) return;
    let err: GqlError;
    if (e instanceof SvcError && e.status < 500) err = fromSvcError(e, this.detail);
    else {
      this.live.host.log.error('live-query', { message: 'a refetch failed unexpectedly', error: errorDetail(e) });
      err = gqlError('unexpected', 'internal error: the request could not be completed; see the server log');
    }
    this.deliverText(c, errorsText([err]));
  }

  /** A stream's cohort after its cursor moved (Note [Multiplexed live queries]). */
  private rekey(c: Cohort, next: NonNullable<LiveResult['next']>): void {
    if (this.cohorts.get(c.key) === c) this.cohorts.delete(c.key);
    c.values = [next.values];
    c.resume = next.resume;
    c.key = this.cohorts.has(next.key) ? `${next.key}\u0000${++this.seq}` : next.key;
    this.cohorts.set(c.key, c);
  }

  subscribers(): Subscriber[] {
    const out: Subscriber[] = [];
    for (const c of this.cohorts.values()) for (const s of c.subscribers) out.push(s);
    return out;
  }
}

export class LiveQueries {
  /** By the ids of their statements (groups). */
  private readonly pollers = new Map<string, Poller>();
  fetches = 0;

  constructor(
    readonly host: LiveHost,
    readonly options: LiveOptions,
  ) {}

  /** Starts a subscription of a prepared subscription request; its first result comes soon
   * (at once when its cohort has one). An error: it could not start (nothing was sent). */
  subscribe(op: PreparedRequest, source: LiveSource, sink: LiveSink): LiveHandle | { error: GqlError } {
    const sub = new Subscriber(sink, source);
    const error = this.place(sub, op, undefined);
    if (error) return { error };
    return {
      stop: () => {
        sub.stopped = true;
        sub.poller?.remove(sub);
      },
    };
  }

  /** Puts a subscriber in the poller and cohort of its bindings; an error when it cannot be. */
  private place(sub: Subscriber, op: PreparedRequest, resume: unknown): GqlError | undefined {
    const { entries } = op.fields;
    // Hasura's rules (buildSubscriptionPlan): no introspection at the root; a stream alone.
    if (op.fields.introspection.length > 0 || entries.some((e) => !e.plan)) {
      return gqlError('not-supported', 'Introspection at root field level is not supported over subscriptions');
    }
    const detail = op.ctx.session.isAdmin;
    const bindings: LiveBinding[] = [];
    for (const e of entries) {
      if (!e.plan!.live) return gqlError('not-supported', `the field "${e.responseKey}" cannot be subscribed to`);
      try {
        bindings.push(e.plan!.live(op.ctx, resume));
      } catch (err) {
        if (err instanceof SvcError && err.status < 500) return fromSvcError(err, detail);
        this.host.log.error('live-query', { message: 'planning a subscription failed unexpectedly', error: errorDetail(err) });
        return gqlError('unexpected', 'internal error: the request could not be completed; see the server log');
      }
    }
    const streams = bindings.filter((b) => b.group.mode === 'stream').length;
    if (streams > 0 && streams < bindings.length) return gqlError('not-supported', 'streaming and livequery subscriptions cannot be executed in the same subscription');
    if (streams > 1) return gqlError('not-supported', 'exactly one root field is allowed for streaming subscriptions');
    const id = bindings.map((b) => this.groupId(b.group)).join(',');
    let poller = this.pollers.get(id);
    if (!poller) {
      poller = new Poller(this, id, bindings.map((b) => b.group), entries.map((e) => e.key), op.build, detail);
      this.pollers.set(id, poller);
    }
    poller.add(sub, bindings, resume);
    return undefined;
  }

  private readonly groupIds = new WeakMap<LiveGroup, number>();
  private nextGroupId = 0;

  private groupId(g: LiveGroup): number {
    let id = this.groupIds.get(g);
    if (id === undefined) this.groupIds.set(g, (id = ++this.nextGroupId));
    return id;
  }

  drop(p: Poller): void {
    p.close();
    if (this.pollers.get(p.id) === p) this.pollers.delete(p.id);
  }

  stale(p: Poller): boolean {
    return this.host.currentBuild() !== p.build;
  }

  /** Note [Re-planning subscriptions]. */
  async replan(p: Poller): Promise<void> {
    const moving = p.subscribers().map((s) => ({ s, resume: s.cohort?.resume }));
    for (const { s } of moving) {
      s.poller = undefined;
      s.cohort = undefined;
    }
    this.drop(p);
    p.cohorts.clear();
    for (const { s, resume } of moving) {
      if (s.stopped) continue;
      let op: PreparedRequest | { error: GqlError };
      try {
        op = await this.host.prepareRequest(s.source.req, s.source.session, s.source.headers);
      } catch (e) {
        this.host.log.error('live-query', { message: 'planning a subscription again failed unexpectedly', error: errorDetail(e) });
        op = { error: gqlError('unexpected', 'internal error: the request could not be completed; see the server log') };
      }
      if (s.stopped) continue;
      const error = 'error' in op ? op.error : op.kind !== 'subscription' ? gqlError('unexpected', 'the subscription is no longer a subscription') : this.place(s, op, resume);
      if (error) {
        s.stopped = true;
        s.sink.fail(error);
      }
    }
  }

  stats(): LiveStats {
    let cohorts = 0;
    let subscribers = 0;
    for (const p of this.pollers.values()) {
      cohorts += p.cohorts.size;
      for (const c of p.cohorts.values()) subscribers += c.subscribers.size;
    }
    return { pollers: this.pollers.size, cohorts, subscribers, fetches: this.fetches };
  }

  /** Stops every poller (shutdown); the subscriptions' transports close them. */
  close(): void {
    for (const p of this.pollers.values()) p.close();
    this.pollers.clear();
  }
}
