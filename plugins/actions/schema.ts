/**
 * The actions' schema contributor: for a role, the actions it may run (admin: all; another role:
 * those with a permission for it), as Hasura v2 exposes them:
 *   - a query action: `<action>(args): <output>` under the query root;
 *   - a synchronous mutation: `<action>(args): <output>` under the mutation root;
 *   - an asynchronous mutation: `<action>(args): uuid!` under the mutation root, and
 *     `<action>(id: uuid!): <action>` (`{id, created_at, errors, output}`) under the query and
 *     subscription roots.
 * Each root field plans (Note [Planned root fields] in core/schema/contract.ts): the plan keeps the
 * field's node and types; a run calls the handler (handler.ts) or reads the action log
 * (async.ts), then projects the answer (project.ts).
 */
import {
  getArgumentValues,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLField,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLOutputType,
} from 'graphql';
import { SvcError } from '../../core/errors.js';
import type { BuildResult, FieldPlan, KernelApi, LiveGroup, PlanInput, RootFieldDef, RunContext, SchemaContributorDef } from '../../core/plugin.js';
import { tableJoinTypes, type DatabaseService } from '../database/index.js';
import { EMPTY, STEP, type ActionsBuild, type ResolvedAction } from './build.js';
import { callHandler } from './handler.js';
import { project, runJoins, type DocumentContext, type PendingJoin } from './project.js';
import { ActionTypes } from './types.js';
import type { AsyncActions } from './async.js';

export const actionsBuildOf = (build: Pick<BuildResult, 'outputs'>): ActionsBuild => (build.outputs.get(STEP) as ActionsBuild | undefined) ?? EMPTY;

type FieldConfig = RootFieldDef['config'];

function docOf(input: PlanInput): DocumentContext {
  return { fragments: input.fragments, schema: input.schema, variableDefinitions: input.variableDefinitions, role: input.role, build: input.build };
}

function rootFieldDef(input: PlanInput, root: 'query' | 'mutation' | 'subscription'): GraphQLField<unknown, unknown> {
  const type = root === 'query' ? input.schema.getQueryType() : root === 'mutation' ? input.schema.getMutationType() : input.schema.getSubscriptionType();
  const def = type?.getFields()[input.field.name.value];
  if (!def) throw new SvcError('unexpected', `field "${input.field.name.value}" not found`);
  return def;
}

/** The arguments as the handler gets them (`input`): the document's values and the request's
 * variables, coerced to the arguments' types; arguments not given are left out. */
function inputOf(def: GraphQLField<unknown, unknown>, input: PlanInput, ctx: RunContext): Record<string, unknown> {
  try {
    return getArgumentValues(def, input.field, ctx.variables as Record<string, unknown>);
  } catch (e) {
    throw new SvcError('validation-failed', (e as Error).message);
  }
}

/** Projects a checked answer and joins its relationships; the field's JSON text. */
async function answer(k: KernelApi, value: unknown, type: GraphQLOutputType, input: PlanInput, ctx: RunContext): Promise<string> {
  const joins: PendingJoin[] = [];
  const doc = docOf(input);
  const out = project(value, type, input.field, doc, ctx.variables, joins);
  if (joins.length) await runJoins(k, joins, doc, ctx);
  return JSON.stringify(out) ?? 'null';
}

function abortOf(ctx: RunContext): AbortSignal | undefined {
  if (!ctx.signal) return undefined;
  const ac = new AbortController();
  if (ctx.signal.aborted) ac.abort();
  else ctx.signal.addEventListener('abort', () => ac.abort(), { once: true });
  return ac.signal;
}

function syncPlan(k: KernelApi, a: ResolvedAction, ab: ActionsBuild, input: PlanInput, root: 'query' | 'mutation'): FieldPlan {
  const def = rootFieldDef(input, root);
  return {
    async run(ctx) {
      const signal = abortOf(ctx);
      const value = await callHandler(
        { action: a, input: inputOf(def, input, ctx), session: ctx.session, query: input.query, clientHeaders: ctx.headers, ...(signal ? { signal } : {}), ...(ctx.responseHeaders ? { setCookies: ctx.responseHeaders } : {}) },
        ab.types,
      );
      return answer(k, value, def.type, input, ctx);
    },
  };
}

export function actionsContributor(k: KernelApi, db: DatabaseService, asyncActions: AsyncActions): SchemaContributorDef {
  return {
    name: 'actions',
    contribute(role, build, types) {
      const ab = actionsBuildOf(build);
      if (ab.actions.size === 0) return {};
      const admin = role === 'admin';
      const visible = [...ab.actions.values()].filter((a) => admin || a.roles.has(role));
      if (visible.length === 0) return {};
      const gt = new ActionTypes(types, ab.types, tableJoinTypes(db, role, build, types));
      const argsOf = (a: ResolvedAction): GraphQLFieldConfigArgumentMap =>
        Object.fromEntries(a.args.map((x) => [x.name, { type: gt.inputType(x.type), ...(x.description ? { description: x.description } : {}) }]));
      const described = (a: ResolvedAction) => (a.meta.comment ? { description: a.meta.comment } : {});
      let resultType: Map<string, GraphQLObjectType> | undefined;
      // `<action>`: an asynchronous action's log entry as a client reads it.
      const asyncResult = (a: ResolvedAction): GraphQLObjectType => {
        resultType ??= new Map();
        let t = resultType.get(a.name);
        if (!t) {
          const uuid = gt.scalar('uuid');
          t = (types.get(a.name) as GraphQLObjectType | undefined) ??
            types.define(
              new GraphQLObjectType({
                name: a.name,
                description: `fields of action: "${a.name}"`,
                fields: () => ({
                  ...types.extensions(a.name),
                  id: { type: new GraphQLNonNull(uuid), description: 'the unique id of an action' },
                  created_at: { type: new GraphQLNonNull(gt.scalar('timestamptz')), description: 'the time at which this action was created' },
                  errors: { type: gt.scalar('json'), description: 'errors related to the invocation' },
                  output: { type: gt.outputType(a.output), description: 'the output fields of this async action' },
                }),
              }),
            );
          resultType.set(a.name, t);
        }
        return t;
      };
      const query: Record<string, RootFieldDef> = {};
      const asyncQuery = (a: ResolvedAction, root: 'query' | 'subscription'): RootFieldDef => ({
        get config(): FieldConfig {
          return { type: asyncResult(a), args: { id: { type: new GraphQLNonNull(gt.scalar('uuid')) } }, description: a.meta.comment ?? `retrieve the result of action: "${a.name}"` };
        },
        plan: (input) => {
          const def = rootFieldDef(input, root);
          const read = async (ctx: RunContext) => {
            const id = getArgumentValues(def, input.field, ctx.variables as Record<string, unknown>).id as string;
            const entry = await asyncActions.read(ab, a.name, id, ctx.session);
            return answer(k, entry, def.type, input, ctx);
          };
          const group: LiveGroup = {
            mode: 'live',
            fetch: (values) => Promise.all((values as RunContext[]).map(async (ctx) => ({ text: await read(ctx) }))),
          };
          return {
            run: read,
            live: (ctx) => ({ group, key: JSON.stringify([ctx.variables, ctx.session.variables]), values: ctx }),
          };
        },
      });
      const subscription: Record<string, RootFieldDef> = {};
      for (const a of visible) {
        if (a.root === 'query') {
          query[a.name] = {
            get config(): FieldConfig {
              return { type: gt.outputType(a.output), args: argsOf(a), ...described(a) };
            },
            plan: (input) => syncPlan(k, a, ab, input, 'query'),
          };
        } else if (a.async) {
          query[a.name] = asyncQuery(a, 'query');
          subscription[a.name] = asyncQuery(a, 'subscription');
        }
      }
      const mutation = (): Record<string, RootFieldDef> => {
        const out: Record<string, RootFieldDef> = {};
        for (const a of visible) {
          if (a.root !== 'mutation') continue;
          out[a.name] = a.async
            ? {
                get config(): FieldConfig {
                  return { type: new GraphQLNonNull(gt.scalar('uuid')), args: argsOf(a), ...described(a) };
                },
                plan: (input) => {
                  const def = rootFieldDef(input, 'mutation');
                  return {
                    run: async (ctx) => JSON.stringify(await asyncActions.enqueue(ab, a, inputOf(def, input, ctx), ctx.session, input.query, ctx.headers)),
                  };
                },
              }
            : {
                get config(): FieldConfig {
                  return { type: gt.outputType(a.output), args: argsOf(a), ...described(a) };
                },
                plan: (input) => syncPlan(k, a, ab, input, 'mutation'),
              };
        }
        return out;
      };
      return {
        ...(Object.keys(query).length ? { query } : {}),
        mutation,
        ...(Object.keys(subscription).length ? { subscription: () => subscription } : {}),
      };
    },
  };
}
