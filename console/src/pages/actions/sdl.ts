/**
 * Actions and custom types as GraphQL SDL, the way Hasura's console edits them: an action is
 * `type Mutation { name(arg: Type!): Output }` (or `type Query`), its types are ordinary SDL
 * (`type`, `input`, `enum`, `scalar`), and both are turned into the metadata's JSON
 * (create_action's definition, set_custom_types' lists) and back. Parsing is graphql-js's.
 */
import { Kind, parse, print, type DefinitionNode, type FieldDefinitionNode, type InputValueDefinitionNode, type StringValueNode } from 'graphql';
// '.js': this module is also checked (and unit-tested) under the server's NodeNext resolution.
import type { ActionEntry, CustomTypes, FieldDef } from '../../api.js';

export interface ParsedAction {
  name: string;
  type: 'query' | 'mutation';
  arguments: FieldDef[];
  output_type: string;
  description?: string;
}

function parseSdl(sdl: string, what: string): readonly DefinitionNode[] {
  if (sdl.trim() === '') return [];
  try {
    return parse(sdl, { noLocation: true }).definitions;
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}`);
  }
}

const desc = (d: StringValueNode | undefined) => (d ? { description: d.value } : {});
const field = (f: InputValueDefinitionNode | FieldDefinitionNode): FieldDef => ({ name: f.name.value, type: print(f.type), ...desc(f.description) });

/** The action a definition such as `type Mutation { login(user: String!): Token }` declares. */
export function parseActionSdl(sdl: string): ParsedAction {
  const defs = parseSdl(sdl, 'Action definition');
  const roots = defs.filter((d) => (d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.OBJECT_TYPE_EXTENSION) && (d.name.value === 'Query' || d.name.value === 'Mutation'));
  if (roots.length !== 1 || defs.length !== 1) throw new Error('Action definition: expected one `type Mutation { ... }` or `type Query { ... }` and nothing else');
  const root = roots[0] as Extract<DefinitionNode, { kind: Kind.OBJECT_TYPE_DEFINITION | Kind.OBJECT_TYPE_EXTENSION }>;
  const fields = root.fields ?? [];
  if (fields.length !== 1) throw new Error(`Action definition: type ${root.name.value} must declare exactly one field, the action`);
  const f = fields[0]!;
  return { name: f.name.value, type: root.name.value === 'Query' ? 'query' : 'mutation', arguments: (f.arguments ?? []).map(field), output_type: print(f.type), ...desc(f.description) };
}

const str = (s: string) => JSON.stringify(s);
const withDesc = (d: string | undefined, indent: string, line: string) => (d ? `${indent}${str(d)}\n` : '') + indent + line;

export function actionSdl(a: ActionEntry): string {
  const args = a.definition.arguments ?? [];
  const list = args.length ? `(${args.map((x) => (x.description ? `${str(x.description)} ` : '') + `${x.name}: ${x.type}`).join(', ')})` : '';
  return `type ${a.definition.type === 'query' ? 'Query' : 'Mutation'} {\n${withDesc(a.comment, '  ', `${a.name}${list}: ${a.definition.output_type}`)}\n}\n`;
}

/** The custom types as SDL; with `only`, just those names. */
export function typesSdl(ct: CustomTypes, only?: Set<string>): string {
  const pick = <T extends { name: string }>(xs: T[] | undefined) => (xs ?? []).filter((x) => !only || only.has(x.name));
  const fields = (fs: FieldDef[]) => fs.map((f) => withDesc(f.description, '  ', `${f.name}: ${f.type}`)).join('\n');
  const out: string[] = [];
  for (const s of pick(ct.scalars)) out.push(withDesc(s.description, '', `scalar ${s.name}`));
  for (const e of pick(ct.enums)) out.push(withDesc(e.description, '', `enum ${e.name} {\n${e.values.map((v) => withDesc(v.description, '  ', v.value + (v.is_deprecated ? ' @deprecated' : ''))).join('\n')}\n}`));
  for (const i of pick(ct.input_objects)) out.push(withDesc(i.description, '', `input ${i.name} {\n${fields(i.fields)}\n}`));
  for (const o of pick(ct.objects)) out.push(withDesc(o.description, '', `type ${o.name} {\n${fields(o.fields)}\n}`));
  return out.length ? out.join('\n\n') + '\n' : '';
}

/** set_custom_types' lists from SDL. Object types keep no relationships here (see mergeTypes). */
export function parseTypesSdl(sdl: string): CustomTypes {
  const ct: Required<CustomTypes> = { scalars: [], enums: [], input_objects: [], objects: [] };
  for (const d of parseSdl(sdl, 'Types')) {
    switch (d.kind) {
      case Kind.SCALAR_TYPE_DEFINITION:
        ct.scalars.push({ name: d.name.value, ...desc(d.description) });
        break;
      case Kind.ENUM_TYPE_DEFINITION:
        ct.enums.push({
          name: d.name.value,
          ...desc(d.description),
          values: (d.values ?? []).map((v) => ({ value: v.name.value, ...desc(v.description), ...((v.directives ?? []).some((x) => x.name.value === 'deprecated') ? { is_deprecated: true } : {}) })),
        });
        break;
      case Kind.INPUT_OBJECT_TYPE_DEFINITION:
        ct.input_objects.push({ name: d.name.value, ...desc(d.description), fields: (d.fields ?? []).map(field) });
        break;
      case Kind.OBJECT_TYPE_DEFINITION:
        for (const f of d.fields ?? []) if (f.arguments?.length) throw new Error(`Types: ${d.name.value}.${f.name.value}: the fields of a custom object type take no arguments`);
        ct.objects.push({ name: d.name.value, ...desc(d.description), fields: (d.fields ?? []).map(field) });
        break;
      default:
        throw new Error(`Types: only scalar, enum, input and type definitions are custom types (found ${d.kind})`);
    }
  }
  const names = [...ct.scalars, ...ct.enums, ...ct.input_objects, ...ct.objects].map((t) => t.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`Types: ${dup} is defined twice`);
  return ct;
}

const KINDS = ['scalars', 'enums', 'input_objects', 'objects'] as const;

/** `current` with the types of `next` put in (replacing a type of the same name, whatever its
 * kind). When `replaceAll`, `next` is the whole list. An object type keeps the relationships it
 * had (the SDL cannot say them). Empty lists are left out. */
export function mergeTypes(current: CustomTypes, next: CustomTypes, replaceAll = false): CustomTypes {
  const given = new Set(KINDS.flatMap((k) => (next[k] ?? []).map((t) => t.name)));
  const out: CustomTypes = {};
  for (const k of KINDS) {
    const kept = replaceAll ? [] : (current[k] ?? []).filter((t) => !given.has(t.name));
    let list: { name: string }[] = [...kept, ...(next[k] ?? [])];
    if (k === 'objects')
      list = (list as NonNullable<CustomTypes['objects']>).map((o) => {
        const before = current.objects?.find((x) => x.name === o.name);
        return before?.relationships?.length && !o.relationships ? { ...o, relationships: before.relationships } : o;
      });
    if (list.length) (out as Record<string, unknown>)[k] = list;
  }
  return out;
}

/** The named type under list and non-null wrappers of a type text (`[Foo!]!` is Foo). */
export function baseType(t: string): string {
  return t.replace(/[[\]!\s]/g, '');
}

/** The custom types an action uses: its arguments' and output's, and theirs, transitively. */
export function typesUsed(a: { arguments?: FieldDef[]; output_type: string }, ct: CustomTypes): Set<string> {
  const seen = new Set<string>();
  const todo = [...(a.arguments ?? []).map((x) => x.type), a.output_type].map(baseType);
  while (todo.length) {
    const n = todo.pop()!;
    if (seen.has(n)) continue;
    const t = [...(ct.input_objects ?? []), ...(ct.objects ?? [])].find((x) => x.name === n);
    const known = t || [...(ct.scalars ?? []), ...(ct.enums ?? [])].some((x) => x.name === n);
    if (!known) continue;
    seen.add(n);
    if (t) todo.push(...t.fields.map((f) => baseType(f.type)));
  }
  return seen;
}
