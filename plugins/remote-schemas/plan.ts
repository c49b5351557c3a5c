/**
 * Planning a remote root field (Note [Planned root fields] in core/schema/contract.ts): the client's
 * selection is rewritten once, at plan time, into a document in the remote's names (Note [Two
 * names] in ./customize.ts); a request only picks its variables, sends the document and maps
 * `__typename` values back. No graphql-js execution per request.
 */
import {
  GraphQLObjectType,
  Kind,
  getNamedType,
  isInputObjectType,
  isListType,
  isNonNullType,
  valueFromASTUntyped,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLList,
  type GraphQLOutputType,
  type ObjectFieldNode,
  type ValueNode,
  isInterfaceType,
  isObjectType,
  print,
  visit,
  type ArgumentNode,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type NamedTypeNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type TypeNode,
  type VariableDefinitionNode,
} from 'graphql';
import { ExecErrors, SvcError } from '../../core/errors.js';
import type { FieldPlan, PlanInput, RunContext } from '../../core/plugin.js';
import type { JoinedField, JoinedFieldPlan, JoinPlanInput } from '../database/index.js';
import { callRemote } from './client.js';
import { JOIN, ORIGINAL, PARENT, PRESETS, SOURCE_FIELD, fullyPreset, originalName, type Preset } from './customize.js';
import type { ResolvedRemote } from './remote.js';

export interface RemoteFieldSpec {
  remote: ResolvedRemote;
  /** The namespace field's type (its fields are the remote's root fields), or the remote's
   * root type (in its names) of a field that is not under a namespace. */
  root: GraphQLObjectType;
  /** A root field not under a namespace: its exposed config (type and marks). */
  rootField?: { type: GraphQLOutputType; extensions?: Readonly<Record<string, unknown>> | null };
  kind: 'query' | 'mutation';
  /** The field is the remote's namespace: its selection is the remote's root selection. */
  namespaced: boolean;
  /** SVC_GRAPHQL_REMOTE_SCHEMA_PRIORITIZE_DATA (Note [Data and errors from a remote]). */
  prioritizeData: boolean;
  maxBytes: number;
}

/*
 * Note [Data and errors from a remote]
 * A remote may answer both `data` and `errors`. As Hasura does by default, the errors win: the
 * client gets them as the remote wrote them, with `"data": null` (Hasura's GQExecError; the engine
 * answers an ExecErrors so). With SVC_GRAPHQL_REMOTE_SCHEMA_PRIORITIZE_DATA the data wins when
 * there is any, and the errors are dropped (Hasura's prioritize-data mode); an answer with errors
 * and no data is still the errors.
 */

/** Where `__typename` sits in an answer, for mapping the remote's type names back. */
export interface Shape {
  typenames: string[];
  children: Map<string, Shape>;
  /** The remote schema relationships selected at this place (Note [Remote schema relationships]
   * in ./schema-relationships.ts). */
  joins?: ShapeJoin[];
}

/** A relationship field of the objects at a place of the answer: the remote answers its join
 * fields under hidden keys (LHS_KEY + the remote's field name); the join puts its value at `key`. */
export interface ShapeJoin {
  readonly key: string;
  readonly columns: readonly string[];
  readonly plan: JoinedFieldPlan;
}

/** The prefix of the hidden keys under which the remote answers a relationship's join fields. */
export const LHS_KEY = '__svc_lhs_';

/** The headers Hasura never forwards from the client (commonClientHeadersIgnored). */
const IGNORED = new Set([
  'content-length',
  'content-md5',
  'user-agent',
  'host',
  'origin',
  'referer',
  'accept',
  'accept-encoding',
  'accept-language',
  'accept-datetime',
  'cache-control',
  'connection',
  'dnt',
  'content-type',
  'transfer-encoding',
  'upgrade',
  'keep-alive',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
  'cookie',
]);
const FORWARDED: Record<string, string> = { host: 'x-forwarded-host', 'user-agent': 'x-forwarded-user-agent', origin: 'x-forwarded-origin' };

/**
 * The headers sent with a query (Hasura's execRemoteGQ): the configured ones win over the
 * session's variables (`X-Svc-*`, always sent), which win over the client's headers (only with
 * `forward_client_headers`, without its own `X-Svc-*` ones such as the admin secret, and with
 * Host, User-Agent and Origin as `X-Forwarded-*`).
 */
export function remoteHeaders(r: ResolvedRemote, ctx: Pick<RunContext, 'session' | 'headers'>): [string, string][] {
  const out = new Map<string, [string, string]>();
  if (r.forwardClientHeaders) {
    for (const [k, val] of Object.entries(ctx.headers)) {
      const name = k.toLowerCase();
      const fw = FORWARDED[name];
      if (fw) out.set(fw, [fw, val]);
      if (IGNORED.has(name) || name.startsWith('x-svc-') || name.startsWith('x-hasura-')) continue;
      out.set(name, [k, val]);
    }
  }
  for (const [k, val] of Object.entries(ctx.session.variables)) out.set(k.toLowerCase(), [k, val]);
  // r.headers starts with content-type and user-agent, then the configured ones.
  for (const [k, val] of r.headers) out.set(k.toLowerCase(), [k, val]);
  return [...out.values()];
}

/** The rewriting of a client's selection into the remote's document (Note [Two names]), with
 * what the request must supply when it runs: session presets and presets to merge into
 * variables. Shared by root fields and remote relationships. */
export interface Converter {
  convertSet(set: SelectionSetNode, parent: GraphQLNamedType, into: Shape, seen: ReadonlySet<string>): SelectionNode[];
  convertField(f: FieldNode, parent: GraphQLNamedType, into: Shape, seen: ReadonlySet<string>, top?: { type: GraphQLOutputType; extensions?: Readonly<Record<string, unknown>> | null }): FieldNode;
  readonly sessionPresets: { variable: string; session: string; type: string }[];
  readonly merges: { variable: string; type: GraphQLInputType; presets: PresetMap }[];
}

/** `joins`: what plans the relationship fields of the selection (absent: they are not served). */
export function makeConverter(schema: GraphQLSchema, fragments: PlanInput['fragments'], joins?: JoinPlanInput): Converter {
  const sessionPresets: { variable: string; session: string; type: string }[] = [];
  const merges: { variable: string; type: GraphQLInputType; presets: PresetMap }[] = [];

  const typeOf = (name: string): GraphQLNamedType | undefined => schema.getType(name) ?? undefined;

  // Note [Argument presets]
  // A role's presets (Note [Remote schema permissions] in ./permissions.ts) are written into the
  // remote's document here, once per plan: a static value as the literal the SDL gives, a
  // session variable as a variable of the document (`$__svc_preset_N`, its value read from the
  // session when the request runs). An input field's preset goes into an object literal the
  // client wrote, into an object passed as a variable (merged when the request runs: `merges`),
  // and, for an input type whose fields are all preset, makes the whole argument.
  const presetValue = (p: Preset): ValueNode => {
    if (!p.session) return p.value;
    const variable = `__svc_preset_${sessionPresets.length}`;
    sessionPresets.push({ variable, session: p.session, type: p.type ?? 'String' });
    return { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: variable } };
  };
  const withInputPresets = (value: ValueNode, type: GraphQLInputType, presets: PresetMap): ValueNode => {
    const named = getNamedType(type);
    if (!isInputObjectType(named)) return value;
    if (value.kind === Kind.VARIABLE) {
      merges.push({ variable: value.name.value, type, presets });
      return value;
    }
    if (value.kind === Kind.LIST) return { ...value, values: value.values.map((x) => withInputPresets(x, isListType(unwrapNonNull(type)) ? (unwrapNonNull(type) as GraphQLList<GraphQLInputType>).ofType : type, presets)) };
    if (value.kind !== Kind.OBJECT) return value;
    const own = presets.get(named.name);
    const defs = named.getFields();
    const fields: ObjectFieldNode[] = [];
    for (const f of value.fields) {
      if (own?.has(f.name.value)) continue;
      const d = defs[f.name.value];
      fields.push(d ? { ...f, value: withInputPresets(f.value, d.type, presets) } : f);
    }
    for (const [name, p] of own ?? []) fields.push({ kind: Kind.OBJECT_FIELD, name: { kind: Kind.NAME, value: name }, value: presetValue(p) });
    return { ...value, fields };
  };
  const presetObject = (t: GraphQLInputObjectType, presets: PresetMap): ValueNode => ({
    kind: Kind.OBJECT,
    fields: [...(presets.get(t.name) ?? [])].map(([name, p]) => ({ kind: Kind.OBJECT_FIELD, name: { kind: Kind.NAME, value: name }, value: presetValue(p) })),
  });
  const convertArgs = (field: FieldNode, def: { extensions?: Readonly<Record<string, unknown>> | null } | undefined): ArgumentNode[] => {
    const given = field.arguments ?? [];
    const presets = def?.extensions?.[PRESETS] as PresetMap | undefined;
    const source = def?.extensions?.[SOURCE_FIELD] as GraphQLField<unknown, unknown> | undefined;
    if (!presets || !source) return [...given];
    const parent = (def?.extensions?.[PARENT] as string | undefined) ?? '';
    const own = presets.get(`${parent}.${source.name}`);
    const args: ArgumentNode[] = [];
    for (const a of source.args) {
      const arg = (value: ValueNode): ArgumentNode => ({ kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: a.name }, value });
      const p = own?.get(a.name);
      if (p) {
        args.push(arg(presetValue(p)));
        continue;
      }
      const g = given.find((x) => x.name.value === a.name);
      const named = getNamedType(a.type);
      if (g) args.push(arg(withInputPresets(g.value, a.type, presets)));
      else if (isInputObjectType(named) && fullyPreset(named, presets)) args.push(arg(presetObject(named, presets)));
    }
    return args;
  };

  const convertSet = (set: SelectionSetNode, parent: GraphQLNamedType, into: Shape, seen: ReadonlySet<string>): SelectionNode[] => {
    const out: SelectionNode[] = [];
    for (const s of set.selections) {
      const jf = s.kind === Kind.FIELD && isObjectType(parent) ? (parent.getFields()[s.name.value]?.extensions?.[JOIN] as JoinedField | undefined) : undefined;
      if (s.kind === Kind.FIELD && jf) {
        // Note [Remote schema relationships]: the join fields under hidden keys instead.
        if (!joins) throw new SvcError('not-supported', `the remote relationship ${JSON.stringify(s.name.value)} cannot be selected here`);
        for (const c of jf.columns) out.push({ kind: Kind.FIELD, alias: { kind: Kind.NAME, value: LHS_KEY + c }, name: { kind: Kind.NAME, value: c } });
        (into.joins ??= []).push({ key: s.alias?.value ?? s.name.value, columns: jf.columns, plan: jf.plan(s, joins) });
      } else if (s.kind === Kind.FIELD) out.push(convertField(s, parent, into, seen));
      else if (s.kind === Kind.INLINE_FRAGMENT) {
        const cond = s.typeCondition ? typeOf(s.typeCondition.name.value) : parent;
        const inner = cond ?? parent;
        out.push({
          kind: Kind.INLINE_FRAGMENT,
          typeCondition: s.typeCondition ? namedNode(cond ? originalName(cond) : s.typeCondition.name.value) : undefined,
          directives: s.directives,
          selectionSet: { kind: Kind.SELECTION_SET, selections: convertSet(s.selectionSet, inner, into, seen) },
        });
      } else {
        const frag = fragments[s.name.value];
        if (!frag || seen.has(frag.name.value)) continue;
        const cond = typeOf(frag.typeCondition.name.value) ?? parent;
        out.push({
          kind: Kind.INLINE_FRAGMENT,
          typeCondition: namedNode(originalName(cond)),
          directives: s.directives,
          selectionSet: { kind: Kind.SELECTION_SET, selections: convertSet(frag.selectionSet, cond, into, new Set(seen).add(frag.name.value)) },
        });
      }
    }
    return out;
  };

  const convertField = (f: FieldNode, parent: GraphQLNamedType, into: Shape, seen: ReadonlySet<string>, top?: { type: GraphQLOutputType; extensions?: Readonly<Record<string, unknown>> | null }): FieldNode => {
    const key = f.alias?.value ?? f.name.value;
    if (f.name.value === '__typename') {
      into.typenames.push(key);
      return { ...f, alias: f.alias };
    }
    const def = top ?? (isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[f.name.value] : undefined);
    const orig = (def?.extensions?.[ORIGINAL] as string | undefined) ?? f.name.value;
    let selectionSet: SelectionSetNode | undefined;
    if (f.selectionSet && def) {
      let child = into.children.get(key);
      if (!child) into.children.set(key, (child = { typenames: [], children: new Map() }));
      selectionSet = { kind: Kind.SELECTION_SET, selections: convertSet(f.selectionSet, getNamedType(def.type), child, seen) };
    }
    return {
      kind: Kind.FIELD,
      alias: key !== orig ? { kind: Kind.NAME, value: key } : undefined,
      name: { kind: Kind.NAME, value: orig },
      arguments: convertArgs(f, def),
      directives: f.directives,
      selectionSet,
    };
  };

  return { convertSet, convertField, sessionPresets, merges };
}

export function planRemoteField(spec: RemoteFieldSpec, input: PlanInput): FieldPlan {
  const { remote } = spec;
  const cz = remote.customizer;
  const used = new Set<string>();
  const shape: Shape = { typenames: [], children: new Map() };
  const schema = input.schema;
  const { convertSet, convertField, sessionPresets, merges } = makeConverter(schema, input.fragments, input);
  const field = input.field;
  const responseKey = field.alias?.value ?? field.name.value;
  let selections: SelectionNode[];
  if (spec.namespaced) {
    selections = field.selectionSet ? convertSet(field.selectionSet, spec.root, shape, new Set()) : [];
  } else {
    const root: Shape = { typenames: [], children: new Map([[responseKey, shape]]) };
    selections = [convertField(field, spec.root, root, new Set(), spec.rootField)];
  }
  // The variables the remote's document uses, declared with the remote's type names.
  const body: OperationDefinitionNode = {
    kind: Kind.OPERATION_DEFINITION,
    operation: spec.kind === 'mutation' ? ('mutation' as never) : ('query' as never),
    name: input.operationName ? { kind: Kind.NAME, value: input.operationName } : undefined,
    selectionSet: { kind: Kind.SELECTION_SET, selections },
  };
  visit(body, {
    Variable(node) {
      used.add(node.name.value);
    },
  });
  const definitions: VariableDefinitionNode[] = [];
  for (const d of input.variableDefinitions) {
    if (!used.has(d.variable.name.value)) continue;
    definitions.push({ ...d, type: renameType(d.type, schema), directives: [] });
  }
  for (const p of sessionPresets) {
    definitions.push({ kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: p.variable } }, type: parseTypeText(p.type) });
  }
  const doc: DocumentNode = { kind: Kind.DOCUMENT, definitions: [{ ...body, variableDefinitions: definitions }] };
  const text = printOneLine(doc);
  const clientVariables = input.variableDefinitions.filter((d) => used.has(d.variable.name.value)).map((d) => d.variable.name.value);
  const mapTypes = cz.renamesTypes;
  const rename = (n: string) => cz.typeName(n);
  const opName = input.operationName;
  const joined = hasJoins(shape);

  return {
    async run(ctx) {
      const variables = variablesFor(ctx, clientVariables, sessionPresets, merges);
      const payload: Record<string, unknown> = { query: text, variables };
      if (opName) payload.operationName = opName;
      const data = await exchange(remote, ctx, payload, spec.maxBytes, spec.prioritizeData);
      let value: unknown = spec.namespaced ? data : (data as Record<string, unknown>)[responseKey];
      if (mapTypes) value = mapTypenames(value, shape, rename);
      if (joined) await spliceShapeJoins(value, shape, ctx);
      return JSON.stringify(value ?? null);
    },
  };
}

/** The variables a remote document needs for this request: the client's it uses, the session
 * presets, input-field presets merged into variables (Note [Argument presets]). */
export function variablesFor(ctx: RunContext, clientVariables: readonly string[], sessionPresets: Converter['sessionPresets'], merges: Converter['merges']): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const name of clientVariables) if (ctx.variables[name] !== undefined) variables[name] = ctx.variables[name];
  for (const p of sessionPresets) variables[p.variable] = sessionValue(ctx.session.variables, p.session, p.type);
  for (const m of merges) if (variables[m.variable] != null) variables[m.variable] = mergePresets(variables[m.variable], m.type, m.presets, ctx.session.variables);
  return variables;
}

/** One request to the remote and its answer's `data`, checked (Note [Remote answers are
 * untrusted] in ./client.ts, Note [Data and errors from a remote]). */
export async function exchange(remote: ResolvedRemote, ctx: RunContext, payload: Record<string, unknown>, maxBytes: number, prioritizeData: boolean): Promise<Record<string, unknown>> {
  // The request's cancellation (another field failed, its time ran out) ends the call.
  const cancel = ctx.signal;
  let signal: AbortSignal | undefined;
  let onAbort: (() => void) | undefined;
  if (cancel) {
    if (cancel.aborted) throw cancel.reason;
    const ac = new AbortController();
    onAbort = () => ac.abort(cancel.reason);
    cancel.addEventListener('abort', onAbort, { once: true });
    signal = ac.signal;
  }
  let answer;
  try {
    answer = await callRemote({ url: remote.url, shownUrl: remote.shownUrl, headers: remoteHeaders(remote, ctx), body: JSON.stringify(payload), timeoutMs: remote.timeoutMs, maxBytes, signal });
  } finally {
    if (onAbort) cancel!.removeEventListener('abort', onAbort);
  }
  // Hasura passes the remote's Set-Cookie headers on to the client.
  if (ctx.responseHeaders) for (const c of answer.setCookies) ctx.responseHeaders.push(['set-cookie', c]);
  const { data, errors } = answer.body;
  if (errors !== undefined && errors !== null && !Array.isArray(errors)) throw invalid(remote, '"errors" is not a list');
  if (data !== undefined && data !== null && (typeof data !== 'object' || Array.isArray(data))) throw invalid(remote, '"data" is not an object');
  const errs = (errors ?? []) as unknown[];
  const hasData = data !== undefined && data !== null;
  if (errs.length > 0 && !(prioritizeData && hasData)) throw new ExecErrors(errs);
  if (!hasData) {
    if (answer.status < 200 || answer.status >= 300) throw invalid(remote, `the remote answered with status ${answer.status}`);
    throw invalid(remote, 'the answer has neither "data" nor "errors"');
  }
  return data as Record<string, unknown>;
}

const invalid = (r: ResolvedRemote, why: string) => new SvcError('remote-schema-error', `Invalid response from remote schema ${JSON.stringify(r.shownUrl)}: ${why}`);

const namedNode = (name: string): NamedTypeNode => ({ kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: name } });

export function renameType(t: TypeNode, schema: GraphQLSchema): TypeNode {
  if (t.kind === Kind.NON_NULL_TYPE) return { ...t, type: renameType(t.type, schema) as never };
  if (t.kind === Kind.LIST_TYPE) return { ...t, type: renameType(t.type, schema) };
  const named = schema.getType(t.name.value);
  return named ? namedNode(originalName(named)) : t;
}

export function parseTypeText(s: string): TypeNode {
  if (s.endsWith('!')) return { kind: Kind.NON_NULL_TYPE, type: parseTypeText(s.slice(0, -1)) as never };
  if (s.startsWith('[')) return { kind: Kind.LIST_TYPE, type: parseTypeText(s.slice(1, -1)) };
  return namedNode(s);
}

type PresetMap = ReadonlyMap<string, ReadonlyMap<string, Preset>>;

/** A session variable's text as the argument's type takes it (Hasura parses it for scalars). */
function sessionValue(session: Readonly<Record<string, string>>, name: string, type: string): unknown {
  const text = session[name];
  if (text === undefined) throw new SvcError('not-found', `${JSON.stringify(name)} session variable expected, but not found`);
  const base = type.replace(/[!]/g, '');
  const wrong = (what: string) => new SvcError('coercion-error', `${JSON.stringify(text)} cannot be coerced into ${what} value`);
  if (base === 'Int') {
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) throw wrong('an Int');
    return Number(text);
  }
  if (base === 'Float') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) throw wrong('a Float');
    return n;
  }
  if (base === 'Boolean') {
    if (text !== 'true' && text !== 'false') throw wrong('a Boolean');
    return text === 'true';
  }
  return text;
}

/** A variable's value with the input fields' presets put in (Note [Argument presets]). */
function mergePresets(value: unknown, type: GraphQLInputType, presets: PresetMap, session: Readonly<Record<string, string>>): unknown {
  const t = unwrapNonNull(type);
  if (value === null || value === undefined) return value;
  if (isListType(t)) return Array.isArray(value) ? value.map((x) => mergePresets(x, t.ofType as GraphQLInputType, presets, session)) : mergePresets(value, t.ofType as GraphQLInputType, presets, session);
  if (!isInputObjectType(t) || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  const defs = t.getFields();
  for (const [k, x] of Object.entries(out)) if (defs[k]) out[k] = mergePresets(x, defs[k]!.type, presets, session);
  for (const [name, p] of presets.get(t.name) ?? []) out[name] = p.session ? sessionValue(session, p.session, p.type ?? 'String') : valueFromASTUntyped(p.value);
  return out;
}

function unwrapNonNull(t: GraphQLInputType): GraphQLInputType {
  return isNonNullType(t) ? (t.ofType as GraphQLInputType) : t;
}

/** The answer with each `__typename` (where the selection put one) in the customized names. */
export function mapTypenames(value: unknown, shape: Shape, rename: (n: string) => string): unknown {
  if (Array.isArray(value)) return value.map((x) => mapTypenames(x, shape, rename));
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  for (const k of shape.typenames) if (typeof o[k] === 'string') o[k] = rename(o[k] as string);
  for (const [k, child] of shape.children) if (k in o) o[k] = mapTypenames(o[k], child, rename);
  return o;
}


/** Whether a selection has remote schema relationships anywhere. */
export function hasJoins(shape: Shape): boolean {
  if (shape.joins?.length) return true;
  for (const c of shape.children.values()) if (hasJoins(c)) return true;
  return false;
}

/** Objects at a place of the answer (lists walked through) that carry a join's hidden keys: a
 * place under an interface or union holds objects of other types too, which the remote answered
 * without them. */
function objectsAt(value: unknown, out: Record<string, unknown>[]): Record<string, unknown>[] {
  if (Array.isArray(value)) for (const x of value) objectsAt(x, out);
  else if (value !== null && typeof value === 'object') out.push(value as Record<string, unknown>);
  return out;
}

/** The answer with the remote schema relationships' values in place, each join once for all the
 * objects of its place (Note [Remote schema relationships] in ./schema-relationships.ts); the
 * hidden join keys removed. */
export async function spliceShapeJoins(value: unknown, shape: Shape, ctx: RunContext): Promise<void> {
  const work: Promise<void>[] = [];
  const walk = (v: unknown, sh: Shape) => {
    if (v === null || v === undefined) return;
    const objects = objectsAt(v, []);
    for (const [k, child] of sh.children) {
      const inner = objects.map((o) => o[k]).filter((x) => x !== undefined && x !== null);
      if (inner.length) walk(inner, child);
    }
    for (const j of sh.joins ?? []) {
      const first = LHS_KEY + j.columns[0];
      const parents = objects.filter((o) => first in o);
      if (parents.length === 0) continue;
      const keys = parents.map((p) => Object.fromEntries(j.columns.map((c) => [c, p[LHS_KEY + c]])));
      work.push(
        j.plan.run(keys, ctx).then((values) => {
          for (let i = 0; i < parents.length; i++) parents[i]![j.key] = values[i] ?? null;
        }),
      );
    }
  };
  walk(value, shape);
  await Promise.all(work);
  // Removed after every join read them (two joins may share a field).
  const clean = (v: unknown, sh: Shape) => {
    if (v === null || v === undefined) return;
    const objects = objectsAt(v, []);
    for (const [k, child] of sh.children) clean(objects.map((o) => o[k]), child);
    for (const j of sh.joins ?? []) for (const o of objects) for (const c of j.columns) delete o[LHS_KEY + c];
  };
  clean(value, shape);
}

/*
 * Note [The remote's document on one line]
 * The document a root field sends its remote is printed on one line, as Hasura prints it
 * (`query  { user(id: "1") { id } }`: the operation's type, its name (none: an empty one, hence
 * two spaces), its variables, then the selection set, `{ ` and ` }` around selections that one
 * space separates). The remote's errors come back with `locations` in that document, and the
 * clients (and the conformance suite) read the same line and column as from Hasura.
 */
export function printOneLine(doc: DocumentNode): string {
  const directives = (ds: readonly DirectiveNode[] | undefined) => (ds ?? []).map((d) => ` ${print(d)}`).join('');
  const set = (s: SelectionSetNode): string => `{ ${s.selections.map(selection).join(' ')} }`;
  const selection = (s: SelectionNode): string => {
    if (s.kind === Kind.FIELD) {
      const args = s.arguments?.length ? `(${s.arguments.map((a) => `${a.name.value}: ${print(a.value)}`).join(', ')})` : '';
      return `${s.alias ? `${s.alias.value}: ` : ''}${s.name.value}${args}${directives(s.directives)}${s.selectionSet ? ` ${set(s.selectionSet)}` : ''}`;
    }
    if (s.kind === Kind.INLINE_FRAGMENT) return `...${s.typeCondition ? ` on ${s.typeCondition.name.value}` : ''}${directives(s.directives)} ${set(s.selectionSet)}`;
    return `...${s.name.value}${directives(s.directives)}`;
  };
  return doc.definitions
    .map((d) => {
      if (d.kind === Kind.OPERATION_DEFINITION) {
        const vars = d.variableDefinitions?.length ? `(${d.variableDefinitions.map((v) => print(v)).join(', ')})` : '';
        return `${d.operation} ${d.name?.value ?? ''}${vars}${directives(d.directives)} ${set(d.selectionSet)}`;
      }
      return print(d);
    })
    .join(' ');
}
