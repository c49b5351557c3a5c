/**
 * Golden tests of select-permission filters that use computed fields (a set-returning one as an
 * expression on its rows, a scalar one with operators, one taking the session) and `_in`/`_nin`
 * on session variables holding a list (PostgreSQL's array literal, as Hasura takes it, or a JSON
 * array). Each role must see exactly the rows its filter allows, through every root field; a
 * session variable that is not a list is an error, never a wider filter. Before these filters
 * compiled, such a role silently lost the table.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null);
insert into author (name) values ('Author 1'), ('Author 2'), ('Author 3');
create table article (id serial primary key, title text not null, author_id int not null references author(id), is_published boolean not null);
insert into article (title, author_id, is_published) values ('A1', 1, true), ('A2', 2, true), ('A3', 3, false), ('A4', 1, false);
create function get_articles(author_row author) returns setof article as $$ select * from article where author_id = author_row.id $$ language sql stable;
create table student (id serial primary key, name text not null, physics int not null, chemistry int not null);
insert into student (name, physics, chemistry) values ('clarke', 100, 130), ('blake', 110, 123), ('leonel', 50, 60);
create function total_marks(s student) returns int as $$ select s.physics + s.chemistry $$ language sql stable;
create function total_marks_offset(svc_session json, s student) returns int as $$
  select s.physics + s.chemistry - (svc_session ->> 'x-svc-offset-marks')::int
$$ language sql stable;
create table artist (id serial primary key, name text not null);
insert into artist (name) values ('Camilla'), ('DSP'), ('Akon');
create table note (id serial primary key, meta jsonb, owner jsonb);
insert into note (meta) values ('{"tag": "a", "n": 1}'), ('{"tag": "b"}');
`;

const server = useServer(SEED);
const as = (role: string, vars: Record<string, string> = {}) => ({ 'x-svc-role': role, ...vars });

beforeAll(async () => {
  const perm = (table: string, role: string, permission: Record<string, unknown>) => ({ type: 'pg_create_select_permission', args: { table, role, permission } });
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'student' } },
      { type: 'pg_track_table', args: { table: 'artist' } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'pg_add_computed_field', args: { table: 'author', name: 'get_articles', definition: { function: 'get_articles', table_argument: 'author_row' } } },
      { type: 'pg_add_computed_field', args: { table: 'student', name: 'total_marks', definition: { function: 'total_marks' } } },
      {
        type: 'pg_add_computed_field',
        args: { table: 'student', name: 'total_marks_offset', definition: { function: 'total_marks_offset', table_argument: 's', session_argument: 'svc_session' } },
      },
      perm('author', 'reader', { columns: ['name'], filter: { get_articles: { is_published: { _eq: true } } }, allow_aggregations: true }),
      perm('article', 'reader', { columns: ['title'], filter: {} }),
      perm('student', 'tutor', { columns: ['name'], filter: { total_marks: { _gte: 230 } } }),
      perm('student', 'tutor_session', { columns: ['name'], computed_fields: ['total_marks', 'total_marks_offset'], filter: { total_marks_offset: { _gte: 220 } } }),
      // No columns, only a computed field: the table stays in the role's schema (Hasura).
      perm('student', 'marks_only', { columns: [], computed_fields: ['total_marks'], filter: {} }),
      perm('artist', 'free_in', { columns: ['name'], filter: { name: { _in: 'X-Svc-Free-Artists' } } }),
      perm('artist', 'free_nin', { columns: ['name'], filter: { name: { _nin: 'X-Svc-Premium-Artists' } } }),
      perm('artist', 'ids_in', { columns: ['name'], filter: { id: { _in: 'X-Svc-Allowed-Ids' } } }),
      { type: 'pg_track_table', args: { table: 'note' } },
      perm('note', 'tagged', { columns: ['id', 'owner'], filter: { meta: { _contains: 'X-Svc-Meta' } } }),
      { type: 'pg_create_insert_permission', args: { table: 'note', role: 'tagged', permission: { columns: ['meta'], check: {}, set: { owner: 'X-Svc-Owner' } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
  const inconsistent = await server.metadata({ type: 'get_inconsistent_metadata', args: {} });
  expect(inconsistent.body).toMatchObject({ is_consistent: true });
});

describe('a filter on a set-returning computed field', () => {
  it('shows the authors with a published article, and only them', async () => {
    expect(await server.gql('{ author(order_by: {name: asc}) { name } }', undefined, as('reader'))).toEqual({ data: { author: [{ name: 'Author 1' }, { name: 'Author 2' }] } });
  });

  it('holds in aggregates and through a relationship from the other side', async () => {
    expect(await server.gql('{ author_aggregate { aggregate { count } } }', undefined, as('reader'))).toEqual({ data: { author_aggregate: { aggregate: { count: 2 } } } });
    // The where of the request narrows within the filter; it cannot widen it.
    expect(await server.gql('{ author(where: {name: {_eq: "Author 3"}}) { name } }', undefined, as('reader'))).toEqual({ data: { author: [] } });
  });
});

describe('a filter on a scalar computed field', () => {
  it('compares the function result', async () => {
    expect(await server.gql('{ student(order_by: {name: asc}) { name } }', undefined, as('tutor'))).toEqual({ data: { student: [{ name: 'blake' }, { name: 'clarke' }] } });
  });

  it('with the session argument filled from the session variables', async () => {
    const q = '{ student(order_by: {name: asc}) { name total_marks total_marks_offset } }';
    expect(await server.gql(q, undefined, as('tutor_session', { 'x-svc-offset-marks': '10' }))).toEqual({
      data: { student: [{ name: 'blake', total_marks: 233, total_marks_offset: 223 }, { name: 'clarke', total_marks: 230, total_marks_offset: 220 }] },
    });
    // A larger offset: blake's 233 - 12 = 221 passes, clarke's 230 - 12 = 218 does not.
    expect(await server.gql(q, undefined, as('tutor_session', { 'x-svc-offset-marks': '12' }))).toEqual({
      data: { student: [{ name: 'blake', total_marks: 233, total_marks_offset: 221 }] },
    });
  });

  it('a table whose permission gives only computed fields is still there, with only them', async () => {
    const r0 = await server.gql('{ student { total_marks } }', undefined, as('marks_only'));
    expect(r0.data.student.map((s: { total_marks: number }) => s.total_marks).sort()).toEqual([110, 230, 233]);
    const r = await server.gql('{ student { name } }', undefined, as('marks_only'));
    expect(r.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' }, message: "field 'name' not found in type: 'student'" });
  });
});

describe('a jsonb column and a session variable holding JSON', () => {
  it('a filter reads the variable as JSON (not as a JSON string)', async () => {
    const ids = async (meta: string) => (await server.gql('{ note(order_by: {id: asc}) { id } }', undefined, as('tagged', { 'x-svc-meta': meta }))).data?.note.map((n: { id: number }) => n.id);
    expect(await ids('{"tag": "a"}')).toEqual([1]);
    expect(await ids('{}')).toEqual([1, 2]);
    expect(await ids('"a"')).toEqual([]);
    const bad = await server.gql('{ note { id } }', undefined, as('tagged', { 'x-svc-meta': 'not json' }));
    expect(bad.data).toBeUndefined();
  });

  it('an insert preset writes the variable as JSON', async () => {
    const r = await server.gql('mutation { insert_note_one(object: {meta: {tag: "c"}}) { id owner } }', undefined, as('tagged', { 'x-svc-meta': '{"tag": "c"}', 'x-svc-owner': '{"user": 7}' }));
    expect(r.data.insert_note_one.owner).toEqual({ user: 7 });
    expect(await server.sql`select owner from note where id = ${r.data.insert_note_one.id}`).toEqual([{ owner: { user: 7 } }]);
  });
});

describe('_in and _nin on a session variable holding a list', () => {
  const names = (r: any) => r.data?.artist?.map((a: { name: string }) => a.name);
  const q = '{ artist(order_by: {name: asc}) { name } }';

  it("takes PostgreSQL's array literal, as Hasura does", async () => {
    expect(names(await server.gql(q, undefined, as('free_in', { 'x-svc-free-artists': '{Camilla,DSP}' })))).toEqual(['Camilla', 'DSP']);
    expect(names(await server.gql(q, undefined, as('free_in', { 'x-svc-free-artists': '{}' })))).toEqual([]);
    expect(names(await server.gql(q, undefined, as('free_nin', { 'x-svc-premium-artists': '{Akon}' })))).toEqual(['Camilla', 'DSP']);
    expect(names(await server.gql(q, undefined, as('free_nin', { 'x-svc-premium-artists': '{}' })))).toEqual(['Akon', 'Camilla', 'DSP']);
    expect(names(await server.gql(q, undefined, as('ids_in', { 'x-svc-allowed-ids': '{1,3}' })))).toEqual(['Akon', 'Camilla']);
    // Quoted elements keep their commas and spaces.
    expect(names(await server.gql(q, undefined, as('free_in', { 'x-svc-free-artists': '{"DSP, Inc",Akon}' })))).toEqual(['Akon']);
  });

  it('and a JSON array', async () => {
    expect(names(await server.gql(q, undefined, as('free_in', { 'x-svc-free-artists': '["DSP"]' })))).toEqual(['DSP']);
    expect(names(await server.gql(q, undefined, as('ids_in', { 'x-svc-allowed-ids': '[2]' })))).toEqual(['DSP']);
  });

  it('a value that is not a list, or of the wrong type, is an error and no rows', async () => {
    for (const [role, header, value] of [
      ['free_in', 'x-svc-free-artists', 'Camilla'],
      ['ids_in', 'x-svc-allowed-ids', '{1,x}'],
      ['ids_in', 'x-svc-allowed-ids', '{1'],
    ] as const) {
      const r = await server.gql(q, undefined, as(role, { [header]: value }));
      expect(r.data, `${role} ${value}`).toBeUndefined();
      expect(r.errors[0].extensions.code, `${role} ${value}`).toMatch(/data-exception|postgres-error/);
    }
    const missing = await server.gql(q, undefined, as('free_in'));
    expect(missing.data).toBeUndefined();
    expect(missing.errors[0].message).toMatch(/x-svc-free-artists/);
  });
});
