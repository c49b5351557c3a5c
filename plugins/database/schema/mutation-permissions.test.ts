/**
 * Golden tests of GraphQL mutations under permissions: a non-admin role's insert (check, set,
 * columns), update (filter, check, set, columns), delete (filter) and select (filter, columns)
 * permissions, tried through every path that writes (plain and nested inserts, upserts, update,
 * update_by_pk, update_many, delete, delete_by_pk) and every path that reads back (`returning`,
 * `_one`, `_by_pk`). Each refused write must leave the data as it was: after every request the
 * tables are read back as admin through run_sql.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table users (id int primary key, name text not null);
create table article (id serial primary key, slug text not null unique, title text not null, body text, author_id int not null references users(id),
  published boolean not null default false, likes int not null default 0, secret text, edited_by int);
create table comment (id serial primary key, article_id int not null references article(id), author_id int not null references users(id), text text not null);
create table message (id serial primary key, sender_id int not null, recipient_id int not null, text text not null);
`;

const RESET = `
delete from comment; delete from article; delete from message; delete from users;
select setval('article_id_seq', 1, false), setval('comment_id_seq', 1, false), setval('message_id_seq', 1, false);
insert into users values (1, 'U1'), (2, 'U2');
insert into article (slug, title, body, author_id, published, likes, secret) values
  ('mine', 'Mine', 'b1', 1, false, 0, 's1'), ('mine-pub', 'Mine published', 'b2', 1, true, 5, 's2'),
  ('theirs', 'Theirs', 'b3', 2, true, 7, 's3'), ('theirs-draft', 'Theirs draft', 'b4', 2, false, 0, 's4');
insert into comment (article_id, author_id, text) values (3, 2, 'c');
insert into message (sender_id, recipient_id, text) values (2, 1, 'hi'), (1, 2, 'yo');
`;

const ME = 'X-Svc-User-Id';
const PERMISSIONS = [
  { type: 'pg_track_table', args: { table: 'users' } },
  { type: 'pg_track_table', args: { table: 'article' } },
  { type: 'pg_track_table', args: { table: 'comment' } },
  { type: 'pg_track_table', args: { table: 'message' } },
  { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
  { type: 'pg_create_array_relationship', args: { table: 'users', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
  { type: 'pg_create_object_relationship', args: { table: 'comment', name: 'article', using: { foreign_key_constraint_on: 'article_id' } } },
  { type: 'pg_create_array_relationship', args: { table: 'article', name: 'comments', using: { foreign_key_constraint_on: { table: 'comment', column: 'article_id' } } } },
  // user: reads everyone's names; writes nothing of users.
  { type: 'pg_create_select_permission', args: { table: 'users', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
  // user: reads its own articles and the published ones, never `secret`.
  {
    type: 'pg_create_select_permission',
    args: { table: 'article', role: 'user', permission: { columns: ['id', 'slug', 'title', 'body', 'author_id', 'published', 'likes', 'edited_by'], filter: { _or: [{ author_id: { _eq: ME } }, { published: { _eq: true } }] } } },
  },
  // user: inserts articles of its own, `likes` preset to 0 (not in the input).
  {
    type: 'pg_create_insert_permission',
    args: { table: 'article', role: 'user', permission: { check: { author_id: { _eq: ME } }, set: { likes: 0 }, columns: ['slug', 'title', 'body', 'author_id', 'published', 'secret'] } },
  },
  // user: updates its own articles, which must stay its own with at most 100 likes; `edited_by` preset.
  {
    type: 'pg_create_update_permission',
    args: {
      table: 'article',
      role: 'user',
      permission: { columns: ['title', 'body', 'author_id', 'published', 'likes'], filter: { author_id: { _eq: ME } }, check: { _and: [{ author_id: { _eq: ME } }, { likes: { _lte: 100 } }] }, set: { edited_by: ME } },
    },
  },
  // user: deletes its own drafts.
  { type: 'pg_create_delete_permission', args: { table: 'article', role: 'user', permission: { filter: { _and: [{ author_id: { _eq: ME } }, { published: { _eq: false } }] } } } },
  { type: 'pg_create_select_permission', args: { table: 'comment', role: 'user', permission: { columns: ['id', 'article_id', 'author_id', 'text'], filter: {} } } },
  // user: comments, as itself, on published articles and its own, without spam; no update, no delete.
  {
    type: 'pg_create_insert_permission',
    args: {
      table: 'comment',
      role: 'user',
      permission: { check: { _and: [{ article: { _or: [{ published: { _eq: true } }, { author_id: { _eq: ME } }] } }, { text: { _nilike: '%spam%' } }] }, set: { author_id: ME }, columns: ['article_id', 'text'] },
    },
  },
  // user: sends messages as itself to anyone, reads those sent to it, edits and deletes those it sent.
  { type: 'pg_create_insert_permission', args: { table: 'message', role: 'user', permission: { check: {}, set: { sender_id: ME }, columns: ['recipient_id', 'text'] } } },
  { type: 'pg_create_select_permission', args: { table: 'message', role: 'user', permission: { columns: ['id', 'sender_id', 'recipient_id', 'text'], filter: { recipient_id: { _eq: ME } } } } },
  { type: 'pg_create_update_permission', args: { table: 'message', role: 'user', permission: { columns: ['text'], filter: { sender_id: { _eq: ME } }, check: {} } } },
  { type: 'pg_create_delete_permission', args: { table: 'message', role: 'user', permission: { filter: { sender_id: { _eq: ME } } } } },
  // editor: inserts users with their articles (Note [Parents joined]), upserts users.
  { type: 'pg_create_insert_permission', args: { table: 'users', role: 'editor', permission: { check: {}, columns: ['id', 'name'] } } },
  { type: 'pg_create_update_permission', args: { table: 'users', role: 'editor', permission: { columns: ['name'], filter: {}, check: {} } } },
  { type: 'pg_create_insert_permission', args: { table: 'article', role: 'editor', permission: { check: { title: { _nilike: '%bad%' } }, columns: ['slug', 'title', 'body', 'published'] } } },
  // reader: reads articles, writes nothing.
  { type: 'pg_create_select_permission', args: { table: 'article', role: 'reader', permission: { columns: ['id', 'title'], filter: {} } } },
  // logger: inserts messages, reads nothing.
  { type: 'pg_create_insert_permission', args: { table: 'message', role: 'logger', permission: { check: {}, columns: ['sender_id', 'recipient_id', 'text'] } } },
];

const server = useServer(SEED);
const as = (role: string, id?: string): Record<string, string> => ({ 'x-svc-role': role, ...(id !== undefined ? { 'x-svc-user-id': id } : {}) });
const user = (id: string) => as('user', id);
const q = (query: string, headers: Record<string, string>, variables?: Record<string, unknown>) => server.gql(query, variables, headers);

/** The rows of a table as admin through run_sql, in id order. */
async function rows(from: string, columns = '*'): Promise<any[]> {
  const r = await server.runSql(`select coalesce(json_agg(t order by t.id), '[]')::text from (select ${columns} from ${from}) as t`);
  return JSON.parse(r.result[1][0]);
}

const ARTICLES = [
  { id: 1, slug: 'mine', title: 'Mine', body: 'b1', author_id: 1, published: false, likes: 0, secret: 's1', edited_by: null },
  { id: 2, slug: 'mine-pub', title: 'Mine published', body: 'b2', author_id: 1, published: true, likes: 5, secret: 's2', edited_by: null },
  { id: 3, slug: 'theirs', title: 'Theirs', body: 'b3', author_id: 2, published: true, likes: 7, secret: 's3', edited_by: null },
  { id: 4, slug: 'theirs-draft', title: 'Theirs draft', body: 'b4', author_id: 2, published: false, likes: 0, secret: 's4', edited_by: null },
];
const COMMENTS = [{ id: 1, article_id: 3, author_id: 2, text: 'c' }];
const MESSAGES = [
  { id: 1, sender_id: 2, recipient_id: 1, text: 'hi' },
  { id: 2, sender_id: 1, recipient_id: 2, text: 'yo' },
];

/** Nothing was written. */
async function unchanged() {
  expect(await rows('users')).toEqual([{ id: 1, name: 'U1' }, { id: 2, name: 'U2' }]);
  expect(await rows('article')).toEqual(ARTICLES);
  expect(await rows('comment')).toEqual(COMMENTS);
  expect(await rows('message')).toEqual(MESSAGES);
}

const error = (message: string, path: string, code: string) => ({ errors: [{ message, extensions: { path, code } }] });
const CHECK_FAILED = 'check constraint of an insert/update permission has failed';
const insertCheckFailed = (field: string, arg = 'objects') => error(CHECK_FAILED, `$.selectionSet.${field}.args.${arg}`, 'permission-error');
const updateCheckFailed = error(CHECK_FAILED, '$', 'permission-error');
const notFound = (field: string) => error(`field '${field}' not found in type: 'mutation_root'`, `$.selectionSet.${field}`, 'validation-failed');
const missingUserId = error('missing session variable: "x-svc-user-id"', '$', 'not-found');

/** A response's errors without `extensions.internal` (see the `.fails` test at the end). */
function withoutInternal(body: any): any {
  expect(Object.keys(body)).toEqual(['errors']);
  return { errors: body.errors.map((e: any) => ({ ...e, extensions: Object.fromEntries(Object.entries(e.extensions).filter(([k]) => k !== 'internal')) })) };
}

/** A request refused by validation because an input field is not in the role's input type: the
 * code and the path (the wording is core's: see the `.fails` test at the end). */
function expectNoSuchInputField(r: any, path: string) {
  expect(Object.keys(r)).toEqual(['errors']);
  expect(r.errors).toHaveLength(1);
  expect(r.errors[0].extensions).toEqual({ path, code: 'validation-failed' });
}

beforeAll(async () => {
  const r = await server.metadata({ type: 'bulk', args: PERMISSIONS });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.runSql(RESET);
});

describe('which fields a role sees', () => {
  it('no permission, no field; no mutation at all, no mutation root', async () => {
    for (const f of ['insert_users', 'insert_users_one', 'update_users', 'delete_users', 'update_comment', 'update_comment_by_pk', 'update_comment_many', 'delete_comment', 'delete_comment_by_pk']) {
      expect(await q(`mutation { ${f} { __typename } }`, user('1')), f).toEqual(notFound(f));
    }
    expect(await q('mutation { insert_article(objects: [{title: "x"}]) { affected_rows } }', as('reader'))).toEqual(error('no mutations exist', '$', 'validation-failed'));
    expect(await q('mutation { insert_article(objects: [{title: "x"}]) { affected_rows } }', as('nobody'))).toEqual(error('no mutations exist', '$', 'validation-failed'));
    await unchanged();
  });

  it('without a select permission: no returning, no _one, no _by_pk', async () => {
    expect(await q('mutation { insert_message_one(object: {sender_id: 1, recipient_id: 1, text: "x"}) { id } }', as('logger'))).toEqual(notFound('insert_message_one'));
    expect(await q('mutation { insert_message(objects: [{sender_id: 1, recipient_id: 1, text: "x"}]) { affected_rows returning { id } } }', as('logger'))).toEqual(
      error("field 'returning' not found in type: 'message_mutation_response'", '$.selectionSet.insert_message.selectionSet.returning', 'validation-failed'),
    );
    await unchanged();
    expect(await q('mutation { insert_message(objects: [{sender_id: 2, recipient_id: 1, text: "logged"}]) { affected_rows __typename } }', as('logger'))).toEqual({
      data: { insert_message: { affected_rows: 1, __typename: 'message_mutation_response' } },
    });
    expect(await rows('message')).toEqual([...MESSAGES, { id: 3, sender_id: 2, recipient_id: 1, text: 'logged' }]);
  });

  it('the input types hold the permitted columns only: no preset column, no relationship to a table the role may not insert into', async () => {
    const fields = async (type: string) => (await q(`{ __type(name: "${type}") { inputFields { name } } }`, user('1'))).data.__type?.inputFields.map((f: { name: string }) => f.name);
    expect(await fields('article_insert_input')).toEqual(['author_id', 'body', 'comments', 'published', 'secret', 'slug', 'title']);
    expect(await fields('comment_insert_input')).toEqual(['article', 'article_id', 'text']);
    expect(await fields('message_insert_input')).toEqual(['recipient_id', 'text']);
    expect(await fields('article_set_input')).toEqual(['author_id', 'body', 'likes', 'published', 'title']);
    expect(await fields('article_inc_input')).toEqual(['author_id', 'likes']);
    expect(await fields('users_insert_input')).toBeUndefined();
    const r = await q('{ __type(name: "article_update_column") { enumValues { name } } }', user('1'));
    expect(r.data.__type.enumValues.map((v: { name: string }) => v.name).sort()).toEqual(['author_id', 'body', 'likes', 'published', 'title']);
  });

  it('returning, _one and _by_pk give only the columns the role may select', async () => {
    const cases: [string, string, string][] = [
      ['mutation { insert_article(objects: [{slug: "s", title: "t", author_id: 1}]) { returning { id secret } } }', "field 'secret' not found in type: 'article'", '$.selectionSet.insert_article.selectionSet.returning.selectionSet.secret'],
      ['mutation { insert_article_one(object: {slug: "s", title: "t", author_id: 1}) { secret } }', "field 'secret' not found in type: 'article'", '$.selectionSet.insert_article_one.selectionSet.secret'],
      ['mutation { update_article(where: {}, _set: {title: "t"}) { returning { secret } } }', "field 'secret' not found in type: 'article'", '$.selectionSet.update_article.selectionSet.returning.selectionSet.secret'],
      ['mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {title: "t"}) { secret } }', "field 'secret' not found in type: 'article'", '$.selectionSet.update_article_by_pk.selectionSet.secret'],
      ['mutation { update_article_many(updates: [{where: {}, _set: {title: "t"}}]) { returning { secret } } }', "field 'secret' not found in type: 'article'", '$.selectionSet.update_article_many.selectionSet.returning.selectionSet.secret'],
      ['mutation { delete_article(where: {}) { returning { secret } } }', "field 'secret' not found in type: 'article'", '$.selectionSet.delete_article.selectionSet.returning.selectionSet.secret'],
      ['mutation { delete_article_by_pk(id: 1) { secret } }', "field 'secret' not found in type: 'article'", '$.selectionSet.delete_article_by_pk.selectionSet.secret'],
      ['mutation { insert_comment(objects: [{article_id: 3, text: "t"}]) { returning { article { secret } } } }', "field 'secret' not found in type: 'article'", '$.selectionSet.insert_comment.selectionSet.returning.selectionSet.article.selectionSet.secret'],
    ];
    for (const [doc, message, path] of cases) {
      expect(await q(doc, user('1')), doc).toEqual(error(message, path, 'validation-failed'));
    }
    await unchanged();
  });
});

describe('insert', () => {
  it('a row that passes the check is inserted, with the preset; returning reads it', async () => {
    expect(await q('mutation { insert_article(objects: [{slug: "new", title: "New", author_id: 1, secret: "x"}]) { affected_rows returning { id slug author_id likes published edited_by } } }', user('1'))).toEqual({
      data: { insert_article: { affected_rows: 1, returning: [{ id: 5, slug: 'new', author_id: 1, likes: 0, published: false, edited_by: null }] } },
    });
    expect(await q('mutation { insert_article_one(object: {slug: "new2", title: "New 2", author_id: 2}) { id } }', user('2'))).toEqual({ data: { insert_article_one: { id: 6 } } });
    expect(await rows('article')).toEqual([
      ...ARTICLES,
      { id: 5, slug: 'new', title: 'New', body: null, author_id: 1, published: false, likes: 0, secret: 'x', edited_by: null },
      { id: 6, slug: 'new2', title: 'New 2', body: null, author_id: 2, published: false, likes: 0, secret: null, edited_by: null },
    ]);
  });

  it('a row outside the check is refused, and so is its whole request', async () => {
    expect(await q('mutation { insert_article(objects: [{slug: "x", title: "X", author_id: 2}]) { affected_rows } }', user('1'))).toEqual(insertCheckFailed('insert_article'));
    expect(await q('mutation { insert_article_one(object: {slug: "x", title: "X", author_id: 2}) { id } }', user('1'))).toEqual(insertCheckFailed('insert_article_one', 'object'));
    expect(await q('mutation { insert_article(objects: [{slug: "ok", title: "Ok", author_id: 1}, {slug: "x", title: "X", author_id: 2}]) { affected_rows } }', user('1'))).toEqual(
      insertCheckFailed('insert_article'),
    );
    expect(
      await q('mutation { a: insert_message(objects: [{recipient_id: 2, text: "before"}]) { affected_rows } b: insert_article(objects: [{slug: "x", title: "X", author_id: 2}]) { affected_rows } }', user('1')),
    ).toEqual(insertCheckFailed('insert_article'));
    // Through variables as through literals.
    expect(await q('mutation ($o: [article_insert_input!]!) { insert_article(objects: $o) { affected_rows } }', user('1'), { o: [{ slug: 'x', title: 'X', author_id: 2 }] })).toEqual(insertCheckFailed('insert_article'));
    await unchanged();
  });

  it('columns outside the permission (and preset ones) are not in the input', async () => {
    for (const [obj, field] of [
      ['{slug: "x", title: "X", author_id: 1, likes: 50}', 'likes'],
      ['{slug: "x", title: "X", author_id: 1, id: 99}', 'id'],
      ['{slug: "x", title: "X", author_id: 1, edited_by: 2}', 'edited_by'],
    ]) {
      expectNoSuchInputField(await q(`mutation { insert_article(objects: [${obj}]) { affected_rows } }`, user('1')), `$.selectionSet.insert_article.args.objects[0].${field}`);
    }
    expectNoSuchInputField(await q('mutation { insert_message(objects: [{recipient_id: 2, text: "x", sender_id: 2}]) { affected_rows } }', user('1')), '$.selectionSet.insert_message.args.objects[0].sender_id');
    expectNoSuchInputField(
      await q('mutation ($o: [message_insert_input!]!) { insert_message(objects: $o) { affected_rows } }', user('1'), { o: [{ recipient_id: 2, text: 'x', sender_id: 2 }] }),
      '$',
    );
    await unchanged();
  });

  it('presets from session variables are applied; a missing session variable is an error', async () => {
    expect(await q('mutation { insert_message(objects: [{recipient_id: 1, text: "note to self"}, {recipient_id: 2, text: "to 2"}]) { affected_rows returning { id sender_id recipient_id text } } }', user('1'))).toEqual({
      // affected_rows counts both rows; returning gives the one the role may read (sent to it).
      data: { insert_message: { affected_rows: 2, returning: [{ id: 3, sender_id: 1, recipient_id: 1, text: 'note to self' }] } },
    });
    expect(await q('mutation { insert_message_one(object: {recipient_id: 2, text: "unseen"}) { id } }', user('1'))).toEqual({ data: { insert_message_one: null } });
    expect(await rows('message')).toEqual([
      ...MESSAGES,
      { id: 3, sender_id: 1, recipient_id: 1, text: 'note to self' },
      { id: 4, sender_id: 1, recipient_id: 2, text: 'to 2' },
      { id: 5, sender_id: 1, recipient_id: 2, text: 'unseen' },
    ]);
    await server.runSql(RESET);
    expect(await q('mutation { insert_message(objects: [{recipient_id: 1, text: "x"}]) { affected_rows } }', as('user'))).toEqual(missingUserId);
    expect(await q('mutation { insert_article(objects: [{slug: "x", title: "X", author_id: 1}]) { affected_rows } }', as('user'))).toEqual(missingUserId);
    await unchanged();
  });

  it('a session variable is a value, never SQL', async () => {
    const r = await q('mutation { insert_message(objects: [{recipient_id: 1, text: "x"}]) { affected_rows } }', user('1 or 1=1'));
    expect(withoutInternal(r)).toEqual(error('invalid input syntax for type integer: "1 or 1=1"', '$.selectionSet.insert_message.args.objects', 'data-exception'));
    await unchanged();
  });

  it('constraint violations', async () => {
    expect(withoutInternal(await q('mutation { insert_article(objects: [{slug: "mine", title: "Dup", author_id: 1}]) { affected_rows } }', user('1')))).toEqual(
      error('Uniqueness violation. duplicate key value violates unique constraint "article_slug_key"', '$.selectionSet.insert_article.args.objects', 'constraint-violation'),
    );
    await unchanged();
  });
});

describe('nested insert', () => {
  it('the nested table\'s preset and check apply; its check reads the parent inserted by the same statement', async () => {
    expect(
      await q('mutation { insert_article(objects: [{slug: "n", title: "N", author_id: 1, comments: {data: [{text: "first"}, {text: "second"}]}}]) { affected_rows returning { id comments { id author_id text } } } }', user('1')),
    ).toEqual({ data: { insert_article: { affected_rows: 3, returning: [{ id: 5, comments: [{ id: 2, author_id: 1, text: 'first' }, { id: 3, author_id: 1, text: 'second' }] }] } } });
    expect(await rows('article', 'id, slug, author_id, likes')).toEqual([
      ...ARTICLES.map((a) => ({ id: a.id, slug: a.slug, author_id: a.author_id, likes: a.likes })),
      { id: 5, slug: 'n', author_id: 1, likes: 0 },
    ]);
    expect(await rows('comment')).toEqual([...COMMENTS, { id: 2, article_id: 5, author_id: 1, text: 'first' }, { id: 3, article_id: 5, author_id: 1, text: 'second' }]);
  });

  it('a nested row failing its own table\'s check fails the request, the parent included', async () => {
    expect(await q('mutation { insert_article(objects: [{slug: "n", title: "N", author_id: 1, comments: {data: [{text: "fine"}, {text: "buy SPAM"}]}}]) { affected_rows } }', user('1'))).toEqual(
      insertCheckFailed('insert_article'),
    );
    // A nested parent (object relationship) outside its table's check.
    expect(await q('mutation { insert_comment(objects: [{text: "hello", article: {data: {slug: "n", title: "N", author_id: 2}}}]) { affected_rows } }', user('1'))).toEqual(insertCheckFailed('insert_comment'));
    expect(await q('mutation { insert_comment_one(object: {text: "hello", article: {data: {slug: "n", title: "N", author_id: 2}}}) { id } }', user('1'))).toEqual(insertCheckFailed('insert_comment_one', 'object'));
    // A comment on someone else's draft, plainly and under a nested parent of the role's own.
    expect(await q('mutation { insert_comment(objects: [{article_id: 4, text: "hello"}]) { affected_rows } }', user('1'))).toEqual(insertCheckFailed('insert_comment'));
    await unchanged();
  });

  it('a nested row cannot give the columns its parent determines, nor go through a table the role may not insert into', async () => {
    expectNoSuchInputField(
      await q('mutation { insert_article(objects: [{slug: "n", title: "N", author_id: 1, comments: {data: [{text: "t", author_id: 2}]}}]) { affected_rows } }', user('1')),
      '$.selectionSet.insert_article.args.objects[0].comments.data[0].author_id',
    );
    expect(await q('mutation { insert_article(objects: [{slug: "n", title: "N", author_id: 1, comments: {data: [{text: "t", article_id: 4}]}}]) { affected_rows } }', user('1'))).toEqual(
      error('cannot insert "article_id" columns as their values are already being determined by parent insert', '$.selectionSet.insert_article.args.objects[0].comments.data[0]', 'validation-failed'),
    );
    expect(await q('mutation { insert_comment(objects: [{text: "t", article_id: 4, article: {data: {slug: "n", title: "N", author_id: 1}}}]) { affected_rows } }', user('1'))).toEqual(
      error('cannot insert object relationship "article" as "article_id" column values are already determined', '$.selectionSet.insert_comment.args.objects[0].article', 'validation-failed'),
    );
    expectNoSuchInputField(
      await q('mutation { insert_article(objects: [{slug: "n", title: "N", author: {data: {id: 3, name: "U3"}}}]) { affected_rows } }', user('1')),
      '$.selectionSet.insert_article.args.objects[0].author',
    );
    await unchanged();
  });
});

describe('upsert (on_conflict)', () => {
  it('updates only rows the role\'s update filter allows: another\'s row is neither updated nor inserted', async () => {
    expect(
      await q('mutation { insert_article(objects: [{slug: "theirs", title: "Hijacked", author_id: 1}], on_conflict: {constraint: article_slug_key, update_columns: [title, published]}) { affected_rows returning { id title } } }', user('1')),
    ).toEqual({ data: { insert_article: { affected_rows: 0, returning: [] } } });
    expect(
      await q('mutation { insert_article_one(object: {slug: "theirs-draft", title: "Hijacked", author_id: 1}, on_conflict: {constraint: article_slug_key, update_columns: [title]}) { id title } }', user('1')),
    ).toEqual({ data: { insert_article_one: null } });
    await unchanged();
  });

  it('updates the role\'s own row with the update preset; the request\'s where narrows it further', async () => {
    expect(
      await q('mutation { insert_article(objects: [{slug: "mine", title: "Mine v2", author_id: 1, body: "ignored"}], on_conflict: {constraint: article_slug_key, update_columns: [title], where: {published: {_eq: true}}}) { affected_rows } }', user('1')),
    ).toEqual({ data: { insert_article: { affected_rows: 0 } } });
    await unchanged();
    expect(
      await q('mutation { insert_article(objects: [{slug: "mine", title: "Mine v2", author_id: 1, body: "ignored"}], on_conflict: {constraint: article_slug_key, update_columns: [title]}) { affected_rows returning { id title body edited_by } } }', user('1')),
    ).toEqual({ data: { insert_article: { affected_rows: 1, returning: [{ id: 1, title: 'Mine v2', body: 'b1', edited_by: 1 }] } } });
    expect(await rows('article')).toEqual([{ ...ARTICLES[0], title: 'Mine v2', edited_by: 1 }, ARTICLES[1], ARTICLES[2], ARTICLES[3]]);
  });

  it('the updated row must pass the update check (not the insert check)', async () => {
    // The proposed row is the role's own (insert check passes), but updating author_id to it...
    // is fine; giving the row away is not: author_id 2 fails both checks, the update check applies.
    expect(
      await q('mutation { insert_article(objects: [{slug: "mine", title: "Given away", author_id: 2}], on_conflict: {constraint: article_slug_key, update_columns: [title, author_id]}) { affected_rows } }', user('1')),
    ).toEqual(insertCheckFailed('insert_article'));
    await unchanged();
    // A new row outside the insert check, in the same upsert as an allowed update.
    expect(
      await q(
        'mutation { insert_article(objects: [{slug: "mine", title: "Mine v3", author_id: 1}, {slug: "fresh", title: "Fresh", author_id: 2}], on_conflict: {constraint: article_slug_key, update_columns: [title]}) { affected_rows } }',
        user('1'),
      ),
    ).toEqual(insertCheckFailed('insert_article'));
    await unchanged();
  });

  it('do nothing (empty update_columns) on a conflict with another\'s row', async () => {
    expect(await q('mutation { insert_article(objects: [{slug: "theirs", title: "X", author_id: 1}], on_conflict: {constraint: article_slug_key, update_columns: []}) { affected_rows returning { id } } }', user('1'))).toEqual({
      data: { insert_article: { affected_rows: 0, returning: [] } },
    });
    await unchanged();
  });

  it('update_columns are the role\'s update columns only; a table the role may not update offers none', async () => {
    const r = await q('mutation { insert_article(objects: [{slug: "mine", title: "X", author_id: 1}], on_conflict: {constraint: article_slug_key, update_columns: [secret]}) { affected_rows } }', user('1'));
    expect(r.errors?.[0]?.extensions).toEqual({ path: '$.selectionSet.insert_article.args.on_conflict.update_columns[0]', code: 'validation-failed' });
    const c = await q('mutation { insert_comment(objects: [{article_id: 3, text: "X"}], on_conflict: {constraint: comment_pkey, update_columns: [text]}) { affected_rows } }', user('1'));
    expect(c.errors?.[0]?.extensions).toEqual({ path: '$.selectionSet.insert_comment.args.on_conflict.update_columns[0]', code: 'validation-failed' });
    await unchanged();
  });

  // Note [Parents joined]: the articles' check reads their CTE before the statement's zero check,
  // so an article without its parent must not be written with a null author_id (NOT NULL) first.
  it('array relationship rows of several shapes, checked, under a parent that writes nothing: the zero error', async () => {
    for (const data of ['[{slug: "a", title: "A"}, {slug: "b", title: "B", body: "x"}]', '[{slug: "a", title: "A"}, {slug: "b", title: "B"}]']) {
      expect(
        await q(`mutation { insert_users(objects: [{id: 1, name: "U1", articles: {data: ${data}}}], on_conflict: {constraint: users_pkey, update_columns: []}) { affected_rows } }`, as('editor')),
      ).toEqual(error('cannot proceed to insert array relations since insert to table "users" affects zero rows', '$.selectionSet.insert_users.args.objects[0]', 'not-supported'));
      await unchanged();
    }
    // And with a parent that is written: both shapes, checked.
    expect(
      await q('mutation { insert_users(objects: [{id: 3, name: "U3", articles: {data: [{slug: "a", title: "A"}, {slug: "b", title: "B", body: "x"}]}}]) { affected_rows } }', as('editor')),
    ).toEqual({ data: { insert_users: { affected_rows: 3 } } });
    expect(await rows('article where author_id = 3', 'id, slug, body, author_id')).toEqual([
      { id: 5, slug: 'a', body: null, author_id: 3 },
      { id: 6, slug: 'b', body: 'x', author_id: 3 },
    ]);
    expect(await q('mutation { insert_users(objects: [{id: 4, name: "U4", articles: {data: [{slug: "c", title: "C"}, {slug: "d", title: "bad", body: "x"}]}}]) { affected_rows } }', as('editor'))).toEqual(
      insertCheckFailed('insert_users'),
    );
  });

  it('a nested upsert is held to the nested table\'s update filter too', async () => {
    // user 1 tries to take over user 2's article "theirs" through a comment's nested article.
    expect(
      await q('mutation { insert_comment(objects: [{text: "t", article: {data: {slug: "theirs", title: "Hijacked", author_id: 1}, on_conflict: {constraint: article_slug_key, update_columns: [title]}}}]) { affected_rows } }', user('1')),
    ).toEqual(error('cannot proceed to insert object relation "article" since insert to table "article" affects zero rows', '$.selectionSet.insert_comment.args.objects[0].article', 'not-supported'));
    await unchanged();
  });
});

describe('update', () => {
  it('only the rows of the role\'s filter, with the preset', async () => {
    expect(await q('mutation { update_article(where: {}, _set: {body: "edited"}, _inc: {likes: 1}) { affected_rows returning { id body likes edited_by } } }', user('1'))).toEqual({
      data: { update_article: { affected_rows: 2, returning: [{ id: 1, body: 'edited', likes: 1, edited_by: 1 }, { id: 2, body: 'edited', likes: 6, edited_by: 1 }] } },
    });
    expect(await q('mutation { update_article(where: {id: {_eq: 3}}, _set: {title: "Hijacked"}) { affected_rows returning { id } } }', user('1'))).toEqual({
      data: { update_article: { affected_rows: 0, returning: [] } },
    });
    expect(await rows('article')).toEqual([
      { ...ARTICLES[0], body: 'edited', likes: 1, edited_by: 1 },
      { ...ARTICLES[1], body: 'edited', likes: 6, edited_by: 1 },
      ARTICLES[2],
      ARTICLES[3],
    ]);
  });

  it('an updated row failing the check fails the request', async () => {
    for (const doc of [
      'mutation { update_article(where: {id: {_eq: 1}}, _set: {author_id: 2}) { affected_rows } }',
      'mutation { update_article(where: {}, _set: {likes: 101}) { affected_rows } }',
      'mutation { update_article(where: {id: {_eq: 2}}, _inc: {likes: 96}) { affected_rows } }',
      'mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {author_id: 2}) { id } }',
      'mutation { a: update_article(where: {id: {_eq: 1}}, _set: {title: "ok"}) { affected_rows } b: update_article(where: {id: {_eq: 2}}, _inc: {likes: 200}) { affected_rows } }',
    ]) {
      expect(await q(doc, user('1')), doc).toEqual(updateCheckFailed);
    }
    expect(await q('mutation ($s: article_set_input!) { update_article(where: {}, _set: $s) { affected_rows } }', user('1'), { s: { author_id: 2 } })).toEqual(updateCheckFailed);
    await unchanged();
  });

  it('columns outside the permission (and preset ones) are not in the input', async () => {
    for (const [args, path] of [
      ['_set: {secret: "x"}', '_set.secret'],
      ['_set: {edited_by: 2}', '_set.edited_by'],
      ['_set: {slug: "x"}', '_set.slug'],
      ['_inc: {edited_by: 1}', '_inc.edited_by'],
    ]) {
      expectNoSuchInputField(await q(`mutation { update_article(where: {}, ${args}) { affected_rows } }`, user('1')), `$.selectionSet.update_article.args.${path}`);
    }
    await unchanged();
  });

  it('update_<t>_by_pk: a row outside the filter is null and untouched', async () => {
    expect(await q('mutation { update_article_by_pk(pk_columns: {id: 3}, _set: {title: "Hijacked"}) { id title } }', user('1'))).toEqual({ data: { update_article_by_pk: null } });
    expect(await q('mutation { update_article_by_pk(pk_columns: {id: 4}, _inc: {likes: 1}) { id } }', user('1'))).toEqual({ data: { update_article_by_pk: null } });
    await unchanged();
    expect(await q('mutation { update_article_by_pk(pk_columns: {id: 1}, _set: {title: "Mine!"}) { id title edited_by } }', user('1'))).toEqual({ data: { update_article_by_pk: { id: 1, title: 'Mine!', edited_by: 1 } } });
    expect(await rows('article')).toEqual([{ ...ARTICLES[0], title: 'Mine!', edited_by: 1 }, ARTICLES[1], ARTICLES[2], ARTICLES[3]]);
  });

  it('update_<t>_many: EVERY update of the list gets the filter (CVE-2022-46792)', async () => {
    expect(
      await q(`mutation { update_article_many(updates: [
          {where: {id: {_eq: 1}}, _set: {title: "first"}},
          {where: {}, _set: {title: "pwned"}},
          {where: {id: {_in: [3, 4]}}, _set: {body: "pwned"}}
        ]) { affected_rows returning { id title } } }`, user('1')),
    ).toEqual({
      data: {
        update_article_many: [
          { affected_rows: 1, returning: [{ id: 1, title: 'first' }] },
          // RETURNING's order is the rows' physical order: row 1's new version comes after row 2.
          { affected_rows: 2, returning: [{ id: 2, title: 'pwned' }, { id: 1, title: 'pwned' }] },
          { affected_rows: 0, returning: [] },
        ],
      },
    });
    expect(await rows('article')).toEqual([{ ...ARTICLES[0], title: 'pwned', edited_by: 1 }, { ...ARTICLES[1], title: 'pwned', edited_by: 1 }, ARTICLES[2], ARTICLES[3]]);
  });

  it('update_<t>_many: EVERY update of the list gets the check; a failing one takes back the earlier ones', async () => {
    expect(await q('mutation { update_article_many(updates: [{where: {id: {_eq: 1}}, _set: {title: "ok"}}, {where: {id: {_eq: 2}}, _set: {author_id: 2}}]) { affected_rows } }', user('1'))).toEqual(updateCheckFailed);
    expect(await q('mutation { update_article_many(updates: [{where: {id: {_eq: 1}}, _set: {title: "ok"}}, {where: {id: {_eq: 1}}, _inc: {likes: 101}}]) { affected_rows } }', user('1'))).toEqual(updateCheckFailed);
    expect(
      await q('mutation ($u: [article_updates!]!) { update_article_many(updates: $u) { affected_rows } }', user('1'), { u: [{ where: {}, _set: { body: 'x' } }, { where: {}, _set: { author_id: 2 } }] }),
    ).toEqual(updateCheckFailed);
    expectNoSuchInputField(
      await q('mutation { update_article_many(updates: [{where: {}, _set: {title: "ok"}}, {where: {}, _set: {secret: "x"}}]) { affected_rows } }', user('1')),
      '$.selectionSet.update_article_many.args.updates[1]._set.secret',
    );
    await unchanged();
  });

  it('returning gives only the updated rows the role may read; affected_rows counts all', async () => {
    expect(await q('mutation { update_message(where: {}, _set: {text: "edited"}) { affected_rows returning { id text } } }', user('1'))).toEqual({
      data: { update_message: { affected_rows: 1, returning: [] } },
    });
    expect(await q('mutation { update_message_by_pk(pk_columns: {id: 2}, _set: {text: "again"}) { id } }', user('1'))).toEqual({ data: { update_message_by_pk: null } });
    expect(await rows('message')).toEqual([MESSAGES[0], { ...MESSAGES[1], text: 'again' }]);
  });

  it('a missing session variable is an error', async () => {
    expect(await q('mutation { update_article(where: {}, _set: {title: "x"}) { affected_rows } }', as('user'))).toEqual(missingUserId);
    expect(await q('mutation { update_article_many(updates: [{where: {}, _set: {title: "x"}}]) { affected_rows } }', as('user'))).toEqual(missingUserId);
    await unchanged();
  });
});

describe('delete', () => {
  it('only the rows of the role\'s filter', async () => {
    expect(await q('mutation { delete_article(where: {}) { affected_rows returning { id } } }', user('1'))).toEqual({ data: { delete_article: { affected_rows: 1, returning: [{ id: 1 }] } } });
    expect(await rows('article')).toEqual([ARTICLES[1], ARTICLES[2], ARTICLES[3]]);
    await server.runSql(RESET);
    expect(await q('mutation { delete_article(where: {author_id: {_eq: 2}}) { affected_rows } }', user('1'))).toEqual({ data: { delete_article: { affected_rows: 0 } } });
    await unchanged();
  });

  it('delete_<t>_by_pk: a row outside the filter is null and untouched', async () => {
    expect(await q('mutation { delete_article_by_pk(id: 4) { id } }', user('1'))).toEqual({ data: { delete_article_by_pk: null } });
    expect(await q('mutation { delete_article_by_pk(id: 2) { id } }', user('1'))).toEqual({ data: { delete_article_by_pk: null } });
    await unchanged();
    expect(await q('mutation { delete_article_by_pk(id: 1) { id title } }', user('1'))).toEqual({ data: { delete_article_by_pk: { id: 1, title: 'Mine' } } });
    expect(await rows('article')).toEqual([ARTICLES[1], ARTICLES[2], ARTICLES[3]]);
  });

  it('returning gives only the deleted rows the role may read; affected_rows counts all', async () => {
    expect(await q('mutation { delete_message(where: {}) { affected_rows returning { id } } }', user('1'))).toEqual({ data: { delete_message: { affected_rows: 1, returning: [] } } });
    expect(await rows('message')).toEqual([MESSAGES[0]]);
    await server.runSql(RESET);
    expect(await q('mutation { delete_message_by_pk(id: 1) { id } }', user('1'))).toEqual({ data: { delete_message_by_pk: null } });
    await unchanged();
  });

  it('a missing session variable is an error', async () => {
    expect(await q('mutation { delete_article(where: {}) { affected_rows } }', as('user'))).toEqual(missingUserId);
    await unchanged();
  });
});

it('a column outside the role\'s input type is worded as Hasura words it', async () => {
  expect(await q('mutation { insert_article(objects: [{slug: "x", title: "X", author_id: 1, likes: 50}]) { affected_rows } }', user('1'))).toEqual(
    error("field 'likes' not found in type: 'article_insert_input'", '$.selectionSet.insert_article.args.objects[0].likes', 'validation-failed'),
  );
});

it('a database error reaches a role without internal details', async () => {
  expect(await q('mutation { insert_article(objects: [{slug: "mine", title: "Dup", author_id: 1}]) { affected_rows } }', user('1'))).toEqual(
    error('Uniqueness violation. duplicate key value violates unique constraint "article_slug_key"', '$.selectionSet.insert_article.args.objects', 'constraint-violation'),
  );
});
