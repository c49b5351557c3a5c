/**
 * Serving `/api/rest/**` (SPEC "RESTified GraphQL endpoints", Hasura/Server/Rest.hs): match the
 * path and method against the endpoints' templates, gather the saved query's variables from the
 * route, the query string and the body, and run the query through the GraphQL engine with the
 * request's session (Note [Saved documents] in plugins/graphql/contract.ts).
 */
import type { Context } from 'hono';
import type { KernelApi } from '../../core/plugin.js';
import { GRAPHQL } from '../graphql/index.js';
import { SvcError } from '../../core/errors.js';
import { checkJsonLimits, readBodyText } from '../../lib/http/body.js';
import { isGraphQLName } from '../../core/validation.js';
import { clientAddress } from '../../lib/http/node-request.js';
import type { EndpointsBuild, ResolvedEndpoint, VariableInfo } from './build.js';
import { METHODS } from './trie.js';

export const PREFIX = '/api/rest/';

/** A request value: text from the route, the query string or a form body, or JSON from a JSON
 * body object (passed on as it is). */
type Arg = { text: string } | { json: unknown };

const badRequest = (message: string) => new SvcError('bad-request', message, { path: '$' });

export async function serveRest(c: Context, k: KernelApi, current: () => EndpointsBuild): Promise<Response> {
  const req = c.req.raw;
  // Hasura resolves the session before it looks at the path: a bad secret is a 401 anywhere.
  const session = await k.authenticate(req.headers);
  const url = new URL(req.url);
  const rest = url.pathname.length > PREFIX.length ? url.pathname.slice(PREFIX.length) : '';
  const path = rest.split('/').map(decodeSegment);
  const match = current().trie.match(req.method, path);
  switch (match.kind) {
    case 'not-found':
      throw new SvcError('not-found', 'Endpoint not found', { path: '$' });
    case 'ambiguous':
      throw new SvcError('unexpected', 'Multiple endpoints match request', { path: '$', status: 500 });
    case 'missing-method': {
      const allowed = METHODS.filter((m) => match.allowed.has(m)).join(', ');
      return c.json({ path: '$', error: `Allowed methods: ${allowed}`, code: 'method-not-allowed' }, 405, { Allow: allowed });
    }
  }
  const endpoint = match.value;
  const args: [string, Arg][] = [];
  for (const [key, value] of url.searchParams) args.push([key, { text: value }]);
  args.push(...(await bodyArgs(req, k.config)));
  endpoint.pathVariables.forEach((name, i) => args.push([name, { text: match.params[i]! }]));
  const variables = resolveVariables(endpoint, args);
  const out = await k.use(GRAPHQL).runner().runSaved({ document: endpoint.saved.document, query: endpoint.saved.query, variables, clientAddress: clientAddress(c) }, session, req.headers);
  if ('data' in out) return c.body(out.data, 200, { 'content-type': 'application/json; charset=utf-8' });
  const e = out.error;
  throw new SvcError(e.code as never, e.message, { path: e.path, status: e.status, internal: e.internal });
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The body's values: a form's fields as text (Hasura reads them with the query string), a JSON
 * object's keys as they are; any other body is ignored, as Hasura ignores it. */
async function bodyArgs(req: Request, limits: KernelApi['config']): Promise<[string, Arg][]> {
  // Over HTTP/1.1 a request has a body only with a length or a transfer encoding; a GET without
  // either is not asked for it, since the node server makes the whole Request (stream, abort
  // signal) when `body` is first read. (POST, PUT and PATCH are, for requests made in-process.)
  const declared = req.headers.get('transfer-encoding') !== null || (req.headers.get('content-length') ?? '0') !== '0';
  if (!declared && (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE')) return [];
  if (!req.body) return [];
  const text = await readBodyText(req, limits.maxRequestBodySize);
  if (!text) return [];
  if ((req.headers.get('content-type') ?? '').toLowerCase().includes('application/x-www-form-urlencoded')) {
    return [...new URLSearchParams(text)].map(([key, value]) => [key, { text: value }]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return [];
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) return [];
  checkJsonLimits(json, limits);
  return Object.entries(json as Record<string, unknown>).map(([key, value]) => [key, { json: value }]);
}

/** Scalar types whose route and query values are read as JSON booleans or numbers (Hasura's
 * resolveVar); any other value is passed on as a string, for the GraphQL engine to coerce (or
 * refuse) as the variable's type says. */
const BOOLEAN_TYPES = new Set(['Boolean', 'Bool']);
const NUMBER_TYPES = new Set(['Int', 'Float', 'Number', 'Double', 'float8', 'numeric']);
const STRING_TYPES = new Set(['String', 'ID', 'uuid', 'UUID']);

/**
 * Hasura's resolveVar over (declared variables x given values), later values winning (route over
 * body over query string): a value for an undeclared variable is a 400; a body value is passed
 * as it is; a text value is read by the variable's type (SPEC's table): a list type cannot take
 * one; an empty Boolean value (`?flag`) is true; an empty value of a nullable variable leaves it
 * out (null); `true`/`false` for Boolean and numbers for number types are read as JSON; anything
 * else is a string. Names that are not GraphQL names are ignored, as Hasura ignores them.
 */
export function resolveVariables(endpoint: ResolvedEndpoint, args: readonly [string, Arg][]): Record<string, unknown> {
  const given = new Map<string, Arg>();
  for (const [key, value] of args) if (isGraphQLName(key)) given.set(key, value);
  for (const key of given.keys()) if (!endpoint.variables.has(key)) throw badRequest(`Unexpected variable ${key}`);
  const out: Record<string, unknown> = {};
  for (const [name, arg] of given) {
    const v = endpoint.variables.get(name)!;
    if ('json' in arg) out[name] = arg.json;
    else {
      const value = fromText(v, arg.text);
      if (value !== undefined) out[name] = value;
    }
  }
  return out;
}

function fromText(v: VariableInfo, text: string): unknown {
  if (v.list) throw badRequest(`List variables are not currently supported in URL or Query parameters. (Variable ${v.name}, with value ${JSON.stringify(text)})`);
  if (text === '') {
    if (v.type === 'Boolean') return true;
    if (v.nullable) return undefined;
  }
  if (BOOLEAN_TYPES.has(v.type) || NUMBER_TYPES.has(v.type)) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return text;
    }
    if (typeof json === 'boolean' && BOOLEAN_TYPES.has(v.type)) return json;
    if (typeof json === 'number' && NUMBER_TYPES.has(v.type)) return json;
  }
  // A JSON object for a type that takes one (a GeoJSON `geometry`, a `jsonb`), as Hasura reads it.
  if (!STRING_TYPES.has(v.type) && text.startsWith('{')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
