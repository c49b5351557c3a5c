/**
 * REST endpoints as the metadata holds them (Hasura v2's `rest_endpoints` section, SPEC "REST
 * endpoint") and the arguments of their operations, with Hasura's parsers' messages
 * (Hasura/RQL/Types/Endpoint.hs).
 */
import * as v from '../../core/valibot.js';
import { nameText, nonEmptyText, optionalComment } from '../../core/validation.js';
import type { Metadata } from '../../core/plugin.js';
import { METHODS, type Method } from './trie.js';

export interface EndpointMeta {
  name: string;
  url: string;
  methods: Method[];
  definition: { query: { collection_name: string; query_name: string } };
  comment?: string | null;
}

export const endpointsOf = (md: Metadata): EndpointMeta[] => (md.rest_endpoints as EndpointMeta[] | undefined) ?? [];

const MethodSchema = v.pipe(
  v.string(),
  v.check(
    (m) => (METHODS as readonly string[]).includes(m),
    (issue) => `parsing EndpointMethod failed, expected one of the tags ['GET','POST','PUT','DELETE','PATCH'], but found tag ${JSON.stringify(issue.input)}`,
  ),
) as v.GenericSchema<unknown, Method>;

export const EndpointSchema = v.pipe(
  v.object({
    name: nameText,
    url: v.pipe(nonEmptyText, v.maxLength(4096, 'the url is longer than the limit of 4096 characters')),
    methods: v.pipe(v.array(MethodSchema), v.minLength(1, 'parsing NonEmpty failed, unexpected empty list')),
    definition: v.object({ query: v.object({ collection_name: nameText, query_name: nameText }) }),
    comment: optionalComment,
  }),
  v.transform((e): EndpointMeta => {
    const out: EndpointMeta = {
      name: e.name,
      url: e.url,
      methods: e.methods,
      definition: { query: { collection_name: e.definition.query.collection_name, query_name: e.definition.query.query_name } },
    };
    if (e.comment !== undefined) out.comment = e.comment;
    return out;
  }),
);

export const EndpointsSectionSchema = v.pipe(
  v.array(EndpointSchema),
  v.check<EndpointMeta[], (issue: v.CheckIssue<EndpointMeta[]>) => string>(
    (list) => new Set(list.map((e) => e.name)).size === list.length,
    (issue) => {
      const seen = new Set<string>();
      const dup = new Set<string>();
      for (const e of issue.input) (seen.has(e.name) ? dup : seen).add(e.name);
      return `multiple declarations exist for the following rest endpoints: ${[...dup].join(', ')}`;
    },
  ),
);

/** An inconsistent endpoint's definition, as Hasura reports it (every key, comment null). */
export const reported = (e: EndpointMeta) => ({ definition: e.definition, url: e.url, methods: e.methods, name: e.name, comment: e.comment ?? null });
