/**
 * The server's bounds on what one GraphQL request may cost (Note [GraphQL request limits]).
 */
import type { ServerConfig } from '../../core/config.js';
import type { DocumentCost } from './cost.js';
import { SvcError } from '../../core/errors.js';
import { gqlError, type GqlError } from './errors.js';

/*
 * Note [GraphQL request limits]
 * One small request must not be able to take the server down or hold it for others: a 1.3 KB
 * fragment bomb once expanded to 2^30 fields and killed the process, 10,000 aliases built an
 * answer past V8's longest string, a 4.8 MB document of repeated fields held the event loop for
 * seconds. Every cost that grows with the request is bounded before the work that grows with it,
 * each bound a server flag (an environment variable too), for every role, the admin included:
 *
 *   document text      --graphql-max-document-size  characters of `query`, before parsing
 *   tokens             --graphql-max-tokens         lexical tokens, counted by the parser, which
 *                                                   stops at the limit (parse time is per token)
 *   fields             --graphql-max-fields         field selections after fragment expansion,
 *                                                   counted without expanding (Note [Document cost])
 *   nesting            --graphql-max-depth          nesting of fields with selection sets, fragment
 *                                                   spreads and inline fragments (Note [Document
 *                                                   cost]: the depth every walk recurses to)
 *   root fields        --graphql-max-root-fields    root selections after expansion, each alias one
 *                                                   (each runs a statement)
 *   batch              --graphql-max-batch-size     requests in one batched POST
 *   response           --graphql-max-response-size  characters of the answer's JSON text: past it the
 *                                                   engine stops, cancels the statements still
 *                                                   running and answers an error instead
 *
 * A refusal is a GraphQL error (`validation-failed`, path `$`) whose message names the limit and
 * its flag, answered with status 200 as every GraphQL error is; the request runs nothing. The
 * defaults sit well above what real clients send (GraphiQL's introspection query selects about
 * 200 fields, depth 12) and below what hurts. What hurts was measured on the two-core development
 * machine (2026-11-26, plugins/graphql/limits.test.ts, `.prof` timings of graphql-js): parsing costs
 * about 1 us a token (50,000 tokens: 50 ms), validating about 100 us a root field with arguments
 * and 30 us a nested one (500 root fields: 50-70 ms warm). A long document is prepared in steps
 * (parse, validate, plan), other requests getting turns between them (./engine.ts), so that a
 * health check answers within 200 ms while the costliest admitted document is served. A query's
 * root fields run at most 8 at a time, so that a request of 500 does not queue all its
 * statements on the pool ahead of other requests'. The plan cache bounds the text it keeps
 * (./cache.ts).
 *
 * Per-role API limits (`set_api_limits`: depth, nodes, batch, time, rate) are metadata, enforced
 * by the api-limits plugin through the engine's gates (Note [Document gates], Note [Request
 * gates] in plugins/graphql/contract.ts); they can only be stricter than these.
 */
export type GraphQLLimits = Pick<
  ServerConfig,
  'graphqlMaxDocumentSize' | 'graphqlMaxTokens' | 'graphqlMaxFields' | 'graphqlMaxDepth' | 'graphqlMaxRootFields' | 'graphqlMaxBatchSize' | 'graphqlMaxResponseSize'
>;

const refused = (what: string, n: number, limit: number, flag: string): GqlError =>
  gqlError('validation-failed', `the ${what} (${n}) is more than the limit of ${limit} (--${flag})`);

/** The document's text, before it is parsed. */
export function checkDocumentText(query: string, limits: GraphQLLimits): GqlError | undefined {
  if (query.length > limits.graphqlMaxDocumentSize) return refused('query text length', query.length, limits.graphqlMaxDocumentSize, 'graphql-max-document-size');
  return undefined;
}

/** The error for a document the parser stopped at the token limit. */
export function tooManyTokens(limits: GraphQLLimits): GqlError {
  return gqlError('validation-failed', `the query has more tokens than the limit of ${limits.graphqlMaxTokens} (--graphql-max-tokens)`);
}

/** The document's measured cost (Note [Document cost]). */
export function checkDocumentCost(cost: DocumentCost, limits: GraphQLLimits): GqlError | undefined {
  if (cost.fields > limits.graphqlMaxFields) return refused('number of fields selected', cost.fields, limits.graphqlMaxFields, 'graphql-max-fields');
  if (cost.rootFields > limits.graphqlMaxRootFields) return refused('number of root fields', cost.rootFields, limits.graphqlMaxRootFields, 'graphql-max-root-fields');
  if (cost.nesting > limits.graphqlMaxDepth) {
    return refused('nesting of the query (fields with selection sets, fragments and inline fragments)', cost.nesting, limits.graphqlMaxDepth, 'graphql-max-depth');
  }
  return undefined;
}

/** A document too deep for the walks that measure it (the stack ran out). */
export function tooDeep(limits: GraphQLLimits): GqlError {
  return gqlError('validation-failed', `the query is nested deeper than the limit of ${limits.graphqlMaxDepth} (--graphql-max-depth)`);
}

export function checkBatch(size: number, limits: GraphQLLimits): GqlError | undefined {
  if (size > limits.graphqlMaxBatchSize) return refused('number of requests in the batch', size, limits.graphqlMaxBatchSize, 'graphql-max-batch-size');
  return undefined;
}

/** The refusal of an answer longer than `max` characters (a query's, a batch's, a subscription result's). */
export function responseTooLarge(max: number): GqlError {
  return gqlError('validation-failed', `the response is larger than the limit of ${max} characters (--graphql-max-response-size)`);
}

/** responseTooLarge as the SvcError a run throws. */
export function responseTooLargeError(max: number): SvcError {
  return new SvcError('validation-failed', responseTooLarge(max).message);
}
