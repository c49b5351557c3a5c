/**
 * What the plan cache holds for a (role, query text, operation name): the parsed and validated
 * document, the selected operation, and its root fields planned (Note [The plan cache] in
 * ./engine.ts). Everything here depends on the document and the role's schema only; variable
 * values come in per request, except those of `@include`/`@skip` on the root selection, which
 * pick the root fields: for those, each combination of values gets its own plans (`byMask`).
 */
import {
  Kind,
  NoUnusedVariablesRule,
  parse,
  SingleFieldSubscriptionsRule,
  specifiedRules,
  VariablesInAllowedPositionRule,
  KnownTypeNamesRule,
  ValuesOfCorrectTypeRule,
  getNamedType,
  isInputObjectType,
  isScalarType,
  type ASTNode,
  GraphQLError,
  BREAK,
  print,
  visit,
  type VariableDefinitionNode,
  type GraphQLInputType,
  type ValueNode,
  type ASTVisitor,
  type ValidationContext,
  validate,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { collectFields } from '../../lib/graphql/collect.js';
import type { IntrospectionRoot } from './introspection.js';
import type { BuildResult, FieldPlan } from '../../core/plugin.js';
import type { DocumentGateDef } from './contract.js';
import { SvcError } from '../../core/errors.js';
import { isEmpty, type OperationKind, type RoleSchema } from '../../core/plugin.js';
import { fromValidationError, gqlError, type GqlError } from './errors.js';
import { HasuraVariablesInAllowedPosition } from './variable-positions.js';
import { documentCost, type DocumentCost } from './cost.js';
import { checkDocumentCost, checkDocumentText, tooDeep, tooManyTokens, type GraphQLLimits } from './limits.js';

/** One response key of the root selection. */
export interface RootEntry {
  /** The key as JSON followed by a colon (`"alias":`), ready to splice. */
  readonly key: string;
  readonly responseKey: string;
  /** A planned field, a constant (`__typename`), or, with neither, an introspection field
   * (RootFields.introspection, written by ./introspection.ts). */
  readonly plan?: FieldPlan;
  readonly text?: string;
}

export interface RootFields {
  readonly entries: readonly RootEntry[];
  /** The introspection root fields, each its response key and merged nodes (empty when there
   * are none), as ./introspection.ts writes them. */
  readonly introspection: readonly IntrospectionRoot[];
}

export interface Prepared {
  readonly kind: OperationKind;
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  readonly roleSchema: RoleSchema;
  /** The graphql-js schema the document was validated against (Note [Schemas without the mutation root]). */
  readonly schema: GraphQLSchema;
  readonly build: BuildResult;
  /** The variables that `@include`/`@skip` of the root selection read; empty: `fields` is set. */
  readonly conditionVariables: readonly string[];
  fields: RootFields | undefined;
  /** Root fields per combination of the condition variables' values (`'10'`: first true, ...). */
  readonly byMask: Map<string, RootFields>;
  /** Variables used only at positions that take text (Note [Text literals at marked positions]):
   * a string given for one is passed on as it is, whatever scalar it is declared with. */
  readonly textVariables: ReadonlySet<string>;
  /** The document's text (PlanInput.query). */
  readonly query: string;
}

/** A document that failed to parse, validate or select an operation: cached as well, so that a
 * client repeating a bad query costs a lookup. */
export interface Failed {
  readonly error: GqlError;
}

/** Hasura's rules for choosing the operation (getSingleOperation in
 * Hasura/GraphQL/Transport/HTTP/Protocol.hs). */
function selectOperation(doc: DocumentNode, operationName: string | undefined): OperationDefinitionNode | GqlError {
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operationName !== undefined) {
    const op = ops.find((o) => o.name?.value === operationName);
    if (op) return op;
    if (ops.some((o) => !o.name)) return gqlError('validation-failed', 'operationName cannot be used when an anonymous operation exists in the document');
    return gqlError('validation-failed', `no such operation found in the document: "${operationName}"`);
  }
  if (ops.length === 1) return ops[0]!;
  return gqlError('validation-failed', 'exactly one operation has to be present in the document when operationName is not specified');
}

/** `subscriptions`: the transport serves them (WebSocket); over HTTP they are refused.
 * `gates`: Note [Document gates] in plugins/graphql/contract.ts. `limits`: Note [GraphQL request limits]
 * (none: unbounded, for tests of the steps themselves). */
export interface PrepareOptions {
  subscriptions?: boolean;
  gates?: readonly DocumentGateDef[];
  limits?: GraphQLLimits;
}

/** The document parsed within the limits, or the error that stops it (cached as the entry). */
export function parseDocument(query: string, limits: GraphQLLimits | undefined): DocumentNode | Failed {
  const long = limits && checkDocumentText(query, limits);
  if (long) return { error: long };
  try {
    return parse(query, { noLocation: true, maxTokens: limits?.graphqlMaxTokens });
  } catch (e) {
    if (limits && /contains more th\w+ \d+ tokens/.test((e as Error).message)) return { error: tooManyTokens(limits) };
    // Hasura's wording and code (toParsed in Hasura/GraphQL/Transport/HTTP/Protocol.hs).
    return { error: gqlError('validation-failed', 'not a valid graphql query', '$.query') };
  }
}

export function prepare(query: string, operationName: string | undefined, rs: RoleSchema, build: BuildResult, opts: PrepareOptions = {}): Prepared | Failed {
  const document = parseDocument(query, opts.limits);
  if ('error' in document) return document;
  return prepareDocument(document, query, operationName, rs, build, opts);
}

/** The document's cost (Note [Document cost]) within the limits, or the error that refuses it. */
export function measureDocument(document: DocumentNode, limits: GraphQLLimits | undefined): DocumentCost | Failed {
  let cost: DocumentCost;
  try {
    cost = documentCost(document);
  } catch (e) {
    // A chain of fragments deeper than the stack: too deep to validate as well.
    if (e instanceof RangeError && limits) return { error: tooDeep(limits) };
    throw e;
  }
  const over = limits && checkDocumentCost(cost, limits);
  return over ? { error: over } : cost;
}

/** `prepare` of a document parsed already (a saved one: Note [Saved documents] in plugins/graphql/contract.ts). */
export function prepareDocument(document: DocumentNode, query: string, operationName: string | undefined, rs: RoleSchema, build: BuildResult, opts: PrepareOptions = {}): Prepared | Failed {
  const cost = measureDocument(document, opts.limits);
  if ('error' in cost) return cost;
  return validateDocument(document, cost, query, operationName, rs, build, opts);
}

/** The rest of `prepare` once the document is parsed and measured: gates, operation, validation. */
export function validateDocument(
  document: DocumentNode,
  cost: DocumentCost,
  query: string,
  operationName: string | undefined,
  rs: RoleSchema,
  build: BuildResult,
  opts: PrepareOptions = {},
): Prepared | Failed {
  if (opts.gates) {
    for (const g of opts.gates) {
      const refused = g.check({ document, query, operationName, role: rs.role, build, cost });
      if (refused) return { error: gqlError(refused.code, refused.message, refused.path ?? '$') };
    }
  }
  const chosen = selectOperation(document, operationName);
  if (!('kind' in chosen)) return { error: chosen };
  let operation = chosen;
  const kind = operation.operation as OperationKind;
  if (kind === 'subscription') {
    // Hasura (runGQ): subscriptions are served over websockets only.
    if (!opts.subscriptions) return { error: gqlError('unexpected-payload', 'subscriptions are not supported over HTTP, use websockets instead') };
    if (isEmpty(rs.roots.subscription)) return { error: gqlError('validation-failed', 'no subscriptions exist') };
  }
  if (kind === 'mutation' && isEmpty(rs.roots.mutation)) return { error: gqlError('validation-failed', 'no mutations exist') };
  // Note [Schemas without the mutation root]: a document that may introspect gets the full one
  // (`__schema`/`__type` anywhere in its text; `__typename` does not count). Note [Lazy query
  // schemas]: one with variables or fragments has the types on its paths made first, before
  // their names are looked up (without either, nothing is looked up by name before its path).
  const schema = rs.schemaFor(kind, mayIntrospect(query), NAMES_TYPES.test(query) ? document : undefined);
  // Note [Inline fragments of unknown types].
  const kept = withoutUnknownFragments(document, schema);
  if (kept !== document) {
    document = kept;
    const again = selectOperation(document, operationName);
    if (!('kind' in again)) return { error: again };
    operation = again;
  }
  const errors = validate(schema, document, RULES);
  if (errors.length > 0) return { error: fromValidationError(errors[0]!, document) };
  const textVariables = textVariablesOf.get(document) ?? NO_VARIABLES;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  const conditionVariables = [...rootConditionVariables(operation.selectionSet, fragments)];
  return { kind, document, operation, fragments, roleSchema: rs, schema, build, conditionVariables, fields: undefined, byMask: new Map(), textVariables, query };
}

const INTROSPECTS = /__schema\b|__type\b/;
/** Whether a document's text may select `__schema` or `__type` (which read the role's full
 * schema): never false for one that does. */
export const mayIntrospect = (query: string): boolean => INTROSPECTS.test(query);
/** A variable (`$`) or a fragment (`...`: a fragment in use is spread). */
const NAMES_TYPES = /\$|\.\.\./;

/*
 * Note [Inline fragments of unknown types]
 * Hasura collects a selection set's fields from the inline fragments whose type condition applies
 * to the object and leaves out the others (its parser's collectFields), so `... on Droid { ... }`
 * where the schema has no `Droid` (a remote's type under its customized name `FooDroid`) is not an
 * error: the fragment selects nothing. The document is validated and planned without such
 * fragments (a copy; the client's document is not changed). A fragment definition on an unknown
 * type is still graphql-js's error.
 */
function withoutUnknownFragments(document: DocumentNode, schema: GraphQLSchema): DocumentNode {
  let unknown = false;
  visit(document, {
    InlineFragment(node) {
      if (node.typeCondition && !schema.getType(node.typeCondition.name.value)) {
        unknown = true;
        return BREAK;
      }
      return undefined;
    },
  });
  if (!unknown) return document;
  return visit(document, {
    InlineFragment(node) {
      return node.typeCondition && !schema.getType(node.typeCondition.name.value) ? null : undefined;
    },
  });
}

/**
 * graphql-js's KnownTypeNamesRule, asking the schema for the names the document uses: graphql-js's
 * lists every type name of the schema up front (for suggestions), which would build a lazy
 * schema whole (Note [Lazy query schemas] in schema.ts). A name the schema does not have goes to
 * graphql-js's rule, so the error and its suggestions are graphql-js's.
 */
function KnownTypeNames(context: ValidationContext): ASTVisitor {
  const schema = context.getSchema();
  const report = (...a: unknown[]) => (KnownTypeNamesRule(context) as { NamedType: (...a: unknown[]) => void }).NamedType(...a);
  // Hasura does not look a variable's declared type up: it compares it with the type of each
  // place the variable is used ("variable 'args' is declared as 'CharacterInputArgs!', but used
  // where 'FooCharacterInputArgs!' is expected", at that argument). A variable of an unknown type
  // gets that error at its first use; an unused one graphql-js's.
  let unknownVariables: { def: VariableDefinitionNode; args: unknown[] }[] = [];
  return {
    OperationDefinition: {
      enter() {
        unknownVariables = [];
      },
      leave(op) {
        if (unknownVariables.length === 0) return;
        const usages = context.getRecursiveVariableUsages(op);
        for (const { def, args } of unknownVariables) {
          const use = usages.find((u) => u.node.name.value === def.variable.name.value && u.type);
          if (!use) report(...args);
          else context.reportError(new GraphQLError(`Variable "$${def.variable.name.value}" of type "${print(def.type)}" used in position expecting type "${String(use.type)}".`, { nodes: [def, use.node] }));
        }
      },
    },
    NamedType(node, key, parent, path, ancestors) {
      if (schema.getType(node.name.value)) return;
      // The parent is not among the ancestors graphql-js gives.
      const def = [parent, ...ancestors].find((a): a is VariableDefinitionNode => !!a && !Array.isArray(a) && (a as ASTNode).kind === Kind.VARIABLE_DEFINITION);
      if (def) unknownVariables.push({ def, args: [node, key, parent, path, ancestors] });
      else report(node, key, parent, path, ancestors);
    },
  };
}

/*
 * Note [Text literals at marked positions]
 * Hasura reads a column's value by the column's database type, not by the GraphQL scalar the
 * schema shows for it: an integer column takes `"2147483647"`, a boolean one `"true"`, though
 * `Int` and `Boolean` refuse strings elsewhere (`limit: "1"` stays an error). A plugin marks such
 * positions: an input field or argument whose definition has `extensions: { textLiteral: true }`
 * takes a string literal (or a list of them) where its scalar refuses one; the plugin then gets
 * the string and lets its database read it. graphql-js's ValuesOfCorrectTypeRule still checks
 * everything else, and its error for any other node. A variable used only at such positions
 * takes a string too, whatever scalar it is declared with (`$id: Int!` given `"5"`), as Hasura
 * reads variables by where they are used; one used anywhere else is coerced by its declared type.
 * A scalar position marked `extensions: { uncheckedLiteral: true }` takes any scalar literal
 * (not null, a list or an object): a remote schema's argument, whose literal goes to the remote
 * as written and is the remote's to check, as Hasura passes a remote's scalar values on
 * unchecked (its error comes back from the remote).
 */
function ValuesOfCorrectType(context: ValidationContext): ASTVisitor {
  const allowed = new WeakSet<ASTNode>();
  // Variables by where they are used: a variable is a text variable when every use is marked.
  const marked = new Set<string>();
  const plain = new Set<string>();
  const checked = new Proxy(context, {
    get(target, prop) {
      if (prop === 'reportError') {
        return (e: GraphQLError) => {
          if (e.nodes?.length === 1 && allowed.has(e.nodes[0]!)) return;
          target.reportError(e);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const inner = ValuesOfCorrectTypeRule(checked) as ASTVisitor & { ObjectField?: (...a: unknown[]) => unknown };
  const mark = (def: { type: GraphQLInputType; extensions?: Readonly<Record<string, unknown>> } | null | undefined, value: ValueNode) => {
    const text = def?.extensions?.textLiteral === true;
    const unchecked = def?.extensions?.uncheckedLiteral === true && isScalarType(getNamedType(def.type));
    for (const v of value.kind === Kind.LIST ? [value, ...value.values] : [value]) {
      if (v.kind === Kind.VARIABLE) (text ? marked : plain).add(v.name.value);
      else if (text && v.kind === Kind.STRING && textFits(getNamedType(def!.type).name, v.value)) allowed.add(v);
      else if (unchecked && v.kind !== Kind.NULL && v.kind !== Kind.LIST && v.kind !== Kind.OBJECT) allowed.add(v);
    }
  };
  return {
    ...inner,
    Document: {
      leave(node) {
        const only = [...marked].filter((n) => !plain.has(n));
        if (only.length) textVariablesOf.set(node, new Set(only));
      },
    },
    Argument(node) {
      mark(context.getArgument(), node.value);
    },
    ObjectField(...args: unknown[]) {
      const node = args[0] as { name: { value: string }; value: ValueNode };
      const parent = getNamedType(context.getParentInputType());
      if (isInputObjectType(parent)) mark(parent.getFields()[node.name.value], node.value);
      return inner.ObjectField?.(...args);
    },
  };
}

/** Whether `text` is a value of the built-in scalar `scalar` written as a string (`"12"` for Int,
 * `"1.5e3"` for Float, `"true"` for Boolean); another scalar reads strings its own way. A string
 * that does not fit gets graphql-js's error, as before. */
export function textFits(scalar: string, text: string): boolean {
  if (scalar === 'Int') return /^[+-]?\d+$/.test(text);
  if (scalar === 'Float') return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text);
  if (scalar === 'Boolean') return text === 'true' || text === 'false';
  return true;
}

/** What ValuesOfCorrectType found of a validated document's variables (Prepared.textVariables). */
const textVariablesOf = new WeakMap<DocumentNode, ReadonlySet<string>>();
const NO_VARIABLES: ReadonlySet<string> = new Set();

/** graphql-js's rules but two: Hasura accepts an operation that declares a variable it does not
 * use (a client may share one variable set between several operations), and a live query that
 * selects several root fields (plugins/graphql/live.ts says which subscriptions it serves). And
 * KnownTypeNames for graphql-js's own, Hasura's check of variable positions (Note [Variable
 * positions ignore item nullability] in ./variable-positions.ts) and of values (Note [Text
 * literals at marked positions]). */
export const RULES = specifiedRules
  .filter((r) => r !== NoUnusedVariablesRule && r !== SingleFieldSubscriptionsRule)
  .map((r) =>
    r === KnownTypeNamesRule ? KnownTypeNames : r === VariablesInAllowedPositionRule ? HasuraVariablesInAllowedPosition : r === ValuesOfCorrectTypeRule ? ValuesOfCorrectType : r,
  );

/** The variables read by `@include(if: $v)`/`@skip(if: $v)` anywhere in the root selection. */
function rootConditionVariables(set: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, seen = new Set<string>(), out = new Set<string>()): Set<string> {
  for (const s of set.selections) {
    for (const d of s.directives ?? []) {
      const arg = d.arguments?.find((a) => a.name.value === 'if');
      if ((d.name.value === 'include' || d.name.value === 'skip') && arg?.value.kind === Kind.VARIABLE) out.add(arg.value.name.value);
    }
    if (s.kind === Kind.INLINE_FRAGMENT) rootConditionVariables(s.selectionSet, fragments, seen, out);
    else if (s.kind === Kind.FRAGMENT_SPREAD && !seen.has(s.name.value)) {
      seen.add(s.name.value);
      const f = fragments[s.name.value];
      if (f) rootConditionVariables(f.selectionSet, fragments, seen, out);
    }
  }
  return out;
}

/** The root fields by response key, through fragments and inline fragments, after
 * `@include`/`@skip` (lib/graphql/collect.ts, at the root). */
function collectRoot(p: Prepared, variables: Readonly<Record<string, unknown>>): Map<string, FieldNode[]> {
  return collectFields(p.schema, p.fragments, variables, undefined, p.operation.selectionSet);
}

const ROOT_TYPENAME: Record<OperationKind, string> = {
  query: JSON.stringify('query_root'),
  mutation: JSON.stringify('mutation_root'),
  subscription: JSON.stringify('subscription_root'),
};

/** Plans the root fields selected with these condition values: each RootFieldDef.plan once. */
function planRoot(p: Prepared, variables: Readonly<Record<string, unknown>>): RootFields {
  const entries: RootEntry[] = [];
  const introspection: IntrospectionRoot[] = [];
  const defs = p.roleSchema.roots[p.kind];
  for (const [responseKey, nodes] of collectRoot(p, variables)) {
    const key = `${JSON.stringify(responseKey)}:`;
    const name = nodes[0]!.name.value;
    if (name === '__typename') {
      entries.push({ key, responseKey, text: ROOT_TYPENAME[p.kind] });
      continue;
    }
    if (name === '__schema' || name === '__type') {
      entries.push({ key, responseKey });
      introspection.push({ responseKey, nodes });
      continue;
    }
    const def = defs.get(name);
    if (!def) throw new SvcError('validation-failed', `field '${name}' not found in type: '${p.schema.getRootType(p.operation.operation)?.name}'`, { path: `$.selectionSet.${name}` });
    // Fields of one response key are merged (validation made sure they can be): one field node
    // whose selection set is all of theirs.
    const field: FieldNode =
      nodes.length === 1
        ? nodes[0]!
        : { ...nodes[0]!, selectionSet: { kind: Kind.SELECTION_SET, selections: nodes.flatMap((n) => n.selectionSet?.selections ?? []) } };
    const plan = def.plan({
      field,
      schema: p.schema,
      fragments: p.fragments,
      variableDefinitions: p.operation.variableDefinitions ?? [],
      operationName: p.operation.name?.value,
      role: p.roleSchema.role,
      build: p.build,
      query: p.query,
    });
    entries.push({ key, responseKey, plan });
  }
  return { entries, introspection };
}

/** At most this many combinations of condition values are planned per document; past it, plans
 * are made per request and not kept (a document with many independent conditions). */
const MAX_MASKS = 64;

/** The planned root fields of a request whose coerced variables are `variables`. */
export function rootFields(p: Prepared, variables: Readonly<Record<string, unknown>>): RootFields {
  if (p.conditionVariables.length === 0) return (p.fields ??= planRoot(p, variables));
  let mask = '';
  for (const v of p.conditionVariables) mask += variables[v] === true ? '1' : '0';
  let fields = p.byMask.get(mask);
  if (!fields) {
    fields = planRoot(p, variables);
    if (p.byMask.size < MAX_MASKS) p.byMask.set(mask, fields);
  }
  return fields;
}
