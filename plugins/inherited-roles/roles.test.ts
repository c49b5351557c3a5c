/** Which roles exist for inherited roles' parents, counted through changes (roles.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Metadata } from '../../core/plugin.js';
import { resolveRoles } from './roles.js';

const ROLES = ['a', 'b', 'c', 'd'];
type Table = { table: { schema: string; name: string }; select_permissions?: { role: string }[]; update_permissions?: { role: string }[] };

const entry = (name: string, select: string[], update: string[]): Table => ({
  table: { schema: 'public', name },
  ...(select.length ? { select_permissions: select.map((role) => ({ role, permission: {} })) } : {}),
  ...(update.length ? { update_permissions: update.map((role) => ({ role, permission: {} })) } : {}),
});

const doc = (sources: { name: string; tables: Table[] }[]): Metadata =>
  ({
    version: 3,
    sources: sources.map((s) => ({ ...s, kind: 'postgres', configuration: {} })),
    inherited_roles: [{ role_name: 'child', role_set: ROLES }],
  }) as unknown as Metadata;

describe("an inherited role's parents with no permission (resolveRoles)", () => {
  it('follows every change of the tables lists, counting only the run that changed', () => {
    const roles = fc.subarray(ROLES);
    const change = fc.record({
      source: fc.constantFrom('one', 'two'),
      op: fc.constantFrom('replace', 'add', 'remove', 'same'),
      at: fc.nat(),
      select: roles,
      update: roles,
    });
    fc.assert(
      fc.property(fc.array(change, { maxLength: 30 }), (changes) => {
        // Lists that share their untouched entries, as documents after operations do.
        const lists: Record<string, Table[]> = { one: [entry('t0', ['a'], [])], two: [] };
        let n = 1;
        for (const c of changes) {
          const list = lists[c.source]!;
          const i = list.length ? c.at % list.length : 0;
          const next = list.slice();
          if (c.op === 'replace' && list.length) next[i] = entry(list[i]!.table.name, c.select, c.update);
          else if (c.op === 'add') next.splice(i, 0, entry(`t${n++}`, c.select, c.update));
          else if (c.op === 'remove') next.splice(i, 1);
          lists[c.source] = c.op === 'same' ? list : next;
          const md = doc(Object.entries(lists).map(([name, tables]) => ({ name, tables })));
          const granted = new Set(
            Object.values(lists)
              .flat()
              .flatMap((t) => [...(t.select_permissions ?? []), ...(t.update_permissions ?? [])].map((p) => p.role)),
          );
          const absent = ROLES.filter((r) => !granted.has(r));
          const r = resolveRoles(md);
          expect(r.missing.map((m) => m.parents)).toEqual(absent.length ? [absent] : []);
          expect(r.ordered.map((o) => o.role)).toEqual(absent.length ? [] : ['child']);
        }
      }),
      { numRuns: 200 },
    );
  });
});
