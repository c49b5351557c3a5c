/**
 * The `remote_schemas` metadata section (SPEC "Remote schema", Hasura v2's RemoteSchemaMetadata):
 * its shape, as operations take it and as export gives it back, and the helpers that read it.
 */
import * as v from '../../core/valibot.js';
import type { Metadata } from '../../core/plugin.js';
import { commentText, nameText } from '../../core/validation.js';

export type HeaderConf = { name: string; value: string } | { name: string; value_from_env: string };

export interface FieldNamesCustomization {
  parent_type: string;
  prefix?: string;
  suffix?: string;
  mapping?: Record<string, string>;
}

export interface Customization {
  root_fields_namespace?: string;
  type_names?: { prefix?: string; suffix?: string; mapping?: Record<string, string> };
  field_names?: FieldNamesCustomization[];
}

export interface RemoteSchemaDef {
  url?: string;
  url_from_env?: string;
  headers?: HeaderConf[];
  forward_client_headers: boolean;
  timeout_seconds?: number;
  customization?: Customization;
}

export interface RemoteSchemaRelationships {
  type_name: string;
  relationships: { name: string; definition: Record<string, unknown> }[];
}

export interface RemotePermission {
  role: string;
  definition: { schema: string };
  comment?: string;
}

export interface RemoteSchemaMeta {
  name: string;
  definition: RemoteSchemaDef;
  comment?: string;
  permissions?: RemotePermission[];
  /** Remote schema relationships, per type of the remote (its own name), as Hasura exports them
   * (Note [Remote schema relationships] in ./schema-relationships.ts). */
  remote_relationships?: RemoteSchemaRelationships[];
}

const opt = <S extends v.GenericSchema>(s: S) => v.optional(v.nullable(s));
const mapping = v.record(v.string(), v.string());

const HeaderSchema = v.pipe(
  v.object({ name: v.string(), value: opt(v.string()), value_from_env: opt(v.string()) }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const { name, value, value_from_env: env } = dataset.value;
    if ((value == null) === (env == null)) {
      addIssue({ message: value == null ? 'expecting value or value_from_env keys' : 'expecting only one of value or value_from_env keys' });
      return NEVER;
    }
    return (value != null ? { name, value } : { name, value_from_env: env! }) as HeaderConf;
  }),
);

const CustomizationSchema = v.object({
  root_fields_namespace: opt(v.string()),
  type_names: opt(v.object({ prefix: opt(v.string()), suffix: opt(v.string()), mapping: opt(mapping) })),
  field_names: opt(v.array(v.object({ parent_type: v.string(), prefix: opt(v.string()), suffix: opt(v.string()), mapping: opt(mapping) }))),
});

/** Drops the keys whose value is null or undefined (Hasura omits Nothing fields when it exports). */
function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(o)) if (x !== null && x !== undefined) out[k] = x;
  return out as T;
}

function normaliseCustomization(c: v.InferOutput<typeof CustomizationSchema> | null | undefined): Customization | undefined {
  if (!c) return undefined;
  const out: Customization = {};
  if (c.root_fields_namespace != null) out.root_fields_namespace = c.root_fields_namespace;
  if (c.type_names) out.type_names = compact(c.type_names) as Customization['type_names'];
  if (c.field_names) out.field_names = c.field_names.map((f) => compact(f) as FieldNamesCustomization);
  return out;
}

export const DefinitionSchema = v.pipe(
  v.object({
    url: opt(v.string()),
    url_from_env: opt(v.string()),
    headers: opt(v.array(HeaderSchema)),
    forward_client_headers: opt(v.boolean()),
    timeout_seconds: opt(v.pipe(v.number(), v.integer())),
    customization: opt(CustomizationSchema),
  }),
  v.transform((d): RemoteSchemaDef => {
    const out: RemoteSchemaDef = { forward_client_headers: d.forward_client_headers ?? false };
    if (d.url != null) out.url = d.url;
    if (d.url_from_env != null) out.url_from_env = d.url_from_env;
    if (d.headers != null) out.headers = d.headers as HeaderConf[];
    if (d.timeout_seconds != null) out.timeout_seconds = d.timeout_seconds;
    const c = normaliseCustomization(d.customization);
    if (c) out.customization = c;
    return out;
  }),
);

export const PermissionSchema = v.object({
  role: nameText,
  definition: v.object({ schema: v.string() }),
  comment: opt(commentText),
});

export const RemoteSchemaSchema = v.pipe(
  v.object({
    name: nameText,
    definition: DefinitionSchema,
    comment: opt(commentText),
    permissions: opt(v.array(PermissionSchema)),
    remote_relationships: opt(v.array(v.object({ type_name: nameText, relationships: v.array(v.object({ name: nameText, definition: v.record(v.string(), v.unknown()) })) }))),
  }),
  v.transform((r): RemoteSchemaMeta => {
    const out: RemoteSchemaMeta = { name: r.name, definition: r.definition };
    if (r.comment != null) out.comment = r.comment;
    if (r.permissions?.length) out.permissions = r.permissions.map((p) => compact(p) as RemotePermission);
    const rels = (r.remote_relationships ?? []).filter((x) => x.relationships.length > 0);
    if (rels.length) out.remote_relationships = rels.map((x) => ({ type_name: x.type_name, relationships: x.relationships.map((y) => ({ name: y.name, definition: y.definition })) }));
    return out;
  }),
);

export const SectionSchema = v.array(RemoteSchemaSchema);

export const remoteSchemasOf = (md: Metadata): RemoteSchemaMeta[] => (md.remote_schemas as RemoteSchemaMeta[] | undefined) ?? [];
export const withRemoteSchemas = (md: Metadata, list: RemoteSchemaMeta[]): Metadata => ({ ...md, remote_schemas: list });

/** Why a definition cannot be used as it is written (Hasura's validateRemoteSchemaDef), or undefined. */
export function definitionProblem(d: RemoteSchemaDef): string | undefined {
  if (d.url !== undefined && d.url_from_env !== undefined) return 'both `url` and `url_from_env` can\'t be present';
  if (d.url === undefined && d.url_from_env === undefined) return 'both `url` and `url_from_env` can\'t be empty';
  if (d.timeout_seconds !== undefined && d.timeout_seconds <= 0) return 'timeout_seconds must be a positive integer';
  return undefined;
}

/** A `{{NAME}}` in a URL is the environment variable's value (Hasura's URL templates). */
export function resolveUrl(d: RemoteSchemaDef, env: Readonly<Record<string, string | undefined>>): { url: string } | { error: string } {
  if (d.url_from_env !== undefined) {
    const val = env[d.url_from_env];
    if (val === undefined || val === '') return { error: `environment variable "${d.url_from_env}" not set` };
    return checkUrl(val);
  }
  let missing: string | undefined;
  const url = d.url!.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (_, name: string) => {
    const val = env[name];
    if (val === undefined) missing ??= name;
    return val ?? '';
  });
  if (missing !== undefined) return { error: `Value for environment variables not found: ${missing}` };
  return checkUrl(url);
}

function checkUrl(url: string): { url: string } | { error: string } {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return { error: `invalid URL: ${url}` };
    return { url };
  } catch {
    return { error: `invalid URL: ${url}` };
  }
}

/** The configured headers' values (value_from_env read now): a missing variable is an error. */
export function resolveHeaders(headers: readonly HeaderConf[] | undefined, env: Readonly<Record<string, string | undefined>>): { headers: [string, string][] } | { error: string } {
  const out: [string, string][] = [];
  for (const h of headers ?? []) {
    if ('value' in h) out.push([h.name, h.value]);
    else {
      const val = env[h.value_from_env];
      if (val === undefined) return { error: `environment variable "${h.value_from_env}" not set` };
      out.push([h.name, val]);
    }
  }
  return { headers: out };
}
