/**
 * Golden HTTP tests of the computed-fields command group: add/drop (metadata and legacy), the
 * build's checks of a computed field against its function and the table's fields, and the
 * computed fields that depend on a function.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { DatabaseToken } from '../model/service.js';

const s = useServer(`
    create table author (id serial primary key, first_name text not null, last_name text);
    create table article (id serial primary key, title text not null, content text, author_id int not null references author(id));
    create table untracked_rows (id int);
    create type pair as (a int, b int);
    create function fetch_articles(search text, author_row author) returns setof article as $$
      select * from article where (title ilike ('%' || search || '%')) and author_id = author_row.id
    $$ language sql stable;
    create function fetch_articles_volatile(search text, author_row author) returns setof article as $$
      select * from article where author_id = author_row.id
    $$ language sql volatile;
    create function full_name(author) returns text as $$
      select $1.first_name || coalesce(' ' || $1.last_name, '')
    $$ language sql stable;
    create function hello_world() returns text as $$ select 'Hello, World!'::text $$ language sql stable;
    create function test_session(author_row author, key text, session json) returns text as $$
      select $3->>$2
    $$ language sql stable;
    create function untracked_result(author) returns setof untracked_rows as $$ select * from untracked_rows $$ language sql stable;
    create function pairs(author) returns pair as $$ select (1, 2)::pair $$ language sql stable;
    create function of_pair(p pair) returns text as $$ select 'x'::text $$ language sql stable;
    create function overloaded(author) returns text as $$ select 'a'::text $$ language sql stable;
    create function overloaded(author, int) returns text as $$ select 'b'::text $$ language sql stable;
    create function to_be_dropped(author) returns text as $$ select 'c'::text $$ language sql stable;
  `);

beforeEach(async () => {
  expect((await s.metadata({ type: 'clear_metadata', args: {} })).status).toBe(200);
  expect(await s.query({ type: 'track_table', version: 2, args: { table: 'author', configuration: { custom_column_names: { last_name: 'surname' } } } })).toMatchObject({
    status: 200,
  });
  expect(await s.query({ type: 'track_table', args: { name: 'article', schema: 'public' } })).toMatchObject({ status: 200 });
});

const ok = { status: 200, body: { message: 'success' } };
const add = (name: string, definition: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  s.query({ type: 'add_computed_field', args: { table: 'author', name, definition, ...extra } });
const computedFieldsOf = async (table: string) => {
  const r = await s.metadata({ type: 'export_metadata', args: {} });
  return r.body.sources[0].tables.find((t: { table: { name: string } }) => t.table.name === table).computed_fields;
};

/** The body Hasura sends when the added computed field is inconsistent. */
function invalid(name: string, definition: Record<string, unknown>, reason: string) {
  return {
    status: 400,
    body: {
      code: 'invalid-configuration',
      path: '$.args',
      error: reason,
      internal: [
        {
          type: 'computed_field',
          name: `computed_field ${name} in table author in source default`,
          reason,
          definition: { source: 'default', table: { schema: 'public', name: 'author' }, name, definition, comment: null },
        },
      ],
    },
  };
}

describe('add_computed_field', () => {
  it('adds computed fields (legacy and metadata API) and exports them', async () => {
    expect(await add('get_articles', { function: 'fetch_articles', table_argument: 'author_row' })).toMatchObject(ok);
    const r = await s.metadata({
      type: 'pg_add_computed_field',
      args: { source: 'default', table: { schema: 'public', name: 'author' }, name: 'full_name', definition: { function: { schema: 'public', name: 'full_name' } }, comment: 'the name' },
    });
    expect(r).toMatchObject(ok);
    expect(await add('test_session', { function: 'test_session', session_argument: 'session' })).toMatchObject(ok);
    expect(await computedFieldsOf('author')).toEqual([
      { name: 'get_articles', definition: { function: { schema: 'public', name: 'fetch_articles' }, table_argument: 'author_row' } },
      { name: 'full_name', definition: { function: { schema: 'public', name: 'full_name' } }, comment: 'the name' },
      { name: 'test_session', definition: { function: { schema: 'public', name: 'test_session' }, session_argument: 'session' } },
    ]);
  });

  it('needs a tracked table', async () => {
    const r = await s.query({ type: 'add_computed_field', args: { table: 'random', name: 'full_name', definition: { function: 'full_name' } } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args.table', error: 'table "random" does not exist in source: default' } });
  });

  it('refuses a name that another computed field has', async () => {
    expect(await add('full_name', { function: 'full_name' })).toMatchObject(ok);
    expect(await add('full_name', { function: 'full_name' })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args.name', error: 'computed field "full_name" already exists in table "author"' },
    });
  });

  it('refuses a name that a column has', async () => {
    const definition = { function: { schema: 'public', name: 'full_name' } };
    expect(await add('first_name', { function: 'full_name' })).toEqual(
      expect.objectContaining(invalid('first_name', definition, 'Inconsistent object: field definition conflicts with postgres column')),
    );
  });

  it("refuses a name that a column's custom GraphQL name has", async () => {
    const r = await add('surname', { function: 'full_name' });
    expect(r.body.error).toBe('Inconsistent object: field definition conflicts with custom field name for postgres column "last_name"');
  });

  it('refuses a function that does not exist or is overloaded', async () => {
    expect(await add('full_name', { function: 'random_function' })).toEqual(
      expect.objectContaining(
        invalid(
          'full_name',
          { function: { schema: 'public', name: 'random_function' } },
          'Inconsistent object: in table "author": in computed field "full_name": no such function exists: "random_function"',
        ),
      ),
    );
    expect((await add('o', { function: 'overloaded' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "o": function "overloaded" is overloaded. Overloaded functions are not supported',
    );
  });

  it('refuses a table argument that is not an argument of the function', async () => {
    const definition = { function: { schema: 'public', name: 'full_name' }, table_argument: 'random' };
    expect(await add('full_name', { function: 'full_name', table_argument: 'random' })).toEqual(
      expect.objectContaining(
        invalid(
          'full_name',
          definition,
          'Inconsistent object: in table "author": in computed field "full_name": the computed field "full_name" cannot be added to table "author" because "random" is not an input argument of the function "full_name"',
        ),
      ),
    );
  });

  it('lists every reason: a VOLATILE function and a missing table argument', async () => {
    const r = await add('get_articles', { function: 'fetch_articles_volatile', table_argument: 'random' });
    expect(r.body.error).toBe(
      'Inconsistent object: in table "author": in computed field "get_articles": the computed field "get_articles" cannot be added to table "author" for the following reasons:\n' +
        '  • the function "fetch_articles_volatile" is of type VOLATILE; cannot be added as a computed field\n' +
        '  • "random" is not an input argument of the function "fetch_articles_volatile"\n',
    );
  });

  it('refuses a function without input arguments', async () => {
    expect((await add('hello_world', { function: 'hello_world' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "hello_world": the computed field "hello_world" cannot be added to table "author" because the function "hello_world" has no input arguments',
    );
  });

  it('checks that the first argument is the row type of the table', async () => {
    expect((await add('get_articles', { function: 'fetch_articles' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "get_articles": the computed field "get_articles" cannot be added to table "author" for the following reasons:\n' +
        '  • first argument of the function "fetch_articles" is not COMPOSITE type\n' +
        '  • first argument of the function "fetch_articles" of type "pg_catalog.text" is not the table to which the computed field is being added\n',
    );
    expect((await add('of_pair', { function: 'of_pair' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "of_pair": the computed field "of_pair" cannot be added to table "author" because first argument of the function "of_pair" of type "pair" is not the table to which the computed field is being added',
    );
  });

  it('checks the session argument: it must exist and be of a JSON type', async () => {
    expect((await add('full_name', { function: 'full_name', session_argument: 'random' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "full_name": the computed field "full_name" cannot be added to table "author" because "random" is not an input argument of the function "full_name"',
    );
    const r = await add('fetch_articles', { function: 'fetch_articles', table_argument: 'author_row', session_argument: 'search' });
    expect(r).toEqual(
      expect.objectContaining(
        invalid(
          'fetch_articles',
          { function: { schema: 'public', name: 'fetch_articles' }, table_argument: 'author_row', session_argument: 'search' },
          'Inconsistent object: in table "author": in computed field "fetch_articles": the computed field "fetch_articles" cannot be added to table "author" because "search" argument of the function "fetch_articles" is not of type JSON',
        ),
      ),
    );
  });

  it('checks the return type: a tracked table or a base type', async () => {
    expect((await add('rows', { function: 'untracked_result' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "rows": the computed field "rows" cannot be added to table "author" because the function "untracked_result" returning set of table "untracked_rows" is not tracked or not found in database',
    );
    expect((await add('pairs', { function: 'pairs' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "pairs": the computed field "pairs" cannot be added to table "author" because the function "pairs" returning type pair is not a BASE type',
    );
  });

  it('refuses a name that is not a GraphQL name', async () => {
    expect((await add('full name', { function: 'full_name' })).body.error).toBe(
      'Inconsistent object: in table "author": in computed field "full name": the computed field "full name" cannot be added to table "author" because "full name" is not valid GraphQL name',
    );
  });

  it('validates the arguments', async () => {
    const r = await s.query({ type: 'add_computed_field', args: { table: 'author', name: '', definition: { function: 'full_name' } } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.name', error: 'empty string not allowed' } });
    const noDefinition = await s.metadata({ type: 'pg_add_computed_field', args: { table: 'author', name: 'x' } });
    expect(noDefinition).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args', error: 'key "definition" not found' } });
  });
});

describe('drop_computed_field', () => {
  it('drops a computed field (legacy and metadata API)', async () => {
    expect(await add('get_articles', { function: 'fetch_articles', table_argument: 'author_row' })).toMatchObject(ok);
    expect(await add('full_name', { function: 'full_name' })).toMatchObject(ok);
    expect(await s.query({ type: 'drop_computed_field', args: { table: 'author', name: 'get_articles' } })).toMatchObject(ok);
    expect(await computedFieldsOf('author')).toEqual([{ name: 'full_name', definition: { function: { schema: 'public', name: 'full_name' } } }]);
    expect(await s.metadata({ type: 'pg_drop_computed_field', args: { source: 'default', table: 'author', name: 'full_name', cascade: false } })).toMatchObject(ok);
    expect(await computedFieldsOf('author')).toBeUndefined();
  });

  it('fails for a table that is not tracked and for a computed field that does not exist', async () => {
    expect(await s.query({ type: 'drop_computed_field', args: { table: 'random', name: 'get_articles' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args.table', error: 'table "random" does not exist in source: default' },
    });
    expect(await s.query({ type: 'drop_computed_field', args: { table: 'author', name: 'random' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args.name', error: 'computed field "random" does not exist' },
    });
  });
});

describe('the build', () => {
  it('reports a computed field whose function disappeared, and drops it with the inconsistent metadata', async () => {
    expect(await add('dropped', { function: 'to_be_dropped' })).toMatchObject(ok);
    await s.sql.unsafe('drop function to_be_dropped(author)');
    expect(await s.metadata({ type: 'reload_metadata', args: {} })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.body.inconsistent_objects).toEqual([
      {
        type: 'computed_field',
        name: 'computed_field dropped in table author in source default',
        reason: 'Inconsistent object: in table "author": in computed field "dropped": no such function exists: "to_be_dropped"',
        definition: {
          source: 'default',
          table: { schema: 'public', name: 'author' },
          name: 'dropped',
          definition: { function: { schema: 'public', name: 'to_be_dropped' } },
          comment: null,
        },
      },
    ]);
    expect(await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject({ status: 200 });
    expect(await computedFieldsOf('author')).toBeUndefined();
  });

  it('reports a computed field whose returning table was untracked', async () => {
    expect(await add('get_articles', { function: 'fetch_articles', table_argument: 'author_row' })).toMatchObject(ok);
    const r = await s.metadata({ type: 'pg_untrack_table', args: { table: 'article' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'unexpected', error: 'cannot continue due to new inconsistent metadata' } });
    expect(r.body.internal[0].reason).toBe(
      'Inconsistent object: in table "author": in computed field "get_articles": the computed field "get_articles" cannot be added to table "author" because the function "fetch_articles" returning set of table "article" is not tracked or not found in database',
    );
  });
});

describe('dependents', () => {
  it('a computed field depends on its function', () => {
    const db = s.kernel.api.use(DatabaseToken);
    const md = {
      version: 3,
      sources: [
        {
          name: 'default',
          kind: 'postgres',
          configuration: {},
          tables: [
            { table: { schema: 'public', name: 'author' }, computed_fields: [{ name: 'full_name', definition: { function: { schema: 'public', name: 'full_name' } } }] },
            { table: { schema: 'public', name: 'article' } },
          ],
        },
      ],
    };
    const deps = db.dependents(md, { kind: 'function', source: 'default', function: { schema: 'public', name: 'full_name' } });
    expect(deps.map((d) => [d.id, d.description])).toEqual([['computed_field@default:"public"."author":full_name', 'computed field author.full_name in source "default"']]);
    expect(deps[0]!.target).toEqual({ kind: 'computed_field', source: 'default', table: { schema: 'public', name: 'author' }, name: 'full_name' });
    const after = deps[0]!.remove(md) as typeof md;
    expect(after.sources[0]!.tables[0]).toEqual({ table: { schema: 'public', name: 'author' } });
    expect(db.dependents(md, { kind: 'function', source: 'default', function: { schema: 'public', name: 'other' } })).toEqual([]);
  });
});
