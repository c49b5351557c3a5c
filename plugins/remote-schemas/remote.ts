/**
 * A remote schema resolved for a build: its URL and headers read from the environment, its
 * schema introspected and checked (Note [Remote answers are untrusted] in ./client.ts).
 */
import { buildClientSchema, getIntrospectionQuery, validateSchema, type GraphQLNamedType, type GraphQLSchema, type IntrospectionQuery } from 'graphql';
import { SvcError } from '../../core/errors.js';
import { callRemote, DEFAULT_TIMEOUT_SECONDS } from './client.js';
import { Customizer } from './customize.js';
import { definitionProblem, resolveHeaders, resolveUrl, type RemoteSchemaDef, type RemoteSchemaMeta } from './definition.js';

/** Introspection answers may be large (thousands of types) but not unbounded. */
const MAX_INTROSPECTION_BYTES = 64 * 1024 * 1024;

export interface ResolvedRemote {
  readonly name: string;
  /** The definition it was made from (Note [Sharing]: reused while the same object). */
  readonly definition: RemoteSchemaDef;
  readonly url: string;
  /** The URL as configured, for messages. */
  readonly shownUrl: string;
  readonly headers: [string, string][];
  readonly timeoutMs: number;
  readonly forwardClientHeaders: boolean;
  /** The remote's schema, in its own names. */
  readonly schema: GraphQLSchema;
  /** The introspection answer as the remote gave it (introspect_remote_schema). */
  readonly introspection: { data: IntrospectionQuery };
  readonly customizer: Customizer;
}

const INTROSPECTION_QUERY = getIntrospectionQuery({ descriptions: true, specifiedByUrl: false, directiveIsRepeatable: false });

/** Throws SvcError('remote-schema-error' or 'invalid-params') with Hasura's kind of message. */
export async function resolveRemote(meta: RemoteSchemaMeta, env: Readonly<Record<string, string | undefined>>): Promise<ResolvedRemote> {
  const d = meta.definition;
  const bad = definitionProblem(d);
  if (bad) throw new SvcError('invalid-params', bad);
  const u = resolveUrl(d, env);
  if ('error' in u) throw new SvcError('invalid-params', u.error);
  const h = resolveHeaders(d.headers, env);
  if ('error' in h) throw new SvcError('invalid-params', h.error);
  for (const f of d.customization?.field_names ?? []) {
    for (const [from, to] of Object.entries(f.mapping ?? {})) {
      if (from.startsWith('__') || to.startsWith('__')) throw new SvcError('invalid-params', `attempt to customize reserved field name ${JSON.stringify(from.startsWith('__') ? from : to)}`);
    }
  }
  const shownUrl = d.url ?? `{{${d.url_from_env}}}`;
  const timeoutMs = (d.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const headers: [string, string][] = [['content-type', 'application/json'], ['user-agent', 'svc-graphql-engine'], ...h.headers];
  const answer = await callRemote({
    url: u.url,
    shownUrl,
    headers,
    body: JSON.stringify({ query: INTROSPECTION_QUERY, operationName: 'IntrospectionQuery' }),
    timeoutMs,
    maxBytes: MAX_INTROSPECTION_BYTES,
  });
  if (answer.status !== 200) {
    throw new SvcError('remote-schema-error', `introspection query to ${shownUrl} has responded with ${answer.status} status code`, { internal: answer.body });
  }
  const errors = answer.body.errors;
  if (Array.isArray(errors) && errors.length > 0) {
    throw new SvcError('remote-schema-error', `introspection query to ${shownUrl} has errors`, { internal: errors.slice(0, 10) });
  }
  const data = answer.body.data as IntrospectionQuery | undefined;
  if (!data || typeof data !== 'object' || !data.__schema || typeof data.__schema !== 'object') {
    throw new SvcError('remote-schema-error', `invalid introspection response from ${shownUrl}: no __schema in data`);
  }
  let schema: GraphQLSchema;
  try {
    schema = buildClientSchema(data, { assumeValid: false });
  } catch (e) {
    throw new SvcError('remote-schema-error', e instanceof Error ? e.message : String(e));
  }
  const problems = validateSchema(schema);
  if (problems.length > 0) throw new SvcError('remote-schema-error', problems.map((p) => p.message).join('\n'));
  if (!schema.getQueryType()) throw new SvcError('remote-schema-error', 'query root type not found in the remote schema');
  const roots = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].flatMap((t) => (t ? [t.name] : []));
  const customizer = new Customizer(d.customization, roots);
  const wrong = customizer.problem(schema);
  if (wrong) throw new SvcError('remote-schema-error', wrong);
  return {
    name: meta.name,
    definition: d,
    url: u.url,
    shownUrl,
    headers,
    timeoutMs,
    forwardClientHeaders: d.forward_client_headers,
    schema,
    introspection: { data },
    customizer,
  };
}

/** The root field names a remote adds to the engine's query and mutation roots. */
export function rootFieldNames(r: ResolvedRemote): { query: string[]; mutation: string[] } {
  const cz = r.customizer;
  const names = (t: ReturnType<GraphQLSchema['getQueryType']>) => (t ? Object.keys(t.getFields()).map((f) => cz.fieldName(t.name, f)) : []);
  if (cz.namespace) return { query: [cz.namespace], mutation: r.schema.getMutationType() ? [cz.namespace] : [] };
  return { query: names(r.schema.getQueryType()), mutation: names(r.schema.getMutationType()) };
}

/** The remote's types the schema exposes (built-in scalars kept as they are and, without a
 * namespace, the root types are not exposed as types). */
export function exposedTypes(schema: GraphQLSchema, r: ResolvedRemote): GraphQLNamedType[] {
  const roots = new Set([schema.getQueryType()?.name, schema.getMutationType()?.name, schema.getSubscriptionType()?.name]);
  return Object.values(schema.getTypeMap()).filter(
    (t) => !t.name.startsWith('__') && !(['String', 'Int', 'Float', 'Boolean', 'ID'].includes(t.name) && r.customizer.typeName(t.name) === t.name) && !(roots.has(t.name) && !r.customizer.namespace),
  );
}

/** The exposed names of the remote's types that other schemas could also define. */
export function exposedTypeNames(r: ResolvedRemote): string[] {
  const roots = new Set([r.schema.getQueryType()?.name, r.schema.getMutationType()?.name, r.schema.getSubscriptionType()?.name]);
  const out: string[] = [];
  for (const t of Object.values(r.schema.getTypeMap())) {
    if (t.name.startsWith('__')) continue;
    if (['String', 'Int', 'Float', 'Boolean', 'ID'].includes(t.name) && r.customizer.typeName(t.name) === t.name) continue;
    if (roots.has(t.name) && !r.customizer.namespace) continue;
    out.push(r.customizer.typeName(t.name));
  }
  return out;
}
