/**
 * The query IR of the data API: what a GraphQL root field (and later the legacy `select`, mutations'
 * returning parts and subscriptions) asks of one source, with permissions already folded in. A
 * source kind's dialect compiles it to one statement (`Dialect.compileSelect`). It names tables and
 * columns by their source names; GraphQL names only appear as the JSON keys of the output.
 *
 * See Note [Values in the IR].
 */
import type { ColumnType, QualifiedTable, ScalarType } from '../model/scalars.js';

/*
 * Note [Values in the IR]
 * A plan is compiled once per (role, document, operation) and run many times, so a value in the IR
 * is a reference, never spliced into SQL: a literal of the document, a GraphQL variable (bound
 * from the request) or a session variable (bound from the session). The compiler turns each into
 * a bind parameter cast to the column's type, and records how to get its text at run time
 * (`ParamSource`). A session variable the request does not carry is an error when the statement
 * runs (`missing session variable`), never a dropped condition.
 */
export type Value =
  | { k: 'lit'; v: unknown }
  /** A variable, or with `path` a leaf inside its value (Note [Statements per variable shape] in
   * plugins/database/schema/shapes.ts). */
  | { k: 'var'; name: string; path?: readonly (string | number)[] }
  | { k: 'session'; name: string }
  /** All the session variables as a JSON object (a function's `session_argument`). */
  | { k: 'session_json' }
  /** An operator's object operand whose fields are values of their own (`_st_d_within: {from:
   * X-Svc-Geom, distance: 1}` in a permission); only the dialect's compiler reads it. */
  | { k: 'object'; fields: Readonly<Record<string, Value>> };

/**
 * A call of a SQL function (a computed field, a tracked function): its arguments in the
 * function's order, positional until the first that has `name` (PostgreSQL's named notation, used
 * once an argument with a default is left out). `row` is the table row the call is made on.
 */
export interface FunctionCallIR {
  function: QualifiedTable;
  /** `array`: the argument is of an array type, given as a JSON array (Note [Array columns] in
   * plugins/postgres/dialect.ts). */
  args: (
    | { k: 'row'; name?: string }
    /** A column of the row the call is made on (a computed field's `argument_mapping`). */
    | { k: 'column'; column: string; bindAs: string; name?: string }
    | { k: 'value'; value: Value; bindAs: string; name?: string; array?: true }
  )[];
}

/** The row a computed field is called on, when its table's alias is not the table itself: a row
 * of `table`'s type built from its columns (in table order). */
export interface RowOf {
  table: QualifiedTable;
  columns: readonly string[];
}

/** Where a bind parameter's value comes from at run time, and the SQL type it is cast to. */
export type ParamSource = (
  | Value
  /** Many values in one parameter: each item's text (null for a null), given to `format` as a
   * list (Note [Rows bound by column] in plugins/postgres/sql/compile-mutation.ts). */
  | { k: 'items'; items: readonly ParamSource[] }
  /** The answers of the statement's steps (`CompiledQuery.steps`), in order, as a JSON array of
   * their `json` values: bound by the runner once the steps ran. */
  | { k: 'steps' }
  /** The answer of the statement's step `step` (its `json`), which this step of the same field
   * reads a row of an earlier one from: bound by the runner once that step ran. */
  | { k: 'answer'; step: number }
) & {
  json?: boolean;
  /** The dialect's text form of the value (PostgreSQL: a JSON array as an array literal). */
  format?: (value: unknown) => string;
};

/** A boolean expression on the rows of one table. */
export type BoolIR =
  | { t: 'true' }
  | { t: 'false' }
  | { t: 'and'; of: BoolIR[] }
  | { t: 'or'; of: BoolIR[] }
  | { t: 'not'; e: BoolIR }
  /** `column <op> value`; `op` is the operator name without `_` (`eq`, `in`, `like`, `is_null`).
   * `cast`: the SQL type the column is cast to first (`_cast`); `scalar` is then the target's. */
  | { t: 'cmp'; column: string; type: ColumnType; scalar: ScalarType; op: string; value: Value; cast?: string; redact?: BoolIR }
  /** `column <op> other column` (`_ceq`): of the same table, or of the permission's root table (`$`). */
  | { t: 'ccmp'; column: string; op: string; other: string; root: boolean }
  /** Rows for which the relationship has a matching remote row that satisfies `e`. */
  | { t: 'rel'; remote: QualifiedTable; mapping: readonly (readonly [string, string])[]; e: BoolIR }
  /** `_exists`: some row of `table` satisfies `e` (not correlated but through `ccmp` to the root). */
  | { t: 'exists'; table: QualifiedTable; e: BoolIR }
  /** A scalar computed field of the row `<op> value`. */
  | { t: 'fcmp'; call: FunctionCallIR; scalar: ScalarType; op: string; value: Value }
  /** A set-returning computed field of the row has a row that satisfies `e`. */
  | { t: 'frows'; call: FunctionCallIR; e: BoolIR };

export type OrderDir = 'asc' | 'asc_nulls_first' | 'asc_nulls_last' | 'desc' | 'desc_nulls_first' | 'desc_nulls_last';

/** One `order by` key: a column of the table, or a column reached through object relationships. */
export interface OrderItem {
  /** Object relationships to follow, outermost first (each with the remote table's filter folded
   * in). `unique`: the mapping's remote columns hold the remote's primary key or a unique
   * constraint, so at most one row matches and a dialect may join the remote table instead of
   * reading the key by a per-row subquery (Note [Order keys by joins] in the PostgreSQL compiler). */
  path: { remote: QualifiedTable; mapping: readonly (readonly [string, string])[]; filter: BoolIR; unique?: boolean }[];
  column: string;
  /** A scalar computed field of the row (then `column` is only its name). */
  call?: FunctionCallIR;
  /** An aggregate of an array relationship's rows (the remote's filter folded in): `count`, or
   * `fn` of `column` of the remote (then `column` is the remote's). */
  agg?: { remote: QualifiedTable; mapping: readonly (readonly [string, string])[]; filter: BoolIR; fn: string };
  dir: OrderDir;
  /** Of the key's column or computed field, on its own table: an inherited role's column shown only where this holds (Note [Inherited roles] in
   * model/inherit.ts): the value is `CASE WHEN redact THEN value END`. */
  redact?: BoolIR;
}

/** The rows a selection reads: filter (the permission's ANDed with the request's), order, window. */
export interface RowsIR {
  table: QualifiedTable;
  /** The rows come from this call (of a function returning `table`'s rows), not the table. A
   * function that declares its own result columns (Note [Computed fields by argument mapping]
   * in plugins/database) has no table: `table` is then the function's name, read by nothing. */
  from?: FunctionCallIR;
  where: BoolIR;
  orderBy: OrderItem[];
  /** A value (literal or variable); the permission limit caps it (`limitCap`). */
  limit?: Value;
  limitCap?: number;
  offset?: Value;
  /** `distinct on` columns (order by them first, as PostgreSQL requires). */
  distinctOn?: string[];
  /** Per `distinctOn` column, an inherited role's redaction (Note [Inherited roles] in
   * model/inherit.ts): rows are told apart by the value the role sees. */
  distinctRedact?: (BoolIR | undefined)[];
}

/** Where an inherited role sees a value that it reads from a selection's rows (Note [Inherited
 * roles] in model/inherit.ts): `e` on the row, which is `row` built from the selection's alias (a
 * computed field in `e` is called on a row of the table's own type). */
export interface Redaction {
  e: BoolIR;
  row: RowOf;
}

/** An output field of an object: its JSON key and what it holds. */
export type FieldIR =
  /** `asText`: the value as a JSON string (the legacy API gives big numbers so, as Hasura does).
   * `path`: the value of a json/jsonb column at a JSON path (ir/json-path.ts): a literal of its
   * parsed keys, or a variable holding the path's text. */
  | { key: string; k: 'column'; column: string; scalar: ScalarType; asText?: boolean; path?: Value; redact?: Redaction }
  | { key: string; k: 'typename'; name: string }
  /** `unique`: the mapping's remote columns hold a key of the remote table, so at most one row
   * matches (Note [Object relationships by joins] in the PostgreSQL compiler). */
  | { key: string; k: 'object'; mapping: readonly (readonly [string, string])[]; select: ObjectIR; rows: RowsIR; unique?: boolean }
  | { key: string; k: 'array'; mapping: readonly (readonly [string, string])[]; select: ObjectIR; rows: RowsIR }
  | { key: string; k: 'array_aggregate'; mapping: readonly (readonly [string, string])[]; agg: AggregateIR }
  /** A scalar computed field: the call on the row. */
  | { key: string; k: 'computed'; call: FunctionCallIR; row: RowOf; scalar: ScalarType; asText?: boolean; redact?: Redaction }
  /** A set-returning computed field: its rows (`rows.from` is the call on the row). */
  | { key: string; k: 'computed_rows'; row: RowOf; rows: RowsIR; select: ObjectIR }
  /** `<rel>_groups`: the array relationship's rows grouped (Note [Grouped aggregates]). */
  | { key: string; k: 'array_groups'; mapping: readonly (readonly [string, string])[]; groups: GroupsIR };

export interface ObjectIR {
  fields: FieldIR[];
}

/** An aggregate selection: `aggregate { count sum {..} ... }` and `nodes`. */
export interface AggregateIR {
  rows: RowsIR;
  fields: AggregateField[];
}

export type AggregateField =
  | { key: string; k: 'typename'; name: string }
  | { key: string; k: 'nodes'; select: ObjectIR }
  | { key: string; k: 'aggregate'; fields: AggregateOp[] };

export type AggregateOp =
  | { key: string; k: 'typename'; name: string }
  /** `redact`: per column, as FieldIR's (Note [Inherited roles] in model/inherit.ts). */
  | { key: string; k: 'count'; columns?: string[]; distinct: boolean; redact?: readonly (Redaction | undefined)[] }
  /** `sum`, `avg`, `min`, `max`, `stddev`...: the function applied per column (`scalar`: the column's type). */
  | { key: string; k: 'fn'; fn: string; columns: { key: string; column?: string; scalar?: ScalarType; typename?: string; asText?: boolean; redact?: Redaction }[] };

/** A root field of a query. `single`: one object or null (`_by_pk`); else a list. `cursor`
 * (a streaming subscription's list): the statement also returns, as the text column `cursor`,
 * the first order key of the last row (null when there is none), where the stream goes on. */
export type RootIR =
  | { k: 'select'; rows: RowsIR; select: ObjectIR; single: boolean; cursor?: boolean }
  | { k: 'aggregate'; agg: AggregateIR }
  | { k: 'groups'; groups: GroupsIR };

/*
 * Note [Grouped aggregates]
 * `<t>_groups` (and `<rel>_groups`) partitions the rows a role may see (its filter and the
 * request's `where`, applied before grouping) by keys, and gives per group the keys' values and
 * aggregates of its rows (the functions `<t>_aggregate_fields` offers). A key is a column of the
 * table or of a row reached through object relationships (the remote's filter folded in, as for
 * an order key: a row the role may not see gives null), optionally truncated to a unit of time.
 * `having` filters the groups by aggregates, `orderBy` orders them (the keys, ascending, always
 * follow as the last order keys, so that groups come in one order and live queries compare equal
 * results equal), `limit`/`offset` window them, the permission's limit caps how many come.
 * No key is one group of every row (as `_aggregate`). The schema side is
 * plugins/database/schema/groups.ts, the SQL plugins/postgres/sql/compile-groups.ts.
 */

/** A grouping key: `column` of the table, or of the row reached through `path` (object
 * relationships, outermost first, as OrderItem's). */
export interface GroupKeyIR {
  path: OrderItem['path'];
  column: string;
  scalar: ScalarType;
  /** The column's value truncated to this unit (date and time columns). */
  truncate?: 'hour' | 'day' | 'week' | 'month' | 'quarter' | 'year';
  /** The column's inherited-role redaction on its own table (OrderItem's `redact`). */
  redact?: BoolIR;
}

/** An aggregate of a group's rows: `count` of them, or `fn` of one column. */
export interface AggregateTerm {
  fn: string;
  column?: string;
  redact?: Redaction;
}

/** What a group's `keys` object holds: key `index`'s value, an object relationship's keys, `__typename`. */
export type GroupKeyField =
  | { key: string; k: 'typename'; name: string }
  | { key: string; k: 'key'; index: number; scalar: ScalarType; asText?: boolean }
  | { key: string; k: 'object'; fields: GroupKeyField[] };

export type GroupField =
  | { key: string; k: 'typename'; name: string }
  | { key: string; k: 'keys'; fields: GroupKeyField[] }
  | { key: string; k: 'aggregate'; fields: AggregateOp[] };

export interface GroupsIR {
  table: QualifiedTable;
  /** The rows grouped: the role's filter and the request's `where`. */
  where: BoolIR;
  keys: GroupKeyIR[];
  /** A condition on the columns `agg0`, `agg1`...: the values of `terms`, in order. */
  having?: { terms: AggregateTerm[]; e: BoolIR };
  /** Group order keys: a key by index, or an aggregate. */
  orderBy: ({ k: 'key'; index: number; dir: OrderDir } | { k: 'agg'; term: AggregateTerm; dir: OrderDir })[];
  limit?: Value;
  limitCap?: number;
  offset?: Value;
  fields: GroupField[];
}

/** How `Dialect.compileSelect` compiles. `multiplexed`: one statement for many bindings of the
 * same parameters (live queries, Note [Live queries] in core/schema/contract.ts): the dialect's
 * CompiledQuery then has `batch`, and its rows carry the binding's index. */
export interface SelectOptions {
  multiplexed?: boolean;
  /** The caller can write a list from the kind's own text of its rows (CompiledQuery.records): a
   * kind that writes JSON more cheaply so may answer so (PostgreSQL: Note [Lists as records]). */
  records?: boolean;
  /** The source's configuration (as the metadata keeps it), for what a source configures about
   * its statements (BigQuery's `global_select_limit`). A compiled plan lives as long as the build
   * that made it, so a changed configuration compiles again. */
  configuration?: Readonly<Record<string, unknown>>;
}

/*
 * Note [Mutations in the IR]
 * A mutation root field is one statement (Note [Mutation statements] in the PostgreSQL compiler)
 * whose single row has the field's value as JSON text (`json`); when a row it writes fails the
 * role's check, the statement itself fails (Dialect.mutationFailure says why), so nothing of it
 * is written, and the request's transaction takes the rest back. The role's permission is
 * folded in when planning: the filter into `where`, the check into `check`, the presets into the
 * values, the column lists into what the schema accepts.
 */

/** What a mutation root field returns: `single`, the row or null (`_by_pk`, `_one`); `multi`,
 * the fields of `<t>_mutation_response` by response key. */
export type MutationOutput =
  | { k: 'single'; select: ObjectIR; filter?: BoolIR }
  | { k: 'multi'; fields: MutationField[] };

/** `filter`: the role's select filter, which the rows it reads back must pass (`affected_rows`
 * counts every row written). */
export type MutationField =
  | { key: string; k: 'affected_rows' }
  | { key: string; k: 'returning'; select: ObjectIR; filter?: BoolIR }
  | { key: string; k: 'typename'; name: string };

/** A value of an insert or update: a bound value cast to the column's type, or the column's
 * default. A value for an array column may be given as a JSON array (bound as an array literal). */
export type ColumnValue = { k: 'value'; value: Value } | { k: 'default' };

/**
 * The rows inserted into one table, with what they bring through relationships (nested inserts,
 * Note [Nested inserts]): `before`, rows of object relationships, inserted first, whose remote
 * columns give this row's own columns; `after`, rows of array relationships, inserted after it,
 * whose remote columns are given by this row's own.
 */
export interface InsertRowIR {
  /** Column name -> value; a column left out takes its default. */
  values: ReadonlyMap<string, ColumnValue>;
  before: NestedInsert[];
  after: NestedInsert[];
}

/** Rows inserted through a relationship: mapping pairs (this row's column, the remote's). */
export interface NestedInsert {
  relationship: string;
  mapping: readonly (readonly [string, string])[];
  insert: InsertIR;
}

/** A column an insert's rows may give: its type (for the casts); `nullDefault`: a row that
 * leaves it out writes null (it has no default, identity or generation); `default`: its own
 * default (ColumnInfo.default), which such a row writes (checked unchanged by its key when the
 * statement runs). Either lets a row that leaves it out be bound with rows that give it (Note [Rows bound
 * by column] in plugins/postgres/sql/compile-mutation.ts). */
export interface InsertColumn {
  scalar: ScalarType;
  nullDefault?: true;
  default?: { sql: string; key: string };
}

export interface InsertIR {
  table: QualifiedTable;
  /** Every column the rows may give (InsertColumn). */
  columns: ReadonlyMap<string, InsertColumn>;
  rows: InsertRowIR[];
  /** Columns each row takes from its parent's row (rows through an array relationship), which
   * no row gives itself. */
  parentColumns?: readonly string[];
  onConflict?: {
    /** A constraint by name, or the columns of a unique index; neither: any conflict. */
    constraint?: string;
    columns?: string[];
    /** Columns set from the proposed row on conflict; empty (and no `set`): do nothing. */
    update: string[];
    /** Columns the role's update presets set on conflict. */
    set?: ReadonlyMap<string, ColumnValue>;
    /** Which existing rows may be updated: the request's `where` and the role's update filter. */
    where: BoolIR;
    /** The role's update check on the updated row. */
    check: BoolIR;
  };
  /** The role's insert check on every new row. */
  check: BoolIR;
  /** As UpdateIR's. */
  tableColumns?: readonly string[];
}

/** A root insert: the rows and what the field returns. */
export interface InsertRootIR {
  insert: InsertIR;
  output: MutationOutput;
}

/** How an update changes a column (`_set`, `_inc`, the jsonb operators; `mul` and `default` are
 * the legacy API's). */
export type UpdateOp = 'set' | 'inc' | 'mul' | 'default' | 'append' | 'prepend' | 'delete_key' | 'delete_elem' | 'delete_at_path';

export interface UpdateIR {
  table: QualifiedTable;
  /** The rows to update: the request's where and the role's update filter. */
  where: BoolIR;
  /** Empty only with `nested`: the rows are then not written, only the parents of its writes. */
  set: { column: string; scalar: ScalarType; op: UpdateOp; value?: Value }[];
  /** The role's update check on every updated row (its new values). */
  check: BoolIR;
  output: MutationOutput;
  /** Writes through the relationships of the rows (`_nested`, Note [Nested updates] in
   * plugins/database/schema/nested-update.ts); `key` is then the table's primary key. */
  nested?: NestedWriteIR[];
  key?: readonly string[];
  /** The table's columns, in order (its model's): what the statement keeps of each row it
   * writes, where the kind keeps columns rather than the whole row (PostgreSQL: Note [Written
   * rows as columns] in plugins/postgres/sql/compile-mutation.ts); absent: the whole row. */
  tableColumns?: readonly string[];
}

/** The writes through one relationship of the rows another write of the mutation wrote (its
 * parents): in this order, the deletes, the updates, the inserts (Note [Nested updates]). */
export interface NestedWriteIR {
  relationship: string;
  /** Pairs (parent's column, remote's column). */
  mapping: readonly (readonly [string, string])[];
  table: QualifiedTable;
  /** The remote table's primary key; none for a relationship that only inserts. */
  key?: readonly string[];
  /** The remote table's columns, as UpdateIR's. */
  tableColumns?: readonly string[];
  /** The remote rows of the parents that match `where` (the request's and the role's filter). */
  delete?: { where: BoolIR };
  update?: { where: BoolIR; set: UpdateIR['set']; check: BoolIR; nested: NestedWriteIR[] };
  /** Rows inserted for every parent, the remote's mapped columns taken from the parent. */
  insert?: NestedInsertIR;
}

export interface NestedInsertIR {
  /** Every column the rows may give (InsertColumn). */
  columns: ReadonlyMap<string, InsertColumn>;
  /** Each row's values (a column left out takes its default) and the rows it brings through
   * array relationships (inserted for it, as for a parent). */
  rows: { values: ReadonlyMap<string, ColumnValue>; after: NestedWriteIR[] }[];
  /** The role's insert check on every new row. */
  check: BoolIR;
}

export interface DeleteIR {
  table: QualifiedTable;
  where: BoolIR;
  output: MutationOutput;
  /** As UpdateIR's. */
  tableColumns?: readonly string[];
}

/** Updates that each name one row by the table's primary key and set the same columns with the
 * same operators, as one statement (`update_<t>_many`'s: Note [Updates by key] in
 * plugins/postgres/sql/compile-mutation.ts). Its answer is each update's, in order, joined by commas. */
export interface UpdateRowsIR {
  table: QualifiedTable;
  /** The primary key's columns. */
  key: readonly { column: string; scalar: ScalarType }[];
  /** What every update sets: the columns, in its order, with their operator. */
  set: readonly { column: string; scalar: ScalarType; op: 'set' | 'inc' }[];
  /** Each update: its key's values (in `key`'s order) and the values it sets (in `set`'s); no
   * two name the same row. */
  rows: readonly { key: readonly Value[]; values: readonly Value[] }[];
  /** The role's update filter and check. */
  filter: BoolIR;
  check: BoolIR;
  /** What each update answers, of the row it updated. */
  output: Extract<MutationOutput, { k: 'multi' }>;
  /** As UpdateIR's. */
  tableColumns?: readonly string[];
}

/** A mutation root field's statement (Note [Mutations in the IR]). */
export type MutationIR = ({ k: 'insert' } & InsertRootIR) | ({ k: 'update' } & UpdateIR) | ({ k: 'update_rows' } & UpdateRowsIR) | ({ k: 'delete' } & DeleteIR);

/** An insert of a mutation statement that must write a row, for the rows that depend on it
 * (Note [Nested inserts] in plugins/postgres/sql/compile-mutation.ts): an object relationship's row
 * (`relationship`), a row with array relationship rows, or a level of such rows inserted as a set
 * (`at` the InsertIR). `table`: where that insert writes. */
export interface ZeroCheck {
  table: QualifiedTable;
  relationship?: string;
  at: InsertRowIR | NestedInsert | InsertIR;
}

/** What a dialect gives back: one statement returning one row with one text column `json` (and,
 * for a mutation, a boolean `ok`: Note [Mutations in the IR]). */
export interface CompiledQuery {
  sql: string;
  params: ParamSource[];
  /** A mutation's zero checks, by the index its error names (`mutationFailure`). */
  zeroes?: readonly ZeroCheck[];
  /** The column defaults a mutation's statement wrote in, by the index its error names when one
   * changed since (`mutationFailure`). */
  defaults?: readonly { table: QualifiedTable; column: string }[];
  /** Statements run before this one, in order, in the request's transaction (a mutation in
   * steps: Note [Batches in steps] in plugins/postgres/sql/insert-plan.ts); each answers one row
   * with `json`, which this statement reads through its `steps` parameter. */
  steps?: readonly CompiledQuery[];
  /** A multiplexed statement (SelectOptions): its bind parameters for many bindings, each the
   * texts of `params` (as one statement would bind them); its rows are `{i, json, cursor?}`,
   * one per binding, `i` its 1-based index, in order. */
  batch?: (rows: readonly (readonly (string | null)[])[]) => unknown[];
  /** Asked by SelectOptions.records: the statement's one value is the kind's own text of the
   * list's rows, not JSON, and `write` makes it the field's JSON text as UTF-8 bytes (Note
   * [Answers as bytes] in core/schema/contract.ts), given the value's bytes as
   * the source sent them (SqlExecutor.query `raw`), null for NULL. `rows`: how, as the kind
   * describes it (POST /v1/graphql/explain shows it). */
  records?: { rows: unknown; write(value: Uint8Array | null): Uint8Array | Promise<Uint8Array> };
  /** The statement's JSON text (`json`, its first column) may be read as the bytes the source
   * sent (SqlExecutor.query `raw`) and answered as they are (Note [Answers as bytes] in
   * core/schema/contract.ts): set by a kind whose executor answers `raw`. */
  bytes?: boolean;
  /** The statement follows the values of its parameters, not only their shape: never kept for
   * a shape of its variables (Note [Statements per variable shape] in
   * plugins/database/schema/shapes.ts). */
  perValue?: boolean;
}
