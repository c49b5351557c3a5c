/**
 * Types of the relational-source framework: the metadata shapes (Hasura v2), the introspection
 * model every source kind produces, and the driver contract a source kind implements.
 */
import type * as v from 'valibot';
import type { FieldNode, FragmentDefinitionNode, GraphQLFieldConfig, GraphQLSchema, VariableDefinitionNode } from 'graphql';
import type { BuildContext, BuildResult, CancelSignal, InconsistentObject, Metadata, OperationDef, RootFieldDef, RunContext, TypeRegistry } from '../../../core/plugin.js';
import type { ErrorCode } from '../../../core/errors.js';
import type { CompiledQuery, MutationIR, RootIR, SelectOptions } from '../ir/types.js';
import type { AggregateFunction, Aggregates, ColumnInfo, ColumnType, QualifiedFunction, QualifiedTable, ScalarCategory, ScalarType, TypeKind } from './scalars.js';

export type { AggregateFunction, Aggregates, ColumnInfo, ColumnType, QualifiedFunction, QualifiedTable, ScalarCategory, ScalarType, TypeKind };

// ---------------------------------------------------------------------------------------------
// Metadata shapes (as exported)


export interface TableConfig {
  custom_name?: string;
  identifier?: string;
  custom_root_fields?: Record<string, unknown>;
  custom_column_names?: Record<string, string>;
  column_config?: Record<string, { custom_name?: string; comment?: string }>;
  comment?: string;
}

export interface RelationshipMeta {
  name: string;
  using: Record<string, unknown>;
  comment?: string | null;
}

export interface ComputedFieldMeta {
  name: string;
  /** `table_argument`/`session_argument`: a kind whose functions take the row (PostgreSQL);
   * `argument_mapping`/`return_table`: a kind whose functions take columns (BigQuery), Note
   * [Computed fields by argument mapping] in plugins/database/metadata/computed-fields.ts. */
  definition: {
    function: QualifiedFunction;
    table_argument?: string | null;
    session_argument?: string | null;
    argument_mapping?: Record<string, string>;
    return_table?: QualifiedTable;
  };
  comment?: string | null;
}

export interface PermissionMeta {
  role: string;
  permission: Record<string, unknown>;
  comment?: string | null;
}

/** A tracked table. Keys in Hasura's export order; empty lists are left out. */
export interface TableMeta {
  table: QualifiedTable;
  is_enum?: boolean;
  configuration?: TableConfig;
  object_relationships?: RelationshipMeta[];
  array_relationships?: RelationshipMeta[];
  computed_fields?: ComputedFieldMeta[];
  remote_relationships?: unknown[];
  insert_permissions?: PermissionMeta[];
  select_permissions?: PermissionMeta[];
  update_permissions?: PermissionMeta[];
  delete_permissions?: PermissionMeta[];
  event_triggers?: unknown[];
  [key: string]: unknown;
}

export interface FunctionMeta {
  function: QualifiedFunction;
  configuration?: { custom_name?: string; custom_root_fields?: Record<string, string>; session_argument?: string; exposed_as?: 'query' | 'mutation' };
  permissions?: { role: string }[];
  comment?: string;
}

export interface SourceMeta {
  name: string;
  kind: string;
  tables: TableMeta[];
  functions?: FunctionMeta[];
  configuration: Record<string, unknown>;
  customization?: Record<string, unknown>;
  [key: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// Introspection (one catalog query per source, cached)



export interface ForeignKeyInfo {
  name: string;
  columns: string[];
  refSchema: string;
  refTable: string;
  refColumns: string[];
}

export interface TableInfo {
  schema: string;
  name: string;
  /** An identity that survives a rename (PostgreSQL's oid, SQL Server's object_id), by which a
   * schema change is followed (metadata/schema-diff.ts); absent where the kind has none, and then
   * the table is followed by its name (a rename is a drop and a create). */
  oid?: number | string;
  relation: 'table' | 'view' | 'materialized_view' | 'foreign_table' | 'partitioned_table';
  columns: ColumnInfo[];
  primaryKey: { name: string; columns: string[] } | null;
  uniqueConstraints: { name: string; columns: string[] }[];
  foreignKeys: ForeignKeyInfo[];
  /** Check constraints, triggers etc. are not needed for the metadata API. */
  description: string | null;
  viewInfo: { insertable: boolean; updatable: boolean; deletable: boolean } | null;
}

export interface FunctionArgInfo {
  name: string | null;
  type: string;
  typeSchema: string;
  typeKind: TypeKind;
  /** An array type's element kind; null or absent otherwise. */
  elementKind?: TypeKind | null;
  hasDefault: boolean;
}

export interface FunctionInfo {
  schema: string;
  name: string;
  /** As TableInfo.oid. */
  oid?: number | string;
  args: FunctionArgInfo[];
  returnType: string;
  returnTypeSchema: string;
  /** `composite` is a table row when it is a table's row type. */
  returnTypeKind: TypeKind;
  /** An array return type's element kind; null or absent otherwise. */
  returnElementKind?: TypeKind | null;
  returnsSet: boolean;
  /** Whether the last argument is VARIADIC. */
  variadic: boolean;
  volatility: 'immutable' | 'stable' | 'volatile';
  /** 'f' function, 'p' procedure, 'a' aggregate, 'w' window, 't' table-valued function (BigQuery's
   * TABLE FUNCTION) */
  kind: string;
  /** A table-valued function's declared result columns (BigQuery's `RETURNS TABLE<...>`), in
   * order; absent when it declares none (its rows are then a tracked table's, `return_table`).
   * `type` is the type as the source prints it ('' when it has none), `udt` and `typeKind` as a
   * column's (ColumnInfo), `type` and `base` when absent. */
  returnColumns?: { name: string; type: string; udt?: string; typeKind?: TypeKind }[];
  description: string | null;
}

export interface Introspection {
  /** keyed by tableKey(schema, name) */
  tables: Map<string, TableInfo>;
  /** keyed by tableKey(schema, name); overloads share a key */
  functions: Map<string, FunctionInfo[]>;
  /** Scalar and enum types (for enum tables and computed-field return types), keyed by tableKey. */
  types: Map<string, { schema: string; name: string; kind: string; enumValues?: string[] }>;
}

// ---------------------------------------------------------------------------------------------
// Driver contract (a source kind)

/** Runs SQL on a source, as the driver understands it. */
/** How SqlExecutor.query runs a statement. */
export interface QueryOptions {
  prepare?: boolean;
  signal?: CancelSignal;
  raw?: boolean;
}

export interface SqlExecutor {
  /** Runs one parameterised statement and returns its rows as objects. `prepare: true` asks for a
   * prepared statement (a GraphQL plan's text is fixed, so it is prepared once per connection and
   * then only bound) where the source allows them; an executor without them, or a source that must
   * not name statements (a PostgreSQL source with `use_prepared_statements: false`, which may be
   * behind a transaction pooler), ignores it.
   * `signal`: cancel the statement when it aborts (RunContext.signal). `raw`: each row is the
   * array of its values' bytes as the source sent them (null for NULL), for a CompiledQuery with
   * `records` or `bytes`; only a kind whose compiler answers those is asked. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], opts?: QueryOptions): Promise<T[]>;
}

export interface SqlTransaction extends SqlExecutor {
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export interface SourceConnection {
  readonly executor: SqlExecutor;
  /** Where reads that may lag go (GraphQL queries and subscription refetches): a read replica
   * when the source has some (Note [Read replicas] in model/replicas.ts); absent:
   * the executor. */
  readonly readExecutor?: SqlExecutor;
  introspect(exec?: SqlExecutor): Promise<Introspection>;
  /** Opens a transaction on a connection of its own; the caller commits or rolls it back.
   * `session`: the request's session variables (lower-cased names), which the kind makes
   * readable for the transaction, as Hasura sets `hasura.user` for triggers (PostgreSQL: the
   * setting `svc.user` as their JSON); a kind with nothing to read them ignores them. A failure
   * of that setup may be reported by the transaction's first statement. */
  transaction(opts?: { readOnly?: boolean; session?: Readonly<Record<string, string>> }): Promise<SqlTransaction>;
  /** The database's plan of a statement with these parameters, as lines (`POST
   * /v1/graphql/explain`; PostgreSQL: EXPLAIN's `QUERY PLAN`). Absent: the kind cannot explain,
   * and the Explain API answers `not-supported`. */
  explain?(sql: string, params: readonly (string | null)[]): Promise<string[]>;
  /** A raw value's bytes as a field answers them (Note [Answers as bytes] in
   * core/schema/contract.ts), lent where the kind takes their buffer back once the answer is sent
   * (Note [Lent answer bytes] there; PostgreSQL's: Note [Read buffers given back] in
   * plugins/postgres/connection/pg-socket.ts). Absent: the value as it is. */
  answerBytes?(value: Uint8Array): Uint8Array;
  /** Checks that the source can be reached (used by add_source). */
  ping(): Promise<void>;
  /** LISTENs on `channel` on a connection of its own (optional: a kind without notifications
   * has none): `onNotify` gets each notification's payload, `onListen` runs whenever the LISTEN is
   * in place, the first time and after a reconnect (notifications may have been missed meanwhile). */
  listen?(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<{ unlisten(): Promise<void> }>;
  /** Each read replica (Note [Read replicas] in model/replicas.ts), for metrics:
   * whether reads go to it now, the reads it could not serve, its pool. */
  replicaStates?(): { name: string; up: boolean; failures: number; inUse: number; max: number }[];
  /** Connections in use (by a statement or held by a transaction) and the pool's size, for metrics. */
  stats?(): { inUse: number; max: number };
  close(): Promise<void>;
}

/** The kind of a source whose metadata names none: Hasura's metadata format makes such a source
 * PostgreSQL's (`kind` is optional in `sources`, and documents of versions 1 and 2 have only
 * PostgreSQL tables). A fact of the document format, not of the framework: when no enabled
 * plugin provides this kind, such a source is inconsistent like any source of an unknown kind. */
export const DEFAULT_SOURCE_KIND = 'postgres';

export interface SourceKind {
  /** Value of `kind` in the metadata (`postgres`). */
  kind: string;
  /** Operation prefix without underscore (`pg`). */
  prefix: string;
  /** Whether the unprefixed legacy names on /v1/query refer to this kind. */
  legacy: boolean;
  /** valibot schema of `configuration`. */
  configSchema: v.GenericSchema;
  /** Connects (lazily) to a source. Throws with a clear message when the configuration cannot be used. */
  connect(name: string, configuration: Record<string, unknown>, env: Readonly<Record<string, string | undefined>>): SourceConnection;
  dialect: Dialect;
  /** Extra operations specific to the kind (run_sql for postgres). */
  operations?: (bind: KindBinding) => OperationDef[];
  /** Row changes captured into an event log, in the changing transaction (Note [Event capture]):
   * the event-triggers plugin serves its operations for the kinds that provide it, and only
   * those. PostgreSQL's: triggers in PL/pgSQL (plugins/postgres/event-capture.ts). */
  events?: EventCapture;
  /** The engine may keep its own tables in this kind's sources (the log of asynchronous
   * actions, cron triggers and scheduled events, rate-limit counters): the plugins that keep
   * them write PostgreSQL's SQL, so a kind says so when its sources speak it (PostgreSQL; a
   * PostgreSQL-compatible kind could). They use the source `default` when it is such a kind. */
  holdsEngineTables?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Event capture (a kind's, for event triggers)

/*
 * Note [Event capture]
 * An event trigger asks its source to write an event for every row change of a table, in the
 * same transaction as the change (a committed change has its event, a rolled-back one none),
 * into an event log the delivery worker claims from. Both are the kind's: `SourceKind.events`.
 *   - `define` describes the capture of one trigger's operation on one table; the event-triggers
 *     build step collects them from the metadata, and `reconcile` makes the source's capture what
 *     they say, idempotently, reading what exists first (a capture changed by hand, or made by an
 *     older engine, is made again; one the metadata no longer has is removed, and the pending
 *     events of a trigger gone from the metadata are archived). A capture's `hash` changes when
 *     what it installs does, so a build skips a source whose captures are unchanged.
 *   - An event's payload is `{op, data: {old, new}, session_variables}`: `op` INSERT, UPDATE,
 *     DELETE or MANUAL; `data` the row's columns (all, or the trigger's payload columns); the
 *     session variables the transaction was opened with (SourceConnection.transaction `session`).
 *     An UPDATE that changed none of the listened columns writes no event.
 *   - The log: `claim` takes up to n pending events whose lease has run out (an event claimed by
 *     two deliveries at once is not allowed: the claim's `token` fences its outcome), `record`
 *     writes outcomes in one statement, `release` gives an event back. The rest are the reads and
 *     changes of the operations (manual events, redelivery, the log reads).
 *   - A source notifies `channel` when a transaction that wrote events commits (at most once per
 *     session per `notifyEverySec`), so a worker that LISTENs (SourceConnection.listen) wakes at
 *     once; a kind without notifications is polled.
 */

export type CaptureOp = 'INSERT' | 'UPDATE' | 'DELETE';

/** What a trigger listens to: the columns whose change fires an UPDATE, and the columns the
 * payload carries (`*`: all). */
export interface CaptureSpec {
  columns: '*' | string[];
  payload?: '*' | string[];
}

/** One installed capture: a trigger's operation on a table. */
export interface CaptureDef {
  /** Unique in the source (PostgreSQL: the trigger function's name). */
  readonly id: string;
  readonly trigger: string;
  readonly op: CaptureOp;
  readonly table: QualifiedTable;
  /** Changes when what is installed changes. */
  readonly hash: string;
}

/** A claimed event. `payload` is the payload's JSON text, `created_at` ISO 8601 in UTC, `token`
 * the claim's fence. */
export interface ClaimedEvent {
  id: string;
  schema_name: string;
  table_name: string;
  trigger_name: string;
  payload: string;
  tries: number;
  created_at: string;
  token: string;
}

/** The outcome of a delivery, as `record` takes it (a JSON object per event). */
export interface EventOutcome {
  id: string;
  trigger_name: string;
  status: number | null;
  /** The invocation's request and response, as logged. */
  request: unknown;
  response: unknown;
  duration_ms: number;
  /** The claim's token: the outcome is written only while the claim holds. */
  token: string;
  delivered: boolean;
  error: boolean;
  /** Seconds until the next try, or null for none. */
  retry_in: number | null;
}

/** Note [Event capture]. Every `exec` is the source's; values are bind parameters. */
export interface EventCapture {
  /** The notification channel a committing transaction that wrote events notifies; absent when
   * the kind has no notifications (MS SQL Server): the worker polls. */
  readonly channel?: string;
  readonly notifyEverySec: number;
  /** The statements that set a savepoint `name` in a transaction of the kind, release it (null:
   * the kind releases none) and roll back to it. Absent: PostgreSQL's (`savepoint`, `release
   * savepoint`, `rollback to savepoint`). The build reconciles in one. */
  savepoint?(name: string): { set: string; release: string | null; rollback: string };
  /** The capture of a trigger's operation on a table, with the table as introspected (`info`:
   * its columns and primary key, for a kind that must name them). May throw an Error whose
   * message says why the trigger cannot be captured: the trigger is then inconsistent. */
  define(trigger: string, table: QualifiedTable, op: CaptureOp, spec: CaptureSpec, info?: TableInfo): CaptureDef;
  /** Makes the capture `source` made what `desired` says. `read` takes the first look (an
   * unchanged source costs one query), `tx()` the transaction the changes are made in; `keep`:
   * the triggers the metadata still has (their events are not archived). */
  reconcile(source: string, read: SqlExecutor, tx: () => Promise<SqlExecutor>, desired: readonly CaptureDef[], keep: ReadonlySet<string>): Promise<{ changed: boolean; archived: string[] }>;
  /** Creates the event log when it is missing (in a transaction); whether it did. */
  ensureLog(exec: SqlExecutor): Promise<boolean>;
  /** A manual event (`op: MANUAL`, `payload` as `new`); its id. */
  insertManual(exec: SqlExecutor, table: QualifiedTable, trigger: string, payload: unknown, session: Record<string, string>): Promise<string>;
  /** Delivers an event again from scratch; 400 not-exists when there is none, busy when a
   * delivery holds it (claimed less than `leaseSec(trigger)` seconds ago). */
  redeliver(exec: SqlExecutor, id: string, leaseSec: (trigger: string) => number): Promise<void>;
  /** A trigger's events, newest first (`pending`: not delivered, failed or archived;
   * `processed`: delivered or failed). */
  events(exec: SqlExecutor, trigger: string, status: 'processed' | 'pending' | undefined, limit: number, offset: number): Promise<unknown[]>;
  invocations(exec: SqlExecutor, trigger: string, limit: number, offset: number): Promise<unknown[]>;
  /** An event and its invocations; 400 not-exists when there is none. */
  eventById(exec: SqlExecutor, id: string, limit: number, offset: number): Promise<{ event: unknown; invocations: unknown[] }>;
  /** Claims up to `n` pending events of the triggers in `lease` (a claim lasts its `secs`). */
  claim(exec: SqlExecutor, lease: readonly { name: string; secs: number }[], n: number): Promise<ClaimedEvent[]>;
  /** Writes outcomes (their JSON texts, EventOutcome's shape) and their invocation logs. */
  record(exec: SqlExecutor, outcomes: readonly string[], ids: readonly string[]): Promise<void>;
  release(exec: SqlExecutor, id: string, token: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Dialect: what the framework must ask a source kind about types and SQL (Note [Dialects])

/*
 * Note [Dialects]
 * The framework (plugins/database) knows no database: everything that depends on the kind of a
 * source is asked of its `Dialect`. The introspection model is the kind-neutral part (tables,
 * columns with a type name and a `TypeKind`, keys, functions, objects followed by a stable `oid`);
 * what a type means (its scalar category, GraphQL scalar, how a JSON value parses), which
 * comparison operators apply to it, the default schema, identifier quoting, the SQL that reads an
 * enum table and (later) IR -> SQL are the dialect's. Generic comparison operators (`_eq`, `_in`,
 * `_gt`, `_is_null`, `_ceq`, ...) are the framework's (boolexp.ts); a dialect adds its own
 * (PostgreSQL: `_like`, `_ilike`, jsonb, ltree, PostGIS, `_cast`). model/dialect.test.ts drives the
 * framework with a fake source kind, so that this is checked, not hoped.
 */

/*
 * Note [Table names of a kind]
 * The framework keeps every table and function name as `{schema, name}` (QualifiedTable: the
 * metadata, introspection, the IR). A kind whose names have another namespace key says so in
 * `Dialect.namespace` (BigQuery: `dataset`, as Hasura's BigQuery TableName `{dataset, name}`):
 * its operations' table and function arguments, a relationship's remote table and the tables
 * and functions of its sources in replace_metadata are read as `{<namespace>, name}` (the
 * namespace required; the framework's own `{schema, name}` is read too), and export_metadata
 * writes them back so (the `sources` section's `toDocument`, metadata/section.ts
 * `documentSources`). Not covered: a table named inside a boolean expression (`_exists: {_table}`)
 * is read and written as `{schema, name}`.
 */

/*
 * Note [Upsert arguments]
 * Hasura gives an insert field an upsert argument of its backend's shape: PostgreSQL's
 * `on_conflict: {constraint, update_columns, where}` (a unique or primary key constraint, on a
 * table that has one), MS SQL Server's `if_matched: {match_columns, update_columns, where}` (any
 * columns the role may select and the database can compare, matched with MERGE; offered only to
 * a role that may update the table, and only on the root fields, since that backend has no nested
 * inserts). A kind picks one with `Dialect.upsert`; both reach the compiler as
 * `InsertIR.onConflict`: `constraint` and its `columns` for on_conflict, the match `columns` alone
 * for if_matched, with the update columns, the role's update presets, the request's `where` ANDed
 * with the role's update filter, and the role's update check (schema/mutation.ts).
 */

/** The type facts of a column, argument or function result that operators and values depend on. */



/** What an operator takes: a value of the column's type, a list of them, a boolean (`_is_null`),
 * a string or strings (`_has_key`), a column (`_ceq`), a cast (`_cast`), an object (`_st_d_within`). */
export type Operand = 'one' | 'many' | 'bool' | 'text' | 'texts' | 'column' | 'cast' | 'object';

export interface OperatorSpec {
  operand: Operand;
  /** The column types the operator applies to (absent: all), and how messages name them. */
  guard?: { ok: (t: ColumnType) => boolean; expected: string };
  /** An `object` operand's GraphQL input type for a column of type `t` (`_st_d_within: {from,
   * distance}`): `self` is a value of the column's type, a ColumnType one of that type, the others
   * GraphQL's built-in scalars. */
  object?: (t: ColumnType) => { name: string; fields: Record<string, { type: 'self' | 'Float' | 'Boolean' | 'Int' | ColumnType; required: boolean; default?: unknown }> };
}

/** Boolean expressions as stored (Note [Stored boolean expressions] in boolexp.ts): today's IR. */
export type BoolExp = Record<string, unknown>;

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

export interface Dialect {
  /** The schema of unqualified names (`public`). */
  defaultSchema: string;
  /** The key of a table or function name's namespace in metadata documents and operation
   * arguments (Note [Table names of a kind]): absent, `schema` (`{schema, name}` or a bare name);
   * BigQuery's `dataset` (`{dataset, name}`, the dataset required). */
  namespace?: string;
  quoteIdent(name: string): string;
  /** What a column's (or a scalar function result's) type is. */
  scalar(type: ColumnType): ScalarType;
  /** The kind's own comparison operators, by name without the `_`/`$` prefix, beside the generic
   * ones (boolexp.ts `GENERIC_OPERATORS`). Per type through each operator's guard. */
  operators: Readonly<Record<string, OperatorSpec>>;
  /** The type `_cast` turns a column of type `from` into; undefined when the cast is not allowed
   * (`from` undefined: the column's type is unknown, nothing to check). */
  castTo?(from: ColumnType | undefined, to: string): ColumnType | undefined;
  /** The types `_cast` may turn a column of type `from` into (the GraphQL `<t>_cast_exp`). */
  castTargets?(from: ColumnType): ColumnType[];
  /** Whether an argument of this type can receive the session variables (Hasura: `json` for a
   * tracked function's `session_argument`, `json` or `jsonb` for a computed field's). */
  sessionArgument(type: ColumnType, of: 'function' | 'computed_field'): boolean;
  /** How the kind's computed fields get the table's row: `row` (the default: one argument of the
   * table's row type, `table_argument`, as PostgreSQL's) or `mapping` (some arguments each given
   * a column, `argument_mapping`, and the rows' table named, `return_table`, as BigQuery's table
   * functions): Note [Computed fields by argument mapping] in plugins/database/metadata/computed-fields.ts. */
  computedFieldArguments?: 'row' | 'mapping';
  /** `false`: the kind serves no functions as root fields (`<prefix>_track_function` is refused by
   * the build: "SQL Functions are not supported for <kind> source", as Hasura's BigQuery and MSSQL
   * backends say); its functions may still back computed fields. Default: tracked. */
  trackedFunctions?: boolean;
  /** Enum tables (`is_enum`): whether a key or comment column has the text type they need, and
   * the query that reads the values (columns `value` and `comment`, as text). */
  enumTable: {
    isText(type: ColumnType): boolean;
    valuesQuery(table: QualifiedTable, key: string, comment: string | undefined): string;
  };
  /** IR -> SQL. The IR is today's boolean expression on `table` (a permission filter); the query
   * IR of the data API (issue 6) widens it. No kind implements it yet. */
  compile?(ir: BoolExp, table: QualifiedTable): SqlFragment;
  /** Query IR -> one statement whose single row has one text column `json`: the root field's
   * value (Note [Values in the IR] in ir/types.ts). A kind without it serves no queries. */
  compileSelect?(ir: RootIR, opts?: SelectOptions): CompiledQuery;
  /** Mutation IR -> one statement whose single row has `json` (text), the field's value; it
   * fails (`mutationFailure`) when it must not be written (Note [Mutations in the IR]). A kind
   * without it serves no mutations. */
  compileMutation?(ir: MutationIR): CompiledQuery;
  /** What the kind's comparison-expression type names carry between the scalar and
   * `_comparison_exp` (schema/role.ts `comparisonExp`): absent, nothing (`String_comparison_exp`,
   * PostgreSQL's); Hasura's MSSQL `_MSSQL`, BigQuery `_BigQuery`. Kinds whose operators differ
   * must not share these types: one schema may hold sources of several kinds. */
  comparisonTypeInfix?: string;
  /** The scalar of a function argument of this type (a tracked function's or computed field's
   * `args`), where it is not a column's: absent, `scalar`. PostgreSQL gives a row-typed
   * (`composite`) argument as its text (`"(1,'a')"`), a GraphQL String: a scalar named after the
   * type would clash with the table's object type. */
  argumentScalar?(type: ColumnType): ScalarType;
  /** A client's JSON value for a column of type `scalar` in the legacy writes (`/v1/query`
   * `insert`, `update`, for the kind with `legacy`), as the kind binds it: absent, as given.
   * PostgreSQL gives a number for a `numeric` column the scale Hasura's binary encoder gives it
   * (Note [Numeric values of the legacy writes] in plugins/postgres/sql/legacy-values.ts). */
  legacyValue?(value: unknown, scalar: ScalarType): unknown;
  /** The aggregate functions the kind offers, by the name GraphQL shows, with the columns each
   * applies to and what its compiler writes (Note [Aggregates of a kind] in model/scalars.ts):
   * absent, DEFAULT_AGGREGATES (Hasura's ten by ScalarType.category). */
  aggregates?: Aggregates;
  /** How inserts upsert (Note [Upsert arguments]): `on_conflict` (absent: the default), or
   * `if_matched` (Hasura's MSSQL upsert). */
  upsert?: 'on_conflict' | 'if_matched';
  /** Grouped aggregates (`<t>_groups`, Note [Grouped aggregates] in ir/types.ts): offered when
   * set, and then compiled by `compileSelect`. The types `having` compares with: `count`'s, and
   * the statistics' (`avg`, `stddev`...; GraphQL Float). */
  groups?: {
    count: ColumnType;
    /** The statistics' type as values are bound, and as GraphQL shows it (`Float_comparison_exp`). */
    float: ColumnType;
    floatInput: ColumnType;
    /** Whether a column of this type may be truncated to a unit of time (`_truncate`). */
    truncates(t: ColumnType): boolean;
  };
  /** Whether `compileMutation` compiles updates with writes through relationships
   * (`_nested`, Note [Nested updates] in schema/nested-update.ts). */
  nestedUpdates?: boolean;
  /** Whether `compileMutation` compiles inserts through relationships (`MutationIR` rows with
   * `before`/`after`): without it the schema offers no relationship fields in `<t>_insert_input`
   * (and `_nested` no inserts), as Hasura's MSSQL schema has none. */
  nestedInserts?: boolean;
  /** What an error of a mutation statement means: a failed permission check, a nested insert
   * whose parent wrote no row (its zero check's index), or undefined for any other error. */
  mutationFailure?(e: unknown): { k: 'check' } | { k: 'zero' | 'default'; index: number } | undefined;
  /** Whether a transaction's statements may be sent before the answers of those before them
   * (they then run in order): a field of several statements is pipelined (Note [Statements
   * pipelined] in plugins/database/schema/mutation.ts); otherwise each waits for the one before. */
  pipelines?: boolean;
  /** Where `compileMutation` compiles `update_rows` (updates each naming one row by its
   * primary key, as one statement: Note [Updates by key in SQL] in plugins/postgres/sql/compile-mutation.ts):
   * the text by which it tells a key column's values apart, one text for two values the
   * database takes as equal; undefined for a value or type it cannot tell so (its updates are
   * then statements of their own). `column`: the key column as introspected (its collation). */
  updateKeyText?(value: unknown, scalar: ScalarType, column: ColumnInfo | undefined): string | undefined;
  /** What a database error means to the client (Note [Database errors] in schema/plan.ts): the
   * error code, a prefix for its message (Hasura's `Uniqueness violation. `), and what `internal`
   * shows (PostgreSQL: the SQLSTATE). Undefined: the framework's default, `unexpected` with the
   * error's message. */
  classifyError?(e: unknown): { code: ErrorCode; prefix?: string; internal?: unknown } | undefined;
}

// ---------------------------------------------------------------------------------------------
// Build output

/** A row of an enum table: its primary key value and its comment column's value. */
export interface EnumValue {
  value: string;
  comment: string | null;
}

// ---------------------------------------------------------------------------------------------
// Command groups: operations written once and registered per source kind

/** What a command group sees of the source kind it is registered for. */
export interface KindBinding {
  kind: SourceKind;
  /** `pg_track_table` for `track_table`. */
  name(op: string): string;
  /** The legacy name on /v1/query for `op`, when this kind owns legacy names. */
  legacy(op: string): string | undefined;
  /** The kind's TableName and FunctionName schemas: an unqualified name is in the dialect's
   * default schema (`Dialect.defaultSchema`). Operations build their args schemas from these. */
  table: v.GenericSchema<unknown, QualifiedTable>;
  function: v.GenericSchema<unknown, QualifiedFunction>;
  /** How messages name a table or function of the kind (meta.ts `qtDisplay`). */
  display(qt: QualifiedTable): string;
}

/** Checks one part of one table during the build; records inconsistencies through `report`. */
export interface TableResolveContext {
  source: SourceMeta;
  kind: SourceKind;
  table: TableMeta;
  info: TableInfo;
  introspection: Introspection;
  /** Tracked tables of the source (by key) with their introspection. */
  tracked: ReadonlyMap<string, { meta: TableMeta; info: TableInfo | undefined }>;
  functions: Map<string, FunctionMeta>;
  report(o: Omit<InconsistentObject, 'id'> & { id?: string }): void;
  /** Record that this table's metadata refers to another table. */
  dependsOn(key: string): void;
  build: BuildContext;
}

/** Checks one tracked function during the build. */
export interface FunctionResolveContext {
  source: SourceMeta;
  kind: SourceKind;
  fn: FunctionMeta;
  introspection: Introspection;
  /** Tracked tables of the source (by key) with their introspection. */
  tracked: ReadonlyMap<string, { meta: TableMeta; info: TableInfo | undefined }>;
  report(o: Omit<InconsistentObject, 'id'> & { id?: string }): void;
  build: BuildContext;
}

/** Checks a tracked table by itself, before anything defined on it (see Note [Table checks] in
 * service.ts). */
export interface TableCheckContext {
  source: SourceMeta;
  table: TableMeta;
  info: TableInfo;
  introspection: Introspection;
  kind: SourceKind;
  /** Runs SQL on the source, inside the request's transaction when it has one. */
  executor: SqlExecutor;
  build: BuildContext;
}

/** What a table check found: why the table cannot be used, or what it learnt about it. */
export interface TableCheck {
  reason?: string;
  enumValues?: EnumValue[];
}

/** GraphQL root field names, per root type. */
export interface RootFields {
  query: string[];
  mutation: string[];
  subscription: string[];
}

/** The root fields one object defines, and the object as Hasura names it in name clashes
 * (`table author in source default`). */
export interface RootFieldOwner {
  owner: string;
  fields: RootFields;
  /** A tracked table's owner: its source and key, by which a role's schema finds the table of a
   * root field's name (Note [Root fields by name] in core/schema/assembly.ts). */
  table?: { source: string; key: string };
}

/** Something metadata can depend on. */
export type DepTarget =
  | { kind: 'table'; source: string; table: QualifiedTable }
  | { kind: 'column'; source: string; table: QualifiedTable; column: string }
  | { kind: 'relationship'; source: string; table: QualifiedTable; name: string }
  | { kind: 'computed_field'; source: string; table: QualifiedTable; name: string }
  | { kind: 'function'; source: string; function: QualifiedFunction }
  /** A foreign key of `table` (e.g. dropped by run_sql): `foreign_key_constraint_on` relationships
   * over these columns depend on it. Column names are the current ones (after renames). */
  | { kind: 'foreign_key'; source: string; table: QualifiedTable; name: string; columns: string[]; refTable: QualifiedTable; refColumns: string[] };

/** A metadata object that depends on a target, and how to remove it. */
export interface Dependent {
  /** Unique identity (dedupes the closure). Objects that live inside a table entry use
   * `<what>@<source>:<tableKey>:<name>` (`relationship@default:"public"."article":author`) so that
   * the table's own objects can be recognised; a tracked function is `function@<source>:<key>`. */
  id: string;
  /** As Hasura words it in dependency errors, naming the source: `relationship article.author in
   * source "default"`, `permission author.user.select in source "default"`, `computed field
   * author.full_name in source "default"`. */
  description: string;
  remove(md: Metadata): Metadata;
  /** When the dependent can itself have dependents (a relationship, a computed field). */
  target?: DepTarget;
  /** For a column target: the dependent relies on the column's type (Hasura's DROnType: a static
   * value compared with or assigned to it in a filter, check or `set`), so run_sql refuses to
   * change that type. References through session variables or column lists leave it unset. */
  onType?: boolean;
}

/**
 * A rename in a source's schema found by run_sql (same oid, or same table oid and attnum, new
 * name). See Note [Renames] in service.ts: the framework renames the tracked entry itself and the
 * column keys of the table's configuration; each group's `rename` hook rewrites its own
 * references. For a column, `table` is the table's name after any rename of the same run.
 */
export type SchemaRename =
  | { kind: 'table'; source: string; from: QualifiedTable; to: QualifiedTable }
  | { kind: 'column'; source: string; table: QualifiedTable; from: string; to: string }
  | { kind: 'function'; source: string; from: QualifiedFunction; to: QualifiedFunction };

export interface CommandGroup {
  name: string;
  operations(bind: KindBinding): OperationDef[];
  /** Checks a table itself (its configuration against its columns, an enum table's values). A
   * table that fails is inconsistent and counts as not tracked for the rest of the build. */
  checkTable?(ctx: TableCheckContext): Promise<TableCheck | undefined> | TableCheck | undefined;
  /** Validates this group's part of a tracked table in the build. */
  resolveTable?(ctx: TableResolveContext): void;
  /** Resolves a tracked function in the build (the first group that has this hook owns functions):
   * its introspection, or undefined when it reported the function inconsistent. */
  resolveFunction?(ctx: FunctionResolveContext): FunctionInfo | undefined;
  /** The GraphQL root fields of this group's objects in a source (checked for clashes across
   * sources; see metadata/customization.ts `reportRootFieldConflicts`). */
  rootFields?(source: SourceMeta, introspection: Introspection | undefined): RootFieldOwner[];
  /** The objects of this group, anywhere in `md`, that depend on `target`. */
  dependents?(md: Metadata, target: DepTarget): Dependent[];
  /** Rewrites this group's references to a renamed table, column or function, anywhere in `md`
   * (e.g. a relationship's remote table, a permission filter's column); returns `md` itself when
   * nothing refers to it. Keep untouched objects by reference (Note [Sharing]). */
  rename?(md: Metadata, r: SchemaRename): Metadata;
}

export type { Metadata };

// ---------------------------------------------------------------------------------------------
// Joined fields (Note [Joined fields] in schema/joins.ts)

/** A field another plugin adds to a table's object type, whose values it fetches itself for
 * the rows the database answers, joined on some of their columns (a remote relationship). */
export interface JoinedField {
  /** The field's type, arguments and description, as graphql-js takes them. */
  config: Omit<GraphQLFieldConfig<unknown, unknown>, 'resolve' | 'subscribe'>;
  /** The columns (source names) whose values the rows are joined on. */
  columns: readonly string[];
  /** Plans the field for one selection of it (once per plan of the root field). */
  plan(node: FieldNode, input: JoinPlanInput): JoinedFieldPlan;
}

export interface JoinPlanInput {
  readonly schema: GraphQLSchema;
  readonly fragments: Readonly<Record<string, FragmentDefinitionNode>>;
  readonly variableDefinitions: readonly VariableDefinitionNode[];
  readonly role: string;
}

export interface JoinedFieldPlan {
  /** The field's values for rows with these join column values (by source column name), in
   * order: one call for every row of one level of the answer. */
  run(keys: readonly Readonly<Record<string, unknown>>[], ctx: RunContext): Promise<readonly unknown[]>;
}

/** Gives the joined fields of a table for a role (k.use(DatabaseToken).registerJoinedFields). */
export interface JoinedFieldsProvider {
  /** `tableRoot`: the role's select root field of a table by its name (before any source
   * namespace), of the same schema, for fields that join to another table through them. */
  fields(role: string, source: string, table: QualifiedTable, build: Pick<BuildResult, 'metadata' | 'outputs'>, types: TypeRegistry, tableRoot: (name: string) => RootFieldDef | undefined): Readonly<Record<string, JoinedField>> | undefined;
}
