/**
 * An action's output as the client selected it: the handler's answer (already checked against
 * the output type, handler.ts) walked along the selection set (aliases, fragments, `@include` /
 * `@skip`, `__typename`), and the relationships to tables joined in the engine (Note [Joining
 * action outputs to tables]).
 */
import {
  getNullableType,
  isListType,
  isObjectType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type ObjectFieldNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';
import { SvcError } from '../../core/errors.js';
import { jsonString, type BuildResult, type FieldPlan, type KernelApi, type RootFieldDef, type RunContext } from '../../core/plugin.js';
import { REL, type RelationshipField } from './types.js';
import { collectFields } from '../../lib/graphql/collect.js';

/** What the projection needs of the document. */
export interface DocumentContext {
  readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  readonly schema: GraphQLSchema;
  readonly variableDefinitions: readonly VariableDefinitionNode[];
  readonly role: string;
  readonly build: BuildResult;
}

interface PendingJoin {
  readonly field: RelationshipField;
  readonly node: FieldNode;
  /** The values of the mapped fields, in mapping order. */
  readonly keys: readonly unknown[];
  readonly target: Record<string, unknown>;
  readonly responseKey: string;
}

const merged = (nodes: FieldNode[]): FieldNode =>
  nodes.length === 1 ? nodes[0]! : { ...nodes[0]!, selectionSet: { kind: Kind.SELECTION_SET, selections: nodes.flatMap((n) => n.selectionSet?.selections ?? []) } };

/** Projects a checked value onto a selection; relationship fields are left for `runJoins`. */
export function project(value: unknown, type: GraphQLOutputType, node: FieldNode, doc: DocumentContext, vars: Readonly<Record<string, unknown>>, joins: PendingJoin[], nested = false): unknown {
  if (value === null || value === undefined) return null;
  const t = getNullableType(type) as GraphQLOutputType;
  if (isListType(t)) return Array.isArray(value) ? value.map((x) => project(x, t.ofType as GraphQLOutputType, node, doc, vars, joins, nested)) : null;
  if (!isObjectType(t) || !node.selectionSet) return value;
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const fields = t.getFields();
  for (const [key, nodes] of collectFields(doc.schema, doc.fragments, vars, t, node.selectionSet)) {
    const name = nodes[0]!.name.value;
    if (name === '__typename') {
      out[key] = t.name;
      continue;
    }
    const def = fields[name] as GraphQLField<unknown, unknown> | undefined;
    if (!def) continue;
    const rel = def.extensions?.[REL] as RelationshipField | undefined;
    if (rel) {
      out[key] = null;
      joins.push({ field: rel, node: merged(nodes), keys: rel.rel.mapping.map(([f]) => src[f]), target: out, responseKey: key });
      continue;
    }
    // Hasura reads the output object's own fields as a record (a missing one is null) and the
    // objects nested in it as JSON (a missing field is left out of the answer).
    if (nested && !Object.prototype.hasOwnProperty.call(src, name)) continue;
    out[key] = project(src[name], def.type, merged(nodes), doc, vars, joins, true);
  }
  return out;
}

/*
 * Note [Joining action outputs to tables]
 * A relationship of an output object (`field_mapping` from the object's fields to the table's
 * columns) is joined in the engine after the handler answered, one statement per relationship
 * field of the document for all the objects of the answer (a list answer is one statement, not
 * one per item): the table's own select root field, planned by the database plugin for the role
 * (so its permissions, column names and nested relationships apply), with a synthesized
 * `where: {_and: [<the client's where>, {<column>: {_in: $keys}}]}` and the key columns added to
 * the selection under private aliases, by which the rows are matched back to their objects and
 * which are then removed. A selection that limits rows per object (`limit`, `offset`,
 * `distinct_on`) and `<rel>_aggregate` cannot share one statement, so they run one per distinct
 * key (`_eq` instead of `_in`). Objects whose key is null get null (object) or [] (array).
 */

const KEY_ALIAS = '__svc_key_';
const KEY_VAR = '__svc_keys_';

const name = (value: string) => ({ kind: Kind.NAME, value }) as const;
const variable = (v: string): ValueNode => ({ kind: Kind.VARIABLE, name: name(v) });
const obj = (fields: [string, ValueNode][]): ValueNode => ({ kind: Kind.OBJECT, fields: fields.map(([n, value]): ObjectFieldNode => ({ kind: Kind.OBJECT_FIELD, name: name(n), value })) });

interface JoinPlan {
  readonly plan: FieldPlan;
  readonly batched: boolean;
}

/** Plans of synthesized fields, per build, relationship field node and role: a saved document
 * (a REST endpoint's) is one DocumentNode for every role, and a plan holds its role's
 * permissions. */
const joinPlans = new WeakMap<BuildResult, WeakMap<FieldNode, Map<string, JoinPlan>>>();

function joinPlan(k: KernelApi, p: PendingJoin, doc: DocumentContext): JoinPlan {
  let byNode = joinPlans.get(doc.build);
  if (!byNode) joinPlans.set(doc.build, (byNode = new WeakMap()));
  let byRole = byNode.get(p.node);
  if (!byRole) byNode.set(p.node, (byRole = new Map()));
  const hit = byRole.get(doc.role);
  if (hit) return hit;
  const { rel, kind, join } = p.field;
  const args = p.node.arguments ?? [];
  const batched = kind !== 'aggregate' && !args.some((a) => ['limit', 'offset', 'distinct_on'].includes(a.name.value));
  const rootName = kind === 'aggregate' ? join.aggregateField : join.selectField;
  const roots = k.roleRoots(doc.role, doc.build);
  const root: RootFieldDef | undefined = rootName ? roots.query.get(rootName) : undefined;
  if (!root) throw new SvcError('not-supported', `the relationship "${rel.def.name}" cannot be joined: the table's select field is not available`);
  const keyConds: [string, ValueNode][] = [];
  const varDefs: VariableDefinitionNode[] = [];
  rel.mapping.forEach(([, column], i) => {
    const c = join.columns.get(column);
    if (!c) throw new SvcError('permission-denied', `the relationship "${rel.def.name}" joins on the column "${column}", which the role may not select`);
    keyConds.push([c.field, obj([[batched ? '_in' : '_eq', variable(`${KEY_VAR}${i}`)]])]);
    const named = { kind: Kind.NAMED_TYPE, name: name(c.scalar) } as const;
    varDefs.push({
      kind: Kind.VARIABLE_DEFINITION,
      variable: { kind: Kind.VARIABLE, name: name(`${KEY_VAR}${i}`) },
      type: batched ? { kind: Kind.LIST_TYPE, type: { kind: Kind.NON_NULL_TYPE, type: named } } : { kind: Kind.NON_NULL_TYPE, type: named },
    });
  });
  const userWhere = args.find((a) => a.name.value === 'where')?.value;
  const keyWhere = obj(keyConds);
  const where: ValueNode = userWhere ? obj([['_and', { kind: Kind.LIST, values: [userWhere, keyWhere] }]]) : keyWhere;
  const selections = [...(p.node.selectionSet?.selections ?? [])];
  if (batched) {
    rel.mapping.forEach(([, column], i) => {
      selections.push({ kind: Kind.FIELD, alias: name(`${KEY_ALIAS}${i}`), name: name(join.columns.get(column)!.field) });
    });
  }
  const field: FieldNode = {
    kind: Kind.FIELD,
    name: name(rootName!),
    arguments: [...args.filter((a) => a.name.value !== 'where'), { kind: Kind.ARGUMENT, name: name('where'), value: where }],
    selectionSet: { kind: Kind.SELECTION_SET, selections },
  };
  const plan = root.plan({ field, schema: doc.schema, fragments: doc.fragments, variableDefinitions: [...doc.variableDefinitions, ...varDefs], role: doc.role, build: doc.build });
  const out = { plan, batched };
  byRole.set(doc.role, out);
  return out;
}

const keyText = (keys: readonly unknown[]) => JSON.stringify(keys.map((x) => (x === null || x === undefined ? null : String(x))));

/** Runs the pending joins (and the joins their results need: none, the tables' own
 * relationships are in their statements). */
export async function runJoins(k: KernelApi, joins: PendingJoin[], doc: DocumentContext, ctx: RunContext): Promise<void> {
  const groups = new Map<FieldNode, PendingJoin[]>();
  for (const j of joins) {
    const g = groups.get(j.node);
    if (g) g.push(j);
    else groups.set(j.node, [j]);
  }
  for (const [, group] of groups) {
    const first = group[0]!;
    const { kind } = first.field;
    const empty = () => (kind === 'object' ? null : kind === 'array' ? [] : undefined);
    const live = group.filter((j) => j.keys.every((x) => x !== null && x !== undefined));
    for (const j of group) if (!live.includes(j)) j.target[j.responseKey] = empty() ?? null;
    if (live.length === 0) continue;
    const { plan, batched } = joinPlan(k, first, doc);
    if (batched) {
      const width = first.field.rel.mapping.length;
      const vars: Record<string, unknown> = { ...ctx.variables };
      for (let i = 0; i < width; i++) vars[`${KEY_VAR}${i}`] = [...new Set(live.map((j) => j.keys[i]))];
      const rows = JSON.parse(jsonString(await plan.run({ ...ctx, variables: vars }))) as Record<string, unknown>[];
      const byKey = new Map<string, Record<string, unknown>[]>();
      for (const row of rows) {
        const keys: unknown[] = [];
        for (let i = 0; i < width; i++) {
          keys.push(row[`${KEY_ALIAS}${i}`]);
          delete row[`${KEY_ALIAS}${i}`];
        }
        const kt = keyText(keys);
        const list = byKey.get(kt);
        if (list) list.push(row);
        else byKey.set(kt, [row]);
      }
      for (const j of live) {
        const found = byKey.get(keyText(j.keys)) ?? [];
        j.target[j.responseKey] = kind === 'object' ? (found[0] ?? null) : found;
      }
    } else {
      const done = new Map<string, unknown>();
      for (const j of live) {
        const kt = keyText(j.keys);
        if (!done.has(kt)) {
          const vars: Record<string, unknown> = { ...ctx.variables };
          j.keys.forEach((x, i) => (vars[`${KEY_VAR}${i}`] = x));
          done.set(kt, JSON.parse(jsonString(await plan.run({ ...ctx, variables: vars }))));
        }
        j.target[j.responseKey] = structuredClone(done.get(kt));
      }
    }
  }
}

export type { PendingJoin };
