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
import type { FieldPlan, PlanInput, RootFieldDef, RunContext, TypeRegistry } from '../../../core/plugin.js';

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
  return {
    async run(ctx: RunContext): Promise<string> {
      const live = inner.filter((i) => included(i.directives, ctx));
      let texts: string[];
      if (sequential) {
        texts = [];
        // A field is alone only if the namespace is and holds no other (Note [Mutations in one
        // round trip] in the PostgreSQL compiler).
        const inner: RunContext = ctx.alone && live.filter((i) => i.plan).length > 1 ? Object.create(ctx, { alone: { value: false } }) : ctx;
        for (const i of live) texts.push(i.plan ? await i.plan.run(inner) : typename);
      } else texts = await Promise.all(live.map((i) => (i.plan ? i.plan.run(ctx) : typename)));
      return `{${live.map((i, n) => `${JSON.stringify(i.key)}:${texts[n]}`).join(',')}}`;
    },
  };
}
