/**
 * The GraphQL plugin: `POST /v1/graphql` and Hasura's Explain API over the schema the kernel
 * assembles from the contributors (core/schema), with the plan cache, the request limits and the
 * live queries that subscriptions use (./engine.ts, ARCHITECTURE "The GraphQL engine"). Other
 * plugins reach it through the GRAPHQL service (./contract.ts): gates on documents and requests,
 * saved documents. The WebSocket transport is plugins/graphql-ws, built on GRAPHQL_ENGINE.
 */
import { definePlugin, token, type KernelApi } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { readJsonBody } from '../../lib/http/body.js';
import { GraphQLEngine } from './engine.js';
import { GRAPHQL, type DocumentGateDef, type GraphQLService, type RequestGateDef } from './contract.js';
import { GRAPHQL_OPTIONS } from './options.js';

export * from './contract.js';
export type { DocumentCost } from './cost.js';
export { GraphQLEngine, type Admitted, type Answer, type EngineHost, type PreparedRequest, type RunLimits } from './engine.js';
export type { LiveHandle, LiveSink, LiveStats } from './live.js';
export { gqlError, errorsText, type GqlError } from './errors.js';
export { Cancellation } from './cancel.js';
export { GRAPHQL_OPTIONS } from './options.js';

/** The engine itself (made on first call), for transports (plugins/graphql-ws). Other plugins
 * use GRAPHQL. */
export const GRAPHQL_ENGINE = token<() => GraphQLEngine>('graphql-engine');

/** The engine of a kernel whose GraphQL plugin is enabled, for the server and tests. */
export function graphqlEngine(k: Pick<KernelApi, 'optional'>): GraphQLEngine | undefined {
  return k.optional(GRAPHQL_ENGINE)?.();
}

export default definePlugin({
  name: 'graphql',
  options: GRAPHQL_OPTIONS,
  setup(k) {
    // Gates are registered in setup, by plugins set up after this one; the engine is made on
    // first use, when serving, and reads the lists as they are then.
    const documentGates: DocumentGateDef[] = [];
    const requestGates: RequestGateDef[] = [];
    let made: GraphQLEngine | undefined;
    const engine = (): GraphQLEngine =>
      (made ??= new GraphQLEngine({
        config: k.config,
        log: k.log,
        state: () => k.state(),
        authenticate: (headers, request) => k.authenticate(headers, request),
        authNeedsRequest: () => k.authNeedsRequest(),
        roleSchema: (role, build, backendOnly) => k.roleSchema(role, build, backendOnly),
        documentGates,
        requestGates,
      }));
    const service: GraphQLService = {
      documentGate: (def) => documentGates.push(def),
      requestGate: (def) => requestGates.push(def),
      runner: engine,
    };
    k.provide(GRAPHQL, service);
    k.provide(GRAPHQL_ENGINE, engine);

    k.route({
      method: 'POST',
      path: '/v1/graphql',
      api: 'graphql',
      operation: 'graphql',
      exchange: (x) => engine().serve(x),
    });
    // Hasura v2's Explain API (GraphQLEngine.explain): admin only, errors in the metadata API's shape.
    k.route({
      method: 'POST',
      path: '/v1/graphql/explain',
      api: 'graphql',
      handler: async (c) => {
        c.set('operation', 'explain');
        const s = await k.authenticate(c.req.raw.headers);
        if (!s.isAdmin) throw new SvcError('access-denied', 'restricted access : admin only', { path: '$' });
        const body = await readJsonBody(c, k.config);
        return c.body(JSON.stringify(await engine().explain(body, c.req.raw.headers)), 200, { 'content-type': 'application/json; charset=utf-8' });
      },
    });
    // Subscriptions stop refetching before the pools close (workers stop before shutdown hooks).
    k.worker({ name: 'live-queries', start() {}, stop: () => made?.close() });
  },
});
