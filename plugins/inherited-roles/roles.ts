/**
 * The `inherited_roles` section and how it resolves: which roles exist, which inherited roles are
 * consistent, in what order their permissions are built, and the cycles among them.
 */
import * as v from '../../core/valibot.js';
import { nonEmptyText } from '../../core/validation.js';
import type { Metadata } from '../../core/plugin.js';
import { sourcesOf, type InheritedRoleDef, type SourceMeta } from '../database/index.js';
import { changedRun } from '../../lib/lists.js';

export const InheritedRoleSchema = v.object({ role_name: nonEmptyText, role_set: v.array(nonEmptyText), comment: v.optional(v.string()) });
export type InheritedRole = v.InferOutput<typeof InheritedRoleSchema>;
export const InheritedRolesSectionSchema = v.array(InheritedRoleSchema);

export const inheritedRolesOf = (md: Metadata): InheritedRole[] => (md.inherited_roles as InheritedRole[] | undefined) ?? [];

export interface ResolvedRoles {
  /** The consistent inherited roles, every parent before its children. */
  ordered: InheritedRoleDef[];
  /** Inherited roles some of whose parents are no role (no permission anywhere, no inherited role). */
  missing: { role: InheritedRole; parents: string[] }[];
  /** Each cycle, as Hasura lists it: the roles along parent edges, the first repeated at the end. */
  cycles: string[][];
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The roles that have a permission somewhere in the document: on a table or function of a source,
 * a remote schema, an action (Hasura's "all roles" an inherited role's parents are looked up in). */
function rolesWithPermissions(md: Metadata): Set<string> {
  const out = new Set<string>();
  for (const s of sourcesOf(md)) {
    for (const role of tableRoleCounts(s).keys()) out.add(role);
    for (const f of s.functions ?? []) addRoles(f.permissions, out);
  }
  for (const section of ['remote_schemas', 'actions']) {
    const items = md[section];
    if (Array.isArray(items)) for (const x of items) if (isObj(x)) addRoles(x.permissions, out);
  }
  return out;
}

/** Adds the roles of a list of permissions (`{role, ...}`) to `out`. */
function addRoles(perms: unknown, out: Set<string>): void {
  if (Array.isArray(perms)) for (const p of perms) if (isObj(p) && typeof p.role === 'string') out.add(p.role);
}

/** The roles with a permission on a table, kept per (immutable) table entry: every build of a
 * document with inherited roles asks (reading every table's four lists cost a profiled
 * pg_track_table at 2,000 tables 0.8 ms, the lookups 0.2). */
function tableRoles(t: SourceMeta['tables'][number]): readonly string[] {
  let roles = tableRolesCache.get(t);
  if (!roles) {
    const found = new Set<string>();
    for (const k of ['select', 'insert', 'update', 'delete'] as const) addRoles(t[`${k}_permissions`], found);
    tableRolesCache.set(t, (roles = [...found]));
  }
  return roles;
}
const tableRolesCache = new WeakMap<object, readonly string[]>();

/** How many of a source's tables give each role a permission. Every build of a document with
 * inherited roles asks, and a look at every table cost a pg_track_table at 10,000 tables 1.8 ms:
 * so the counts of the last tables list seen for the source are kept, and a new list is counted
 * in the run where it differs from that one (lib/lists.ts; documents share the entries a change
 * did not touch), any list against any other. */
function tableRoleCounts(s: SourceMeta): ReadonlyMap<string, number> {
  const last = lastCounts.get(s.name);
  if (last?.tables === s.tables) return last.counts;
  const counts = new Map(last?.counts);
  const prev = last?.tables ?? [];
  const run = changedRun(prev, s.tables);
  for (let i = run.start; i < run.prevEnd; i++) {
    for (const role of tableRoles(prev[i]!)) {
      const n = counts.get(role)! - 1;
      if (n === 0) counts.delete(role);
      else counts.set(role, n);
    }
  }
  for (let i = run.start; i < run.nextEnd; i++) for (const role of tableRoles(s.tables[i]!)) counts.set(role, (counts.get(role) ?? 0) + 1);
  lastCounts.set(s.name, { tables: s.tables, counts });
  return counts;
}
const lastCounts = new Map<string, { tables: SourceMeta['tables']; counts: ReadonlyMap<string, number> }>();

const resolvedCache = new WeakMap<Metadata, ResolvedRoles>();
let last: { key: string; ordered: InheritedRoleDef[] } = { key: '[]', ordered: [] };
const EMPTY: ResolvedRoles = { ordered: [], missing: [], cycles: [] };

/** The document's inherited roles resolved (memoised per document: the `sources` build step and
 * this plugin's step read the same). */
export function resolveRoles(md: Metadata): ResolvedRoles {
  const roles = inheritedRolesOf(md);
  if (roles.length === 0) return EMPTY;
  const hit = resolvedCache.get(md);
  if (hit) return hit;
  const byName = new Map(roles.map((r) => [r.role_name, r]));
  const cycles = findCycles(roles, byName);
  const inCycle = new Set(cycles.flat());
  const granted = rolesWithPermissions(md);
  const ordered: InheritedRoleDef[] = [];
  const missing: ResolvedRoles['missing'] = [];
  const state = new Map<string, 'ok' | 'bad' | 'visiting'>();
  // Depth first along parent edges: parents are placed before their children; a role whose
  // parent is no role, or an inconsistent inherited role, is left out.
  const visit = (name: string): boolean => {
    const r = byName.get(name);
    if (!r) return granted.has(name);
    const s = state.get(name);
    if (s) return s === 'ok';
    if (inCycle.has(name)) {
      state.set(name, 'bad');
      return false;
    }
    state.set(name, 'visiting');
    const absent = r.role_set.filter((p) => !visit(p));
    if (absent.length) {
      state.set(name, 'bad');
      missing.push({ role: r, parents: absent });
      return false;
    }
    state.set(name, 'ok');
    ordered.push({ role: name, parents: r.role_set });
    return true;
  };
  for (const r of roles) visit(r.role_name);
  // The same roles as the last document's give the same array: the database plugin reuses each
  // table's inherited permissions while the array and the table are unchanged.
  const key = JSON.stringify(ordered);
  if (key !== last.key) last = { key, ordered };
  const out = { ordered: last.ordered, missing, cycles };
  resolvedCache.set(md, out);
  return out;
}

/** The cycles among inherited roles (Tarjan's strongly connected components along parent edges),
 * each listed from its member that comes last in the document, along parent edges, back to it. */
function findCycles(roles: readonly InheritedRole[], byName: ReadonlyMap<string, InheritedRole>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const sccs: string[][] = [];
  const strong = (n: string) => {
    idx.set(n, index);
    low.set(n, index++);
    stack.push(n);
    on.add(n);
    for (const p of byName.get(n)!.role_set) {
      if (!byName.has(p)) continue;
      if (!idx.has(p)) {
        strong(p);
        low.set(n, Math.min(low.get(n)!, low.get(p)!));
      } else if (on.has(p)) low.set(n, Math.min(low.get(n)!, idx.get(p)!));
    }
    if (low.get(n) === idx.get(n)) {
      const scc: string[] = [];
      let x: string;
      do {
        x = stack.pop()!;
        on.delete(x);
        scc.push(x);
      } while (x !== n);
      if (scc.length > 1 || byName.get(n)!.role_set.includes(n)) sccs.push(scc);
    }
  };
  for (const r of roles) if (!idx.has(r.role_name)) strong(r.role_name);
  const position = new Map(roles.map((r, i) => [r.role_name, i]));
  return sccs.map((scc) => {
    const members = new Set(scc);
    const start = [...scc].sort((a, b) => position.get(b)! - position.get(a)!)[0]!;
    const path = [start];
    const seen = new Set([start]);
    let cur = start;
    for (;;) {
      const next = byName.get(cur)!.role_set.find((p) => members.has(p) && (!seen.has(p) || p === start));
      if (next === undefined || next === start) break;
      path.push(next);
      seen.add(next);
      cur = next;
    }
    return [...path, start];
  });
}
