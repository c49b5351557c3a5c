/**
 * API limits per role (Hasura v2 Enterprise's API limits, through the metadata API):
 *   - metadata: `api_limits` (`disabled`, and `rate_limit`, `depth_limit`, `node_limit`,
 *     `time_limit`, `batch_limit`, each `{global, per_role}`), exported and replaced with the rest;
 *   - operations: `set_api_limits` (replaces the section), `remove_api_limits`;
 *   - enforcement, for every role but `admin`: depth and node limits by a document gate (Note
 *     [Document gates] in plugins/graphql/contract.ts: on the document's measured cost, cached with the plan);
 *     batch, time and rate limits by a request gate (Note [Request gates]): a batch longer than
 *     the limit is refused, a request that runs past its time is answered with an error and its
 *     statements cancelled, a client past its rate is refused (Note [Rate limits across
 *     instances] in ./rate.ts).
 * A role's limit is its `per_role` value, else the `global` one. Depth limits do not apply to
 * introspection queries, as in Hasura. These bind within the server's own limits (Note [GraphQL
 * request limits] in plugins/graphql/limits.ts), which bind every role.
 */
import { Kind, type DocumentNode } from 'graphql';
import * as v from '../../core/valibot.js';
import { definePlugin, type BuildResult } from '../../core/plugin.js';
import { GRAPHQL, type DocumentRefusal, type RequestAdmission } from '../graphql/index.js';
import { DatabaseToken, sourcesOf, type DatabaseService, type SqlExecutor } from '../database/index.js';
import { ApiLimitsSchema, apiLimitsOf, EMPTY, isEmptyLimits, roleLimits, type ApiLimits } from './definition.js';
import { ensureCounters, RateCounter } from './rate.js';

const STEP = 'api-limits';
const SUCCESS = { message: 'success' };

interface LimitsState {
  limits: ApiLimits;
  /** Where rate limits are counted (the `default` PostgreSQL source), when one is set. */
  executor: SqlExecutor | undefined;
}

const refusal = (message: string, code: DocumentRefusal['code'] = 'validation-failed'): DocumentRefusal => ({ code, message });

/** Whether every operation selects only `__schema`, `__type` and `__typename` at its root. */
function introspectionOnly(document: DocumentNode): boolean {
  return document.definitions.every(
    (d) =>
      d.kind !== Kind.OPERATION_DEFINITION ||
      d.selectionSet.selections.every((s) => s.kind === Kind.FIELD && (s.name.value === '__schema' || s.name.value === '__type' || s.name.value === '__typename')),
  );
}

export default definePlugin({
  name: 'api-limits',
  // The database plugin only gives the rate limits a place to count; without it they are
  // counted per instance.
  // Without the GraphQL plugin there is nothing to limit but the metadata to keep.
  after: ['database', 'graphql'],
  requires: [],
  setup(k) {
    const graphql = k.optional(GRAPHQL);
    let db: DatabaseService | undefined;
    try {
      db = k.use(DatabaseToken);
    } catch {
      db = undefined;
    }
    const counter = new RateCounter(k.log);
    const state = (build: Pick<BuildResult, 'outputs'>): LimitsState | undefined => build.outputs.get(STEP) as LimitsState | undefined;

    // Hasura's export order: ..., cron_triggers, rest_endpoints (80), api_limits, ...
    k.metadataSection({ key: 'api_limits', order: 90, schema: ApiLimitsSchema, empty: () => EMPTY, isEmpty: isEmptyLimits });

    k.buildStep<LimitsState>({
      name: STEP,
      after: db ? ['sources'] : [],
      async run(ctx) {
        const limits = apiLimitsOf(ctx.metadata);
        let executor: SqlExecutor | undefined;
        if (db && limits.rate_limit && !limits.disabled) {
          const home = sourcesOf(ctx.metadata).find((s) => s.name === 'default');
          const rs = home ? db.resolved(ctx).sources.get(home.name) : undefined;
          if (rs?.connection && rs.kind.holdsEngineTables) {
            try {
              await ensureCounters(rs.connection.executor);
              executor = rs.connection.executor;
            } catch (e) {
              k.log.warn('api-limits', { message: 'could not create the rate-limit counters; rates are counted per instance', error: String(e) });
            }
          }
        }
        return { limits, executor };
      },
    });

    k.operation({
      type: 'set_api_limits',
      args: ApiLimitsSchema,
      mutates: true,
      run: (a, ctx) => ({ metadata: { ...ctx.metadata, api_limits: a }, response: SUCCESS }),
    });
    k.operation({
      type: 'remove_api_limits',
      args: v.optional(v.looseObject({})),
      mutates: true,
      run: (_a, ctx) => ({ metadata: { ...ctx.metadata, api_limits: EMPTY }, response: SUCCESS }),
    });

    graphql?.documentGate({
      name: 'api-limits',
      check({ document, role, build, cost }) {
        const st = state(build);
        const r = st && roleLimits(st.limits, role);
        if (!r) return undefined;
        if (r.nodes !== undefined && cost.nodes > r.nodes) return refusal(`the query has ${cost.nodes} nodes, more than the node limit of ${r.nodes} of the role "${role}" (api_limits)`);
        if (r.depth !== undefined && cost.depth > r.depth && !introspectionOnly(document)) {
          return refusal(`the query has depth ${cost.depth}, more than the depth limit of ${r.depth} of the role "${role}" (api_limits)`);
        }
        return undefined;
      },
    });

    graphql?.requestGate({
      name: 'api-limits',
      admit({ session, operations, clientAddress, build }) {
        const st = state(build);
        const r = st && roleLimits(st.limits, session.role);
        if (!r) return undefined;
        if (r.batch !== undefined && operations > r.batch) {
          return { refusal: refusal(`the batch has ${operations} operations, more than the batch limit of ${r.batch} of the role "${session.role}" (api_limits)`) };
        }
        const timed: RequestAdmission | undefined = r.timeSeconds !== undefined ? { timeLimitMs: r.timeSeconds * 1000 } : undefined;
        const rate = r.rate;
        if (!rate) return timed;
        // The client: the role, and its IP address or session variables (a missing variable is
        // null: such clients of the role are counted together).
        const params = rate.unique_params;
        const key = JSON.stringify([session.role, params === 'IP' ? ['ip', clientAddress ?? null] : (params ?? []).map((p) => session.variables[p] ?? null)]);
        return counter.admit(st.executor, key, operations, rate.max_reqs_per_min).then((ok) =>
          ok ? timed : { refusal: refusal(`rate limit of ${rate.max_reqs_per_min} exceeded`, 'rate-limit-exceeded') },
        );
      },
    });
  },
});
