/**
 * A remote schema's customization (SPEC "Remote schema" `customization`): type names and field
 * names both ways, and the remote's types as the engine's schema exposes them.
 */
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLUnionType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
  specifiedScalarTypes,
  getNamedType,
  printType,
  type GraphQLField,
  type GraphQLArgumentConfig,
  type GraphQLFieldConfigArgumentMap,
  type GraphQLFieldConfigMap,
  type GraphQLInputFieldConfigMap,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type GraphQLType,
} from 'graphql';
import type { TypeRegistry } from '../../core/plugin.js';
import type { JoinedField } from '../database/index.js';
import type { Customization } from './definition.js';

/** Marks on exposed types and fields: the remote's own name (Note [Two names]). */
export const ORIGINAL = 'svcRemoteName';

/*
 * Note [Two names]
 * Every type and field the engine exposes for a remote carries, in its graphql-js `extensions`,
 * the name the remote knows it by (ORIGINAL). A plan walks the client's selection over the
 * exposed types and writes the remote's document with those names, aliasing each field to the
 * response key the client expects, so that the remote's answer already has the client's keys;
 * only `__typename` values need mapping back (Customizer.typeName). Built-in scalars and the
 * introspection types keep their names, as in Hasura (a `type_names.mapping` of `Int` does
 * nothing).
 */
export class Customizer {
  readonly namespace: string | undefined;
  /** Whether any type name changes (then `__typename` values are mapped in answers). */
  readonly renamesTypes: boolean;
  private readonly typeMap: Record<string, string>;
  private readonly prefix: string;
  private readonly suffix: string;
  private readonly fields: Map<string, { prefix: string; suffix: string; mapping: Record<string, string> }>;

  /** The remote's root type names: under a namespace they are `<namespace><Root>` (Hasura's
   * namespace types, `fooCharacterIFaceQuery`). */
  private readonly roots: ReadonlySet<string>;

  constructor(c: Customization | undefined, roots: readonly string[] = []) {
    this.roots = new Set(roots);
    this.namespace = c?.root_fields_namespace || undefined;
    this.typeMap = c?.type_names?.mapping ?? {};
    this.prefix = c?.type_names?.prefix ?? '';
    this.suffix = c?.type_names?.suffix ?? '';
    this.fields = new Map((c?.field_names ?? []).map((f) => [f.parent_type, { prefix: f.prefix ?? '', suffix: f.suffix ?? '', mapping: f.mapping ?? {} }]));
    // A namespace renames the root types (`<namespace><Root>`), which `__typename` can name.
    this.renamesTypes = this.prefix !== '' || this.suffix !== '' || Object.keys(this.typeMap).length > 0 || this.namespace !== undefined;
  }

  /** A built-in scalar is renamed only by an explicit mapping (`Int: MyInt`), as in Hasura. */
  typeName(name: string): string {
    if (name.startsWith('__')) return name;
    if (BUILTIN.has(name)) return this.typeMap[name] ?? name;
    const mapped = this.typeMap[name];
    if (mapped !== undefined) return mapped;
    const base = `${this.prefix}${name}${this.suffix}`;
    return this.namespace !== undefined && this.roots.has(name) ? `${this.namespace}${base}` : base;
  }

  fieldName(parent: string, name: string): string {
    if (name.startsWith('__')) return name;
    const f = this.fields.get(parent);
    if (!f) return name;
    return f.mapping[name] ?? `${f.prefix}${name}${f.suffix}`;
  }

  /** What is wrong with the customization for this schema (names that are not GraphQL names,
   * two types or fields mapped to one name), or undefined. */
  problem(schema: GraphQLSchema): string | undefined {
    const twice = dupes(Object.values(this.typeMap));
    if (twice.length) return `Type name mappings are not distinct; the following types appear more than once: ${twice.map((n) => JSON.stringify(n)).join(', ')}`;
    for (const [parent, f] of this.fields) {
      const tw = dupes(Object.values(f.mapping));
      if (tw.length) return `Field name mappings for object type ${JSON.stringify(parent)} are not distinct; the following fields appear more than once: ${tw.map((n) => JSON.stringify(n)).join(', ')}`;
    }
    const seen = new Map<string, string>();
    for (const t of Object.values(schema.getTypeMap())) {
      if (t.name.startsWith('__')) continue;
      const n = this.typeName(t.name);
      if (!NAME.test(n)) return `type name ${JSON.stringify(n)} (for ${JSON.stringify(t.name)}) is not a valid GraphQL name`;
      const prior = seen.get(n);
      if (prior !== undefined) return `Type name customization for ${JSON.stringify(prior)} and ${JSON.stringify(t.name)} conflicts: both are mapped to ${JSON.stringify(n)}`;
      seen.set(n, t.name);
      if (isObjectType(t) || isInterfaceType(t)) {
        // An implementation's fields must keep the names its interfaces give them.
        for (const i of t.getInterfaces()) {
          for (const f of Object.keys(i.getFields())) {
            const a = this.fieldName(i.name, f);
            const b = this.fieldName(t.name, f);
            if (a !== b) {
              return `Remote schema customization inconsistency: field name mapping for field ${JSON.stringify(f)} of interface ${JSON.stringify(i.name)} is inconsistent with mapping for type ${JSON.stringify(t.name)}. Interface field name maps to ${JSON.stringify(a)}. Type field name maps to ${JSON.stringify(b)}.`;
            }
          }
        }
        const fields = new Map<string, string>();
        for (const f of Object.keys(t.getFields())) {
          const fn = this.fieldName(t.name, f);
          if (!NAME.test(fn)) return `field name ${JSON.stringify(fn)} (for ${t.name}.${f}) is not a valid GraphQL name`;
          const pf = fields.get(fn);
          if (pf !== undefined) return `Field name customization for ${t.name}.${pf} and ${t.name}.${f} conflicts: both are mapped to ${JSON.stringify(fn)}`;
          fields.set(fn, f);
        }
      }
    }
    if (this.namespace !== undefined && !NAME.test(this.namespace)) return `${JSON.stringify(this.namespace)} is not a valid GraphQL name`;
    return undefined;
  }
}

function dupes(xs: string[]): string[] {
  const seen = new Set<string>();
  const out = new Set<string>();
  for (const x of xs) (seen.has(x) ? out : seen).add(x);
  return [...out];
}

/** What makes two remotes' types the same type (Note [Types shared by remotes]). */
export const SIGNATURE = 'svcRemoteSignature';
const signatures = new WeakMap<GraphQLNamedType, string>();
export function signature(t: GraphQLNamedType): string {
  let s = signatures.get(t);
  if (s === undefined) signatures.set(t, (s = printType(t)));
  return s;
}

/*
 * Note [Types shared by remotes]
 * Two remote schemas may define a type of one name (two remotes of one server, or of servers
 * built from one schema): when both define it alike (the same SDL, the same remote name) the
 * schema has it once, as Hasura merges them; when they differ the later remote is inconsistent
 * (the build step, ./index.ts). A plan of either remote reads the one type's marks, which are
 * the same for both.
 */

const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const BUILTIN = new Set(specifiedScalarTypes.map((s) => s.name));

/** The remote's name of an exposed type or field (Note [Two names]). */
export const originalName = (x: { name: string; extensions?: Readonly<Record<string, unknown>> | null }): string => (x.extensions?.[ORIGINAL] as string | undefined) ?? x.name;

/** What a preset puts in an argument or input field of the remote (Note [Argument presets]). */
export interface Preset {
  /** The value as the role's SDL writes it (a GraphQL literal). */
  readonly value: import('graphql').ConstValueNode;
  /** A session variable's name (lower-cased) when the value is one and not `static`. */
  readonly session?: string;
  /** The type of the argument or input field, printed in the remote's names. */
  readonly type?: string;
}

/** A remote's scalar arguments and input fields take any scalar literal: the remote checks it
 * (Note [Text literals at marked positions] in plugins/graphql/prepare.ts). */
const UNCHECKED = { uncheckedLiteral: true } as const;

/** Marks a relationship field of a remote's object type: its JoinedField (Note [Remote schema
 * relationships] in ./schema-relationships.ts). */
export const JOIN = 'svcRemoteJoin';

/** The role's field as its permission (or the remote) defines it: a plan reads its arguments. */
export const SOURCE_FIELD = 'svcRemoteField';
/** The remote's name of the type a field belongs to (presets are keyed `Type.field`). */
export const PARENT = 'svcRemoteParent';

/** Where the exposed fields keep what the permission hides: the role's presets, all of them. */
export const PRESETS = 'svcRemotePresets';

/** Whether every field of an input type is preset (Note [Remote schema permissions]). */
export function fullyPreset(t: GraphQLInputObjectType, presets: ReadonlyMap<string, ReadonlyMap<string, Preset>>): boolean {
  const p = presets.get(t.name);
  if (!p) return false;
  return Object.keys(t.getFields()).every((f) => p.has(f));
}

/**
 * The remote's types under their customized names, made lazily and per role (a role may see a
 * subset: the permission's schema), defined in the role's type registry. A custom scalar whose
 * name another contributor defined already is that one (one `timestamptz` in a schema).
 */
export class ExposedTypes {
  private readonly made = new Map<string, GraphQLNamedType>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly cz: Customizer,
    private readonly types: TypeRegistry,
    /** Presets of the role's permission: by `Type.field` (arguments) or `Input` (input fields). */
    private readonly presets: ReadonlyMap<string, ReadonlyMap<string, Preset>> = new Map(),
    /** The remote schema relationships of an object type (by the remote's name of the type) for
     * the role (Note [Remote schema relationships] in ./schema-relationships.ts). */
    private readonly joins?: (typeName: string) => Readonly<Record<string, JoinedField>> | undefined,
  ) {}

  /** An input type the role never sees: all its fields are preset. */
  hidden(t: GraphQLNamedType): boolean {
    return isInputObjectType(t) && fullyPreset(t, this.presets);
  }

  /** The exposed form of one of the remote's named types. */
  named(t: GraphQLNamedType): GraphQLNamedType {
    const hit = this.made.get(t.name);
    if (hit) return hit;
    const name = this.cz.typeName(t.name);
    if (isSpecifiedScalarType(t) && name === t.name) return t;
    const ext = { [ORIGINAL]: t.name, [SIGNATURE]: signature(t) };
    // The same type from another remote (two remotes of one server), or a table's type with the
    // same fields (checked by the build step): one type in the schema.
    const same = this.types.get(name);
    if (same && ((same.extensions?.[SIGNATURE] === ext[SIGNATURE] && same.extensions?.[ORIGINAL] === t.name) || (same.extensions?.[SIGNATURE] === undefined && isObjectType(same) && isObjectType(t) && name === t.name))) {
      this.made.set(t.name, same);
      return same;
    }
    let out: GraphQLNamedType;
    if (isSpecifiedScalarType(t)) {
      // A built-in scalar under another name (`Int: MyInt`) keeps its coercion.
      const sc = t as GraphQLScalarType;
      out = new GraphQLScalarType({ name, description: sc.description, serialize: sc.serialize, parseValue: sc.parseValue, parseLiteral: sc.parseLiteral, extensions: ext });
    } else if (isScalarType(t)) {
      const existing = this.types.get(name);
      if (existing && isScalarType(existing)) {
        this.made.set(t.name, existing);
        return existing;
      }
      out = new GraphQLScalarType({ name, description: t.description, specifiedByURL: t.specifiedByURL, extensions: ext });
    } else if (isObjectType(t)) {
      out = new GraphQLObjectType({
        name,
        description: t.description,
        extensions: ext,
        interfaces: () => t.getInterfaces().map((i) => this.named(i) as GraphQLInterfaceType),
        fields: () => this.fields(t),
      });
    } else if (isInterfaceType(t)) {
      out = new GraphQLInterfaceType({
        name,
        description: t.description,
        extensions: ext,
        interfaces: () => t.getInterfaces().map((i) => this.named(i) as GraphQLInterfaceType),
        fields: () => this.fields(t),
      });
    } else if (isUnionType(t)) {
      out = new GraphQLUnionType({ name, description: t.description, extensions: ext, types: () => t.getTypes().map((m) => this.named(m) as GraphQLObjectType) });
    } else if (isEnumType(t)) {
      const values: Record<string, { description?: string | null; deprecationReason?: string | null; value: string }> = {};
      for (const ev of t.getValues()) values[ev.name] = { description: ev.description, deprecationReason: ev.deprecationReason, value: ev.name };
      out = new GraphQLEnumType({ name, description: t.description, extensions: ext, values });
    } else if (isInputObjectType(t)) {
      out = new GraphQLInputObjectType({
        name,
        description: t.description,
        extensions: ext,
        fields: () => {
          const hidden = this.presets.get(t.name);
          const fields: GraphQLInputFieldConfigMap = {};
          for (const f of Object.values(t.getFields())) {
            if (hidden?.has(f.name)) continue;
            const named = getNamedType(f.type);
            if (isInputObjectType(named) && fullyPreset(named, this.presets)) continue;
            fields[f.name] = { type: this.wrap(f.type) as GraphQLInputType, description: f.description, defaultValue: f.defaultValue, deprecationReason: f.deprecationReason, extensions: UNCHECKED };
          }
          return fields;
        },
      });
    } else {
      throw new Error(`unknown kind of type ${String(t)}`);
    }
    this.made.set(t.name, out);
    this.types.define(out);
    return out;
  }

  private fields(t: GraphQLObjectType | GraphQLInterfaceType): GraphQLFieldConfigMap<unknown, unknown> {
    const out: GraphQLFieldConfigMap<unknown, unknown> = {};
    for (const f of Object.values(t.getFields())) {
      out[this.cz.fieldName(t.name, f.name)] = {
        type: this.wrap(f.type) as GraphQLOutputType,
        description: f.description,
        deprecationReason: f.deprecationReason,
        args: this.args(`${t.name}.${f.name}`, f.args),
        extensions: this.fieldExtensions(t.name, f),
      };
    }
    if (isObjectType(t) && this.joins) {
      for (const [name, jf] of Object.entries(this.joins(t.name) ?? {})) {
        if (out[name]) continue;
        out[name] = { ...jf.config, extensions: { [JOIN]: jf } };
      }
    }
    return out;
  }

  /** A field's marks: its remote name and the presets of its arguments (Note [Argument presets]). */
  fieldExtensions(parent: string, f: GraphQLField<unknown, unknown>): Record<string, unknown> {
    return this.presets.size ? { [ORIGINAL]: f.name, [PRESETS]: this.presets, [SOURCE_FIELD]: f, [PARENT]: parent } : { [ORIGINAL]: f.name };
  }

  /** A field's arguments as exposed: those with a preset are hidden. */
  args(key: string, args: readonly { name: string; type: GraphQLInputType; description?: string | null; defaultValue?: unknown; deprecationReason?: string | null }[]): GraphQLFieldConfigArgumentMap {
    const hidden = this.presets.get(key);
    const out: GraphQLFieldConfigArgumentMap = {};
    for (const a of args) {
      if (hidden?.has(a.name)) continue;
      const named = getNamedType(a.type);
      if (isInputObjectType(named) && fullyPreset(named, this.presets)) continue;
      const conf: GraphQLArgumentConfig = { type: this.wrap(a.type) as GraphQLInputType, description: a.description, deprecationReason: a.deprecationReason, extensions: UNCHECKED };
      if (a.defaultValue !== undefined) conf.defaultValue = a.defaultValue;
      out[a.name] = conf;
    }
    return out;
  }

  wrap(t: GraphQLType): GraphQLType {
    if (isNonNullType(t)) return new GraphQLNonNull(this.wrap(t.ofType) as never);
    if (isListType(t)) return new GraphQLList(this.wrap(t.ofType));
    return this.named(t as GraphQLNamedType);
  }
}
