/**
 * Inherited roles (issue 24; Hasura v2's `add_inherited_role`): a role made of other roles, which
 * gets their permissions where it has none of its own.
 *   - metadata: `inherited_roles` (`[{role_name, role_set}]`), exported, replaced and cleared with
 *     the rest;
 *   - operations: `add_inherited_role`, `drop_inherited_role`;
 *   - a build step that reports inherited roles whose parents are no role (an inconsistent object,
 *     as Hasura's) and cycles among them (Hasura refuses the metadata: `cyclic-dependency`);
 *   - the roles, in order, given to the database plugin (DatabaseService.setRoleInheritance),
 *     which combines the parents' table and function permissions (Note [Inherited roles] in
 *     plugins/database/model/inherit.ts), and to the remote-schemas plugin when it is there
 *     (RemoteSchemasService.setRoleInheritance), which gives the role its parents' remote schema
 *     permission when they agree (Note [Inherited remote schema permissions] in
 *     plugins/remote-schemas/inherit.ts), and to the actions plugin when it is there
 *     (ActionsService.setRoleInheritance): an inherited role sees an action any parent sees.
 *
 * Note [Where inherited roles live]
 * The roles are metadata of their own, so they live here; but combining permissions is the
 * database plugin's business: its compiled permissions (model/resolved.ts) are what is combined,
 * its planner and SQL compiler apply the result (the CASE of a redacted column), and its build
 * caches table models that must not carry another plugin's state. So the database plugin has a
 * general hook, "these roles are made of those", and everything about tables stays there. The
 * remote-schemas and actions plugins have the same hook; another plugin with per-role permissions
 * can take the same way (or read `resolveRoles` through this plugin's export).
 */
import * as v from '../../core/valibot.js';
import { definePlugin, type Metadata } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { nonEmptyText } from '../../core/validation.js';
import { DatabaseToken } from '../database/index.js';
import { RemoteSchemasToken } from '../remote-schemas/index.js';
import { ActionsToken } from '../actions/index.js';
import { InheritedRoleSchema, InheritedRolesSectionSchema, inheritedRolesOf, resolveRoles, type InheritedRole } from './roles.js';

export { resolveRoles, inheritedRolesOf, type InheritedRole, type ResolvedRoles } from './roles.js';

const SUCCESS = { message: 'success' };
const roleId = (name: string) => `inherited_role:${name}`;
const dquote = (s: string) => JSON.stringify(s);

export default definePlugin({
  name: 'inherited-roles',
  // After remote-schemas and actions when they are there (their hooks below), without requiring them.
  after: ['database', 'remote-schemas', 'actions'],
  requires: ['database'],
  setup(k) {
    const db = k.use(DatabaseToken);
    db.setRoleInheritance((md) => resolveRoles(md).ordered);
    // Note [Inherited remote schema permissions] in plugins/remote-schemas/inherit.ts.
    k.optional(RemoteSchemasToken)?.setRoleInheritance((md) => resolveRoles(md).ordered);
    // An inherited role sees an action any of its parents sees (Hasura v2).
    k.optional(ActionsToken)?.setRoleInheritance((md) => resolveRoles(md).ordered);

    // Hasura's export order: ..., rest_endpoints (80), api_limits (90), inherited_roles, ...
    k.metadataSection({ key: 'inherited_roles', order: 92, schema: InheritedRolesSectionSchema, empty: () => [] });

    k.buildStep({
      name: 'inherited-roles',
      after: ['sources'],
      run(ctx) {
        const r = resolveRoles(ctx.metadata);
        for (const c of r.cycles) {
          ctx.inconsistent({
            type: 'inherited_role',
            name: `inherited role ${c[0]}`,
            reason: `found cycle(s) in roles: ${JSON.stringify(c)}`,
            definition: inheritedRolesOf(ctx.metadata).find((x) => x.role_name === c[0]),
            id: `inherited_role_cycle:${[...c].sort().join(',')}`,
            // Hasura refuses metadata with a cycle outright (no permission could be built).
            error: { code: 'cyclic-dependency', status: 400 },
            remove: (md) => withoutRole(md, c[0]!),
          });
        }
        for (const { role, parents } of r.missing) {
          ctx.inconsistent({
            type: 'inherited_role',
            name: `inherited role ${role.role_name}`,
            reason: `Inconsistent object: the following parent role(s) are not found: ${parents.join(', ')} which are required to construct the inherited role: ${dquote(role.role_name)}`,
            definition: role,
            id: roleId(role.role_name),
            remove: (md) => withoutRole(md, role.role_name),
          });
        }
        return r;
      },
    });

    k.operation({
      type: 'add_inherited_role',
      args: InheritedRoleSchema,
      mutates: true,
      run: (a, ctx) => {
        if (a.role_set.includes(a.role_name)) {
          throw new SvcError('invalid-params', 'an inherited role name cannot be in the role combination', { path: '$.args' });
        }
        if (a.role_name === 'admin') throw new SvcError('constraint-violation', 'cannot define an inherited role named "admin"', { path: '$.args' });
        const role: InheritedRole = { role_name: a.role_name, role_set: [...new Set(a.role_set)], ...(a.comment !== undefined ? { comment: a.comment } : {}) };
        const all = inheritedRolesOf(ctx.metadata);
        // Hasura inserts into its map: a role of the same name is replaced, keeping its place.
        const at = all.findIndex((r) => r.role_name === a.role_name);
        const next = at < 0 ? [...all, role] : all.map((r, i) => (i === at ? role : r));
        return { metadata: { ...ctx.metadata, inherited_roles: next }, response: SUCCESS, defines: [roleId(a.role_name)] };
      },
    });

    k.operation({
      type: 'drop_inherited_role',
      args: v.object({ role_name: nonEmptyText }),
      mutates: true,
      run: (a, ctx) => {
        if (!inheritedRolesOf(ctx.metadata).some((r) => r.role_name === a.role_name)) {
          throw new SvcError('not-exists', `${dquote(a.role_name)} inherited role doesn't exist`, { path: '$.args' });
        }
        return { metadata: withoutRole(ctx.metadata, a.role_name), response: SUCCESS };
      },
    });
  },
});

function withoutRole(md: Metadata, name: string): Metadata {
  return { ...md, inherited_roles: inheritedRolesOf(md).filter((r) => r.role_name !== name) };
}
