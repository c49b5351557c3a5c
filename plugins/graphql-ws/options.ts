/**
 * The WebSocket transport's options (Note [Options by plugin] in core/config.ts).
 */
import type { OptionValues } from '../../core/config.js';
import { optionSchemas } from '../../core/config.js';

const { atLeastOne } = optionSchemas;

export const WEBSOCKET_OPTIONS = {
  // GraphQL over WebSocket (this plugin): Hasura's HASURA_GRAPHQL_WEBSOCKET_* options, and
  // the bound of what a connection may have waiting to be sent (a client that stops reading).
  websocketKeepalive: { flag: 'websocket-keepalive', env: 'SVC_GRAPHQL_WEBSOCKET_KEEPALIVE', schema: atLeastOne, default: 5 },
  websocketConnectionInitTimeout: {
    flag: 'websocket-connection-init-timeout',
    env: 'SVC_GRAPHQL_WEBSOCKET_CONNECTION_INIT_TIMEOUT',
    schema: atLeastOne,
    default: 3,
  },
  websocketMaxSendBuffer: {
    flag: 'websocket-max-send-buffer',
    env: 'SVC_GRAPHQL_WEBSOCKET_MAX_SEND_BUFFER',
    schema: atLeastOne,
    default: 16 * 1024 * 1024,
  },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof WEBSOCKET_OPTIONS> {}
}
