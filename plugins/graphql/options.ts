/**
 * The GraphQL plugin's options (Note [Options by plugin] in core/config.ts): the plan cache, the
 * limits of one request, live queries.
 */
import type { OptionValues } from '../../core/config.js';
import { optionSchemas } from '../../core/config.js';

const { positiveInt, atLeastOne } = optionSchemas;

export const GRAPHQL_OPTIONS = {
  // Note [The plan cache] in ./engine.ts: entries of (role, query, operation name).
  graphqlPlanCacheSize: {
    flag: 'graphql-plan-cache-size',
    env: 'SVC_GRAPHQL_PLAN_CACHE_SIZE',
    schema: positiveInt,
    default: 4000,
  },
  // Note [GraphQL request limits] in ./limits.ts: what one request may cost.
  graphqlMaxDocumentSize: { flag: 'graphql-max-document-size', env: 'SVC_GRAPHQL_MAX_DOCUMENT_SIZE', schema: atLeastOne, default: 1024 * 1024 },
  graphqlMaxTokens: { flag: 'graphql-max-tokens', env: 'SVC_GRAPHQL_MAX_TOKENS', schema: atLeastOne, default: 50_000 },
  graphqlMaxFields: { flag: 'graphql-max-fields', env: 'SVC_GRAPHQL_MAX_FIELDS', schema: atLeastOne, default: 10_000 },
  graphqlMaxDepth: { flag: 'graphql-max-depth', env: 'SVC_GRAPHQL_MAX_DEPTH', schema: atLeastOne, default: 50 },
  graphqlMaxRootFields: { flag: 'graphql-max-root-fields', env: 'SVC_GRAPHQL_MAX_ROOT_FIELDS', schema: atLeastOne, default: 500 },
  graphqlMaxBatchSize: { flag: 'graphql-max-batch-size', env: 'SVC_GRAPHQL_MAX_BATCH_SIZE', schema: atLeastOne, default: 100 },
  graphqlMaxResponseSize: { flag: 'graphql-max-response-size', env: 'SVC_GRAPHQL_MAX_RESPONSE_SIZE', schema: atLeastOne, default: 64 * 1024 * 1024 },
  liveQueriesBatchSize: {
    flag: 'live-queries-multiplexed-batch-size',
    env: 'SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_BATCH_SIZE',
    schema: positiveInt,
    default: 100,
  },
  liveQueriesRefetchInterval: {
    flag: 'live-queries-multiplexed-refetch-interval',
    env: 'SVC_GRAPHQL_LIVE_QUERIES_MULTIPLEXED_REFETCH_INTERVAL',
    schema: positiveInt,
    default: 1000,
  },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof GRAPHQL_OPTIONS> {}
}
