/**
 * A unit of work: the request-scoped resources of one metadata request (for instance a source
 * transaction opened by run_sql and reused by the following operations of a bulk). The kernel
 * commits it right after the catalog write succeeds and rolls it back on any failure, so SQL run
 * by a request lands together with its metadata or not at all (see Note [Unit of work]).
 *
 * Note [Unit of work]
 * Order on success: catalog CAS in its own transaction (not yet committed) -> uow.commit() ->
 * catalog commit. A catalog conflict therefore rolls the source work back. If the catalog commit
 * itself fails after the sources committed, the next build reports what no longer matches as
 * inconsistent metadata instead of losing it.
 *
 * A dry run (Note [Dry runs] in core/kernel/pipeline.ts) runs a request with a unit of work that
 * never commits: `commit()` rolls back, so whatever an operation or a build step did through the
 * unit of work is undone, whoever asks it to commit.
 */
export interface UowResource {
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export class UnitOfWork {
  private readonly resources = new Map<string, { value: unknown; res?: UowResource }>();
  private readonly order: string[] = [];
  private done = false;

  /** `dryRun`: commit() rolls back (Note [Dry runs] in core/kernel/pipeline.ts). */
  constructor(readonly dryRun = false) {}

  has(key: string): boolean {
    return this.resources.has(key);
  }

  peek<T>(key: string): T | undefined {
    return this.resources.get(key)?.value as T | undefined;
  }

  /** Returns the resource under `key`, creating it once per unit of work. */
  async get<T>(key: string, create: () => Promise<{ value: T; resource?: UowResource }>): Promise<T> {
    if (this.done) throw new Error('unit of work already finished');
    const hit = this.resources.get(key);
    if (hit) return hit.value as T;
    const made = await create();
    this.resources.set(key, { value: made.value, res: made.resource });
    this.order.push(key);
    return made.value;
  }

  /** Plain request-scoped values (caches) with no commit/rollback. */
  set(key: string, value: unknown): void {
    if (!this.resources.has(key)) this.order.push(key);
    this.resources.set(key, { value });
  }

  get size(): number {
    return this.order.filter((k) => this.resources.get(k)?.res).length;
  }

  async commit(): Promise<void> {
    if (this.dryRun) return this.rollback();
    if (this.done) return;
    this.done = true;
    for (const k of this.order) await this.resources.get(k)?.res?.commit();
  }

  async rollback(): Promise<void> {
    if (this.done) return;
    this.done = true;
    for (const k of [...this.order].reverse()) {
      try {
        await this.resources.get(k)?.res?.rollback();
      } catch {
        /* a failed rollback leaves nothing to undo */
      }
    }
  }
}
