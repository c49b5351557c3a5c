/**
 * Fields that other plugins join to a table's rows (JoinedField in model/types.ts): a remote
 * relationship's values come from a remote GraphQL server, for the rows PostgreSQL answered.
 */
import type { RunContext } from '../../../core/plugin.js';
import type { JoinedFieldPlan } from '../model/types.js';

/*
 * Note [Joined fields]
 * A plugin registers a JoinedFieldsProvider (DatabaseService.registerJoinedFields); for a role
 * and a table it names fields, their GraphQL config (added to the table's object type) and the
 * columns they join on. When a selection asks for one, the planner (plan.ts `Planner.object`)
 * adds the join columns to the statement under hidden keys (JOIN_KEY + column) and a
 * placeholder at the field's place, and records the join with its path in the answer. A query
 * without joined fields is untouched: its JSON text goes out as PostgreSQL built it. With some,
 * the text is parsed once, each join collects the rows of its level (however many: one call of
 * its plan per join, which batches), puts the values in place and the hidden keys are removed.
 * Query root select fields and mutation outputs join; a subscription's fields do not (refused).
 */

/** The prefix of the hidden keys that carry join columns in the statement's answer. */
export const JOIN_KEY = '__svc_join_';

export interface PlannedJoin {
  /** Response keys from the root field's value to the objects that hold the field (arrays are
   * walked through). */
  readonly path: readonly string[];
  readonly key: string;
  readonly columns: readonly string[];
  readonly plan: JoinedFieldPlan;
}

function collect(v: unknown, path: readonly string[], i: number, out: Record<string, unknown>[]): Record<string, unknown>[] {
  if (Array.isArray(v)) {
    for (const x of v) collect(x, path, i, out);
    return out;
  }
  if (v === null || typeof v !== 'object') return out;
  if (i === path.length) {
    out.push(v as Record<string, unknown>);
    return out;
  }
  return collect((v as Record<string, unknown>)[path[i]!], path, i + 1, out);
}

/** The root field's JSON text with the joined fields' values in place (Note [Joined fields]). */
export async function spliceJoins(json: string, joins: readonly PlannedJoin[], ctx: RunContext): Promise<string> {
  const data = JSON.parse(json) as unknown;
  await Promise.all(
    joins.map(async (j) => {
      const parents = collect(data, j.path, 0, []);
      if (parents.length === 0) return;
      const keys = parents.map((p) => {
        const k: Record<string, unknown> = {};
        for (const c of j.columns) k[c] = p[JOIN_KEY + c];
        return k;
      });
      const values = await j.plan.run(keys, ctx);
      for (let i = 0; i < parents.length; i++) parents[i]![j.key] = values[i] ?? null;
    }),
  );
  // Undefined rather than deleted: JSON.stringify leaves the key out, and the objects keep their
  // shape (a delete turns a V8 object into a slower dictionary).
  for (const j of joins) for (const p of collect(data, j.path, 0, [])) for (const c of j.columns) p[JOIN_KEY + c] = undefined;
  return JSON.stringify(data);
}
