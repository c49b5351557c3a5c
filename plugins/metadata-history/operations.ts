/**
 * The operations on the metadata history (Note [Metadata history] in ./store.ts):
 * get_metadata_history, get_metadata_version, diff_metadata and rollback_metadata. They read the
 * versions the history keeps; a rollback applies a kept document as replace_metadata applies one
 * (KernelApi.replacement), so it is a new version like any other change, checked the same way,
 * and other instances follow it as they follow any change.
 */
import * as v from '../../core/valibot.js';
import { SvcError } from '../../core/errors.js';
import type { BuildResult, KernelApi, OperationContext } from '../../core/plugin.js';
import { diffDocuments } from '../../lib/diff.js';
import { publicInconsistency } from '../../core/schema-cache/build.js';
import type { HistoryStore, VersionInfo } from './store.js';

// Bounded where JSON numbers stop being exact integers (and far below PostgreSQL's bigint).
const MAX = Number.MAX_SAFE_INTEGER;
const count = (what: string) =>
  v.pipe(v.number(), v.integer(`${what} must be an integer`), v.minValue(0, `${what} must not be negative`), v.maxValue(MAX, `${what} must be at most ${MAX}`));
const version = v.pipe(
  v.number(),
  v.integer('a resource_version is an integer'),
  v.minValue(1, 'a resource_version is at least 1'),
  v.maxValue(MAX, `a resource_version is at most ${MAX}`),
);

const HistoryArgs = v.pipe(
  v.nullish(v.object({ limit: v.optional(count('limit'), 100), offset: v.optional(count('offset'), 0) })),
  v.transform((a) => a ?? { limit: 100, offset: 0 }),
);
const VersionArgs = v.object({ resource_version: version });
const DiffArgs = v.object({ from: version, to: v.optional(version) });
const RollbackArgs = v.object({ to_resource_version: version, allow_inconsistent_metadata: v.optional(v.boolean(), false) });

const shown = (i: VersionInfo) => ({ resource_version: i.resourceVersion, time: i.time, operations: i.operations, role: i.role });

export function registerHistoryOperations(k: KernelApi, history: HistoryStore): void {
  const add = k.operation.bind(k);
  const exportDoc = k.exportDocument;

  const enabled = () => {
    if (history.limit === 0) {
      throw new SvcError('not-supported', 'the metadata history is off: --metadata-history-limit (SVC_GRAPHQL_METADATA_HISTORY_LIMIT) is 0', { path: '$.type' });
    }
  };
  /** A kept version, or 400 not-exists naming what is kept. */
  const kept = async (rv: number, path: string) => {
    const found = await history.version(rv);
    if (found) return found;
    const range = await history.historyRange();
    const keeps = range ? `it keeps versions ${range.oldest} to ${range.newest}` : 'it keeps none';
    throw new SvcError('not-exists', `resource_version ${rv} is not in the metadata history (${keeps})`, { path });
  };
  /** A version's exported document: the committed one without reading the catalog. */
  const documentOf = async (rv: number, path: string, ctx: OperationContext) =>
    rv === ctx.resourceVersion ? exportDoc(ctx.metadata) : exportDoc((await kept(rv, path)).metadata);

  add({
    type: 'get_metadata_history',
    args: HistoryArgs,
    mutates: false,
    run: async (a: { limit: number; offset: number }) => {
      enabled();
      const { total, versions } = await history.history(a.limit, a.offset);
      return { response: { total, versions: versions.map(shown) } };
    },
  });

  add({
    type: 'get_metadata_version',
    args: VersionArgs,
    mutates: false,
    run: async (a: { resource_version: number }) => {
      enabled();
      const found = await kept(a.resource_version, '$.args.resource_version');
      return { response: { ...shown(found.info), metadata: exportDoc(found.metadata) } };
    },
  });

  add({
    type: 'diff_metadata',
    args: DiffArgs,
    mutates: false,
    run: async (a: { from: number; to?: number }, ctx) => {
      enabled();
      const to = a.to ?? ctx.resourceVersion;
      const before = await documentOf(a.from, '$.args.from', ctx);
      const after = await documentOf(to, '$.args.to', ctx);
      return { response: { from: a.from, to, changes: diffDocuments(before, after) } };
    },
  });

  add({
    type: 'rollback_metadata',
    args: RollbackArgs,
    mutates: true,
    run: async (a: { to_resource_version: number; allow_inconsistent_metadata: boolean }) => {
      enabled();
      const found = await kept(a.to_resource_version, '$.args.to_resource_version');
      const allow = a.allow_inconsistent_metadata;
      return {
        ...k.replacement(exportDoc(found.metadata), allow, '$.args'),
        response: (b: BuildResult, rv: number) => ({
          message: 'success',
          resource_version: rv,
          rolled_back_to: a.to_resource_version,
          // As replace_metadata v2 answers with allow_inconsistent_metadata.
          ...(allow ? { is_consistent: b.inconsistencies.length === 0, inconsistent_objects: b.inconsistencies.map(publicInconsistency) } : {}),
        }),
      };
    },
  });
}
