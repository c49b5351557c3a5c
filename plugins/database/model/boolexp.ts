/**
 * Boolean expressions (the `filter` and `check` of permissions, Hasura's `BoolExp`): their
 * structure (checked and normalised when a request is parsed), their validation against a source's
 * schema (in the build), what they refer to (for dependency checks) and how they are rewritten when
 * a column, relationship or computed field is renamed.
 *
 * Shape: an object whose keys are `_and`/`_or` (a list of expressions), `_not` (an expression),
 * `_exists` (`{_table, _where}`), or a field of the table the expression is on:
 * - a column: an object of operators (`{_eq: 1, _gt: 0}`) or a bare value meaning `_eq`;
 * - a relationship: an expression on the relationship's remote table;
 * - a computed field: operators on its scalar result, or an expression on the table it returns.
 * Every operator has a legacy `$` spelling (`$or`, `$eq`, `$neq`, ...). Values may be session
 * variables (`X-Svc-User-Id`, any case), resolved when a request runs.
 *
 * See Note [Stored boolean expressions].
 */
import * as v from '../../../core/valibot.js';
import { jsonTypeName } from '../../../core/validation.js';
import { qualifiedTableSchema, qtDisplay, qtKey, sameTable } from './meta.js';
import type {
  BoolExp,
  ColumnType,
  ComputedFieldMeta,
  Dialect,
  FunctionInfo,
  Introspection,
  OperatorSpec,
  QualifiedTable,
  RelationshipMeta,
  TableInfo,
  TableMeta,
} from './types.js';

/*
 * Note [Stored boolean expressions]
 * Hasura parses the logical structure of an expression when the request is parsed and stores
 * what it re-serialises: `$or`/`$and`/`$not`/`$exists` become `_or`/`_and`/`_not`/`_exists`, and
 * `_exists._table` becomes `{schema, name}`. What a field key means (column, relationship,
 * computed field) depends on the schema, so field values are stored as given (a relationship's
 * nested expression keeps its spelling). Whether the fields exist, the operators fit the column
 * types and the values parse is checked in the build, against the live schema, so that a column
 * dropped behind the engine's back shows up as an inconsistent permission.
 */

export type { BoolExp };

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** `"name"`, as Hasura quotes names in messages. */
export const dquote = (s: string) => `"${s}"`;

const LOGICAL: Record<string, '_and' | '_or' | '_not' | '_exists'> = {
  _and: '_and',
  $and: '_and',
  _or: '_or',
  $or: '_or',
  _not: '_not',
  $not: '_not',
  _exists: '_exists',
  $exists: '_exists',
};

/** The session-variable prefix (Hasura: `x-hasura-`), compared case-insensitively. */
export const SESSION_VARIABLE_PREFIX = 'x-svc-';

export function isSessionVariable(x: unknown): x is string {
  return typeof x === 'string' && x.toLowerCase().startsWith(SESSION_VARIABLE_PREFIX);
}

// ---------------------------------------------------------------------------------------------
// Structure (request parsing)

export class BoolExpParseError extends Error {
  constructor(
    readonly path: (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

/** Checks the logical structure of an expression and normalises it (Note [Stored boolean expressions]);
 * an unqualified `_exists._table` is in `defaultSchema` (the source kind's `Dialect.defaultSchema`). */
export function parseBoolExp(x: unknown, defaultSchema: string, path: (string | number)[] = []): BoolExp {
  if (!isObject(x)) throw new BoolExpParseError(path, 'expecting an Object for boolean exp');
  const entries: [string, unknown][] = [];
  for (const [k, val] of Object.entries(x)) {
    const op = LOGICAL[k];
    if (op === '_and' || op === '_or') {
      if (!Array.isArray(val)) throw new BoolExpParseError([...path, k], `parsing [] failed, expected Array, but encountered ${jsonTypeName(val)}`);
      entries.push([op, val.map((e, i) => parseBoolExp(e, defaultSchema, [...path, k, i]))]);
    } else if (op === '_not') entries.push([op, parseBoolExp(val, defaultSchema, [...path, k])]);
    else if (op === '_exists') entries.push([op, parseExists(val, defaultSchema, [...path, k])]);
    else entries.push([k, val]);
  }
  // `{_or: .., $or: ..}` has the same key twice once normalised; Hasura then writes the conjunction out.
  if (new Set(entries.map(([k]) => k)).size === entries.length) return Object.fromEntries(entries);
  return { _and: entries.map(([k, val]) => ({ [k]: val })) };
}

function parseExists(x: unknown, defaultSchema: string, path: (string | number)[]): BoolExp {
  if (!isObject(x)) throw new BoolExpParseError(path, `parsing GExists failed, expected Object, but encountered ${jsonTypeName(x)}`);
  if (!('_table' in x)) throw new BoolExpParseError(path, 'key "_table" not found');
  const table = v.safeParse(qualifiedTableSchema(defaultSchema), x._table);
  if (!table.success) throw new BoolExpParseError([...path, '_table'], table.issues[0].message);
  if (!('_where' in x)) throw new BoolExpParseError(path, 'key "_where" not found');
  return { _table: table.output, _where: parseBoolExp(x._where, defaultSchema, [...path, '_where']) };
}

/** valibot schema of a boolean expression in request args of a source kind whose default schema
 * is `defaultSchema`: structure errors are `parse-failed` at their path. Built once per default schema. */
export function boolExpSchema(defaultSchema: string) {
  let s = boolExpSchemas.get(defaultSchema);
  if (!s) boolExpSchemas.set(defaultSchema, (s = makeBoolExpSchema(defaultSchema)));
  return s;
}

const makeBoolExpSchema = (defaultSchema: string) => v.pipe(
  v.unknown(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return parseBoolExp(dataset.value, defaultSchema);
    } catch (e) {
      if (!(e instanceof BoolExpParseError)) throw e;
      const path = e.path.map((key) => ({ type: 'unknown' as const, origin: 'value' as const, input: undefined, key, value: undefined }));
      addIssue({ message: e.message, path: path.length ? (path as [(typeof path)[number], ...typeof path]) : undefined });
      return NEVER;
    }
  }),
);
const boolExpSchemas = new Map<string, ReturnType<typeof makeBoolExpSchema>>();

// ---------------------------------------------------------------------------------------------
// The schema an expression is resolved against

/** What one source offers to expressions: its tracked tables, with their introspection when known. */
export interface SourceView {
  /** A tracked table; `info` is absent when only the metadata is known (or the table is missing). */
  table(qt: QualifiedTable): { meta: TableMeta; info?: TableInfo } | undefined;
  /** The source's functions (computed fields), when known. */
  functions?: Introspection['functions'];
  /** Whether tables without introspection count as missing (validation) or as unknown (references). */
  strict: boolean;
  /** The source kind's dialect: types and operators (Note [Dialects] in types.ts). Only a view
   * for references may lack it (the kind's plugin is disabled); operators it does not know are
   * then taken as comparisons with a value. */
  dialect: Dialect | undefined;
}

/** A view of a source from its tracked tables and (when available) its introspection. */
export function sourceView(tables: readonly TableMeta[], intro: Introspection | null | undefined, strict: boolean, dialect: Dialect | undefined): SourceView {
  const byKey = new Map<string, { meta: TableMeta; info?: TableInfo }>();
  for (const t of tables) byKey.set(qtKey(t.table), { meta: t, info: intro?.tables.get(qtKey(t.table)) });
  return { table: (qt) => byKey.get(qtKey(qt)), functions: intro?.functions, strict, dialect };
}

export type { ColumnType };

/** What a computed field returns (a set of rows of a tracked table, a scalar, or rows of the
 * columns its function declares), and whether its function takes arguments besides the row and
 * the session (it then cannot be used in expressions). */
type ComputedResult = { table?: QualifiedTable; scalar?: ColumnType; columns?: true; inputArgs: boolean };

export type Field =
  | { kind: 'column'; type?: ColumnType }
  | { kind: 'relationship'; remote: QualifiedTable | undefined }
  | { kind: 'computed_field'; result: ComputedResult | undefined };

/** A table name in stored metadata; an unqualified one is in `defaultSchema`, the source kind's
 * (undefined when the kind is not known: only `{schema, name}` is then a name). */
function parseTableName(x: unknown, defaultSchema: string | undefined): QualifiedTable | undefined {
  if (defaultSchema === undefined) return isObject(x) && typeof x.schema === 'string' && typeof x.name === 'string' ? { schema: x.schema, name: x.name } : undefined;
  const r = v.safeParse(qualifiedTableSchema(defaultSchema), x);
  return r.success ? r.output : undefined;
}

/** The remote table of a relationship (an object relationship on a foreign key of its own table
 * needs the introspection); `defaultSchema` as for parseTableName. */
export function relationshipRemote(rel: RelationshipMeta, info: TableInfo | undefined, defaultSchema: string | undefined): QualifiedTable | undefined {
  const using = rel.using ?? {};
  const fk = using.foreign_key_constraint_on;
  if (typeof fk === 'string' || Array.isArray(fk)) {
    const cols = (typeof fk === 'string' ? [fk] : fk).map(String);
    const c = info?.foreignKeys.find((f) => f.columns.length === cols.length && cols.every((x) => f.columns.includes(x)));
    return c ? { schema: c.refSchema, name: c.refTable } : undefined;
  }
  if (isObject(fk)) return parseTableName(fk.table, defaultSchema);
  const manual = using.manual_configuration;
  if (isObject(manual)) return parseTableName(manual.remote_table, defaultSchema);
  return undefined;
}

function computedResult(view: SourceView, cf: ComputedFieldMeta): ComputedResult | undefined {
  const overloads = view.functions?.get(qtKey(cf.definition.function));
  if (!overloads || overloads.length !== 1) return undefined;
  const fn: FunctionInfo = overloads[0]!;
  // Note [Computed fields by argument mapping]: the rows are the return table's, the unmapped
  // arguments the user's.
  const mapping = cf.definition.argument_mapping;
  if (mapping !== undefined) {
    const rows = cf.definition.return_table;
    const inputArgs = fn.args.some((a) => a.name === null || !(a.name in mapping));
    if (!rows) return fn.returnColumns ? { columns: true, inputArgs } : undefined;
    return view.table(rows) ? { table: rows, inputArgs } : undefined;
  }
  const tableArg = cf.definition.table_argument;
  const inputArgs = fn.args.some((a, i) => (tableArg ? a.name !== tableArg : i !== 0) && a.name !== cf.definition.session_argument);
  const returned = { schema: fn.returnTypeSchema, name: fn.returnType };
  if (fn.returnTypeKind === 'composite' && view.table(returned)) return fn.returnsSet ? { table: returned, inputArgs } : undefined;
  if (fn.returnsSet || fn.returnTypeKind === 'composite' || fn.returnTypeKind === 'pseudo') return undefined;
  return { scalar: functionReturnType(fn), inputArgs };
}

/** A function's return type as a column type (a scalar computed field's value). */
export function functionReturnType(fn: FunctionInfo): ColumnType {
  return { type: fn.returnType, udt: fn.returnType, typeSchema: fn.returnTypeSchema, typeKind: fn.returnTypeKind, elementKind: fn.returnElementKind };
}

/** What `name` is on a table: a column, a relationship or a computed field (undefined: nothing). */
export function fieldOf(view: SourceView, t: { meta: TableMeta; info?: TableInfo }, name: string): Field | undefined {
  const col = t.info?.columns.find((c) => c.name === name);
  if (col) return { kind: 'column', type: col };
  const rel = [...(t.meta.object_relationships ?? []), ...(t.meta.array_relationships ?? [])].find((r) => r.name === name);
  if (rel) return { kind: 'relationship', remote: relationshipRemote(rel, t.info, view.dialect?.defaultSchema) };
  const cf = (t.meta.computed_fields ?? []).find((c) => c.name === name);
  if (cf) return { kind: 'computed_field', result: computedResult(view, cf) };
  // Without introspection every other name may be a column.
  return t.info ? undefined : { kind: 'column' };
}

// ---------------------------------------------------------------------------------------------
// Validation and references

/** Something a permission refers to. `onType`: it compares or assigns a static value, so the column's type matters. */
export type BoolExpRef =
  | { kind: 'column'; table: QualifiedTable; column: string; onType: boolean }
  | { kind: 'relationship'; table: QualifiedTable; name: string }
  | { kind: 'computed_field'; table: QualifiedTable; name: string }
  | { kind: 'table'; table: QualifiedTable };

/** A validation failure, worded as Hasura words it (it becomes the reason of an inconsistent object). */
export class BoolExpError extends Error {}

/** The comparison operators of every source kind, by name without their `_`/`$` prefix (Hasura
 * `parseBoolExpOperations`); a dialect adds its own (Note [Dialects] in types.ts). */
const GENERIC_OPERATORS: Record<string, OperatorSpec> = {
  eq: { operand: 'one' },
  ne: { operand: 'one' },
  neq: { operand: 'one' },
  in: { operand: 'many' },
  nin: { operand: 'many' },
  gt: { operand: 'one' },
  lt: { operand: 'one' },
  gte: { operand: 'one' },
  lte: { operand: 'one' },
  is_null: { operand: 'bool' },
  ceq: { operand: 'column' },
  cne: { operand: 'column' },
  cneq: { operand: 'column' },
  cgt: { operand: 'column' },
  clt: { operand: 'column' },
  cgte: { operand: 'column' },
  clte: { operand: 'column' },
};

/** The generic operators a GraphQL `<scalar>_comparison_exp` offers, with their operands (the
 * column-comparison ones are for permissions only, as in Hasura). */
export const GENERIC_OPERATOR_NAMES: readonly (readonly [string, OperatorSpec['operand']])[] = [
  ['eq', 'one'],
  ['gt', 'one'],
  ['gte', 'one'],
  ['in', 'many'],
  ['is_null', 'bool'],
  ['lt', 'one'],
  ['lte', 'one'],
  ['neq', 'one'],
  ['nin', 'many'],
];

/** Taken for an operator of a kind whose dialect is unknown (SourceView.dialect). */
const UNKNOWN_OPERATOR: OperatorSpec = { operand: 'one' };

/** The operator named `op` (`_eq` or `$eq`) in `dialect`, if there is one. */
export function operator(op: string, dialect: Dialect | undefined): OperatorSpec | undefined {
  if (!op.startsWith('_') && !op.startsWith('$')) return undefined;
  const name = op.slice(1);
  if (Object.hasOwn(GENERIC_OPERATORS, name)) return GENERIC_OPERATORS[name];
  if (!dialect) return UNKNOWN_OPERATOR;
  return Object.hasOwn(dialect.operators, name) ? dialect.operators[name] : undefined;
}

type TableRef = { table: QualifiedTable; meta: TableMeta; info?: TableInfo };

class Walker {
  readonly refs: BoolExpRef[] = [];
  constructor(private readonly view: SourceView) {}

  private typeName(t: ColumnType): string {
    return this.view.dialect?.scalar(t).name ?? t.udt;
  }

  /** A table as messages name it (qualified when the dialect is not known). */
  private display(qt: QualifiedTable): string {
    return qtDisplay(qt, this.view.dialect?.defaultSchema ?? '');
  }

  private fail(message: string): void {
    if (this.view.strict) throw new BoolExpError(message);
  }

  private resolve(qt: QualifiedTable): TableRef | undefined {
    const t = this.view.table(qt);
    if (!t || (this.view.strict && !t.info)) return undefined;
    return { table: qt, ...t };
  }

  exp(exp: unknown, t: TableRef, root: TableRef): void {
    if (!isObject(exp)) return this.fail('expecting an Object for boolean exp');
    for (const [k, val] of Object.entries(exp)) {
      const op = LOGICAL[k];
      if (op === '_and' || op === '_or') {
        if (Array.isArray(val)) for (const e of val) this.exp(e, t, root);
        else this.fail(`parsing [] failed, expected Array, but encountered ${jsonTypeName(val)}`);
      } else if (op === '_not') this.exp(val, t, root);
      else if (op === '_exists') this.exists(val, root);
      else this.field(k, val, t, root);
    }
  }

  private exists(val: unknown, root: TableRef): void {
    const qt = isObject(val) ? parseTableName(val._table, this.view.dialect?.defaultSchema) : undefined;
    if (!qt || !isObject(val)) return this.fail('expecting an object {_table, _where} for _exists');
    const target = this.resolve(qt);
    if (!target) return this.fail(`table ${dquote(this.display(qt))} does not exist`);
    this.refs.push({ kind: 'table', table: qt });
    this.exp(val._where, target, root);
  }

  private field(name: string, val: unknown, t: TableRef, root: TableRef): void {
    const f = fieldOf(this.view, t, name);
    if (!f) return this.fail(`${dquote(name)} does not exist`);
    if (f.kind === 'column') {
      if (f.type && this.view.dialect && !this.view.dialect.scalar(f.type).comparable) return this.fail('JSON column can not be part of boolean expression');
      const onType = this.ops(name, f.type, val, t, root);
      this.refs.push({ kind: 'column', table: t.table, column: name, onType });
      return;
    }
    if (f.kind === 'relationship') {
      // An inconsistent relationship (its remote table is gone) is not a field of the table.
      const remote = f.remote && this.resolve(f.remote);
      if (!remote) return this.fail(`${dquote(name)} does not exist`);
      this.refs.push({ kind: 'relationship', table: t.table, name });
      return this.exp(val, remote, root);
    }
    const r = f.result;
    if (!r) return this.fail(`${dquote(name)} does not exist`);
    this.refs.push({ kind: 'computed_field', table: t.table, name });
    if (r.inputArgs) return this.fail('Computed columns with input arguments can not be part of the where clause');
    // Hasura has no boolean expression for such a computed field (its `ReturnsOthers`).
    if (r.columns) return this.fail(`computed field ${dquote(name)} returns arbitrary column fields; it can not be part of a boolean expression`);
    if (r.table) {
      const target = this.resolve(r.table);
      if (!target) return this.fail(`table ${dquote(this.display(r.table))} does not exist`);
      return this.exp(val, target, root);
    }
    this.ops(name, r.scalar, val, t, root);
  }

  /** Checks the operators applied to a column; returns whether a static value is compared to it. */
  private ops(name: string, type: ColumnType | undefined, val: unknown, t: TableRef, root: TableRef): boolean {
    if (!isObject(val)) {
      this.value(type, val);
      return !isSessionVariable(val);
    }
    let onType = false;
    for (const [opName, operand] of Object.entries(val)) {
      const spec = operator(opName, this.view.dialect);
      if (!spec) {
        this.fail(`Unknown operator: ${opName}`);
        continue;
      }
      if (type && spec.guard && !spec.guard.ok(type)) {
        this.fail(` is of type ${dquote(this.typeName(type))}; this operator works only on columns of type ${spec.guard.expected}`);
      }
      switch (spec.operand) {
        case 'one':
          this.value(type, operand);
          onType ||= !isSessionVariable(operand);
          break;
        case 'many':
          this.values(type, operand);
          onType ||= !isSessionVariable(operand);
          break;
        case 'text':
          this.text(operand);
          onType ||= !isSessionVariable(operand);
          break;
        case 'texts':
          if (isSessionVariable(operand)) break;
          if (!Array.isArray(operand)) this.fail(`parsing [] failed, expected Array, but encountered ${jsonTypeName(operand)}`);
          else for (const x of operand) this.text(x);
          onType = true;
          break;
        case 'object':
          if (!isObject(operand)) this.fail(`parsing Object failed, expected Object, but encountered ${jsonTypeName(operand)}`);
          onType = true;
          break;
        case 'bool':
          if (typeof operand !== 'boolean') this.fail(`parsing Bool failed, expected Boolean, but encountered ${jsonTypeName(operand)}`);
          break;
        case 'column':
          this.columnOperand(name, type, operand, t, root);
          break;
        case 'cast':
          onType = this.cast(name, type, operand, t, root) || onType;
          break;
      }
    }
    return onType;
  }

  /** `_ceq: "col"` (a column of the same table), `["col"]`, or `["$", "col"]` (a column of the table the permission is on). */
  private columnOperand(name: string, type: ColumnType | undefined, operand: unknown, t: TableRef, root: TableRef): void {
    let target = t;
    let col: unknown = operand;
    if (Array.isArray(operand)) {
      if (operand.length === 0) return this.fail('path cannot be empty');
      if (operand.length === 1) col = operand[0];
      else if (operand.length === 2 && operand[0] === '$') [target, col] = [root, operand[1]];
      else return this.fail('Relationship references are not supported in column comparison RHS');
    } else if (typeof operand !== 'string') return this.fail('a boolean expression JSON must be either a string or an array');
    if (typeof col !== 'string') return this.fail(`parsing Text failed, expected String, but encountered ${jsonTypeName(col)}`);
    const f = fieldOf(this.view, target, col);
    if (!f) return this.fail(`column ${dquote(col)} does not exist`);
    if (f.kind !== 'column') {
      return this.fail(`expecting a database column; but, ${dquote(col)} is a ${f.kind === 'relationship' ? 'relationship' : 'computed field'}; column operators can only compare postgres columns`);
    }
    if (type && f.type && (type.udt !== f.type.udt || type.typeKind !== f.type.typeKind)) {
      this.fail(`incompatible column types: ${dquote(name)} has type ${dquote(this.typeName(type))}, but ${dquote(col)} has type ${dquote(this.typeName(f.type))}`);
    }
    this.refs.push({ kind: 'column', table: target.table, column: col, onType: true });
  }

  private cast(name: string, type: ColumnType | undefined, operand: unknown, t: TableRef, root: TableRef): boolean {
    if (!isObject(operand)) {
      this.fail(`parsing HashMap failed, expected Object, but encountered ${jsonTypeName(operand)}`);
      return false;
    }
    let onType = false;
    const castTo = this.view.dialect?.castTo;
    for (const [target, ops] of Object.entries(operand)) {
      const to = castTo?.(type, target);
      if (type && !to) this.fail(`cannot cast column of type ${dquote(this.typeName(type))} to type ${dquote(target)}`);
      onType = this.ops(name, to ?? castTo?.(undefined, target), ops, t, root) || onType;
    }
    return onType;
  }

  private values(type: ColumnType | undefined, val: unknown): void {
    if (isSessionVariable(val)) return;
    if (!Array.isArray(val)) return this.fail(`parsing [] failed, expected Array, but encountered ${jsonTypeName(val)}`);
    for (const x of val) this.value(type, x);
  }

  /** A value compared to (or assigned to) a column of `type`: a session variable, null, or a JSON value of the type. */
  value(type: ColumnType | undefined, val: unknown): void {
    if (!type || !this.view.dialect || val === null || isSessionVariable(val)) return;
    const why = this.view.dialect.scalar(type).parse(val);
    if (why) this.fail(why);
  }

  /** A string operand (`_has_key`, `_matches`), whatever the column's type. */
  private text(val: unknown): void {
    if (val !== null && !isSessionVariable(val) && typeof val !== 'string') {
      this.fail(`parsing Text failed, expected String, but encountered ${jsonTypeName(val)}`);
    }
  }
}

/**
 * Validates an expression on `table` against the live schema (`view.strict`), returning what it
 * refers to; throws BoolExpError with Hasura's message for the first problem.
 */
export function checkBoolExp(exp: unknown, table: QualifiedTable, view: SourceView): BoolExpRef[] {
  const t = view.table(table);
  if (!t) throw new BoolExpError(`table ${dquote(qtDisplay(table, view.dialect?.defaultSchema ?? ''))} does not exist`);
  const root = { table, ...t };
  const w = new Walker(view);
  w.exp(exp, root, root);
  return w.refs;
}

/** What a stored expression refers to, as far as a non-strict `view` tells (never throws). */
export function boolExpRefs(exp: unknown, table: QualifiedTable, view: SourceView): BoolExpRef[] {
  const t = view.table(table);
  if (!t) return [];
  const root = { table, ...t };
  const w = new Walker({ ...view, strict: false });
  w.exp(exp, root, root);
  return w.refs;
}

/** Checks a value assigned to a column (permission `set` presets). */
export function checkColumnValue(type: ColumnType, val: unknown, view: SourceView): void {
  new Walker(view).value(type, val);
}

// ---------------------------------------------------------------------------------------------
// Renames

/** A rename of a field of a table, to be applied wherever metadata refers to it. */
export interface FieldRename {
  kind: 'column' | 'relationship' | 'computed_field';
  table: QualifiedTable;
  from: string;
  to: string;
}

/**
 * Rewrites an expression on `table` for a renamed column, relationship or computed field of any
 * table it reaches: field keys, and the column operands of `_ceq`-style operators (`"col"`,
 * `["col"]`, `["$", "col"]`). `view` must describe the schema before the rename (the old names
 * still resolve). Returns `exp` itself when nothing changes (Note [Sharing] in core/types.ts).
 *
 * Used for permissions (see `renameInPermissions` in metadata/permissions.ts); any other metadata that
 * stores boolean expressions can use it the same way.
 */
export function renameInBoolExp(exp: unknown, table: QualifiedTable, rename: FieldRename, view: SourceView): unknown {
  const t = view.table(table);
  if (!t) return exp;
  const root = { table, ...t };
  return renameExp(exp, root, root, rename, view);
}

function renameExp(exp: unknown, t: TableRef, root: TableRef, rn: FieldRename, view: SourceView): unknown {
  if (!isObject(exp)) return exp;
  let changed = false;
  const out: [string, unknown][] = [];
  for (const [k, val] of Object.entries(exp)) {
    let key = k;
    let next = val;
    const op = LOGICAL[k];
    if (op === '_and' || op === '_or') next = Array.isArray(val) ? mapShared(val, (e) => renameExp(e, t, root, rn, view)) : val;
    else if (op === '_not') next = renameExp(val, t, root, rn, view);
    else if (op === '_exists') {
      const qt = isObject(val) ? parseTableName(val._table, view.dialect?.defaultSchema) : undefined;
      const target = qt && view.table(qt);
      if (qt && target && isObject(val)) {
        const where = renameExp(val._where, { table: qt, ...target }, root, rn, view);
        if (where !== val._where) next = { ...val, _where: where };
      }
    } else {
      // A name the introspection no longer knows is the column's old name (run_sql renamed it).
      const f = fieldOf(view, t, k) ?? { kind: 'column' as const };
      if (f.kind === rn.kind && k === rn.from && sameTable(t.table, rn.table)) key = rn.to;
      if (f.kind === 'relationship') {
        const target = f.remote && view.table(f.remote);
        if (f.remote && target) next = renameExp(val, { table: f.remote, ...target }, root, rn, view);
      } else if (f.kind === 'computed_field') {
        const target = f.result?.table && view.table(f.result.table);
        if (f.result?.table && target) next = renameExp(val, { table: f.result.table, ...target }, root, rn, view);
        else next = renameOperands(val, t, root, rn, view.dialect);
      } else next = renameOperands(val, t, root, rn, view.dialect);
    }
    if (key !== k || next !== val) changed = true;
    out.push([key, next]);
  }
  return changed ? Object.fromEntries(out) : exp;
}

/** Renames a column in the operands of column-comparison operators (and inside `_cast`). */
function renameOperands(val: unknown, t: TableRef, root: TableRef, rn: FieldRename, dialect: Dialect | undefined): unknown {
  if (!isObject(val) || rn.kind !== 'column') return val;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [op, operand] of Object.entries(val)) {
    let next = operand;
    const spec = operator(op, dialect);
    if (spec?.operand === 'column') {
      const here = sameTable(t.table, rn.table);
      if (typeof operand === 'string' && here && operand === rn.from) next = rn.to;
      else if (Array.isArray(operand) && operand.length === 1 && here && operand[0] === rn.from) next = [rn.to];
      else if (Array.isArray(operand) && operand.length === 2 && operand[0] === '$' && operand[1] === rn.from && sameTable(root.table, rn.table)) next = ['$', rn.to];
    } else if (spec?.operand === 'cast' && isObject(operand)) {
      const casted: Record<string, unknown> = {};
      let c = false;
      for (const [ty, ops] of Object.entries(operand)) {
        casted[ty] = renameOperands(ops, t, root, rn, dialect);
        c ||= casted[ty] !== ops;
      }
      if (c) next = casted;
    }
    if (next !== operand) changed = true;
    out[op] = next;
  }
  return changed ? out : val;
}

/** Points `_exists` at a renamed table (run_sql renames; see Note [Renames] in service.ts);
 * `defaultSchema` as for parseTableName. */
export function renameTableInBoolExp(exp: unknown, from: QualifiedTable, to: QualifiedTable, defaultSchema: string | undefined): unknown {
  if (Array.isArray(exp)) return mapShared(exp, (e) => renameTableInBoolExp(e, from, to, defaultSchema));
  if (!isObject(exp)) return exp;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(exp)) {
    let next = renameTableInBoolExp(val, from, to, defaultSchema);
    if (LOGICAL[k] === '_exists' && isObject(next)) {
      const t = parseTableName(next._table, defaultSchema);
      if (t && sameTable(t, from)) next = { ...next, _table: to };
    }
    if (next !== val) changed = true;
    out[k] = next;
  }
  return changed ? out : exp;
}

function mapShared<T>(list: T[], fn: (x: T) => T): T[] {
  let changed = false;
  const out = list.map((x) => {
    const y = fn(x);
    if (y !== x) changed = true;
    return y;
  });
  return changed ? out : list;
}

