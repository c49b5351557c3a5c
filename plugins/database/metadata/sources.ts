/**
 * Source operations: `<prefix>_add_source`, `<prefix>_drop_source`, `<prefix>_update_source`,
 * and the kind-independent `rename_source`.
 */
import { SourceCustomizationSchema } from './customization.js';
import * as v from '../../../core/valibot.js';
import { SvcError } from '../../../core/errors.js';
import { nameText } from '../../../core/validation.js';
import type { KernelApi, Metadata, OperationDef } from '../../../core/plugin.js';
import type { CommandGroup, KindBinding, SourceMeta } from '../model/types.js';
import { findSource, setSources, sourcesOf } from '../model/meta.js';

const success = { message: 'success' };

function sourceEntry(kind: string, name: string, configuration: unknown, customization: unknown, rest?: SourceMeta): SourceMeta {
  const out: SourceMeta = { name, kind, tables: rest?.tables ?? [] } as SourceMeta;
  if (rest?.functions?.length) out.functions = rest.functions;
  out.configuration = configuration as Record<string, unknown>;
  const cust = customization ?? rest?.customization;
  if (cust && Object.keys(cust as object).length) out.customization = cust as Record<string, unknown>;
  return out;
}

export const sourcesGroup: CommandGroup = {
  name: 'sources',
  operations(bind: KindBinding): OperationDef[] {
    const kind = bind.kind;
    const customization = v.optional(v.nullable(SourceCustomizationSchema));
    return [
      {
        type: bind.name('add_source'),
        args: v.object({
          name: nameText,
          configuration: kind.configSchema,
          replace_configuration: v.optional(v.boolean(), false),
          customization,
        }),
        mutates: true,
        run: (a, ctx) => {
          const existing = findSource(ctx.metadata, a.name);
          if (existing && !a.replace_configuration) {
            throw new SvcError('already-exists', `source with name "${a.name}" already exists`, { path: '$.args' });
          }
          const list = sourcesOf(ctx.metadata);
          const entry = sourceEntry(kind.kind, a.name, a.configuration, a.customization, existing);
          const next = existing ? list.map((s) => (s.name === a.name ? entry : s)) : [...list, entry];
          return { metadata: setSources(ctx.metadata, next), response: success };
        },
      },
      {
        type: bind.name('update_source'),
        args: v.object({ name: nameText, configuration: v.optional(kind.configSchema), customization }),
        mutates: true,
        run: (a, ctx) => {
          const existing = findSource(ctx.metadata, a.name);
          if (!existing) throw new SvcError('not-exists', `source with name "${a.name}" does not exist`, { path: '$.args' });
          const entry = sourceEntry(kind.kind, a.name, a.configuration ?? existing.configuration, a.customization, existing);
          return { metadata: setSources(ctx.metadata, sourcesOf(ctx.metadata).map((s) => (s.name === a.name ? entry : s))), response: success };
        },
      },
      {
        type: bind.name('drop_source'),
        args: v.object({ name: nameText, cascade: v.optional(v.boolean(), false) }),
        mutates: true,
        run: (a, ctx) => {
          const existing = findSource(ctx.metadata, a.name);
          if (!existing) throw new SvcError('not-exists', `source with name "${a.name}" does not exist`, { path: '$.args' });
          if (existing.kind !== kind.kind) {
            throw new SvcError('not-exists', `source with name "${a.name}" has kind "${existing.kind}", not "${kind.kind}"`, { path: '$.args' });
          }
          return { metadata: dropSource(ctx.metadata, a.name), response: success };
        },
      },
    ];
  },
};

export function dropSource(md: Metadata, name: string): Metadata {
  return setSources(md, sourcesOf(md).filter((s) => s.name !== name));
}

/** rename_source is the same for every kind. */
export function registerRenameSource(k: KernelApi): void {
  k.operation({
    type: 'rename_source',
    args: v.object({ name: nameText, new_name: nameText }),
    mutates: true,
    run: (a, ctx) => {
      const existing = findSource(ctx.metadata, a.name);
      if (!existing) throw new SvcError('not-exists', `Could not find source with name "${a.name}"`, { path: '$.args' });
      if (findSource(ctx.metadata, a.new_name)) {
        throw new SvcError('already-exists', `Source with name "${a.new_name}" already exists`, { path: '$.args' });
      }
      const next = sourcesOf(ctx.metadata).map((s) => (s.name === a.name ? { ...s, name: a.new_name } : s));
      return { metadata: setSources(ctx.metadata, next), response: success };
    },
  });
}
