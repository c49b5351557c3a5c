/**
 * `<prefix>_track_tables` and `<prefix>_untrack_tables`: many tables in one request, as the
 * Hasura console's "Track All" sends them. A table that cannot be tracked (or untracked) does not
 * fail the request: it is left out and named in the answer's `warnings`, unless the request says
 * `allow_warnings: false`.
 *
 * Note [Tables left out of a bulk track]
 * A table can fail in two ways. Its own checks (it exists, it is not tracked yet, its constraint
 * names are GraphQL names) fail when the single-table operation runs on it; that table is left
 * out with that error's message. Or it is fine alone but makes the build newly inconsistent: its
 * root fields collide with another table's or a remote schema's, and the build may blame the
 * other object (a remote schema that was consistent becomes inconsistent, Note [Root field
 * conflicts]). So the operation tries the build (`ctx.build`, nothing committed) with every
 * table that passed its checks. When that build has no new inconsistency, that is all: one trial
 * build besides the request's own. Otherwise a table named by a new inconsistency is left out at
 * once, and what the rest still breaks is found by halving (`acceptClean`): a group whose build is
 * clean is kept whole, a group that is not is split, and a single table that breaks the build is
 * left out with the reasons of what it broke. k culprits among n tables cost about k log n trial
 * builds, each incremental (against the committed build). What is kept is then what the pipeline
 * builds and commits, under the usual policy, so the request never adds an inconsistency.
 */
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import type { Metadata, OperationContext, OperationDef, OperationResult } from '../../../core/plugin.js';
import { newInconsistencies } from '../../../core/schema-cache/build.js';
import type { KindBinding } from '../model/types.js';
import { qtKey, SourceNameSchema } from '../model/meta.js';

/** One of Hasura's metadata warnings, as its answers carry them. */
export interface MetadataWarning {
  type: string;
  name: string;
  source: string;
  code: string;
  message: string;
}

type SingleRun<A> = (a: A, ctx: OperationContext) => OperationResult | Promise<OperationResult>;

interface TableArgs {
  table: { schema: string; name: string };
  source: string;
}

/**
 * The bulk form of a single-table operation: runs `single` on each item in turn (each on the
 * document the previous left), turns each item's own error into a warning, and for tracking
 * (`probe`) leaves out the tables that make the build newly inconsistent.
 */
export function bulkTables<A extends TableArgs>(
  bind: KindBinding,
  name: 'track_tables' | 'untrack_tables',
  item: v.GenericSchema<unknown, A>,
  single: SingleRun<A>,
): OperationDef {
  const args = v.object({ tables: v.array(item), allow_warnings: v.optional(v.boolean(), true) });
  const code = name === 'track_tables' ? 'track-table-failed' : 'untrack-table-failed';
  const run = async (a: v.InferOutput<typeof args>, ctx: OperationContext): Promise<OperationResult> => {
    const seen = new Map<string, number>();
    for (const t of a.tables) {
      const k = `${t.source}\u0000${qtKey(t.table)}`;
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    const twice = a.tables.filter((t, i) => seen.get(`${t.source}\u0000${qtKey(t.table)}`)! > 1 && a.tables.findIndex((u) => u.source === t.source && qtKey(u.table) === qtKey(t.table)) === i);
    if (twice.length > 0) {
      throw new SvcError('bad-request', `The following tables occur more than once in the request: ${twice.map((t) => bind.display(t.table)).join(', ')}`, { path: '$.args.tables' });
    }
    const warnings: MetadataWarning[] = [];
    const warn = (t: A, message: string) => warnings.push({ type: 'table', name: bind.display(t.table), source: t.source, code, message });

    // Each table's own checks, in order, on the document the previous ones left.
    const passed: { t: A; res: OperationResult }[] = [];
    let md = ctx.metadata;
    for (const t of a.tables) {
      try {
        const res = await single(t, { ...ctx, metadata: md });
        passed.push({ t, res });
        if (res.metadata) md = res.metadata;
      } catch (e) {
        if (!(e instanceof SvcError)) throw e;
        warn(t, e.message);
      }
    }
    let kept = passed;
    if (name === 'track_tables' && passed.length > 0) {
      const replay = async (items: typeof passed): Promise<Metadata> => {
        let doc = ctx.metadata;
        for (const { t } of items) doc = (await single(t, { ...ctx, metadata: doc })).metadata ?? doc;
        return doc;
      };
      const fresh = async (items: typeof passed) => newInconsistencies(ctx.current, await ctx.build(await replay(items)));
      let broken = await fresh(passed);
      if (broken.length > 0) {
        // A table named by a new inconsistency is left out with its reasons (Note [Tables left out of a bulk track]).
        const named = (x: (typeof passed)[number]) => broken.filter((o) => o.id === `table:${x.t.source}:${qtKey(x.t.table)}`);
        const rest = passed.filter((x) => {
          const own = named(x);
          if (own.length > 0) warn(x.t, own.map((o) => o.reason).join(', '));
          return own.length === 0;
        });
        kept = [];
        const acceptClean = async (group: typeof passed): Promise<void> => {
          if (group.length === 0) return;
          broken = await fresh([...kept, ...group]);
          if (broken.length === 0) {
            kept.push(...group);
          } else if (group.length === 1) {
            warn(group[0]!.t, broken.map((o) => o.reason).join(', '));
          } else {
            const half = Math.ceil(group.length / 2);
            await acceptClean(group.slice(0, half));
            await acceptClean(group.slice(half));
          }
        };
        await acceptClean(rest);
        md = await replay(kept);
      }
    }
    if (!a.allow_warnings && warnings.length > 0) {
      throw new SvcError('metadata-warnings', 'failed due to metadata warnings', { path: '$.args', internal: warnings });
    }
    return {
      metadata: md,
      response: warnings.length > 0 ? { message: 'success', warnings } : { message: 'success' },
      defines: kept.flatMap(({ res }) => res.defines ?? []),
    };
  };
  return { type: bind.name(name), args, mutates: true, run };
}
