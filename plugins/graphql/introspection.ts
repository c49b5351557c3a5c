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
  GraphQLBoolean,
  GraphQLString,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  defaultFieldResolver,
  getArgumentValues,
  isEnumType,
  isLeafType,
  isListType,
  isNonNullType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLLeafType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { AnswerText } from '../../core/plugin.js';
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
   * chunks made at the end into one flat string (not a rope of millions of concatenations,
   * which every later use would walk again), or bytes (Note [Long introspection answers as
   * bytes]). */
  out: string[];
  chunks: string[];
  /** The fields each selection selects of an object, collected once per walk (graphql-js
   * memoizes collectSubfields the same way): its every object of the type shares them. */
  readonly selected: Map<readonly FieldNode[], Selected>;
  /** The walk's stack (Note [Introspection written in steps]): `depth` frames in use. */
  readonly frames: Frame[];
  depth: number;
}

/*
 * Note [Introspection fields prepared once]
 * A walk writes each selected field of the introspection types once per object it is read of:
 * at 2,000 tables (bench/metadata's) the admin's standard query writes about 1.4 million
 * objects. What does not depend on the object is made once per selection (SelectedField): the
 * `,"key":` text, the resolver, its arguments and resolve info, how the field's type is written
 * (Shape: its wrappers unwrapped, asked once instead of graphql-js's type predicates for every
 * value), the selection of an object-typed field's objects, and each enum value's text.
 */

/** The fields selected of an object: what each response key writes (`__typename`: `def`
 * undefined, the type's name). */
interface Selected {
  readonly type: GraphQLObjectType;
  readonly typeName: string;
  readonly fields: readonly SelectedField[];
}

/** One response key of a selection (Note [Introspection fields prepared once]). */
interface SelectedField {
  /** `{"key":` for the first field, `,"key":` for the others. */
  readonly lead: string;
  readonly nodes: readonly FieldNode[];
  readonly def: GraphQLField<unknown, unknown> | undefined;
  readonly resolve: GraphQLFieldResolver<unknown, unknown>;
  readonly shape: Shape | undefined;
  readonly args: Record<string, unknown> | undefined;
  readonly info: GraphQLResolveInfo | undefined;
  /** The selection of the field's objects (introspection's object-typed fields have one type),
   * made when first written. */
  objects: Selected | undefined;
}

/** How a type's values are written, its non-null wrappers dropped (introspection's values are
 * never null where they are non-null). */
interface Shape {
  readonly list: Shape | undefined;
  readonly object: GraphQLObjectType | undefined;
  readonly leaf: GraphQLLeafType | undefined;
  /** An enum's text of each value written so far. */
  readonly texts: Map<unknown, string> | undefined;
}

const shapes = new WeakMap<GraphQLOutputType, Shape>();

function shapeOf(type: GraphQLOutputType): Shape {
  let shape = shapes.get(type);
  if (!shape) {
    const t = isNonNullType(type) ? type.ofType : type;
    if (isListType(t)) shape = { list: shapeOf(t.ofType), object: undefined, leaf: undefined, texts: undefined };
    else if (isLeafType(t)) shape = { list: undefined, object: undefined, leaf: t, texts: isEnumType(t) ? new Map() : undefined };
    // Introspection's object types only (no abstract type among them).
    else shape = { list: undefined, object: t as GraphQLObjectType, leaf: undefined, texts: undefined };
    shapes.set(type, shape);
  }
  return shape;
}

/** An introspection root field's answer: its JSON text (bytes when long, Note [Long
 * introspection answers as bytes]) and that text's length in characters. */
export interface IntrospectionText {
  readonly text: AnswerText;
  readonly chars: number;
}

/** An introspection root field (`__schema`, `__type`): its response key and its merged nodes. */
export interface IntrospectionRoot {
  readonly responseKey: string;
  readonly nodes: readonly FieldNode[];
}

/** Each root field's JSON text by response key, for the root fields `entries` (each its merged
 * field nodes, as prepare.ts collected them), within `budget` characters together; throws
 * IntrospectionTooLarge past it. Written in steps of about `stepMs`, `turn()` awaited between
 * them (the engine's: a turn of the event loop). */
export async function writeIntrospection(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
  variables: Readonly<Record<string, unknown>>,
  entries: readonly IntrospectionRoot[],
  budget: number,
  turn: () => Promise<void>,
  stepMs = STEP_MS,
): Promise<Record<string, IntrospectionText>> {
  const w: Walk = { schema, fragments, variables, operation, left: Math.min(budget, LONGEST), out: [], chunks: [], selected: new Map(), frames: [], depth: 0 };
  const root = schema.getRootType(operation.operation)!;
  const texts: Record<string, IntrospectionText> = {};
  for (const { responseKey, nodes } of entries) {
    const def = nodes[0]!.name.value === '__schema' ? SchemaMetaFieldDef : TypeMetaFieldDef;
    w.out = [];
    w.chunks = [];
    const left = w.left;
    const f = selectedField(w, root, def, nodes, '');
    begin(w, f, f.shape!, f.resolve(undefined, f.args, undefined, f.info!));
    while (!step(w, performance.now() + stepMs)) await turn();
    w.chunks.push(w.out.join(''));
    const chars = left - w.left;
    texts[responseKey] = { text: chars > BYTES_ABOVE ? await utf8(w.chunks, turn, stepMs) : w.chunks.join(''), chars };
  }
  return texts;
}

/*
 * Note [Introspection written in steps]
 * The admin's answer at 2,000 tables (bench/metadata's) took its walk about 2 s, the server
 * answering nobody meanwhile. So the walk keeps its own stack (Frame: an object's fields or a
 * list's items still to write, one reused frame per depth) instead of recursing, and writes in
 * steps of about STEP_MS, other requests getting a turn between them; a short answer is one
 * step. The answer is the same text.
 */
const STEP_MS = 10;

/** One level of the walk: an object (`selected`, `value`, the next field `at`) or a list
 * (`items`, the next `at`, each written with `field` and `shape`). One shape for both kinds
 * keeps the walk's reads monomorphic. */
interface Frame {
  object: boolean;
  selected: Selected | undefined;
  value: unknown;
  items: readonly unknown[] | undefined;
  field: SelectedField | undefined;
  shape: Shape | undefined;
  at: number;
}

/** The frame of the next depth, reused. */
function push(w: Walk): Frame {
  let frame = w.frames[w.depth];
  if (!frame) w.frames.push((frame = { object: false, selected: undefined, value: undefined, items: undefined, field: undefined, shape: undefined, at: 0 }));
  w.depth++;
  frame.at = 0;
  return frame;
}

/** Starts a value: a leaf or null is written at once, a list or an object with fields gets a
 * frame that `step` writes (true). */
function begin(w: Walk, f: SelectedField, shape: Shape, value: unknown): boolean {
  if (value === null || value === undefined) {
    put(w, 'null');
    return false;
  }
  if (shape.list) {
    const frame = push(w);
    frame.object = false;
    frame.items = Array.isArray(value) ? value : Array.from(value as Iterable<unknown>);
    frame.field = f;
    frame.shape = shape.list;
    frame.value = undefined;
    put(w, '[');
    return true;
  }
  if (shape.leaf) {
    put(w, leafText(shape, shape.leaf, value));
    return false;
  }
  const selected = (f.objects ??= selectedOf(w, shape.object!, f.nodes));
  if (selected.fields.length === 0) {
    put(w, '{}');
    return false;
  }
  const frame = push(w);
  frame.object = true;
  frame.selected = selected;
  frame.value = value;
  frame.items = undefined;
  return true;
}

/** Writes until the walk's stack is empty (true) or `until` (performance.now()) has passed. A
 * frame writes its fields or items until one needs a frame of its own. */
function step(w: Walk, until: number): boolean {
  for (let n = 1; w.depth > 0; n++) {
    if ((n & 255) === 0 && performance.now() > until) return false;
    const frame = w.frames[w.depth - 1]!;
    let at = frame.at;
    if (frame.object) {
      const selected = frame.selected!;
      const fields = selected.fields;
      const value = frame.value;
      while (at < fields.length) {
        const f = fields[at++]!;
        put(w, f.lead);
        if (!f.def) put(w, selected.typeName);
        else if (begin(w, f, f.shape!, f.resolve(value, f.args, undefined, f.info!))) break;
      }
      frame.at = at;
      if (frame !== w.frames[w.depth - 1] || at < fields.length) continue;
      frame.value = undefined;
      w.depth--;
      put(w, '}');
    } else {
      const items = frame.items!;
      const f = frame.field!;
      const shape = frame.shape!;
      while (at < items.length) {
        if (at > 0) put(w, ',');
        if (begin(w, f, shape, items[at++])) break;
      }
      frame.at = at;
      if (frame !== w.frames[w.depth - 1] || at < items.length) continue;
      frame.items = undefined;
      w.depth--;
      put(w, ']');
    }
  }
  return true;
}

/*
 * Note [Long introspection answers as bytes]
 * A long answer is made UTF-8 bytes once, from its chunks, and kept and sent as those (Note
 * [Answers as bytes] in core/schema/contract.ts). As one string it was copied three times
 * more before it reached the socket: its chunks joined into one string, that string flattened
 * again once spliced into the response's text, and encoded, a slice a turn, for every request
 * that the cache answered too; at 2,000 tables the admin's answer is 119 MiB. Kept as bytes,
 * an answer the cache gives again is written to the socket as it is, and lives outside V8's
 * heap. The length counted against the size limit stays its characters.
 */
export const BYTES_ABOVE = 1024 * 1024;

/** The chunks' UTF-8 bytes, made in steps too (at 2,000 tables the admin's 119 MiB took about
 * 0.5 s at once: a fresh buffer's pages). */
async function utf8(chunks: readonly string[], turn: () => Promise<void>, stepMs: number): Promise<Uint8Array> {
  let length = 0;
  for (const c of chunks) length += Buffer.byteLength(c);
  const bytes = Buffer.allocUnsafeSlow(length);
  let at = 0;
  let until = performance.now() + stepMs;
  for (let i = 0; i < chunks.length; i++) {
    at += bytes.write(chunks[i]!, at);
    if ((i & 15) === 15 && performance.now() > until) {
      await turn();
      until = performance.now() + stepMs;
    }
  }
  return bytes;
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

const NO_ARGS: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** Field `def` of objects of `parent`, selected by `nodes`, written after `lead`. */
function selectedField(w: Walk, parent: GraphQLObjectType, def: GraphQLField<unknown, unknown> | undefined, nodes: readonly FieldNode[], lead: string): SelectedField {
  if (!def) return { lead, nodes, def, resolve: defaultFieldResolver, shape: undefined, args: undefined, info: undefined, objects: undefined };
  // The field's arguments: the same for every object it is read of in a walk (its node's
  // literals and the walk's variables).
  const args = def.args.length === 0 && !nodes[0]!.arguments?.length ? NO_ARGS : getArgumentValues(def, nodes[0]!, w.variables);
  const info = { fieldName: def.name, fieldNodes: nodes, returnType: def.type, parentType: parent, schema: w.schema, fragments: w.fragments, rootValue: undefined, operation: w.operation, variableValues: w.variables } as unknown as GraphQLResolveInfo;
  return { lead, nodes, def, resolve: def.resolve ?? defaultFieldResolver, shape: shapeOf(def.type), args, info, objects: undefined };
}

function leafText(shape: Shape, leaf: GraphQLLeafType, value: unknown): string {
  if (leaf === GraphQLString && typeof value === 'string') return JSON.stringify(value);
  if (leaf === GraphQLBoolean && typeof value === 'boolean') return value ? 'true' : 'false';
  const texts = shape.texts;
  let text = texts?.get(value);
  if (text === undefined) {
    text = JSON.stringify(leaf.serialize(value)) ?? 'null';
    texts?.set(value, text);
  }
  return text;
}

function selectedOf(w: Walk, type: GraphQLObjectType, nodes: readonly FieldNode[]): Selected {
  const known = w.selected.get(nodes);
  if (known && known.type === type) return known;
  const byKey = new Map<string, FieldNode[]>();
  const visited = new Set<string>();
  for (const n of nodes) if (n.selectionSet) collectFields(w.schema, w.fragments, w.variables, type, n.selectionSet, byKey, visited);
  const all = type.getFields();
  const fields = [...byKey].map(([key, list], i) =>
    selectedField(w, type, list[0]!.name.value === '__typename' ? undefined : all[list[0]!.name.value]!, list, `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`),
  );
  const made = { type, typeName: JSON.stringify(type.name), fields };
  w.selected.set(nodes, made);
  return made;
}
