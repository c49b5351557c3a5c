/**
 * The build pipeline (ARCHITECTURE "metadata change pipeline", step 3): runs the registered build
 * steps in dependency order over a metadata document. Steps resolve objects against live sources
 * and record per-object failures as inconsistencies instead of throwing (Hasura `Schema/Cache`).
 */
import type { BuildContext, BuildResult, BuildStepDef, InconsistentObject, Metadata, ReloadSpec } from '../plugin.js';
import type { Logger } from '../log.js';
import type { UnitOfWork } from '../uow.js';

export async function runBuild(
  steps: readonly BuildStepDef[],
  metadata: Metadata,
  previous: BuildResult | undefined,
  reload: ReloadSpec,
  uow: UnitOfWork,
  log: Logger,
): Promise<BuildResult> {
  const outputs = new Map<string, unknown>();
  const inconsistencies = new Map<string, InconsistentObject>();
  const ctx: BuildContext = {
    metadata,
    previous,
    reload,
    uow,
    log,
    inconsistent(o) {
      if (!inconsistencies.has(o.id)) inconsistencies.set(o.id, o);
    },
    output<T>(step: string) {
      return outputs.get(step) as T | undefined;
    },
    outputs,
  };
  for (const step of steps) {
    outputs.set(step.name, await step.run(ctx));
  }
  return { metadata, inconsistencies: [...inconsistencies.values()], outputs, schemas: new Map() };
}

/** Inconsistencies of `next` that `prev` did not have (compared by id). */
export function newInconsistencies(prev: BuildResult | undefined, next: BuildResult): InconsistentObject[] {
  const had = new Set((prev?.inconsistencies ?? []).map((o) => o.id));
  return next.inconsistencies.filter((o) => !had.has(o.id) && !o.objectless);
}

/** The client-facing form of an inconsistent object (no internal keys). */
export function publicInconsistency(o: InconsistentObject): Record<string, unknown> {
  if (o.shown) return o.shown;
  const out: Record<string, unknown> = { type: o.type };
  if (o.name !== undefined) out.name = o.name;
  out.reason = o.reason;
  out.definition = o.definition;
  return out;
}
