/**
 * Calling an action's handler (Hasura's callWebhook in Hasura/GraphQL/Execute/Action.hs): the
 * request payload, the headers (configured, and the client's when `forward_client_headers`), the
 * timeout, and the answer checked against the output type with Hasura's messages. The answer is
 * untrusted input: its size is bounded, it is parsed defensively, and every way it can be wrong
 * is a GraphQL error, never a 500.
 */
import { Kind, parseType, type TypeNode } from 'graphql';
import { SvcError } from '../../core/errors.js';
import type { Session } from '../../core/plugin.js';
import { postWebhook } from '../event-triggers/index.js';
import { applyRequestTransform, applyResponseTransform, TransformError } from '../webhook-transforms/index.js';
import { BUILTIN_SCALARS, type ResolvedAction, type ResolvedTypes } from './build.js';

/** Bytes of a handler's answer that are read; a longer one is refused (Note [Handler answers]). */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/*
 * Note [Handler answers]
 * A handler is someone else's server: its answer is read up to MAX_RESPONSE_BYTES (the rest is
 * not even received), must be JSON, and is checked against the action's output type before any
 * of it reaches a client: a 2xx answer must fit the type (Hasura's validateResponse: a missing
 * non-nullable field, a null where none is allowed, a scalar of the wrong JSON type); a 4xx answer
 * must be `{message, code?, extensions?}` and becomes the GraphQL error it describes; any other
 * status, a network error, a timeout, or an answer that is not JSON is an `unexpected` error. In
 * every failure admins get Hasura's `internal` details (the request sent and the response got);
 * other roles do not (the engine keeps `internal` for admins).
 */

/** Client headers never forwarded (Hasura's commonClientHeadersIgnored, plus the session's own). */
const IGNORED_CLIENT_HEADERS = new Set([
  'content-length', 'content-md5', 'user-agent', 'host', 'origin', 'referer', 'accept', 'accept-encoding', 'accept-language', 'accept-datetime',
  'cache-control', 'connection', 'dnt', 'content-type', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-authorization',
]);

/** Response headers left out of the details shown (transport, not the handler's). */
const IGNORED_RESPONSE_HEADERS = new Set(['date', 'server', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'vary', 'content-encoding']);

const titleCase = (h: string) => h.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase());

export interface HandlerCall {
  action: ResolvedAction;
  input: Record<string, unknown>;
  session: Session;
  /** The GraphQL request's text (Hasura's `request_query`). */
  query: string | undefined;
  clientHeaders: Readonly<Record<string, string>>;
  signal?: AbortSignal;
  /** Where the handler's `Set-Cookie` headers go, to be passed on to the client as Hasura does
   * (a synchronous action over HTTP). */
  setCookies?: [string, string][];
}

/** The payload Hasura sends (ActionWebhookPayload). */
export function payloadOf(c: Pick<HandlerCall, 'action' | 'input' | 'session' | 'query'>): Record<string, unknown> {
  return {
    action: { name: c.action.name },
    input: c.input,
    session_variables: sessionVariables(c.session),
    ...(c.query !== undefined ? { request_query: c.query } : {}),
  };
}

export function sessionVariables(s: Session): Record<string, string> {
  return { ...s.variables, 'x-svc-role': s.role };
}

/** The client's headers an action with `forward_client_headers` passes on: never the
 * credentials (admin secret, Authorization, cookies) nor transport headers. */
export function forwardable(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const n = name.toLowerCase();
    if (IGNORED_CLIENT_HEADERS.has(n) || n === 'x-svc-admin-secret' || n === 'authorization' || n === 'cookie') continue;
    out[name] = value;
  }
  return out;
}

/** The headers sent: the configured ones after the client's forwarded ones (configured win). */
function requestHeaders(c: HandlerCall): [string, string][] {
  const out = new Map<string, [string, string]>();
  if (c.action.forwardClientHeaders) {
    for (const [name, value] of Object.entries(forwardable(c.clientHeaders))) out.set(name.toLowerCase(), [name, value]);
  }
  for (const [name, value] of c.action.headers) out.set(name.toLowerCase(), [name, value]);
  return [...out.values()];
}

/** Bytes of an answer shown in the details of an error (the rest is cut). */
const MAX_SHOWN_BODY = 64 * 1024;

/** The answer as the details show it: the parsed value, or its text cut at MAX_SHOWN_BODY when
 * it is long or nested too deep to be written back as JSON safely. */
function shownBody(body: unknown, text: string): unknown {
  if (text.length > MAX_SHOWN_BODY) return text.slice(0, MAX_SHOWN_BODY);
  try {
    JSON.stringify(body);
    return body;
  } catch {
    return text;
  }
}

/** What went wrong with an answer, with Hasura's `internal` shape. */
function unexpected(message: string, c: HandlerCall, payload: unknown, sent: [string, string][], response?: { status: number; body: unknown; headers: [string, string][] }, transformed: unknown = null): SvcError {
  const internal = {
    error: 'unexpected response',
    request: { url: c.action.meta.definition.handler, body: payload, headers: sent.map(([name]) => ({ name, value: '<redacted>' })), transformed_request: transformed },
    ...(response
      ? { response: { status: response.status, body: response.body, headers: response.headers.filter(([n]) => !IGNORED_RESPONSE_HEADERS.has(n)).map(([name, value]) => ({ name: titleCase(name), value })) } }
      : {}),
  };
  return new SvcError('unexpected', message, { internal });
}

/** Calls the handler and returns its answer, checked against the output type. */
export async function callHandler(c: HandlerCall, types: ResolvedTypes): Promise<unknown> {
  const payload = payloadOf(c);
  const sent = requestHeaders(c);
  let body_ = JSON.stringify(payload);
  let transformed: unknown = null;
  let url = c.action.url;
  let method: string | undefined;
  let headers = sent;
  let requestContext: unknown = null;
  const t = c.action.request;
  if (t) {
    try {
      const out = applyRequestTransform(t, { url: c.action.url, payload, payloadText: body_, sessionVariables: payload.session_variables as Record<string, string>, headers: sent });
      ({ url, method, body: body_, headers } = out.call);
      requestContext = out.context;
      // The URL is shown as the handler template gives it when the transform keeps it (the
      // resolved one may hold a secret from the environment).
      transformed = { url: t.url || t.query ? url : c.action.meta.definition.handler, method, body: out.bodyValue, headers: headers.map(([name]) => ({ name, value: '<redacted>' })) };
    } catch (e) {
      if (!(e instanceof TransformError)) throw e;
      throw new SvcError('unexpected', `request transform failed: ${e.message}`, { internal: { error: 'request transform failed', transform_errors: e.bundle } });
    }
  }
  const r = await postWebhook({ url, ...(method ? { method } : {}), body: body_, headers, timeoutMs: c.action.timeoutMs, maxBodyBytes: MAX_RESPONSE_BYTES, ...(c.signal ? { signal: c.signal } : {}) });
  if (r.status === undefined || (r.error && !r.truncated)) {
    const why = r.error === 'timeout' ? `the handler did not answer within ${c.action.timeoutMs / 1000} s` : (r.error ?? 'no response');
    const e = unexpected('http exception when calling webhook', c, payload, sent);
    (e.internal as Record<string, unknown>).error = why;
    throw e;
  }
  const response = (body: unknown) => ({ status: r.status!, body: shownBody(body, r.body), headers: r.headers });
  if (r.truncated) throw unexpected(`the action handler's response is larger than ${MAX_RESPONSE_BYTES} bytes`, c, payload, sent, response(null), transformed);
  let body: unknown;
  const text = r.body;
  try {
    // An empty body (a 204) is not JSON either, as in Hasura.
    body = JSON.parse(text);
  } catch {
    throw unexpected('not a valid json response from webhook', c, payload, sent, response(text), transformed);
  }
  if (c.action.response) {
    try {
      body = applyResponseTransform(c.action.response, { body, status: r.status, request: requestContext, sessionVariables: payload.session_variables as Record<string, string> });
    } catch (e) {
      if (!(e instanceof TransformError)) throw e;
      throw unexpected(`response transform failed: ${e.message}`, c, payload, sent, response(body), transformed);
    }
  }
  if (r.status >= 200 && r.status < 300) {
    const why = checkValue(body, c.action.output, types);
    if (why) throw unexpected(why, c, payload, sent, response(body), transformed);
    if (c.setCookies) for (const [name, value] of r.headers) if (name === 'set-cookie') c.setCookies.push(['Set-Cookie', value]);
    return body;
  }
  if (r.status >= 400 && r.status < 500) {
    if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof (body as { message?: unknown }).message !== 'string') {
      throw unexpected('the action webhook answered an error without a "message"', c, payload, sent, response(body), transformed);
    }
    const { message, code, extensions } = body as { message: string; code?: unknown; extensions?: unknown };
    const errCode = typeof code === 'string' ? code : 'unexpected';
    const ext = extensions !== undefined && extensions !== null && typeof extensions === 'object' ? (extensions as Record<string, unknown>) : undefined;
    // Hasura: the handler's `extensions` replace the error's own (path and code).
    throw new SvcError('unexpected', message, { extensions: ext ?? { path: '$', code: errCode } });
  }
  throw unexpected(`expecting 2xx or 4xx status code, but found ${r.status}`, c, payload, sent, response(body), transformed);
}

const jsonKind = (x: unknown): string =>
  Array.isArray(x) ? 'array' : x === null ? 'null' : typeof x === 'object' ? 'object' : `scalar ${typeof x === 'string' ? 'String' : typeof x === 'number' ? 'Number' : 'Boolean'}`;

function scalarFits(name: string, x: unknown): boolean {
  switch (name) {
    case 'Int':
      return typeof x === 'number' && Number.isInteger(x);
    case 'Float':
      return typeof x === 'number';
    case 'String':
      return typeof x === 'string';
    case 'Boolean':
      return typeof x === 'boolean';
    case 'ID':
      return typeof x === 'string' || (typeof x === 'number' && Number.isInteger(x));
    default:
      return true;
  }
}

/** How deep an answer is checked: a recursive output type lets a handler nest objects without
 * end, and the check must not exhaust the stack on one that does. */
const MAX_DEPTH = 500;

/** Hasura's validateResponse: why `x` does not fit `t`, or undefined. */
export function checkValue(x: unknown, t: TypeNode, types: ResolvedTypes, depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return `the action webhook response is nested deeper than ${MAX_DEPTH} levels`;
  const nonNull = t.kind === Kind.NON_NULL_TYPE;
  const inner = nonNull ? t.type : t;
  if (x === null || x === undefined) return nonNull ? 'got null for the action webhook response' : undefined;
  if (inner.kind === Kind.LIST_TYPE) {
    if (!Array.isArray(x)) return 'expecting array for the action webhook response';
    for (const item of x) {
      const why = checkValue(item, inner.type, types, depth + 1);
      if (why) return why;
    }
    return undefined;
  }
  if (inner.kind !== Kind.NAMED_TYPE) return undefined;
  const name = inner.name.value;
  const obj = types.objects.get(name);
  if (obj) {
    if (typeof x !== 'object' || Array.isArray(x)) return `got ${jsonKind(x)} for the action webhook response, expecting ${name}`;
    const o = x as Record<string, unknown>;
    for (const f of obj.def.fields) {
      const ft = parseTypeCached(f.type);
      const has = Object.prototype.hasOwnProperty.call(o, f.name);
      const fNonNull = ft.kind === Kind.NON_NULL_TYPE;
      if (!has) {
        if (fNonNull) return `field ${JSON.stringify(f.name)} expected in webhook response, but not found`;
        continue;
      }
      const v = o[f.name];
      if (v === null) {
        if (fNonNull) return `expecting not null value for field ${JSON.stringify(f.name)}`;
        continue;
      }
      const why = checkValue(v, ft, types, depth + 1);
      if (why) return why;
    }
    return undefined;
  }
  if (types.enums.has(name)) {
    if (typeof x !== 'string' || !types.enums.get(name)!.values.some((e) => e.value === x)) return `got ${jsonKind(x)} for the action webhook response, expecting ${name}`;
    return undefined;
  }
  if (BUILTIN_SCALARS.has(name)) {
    if (typeof x === 'object') return `got ${jsonKind(x)} for the action webhook response, expecting ${name}`;
    if (!scalarFits(name, x)) return `got ${jsonKind(x)} for the action webhook response, expecting ${name}`;
  }
  // Custom and PostgreSQL scalars take any JSON value, as in Hasura.
  return undefined;
}

const typeCache = new Map<string, TypeNode>();
export function parseTypeCached(s: string): TypeNode {
  let t = typeCache.get(s);
  if (!t) {
    t = parseType(s);
    if (typeCache.size < 10000) typeCache.set(s, t);
  }
  return t;
}
