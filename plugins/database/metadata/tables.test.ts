import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../../test/helpers.js';

let s: TestServer;

const ok = { status: 200, body: { message: 'success' } };


const inconsistentTable = (name: string, reason: string) => ({
  type: 'table',
  name: `table ${name} in source default`,
  reason: `Inconsistent object: ${reason}`,
  definition: { schema: 'public', name },
});

beforeAll(async () => {
  s = await startServer();
  await s.runSql(`
    create table author (id serial primary key, name text unique, remarks text);
    create schema hge_tests;
    create table hge_tests.resident (id serial primary key, name text not null);
    create materialized view articles as select name from author;
    create table colors (value text primary key, comment text);
    insert into colors values ('red', '#FF0000'), ('green', '#00FF00');
    create table weekdays (value text primary key);
    insert into weekdays values ('monday'), ('friday');
    create table employees (id serial primary key, name text not null, favorite_color text not null references colors, gets_paid_on text not null references weekdays);
    create table empty_enum (value text primary key);
    create table two_keys (a text, b text, primary key (a, b));
    create table int_comment (value text primary key, rank integer);
    insert into int_comment values ('first', 1);
    create table bad_values (value text primary key);
    insert into bad_values values ('ok'), ('two words'), ('true'), ('1st');
    create table two_bad (value text primary key);
    insert into two_bad values ('a-b'), ('null');
    create table no_key (value text);
  `);
});
afterAll(async () => {
  await s?.stop();
});

beforeEach(async () => {
  expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
});

describe('track_table / untrack_table', () => {
  it('tracks a table in every legacy args form and refuses to track it twice', async () => {
    expect(await s.query({ type: 'track_table', args: 'author' })).toMatchObject(ok);
    expect(await s.query({ type: 'track_table', args: { name: 'author' } })).toEqual(
      expect.objectContaining({ status: 400, body: { code: 'already-tracked', error: 'view/table already tracked: "author"', path: '$.args' } }),
    );
    expect(await s.query({ type: 'untrack_table', args: { table: 'author' } })).toMatchObject(ok);
    expect(await s.query({ type: 'untrack_table', args: { table: 'author' } })).toEqual(
      expect.objectContaining({ status: 400, body: { code: 'already-untracked', error: 'view/table already untracked: "author"', path: '$.args' } }),
    );
    expect(await s.metadata({ type: 'pg_track_table', args: { table: { schema: 'hge_tests', name: 'resident' } } })).toMatchObject(ok);
    expect(await s.query({ type: 'untrack_table', args: { table: { schema: 'hge_tests', name: 'resident' } } })).toMatchObject(ok);
    expect(await s.tables()).toEqual([]);
  });

  it('tracks a materialized view', async () => {
    expect(await s.query({ type: 'track_table', args: { name: 'articles' } })).toMatchObject(ok);
    expect(await s.tables()).toEqual([{ table: { schema: 'public', name: 'articles' } }]);
  });

  it('fails on a table that does not exist', async () => {
    expect(await s.query({ type: 'track_table', args: { table: 'nope' } })).toEqual(
      expect.objectContaining({ status: 400, body: { code: 'not-exists', error: 'no such table/view exists in source: "nope"', path: '$.args' } }),
    );
  });

  it('is for admins only', async () => {
    const user = { 'x-svc-role': 'user', 'x-svc-user-id': '1' };
    expect(await s.query({ type: 'track_table', args: { name: 'author' } }, user)).toEqual(
      expect.objectContaining({ status: 400, body: { code: 'access-denied', error: 'restricted access : admin only', path: '$.args' } }),
    );
    expect(await s.query({ type: 'track_table', args: { name: 'author' } })).toMatchObject(ok);
    expect(await s.query({ type: 'untrack_table', args: { table: 'author' } }, user)).toMatchObject({ status: 400, body: { code: 'access-denied' } });
  });
});

describe('enum tables', () => {
  it('marks a valid enum table as an enum and back', async () => {
    expect(await s.query({ type: 'bulk', args: [{ type: 'track_table', args: { table: 'colors', is_enum: true } }, { type: 'track_table', args: 'weekdays' }] })).toMatchObject({
      status: 200,
    });
    expect(await s.query({ type: 'set_table_is_enum', args: { table: 'weekdays', is_enum: true } })).toMatchObject(ok);
    expect(await s.metadata({ type: 'pg_set_table_is_enum', args: { source: 'default', table: 'colors', is_enum: false } })).toMatchObject(ok);
    expect(await s.tables()).toEqual([{ table: { schema: 'public', name: 'colors' } }, { table: { schema: 'public', name: 'weekdays' }, is_enum: true }]);
    // The values are read in the build and kept for the GraphQL schema.
    const resolved = s.kernel.state().build.outputs.get('sources') as any;
    expect(resolved.sources.get('default').tables.get('"public"."weekdays"').enumValues).toEqual([
      { value: 'friday', comment: null },
      { value: 'monday', comment: null },
    ]);
  });

  it('rejects a table that cannot be an enum, with every reason', async () => {
    expect(await s.query({ type: 'track_table', args: 'employees' })).toMatchObject(ok);
    const reason =
      'the table "employees" cannot be used as an enum for the following reasons:\n' +
      '  • the table’s primary key ("id") must have type "text", not type "integer"\n' +
      '  • the table must have exactly one primary key and optionally one comment column, not 4 columns (favorite_color, gets_paid_on, id, name)\n';
    expect(await s.query({ type: 'set_table_is_enum', args: { table: 'employees', is_enum: true } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: { path: '$.args', code: 'invalid-configuration', error: `Inconsistent object: ${reason}`, internal: [inconsistentTable('employees', reason)] },
      }),
    );
    expect(await s.tables()).toEqual([{ table: { schema: 'public', name: 'employees' } }]);
  });

  it.each([
    ['empty_enum', 'the table "empty_enum" cannot be used as an enum because the table must have at least one row'],
    [
      'two_keys',
      'the table "two_keys" cannot be used as an enum for the following reasons:\n' +
        '  • the table’s primary key must not span multiple columns (a, b)\n' +
        '  • the table must have exactly one primary key and optionally one comment column, not 2 columns (a, b)\n',
    ],
    ['no_key', 'the table "no_key" cannot be used as an enum because the table must have a primary key'],
    ['int_comment', 'the table "int_comment" cannot be used as an enum because the table’s comment column ("rank") must have type "text", not type "integer"'],
    ['bad_values', 'the table "bad_values" cannot be used as an enum because the values 1st, true, and "two words" are not valid GraphQL enum value names'],
    ['two_bad', 'the table "two_bad" cannot be used as an enum because the values "a-b" and "null" are not valid GraphQL enum value names'],
  ])('tracking %s as an enum fails', async (table, reason) => {
    expect(await s.query({ type: 'track_table', args: { table, is_enum: true } })).toEqual(
      expect.objectContaining({ status: 400, body: { path: '$.args', code: 'invalid-configuration', error: `Inconsistent object: ${reason}`, internal: [inconsistentTable(table, reason)] } }),
    );
  });

  it('fails on a table that is not tracked', async () => {
    expect(await s.query({ type: 'set_table_is_enum', args: { table: 'colors', is_enum: true } })).toEqual(
      expect.objectContaining({ status: 400, body: { path: '$.args', code: 'not-exists', error: 'table "colors" does not exist in source: default' } }),
    );
    expect(await s.query({ type: 'set_table_is_enum', args: { table: 'colors' } })).toMatchObject({ status: 400, body: { code: 'parse-failed' } });
  });

  it('re-reads enum values when SQL changes the schema, though of another table', async () => {
    await s.runSql(`create table tones (value text primary key); insert into tones values ('warm'); create table hues (id int primary key);`);
    expect(await s.query({ type: 'track_table', args: { table: 'tones', is_enum: true } })).toMatchObject(ok);
    expect(await s.query({ type: 'track_table', args: { table: 'hues' } })).toMatchObject(ok);
    expect(await s.query({ type: 'run_sql', args: { sql: "insert into tones values ('so-so')" } })).toMatchObject({ status: 200 });
    const r = await s.query({ type: 'run_sql', args: { sql: 'alter table hues add column shade int' } });
    // The statement reloads the source (Note [Enum values]), which finds the row: refused, undone.
    expect(r).toMatchObject({ status: 400, body: { code: 'unexpected', error: 'cannot continue due to new inconsistent metadata' } });
    expect(JSON.stringify(r.body)).toContain('the table \\"tones\\" cannot be used as an enum because the value \\"so-so\\" is not a valid GraphQL enum value name');
    expect(await s.query({ type: 'get_inconsistent_metadata', args: {} })).toMatchObject({ status: 200, body: { is_consistent: true } });
    expect((await s.sql`select count(*)::int as n from information_schema.columns where table_name = 'hues' and column_name = 'shade'`)[0]!.n).toBe(0);
    await s.runSql("delete from tones where value = 'so-so'");
    expect(await s.query({ type: 'untrack_table', args: { table: 'tones' } })).toMatchObject(ok);
    expect(await s.query({ type: 'untrack_table', args: { table: 'hues' } })).toMatchObject(ok);
    await s.runSql('drop table tones; drop table hues');
  });

  it('re-reads enum values on reload_metadata, not when rows change', async () => {
    await s.runSql(`create table moods (value text primary key); insert into moods values ('happy');`);
    expect(await s.query({ type: 'track_table', args: { table: 'moods', is_enum: true } })).toMatchObject(ok);
    // As in Hasura, a new row is not checked until the metadata is reloaded.
    expect(await s.query({ type: 'run_sql', args: { sql: "insert into moods values ('so-so')" } })).toMatchObject({ status: 200 });
    expect(await s.query({ type: 'get_inconsistent_metadata', args: {} })).toMatchObject({ status: 200, body: { is_consistent: true } });
    const reason = 'the table "moods" cannot be used as an enum because the value "so-so" is not a valid GraphQL enum value name';
    expect(await s.query({ type: 'reload_metadata', args: {} })).toMatchObject({
      status: 200,
      body: { message: 'success', is_consistent: false, inconsistent_objects: [inconsistentTable('moods', reason)] },
    });
    expect(await s.query({ type: 'drop_inconsistent_metadata', args: {} })).toMatchObject(ok);
    expect(await s.tables()).toEqual([]);
    await s.runSql('drop table moods');
  });
});
