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

/** What kind of type a column or argument has (PostgreSQL: pg_type.typtype, and `array`). */
export type TypeKind = 'base' | 'composite' | 'domain' | 'enum' | 'pseudo' | 'range' | 'multirange' | 'array';

export interface ColumnInfo {
  name: string;
  position: number;
  /** The type as the source prints it (PostgreSQL: `integer`, `character varying`, `integer[]`). */
  type: string;
  /** The type's name in the source's catalog (PostgreSQL: pg_type.typname, `int4`, `_int4`). */
  udt: string;
  typeSchema: string;
  typeKind: TypeKind;
  /** An array type's element kind (PostgreSQL: of pg_type.typelem); null or absent otherwise. */
  elementKind?: TypeKind | null;
  nullable: boolean;
  hasDefault: boolean;
  isIdentity: boolean;
  isGenerated: boolean;
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
