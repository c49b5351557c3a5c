/**
 * Rate limits counted in PostgreSQL, so that every instance on one database shares one count
 * (Note [Rate limits across instances]).
 */
import type { Logger } from '../../core/log.js';
import type { SqlExecutor } from '../database/index.js';

/*
 * Note [Rate limits across instances]
 * A rate limit is a number of GraphQL operations per minute per client (the role, and the client's
 * IP address or session variables when `unique_params` says so). Hasura Enterprise keeps the
 * count in Redis; here it is kept in the engine's catalog schema of the `default` PostgreSQL
 * source (`svc_catalog.rate_limit_counters`, where the scheduled events live), so that several
 * instances behind a balancer count together with nothing else to run. Each admitted request of
 * a rate-limited role costs one statement: an upsert of the (client, minute) counter that returns
 * it with the previous minute's. The window slides as Cloudflare's does: the estimate is this
 * minute's count plus the previous minute's weighted by how much of it the last 60 seconds still
 * cover; over the limit, the request is refused (and still counted, so a client that keeps
 * hammering stays refused until it slows down). Minutes are PostgreSQL's clock, the same for
 * every instance. Counters older than two minutes are deleted once a minute. Without a PostgreSQL
 * source named `default`, counts are kept in this instance's memory (logged once); a failing
 * count admits the request (logged): a database that cannot count cannot serve it either.
 */
const TABLE = 'svc_catalog.rate_limit_counters';

const DDL = `do $ddl$ begin
  perform pg_advisory_xact_lock(7358212);
  create schema if not exists svc_catalog;
  create table if not exists ${TABLE} (key text not null, minute bigint not null, n int not null, primary key (key, minute));
end $ddl$`;

const HIT = `with t as (select floor(extract(epoch from clock_timestamp()) / 60)::bigint as m, extract(epoch from clock_timestamp())::numeric % 60 / 60 as f),
up as (insert into ${TABLE} as c (key, minute, n) select $1, t.m, $2 from t on conflict (key, minute) do update set n = c.n + excluded.n returning c.n)
select (select n from up) as n, coalesce((select c.n from ${TABLE} c, t where c.key = $1 and c.minute = t.m - 1), 0) as prev, (select f from t)::float8 as f`;

const ready = new WeakSet<SqlExecutor>();

export async function ensureCounters(exec: SqlExecutor): Promise<void> {
  if (ready.has(exec)) return;
  await exec.query(DDL);
  ready.add(exec);
}

export class RateCounter {
  private readonly local = new Map<string, { minute: number; n: number; prev: number }>();
  private lastSweep = 0;
  private warned = false;

  constructor(private readonly log: Logger) {}

  /** Counts `n` operations of `key`; whether they are within `max` a minute. */
  async admit(exec: SqlExecutor | undefined, key: string, n: number, max: number): Promise<boolean> {
    if (!exec) return this.admitLocally(key, n, max);
    let row: { n: number; prev: number; f: number } | undefined;
    try {
      row = (await exec.query<{ n: number; prev: number; f: number }>(HIT, [key, n]))[0];
    } catch (e) {
      this.log.warn('api-limits', { message: 'could not count a rate-limited request; it is admitted', error: String(e) });
      return true;
    }
    this.sweep(exec);
    return !row || estimate(Number(row.n), Number(row.prev), Number(row.f)) <= max;
  }

  private admitLocally(key: string, n: number, max: number): boolean {
    if (!this.warned) {
      this.warned = true;
      this.log.warn('api-limits', { message: 'rate limits are counted per instance: there is no PostgreSQL source named "default" to share the counts' });
    }
    const now = Date.now() / 60_000;
    const minute = Math.floor(now);
    let c = this.local.get(key);
    if (!c || c.minute < minute - 1) c = { minute, n: 0, prev: 0 };
    else if (c.minute === minute - 1) c = { minute, n: 0, prev: c.n };
    c.n += n;
    this.local.set(key, c);
    if (this.local.size > 100_000) for (const [k, x] of this.local) if (x.minute < minute) this.local.delete(k);
    return estimate(c.n, c.prev, now - minute) <= max;
  }

  /** Deletes counters of minutes no window covers any more, at most once a minute (not awaited). */
  private sweep(exec: SqlExecutor): void {
    const now = Date.now();
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    exec.query(`delete from ${TABLE} where minute < floor(extract(epoch from clock_timestamp()) / 60)::bigint - 1`).catch((e) => {
      this.log.warn('api-limits', { message: 'could not delete old rate-limit counters', error: String(e) });
    });
  }
}

/** The sliding window's count: this minute's, and the previous minute's share of the last 60 s. */
function estimate(n: number, prev: number, fractionOfMinute: number): number {
  return n + prev * (1 - fractionOfMinute);
}
