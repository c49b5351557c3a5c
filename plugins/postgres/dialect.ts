/**
 * The PostgreSQL dialect (Note [Dialects] in plugins/database): what PostgreSQL types mean, the
 * operators it adds to the generic ones (text patterns, jsonb, ltree, PostGIS, `_cast`), identifier
 * quoting and the SQL that reads an enum table.
 */
import { jsonTypeName } from '../../core/validation.js';
import type { ErrorCode } from '../../core/errors.js';
import type { ColumnType, Dialect, OperatorSpec, ScalarCategory, ScalarType, TypeKind } from '../database/index.js';
import { compileSelect } from './sql/compile.js';
import { compileMutation, mutationFailure } from './sql/compile-mutation.js';
import { updateKeyText } from './sql/insert-plan.js';
import { compileNestedUpdate } from './sql/compile-nested.js';
import { quoteIdent } from './sql/identifiers.js';
import { PG_AGGREGATES } from './sql/aggregates.js';
import { legacyValue } from './sql/legacy-values.js';

const STRING_TYPES = ['varchar', 'text', 'citext', 'bpchar', 'name'];
const GEO_TYPES = ['geometry', 'geography'];

/** Type names as Hasura prints them in messages. */
const TYPE_NAMES: Record<string, string> = { int2: 'smallint', int4: 'integer', int8: 'bigint', float4: 'real', bool: 'boolean' };

/** GraphQL scalars as Hasura maps PostgreSQL types (its mkScalarTypeName): integer, real, boolean,
 * text and varchar are GraphQL's own; every other type is a scalar of the name Hasura prints
 * for it (pgScalarTypeToText): `smallint`, `bigint`, `float8`, and the catalog's name for the
 * rest (`numeric`, `uuid`, `timestamptz`, `citext`, ...), so that large values are not rounded
 * by clients. */
const GRAPHQL: Record<string, string> = { int4: 'Int', float4: 'Float', bool: 'Boolean', text: 'String', varchar: 'String', int2: 'smallint', int8: 'bigint', float8: 'float8' };

const CATEGORIES: Record<string, ScalarCategory> = {};
for (const [category, names] of Object.entries({
  numeric: ['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'money', 'oid'],
  string: STRING_TYPES,
  boolean: ['bool'],
  json: ['json', 'jsonb'],
  datetime: ['date', 'time', 'timetz', 'timestamp', 'timestamptz', 'interval'],
  geometry: GEO_TYPES,
})) {
  for (const name of names) CATEGORIES[name] = category as ScalarCategory;
}

/** How a JSON value parses for a type: Hasura's message when it does not (its Haskell type and JSON type). */
const expect = (ok: (val: unknown) => boolean, haskell: string, json: string) => (val: unknown) =>
  ok(val) ? undefined : `parsing ${haskell} failed, expected ${json}, but encountered ${jsonTypeName(val)}`;
const isInt = (val: unknown) => typeof val === 'number' && Number.isInteger(val);
const PARSERS: Record<string, (val: unknown) => string | undefined> = {
  bool: expect((val) => typeof val === 'boolean', 'Bool', 'Boolean'),
  int2: expect(isInt, 'Int', 'Number'),
  int4: expect(isInt, 'Int', 'Number'),
  int8: expect((val) => isInt(val) || (typeof val === 'string' && /^-?\d+$/.test(val)), 'Int64', 'Number'),
  float4: expect((val) => typeof val === 'number' || typeof val === 'string', 'Scientific', 'Number'),
  float8: expect((val) => typeof val === 'number' || typeof val === 'string', 'Scientific', 'Number'),
  numeric: expect((val) => typeof val === 'number' || typeof val === 'string', 'Scientific', 'Number'),
};
const parseText = expect((val) => typeof val === 'string', 'Text', 'String');
const anything = () => undefined;

/*
 * Note [Array columns]
 * As Hasura v2.29+ does, an array type is a GraphQL list of its element type's scalar with
 * non-null items: `text[]` is `[String!]` (`[String!]!` for a NOT NULL column) in object types,
 * insert and set inputs and function arguments, and its comparison expression is
 * `<element scalar>_array_comparison_exp` (`_eq`, `_neq`, `_gt`..., `_in`/`_nin` taking a list of
 * lists, `_is_null`, `_contains`, `_contained_in`). The ScalarType of an array keeps the array's
 * own name and `bindAs` (`"pg_catalog"."_text"`) and names its element in `element`.
 * - The element type is the array's name without its leading `_` (PostgreSQL names the array
 *   type of `t` `_t`), in the same schema, of the kind the catalog query gives (`elementKind`).
 *   An array of a row type (composite) stays an opaque scalar named like the array (`_inventory`),
 *   given as a literal string: its element's scalar would clash with a table's object type.
 * - PostgreSQL has no distinct type for more dimensions (`integer[][]` is `integer[]`), and
 *   neither has Hasura: such a column is `[Int!]` too. Its values are output as nested JSON arrays
 *   (PostgreSQL's to_json). A nested list is refused by GraphQL validation, as in Hasura; the
 *   array literal string (`"{{1,2},{3,4}}"`) goes through only where the element scalar takes a
 *   string (`[String!]`, custom scalars), since GraphQL validation (unlike Hasura's parser)
 *   checks it as a one-item list of the element: an `int[][]` is written through /v1/query.
 * - Values are JSON arrays, bound as one parameter: the text of a PostgreSQL array literal built
 *   by `arrayLiteral` (compile.ts; every element double-quoted with `\` and `"` escaped, `null`
 *   as NULL, nested arrays as sub-arrays), cast to the array type. A string is taken as an array
 *   literal already, as Hasura takes one (the form of the old opaque `_text` scalar). Nothing is
 *   spliced into the SQL text.
 * - A GraphQL variable declared with nullable items (`[String]`, as clients of the old schema
 *   and Hasura's own tests do) may be used where `[String!]` is expected, as in Hasura, whose
 *   check of variable positions ignores item nullability (plugins/graphql/prepare.ts); a null item
 *   is then a NULL element, as Hasura binds it.
 * - Element values are checked by the element's parser (a string for `text`, an integer for
 *   `int4`), so a wrong element is `validation-failed` before any SQL runs.
 */

/** One ScalarType per type (the build asks for every value it checks). */
const scalars = new Map<string, ScalarType>();

/** Element kinds shown as a list: an array of a row type stays opaque (its element would be a
 * scalar named like the table's object type). */
const LIST_ELEMENTS = new Set<TypeKind>(['base', 'enum', 'domain', 'other']);

/** The element type of an array type (Note [Array columns]). */
function elementOf(t: ColumnType): ColumnType | undefined {
  const kind = t.elementKind ?? 'base';
  if (!LIST_ELEMENTS.has(kind) || !t.udt.startsWith('_') || t.udt.length < 2) return undefined;
  const udt = t.udt.slice(1);
  return { type: udt, udt, typeSchema: t.typeSchema, typeKind: kind };
}

/** An array's parser: a JSON array (nested ones for more dimensions) of valid elements, or null
 * items; or a string, an array literal. */
function arrayParser(element: ScalarType) {
  const check = (val: unknown): string | undefined => {
    if (!Array.isArray(val)) return undefined;
    for (const e of val) {
      if (e === null) continue;
      const why = Array.isArray(e) ? check(e) : element.parse(e);
      if (why) return why;
    }
    return undefined;
  };
  return (val: unknown): string | undefined => {
    if (typeof val === 'string' || val === null) return undefined;
    if (!Array.isArray(val)) return `parsing ${element.name}[] failed, expected Array, but encountered ${jsonTypeName(val)}`;
    return check(val);
  };
}

function scalar(t: ColumnType): ScalarType {
  const key = `${t.typeKind}:${t.elementKind ?? ''}:${t.typeSchema}.${t.udt}`;
  let s = scalars.get(key);
  if (s) return s;
  const array = t.typeKind === 'array';
  const enumType = t.typeKind === 'enum';
  const elem = array ? elementOf(t) : undefined;
  const element = elem ? scalar(elem) : undefined;
  s = {
    name: TYPE_NAMES[t.udt] ?? t.udt,
    category: array ? 'other' : enumType ? 'string' : (CATEGORIES[t.udt] ?? 'other'),
    graphql: element ? element.graphql : (GRAPHQL[t.udt] ?? t.udt),
    comparable: t.udt !== 'json',
    // Types without a JSON form of their own (and arrays of them) are left to PostgreSQL.
    parse: element ? arrayParser(element) : array ? anything : (PARSERS[t.udt] ?? (enumType || STRING_TYPES.includes(t.udt) ? parseText : anything)),
    bindAs: `${quoteIdent(t.typeSchema)}.${quoteIdent(t.udt)}`,
    bigNumber: !array && (t.udt === 'int8' || t.udt === 'numeric'),
    ...(array ? { array: true } : {}),
    // The jsonb operators of update mutations (compile.ts); not `json`, as in Hasura.
    ...(!array && t.udt === 'jsonb' ? { jsonUpdates: true } : {}),
    ...(element ? { element } : {}),
    ...(!array && ['int8', 'numeric', 'float8'].includes(t.udt) ? { stringify: true } : {}),
  };
  scalars.set(key, s);
  return s;
}

const dquote = (s: string) => `"${s}"`;
const only = (names: string[]): OperatorSpec['guard'] => ({
  ok: (t) => t.typeKind !== 'array' && names.includes(t.udt),
  expected: names.map(dquote).join(', '),
});
const stringOk: OperatorSpec['guard'] = {
  ok: (t) => t.typeKind === 'enum' || (t.typeKind !== 'array' && STRING_TYPES.includes(t.udt)),
  expected: only(['varchar', 'text', 'citext'])!.expected,
};
const arrayOrJsonb: OperatorSpec['guard'] = { ok: (t) => t.typeKind === 'array' || t.udt === 'jsonb', expected: 'an array or JSONB' };

/** Hasura's `st_d_within_input` / `st_d_within_geography_input` (Note [GeoJSON] in compile.ts). */
const dWithin = (geography: boolean): ReturnType<NonNullable<OperatorSpec['object']>> => ({
  name: geography ? 'st_d_within_geography_input' : 'st_d_within_input',
  fields: {
    distance: { type: 'Float', required: true },
    from: { type: 'self', required: true },
    ...(geography ? { use_spheroid: { type: 'Boolean' as const, required: false, default: true } } : {}),
  },
});

/** `{nband, geommin}` of the raster operators; geometry lives where the raster type does (PostGIS). */
const nband = (name: string, raster: ColumnType, nbandRequired: boolean): ReturnType<NonNullable<OperatorSpec['object']>> => ({
  name,
  fields: {
    nband: { type: 'Int', required: nbandRequired },
    geommin: { type: { type: 'geometry', udt: 'geometry', typeSchema: raster.typeSchema, typeKind: 'base' }, required: true },
  },
});

/** PostgreSQL's own column operators (Hasura `parseBoolExpOperations`), beside the generic ones. */
const OPERATORS: Record<string, OperatorSpec> = {
  like: { operand: 'one', guard: stringOk },
  nlike: { operand: 'one', guard: stringOk },
  ilike: { operand: 'one', guard: stringOk },
  nilike: { operand: 'one', guard: stringOk },
  similar: { operand: 'one', guard: stringOk },
  nsimilar: { operand: 'one', guard: stringOk },
  regex: { operand: 'one', guard: stringOk },
  iregex: { operand: 'one', guard: stringOk },
  nregex: { operand: 'one', guard: stringOk },
  niregex: { operand: 'one', guard: stringOk },
  contains: { operand: 'one', guard: arrayOrJsonb },
  contained_in: { operand: 'one', guard: arrayOrJsonb },
  has_key: { operand: 'text', guard: only(['jsonb']) },
  has_keys_any: { operand: 'texts', guard: only(['jsonb']) },
  has_keys_all: { operand: 'texts', guard: only(['jsonb']) },
  jsonb_path_exists: { operand: 'text', guard: only(['jsonb']) },
  jsonb_path_match: { operand: 'text', guard: only(['jsonb']) },
  st_contains: { operand: 'one', guard: only(['geometry']) },
  st_crosses: { operand: 'one', guard: only(['geometry']) },
  st_equals: { operand: 'one', guard: only(['geometry']) },
  st_overlaps: { operand: 'one', guard: only(['geometry']) },
  st_touches: { operand: 'one', guard: only(['geometry']) },
  st_within: { operand: 'one', guard: only(['geometry']) },
  st_3d_intersects: { operand: 'one', guard: only(['geometry']) },
  st_intersects: { operand: 'one', guard: only(GEO_TYPES) },
  st_d_within: { operand: 'object', guard: only(GEO_TYPES), object: (t) => dWithin(t.udt === 'geography') },
  // Rasters (postgis_raster), with Hasura's input types.
  st_intersects_rast: { operand: 'one', guard: only(['raster']) },
  st_intersects_nband_geom: { operand: 'object', guard: only(['raster']), object: (t) => nband('st_intersects_nband_geom_input', t, true) },
  st_intersects_geom_nband: { operand: 'object', guard: only(['raster']), object: (t) => nband('st_intersects_geom_nband_input', t, false) },
  st_3d_d_within: { operand: 'object', guard: only(['geometry']), object: () => dWithin(false) },
  ancestor: { operand: 'one', guard: only(['ltree']) },
  ancestor_any: { operand: 'many', guard: only(['ltree']) },
  descendant: { operand: 'one', guard: only(['ltree']) },
  descendant_any: { operand: 'many', guard: only(['ltree']) },
  matches: { operand: 'text', guard: only(['ltree']) },
  matches_any: { operand: 'texts', guard: only(['ltree']) },
  matches_fulltext: { operand: 'text', guard: only(['ltree']) },
  cast: { operand: 'cast' },
};

/** Casts Hasura allows in `_cast` (from column type to target type). */
const CASTS: Record<string, string[]> = { geometry: ['geography'], geography: ['geometry'], jsonb: ['text'] };

/** The target of `_cast`: PostGIS's types live where PostGIS is installed (the column's type's
 * schema), text in pg_catalog. */
function castTo(from: ColumnType | undefined, to: string): ColumnType | undefined {
  if (from && !(CASTS[from.udt] ?? []).includes(to)) return undefined;
  const typeSchema = GEO_TYPES.includes(to) ? (from?.typeSchema ?? 'public') : 'pg_catalog';
  return { type: to, udt: to, typeSchema, typeKind: 'base' };
}

const isCatalogType = (t: ColumnType, names: string[]) => t.typeSchema === 'pg_catalog' && names.includes(t.udt);

/** Hasura's prefixes of constraint violations (`constraint-violation`), by SQLSTATE. */
const VIOLATIONS: Record<string, string> = {
  '23502': 'Not-NULL violation. ',
  '23505': 'Uniqueness violation. ',
  '23503': 'Foreign key violation. ',
  '23514': 'Check constraint violation. ',
  '23P01': 'Exclusion violation. ',
};

/** Note [Database errors] in plugins/database/schema/plan.ts: by SQLSTATE, as Hasura maps them. */
function classifyError(e: unknown): { code: ErrorCode; prefix?: string; internal: unknown } {
  const code = (e as { code?: unknown } | null)?.code;
  const sqlstate = typeof code === 'string' ? code : undefined;
  const internal = { sqlstate };
  const prefix = sqlstate ? VIOLATIONS[sqlstate] : undefined;
  if (prefix) return { code: 'constraint-violation', prefix, internal };
  // Hasura: an invalid escape sequence (a LIKE pattern ending in `\`) is the client's bad request.
  if (sqlstate === '22025') return { code: 'bad-request', internal };
  return { code: sqlstate?.startsWith('22') ? 'data-exception' : 'postgres-error', internal };
}

/** A row-typed function argument: given as its text (`"(1,'a')"`, a record literal the cast to
 * the type reads), a GraphQL String, since a scalar named after the row type would clash with the
 * table's object type (Dialect.argumentScalar). */
const rowArguments = new Map<string, ScalarType>();
function argumentScalar(t: ColumnType): ScalarType {
  const s = scalar(t);
  if (t.typeKind !== 'composite') return s;
  let r = rowArguments.get(s.bindAs);
  if (!r) rowArguments.set(s.bindAs, (r = { ...s, graphql: 'String' }));
  return r;
}

export const postgresDialect: Dialect = {
  // Note [Aggregates of a kind] in plugins/database.
  aggregates: PG_AGGREGATES,
  argumentScalar,
  legacyValue,
  defaultSchema: 'public',
  compileSelect,
  // An update with writes through relationships (Note [Nested updates in SQL] in ./compile-nested.ts).
  compileMutation: (ir) => (ir.k === 'update' && ir.nested?.length ? compileNestedUpdate(ir) : compileMutation(ir)),
  nestedUpdates: true,
  nestedInserts: true,
  // Note [Grouped aggregates in SQL] in ./compile-groups.ts: `count` compares as an Int, the
  // statistics (avg...) as a Float, bound as float8 so that nothing is rounded on the way.
  groups: {
    count: { type: 'int4', udt: 'int4', typeSchema: 'pg_catalog', typeKind: 'base' },
    float: { type: 'float8', udt: 'float8', typeSchema: 'pg_catalog', typeKind: 'base' },
    floatInput: { type: 'float4', udt: 'float4', typeSchema: 'pg_catalog', typeKind: 'base' },
    truncates: (t) => t.typeKind !== 'array' && isCatalogType(t, ['date', 'timestamp', 'timestamptz']),
  },
  mutationFailure,
  // postgres.js pipelines a reserved connection's statements.
  pipelines: true,
  // Note [Updates by key] in plugins/database/schema/update-rows.ts.
  updateKeyText,
  classifyError,
  quoteIdent,
  scalar,
  operators: OPERATORS,
  castTo,
  castTargets: (from) => (from.typeKind === 'array' ? [] : (CASTS[from.udt] ?? []).map((to) => castTo(from, to)!)),
  sessionArgument: (t, of) => isCatalogType(t, of === 'function' ? ['json'] : ['json', 'jsonb']),
  enumTable: {
    isText: (t) => isCatalogType(t, ['text']),
    valuesQuery: (table, key, comment) =>
      `select ${quoteIdent(key)}::text as value, ${comment ? `${quoteIdent(comment)}::text` : 'null::text'} as comment from ${quoteIdent(table.schema)}.${quoteIdent(table.name)} order by 1`,
  },
};
