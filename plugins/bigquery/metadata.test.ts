/**
 * The BigQuery kind end to end through the HTTP API, with a stand-in for BigQuery at the client
 * boundary only (./test-support/stand-in.ts: INFORMATION_SCHEMA answered from hand-written
 * fixtures, compiled queries answered with what the test says BigQuery would answer). Above the
 * boundary everything is the real server: the metadata API, the framework's command groups under
 * `bigquery_`, tables named `{dataset, name}` (Note [Table names of a kind]), the build, the
 * GraphQL schema, planning, the GoogleSQL compiler, the kind's connection and errors. Whether
 * BigQuery answers the compiled GoogleSQL as intended is live.test.ts's, with a real project.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../server/plugins.js';
import { useServer } from '../../test/helpers.js';
import { bigqueryKind, bigqueryPlugin } from './index.js';
import { bigqueryStandIn, jsonAnswer } from './test-support/stand-in.js';

const stand = bigqueryStandIn();
// A service account key as Google's key files hold it (a fresh RSA key: the stand-in signs nothing).
const PEM = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const KEY = { type: 'service_account', project_id: 'svc-test', client_email: 'svc@svc-test.iam.gserviceaccount.com', private_key: PEM };
const s = useServer(undefined, {
  plugins: builtinPlugins.map((p) => (p.name === 'bigquery' ? bigqueryPlugin(stand.driver) : p)),
  env: { BQ_KEY: JSON.stringify(KEY), BQ_DATASETS: 'shop, sales' },
});

const source = 'bq';
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const configuration = { service_account: { from_env: 'BQ_KEY' }, project_id: 'svc-test', datasets: { from_env: 'BQ_DATASETS' }, global_select_limit: 100 };
const exported = async () => (await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === source);
const lastSent = (match: (sql: string) => boolean) => stand.sent().filter((x) => match(x.sql)).at(-1);
const shop = (name: string) => ({ dataset: 'shop', name });

describe('bigquery_add_source', () => {
  it('validates the configuration; what cannot be used makes the source inconsistent, refused', async () => {
    expect(await s.metadata({ type: 'bigquery_add_source', args: { name: 'x', configuration: { service_account: '{}', datasets: ['shop'] } } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.configuration', error: 'key "project_id" not found' },
    });
    const reason = async (c: Record<string, unknown>) => {
      const r = await s.metadata({ type: 'bigquery_add_source', args: { name: 'x', configuration: { ...configuration, ...c } } });
      expect(r.status, r.text).toBe(400);
      return r.body.internal[0].reason;
    };
    expect(await reason({ service_account: 'not json' })).toBe('Inconsistent object: service_account is not a JSON object (the key file of a service account)');
    expect(await reason({ service_account: { client_email: 'a@b' } })).toBe('Inconsistent object: service_account must have "client_email" and "private_key" (the key file of a service account)');
    expect(await reason({ service_account: { ...KEY, private_key: 'not a key' } })).toBe('Inconsistent object: service_account.private_key is not a PEM private key');
    expect(await reason({ datasets: { from_env: 'NOT_SET' } })).toBe('Inconsistent object: environment variable "NOT_SET" not set');
    expect(await reason({ service_account: { ...KEY, client_email: 'bad@svc-test.iam.gserviceaccount.com' } })).toBe('Inconsistent object: could not connect to the source: invalid_grant: Invalid JWT Signature.');
    expect(await reason({ datasets: ['shop', 'nowhere'] })).toBe('Inconsistent object: could not connect to the source: Not found: Dataset svc-test:nowhere was not found in location US');
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources.map((x: { name: string }) => x.name)).toEqual(['default']);
  });

  it('adds a source: the key and the datasets from the environment', async () => {
    await ok({ type: 'bigquery_add_source', args: { name: source, configuration } });
    expect(await exported()).toEqual({ name: source, kind: 'bigquery', tables: [], configuration });
    expect(stand.configs.at(-1)).toMatchObject({ source, projectId: 'svc-test', credentials: { client_email: KEY.client_email } });
  });
});

describe('tables named {dataset, name} (Note [Table names of a kind])', () => {
  it('tracks tables by {dataset, name}; a bare name or {schema} is not a BigQuery table name', async () => {
    await ok({ type: 'bigquery_track_table', args: { source, table: shop('author') } });
    await ok({ type: 'bigquery_track_table', args: { source, table: shop('article') } });
    await ok({ type: 'bigquery_track_table', args: { source, table: { dataset: 'sales', name: 'customer' } } });
    expect(await s.metadata({ type: 'bigquery_track_table', args: { source, table: 'author' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.table', error: 'expected a table name: an object {dataset, name}' },
    });
    expect(await s.metadata({ type: 'bigquery_track_table', args: { source, table: shop('ghost') } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'no such table/view exists in source: "shop.ghost"' },
    });
  });

  it('relationships (manual, as Hasura\'s BigQuery) and permissions; export names tables by dataset', async () => {
    await ok({ type: 'bigquery_create_object_relationship', args: { source, table: shop('article'), name: 'author', using: { manual_configuration: { remote_table: shop('author'), column_mapping: { author_id: 'id' } } } } });
    await ok({ type: 'bigquery_create_array_relationship', args: { source, table: shop('author'), name: 'articles', using: { manual_configuration: { remote_table: shop('article'), column_mapping: { id: 'author_id' } } } } });
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('article'), role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 5 } } });
    expect(await s.metadata({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'user', permission: { columns: ['id'], filter: { id: { _eq: 'one' } } } } })).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('parsing Int64 failed') },
    });
    const e = await exported();
    expect(e.tables.map((t: { table: unknown }) => t.table)).toEqual([shop('author'), shop('article'), { dataset: 'sales', name: 'customer' }]);
    const article = e.tables.find((t: { table: { name: string } }) => t.table.name === 'article');
    expect(article.object_relationships[0].using).toEqual({ manual_configuration: { remote_table: shop('author'), column_mapping: { author_id: 'id' }, insertion_order: null } });
    // The export reads back as it is (replace_metadata of the exported document).
    const doc = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    expect(await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc.metadata } })).toMatchObject({ status: 200 });
    expect((await exported()).tables.map((t: { table: unknown }) => t.table)).toEqual([shop('author'), shop('article'), { dataset: 'sales', name: 'customer' }]);
  });

  it('the GraphQL schema: <dataset>_<table> root fields, Hasura\'s BigQuery scalars, no mutations', async () => {
    const r = await s.gql(`{
      q: __type(name: "query_root") { fields { name } }
      a: __type(name: "shop_author") { fields { name type { name ofType { name } } } }
      c: __type(name: "sales_customer") { fields { name type { name ofType { name } } } }
    }`);
    const names = r.data.q.fields.map((f: { name: string }) => f.name);
    expect(names).toEqual(expect.arrayContaining(['shop_author', 'shop_author_aggregate', 'shop_author_by_pk', 'shop_article', 'sales_customer']));
    const types = (t: { fields: { name: string; type: { name: string | null; ofType: { name: string } | null } }[] }) => Object.fromEntries(t.fields.map((f) => [f.name, f.type.name ?? f.type.ofType!.name]));
    expect(types(r.data.a)).toMatchObject({ id: 'Int', name: 'String', born: 'Date', score: 'Decimal' });
    expect(types(r.data.c)).toMatchObject({ customer_id: 'String', signed_up: 'Timestamp', tags: 'JSON', address: 'JSON' });
    // Its comparison types are its own (Hasura's `<scalar>_BigQuery_comparison_exp`).
    const cmp = await s.gql('{ s: __type(name: "String_BigQuery_comparison_exp") { inputFields { name } } g: __type(name: "shop_author_bool_exp") { inputFields { name type { name } } } }');
    expect(cmp.data.s.inputFields.map((f: { name: string }) => f.name)).toEqual(['_eq', '_gt', '_gte', '_in', '_is_null', '_like', '_lt', '_lte', '_neq', '_nin', '_nlike']);
    expect(cmp.data.g.inputFields.find((f: { name: string }) => f.name === 'id').type.name).toBe('Int_BigQuery_comparison_exp');
    const m = await s.gql('mutation { insert_shop_author(objects: [{id: 9}]) { affected_rows } }');
    expect(m.errors[0].message).toBe('no mutations exist');
  });

  it("aggregates as Hasura's BigQuery backend offers them (Note [BigQuery aggregates]): max and min on a BOOL column too", async () => {
    const r = await s.gql(`{
      f: __type(name: "shop_article_aggregate_fields") { fields { name } }
      max: __type(name: "shop_article_max_fields") { fields { name type { name } } }
      sum: __type(name: "shop_article_sum_fields") { fields { name type { name } } }
      avg: __type(name: "shop_article_avg_fields") { fields { name type { name } } }
    }`);
    expect(r.data.f.fields.map((f: { name: string }) => f.name)).toEqual(['count', 'avg', 'max', 'min', 'stddev', 'stddev_pop', 'stddev_samp', 'sum', 'var_pop', 'var_samp', 'variance']);
    const fields = (t: { fields: { name: string; type: { name: string } }[] }) => Object.fromEntries(t.fields.map((f) => [f.name, f.type.name]));
    expect(fields(r.data.max)).toEqual({ id: 'Int', title: 'String', author_id: 'Int', rating: 'Int', published: 'Boolean' });
    expect(fields(r.data.sum)).toEqual({ id: 'Int', author_id: 'Int', rating: 'Int' });
    expect(fields(r.data.avg)).toEqual({ id: 'Float', author_id: 'Float', rating: 'Float' });
    stand.answer((sql) => sql.includes('MAX(_t0.`published`) AS `published`'), jsonAnswer({ aggregate: { max: { published: true }, stddev_pop: { rating: 0.5 } } }));
    const q = await s.gql('{ shop_article_aggregate { aggregate { max { published } stddev_pop { rating } } } }');
    expect(q).toEqual({ data: { shop_article_aggregate: { aggregate: { max: { published: true }, stddev_pop: { rating: 0.5 } } } } });
    expect(lastSent((x) => x.includes('MAX(_t0.`published`)'))!.sql).toContain('STDDEV_POP(_t0.`rating`) AS `rating`');
    // A column the function does not apply to is not in its type.
    const bad = await s.gql('{ shop_article_aggregate { aggregate { sum { published } } } }');
    expect(bad.errors[0].message).toMatch(/published/);
  });
});

describe('GraphQL over the stand-in', () => {
  it('a query with a relationship, compiled to GoogleSQL, its parameters named, the global select limit applied', async () => {
    stand.answer((sql) => sql.startsWith('SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.`name` AS `name`, ARRAY('), jsonAnswer([{ name: 'ann', articles: [{ title: 'a1' }] }]));
    const r = await s.gql('{ shop_author(where: {name: {_like: "a%"}}, order_by: {id: asc}) { name articles { title } } }');
    expect(r).toEqual({ data: { shop_author: [{ name: 'ann', articles: [{ title: 'a1' }] }] } });
    const sent = lastSent((x) => x.includes('FROM `shop`.`author` AS _t0'))!;
    expect(sent.params).toEqual(['a%']);
    expect(sent.sql).toContain('WHERE _t1.`author_id` = _t0.`id`');
    expect(sent.sql).toContain('LIMIT 100)');
  });

  it("a role's filter with its session variable; a bad value is data-exception", async () => {
    stand.answer((sql) => sql.includes('FROM `shop`.`article` AS _t0 WHERE (_t0.`author_id` = CAST(@p1 AS INT64))'), jsonAnswer([{ id: 1, title: 'a1' }]));
    expect(await s.gql('{ shop_article { id title } }', undefined, { 'x-svc-role': 'user', 'x-svc-user-id': '1' })).toEqual({ data: { shop_article: [{ id: 1, title: 'a1' }] } });
    expect(lastSent((x) => x.includes('`shop`.`article` AS _t0 WHERE (_t0.`author_id`'))!).toMatchObject({ params: ['1'] });
    stand.answer(
      (sql) => sql.includes('CAST(@p1 AS INT64))') && sql.includes('`shop`.`article`'),
      () => {
        throw Object.assign(new Error('Bad int64 value: one'), { code: 400, errors: [{ reason: 'invalidQuery' }] });
      },
    );
    const bad = await s.gql('{ shop_article { id } }', undefined, { 'x-svc-role': 'user', 'x-svc-user-id': 'one' });
    expect(bad.errors[0]).toMatchObject({ message: 'Bad int64 value: one', extensions: { code: 'data-exception' } });
  });

  it('an aggregate; subscriptions are not-supported; explain is a dry run', async () => {
    stand.answer((sql) => sql.startsWith('SELECT TO_JSON_STRING((SELECT AS STRUCT STRUCT(COUNT(*)'), jsonAnswer({ aggregate: { count: 4 } }));
    expect(await s.gql('{ shop_article_aggregate { aggregate { count } } }')).toEqual({ data: { shop_article_aggregate: { aggregate: { count: 4 } } } });
    const e = await s.request('POST', '/v1/graphql/explain', { query: { query: '{ shop_author_by_pk(id: 1) { name } }' } });
    expect(e.status, e.text).toBe(200);
    expect(e.body[0]).toMatchObject({ field: 'shop_author_by_pk', params: ['1'], plan: ['dry run: 1024 bytes would be processed', 'reads svc-test.shop.author'] });
    expect(stand.queries.at(-1)!.sql.startsWith('-- dry run\nSELECT TO_JSON_STRING((SELECT AS STRUCT')).toBe(true);
  });
});

describe('computed fields: table functions by argument mapping (Note [Computed fields by argument mapping])', () => {
  const add = (name: string, definition: Record<string, unknown>, table = shop('author')) => s.metadata({ type: 'bigquery_add_computed_field', args: { source, table, name, definition } });
  const reasonOf = async (name: string, definition: Record<string, unknown>) => {
    const r = await add(name, definition);
    expect(r.status, r.text).toBe(400);
    return r.body.internal[0].reason as string;
  };
  const fn = (name: string) => ({ dataset: 'shop', name });
  const cannot = (name: string) => `Inconsistent object: in table "shop.author": in computed field "${name}": the computed field "${name}" cannot be added to table "shop.author" `;

  it("adds one as Hasura's BigQuery does: {function, argument_mapping, return_table}, exported by dataset", async () => {
    await ok({ type: 'bigquery_add_computed_field', args: { source, table: shop('author'), name: 'articles_by', definition: { function: fn('author_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('article') }, comment: 'articles of at least a rating' } });
    const author = (await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author');
    expect(author.computed_fields).toEqual([{ name: 'articles_by', definition: { function: fn('author_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('article') }, comment: 'articles of at least a rating' }]);
    // The export reads back as it is.
    const doc = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    expect(await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc.metadata } })).toMatchObject({ status: 200 });
    expect((await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author').computed_fields).toEqual(author.computed_fields);
    expect(await add('articles_by', { function: fn('author_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('article') })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', error: 'computed field "articles_by" already exists in table "shop.author"' },
    });
  });

  it("refuses PostgreSQL's definition keys and a malformed mapping (parse-failed)", async () => {
    expect(await add('x', { function: fn('author_articles'), table_argument: 'author_id', argument_mapping: {} })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.definition.table_argument' } });
    expect(await add('x', { function: fn('author_articles'), return_table: shop('article') })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.definition' } });
    expect(await add('x', { function: fn('author_articles'), argument_mapping: { author_id: 1 }, return_table: shop('article') })).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
  });

  it("what the function cannot be is refused with Hasura's reasons, the metadata unchanged", async () => {
    const before = await exported();
    expect(await reasonOf('x', { function: fn('ghost'), argument_mapping: {}, return_table: shop('article') })).toBe('Inconsistent object: in table "shop.author": in computed field "x": no such function exists: "shop.ghost"');
    // A mapping that names no argument of the function and a column the table does not have: both reasons.
    expect(await reasonOf('x', { function: fn('author_articles'), argument_mapping: { writer: 'id', author_id: 'author_id' }, return_table: shop('article') })).toBe(
      cannot('x') + 'for the following reasons:\n  • the argument "writer" is not one of function "shop.author_articles" input arguments\n  • the column "author_id" does not exist in table "shop.author"\n',
    );
    // A scalar function is no table function.
    expect(await reasonOf('x', { function: fn('name_length'), argument_mapping: { s: 'name' }, return_table: shop('article') })).toBe(cannot('x') + 'because function "shop.name_length" is not a TABLE_VALUED_FUNCTION');
    expect(await reasonOf('x', { function: fn('author_articles'), argument_mapping: { author_id: 'id' } })).toBe(cannot('x') + "because function \"shop.author_articles\" is not defined with 'RETURNS TABLE'. Expecting return table name.");
    expect(await reasonOf('x', { function: fn('author_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('author_names') })).toBe(cannot('x') + 'because function "shop.author_articles" returning set of table "shop.author_names" is not tracked');
    expect(await reasonOf('x', { function: fn('article_titles'), argument_mapping: { a_id: 'id' }, return_table: shop('article') })).toBe(cannot('x') + 'because return table "shop.article" is not required as the function "shop.article_titles" returns arbitrary column fields');
    // A declared column must have a GraphQL name (Note [Computed fields by argument mapping]).
    expect(await reasonOf('x', { function: fn('bad_columns'), argument_mapping: { a_id: 'id' } })).toBe(cannot('x') + 'because fieldName "first-name" is not a valid GraphQL name');
    expect(await reasonOf('x', { function: fn('bad_columns'), argument_mapping: { a_id: 'id', b: 'born' } })).toBe(
      cannot('x') + 'for the following reasons:\n  • the argument "b" is not one of function "shop.bad_columns" input arguments\n  • fieldName "first-name" is not a valid GraphQL name\n',
    );
    expect(await reasonOf('x', { function: fn('no_args'), argument_mapping: {}, return_table: shop('article') })).toBe(cannot('x') + 'because function "shop.no_args" has no input arguments defined');
    expect(await reasonOf('x', { function: fn('anything'), argument_mapping: { x: 'id' }, return_table: shop('article') })).toBe(cannot('x') + 'because argument "x" has no data type defined in the function "shop.anything"');
    expect(await reasonOf('1x', { function: fn('author_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('article') })).toBe(cannot('1x') + 'because "1x" is not valid GraphQL name');
    expect(await exported()).toEqual(before);
  });

  it('bigquery_track_function is refused, as Hasura refuses SQL functions on BigQuery', async () => {
    const r = await s.metadata({ type: 'bigquery_track_function', args: { source, function: fn('author_articles') } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.internal[0].reason).toBe('Inconsistent object: in function "shop.author_articles": SQL Functions are not supported for bigquery source');
    expect((await exported()).functions).toBeUndefined();
  });

  it('the GraphQL field: the unmapped arguments as `args`, the return table\'s rows and filter, compiled as a named call', async () => {
    const r = await s.gql(`{ a: __type(name: "shop_author") { fields { name description args { name type { ofType { name } } } type { ofType { ofType { ofType { name } } } } } }
      i: __type(name: "articles_by_shop_author_args") { inputFields { name type { name } } } }`);
    const field = r.data.a.fields.find((f: { name: string }) => f.name === 'articles_by');
    expect(field.description).toBe('articles of at least a rating');
    expect(field.type.ofType.ofType.ofType.name).toBe('shop_article');
    expect(field.args.map((a: { name: string }) => a.name)).toEqual(['args', 'distinct_on', 'limit', 'offset', 'order_by', 'where']);
    expect(r.data.i.inputFields).toEqual([{ name: 'min_rating', type: { name: 'Int' } }]);

    stand.answer((sql) => sql.includes('`shop`.`author_articles`('), jsonAnswer([{ name: 'ann', articles_by: [{ title: 'a2' }] }]));
    const q = await s.gql('{ shop_author { name articles_by(args: {min_rating: 3}, where: {title: {_like: "a%"}}, limit: 1) { title } } }');
    expect(q).toEqual({ data: { shop_author: [{ name: 'ann', articles_by: [{ title: 'a2' }] }] } });
    const sent = lastSent((x) => x.includes('`shop`.`author_articles`('))!;
    expect(sent.params).toEqual(['3', 'a%']);
    expect(sent.sql).toContain('FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM `shop`.`author_articles`(`author_id` => _t0.`id`, `min_rating` => CAST(@p1 AS INT64)))) AS _t1 WHERE (_t1.`title` LIKE @p2)');
    // The global select limit caps the computed field's rows too (as Hasura's).
    expect(sent.sql).toContain('LIMIT 1) AS `articles_by`');
    // Without `args` the function's own argument cannot be left out (BigQuery's have no defaults).
    const missing = await s.gql('{ shop_author { articles_by { title } } }');
    expect(missing.errors).toEqual([{ message: "missing required field 'args'", extensions: { code: 'validation-failed', path: '$.selectionSet.shop_author.selectionSet.articles_by.args.args' } }]);
  });

  it("a role sees it where it may select the return table, and the return table's filter applies", async () => {
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'user', permission: { columns: ['id', 'name'], filter: {} } } });
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'guest', permission: { columns: ['id', 'name'], filter: {} } } });
    const fields = async (role: string) => (await s.gql('{ __type(name: "shop_author") { fields { name } } }', undefined, { 'x-svc-role': role })).data.__type.fields.map((f: { name: string }) => f.name);
    expect(await fields('user')).toContain('articles_by');
    expect(await fields('guest')).not.toContain('articles_by');
    stand.answer((sql) => sql.includes('`shop`.`author_articles`('), jsonAnswer([{ articles_by: [] }]));
    await s.gql('{ shop_author { articles_by(args: {min_rating: 1}) { id } } }', undefined, { 'x-svc-role': 'user', 'x-svc-user-id': '7' });
    const sent = lastSent((x) => x.includes('`shop`.`author_articles`('))!;
    expect(sent.params).toEqual(['1', '7']);
    expect(sent.sql).toContain('AS _t1 WHERE (_t1.`author_id` = CAST(@p2 AS INT64))');
  });

  it('one whose arguments are all mapped is in the bool_exp too (Hasura allows no arguments there): EXISTS over the call', async () => {
    await ok({ type: 'bigquery_add_computed_field', args: { source, table: shop('author'), name: 'all_articles', definition: { function: fn('all_articles'), argument_mapping: { author_id: 'id' }, return_table: shop('article') } } });
    const exp = await s.gql('{ __type(name: "shop_author_bool_exp") { inputFields { name type { name } } } }');
    const names = exp.data.__type.inputFields.map((f: { name: string }) => f.name);
    expect(names).toContain('all_articles');
    expect(names).not.toContain('articles_by');
    stand.answer((sql) => sql.includes('WHERE EXISTS (SELECT 1 FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM `shop`.`all_articles`('), jsonAnswer([{ name: 'ann' }]));
    expect(await s.gql('{ shop_author(where: {all_articles: {title: {_eq: "a2"}}}) { name } }')).toEqual({ data: { shop_author: [{ name: 'ann' }] } });
    const sent = lastSent((x) => x.includes('WHERE EXISTS'))!;
    expect(sent.sql).toContain('WHERE EXISTS (SELECT 1 FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM `shop`.`all_articles`(`author_id` => _t0.`id`))) AS _t1 WHERE (_t1.`title` = @p1))');
    expect(sent.params).toEqual(['a2']);
    // In a role's filter too (a stored boolean expression), and not listable in computed_fields.
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'writer', permission: { columns: ['name'], filter: { all_articles: { title: { _eq: 'X-Svc-Title' } } } } } });
    stand.answer((sql) => sql.includes('`shop`.`all_articles`(`author_id` => _t0.`id`))) AS _t1 WHERE (_t1.`title` = @p1)'), jsonAnswer([{ name: 'bob' }]));
    expect(await s.gql('{ shop_author { name } }', undefined, { 'x-svc-role': 'writer', 'x-svc-title': 'b1' })).toEqual({ data: { shop_author: [{ name: 'bob' }] } });
    expect(lastSent((x) => x.includes('`shop`.`all_articles`('))!.params).toEqual(['b1']);
    const listed = await s.metadata({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'lister', permission: { columns: ['name'], filter: {}, computed_fields: ['all_articles'] } } });
    expect(listed.status, listed.text).toBe(400);
    expect(JSON.stringify(listed.body)).toContain('select permissions on computed field \\"all_articles\\" are auto-derived from the permissions on its returning table \\"shop.article\\" and cannot be specified manually');
    await ok({ type: 'bigquery_drop_select_permission', args: { source, table: shop('author'), role: 'writer' } });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'all_articles' } });
  });

  it('drops it; dropping it again is not-exists', async () => {
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'articles_by' } });
    expect((await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author').computed_fields).toBeUndefined();
    expect(await s.metadata({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'articles_by' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', error: 'computed field "articles_by" does not exist', path: '$.args.name' },
    });
  });
});

describe('computed fields over table functions that declare their columns (Note [Computed fields by argument mapping])', () => {
  const fn = (name: string) => ({ dataset: 'shop', name });
  const add = (name: string, definition: Record<string, unknown>, table = shop('author'), comment?: string) =>
    s.metadata({ type: 'bigquery_add_computed_field', args: { source, table, name, definition, ...(comment ? { comment } : {}) } });
  const as = (role: string) => ({ 'x-svc-role': role });
  const fieldNames = async (type: string, role = 'admin') => ((await s.gql(`{ __type(name: "${type}") { fields { name } inputFields { name } } }`, undefined, as(role))).data.__type ?? null) as { fields: { name: string }[] | null; inputFields: { name: string }[] | null } | null;

  it('adds them without return_table; the export reads back as it is', async () => {
    expect((await add('titles', { function: fn('article_titles'), argument_mapping: { a_id: 'id' } })).status).toBe(200);
    expect((await add('stats', { function: fn('article_stats'), argument_mapping: { a_id: 'id' } }, shop('author'), 'rated articles')).status).toBe(200);
    const author = (await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author');
    expect(author.computed_fields).toEqual([
      { name: 'titles', definition: { function: fn('article_titles'), argument_mapping: { a_id: 'id' } } },
      { name: 'stats', definition: { function: fn('article_stats'), argument_mapping: { a_id: 'id' } }, comment: 'rated articles' },
    ]);
    const doc = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    expect(await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc.metadata } })).toMatchObject({ status: 200 });
    expect((await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author').computed_fields).toEqual(author.computed_fields);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it("the field: `[<name>__fields!]!` of the declared columns (nullable, in order), `args` alone; not in where or order_by", async () => {
    const r = await s.gql(`{ a: __type(name: "shop_author") { fields { name description args { name type { kind ofType { name } } } type { kind ofType { kind ofType { kind ofType { name } } } } } }
      t: __type(name: "titles__fields") { description fields { name args { name } type { kind name } } }
      st: __type(name: "stats__fields") { description fields { name type { kind name } } }
      b: __type(name: "shop_author_bool_exp") { inputFields { name } }
      o: __type(name: "shop_author_order_by") { inputFields { name } } }`);
    const field = (name: string) => r.data.a.fields.find((f: { name: string }) => f.name === name);
    const listOf = { kind: 'NON_NULL', ofType: { kind: 'LIST', ofType: { kind: 'NON_NULL', ofType: { name: 'titles__fields' } } } };
    expect(field('titles')).toEqual({ name: 'titles', description: 'A computed field, executes function "shop.article_titles"', args: [], type: listOf });
    expect(field('stats').description).toBe('rated articles');
    expect(field('stats').args).toEqual([{ name: 'args', type: { kind: 'NON_NULL', ofType: { name: 'stats_shop_author_args' } } }]);
    expect(field('stats').type.ofType.ofType.ofType.name).toBe('stats__fields');
    expect(r.data.t).toEqual({
      description: 'column fields returning by "titles"',
      fields: [
        { name: 'id', args: [], type: { kind: 'SCALAR', name: 'Int' } },
        { name: 'title', args: [], type: { kind: 'SCALAR', name: 'String' } },
      ],
    });
    // BigQuery's scalars as for a table's columns (Note [BigQuery scalars]): NUMERIC(10, 2) is Decimal, an ARRAY JSON.
    expect(r.data.st.fields).toEqual([
      { name: 'title', type: { kind: 'SCALAR', name: 'String' } },
      { name: 'rating', type: { kind: 'SCALAR', name: 'Int' } },
      { name: 'score', type: { kind: 'SCALAR', name: 'Decimal' } },
      { name: 'tags', type: { kind: 'SCALAR', name: 'JSON' } },
    ]);
    expect(r.data.b.inputFields.map((f: { name: string }) => f.name)).not.toContain('titles');
    expect(r.data.o.inputFields.map((f: { name: string }) => f.name)).not.toContain('titles');
  });

  it("the type's name takes the source's type-name customization, as Hasura's mkTypename", async () => {
    await ok({ type: 'bigquery_update_source', args: { name: source, customization: { type_names: { prefix: 'bq_', suffix: '_t' } } } });
    try {
      const r = await s.gql('{ a: __type(name: "bq_shop_author_t") { fields { name type { ofType { ofType { ofType { name } } } } } } t: __type(name: "bq_titles__fields_t") { description } }');
      expect(r.data.a.fields.find((f: { name: string }) => f.name === 'titles').type.ofType.ofType.ofType.name).toBe('bq_titles__fields_t');
      expect(r.data.t).toEqual({ description: 'column fields returning by "titles"' });
      stand.answer((sql) => sql.includes('`shop`.`article_titles`(') && sql.includes('__typename'), jsonAnswer([{ titles: [{ __typename: 'bq_titles__fields_t' }] }]));
      expect(await s.gql('{ shop_author { titles { __typename } } }')).toEqual({ data: { shop_author: [{ titles: [{ __typename: 'bq_titles__fields_t' }] }] } });
      expect(lastSent((x) => x.includes('`shop`.`article_titles`('))!.sql).toContain("'bq_titles__fields_t' AS `__typename`");
    } finally {
      // An empty customization is none (update_source keeps the old one when none is given).
      await ok({ type: 'bigquery_update_source', args: { name: source, customization: {} } });
    }
    expect((await s.gql('{ __type(name: "titles__fields") { name } }')).data.__type).toEqual({ name: 'titles__fields' });
  });

  it('answers the call\'s rows, the parent row\'s columns and the user\'s arguments named; no where, order or limit of its own', async () => {
    stand.answer((sql) => sql.includes('`shop`.`article_titles`('), jsonAnswer([{ name: 'ann', titles: [{ id: 1, title: 'a1', __typename: 'titles__fields' }], stats: [{ title: 'a1', score: '2.5', tags: ['a1'] }] }, { name: 'bob', titles: [], stats: [] }]));
    const q = await s.gql('{ shop_author { name titles { id title __typename } stats(args: {min_rating: 2}) { title score tags } } }');
    expect(q).toEqual({
      data: {
        shop_author: [
          { name: 'ann', titles: [{ id: 1, title: 'a1', __typename: 'titles__fields' }], stats: [{ title: 'a1', score: '2.5', tags: ['a1'] }] },
          { name: 'bob', titles: [], stats: [] },
        ],
      },
    });
    const sent = lastSent((x) => x.includes('`shop`.`article_titles`('))!;
    expect(sent.params).toEqual(['2']);
    expect(sent.sql).toContain(
      "ARRAY(SELECT AS STRUCT _t1.`id` AS `id`, _t1.`title` AS `title`, 'titles__fields' AS `__typename` FROM (SELECT _t1.* FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM `shop`.`article_titles`(`a_id` => _t0.`id`))) AS _t1 WHERE TRUE) AS _t1 LIMIT 100) AS `titles`",
    );
    expect(sent.sql).toContain('FROM `shop`.`article_stats`(`a_id` => _t0.`id`, `min_rating` => CAST(@p1 AS INT64))');
    // What the field does not have is refused as Hasura refuses it (validation-failed).
    const errorOf = async (query: string) => (await s.gql(query)).errors;
    expect(await errorOf('{ shop_author { titles(order_by: {id: asc}) { id } } }')).toEqual([
      { message: "'titles' has no argument named 'order_by'", extensions: { code: 'validation-failed', path: '$.selectionSet.shop_author.selectionSet.titles' } },
    ]);
    expect(await errorOf('{ shop_author { titles { rating } } }')).toEqual([
      { message: "field 'rating' not found in type: 'titles__fields'", extensions: { code: 'validation-failed', path: '$.selectionSet.shop_author.selectionSet.titles.selectionSet.rating' } },
    ]);
    expect(await errorOf('{ shop_author(where: {titles: {id: {_eq: 1}}}) { name } }')).toEqual([
      { message: "field 'titles' not found in type: 'shop_author_bool_exp'", extensions: { code: 'validation-failed', path: '$.selectionSet.shop_author.args.where.titles' } },
    ]);
    expect((await errorOf('{ shop_author { stats { title } } }'))![0]).toMatchObject({ message: "missing required field 'args'", extensions: { code: 'validation-failed' } });
  });

  it('a role sees it where its select permission lists it in computed_fields; no filter of another table applies', async () => {
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'reader', permission: { columns: ['name'], filter: { id: { _eq: 'X-Svc-User-Id' } }, computed_fields: ['titles'] } } });
    // Listed alone (no column), it still shows the table, as a scalar computed field does.
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'counter', permission: { columns: [], filter: {}, computed_fields: ['stats'] } } });
    const fields = async (role: string) => ((await s.gql('{ __type(name: "shop_author") { fields { name } } }', undefined, as(role))).data.__type?.fields ?? []).map((f: { name: string }) => f.name);
    expect(await fields('reader')).toEqual(['name', 'titles']);
    expect(await fields('counter')).toEqual(['stats']);
    // `user` may select article (the rows a table function of the same columns reads): not enough.
    expect(await fields('user')).toEqual(['articles', 'id', 'name']);
    stand.answer((sql) => sql.includes('`shop`.`article_titles`(') && sql.includes('CAST(@p1 AS INT64)'), jsonAnswer([{ name: 'ann', titles: [{ title: 'a1' }] }]));
    expect(await s.gql('{ shop_author { name titles { title } } }', undefined, { ...as('reader'), 'x-svc-user-id': '1' })).toEqual({ data: { shop_author: [{ name: 'ann', titles: [{ title: 'a1' }] }] } });
    const sent = lastSent((x) => x.includes('`shop`.`article_titles`('))!;
    expect(sent.params).toEqual(['1']);
    expect(sent.sql).toContain('FROM `shop`.`article_titles`(`a_id` => _t0.`id`))) AS _t1 WHERE TRUE) AS _t1 LIMIT 100) AS `titles` FROM (SELECT _t0.* FROM `shop`.`author` AS _t0 WHERE (_t0.`id` = CAST(@p1 AS INT64))) AS _t0');
    expect((await s.gql('{ shop_author { titles { title } } }', undefined, as('user'))).errors[0].message).toBe("field 'titles' not found in type: 'shop_author'");
  });

  it("an inherited role sees it only where every parent role does (its rows cannot be hidden row by row)", async () => {
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'namer', permission: { columns: ['name'], filter: { id: { _eq: 2 } } } } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'reader_namer', role_set: ['reader', 'namer'] } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'reader_only', role_set: ['reader'] } });
    const fields = async (role: string) => ((await s.gql('{ __type(name: "shop_author") { fields { name } } }', undefined, as(role))).data.__type?.fields ?? []).map((f: { name: string }) => f.name);
    expect(await fields('reader_namer')).toEqual(['name']);
    expect(await fields('reader_only')).toEqual(['name', 'titles']);
    // Parents that list no column: where the computed field is hidden, so is the object type
    // (it would have no field), and the role's schema stays valid.
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'lister', permission: { columns: [], filter: { id: { _eq: 1 } }, computed_fields: ['stats'] } } });
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'plain', permission: { columns: [], filter: { id: { _eq: 2 } }, allow_aggregations: true } } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'lister_plain', role_set: ['lister', 'plain'] } });
    expect(await fields('lister')).toEqual(['stats']);
    expect(await s.gql('{ __typename t: __type(name: "shop_author") { name } }', undefined, as('lister_plain'))).toEqual({ data: { __typename: 'query_root', t: null } });
    await ok({ type: 'drop_inherited_role', args: { role_name: 'reader_namer' } });
    await ok({ type: 'drop_inherited_role', args: { role_name: 'reader_only' } });
    await ok({ type: 'drop_inherited_role', args: { role_name: 'lister_plain' } });
    await ok({ type: 'bigquery_drop_select_permission', args: { source, table: shop('author'), role: 'lister' } });
    await ok({ type: 'bigquery_drop_select_permission', args: { source, table: shop('author'), role: 'plain' } });
  });

  it('in a permission: listable in computed_fields, no part of a filter', async () => {
    const r = await s.metadata({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'filtered', permission: { columns: ['name'], filter: { titles: { id: { _eq: 1 } } } } } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.internal[0].reason).toContain('computed field "titles" returns arbitrary column fields; it can not be part of a boolean expression');
    const withArgs = await s.metadata({ type: 'bigquery_create_select_permission', args: { source, table: shop('author'), role: 'filtered', permission: { columns: ['name'], filter: { stats: { title: { _eq: 'a' } } } } } });
    expect(withArgs.status, withArgs.text).toBe(400);
    expect(withArgs.body.internal[0].reason).toContain('Computed columns with input arguments can not be part of the where clause');
  });

  it('two of one name on two tables whose columns differ: the type is the first\'s, the other refused when selected', async () => {
    // Hasura names the type after the computed field alone (`titles__fields`).
    expect((await add('titles', { function: fn('article_stats'), argument_mapping: { a_id: 'author_id' } }, shop('article'))).status).toBe(200);
    const t = await s.gql('{ __type(name: "titles__fields") { fields { name } } }');
    const first = t.data.__type.fields.map((f: { name: string }) => f.name).join(',') === 'id,title' ? 'shop_author' : 'shop_article';
    const second = first === 'shop_author' ? 'shop_article' : 'shop_author';
    const selection = (root: string) => (root === 'shop_author' ? `{ ${root} { titles { title } } }` : `{ ${root} { titles(args: {min_rating: 1}) { title } } }`);
    stand.answer((sql) => sql.includes('`titles`'), jsonAnswer([{ titles: [] }]));
    expect(await s.gql(selection(first))).toEqual({ data: { [first]: [{ titles: [] }] } });
    const refused = await s.gql(selection(second));
    expect(refused.errors[0]).toMatchObject({
      message: `the computed field "titles" cannot be selected: its type "titles__fields" is another computed field's, whose columns differ`,
      extensions: { code: 'not-supported' },
    });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: shop('article'), name: 'titles' } });
  });

  it('a declared column without a name or a type is refused with Hasura\'s reasons (and one named __x)', async () => {
    const d = stand.catalog.shop!;
    const saved = stand.catalog;
    const routine = (name: string, printed: string) => [name, name, 'TABLE FUNCTION', printed, `CREATE TABLE FUNCTION shop.${name}(a_id INT64) RETURNS ${printed} AS (SELECT 1)`];
    stand.catalog = {
      ...saved,
      shop: {
        ...d,
        routines: { ...d.routines!, rows: [...d.routines!.rows, routine('no_name', 'TABLE<`` INT64>'), routine('no_type', 'TABLE<id INT64, title>'), routine('reserved', 'TABLE<__kind STRING>')] },
        parameters: { ...d.parameters!, rows: [...d.parameters!.rows, ['no_name', 1, 'a_id', 'INT64'], ['no_type', 1, 'a_id', 'INT64'], ['reserved', 1, 'a_id', 'INT64']] },
      },
    };
    try {
      await ok({ type: 'reload_metadata', args: {} });
      const reasonOf = async (name: string) => {
        const r = await add('x', { function: fn(name), argument_mapping: { a_id: 'id' } });
        expect(r.status, r.text).toBe(400);
        return r.body.internal[0].reason as string;
      };
      const cannot = 'Inconsistent object: in table "shop.author": in computed field "x": the computed field "x" cannot be added to table "shop.author" because ';
      expect(await reasonOf('no_name')).toBe(cannot + 'at least one field name is absent');
      expect(await reasonOf('no_type')).toBe(cannot + 'fieldName "title" has not type information');
      // A GraphQL name, but not one a field may have (Svc's reason; Hasura lets it by).
      expect(await reasonOf('reserved')).toBe(cannot + 'fieldName "__kind" begins with "__", which GraphQL reserves for introspection');
    } finally {
      stand.catalog = saved;
      await ok({ type: 'reload_metadata', args: {} });
    }
  });

  it('drops them; a permission that lists one depends on it (cascade drops it too)', async () => {
    const r = await s.metadata({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'titles' } });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ code: 'dependency-error', error: 'cannot drop due to the following dependent objects: permission shop.author.reader.select in source "bq"' });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'titles', cascade: true } });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: shop('author'), name: 'stats', cascade: true } });
    const author = (await exported()).tables.find((t: { table: { name: string } }) => t.table.name === 'author');
    expect(author.computed_fields).toBeUndefined();
    expect(author.select_permissions.map((p: { role: string }) => p.role)).toEqual(['user', 'guest', 'namer']);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });
});

describe('bigquery_run_sql', () => {
  it('answers rows with a header; a CREATE reloads the source so the new table can be tracked', async () => {
    stand.answer((sql) => sql === 'SELECT name FROM shop.author', { columns: ['name'], rows: [['ann'], ['bob']] });
    expect(await ok({ type: 'bigquery_run_sql', args: { source, sql: 'SELECT name FROM shop.author' } })).toEqual({ result_type: 'TuplesOk', result: [['name'], ['ann'], ['bob']] });
    stand.answer(
      (sql) => sql.startsWith('CREATE TABLE shop.tag'),
      () => {
        const d = stand.catalog.shop!;
        stand.catalog = {
          ...stand.catalog,
          shop: {
            ...d,
            tables: { ...d.tables, rows: [...d.tables.rows, ['tag', 'BASE TABLE']] },
            columns: { ...d.columns, rows: [...d.columns.rows, ['tag', 'label', 1, 'NO', 'STRING']] },
          },
        };
        return { columns: [], rows: [] };
      },
    );
    expect(await ok({ type: 'bigquery_run_sql', args: { source, sql: 'CREATE TABLE shop.tag (label STRING NOT NULL)' } })).toEqual({ result_type: 'CommandOk', result: null });
    await ok({ type: 'bigquery_track_table', args: { source, table: shop('tag') } });
    const err = await s.metadata({ type: 'bigquery_run_sql', args: { source, sql: 'SELEC 1' } });
    expect(err).toMatchObject({ status: 400, body: { code: 'unexpected', path: '$.args', internal: { reason: 'invalidQuery', statement: 'SELEC 1' } } });
    expect(await s.metadata({ type: 'bigquery_run_sql', args: { source: 'default', sql: 'SELECT 1' } })).toMatchObject({ status: 400, body: { code: 'not-exists', error: 'source with name "default" does not exist' } });
  });

  it('drops the source', async () => {
    await ok({ type: 'bigquery_drop_source', args: { name: source } });
    expect(await exported()).toBeUndefined();
  });
});

describe("the real client (@google-cloud/bigquery) with a key Google does not know", () => {
  it('fails the introspection with an error (no hang), which the build reports as an inconsistent source', async () => {
    const conn = bigqueryKind().connect('real', { service_account: KEY, project_id: 'svc-test', datasets: ['shop'] }, {});
    const t = Date.now();
    // Offline: the token endpoint's name does not resolve; online: Google refuses the key.
    await expect(conn.introspect()).rejects.toThrow(/oauth2\.googleapis\.com|invalid_grant|account/i);
    expect(Date.now() - t).toBeLessThan(20_000);
    await conn.close();
  });
});
