/**
 * The query builder of the API page: a GraphiQL plugin (our own; @graphiql/plugin-explorer is not
 * among the installed packages) that shows the root fields of the schema GraphiQL introspected
 * (the role's, when the role bar set one) as a tree of checkboxes. Checking a field adds it to the
 * query in the editor, unchecking removes it, and simple arguments (scalars and enums) are typed
 * in beside it; the tree is read back from the editor's text, so editing either side keeps both
 * in step. Other arguments (where, order_by: input objects and lists) are edited in the query.
 */
import { useEffect, useMemo, useState } from 'react';
import { useEditorContext, useSchemaContext, type GraphiQLPlugin } from '@graphiql/react';
import {
  getNamedType,
  isEnumType,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  parse,
  print,
  type ArgumentNode,
  type DocumentNode,
  type FieldNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

type OpKind = 'query' | 'mutation' | 'subscription';
const OP_KINDS: OpKind[] = ['query', 'mutation', 'subscription'];

function rootOf(schema: GraphQLSchema, kind: OpKind) {
  return kind === 'query' ? schema.getQueryType() : kind === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
}

/** The fields below a type that the tree offers (objects and interfaces have fields). */
function fieldsOf(t: ReturnType<typeof getNamedType>): GraphQLField<unknown, unknown>[] {
  return isObjectType(t) || isInterfaceType(t) ? Object.values(t.getFields()) : [];
}

// ---------------------------------------------------------------------------------------------
// The document, edited immutably (AST nodes are plain objects).

const name = (value: string) => ({ kind: Kind.NAME, value }) as const;

/** A field that is not aliased: the one the tree stands for. */
const fieldIn = (set: SelectionSetNode | undefined, n: string): FieldNode | undefined =>
  set?.selections.find((s): s is FieldNode => s.kind === Kind.FIELD && s.name.value === n && !s.alias);

function findOp(doc: DocumentNode | undefined, kind: OpKind): OperationDefinitionNode | undefined {
  return doc?.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.operation === kind);
}

/** The field node at `path` under the operation, if the query has it. */
function nodeAt(op: OperationDefinitionNode | undefined, path: string[]): FieldNode | undefined {
  let set = op?.selectionSet;
  let node: FieldNode | undefined;
  for (const p of path) {
    node = fieldIn(set, p);
    if (!node) return undefined;
    set = node.selectionSet;
  }
  return node;
}

/** `doc` with the field at `path` of the `kind` operation replaced by `f(field)` (undefined:
 * removed); the operation is created when missing and removed when left empty. */
function editField(doc: DocumentNode | undefined, kind: OpKind, path: string[], f: (n: FieldNode | undefined) => FieldNode | undefined): DocumentNode {
  const defs = doc?.definitions ?? [];
  const op = findOp(doc, kind);
  const editSet = (set: SelectionSetNode | undefined, rest: string[]): SelectionSetNode => {
    const [head, ...tail] = rest;
    const selections = [...(set?.selections ?? [])];
    const at = selections.findIndex((s) => s.kind === Kind.FIELD && s.name.value === head && !s.alias);
    const before = at >= 0 ? (selections[at] as FieldNode) : undefined;
    const after = tail.length === 0 ? f(before) : before && { ...before, selectionSet: editSet(before.selectionSet, tail) };
    if (at >= 0) {
      if (after) selections[at] = after;
      else selections.splice(at, 1);
    } else if (after) selections.push(after);
    return { kind: Kind.SELECTION_SET, selections };
  };
  const selectionSet = editSet(op?.selectionSet, path);
  const next: OperationDefinitionNode = op
    ? { ...op, selectionSet }
    : { kind: Kind.OPERATION_DEFINITION, operation: kind as OperationDefinitionNode['operation'], name: name(`My${kind[0]!.toUpperCase()}${kind.slice(1)}`), selectionSet, variableDefinitions: [], directives: [] };
  const keep = selectionSet.selections.length > 0;
  const definitions = op ? defs.flatMap((d) => (d === op ? (keep ? [next] : []) : [d])) : keep ? [...defs, next] : defs;
  return { kind: Kind.DOCUMENT, definitions };
}

/** A new field node: an object field gets one leaf to be valid at once (id, else the first
 * scalar, else __typename). */
function newField(field: GraphQLField<unknown, unknown>): FieldNode {
  const children = fieldsOf(getNamedType(field.type));
  const isLeaf = isLeafType(getNamedType(field.type));
  let selectionSet: SelectionSetNode | undefined;
  if (!isLeaf) {
    const leaf = children.find((c) => c.name === 'id' && isLeafType(getNamedType(c.type)) && !c.args.some((a) => isNonNullType(a.type))) ?? children.find((c) => isLeafType(getNamedType(c.type)) && !c.args.some((a) => isNonNullType(a.type)));
    selectionSet = { kind: Kind.SELECTION_SET, selections: [{ kind: Kind.FIELD, name: name(leaf?.name ?? '__typename') }] };
  }
  return { kind: Kind.FIELD, name: name(field.name), arguments: [], directives: [], ...(selectionSet ? { selectionSet } : {}) };
}

/** An argument the tree can edit: a scalar or an enum, not a list nor an input object. */
function simple(t: GraphQLInputType): boolean {
  const inner = isNonNullType(t) ? t.ofType : t;
  return !isListType(inner) && isLeafType(inner);
}

/** The literal a typed value stands for, or undefined when it does not fit the type. */
function literal(t: GraphQLInputType, text: string): ValueNode | undefined {
  const n = getNamedType(t);
  if (isEnumType(n)) return n.getValues().some((v) => v.name === text) ? { kind: Kind.ENUM, value: text } : undefined;
  switch (n.name) {
    case 'Int':
      return /^-?\d+$/.test(text) ? { kind: Kind.INT, value: text } : undefined;
    case 'Float':
      return text.trim() !== '' && Number.isFinite(Number(text)) ? { kind: Kind.FLOAT, value: text } : undefined;
    case 'Boolean':
      return text === 'true' || text === 'false' ? { kind: Kind.BOOLEAN, value: text === 'true' } : undefined;
    default:
      return { kind: Kind.STRING, value: text };
  }
}

const shown = (v: ValueNode | undefined) => (v === undefined ? '' : v.kind === Kind.STRING ? v.value : print(v));

// ---------------------------------------------------------------------------------------------

function Explorer() {
  const { schema } = useSchemaContext({ nonNull: true });
  const { queryEditor } = useEditorContext({ nonNull: true });
  const [text, setText] = useState(() => queryEditor?.getValue() ?? '');
  const [filter, setFilter] = useState('');
  useEffect(() => {
    if (!queryEditor) return;
    const on = () => setText(queryEditor.getValue());
    on();
    queryEditor.on('change', on);
    return () => queryEditor.off('change', on);
  }, [queryEditor]);
  const doc = useMemo(() => {
    try {
      return text.trim() === '' ? undefined : parse(text);
    } catch {
      return null;
    }
  }, [text]);
  const firstKind = doc?.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)?.operation as OpKind | undefined;
  const [chosen, setKind] = useState<OpKind | undefined>();
  const kind = chosen ?? firstKind ?? 'query';
  if (!schema) return <p className="muted">Loading the schema…</p>;
  const root = rootOf(schema, kind);
  const op = doc ? findOp(doc, kind) : undefined;
  const write = (next: DocumentNode) => queryEditor?.setValue(next.definitions.length ? print(next) : '');
  const edit = (path: string[], f: (n: FieldNode | undefined) => FieldNode | undefined) => {
    if (doc === null) return;
    write(editField(doc, kind, path, f));
  };
  const fields = root ? Object.values(root.getFields()).filter((f) => f.name.toLowerCase().includes(filter.trim().toLowerCase())) : [];
  return (
    <div className="explorer" data-testid="explorer">
      <div className="graphiql-doc-explorer-title">Explorer</div>
      <div className="row">
        <label>
          Operation{' '}
          <select value={kind} onChange={(e) => setKind(e.target.value as OpKind)} data-testid="explorer-kind">
            {OP_KINDS.filter((k) => rootOf(schema, k)).map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </label>
        <label>
          Filter <input value={filter} onChange={(e) => setFilter(e.target.value)} size={12} data-testid="explorer-filter" />
        </label>
      </div>
      {doc === null && <p className="error">The query does not parse: fix it to use the explorer.</p>}
      <ul className="explorer-tree" role="tree" aria-label={`${kind} fields`}>
        {fields.map((f) => (
          <FieldItem key={f.name} field={f} path={[f.name]} node={nodeAt(op, [f.name])} edit={edit} disabled={doc === null} />
        ))}
      </ul>
    </div>
  );
}

type Edit = (path: string[], f: (n: FieldNode | undefined) => FieldNode | undefined) => void;

function FieldItem({ field, path, node, edit, disabled }: { field: GraphQLField<unknown, unknown>; path: string[]; node: FieldNode | undefined; edit: Edit; disabled: boolean }) {
  const id = path.join('.');
  const children = fieldsOf(getNamedType(field.type));
  const on = node !== undefined;
  const setArg = (arg: GraphQLArgument, value: ValueNode | undefined) =>
    edit(path, (n) => {
      if (!n) return n;
      const args: ArgumentNode[] = (n.arguments ?? []).filter((a) => a.name.value !== arg.name);
      if (value) args.push({ kind: Kind.ARGUMENT, name: name(arg.name), value });
      return { ...n, arguments: args };
    });
  return (
    <li role="treeitem" aria-expanded={children.length ? on : undefined} aria-selected={on}>
      <label className="check" title={field.description ?? undefined}>
        <input type="checkbox" checked={on} disabled={disabled} onChange={() => edit(path, (n) => (n ? undefined : newField(field)))} data-testid={`explorer-field-${id}`} /> {field.name}
        <span className="muted"> {String(field.type)}</span>
      </label>
      {on && field.args.length > 0 && (
        <div className="explorer-args">
          {field.args.map((a) =>
            simple(a.type) ? (
              <ArgInput key={a.name} arg={a} id={`${id}.${a.name}`} value={node.arguments?.find((x) => x.name.value === a.name)?.value} onChange={(v) => setArg(a, v)} />
            ) : (
              <div key={a.name} className="muted">
                {a.name}: {String(a.type)} <i>(in the query)</i>
              </div>
            ),
          )}
        </div>
      )}
      {on && children.length > 0 && (
        <ul role="group">
          {children.map((c) => (
            <FieldItem key={c.name} field={c} path={[...path, c.name]} node={fieldIn(node.selectionSet, c.name)} edit={edit} disabled={disabled} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** A simple argument's value: a list for enums and booleans, else text (kept while it does not
 * fit the type yet, such as "-" on the way to "-1"). Empty removes the argument. */
function ArgInput({ arg, id, value, onChange }: { arg: GraphQLArgument; id: string; value: ValueNode | undefined; onChange: (v: ValueNode | undefined) => void }) {
  const [draft, setDraft] = useState(shown(value));
  useEffect(() => setDraft(shown(value)), [shown(value)]);
  const n = getNamedType(arg.type);
  const set = (t: string) => {
    setDraft(t);
    if (t === '') onChange(undefined);
    else {
      const v = literal(arg.type, t);
      if (v) onChange(v);
    }
  };
  const choices = isEnumType(n) ? n.getValues().map((v) => v.name) : n.name === 'Boolean' ? ['true', 'false'] : undefined;
  return (
    <label className="explorer-arg">
      {arg.name}{' '}
      {choices ? (
        <select value={draft} onChange={(e) => set(e.target.value)} data-testid={`explorer-arg-${id}`}>
          <option value=""></option>
          {choices.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      ) : (
        <input value={draft} size={10} onChange={(e) => set(e.target.value)} placeholder={String(arg.type)} data-testid={`explorer-arg-${id}`} />
      )}
    </label>
  );
}

function ExplorerIcon() {
  return (
    <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" fill="none" stroke="currentColor" strokeWidth="1.5">
      <path d="M4 5h6M4 12h6M4 19h6M14 5h6M14 12h6M14 19h6" />
      <rect x="11" y="3.5" width="2" height="3" />
    </svg>
  );
}

export const explorerPlugin: GraphiQLPlugin = { title: 'Explorer', icon: ExplorerIcon, content: Explorer };
