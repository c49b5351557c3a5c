/**
 * The MS SQL Server dialect (Note [Dialects] in plugins/database): what SQL Server's types mean
 * as Hasura's MSSQL backend maps them, its own operators (`_like`, `_nlike`), bracket quoting,
 * the enum-table statement, what its errors mean, and the T-SQL compiler (./compile.ts).
 */
import { jsonTypeName } from '../../core/validation.js';
import type { ColumnType, Dialect, OperatorSpec, ScalarCategory, ScalarType } from '../database/index.js';
import { compileMutation, compileSelect, mutationFailure } from './compile.js';
import { GEO_TYPES, parseGeo, ST_METHODS } from './geo.js';
import { quoteIdent } from './identifiers.js';
import { MSSQL_AGGREGATES } from './aggregates.js';

/*
 * Note [MSSQL scalars]
 * As Hasura's MSSQL backend (mkMSSQLScalarTypeName): char, varchar, text, nchar, nvarchar and
 * ntext are GraphQL's `String`, int is `Int`, float and real are `Float`, bit is `Boolean`; every
 * other type is a custom scalar named as SQL Server names it (`bigint`, `smallint`, `tinyint`,
 * `decimal`, `numeric`, `money`, `date`, `datetime2`, `datetimeoffset`, `uniqueidentifier`,
 * `varbinary`, ...), so that clients do not round big values. Introspection reports a column's
 * type as SQL Server prints it (`decimal(10,2)`, `nvarchar(50)`: ColumnType.type) and its system
 * type (`decimal`, `nvarchar`: ColumnType.udt; an alias type is reported by its system type).
 *
 * Values are bound as NVARCHAR(MAX) text (Note [The driver boundary] in ./driver.ts) and cast in
 * the statement to `bindAs`: the column's own type where its precision matters (`decimal(10,2)`,
 * `datetime2(3)`), the MAX form of a string or binary type (a value is not cut to the column's
 * length before it is compared: `varchar(max)`), the type itself otherwise.
 */

const STRINGS = ['char', 'varchar', 'text', 'nchar', 'nvarchar', 'ntext'];
const GRAPHQL: Record<string, string> = { char: 'String', varchar: 'String', text: 'String', nchar: 'String', nvarchar: 'String', ntext: 'String', int: 'Int', float: 'Float', real: 'Float', bit: 'Boolean' };
const CATEGORIES: Record<string, ScalarCategory> = {};
for (const [category, names] of Object.entries({
  numeric: ['tinyint', 'smallint', 'int', 'bigint', 'decimal', 'numeric', 'money', 'smallmoney', 'float', 'real'],
  string: STRINGS,
  boolean: ['bit'],
  datetime: ['date', 'time', 'datetime', 'datetime2', 'smalldatetime', 'datetimeoffset'],
})) {
  for (const n of names) CATEGORIES[n] = category as ScalarCategory;
}
/** SQL Server's CLR types: FOR JSON cannot write them (they are output as their text, compile.ts). */
export const CLR_TYPES = new Set(['geography', 'geometry', 'hierarchyid']);
/** Types SQL Server cannot compare with `=` (or at all). The spatial types are not among them
 * though `=` fails on them too: they have their own operators (Note [MSSQL spatial values]). */
const INCOMPARABLE = new Set(['text', 'ntext', 'image', 'xml', 'sql_variant']);

const expect = (ok: (val: unknown) => boolean, haskell: string, json: string) => (val: unknown) =>
  ok(val) ? undefined : `parsing ${haskell} failed, expected ${json}, but encountered ${jsonTypeName(val)}`;
const isInt = (val: unknown) => typeof val === 'number' && Number.isInteger(val);
const numberOrText = expect((val) => typeof val === 'number' || typeof val === 'string', 'Scientific', 'Number');
const PARSERS: Record<string, (val: unknown) => string | undefined> = {
  bit: expect((val) => typeof val === 'boolean', 'Bool', 'Boolean'),
  tinyint: expect(isInt, 'Int', 'Number'),
  smallint: expect(isInt, 'Int', 'Number'),
  int: expect(isInt, 'Int', 'Number'),
  bigint: expect((val) => isInt(val) || (typeof val === 'string' && /^-?\d+$/.test(val)), 'Int64', 'Number'),
  decimal: numberOrText,
  numeric: numberOrText,
  money: numberOrText,
  smallmoney: numberOrText,
  float: numberOrText,
  real: numberOrText,
};
const parseText = expect((val) => typeof val === 'string', 'Text', 'String');

/** The type a bound value is cast to (Note [MSSQL scalars]). */
function bindAs(t: ColumnType): string {
  switch (t.udt) {
    case 'char':
    case 'varchar':
    case 'text':
      return 'varchar(max)';
    case 'nchar':
    case 'nvarchar':
    case 'ntext':
      return 'nvarchar(max)';
    case 'binary':
    case 'varbinary':
    case 'image':
      return 'varbinary(max)';
    case 'decimal':
    case 'numeric':
    case 'time':
    case 'datetime2':
    case 'datetimeoffset':
      // The printed type carries the precision (`decimal(10,2)`); only digits, commas and the name.
      return /^[a-z0-9]+(\(\d+(,\s*\d+)?\))?$/.test(t.type) ? t.type : t.udt;
    default:
      return /^[a-z_0-9]+$/.test(t.udt) ? t.udt : 'nvarchar(max)';
  }
}

const scalars = new Map<string, ScalarType>();

export function scalar(t: ColumnType): ScalarType {
  const key = `${t.udt}:${t.type}`;
  let s = scalars.get(key);
  if (s) return s;
  const big = ['bigint', 'decimal', 'numeric', 'money'].includes(t.udt);
  s = {
    name: t.udt,
    category: CATEGORIES[t.udt] ?? 'other',
    // A type whose name is no GraphQL name (an alias type's odd name) is shown as a String.
    graphql: GRAPHQL[t.udt] ?? (/^[_A-Za-z][_0-9A-Za-z]*$/.test(t.udt) ? t.udt : 'String'),
    comparable: !INCOMPARABLE.has(t.udt),
    parse: PARSERS[t.udt] ?? (GEO_TYPES.has(t.udt) ? parseGeo(t.udt) : undefined) ?? (STRINGS.includes(t.udt) || t.udt === 'uniqueidentifier' ? parseText : () => undefined),
    bindAs: bindAs(t),
    ...(big ? { bigNumber: true, stringify: true } : {}),
  };
  scalars.set(key, s);
  return s;
}

const stringOk: OperatorSpec['guard'] = { ok: (t) => STRINGS.includes(t.udt), expected: STRINGS.map((n) => `"${n}"`).join(', ') };

const geoOk: OperatorSpec['guard'] = { ok: (t) => GEO_TYPES.has(t.udt), expected: '"geometry", "geography"' };
const geometryOk: OperatorSpec['guard'] = { ok: (t) => t.udt === 'geometry', expected: '"geometry"' };

/** Hasura's MSSQL operators beside the generic ones: `_like`, `_nlike` on strings, the `_st_*`
 * on the spatial types (Note [MSSQL spatial values] in ./geo.ts). */
const OPERATORS: Record<string, OperatorSpec> = {
  like: { operand: 'one', guard: stringOk },
  nlike: { operand: 'one', guard: stringOk },
  ...Object.fromEntries(Object.entries(ST_METHODS).map(([op, m]) => [op, { operand: 'one', guard: m.geometryOnly ? geometryOk : geoOk } satisfies OperatorSpec])),
};

/*
 * Note [MSSQL errors]
 * A statement's failure is a `RequestError` with SQL Server's error `number` (the mssql driver
 * keeps the errors before the last in `precedingErrors`). What each means to the client, in
 * Hasura's words where it has them: key violations (2627 unique or primary key, 2601 unique
 * index) are `constraint-violation` "Uniqueness violation. ", 547 is a foreign-key or check
 * constraint ("Foreign key violation. " when the message says FOREIGN KEY), 515 a NOT NULL
 * column ("Not-NULL violation. "); conversion, overflow and truncation errors are the client's
 * bad values (`data-exception`); any other error of the server is `postgres-error`'s MSSQL
 * counterpart in Hasura, the generic database error (Hasura answers `unexpected`), with the
 * number in `internal`. A connection that fails (a `ConnectionError`) is left to the framework's
 * default. Our own raised errors (the permission check) are `mutationFailure`'s.
 */
// 6522: a .NET error in a CLR routine; the only ones Svc's statements call are the spatial
// types' (a WKT SQL Server cannot read, Note [MSSQL spatial values]).
const DATA_EXCEPTIONS = new Set([6522, 220, 232, 241, 242, 244, 245, 248, 295, 296, 517, 8114, 8115, 8152, 2628, 8169, 9413, 13609, 3621]);

/** The errors a failed statement carries, the first one first (Note [MSSQL errors]). */
export function errorChain(e: unknown): { number?: number; message: string }[] {
  const err = e as { number?: unknown; message?: unknown; precedingErrors?: unknown; originalError?: unknown } | null;
  if (!err || typeof err !== 'object') return [];
  const out: { number?: number; message: string }[] = [];
  for (const p of Array.isArray(err.precedingErrors) ? err.precedingErrors : []) out.push(...errorChain(p));
  out.push({ ...(typeof err.number === 'number' ? { number: err.number } : {}), message: typeof err.message === 'string' ? err.message : '' });
  return out;
}

export function classifyError(e: unknown): ReturnType<NonNullable<Dialect['classifyError']>> {
  const chain = errorChain(e).filter((x) => x.number !== undefined);
  // The first server error is the cause; later ones (3609, 266: the transaction ended) follow it.
  const first = chain.find((x) => x.number !== 3609 && x.number !== 266 && x.number !== 3998) ?? chain[0];
  if (!first) return undefined;
  const internal = { error_number: first.number };
  switch (first.number) {
    case 2627:
    case 2601:
      return { code: 'constraint-violation', prefix: 'Uniqueness violation. ', internal };
    case 547:
      return { code: 'constraint-violation', prefix: /FOREIGN KEY/i.test(first.message) ? 'Foreign key violation. ' : 'Check constraint violation. ', internal };
    case 515:
      return { code: 'constraint-violation', prefix: 'Not-NULL violation. ', internal };
  }
  if (DATA_EXCEPTIONS.has(first.number!)) return { code: 'data-exception', internal };
  return { code: 'unexpected', internal };
}

export const mssqlDialect: Dialect = {
  // Note [Aggregates of a kind] in plugins/database.
  aggregates: MSSQL_AGGREGATES,
  defaultSchema: 'dbo',
  // Hasura's MSSQL types: `String_MSSQL_comparison_exp` (its operators are not PostgreSQL's).
  comparisonTypeInfix: '_MSSQL',
  quoteIdent,
  scalar,
  operators: OPERATORS,
  // SQL Server has no functions Svc tracks (Hasura's MSSQL backend tracks none).
  sessionArgument: () => false,
  enumTable: {
    isText: (t) => STRINGS.includes(t.udt),
    valuesQuery: (table, key, comment) =>
      `SELECT CAST(${quoteIdent(key)} AS nvarchar(max)) AS [value], ${comment ? `CAST(${quoteIdent(comment)} AS nvarchar(max))` : 'CAST(NULL AS nvarchar(max))'} AS [comment] FROM ${quoteIdent(table.schema)}.${quoteIdent(table.name)} ORDER BY 1`,
  },
  compileSelect,
  compileMutation,
  // Hasura's MSSQL upsert: `if_matched` (Note [Upsert arguments] in plugins/database), a MERGE.
  upsert: 'if_matched',
  mutationFailure,
  classifyError,
};
