/**
 * Remote schema permissions (SPEC "Remote schema permission"): a role's SDL, checked to be a
 * subset of the remote's schema, is what the role sees of the remote.
 */
import {
  buildASTSchema,
  getNamedType,
  print,
  valueFromAST,
  visit,
  type GraphQLInputType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isUnionType,
  Kind,
  parse,
  type ConstValueNode,
  type DocumentNode,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import type { Preset } from './customize.js';
import type { ResolvedRemote } from './remote.js';

/*
 * Note [Remote schema permissions]
 * With --enable-remote-schema-permissions, a role other than admin sees a remote only through its
 * permission: a GraphQL SDL in the remote's own names that may leave out types, fields,
 * arguments, input fields, enum values, union members and the mutation root (rule 1). The SDL is
 * built into a graphql-js schema of its own, checked type by type against the remote's (each
 * name must exist there with the same kind and the same types; a non-null argument or input
 * field of the remote may not be left out), and exposed through the same customization as the
 * admin's (./customize.ts). An argument or input field with `@preset(value: ...)` is hidden from
 * the role (rule 3), and its value is put in the document sent to the remote (./plan.ts, Note
 * [Argument presets]); a text starting with `x-svc-` is a session variable read when the
 * request runs (rule 4), unless `static: true` (rule 5). An input object type all of whose
 * fields are preset disappears from the role's schema, with the arguments of its type.
 */

export interface RolePermission {
  /** The resolved remote this was checked against (reused while it is the same). */
  readonly remote: ResolvedRemote;
  readonly sdl: string;
  /** The role's schema, in the remote's names, presets still in it. */
  readonly schema: GraphQLSchema;
  /** Presets by `Type.field` (arguments) and by input type name (input fields). */
  readonly presets: ReadonlyMap<string, ReadonlyMap<string, Preset>>;
}

const SESSION = /^x-(svc|hasura)-/i;

export function rolePermission(r: ResolvedRemote, _role: string, sdl: string): RolePermission | { error: string } {
  let doc: DocumentNode;
  try {
    doc = parse(sdl, { maxTokens: 200_000 });
  } catch (e) {
    return { error: `parsing the role-based schema failed: ${(e as Error).message}` };
  }
  const early = sdlProblem(doc);
  if (early) return { error: `validation for the given role-based schema failed because ${early}` };
  let schema: GraphQLSchema;
  try {
    schema = buildASTSchema(doc, { assumeValidSDL: true });
  } catch (e) {
    return { error: `validation for the given role-based schema failed: ${(e as Error).message}` };
  }
  const errors: string[] = [];
  const presets = new Map<string, Map<string, Preset>>();
  const remote = r.schema;
  const presetOf = (node: { directives?: readonly { name: { value: string }; arguments?: readonly { name: { value: string }; value: ConstValueNode | import('graphql').ValueNode }[] }[] } | undefined | null, where: string): Preset | undefined => {
    const d = node?.directives?.find((x) => x.name.value === 'preset');
    if (!d) return undefined;
    const value = d.arguments?.find((a) => a.name.value === 'value')?.value;
    const isStatic = d.arguments?.find((a) => a.name.value === 'static')?.value;
    if (!value) {
      errors.push(`the @preset directive of ${where} has no "value" argument`);
      return undefined;
    }
    if (value.kind === Kind.VARIABLE) {
      errors.push(`the preset value of ${where} cannot be a variable`);
      return undefined;
    }
    const staticFlag = isStatic?.kind === Kind.BOOLEAN && isStatic.value;
    const session = !staticFlag && value.kind === Kind.STRING && SESSION.test(value.value) ? value.value.toLowerCase() : undefined;
    return session ? { value: value as ConstValueNode, session } : { value: value as ConstValueNode };
  };
  const addPreset = (key: string, name: string, p: Preset, type: string) => {
    let m = presets.get(key);
    if (!m) presets.set(key, (m = new Map()));
    m.set(name, { ...p, type } as Preset);
  };
  // A static preset must be a value of the remote's type (a session variable is checked when
  // the request runs).
  const checkPreset = (p: Preset, type: GraphQLInputType, name: string) => {
    if (p.session) return;
    // graphql-js's valueFromAST passes over fields the input type does not have: refused here.
    const unknownField = (value: import('graphql').ValueNode, t: GraphQLInputType): string | undefined => {
      const n = getNamedType(t);
      if (value.kind === Kind.LIST) return value.values.map((x) => unknownField(x, t)).find((x) => x !== undefined);
      if (!isInputObjectType(n) || value.kind !== Kind.OBJECT) return undefined;
      for (const f of value.fields) {
        const d = n.getFields()[f.name.value];
        if (!d) return `${JSON.stringify(f.name.value)} does not exist in the input object ${JSON.stringify(n.name)}`;
        const inner = unknownField(f.value, d.type);
        if (inner) return inner;
      }
      return undefined;
    };
    const unknown = unknownField(p.value, type);
    if (unknown) {
      errors.push(unknown);
      return;
    }
    if (valueFromAST(p.value, type) !== undefined) return;
    const named = getNamedType(type);
    const what = isInputObjectType(named) ? 'an input object value' : `a value of type ${String(type)}`;
    errors.push(`expected preset value ${JSON.stringify(print(p.value))} of type ${JSON.stringify(named.name)} (for ${JSON.stringify(name)}) to be ${what}`);
  };
  const sameType = (a: { toString(): string }, b: { toString(): string }) => String(a) === String(b);

  const rootName = (t: GraphQLNamedType | null | undefined) => t?.name;
  const qRole = schema.getQueryType();
  if (!qRole) errors.push('no query root type in the role-based schema');
  if (qRole && rootName(remote.getQueryType()) !== qRole.name && remote.getType(qRole.name) === undefined) {
    errors.push(`query root type "${qRole.name}" does not exist in the remote schema`);
  }

  const checkArgs = (where: string, key: string, role: readonly GraphQLArgument[], rem: readonly GraphQLArgument[]) => {
    for (const a of role) {
      const ra = rem.find((x) => x.name === a.name);
      if (!ra) {
        errors.push(`argument "${a.name}" does not exist in the remote schema's ${where}`);
        continue;
      }
      if (!sameType(a.type, ra.type)) errors.push(`expected type of "${a.name}"("Argument") to be ${String(ra.type)} but received ${String(a.type)}`);
      const p = presetOf(a.astNode, `${where}(${a.name}:)`);
      if (p) {
        checkPreset(p, ra.type, a.name);
        addPreset(key, a.name, p, String(ra.type));
      }
    }
    const missing = rem.filter((ra) => String(ra.type).endsWith('!') && ra.defaultValue === undefined && !role.some((a) => a.name === ra.name)).map((x) => `"${x.name}"`);
    if (missing.length) errors.push(`field: "${where.split('.').pop()}" expects the following non nullable arguments to be present: ${missing.join(', ')}`);
  };

  for (const t of Object.values(schema.getTypeMap())) {
    if (t.name.startsWith('__') || ['String', 'Int', 'Float', 'Boolean', 'ID'].includes(t.name)) continue;
    const rt = remote.getType(t.name);
    if (!rt) {
      errors.push(`${kindName(t)}: ${JSON.stringify(t.name)} does not exist in the upstream remote schema`);
      continue;
    }
    if (kindName(rt) !== kindName(t)) {
      errors.push(`expected ${JSON.stringify(t.name)} to be a ${kindName(rt)} but it is a ${kindName(t)}`);
      continue;
    }
    if ((isObjectType(t) || isInterfaceType(t)) && (isObjectType(rt) || isInterfaceType(rt))) {
      const rf = rt.getFields();
      for (const f of Object.values(t.getFields())) {
        const remoteField = rf[f.name];
        if (!remoteField) {
          errors.push(`field ${JSON.stringify(f.name)} does not exist in the ${JSON.stringify(kindName(t))}: ${JSON.stringify(t.name)}`);
          continue;
        }
        if (!sameType(f.type, remoteField.type)) errors.push(`expected type of ${JSON.stringify(f.name)}("${kindName(t)} field") to be ${String(remoteField.type)} but received ${String(f.type)}`);
        checkArgs(`${t.name}.${f.name}`, `${t.name}.${f.name}`, f.args, remoteField.args);
      }
      const remoteIfaces = new Set(rt.getInterfaces().map((i) => i.name));
      const custom = t.getInterfaces().filter((i) => !remoteIfaces.has(i.name));
      if (custom.length) errors.push(`custom interfaces are not supported. ${kindName(t)}${JSON.stringify(t.name)} implements the following custom interfaces: ${custom.map((i) => JSON.stringify(i.name)).join(', ')}`);
    } else if (isUnionType(t) && isUnionType(rt)) {
      const members = new Set(rt.getTypes().map((m) => m.name));
      const extra = t.getTypes().filter((m) => !members.has(m.name));
      if (extra.length) errors.push(`union ${JSON.stringify(t.name)} has the following members which are not members of the remote union: ${extra.map((m) => JSON.stringify(m.name)).join(', ')}`);
    } else if (isEnumType(t) && isEnumType(rt)) {
      const values = new Set(rt.getValues().map((x) => x.name));
      const extra = t.getValues().filter((x) => !values.has(x.name));
      if (extra.length) errors.push(`enum ${JSON.stringify(t.name)} has the following values which do not exist in the remote enum: ${extra.map((x) => JSON.stringify(x.name)).join(', ')}`);
    } else if (isInputObjectType(t) && isInputObjectType(rt)) {
      const rf = rt.getFields();
      for (const f of Object.values(t.getFields()) as GraphQLInputField[]) {
        const remoteField = rf[f.name];
        if (!remoteField) {
          errors.push(`field ${JSON.stringify(f.name)} does not exist in the "Input object": ${JSON.stringify(t.name)}`);
          continue;
        }
        if (!sameType(f.type, remoteField.type)) errors.push(`expected type of ${JSON.stringify(f.name)}("Input object field") to be ${String(remoteField.type)} but received ${String(f.type)}`);
        const p = presetOf(f.astNode, `${t.name}.${f.name}`);
        if (p) {
          checkPreset(p, remoteField.type, f.name);
          addPreset(t.name, f.name, p, String(remoteField.type));
        }
      }
      const missing = Object.values(rf).filter((x) => String(x.type).endsWith('!') && x.defaultValue === undefined && !t.getFields()[x.name]);
      if (missing.length) errors.push(`input object ${JSON.stringify(t.name)} lacks the following non nullable fields of the remote: ${missing.map((x) => JSON.stringify(x.name)).join(', ')}`);
    }
  }
  if (errors.length) return { error: `validation for the given role-based schema failed for the following reasons:\n${errors.map((e) => ` • ${e}\n`).join('')}` };
  return { remote: r, sdl, schema, presets };
}

/** What graphql-js's SDL building does not refuse: presets elsewhere than on input values,
 * names defined twice. */
function sdlProblem(doc: DocumentNode): string | undefined {
  let problem: string | undefined;
  visit(doc, {
    Directive(node, _key, parent, _path, ancestors) {
      if (node.name.value !== 'preset' || problem) return;
      // The directive sits in its owner's `directives` list: the owner is the last ancestor.
      const at = Array.isArray(parent) ? ancestors[ancestors.length - 1] : parent;
      const owner = at && !Array.isArray(at) ? (at as { kind?: string }).kind : undefined;
      if (owner !== Kind.INPUT_VALUE_DEFINITION) problem = 'Preset directives can be defined only on INPUT_FIELD_DEFINITION or ARGUMENT_DEFINITION';
    },
  });
  if (problem) return problem;
  const types = new Set<string>();
  for (const d of doc.definitions) {
    if (!('name' in d) || !d.name || d.kind === Kind.DIRECTIVE_DEFINITION) continue;
    if (types.has(d.name.value)) return `duplicate type names found: ${JSON.stringify(d.name.value)}`;
    types.add(d.name.value);
    const members: readonly { name: { value: string } }[] =
      d.kind === Kind.ENUM_TYPE_DEFINITION ? (d.values ?? []) : d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.INTERFACE_TYPE_DEFINITION || d.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION ? (d.fields ?? []) : [];
    const seen = new Set<string>();
    for (const m of members) {
      if (seen.has(m.name.value)) return `duplicate ${d.kind === Kind.ENUM_TYPE_DEFINITION ? 'enum values' : 'fields'} found in ${JSON.stringify(d.name.value)}: ${JSON.stringify(m.name.value)}`;
      seen.add(m.name.value);
    }
  }
  return undefined;
}

function kindName(t: GraphQLNamedType): string {
  if (isObjectType(t)) return 'Object';
  if (isInterfaceType(t)) return 'Interface';
  if (isUnionType(t)) return 'Union';
  if (isEnumType(t)) return 'Enum';
  if (isInputObjectType(t)) return 'Input object';
  if (isScalarType(t)) return 'Scalar';
  return 'Type';
}
