/**
 * `__schema` and `__type` at the root, written as JSON text within a budget (Note [Introspection
 * written as text]).
 *
 * Note [Introspection written as text]
 * graphql-js's `execute` answers introspection by building the whole answer as objects, which the
 * engine then turned into text: at 10,000 tables (bench/metadata's shape) the admin's standard
 * introspection query, which the console sends when it opens, is an answer of over 512 Mi
 * characters, and its objects and their JSON.stringify took the server past V8's heap limit:
 * one request crashed it, whatever --graphql-max-response-size said, since the size was known
 * only once the text was made. So the engine walks the introspection types itself and writes
 * the text as it goes, counting its length against the request's budget (and the longest
 * string V8 makes), and stops with the limit's error as soon as it passes: the memory a request
 * takes follows its budget. The walk is graphql-js's, on the same resolvers (the introspection
 * types' own, `SchemaMetaFieldDef` and `TypeMetaFieldDef` at the root): fields collected as
 * graphql-js collects them (lib/graphql/collect.ts: merged by response key, `@skip` and `@include`,
 * fragments once, type conditions), once per selection and walk, arguments read by graphql-js's
 * `getArgumentValues`, leaves serialized by their types; introspection's values are all
 * synchronous, its types all object types, and validation has made sure the fields exist. The
 * answer is the text `JSON.stringify` of `execute`'s data would be (introspection.test.ts
 * compares them). Without the objects, at 2,000 tables the first answer after a change took
 * 0.81 s for a role and 7.2 s for the admin, against 1.27 s and 9.7 s with `execute`
 * (bench/metadata/introspection.ts; docs/benchmarks.md, "Introspection"). Answers kept: Note
 * [Introspection answers cached] in ./introspection-cache.ts.
 */
import {
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  defaultFieldResolver,
  getArgumentValues,
  isLeafType,
  isListType,
  isNonNullType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { collectFields } from '../../lib/graphql/collect.js';

/** Thrown when the text passes its budget; the caller answers its limit's error. */
export class IntrospectionTooLarge extends Error {}

/** The longest text to make: V8's strings end at 2^29 - 24 characters (on 64-bit), and the answer
 * around it needs a little more. */
const LONGEST = 2 ** 29 - 2 ** 20;

interface Walk {
  readonly schema: GraphQLSchema;
  readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly operation: OperationDefinitionNode;
  /** Characters the texts may still take. */
  left: number;
  /** The text being written: pieces, joined into a chunk every CHUNK of them (a piece costs
   * its string and a slot, several times its characters; a chunk about its characters), the
   * chunks joined at the end into one flat string (not a rope of millions of concatenations,
   * which every later use would walk again). */
  out: string[];
  chunks: string[];
  /** The fields each selection selects of an object, collected once per walk (graphql-js
   * memoizes collectSubfields the same way): its every object of the type shares them. */
  readonly selected: Map<readonly FieldNode[], Selected>;
}

/** The fields selected of an object: each response key's `"key":` text, its nodes, and its
 * field (undefined: `__typename`). */
interface Selected {
  readonly type: GraphQLObjectType;
  readonly fields: readonly { readonly prefix: string; readonly nodes: readonly FieldNode[]; readonly def: GraphQLField<unknown, unknown> | undefined; args?: Record<string, unknown> }[];
}

/** An introspection root field (`__schema`, `__type`): its response key and its merged nodes. */
export interface IntrospectionRoot {
  readonly responseKey: string;
  readonly nodes: readonly FieldNode[];
}

/** Each root field's JSON text by response key, for the root fields `entries` (each its merged
 * field nodes, as prepare.ts collected them), within `budget` characters together; throws
 * IntrospectionTooLarge past it. */
export function writeIntrospection(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
  variables: Readonly<Record<string, unknown>>,
  entries: readonly IntrospectionRoot[],
  budget: number,
): Record<string, string> {
  const w: Walk = { schema, fragments, variables, operation, left: Math.min(budget, LONGEST), out: [], chunks: [], selected: new Map() };
  const root = schema.getRootType(operation.operation)!;
  const texts: Record<string, string> = {};
  for (const { responseKey, nodes } of entries) {
    const def = nodes[0]!.name.value === '__schema' ? SchemaMetaFieldDef : TypeMetaFieldDef;
    w.out = [];
    w.chunks = [];
    writeField(w, root, undefined, def, nodes);
    w.chunks.push(w.out.join(''));
    texts[responseKey] = w.chunks.join('');
  }
  return texts;
}

const CHUNK = 8192;

function put(w: Walk, text: string): void {
  w.left -= text.length;
  if (w.left < 0) throw new IntrospectionTooLarge();
  if (w.out.push(text) === CHUNK) {
    w.chunks.push(w.out.join(''));
    w.out.length = 0;
  }
}

/** Field `def` of `source` (of type `parent`), selected by `nodes`. */
function writeField(w: Walk, parent: GraphQLObjectType, source: unknown, def: GraphQLField<unknown, unknown>, nodes: readonly FieldNode[], args = argsOf(w, def, nodes[0]!)): void {
  const info = { fieldName: def.name, fieldNodes: nodes, returnType: def.type, parentType: parent, schema: w.schema, fragments: w.fragments, rootValue: undefined, operation: w.operation, variableValues: w.variables } as unknown as GraphQLResolveInfo;
  writeValue(w, def.type, (def.resolve ?? defaultFieldResolver)(source, args, undefined, info), nodes);
}

const NO_ARGS: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** A field's arguments: the same for every object the field is read of in a walk (its node's
 * literals and the walk's variables), so read once per selection (`Selected`). */
function argsOf(w: Walk, def: GraphQLField<unknown, unknown>, node: FieldNode): Record<string, unknown> {
  return def.args.length === 0 && !node.arguments?.length ? NO_ARGS : getArgumentValues(def, node, w.variables);
}

function writeValue(w: Walk, type: GraphQLOutputType, value: unknown, nodes: readonly FieldNode[]): void {
  if (isNonNullType(type)) return writeValue(w, type.ofType, value, nodes);
  if (value === null || value === undefined) return put(w, 'null');
  if (isListType(type)) {
    put(w, '[');
    let first = true;
    for (const item of value as Iterable<unknown>) {
      if (!first) put(w, ',');
      first = false;
      writeValue(w, type.ofType, item, nodes);
    }
    return put(w, ']');
  }
  if (isLeafType(type)) return put(w, JSON.stringify(type.serialize(value)) ?? 'null');
  // Introspection's object types only (no abstract type among them).
  const { type: objectType, fields } = selectedOf(w, type as GraphQLObjectType, nodes);
  let sep = '{';
  for (const f of fields) {
    put(w, sep + f.prefix);
    sep = ',';
    if (f.def) writeField(w, objectType, value, f.def, f.nodes, (f.args ??= argsOf(w, f.def, f.nodes[0]!)));
    else put(w, JSON.stringify(objectType.name));
  }
  put(w, sep === '{' ? '{}' : '}');
}

function selectedOf(w: Walk, type: GraphQLObjectType, nodes: readonly FieldNode[]): Selected {
  const known = w.selected.get(nodes);
  if (known && known.type === type) return known;
  const byKey = new Map<string, FieldNode[]>();
  const visited = new Set<string>();
  for (const n of nodes) if (n.selectionSet) collectFields(w.schema, w.fragments, w.variables, type, n.selectionSet, byKey, visited);
  const all = type.getFields();
  const fields = [...byKey].map(([key, list]) => ({ prefix: `${JSON.stringify(key)}:`, nodes: list, def: list[0]!.name.value === '__typename' ? undefined : all[list[0]!.name.value]! }));
  const made = { type, fields };
  w.selected.set(nodes, made);
  return made;
}
