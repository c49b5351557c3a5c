/**
 * Golden tests of tracked functions as root fields (Note [Tracked functions as root fields] in
 * contributor.ts): `<fn>(args, where, order_by, limit, offset, distinct_on)`, `<fn>_aggregate`,
 * VOLATILE ones under the mutation root, the session argument, and function permissions (given,
 * or inferred from the table's select permission).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table article (id serial primary key, title text not null, author_id int not null, hidden text);
insert into article (title, author_id, hidden) values ('Article 1', 1, 'h1'), ('Article 2', 1, 'h2'), ('Other 3', 2, 'h3');
create function search_articles(search text) returns setof article as $$
  select * from article where title ilike ('%' || search || '%')
$$ language sql stable;
create function all_articles() returns setof article as $$ select * from article $$ language sql stable;
create function articles_from(min_id int default 0, max_id int default 1000) returns setof article as $$
  select * from article where id >= min_id and id <= max_id
$$ language sql stable;
create function my_articles(hasura_session json) returns setof article as $$
  select * from article where author_id = (hasura_session ->> 'x-svc-user-id')::int
$$ language sql stable;
create function add_article(title text, author_id int) returns setof article as $$
  insert into article (title, author_id) values (title, author_id) returning *
$$ language sql volatile;
create function first_article() returns article as $$ select * from article order by id limit 1 $$ language sql stable;
create function articles_after(a article) returns setof article as $$ select * from article where id > a.id $$ language sql stable;
`;

const PERMS = [
  { type: 'pg_track_table', args: { table: 'article' } },
  { type: 'pg_track_function', args: { function: 'search_articles' } },
  { type: 'pg_track_function', args: { function: 'all_articles', configuration: { custom_root_fields: { function: 'everything', function_aggregate: 'everything_agg' } } } },
  { type: 'pg_track_function', args: { function: 'articles_from' } },
  { type: 'pg_track_function', args: { function: 'my_articles', configuration: { session_argument: 'hasura_session' } } },
  { type: 'pg_track_function', args: { function: 'add_article' } },
  { type: 'pg_track_function', args: { function: 'first_article' } },
  { type: 'pg_track_function', args: { function: 'articles_after' } },
  {
    type: 'pg_create_select_permission',
    args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, allow_aggregations: true } },
  },
];

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });

beforeAll(async () => {
  const r = await server.metadata({ type: 'bulk', args: PERMS });
  expect(r.status, r.text).toBe(200);
});

describe('admin', () => {
  it('a function with args, where, order_by, limit, offset and distinct_on', async () => {
    expect(await q('{ search_articles(args: {search: "article"}, order_by: {id: desc}) { id title } }')).toEqual({
      data: { search_articles: [{ id: 2, title: 'Article 2' }, { id: 1, title: 'Article 1' }] },
    });
    expect(await q('{ search_articles(args: {search: "%"}, where: {author_id: {_eq: 1}}, order_by: {id: asc}, limit: 1, offset: 1) { id } }')).toEqual({ data: { search_articles: [{ id: 2 }] } });
    expect(await q('{ search_articles(args: {search: ""}, distinct_on: author_id, order_by: [{author_id: asc}, {id: desc}]) { id } }')).toEqual({ data: { search_articles: [{ id: 2 }, { id: 3 }] } });
    expect(await q('query ($s: String) { search_articles(args: {search: $s}) { id } }', { s: 'other' })).toEqual({ data: { search_articles: [{ id: 3 }] } });
  });

  it('aggregates, custom root field names, functions without args, defaults, a single-row function', async () => {
    expect(await q('{ search_articles_aggregate(args: {search: "article"}) { aggregate { count max { id } } nodes { id } } }')).toEqual({
      data: { search_articles_aggregate: { aggregate: { count: 2, max: { id: 2 } }, nodes: [{ id: 1 }, { id: 2 }] } },
    });
    expect(await q('{ everything(order_by: {id: asc}) { id } everything_agg { aggregate { count } } }')).toEqual({
      data: { everything: [{ id: 1 }, { id: 2 }, { id: 3 }], everything_agg: { aggregate: { count: 3 } } },
    });
    expect(await q('{ articles_from(args: {max_id: 1}) { id } b: articles_from(args: {min_id: 3}) { id } c: articles_from(args: {}, order_by: {id: asc}) { id } }')).toEqual({
      data: { articles_from: [{ id: 1 }], b: [{ id: 3 }], c: [{ id: 1 }, { id: 2 }, { id: 3 }] },
    });
    // One row, not a list (Hasura's issue 6631); its aggregate still there.
    expect(await q('{ first_article { id title } first_article_aggregate { aggregate { count } } }')).toEqual({ data: { first_article: { id: 1, title: expect.any(String) }, first_article_aggregate: { aggregate: { count: 1 } } } });
    const t = await q('{ __type(name: "query_root") { fields { name type { kind name } } } }');
    expect(t.data.__type.fields.find((f: any) => f.name === 'first_article').type).toEqual({ kind: 'OBJECT', name: 'article' });
    expect(t.data.__type.fields.find((f: any) => f.name === 'everything').type).toEqual({ kind: 'NON_NULL', name: null });
    // `args` itself is required (Hasura: a non-null input object), even when every argument has a default.
    expect((await q('{ articles_from { id } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
    const r = await q('{ search_articles(args: {}) { id } }');
    expect(r.errors?.[0]).toMatchObject({ message: 'Non default arguments cannot be omitted', extensions: { code: 'not-supported' } });
  });

  it('the session argument is filled from the session, never from the request', async () => {
    expect(await q('{ my_articles(order_by: {id: asc}) { id } }', undefined, { 'x-svc-user-id': '1' })).toEqual({ data: { my_articles: [{ id: 1 }, { id: 2 }] } });
    const r = await q('{ __type(name: "query_root") { fields { name args { name } } } }');
    const my = r.data.__type.fields.find((f: any) => f.name === 'my_articles');
    expect(my.args.map((a: any) => a.name)).toEqual(['distinct_on', 'limit', 'offset', 'order_by', 'where']);
    expect((await q('{ my_articles { id } }', undefined, { 'x-svc-user-id': '1 or 1=1' })).errors?.[0]?.extensions?.code).toBe('data-exception');
  });

  it('injection through function arguments is a value', async () => {
    expect(await q(`{ search_articles(args: {search: "') or true; drop table article; --"}) { id } }`)).toEqual({ data: { search_articles: [] } });
    expect(await q('query ($s: String) { search_articles(args: {search: $s}) { id } }', { s: "x'); delete from article; --" })).toEqual({ data: { search_articles: [] } });
    expect((await q('{ everything { id } }')).data.everything).toHaveLength(3);
  });

  it('a VOLATILE function is a mutation; mutation fields run in document order', async () => {
    const r = await q('{ __schema { queryType { fields { name } } mutationType { name fields { name description } } } }');
    expect(r.data.__schema.queryType.fields.map((f: any) => f.name)).not.toContain('add_article');
    expect(r.data.__schema.mutationType.name).toBe('mutation_root');
    expect(r.data.__schema.mutationType.fields.find((f: any) => f.name === 'add_article')).toEqual({ name: 'add_article', description: 'execute VOLATILE function "add_article" which returns "article"' });
    expect(await q('mutation { a: add_article(args: {title: "New 4", author_id: 2}) { id title } b: add_article(args: {title: "New 5", author_id: 2}) { id } }')).toEqual({
      data: { a: [{ id: 4, title: 'New 4' }], b: [{ id: 5 }] },
    });
    expect((await q('{ add_article(args: {title: "x", author_id: 1}) { id } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
    expect((await q('{ search_articles(args: {search: "New"}) { id } }')).data.search_articles).toEqual([{ id: 4 }, { id: 5 }]);
    // One transaction per mutation request: a later field's failure takes the function's insert back.
    const failed = await q('mutation { a: add_article(args: {title: "Gone", author_id: 1}) { id } b: insert_article_one(object: {id: 1, title: "dup", author_id: 1}) { id } }');
    expect(failed.data).toBeUndefined();
    expect(failed.errors[0].extensions.code).toBe('constraint-violation');
    expect((await q('{ search_articles(args: {search: "Gone"}) { id } }')).data.search_articles).toEqual([]);
  });

  it('names and descriptions as Hasura generates them', async () => {
    const r = await q('{ __type(name: "query_root") { fields { name description args { name type { kind ofType { name } } } } } a: __type(name: "search_articles_args") { inputFields { name type { name } } } }');
    const f = Object.fromEntries(r.data.__type.fields.map((x: any) => [x.name, x]));
    expect(f.search_articles.description).toBe('execute function "search_articles" which returns "article"');
    expect(f.search_articles_aggregate.description).toBe('execute function "search_articles" and query aggregates on result of table type "article"');
    expect(f.search_articles.args.map((a: any) => a.name)).toEqual(['args', 'distinct_on', 'limit', 'offset', 'order_by', 'where']);
    expect(f.search_articles.args[0].type).toEqual({ kind: 'NON_NULL', ofType: { name: 'search_articles_args' } });
    expect(r.data.a.inputFields).toEqual([{ name: 'search', type: { name: 'String' } }]);
  });

  it("takes a row-typed argument as PostgreSQL's record text, a String (Dialect.argumentScalar)", async () => {
    const r = await q('{ __type(name: "articles_after_args") { inputFields { name type { name } } } }');
    expect(r.data.__type.inputFields).toEqual([{ name: 'a', type: { name: 'String' } }]);
    expect(await q('query ($a: String) { articles_after(args: {a: $a}, where: {id: {_lte: 3}}, order_by: {id: asc}) { id } }', { a: '(1,x,1,h)' })).toEqual({ data: { articles_after: [{ id: 2 }, { id: 3 }] } });
    const bad = await q('{ articles_after(args: {a: "not a row"}) { id } }');
    expect(bad.errors[0].extensions.code).toBe('data-exception');
  });
});

describe('role user (inferred function permissions)', () => {
  it('a function returning rows outside the filter gives only the role\'s rows and columns', async () => {
    expect(await q('{ everything(order_by: {id: asc}) { id title } }', undefined, user('2'))).toEqual({ data: { everything: [{ id: 3, title: 'Other 3' }, { id: 4, title: 'New 4' }, { id: 5, title: 'New 5' }] } });
    expect(await q('{ search_articles(args: {search: "Article"}) { id } }', undefined, user('2'))).toEqual({ data: { search_articles: [] } });
    expect(await q('{ search_articles_aggregate(args: {search: "Article"}) { aggregate { count } } }', undefined, user('2'))).toEqual({ data: { search_articles_aggregate: { aggregate: { count: 0 } } } });
    expect((await q('{ everything { hidden } }', undefined, user('2'))).errors?.[0]?.extensions?.code).toBe('validation-failed');
    expect((await q('{ everything(where: {hidden: {_eq: "h1"}}) { id } }', undefined, user('2'))).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('the session argument is the role\'s session: another user id cannot be passed', async () => {
    expect(await q('{ my_articles { id } }', undefined, user('1'))).toEqual({ data: { my_articles: [{ id: 1 }, { id: 2 }] } });
    expect((await q('{ my_articles(args: {hasura_session: "{\\"x-svc-user-id\\": \\"2\\"}"}) { id } }', undefined, user('1'))).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('a role without a select permission on the table has no function fields', async () => {
    const r = await q('{ everything { id } }', undefined, { 'x-svc-role': 'nobody' });
    expect(r.errors?.[0]?.extensions?.code).toBe('validation-failed');
  });
});

describe('without inferred function permissions', () => {
  const strict = useServer(SEED, { config: { inferFunctionPermissions: false } });
  const sq = async (query: string, headers?: Record<string, string>) => (await strict.request('POST', '/v1/graphql', { query }, headers)).body;

  beforeAll(async () => {
    const r = await strict.metadata({ type: 'bulk', args: [...PERMS, { type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } }] });
    expect(r.status, r.text).toBe(200);
  });

  it('a role sees only the functions it has a permission for', async () => {
    expect(await sq('{ search_articles(args: {search: "article"}, order_by: {id: asc}) { id } }', user('1'))).toEqual({ data: { search_articles: [{ id: 1 }, { id: 2 }] } });
    expect(await sq('{ everything { id } }', user('1'))).toEqual({
      errors: [{ extensions: { path: '$.selectionSet.everything', code: 'validation-failed' }, message: "field 'everything' not found in type: 'query_root'" }],
    });
    expect((await sq('{ everything { id } }')).data.everything).toHaveLength(3);
  });
});
