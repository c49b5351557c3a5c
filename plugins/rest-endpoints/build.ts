/**
 * The `rest-endpoints` build step: each endpoint's template checked, its saved query resolved
 * (Hasura's buildRESTEndpoints / resolveEndpoint, with its messages), the templates that a
 * request could match more than once reported, and the trie requests are matched against.
 */
import { Kind, type OperationDefinitionNode, type TypeNode } from 'graphql';
import type { BuildContext, Metadata } from '../../core/plugin.js';
import type { QueryCollectionsService, SavedQuery } from '../query-collections/index.js';
import { endpointsOf, reported, type EndpointMeta } from './definition.js';
import { hasDuplicateVariables, hasInvalidSegments, isVariable, PathTrie, segmentsOf } from './trie.js';

export const STEP = 'rest-endpoints';

/** A variable of the saved query, as the REST layer reads values for it. */
export interface VariableInfo {
  name: string;
  /** A list type (at the top): a route or query-string value cannot be one. */
  list: boolean;
  nullable: boolean;
  /** The named type (for a list, its innermost). */
  type: string;
}

export interface ResolvedEndpoint {
  readonly meta: EndpointMeta;
  readonly saved: SavedQuery;
  readonly operation: OperationDefinitionNode;
  readonly variables: ReadonlyMap<string, VariableInfo>;
  /** The template's variables, in order (without the colon). */
  readonly pathVariables: readonly string[];
}

export interface EndpointsBuild {
  /** Every endpoint that is served, by name (ambiguous ones included: they answer 500). */
  readonly endpoints: ReadonlyMap<string, ResolvedEndpoint>;
  readonly trie: PathTrie<ResolvedEndpoint>;
}

export const EMPTY: EndpointsBuild = { endpoints: new Map(), trie: new PathTrie() };

export const endpointId = (name: string) => `rest_endpoint:${name}`;
const without = (name: string) => (md: Metadata): Metadata => ({ ...md, rest_endpoints: endpointsOf(md).filter((e) => e.name !== name) });

export function buildEndpoints(ctx: BuildContext, collections: QueryCollectionsService): EndpointsBuild {
  const metas = endpointsOf(ctx.metadata);
  if (metas.length === 0) return EMPTY;
  const saved = collections.of(ctx);
  const endpoints = new Map<string, ResolvedEndpoint>();
  const trie = new PathTrie<ResolvedEndpoint>();
  for (const e of metas) {
    const fail = (reason: string) =>
      ctx.inconsistent({ type: 'rest_endpoint', name: `rest_endpoint ${e.name}`, reason, definition: reported(e), id: endpointId(e.name), remove: without(e.name) });
    if (hasDuplicateVariables(e.url)) {
      fail(`Duplicate variables found in endpoint path: ${e.url}`);
      continue;
    }
    if (hasInvalidSegments(e.url)) {
      fail(`Empty segments or unnamed variables are not allowed: ${e.url}`);
      continue;
    }
    const resolved = resolve(e, saved.queries);
    if (typeof resolved === 'string') {
      fail(`Inconsistent object: in endpoint ${e.name}: ${resolved}`);
      continue;
    }
    endpoints.set(e.name, resolved);
    trie.insert(e.url, [...new Set(e.methods)], resolved);
  }
  reportAmbiguity(ctx, trie);
  return { endpoints, trie };
}

/** The endpoint with its saved query, or why it cannot be served (Hasura's resolveEndpoint). */
function resolve(e: EndpointMeta, queries: ReadonlyMap<string, ReadonlyMap<string, SavedQuery>>): ResolvedEndpoint | string {
  const { collection_name: collection, query_name: name } = e.definition.query;
  const byName = queries.get(collection);
  if (!byName) return `collection with name ${collection} does not exist`;
  const saved = byName.get(name);
  if (!saved) return `query with name ${name} does not exist in collection ${collection}`;
  const defs = saved.document.definitions;
  if (defs.length === 0) return `query with name ${name} has no definitions.`;
  // One operation and nothing else (Hasura refuses fragments here too).
  const op = defs[0]!;
  if (defs.length > 1 || op.kind !== Kind.OPERATION_DEFINITION) return `query with name ${name} has multiple definitions.`;
  if (op.operation === 'subscription') return `query with name ${name} is a subscription`;
  const variables = new Map<string, VariableInfo>();
  for (const d of op.variableDefinitions ?? []) variables.set(d.variable.name.value, variableInfo(d.variable.name.value, d.type));
  const pathVariables = segmentsOf(e.url)
    .filter(isVariable)
    .map((s) => s.slice(1));
  return { meta: e, saved, operation: op, variables, pathVariables };
}

function variableInfo(name: string, t: TypeNode): VariableInfo {
  const nullable = t.kind !== Kind.NON_NULL_TYPE;
  const inner = t.kind === Kind.NON_NULL_TYPE ? t.type : t;
  let named: TypeNode = inner;
  while (named.kind !== Kind.NAMED_TYPE) named = named.type;
  return { name, list: inner.kind === Kind.LIST_TYPE, nullable, type: named.name.value };
}

/*
 * Note [Ambiguous templates]
 * Two endpoints are ambiguous when some request could match both for one method (a variable
 * segment matches any literal: `:id` and `simple` under GET). Hasura reports each group of such
 * endpoints as one inconsistency, "Ambiguous URL paths: <their urls>", and still serves them: a
 * request that matches more than one answers 500. Hasura files the group under its first endpoint
 * by name; here it is filed under the first endpoint that the previous build did not serve (the
 * one a create_rest_endpoint or replace_metadata just introduced, so the operation that made the
 * conflict is refused with invalid-configuration naming it), else the first by name.
 */
function reportAmbiguity(ctx: BuildContext, trie: PathTrie<ResolvedEndpoint>): void {
  const before = (ctx.previous?.outputs.get(STEP) as EndpointsBuild | undefined)?.endpoints;
  for (const group of trie.ambiguousGroups()) {
    const members = [...group].sort((a, b) => (a.meta.name < b.meta.name ? -1 : a.meta.name > b.meta.name ? 1 : 0));
    const owner = members.find((r) => before?.get(r.meta.name)?.meta !== r.meta) ?? members[0]!;
    const reason = `Ambiguous URL paths: ${members.map((r) => r.meta.url).join(', ')}`;
    // Hasura lists the conflicting endpoints with their queries' text.
    const conflicts = members.map((r) => ({ ...reported(r.meta), definition: { query: r.saved.query } }));
    ctx.inconsistent({
      type: 'rest_endpoint',
      name: `rest_endpoint ${owner.meta.name}`,
      reason,
      definition: { conflicts },
      id: endpointId(owner.meta.name),
      remove: without(owner.meta.name),
      shown: { reason, conflicts },
    });
  }
}
