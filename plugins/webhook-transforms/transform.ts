/**
 * Request and response transforms of webhooks (Hasura v2's Hasura/RQL/DDL/Webhook/Transform*),
 * shared by actions and event triggers: the stored form with Hasura's parsers (versions 1 and 2),
 * the compiled form (templates parsed once per build), and applying them to a request and to a
 * response. Nothing here knows actions, event triggers or HTTP clients.
 */
import * as v from '../../core/valibot.js';
import { compileTemplate, compileTextTemplate, KritiError, SESSION_VAR, type Template } from './kriti.js';

// ---------------------------------------------------------------------------------------------
// The stored form

export type BodyTransform =
  | { action: 'remove' }
  | { action: 'transform'; template: string }
  | { action: 'x_www_form_urlencoded'; form_template: Record<string, string> };

export interface RequestHeadersTransform {
  add_headers: Record<string, string>;
  remove_headers: string[];
}

/** Hasura's RequestTransform as its ToJSON writes it (and export_metadata shows it): `version`
 * and `template_engine` always, the other keys when given; `body` a template text in version 1,
 * a BodyTransform in version 2. */
export interface RequestTransformDef {
  version: 1 | 2;
  template_engine: 'Kriti';
  method?: string;
  url?: string;
  query_params?: Record<string, string | null> | string;
  request_headers?: RequestHeadersTransform;
  body?: string | BodyTransform;
}

/** Hasura's MetadataResponseTransform as its ToJSON writes it. */
export interface ResponseTransformDef {
  version: 1 | 2;
  template_engine: 'Kriti';
  body?: string | BodyTransform;
}

const VersionSchema = v.optional(v.pipe(
  v.unknown(),
  v.check((x) => x === undefined || x === null || typeof x === 'number', 'expected Int'),
  v.check((x) => x === undefined || x === null || x === 1 || x === 2, (issue) => `expected 1 or 2, encountered ${String(issue.input)}`),
  v.transform((x) => (x === 2 ? 2 : 1) as 1 | 2),
), 1);

const EngineSchema = v.optional(v.nullable(v.picklist(['Kriti'], 'expected "Kriti"')));

const BodyTransformSchema: v.GenericSchema<unknown, BodyTransform> = v.pipe(
  v.looseObject({ action: v.string() }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const b = dataset.value as Record<string, unknown>;
    switch (b.action) {
      case 'remove':
        return { action: 'remove' } as BodyTransform;
      case 'transform':
        if (typeof b.template !== 'string') {
          addIssue({ message: b.template === undefined ? 'key "template" not found' : 'expected String for "template"' });
          return NEVER;
        }
        return { action: 'transform', template: b.template } as BodyTransform;
      case 'x_www_form_urlencoded': {
        const f = b.form_template;
        if (f === undefined) {
          addIssue({ message: 'key "form_template" not found' });
          return NEVER;
        }
        if (typeof f !== 'object' || f === null || Array.isArray(f) || Object.values(f).some((x) => typeof x !== 'string')) {
          addIssue({ message: '"form_template" must be an object of text templates' });
          return NEVER;
        }
        return { action: 'x_www_form_urlencoded', form_template: { ...(f as Record<string, string>) } } as BodyTransform;
      }
      default:
        addIssue({ message: 'invalid transform action' });
        return NEVER;
    }
  }),
);

/** The body of a version 1 transform is a template text, of version 2 a BodyTransform. */
function parseBody(version: 1 | 2, body: unknown, addIssue: (i: { message: string }) => void): string | BodyTransform | undefined | typeof FAILED {
  if (body === undefined || body === null) return undefined;
  if (version === 1) {
    if (typeof body === 'string') return body;
    addIssue({ message: 'body: expected a template text in a version 1 transform (a version 2 transform has {action, template})' });
    return FAILED;
  }
  const r = v.safeParse(BodyTransformSchema, body);
  if (r.success) return r.output;
  addIssue({ message: `body: ${typeof body === 'object' && !Array.isArray(body) ? r.issues[0].message : 'expected an object {action: "transform" | "remove" | "x_www_form_urlencoded", ...}'}` });
  return FAILED;
}
const FAILED = Symbol('failed');

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** `request_transform` (create_action, update_action, create_event_trigger, test_webhook_transform). */
export const RequestTransformSchema: v.GenericSchema<unknown, RequestTransformDef> = v.pipe(
  v.object({
    version: VersionSchema,
    template_engine: EngineSchema,
    method: v.optional(v.nullable(v.pipe(v.string(), v.check((m) => (METHODS as readonly string[]).includes(m.toUpperCase()), 'method must be GET, POST, PUT, PATCH or DELETE')))),
    url: v.optional(v.nullable(v.string())),
    query_params: v.optional(v.nullable(v.union([v.string(), v.record(v.string(), v.nullable(v.string()))], 'query_params: expected a template text or an object of text templates'))),
    request_headers: v.optional(
      v.nullable(v.object({ add_headers: v.optional(v.nullable(v.record(v.string(), v.string()))), remove_headers: v.optional(v.nullable(v.array(v.string()))) })),
    ),
    body: v.optional(v.unknown()),
  }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const t = dataset.value;
    const body = parseBody(t.version, t.body, addIssue);
    if (body === FAILED) return NEVER;
    const out: RequestTransformDef = { version: t.version, template_engine: 'Kriti' };
    if (t.method != null) out.method = t.method;
    if (t.url != null) out.url = t.url;
    if (t.query_params != null) out.query_params = t.query_params;
    if (t.request_headers != null) out.request_headers = { add_headers: t.request_headers.add_headers ?? {}, remove_headers: t.request_headers.remove_headers ?? [] };
    if (body !== undefined) out.body = body;
    return out;
  }),
);

/** `response_transform` (actions, event triggers). */
export const ResponseTransformSchema: v.GenericSchema<unknown, ResponseTransformDef> = v.pipe(
  v.object({ version: VersionSchema, template_engine: EngineSchema, body: v.optional(v.unknown()) }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const body = parseBody(dataset.value.version, dataset.value.body, addIssue);
    if (body === FAILED) return NEVER;
    return { version: dataset.value.version, template_engine: 'Kriti', ...(body !== undefined ? { body } : {}) } as ResponseTransformDef;
  }),
);

// ---------------------------------------------------------------------------------------------
// Errors

/** One of Hasura's transform errors (`{error_code, message}`, a Kriti error or its own
 * `TransformationError`). */
export interface TransformErrorItem {
  error_code: string;
  message: string;
  value?: unknown;
}

/**
 * Why a transform could not be compiled or applied: Hasura's TransformErrorBundle (`bundle`,
 * every error found) and a message naming each with the part of the transform it is in.
 */
export class TransformError extends Error {
  constructor(readonly bundle: readonly TransformErrorItem[], message = bundle.map((b) => b.message).join('; ')) {
    super(message);
  }
}

/** Runs each step, collecting the Kriti errors of all (Hasura validates every field). */
function collect<T>(steps: (() => T)[], where: string[]): T[] {
  const out: T[] = [];
  const errors: TransformErrorItem[] = [];
  const messages: string[] = [];
  steps.forEach((s, i) => {
    try {
      out.push(s());
    } catch (e) {
      if (e instanceof TransformError) {
        errors.push(...e.bundle);
        messages.push(`${where[i]}: ${e.message}`);
      } else if (e instanceof KritiError) {
        errors.push(e.toJSON());
        messages.push(`${where[i]}: ${e.message}`);
      } else if (e instanceof RangeError) {
        // A template nested deeper than the stack (the parser and evaluator recurse).
        errors.push({ error_code: 'Parse Error', message: 'the template is nested too deep' });
        messages.push(`${where[i]}: the template is nested too deep`);
      } else throw e;
    }
  });
  if (errors.length) throw new TransformError(errors, messages.join('; '));
  return out;
}

const transformationError = (message: string, value?: unknown): TransformError =>
  new TransformError([{ error_code: 'TransformationError', message, ...(value !== undefined ? { value } : {}) }]);

// ---------------------------------------------------------------------------------------------
// Compiled

type TextTemplate = ReturnType<typeof compileTextTemplate>;

type CompiledBody = { kind: 'remove' } | { kind: 'json'; template: Template } | { kind: 'form'; fields: readonly [string, TextTemplate][] };

export interface CompiledRequestTransform {
  readonly def: RequestTransformDef;
  readonly method?: string;
  readonly url?: TextTemplate;
  /** Query parameters (key and value templates; a null value is a key alone), or the whole
   * query string as one template. */
  readonly query?: { pairs: readonly [TextTemplate, TextTemplate | null][] } | { text: TextTemplate };
  readonly addHeaders: readonly [string, TextTemplate][];
  /** Lower-cased names of the headers not to send. */
  readonly removeHeaders: ReadonlySet<string>;
  readonly body?: CompiledBody;
}

export interface CompiledResponseTransform {
  readonly def: ResponseTransformDef;
  readonly body?: CompiledBody;
}

function compileBody(b: string | BodyTransform | undefined): CompiledBody | undefined {
  if (b === undefined) return undefined;
  if (typeof b === 'string') return { kind: 'json', template: compileTemplate(b) };
  if (b.action === 'remove') return { kind: 'remove' };
  if (b.action === 'transform') return { kind: 'json', template: compileTemplate(b.template) };
  const entries = Object.entries(b.form_template);
  return { kind: 'form', fields: collect(entries.map(([k, t]) => () => [k, compileTextTemplate(t)] as [string, TextTemplate]), entries.map(([k]) => `form_template.${k}`)) };
}

/** Parses every template of a request transform; throws TransformError naming each bad one. */
export function compileRequestTransform(def: RequestTransformDef): CompiledRequestTransform {
  let url: TextTemplate | undefined;
  let query: CompiledRequestTransform['query'];
  let addHeaders: [string, TextTemplate][] = [];
  let body: CompiledBody | undefined;
  collect(
    [
      () => (url = def.url !== undefined ? compileTextTemplate(def.url) : undefined),
      () => {
        const q = def.query_params;
        if (q === undefined) return;
        if (typeof q === 'string') query = { text: compileTextTemplate(q) };
        else {
          const entries = Object.entries(q);
          query = {
            pairs: collect(
              entries.map(([k, x]) => () => [compileTextTemplate(k), x === null ? null : compileTextTemplate(x)] as [TextTemplate, TextTemplate | null]),
              entries.map(([k]) => k),
            ),
          };
        }
      },
      () => {
        const add = Object.entries(def.request_headers?.add_headers ?? {});
        addHeaders = collect(add.map(([k, x]) => () => [k, compileTextTemplate(x)] as [string, TextTemplate]), add.map(([k]) => `add_headers.${k}`));
      },
      () => (body = compileBody(def.body)),
    ],
    ['url', 'query_params', 'request_headers', 'body'],
  );
  return {
    def,
    ...(def.method !== undefined ? { method: def.method.toUpperCase() } : {}),
    ...(url ? { url } : {}),
    ...(query ? { query } : {}),
    addHeaders,
    removeHeaders: new Set((def.request_headers?.remove_headers ?? []).map((h) => h.toLowerCase())),
    ...(body ? { body } : {}),
  };
}

export function compileResponseTransform(def: ResponseTransformDef): CompiledResponseTransform {
  const [body] = collect([() => compileBody(def.body)], ['body']);
  return { def, ...(body ? { body } : {}) };
}

// ---------------------------------------------------------------------------------------------
// Applying

/** A webhook request before or after its transform. */
export interface WebhookCall {
  method: string;
  url: string;
  /** The body as sent ('' for none). */
  body: string;
  headers: [string, string][];
}

export interface RequestInput {
  /** The webhook's URL, resolved (Kriti's `$base_url`). */
  url: string;
  /** The payload (`$body`), sent as JSON when the transform leaves the body. */
  payload: unknown;
  /** The payload as text, when the caller has it already. */
  payloadText?: string;
  /** `$session_variables` (null when there is no session: an event from run_sql). */
  sessionVariables: Readonly<Record<string, unknown>> | null;
  headers: readonly [string, string][];
}

export interface TransformedRequest {
  call: WebhookCall;
  /** The body as a value (the JSON sent, the form text, or null), for logs and details. */
  bodyValue: unknown;
  /** What a response transform sees as `$request` (Hasura's RequestContext). */
  context: unknown;
}

/** URI escaping of a form field or query parameter (Hasura's escapeURIString
 * isUnescapedInURIComponent: everything but unreserved characters). */
const escapeUri = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const escapeQuery = (s: string) => escapeUri(s).replace(/%20/g, '+');

/**
 * Applies a request transform (Hasura's applyRequestTransform): every part is computed from the
 * original request (the transforms of the parts do not see each other's results). Throws
 * TransformError when a template fails (an unbound variable, a function given the wrong type) or
 * gives what the part cannot take (a URL that does not parse).
 */
export function applyRequestTransform(t: CompiledRequestTransform, input: RequestInput): TransformedRequest {
  let original: URL | undefined;
  try {
    original = new URL(input.url);
  } catch {
    original = undefined;
  }
  const ctx = {
    body: input.payload ?? null,
    session_variables: input.sessionVariables ?? null,
    base_url: input.url,
    query_params: original ? [...original.searchParams.entries()] : [],
  };
  const vars: Record<string, unknown> = {
    $body: ctx.body,
    $session_variables: ctx.session_variables,
    $base_url: ctx.base_url,
    $query_params: ctx.query_params,
    [SESSION_VAR]: ctx.session_variables,
  };
  let url = input.url;
  let headers = [...input.headers];
  let body = input.payloadText ?? JSON.stringify(input.payload ?? null);
  let bodyValue: unknown = input.payload ?? null;
  collect(
    [
      () => {
        if (t.url) {
          const u = t.url.render(vars);
          try {
            new URL(u);
          } catch {
            throw transformationError(`Invalid URL: ${u}`);
          }
          url = u;
        }
        if (t.query) {
          const u = new URL(url);
          if ('text' in t.query) u.search = t.query.text.render(vars).replace(/^\?/, '');
          else {
            const parts: string[] = [];
            for (const [k, x] of t.query.pairs) {
              const key = k.render(vars);
              const val = x === null ? null : x.render(vars);
              // Hasura drops a parameter whose key or value renders as null.
              if (key === 'null' || val === 'null') continue;
              parts.push(val === null ? escapeQuery(key) : `${escapeQuery(key)}=${escapeQuery(val)}`);
            }
            u.search = parts.join('&');
          }
          url = u.toString();
        }
      },
      () => {
        if (t.removeHeaders.size) headers = headers.filter(([n]) => !t.removeHeaders.has(n.toLowerCase()));
        for (const [name, tpl] of t.addHeaders) {
          const value = tpl.render(vars);
          headers = [...headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase()), [name, value]];
        }
      },
      () => {
        const b = t.body;
        if (!b) return;
        if (b.kind === 'remove') {
          body = '';
          bodyValue = null;
        } else if (b.kind === 'json') {
          bodyValue = b.template.render(vars);
          body = JSON.stringify(bodyValue ?? null);
        } else {
          body = b.fields.map(([k, tpl]) => `${escapeUri(k)}=${escapeUri(tpl.render(vars))}`).join('&');
          bodyValue = body;
        }
      },
    ],
    ['url', 'request_headers', 'body'],
  );
  // A form body says so, unless the transform set its own Content-Type.
  if (t.body?.kind === 'form' && !t.addHeaders.some(([n]) => n.toLowerCase() === 'content-type')) {
    headers = [...headers.filter(([n]) => n.toLowerCase() !== 'content-type'), ['Content-Type', 'application/x-www-form-urlencoded']];
  }
  // Hasura's RequestContext: the same context for each part of the request.
  const context = { method: ctx, url: ctx, body: ctx, query_params: ctx, request_headers: ctx };
  return { call: { method: t.method ?? 'POST', url, body, headers }, bodyValue, context };
}

export interface ResponseInput {
  /** The webhook's answer as JSON (null when it is not JSON). */
  body: unknown;
  status: number;
  /** The request transform's context (`$request`), null when the request had none. */
  request: unknown;
  sessionVariables: Readonly<Record<string, unknown>> | null;
}

/** Applies a response transform: the new body (a value; a form body is its text; a removed
 * body is null). Throws TransformError. */
export function applyResponseTransform(t: CompiledResponseTransform, input: ResponseInput): unknown {
  const b = t.body;
  if (!b) return input.body;
  if (b.kind === 'remove') return null;
  const vars: Record<string, unknown> = {
    $body: input.body,
    $request: input.request ?? null,
    $response: { status: input.status },
    $session_variables: input.sessionVariables ?? null,
    [SESSION_VAR]: input.sessionVariables ?? null,
  };
  const [out] = collect([() => (b.kind === 'json' ? b.template.render(vars) : b.fields.map(([k, tpl]) => `${escapeUri(k)}=${escapeUri(tpl.render(vars))}`).join('&'))], ['body']);
  return out;
}
