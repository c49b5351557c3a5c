/**
 * Remote relationships from tables to remote schemas (SPEC "Remote relationship"; Hasura v2's
 * `create_remote_relationship` and `pg_create_remote_relationship` with `to_remote_schema`): the
 * metadata operations, and the joined field (Note [Joined fields] in
 * plugins/database/schema/joins.ts) that fetches the remote's values for the rows, one request
 * per relationship and level of the answer (Note [Batched remote joins]).
 */
import {
  getNamedType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLInputObjectType,
  type GraphQLFieldConfigArgumentMap,
  isListType,
  isNonNullType,
  isEnumType,
  isInputObjectType,
  isObjectType,
  Kind,
  valueFromAST,
  type GraphQLInputType,
  print,
  visit,
  type ArgumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type ObjectFieldNode,
  type SelectionNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import * as v from '../../core/valibot.js';
import { ExecErrors, SvcError } from '../../core/errors.js';
import { jsonString, type BuildResult, type Metadata, type OperationDef, type PlanInput, type RootFieldDef, type RunContext, type TypeRegistry } from '../../core/plugin.js';
import { nameText } from '../../core/validation.js';
import { findSource, findTable, qtKey, qualifiedTableSchema, sourcesOf, updateTable, updateTableIfPresent, type CommandGroup, type DepTarget, type Dependent, type JoinedField, type JoinedFieldsProvider, type QualifiedTable, type SchemaRename, type TableMeta } from '../database/index.js';
import { ExposedTypes, ORIGINAL, originalName, type Preset } from './customize.js';
import { exchange, hasJoins, makeConverter, mapTypenames, renameType, spliceShapeJoins, variablesFor, type Shape } from './plan.js';
import type { ResolvedRemote } from './remote.js';
import type { RolePermission } from './permissions.js';

/** A relationship as the metadata stores it (either of Hasura's two forms). */
export interface RemoteRelationshipMeta {
  name: string;
  definition: Record<string, unknown>;
}

/** The parts of a relationship to a remote schema, whichever form it is written in. */
export interface RemoteJoin {
  name: string;
  lhs: string[];
  remoteSchema: string;
  remoteField: Record<string, unknown>;
}

export function readJoin(r: RemoteRelationshipMeta): RemoteJoin | undefined {
  const d = r.definition ?? {};
  const to = (d.to_remote_schema as Record<string, unknown> | undefined) ?? d;
  const lhs = (to.lhs_fields ?? to.svc_fields ?? to.hasura_fields) as string[] | undefined;
  const remoteSchema = to.remote_schema as string | undefined;
  const remoteField = to.remote_field as Record<string, unknown> | undefined;
  if (!Array.isArray(lhs) || typeof remoteSchema !== 'string' || !remoteField || typeof remoteField !== 'object') return undefined;
  return { name: r.name, lhs, remoteSchema, remoteField };
}

/** One level of a remote field path: the field, its fixed arguments (with `$column` values). */
interface Level {
  field: GraphQLField<unknown, unknown>;
  parent: GraphQLObjectType;
  args: Record<string, unknown>;
}

/** Walks `remote_field` through the remote's schema: the levels, or why it does not fit. */
export function walkPath(schema: GraphQLSchema, j: RemoteJoin): Level[] | string {
  const levels: Level[] = [];
  let parent: GraphQLObjectType | null | undefined = schema.getQueryType();
  let tree: Record<string, unknown> | undefined = j.remoteField;
  while (tree) {
    const keys = Object.keys(tree);
    if (keys.length !== 1) return 'expected exactly one field at every level of remote_field';
    if (!parent) return 'a nested remote field must be on an object type';
    const name = keys[0]!;
    const field: GraphQLField<unknown, unknown> | undefined = parent.getFields()[name];
    if (!field) return `field with name '${name}' not found in type: '${parent.name}'`;
    const node = (tree[name] ?? {}) as { arguments?: Record<string, unknown>; field?: Record<string, unknown> };
    const args = node.arguments ?? {};
    for (const [a, x] of Object.entries(args)) {
      const def = field.args.find((d) => d.name === a);
      if (!def) return `argument '${a}' not found in field '${name}' of type '${parent.name}'`;
      const bad = checkValue(x, def.type, a);
      if (bad) return bad;
    }
    const bad = columnRefs(args).find((c) => !j.lhs.includes(c));
    if (bad) return `the join column "${bad}" is not among the relationship's fields (${j.lhs.join(', ')})`;
    levels.push({ field, parent, args });
    tree = node.field;
    const next = getNamedType(field.type);
    parent = isObjectType(next) ? next : undefined;
  }
  if (levels.length === 0) return 'remote_field is empty';
  return levels;
}

/** Why a fixed argument's value does not fit its type (`$column` fits any leaf), or undefined. */
function checkValue(x: unknown, type: GraphQLInputType, at: string): string | undefined {
  const t = isNonNullType(type) ? type.ofType : type;
  if (typeof x === 'string' && x.startsWith('$')) return isInputObjectType(t) ? `expected an input object for ${at}, not a column` : undefined;
  if (isListType(t)) {
    const items = Array.isArray(x) ? x : [x];
    for (const i of items) {
      const bad = checkValue(i, t.ofType as GraphQLInputType, at);
      if (bad) return bad;
    }
    return undefined;
  }
  if (Array.isArray(x)) return `expected a single value of type ${String(t)} for ${at}, not a list`;
  if (isInputObjectType(t)) {
    if (x === null) return undefined;
    if (typeof x !== 'object') return `expected an input object of type ${t.name} for ${at}`;
    const fields = t.getFields();
    for (const [k, i] of Object.entries(x as Record<string, unknown>)) {
      const f = fields[k];
      if (!f) return `field '${k}' not found in input object type '${t.name}' (at ${at})`;
      const bad = checkValue(i, f.type, `${at}.${k}`);
      if (bad) return bad;
    }
    return undefined;
  }
  if (x !== null && valueFromAST(jsonLiteral(x), t as GraphQLInputType) === undefined && !(isEnumType(t) && typeof x === 'string' && t.getValue(x))) {
    return `the value ${JSON.stringify(x)} is not of type ${String(t)} (at ${at})`;
  }
  return undefined;
}

function columnRefs(x: unknown, out: string[] = []): string[] {
  if (typeof x === 'string' && x.startsWith('$')) out.push(x.slice(1));
  else if (Array.isArray(x)) for (const i of x) columnRefs(i, out);
  else if (x && typeof x === 'object') for (const i of Object.values(x)) columnRefs(i, out);
  return out;
}

/** A JSON value (with `$column` replaced from the row) as a GraphQL literal. */
function literal(x: unknown, row: Readonly<Record<string, unknown>>): ValueNode {
  if (typeof x === 'string' && x.startsWith('$')) return jsonLiteral(row[x.slice(1)]);
  if (Array.isArray(x)) return { kind: Kind.LIST, values: x.map((i) => literal(i, row)) };
  if (x && typeof x === 'object') return { kind: Kind.OBJECT, fields: Object.entries(x).map(([k, i]): ObjectFieldNode => ({ kind: Kind.OBJECT_FIELD, name: { kind: Kind.NAME, value: k }, value: literal(i, row) })) };
  return jsonLiteral(x);
}

function jsonLiteral(x: unknown): ValueNode {
  if (x === null || x === undefined) return { kind: Kind.NULL };
  if (typeof x === 'boolean') return { kind: Kind.BOOLEAN, value: x };
  if (typeof x === 'number') return Number.isInteger(x) ? { kind: Kind.INT, value: String(x) } : { kind: Kind.FLOAT, value: String(x) };
  if (typeof x === 'string') return { kind: Kind.STRING, value: x };
  if (Array.isArray(x)) return { kind: Kind.LIST, values: x.map(jsonLiteral) };
  return { kind: Kind.OBJECT, fields: Object.entries(x as Record<string, unknown>).map(([k, i]): ObjectFieldNode => ({ kind: Kind.OBJECT_FIELD, name: { kind: Kind.NAME, value: k }, value: jsonLiteral(i) })) };
}

/** The client's object value with the join's fields over it (rule 7: the join wins). */
function mergeObjects(mine: ValueNode, join: ValueNode): ValueNode {
  if (mine.kind !== Kind.OBJECT || join.kind !== Kind.OBJECT) return join;
  const fields = new Map(mine.fields.map((f) => [f.name.value, f]));
  for (const f of join.fields) {
    const m = fields.get(f.name.value);
    fields.set(f.name.value, m ? { ...f, value: mergeObjects(m.value, f.value) } : f);
  }
  return { ...join, fields: [...fields.values()] };
}

/*
 * Note [Arguments the join fixes in part]
 * An input object argument of which the join fixes some fields (`where: {id: {eq: "$id"}}`) is
 * offered to the client under a type of the relationship's own, named as Hasura names it:
 * `<input type>_remote_rel_<owner type><relationship>` (`MessageWhereInpObj_remote_rel_
 * custom_authorsuserInfo`), with the input type's fields. It stands for the remote's type (its
 * remote name mark), so the request is written as before.
 */
function partly(t: GraphQLInputType, suffix: string, types: TypeRegistry): GraphQLInputType {
  if (isNonNullType(t)) return new GraphQLNonNull(partly(t.ofType as GraphQLInputType, suffix, types) as never);
  if (isListType(t)) return new GraphQLList(partly(t.ofType as GraphQLInputType, suffix, types));
  if (!isInputObjectType(t)) return t;
  const name = `${t.name}${suffix}`;
  const known = types.get(name);
  if (known && isInputObjectType(known)) return known;
  const copy = new GraphQLInputObjectType({
    name,
    description: t.description,
    extensions: { [ORIGINAL]: originalName(t) },
    fields: () => Object.fromEntries(Object.values(t.getFields()).map((f) => [f.name, { type: f.type, description: f.description, defaultValue: f.defaultValue, deprecationReason: f.deprecationReason, extensions: f.extensions }])),
  });
  types.define(copy);
  return copy;
}

/*
 * Note [Batched remote joins]
 * A remote relationship's values for one level of an answer are fetched in one request: the
 * distinct join keys of the rows become aliased copies of the remote field (`r0: message(id: 1)
 * {...} r1: message(id: 2) {...}`), as Hasura batches them, and each row takes the value of its
 * key's alias. A row whose join key has a null gets null without asking. The selection under the
 * joined field is rewritten into the remote's names once, when the root field is planned; a
 * request only writes the aliases' arguments. A request's joins are bounded by the rows the
 * database answered (the engine's response limit bounds those) and the remote's answer by the
 * response limit too.
 */

export interface RelationshipContext {
  remote: ResolvedRemote;
  /** The role's view of the remote: its permission, or undefined for the whole of it. */
  permission: RolePermission | undefined;
  maxBytes: number;
  prioritizeData: boolean;
  /** The remote's types' relationships for the role (Note [Remote schema relationships]). */
  joins?: (typeName: string) => Readonly<Record<string, JoinedField>> | undefined;
}

/** The joined field of one relationship for one role, or undefined where the role may not use it. */
/** `owner`: the GraphQL name of the type that has the relationship (a table's, a remote type's),
 * for the names of its arguments' types (Note [Arguments the join fixes in part]). */
export function joinedField(j: RemoteJoin, rc: RelationshipContext, types: TypeRegistry, owner?: string): JoinedField | undefined {
  const source = rc.permission?.schema ?? rc.remote.schema;
  const presets: ReadonlyMap<string, ReadonlyMap<string, Preset>> = rc.permission?.presets ?? new Map();
  const levels = walkPath(source, j);
  // Rules 6-8 of SPEC "Remote schema permission": a field the role cannot reach is not there.
  if (typeof levels === 'string') return undefined;
  const cz = rc.remote.customizer;
  const ex = new ExposedTypes(source, cz, types, presets, rc.joins);
  const last = levels[levels.length - 1]!;
  let type = ex.wrap(last.field.type) as GraphQLOutputType;
  for (let i = levels.length - 2; i >= 0; i--) {
    const t = levels[i]!.field.type;
    if (isListType(isNonNullType(t) ? t.ofType : t)) type = new GraphQLList(type);
  }
  // An argument the join fixes whole is not the client's to give; one it fixes only in part
  // (fields of an input object) stays, and the client's value is merged under the join's.
  const fixed = new Set(Object.entries(last.args).filter(([, x]) => x === null || typeof x !== 'object' || Array.isArray(x)).map(([n]) => n));
  // By name, as Hasura lists a relationship field's arguments.
  const args = Object.fromEntries(
    Object.entries(ex.args(`${last.parent.name}.${last.field.name}`, last.field.args))
      .filter(([name]) => !fixed.has(name))
      .map(([name, a]) => [name, owner !== undefined && name in last.args ? { ...a, type: partly(a.type, `_remote_rel_${owner}${j.name}`, types) } : a] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return {
    config: { type, args, description: `Remote relationship to ${rc.remote.name}` },
    columns: j.lhs,
    plan(node, input) {
      const { convertField, sessionPresets, merges } = makeConverter(input.schema, input.fragments, input);
      const exposedParent = ex.named(last.parent);
      const holder: Shape = { typenames: [], children: new Map() };
      const key = cz.fieldName(last.parent.name, last.field.name);
      const converted = convertField({ ...node, alias: undefined, name: { kind: Kind.NAME, value: key } }, exposedParent, holder, new Set(), {
        type: ex.wrap(last.field.type) as GraphQLOutputType,
        extensions: ex.fieldExtensions(last.parent.name, last.field),
      });
      const shape = holder.children.get(key) ?? { typenames: [], children: new Map() };
      const joined = hasJoins(shape);
      // Rule 7: the join's arguments win over the client's and the presets of the same name.
      const ownArgs = (converted.arguments ?? []).filter((a) => !fixed.has(a.name.value));
      // A variable the client gives for an argument the join fixes in part is merged with the
      // join's fields when the request runs (its value written in): the remote's document does
      // not declare it, unless it is used elsewhere too.
      const joinNames = new Set(Object.keys(last.args));
      const inlined = (a: ArgumentNode) => joinNames.has(a.name.value) && a.value.kind === Kind.VARIABLE;
      const used = new Set<string>();
      visit({ ...converted, arguments: ownArgs.filter((a) => !inlined(a)) }, {
        Variable(n) {
          used.add(n.name.value);
        },
      });
      const definitions: VariableDefinitionNode[] = input.variableDefinitions.filter((d) => used.has(d.variable.name.value)).map((d) => ({ ...d, type: renameType(d.type, input.schema), directives: [] }));
      for (const p of sessionPresets) definitions.push({ kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: p.variable } }, type: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: p.type.replace(/[[\]!]/g, '') } } });
      const clientVariables = [...used].filter((n) => input.variableDefinitions.some((d) => d.variable.name.value === n));
      const argsOf = (lv: Level, row: Readonly<Record<string, unknown>>): ArgumentNode[] =>
        Object.entries(lv.args).map(([name, x]) => ({ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: name }, value: literal(x, row) }));
      const chain = (i: number, row: Readonly<Record<string, unknown>>, alias: string | undefined, vars: Readonly<Record<string, unknown>>): FieldNode => {
        const lv = levels[i]!;
        const a = alias ? { kind: Kind.NAME, value: alias } as const : undefined;
        if (i === levels.length - 1) {
          const joinArgs = argsOf(lv, row);
          const merged = joinArgs.map((ja) => {
            const mine = ownArgs.find((o) => o.name.value === ja.name.value);
            if (!mine) return ja;
            const value = mine.value.kind === Kind.VARIABLE ? jsonLiteral(vars[mine.value.name.value]) : mine.value;
            return { ...ja, value: mergeObjects(value, ja.value) };
          });
          const rest = ownArgs.filter((o) => !joinArgs.some((ja) => ja.name.value === o.name.value));
          return { ...converted, alias: a, arguments: [...merged, ...rest] };
        }
        return { kind: Kind.FIELD, alias: a, name: { kind: Kind.NAME, value: lv.field.name }, arguments: argsOf(lv, row), selectionSet: { kind: Kind.SELECTION_SET, selections: [chain(i + 1, row, undefined, vars)] } };
      };
      const down = (value: unknown, i: number): unknown => {
        if (i >= levels.length) return value;
        if (Array.isArray(value)) return value.map((x) => down(x, i));
        if (value === null || typeof value !== 'object') return value;
        return down((value as Record<string, unknown>)[levels[i]!.field.name], i + 1);
      };
      return {
        async run(keys: readonly Readonly<Record<string, unknown>>[], ctx: RunContext): Promise<readonly unknown[]> {
          const aliasOf = new Map<string, number>();
          const rowsOf: Readonly<Record<string, unknown>>[] = [];
          const index: (number | undefined)[] = keys.map((k) => {
            if (j.lhs.some((c) => k[c] === null || k[c] === undefined)) return undefined;
            const id = j.lhs.length === 1 ? `${typeof k[j.lhs[0]!]}:${String(k[j.lhs[0]!])}` : JSON.stringify(j.lhs.map((c) => k[c]));
            let n = aliasOf.get(id);
            if (n === undefined) {
              aliasOf.set(id, (n = rowsOf.length));
              rowsOf.push(k);
            }
            return n;
          });
          if (rowsOf.length === 0) return keys.map(() => null);
          const selections: SelectionNode[] = rowsOf.map((row, n) => chain(0, row, `r${n}`, ctx.variables));
          const text = print({ kind: Kind.DOCUMENT, definitions: [{ kind: Kind.OPERATION_DEFINITION, operation: 'query' as never, variableDefinitions: definitions, selectionSet: { kind: Kind.SELECTION_SET, selections } }] });
          let data: Record<string, unknown>;
          try {
            data = await exchange(rc.remote, ctx, { query: text, variables: variablesFor(ctx, clientVariables, sessionPresets, merges) }, rc.maxBytes, rc.prioritizeData);
          } catch (e) {
            // Hasura's answer to a remote join's errors: one error, theirs in `internal`.
            if (e instanceof ExecErrors) throw new SvcError('unexpected', 'Errors from remote server', { internal: { errors: e.errors } });
            throw e;
          }
          const rename = (t: string) => cz.typeName(t);
          const values = rowsOf.map((_, n) => {
            let value = down(data[`r${n}`], 1);
            if (cz.renamesTypes) value = mapTypenames(value, shape, rename);
            return value ?? null;
          });
          if (joined) await spliceShapeJoins(values, shape, ctx);
          return index.map((n) => (n === undefined ? null : values[n]));
        },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operations

type Op = <A>(def: Omit<OperationDef<A>, 'mutates'> & { mutates?: boolean }) => void;
const DEFAULT_SCHEMA = 'public';
const SUCCESS = { message: 'success' };
const relsOf = (t: TableMeta) => (t.remote_relationships ?? []) as RemoteRelationshipMeta[];
const withRels = (t: TableMeta, list: RemoteRelationshipMeta[]): TableMeta => {
  const { remote_relationships: _old, ...rest } = t;
  return list.length === 0 ? (rest as TableMeta) : { ...rest, remote_relationships: list };
};
export const relationshipId = (source: string, qt: QualifiedTable, name: string) => `remote_relationship:${JSON.stringify([source, qt.schema, qt.name, name])}`;

export function registerRelationshipOperations(op: Op): void {
  const table = qualifiedTableSchema(DEFAULT_SCHEMA);
  const source = v.optional(nameText, 'default');
  const RemoteField = v.record(v.string(), v.unknown());
  const OldArgs = v.object({
    name: nameText,
    table,
    source,
    svc_fields: v.optional(v.array(v.string())),
    hasura_fields: v.optional(v.array(v.string())),
    remote_schema: nameText,
    remote_field: RemoteField,
  });
  type Old = v.InferOutput<typeof OldArgs>;
  const oldDefinition = (a: Old): Record<string, unknown> => ({ svc_fields: a.svc_fields ?? a.hasura_fields ?? [], remote_schema: a.remote_schema, remote_field: a.remote_field });
  const NewArgs = v.object({ name: nameText, table, source, definition: v.record(v.string(), v.unknown()) });
  const checkNew = (d: Record<string, unknown>) => {
    if (d.to_source !== undefined) {
      const sj = readSourceJoin({ name: '', definition: d });
      if (typeof sj === 'string') throw new SvcError('parse-failed', sj, { path: '$.args.definition.to_source' });
      return;
    }
    if (!readJoin({ name: '', definition: d })) throw new SvcError('parse-failed', 'expected to_remote_schema: {lhs_fields, remote_schema, remote_field}', { path: '$.args.definition' });
  };
  const find = (md: Metadata, src: string, qt: QualifiedTable) => {
    const s = findSource(md, src);
    const t = s ? findTable(s, qt) : undefined;
    if (!t) throw new SvcError('not-exists', `table "${qt.schema === DEFAULT_SCHEMA ? qt.name : `${qt.schema}.${qt.name}`}" does not exist in source: ${src}`, { path: '$.args.table' });
    return t;
  };
  const create = (md: Metadata, src: string, qt: QualifiedTable, rel: RemoteRelationshipMeta) => {
    const t = find(md, src, qt);
    if (relsOf(t).some((r) => r.name === rel.name)) throw new SvcError('already-exists', `remote relationship with name ${JSON.stringify(rel.name)} already exists`, { path: '$.args.name' });
    return updateTable(md, src, qt, DEFAULT_SCHEMA, (x) => withRels(x, [...relsOf(x), rel]));
  };
  const update = (md: Metadata, src: string, qt: QualifiedTable, rel: RemoteRelationshipMeta) => {
    const t = find(md, src, qt);
    if (!relsOf(t).some((r) => r.name === rel.name)) throw new SvcError('not-exists', `remote relationship with name ${JSON.stringify(rel.name)} does not exist`, { path: '$.args.name' });
    return updateTable(md, src, qt, DEFAULT_SCHEMA, (x) => withRels(x, relsOf(x).map((r) => (r.name === rel.name ? rel : r))));
  };
  const remove = (md: Metadata, src: string, qt: QualifiedTable, name: string) => {
    const t = find(md, src, qt);
    if (!relsOf(t).some((r) => r.name === name)) throw new SvcError('not-exists', `remote relationship with name ${JSON.stringify(name)} does not exist`, { path: '$.args.name' });
    return updateTable(md, src, qt, DEFAULT_SCHEMA, (x) => withRels(x, relsOf(x).filter((r) => r.name !== name)));
  };
  for (const [type, legacy] of [['create_remote_relationship', 'create_remote_relationship'], ['update_remote_relationship', 'update_remote_relationship']] as const) {
    op({
      type,
      legacy,
      args: OldArgs,
      run(a, ctx) {
        const rel = { name: a.name, definition: oldDefinition(a) };
        const md = type === 'create_remote_relationship' ? create(ctx.metadata, a.source, a.table, rel) : update(ctx.metadata, a.source, a.table, rel);
        return { metadata: md, response: SUCCESS, defines: [relationshipId(a.source, a.table, a.name)] };
      },
    });
  }
  op({
    type: 'delete_remote_relationship',
    legacy: 'delete_remote_relationship',
    args: v.object({ name: nameText, table, source }),
    run: (a, ctx) => ({ metadata: remove(ctx.metadata, a.source, a.table, a.name), response: SUCCESS }),
  });
  for (const type of ['pg_create_remote_relationship', 'pg_update_remote_relationship'] as const) {
    op({
      type,
      args: NewArgs,
      run(a, ctx) {
        checkNew(a.definition);
        const rel = { name: a.name, definition: a.definition };
        const md = type === 'pg_create_remote_relationship' ? create(ctx.metadata, a.source, a.table, rel) : update(ctx.metadata, a.source, a.table, rel);
        return { metadata: md, response: SUCCESS, defines: [relationshipId(a.source, a.table, a.name)] };
      },
    });
  }
  op({
    type: 'pg_delete_remote_relationship',
    args: v.object({ name: nameText, table, source }),
    run: (a, ctx) => ({ metadata: remove(ctx.metadata, a.source, a.table, a.name), response: SUCCESS }),
  });
}

/** Every table's remote relationships in a document, with where they are. */
export function allRelationships(md: Metadata): { source: string; table: QualifiedTable; rel: RemoteRelationshipMeta }[] {
  const out: { source: string; table: QualifiedTable; rel: RemoteRelationshipMeta }[] = [];
  for (const s of (md.sources as { name: string; tables?: TableMeta[] }[] | undefined) ?? []) {
    for (const t of s.tables ?? []) for (const rel of relsOf(t)) out.push({ source: s.name, table: t.table, rel });
  }
  return out;
}

/** The provider of joined fields (Note [Joined fields]): a table's relationships for a role. */
export function relationshipProvider(
  contextOf: (build: Pick<BuildResult, 'metadata' | 'outputs'>, remote: string, role: string, types: TypeRegistry) => RelationshipContext | undefined,
  valid: (build: Pick<BuildResult, 'outputs'>, id: string) => boolean,
  target: (build: Pick<BuildResult, 'outputs'>, j: SourceJoin) => { rootName: string; keys: { field: string; scalar: string }[] } | undefined,
  typeName: (build: Pick<BuildResult, 'outputs'>, source: string, table: QualifiedTable) => string | undefined,
): JoinedFieldsProvider {
  return {
    fields(role, source, table, build, types, tableRoot) {
      const s = findSource(build.metadata, source);
      const t = s ? findTable(s, table) : undefined;
      const rels = t ? relsOf(t) : [];
      if (rels.length === 0) return undefined;
      const out: Record<string, JoinedField> = {};
      for (const rel of rels) {
        if (!valid(build, relationshipId(source, table, rel.name))) continue;
        const sj = readSourceJoin(rel);
        if (sj !== undefined) {
          // Note [Joins to another source]: through the target's root field for this role.
          const tg = typeof sj === 'string' ? undefined : target(build, sj);
          const def = tg ? tableRoot(tg.rootName) : undefined;
          if (tg && def && typeof sj !== 'string') {
            out[rel.name] = sourceJoinedField(sj, { root: () => def, rootName: tg.rootName, object: getNamedType(def.config.type) as GraphQLOutputType, args: def.config.args ?? {}, keys: tg.keys });
          }
          continue;
        }
        const j = readJoin(rel);
        if (!j) continue;
        const rc = contextOf(build, j.remoteSchema, role, types);
        if (!rc) continue;
        const f = joinedField(j, rc, types, typeName(build, source, table));
        if (f) out[rel.name] = f;
      }
      return out;
    },
  };
}

/** The database's command group for remote relationships: they depend on their join columns
 * (dropping one with cascade drops them, without refuses) and follow a column's rename. */
/** The columns of this table a relationship joins on, whichever its target. */
function lhsOf(r: RemoteRelationshipMeta): string[] {
  const sj = readSourceJoin(r);
  if (sj && typeof sj !== 'string') return sj.mapping.map(([from]) => from);
  return readJoin(r)?.lhs ?? [];
}

/** Whether a `to_source` relationship joins to this table, or (a column target) on this column. */
export function joinsTo(sj: SourceJoin, target: DepTarget): boolean {
  if (target.kind !== 'table' && target.kind !== 'column') return false;
  if (sj.source !== target.source || sj.table.schema !== target.table.schema || sj.table.name !== target.table.name) return false;
  return target.kind === 'table' || sj.mapping.some(([, c]) => c === target.column);
}

/** A `to_source` definition with a column of its target (`side: 'to'`) or of its own side
 * (`'from'`) renamed. */
export function renameMapped(rel: RemoteRelationshipMeta, side: 'from' | 'to', from: string, to: string): RemoteRelationshipMeta {
  const d = rel.definition.to_source as Record<string, unknown>;
  const fm = Object.entries((d.field_mapping ?? {}) as Record<string, string>).map(([a, b]) => (side === 'from' ? [a === from ? to : a, b] : [a, b === from ? to : b]));
  return { ...rel, definition: { ...rel.definition, to_source: { ...d, field_mapping: Object.fromEntries(fm) } } };
}

/** Every table's relationships in a document, with their source and table. */
function eachTable(md: Metadata): { source: string; table: TableMeta }[] {
  return sourcesOf(md).flatMap((s) => s.tables.map((table) => ({ source: s.name, table })));
}

/** `others`: the dependents and renames of relationships kept elsewhere (the remote schemas'
 * types' relationships to tables, ./schema-relationships.ts). */
export function relationshipGroup(others?: { dependents(md: Metadata, target: DepTarget): Dependent[]; rename(md: Metadata, r: SchemaRename): Metadata }): CommandGroup {
  const relsIn = (md: Metadata, source: string, qt: QualifiedTable) => {
    const s = findSource(md, source);
    const t = s ? findTable(s, qt) : undefined;
    return t ? relsOf(t) : [];
  };
  const dependent = (source: string, table: QualifiedTable, r: RemoteRelationshipMeta): Dependent => ({
    id: `remote_relationship@${source}:${qtKey(table)}:${r.name}`,
    description: `remote_relationship ${table.name}.${r.name} in source "${source}"`,
    remove: (m: Metadata) => updateTableIfPresent(m, source, table, (t) => withRels(t, relsOf(t).filter((x) => x.name !== r.name))),
  });
  return {
    name: 'remote-relationships',
    operations: () => [],
    dependents(md: Metadata, target: DepTarget): Dependent[] {
      const out: Dependent[] = [];
      // Joins to this table, or on this column of it, from any table (`to_source`). Every
      // dependency lookup (an untrack) asks: the loops make nothing per table.
      for (const s of sourcesOf(md)) {
        for (const table of s.tables) {
          const rels = table.remote_relationships as RemoteRelationshipMeta[] | undefined;
          if (!rels?.length) continue;
          for (const r of rels) {
            const sj = readSourceJoin(r);
            if (sj && typeof sj !== 'string' && joinsTo(sj, target)) out.push(dependent(s.name, table.table, r));
          }
        }
      }
      if (others) out.push(...others.dependents(md, target));
      if (target.kind !== 'column' && target.kind !== 'computed_field') return out;
      const name = target.kind === 'column' ? target.column : target.name;
      for (const r of relsIn(md, target.source, target.table)) if (lhsOf(r).includes(name) && !out.some((d) => d.id === dependent(target.source, target.table, r).id)) out.push(dependent(target.source, target.table, r));
      return out;
    },
    rename(md: Metadata, r: SchemaRename): Metadata {
      if (r.kind !== 'column') return md;
      // The column as a join target of `to_source` relationships, and as their own join column.
      for (const { source, table } of eachTable(md)) {
        const target: DepTarget = { kind: 'column', source: r.source, table: r.table, column: r.from };
        const own = source === r.source && table.table.schema === r.table.schema && table.table.name === r.table.name;
        const touched = relsOf(table).some((x) => {
          const sj = readSourceJoin(x);
          return sj && typeof sj !== 'string' && (joinsTo(sj, target) || (own && sj.mapping.some(([a]) => a === r.from)));
        });
        if (!touched) continue;
        md = updateTableIfPresent(md, source, table.table, (t) =>
          withRels(
            t,
            relsOf(t).map((x) => {
              const sj = readSourceJoin(x);
              if (!sj || typeof sj === 'string') return x;
              let y = joinsTo(sj, target) ? renameMapped(x, 'to', r.from, r.to) : x;
              if (own && sj.mapping.some(([a]) => a === r.from)) y = renameMapped(y, 'from', r.from, r.to);
              return y;
            }),
          ),
        );
      }
      if (others) md = others.rename(md, r);
      const rels = relsIn(md, r.source, r.table);
      if (!rels.some((x) => readJoin(x)?.lhs.includes(r.from))) return md;
      const swap = (x: unknown): unknown => {
        if (x === `$${r.from}`) return `$${r.to}`;
        if (Array.isArray(x)) return x.map(swap);
        if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, i]) => [k, swap(i)]));
        return x;
      };
      const renamed = (rel: RemoteRelationshipMeta): RemoteRelationshipMeta => {
        const j = readJoin(rel);
        if (!j?.lhs.includes(r.from)) return rel;
        const d = rel.definition;
        const lhs = j.lhs.map((c) => (c === r.from ? r.to : c));
        if (d.to_remote_schema) return { ...rel, definition: { ...d, to_remote_schema: { ...(d.to_remote_schema as object), lhs_fields: lhs, remote_field: swap(j.remoteField) } } };
        const { hasura_fields: _h, ...rest } = d;
        return { ...rel, definition: { ...rest, svc_fields: lhs, remote_field: swap(j.remoteField) } };
      };
      return updateTableIfPresent(md, r.source, r.table, (t) => withRels(t, relsOf(t).map(renamed)));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Relationships to a table of a source (`to_source`)

/** The parts of a relationship to a table (`definition.to_source`). */
export interface SourceJoin {
  name: string;
  source: string;
  table: QualifiedTable;
  kind: 'object' | 'array';
  /** Pairs of this side's field (a column, or a remote type's field) -> the target's column. */
  mapping: [string, string][];
}

export function readSourceJoin(r: RemoteRelationshipMeta): SourceJoin | string | undefined {
  const to = r.definition?.to_source as Record<string, unknown> | undefined;
  if (!to) return undefined;
  const source = typeof to.source === 'string' ? to.source : 'default';
  const t = to.table;
  const table = typeof t === 'string' ? { schema: DEFAULT_SCHEMA, name: t } : t && typeof t === 'object' ? { schema: String((t as QualifiedTable).schema ?? DEFAULT_SCHEMA), name: String((t as QualifiedTable).name) } : undefined;
  const kind = to.relationship_type;
  const fm = to.field_mapping;
  if (!table || (kind !== 'object' && kind !== 'array') || !fm || typeof fm !== 'object' || Array.isArray(fm)) return 'to_source needs source, table, relationship_type (object or array) and field_mapping';
  const mapping = Object.entries(fm as Record<string, unknown>);
  if (mapping.length === 0) return 'field_mapping must map at least one field to a column of the target table';
  const bad = mapping.find(([, c]) => typeof c !== 'string');
  if (bad) return `field_mapping: the column for ${JSON.stringify(bad[0])} must be a string`;
  return { name: r.name, source, table, kind, mapping: mapping as [string, string][] };
}

/** The target table of a `to_source` join as a role sees it. */
export interface SourceTarget {
  /** The target's select root field (its name before any source namespace) for the role, made
   * when the field is first planned. */
  root: () => RootFieldDef | undefined;
  rootName: string;
  /** The table's object type and its select arguments, as the role sees them. */
  object: GraphQLOutputType;
  args: GraphQLFieldConfigArgumentMap;
  /** Per mapping pair, the target column's GraphQL field name and scalar. */
  keys: { field: string; scalar: string }[];
}

/*
 * Note [Joins to another source]
 * A relationship to a table of a source, maybe another database, is a joined field too (Note
 * [Joined fields] in plugins/database/schema/joins.ts; from a remote schema's type, Note [Remote
 * schema relationships] in ./schema-relationships.ts): its values for a level of the answer come
 * from the target table's own select root field for the role (so its permission applies), planned
 * once over a document of our making, `<root>(where: {_and: [{<column>: {_in: $__svc_keys_0}},
 * ..., <the client's where>]}, order_by: ...) { __svc_key_0: <column> ... ...the client's
 * selection }`, and run once per level with the distinct values of each join column bound: one
 * statement, however many rows. With several column pairs the `_in`s may match a row whose
 * tuple no parent has; the rows are grouped by their whole key tuple (as text, so that a remote's
 * "1" meets a column's 1), which leaves those out. An object relationship takes the first row.
 * An array relationship's `limit` and `offset` are each parent's: they are not given to the
 * statement (where they would count the rows of all parents together) but applied to each
 * parent's rows, in the order `order_by` gave them. `distinct_on` is not offered: it too would
 * apply across parents.
 */
const KEY_ALIAS = '__svc_key_';
const KEY_VAR = '__svc_keys_';
const keyText = (xs: readonly unknown[]) => JSON.stringify(xs.map((x) => (x === null || x === undefined ? null : typeof x === 'object' ? JSON.stringify(x) : String(x))));

/** A join value as the target column's variable takes it: a remote's "1" for an Int column. */
function coerceKey(x: unknown, scalar: string): unknown {
  if (typeof x === 'string' && (scalar === 'Int' || scalar === 'Float') && x.trim() !== '' && Number.isFinite(Number(x))) return Number(x);
  if (typeof x === 'number' && (scalar === 'String' || scalar === 'ID')) return String(x);
  return x;
}

/** A joined array field's `limit` or `offset` (a literal or a variable; GraphQL validated it as
 * an Int), undefined when not given or null; a negative one is refused, as the select field's is. */
function perParentCount(arg: ValueNode | undefined, ctx: RunContext, name: string): number | undefined {
  if (!arg) return undefined;
  const x = arg.kind === Kind.VARIABLE ? ctx.variables[arg.name.value] : arg.kind === Kind.INT ? Number(arg.value) : null;
  if (x === null || x === undefined) return undefined;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new SvcError('validation-failed', `expecting a non-negative integer for ${JSON.stringify(name)}`);
  return x;
}

export function sourceJoinedField(j: SourceJoin, target: SourceTarget): JoinedField {
  const object = target.object;
  return {
    config: {
      type: j.kind === 'object' ? object : new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(object))),
      args: j.kind === 'array' ? Object.fromEntries(Object.entries(target.args).filter(([n]) => n === 'where' || n === 'order_by' || n === 'limit' || n === 'offset')) : {},
      description: `Relationship to ${j.table.schema}.${j.table.name} in source ${j.source}`,
    },
    columns: j.mapping.map(([from]) => from),
    plan(node, input) {
      const root = target.root();
      if (!root) throw new SvcError('not-supported', `the relationship ${JSON.stringify(j.name)} cannot be joined: the select field of table ${JSON.stringify(j.table.name)} is not available`);
      const name = (value: string) => ({ kind: Kind.NAME, value }) as const;
      const obj = (fields: [string, ValueNode][]): ValueNode => ({ kind: Kind.OBJECT, fields: fields.map(([n, value]): ObjectFieldNode => ({ kind: Kind.OBJECT_FIELD, name: name(n), value })) });
      const inKeys = target.keys.map((k, i) => obj([[k.field, obj([['_in', { kind: Kind.VARIABLE, name: name(`${KEY_VAR}${i}`) }]])]]));
      const userWhere = node.arguments?.find((a) => a.name.value === 'where')?.value;
      const conds = userWhere ? [...inKeys, userWhere] : inKeys;
      const where: ValueNode = conds.length === 1 ? conds[0]! : obj([['_and', { kind: Kind.LIST, values: conds }]]);
      const orderBy = node.arguments?.find((a) => a.name.value === 'order_by');
      const field: FieldNode = {
        kind: Kind.FIELD,
        name: name(target.rootName),
        arguments: [{ kind: Kind.ARGUMENT, name: name('where'), value: where }, ...(orderBy ? [orderBy] : [])],
        selectionSet: { kind: Kind.SELECTION_SET, selections: [...target.keys.map((k, i): FieldNode => ({ kind: Kind.FIELD, alias: name(`${KEY_ALIAS}${i}`), name: name(k.field) })), ...(node.selectionSet?.selections ?? [])] },
      };
      const keysTypes: VariableDefinitionNode[] = target.keys.map((k, i) => ({
        kind: Kind.VARIABLE_DEFINITION,
        variable: { kind: Kind.VARIABLE, name: name(`${KEY_VAR}${i}`) },
        type: { kind: Kind.LIST_TYPE, type: { kind: Kind.NON_NULL_TYPE, type: { kind: Kind.NAMED_TYPE, name: name(k.scalar) } } },
      }));
      const plan = root.plan({ ...(input as PlanInput), field, variableDefinitions: [...input.variableDefinitions, ...keysTypes] });
      const from = j.mapping.map(([f]) => f);
      const limitArg = node.arguments?.find((a) => a.name.value === 'limit')?.value;
      const offsetArg = node.arguments?.find((a) => a.name.value === 'offset')?.value;
      return {
        async run(keys, ctx) {
          const limit = perParentCount(limitArg, ctx, 'limit');
          const offset = perParentCount(offsetArg, ctx, 'offset') ?? 0;
          const live = keys.map((k) => from.every((c) => k[c] !== null && k[c] !== undefined));
          if (!live.some(Boolean)) return keys.map(() => null);
          const bound: Record<string, unknown> = {};
          target.keys.forEach((k, i) => {
            const seen = new Map<string, unknown>();
            keys.forEach((row, n) => {
              if (!live[n]) return;
              const x = coerceKey(row[from[i]!], k.scalar);
              seen.set(keyText([x]), x);
            });
            bound[`${KEY_VAR}${i}`] = [...seen.values()];
          });
          // The request's context with the keys bound (its other parts as they are).
          const withKeys = Object.create(ctx, { variables: { value: { ...ctx.variables, ...bound } } }) as RunContext;
          const rows = JSON.parse(jsonString(await plan.run(withKeys))) as Record<string, unknown>[];
          const byKey = new Map<string, Record<string, unknown>[]>();
          for (const row of rows) {
            const k = keyText(target.keys.map((_, i) => row[`${KEY_ALIAS}${i}`]));
            for (let i = 0; i < target.keys.length; i++) row[`${KEY_ALIAS}${i}`] = undefined;
            const list = byKey.get(k);
            if (list) list.push(row);
            else byKey.set(k, [row]);
          }
          return keys.map((k, n) => {
            if (!live[n]) return null;
            const found = byKey.get(keyText(from.map((c) => k[c]))) ?? [];
            return j.kind === 'object' ? (found[0] ?? null) : limit === undefined && offset === 0 ? found : found.slice(offset, limit === undefined ? undefined : offset + limit);
          });
        },
      };
    },
  };
}
