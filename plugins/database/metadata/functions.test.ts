/**
 * Golden HTTP tests of the functions command group: track/untrack (metadata and legacy forms),
 * the build's checks of a tracked function, the name clash with tables, function permissions and
 * the dependency of a tracked function on its return table.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const s = useServer(`
    create table author (id serial primary key, name text);
    create table article (id serial primary key, title text, author_id int references author(id));
    create table untracked_rows (id int);
    create table test1 (id serial primary key);
    create function search_articles(search text) returns setof article as $$
      select * from article where title ilike ('%' || search || '%')
    $$ language sql stable;
    create function add_article(title text) returns setof article as $$
      insert into article (title) values (title) returning *
    $$ language sql volatile;
    create function hello() returns text as $$ select 'hello'::text $$ language sql stable;
    create function overloaded(x int) returns setof article as $$ select * from article $$ language sql stable;
    create function overloaded(x text) returns setof article as $$ select * from article $$ language sql stable;
    create function articles_for_session(hasura_session json) returns setof article as $$
      select * from article
    $$ language sql stable;
    create function untracked_result() returns setof untracked_rows as $$ select * from untracked_rows $$ language sql stable;
    create function test1() returns setof author as $$ select * from author $$ language sql stable;
    create function "bad name"() returns setof article as $$ select * from article $$ language sql stable;
    create function to_be_dropped() returns setof article as $$ select * from article $$ language sql stable;
  `);

beforeEach(async () => {
  expect((await s.metadata({ type: 'clear_metadata', args: {} })).status).toBe(200);
  for (const name of ['author', 'article']) {
    expect(await s.metadata({ type: 'pg_track_table', args: { table: name } })).toMatchObject({ status: 200 });
  }
});

const functionsOf = async () => {
  const r = await s.metadata({ type: 'export_metadata', args: {} });
  return r.body.sources.find((x: { name: string }) => x.name === 'default').functions;
};
const ok = { status: 200, body: { message: 'success' } };

describe('track_function', () => {
  it('tracks a function (legacy v1 with {schema, name}, or a bare name) and exports it', async () => {
    expect(await s.query({ type: 'track_function', args: { schema: 'public', name: 'search_articles' } })).toMatchObject(ok);
    expect(await s.query({ type: 'track_function', args: 'articles_for_session' })).toMatchObject(ok);
    expect(await functionsOf()).toEqual([
      { function: { schema: 'public', name: 'search_articles' } },
      { function: { schema: 'public', name: 'articles_for_session' } },
    ]);
  });

  it('tracks with a configuration and a comment (metadata API and legacy v2), storing only the given keys', async () => {
    const r = await s.metadata({
      type: 'pg_track_function',
      args: { function: { schema: 'public', name: 'articles_for_session' }, source: 'default', configuration: { session_argument: 'hasura_session' }, comment: 'per session' },
    });
    expect(r).toMatchObject(ok);
    const legacy = await s.query({ type: 'track_function', version: 2, args: { function: 'add_article', configuration: { exposed_as: 'mutation' } } });
    expect(legacy).toMatchObject(ok);
    expect(await functionsOf()).toEqual([
      { function: { schema: 'public', name: 'articles_for_session' }, configuration: { session_argument: 'hasura_session' }, comment: 'per session' },
      { function: { schema: 'public', name: 'add_article' }, configuration: { exposed_as: 'mutation' } },
    ]);
  });

  it('tracks a VOLATILE function without exposed_as, and under the query root when asked', async () => {
    expect(await s.metadata({ type: 'pg_track_function', args: { function: 'add_article' } })).toMatchObject(ok);
    expect(await s.metadata({ type: 'pg_untrack_function', args: { function: 'add_article' } })).toMatchObject(ok);
    expect(await s.metadata({ type: 'pg_track_function', args: { function: 'add_article', configuration: { exposed_as: 'query' } } })).toMatchObject(ok);
    expect(await functionsOf()).toEqual([{ function: { schema: 'public', name: 'add_article' }, configuration: { exposed_as: 'query' } }]);
  });

  it('refuses a function that is already tracked', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles' } });
    expect(r).toEqual(expect.objectContaining({ status: 400, body: { code: 'already-tracked', path: '$.args', error: 'function already tracked: "search_articles"' } }));
  });

  it('refuses a source that does not exist', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles', source: 'nope' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args.source', error: 'source with name "nope" does not exist' } });
  });

  it('reports a function that does not exist as an invalid configuration', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: { schema: 'public', name: 'nope' } } });
    const reason = 'Inconsistent object: in function "nope": no such function exists: "nope"';
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 'invalid-configuration',
      path: '$.args',
      error: reason,
      internal: [{ type: 'function', name: 'function nope in source default', reason, definition: { schema: 'public', name: 'nope' } }],
    });
    expect(await functionsOf()).toBeUndefined();
  });

  it('refuses an overloaded function', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'overloaded' } });
    expect(r).toMatchObject({
      status: 400,
      body: {
        code: 'invalid-configuration',
        error: 'Inconsistent object: in function "overloaded": function "overloaded" is overloaded. Overloaded functions are not supported',
      },
    });
  });

  it('refuses a function that does not return a table, with every reason', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'hello' } });
    expect(r).toMatchObject({
      status: 400,
      body: {
        code: 'invalid-configuration',
        path: '$.args',
        error:
          'Inconsistent object: in function "hello": the function "hello" cannot be tracked for the following reasons:\n' +
          '  • the function does not return a "COMPOSITE" type\n' +
          '  • the function does not return a table\n',
      },
    });
  });

  it('refuses a name that is not a GraphQL identifier', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'bad name' } });
    expect(r.body.error).toBe('Inconsistent object: in function "bad name": the function "bad name" cannot be tracked because function name is not a legal GraphQL identifier');
  });

  it('checks the session argument: it must exist and be of type json', async () => {
    const missing = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles', configuration: { session_argument: 'session' } } });
    expect(missing.body.error).toBe(
      'Inconsistent object: in function "search_articles": the function "search_articles" cannot be tracked because given session argument "session" not the input argument of the function',
    );
    const notJson = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles', configuration: { session_argument: 'search' } } });
    expect(notJson.body.error).toBe(
      'Inconsistent object: in function "search_articles": the function "search_articles" cannot be tracked because given session argument "search" is not of type json',
    );
  });

  it('refuses to expose a function that is not VOLATILE as a mutation', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles', configuration: { exposed_as: 'mutation' } } });
    expect(r.body.error).toBe(
      'Inconsistent object: in function "search_articles": the function "search_articles" cannot be tracked because the function was requested to be exposed as a mutation, but is not marked VOLATILE. Maybe the function was given the wrong volatility when it was defined?',
    );
  });

  it('refuses a function whose return table is not tracked', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'untracked_result' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'invalid-configuration', error: 'Inconsistent object: table "untracked_rows" is not tracked' } });
  });

  it('validates the arguments', async () => {
    const r = await s.metadata({ type: 'pg_track_function', args: { function: 'search_articles', configuration: { exposed_as: 'subscription' } } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args.configuration.exposed_as', error: 'expected "query" or "mutation"' } });
    const noFunction = await s.metadata({ type: 'pg_track_function', args: {} });
    expect(noFunction).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.args', error: 'key "function" not found' } });
  });

  it('accepts legacy versions 1 and 2 only', async () => {
    const r = await s.query({ type: 'track_function', version: 3, args: { function: 'search_articles' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.version', error: 'expected 1 or 2, encountered 3' } });
  });
});

describe('tables and functions of the same name', () => {
  it('refuses a function named like a tracked table', async () => {
    expect(await s.query({ type: 'track_table', args: { name: 'test1' } })).toMatchObject(ok);
    const r = await s.query({ type: 'track_function', args: { name: 'test1' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$.args', error: 'table with name "test1" already exists' } });
  });

  it('refuses a table named like a tracked function', async () => {
    expect(await s.query({ type: 'track_function', args: { name: 'test1' } })).toMatchObject(ok);
    const r = await s.query({ type: 'track_table', args: { name: 'test1' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$.args', error: 'function with name "test1" already exists' } });
  });
});

describe('untrack_function', () => {
  it('untracks (metadata API and legacy {schema, name}) and fails when not tracked', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    expect(await s.query({ type: 'untrack_function', args: { schema: 'public', name: 'search_articles' } })).toMatchObject(ok);
    expect(await functionsOf()).toBeUndefined();
    const r = await s.metadata({ type: 'pg_untrack_function', args: { function: { schema: 'public', name: 'search_articles' }, source: 'default' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args', error: 'function "search_articles" not found in the cache' } });
  });
});

describe('a tracked function depends on its return table', () => {
  it('blocks untracking the table unless cascade, which untracks the function', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    const r = await s.metadata({ type: 'pg_untrack_table', args: { table: 'article' } });
    expect(r).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: function search_articles in source "default"' },
    });
    expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'article', cascade: true } })).toMatchObject(ok);
    expect(await functionsOf()).toBeUndefined();
  });
});

describe('the build', () => {
  it('reports a tracked function that disappeared from the database', async () => {
    expect(await s.query({ type: 'track_function', args: 'to_be_dropped' })).toMatchObject(ok);
    await s.sql.unsafe('drop function to_be_dropped()');
    expect(await s.metadata({ type: 'reload_metadata', args: {} })).toMatchObject({ status: 200 });
    const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
    expect(r.body.inconsistent_objects).toEqual([
      {
        type: 'function',
        name: 'function to_be_dropped in source default',
        reason: 'Inconsistent object: in function "to_be_dropped": no such function exists: "to_be_dropped"',
        definition: { schema: 'public', name: 'to_be_dropped' },
      },
    ]);
    expect(await s.metadata({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject({ status: 200 });
    expect(await functionsOf()).toBeUndefined();
  });
});

describe('function permissions', () => {
  const withSelectPermission = async () => {
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const source = exported.sources[0];
    source.tables = source.tables.map((t: { table: { name: string } }) =>
      t.table.name === 'article' ? { ...t, select_permissions: [{ role: 'user', permission: { columns: ['id', 'title'], filter: {} } }] } : t,
    );
    expect(await s.metadata({ type: 'replace_metadata', args: exported })).toMatchObject({ status: 200 });
  };

  it('needs the function to be tracked', async () => {
    const r = await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', path: '$.args', error: 'function "search_articles" not found in the cache' } });
  });

  it("needs a select permission of the role on the function's return table", async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    const r = await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user', source: 'default' } });
    expect(r).toMatchObject({
      status: 400,
      body: {
        code: 'not-supported',
        path: '$.args',
        error: `function permission can only be added when the function's return table "article" has select permission configured for role: "user"`,
      },
    });
  });

  it('creates (newest first), refuses duplicates, drops, and refuses to drop a missing one', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    await withSelectPermission();
    expect(await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } })).toMatchObject(ok);
    expect(await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args', error: 'permission of role "user" already exists for function "search_articles" in source: "default"' },
    });
    expect(await functionsOf()).toEqual([{ function: { schema: 'public', name: 'search_articles' }, permissions: [{ role: 'user' }] }]);
    expect(await s.metadata({ type: 'pg_drop_function_permission', args: { function: 'search_articles', role: 'user' } })).toMatchObject(ok);
    expect(await functionsOf()).toEqual([{ function: { schema: 'public', name: 'search_articles' } }]);
    expect(await s.metadata({ type: 'pg_drop_function_permission', args: { function: 'search_articles', role: 'user' } })).toMatchObject({
      status: 400,
      body: { code: 'not-exists', path: '$.args', error: 'permission of role "user" does not exist for function "search_articles" in source: "default"' },
    });
  });

  it('keeps the permissions in Hasura order: the newest first', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    exported.sources[0].tables = exported.sources[0].tables.map((t: { table: { name: string } }) =>
      t.table.name === 'article'
        ? { ...t, select_permissions: ['a', 'b'].map((role) => ({ role, permission: { columns: ['id'], filter: {} } })) }
        : t,
    );
    expect(await s.metadata({ type: 'replace_metadata', args: exported })).toMatchObject({ status: 200 });
    for (const role of ['a', 'b']) expect(await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role } })).toMatchObject(ok);
    expect((await functionsOf())[0].permissions).toEqual([{ role: 'b' }, { role: 'a' }]);
  });

  it('go with the function when it is untracked', async () => {
    expect(await s.query({ type: 'track_function', args: 'search_articles' })).toMatchObject(ok);
    await withSelectPermission();
    expect(await s.metadata({ type: 'pg_create_function_permission', args: { function: 'search_articles', role: 'user' } })).toMatchObject(ok);
    expect(await s.metadata({ type: 'pg_untrack_function', args: { function: 'search_articles' } })).toMatchObject(ok);
    expect(await functionsOf()).toBeUndefined();
  });
});
