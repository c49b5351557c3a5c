/**
 * Note [Statements per variable shape] (./shapes.ts): a mutation whose variables hold its rows is
 * compiled once per shape of them and the statement reused with each request's values. Every
 * test sends the same document several times, with the same shape and other values, or with
 * values that steer the statement (enum values, nulls, Booleans), and reads the tables back as
 * admin: a statement that kept an earlier request's values, or served a shape it was not
 * compiled for, shows here.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rowsById, useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null, email text unique, tags text[], info jsonb, rating int not null default 0, active boolean);
create table article (id serial primary key, title text not null, author_id int not null references author(id), likes int not null default 0);
`;
const RESET = `
delete from article; delete from author;
select setval('author_id_seq', 1, false), setval('article_id_seq', 1, false);
insert into author (name, email) values ('Alice', 'alice@x');
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);

/** `columns` of `from`'s rows in id order, as admin. */
const rows = (from: string, columns?: string) => rowsById(server, from, columns);

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      {
        type: 'pg_create_insert_permission',
        args: { table: 'article', role: 'user', permission: { columns: ['title', 'likes'], set: { author_id: 'X-Svc-User-Id' }, check: { likes: { _lt: 100 } } } },
      },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'likes', 'author_id'], filter: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});
beforeEach(async () => {
  await server.runSql(RESET);
});

const NESTED = `mutation ($name: String!, $articles: [article_insert_input!]!) {
  insert_author_one(object: {name: $name, articles: {data: $articles}}) { id name articles(order_by: {id: asc}) { id title likes } }
}`;

describe('a mutation compiled once per shape of its variables', () => {
  it('the same shape with other values: each request writes and answers its own values', async () => {
    const first = await q(NESTED, { name: 'Carol', articles: [{ title: 'c1', likes: 1 }, { title: 'c2', likes: 2 }] });
    expect(first).toEqual({ data: { insert_author_one: { id: 2, name: 'Carol', articles: [{ id: 1, title: 'c1', likes: 1 }, { id: 2, title: 'c2', likes: 2 }] } } });
    const second = await q(NESTED, { name: 'Dan', articles: [{ title: 'd1', likes: 10 }, { title: 'd2', likes: 20 }] });
    expect(second).toEqual({ data: { insert_author_one: { id: 3, name: 'Dan', articles: [{ id: 3, title: 'd1', likes: 10 }, { id: 4, title: 'd2', likes: 20 }] } } });
    // A number where the first request had a string's place is another shape, not a stale value.
    expect(await rows('article', 'id, title, author_id, likes')).toEqual([
      { id: 1, title: 'c1', author_id: 2, likes: 1 },
      { id: 2, title: 'c2', author_id: 2, likes: 2 },
      { id: 3, title: 'd1', author_id: 3, likes: 10 },
      { id: 4, title: 'd2', author_id: 3, likes: 20 },
    ]);
  });

  it('other row counts, other keys and keys in another order are other shapes', async () => {
    await q(NESTED, { name: 'A', articles: [{ title: 'a1' }] });
    await q(NESTED, { name: 'B', articles: [{ title: 'b1' }, { title: 'b2' }, { title: 'b3' }] });
    await q(NESTED, { name: 'C', articles: [{ likes: 5, title: 'c1' }] });
    await q(NESTED, { name: 'D', articles: [] });
    await q(NESTED, { name: 'E', articles: [{ title: 'e1' }] });
    expect(await rows('author', 'id, name')).toEqual(['Alice', 'A', 'B', 'C', 'D', 'E'].map((name, i) => ({ id: i + 1, name })));
    expect(await rows('article', 'title, author_id, likes')).toEqual([
      { title: 'a1', author_id: 2, likes: 0 },
      { title: 'b1', author_id: 3, likes: 0 },
      { title: 'b2', author_id: 3, likes: 0 },
      { title: 'b3', author_id: 3, likes: 0 },
      { title: 'c1', author_id: 4, likes: 5 },
      { title: 'e1', author_id: 6, likes: 0 },
    ]);
  });

  it('enum values steer the statement: an upsert updating one column, then another', async () => {
    const upsert = `mutation ($objects: [author_insert_input!]!, $conflict: author_on_conflict) {
      insert_author(objects: $objects, on_conflict: $conflict) { affected_rows returning { id name rating } }
    }`;
    const a = await q(upsert, { objects: [{ email: 'alice@x', name: 'Alicia', rating: 7 }], conflict: { constraint: 'author_email_key', update_columns: ['name'] } });
    expect(a).toEqual({ data: { insert_author: { affected_rows: 1, returning: [{ id: 1, name: 'Alicia', rating: 0 }] } } });
    const b = await q(upsert, { objects: [{ email: 'alice@x', name: 'Ally', rating: 9 }], conflict: { constraint: 'author_email_key', update_columns: ['rating'] } });
    expect(b).toEqual({ data: { insert_author: { affected_rows: 1, returning: [{ id: 1, name: 'Alicia', rating: 9 }] } } });
    // No update columns: do nothing.
    const c = await q(upsert, { objects: [{ email: 'alice@x', name: 'X', rating: 1 }], conflict: { constraint: 'author_email_key', update_columns: [] } });
    expect(c).toEqual({ data: { insert_author: { affected_rows: 0, returning: [] } } });
    expect(await rows('author', 'id, name, email, rating')).toEqual([{ id: 1, name: 'Alicia', email: 'alice@x', rating: 9 }]);
  });

  it('nulls and Booleans steer it too; arrays and JSON values are written as sent', async () => {
    const insert = `mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { returning { id name email tags info active } } }`;
    const sent = [
      { name: 'N1', email: null, tags: ['a', 'b'], info: { k: 1 }, active: true },
      { name: 'N2', email: 'n2@x', tags: ['c'], info: [1, 'two'], active: false },
      { name: 'N3', email: null, tags: ['d', 'e'], info: { k: 3 }, active: null },
      { name: 'N4', email: 'n4@x', tags: ['f'], info: { k: 4 }, active: true },
    ];
    for (const o of sent) {
      const r = await q(insert, { objects: [o] });
      expect(r.data.insert_author.returning).toEqual([{ id: expect.any(Number), ...o }]);
    }
    expect(await rows('author where id > 1', 'name, email, tags, info, active')).toEqual(sent);
    // Without the array column (whose value holds the leaves, so its shapes are compiled per
    // request), the Boolean and the JSON value are all that differs between some of these.
    const plain = `mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { returning { name info active } } }`;
    const more = [
      { name: 'P1', info: { k: 1 }, active: true },
      { name: 'P2', info: { k: 2 }, active: false },
      { name: 'P3', info: { k: 2 }, active: true },
      { name: 'P4', info: [2], active: false },
      { name: 'P5', info: { k: 1 }, active: false },
    ];
    for (const o of more) expect((await q(plain, { objects: [o] })).data.insert_author.returning).toEqual([o]);
    expect(await rows("author where name like 'P%'", 'name, info, active')).toEqual(more);
    const set = `mutation ($id: Int!, $set: author_set_input!) { update_author_by_pk(pk_columns: {id: $id}, _set: $set) { id name email } }`;
    expect(await q(set, { id: 1, set: { email: null, name: 'A1' } })).toEqual({ data: { update_author_by_pk: { id: 1, name: 'A1', email: null } } });
    expect(await q(set, { id: 1, set: { email: 'a2@x', name: 'A2' } })).toEqual({ data: { update_author_by_pk: { id: 1, name: 'A2', email: 'a2@x' } } });
    expect(await rows('author where id = 1', 'name, email')).toEqual([{ name: 'A2', email: 'a2@x' }]);
  });

  it('update_many with the updates in a variable: each update its own where and values', async () => {
    await server.runSql(`insert into author (name, rating) values ('B', 1), ('C', 2);`);
    const many = `mutation ($updates: [author_updates!]!) { update_author_many(updates: $updates) { affected_rows } }`;
    const r1 = await q(many, { updates: [{ where: { name: { _eq: 'B' } }, _inc: { rating: 10 } }, { where: { id: { _eq: 3 } }, _set: { name: 'C1' } }] });
    expect(r1).toEqual({ data: { update_author_many: [{ affected_rows: 1 }, { affected_rows: 1 }] } });
    const r2 = await q(many, { updates: [{ where: { name: { _eq: 'Alice' } }, _inc: { rating: 5 } }, { where: { id: { _eq: 2 } }, _set: { name: 'B1' } }] });
    expect(r2).toEqual({ data: { update_author_many: [{ affected_rows: 1 }, { affected_rows: 1 }] } });
    expect(await rows('author', 'id, name, rating')).toEqual([
      { id: 1, name: 'Alice', rating: 5 },
      { id: 2, name: 'B1', rating: 11 },
      { id: 3, name: 'C1', rating: 2 },
    ]);
  });

  it('a role: presets from each request\'s session, the check on each request\'s values', async () => {
    await server.runSql(`insert into author (name) values ('Bob');`);
    const insert = `mutation ($objects: [article_insert_input!]!) { insert_article(objects: $objects) { returning { title likes author_id } } }`;
    const as = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
    expect(await q(insert, { objects: [{ title: 'u1', likes: 1 }] }, as('1'))).toEqual({ data: { insert_article: { returning: [{ title: 'u1', likes: 1, author_id: 1 }] } } });
    expect(await q(insert, { objects: [{ title: 'u2', likes: 2 }] }, as('2'))).toEqual({ data: { insert_article: { returning: [{ title: 'u2', likes: 2, author_id: 2 }] } } });
    const refused = await q(insert, { objects: [{ title: 'u3', likes: 500 }] }, as('1'));
    expect(refused.errors[0].extensions.code).toBe('permission-error');
    expect(await q(insert, { objects: [{ title: 'u4', likes: 4 }] }, as('1'))).toEqual({ data: { insert_article: { returning: [{ title: 'u4', likes: 4, author_id: 1 }] } } });
    expect(await rows('article', 'title, author_id, likes')).toEqual([
      { title: 'u1', author_id: 1, likes: 1 },
      { title: 'u2', author_id: 2, likes: 2 },
      { title: 'u4', author_id: 1, likes: 4 },
    ]);
  });

  it('a batch too large to keep its statement (thousands of rows) is compiled per request, with its own values', async () => {
    const insert = `mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { affected_rows } }`;
    for (const prefix of ['x', 'y']) {
      const objects = Array.from({ length: 1500 }, (_, i) => ({ name: `${prefix}${i}`, rating: i }));
      expect(await q(insert, { objects })).toEqual({ data: { insert_author: { affected_rows: 1500 } } });
    }
    const r = await server.runSql(`select count(*) filter (where name = 'x' || rating), count(*) filter (where name = 'y' || rating) from author`);
    expect(r.result[1]).toEqual(['1500', '1500']);
  });

  it('a request that fails in the database does not spoil its shape for the next', async () => {
    const dup = await q(NESTED, { name: 'F', articles: [{ title: 'f1', likes: 1 }, { title: 'f2', likes: 2 }] });
    expect(dup.data).toBeDefined();
    const bad = await q(`mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { affected_rows } }`, { objects: [{ name: 'G', email: 'alice@x' }] });
    expect(bad.errors[0].extensions.code).toBe('constraint-violation');
    const good = await q(`mutation ($objects: [author_insert_input!]!) { insert_author(objects: $objects) { affected_rows } }`, { objects: [{ name: 'H', email: 'h@x' }] });
    expect(good).toEqual({ data: { insert_author: { affected_rows: 1 } } });
    expect(await rows('author', 'name, email')).toEqual([
      { name: 'Alice', email: 'alice@x' },
      { name: 'F', email: null },
      { name: 'H', email: 'h@x' },
    ]);
  });
});
