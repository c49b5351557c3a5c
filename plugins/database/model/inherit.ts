/**
 * Inherited roles (issue 24): the permissions of a role made from those of its parent roles, as
 * Hasura v2 combines them. The roles themselves (the `inherited_roles` section, add/drop, cycles)
 * belong to plugins/inherited-roles; this is the general part a source's permissions need: given
 * the roles in an order where every parent comes before its children, each table's and function's
 * permissions of an inherited role without its own.
 */
import type { BoolIR } from '../ir/types.js';
import type {
  DeletePermissionIR,
  FunctionModel,
  InsertPermissionIR,
  SelectPart,
  SelectPermissionIR,
  TableModel,
  UpdatePermissionIR,
} from './resolved.js';

/*
 * Note [Inherited roles]
 * An inherited role (`add_inherited_role`: a name and its `role_set`) gets, on every table and
 * function where it has no permission of its own, one made of its parents' (an explicit
 * permission of the role always wins, as in Hasura):
 *
 *   - select: a row is visible when any parent's filter allows it (their filters ORed); a column
 *     (or scalar computed field) is in the schema when some parent allows it, and its value is
 *     shown only in the rows that a parent allowing that column sees, null elsewhere: Hasura's
 *     cell-level nulling, compiled to `CASE WHEN <those parents' filters> THEN col END`
 *     (`SelectPermissionIR.redact`). A column that every parent with a select permission allows
 *     needs no CASE. Such a column is nullable in the role's schema. The same expression stands
 *     for the column wherever the role reads it: output, aggregates, `where`, `order_by`, so no
 *     value leaks through a row that only another parent sees (Hasura's own bug #10711 was such a
 *     leak through a parent's wider row filter). Aggregation is allowed when any parent allows it;
 *     the limit is the largest of the parents' limits that are set, as Hasura combines them
 *     (`Maybe (Max Int)`): a parent without a limit does not lift another's (more restrictive than
 *     the union of the rows, never wider); root fields are the union of the parents'
 *     (`query_root_fields`, all when a parent does not restrict).
 *   - a nested inherited role combines its parents' permissions the same way: its parts are its
 *     parents' parts (`SelectPermissionIR.parts`), flattened, so the CASE of a column ORs the
 *     filters of every original permission that allows it.
 *   - insert, update, delete: inherited only when every parent that has one has the same one
 *     (compared as compiled); parents that disagree leave the role without it and the build
 *     reports Hasura's `inherited role permission inconsistency` (`conflicts`), which an explicit
 *     permission of the role resolves. A parent that itself lost such a permission to a conflict
 *     counts as having none.
 *   - functions: callable when any parent may call the function.
 * Parents without a permission of a kind are left out, as if the role were made of the others.
 *
 * An ordinary role pays nothing: this runs in the build only when inherited roles exist, and
 * only inherited roles' permissions carry `redact`; the planner reads it once per plan.
 */

/** An inherited role and its parents, in an order where every parent precedes its children. */
export interface InheritedRoleDef {
  readonly role: string;
  readonly parents: readonly string[];
}

/** A conflict between the parents' permissions of one kind on one table (Note [Inherited roles]). */
export interface PermissionConflict {
  role: string;
  type: 'insert' | 'update' | 'delete';
}

const or = (of: BoolIR[]): BoolIR => (of.length === 1 ? of[0]! : of.some((e) => e.t === 'true') ? { t: 'true' } : { t: 'or', of });

/** The parts of a select permission: its own, or those it combines. */
export const partsOf = (p: SelectPermissionIR): readonly SelectPart[] => p.parts ?? [{ filter: p.filter, columns: p.columns, computedFields: p.computedFields }];

/** The select permission made of `perms` (at least one). */
export function combineSelect(perms: readonly SelectPermissionIR[]): SelectPermissionIR {
  if (perms.length === 1) return perms[0]!;
  const parts = perms.flatMap(partsOf);
  const columns = new Set<string>();
  const computedFields = new Set<string>();
  for (const p of parts) {
    for (const c of p.columns) columns.add(c);
    for (const c of p.computedFields) computedFields.add(c);
  }
  const redact = new Map<string, BoolIR>();
  const redactWhere = (name: string, has: (p: SelectPart) => boolean) => {
    const allowing = parts.filter(has);
    if (allowing.length < parts.length) {
      const e = or(allowing.map((p) => p.filter));
      if (e.t !== 'true') redact.set(name, e);
    }
  };
  for (const c of columns) redactWhere(c, (p) => p.columns.has(c));
  for (const c of computedFields) redactWhere(c, (p) => p.computedFields.has(c));
  const limits = perms.flatMap((p) => (p.limit === undefined ? [] : [p.limit]));
  const union = (xs: (readonly string[] | undefined)[]) => (xs.some((x) => x === undefined) ? undefined : [...new Set(xs.flatMap((x) => x!))]);
  return {
    columns,
    filter: or(parts.map((p) => p.filter)),
    limit: limits.length ? Math.max(...limits) : undefined,
    allowAggregations: perms.some((p) => p.allowAggregations),
    queryRootFields: union(perms.map((p) => p.queryRootFields)),
    subscriptionRootFields: union(perms.map((p) => p.subscriptionRootFields)),
    computedFields,
    ...(redact.size ? { redact } : {}),
    parts,
  };
}

/** A stable text of a compiled permission, to tell whether parents agree (sets as sorted lists). */
function signature(x: unknown): string {
  return JSON.stringify(x, (_k, val: unknown) =>
    val instanceof Set ? [...(val as Set<unknown>)].map(String).sort() : val instanceof Map ? [...(val as Map<string, unknown>)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : val,
  );
}

/** The table's model with the permissions of the inherited roles that have none of their own. */
export function inheritTable(m: TableModel, roles: readonly InheritedRoleDef[], conflicts: PermissionConflict[]): TableModel {
  const select = new Map(m.select);
  const insert = new Map(m.insert);
  const update = new Map(m.update);
  const del = new Map(m.delete);
  let changed = false;
  const agreed = <T>(role: string, type: PermissionConflict['type'], own: Map<string, T>, parents: readonly string[]) => {
    if (own.has(role)) return;
    const found = parents.flatMap((p) => (own.has(p) ? [own.get(p)!] : []));
    if (found.length === 0) return;
    const first = signature(found[0]);
    if (found.every((x, i) => i === 0 || signature(x) === first)) {
      own.set(role, found[0]!);
      changed = true;
    } else conflicts.push({ role, type });
  };
  for (const { role, parents } of roles) {
    if (!select.has(role)) {
      const found = parents.flatMap((p) => (select.has(p) ? [select.get(p)!] : []));
      if (found.length) {
        select.set(role, combineSelect(found));
        changed = true;
      }
    }
    agreed<InsertPermissionIR>(role, 'insert', insert, parents);
    agreed<UpdatePermissionIR>(role, 'update', update, parents);
    agreed<DeletePermissionIR>(role, 'delete', del, parents);
  }
  return changed ? { ...m, select, insert, update, delete: del } : m;
}

/** The function's model with the inherited roles that may call it (any parent may). */
export function inheritFunction(f: FunctionModel, roles: readonly InheritedRoleDef[]): FunctionModel {
  let permissions: Set<string> | undefined;
  for (const { role, parents } of roles) {
    const has = permissions ?? f.permissions;
    if (has.has(role) || !parents.some((p) => has.has(p))) continue;
    permissions ??= new Set(f.permissions);
    permissions.add(role);
  }
  return permissions ? { ...f, permissions } : f;
}
