/**
 * The type registry of one role's schema (TypeRegistry in core/plugin.ts): the named types its
 * contributors define, and the fields plugins add to each other's object types. A name defined
 * twice, or a field added twice, is an error naming both plugins.
 */
import { isObjectType, type GraphQLFieldConfig, type GraphQLFieldConfigMap, type GraphQLNamedType, type GraphQLSchema } from 'graphql';
import type { TypeRegistry } from './contract.js';
import { SvcError } from '../errors.js';

type FieldConfig = GraphQLFieldConfig<unknown, unknown>;

/** The key under a field config's `extensions` that records which plugin added the field. */
const ADDED_BY = 'svcAddedBy';

export const collision = (message: string) => new SvcError('unexpected', message);

/**
 * One registry per (role, build). `as(plugin)` gives the view a contributor gets: what it
 * defines or extends is recorded as its own, so that a collision can name both sides.
 */
export class RoleTypeRegistry {
  private readonly types = new Map<string, { type: GraphQLNamedType; plugin: string }>();
  private readonly added = new Map<string, Map<string, { field: FieldConfig; plugin: string }>>();

  as(plugin: string): TypeRegistry {
    return {
      define: (type) => this.define(type, plugin),
      get: (name) => this.get(name),
      extend: (typeName, fields) => this.extend(typeName, fields, plugin),
      extensions: (typeName) => this.extensions(typeName),
    };
  }

  /** The type defined under `name` so far, if any. */
  get(name: string): GraphQLNamedType | undefined {
    return this.types.get(name)?.type;
  }

  private define<T extends GraphQLNamedType>(type: T, plugin: string): T {
    const prior = this.types.get(type.name);
    if (prior) {
      // The same object again (a contributor that shares a type between its fields) is fine.
      if (prior.type === type) return type;
      throw collision(
        prior.plugin === plugin
          ? `the GraphQL type "${type.name}" is defined twice by plugin "${plugin}"`
          : `the GraphQL type "${type.name}" is defined by both plugins "${prior.plugin}" and "${plugin}"`,
      );
    }
    this.types.set(type.name, { type, plugin });
    return type;
  }

  private extend(typeName: string, fields: GraphQLFieldConfigMap<unknown, unknown>, plugin: string): void {
    let map = this.added.get(typeName);
    if (!map) this.added.set(typeName, (map = new Map()));
    for (const [name, field] of Object.entries(fields)) {
      const prior = map.get(name);
      if (prior) {
        throw collision(`the field "${name}" of GraphQL type "${typeName}" is added by both plugins "${prior.plugin}" and "${plugin}"`);
      }
      map.set(name, { field: { ...field, extensions: { ...field.extensions, [ADDED_BY]: plugin } }, plugin });
    }
  }

  private extensions(typeName: string): GraphQLFieldConfigMap<unknown, unknown> {
    const out: GraphQLFieldConfigMap<unknown, unknown> = {};
    for (const [name, { field }] of this.added.get(typeName) ?? []) out[name] = field;
    return out;
  }

  /** Every defined type (given to GraphQLSchema as `types`, so that none is lost). */
  definedTypes(): GraphQLNamedType[] {
    return [...this.types.values()].map((t) => t.type);
  }

  /**
   * After the schema is assembled: every added field must be in its type, as the plugin that
   * added it gave it. The owner merges with `{ ...types.extensions(name), ...ownFields }` (added
   * fields first), so on a name both sides define its own config wins; that config lacks the
   * marker of the adding plugin, so the collision is caught here and names both plugins.
   */
  checkExtensions(schema: GraphQLSchema): void {
    for (const [typeName, fields] of this.added) {
      const owner = this.types.get(typeName);
      const type = schema.getType(typeName);
      const first = fields.values().next().value!;
      if (!owner || !type) {
        throw collision(`plugin "${first.plugin}" adds fields to the GraphQL type "${typeName}", which no plugin defines`);
      }
      if (!isObjectType(type)) {
        throw collision(`plugin "${first.plugin}" adds fields to the GraphQL type "${typeName}" of plugin "${owner.plugin}", which is not an object type`);
      }
      const actual = type.getFields();
      for (const [name, { plugin }] of fields) {
        const f = actual[name];
        if (!f) throw collision(`plugin "${owner.plugin}" does not take the field "${name}" that plugin "${plugin}" adds to the GraphQL type "${typeName}" (merge types.extensions("${typeName}") into its fields)`);
        if (f.extensions?.[ADDED_BY] !== plugin) {
          throw collision(`the field "${name}" of GraphQL type "${typeName}" is defined by both plugins "${owner.plugin}" and "${plugin}"`);
        }
      }
    }
  }
}
