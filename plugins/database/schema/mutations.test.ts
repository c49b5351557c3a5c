/**
 * Golden tests of GraphQL mutations over tables, as admin: request -> exact response (Hasura v2's
 * bodies) against real PostgreSQL through POST /v1/graphql, and after every write the table's
 * real contents read back as admin through run_sql. Features (insert, nested inserts, upserts,
 * the update operators, update_many, delete), one transaction per request, and errors.
 * Permissions are in mutation-permissions.test.ts.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null, email text unique, born date, info jsonb, tags text[], rating int not null default 0, score numeric);
create table article (id serial primary key, title text not null, body text, author_id int references author(id), likes int not null default 0, published boolean not null default false);
create table comment (id serial primary key, article_id int not null references article(id), text text not null);
create table counter (id serial primary key, kind text not null default 'tick', n int default 0);
`;

/** Every test starts from these rows (plain data statements: run_sql does not re-introspect). */
const RESET = `
delete from comment; delete from article; delete from author; delete from counter;
select setval('author_id_seq', 1, false), setval('article_id_seq', 1, false), setval('comment_id_seq', 1, false), setval('counter_id_seq', 1, false);
insert into author (name, email, rating, info) values ('Alice', 'alice@x', 5, '{"a": 1, "b": {"c": 2}, "list": [1, 2, 3]}'), ('Bob', 'bob@x', 3, '["x", "y", "z"]');
insert into article (title, body, author_id, likes, published) values ('A1', 'a1', 1, 10, true), ('A2', null, 1, 0, false), ('B1', 'b1', 2, 7, true);
insert into comment (article_id, text) values (1, 'nice'), (3, 'ok');
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>) => server.gql(query, variables);

/** The rows of a table (or any select), as admin through run_sql, in id order. */
async function rows(from: string, columns = '*'): Promise<any[]> {
  const r = await server.runSql(`select coalesce(json_agg(t order by t.id), '[]')::text from (select ${columns} from ${from}) as t`);
  return JSON.parse(r.result[1][0]);
}

const ALICE = { id: 1, name: 'Alice', email: 'alice@x', born: null, info: { a: 1, b: { c: 2 }, list: [1, 2, 3] }, tags: null, rating: 5, score: null };
const BOB = { id: 2, name: 'Bob', email: 'bob@x', born: null, info: ['x', 'y', 'z'], tags: null, rating: 3, score: null };
const ARTICLES = [
  { id: 1, title: 'A1', body: 'a1', author_id: 1, likes: 10, published: true },
  { id: 2, title: 'A2', body: null, author_id: 1, likes: 0, published: false },
  { id: 3, title: 'B1', body: 'b1', author_id: 2, likes: 7, published: true },
];
const COMMENTS = [
  { id: 1, article_id: 1, text: 'nice' },
  { id: 2, article_id: 3, text: 'ok' },
];

/** The seed is untouched. */
async function unchanged() {
  expect(await rows('author')).toEqual([ALICE, BOB]);
  expect(await rows('article')).toEqual(ARTICLES);
  expect(await rows('comment')).toEqual(COMMENTS);
}

/** The error of a response without its `internal` (the engine's debug details for admin, like
 * Hasura's admin internal errors; their shape is not golden here). */
function errorsOf(body: any): any {
  expect(Object.keys(body)).toEqual(['errors']);
  return {
    errors: body.errors.map((e: any) => {
      const { internal: _internal, ...extensions } = e.extensions;
      return { ...e, extensions };
    }),
  };
}

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'comment' } },
      { type: 'pg_track_table', args: { table: 'counter' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'pg_create_object_relationship', args: { table: 'comment', name: 'article', using: { foreign_key_constraint_on: 'article_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'article', name: 'comments', using: { foreign_key_constraint_on: { table: 'comment', column: 'article_id' } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.runSql(RESET);
});

describe('insert', () => {
  it('several rows: defaults, nulls, jsonb, an array column given as a JSON list, numeric', async () => {
    expect(
      await q(`mutation {
        insert_author(objects: [
          {name: "Carol", email: "carol@x", born: "1990-05-05", info: {k: [1, "two", null], n: {m: true}}, tags: ["a", "b c", "d\\"e"], score: 1.5},
          {name: "Dan", email: null, info: null}
        ]) { affected_rows returning { id name email born info tags rating score } }
      }`),
    ).toEqual({
      data: {
        insert_author: {
          affected_rows: 2,
          returning: [
            { id: 3, name: 'Carol', email: 'carol@x', born: '1990-05-05', info: { k: [1, 'two', null], n: { m: true } }, tags: ['a', 'b c', 'd"e'], rating: 0, score: 1.5 },
            { id: 4, name: 'Dan', email: null, born: null, info: null, tags: null, rating: 0, score: null },
          ],
        },
      },
    });
    expect(await rows('author')).toEqual([
      ALICE,
      BOB,
      { id: 3, name: 'Carol', email: 'carol@x', born: '1990-05-05', info: { k: [1, 'two', null], n: { m: true } }, tags: ['a', 'b c', 'd"e'], rating: 0, score: 1.5 },
      { id: 4, name: 'Dan', email: null, born: null, info: null, tags: null, rating: 0, score: null },
    ]);
  });

  it('a jsonb column takes any JSON value: a string, a number, a boolean, an array, JSON null', async () => {
    expect(
      await q('mutation ($v: jsonb) { insert_author(objects: [{name: "S", info: "plain"}, {name: "N", info: 5}, {name: "B", info: false}, {name: "V", info: $v}, {name: "J", info: {x: null}}]) { returning { name info } } }', { v: 'from a variable' }),
    ).toEqual({
      data: { insert_author: { returning: [{ name: 'S', info: 'plain' }, { name: 'N', info: 5 }, { name: 'B', info: false }, { name: 'V', info: 'from a variable' }, { name: 'J', info: { x: null } }] } },
    });
    expect(await q('mutation { update_author(where: {id: {_eq: 2}}, _append: {info: "w"}) { returning { info } } }')).toEqual({ data: { update_author: { returning: [{ info: ['x', 'y', 'z', 'w'] }] } } });
    expect(await q('mutation { update_author_by_pk(pk_columns: {id: 3}, _set: {info: "set"}) { info } }')).toEqual({ data: { update_author_by_pk: { info: 'set' } } });
    expect(await rows('author', 'id, info')).toEqual([
      { id: 1, info: ALICE.info },
      { id: 2, info: ['x', 'y', 'z', 'w'] },
      { id: 3, info: 'set' },
      { id: 4, info: 5 },
      { id: 5, info: false },
      { id: 6, info: 'from a variable' },
      { id: 7, info: { x: null } },
    ]);
    expect(await rows('author where jsonb_typeof(info) = \'string\'', 'id')).toEqual([{ id: 3 }, { id: 6 }]);
  });

  it('rows of defaults only: one or several, beside rows that give columns', async () => {
    expect(await q('mutation { insert_counter(objects: [{}, {}]) { affected_rows returning { id kind n } } }')).toEqual({
      data: { insert_counter: { affected_rows: 2, returning: [{ id: 1, kind: 'tick', n: 0 }, { id: 2, kind: 'tick', n: 0 }] } },
    });
    expect(await q('mutation { a: insert_counter_one(object: {}) { id } b: insert_counter(objects: [{}, {kind: "tock"}, {n: null}]) { returning { id kind n } } }')).toEqual({
      data: { a: { id: 3 }, b: { returning: [{ id: 4, kind: 'tick', n: 0 }, { id: 5, kind: 'tock', n: 0 }, { id: 6, kind: 'tick', n: null }] } },
    });
    expect(await rows('counter')).toEqual([
      { id: 1, kind: 'tick', n: 0 },
      { id: 2, kind: 'tick', n: 0 },
      { id: 3, kind: 'tick', n: 0 },
      { id: 4, kind: 'tick', n: 0 },
      { id: 5, kind: 'tock', n: 0 },
      { id: 6, kind: 'tick', n: null },
    ]);
  });

  it('insert_<t>_one returns the row; __typename and aliases', async () => {
    expect(await q('mutation { one: insert_author_one(object: {name: "Eve", rating: 2}) { __typename key: id name rating } }')).toEqual({
      data: { one: { __typename: 'author', key: 3, name: 'Eve', rating: 2 } },
    });
    expect(await q('mutation { insert_author(objects: {name: "Fay"}) { __typename n: affected_rows r: returning { __typename name } } }')).toEqual({
      data: { insert_author: { __typename: 'author_mutation_response', n: 1, r: [{ __typename: 'author', name: 'Fay' }] } },
    });
    expect(await rows('author', 'id, name, rating')).toEqual([
      { id: 1, name: 'Alice', rating: 5 },
      { id: 2, name: 'Bob', rating: 3 },
      { id: 3, name: 'Eve', rating: 2 },
      { id: 4, name: 'Fay', rating: 0 },
    ]);
  });

  it('an empty objects list inserts nothing and answers an empty response (Hasura: buildEmptyMutResp)', async () => {
    expect(await q('mutation { insert_author(objects: []) { affected_rows returning { id } __typename } }')).toEqual({
      data: { insert_author: { affected_rows: 0, returning: [], __typename: 'author_mutation_response' } },
    });
    await unchanged();
  });

  it('variables: the whole objects list, single values, a whole object', async () => {
    expect(
      await q('mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { affected_rows returning { id name info tags } } }', {
        objects: [{ name: 'Gus', info: { deep: [{ x: 1 }] }, tags: ['t1'] }, { name: 'Hal' }],
      }),
    ).toEqual({ data: { insert_author: { affected_rows: 2, returning: [{ id: 3, name: 'Gus', info: { deep: [{ x: 1 }] }, tags: ['t1'] }, { id: 4, name: 'Hal', info: null, tags: null }] } } });
    expect(await q('mutation ($name: String!, $born: date) { insert_author_one(object: {name: $name, born: $born}) { id name born } }', { name: "Ivy'; drop table author; --", born: '2000-01-02' })).toEqual({
      data: { insert_author_one: { id: 5, name: "Ivy'; drop table author; --", born: '2000-01-02' } },
    });
    expect(await q('mutation ($o: article_insert_input!) { insert_article_one(object: $o) { id title author { name } } }', { o: { title: 'V', author_id: 2 } })).toEqual({
      data: { insert_article_one: { id: 4, title: 'V', author: { name: 'Bob' } } },
    });
    expect(await rows('author', 'id, name, born, info, tags')).toEqual([
      { id: 1, name: 'Alice', born: null, info: ALICE.info, tags: null },
      { id: 2, name: 'Bob', born: null, info: BOB.info, tags: null },
      { id: 3, name: 'Gus', born: null, info: { deep: [{ x: 1 }] }, tags: ['t1'] },
      { id: 4, name: 'Hal', born: null, info: null, tags: null },
      { id: 5, name: "Ivy'; drop table author; --", born: '2000-01-02', info: null, tags: null },
    ]);
    expect(await rows('article')).toEqual([...ARTICLES, { id: 4, title: 'V', body: null, author_id: 2, likes: 0, published: false }]);
  });

  it('returning reads relationships and aggregates of existing rows', async () => {
    expect(
      await q('mutation { insert_article(objects: [{title: "C1", author_id: 1}]) { returning { id title author { name } comments { id } comments_aggregate { aggregate { count } } } } }'),
    ).toEqual({ data: { insert_article: { returning: [{ id: 4, title: 'C1', author: { name: 'Alice' }, comments: [], comments_aggregate: { aggregate: { count: 0 } } }] } } });
    expect(await rows('article')).toEqual([...ARTICLES, { id: 4, title: 'C1', body: null, author_id: 1, likes: 0, published: false }]);
  });

  it('an insert without nested rows is one statement: relationships in returning read the table as it was before it (Hasura)', async () => {
    // Hasura v2 runs an insert without relationship rows as one statement (a data-modifying CTE
    // and the select of the response), so a relationship of `returning` does not see the rows
    // the statement inserted: Alice's articles are the two she had.
    expect(await q('mutation { insert_article(objects: [{title: "C1", author_id: 1}]) { returning { title author { name articles_aggregate { aggregate { count } } } } } }')).toEqual({
      data: { insert_article: { returning: [{ title: 'C1', author: { name: 'Alice', articles_aggregate: { aggregate: { count: 2 } } } }] } },
    });
    expect(await rows('article', 'id, title, author_id')).toEqual([
      { id: 1, title: 'A1', author_id: 1 },
      { id: 2, title: 'A2', author_id: 1 },
      { id: 3, title: 'B1', author_id: 2 },
      { id: 4, title: 'C1', author_id: 1 },
    ]);
  });
});

describe('nested inserts', () => {
  it('through an object relationship: the parent first, its key given to the child', async () => {
    expect(
      await q('mutation { insert_article(objects: [{title: "N1", author: {data: {name: "Nina", email: "nina@x"}}}]) { affected_rows returning { id title author_id author { id name } } } }'),
    ).toEqual({ data: { insert_article: { affected_rows: 2, returning: [{ id: 4, title: 'N1', author_id: 3, author: { id: 3, name: 'Nina' } }] } } });
    expect(await rows('author', 'id, name, email')).toEqual([
      { id: 1, name: 'Alice', email: 'alice@x' },
      { id: 2, name: 'Bob', email: 'bob@x' },
      { id: 3, name: 'Nina', email: 'nina@x' },
    ]);
    expect(await rows('article')).toEqual([...ARTICLES, { id: 4, title: 'N1', body: null, author_id: 3, likes: 0, published: false }]);
  });

  it('through an array relationship: the children after their parent; affected_rows counts every row', async () => {
    expect(
      await q(`mutation { insert_author(objects: [{name: "Ann", articles: {data: [{title: "X1"}, {title: "X2", likes: 4}]}}]) {
        affected_rows returning { id name articles(order_by: {id: asc}) { id title likes author_id } articles_aggregate { aggregate { count sum { likes } } } }
      } }`),
    ).toEqual({
      data: {
        insert_author: {
          affected_rows: 3,
          returning: [
            {
              id: 3,
              name: 'Ann',
              articles: [
                { id: 4, title: 'X1', likes: 0, author_id: 3 },
                { id: 5, title: 'X2', likes: 4, author_id: 3 },
              ],
              articles_aggregate: { aggregate: { count: 2, sum: { likes: 4 } } },
            },
          ],
        },
      },
    });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Ann' }]);
    expect(await rows('article', 'id, title, author_id, likes')).toEqual([
      { id: 1, title: 'A1', author_id: 1, likes: 10 },
      { id: 2, title: 'A2', author_id: 1, likes: 0 },
      { id: 3, title: 'B1', author_id: 2, likes: 7 },
      { id: 4, title: 'X1', author_id: 3, likes: 0 },
      { id: 5, title: 'X2', author_id: 3, likes: 4 },
    ]);
  });

  it('two levels deep through array relationships (author -> articles -> comments), several parents', async () => {
    expect(
      await q(`mutation { insert_author(objects: [
          {name: "Ann", articles: {data: [{title: "X1", comments: {data: [{text: "c1"}, {text: "c2"}]}}, {title: "X2"}]}},
          {name: "Ben"}
        ]) {
        affected_rows
        returning { name articles(order_by: {id: asc}) { title comments(order_by: {id: asc}) { text article { title author { name } } } } }
      } }`),
    ).toEqual({
      data: {
        insert_author: {
          affected_rows: 6,
          returning: [
            {
              name: 'Ann',
              articles: [
                { title: 'X1', comments: [{ text: 'c1', article: { title: 'X1', author: { name: 'Ann' } } }, { text: 'c2', article: { title: 'X1', author: { name: 'Ann' } } }] },
                { title: 'X2', comments: [] },
              ],
            },
            { name: 'Ben', articles: [] },
          ],
        },
      },
    });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Ann' }, { id: 4, name: 'Ben' }]);
    expect(await rows('article a join author w on w.id = a.author_id', 'a.id, a.title, w.name')).toEqual([
      { id: 1, title: 'A1', name: 'Alice' },
      { id: 2, title: 'A2', name: 'Alice' },
      { id: 3, title: 'B1', name: 'Bob' },
      { id: 4, title: 'X1', name: 'Ann' },
      { id: 5, title: 'X2', name: 'Ann' },
    ]);
    expect(await rows('comment c join article a on a.id = c.article_id', 'c.id, c.text, a.title')).toEqual([
      { id: 1, text: 'nice', title: 'A1' },
      { id: 2, text: 'ok', title: 'B1' },
      { id: 3, text: 'c1', title: 'X1' },
      { id: 4, text: 'c2', title: 'X1' },
    ]);
  });

  it('two levels deep through object relationships (comment -> article -> author), and both kinds in one row', async () => {
    expect(
      await q('mutation { insert_comment_one(object: {text: "deep", article: {data: {title: "Deep", author: {data: {name: "Zed"}}}}}) { id text article { id title author { id name } } } }'),
    ).toEqual({ data: { insert_comment_one: { id: 3, text: 'deep', article: { id: 4, title: 'Deep', author: { id: 3, name: 'Zed' } } } } });
    expect(
      await q(`mutation { insert_article(objects: [{title: "M", author: {data: {name: "Mo"}}, comments: {data: [{text: "m1"}, {text: "m2"}]}}, {title: "M2", author_id: 2}]) {
        affected_rows returning { title author { name } comments { text } }
      } }`),
    ).toEqual({
      data: {
        insert_article: {
          affected_rows: 5,
          returning: [
            { title: 'M', author: { name: 'Mo' }, comments: [{ text: 'm1' }, { text: 'm2' }] },
            { title: 'M2', author: { name: 'Bob' }, comments: [] },
          ],
        },
      },
    });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Zed' }, { id: 4, name: 'Mo' }]);
    expect(await rows('article', 'id, title, author_id')).toEqual([
      { id: 1, title: 'A1', author_id: 1 },
      { id: 2, title: 'A2', author_id: 1 },
      { id: 3, title: 'B1', author_id: 2 },
      { id: 4, title: 'Deep', author_id: 3 },
      { id: 5, title: 'M', author_id: 4 },
      { id: 6, title: 'M2', author_id: 2 },
    ]);
    expect(await rows('comment')).toEqual([...COMMENTS, { id: 3, article_id: 4, text: 'deep' }, { id: 4, article_id: 5, text: 'm1' }, { id: 5, article_id: 5, text: 'm2' }]);
  });

  it('an empty array relationship insert is no insert', async () => {
    expect(await q('mutation { insert_author(objects: [{name: "Solo", articles: {data: []}}]) { affected_rows returning { name articles { id } } } }')).toEqual({
      data: { insert_author: { affected_rows: 1, returning: [{ name: 'Solo', articles: [] }] } },
    });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Solo' }]);
    expect(await rows('article')).toEqual(ARTICLES);
  });

  it('variables for a whole nested object', async () => {
    expect(
      await q('mutation ($a: [author_insert_input!]!) { insert_author(objects: $a) { affected_rows returning { name articles { title comments { text } } } } }', {
        a: [{ name: 'Vic', articles: { data: [{ title: 'V1', comments: { data: [{ text: 'v' }] } }] } }],
      }),
    ).toEqual({ data: { insert_author: { affected_rows: 3, returning: [{ name: 'Vic', articles: [{ title: 'V1', comments: [{ text: 'v' }] }] }] } } });
    expect(await rows('comment c join article a on a.id = c.article_id join author w on w.id = a.author_id', 'c.id, c.text, a.title, w.name')).toEqual([
      { id: 1, text: 'nice', title: 'A1', name: 'Alice' },
      { id: 2, text: 'ok', title: 'B1', name: 'Bob' },
      { id: 3, text: 'v', title: 'V1', name: 'Vic' },
    ]);
  });

  it('a column given beside the object relationship that determines it is refused (Hasura validateInsert)', async () => {
    expect(await q('mutation { insert_article(objects: [{title: "x", author_id: 1, author: {data: {name: "y"}}}]) { affected_rows } }')).toEqual({
      errors: [
        {
          message: 'cannot insert object relationship "author" as "author_id" column values are already determined',
          extensions: { path: '$.selectionSet.insert_article.args.objects[0].author', code: 'validation-failed' },
        },
      ],
    });
    expect(await q('mutation { insert_author(objects: [{name: "p", articles: {data: [{title: "q", author_id: 2}]}}]) { affected_rows } }')).toEqual({
      errors: [
        {
          message: 'cannot insert "author_id" columns as their values are already being determined by parent insert',
          extensions: { path: '$.selectionSet.insert_author.args.objects[0].articles.data[0]', code: 'validation-failed' },
        },
      ],
    });
    await unchanged();
  });
});

describe('on_conflict', () => {
  it('update_columns: an upsert updates the conflicting rows and inserts the others', async () => {
    expect(
      await q(`mutation { insert_author(objects: [{name: "Alice2", email: "alice@x", rating: 9}, {name: "Fay", email: "fay@x"}],
        on_conflict: {constraint: author_email_key, update_columns: [name, rating]}) { affected_rows returning { id name email rating } } }`),
    ).toEqual({ data: { insert_author: { affected_rows: 2, returning: [{ id: 1, name: 'Alice2', email: 'alice@x', rating: 9 }, { id: 4, name: 'Fay', email: 'fay@x', rating: 0 }] } } });
    // The conflicting row took a value of the sequence too (3), as in PostgreSQL and Hasura.
    expect(await rows('author', 'id, name, email, rating, info')).toEqual([
      { id: 1, name: 'Alice2', email: 'alice@x', rating: 9, info: ALICE.info },
      { id: 2, name: 'Bob', email: 'bob@x', rating: 3, info: BOB.info },
      { id: 4, name: 'Fay', email: 'fay@x', rating: 0, info: null },
    ]);
  });

  it('on the primary key, with insert_<t>_one', async () => {
    expect(await q('mutation { insert_article_one(object: {id: 2, title: "A2 again", likes: 99}, on_conflict: {constraint: article_pkey, update_columns: [title]}) { id title likes author_id } }')).toEqual({
      data: { insert_article_one: { id: 2, title: 'A2 again', likes: 0, author_id: 1 } },
    });
    expect(await rows('article', 'id, title, likes')).toEqual([
      { id: 1, title: 'A1', likes: 10 },
      { id: 2, title: 'A2 again', likes: 0 },
      { id: 3, title: 'B1', likes: 7 },
    ]);
  });

  it('empty update_columns: do nothing (affected_rows 0; insert_<t>_one returns null)', async () => {
    expect(await q('mutation { insert_author(objects: [{name: "X", email: "alice@x"}], on_conflict: {constraint: author_email_key, update_columns: []}) { affected_rows returning { id } } }')).toEqual({
      data: { insert_author: { affected_rows: 0, returning: [] } },
    });
    expect(await q('mutation { insert_author_one(object: {name: "X", email: "bob@x"}, on_conflict: {constraint: author_email_key}) { id name } }')).toEqual({ data: { insert_author_one: null } });
    expect(await q('mutation { insert_author(objects: [{name: "X", email: "bob@x"}, {name: "New", email: "new@x"}], on_conflict: {constraint: author_email_key}) { affected_rows returning { name } } }')).toEqual({
      data: { insert_author: { affected_rows: 1, returning: [{ name: 'New' }] } },
    });
    expect(await rows('author', 'id, name, email')).toEqual([
      { id: 1, name: 'Alice', email: 'alice@x' },
      { id: 2, name: 'Bob', email: 'bob@x' },
      { id: 6, name: 'New', email: 'new@x' },
    ]);
  });

  it('where: only the conflicting rows it matches are updated', async () => {
    expect(
      await q(`mutation { insert_author(objects: [{name: "a", email: "alice@x", rating: 50}, {name: "b", email: "bob@x", rating: 30}],
        on_conflict: {constraint: author_email_key, update_columns: [rating], where: {rating: {_lt: 5}}}) { affected_rows returning { id name rating } } }`),
    ).toEqual({ data: { insert_author: { affected_rows: 1, returning: [{ id: 2, name: 'Bob', rating: 30 }] } } });
    expect(await rows('author', 'id, name, rating')).toEqual([{ id: 1, name: 'Alice', rating: 5 }, { id: 2, name: 'Bob', rating: 30 }]);
  });

  it('a nested object relationship upserted: the child refers to the existing parent, returning reads its new values', async () => {
    expect(
      await q(`mutation { insert_article(objects: [{title: "U", author: {data: {name: "Alice Updated", email: "alice@x"}, on_conflict: {constraint: author_email_key, update_columns: [name]}}}]) {
        affected_rows returning { title author { id name articles(order_by: {id: asc}) { title } } }
      } }`),
    ).toEqual({ data: { insert_article: { affected_rows: 2, returning: [{ title: 'U', author: { id: 1, name: 'Alice Updated', articles: [{ title: 'A1' }, { title: 'A2' }, { title: 'U' }] } }] } } });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice Updated' }, { id: 2, name: 'Bob' }]);
    expect(await rows('article', 'id, title, author_id')).toEqual([
      { id: 1, title: 'A1', author_id: 1 },
      { id: 2, title: 'A2', author_id: 1 },
      { id: 3, title: 'B1', author_id: 2 },
      { id: 4, title: 'U', author_id: 1 },
    ]);
  });

  it('a parent upserted with array children: returning reads each row once, in its new version', async () => {
    expect(
      await q(`mutation { insert_author(objects: [{name: "Bobby", email: "bob@x", articles: {data: [{title: "B2"}]}}], on_conflict: {constraint: author_email_key, update_columns: [name]}) {
        affected_rows returning { id name articles(order_by: {id: asc}) { title author { name } } }
      } }`),
    ).toEqual({
      data: { insert_author: { affected_rows: 2, returning: [{ id: 2, name: 'Bobby', articles: [{ title: 'B1', author: { name: 'Bobby' } }, { title: 'B2', author: { name: 'Bobby' } }] }] } },
    });
    expect(await rows('author', 'id, name')).toEqual([{ id: 1, name: 'Alice' }, { id: 2, name: 'Bobby' }]);
    expect(await rows('article', 'id, title, author_id')).toEqual([
      { id: 1, title: 'A1', author_id: 1 },
      { id: 2, title: 'A2', author_id: 1 },
      { id: 3, title: 'B1', author_id: 2 },
      { id: 4, title: 'B2', author_id: 2 },
    ]);
  });

  it('a nested parent that is not inserted (do nothing) fails the request: object and array relationships', async () => {
    expect(await q('mutation { insert_article(objects: [{title: "Orphan", author: {data: {name: "X", email: "alice@x"}, on_conflict: {constraint: author_email_key}}}]) { affected_rows } }')).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert object relation "author" since insert to table "author" affects zero rows',
          extensions: { path: '$.selectionSet.insert_article.args.objects[0].author', code: 'not-supported' },
        },
      ],
    });
    expect(
      await q('mutation { insert_author(objects: [{name: "X", email: "alice@x", articles: {data: [{title: "Orphan"}]}}], on_conflict: {constraint: author_email_key, update_columns: []}) { affected_rows } }'),
    ).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert array relations since insert to table "author" affects zero rows',
          extensions: { path: '$.selectionSet.insert_author.args.objects[0]', code: 'not-supported' },
        },
      ],
    });
    // Where the child's column is NOT NULL (comment.article_id), the same errors, not a Not-NULL violation.
    expect(await q('mutation { insert_comment(objects: [{text: "x", article: {data: {id: 1, title: "dup"}, on_conflict: {constraint: article_pkey}}}]) { affected_rows } }')).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert object relation "article" since insert to table "article" affects zero rows',
          extensions: { path: '$.selectionSet.insert_comment.args.objects[0].article', code: 'not-supported' },
        },
      ],
    });
    expect(await q('mutation { insert_article_one(object: {id: 1, title: "x", comments: {data: [{text: "c"}]}}, on_conflict: {constraint: article_pkey, update_columns: []}) { id } }')).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert array relations since insert to table "article" affects zero rows',
          extensions: { path: '$.selectionSet.insert_article_one.args.object[0]', code: 'not-supported' },
        },
      ],
    });
    // The second row's nested parent, one level down: reported at its own path.
    expect(
      await q(`mutation { insert_comment(objects: [
          {text: "fine", article_id: 1},
          {text: "lost", article: {data: {title: "T", author: {data: {name: "X", email: "bob@x"}, on_conflict: {constraint: author_email_key}}}}}
        ]) { affected_rows } }`),
    ).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert object relation "author" since insert to table "author" affects zero rows',
          extensions: { path: '$.selectionSet.insert_comment.args.objects[1].article.data.author', code: 'not-supported' },
        },
      ],
    });
    await unchanged();
  });

  // Note [Parents joined]: rows of one shape are selected from their parent's CTE, rows of
  // several shapes (a column left to its default) keep a subquery per row; both keep the rows'
  // order and refuse a missing parent.
  it('array relationship rows of one shape and of several: written in order, a missing parent refused either way', async () => {
    const texts = ['c1', 'c2', 'c3', 'c4', 'c5'];
    expect(
      await q(`mutation { insert_article_one(object: {title: "T", comments: {data: [${texts.map((t) => `{text: "${t}"}`).join(', ')}]}}) { id comments(order_by: {id: asc}) { id text } } }`),
    ).toEqual({ data: { insert_article_one: { id: 4, comments: texts.map((text, i) => ({ id: 3 + i, text })) } } });
    expect(
      await q(`mutation { insert_author_one(object: {name: "M", articles: {data: [{title: "x1"}, {title: "x2", likes: 4}, {title: "x3", body: "b"}]}}) {
        id articles(order_by: {id: asc}) { id title body likes }
      } }`),
    ).toEqual({
      data: {
        insert_author_one: {
          id: 3,
          articles: [
            { id: 5, title: 'x1', body: null, likes: 0 },
            { id: 6, title: 'x2', body: null, likes: 4 },
            { id: 7, title: 'x3', body: 'b', likes: 0 },
          ],
        },
      },
    });
    const before = { article: await rows('article'), comment: await rows('comment') };
    // Several shapes under a parent that writes nothing, the child's column NOT NULL.
    expect(
      await q('mutation { insert_article_one(object: {id: 1, title: "x", comments: {data: [{text: "a"}, {text: "b", id: 99}]}}, on_conflict: {constraint: article_pkey, update_columns: []}) { id } }'),
    ).toEqual({
      errors: [
        {
          message: 'cannot proceed to insert array relations since insert to table "article" affects zero rows',
          extensions: { path: '$.selectionSet.insert_article_one.args.object[0]', code: 'not-supported' },
        },
      ],
    });
    expect(await rows('article')).toEqual(before.article);
    expect(await rows('comment')).toEqual(before.comment);
  });
});

describe('update', () => {
  it('returning a nested list ordered through an object relationship it shows, and ordered by an aggregate it shows (Notes [Objects read through the order keys\' joins], [Aggregates answered by order keys])', async () => {
    expect(
      await q(`mutation { update_author(where: {id: {_eq: 1}}, _inc: {rating: 1}) { returning {
        id articles(order_by: [{author: {name: asc}}, {id: desc}]) { id author { name } }
      } } }`),
    ).toEqual({ data: { update_author: { returning: [{ id: 1, articles: [{ id: 2, author: { name: 'Alice' } }, { id: 1, author: { name: 'Alice' } }] }] } } });
    expect(
      await q(`mutation { update_comment(where: {}, _set: {text: "x"}) { returning {
        id article { author { articles(order_by: [{comments_aggregate: {count: desc}}, {id: asc}]) { id comments_aggregate { aggregate { count } } } } }
      } } }`),
    ).toEqual({
      data: {
        update_comment: {
          returning: [
            { id: 1, article: { author: { articles: [{ id: 1, comments_aggregate: { aggregate: { count: 1 } } }, { id: 2, comments_aggregate: { aggregate: { count: 0 } } }] } } },
            { id: 2, article: { author: { articles: [{ id: 3, comments_aggregate: { aggregate: { count: 1 } } }] } } },
          ],
        },
      },
    });
  });

  it('_set and _inc, with returning, relationships and aggregates', async () => {
    expect(
      await q(`mutation { update_article(where: {author_id: {_eq: 1}}, _set: {body: "new", published: true}, _inc: {likes: 5}) {
        affected_rows returning { id title body likes published author { name } comments_aggregate { aggregate { count } } }
      } }`),
    ).toEqual({
      data: {
        update_article: {
          affected_rows: 2,
          returning: [
            { id: 1, title: 'A1', body: 'new', likes: 15, published: true, author: { name: 'Alice' }, comments_aggregate: { aggregate: { count: 1 } } },
            { id: 2, title: 'A2', body: 'new', likes: 5, published: true, author: { name: 'Alice' }, comments_aggregate: { aggregate: { count: 0 } } },
          ],
        },
      },
    });
    expect(await rows('article')).toEqual([
      { id: 1, title: 'A1', body: 'new', author_id: 1, likes: 15, published: true },
      { id: 2, title: 'A2', body: 'new', author_id: 1, likes: 5, published: true },
      ARTICLES[2],
    ]);
  });

  it('_inc of a numeric column, _set to null, a negative increment', async () => {
    expect(await q('mutation { update_author(where: {id: {_eq: 2}}, _inc: {rating: -4}, _set: {email: null, score: 2.25}) { returning { id email rating score } } }')).toEqual({
      data: { update_author: { returning: [{ id: 2, email: null, rating: -1, score: 2.25 }] } },
    });
    expect(await rows('author')).toEqual([ALICE, { ...BOB, email: null, rating: -1, score: 2.25 }]);
  });

  it('the jsonb operators: _append, _prepend, _delete_key, _delete_elem, _delete_at_path', async () => {
    expect(
      await q(`mutation {
        a: update_author(where: {id: {_eq: 1}}, _append: {info: {z: 9}}) { returning { info } }
        b: update_author(where: {id: {_eq: 2}}, _prepend: {info: ["p"]}) { returning { info } }
      }`),
    ).toEqual({ data: { a: { returning: [{ info: { a: 1, b: { c: 2 }, list: [1, 2, 3], z: 9 } }] }, b: { returning: [{ info: ['p', 'x', 'y', 'z'] }] } } });
    expect(
      await q(`mutation {
        c: update_author(where: {id: {_eq: 1}}, _delete_key: {info: "a"}) { returning { info } }
        d: update_author(where: {id: {_eq: 2}}, _delete_elem: {info: -1}) { returning { info } }
        e: update_author(where: {id: {_eq: 1}}, _delete_at_path: {info: ["b", "c"]}) { returning { info } }
        f: update_author(where: {id: {_eq: 1}}, _delete_at_path: {info: ["list", "0"]}) { returning { info } }
      }`),
    ).toEqual({
      data: {
        c: { returning: [{ info: { b: { c: 2 }, list: [1, 2, 3], z: 9 } }] },
        d: { returning: [{ info: ['p', 'x', 'y'] }] },
        e: { returning: [{ info: { b: {}, list: [1, 2, 3], z: 9 } }] },
        f: { returning: [{ info: { b: {}, list: [2, 3], z: 9 } }] },
      },
    });
    expect(await rows('author', 'id, info')).toEqual([
      { id: 1, info: { b: {}, list: [2, 3], z: 9 } },
      { id: 2, info: ['p', 'x', 'y'] },
    ]);
  });

  it('_set: {} changes nothing: affected_rows 0, returning [], and _by_pk an empty object (Hasura buildEmptyMutResp)', async () => {
    expect(await q('mutation { update_author(where: {}, _set: {}) { affected_rows returning { id } __typename } }')).toEqual({
      data: { update_author: { affected_rows: 0, returning: [], __typename: 'author_mutation_response' } },
    });
    expect(await q('mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {}) { id name } }')).toEqual({ data: { update_author_by_pk: {} } });
    await unchanged();
  });

  it('no operator at all is a validation error naming the operators in Hasura\'s order', async () => {
    expect(await q('mutation { update_author(where: {}) { affected_rows } }')).toEqual({
      errors: [
        {
          message: 'at least any one of _set, _inc, _prepend, _append, _delete_key, _delete_elem, _delete_at_path is expected',
          extensions: { path: '$.selectionSet.update_author.args', code: 'validation-failed' },
        },
      ],
    });
    expect(await q('mutation { update_comment_by_pk(pk_columns: {id: 1}) { id } }')).toEqual({
      errors: [{ message: 'at least any one of _set, _inc is expected', extensions: { path: '$.selectionSet.update_comment_by_pk.args', code: 'validation-failed' } }],
    });
    expect(await q('mutation { update_article_many(updates: [{where: {id: {_eq: 1}}, _set: {title: "t"}}, {where: {}}]) { affected_rows } }')).toEqual({
      errors: [{ message: 'at least any one of _set, _inc is expected', extensions: { path: '$.selectionSet.update_article_many.args.updates[1]', code: 'validation-failed' } }],
    });
    await unchanged();
  });

  it('a column in two operators is a validation error', async () => {
    expect(await q('mutation { update_author(where: {}, _set: {rating: 1}, _inc: {rating: 2}) { affected_rows } }')).toEqual({
      errors: [{ message: "Column found in multiple operators: ['rating'].", extensions: { path: '$.selectionSet.update_author.args', code: 'validation-failed' } }],
    });
    expect(await q('mutation { update_author_by_pk(pk_columns: {id: 1}, _append: {info: {x: 1}}, _delete_key: {info: "a"}, _set: {name: "n"}) { id } }')).toEqual({
      errors: [{ message: "Column found in multiple operators: ['info'].", extensions: { path: '$.selectionSet.update_author_by_pk.args', code: 'validation-failed' } }],
    });
    expect(await q('mutation { update_author_many(updates: [{where: {}, _set: {rating: 1}, _inc: {rating: 2}}]) { affected_rows } }')).toEqual({
      errors: [{ message: "Column found in multiple operators: ['rating'].", extensions: { path: '$.selectionSet.update_author_many.args.updates[0]', code: 'validation-failed' } }],
    });
    await unchanged();
  });

  it('update_<t>_by_pk returns the updated row, or null when there is none', async () => {
    expect(await q('mutation { update_article_by_pk(pk_columns: {id: 3}, _set: {title: "B1!"}, _inc: {likes: 1}) { id title likes author { name } } }')).toEqual({
      data: { update_article_by_pk: { id: 3, title: 'B1!', likes: 8, author: { name: 'Bob' } } },
    });
    expect(await q('mutation { update_article_by_pk(pk_columns: {id: 99}, _set: {title: "none"}) { id } }')).toEqual({ data: { update_article_by_pk: null } });
    expect(await rows('article')).toEqual([ARTICLES[0], ARTICLES[1], { ...ARTICLES[2], title: 'B1!', likes: 8 }]);
  });

  it('a where matching nothing updates nothing', async () => {
    expect(await q('mutation { update_article(where: {title: {_eq: "nope"}}, _set: {title: "x"}) { affected_rows returning { id } } }')).toEqual({
      data: { update_article: { affected_rows: 0, returning: [] } },
    });
    await unchanged();
  });

  it('update_<t>_many applies its updates in order: a later one sees the earlier one\'s effect', async () => {
    expect(
      await q(`mutation { update_article_many(updates: [
          {where: {id: {_eq: 2}}, _inc: {likes: 20}},
          {where: {likes: {_gte: 15}}, _set: {title: "Popular"}},
          {where: {id: {_eq: 99}}, _set: {title: "none"}},
          {where: {title: {_eq: "Popular"}}, _set: {}}
        ]) { affected_rows returning { id title likes } } }`),
    ).toEqual({
      data: {
        update_article_many: [
          { affected_rows: 1, returning: [{ id: 2, title: 'A2', likes: 20 }] },
          { affected_rows: 1, returning: [{ id: 2, title: 'Popular', likes: 20 }] },
          { affected_rows: 0, returning: [] },
          { affected_rows: 0, returning: [] },
        ],
      },
    });
    expect(await rows('article')).toEqual([ARTICLES[0], { ...ARTICLES[1], title: 'Popular', likes: 20 }, ARTICLES[2]]);
  });

  it('variables: a whole on_conflict, its update_columns', async () => {
    const doc = 'mutation ($o: [author_insert_input!]!, $oc: author_on_conflict) { insert_author(objects: $o, on_conflict: $oc) { affected_rows returning { id name rating } } }';
    expect(await q(doc, { o: [{ name: 'A!', email: 'alice@x', rating: 1 }], oc: { constraint: 'author_email_key', update_columns: ['name', 'rating'] } })).toEqual({
      data: { insert_author: { affected_rows: 1, returning: [{ id: 1, name: 'A!', rating: 1 }] } },
    });
    expect(await q(doc, { o: [{ name: 'B!', email: 'bob@x' }], oc: { constraint: 'author_email_key', update_columns: [] } })).toEqual({ data: { insert_author: { affected_rows: 0, returning: [] } } });
    expect(
      await q('mutation ($cols: [author_update_column!]!) { insert_author(objects: [{name: "B?", email: "bob@x"}], on_conflict: {constraint: author_email_key, update_columns: $cols}) { affected_rows } }', { cols: ['name'] }),
    ).toEqual({ data: { insert_author: { affected_rows: 1 } } });
    expect(await rows('author', 'id, name, email, rating')).toEqual([
      { id: 1, name: 'A!', email: 'alice@x', rating: 1 },
      { id: 2, name: 'B?', email: 'bob@x', rating: 3 },
    ]);
  });

  it('variables: a whole where, operator objects and single values', async () => {
    expect(
      await q('mutation ($w: article_bool_exp!, $s: article_set_input, $n: Int!) { update_article(where: $w, _set: $s, _inc: {likes: $n}) { affected_rows returning { id title likes } } }', {
        w: { published: { _eq: true } },
        s: { title: 'Pub' },
        n: 2,
      }),
    ).toEqual({ data: { update_article: { affected_rows: 2, returning: [{ id: 1, title: 'Pub', likes: 12 }, { id: 3, title: 'Pub', likes: 9 }] } } });
    expect(
      await q('mutation ($u: [article_updates!]!) { update_article_many(updates: $u) { affected_rows } }', { u: [{ where: { id: { _eq: 2 } }, _set: { body: 'b' } }] }),
    ).toEqual({ data: { update_article_many: [{ affected_rows: 1 }] } });
    expect(await rows('article')).toEqual([
      { ...ARTICLES[0], title: 'Pub', likes: 12 },
      { ...ARTICLES[1], body: 'b' },
      { ...ARTICLES[2], title: 'Pub', likes: 9 },
    ]);
  });
});

describe('delete', () => {
  it('delete_<t> with a where, returning relationships and aggregates', async () => {
    expect(
      await q('mutation { delete_comment(where: {article: {author_id: {_eq: 2}}}) { affected_rows returning { id text article { title author { name } } } } }'),
    ).toEqual({ data: { delete_comment: { affected_rows: 1, returning: [{ id: 2, text: 'ok', article: { title: 'B1', author: { name: 'Bob' } } }] } } });
    expect(await q('mutation { delete_article(where: {published: {_eq: false}}) { affected_rows returning { id title author { articles_aggregate { aggregate { count } } } } } }')).toEqual({
      // One statement: the author's articles are read as they were before it (Hasura).
      data: { delete_article: { affected_rows: 1, returning: [{ id: 2, title: 'A2', author: { articles_aggregate: { aggregate: { count: 2 } } } }] } },
    });
    expect(await rows('comment')).toEqual([COMMENTS[0]]);
    expect(await rows('article')).toEqual([ARTICLES[0], ARTICLES[2]]);
  });

  it('delete_<t>_by_pk returns the deleted row, or null', async () => {
    expect(await q('mutation { delete_comment_by_pk(id: 1) { id text article_id } }')).toEqual({ data: { delete_comment_by_pk: { id: 1, text: 'nice', article_id: 1 } } });
    expect(await q('mutation { delete_comment_by_pk(id: 1) { id } }')).toEqual({ data: { delete_comment_by_pk: null } });
    expect(await rows('comment')).toEqual([COMMENTS[1]]);
  });

  it('where: {} deletes every row; variables for the where', async () => {
    expect(await q('mutation ($w: comment_bool_exp!) { delete_comment(where: $w) { affected_rows } }', { w: { text: { _eq: 'ok' } } })).toEqual({ data: { delete_comment: { affected_rows: 1 } } });
    expect(await q('mutation { delete_comment(where: {}) { affected_rows } }')).toEqual({ data: { delete_comment: { affected_rows: 1 } } });
    expect(await rows('comment')).toEqual([]);
    expect(await rows('article')).toEqual(ARTICLES);
  });
});

describe('one transaction per request', () => {
  it('a failing root field takes back what the earlier ones did; the response has no data', async () => {
    const r = await q(`mutation {
      a: insert_author(objects: [{name: "T1", email: "t1@x"}]) { affected_rows }
      u: update_article(where: {}, _set: {title: "gone"}) { affected_rows }
      d: delete_comment(where: {}) { affected_rows }
      b: insert_author(objects: [{name: "T2", email: "alice@x"}]) { affected_rows }
    }`);
    expect(errorsOf(r)).toEqual({
      errors: [
        {
          message: 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"',
          extensions: { path: '$.selectionSet.insert_author.args.objects', code: 'constraint-violation' },
        },
      ],
    });
    await unchanged();
  });

  it('a failing update_<t>_many takes back its earlier updates', async () => {
    const r = await q('mutation { update_author_many(updates: [{where: {id: {_eq: 1}}, _set: {name: "Changed"}}, {where: {id: {_eq: 2}}, _set: {email: "alice@x"}}]) { affected_rows } }');
    expect(errorsOf(r)).toEqual({
      errors: [{ message: 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"', extensions: { path: '$', code: 'constraint-violation' } }],
    });
    await unchanged();
    // Updates sent behind the failing one (Note [Statements pipelined]) fail only because the
    // transaction had: the error is the failing update's.
    const middle = await q(`mutation { update_author_many(updates: [
        {where: {id: {_eq: 1}}, _set: {name: "Changed"}},
        {where: {id: {_eq: 2}}, _set: {email: "alice@x"}},
        {where: {id: {_eq: 1}}, _set: {name: "Again"}},
        {where: {id: {_eq: 2}}, _set: {name: "Too"}}
      ]) { affected_rows } }`);
    expect(errorsOf(middle)).toEqual({
      errors: [{ message: 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"', extensions: { path: '$', code: 'constraint-violation' } }],
    });
    await unchanged();
  });

  it('fields sent behind a failing one (Note [Fields pipelined]): the error is the failing field\'s, nothing is written', async () => {
    const r = await q(`mutation {
      a: update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Changed"}) { id }
      b: update_author_by_pk(pk_columns: {id: 2}, _set: {email: "alice@x"}) { id }
      c: update_author_by_pk(pk_columns: {id: 1}, _set: {name: null}) { id }
      d: insert_author_one(object: {name: "Late", email: "late@x"}) { id }
    }`);
    expect(errorsOf(r)).toEqual({
      errors: [{ message: 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"', extensions: { path: '$', code: 'constraint-violation' } }],
    });
    await unchanged();
  });

  it('the fields of a request run in order and see each other\'s writes', async () => {
    expect(
      await q(`mutation {
        a: insert_author_one(object: {name: "Seq", email: "seq@x"}) { id }
        b: update_author(where: {email: {_eq: "seq@x"}}, _inc: {rating: 1}) { returning { id rating } }
        c: delete_author(where: {email: {_eq: "seq@x"}}) { affected_rows }
      }`),
    ).toEqual({ data: { a: { id: 3 }, b: { returning: [{ id: 3, rating: 1 }] }, c: { affected_rows: 1 } } });
    await unchanged();
    // Many fields, each reading what the one before wrote.
    const bumps = Array.from({ length: 30 }, (_, i) => `f${i}: update_author_by_pk(pk_columns: {id: 1}, _inc: {rating: 1}) { rating }`).join(' ');
    const many = await q(`mutation { ${bumps} }`);
    const start = (await rows('author', 'id, rating'))[0].rating - 30;
    expect(many).toEqual({ data: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, { rating: start + i + 1 }])) });
  });

  it('a batch (a JSON array of requests) is independent requests', async () => {
    const r = await server.request('POST', '/v1/graphql', [
      { query: 'mutation { insert_author(objects: [{name: "K1", email: "k1@x"}]) { affected_rows } }' },
      { query: 'mutation { insert_author(objects: [{name: "K2", email: "k2@x"}, {name: "K3", email: "bob@x"}]) { affected_rows } }' },
      { query: 'mutation ($n: String!) { insert_author(objects: [{name: $n}]) { returning { id name } } }', variables: { n: 'K4' } },
    ]);
    expect(r.status).toBe(200);
    expect([r.body[0], errorsOf(r.body[1]), r.body[2]]).toEqual([
      { data: { insert_author: { affected_rows: 1 } } },
      { errors: [{ message: 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"', extensions: { path: '$.selectionSet.insert_author.args.objects', code: 'constraint-violation' } }] },
      { data: { insert_author: { returning: [{ id: 6, name: 'K4' }] } } },
    ]);
    expect(await rows('author', 'id, name, email')).toEqual([
      { id: 1, name: 'Alice', email: 'alice@x' },
      { id: 2, name: 'Bob', email: 'bob@x' },
      { id: 3, name: 'K1', email: 'k1@x' },
      { id: 6, name: 'K4', email: null },
    ]);
  });
});

describe('errors', () => {
  it('constraint violations, with Hasura\'s prefixes, at the insert\'s objects', async () => {
    const cases: [string, string, string][] = [
      ['mutation { insert_author(objects: [{name: "X", email: "bob@x"}]) { affected_rows } }', 'Uniqueness violation. duplicate key value violates unique constraint "author_email_key"', '$.selectionSet.insert_author.args.objects'],
      ['mutation { insert_author(objects: [{email: "z@x"}]) { affected_rows } }', 'Not-NULL violation. null value in column "name" of relation "author" violates not-null constraint', '$.selectionSet.insert_author.args.objects'],
      ['mutation { insert_author_one(object: {name: null}) { id } }', 'Not-NULL violation. null value in column "name" of relation "author" violates not-null constraint', '$.selectionSet.insert_author_one.args.object'],
      ['mutation { insert_article(objects: [{title: "x", author_id: 999}]) { affected_rows } }', 'Foreign key violation. insert or update on table "article" violates foreign key constraint "article_author_id_fkey"', '$.selectionSet.insert_article.args.objects'],
      ['mutation { insert_article(objects: [{id: 1, title: "dup"}]) { affected_rows } }', 'Uniqueness violation. duplicate key value violates unique constraint "article_pkey"', '$.selectionSet.insert_article.args.objects'],
      ['mutation { update_author(where: {id: {_eq: 2}}, _set: {name: null}) { affected_rows } }', 'Not-NULL violation. null value in column "name" of relation "author" violates not-null constraint', '$'],
      ['mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {author_id: 42}) { id } }', 'Foreign key violation. insert or update on table "article" violates foreign key constraint "article_author_id_fkey"', '$'],
      ['mutation { delete_author(where: {id: {_eq: 1}}) { affected_rows } }', 'Foreign key violation. update or delete on table "author" violates foreign key constraint "article_author_id_fkey" on table "article"', '$'],
    ];
    for (const [doc, message, path] of cases) {
      expect(errorsOf(await q(doc)), doc).toEqual({ errors: [{ message, extensions: { path, code: 'constraint-violation' } }] });
    }
    await unchanged();
  });

  it('bad values for a column\'s type are data exceptions', async () => {
    const cases: [string, string, string][] = [
      ['mutation { insert_author(objects: [{name: "x", born: "nope"}]) { affected_rows } }', 'invalid input syntax for type date: "nope"', '$.selectionSet.insert_author.args.objects'],
      ['mutation { update_author(where: {id: {_eq: 1}}, _set: {born: "2020-13-45"}) { affected_rows } }', 'date/time field value out of range: "2020-13-45"', '$'],
      ['mutation { update_author(where: {id: {_eq: 1}}, _inc: {rating: 2147483647}) { affected_rows } }', 'integer out of range', '$'],
      ['mutation { update_author(where: {id: {_eq: 2}}, _delete_elem: {info: 0}, _set: {name: "n"}) { affected_rows } update_x: update_author(where: {id: {_eq: 1}}, _delete_elem: {info: 0}) { affected_rows } }', 'cannot delete from object using integer index', '$'],
    ];
    for (const [doc, message, path] of cases) {
      expect(errorsOf(await q(doc)), doc).toEqual({ errors: [{ message, extensions: { path, code: 'data-exception' } }] });
    }
    await unchanged();
  });

  it('unknown fields and arguments are validation errors (where their messages are translated)', async () => {
    const cases: [string, string, string][] = [
      ['mutation { nope { affected_rows } }', "field 'nope' not found in type: 'mutation_root'", '$.selectionSet.nope'],
      ['mutation { insert_author(objects: [{name: "x"}]) { nope } }', "field 'nope' not found in type: 'author_mutation_response'", '$.selectionSet.insert_author.selectionSet.nope'],
      ['mutation { insert_author(objects: [{name: "x"}]) { returning { nope } } }', "field 'nope' not found in type: 'author'", '$.selectionSet.insert_author.selectionSet.returning.selectionSet.nope'],
      ['mutation { delete_author(wherex: {}) { affected_rows } }', "'delete_author' has no argument named 'wherex'", '$.selectionSet.delete_author'],
      ['mutation { insert_author { affected_rows } }', "missing required field 'objects'", '$.selectionSet.insert_author.args.objects'],
      ['mutation { insert_author(objects: [{name: "x"}]) }', "missing selection set for 'author_mutation_response'", '$.selectionSet.insert_author.selectionSet'],
    ];
    for (const [doc, message, path] of cases) {
      expect(await q(doc), doc).toEqual({ errors: [{ message, extensions: { path, code: 'validation-failed' } }] });
    }
    await unchanged();
  });

  it('unknown input fields are validation errors at their path (code and path)', async () => {
    const cases: [string, string][] = [
      ['mutation { insert_author(objects: [{name: "x", nope: 1}]) { affected_rows } }', '$.selectionSet.insert_author.args.objects[0].nope'],
      ['mutation { update_author(where: {nope: {_eq: 1}}, _set: {name: "x"}) { affected_rows } }', '$.selectionSet.update_author.args.where.nope'],
      ['mutation { update_author(where: {}, _set: {nope: 1}) { affected_rows } }', '$.selectionSet.update_author.args._set.nope'],
      ['mutation { update_author(where: {}, _inc: {name: 1}) { affected_rows } }', '$.selectionSet.update_author.args._inc.name'],
    ];
    for (const [doc, path] of cases) {
      const r = await q(doc);
      expect(r.errors?.length, doc).toBe(1);
      expect(r.errors[0].extensions, doc).toEqual({ path, code: 'validation-failed' });
      expect(r.data, doc).toBeUndefined();
    }
    await unchanged();
  });

  it('unknown input fields are worded as Hasura words them', async () => {
    expect(await q('mutation { insert_author(objects: [{name: "x", nope: 1}]) { affected_rows } }')).toEqual({
      errors: [{ message: "field 'nope' not found in type: 'author_insert_input'", extensions: { path: '$.selectionSet.insert_author.args.objects[0].nope', code: 'validation-failed' } }],
    });
  });
});
