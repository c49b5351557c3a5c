/**
 * `root_fields.namespace` of a source's customization (names.ts): the source's root fields
 * under one root field, as Hasura v2 does (`my_source { author { id } }`, of type
 * `<namespace>_query`, `<namespace>_mutation_frontend` under the mutation root). Its plan plans
 * each selected inner field with that field's own RootFieldDef and splices their texts into one
 * object: no second planner. Inner fields run together for a query, one after the other for a
 * mutation (in the request's transaction, as any mutation field).
 */
import { GraphQLNonNull, GraphQLObjectType, Kind, type DirectiveNode, type FieldNode, type GraphQLFieldConfigMap, type SelectionSetNode } from 'graphql';
import { SvcError } from '../../../core/errors.js';
import { jsonString, type FieldPlan, type LiveBinding, type LiveGroup, type LiveResult, type PlanInput, type RootFieldDef, type RunContext, type TypeRegistry } from '../../../core/plugin.js';

interface Inner {
  key: string;
  /** Directives on the way to the field (its own, and its fragments'), evaluated per request. */
  directives: readonly DirectiveNode[];
  /** A field with a plan, or `__typename`. */
  plan?: FieldPlan;
}

export function namespaceField(namespace: string, typeName: string, kind: 'query' | 'mutation' | 'subscription', fields: Record<string, RootFieldDef>, types: TypeRegistry): RootFieldDef {
  const type =
    (types.get(typeName) as GraphQLObjectType | undefined) ??
    types.define(
      new GraphQLObjectType({
        name: typeName,
        fields: () => Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, f.config])) as GraphQLFieldConfigMap<unknown, unknown>,
      }),
    );
  return { config: { type: new GraphQLNonNull(type) }, plan: (input) => planNamespace(input, fields, typeName, kind === 'mutation') };
}

function planNamespace(input: PlanInput, fields: Record<string, RootFieldDef>, typeName: string, sequential: boolean): FieldPlan {
  // The inner fields by response key; several nodes of one key are one field (their selections merged).
  const byKey = new Map<string, { nodes: FieldNode[]; directives: DirectiveNode[] }>();
  const collect = (set: SelectionSetNode, directives: readonly DirectiveNode[], seen: ReadonlySet<string>) => {
    for (const sel of set.selections) {
      const ds = [...directives, ...(sel.directives ?? [])];
      if (sel.kind === Kind.FIELD) {
        const key = sel.alias?.value ?? sel.name.value;
        const entry = byKey.get(key);
        if (entry) entry.nodes.push(sel);
        else byKey.set(key, { nodes: [sel], directives: ds });
      } else if (sel.kind === Kind.INLINE_FRAGMENT) collect(sel.selectionSet, ds, seen);
      else {
        const frag = input.fragments[sel.name.value];
        if (frag && !seen.has(frag.name.value)) collect(frag.selectionSet, ds, new Set(seen).add(frag.name.value));
      }
    }
  };
  if (input.field.selectionSet) collect(input.field.selectionSet, [], new Set());
  const inner: Inner[] = [];
  for (const [key, { nodes, directives }] of byKey) {
    const node = nodes.length === 1 ? nodes[0]! : { ...nodes[0]!, selectionSet: { kind: Kind.SELECTION_SET as const, selections: nodes.flatMap((n) => n.selectionSet?.selections ?? []) } };
    const name = node.name.value;
    if (name === '__typename') {
      inner.push({ key, directives });
      continue;
    }
    const def = fields[name];
    if (!def) throw new SvcError('validation-failed', `field '${name}' not found in type: '${typeName}'`, { path: `$.selectionSet.${input.field.name.value}.selectionSet.${name}` });
    inner.push({ key, directives, plan: def.plan({ ...input, field: node }) });
  }
  const included = (ds: readonly DirectiveNode[], ctx: RunContext): boolean => {
    for (const d of ds) {
      if (d.name.value !== 'include' && d.name.value !== 'skip') continue;
      const arg = d.arguments?.find((a) => a.name.value === 'if')?.value;
      const val = arg?.kind === Kind.BOOLEAN ? arg.value : arg?.kind === Kind.VARIABLE ? ctx.variables[arg.name.value] === true : false;
      if (d.name.value === 'include' ? !val : val) return false;
    }
    return true;
  };
  const typename = JSON.stringify(typeName);
  const groups = new Map<string, NamespaceGroup>();
  return {
    async run(ctx: RunContext): Promise<string> {
      const live = inner.filter((i) => included(i.directives, ctx));
      let texts: string[];
      if (sequential) {
        texts = [];
        // A field is alone only if the namespace is and holds no other (Note [Mutations in one
        // round trip] in the PostgreSQL compiler).
        const inner: RunContext = ctx.alone && live.filter((i) => i.plan).length > 1 ? Object.create(ctx, { alone: { value: false } }) : ctx;
        for (const i of live) texts.push(i.plan ? jsonString(await i.plan.run(inner)) : typename);
      } else texts = await Promise.all(live.map(async (i) => (i.plan ? jsonString(await i.plan.run(ctx)) : typename)));
      return `{${live.map((i, n) => `${JSON.stringify(i.key)}:${texts[n]}`).join(',')}}`;
    },
    // Under the subscription root: the selected inner fields' live bindings as one.
    live: sequential ? undefined : (ctx, resume) => namespaceLive(inner.filter((i) => included(i.directives, ctx)), ctx, resume, typename, groups),
  };
}

/*
 * Note [Live namespaces]
 * A namespace field under the subscription root is one root field made of several: its live
 * binding (Note [Live queries] in core/schema/contract.ts) is its inner fields' bindings together, and its
 * group runs their groups for the same cohorts (a statement per inner field) and splices their
 * texts into the namespace's object. The group is the same object for the same inner groups (a
 * map per plan, by their identities), so subscribers of one document share it. A stream under a
 * namespace must be its only field, as at the root.
 */
const groupIds = new WeakMap<LiveGroup, number>();
let lastGroupId = 0;
const idOf = (g: LiveGroup) => {
  let id = groupIds.get(g);
  if (id === undefined) groupIds.set(g, (id = ++lastGroupId));
  return id;
};

class NamespaceGroup implements LiveGroup {
  constructor(
    readonly mode: LiveGroup['mode'],
    /** Per inner field, its group, or undefined for `__typename`. */
    private readonly parts: readonly (LiveGroup | undefined)[],
    private readonly keys: readonly string[],
    private readonly typename: string,
  ) {}

  async fetch(values: readonly unknown[]): Promise<readonly LiveResult[]> {
    const results = await Promise.all(this.parts.map((g, i) => (g ? g.fetch(values.map((v) => (v as unknown[])[i])) : undefined)));
    return values.map((_, n): LiveResult => {
      const text = `{${this.keys.map((k, i) => `${k}:${results[i] ? results[i]![n]!.text : this.typename}`).join(',')}}`;
      if (this.mode === 'live') return { text };
      const r = results.find((x) => x)![n]!;
      return { text, ...(r.empty ? { empty: true } : {}), ...(r.next ? { next: { key: JSON.stringify([r.next.key]), values: [r.next.values], resume: r.next.resume } } : {}) };
    });
  }
}

function namespaceLive(live: readonly Inner[], ctx: RunContext, resume: unknown, typename: string, groups: Map<string, NamespaceGroup>): LiveBinding {
  const parts = live.map((i) => {
    if (!i.plan) return undefined;
    if (!i.plan.live) throw new SvcError('not-supported', `the field "${i.key}" cannot be subscribed to`);
    return i.plan.live(ctx, resume);
  });
  const streams = parts.filter((b) => b?.group.mode === 'stream').length;
  if (streams > 0 && live.length > 1) throw new SvcError('not-supported', 'exactly one root field is allowed for streaming subscriptions');
  const id = `${parts.map((b) => (b ? idOf(b.group) : '_')).join(',')}\u0000${live.map((i) => i.key).join('\u0000')}`;
  let group = groups.get(id);
  if (!group) {
    group = new NamespaceGroup(streams > 0 ? 'stream' : 'live', parts.map((b) => b?.group), live.map((i) => JSON.stringify(i.key)), typename);
    if (groups.size >= 64) groups.delete(groups.keys().next().value!);
    groups.set(id, group);
  }
  return { group, key: JSON.stringify(parts.map((b) => b?.key ?? null)), values: parts.map((b) => b?.values) };
}
