/**
 * The GraphQL types of custom types for one role (Hasura's Hasura/GraphQL/Schema/Action.hs):
 * scalars, enums, input objects and objects, made when first reached from an action the role may
 * run, so a role sees only the types its actions use. PostgreSQL scalars (`uuid`, `json`) are the
 * same named types as the tables' (defined by whichever plugin reaches them first, Note
 * [Postgres scalars in custom types] in build.ts). An object's relationships to tables are fields
 * of the tables' own types as the role sees them (`tableJoinTypes` of the database plugin); a
 * relationship to a table the role may not select is not in its schema.
 */
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLString,
  Kind,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type TypeNode,
} from 'graphql';
import type { TypeRegistry } from '../../core/plugin.js';
import type { TableJoinTypes } from '../database/index.js';
import type { ResolvedRelationship, ResolvedTypes } from './build.js';
import { parseTypeCached } from './handler.js';

const BUILTIN: ReadonlyMap<string, GraphQLScalarType> = new Map<string, GraphQLScalarType>([
  ['Int', GraphQLInt as GraphQLScalarType],
  ['Float', GraphQLFloat as GraphQLScalarType],
  ['String', GraphQLString],
  ['Boolean', GraphQLBoolean as GraphQLScalarType],
  ['ID', GraphQLID],
]);

/** What a relationship field of an object type joins (read by the plans from the field's
 * `extensions`). */
export interface RelationshipField {
  readonly rel: ResolvedRelationship;
  /** `aggregate`: the `<rel>_aggregate` field of an array relationship. */
  readonly kind: 'object' | 'array' | 'aggregate';
  readonly join: TableJoinTypes;
}
export const REL = 'svcActionRelationship';

export type JoinTypesOf = (source: string, schema: string, name: string) => TableJoinTypes | undefined;

export class ActionTypes {
  constructor(
    private readonly types: TypeRegistry,
    readonly resolved: ResolvedTypes,
    private readonly joinTypes: JoinTypesOf,
  ) {}

  private named<T extends GraphQLNamedType>(name: string, make: () => T): T {
    return (this.types.get(name) as T | undefined) ?? this.types.define(make());
  }

  scalar(name: string): GraphQLScalarType {
    const builtin = BUILTIN.get(name);
    if (builtin) return builtin;
    const def = this.resolved.scalars.get(name);
    return this.named(name, () => new GraphQLScalarType({ name, ...(def?.description ? { description: def.description } : {}) }));
  }

  namedInput(name: string): GraphQLInputType {
    const e = this.resolved.enums.get(name);
    if (e) return this.enumType(name);
    const o = this.resolved.inputs.get(name);
    if (o) {
      return this.named(
        name,
        () =>
          new GraphQLInputObjectType({
            name,
            ...(o.description ? { description: o.description } : {}),
            fields: () => {
              const out: GraphQLInputFieldConfigMap = {};
              for (const f of o.fields) out[f.name] = { type: this.inputType(parseTypeCached(f.type)), ...(f.description ? { description: f.description } : {}) };
              return out;
            },
          }),
      );
    }
    return this.scalar(name);
  }

  enumType(name: string): GraphQLEnumType {
    const e = this.resolved.enums.get(name)!;
    return this.named(
      name,
      () =>
        new GraphQLEnumType({
          name,
          ...(e.description ? { description: e.description } : {}),
          values: Object.fromEntries(
            e.values.map((x) => [x.value, { value: x.value, ...(x.description ? { description: x.description } : {}), ...(x.is_deprecated ? { deprecationReason: 'No longer supported' } : {}) }]),
          ),
        }),
    );
  }

  namedOutput(name: string): GraphQLOutputType {
    if (this.resolved.enums.has(name)) return this.enumType(name);
    const o = this.resolved.objects.get(name);
    if (!o) return this.scalar(name);
    return this.named(
      name,
      () =>
        new GraphQLObjectType({
          name,
          ...(o.def.description ? { description: o.def.description } : {}),
          fields: () => {
            const own: GraphQLFieldConfigMap<unknown, unknown> = {};
            for (const f of o.def.fields) own[f.name] = { type: this.outputType(parseTypeCached(f.type)), ...(f.description ? { description: f.description } : {}) };
            for (const r of o.relationships) {
              const join = this.joinTypes(r.source, r.def.remote_table.schema, r.def.remote_table.name);
              if (!join) continue;
              const ext = (kind: RelationshipField['kind']) => ({ extensions: { [REL]: { rel: r, kind, join } satisfies RelationshipField } });
              if (r.def.type === 'object') own[r.def.name] = { type: join.object, ...ext('object') };
              else {
                own[r.def.name] = { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(join.object))), args: join.selectArgs, ...ext('array') };
                if (join.aggregate) own[`${r.def.name}_aggregate`] = { type: new GraphQLNonNull(join.aggregate), args: join.selectArgs, ...ext('aggregate') };
              }
            }
            return { ...this.types.extensions(name), ...own };
          },
        }),
    );
  }

  inputType(t: TypeNode): GraphQLInputType {
    if (t.kind === Kind.NON_NULL_TYPE) return new GraphQLNonNull(this.inputType(t.type) as GraphQLInputType & { ofType?: never }) as GraphQLInputType;
    if (t.kind === Kind.LIST_TYPE) return new GraphQLList(this.inputType(t.type));
    return this.namedInput(t.name.value);
  }

  outputType(t: TypeNode): GraphQLOutputType {
    if (t.kind === Kind.NON_NULL_TYPE) return new GraphQLNonNull(this.outputType(t.type) as GraphQLOutputType & { ofType?: never }) as GraphQLOutputType;
    if (t.kind === Kind.LIST_TYPE) return new GraphQLList(this.outputType(t.type));
    return this.namedOutput(t.name.value);
  }
}
