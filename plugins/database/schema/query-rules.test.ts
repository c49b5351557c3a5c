/**
 * Query rules of Hasura v2 that its conformance cases pin down: a select permission's `limit`
 * caps the nodes of an aggregate, not the rows aggregated; a role whose permission lists no
 * column may only count rows; a negative literal `limit` and `distinct_on` columns that are not
 * the first `order_by` keys are validation errors with Hasura's messages and paths.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null);
create table article (id serial primary key, title text not null, author_id int references author(id));
insert into author (name) values ('A1'), ('A2');
insert into article (title, author_id) values ('T1', 1), ('T2', 1), ('T3', 2);
create table doc (id serial primary key, body jsonb);
insert into doc (body) values ('"x"'), ('{"a": 1}'), ('[1, 2]');
`;

const server = useServer(SEED);
const as = (role: string) => ({ 'x-svc-role': role });

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'doc' } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'capped', permission: { columns: '*', filter: {}, limit: 1, allow_aggregations: true } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'capped', permission: { columns: '*', filter: {}, limit: 1, allow_aggregations: true } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'counter', permission: { columns: [], filter: {}, allow_aggregations: true } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('a permission limit', () => {
  it('caps the nodes, not the rows aggregated, at the root and through a relationship', async () => {
    expect(await server.gql('{ article_aggregate { aggregate { count max { id } } nodes { id } } }', undefined, as('capped'))).toEqual({
      data: { article_aggregate: { aggregate: { count: 3, max: { id: 3 } }, nodes: [{ id: 1 }] } },
    });
    expect(await server.gql('{ author(where: {id: {_eq: 1}}) { articles_aggregate(order_by: {id: desc}) { aggregate { count } nodes { id } } } }', undefined, as('capped'))).toEqual({
      data: { author: [{ articles_aggregate: { aggregate: { count: 2 }, nodes: [{ id: 2 }] } }] },
    });
    // A limit argument limits the rows aggregated too.
    expect(await server.gql('{ article_aggregate(limit: 2, order_by: {id: asc}) { aggregate { count } nodes { id } } }', undefined, as('capped'))).toEqual({
      data: { article_aggregate: { aggregate: { count: 2 }, nodes: [{ id: 1 }] } },
    });
    expect(await server.gql('{ article { id } }', undefined, as('capped'))).toEqual({ data: { article: [{ id: 1 }] } });
  });
});

describe('a role whose permission lists no column', () => {
  it('counts the rows, and has nothing else', async () => {
    expect(await server.gql('{ article_aggregate { aggregate { count } } }', undefined, as('counter'))).toEqual({ data: { article_aggregate: { aggregate: { count: 3 } } } });
    expect(await server.gql('{ article_aggregate { aggregate { count(columns: [title]) } } }', undefined, as('counter'))).toEqual({
      errors: [{ extensions: { path: '$.selectionSet.article_aggregate.selectionSet.aggregate.selectionSet.count', code: 'validation-failed' }, message: "'count' has no argument named 'columns'" }],
    });
    expect(await server.gql('{ article_aggregate { aggregate { max { id } } } }', undefined, as('counter'))).toEqual({
      errors: [{ extensions: { path: '$.selectionSet.article_aggregate.selectionSet.aggregate.selectionSet.max', code: 'validation-failed' }, message: "field 'max' not found in type: 'article_aggregate_fields'" }],
    });
    expect((await server.gql('{ article { id } }', undefined, as('counter'))).errors[0].message).toBe("field 'article' not found in type: 'query_root'");
    expect((await server.gql('{ article_aggregate { nodes { id } } }', undefined, as('counter'))).errors[0].message).toBe("field 'nodes' not found in type: 'article_aggregate'");
  });
});

describe('jsonb comparisons', () => {
  it('a value is any JSON value: a string is the JSON string, not JSON text', async () => {
    expect(await server.gql('{ doc(where: {body: {_eq: "x"}}) { id } }')).toEqual({ data: { doc: [{ id: 1 }] } });
    expect(await server.gql('query ($v: jsonb) { doc(where: {body: {_eq: $v}}) { id } }', { v: { a: 1 } })).toEqual({ data: { doc: [{ id: 2 }] } });
    expect(await server.gql('{ doc(where: {body: {_contains: [2]}}) { id } }')).toEqual({ data: { doc: [{ id: 3 }] } });
  });
});

describe('argument rules', () => {
  it('a negative literal limit', async () => {
    expect(await server.gql('{ article(limit: -1) { id } }')).toEqual({
      errors: [{ extensions: { code: 'validation-failed', path: '$.selectionSet.article.args.limit' }, message: "expected a non-negative 32-bit integer for type 'Int', but found an integer" }],
    });
    expect(await server.gql('{ author { articles(limit: -2) { id } } }')).toEqual({
      errors: [{ extensions: { code: 'validation-failed', path: '$.selectionSet.author.selectionSet.articles.args.limit' }, message: "expected a non-negative 32-bit integer for type 'Int', but found an integer" }],
    });
  });

  it('distinct_on columns must be the first order_by keys', async () => {
    expect(await server.gql('{ article(distinct_on: [author_id], order_by: [{title: desc}]) { id } }')).toEqual({
      errors: [{ extensions: { code: 'validation-failed', path: '$.selectionSet.article.args' }, message: '"distinct_on" columns must match initial "order_by" columns' }],
    });
    expect(await server.gql('{ article(distinct_on: [author_id], order_by: [{author_id: asc}, {id: desc}]) { id } }')).toEqual({ data: { article: [{ id: 2 }, { id: 3 }] } });
    expect(await server.gql('{ article(distinct_on: author_id) { author_id } }')).toEqual({ data: { article: [{ author_id: 1 }, { author_id: 2 }] } });
  });
});
