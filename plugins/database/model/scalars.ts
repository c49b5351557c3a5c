/**
 * The contract's primitives: a table's name, a column's type as introspection reports it, and a
 * scalar type as a dialect describes it. The IR (../ir/types.ts) and the rest of the contract
 * (./types.ts, which re-exports these) both use them, so they import nothing back.
 */

export interface QualifiedTable {
  schema: string;
  name: string;
}
export type QualifiedFunction = QualifiedTable;

/*
 * Note [Type kinds]
 * What the framework needs to know of a type beyond its name, whatever the kind of source: each
 * kind maps its own catalog to these in introspection (PostgreSQL: pg_type.typtype in
 * plugins/postgres/connection/introspect.ts; SQL Server: sys.types' alias types; BigQuery: ARRAY and STRUCT).
 * - `base`: a type of single values (PostgreSQL's base types; SQL Server's system types; BigQuery's
 *   scalars). A computed field's scalar result must be one (or an `array`).
 * - `composite`: a record of named fields; a table's row type is one. A function returning one
 *   whose name is a tracked table returns that table's rows (functions, computed fields); a
 *   function argument of one is the row (a computed field's table argument).
 * - `domain`: another type with constraints or a name of its own (PostgreSQL's domains, SQL
 *   Server's alias types).
 * - `enum`: a type of listed labels (PostgreSQL's enums).
 * - `array`: a list of `elementKind` values.
 * - `pseudo`: no type of values, a placeholder a function may name (PostgreSQL's void, record,
 *   trigger, anyelement): never a scalar computed field's result.
 * - `other`: any other type of values (PostgreSQL's ranges and multiranges).
 * The framework reads `base`, `composite`, `array` and `pseudo` (metadata/functions.ts,
 * metadata/computed-fields.ts, model/boolexp.ts, model/resolved.ts); the rest are for the kind's
 * own dialect (PostgreSQL's `enum` scalars and operators).
 */
export type TypeKind = 'base' | 'composite' | 'domain' | 'enum' | 'array' | 'pseudo' | 'other';

export interface ColumnInfo {
  name: string;
  position: number;
  /** The type as the source prints it (PostgreSQL: `integer`, `character varying`, `integer[]`). */
  type: string;
  /** The type's name in the source's catalog (PostgreSQL: pg_type.typname, `int4`, `_int4`). */
  udt: string;
  typeSchema: string;
  /** Note [Type kinds]. */
  typeKind: TypeKind;
  /** An array type's element kind (PostgreSQL: of pg_type.typelem); null or absent otherwise. */
  elementKind?: TypeKind | null;
  nullable: boolean;
  hasDefault: boolean;
  /** The column's own default: its SQL as the source prints it and a key that changes when it
   * does (PostgreSQL: pg_get_expr of its pg_attrdef row, and the md5 of the stored expression,
   * which names objects by OID, not by the search_path the SQL was printed under); null or
   * absent where it has none, or the kind does not say. */
  default?: { sql: string; key: string } | null;
  isIdentity: boolean;
  isGenerated: boolean;
  /** Whether the column's collation tells two texts apart by their bytes alone (PostgreSQL:
   * pg_collation.collisdeterministic of attcollation): true or false for a type with a
   * collation, null or absent for one without, or where the kind does not say. */
  collationDeterministic?: boolean | null;
  description: string | null;
}

export type ColumnType = Pick<ColumnInfo, 'type' | 'udt' | 'typeSchema' | 'typeKind' | 'elementKind'>;

export type ScalarCategory = 'numeric' | 'string' | 'boolean' | 'json' | 'datetime' | 'geometry' | 'other';

export interface ScalarType {
  /** The type as Hasura names it in messages (`integer`, `bigint`, `text`). */
  name: string;
  category: ScalarCategory;
  /** The GraphQL scalar, as Hasura maps the type (`Int`, `bigint`, `String`, `uuid`). */
  graphql: string;
  /** Whether boolean expressions may use a column of the type (Hasura refuses `json`). */
  comparable: boolean;
  /** Checks a JSON value given for the type (an operand in a filter, a `set` preset): why it does
   * not parse, in Hasura's words, or undefined. */
  parse(value: unknown): string | undefined;
  /** The SQL type a bind parameter of this type is cast to (values are bound as text). */
  bindAs: string;
  /** Numbers a JSON number may round (PostgreSQL: bigint, numeric): the legacy API and Hasura's
   * stringify option give them as strings. */
  bigNumber?: boolean;
  /** An array type: a value may be given as a JSON array. */
  array?: boolean;
  /** An array type's element type, when the GraphQL schema shows the array as a list of it
   * (`[String!]`; Note [Array columns] in plugins/postgres/dialect.ts). `graphql` is then the
   * element's scalar. */
  element?: ScalarType;
  /** Hasura's big numbers (PostgreSQL: bigint, numeric, double precision): given as JSON strings
   * with `--stringify-numeric-types`, and so are their aggregates. */
  stringify?: boolean;
  /** A JSON document type whose columns take Hasura's JSON update operators in update mutations
   * (`_append`, `_prepend`, `_delete_key`, `_delete_elem`, `_delete_at_path`; PostgreSQL: jsonb),
   * which the dialect's compiler then compiles (`UpdateOp`). */
  jsonUpdates?: boolean;
}

/*
 * Note [Aggregates of a kind]
 * The aggregate functions a table's `<t>_aggregate_fields` offers, their `<t>_<fn>_fields` and
 * `<t>_<fn>_order_by` types, `<t>_group_<fn>_having_exp`, are the dialect's to say
 * (`Dialect.aggregates`, keyed by the name GraphQL shows): which columns each applies to (by the
 * column's ScalarType), whether its result has the column's type (`sum`, `max`, `min`) or is a
 * GraphQL Float (the statistics), and what the kind's statements write for it (`fn`). The
 * framework plans the name (AggregateOp.fn, AggregateTerm.fn, an order key's `agg.fn` are the
 * GraphQL names) and the kind's compiler looks it up in its own table (SqlCompiler.aggregateFn).
 *
 * Hasura's backends all offer the same ten names (Hasura.GraphQL.Schema.Select
 * numericAggOperators and comparisonAggOperators) and differ in which types each applies to
 * (each backend's isNumType and isComparableType): `hasuraAggregates` writes that table from the
 * two predicates. Enum-table references take none (Hasura: they are not scalar columns), whatever
 * the kind says (schema/role.ts aggregateColumns). Without `Dialect.aggregates`, a kind gets
 * DEFAULT_AGGREGATES: by ScalarType.category, numeric columns the statistics and `sum`, numeric,
 * string and date-time columns `max` and `min`, in standard SQL's names.
 */

/** One aggregate function of a kind (Note [Aggregates of a kind]). */
export interface AggregateFunction {
  /** Whether a column of this type takes it. */
  applies(s: ScalarType): boolean;
  /** `column`: the result has the column's type (`sum`, `max`, `min`); `float`: a GraphQL
   * Float (`avg`, the statistics). */
  result: 'column' | 'float';
  /** What the kind's statements write for it (`stddev_pop`, `STDEVP`): the compiler's, spliced
   * as it is, so never from a request. */
  fn: string;
}

/** A kind's aggregate functions by the name GraphQL shows (`sum`, `stddev_pop`). */
export type Aggregates = Readonly<Record<string, AggregateFunction>>;

/** Hasura's aggregate functions over numeric columns; `sum` keeps the column's type. */
export const NUMERIC_AGGREGATE_NAMES = ['avg', 'stddev', 'stddev_pop', 'stddev_samp', 'sum', 'var_pop', 'var_samp', 'variance'] as const;
/** Hasura's aggregate functions over comparable columns; both keep the column's type. */
export const COMPARABLE_AGGREGATE_NAMES = ['max', 'min'] as const;
type HasuraAggregate = (typeof NUMERIC_AGGREGATE_NAMES)[number] | (typeof COMPARABLE_AGGREGATE_NAMES)[number];

/** Hasura's aggregate functions as standard SQL writes them. */
export const STANDARD_AGGREGATES: Readonly<Record<HasuraAggregate, string>> = {
  sum: 'SUM',
  avg: 'AVG',
  max: 'MAX',
  min: 'MIN',
  stddev: 'STDDEV',
  stddev_samp: 'STDDEV_SAMP',
  stddev_pop: 'STDDEV_POP',
  variance: 'VARIANCE',
  var_samp: 'VAR_SAMP',
  var_pop: 'VAR_POP',
};

/** Hasura's ten aggregate functions (Note [Aggregates of a kind]): the numeric ones on columns
 * `numeric` accepts, `max` and `min` on those `comparable` accepts, each written as `fns` says
 * (standard SQL's names where it says nothing). */
export function hasuraAggregates(numeric: (s: ScalarType) => boolean, comparable: (s: ScalarType) => boolean, fns: Partial<Record<HasuraAggregate, string>> = {}): Aggregates {
  const out: Record<string, AggregateFunction> = {};
  for (const name of NUMERIC_AGGREGATE_NAMES) out[name] = { applies: numeric, result: name === 'sum' ? 'column' : 'float', fn: fns[name] ?? STANDARD_AGGREGATES[name] };
  for (const name of COMPARABLE_AGGREGATE_NAMES) out[name] = { applies: comparable, result: 'column', fn: fns[name] ?? STANDARD_AGGREGATES[name] };
  return out;
}

/** Whether a column of the type takes the numeric aggregates by default (its category). */
export const isNumericScalar = (s: ScalarType) => s.category === 'numeric';
/** Whether a column of the type takes `max` and `min` by default (its category). */
export const isOrderedScalar = (s: ScalarType) => s.category === 'numeric' || s.category === 'string' || s.category === 'datetime';

/** The aggregates of a kind without `Dialect.aggregates` (Note [Aggregates of a kind]). */
export const DEFAULT_AGGREGATES: Aggregates = hasuraAggregates(isNumericScalar, isOrderedScalar);
