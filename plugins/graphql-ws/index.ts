/**
 * GraphQL over WebSocket on /v1/graphql (Note [GraphQL over WebSocket] in ./connection.ts): the
 * graphql-ws and graphql-transport-ws protocols, with queries, mutations and subscriptions (live
 * queries and streams) run by the GraphQL plugin's engine. Disabling this plugin switches off
 * WebSocket transport, and so subscriptions; POST /v1/graphql is unaffected.
 */
import { definePlugin, token } from '../../core/plugin.js';
import { GRAPHQL_ENGINE } from '../graphql/index.js';
import { GRAPHQL_PATH, GraphQLWebSocketServer } from './server.js';
import { WEBSOCKET_OPTIONS } from './options.js';

export { GRAPHQL_PATH, GraphQLWebSocketServer } from './server.js';
export { WEBSOCKET_OPTIONS } from './options.js';

/** The server of the WebSocket connections (made on first call), for metrics and tests. */
export const GRAPHQL_WS = token<() => GraphQLWebSocketServer>('graphql-ws');

export default definePlugin({
  name: 'graphql-ws',
  after: ['graphql'],
  options: WEBSOCKET_OPTIONS,
  setup(k) {
    const engine = k.use(GRAPHQL_ENGINE);
    let made: GraphQLWebSocketServer | undefined;
    const server = () => (made ??= new GraphQLWebSocketServer({ config: k.config, log: k.log, authenticate: (h, r) => k.authenticate(h, r) }, engine()));
    k.provide(GRAPHQL_WS, server);
    k.upgrade({
      path: GRAPHQL_PATH,
      api: 'graphql',
      handle: (req, socket, head) => server().upgrade(req, socket, head),
      close: (graceMs) => (made ? made.close(graceMs) : Promise.resolve()),
    });
  },
});
