/**
 * Golden tests of computed fields in GraphQL (Hasura v2's names and rules): scalar ones as fields
 * of the table type (with `args: <cf>_<table>_args` when the function takes arguments of the
 * user's), set-returning ones as array fields with where/order_by/limit/offset, the session
 * argument bound from the session, and in role schemas only what the permissions allow.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, first_name text not null, last_name text, secret text);
insert into author (first_name, last_name, secret) values ('Roger', 'Chris', 's1'), ('Daniel', null, 's2');
create table article (id serial primary key, title text not null, content text, author_id int not null references author(id));
insert into article (title, content, author_id) values ('Article 1', 'Content 1', 1), ('Article 2', 'Content 2', 2), ('Article 3', 'Content 3', 2);
create function fetch_articles(search text, author_row author) returns setof article as $$
  select * from article where (title ilike ('%' || search || '%') or content ilike ('%' || search || '%')) and author_id = author_row.id
$$ language sql stable;
create function fetch_articles_plain(author_row author) returns setof article as $$
  select * from article where author_id = author_row.id
$$ language sql stable;
create function all_articles(author_row author) returns setof article as $$ select * from article $$ language sql stable;
create function full_name(author) returns text as $$
  select case when $1.last_name is null then $1.first_name else $1.first_name || ' ' || $1.last_name end
$$ language sql stable;
create function secret_of(a author) returns text as $$ select a.secret $$ language sql stable;
create function greeting(a author, prefix text, suffix text default '!') returns text as $$ select prefix || a.first_name || suffix $$ language sql stable;
create function offset_id(a author, hasura_session json) returns int as $$ select a.id + (hasura_session ->> 'x-svc-offset')::int $$ language sql stable;
-- An author added after a column was dropped: the row passed to the function keeps the table's type.
alter table author add column dropped int; alter table author drop column dropped;
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
const pub = { 'x-svc-role': 'public_role' };

beforeAll(async () => {
  const cf = (name: string, fn: string, extra: Record<string, unknown> = {}) => ({ type: 'pg_add_computed_field', args: { table: 'author', name, definition: { function: fn, ...extra } } });
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      cf('get_articles', 'fetch_articles', { table_argument: 'author_row' }),
      cf('get_articles_plain', 'fetch_articles_plain', { table_argument: 'author_row' }),
      cf('every_article', 'all_articles'),
      cf('full_name', 'full_name'),
      cf('secret_cf', 'secret_of'),
      cf('greeting', 'greeting', { table_argument: 'a' }),
      cf('offset_id', 'offset_id', { table_argument: 'a', session_argument: 'hasura_session' }),
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: '*', filter: { author_id: { _eq: 'X-Svc-User-Id' } } } } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: {}, computed_fields: ['full_name', 'offset_id'] } } },
      { type: 'pg_create_select_permission', args: { table: 'author', role: 'public_role', permission: { columns: ['first_name', 'last_name'], filter: {}, computed_fields: [] } } },
      { type: 'pg_create_select_permission', args: { table: 'article', role: 'public_role', permission: { columns: ['title', 'content'], filter: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('admin', () => {
  it('scalar and set-returning computed fields, with args', async () => {
    expect(await q('{ author(order_by: {id: asc}) { id full_name get_articles(args: {search: "Article"}, order_by: {id: asc}) { id title author_id } } }')).toEqual({
      data: {
        author: [
          { id: 1, full_name: 'Roger Chris', get_articles: [{ id: 1, title: 'Article 1', author_id: 1 }] },
          { id: 2, full_name: 'Daniel', get_articles: [{ id: 2, title: 'Article 2', author_id: 2 }, { id: 3, title: 'Article 3', author_id: 2 }] },
        ],
      },
    });
  });

  it('set-returning computed fields take where, order_by, limit and offset', async () => {
    expect(await q('{ author_by_pk(id: 2) { get_articles_plain(where: {title: {_like: "%3"}}) { id } a: get_articles_plain(order_by: {id: desc}, limit: 1, offset: 1) { id } } }')).toEqual({
      data: { author_by_pk: { get_articles_plain: [{ id: 3 }], a: [{ id: 2 }] } },
    });
  });

  it('arguments: defaults left out, variables, a missing required one refused', async () => {
    expect(await q('{ author_by_pk(id: 1) { greeting(args: {prefix: "Hi "}) g2: greeting(args: {prefix: "Yo ", suffix: "?"}) } }')).toEqual({
      data: { author_by_pk: { greeting: 'Hi Roger!', g2: 'Yo Roger?' } },
    });
    expect(await q('query ($p: String) { author_by_pk(id: 1) { greeting(args: {prefix: $p}) } }', { p: 'Hey ' })).toEqual({ data: { author_by_pk: { greeting: 'Hey Roger!' } } });
    expect(await q('query ($a: greeting_author_args!) { author_by_pk(id: 1) { greeting(args: $a) } }', { a: { prefix: '', suffix: '.' } })).toEqual({ data: { author_by_pk: { greeting: 'Roger.' } } });
    const r = await q('{ author_by_pk(id: 1) { greeting(args: {suffix: "?"}) } }');
    expect(r.errors?.[0]).toMatchObject({ message: 'Non default arguments cannot be omitted', extensions: { code: 'not-supported' } });
    expect((await q('{ author_by_pk(id: 1) { greeting } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('the session argument is the session variables as json, bound as a parameter', async () => {
    expect(await q('{ author(order_by: {id: asc}) { offset_id } }', undefined, { 'x-svc-offset': '10' })).toEqual({ data: { author: [{ offset_id: 11 }, { offset_id: 12 }] } });
    expect((await q('{ author { offset_id } }', undefined, { 'x-svc-offset': "1; drop table author; --" })).errors?.[0]?.extensions?.code).toBe('data-exception');
    expect((await q('{ author { id } }')).data.author).toHaveLength(2);
  });

  it('injection through computed-field arguments is a value', async () => {
    expect(await q(`{ author_by_pk(id: 1) { greeting(args: {prefix: "'); drop table author; --"}) } }`)).toEqual({ data: { author_by_pk: { greeting: "'); drop table author; --Roger!" } } });
    expect(await q(`{ author_by_pk(id: 1) { get_articles(args: {search: "%' or 1=1 --"}) { id } } }`)).toEqual({ data: { author_by_pk: { get_articles: [] } } });
    expect((await q('{ author { id } }')).data.author).toHaveLength(2);
  });

  it('in where and order_by: scalar ones and set-returning ones without arguments', async () => {
    expect(await q('{ author(where: {full_name: {_ilike: "%roger%"}}) { id } }')).toEqual({ data: { author: [{ id: 1 }] } });
    expect(await q('{ author(where: {get_articles_plain: {title: {_ilike: "%3%"}}}) { id } }')).toEqual({ data: { author: [{ id: 2 }] } });
    expect(await q('{ author(order_by: {full_name: asc}) { id } }')).toEqual({ data: { author: [{ id: 2 }, { id: 1 }] } });
    expect(await q('{ author(where: {offset_id: {_gt: 11}}) { id } }', undefined, { 'x-svc-offset': '10' })).toEqual({ data: { author: [{ id: 2 }] } });
    const r = await q('{ author(where: {get_articles: {title: {_ilike: "%random%"}}}) { id } }');
    expect(r.errors?.[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    expect((await q('{ author(order_by: {greeting: asc}) { id } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('introspection: names, descriptions and the args type as Hasura v2 generates them', async () => {
    const r = await q('{ a: __type(name: "author") { fields { name description args { name type { kind name ofType { name } } } } } g: __type(name: "greeting_author_args") { inputFields { name type { kind name } } } }');
    const fields = Object.fromEntries(r.data.a.fields.map((f: any) => [f.name, f]));
    expect(fields.full_name.description).toBe('A computed field, executes function "full_name"');
    expect(fields.full_name.args).toEqual([]);
    expect(fields.greeting.args).toEqual([{ name: 'args', type: { kind: 'NON_NULL', name: null, ofType: { name: 'greeting_author_args' } } }]);
    expect(fields.get_articles.args.map((a: any) => a.name)).toEqual(['args', 'distinct_on', 'limit', 'offset', 'order_by', 'where']);
    expect(fields.offset_id.args).toEqual([]);
    expect(r.data.g.inputFields).toEqual([{ name: 'suffix', type: { kind: 'SCALAR', name: 'String' } }, { name: 'prefix', type: { kind: 'SCALAR', name: 'String' } }]);
  });
});

describe('roles', () => {
  it('a scalar computed field only where the permission lists it; set-returning ones give the returned table\'s rows of the role', async () => {
    expect(await q('{ author(order_by: {id: asc}) { id full_name every_article(order_by: {id: asc}) { id } } }', undefined, user('2'))).toEqual({
      data: { author: [{ id: 1, full_name: 'Roger Chris', every_article: [{ id: 2 }, { id: 3 }] }, { id: 2, full_name: 'Daniel', every_article: [{ id: 2 }, { id: 3 }] }] },
    });
    // fetch_articles returns rows of any author: the role's article filter still applies.
    expect(await q('{ author_by_pk(id: 1) { get_articles(args: {search: "Article"}) { id } } }', undefined, user('2'))).toEqual({ data: { author_by_pk: { get_articles: [] } } });
  });

  it('a computed field the role may not see fails validation, in selections, where and order_by', async () => {
    for (const [doc, h] of [
      ['{ author { secret_cf } }', user('1')],
      ['{ author(where: {secret_cf: {_eq: "s1"}}) { id } }', user('1')],
      ['{ author(order_by: {secret_cf: asc}) { id } }', user('1')],
      ['{ author { full_name } }', pub],
      ['{ author(where: {full_name: {_eq: "Daniel"}}) { first_name } }', pub],
      ['{ author { get_articles(args: {search: "Article"}) { id } } }', pub],
    ] as const) {
      const r = await q(doc, undefined, h);
      expect(r.errors?.[0]?.extensions?.code, doc).toBe('validation-failed');
      expect(r.data, doc).toBeUndefined();
    }
    const r = await q('{ author { full_name id } }', undefined, pub);
    expect(r.errors?.[0]?.message).toBe("field 'full_name' not found in type: 'author'");
  });

  it('the where of a set-returning computed field cannot reach the role\'s hidden rows', async () => {
    expect(await q('{ author(where: {every_article: {id: {_eq: 1}}}) { id } }', undefined, user('2'))).toEqual({ data: { author: [] } });
    expect(await q('{ author(where: {every_article: {id: {_eq: 2}}}, order_by: {id: asc}) { id } }', undefined, user('2'))).toEqual({ data: { author: [{ id: 1 }, { id: 2 }] } });
  });
});
