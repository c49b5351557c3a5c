/**
 * Remote schema permissions of inherited roles (Note [Inherited remote schema permissions]).
 */
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isUnionType,
  Kind,
  print,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLNamedType,
  type ValueNode,
} from 'graphql';
import type { InheritedRoleDef } from '../database/index.js';
import type { Preset } from './customize.js';
import type { RolePermission } from './permissions.js';

/*
 * Note [Inherited remote schema permissions]
 * An inherited role (plugins/inherited-roles) sees a remote through a permission of its own when
 * it has one; otherwise through its parents' permissions, as Hasura v2 combines them (its
 * buildRemoteSchemaPermissions and the CheckPermission semigroup; the "roles inheritance" note:
 * "an inherited role can only inherit permission from its parent roles when the relevant parts
 * of the permissions are equal"). It is not a union of the parents' schemas:
 *   - parents with no permission on the remote are passed over;
 *   - the parents that have one must have the same permission up to what does not matter: the
 *     order of types, fields, arguments, interfaces, union members and enum values, the
 *     descriptions, the `schema {}` block when it names the default roots. Presets matter
 *     (their values, and whether they read a session variable), as do types, defaults and
 *     the root type names. The role then has that permission;
 *   - when two of them differ, the role has none on that remote, and the build reports Hasura's
 *     `inherited role permission inconsistency` for that role and remote (entity
 *     `{remote_schema}`). Like the tables' conflicts (plugins/database/model/service.ts) it is
 *     `objectless`: no metadata object is wrong, no operation is blamed for it, and giving the
 *     role a permission of its own (add_remote_schema_permissions) resolves it;
 *   - an inherited role whose parent is itself in conflict is in conflict too (Hasura's
 *     CPInconsistent absorbs), and reported as well.
 * A parent's own permission that is inconsistent (its SDL does not fit the remote) counts as
 * none, as in Hasura, where only the permissions that were built are combined.
 */

/** What inheriting gave for one remote: the inherited roles' permissions (the parents' objects,
 * shared) and the roles in conflict, in the order of `roles`. */
export interface InheritedPermissions {
  readonly permissions: ReadonlyMap<string, RolePermission>;
  readonly conflicts: readonly string[];
}

/** The permissions of `roles` (every parent before its children) on one remote whose own
 * permissions are `own`. A role with a permission of its own keeps it. */
export function inheritPermissions(own: ReadonlyMap<string, RolePermission>, roles: readonly InheritedRoleDef[]): InheritedPermissions {
  const permissions = new Map<string, RolePermission>();
  const conflicts: string[] = [];
  const state = new Map<string, RolePermission | 'conflict'>(own);
  for (const { role, parents } of roles) {
    if (state.has(role)) continue;
    let got: RolePermission | 'conflict' | undefined;
    for (const p of parents) {
      const s = state.get(p);
      if (s === undefined) continue;
      if (s === 'conflict' || (got !== undefined && got !== 'conflict' && relevantKey(got) !== relevantKey(s))) {
        got = 'conflict';
        break;
      }
      got ??= s;
    }
    if (got === undefined) continue;
    state.set(role, got);
    if (got === 'conflict') conflicts.push(role);
    else permissions.set(role, got);
  }
  return { permissions, conflicts };
}

const keys = new WeakMap<RolePermission, string>();

/** The permission in a canonical text: two permissions are relevantly equal when their texts are. */
export function relevantKey(p: RolePermission): string {
  const hit = keys.get(p);
  if (hit !== undefined) return hit;
  const s = p.schema;
  const lines: string[] = [`query ${s.getQueryType()?.name ?? ''}`, `mutation ${s.getMutationType()?.name ?? ''}`, `subscription ${s.getSubscriptionType()?.name ?? ''}`];
  const preset = (m: ReadonlyMap<string, Preset> | undefined, name: string) => {
    const x = m?.get(name);
    return x ? ` @preset(${x.session ? 'session' : 'static'} ${canonical(x.value)})` : '';
  };
  const input = (x: GraphQLArgument | GraphQLInputField, m: ReadonlyMap<string, Preset> | undefined) =>
    `${x.name}: ${String(x.type)}${x.astNode?.defaultValue ? ` = ${canonical(x.astNode.defaultValue)}` : ''}${preset(m, x.name)}`;
  const types = Object.values(s.getTypeMap())
    .filter((t) => !t.name.startsWith('__'))
    .sort((a, b) => cmp(a.name, b.name));
  for (const t of types) lines.push(typeKey(t, p, input));
  const out = lines.join('\n');
  keys.set(p, out);
  return out;
}

function typeKey(t: GraphQLNamedType, p: RolePermission, input: (x: GraphQLArgument | GraphQLInputField, m: ReadonlyMap<string, Preset> | undefined) => string): string {
  const sorted = (xs: readonly string[]) => [...xs].sort(cmp).join(', ');
  if (isObjectType(t) || isInterfaceType(t)) {
    const fields = Object.values(t.getFields())
      .map((f) => {
        const m = p.presets.get(`${t.name}.${f.name}`);
        return `${f.name}(${sorted(f.args.map((a) => input(a, m)))}): ${String(f.type)}`;
      })
      .sort(cmp);
    return `${isObjectType(t) ? 'type' : 'interface'} ${t.name} implements ${sorted(t.getInterfaces().map((i) => i.name))} { ${fields.join('; ')} }`;
  }
  if (isUnionType(t)) return `union ${t.name} = ${sorted(t.getTypes().map((m) => m.name))}`;
  if (isEnumType(t)) return `enum ${t.name} { ${sorted(t.getValues().map((x) => x.name))} }`;
  if (isInputObjectType(t)) {
    const m = p.presets.get(t.name);
    return `input ${t.name} { ${sorted(Object.values(t.getFields()).map((f) => input(f, m)))} }`;
  }
  return `scalar ${getNamedType(t).name}`;
}

/** A GraphQL literal with its object fields in name order (Hasura compares them as maps). */
function canonical(v: ValueNode): string {
  if (v.kind === Kind.OBJECT) return `{${[...v.fields].sort((a, b) => cmp(a.name.value, b.name.value)).map((f) => `${f.name.value}: ${canonical(f.value)}`).join(', ')}}`;
  if (v.kind === Kind.LIST) return `[${v.values.map(canonical).join(', ')}]`;
  return print(v);
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
