/**
 * fast-check generators of hostile requests for the fuzz suite (test/fuzz.test.ts, and the long
 * run `npm run fuzz`). A request is an endpoint, a body (a JSON value, or raw bytes that may not
 * be JSON or UTF-8) and headers. Bodies mix plausible pieces (names of the seeded tables,
 * columns and roles, well-formed permissions and relationships), so that many requests get deep
 * into the operations, with hostile ones: wrong types, deep nesting, huge and odd strings, NUL
 * characters, unpaired surrogates, invalid UTF-8, prototype keys and unknown keys.
 */
import fc from 'fast-check';

/** SQL that the fuzz server is seeded with (through run_sql) before its metadata is set up. */
export const SEED_SQL = `
  create table author (id serial primary key, name text, info jsonb);
  create table article (id serial primary key, title text, author_id int references author(id));
  create function author_title_count(a author) returns bigint language sql stable as $$ select count(*) from article where author_id = a.id $$;
  insert into author (name) values ('ann'), ('bob');
`;

/** Metadata requests that set up the seeded schema (tracked tables, a relationship, permissions). */
export const SEED_METADATA = [
  { type: 'pg_track_table', args: { table: 'author' } },
  { type: 'pg_track_table', args: { table: 'article' } },
  { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
  { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
  { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author: { id: { _eq: 'X-Svc-User-Id' } } } } } },
];

export type Endpoint = '/v1/metadata' | '/v1/query' | '/v1/graphql' | '/v1alpha1/pg_dump' | '/v1alpha1/config';

export interface FuzzRequest {
  method: 'GET' | 'POST';
  path: Endpoint;
  /** A JSON value (sent as JSON text), or raw bytes/text sent as they are. */
  body: { json: unknown } | { raw: string | Uint8Array } | undefined;
  headers: Record<string, string>;
}

const TABLES = ['author', 'article', 'nope', 'pg_class'];
const COLUMNS = ['id', 'name', 'title', 'author_id', 'info', 'nope'];
const NAMES = ['author', 'articles', 'user', 'x', 'default', 'author_title_count', 'a_b', '_', 'ab1'];
const KEYS = [
  'table', 'name', 'role', 'source', 'permission', 'columns', 'filter', 'check', 'set', 'limit', 'using', 'sql',
  'cascade', 'function', 'definition', 'configuration', 'comment', 'relationship', 'new_name', 'schema', 'metadata',
  'allow_inconsistent_metadata', 'read_only', 'check_metadata_consistency', 'no_transaction', 'is_enum', 'custom_name',
  'custom_root_fields', 'custom_column_names', 'column_config', 'identifier', 'foreign_key_constraint_on',
  'manual_configuration', 'remote_table', 'column_mapping', 'table_argument', 'session_argument', 'exposed_as',
  'allow_aggregations', 'computed_fields', 'query_root_fields', 'version', 'sources', 'tables', 'kind', 'args', 'type',
  'resource_version', 'reload_sources', 'reload_remote_schemas', 'opts', 'clean_output', 'query', 'variables', 'operationName',
  'replace_configuration', 'database_url', 'connection_info', 'from_env', 'pool_settings', 'customization',
];
const ODD_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'a.b', '$', '\u0000', 'x'.repeat(2000), '\ud800', 'é'];
const INJECTION = [
  "'; drop table author; --",
  '"; drop table author; --',
  'author"; drop table article; --',
  "1' or '1'='1",
  '$1',
  "X-Svc-User-Id') or true --",
  '\\',
  '%s%s%n',
  '${process.exit()}',
  '<script>alert(1)</script>',
  'select pg_sleep(0.2)',
];
const SQL = [
  'select 1',
  'select * from author',
  'create table if not exists fuzz_t (id int)',
  'select 1; select 2',
  'select * from nope',
  'copy author from stdin',
  'copy author to stdout',
  'commit; create table fuzz_ro (id int)',
  'begin; select 1',
  'rollback',
  'select pg_terminate_backend(pg_backend_pid())',
  'alter table author rename column name to name',
  "do $$ begin perform 1; end $$",
  'savepoint a; release savepoint a',
  '',
  ';;;',
  "select '",
];
const GRAPHQL = [
  '{ author { id name } }',
  '{ __typename }',
  'query { article { id author { name } } }',
  '{ author(where: {id: {_eq: 1}}) { id } }',
  'mutation { insert_author(objects: []) { affected_rows } }',
  '{',
  'query Q($x: Int) { author(limit: $x) { id } }',
  '{ __schema { types { name } } }',
  `{ ${'a { '.repeat(300)}${'}'.repeat(300)} }`,
];

/** A string of many lengths and kinds: plausible names, injection attempts, unicode, control
 * characters, NUL, unpaired surrogates, and long ones. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...TABLES, ...COLUMNS, ...NAMES, 'public', 'X-Svc-User-Id', 'x-svc-role', 'now()', '*') },
  { weight: 2, arbitrary: fc.constantFrom(...INJECTION) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', 'a\udfffb', '\u202e', '\uffff', '🙂', '\r\n', '\t') },
  { weight: 1, arbitrary: fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1000, max: 5000 }) }, { weight: 1, arbitrary: fc.integer({ min: 5000, max: 200_000 }) }).map((n) => 'x'.repeat(n)) },
);

const oddNumber = fc.oneof(
  fc.integer(),
  fc.constantFrom(0, -0, -1, 1, 2 ** 31, 2 ** 31 - 1, 2 ** 53, -(2 ** 53), 1e308, -1e308, 5e-324, 0.5, 3),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

const scalar: fc.Arbitrary<unknown> = fc.oneof(oddString, oddNumber, fc.boolean(), fc.constant(null));

/** A value nested `depth` levels deep (arrays or `_and`/`_not`/relationship paths), built without
 * recursion so that depths beyond the server's limit are cheap to make. */
const deep: fc.Arbitrary<unknown> = fc
  .tuple(fc.integer({ min: 20, max: 300 }), fc.constantFrom('array', '_and', '_not', 'rel'), scalar)
  .map(([depth, how, leaf]) => {
    let x: unknown = how === 'array' ? leaf : { id: { _eq: leaf } };
    for (let i = 0; i < depth; i++) x = how === 'array' ? [x] : how === '_and' ? { _and: [x] } : how === '_not' ? { _not: x } : { author: x };
    return x;
  });

/** A boolean expression, well-formed or nearly. */
const boolExp: fc.Arbitrary<unknown> = fc.letrec<{ exp: unknown }>((tie) => ({
  exp: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant({}),
    fc.record({ [COLUMNS[0]!]: fc.record({ _eq: scalar }) }),
    fc.dictionary(fc.constantFrom(...COLUMNS, 'author', 'articles'), fc.dictionary(fc.constantFrom('_eq', '_neq', '_gt', '_in', '_is_null', '_like', '_contains', '_has_key', '_ceq', '_foo'), scalar, { maxKeys: 2 }), { maxKeys: 2 }),
    fc.record({ _and: fc.array(tie('exp'), { maxLength: 3 }) }),
    fc.record({ _or: fc.array(tie('exp'), { maxLength: 3 }) }),
    fc.record({ _not: tie('exp') }),
    fc.record({ _exists: fc.record({ _table: fc.constantFrom<unknown>('author', { schema: 'public', name: 'article' }, 5), _where: tie('exp') }) }),
  ),
})).exp;

/** Plausible values for a key: what a real request would put there, give or take. */
function plausible(key: string): fc.Arbitrary<unknown> {
  switch (key) {
    case 'table':
    case 'remote_table':
      return fc.oneof(fc.constantFrom(...TABLES), fc.record({ schema: fc.constantFrom('public', 'nope', 'pg_catalog'), name: fc.constantFrom(...TABLES) }));
    case 'columns':
      return fc.oneof(fc.constant('*'), fc.subarray(COLUMNS));
    case 'filter':
    case 'check':
      return boolExp;
    case 'permission':
      return fc.record({ columns: plausible('columns'), filter: boolExp, check: boolExp, set: fc.dictionary(fc.constantFrom(...COLUMNS), scalar, { maxKeys: 2 }), limit: oddNumber }, { requiredKeys: [] });
    case 'using':
      return fc.oneof(
        fc.record({ foreign_key_constraint_on: fc.oneof(fc.constantFrom(...COLUMNS), fc.record({ table: plausible('table'), column: fc.constantFrom(...COLUMNS) })) }),
        fc.record({ manual_configuration: fc.record({ remote_table: plausible('table'), column_mapping: fc.dictionary(fc.constantFrom(...COLUMNS), fc.constantFrom(...COLUMNS), { maxKeys: 2 }) }) }),
      );
    case 'sql':
      return fc.constantFrom(...SQL);
    case 'query':
      return fc.constantFrom(...GRAPHQL);
    case 'source':
      return fc.constantFrom('default', 'nope', '');
    case 'role':
    case 'name':
    case 'new_name':
    case 'relationship':
      return fc.constantFrom(...NAMES);
    case 'function':
      return fc.oneof(fc.constantFrom('author_title_count', 'nope'), fc.record({ schema: fc.constant('public'), name: fc.constantFrom('author_title_count', 'nope') }));
    case 'definition':
      return fc.record({ function: plausible('function'), table_argument: fc.constantFrom('a', 'x') }, { requiredKeys: ['function'] });
    case 'opts':
      return fc.array(fc.constantFrom('-s', '-O', '-x', '--schema-only', '-f', '/tmp/x', '--fil=/tmp/x', '-Fc', '-xf/tmp/x', '--schema=public', '-n', 'public'), { maxLength: 3 });
    case 'cascade':
    case 'read_only':
    case 'check_metadata_consistency':
    case 'allow_inconsistent_metadata':
    case 'is_enum':
    case 'clean_output':
    case 'allow_aggregations':
      return fc.boolean();
    default:
      return scalar;
  }
}

/** Any JSON value, with odd keys, mixing plausible and hostile parts. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: scalar },
    { weight: 1, arbitrary: deep },
    { weight: 2, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 3, arbitrary: fc.dictionary(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_KEYS) }), tie('value'), { maxKeys: 4 }) },
    { weight: 1, arbitrary: fc.oneof({ weight: 9, arbitrary: fc.constant(50) }, { weight: 1, arbitrary: fc.integer({ min: 1000, max: 120_000 }) }).map((n) => Array.from({ length: n }, (_, i) => ({ id: { _eq: i } }))) },
  ),
})).value;

const valueFor = (k: string) => fc.oneof({ weight: 6, arbitrary: plausible(k) }, { weight: 1, arbitrary: hostileValue });

/** Arguments: mostly plausible keys with plausible or hostile values. Given the keys of an
 * operation's args schema (`argKeys`), most arguments are made of those, so that many requests
 * pass the parser and reach the operation itself. */
export function argsArb(keys?: string[]): fc.Arbitrary<unknown> {
  const any = fc.dictionary(fc.constantFrom(...KEYS), fc.constant(null), { maxKeys: 6 }).chain((shape) => fc.record(Object.fromEntries(Object.keys(shape).map((k) => [k, valueFor(k)]))));
  if (!keys || keys.length === 0) return fc.oneof({ weight: 6, arbitrary: any }, { weight: 2, arbitrary: hostileValue });
  const own = fc.record(Object.fromEntries(keys.map((k) => [k, valueFor(k)])), { requiredKeys: [] });
  const withExtra = fc.tuple(own, fc.constantFrom(...KEYS, ...ODD_KEYS), hostileValue).map(([o, k, x]) => Object.defineProperty({ ...(o as object) }, k, { value: x, enumerable: true, configurable: true, writable: true }));
  return fc.oneof({ weight: 10, arbitrary: own }, { weight: 2, arbitrary: withExtra }, { weight: 1, arbitrary: any }, { weight: 2, arbitrary: hostileValue });
}

/** The keys an args schema (valibot) knows: its object entries, through pipes, optionals and
 * unions. */
export function argKeys(schema: unknown, seen = new Set<unknown>()): string[] {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return [];
  seen.add(schema);
  const s = schema as { entries?: Record<string, unknown>; pipe?: unknown[]; wrapped?: unknown; options?: unknown[] };
  const out = new Set<string>(s.entries ? Object.keys(s.entries) : []);
  for (const x of [...(s.pipe?.slice(0, 1) ?? []), s.wrapped, ...(s.options ?? [])]) for (const k of argKeys(x, seen)) out.add(k);
  return [...out];
}

/** An envelope for operation `type` (or a random one), maybe wrapped in a bulk. */
export function envelopeArb(types: string[], keys?: string[]): fc.Arbitrary<unknown> {
  // `version` and `resource_version` are left out most of the time: a wrong one stops a request
  // before it reaches the operation.
  const sometimes = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
  const single = fc
    .record({
      type: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...types) }, { weight: 1, arbitrary: oddString }, { weight: 1, arbitrary: scalar }),
      args: argsArb(keys),
      version: sometimes(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(1, 2, 3) }, { weight: 1, arbitrary: oddNumber }, { weight: 1, arbitrary: oddString })),
      resource_version: sometimes(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -1, max: 50 }) }, { weight: 1, arbitrary: oddString })),
      // Note [Dry runs] in core/kernel/pipeline.ts: the probe checks that a dry run changes nothing.
      dry_run: sometimes(fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: oddString })),
    })
    .map((e) => Object.fromEntries(Object.entries(e).filter(([, x]) => x !== undefined)));
  return fc.oneof({ weight: 12, arbitrary: single }, { weight: 2, arbitrary: fc.record({ type: fc.constant('bulk'), args: fc.array(single, { maxLength: 4 }) }) }, { weight: 1, arbitrary: hostileValue });
}

/** Bodies that are not JSON, or not UTF-8, or hold NUL bytes. */
const rawBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom('', '{', '[', 'null', '{"type":', '{"type":"bulk","args":[', '\u0000', '{"type":"export_metadata","args":{}}\u0000', '{"a":1}{"b":2}', 'NaN', '1e999999'),
  fc.string({ unit: 'binary', maxLength: 50 }),
  fc.uint8Array({ maxLength: 64 }),
  fc.constant(Uint8Array.from([0x7b, 0x22, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
);

const headersArb: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.record({ 'x-svc-role': fc.constantFrom('user', 'admin', '') }) },
  { weight: 1, arbitrary: fc.record({ 'x-svc-role': fc.constant('user'), 'x-svc-user-id': fc.constantFrom('1', "1' or 1=1 --", 'x') }) },
  { weight: 1, arbitrary: fc.record({ 'x-svc-admin-secret': fc.constantFrom('wrong', '') }) },
);

/** A request to one of the JSON endpoints, for operations `types[endpoint]`. */
/** Mostly values a client would send (so that most mutations reach the database), sometimes odd ones. */
const fairString = fc.oneof({ weight: 6, arbitrary: fc.oneof(fc.constantFrom('ann', 'bob', 'x', "o'neil", '%', '\\'), fc.string({ maxLength: 12 })) }, { weight: 1, arbitrary: oddString });
const fairNumber = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: -3, max: 50 }) }, { weight: 1, arbitrary: oddNumber });
const fairJson = fc.oneof({ weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, { weight: 1, arbitrary: hostileValue });

const rowArb: fc.Arbitrary<unknown> = fc.record(
  {
    id: fc.oneof({ weight: 5, arbitrary: fairNumber }, { weight: 1, arbitrary: oddString }),
    name: fc.oneof({ weight: 5, arbitrary: fairString }, { weight: 1, arbitrary: scalar }),
    info: fairJson,
    title: fairString,
    author_id: fc.oneof(fairNumber, fc.constant(null)),
    articles: fc.record({ data: fc.array(fc.record({ title: fairString, id: fairNumber }, { requiredKeys: [] }), { maxLength: 3 }), on_conflict: fc.oneof(fc.constant(undefined), hostileValue) }, { requiredKeys: ['data'] }),
    author: fc.record({ data: fc.record({ name: fairString }, { requiredKeys: [] }), on_conflict: fc.oneof(fc.constant(undefined), hostileValue) }, { requiredKeys: ['data'] }),
  },
  { requiredKeys: [] },
);

/** A variable's value: mostly of its type, sometimes anything. */
const v = <T>(fair: fc.Arbitrary<T>) => fc.oneof({ weight: 5, arbitrary: fair }, { weight: 1, arbitrary: hostileValue });
const rows = fc.array(rowArb, { minLength: 1, maxLength: 4 });

/** Mutations with every input a variable, so that the values (rows, nested rows, conflicts,
 * update operators, filters) are fuzzed, not only the documents; each with its own variables. */
const mutationArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ query: fc.constant('mutation ($o: [author_insert_input!]!) { insert_author(objects: $o) { affected_rows returning { id name info articles { title } } } }'), variables: fc.record({ o: v(rows) }) }),
  fc.record({
    query: fc.constant('mutation ($o: author_insert_input!, $c: author_on_conflict) { insert_author_one(object: $o, on_conflict: $c) { id name } }'),
    variables: fc.record({ o: v(rowArb), c: v(fc.record({ constraint: fc.constantFrom('author_pkey', 'nope'), update_columns: fc.subarray(['name', 'info', 'id']), where: fc.constant({}) }, { requiredKeys: ['constraint'] })) }, { requiredKeys: ['o'] }),
  }),
  fc.record({ query: fc.constant('mutation ($o: [article_insert_input!]!) { insert_article(objects: $o) { affected_rows returning { title author { name } } } }'), variables: fc.record({ o: v(rows) }) }),
  fc.record({
    query: fc.constant(
      'mutation ($w: author_bool_exp!, $s: author_set_input, $i: author_inc_input, $a: author_append_input, $k: author_delete_key_input, $p: author_delete_at_path_input, $e: author_delete_elem_input) { update_author(where: $w, _set: $s, _inc: $i, _append: $a, _delete_key: $k, _delete_at_path: $p, _delete_elem: $e) { affected_rows returning { id info } } }',
    ),
    variables: fc.record(
      {
        w: v(fc.oneof(fc.constant({}), fc.record({ id: fc.record({ _eq: fairNumber }) }), fc.record({ name: fc.record({ _ilike: fairString }) }))),
        s: v(fc.record({ name: fairString, info: fairJson }, { requiredKeys: [] })),
        i: v(fc.record({ id: fairNumber })),
        a: v(fc.record({ info: fairJson })),
        k: v(fc.record({ info: fairString })),
        p: v(fc.record({ info: fc.array(fairString, { maxLength: 3 }) })),
        e: v(fc.record({ info: fairNumber })),
      },
      { requiredKeys: ['w'] },
    ),
  }),
  fc.record({
    query: fc.constant('mutation ($u: [author_updates!]!) { update_author_many(updates: $u) { affected_rows } }'),
    variables: fc.record({ u: v(fc.array(fc.record({ where: fc.constant({}), _set: fc.record({ name: fairString }, { requiredKeys: [] }), _inc: fc.record({ id: fairNumber }) }, { requiredKeys: ['where'] }), { maxLength: 3 })) }),
  }),
  fc.record({ query: fc.constant('mutation ($id: Int!, $s: author_set_input) { update_author_by_pk(pk_columns: {id: $id}, _set: $s) { id } }'), variables: fc.record({ id: v(fairNumber), s: v(fc.record({ name: fairString }, { requiredKeys: [] })) }) }),
  fc.record({ query: fc.constant('mutation ($w: article_bool_exp!) { delete_article(where: $w) { affected_rows } }'), variables: fc.record({ w: v(fc.oneof(fc.constant({}), fc.record({ id: fc.record({ _gt: fairNumber }) }))) }) }),
  fc.record({ query: fc.constant('mutation ($id: Int!) { delete_author_by_pk(id: $id) { id } a: insert_author_one(object: {name: "again"}) { id } }'), variables: fc.record({ id: v(fairNumber) }) }),
);

/** GraphQL mutations only (fuzz.test.ts gives them their own runs). */
export function mutationRequestArb(): fc.Arbitrary<FuzzRequest> {
  return fc.record({
    method: fc.constant('POST' as const),
    path: fc.constant('/v1/graphql' as const),
    body: mutationArb.map((json) => ({ json })),
    // Mostly the admin, whose schema has every mutation; sometimes anything.
    headers: fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: headersArb }),
  });
}

export function requestArb(types: { metadata: string[]; query: string[] }, only?: { endpoint: 'metadata' | 'query'; type: string; keys?: string[] }): fc.Arbitrary<FuzzRequest> {
  const json = (path: Endpoint, body: fc.Arbitrary<unknown>) =>
    fc.record({
      method: fc.constant('POST' as const),
      path: fc.constant(path),
      body: fc.oneof({ weight: 9, arbitrary: body.map((json) => ({ json })) }, { weight: 1, arbitrary: rawBody.map((raw) => ({ raw })) }),
      headers: headersArb,
    });
  if (only) return json(only.endpoint === 'metadata' ? '/v1/metadata' : '/v1/query', envelopeArb([only.type], only.keys));
  return fc.oneof(
    { weight: 8, arbitrary: json('/v1/metadata', envelopeArb(types.metadata)) },
    { weight: 4, arbitrary: json('/v1/query', envelopeArb(types.query)) },
    { weight: 2, arbitrary: json('/v1/graphql', fc.oneof(fc.record({ query: plausible('query'), variables: hostileValue, operationName: oddString }, { requiredKeys: ['query'] }), hostileValue)) },
    { weight: 2, arbitrary: json('/v1/graphql', mutationArb) },
    { weight: 1, arbitrary: json('/v1alpha1/pg_dump', fc.oneof(fc.record({ opts: plausible('opts'), clean_output: fc.boolean(), source: plausible('source') }, { requiredKeys: [] }), hostileValue)) },
    { weight: 1, arbitrary: fc.record({ method: fc.constant('GET' as const), path: fc.constant('/v1alpha1/config' as const), body: fc.constant(undefined), headers: headersArb }) },
  );
}

/**
 * GraphQL documents whose cost grows faster than their size, and batches (Note [GraphQL request
 * limits] in plugins/graphql/limits.ts): fragment bombs (each fragment spreading the previous one
 * several times), chains and cycles of fragments, floods of aliases and of repeated fields, deep
 * nesting through relationships, long batches. Each must be answered (most refused, naming a
 * limit) within the probe's bound, and never with a 5xx.
 */
const costlyDocumentArb: fc.Arbitrary<string> = fc.oneof(
  fc.record({ levels: fc.integer({ min: 1, max: 45 }), fan: fc.integer({ min: 2, max: 4 }), leaf: fc.constantFrom('id name', 'id articles { id title }', '__typename') }).map(({ levels, fan, leaf }) => {
    let doc = `{ author(limit: 1) { ...F${levels} } } fragment F0 on author { ${leaf} }`;
    for (let i = 1; i <= levels; i++) doc += ` fragment F${i} on author { ${Array.from({ length: fan }, () => `...F${i - 1}`).join(' ')} }`;
    return doc;
  }),
  fc.integer({ min: 1, max: 8000 }).map((n) => {
    let doc = `{ author { ...F${n} } } fragment F0 on author { id }`;
    for (let i = 1; i <= n; i++) doc += ` fragment F${i} on author { ...F${i - 1} }`;
    return doc;
  }),
  fc.integer({ min: 2, max: 50 }).map((n) => `{ author { ...F0 } } ${Array.from({ length: n }, (_, i) => `fragment F${i} on author { id ...F${(i + 1) % n} }`).join(' ')}`),
  fc.record({ n: fc.integer({ min: 1, max: 20_000 }), field: fc.constantFrom('author { id name }', 'article(limit: 1) { id }', '__typename') }).map(({ n, field }) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`),
  fc.integer({ min: 1, max: 300_000 }).map((n) => `{ author { ${'id '.repeat(n)}} }`),
  fc.integer({ min: 1, max: 400 }).map((n) => `{ author { ${'articles { author { '.repeat(n)}id${' } }'.repeat(n)} } }`),
);

export function costlyGraphqlArb(): fc.Arbitrary<FuzzRequest> {
  const roles = fc.constantFrom<Record<string, string>>({}, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
  return fc.record({
    method: fc.constant('POST' as const),
    path: fc.constant('/v1/graphql' as const),
    body: fc.oneof(
      { weight: 4, arbitrary: costlyDocumentArb.map((query) => ({ json: { query } })) },
      {
        weight: 1,
        arbitrary: fc
          .record({ n: fc.integer({ min: 0, max: 100_000 }), query: fc.oneof(fc.constant('{ author { id } }'), costlyDocumentArb.filter((q) => q.length < 2000)) })
          .map(({ n, query }) => ({ json: Array.from({ length: n }, () => ({ query })) })),
      },
    ),
    headers: roles,
  });
}

/** The request body as it goes on the wire. */
export function wireBody(r: FuzzRequest): string | Uint8Array | undefined {
  if (!r.body) return undefined;
  return 'json' in r.body ? JSON.stringify(r.body.json) : r.body.raw;
}
