/**
 * The BigQuery dialect (Note [Dialects] in plugins/database): BigQuery's types as Hasura's
 * BigQuery backend maps them, `_like`/`_nlike`, backtick quoting, the enum-table query, what its
 * errors mean, and the GoogleSQL compiler (./compile.ts). Read-only: no `compileMutation`.
 */
import { jsonTypeName } from '../../core/validation.js';
import type { ColumnType, Dialect, OperatorSpec, ScalarCategory, ScalarType } from '../database/index.js';
import { compileSelect, quoteIdent } from './compile.js';
import { BIGQUERY_AGGREGATES } from './aggregates.js';

/*
 * Note [BigQuery scalars]
 * As Hasura's BigQuery backend maps them: STRING is `String`, INT64 `Int`, FLOAT64 `Float`, BOOL
 * `Boolean`, NUMERIC and BIGNUMERIC `Decimal`, BYTES `Bytes` (base64, as BigQuery writes them in
 * JSON), DATE `Date`, DATETIME `Datetime`, TIME `Time`, TIMESTAMP `Timestamp`, GEOGRAPHY
 * `Geography`. Introspection reports a column's type as INFORMATION_SCHEMA.COLUMNS prints it
 * (`NUMERIC(10, 2)`, `STRING(10)`, `ARRAY<STRING>`: ColumnType.type) and its base name (`NUMERIC`,
 * `STRING`, `ARRAY`: ColumnType.udt); the length and precision parameters are ignored, as Hasura
 * ignores them. JSON, ARRAY, STRUCT and INTERVAL columns (which Hasura does not support) are
 * output as BigQuery writes them in JSON, under a `JSON` (or, for INTERVAL, `String`) scalar, and
 * cannot be compared. Values are bound as STRING parameters and cast to the base type (`bindAs`).
 */
const GRAPHQL: Record<string, string> = {
  STRING: 'String',
  INT64: 'Int',
  FLOAT64: 'Float',
  BOOL: 'Boolean',
  NUMERIC: 'Decimal',
  BIGNUMERIC: 'Decimal',
  BYTES: 'Bytes',
  DATE: 'Date',
  DATETIME: 'Datetime',
  TIME: 'Time',
  TIMESTAMP: 'Timestamp',
  GEOGRAPHY: 'Geography',
  INTERVAL: 'String',
};
const CATEGORIES: Record<string, ScalarCategory> = {
  STRING: 'string',
  INT64: 'numeric',
  FLOAT64: 'numeric',
  NUMERIC: 'numeric',
  BIGNUMERIC: 'numeric',
  BOOL: 'boolean',
  DATE: 'datetime',
  DATETIME: 'datetime',
  TIME: 'datetime',
  TIMESTAMP: 'datetime',
};
const INCOMPARABLE = new Set(['GEOGRAPHY', 'JSON', 'ARRAY', 'STRUCT']);

const expect = (ok: (val: unknown) => boolean, haskell: string, json: string) => (val: unknown) =>
  ok(val) ? undefined : `parsing ${haskell} failed, expected ${json}, but encountered ${jsonTypeName(val)}`;
const isInt = (val: unknown) => typeof val === 'number' && Number.isInteger(val);
const numberOrText = expect((val) => typeof val === 'number' || typeof val === 'string', 'Scientific', 'Number');
const PARSERS: Record<string, (val: unknown) => string | undefined> = {
  BOOL: expect((val) => typeof val === 'boolean', 'Bool', 'Boolean'),
  INT64: expect((val) => isInt(val) || (typeof val === 'string' && /^-?\d+$/.test(val)), 'Int64', 'Number'),
  FLOAT64: numberOrText,
  NUMERIC: numberOrText,
  BIGNUMERIC: numberOrText,
  STRING: expect((val) => typeof val === 'string', 'Text', 'String'),
};

/** The base name of a printed type: `NUMERIC(10, 2)` -> NUMERIC, `ARRAY<STRING>` -> ARRAY. */
export const baseType = (printed: string) => /^[A-Z0-9_]+/i.exec(printed.trim())?.[0]?.toUpperCase() ?? printed;

const scalars = new Map<string, ScalarType>();

export function scalar(t: ColumnType): ScalarType {
  const udt = t.udt.toUpperCase();
  let s = scalars.get(udt);
  if (s) return s;
  const big = udt === 'INT64' || udt === 'NUMERIC' || udt === 'BIGNUMERIC';
  s = {
    name: udt,
    category: CATEGORIES[udt] ?? 'other',
    graphql: GRAPHQL[udt] ?? 'JSON',
    comparable: !INCOMPARABLE.has(udt),
    parse: PARSERS[udt] ?? (() => undefined),
    bindAs: GRAPHQL[udt] ? udt : 'STRING',
    ...(big ? { bigNumber: true, stringify: true } : {}),
  };
  scalars.set(udt, s);
  return s;
}

/** Hasura's BigQuery `_like`/`_nlike`: on STRING and BYTES columns. */
const stringOk: OperatorSpec['guard'] = { ok: (t) => ['STRING', 'BYTES'].includes(t.udt.toUpperCase()), expected: '"STRING", "BYTES"' };

/*
 * Note [BigQuery errors]
 * The client's errors carry BigQuery's `reason` (`invalidQuery`, `notFound`, `accessDenied`,
 * `rateLimitExceeded`, ...) in `errors[0].reason` and the HTTP status in `code`. A query that
 * BigQuery refuses because of a value (a bad cast of a parameter: `Bad int64 value`) is the
 * client's `data-exception`; access and authentication failures, and anything else, are
 * `unexpected` (Hasura's BigQuery errors are), with the reason in `internal`.
 */
export function classifyError(e: unknown): ReturnType<NonNullable<Dialect['classifyError']>> {
  const err = e as { errors?: { reason?: string; message?: string }[]; code?: unknown; message?: unknown } | null;
  const reason = err?.errors?.[0]?.reason;
  if (!reason) return undefined;
  const internal = { reason, ...(typeof err?.code === 'number' ? { status: err.code } : {}) };
  if (reason === 'invalidQuery' && /^(Bad \w+ value|Invalid (date|datetime|time|timestamp|NUMERIC|BIGNUMERIC) |Could not cast)/i.test(String(err?.message ?? ''))) {
    return { code: 'data-exception', internal };
  }
  return { code: 'unexpected', internal };
}

export const bigqueryDialect: Dialect = {
  // Note [Aggregates of a kind] in plugins/database.
  aggregates: BIGQUERY_AGGREGATES,
  // Every table name has its dataset (Note [Table names of a kind] in plugins/database: BigQuery
  // names are {dataset, name}, the dataset required): there is no default one.
  defaultSchema: '',
  namespace: 'dataset',
  // Hasura's BigQuery types: `String_BigQuery_comparison_exp`.
  comparisonTypeInfix: '_BigQuery',
  quoteIdent,
  scalar,
  operators: {
    like: { operand: 'one', guard: stringOk },
    nlike: { operand: 'one', guard: stringOk },
  },
  sessionArgument: () => false,
  // Hasura's BigQuery computed fields: table functions by argument mapping (Note [Computed fields
  // by argument mapping] in plugins/database), and no functions as root fields.
  computedFieldArguments: 'mapping',
  trackedFunctions: false,
  enumTable: {
    isText: (t) => t.udt.toUpperCase() === 'STRING',
    valuesQuery: (table, key, comment) =>
      `SELECT CAST(${quoteIdent(key)} AS STRING) AS value, ${comment ? `CAST(${quoteIdent(comment)} AS STRING)` : 'CAST(NULL AS STRING)'} AS comment FROM ${quoteIdent(table.schema)}.${quoteIdent(table.name)} ORDER BY 1`,
  },
  compileSelect,
  classifyError,
};
