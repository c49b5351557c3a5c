/**
 * Golden tests of nested updates (issue 30; Note [Nested updates] in ./nested-update.ts) against
 * real PostgreSQL through POST /v1/graphql: deletes, updates and inserts through array
 * relationships, updates through object relationships, to any depth, in one statement; what
 * `affected_rows` and `returning` read; each table's own permissions (filter, check, columns,
 * presets; the input types list only what a role may do); a failed check anywhere writes
 * nothing; the errors. After each request the tables are read back as admin.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id int primary key, name text not null, bio text, updated_by text);
create table article (id serial primary key, author_id int not null references author(id), title text not null,
  published boolean not null default false, rating int not null default 0);
create table comment (id serial primary key, article_id int not null references article(id) on delete cascade, body text not null, approved boolean not null default true);
create table log (author_id int not null references author(id), msg text not null);
create table employee (id int primary key, name text not null, manager_id int references employee(id));
`;
const RESET = `
delete from comment; delete from article; delete from log; delete from author; delete from employee;
select setval('article_id_seq', 1, false), setval('comment_id_seq', 1, false);
insert into author (id, name) values (1, 'ann'), (2, 'bob');
insert into article (author_id, title, published, rating) values (1, 'a1', true, 3), (1, 'a2', false, 1), (2, 'b1', true, 4), (2, 'b2', false, 2);
insert into comment (article_id, body) values (1, 'c1'), (2, 'c2'), (3, 'c3');
insert into employee values (1, 'boss', null), (2, 'eve', 1), (3, 'joe', 1), (4, 'kim', 2);
update employee set manager_id = 1 where id = 1;
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const writer = (id: number) => ({ 'x-svc-role': 'writer', 'x-svc-user-id': String(id) });
const editor = { 'x-svc-role': 'editor', 'x-svc-user-id': '1' };
const data = async (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => {
  const r = await q(query, variables, headers);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data;
};
const error = async (query: string, headers?: Record<string, string>) => {
  const r = await q(query, undefined, headers);
  expect(r.data, JSON.stringify(r)).toBeUndefined();
  return r.errors[0];
};
/** The tables as admin reads them. */
const state = async () => ({
  author: await server.sql`select id, name, bio, updated_by from author order by id`,
  article: await server.sql`select id, author_id, title, published, rating from article order by id`,
  comment: await server.sql`select id, article_id, body, approved from comment order by id`,
  log: await server.sql`select author_id, msg from log order by msg`,
});

const ME = 'X-Svc-User-Id';
beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['author', 'article', 'comment', 'log', 'employee'].map((table) => ({ type: 'pg_track_table', args: { table } })),
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'pg_create_array_relationship', args: { table: 'article', name: 'comments', using: { foreign_key_constraint_on: { table: 'comment', column: 'article_id' } } } },
      { type: 'pg_create_object_relationship', args: { table: 'comment', name: 'article', using: { foreign_key_constraint_on: 'article_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'logs', using: { foreign_key_constraint_on: { table: 'log', column: 'author_id' } } } },
      { type: 'pg_create_array_relationship', args: { table: 'employee', name: 'reports', using: { foreign_key_constraint_on: { table: 'employee', column: 'manager_id' } } } },
      // writer: updates its own author row (bio, name; updated_by preset), never to the name "nobody".
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'writer', permission: { columns: ['id', 'name', 'bio', 'updated_by'], filter: {} } } },
      { type: 'pg_create_update_permission', args: { table: 'author', role: 'writer', permission: { columns: ['name', 'bio'], filter: { id: { _eq: ME } }, check: { name: { _neq: 'nobody' } }, set: { updated_by: ME } } } },
      // writer: its articles: inserts and updates them with a rating of at most 5, deletes the unpublished ones.
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'writer', permission: { columns: ['id', 'author_id', 'title', 'published', 'rating'], filter: {} } } },
      { type: 'pg_create_insert_permission', args: { table: 'article', role: 'writer', permission: { columns: ['author_id', 'title', 'published', 'rating'], check: { rating: { _lte: 5 } } } } },
      { type: 'pg_create_update_permission', args: { table: 'article', role: 'writer', permission: { columns: ['title', 'published', 'rating'], filter: { author_id: { _eq: ME } }, check: { rating: { _lte: 5 } } } } },
      { type: 'pg_create_delete_permission', args: { table: 'article', role: 'writer', permission: { filter: { published: { _eq: false } } } } },
      // writer: inserts comments, unapproved (preset); may not update or delete them.
      { type: 'pg_create_select_permission', args: { table: 'comment', role: 'writer', permission: { columns: ['id', 'body', 'approved'], filter: {} } } },
      { type: 'pg_create_insert_permission', args: { table: 'comment', role: 'writer', permission: { columns: ['article_id', 'body'], check: {}, set: { approved: false } } } },
      // editor: updates authors and articles, nothing else.
      { type: 'pg_create_update_permission', args: { table: 'author', role: 'editor', permission: { columns: ['bio'], filter: {}, check: {} } } },
      { type: 'pg_create_update_permission', args: { table: 'article', role: 'editor', permission: { columns: ['title'], filter: {}, check: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});
beforeEach(() => server.runSql(RESET));

describe('admin', () => {
  it('deletes, updates and inserts through an array relationship, deeper too, in one request', async () => {
    const r = await data(`mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {bio: "new"}, _nested: {articles: {
        delete: {where: {published: {_eq: false}}},
        update: {where: {published: {_eq: true}}, _set: {title: "A1"}, _inc: {rating: 1}, _nested: {comments: {insert: {objects: [{body: "hi"}]}, delete: {where: {body: {_eq: "c1"}}}}}},
        insert: {objects: [{title: "a3", comments: {data: [{body: "x"}, {body: "y"}]}}, {title: "a4", published: true}]}}}) {
      id bio articles(order_by: {id: asc}) { id title rating comments(order_by: {id: asc}) { body } } articles_aggregate { aggregate { count } } } }`);
    // returning reads the state after the whole mutation: the deleted article is gone, the
    // updated one changed, the inserted ones there with their own inserted comments.
    expect(r).toEqual({
      update_author_by_pk: {
        id: 1,
        bio: 'new',
        articles: [
          { id: 1, title: 'A1', rating: 4, comments: [{ body: 'hi' }] },
          { id: 5, title: 'a3', rating: 0, comments: [{ body: 'x' }, { body: 'y' }] },
          { id: 6, title: 'a4', rating: 0, comments: [] },
        ],
        articles_aggregate: { aggregate: { count: 3 } },
      },
    });
    const s = await state();
    expect(s.article.map((a: any) => [a.id, a.author_id, a.title, a.published, a.rating])).toEqual([
      [1, 1, 'A1', true, 4],
      [3, 2, 'b1', true, 4],
      [4, 2, 'b2', false, 2],
      [5, 1, 'a3', false, 0],
      [6, 1, 'a4', true, 0],
    ]);
    expect(s.comment.map((c: any) => [c.article_id, c.body])).toEqual([[3, 'c3'], [1, 'hi'], [5, 'x'], [5, 'y']]);
  });

  it('affected_rows counts every row written, at every depth', async () => {
    const r = await data(`mutation { update_author(where: {}, _set: {bio: "b"}, _nested: {articles: {update: {where: {}, _set: {published: true}, _nested: {comments: {insert: {objects: [{body: "n"}]}}}}, insert: {objects: [{title: "t"}]}}}) {
      affected_rows returning { id articles(order_by: {id: asc}) { title published } } } }`);
    // 2 authors + 4 articles updated + 4 comments inserted (one per updated article) + 2 articles inserted.
    expect(r.update_author.affected_rows).toBe(12);
    expect(r.update_author.returning.sort((a: any, b: any) => a.id - b.id)).toEqual([
      { id: 1, articles: [{ title: 'a1', published: true }, { title: 'a2', published: true }, { title: 't', published: false }] },
      { id: 2, articles: [{ title: 'b1', published: true }, { title: 'b2', published: true }, { title: 't', published: false }] },
    ]);
    expect((await state()).comment).toHaveLength(7);
  });

  it('with _nested only, the row itself is not written, only its relationships', async () => {
    const r = await data('mutation { update_author_by_pk(pk_columns: {id: 2}, _nested: {articles: {delete: {where: {title: {_eq: "b2"}}}}}) { id name articles { title } } }');
    expect(r).toEqual({ update_author_by_pk: { id: 2, name: 'bob', articles: [{ title: 'b1' }] } });
    const m = await data('mutation { update_author(where: {id: {_eq: 2}}, _set: {}, _nested: {articles: {delete: {where: {}}}}) { affected_rows } }');
    expect(m).toEqual({ update_author: { affected_rows: 1 } });
    // Nothing to do at all: as an update with empty operators, nothing written.
    expect(await data('mutation { update_author(where: {}, _set: {}) { affected_rows } }')).toEqual({ update_author: { affected_rows: 0 } });
  });

  it('updates the row of an object relationship, and its relationships in turn', async () => {
    const r = await data(`mutation { update_article(where: {title: {_in: ["a2", "b1"]}}, _set: {published: true}, _nested: {author: {update: {_set: {bio: "x"}, _nested: {logs: {insert: {objects: [{msg: "touched"}]}}}}}}) {
      affected_rows returning { title author { name bio } } } }`);
    // 2 articles, their 2 authors, one log row per author.
    expect(r.update_article.affected_rows).toBe(6);
    expect(r.update_article.returning.sort((a: any, b: any) => a.title.localeCompare(b.title))).toEqual([
      { title: 'a2', author: { name: 'ann', bio: 'x' } },
      { title: 'b1', author: { name: 'bob', bio: 'x' } },
    ]);
    expect((await state()).log).toEqual([{ author_id: 1, msg: 'touched' }, { author_id: 2, msg: 'touched' }]);
  });

  it('update_<t>_many: each update with its own _nested, in order', async () => {
    const r = await data(`mutation { update_author_many(updates: [
        {where: {id: {_eq: 1}}, _set: {bio: "one"}, _nested: {articles: {delete: {where: {}}}}},
        {where: {id: {_eq: 2}}, _nested: {articles: {insert: {objects: [{title: "b3"}]}}}}]) { affected_rows } }`);
    expect(r).toEqual({ update_author_many: [{ affected_rows: 3 }, { affected_rows: 1 }] });
    const s = await state();
    expect(s.article.map((a: any) => a.title)).toEqual(['b1', 'b2', 'b3']);
    // The on delete cascade of comments is PostgreSQL's, not a row of the mutation.
    expect(s.comment.map((c: any) => c.body)).toEqual(['c3']);
  });

  it('writes a row once: a row that is its own report is updated as the parent only', async () => {
    const r = await data('mutation { update_employee_by_pk(pk_columns: {id: 1}, _set: {name: "BOSS"}, _nested: {reports: {update: {where: {}, _set: {name: "report"}}}}) { id name reports(order_by: {id: asc}) { id name } } }');
    expect(r).toEqual({ update_employee_by_pk: { id: 1, name: 'BOSS', reports: [{ id: 1, name: 'BOSS' }, { id: 2, name: 'report' }, { id: 3, name: 'report' }] } });
    const d = await data('mutation { update_employee(where: {id: {_eq: 2}}, _set: {name: "E"}, _nested: {reports: {delete: {where: {}}, update: {where: {}, _set: {name: "never"}}}}) { affected_rows } }');
    // Deleted first; the update finds no row left (kim was deleted).
    expect(d).toEqual({ update_employee: { affected_rows: 2 } });
    expect(await server.sql`select id, name from employee order by id`).toEqual([{ id: 1, name: 'BOSS' }, { id: 2, name: 'E' }, { id: 3, name: 'report' }]);
  });

  it('a table without a primary key takes inserts only', async () => {
    const t = await data('{ __type(name: "log_arr_rel_nested_input") { inputFields { name } } }');
    expect(t.__type.inputFields.map((f: any) => f.name)).toEqual(['insert']);
  });
});

describe('permissions', () => {
  it('each table\'s own filter, columns and presets apply; the input lists only what the role may do', async () => {
    const r = await data(
      `mutation { update_author(where: {}, _set: {bio: "mine"}, _nested: {articles: {delete: {where: {}}, update: {where: {}, _set: {title: "T"}}, insert: {objects: [{title: "w"}]}}}) {
        affected_rows returning { id bio updated_by } } }`,
      undefined,
      writer(1),
    );
    // Only author 1 (the update filter); its unpublished article deleted (the delete filter), the
    // other updated, one inserted: 1 + 1 + 1 + 1.
    expect(r).toEqual({ update_author: { affected_rows: 4, returning: [{ id: 1, bio: 'mine', updated_by: '1' }] } });
    const s = await state();
    expect(s.article.map((a: any) => [a.author_id, a.title])).toEqual([[1, 'T'], [2, 'b1'], [2, 'b2'], [1, 'w']]);
    const c = await data('mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: {insert: {objects: [{body: "mine"}]}}}) { comments(order_by: {id: asc}) { body approved } } }', undefined, writer(1));
    // `approved` is preset to false for the writer (and is not in its input).
    expect(c).toEqual({ update_article_by_pk: { comments: [{ body: 'c1', approved: true }, { body: 'mine', approved: false }] } });
    const types = await data(
      `{ a: __type(name: "article_arr_rel_nested_input") { inputFields { name } } c: __type(name: "comment_arr_rel_nested_input") { inputFields { name } }
         n: __type(name: "author_nested_input") { inputFields { name } } u: __type(name: "article_nested_update_input") { inputFields { name } } }`,
      undefined,
      writer(1),
    );
    expect(types.a.inputFields.map((f: any) => f.name)).toEqual(['delete', 'insert', 'update']);
    expect(types.c.inputFields.map((f: any) => f.name)).toEqual(['insert']);
    // No permission on log: not offered.
    expect(types.n.inputFields.map((f: any) => f.name)).toEqual(['articles']);
    expect(types.u.inputFields.map((f: any) => f.name).sort()).toEqual(['_inc', '_nested', '_set', 'where']);
    const ed = await data(`{ a: __type(name: "article_arr_rel_nested_input") { inputFields { name } } n: __type(name: "article_nested_input") { inputFields { name } } }`, undefined, editor);
    expect(ed.a.inputFields.map((f: any) => f.name)).toEqual(['update']);
    // The editor may not write comments: only the author of an article is reached.
    expect(ed.n.inputFields.map((f: any) => f.name)).toEqual(['author']);
  });

  it('refuses what the role\'s input types do not have', async () => {
    for (const doc of [
      // author_id is not among the writer's article update columns.
      'mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {update: {where: {}, _set: {author_id: 2}}}}) { id } }',
      // no update or delete permission on comments.
      'mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: {delete: {where: {}}}}) { id } }',
      // no permission on log at all.
      'mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {logs: {insert: {objects: [{msg: "m"}]}}}) { id } }',
    ]) {
      expect((await error(doc, writer(1))).extensions.code, doc).toBe('validation-failed');
    }
    expect(await error('mutation { update_author(where: {}, _nested: {articles: {delete: {where: {}}}}) { affected_rows } }', editor)).toMatchObject({ extensions: { code: 'validation-failed' } });
  });

  it('a failed check anywhere writes nothing at all', async () => {
    const before = await state();
    const docs = [
      // the inserted article's rating breaks the insert check
      'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {bio: "x"}, _nested: {articles: {delete: {where: {}}, insert: {objects: [{title: "ok", rating: 2}, {title: "bad", rating: 9}]}}}) { id } }',
      // the updated article's new rating breaks the update check, two levels down
      'mutation { update_article_by_pk(pk_columns: {id: 2}, _set: {title: "t"}, _nested: {author: {update: {_set: {bio: "y"}, _nested: {articles: {update: {where: {}, _inc: {rating: 4}}}}}}}) { id } }',
      // the parent's own check
      'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "nobody"}, _nested: {articles: {insert: {objects: [{title: "z"}]}}}) { id } }',
    ];
    for (const doc of docs) {
      expect(await error(doc, writer(1)), doc).toEqual({
        message: 'check constraint of an insert/update permission has failed',
        extensions: { path: '$', code: 'permission-error' },
      });
      expect(await state(), doc).toEqual(before);
    }
  });

  it('another author\'s rows are not reached through the writer\'s own filters', async () => {
    // bob (2) is not the writer's to update: no parent, so nothing through it either.
    const r = await data('mutation { update_author(where: {id: {_eq: 2}}, _set: {bio: "x"}, _nested: {articles: {insert: {objects: [{title: "n"}]}}}) { affected_rows } }', undefined, writer(1));
    expect(r).toEqual({ update_author: { affected_rows: 0 } });
    // Through an object relationship, the remote's update filter: bob's author row is not updated.
    const o = await data('mutation { update_article(where: {}, _set: {title: "same"}, _nested: {author: {update: {_set: {bio: "via"}}}}) { affected_rows } }', undefined, { 'x-svc-role': 'writer', 'x-svc-user-id': '1' });
    // the writer's article update filter: its own 2 articles; their author (ann) once.
    expect(o).toEqual({ update_article: { affected_rows: 3 } });
    const s = await state();
    expect(s.author.map((a: any) => a.bio)).toEqual(['via', null]);
  });
});

describe('errors', () => {
  it('a column the parent gives, a changed primary key, an object relationship insert', async () => {
    expect(await error('mutation { update_author_by_pk(pk_columns: {id: 1}, _nested: {articles: {insert: {objects: [{title: "t", author_id: 2}]}}}) { id } }')).toEqual({
      message: 'cannot insert "author_id" columns as their values are already being determined by the parent row',
      extensions: { path: '$.selectionSet.update_author_by_pk.args._nested.articles.insert.objects[0]', code: 'validation-failed' },
    });
    expect(await error('mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {id: 7}, _nested: {articles: {delete: {where: {}}}}) { id } }')).toEqual({
      message: 'a mutation with "_nested" cannot change the primary key column "id" of table "author"',
      extensions: { path: '$.selectionSet.update_author_by_pk.args', code: 'not-supported' },
    });
    expect(await error('mutation { update_article_by_pk(pk_columns: {id: 1}, _nested: {comments: {insert: {objects: [{body: "b", article: {data: {title: "t", author_id: 1}}}]}}}) { id } }')).toEqual({
      message: 'inserting through the object relationship "article" is not supported inside "_nested"',
      extensions: { path: '$.selectionSet.update_article_by_pk.args._nested.comments.insert.objects[0].article', code: 'not-supported' },
    });
    const before = await state();
    // A database error (a NOT NULL column left out) fails the whole statement too.
    const e = await error('mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {bio: "q"}, _nested: {articles: {insert: {objects: [{published: true}]}}}) { id } }');
    expect(e.extensions.code).toBe('constraint-violation');
    expect(await state()).toEqual(before);
  });

  it('variables in nested values are bound, and a document is planned once for many values', async () => {
    const doc = 'mutation ($id: Int!, $t: String!, $r: Int) { update_author_by_pk(pk_columns: {id: $id}, _nested: {articles: {update: {where: {title: {_eq: $t}}, _set: {rating: $r}}}}) { articles(order_by: {id: asc}) { title rating } } }';
    expect(await data(doc, { id: 1, t: 'a2', r: 5 })).toEqual({ update_author_by_pk: { articles: [{ title: 'a1', rating: 3 }, { title: 'a2', rating: 5 }] } });
    expect(await data(doc, { id: 2, t: 'b1', r: 0 })).toEqual({ update_author_by_pk: { articles: [{ title: 'b1', rating: 0 }, { title: 'b2', rating: 2 }] } });
    // `_nested` as one variable: its shape decides the statement.
    const whole = 'mutation ($n: author_nested_input) { update_author_by_pk(pk_columns: {id: 1}, _nested: $n) { articles(order_by: {id: asc}) { title } } }';
    expect(await data(whole, { n: { articles: { insert: { objects: [{ title: 'v1' }, { title: 'v2' }] } } } })).toEqual({ update_author_by_pk: { articles: [{ title: 'a1' }, { title: 'a2' }, { title: 'v1' }, { title: 'v2' }] } });
    expect(await data(whole, { n: { articles: { delete: { where: { title: { _like: 'v%' } } } } } })).toEqual({ update_author_by_pk: { articles: [{ title: 'a1' }, { title: 'a2' }] } });
    expect(await data(whole, { n: { articles: { insert: { objects: [{ title: 'v3', rating: 1 }] } } } })).toEqual({ update_author_by_pk: { articles: [{ title: 'a1' }, { title: 'a2' }, { title: 'v3' }] } });
  });
});
