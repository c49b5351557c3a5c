/**
 * Kernel-owned operations (SPEC "Metadata management"): export, replace, reload, clear,
 * get/drop inconsistent metadata. They work on whole documents and know no section's content.
 */
import * as v from '../valibot.js';
import type { BuildResult, Metadata, OperationDef, ReloadKeyDef, SectionDef } from '../plugin.js';
import type { OperationRegistry } from '../registry/registry.js';
import { publicInconsistency } from '../schema-cache/build.js';
import { exportMetadata } from './document.js';

const success = { message: 'success' };
const emptyArgs = v.union([v.object({}), v.null()]);
const nameList = v.union([v.boolean(), v.array(v.string())]);

export function consistency(b: BuildResult) {
  return {
    is_consistent: b.inconsistencies.length === 0,
    inconsistent_objects: b.inconsistencies.map(publicInconsistency),
  };
}

/** What these operations need of the kernel (core/kernel/kernel.ts has it). */
export interface MetadataOpsHost {
  readonly registry: OperationRegistry;
  sortedSections(): SectionDef[];
  parseDocument(doc: unknown, path: string, current?: Metadata): Metadata;
  /** What reload_metadata can refresh (Note [Reload keys] in core/types.ts). */
  readonly reloadKeys: readonly ReloadKeyDef[];
}

/** What replace_metadata does with a document, but its response: the parsed document, the
 * reload of what the plugins refresh on a replace, its inconsistency policy and a new version.
 * KernelApi.replacement gives it to plugins (rollback_metadata applies a kept version with it). */
export function replaceWith(k: MetadataOpsHost, doc: unknown, allow: boolean, path: string) {
  return {
    metadata: k.parseDocument(doc, path),
    reload: Object.fromEntries(k.reloadKeys.filter((r) => r.onReplace).map((r) => [r.key, true])) as Record<string, true>,
    inconsistencies: allow ? ('allow' as const) : ('any' as const),
    bumpVersion: true,
  };
}

export function registerMetadataOperations(k: MetadataOpsHost): void {
  const add = (def: OperationDef) => k.registry.add(def, 'kernel');
  const exportDoc = (md: Metadata) => exportMetadata(md, k.sortedSections());

  // export_metadata: v1 returns the document, v2 {resource_version, metadata}.
  add({
    type: 'export_metadata',
    versions: [1, 2],
    args: emptyArgs,
    mutates: false,
    run: (_a, ctx) => {
      const doc = exportDoc(ctx.metadata);
      return { response: ctx.version === 2 ? { resource_version: ctx.resourceVersion, metadata: doc } : doc };
    },
  });
  add({ type: null, legacy: 'export_metadata', args: emptyArgs, mutates: false, run: (_a, ctx) => ({ response: exportDoc(ctx.metadata) }) });

  // replace_metadata: v1 args is the document; v2 {allow_inconsistent_metadata, metadata}.
  const replace = (doc: unknown, allow: boolean, v2: boolean, path: string, _ctx: { metadata: Metadata }) => ({
    ...replaceWith(k, doc, allow, path),
    response: (b: BuildResult) => (v2 && allow ? consistency(b) : success),
  });
  add({
    type: 'replace_metadata',
    versions: [1, 2],
    inferVersion: (args) => (args && typeof args === 'object' && !Array.isArray(args) && 'metadata' in args ? 2 : 1),
    args: (version) =>
      version === 2
        ? v.object({ allow_inconsistent_metadata: v.optional(v.boolean(), false), metadata: v.unknown() })
        : v.unknown(),
    mutates: true,
    run: (a, ctx) =>
      ctx.version === 2
        ? replace((a as { metadata: unknown }).metadata, (a as { allow_inconsistent_metadata: boolean }).allow_inconsistent_metadata, true, '$.args.metadata', ctx)
        : replace(a, false, false, '$.args', ctx),
  });
  // As Hasura's ReplaceMetadata parser: an object with a `metadata` key is the v2 form on /v1/query too.
  add({
    type: null,
    legacy: 'replace_metadata',
    args: v.unknown(),
    mutates: true,
    run: (a, ctx) => {
      if (a && typeof a === 'object' && !Array.isArray(a) && 'metadata' in a) {
        const r = a as { metadata: unknown; allow_inconsistent_metadata?: unknown };
        return replace(r.metadata, r.allow_inconsistent_metadata === true, true, '$.args.metadata', ctx);
      }
      return replace(a, false, false, '$', ctx);
    },
  });

  // reload_metadata: refresh what the plugins' reload keys name (Note [Reload keys]); always
  // bumps resource_version.
  const reloadArgs = () => v.object(Object.fromEntries(k.reloadKeys.map((r) => [r.arg, v.optional(nameList, r.default)])));
  const reload = (a: Record<string, boolean | string[]>, legacy: boolean) => {
    const spec: Record<string, true | string[]> = {};
    for (const r of k.reloadKeys) {
      const asked = legacy && r.alwaysOnLegacy ? true : a[r.arg]!;
      if (asked !== false) spec[r.key] = asked;
    }
    return {
      reload: spec,
      bumpVersion: true,
      inconsistencies: 'allow' as const,
      response: (b: BuildResult) => {
        const c = consistency(b);
        return c.is_consistent ? { is_consistent: true, message: 'success' } : { ...c, message: 'success' };
      },
    };
  };
  const reloadOrNull = () => {
    const args = reloadArgs();
    return v.pipe(v.nullish(args), v.transform((a) => (a ?? v.parse(args, {})) as Record<string, boolean | string[]>));
  };
  add({ type: 'reload_metadata', args: () => reloadOrNull(), mutates: true, run: (a) => reload(a, false) });
  add({ type: null, legacy: 'reload_metadata', args: () => reloadOrNull(), mutates: true, run: (a) => reload(a, true) });

  // clear_metadata: every section back to what its plugin says is "cleared".
  const clear = (ctx: { metadata: Metadata }) => {
    const next: Metadata = { version: 3 };
    for (const s of k.sortedSections()) next[s.key] = s.clear ? s.clear(ctx.metadata[s.key] ?? s.empty()) : s.empty();
    return { metadata: next, bumpVersion: true, inconsistencies: 'allow' as const, response: success };
  };
  add({ type: 'clear_metadata', legacy: 'clear_metadata', args: emptyArgs, mutates: true, run: (_a, ctx) => clear(ctx) });

  add({
    type: 'get_inconsistent_metadata',
    legacy: 'get_inconsistent_metadata',
    args: emptyArgs,
    mutates: false,
    run: (_a, ctx) => ({ response: consistency(ctx.current) }),
  });

  // drop_inconsistent_metadata: remove every inconsistent object, then whatever became
  // inconsistent because of that, until nothing removable is left.
  add({
    type: 'drop_inconsistent_metadata',
    legacy: 'drop_inconsistent_metadata',
    args: emptyArgs,
    mutates: true,
    run: async (_a, ctx) => {
      let md = ctx.metadata;
      let build = ctx.current;
      for (let round = 0; round < 20; round++) {
        const removable = build.inconsistencies.filter((o) => o.remove);
        if (removable.length === 0) break;
        for (const o of removable) md = o.remove!(md);
        build = await ctx.build(md);
      }
      return { metadata: md, bumpVersion: true, inconsistencies: 'allow', response: success };
    },
  });
}
