/**
 * Asynchronous actions (Hasura's hdb_action_log and its async-actions processor): the mutation
 * writes the call to `svc_catalog.action_log` of the default PostgreSQL source and answers its id
 * at once; the `async-actions` worker calls the handlers and stores each outcome there, where the
 * `<action>(id:)` query and subscription read it.
 */
import { SvcError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { Session } from '../../core/plugin.js';
import type { SqlExecutor } from '../database/index.js';
import { Semaphore } from '../event-triggers/index.js';
import type { ActionsBuild, ResolvedAction } from './build.js';
import { callHandler, forwardable } from './handler.js';

export const CATALOG = 'svc_catalog';
export const ACTION_LOG = `${CATALOG}.action_log`;

// One DO block under an advisory lock, so that instances booting together do not race on
// `create ... if not exists` (as plugins/scheduled-triggers/catalog.ts does).
const DDL = `do $ddl$ begin
  perform pg_advisory_xact_lock(7358212);
  create schema if not exists ${CATALOG};
  create table if not exists ${ACTION_LOG} (
    id uuid primary key default gen_random_uuid(),
    action_name text not null,
    input_payload jsonb not null,
    request_headers jsonb not null default '{}',
    session_variables jsonb not null,
    request_query text,
    status text not null default 'created',
    response_payload jsonb,
    errors jsonb,
    created_at timestamptz not null default now(),
    response_received_at timestamptz,
    locked timestamptz,
    lease_sec int not null default 40,
    tries int not null default 0
  );
  create index if not exists action_log_pending on ${ACTION_LOG} (created_at) where status in ('created', 'processing');
end $ddl$`;

const ready = new WeakSet<SqlExecutor>();

/** Creates the action log once per executor (idempotent). */
export async function ensureCatalog(exec: SqlExecutor): Promise<void> {
  if (ready.has(exec)) return;
  await exec.query(DDL);
  ready.add(exec);
}

/** Seconds past an action's timeout after which a claim is taken to be lost (its instance died). */
const LEASE_MARGIN_SEC = 10;

/*
 * Note [Claiming action calls]
 * Several engine instances may share one database; each call must run once. A worker claims
 * calls with one UPDATE over `for update skip locked` (two workers never claim the same row, and
 * neither waits for the other), stamping `locked` with the claim time, which is the claim's
 * token. The outcome is recorded only `where locked = <token>`, so a worker whose claim was
 * taken over records nothing. A claim is taken over only when its lease ran out (the action's
 * timeout plus LEASE_MARGIN_SEC, stored with the call): its instance died mid-call, and the call
 * is made again (at least once: a handler may see a call twice only when an instance died while
 * its call was in flight). Calls survive a restart: they are rows, claimed by whoever polls next.
 */
const CLAIM = `
update ${ACTION_LOG} l set status = 'processing', locked = now(), tries = l.tries + 1
where l.id in (
  select c.id from ${ACTION_LOG} c
  where c.status = 'created' or (c.status = 'processing' and c.locked < now() - make_interval(secs => c.lease_sec))
  order by c.created_at
  limit $1
  for update skip locked
)
returning l.id::text as id, l.action_name, l.input_payload::text as input, l.request_headers::text as headers,
  l.session_variables::text as session, l.request_query, l.locked::text as token`;

const RECORD = `
update ${ACTION_LOG} set status = $3, response_payload = $4::text::jsonb, errors = $5::text::jsonb, response_received_at = now(), locked = null
where id = $1::text::uuid and status = 'processing' and locked = $2::text::timestamptz`;
// (Bound as text: a timestamptz parameter would go through a JavaScript Date, which drops the
// microseconds the token has.)

/** A timestamp as Hasura's `timestamptz` is written in JSON. */
const ISO = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00'`;

interface Claimed {
  id: string;
  action_name: string;
  input: string;
  headers: string;
  session: string;
  request_query: string | null;
  token: string;
}

const isUuid = (s: unknown): s is string => typeof s === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

export interface AsyncOptions {
  fetchIntervalMs: number;
  batchSize: number;
  poolSize: number;
}

export class AsyncActions {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = true;
  private polling: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly controller = new AbortController();
  private pool: Semaphore | undefined;

  constructor(
    private readonly current: () => ActionsBuild,
    private readonly log: Logger,
    private readonly opts: AsyncOptions,
  ) {}

  private catalog(ab: ActionsBuild): SqlExecutor {
    if (!ab.catalog) throw new SvcError('unexpected', 'asynchronous actions need a PostgreSQL source named "default" to keep their log', { status: 500 });
    return ab.catalog;
  }

  /** Writes the call; its id. */
  async enqueue(ab: ActionsBuild, a: ResolvedAction, input: Record<string, unknown>, session: Session, query: string | undefined, headers: Readonly<Record<string, string>>): Promise<string> {
    const exec = this.catalog(ab);
    // The client's headers are kept only when the handler is to get them.
    const kept = a.forwardClientHeaders ? forwardable(headers) : {};
    const rows = await exec.query<{ id: string }>(
      `insert into ${ACTION_LOG} (action_name, input_payload, request_headers, session_variables, request_query, lease_sec)
       values ($1, $2::text::jsonb, $3::text::jsonb, $4::text::jsonb, $5, $6) returning id::text as id`,
      [a.name, JSON.stringify(input), JSON.stringify(kept), JSON.stringify({ ...session.variables, 'x-svc-role': session.role }), query ?? null, Math.ceil(a.timeoutMs / 1000) + LEASE_MARGIN_SEC],
    );
    this.poke();
    return rows[0]!.id;
  }

  /** The log entry as `<action>(id:)` gives it: `{id, created_at, errors, output}`, or null when
   * there is none for this session (another role's or user's call is not seen, as in Hasura:
   * a non-admin session sees only calls made with the same session variables). */
  async read(ab: ActionsBuild, action: string, id: string, session: Session): Promise<unknown> {
    if (!isUuid(id)) throw new SvcError('validation-failed', `invalid uuid: ${JSON.stringify(id)}`, { path: '$.selectionSet' });
    const exec = this.catalog(ab);
    const params: unknown[] = [id, action];
    let filter = '';
    if (!session.isAdmin) {
      params.push(JSON.stringify({ ...session.variables, 'x-svc-role': session.role }));
      filter = ' and session_variables = $3::text::jsonb';
    }
    const rows = await exec.query<{ id: string; created_at: string; errors: string | null; output: string | null }>(
      `select id::text as id, ${ISO('created_at')} as created_at, errors::text as errors, response_payload::text as output
       from ${ACTION_LOG} where id = $1::uuid and action_name = $2${filter}`,
      params,
    );
    const r = rows[0];
    if (!r) return null;
    let errors = r.errors === null ? null : (JSON.parse(r.errors) as Record<string, unknown>);
    // The details of a failed call (the request and response) are for admins, as a synchronous
    // call's are.
    if (errors && !session.isAdmin && 'internal' in errors) {
      const { internal: _i, ...rest } = errors;
      errors = rest;
    }
    return { id: r.id, created_at: r.created_at, errors, output: r.output === null ? null : JSON.parse(r.output) };
  }

  /** Deletes an action's calls (drop_action's clear_data). */
  async clear(ab: ActionsBuild, action: string): Promise<void> {
    if (!ab.catalog) return;
    await ab.catalog.query(`delete from ${ACTION_LOG} where action_name = $1`, [action]);
  }

  // -------------------------------------------------------------------------------------------
  // The worker

  start(): void {
    this.stopped = false;
    this.pool = new Semaphore(this.opts.poolSize);
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.polling;
    this.controller.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Look for calls now (a call was just written here). */
  poke(): void {
    if (!this.stopped && !this.running) this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.polling = this.poll().finally(() => {
        this.polling = undefined;
      });
    }, ms);
    this.timer.unref?.();
  }

  private async poll(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    let claimedAll = false;
    try {
      const ab = this.current();
      if (ab.catalog) {
        const rows = await ab.catalog.query<Claimed>(CLAIM, [this.opts.batchSize]);
        claimedAll = rows.length === this.opts.batchSize;
        for (const row of rows) {
          const p = this.deliver(ab.catalog, row).finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }
      }
    } catch (e) {
      this.log.warn('async-action', { message: 'could not claim asynchronous action calls', error: String(e) });
    } finally {
      this.running = false;
      this.schedule(claimedAll ? 0 : this.opts.fetchIntervalMs);
    }
  }

  private async deliver(exec: SqlExecutor, row: Claimed): Promise<void> {
    await this.pool!.acquire();
    try {
      const ab = this.current();
      const a = ab.actions.get(row.action_name);
      let status: 'completed' | 'error';
      let output: unknown = null;
      let errors: unknown = null;
      if (!a) {
        status = 'error';
        errors = { path: '$', error: `action with name "${row.action_name}" does not exist`, code: 'not-exists' };
      } else {
        const vars = JSON.parse(row.session) as Record<string, string>;
        const role = vars['x-svc-role'] ?? 'admin';
        const session: Session = { role, variables: vars, isAdmin: role === 'admin' };
        try {
          output = await callHandler(
            { action: a, input: JSON.parse(row.input) as Record<string, unknown>, session, query: row.request_query ?? undefined, clientHeaders: JSON.parse(row.headers) as Record<string, string>, signal: this.controller.signal },
            ab.types,
          );
          status = 'completed';
        } catch (e) {
          if (this.controller.signal.aborted) return; // shutting down: the claim's lease lets another instance take it
          status = 'error';
          errors = e instanceof SvcError ? errorJson(e) : { path: '$', error: 'unexpected error calling the action handler', code: 'unexpected' };
          if (!(e instanceof SvcError)) this.log.error('async-action', { action: row.action_name, id: row.id, error: String(e) });
        }
      }
      await exec.query(RECORD, [row.id, row.token, status, output === null ? null : JSON.stringify(output), errors === null ? null : JSON.stringify(errors)]);
    } catch (e) {
      this.log.warn('async-action', { message: 'could not record an asynchronous action call', id: row.id, error: String(e) });
    } finally {
      this.pool!.release();
    }
  }
}

/** The stored `errors` of a failed call (Hasura stores the QErr: `{path, error, code}`). */
function errorJson(e: SvcError): Record<string, unknown> {
  if (e.extensions) {
    const { path, code, ...rest } = e.extensions as Record<string, unknown>;
    return { path: path ?? '$', error: e.message, code: code ?? 'unexpected', ...(Object.keys(rest).length ? { extensions: e.extensions } : {}) };
  }
  return { path: e.path, error: e.message, code: e.code ?? 'unexpected', ...(e.internal !== undefined ? { internal: e.internal } : {}) };
}
