/**
 * Read replicas of a source, for any kind (Note [Read replicas]): the executor that spreads the
 * reads that may lag over a source's replicas, and their states for the metrics.
 */
import type { CancelSignal } from '../../../core/plugin.js';
import type { SqlExecutor } from './types.js';

/*
 * Note [Read replicas]
 * A source's `read_replicas` (Hasura v2's: connection infos beside `connection_info`, each with
 * its own pool settings) serve the reads that may see a replica's lag: GraphQL queries and
 * subscription refetches (SourceConnection.readExecutor). Everything else stays on the primary:
 * mutations and whatever runs in a request's transaction, run_sql, event capture and delivery,
 * introspection, the catalog. Reads go round robin over the replicas; a replica that fails to
 * connect or loses its connection (not a statement's own error, which is the request's, as the
 * kind's `isStatementError` tells) is taken out for REPLICA_RETRY_MS and the read is tried on the
 * next one, then on the primary when none is up; it is tried again after that time. A request
 * that must read what it just wrote asks for the primary with the header
 * `X-Svc-Read-From-Primary: true` (Hasura has no such way; a header, as the request is the unit
 * that knows it, and no schema change is needed: schema/plan.ts `fromPrimary`).
 */

/** How long a replica that failed is left out. */
export const REPLICA_RETRY_MS = 10_000;

/** One replica: its name (for the metrics), where its statements go, its pool's use. */
export interface Replica {
  readonly name: string;
  readonly executor: SqlExecutor;
  stats(): { inUse: number; max: number };
}

export class ReadReplicas {
  private readonly replicas: { r: Replica; downUntil: number; failures: number }[];
  private next = 0;
  /** Where reads go: the replicas in turn, the primary when none is up. */
  readonly executor: SqlExecutor;

  constructor(
    replicas: readonly Replica[],
    private readonly primary: SqlExecutor,
    /** Whether an error is the statement's own (the request's), not the replica's connection. */
    private readonly isStatementError: (e: unknown) => boolean,
    private readonly now: () => number = Date.now,
  ) {
    this.replicas = replicas.map((r) => ({ r, downUntil: 0, failures: 0 }));
    this.executor = { query: (text, params, opts) => this.read(text, params, opts) };
  }

  private async read<T>(text: string, params: unknown[] | undefined, opts: { prepare?: boolean; signal?: CancelSignal } | undefined): Promise<T[]> {
    const n = this.replicas.length;
    const start = this.next++ % n;
    for (let i = 0; i < n; i++) {
      const x = this.replicas[(start + i) % n]!;
      if (x.downUntil > this.now()) continue;
      try {
        return await x.r.executor.query<T>(text, params, opts);
      } catch (e) {
        if (this.isStatementError(e) || opts?.signal?.aborted) throw e;
        x.downUntil = this.now() + REPLICA_RETRY_MS;
        x.failures++;
      }
    }
    return this.primary.query<T>(text, params, opts);
  }

  /** Each replica: whether reads go to it now, the reads it could not serve, its pool (metrics). */
  states(): { name: string; up: boolean; failures: number; inUse: number; max: number }[] {
    const now = this.now();
    return this.replicas.map((x) => ({ name: x.r.name, up: x.downUntil <= now, failures: x.failures, ...x.r.stats() }));
  }
}
