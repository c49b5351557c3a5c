/**
 * RESTified GraphQL endpoints (SPEC "REST endpoint", "RESTified GraphQL endpoints"; Hasura v2's
 * Hasura/RQL/DDL/Endpoint.hs and Hasura/Server/Rest.hs):
 *   - metadata: `rest_endpoints`, each naming a saved query of a query collection, exported and
 *     replaced with the rest;
 *   - operations: create_rest_endpoint, drop_rest_endpoint (both endpoints);
 *   - the `rest-endpoints` build step (./build.ts): templates checked, saved queries resolved,
 *     ambiguous templates reported (Note [Ambiguous templates]), the request trie;
 *   - `/api/rest/**` (./serve.ts): the saved query run through the GraphQL engine with the
 *     request's session, prepared once per build (Note [Saved documents] in plugins/graphql/contract.ts);
 *   - `GET /api/swagger/json` (./openapi.ts): an OpenAPI 3 document of the endpoints.
 * Collections that endpoints use cannot be dropped from under them (Note [Referrers of saved
 * queries] in plugins/query-collections/service.ts).
 */
import type { GraphQLSchema } from 'graphql';
import * as v from '../../core/valibot.js';
import { definePlugin, type Metadata } from '../../core/plugin.js';
import { GRAPHQL } from '../graphql/index.js';
import { SvcError } from '../../core/errors.js';
import { nameText } from '../../core/validation.js';
import { QueryCollectionsToken } from '../query-collections/index.js';
import { EndpointSchema, EndpointsSectionSchema, endpointsOf, type EndpointMeta } from './definition.js';
import { buildEndpoints, EMPTY, endpointId, STEP, type EndpointsBuild } from './build.js';
import { serveRest } from './serve.js';
import { openApiDocument } from './openapi.js';

const SUCCESS = { message: 'success' };
const withEndpoints = (md: Metadata, list: EndpointMeta[]): Metadata => ({ ...md, rest_endpoints: list });

export default definePlugin({
  name: 'rest-endpoints',
  after: ['query-collections', 'graphql'],
  setup(k) {
    const collections = k.use(QueryCollectionsToken);
    const current = (): EndpointsBuild => (k.state().build.outputs.get(STEP) as EndpointsBuild | undefined) ?? EMPTY;

    // Hasura's export order: ..., custom_types, cron_triggers, rest_endpoints, api_limits, ...
    k.metadataSection({ key: 'rest_endpoints', order: 80, schema: EndpointsSectionSchema, empty: () => [] });

    collections.referrer({
      label: 'REST endpoint',
      sections: ['rest_endpoints'],
      dependents: (md, collection, query) =>
        endpointsOf(md)
          .filter((e) => e.definition.query.collection_name === collection && (query === undefined || e.definition.query.query_name === query))
          .map((e) => e.name),
      rename: (md, from, to) =>
        endpointsOf(md).some((e) => e.definition.query.collection_name === from)
          ? withEndpoints(
              md,
              endpointsOf(md).map((e) =>
                e.definition.query.collection_name === from ? { ...e, definition: { ...e.definition, query: { ...e.definition.query, collection_name: to } } } : e,
              ),
            )
          : md,
    });

    k.operation({
      type: 'create_rest_endpoint',
      legacy: 'create_rest_endpoint',
      args: EndpointSchema,
      mutates: true,
      run(e, ctx) {
        if (endpointsOf(ctx.metadata).some((x) => x.name === e.name)) throw new SvcError('already-exists', `Endpoint with name: ${e.name} already exists`, { path: '$.args' });
        // A new inconsistency of this endpoint fails the operation with its own reasons.
        return { metadata: withEndpoints(ctx.metadata, [...endpointsOf(ctx.metadata), e]), response: SUCCESS, defines: [endpointId(e.name)] };
      },
    });

    k.operation({
      type: 'drop_rest_endpoint',
      legacy: 'drop_rest_endpoint',
      args: v.object({ name: nameText }),
      mutates: true,
      run(a, ctx) {
        const list = endpointsOf(ctx.metadata);
        if (!list.some((x) => x.name === a.name)) throw new SvcError('not-exists', `endpoint with name: ${a.name} does not exist`, { path: '$.args' });
        return { metadata: withEndpoints(ctx.metadata, list.filter((x) => x.name !== a.name)), response: SUCCESS };
      },
    });

    k.buildStep<EndpointsBuild>({ name: STEP, after: [collections.step], run: (ctx) => buildEndpoints(ctx, collections) });

    // Served with the GraphQL API (--enabled-apis), as Hasura serves them.
    k.route({ method: 'ALL', path: '/api/rest/*', api: 'graphql', handler: (c) => serveRest(c, k, current) });

    // Admin only, as Hasura's console uses it.
    k.route({
      method: 'GET',
      path: '/api/swagger/json',
      api: 'metadata',
      handler: async (c) => {
        const session = await k.authenticate(c.req.raw.headers);
        if (!session.isAdmin) throw new SvcError('access-denied', 'restricted access : admin only', { path: '$' });
        let schema: GraphQLSchema | undefined;
        try {
          schema = k.use(GRAPHQL).runner().schema('admin');
        } catch {
          // Conflicting GraphQL definitions: the document says introspection failed, as Hasura's.
        }
        return c.json(openApiDocument(current(), schema));
      },
    });
  },
});
