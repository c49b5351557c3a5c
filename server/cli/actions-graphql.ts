/**
 * `actions.graphql` and `actions.yaml`, as the Hasura CLI splits actions and custom types: the
 * GraphQL part (an action's arguments, output type and whether it is a query or a mutation; the
 * custom types' fields and descriptions) is SDL in actions.graphql, the rest (handler, headers,
 * permissions, relationships of object types) is YAML in actions.yaml, joined by name.
 */
import { Kind, parse, print, type TypeNode, type ConstDirectiveNode, GraphQLError } from 'graphql';

type Obj = Record<string, any>;
export interface ActionsParts {
  graphql: string;
  yaml: { actions: Obj[]; custom_types: { enums: Obj[]; input_objects: Obj[]; objects: Obj[]; scalars: Obj[] } };
}

const desc = (d: unknown, indent: string) => (typeof d === 'string' && d !== '' ? `${indent}"""${d.replace(/"""/g, '\\"""')}"""\n` : '');

/** Splits `actions` and `custom_types` of a metadata document into the two files. */
export function splitActions(actions: Obj[] = [], customTypes: Obj = {}): ActionsParts {
  const blocks: string[] = [];
  const yamlActions: Obj[] = [];
  for (const a of actions) {
    const { arguments: args = [], output_type, type, ...rest } = (a.definition ?? {}) as Obj;
    const root = type === 'query' ? 'Query' : 'Mutation';
    const argText = (args as Obj[]).length
      ? `(\n${(args as Obj[]).map((x) => `${desc(x.description, '    ')}    ${x.name}: ${x.type}`).join('\n')}\n  )`
      : '';
    blocks.push(`type ${root} {\n  ${a.name}${argText}: ${output_type}\n}\n`);
    const { definition: _d, ...other } = a;
    yamlActions.push({ name: a.name, definition: rest, ...Object.fromEntries(Object.entries(other).filter(([k]) => k !== 'name')) });
  }
  const ct = customTypes ?? {};
  const fieldsOf = (fields: Obj[] = []) =>
    fields.map((f) => `${desc(f.description, '  ')}  ${f.name}${argsOf(f.arguments)}: ${f.type}`).join('\n');
  const argsOf = (args: unknown) =>
    args && typeof args === 'object' && Object.keys(args).length
      ? `(${Object.entries(args as Obj).map(([n, t]) => `${n}: ${typeof t === 'string' ? t : (t as Obj).type}`).join(', ')})`
      : '';
  for (const s of (ct.scalars ?? []) as Obj[]) blocks.push(`${desc(s.description, '')}scalar ${s.name}\n`);
  for (const e of (ct.enums ?? []) as Obj[]) {
    const values = ((e.values ?? []) as Obj[])
      .map((v) => `${desc(v.description, '  ')}  ${v.value}${v.is_deprecated ? ' @deprecated' : ''}`)
      .join('\n');
    blocks.push(`${desc(e.description, '')}enum ${e.name} {\n${values}\n}\n`);
  }
  for (const i of (ct.input_objects ?? []) as Obj[]) blocks.push(`${desc(i.description, '')}input ${i.name} {\n${fieldsOf(i.fields)}\n}\n`);
  for (const o of (ct.objects ?? []) as Obj[]) blocks.push(`${desc(o.description, '')}type ${o.name} {\n${fieldsOf(o.fields)}\n}\n`);
  const namesOnly = (list: Obj[] = []) =>
    list.map(({ fields: _f, description: _d, values: _v, ...rest }) => rest);
  return {
    graphql: blocks.join('\n'),
    yaml: {
      actions: yamlActions,
      custom_types: {
        enums: namesOnly(ct.enums),
        input_objects: namesOnly(ct.input_objects),
        objects: namesOnly(ct.objects),
        scalars: namesOnly(ct.scalars),
      },
    },
  };
}

const typeText = (t: TypeNode): string => print(t);
const isDeprecated = (ds: readonly ConstDirectiveNode[] | undefined) => (ds ?? []).some((d) => d.name.value === 'deprecated');

/**
 * Joins actions.graphql and actions.yaml back into `actions` and `custom_types`. Throws an error
 * whose `line` is the line of actions.graphql at fault (a GraphQL syntax error, an action in
 * actions.yaml with no definition there).
 */
export function joinActions(sdl: string, yaml: Obj | null): { actions: Obj[]; custom_types: Obj } {
  const y = (yaml ?? {}) as Obj;
  const defs = new Map<string, { type: 'query' | 'mutation'; arguments: Obj[]; output_type: string; description?: string }>();
  const types = { scalars: new Map<string, Obj>(), enums: new Map<string, Obj>(), input_objects: new Map<string, Obj>(), objects: new Map<string, Obj>() };
  if (sdl.trim() !== '') {
    let doc;
    try {
      doc = parse(sdl, { noLocation: false });
    } catch (e) {
      const err = new Error((e as GraphQLError).message) as Error & { line?: number };
      err.line = (e as GraphQLError).locations?.[0]?.line;
      throw err;
    }
    const field = (f: any): Obj => ({
      name: f.name.value,
      type: typeText(f.type),
      ...(f.description ? { description: f.description.value } : {}),
    });
    for (const d of doc.definitions) {
      if ((d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.OBJECT_TYPE_EXTENSION) && (d.name.value === 'Query' || d.name.value === 'Mutation')) {
        for (const f of d.fields ?? []) {
          defs.set(f.name.value, {
            type: d.name.value === 'Query' ? 'query' : 'mutation',
            arguments: (f.arguments ?? []).map(field),
            output_type: typeText(f.type),
            ...(f.description ? { description: f.description.value } : {}),
          });
        }
      } else if (d.kind === Kind.OBJECT_TYPE_DEFINITION) {
        types.objects.set(d.name.value, { name: d.name.value, ...(d.description ? { description: d.description.value } : {}), fields: (d.fields ?? []).map(field) });
      } else if (d.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION) {
        types.input_objects.set(d.name.value, { name: d.name.value, ...(d.description ? { description: d.description.value } : {}), fields: (d.fields ?? []).map(field) });
      } else if (d.kind === Kind.SCALAR_TYPE_DEFINITION) {
        types.scalars.set(d.name.value, { name: d.name.value, ...(d.description ? { description: d.description.value } : {}) });
      } else if (d.kind === Kind.ENUM_TYPE_DEFINITION) {
        types.enums.set(d.name.value, {
          name: d.name.value,
          ...(d.description ? { description: d.description.value } : {}),
          values: (d.values ?? []).map((v) => ({
            value: v.name.value,
            ...(v.description ? { description: v.description.value } : {}),
            ...(isDeprecated(v.directives) ? { is_deprecated: true } : {}),
          })),
        });
      }
    }
  }
  const actions = ((y.actions ?? []) as Obj[]).map((a) => {
    const def = defs.get(a.name);
    if (!def) throw new Error(`action "${a.name}" of actions.yaml has no definition in actions.graphql (a field of type Query or Mutation)`);
    const { description, ...gql } = def;
    const { name, definition, ...rest } = a;
    const out: Obj = { name, definition: { ...(definition ?? {}), ...gql }, ...rest };
    if (description !== undefined && out.comment === undefined) out.comment = description;
    return out;
  });
  // Types are kept in the order of actions.yaml; a type only in actions.graphql comes after.
  const ct: Obj = {};
  const yt = (y.custom_types ?? {}) as Obj;
  for (const kind of ['enums', 'input_objects', 'objects', 'scalars'] as const) {
    const fromSdl = types[kind];
    const listed = ((yt[kind] ?? []) as Obj[]).map((t) => ({ ...(fromSdl.get(t.name) ?? { name: t.name }), ...t }));
    const names = new Set(listed.map((t) => t.name));
    ct[kind] = [...listed, ...[...fromSdl.values()].filter((t) => !names.has(t.name))].map((t) =>
      // the SDL's description and fields first, as the engine exports them
      Object.fromEntries(Object.entries(t).sort(([a], [b]) => order(a) - order(b))),
    );
  }
  return { actions, custom_types: ct };
}

const ORDER = ['name', 'description', 'fields', 'values', 'relationships'];
const order = (k: string) => (ORDER.includes(k) ? ORDER.indexOf(k) : ORDER.length);
