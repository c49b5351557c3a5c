/**
 * Custom types and actions as the metadata holds them (Hasura v2's CustomTypes and
 * ActionMetadata, in its export shape) and the arguments of the operations, with Hasura's
 * parsers' messages. Stored documents keep only what Hasura exports (optional keys left out
 * when empty or default); `fullAction` / `fullCustomTypes` give the complete form that Hasura
 * shows in an inconsistent object's `definition`.
 */
import { parseType } from 'graphql';
import * as v from '../../core/valibot.js';
import { GraphQLNameSchema, nameText, optionalComment } from '../../core/validation.js';
import { HeaderConfSchema, type HeaderConf } from '../event-triggers/index.js';
import { RequestTransformSchema, ResponseTransformSchema, type RequestTransformDef, type ResponseTransformDef } from '../webhook-transforms/index.js';

// ---------------------------------------------------------------------------------------------
// Custom types

export interface InputFieldDef {
  name: string;
  type: string;
  description?: string;
}
export interface ObjectFieldDef {
  name: string;
  type: string;
  description?: string;
  /** Never allowed (Hasura refuses them in validation, not in parsing). */
  arguments?: unknown;
}
export interface TypeRelationshipDef {
  name: string;
  type: 'object' | 'array';
  source?: string;
  remote_table: { schema: string; name: string };
  field_mapping: Record<string, string>;
}
export interface InputObjectDef {
  name: string;
  description?: string;
  fields: InputFieldDef[];
}
export interface ObjectDef {
  name: string;
  description?: string;
  fields: ObjectFieldDef[];
  relationships?: TypeRelationshipDef[];
}
export interface ScalarDef {
  name: string;
  description?: string;
}
export interface EnumValueDef {
  value: string;
  description?: string;
  is_deprecated?: boolean;
}
export interface EnumDef {
  name: string;
  description?: string;
  values: EnumValueDef[];
}
export interface CustomTypes {
  input_objects?: InputObjectDef[];
  objects?: ObjectDef[];
  scalars?: ScalarDef[];
  enums?: EnumDef[];
}

/** GraphQL type text (`[String!]!`), checked as Hasura's GraphQLType parser does. */
export const GraphQLTypeText = v.pipe(
  v.string(),
  v.check((s) => {
    try {
      parseType(s);
      return true;
    } catch {
      return false;
    }
  }, (issue) => `not a valid GraphQL type: ${String(issue.input)}`),
);

const description = v.optional(v.nullable(v.string()));
const dropNulls = <T extends Record<string, unknown>>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, x]) => x !== null && x !== undefined)) as T;

const QualifiedTableSchema = v.pipe(
  v.union([v.string(), v.object({ schema: v.optional(v.string(), 'public'), name: v.string() })]),
  v.transform((t) => (typeof t === 'string' ? { schema: 'public', name: t } : t)),
);

const RelationshipSchema = v.pipe(
  v.object({
    name: GraphQLNameSchema,
    type: v.picklist(['object', 'array'], 'expected "object" or "array"'),
    source: v.optional(v.nullable(v.string())),
    remote_table: QualifiedTableSchema,
    field_mapping: v.record(v.string(), v.string()),
  }),
  v.transform((r): TypeRelationshipDef => {
    const out: TypeRelationshipDef = { name: r.name, type: r.type, remote_table: r.remote_table, field_mapping: r.field_mapping };
    if (r.source != null && r.source !== 'default') out.source = r.source;
    return out;
  }),
);

const InputObjectSchema = v.pipe(
  v.object({
    name: GraphQLNameSchema,
    description,
    fields: v.pipe(v.array(v.pipe(v.object({ name: GraphQLNameSchema, type: GraphQLTypeText, description }), v.transform((f) => dropNulls(f) as InputFieldDef))), v.minLength(1, 'empty list not allowed')),
  }),
  v.transform((o) => dropNulls(o) as InputObjectDef),
);

const ObjectSchema = v.pipe(
  v.object({
    name: GraphQLNameSchema,
    description,
    fields: v.pipe(
      v.array(v.pipe(v.object({ name: GraphQLNameSchema, type: GraphQLTypeText, description, arguments: v.optional(v.unknown()) }), v.transform((f) => dropNulls(f) as ObjectFieldDef))),
      v.minLength(1, 'empty list not allowed'),
    ),
    relationships: v.optional(v.nullable(v.array(RelationshipSchema))),
  }),
  v.transform((o): ObjectDef => {
    const out: ObjectDef = { name: o.name, fields: o.fields };
    if (o.description != null) out.description = o.description;
    if (o.relationships && o.relationships.length > 0) out.relationships = o.relationships;
    return out;
  }),
);

const ScalarSchema = v.pipe(v.object({ name: GraphQLNameSchema, description }), v.transform((s) => dropNulls(s) as ScalarDef));

const EnumSchema = v.pipe(
  v.object({
    name: GraphQLNameSchema,
    description,
    values: v.pipe(
      v.array(v.pipe(v.object({ value: GraphQLNameSchema, description, is_deprecated: v.optional(v.nullable(v.boolean())) }), v.transform((e) => dropNulls(e) as EnumValueDef))),
      v.minLength(1, 'empty list not allowed'),
    ),
  }),
  v.transform((e) => dropNulls(e) as EnumDef),
);

const list = <T>(item: v.GenericSchema<unknown, T>) => v.optional(v.nullable(v.array(item)));

/** set_custom_types' args and the `custom_types` section. */
export const CustomTypesSchema = v.pipe(
  v.object({ input_objects: list(InputObjectSchema), objects: list(ObjectSchema), scalars: list(ScalarSchema), enums: list(EnumSchema) }),
  v.transform((c): CustomTypes => {
    const out: CustomTypes = {};
    if (c.input_objects?.length) out.input_objects = c.input_objects;
    if (c.objects?.length) out.objects = c.objects;
    if (c.scalars?.length) out.scalars = c.scalars;
    if (c.enums?.length) out.enums = c.enums;
    return out;
  }),
) as v.GenericSchema<unknown, CustomTypes>;

export const customTypesOf = (md: Readonly<Record<string, unknown>>): CustomTypes => (md.custom_types as CustomTypes | undefined) ?? {};

/** The complete form Hasura shows in an inconsistent object (every list and nullable key). */
export function fullCustomTypes(c: CustomTypes): unknown {
  return {
    input_objects: (c.input_objects ?? []).map((o) => ({ name: o.name, description: o.description ?? null, fields: o.fields.map((f) => ({ name: f.name, type: f.type, description: f.description ?? null })) })),
    objects: (c.objects ?? []).map((o) => ({
      name: o.name,
      description: o.description ?? null,
      fields: o.fields.map((f) => ({ name: f.name, type: f.type, description: f.description ?? null, arguments: f.arguments ?? null })),
      relationships: (o.relationships ?? []).map((r) => ({ name: r.name, type: r.type, source: r.source ?? 'default', remote_table: r.remote_table, field_mapping: r.field_mapping })),
    })),
    scalars: (c.scalars ?? []).map((s) => ({ name: s.name, description: s.description ?? null })),
    enums: (c.enums ?? []).map((e) => ({ name: e.name, description: e.description ?? null, values: e.values.map((x) => ({ value: x.value, description: x.description ?? null, is_deprecated: x.is_deprecated ?? null })) })),
  };
}

// ---------------------------------------------------------------------------------------------
// Actions

export interface ArgumentDef {
  name: string;
  type: string;
  description?: string;
}

/** An action's definition as stored (Hasura's export: defaults left out). */
export interface ActionDefinition {
  handler: string;
  output_type: string;
  arguments?: ArgumentDef[];
  headers?: HeaderConf[];
  forward_client_headers?: boolean;
  type: 'query' | 'mutation';
  /** Mutations only. */
  kind?: 'synchronous' | 'asynchronous';
  /** Seconds; left out when the default (30). */
  timeout?: number;
  request_transform?: RequestTransformDef;
  response_transform?: ResponseTransformDef;
}

export interface ActionPermission {
  role: string;
  comment?: string;
}

export interface ActionMeta {
  name: string;
  definition: ActionDefinition;
  comment?: string;
  permissions?: ActionPermission[];
}

export const DEFAULT_TIMEOUT_SEC = 30;

export const ActionDefinitionSchema = v.pipe(
  v.object({
    handler: v.pipe(v.string(), v.minLength(1, 'empty string not allowed')),
    output_type: GraphQLTypeText,
    arguments: v.optional(v.nullable(v.array(v.pipe(v.object({ name: GraphQLNameSchema, type: GraphQLTypeText, description }), v.transform((a) => dropNulls(a) as ArgumentDef))))),
    headers: v.optional(v.nullable(v.array(HeaderConfSchema))),
    forward_client_headers: v.optional(v.nullable(v.boolean())),
    type: v.optional(v.nullable(v.picklist(['query', 'mutation'], 'expected "query" or "mutation"'))),
    kind: v.optional(v.nullable(v.picklist(['synchronous', 'asynchronous'], 'expected "synchronous" or "asynchronous"'))),
    timeout: v.optional(v.nullable(v.pipe(v.number(), v.integer('timeout must be an integer'), v.minValue(1, 'timeout must be positive'), v.maxValue(86400, 'timeout is too large')))),
    request_transform: v.optional(v.nullable(RequestTransformSchema)),
    response_transform: v.optional(v.nullable(ResponseTransformSchema)),
  }),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const d = dataset.value;
    const type = d.type ?? 'mutation';
    // Hasura: a query action has no kind (it is always synchronous).
    if (type === 'query' && d.kind === 'asynchronous') {
      addIssue({ message: 'a query action cannot be asynchronous' });
      return NEVER;
    }
    const out: ActionDefinition = { handler: d.handler, output_type: d.output_type, type };
    if (d.forward_client_headers) out.forward_client_headers = true;
    if (d.headers?.length) out.headers = d.headers;
    if (d.arguments?.length) out.arguments = d.arguments;
    if (d.request_transform) out.request_transform = d.request_transform;
    if (d.response_transform) out.response_transform = d.response_transform;
    if (type === 'mutation') out.kind = d.kind ?? 'synchronous';
    if (d.timeout != null && d.timeout !== DEFAULT_TIMEOUT_SEC) out.timeout = d.timeout;
    return out;
  }),
) as v.GenericSchema<unknown, ActionDefinition>;

const PermissionSchema = v.pipe(
  v.object({ role: nameText, comment: optionalComment }),
  v.transform((p) => dropNulls(p) as ActionPermission),
);

export const ActionMetaSchema = v.pipe(
  v.object({ name: GraphQLNameSchema, definition: ActionDefinitionSchema, comment: optionalComment, permissions: v.optional(v.nullable(v.array(PermissionSchema))) }),
  v.transform((a): ActionMeta => {
    const out: ActionMeta = { name: a.name, definition: a.definition };
    if (a.comment != null) out.comment = a.comment;
    if (a.permissions?.length) out.permissions = a.permissions;
    return out;
  }),
) as v.GenericSchema<unknown, ActionMeta>;

export const ActionsSectionSchema = v.array(ActionMetaSchema);

export const CreateActionSchema = v.object({ name: GraphQLNameSchema, definition: ActionDefinitionSchema, comment: optionalComment });
export const DropActionSchema = v.object({ name: nameText, clear_data: v.optional(v.nullable(v.boolean())) });
export const CreatePermissionSchema = v.object({ action: nameText, role: nameText, definition: v.optional(v.unknown()), comment: optionalComment });
export const DropPermissionSchema = v.object({ action: nameText, role: nameText });

export const actionsOf = (md: Readonly<Record<string, unknown>>): ActionMeta[] => (md.actions as ActionMeta[] | undefined) ?? [];

/** The action as Hasura shows it in an inconsistent object: every key of its definition. */
export function fullAction(a: ActionMeta): unknown {
  const d = a.definition;
  return {
    name: a.name,
    comment: a.comment ?? null,
    definition: {
      arguments: (d.arguments ?? []).map((x) => ({ name: x.name, type: x.type, description: x.description ?? null })),
      forward_client_headers: d.forward_client_headers ?? false,
      handler: d.handler,
      headers: d.headers ?? [],
      ...(d.type === 'mutation' ? { kind: d.kind ?? 'synchronous' } : {}),
      output_type: d.output_type,
      timeout: d.timeout ?? DEFAULT_TIMEOUT_SEC,
      type: d.type,
      ...(d.request_transform ? { request_transform: d.request_transform } : {}),
      ...(d.response_transform ? { response_transform: d.response_transform } : {}),
    },
  };
}
