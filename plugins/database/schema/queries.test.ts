/**
 * Golden tests of GraphQL queries over tables (issue 6): request -> response against real
 * PostgreSQL through POST /v1/graphql, for admin and for a role with a row filter on a session
 * variable and column lists.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { getIntrospectionQuery } from 'graphql';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null, email text, born date);
comment on column author.name is 'the name';
create table article (id serial primary key, title text not null, body text, author_id int references author(id), rating numeric, published boolean not null default false);
insert into author (name, email, born) values ('Alice', 'alice@x', '1970-01-01'), ('Bob', 'bob@x', null), ('Carol', null, '1990-05-05');
insert into article (title, body, author_id, rating, published) values
  ('A1', 'a1 body', 1, 5, true), ('A2', 'a2 body', 1, null, false), ('B1', 'b1 body', 2, 3, true), ('B2', 'b2 body', 2, 4, false), ('A3', 'a3 body', 1, 1, true);
`;

const server = useServer(SEED);
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);

beforeAll(async () => {
  const ops = [
    { type: 'pg_track_table', args: { table: 'author' } },
    { type: 'pg_track_table', args: { table: 'article' } },
    { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
    { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
    { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
    // A role that sees only the authors whose name starts with its session's letter.
    { type: 'pg_create_select_permission', args: { table: 'author', role: 'fan', permission: { columns: ['id', 'name'], filter: { name: { _like: 'X-Svc-Letter' } } } } },
    { type: 'pg_create_select_permission', args: { table: 'article', role: 'fan', permission: { columns: ['id', 'title'], filter: {} } } },
    {
      type: 'pg_create_select_permission',
      args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'author_id', 'rating'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 2, allow_aggregations: true } },
    },
  ];
  const r = await server.metadata({ type: 'bulk', args: ops });
  expect(r.status, r.text).toBe(200);
});

describe('admin', () => {
  it('lists with where, order_by and limit', async () => {
    expect(await q('{ article(where: {rating: {_gt: 2}}, order_by: {rating: desc}, limit: 2) { id title rating } }')).toEqual({
      data: { article: [{ id: 1, title: 'A1', rating: 5 }, { id: 4, title: 'B2', rating: 4 }] },
    });
  });

  it('where operators: _eq _neq _in _is_null _like _and _or _not', async () => {
    const ids = async (where: string) => (await q(`{ article(where: ${where}, order_by: {id: asc}) { id } }`)).data.article.map((a: { id: number }) => a.id);
    expect(await ids('{id: {_eq: 3}}')).toEqual([3]);
    expect(await ids('{id: {_neq: 3}}')).toEqual([1, 2, 4, 5]);
    expect(await ids('{id: {_in: [2, 4, 9]}}')).toEqual([2, 4]);
    expect(await ids('{id: {_nin: [2, 4]}}')).toEqual([1, 3, 5]);
    expect(await ids('{rating: {_is_null: true}}')).toEqual([2]);
    expect(await ids('{rating: {_is_null: false}}')).toEqual([1, 3, 4, 5]);
    expect(await ids('{title: {_like: "A%"}}')).toEqual([1, 2, 5]);
    expect(await ids('{title: {_ilike: "b%"}}')).toEqual([3, 4]);
    expect(await ids('{_and: [{title: {_like: "A%"}}, {published: {_eq: true}}]}')).toEqual([1, 5]);
    expect(await ids('{_or: [{id: {_eq: 1}}, {id: {_eq: 4}}]}')).toEqual([1, 4]);
    expect(await ids('{_not: {title: {_like: "A%"}}}')).toEqual([3, 4]);
    expect(await ids('{author: {name: {_eq: "Bob"}}}')).toEqual([3, 4]);
    expect(await ids('{id: {_eq: null}}')).toEqual([1, 2, 3, 4, 5]);
  });

  it('relationship paths in where (array relationship)', async () => {
    expect(await q('{ author(where: {articles: {rating: {_gte: 4}}}, order_by: {id: asc}) { name } }')).toEqual({ data: { author: [{ name: 'Alice' }, { name: 'Bob' }] } });
  });

  it('order_by nulls first/last and through an object relationship', async () => {
    const ids = async (ob: string) => (await q(`{ article(order_by: ${ob}) { id } }`)).data.article.map((a: { id: number }) => a.id);
    expect(await ids('{rating: asc}')).toEqual([5, 3, 4, 1, 2]);
    expect(await ids('{rating: asc_nulls_first}')).toEqual([2, 5, 3, 4, 1]);
    expect(await ids('{rating: desc}')).toEqual([2, 1, 4, 3, 5]);
    expect(await ids('{rating: desc_nulls_last}')).toEqual([1, 4, 3, 5, 2]);
    expect(await ids('[{author: {name: desc}}, {id: asc}]')).toEqual([3, 4, 1, 2, 5]);
  });

  it('order_by an array relationship\'s aggregate (<rel>_aggregate: {count, max: {col}})', async () => {
    const ids = async (ob: string) => (await q(`{ author(order_by: ${ob}) { id } }`)).data.author.map((a: { id: number }) => a.id);
    expect(await ids('[{articles_aggregate: {count: desc}}, {id: asc}]')).toEqual([1, 2, 3]);
    expect(await ids('{articles_aggregate: {count: asc}}')).toEqual([3, 2, 1]);
    expect(await ids('{articles_aggregate: {max: {rating: desc_nulls_last}}}')).toEqual([1, 2, 3]);
    expect(await ids('{articles_aggregate: {sum: {rating: asc}}}')).toEqual([1, 2, 3]);
  });

  it('an aggregate ordered by and selected: the order key\'s values, and computed where they differ (Note [Aggregates answered by order keys])', async () => {
    const doc = (sel: string) => `{ author(order_by: [{articles_aggregate: {count: desc}}, {articles_aggregate: {sum: {rating: asc}}}, {id: asc}], limit: 3) { id articles_aggregate${sel} } }`;
    const rows = async (sel: string) => (await q(doc(sel))).data.author;
    // Both values are order keys: read from the keys.
    expect(await rows('{ aggregate { count sum { rating } } }')).toEqual([
      { id: 1, articles_aggregate: { aggregate: { count: 3, sum: { rating: 6 } } } },
      { id: 2, articles_aggregate: { aggregate: { count: 2, sum: { rating: 7 } } } },
      { id: 3, articles_aggregate: { aggregate: { count: 0, sum: { rating: null } } } },
    ]);
    // max is not a key: all computed; a where of its own: other rows; nodes beside.
    expect(await rows('{ aggregate { count max { rating } } }')).toEqual([
      { id: 1, articles_aggregate: { aggregate: { count: 3, max: { rating: 5 } } } },
      { id: 2, articles_aggregate: { aggregate: { count: 2, max: { rating: 4 } } } },
      { id: 3, articles_aggregate: { aggregate: { count: 0, max: { rating: null } } } },
    ]);
    expect(await rows('(where: {published: {_eq: true}}) { aggregate { count } }')).toEqual([
      { id: 1, articles_aggregate: { aggregate: { count: 2 } } },
      { id: 2, articles_aggregate: { aggregate: { count: 1 } } },
      { id: 3, articles_aggregate: { aggregate: { count: 0 } } },
    ]);
    expect(await rows('{ aggregate { count } nodes { id } }')).toEqual([
      { id: 1, articles_aggregate: { aggregate: { count: 3 }, nodes: [{ id: 1 }, { id: 2 }, { id: 5 }] } },
      { id: 2, articles_aggregate: { aggregate: { count: 2 }, nodes: [{ id: 3 }, { id: 4 }] } },
      { id: 3, articles_aggregate: { aggregate: { count: 0 }, nodes: [] } },
    ]);
    // The nodes of a root aggregate read their rows' keys too.
    expect(await q('{ author_aggregate(order_by: [{articles_aggregate: {count: asc}}, {id: asc}]) { nodes { id articles_aggregate { aggregate { count } } } } }')).toEqual({
      data: { author_aggregate: { nodes: [3, 2, 1].map((id) => ({ id, articles_aggregate: { aggregate: { count: id === 1 ? 3 : id === 2 ? 2 : 0 } } })) } },
    });
    // The statement reads the keys: no aggregate subquery beside them.
    const r = await server.request('POST', '/v1/graphql/explain', { query: { query: doc('{ aggregate { count sum { rating } } }') } });
    expect(r.status, r.text).toBe(200);
    const sql: string = JSON.parse(r.text)[0].sql;
    expect(sql).toContain(`'count', _t0."__svc_o0"`);
    expect(sql).not.toContain(`(select json_build_object('aggregate'`);
  });

  it('ordered by an aggregate and no limit: each row\'s key computed once, for the order and the answer (Note [Computed keys kept in their subquery])', async () => {
    const query = '{ author(order_by: [{articles_aggregate: {count: desc}}, {id: asc}]) { id articles_aggregate { aggregate { count } } } }';
    expect((await q(query)).data.author).toEqual([
      { id: 1, articles_aggregate: { aggregate: { count: 3 } } },
      { id: 2, articles_aggregate: { aggregate: { count: 2 } } },
      { id: 3, articles_aggregate: { aggregate: { count: 0 } } },
    ]);
    const r = await server.request('POST', '/v1/graphql/explain', { query: { query } });
    expect(r.status, r.text).toBe(200);
    // Pulled up into the aggregate, the key's subquery would be a sub-plan for the order and
    // another for the answer, each run for every row.
    const subPlans = new Set(((r.body[0].plan as string[]).join('\n').match(/SubPlan \d+/g) ?? []));
    expect([...subPlans]).toEqual(['SubPlan 1']);
    // A list ordered by its columns alone is still pulled up.
    const plain = await server.request('POST', '/v1/graphql/explain', { query: { query: '{ author(order_by: {name: asc}) { id } }' } });
    expect(plain.body[0].sql).not.toContain('offset 0');
  });

  it('an object ordered through and selected: read through the order key\'s join (Note [Objects read through the order keys\' joins])', async () => {
    const doc = (args: string, sel: string) => `{ article(order_by: [{author: {name: desc}}, {id: asc}]${args}) { id author ${sel} } }`;
    const answer = (ids: number[]) => ids.map((id) => ({ id, author: id === 3 || id === 4 ? { name: 'Bob', born: null, __typename: 'author' } : { name: 'Alice', born: '1970-01-01', __typename: 'author' } }));
    expect((await q(doc('', '{ name born __typename }'))).data.article).toEqual(answer([3, 4, 1, 2, 5]));
    expect((await q(doc(', limit: 2, offset: 1', '{ name born __typename }'))).data.article).toEqual(answer([4, 1]));
    // An array relationship in the object: joined again, the same answer.
    expect((await q(doc(', limit: 2', '{ name articles_aggregate { aggregate { count } } }'))).data.article).toEqual([
      { id: 3, author: { name: 'Bob', articles_aggregate: { aggregate: { count: 2 } } } },
      { id: 4, author: { name: 'Bob', articles_aggregate: { aggregate: { count: 2 } } } },
    ]);
    // Nested: article -> author through the key, the author's name twice under aliases.
    expect((await q('{ article(order_by: {author: {name: asc}}, where: {id: {_in: [3, 1]}}) { author { a: name b: name } } }')).data.article).toEqual([
      { author: { a: 'Alice', b: 'Alice' } },
      { author: { a: 'Bob', b: 'Bob' } },
    ]);
    // In a nested list, through that list's own keys.
    expect((await q('{ author(where: {id: {_eq: 2}}) { articles(order_by: [{author: {name: asc}}, {id: desc}], limit: 1) { id author { name } } } }')).data.author).toEqual([
      { articles: [{ id: 4, author: { name: 'Bob' } }] },
    ]);
    for (const query of [doc(', limit: 2', '{ name born }'), '{ author { articles(order_by: {author: {name: asc}}) { author { name } } } }']) {
      const r = await server.request('POST', '/v1/graphql/explain', { query: { query } });
      expect(r.status, r.text).toBe(200);
      const sql: string = JSON.parse(r.text)[0].sql;
      expect(sql.match(/join "public"."author"/g), sql).toHaveLength(1);
    }
  });

  it('limit and offset', async () => {
    expect(await q('{ article(order_by: {id: asc}, limit: 2, offset: 1) { id } }')).toEqual({ data: { article: [{ id: 2 }, { id: 3 }] } });
  });

  it('distinct_on', async () => {
    expect(await q('{ article(distinct_on: author_id, order_by: [{author_id: asc}, {id: desc}]) { id author_id } }')).toEqual({
      data: { article: [{ id: 5, author_id: 1 }, { id: 4, author_id: 2 }] },
    });
  });

  it('by_pk', async () => {
    expect(await q('{ author_by_pk(id: 2) { id name born } }')).toEqual({ data: { author_by_pk: { id: 2, name: 'Bob', born: null } } });
    expect(await q('{ author_by_pk(id: 99) { id } }')).toEqual({ data: { author_by_pk: null } });
  });

  it('nested object and array relationships with their own arguments', async () => {
    expect(
      await q('{ author(where: {id: {_lte: 2}}, order_by: {id: asc}) { name articles(where: {published: {_eq: true}}, order_by: {id: desc}, limit: 1) { title author { name } } } }'),
    ).toEqual({
      data: { author: [{ name: 'Alice', articles: [{ title: 'A3', author: { name: 'Alice' } }] }, { name: 'Bob', articles: [{ title: 'B1', author: { name: 'Bob' } }] }] },
    });
  });

  it('aggregates with nodes, and nested aggregates', async () => {
    expect(
      await q('{ article_aggregate(where: {author_id: {_eq: 1}}, order_by: {id: asc}) { aggregate { count sum { rating } avg { id } max { rating title } c: count(columns: rating, distinct: true) } nodes { id } } }'),
    ).toEqual({ data: { article_aggregate: { aggregate: { count: 3, sum: { rating: 6 }, avg: { id: 8 / 3 }, max: { rating: 5, title: 'A3' }, c: 2 }, nodes: [{ id: 1 }, { id: 2 }, { id: 5 }] } } });
    expect(await q('{ author(order_by: {id: asc}) { name articles_aggregate { aggregate { count } } } }')).toEqual({
      data: { author: [{ name: 'Alice', articles_aggregate: { aggregate: { count: 3 } } }, { name: 'Bob', articles_aggregate: { aggregate: { count: 2 } } }, { name: 'Carol', articles_aggregate: { aggregate: { count: 0 } } }] },
    });
  });

  it('aliases, fragments, inline fragments, __typename, several root fields', async () => {
    expect(
      await q(`query { a: author_by_pk(id: 1) { ...F  n: name } b: article(where: {id: {_eq: 3}}) { __typename ... on article { t: title } } }
        fragment F on author { __typename id }`),
    ).toEqual({ data: { a: { __typename: 'author', id: 1, n: 'Alice' }, b: [{ __typename: 'article', t: 'B1' }] } });
  });

  it('objects from rows (Note [Objects from rows]): keys in selection order, case and keywords kept, nulls and empty lists', async () => {
    const r = await server.request('POST', '/v1/graphql', {
      query: `{ author(order_by: {id: asc}, limit: 2) { Z: id select: name __typename none: articles(where: {id: {_eq: 99}}) { id }
        first: articles(order_by: {id: asc}, limit: 1) { t: title author { from: name } } agg: articles_aggregate { aggregate { count } } email }
        missing: author_by_pk(id: 99) { id } }`,
    });
    expect(r.status, r.text).toBe(200);
    const data = JSON.parse(r.text).data;
    expect(Object.keys(data.author[0])).toEqual(['Z', 'select', '__typename', 'none', 'first', 'agg', 'email']);
    expect(data).toEqual({
      author: [
        { Z: 1, select: 'Alice', __typename: 'author', none: [], first: [{ t: 'A1', author: { from: 'Alice' } }], agg: { aggregate: { count: 3 } }, email: 'alice@x' },
        { Z: 2, select: 'Bob', __typename: 'author', none: [], first: [{ t: 'B1', author: { from: 'Bob' } }], agg: { aggregate: { count: 2 } }, email: 'bob@x' },
      ],
      missing: null,
    });
  });

  it('response keys over 63 bytes (NAMEDATALEN) are kept whole, also where they share their first 63', async () => {
    const k63 = 'k'.repeat(63);
    const [k64a, k64b] = [`${k63}a`, `${k63}b`];
    const doc = `{ author_by_pk(id: 1) { ${k64a}: id ${k64b}: name ${k63}: email articles(order_by: {id: asc}, limit: 1) { ${k63}: title ${k64a}: id } } }`;
    const r = await server.request('POST', '/v1/graphql', { query: doc });
    expect(r.status, r.text).toBe(200);
    const row = JSON.parse(r.text).data.author_by_pk;
    expect(Object.keys(row)).toEqual([k64a, k64b, k63, 'articles']);
    expect(row).toEqual({ [k64a]: 1, [k64b]: 'Alice', [k63]: 'alice@x', articles: [{ [k63]: 'A1', [k64a]: 1 }] });
  });

  it('variables: leaf values, whole where and order_by objects, defaults, null', async () => {
    const doc = 'query ($id: Int!, $lim: Int = 1) { article(where: {author_id: {_eq: $id}}, order_by: {id: asc}, limit: $lim) { id } }';
    expect(await q(doc, { id: 2 })).toEqual({ data: { article: [{ id: 3 }] } });
    expect(await q(doc, { id: 1, lim: 5 })).toEqual({ data: { article: [{ id: 1 }, { id: 2 }, { id: 5 }] } });
    const whole = 'query ($w: article_bool_exp, $o: [article_order_by!]) { article(where: $w, order_by: $o) { id } }';
    expect(await q(whole, { w: { title: { _like: 'B%' } }, o: [{ id: 'desc' }] })).toEqual({ data: { article: [{ id: 4 }, { id: 3 }] } });
    expect(await q(whole, { w: { id: { _in: [1, 2] } }, o: { id: 'asc' } })).toEqual({ data: { article: [{ id: 1 }, { id: 2 }] } });
    const nullable = 'query ($t: String) { article(where: {title: {_eq: $t}}, order_by: {id: asc}) { id } }';
    expect((await q(nullable, { t: 'A2' })).data.article).toEqual([{ id: 2 }]);
    expect((await q(nullable, { t: null })).data.article).toHaveLength(5);
    expect(await q('query ($ids: [Int!]) { article(where: {id: {_in: $ids}}, order_by: {id: asc}) { id } }', { ids: [5, 3] })).toEqual({ data: { article: [{ id: 3 }, { id: 5 }] } });
    expect(await q('query ($x: Boolean!) { author_by_pk(id: 1) { name email @include(if: $x) } }', { x: false })).toEqual({ data: { author_by_pk: { name: 'Alice' } } });
    expect(await q('query ($x: Boolean!) { author_by_pk(id: 1) { name email @include(if: $x) } }', { x: true })).toEqual({ data: { author_by_pk: { name: 'Alice', email: 'alice@x' } } });
  });

  it('injection attempts through values and variables are plain values', async () => {
    expect(await q(`{ author(where: {name: {_eq: "x' or '1'='1"}}) { id } }`)).toEqual({ data: { author: [] } });
    expect(await q('query ($n: String) { author(where: {name: {_eq: $n}}) { id } }', { n: "'; drop table author; --" })).toEqual({ data: { author: [] } });
    expect(await q('query ($w: author_bool_exp) { author(where: $w) { id } }', { w: { name: { _like: "%') or true --" } } })).toEqual({ data: { author: [] } });
    expect((await q('{ author { id } }')).data.author).toHaveLength(3);
  });
});

describe('role user (row filter on a session variable, column lists)', () => {
  it('sees only its rows and its columns, capped by the permission limit', async () => {
    expect(await q('{ article(order_by: {id: asc}) { id title } }', undefined, user('1'))).toEqual({ data: { article: [{ id: 1, title: 'A1' }, { id: 2, title: 'A2' }] } });
    expect(await q('{ article(order_by: {id: asc}, limit: 1) { id } }', undefined, user('2'))).toEqual({ data: { article: [{ id: 3 }] } });
  });

  it('hidden columns are not in its schema: select, where, order_by, distinct_on, aggregates', async () => {
    for (const doc of [
      '{ article { body } }',
      '{ author { email } }',
      '{ article(where: {body: {_eq: "a1 body"}}) { id } }',
      '{ article(order_by: {published: asc}) { id } }',
      '{ article(distinct_on: body) { id } }',
      '{ article_aggregate { aggregate { max { body } } } }',
      '{ author { articles(where: {body: {_like: "%"}}) { id } } }',
      '{ article { author { email } } }',
      '{ author_aggregate { aggregate { count } } }',
    ]) {
      const r = await q(doc, undefined, user('1'));
      expect(r.errors?.[0]?.extensions?.code, doc).toBe('validation-failed');
    }
    expect((await q('query ($w: article_bool_exp) { article(where: $w) { id } }', { w: { body: { _eq: 'x' } } }, user('1'))).errors).toBeDefined();
  });

  it('relationships and aggregates only reach rows of the filter', async () => {
    expect(await q('{ author(order_by: {id: asc}) { name articles(order_by: {id: asc}) { id } } }', undefined, user('2'))).toEqual({
      data: { author: [{ name: 'Alice', articles: [] }, { name: 'Bob', articles: [{ id: 3 }, { id: 4 }] }, { name: 'Carol', articles: [] }] },
    });
    expect(await q('{ article_aggregate { aggregate { count } nodes { id } } }', undefined, user('2'))).toEqual({ data: { article_aggregate: { aggregate: { count: 2 }, nodes: [{ id: 3 }, { id: 4 }] } } });
    expect(await q('{ author(where: {articles: {title: {_eq: "A1"}}}) { id } }', undefined, user('2'))).toEqual({ data: { author: [] } });
    expect(await q('{ article_by_pk(id: 1) { id } }', undefined, user('2'))).toEqual({ data: { article_by_pk: null } });
    expect(await q('{ article(where: {_not: {author_id: {_eq: 2}}}) { id } }', undefined, user('2'))).toEqual({ data: { article: [] } });
  });

  it('order_by an array relationship\'s aggregate counts only the role\'s rows', async () => {
    // user 2 sees B1 and B2 only: Alice's three articles count as none.
    expect(await q('{ author(order_by: [{articles_aggregate: {count: desc}}, {id: desc}]) { id } }', undefined, user('2'))).toEqual({ data: { author: [{ id: 2 }, { id: 3 }, { id: 1 }] } });
    // Selected too, it is the same count (the permission's limit of 2 caps nodes, not the count).
    const doc = '{ author(order_by: [{articles_aggregate: {count: desc}}, {id: desc}]) { id articles_aggregate { aggregate { count } } } }';
    const counts = (n: [number, number][]) => ({ data: { author: n.map(([id, count]) => ({ id, articles_aggregate: { aggregate: { count } } })) } });
    expect(await q(doc, undefined, user('2'))).toEqual(counts([[2, 2], [3, 0], [1, 0]]));
    expect(await q(doc, undefined, user('1'))).toEqual(counts([[1, 3], [3, 0], [2, 0]]));
    // An object ordered through and selected under the role: the rows it may see (user 2 sees
    // only B1 and B2, and every author).
    expect(await q('{ article(order_by: [{author: {name: asc}}, {id: desc}]) { id author { name } } }', undefined, user('2'))).toEqual({
      data: { article: [{ id: 4, author: { name: 'Bob' } }, { id: 3, author: { name: 'Bob' } }] },
    });
    // The role's filter on the author, with a session variable, in the join the key and the
    // object share: Bob's articles have no author the role may see (null, ordered last).
    expect(await q('{ article(order_by: [{author: {name: asc}}, {id: asc}]) { id author { name } } }', undefined, { 'x-svc-role': 'fan', 'x-svc-letter': 'A%' })).toEqual({
      data: { article: [1, 2, 5].map((id) => ({ id, author: { name: 'Alice' } })).concat([3, 4].map((id) => ({ id, author: null as never }))) },
    });
    const r = await server.request('POST', '/v1/graphql/explain', {
      query: { query: '{ article(order_by: [{author: {name: asc}}, {id: asc}]) { id author { name } } }' },
      user: { 'x-svc-role': 'fan', 'x-svc-letter': 'A%' },
    });
    expect(r.status, r.text).toBe(200);
    expect(JSON.parse(r.text)[0].sql.match(/join "public"."author"/g)).toHaveLength(1);
    // Not over a column the role may not select.
    expect((await q('{ author(order_by: {articles_aggregate: {max: {body: asc}}}) { id } }', undefined, user('2'))).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('a missing session variable is an error, never a wider filter', async () => {
    expect(await q('{ article { id } }', undefined, { 'x-svc-role': 'user' })).toEqual({
      errors: [{ extensions: { path: '$', code: 'not-found' }, message: 'missing session variable: "x-svc-user-id"' }],
    });
  });

  it('injection through a session variable is a value (and a bad one a data error)', async () => {
    const r = await q('{ article { id } }', undefined, user("1 or 1=1"));
    expect(r.errors?.[0]?.extensions?.code).toBe('data-exception');
  });

  it('a role without permissions has no table fields', async () => {
    const r = await q('{ author { id } }', undefined, { 'x-svc-role': 'nobody' });
    expect(r.errors?.[0]?.extensions?.code).toBe('validation-failed');
    // Its query root has no field of any table: only what every role has.
    const root = await q('{ __schema { queryType { fields { name } } } }', undefined, { 'x-svc-role': 'nobody' });
    expect(root.errors).toBeUndefined();
    const names: string[] = root.data.__schema.queryType.fields.map((f: { name: string }) => f.name);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => /author|article/.test(n))).toEqual([]);
  });

  it('the introspection query works for the role, with Hasura\'s names and only its columns', async () => {
    const r = await q(getIntrospectionQuery(), undefined, user('1'));
    expect(r.errors).toBeUndefined();
    const types = new Map<string, any>(r.data.__schema.types.map((t: any) => [t.name, t]));
    for (const name of ['article', 'article_bool_exp', 'article_order_by', 'article_select_column', 'article_aggregate', 'article_aggregate_fields', 'article_sum_fields', 'article_max_fields', 'Int_comparison_exp', 'String_comparison_exp', 'numeric', 'order_by', 'author']) {
      expect(types.has(name), name).toBe(true);
    }
    expect(types.has('author_aggregate')).toBe(false);
    // By name, as Hasura lists an object's fields (its set_table_is_enum cases show it).
    expect(types.get('article').fields.map((f: any) => f.name)).toEqual(['author', 'author_id', 'id', 'rating', 'title']);
    // `articles_groups`: grouped aggregates of the relationship (issue 30), where the role may aggregate articles.
    expect(types.get('author').fields.map((f: any) => f.name)).toEqual(['articles', 'articles_aggregate', 'articles_groups', 'id', 'name']);
    expect(types.get('author').fields.find((f: any) => f.name === 'name').description).toBe('the name');
    expect(types.get('order_by').enumValues.map((v: any) => v.name)).toEqual(['asc', 'asc_nulls_first', 'asc_nulls_last', 'desc', 'desc_nulls_first', 'desc_nulls_last']);
    const roots = types.get('query_root').fields.map((f: any) => f.name).sort();
    expect(roots).toEqual(['article', 'article_aggregate', 'article_by_pk', 'article_groups', 'author', 'author_by_pk']);
  });
});

describe('resolved model', () => {
  const model = (key: string) => (server.kernel.state().build.outputs.get('sources') as any).sources.get('default').tables.get(key)?.model;

  it('untouched tables keep their resolved entry; names follow the schema, custom names and root fields', async () => {
    const before = { author: model('"public"."author"'), article: model('"public"."article"') };
    expect(before.article.select.get('user').filter).toMatchObject({ t: 'cmp', column: 'author_id', op: 'eq', value: { k: 'session', name: 'x-svc-user-id' } });
    await server.runSql('create schema other; create table other.thing (id int primary key, label text);');
    // run_sql refreshes the introspection, which re-resolves every table; after it, tracking one
    // table leaves the others' entries as they were.
    const mid = { author: model('"public"."author"'), article: model('"public"."article"') };
    const r = await server.metadata({
      type: 'pg_track_table',
      args: { table: { schema: 'other', name: 'thing' }, configuration: { custom_root_fields: { select_by_pk: 'thing_one' }, column_config: { label: { custom_name: 'title' } } } },
    });
    expect(r.status, r.text).toBe(200);
    expect(model('"public"."author"')).toBe(mid.author);
    expect(model('"public"."article"')).toBe(mid.article);
    expect(before.author).toBeDefined();
    await server.sql.unsafe("insert into other.thing values (1, 'one')");
    expect(await q('{ other_thing { id title } thing_one(id: 1) { __typename title } }')).toEqual({
      data: { other_thing: [{ id: 1, title: 'one' }], thing_one: { __typename: 'other_thing', title: 'one' } },
    });
  });
});
