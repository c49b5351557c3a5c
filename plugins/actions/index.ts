/**
 * Actions and custom types (SPEC "Custom types", issue 24; Hasura v2's Hasura/RQL/DDL/Action.hs,
 * CustomTypes.hs and Hasura/GraphQL/Execute/Action.hs):
 *   - metadata: `actions` and `custom_types`, exported, replaced and cleared with the rest;
 *   - operations (both endpoints): set_custom_types, create_action, update_action, drop_action,
 *     create_action_permission, drop_action_permission;
 *   - the `actions` build step (build.ts): custom types checked against each other and the
 *     tracked tables, actions against the custom types and the environment;
 *   - the schema contributor (schema.ts): actions as query, mutation and subscription root
 *     fields per role, handlers called by handler.ts, relationships joined by project.ts;
 *   - the `async-actions` worker (async.ts): asynchronous actions' calls, kept in the catalog.
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { SvcError } from '../../core/errors.js';
import { definePlugin, token, type Metadata, type OperationContext } from '../../core/plugin.js';
import { DatabaseToken, sourcesOf, type InheritedRoleDef, type SqlExecutor } from '../database/index.js';
import { AsyncActions, ensureCatalog } from './async.js';
import { actionId, buildActions, CUSTOM_TYPES_ID, inheritActionRoles, STEP } from './build.js';
import {
  actionsOf,
  ActionsSectionSchema,
  CreateActionSchema,
  CreatePermissionSchema,
  CustomTypesSchema,
  DropActionSchema,
  DropPermissionSchema,
  type ActionMeta,
} from './definition.js';
import { actionsBuildOf, actionsContributor } from './schema.js';

export { STEP as ACTIONS_STEP, type ActionsBuild, type ResolvedAction } from './build.js';
export type { ActionMeta, CustomTypes } from './definition.js';

/** What other plugins may tell this one (`k.optional(ActionsToken)`). */
export interface ActionsService {
  /** Declares inherited roles (the inherited-roles plugin does): `roles` gives, for a metadata
   * document, the inherited roles, every parent before its children. An inherited role sees an
   * action when it or any of its parents has a permission for it (Hasura v2; an action's
   * permission has no content, so there is nothing to combine). */
  setRoleInheritance(roles: (md: Metadata) => readonly InheritedRoleDef[]): void;
}
export const ActionsToken = token<ActionsService>('actions');

const SUCCESS = { message: 'success' };
const withActions = (md: Metadata, list: ActionMeta[]): Metadata => ({ ...md, actions: list });
const dq = (s: string) => `"${s}"`;

/** Hasura's HASURA_GRAPHQL_ASYNC_ACTIONS_FETCH_INTERVAL (milliseconds) and _BATCH_SIZE. */
export const ACTIONS_OPTIONS = {
  asyncActionsFetchInterval: { flag: 'async-actions-fetch-interval', env: 'SVC_GRAPHQL_ASYNC_ACTIONS_FETCH_INTERVAL', schema: optionSchemas.atLeastOne, default: 1000 },
  asyncActionsFetchBatchSize: { flag: 'async-actions-fetch-batch-size', env: 'SVC_GRAPHQL_ASYNC_ACTIONS_FETCH_BATCH_SIZE', schema: optionSchemas.atLeastOne, default: 10 },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof ACTIONS_OPTIONS> {}
}

function requireAction(ctx: OperationContext, name: string): ActionMeta {
  const a = actionsOf(ctx.metadata).find((x) => x.name === name);
  if (!a) throw new SvcError('not-exists', `action with name ${dq(name)} does not exist`, { path: '$.args' });
  return a;
}

export default definePlugin({
  name: 'actions',
  options: ACTIONS_OPTIONS,
  after: ['database', 'postgres', 'event-triggers'],
  requires: ['database', 'event-triggers'],
  setup(k) {
    const db = k.use(DatabaseToken);
    let inheritance: ((md: Metadata) => readonly InheritedRoleDef[]) | undefined;
    k.provide(ActionsToken, {
      setRoleInheritance(roles) {
        if (inheritance) throw new Error('role inheritance is provided twice');
        inheritance = roles;
      },
    });
    const asyncActions = new AsyncActions(() => actionsBuildOf(k.state().build), k.log, {
      fetchIntervalMs: k.config.asyncActionsFetchInterval,
      batchSize: k.config.asyncActionsFetchBatchSize,
      poolSize: k.config.eventsHttpPoolSize ?? 100,
    });

    // Hasura's export order: ..., allowlist (40), actions, custom_types, cron_triggers (75), ...
    k.metadataSection({ key: 'actions', order: 50, schema: ActionsSectionSchema, empty: () => [] });
    k.metadataSection({ key: 'custom_types', order: 60, schema: CustomTypesSchema, empty: () => ({}), isEmpty: (x) => x == null || Object.keys(x as object).length === 0 });

    k.operation({
      type: 'set_custom_types',
      legacy: 'set_custom_types',
      args: CustomTypesSchema,
      mutates: true,
      run(c, ctx) {
        const { custom_types: _old, ...rest } = ctx.metadata;
        const metadata = (Object.keys(c).length ? { ...rest, custom_types: c } : rest) as Metadata;
        return { metadata, response: SUCCESS, defines: [CUSTOM_TYPES_ID] };
      },
    });

    k.operation({
      type: 'create_action',
      legacy: 'create_action',
      args: CreateActionSchema,
      mutates: true,
      run(a, ctx) {
        if (actionsOf(ctx.metadata).some((x) => x.name === a.name)) throw new SvcError('already-exists', `action with name ${dq(a.name)} already exists`, { path: '$.args' });
        const meta: ActionMeta = { name: a.name, definition: a.definition, ...(a.comment != null ? { comment: a.comment } : {}) };
        return { metadata: withActions(ctx.metadata, [...actionsOf(ctx.metadata), meta]), response: SUCCESS, defines: [actionId(a.name)] };
      },
    });

    k.operation({
      type: 'update_action',
      legacy: 'update_action',
      args: CreateActionSchema,
      mutates: true,
      run(a, ctx) {
        const old = requireAction(ctx, a.name);
        const { comment: _c, ...kept } = old;
        const meta: ActionMeta = { ...kept, definition: a.definition, ...(a.comment != null ? { comment: a.comment } : {}) };
        return { metadata: withActions(ctx.metadata, actionsOf(ctx.metadata).map((x) => (x === old ? meta : x))), response: SUCCESS, defines: [actionId(a.name)] };
      },
    });

    k.operation({
      type: 'drop_action',
      legacy: 'drop_action',
      args: DropActionSchema,
      mutates: true,
      async run(a, ctx) {
        const old = requireAction(ctx, a.name);
        // Hasura clears the action's log unless told not to; a dry run leaves it (Note [Dry runs]
        // in core/kernel/pipeline.ts: the log is written outside the request's unit of work).
        if (a.clear_data !== false && !ctx.dryRun) await asyncActions.clear(actionsBuildOf(ctx.current), a.name);
        return { metadata: withActions(ctx.metadata, actionsOf(ctx.metadata).filter((x) => x !== old)), response: SUCCESS };
      },
    });

    k.operation({
      type: 'create_action_permission',
      legacy: 'create_action_permission',
      args: CreatePermissionSchema,
      mutates: true,
      run(p, ctx) {
        const old = requireAction(ctx, p.action);
        if ((old.permissions ?? []).some((x) => x.role === p.role)) {
          throw new SvcError('already-exists', `permission for role ${dq(p.role)} is already defined on ${dq(p.action)}`, { path: '$.args' });
        }
        // Hasura puts the new permission first.
        const perm = { role: p.role, ...(p.comment != null ? { comment: p.comment } : {}) };
        const meta: ActionMeta = { ...old, permissions: [perm, ...(old.permissions ?? [])] };
        return { metadata: withActions(ctx.metadata, actionsOf(ctx.metadata).map((x) => (x === old ? meta : x))), response: SUCCESS, defines: [actionId(p.action)] };
      },
    });

    k.operation({
      type: 'drop_action_permission',
      legacy: 'drop_action_permission',
      args: DropPermissionSchema,
      mutates: true,
      run(p, ctx) {
        const old = actionsOf(ctx.metadata).find((x) => x.name === p.action);
        if (!old || !(old.permissions ?? []).some((x) => x.role === p.role)) {
          throw new SvcError('not-exists', `permission for role: ${dq(p.role)} is not defined on ${dq(p.action)}`, { path: '$.args' });
        }
        const rest = old.permissions!.filter((x) => x.role !== p.role);
        const { permissions: _p, ...kept } = old;
        const meta: ActionMeta = rest.length ? { ...kept, permissions: rest } : kept;
        return { metadata: withActions(ctx.metadata, actionsOf(ctx.metadata).map((x) => (x === old ? meta : x))), response: SUCCESS };
      },
    });

    k.buildStep({
      name: STEP,
      // root-fields: who gives a root field an action's name collides with (its message).
      after: ['sources', 'root-fields'],
      async run(ctx) {
        // The log of asynchronous actions lives in the default PostgreSQL source, made when an
        // asynchronous action first needs it.
        let catalog: SqlExecutor | undefined;
        if (actionsOf(ctx.metadata).some((a) => a.definition.kind === 'asynchronous')) {
          const home = sourcesOf(ctx.metadata).find((s) => s.name === 'default');
          const rs = home ? db.resolved(ctx).sources.get(home.name) : undefined;
          if (rs?.connection && rs.kind.holdsEngineTables) {
            try {
              await ensureCatalog(rs.connection.executor);
              catalog = rs.connection.executor;
            } catch (e) {
              ctx.log.warn('async-action', { message: 'could not create the action log', error: String(e) });
            }
          }
        }
        const built = await buildActions(ctx, db, k.env, catalog, () => {
          try {
            const r = k.roleRoots('admin', ctx);
            return { query: r.query, mutation: r.mutation };
          } catch {
            // Other plugins' fields collide among themselves: they report that; nothing to check against.
            return undefined;
          }
        });
        return inheritance ? inheritActionRoles(built, inheritance(ctx.metadata)) : built;
      },
    });

    k.schemaContributor(actionsContributor(k, db, asyncActions));

    const onBuild = () => asyncActions.poke();
    k.worker({
      name: 'async-actions',
      start() {
        k.events.on('metadataChanged', onBuild);
        asyncActions.start();
      },
      async stop() {
        k.events.off('metadataChanged', onBuild);
        await asyncActions.stop();
      },
    });
  },
});
