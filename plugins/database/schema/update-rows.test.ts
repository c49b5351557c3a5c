/**
 * Note [Updates by key] (./update-rows.ts): a run of `update_<t>_many`'s updates that each name
 * a row by its primary key and set the same columns is one statement. A statement-level trigger
 * counts the statements that update `track`; each test also reads the table back as admin, and
 * the oracle at the end runs random lists one update per request against the same rows.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rowsById, seededRandom, useServer } from '../../../test/helpers.js';

const SEED = `
create table album (id serial primary key, title text not null);
create table track (id serial primary key, album_id int references album(id), name text not null, bytes int not null default 0, price numeric(8,2), code text unique, info jsonb, tags text[], owner text);
create table thing (id uuid primary key, label text not null, n int not null default 0);
create table pair (a int not null, b int not null, v int not null default 0, primary key (a, b));
create collation nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
create table word (w varchar(20) primary key, n int not null default 0);
create table folded (w text collate nocase primary key, n int not null default 0);
create table padded (w char(4) primary key, n int not null default 0);
create extension if not exists citext;
create table tag (name citext primary key, n int not null default 0);
create table tally (tbl text primary key, n int not null);
create function count_statement() returns trigger language plpgsql as $$ begin update tally set n = n + 1 where tbl = tg_table_name; return null; end $$;
create trigger track_statements after update on track for each statement execute function count_statement();
create trigger thing_statements after update on thing for each statement execute function count_statement();
create trigger pair_statements after update on pair for each statement execute function count_statement();
create trigger word_statements after update on word for each statement execute function count_statement();
create trigger folded_statements after update on folded for each statement execute function count_statement();
create trigger padded_statements after update on padded for each statement execute function count_statement();
create trigger tag_statements after update on tag for each statement execute function count_statement();
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const rows = (from: string, columns?: string) => rowsById(server, from, columns);
const as = (role: string, id: string): Record<string, string> => ({ 'x-svc-role': role, 'x-svc-user-id': id });

/** How many UPDATE statements wrote `table` since the last test began. */
async function statements(table: string): Promise<number> {
  const r = await server.runSql(`select n from tally where tbl = '${table}'`);
  return Number(r.result[1][0]);
}

const U1 = '0b7e5d1c-8a4f-4c2e-9d3b-1f2e3d4c5b6a';
const U2 = 'c3d4e5f6-a7b8-4c9d-8e1f-2a3b4c5d6e7f';

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'album' } },
      { type: 'pg_track_table', args: { table: 'track' } },
      { type: 'pg_track_table', args: { table: 'thing' } },
      { type: 'pg_track_table', args: { table: 'pair' } },
      { type: 'pg_track_table', args: { table: 'word' } },
      { type: 'pg_track_table', args: { table: 'folded' } },
      { type: 'pg_track_table', args: { table: 'padded' } },
      { type: 'pg_track_table', args: { table: 'tag' } },
      { type: 'pg_create_object_relationship', args: { table: 'track', name: 'album', using: { foreign_key_constraint_on: 'album_id' } } },
      { type: 'pg_create_select_permission', args: { table: 'track', role: 'user', permission: { columns: ['id', 'name', 'bytes', 'owner'], filter: { bytes: { _lt: 500 } } } } },
      {
        type: 'pg_create_update_permission',
        args: { table: 'track', role: 'user', permission: { columns: ['name', 'bytes'], filter: { owner: { _eq: 'X-Svc-User-Id' } }, check: { bytes: { _lt: 1000 } }, set: { owner: 'X-Svc-User-Id' } } },
      },
      // A filter through a relationship to another table: still one statement.
      { type: 'pg_create_select_permission', args: { table: 'album', role: 'editor', permission: { columns: ['id', 'title'], filter: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'track', role: 'editor', permission: { columns: ['id', 'name', 'bytes'], filter: {} } } },
      { type: 'pg_create_update_permission', args: { table: 'track', role: 'editor', permission: { columns: ['name', 'bytes'], filter: { album: { title: { _eq: 'Open' } } }, check: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.runSql(`
    truncate track, album, thing, pair, word, folded, padded, tag, tally restart identity cascade;
    insert into album (title) values ('Open'), ('Closed');
    insert into track (album_id, name, bytes, price, code, owner) select case when i <= 4 then 1 else 2 end, 't' || i, i * 10, i, 'c' || i, case when i % 2 = 1 then 'u1' else 'u2' end from generate_series(1, 6) as i;
    insert into thing (id, label) values ('${U1}', 'one'), ('${U2}', 'two');
    insert into pair (a, b) values (1, 1), (1, 2), (2, 1);
    insert into word (w) values ('a'), ('A'), ('\u00e9'), ('e\u0301'), ('\ufffd');
    insert into folded (w) values ('abc'), ('x');
    insert into padded (w) values ('ab'), ('cd');
    insert into tag (name) values ('Abc'), ('xyz'), ('\u00c9t\u00e9');
    insert into tally values ('track', 0), ('thing', 0), ('pair', 0), ('word', 0), ('folded', 0), ('padded', 0), ('tag', 0);
  `);
});

const MANY = 'mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows returning { id name bytes } } }';

describe('update_<t>_many: updates each naming a row by its primary key, as one statement', () => {
  it('a list of updates by id setting the same columns is one statement, each update answering its own row', async () => {
    const u = [1, 3, 2, 6].map((id) => ({ where: { id: { _eq: id } }, _set: { name: `n${id}` }, _inc: { bytes: id } }));
    expect(await q(MANY, { u })).toEqual({
      data: {
        update_track_many: [
          { affected_rows: 1, returning: [{ id: 1, name: 'n1', bytes: 11 }] },
          { affected_rows: 1, returning: [{ id: 3, name: 'n3', bytes: 33 }] },
          { affected_rows: 1, returning: [{ id: 2, name: 'n2', bytes: 22 }] },
          { affected_rows: 1, returning: [{ id: 6, name: 'n6', bytes: 66 }] },
        ],
      },
    });
    expect(await statements('track')).toBe(1);
    expect(await rows('track', 'id, name, bytes')).toEqual([
      { id: 1, name: 'n1', bytes: 11 },
      { id: 2, name: 'n2', bytes: 22 },
      { id: 3, name: 'n3', bytes: 33 },
      { id: 4, name: 't4', bytes: 40 },
      { id: 5, name: 't5', bytes: 50 },
      { id: 6, name: 'n6', bytes: 66 },
    ]);
  });

  it('the same list written in the document, not in a variable: one statement', async () => {
    expect(
      await q(`mutation { update_track_many(updates: [{where: {id: {_eq: 4}}, _set: {price: 1.5}}, {where: {_and: [{id: {_eq: 5}}]}, _set: {price: null}}]) { affected_rows __typename } }`),
    ).toEqual({ data: { update_track_many: [{ affected_rows: 1, __typename: 'track_mutation_response' }, { affected_rows: 1, __typename: 'track_mutation_response' }] } });
    expect(await statements('track')).toBe(1);
    expect((await rows('track', 'id, price')).slice(3, 5)).toEqual([
      { id: 4, price: 1.5 },
      { id: 5, price: null },
    ]);
  });

  it('the list written in the document with variables for its keys and values: one statement, for each request its values', async () => {
    const doc = `mutation ($a: Int!, $b: Int!, $x: String!, $y: String!) { update_track_many(updates: [
        {where: {id: {_eq: $a}}, _set: {name: $x}}, {where: {id: {_eq: $b}}, _set: {name: $y}}]) { affected_rows returning { id name } } }`;
    expect(await q(doc, { a: 1, b: 2, x: 'p', y: 'q' })).toEqual({
      data: { update_track_many: [{ affected_rows: 1, returning: [{ id: 1, name: 'p' }] }, { affected_rows: 1, returning: [{ id: 2, name: 'q' }] }] },
    });
    expect(await statements('track')).toBe(1);
    // The same key twice: two statements, the later update seeing the earlier's row.
    expect(await q(doc, { a: 3, b: 3, x: 'r', y: 's' })).toEqual({
      data: { update_track_many: [{ affected_rows: 1, returning: [{ id: 3, name: 'r' }] }, { affected_rows: 1, returning: [{ id: 3, name: 's' }] }] },
    });
    expect(await statements('track')).toBe(3);
  });

  it('a key that names no row: that update answers nothing, the others their rows', async () => {
    const u = [{ where: { id: { _eq: 2 } }, _set: { name: 'x' } }, { where: { id: { _eq: 99 } }, _set: { name: 'y' } }, { where: { id: { _eq: 5 } }, _set: { name: 'z' } }];
    expect(await q(MANY, { u })).toEqual({
      data: {
        update_track_many: [
          { affected_rows: 1, returning: [{ id: 2, name: 'x', bytes: 20 }] },
          { affected_rows: 0, returning: [] },
          { affected_rows: 1, returning: [{ id: 5, name: 'z', bytes: 50 }] },
        ],
      },
    });
    expect(await statements('track')).toBe(1);
  });

  it('a key met again starts a new statement: the later update sees what the earlier wrote', async () => {
    const u = [
      { where: { id: { _eq: 1 } }, _inc: { bytes: 1 } },
      { where: { id: { _eq: 2 } }, _inc: { bytes: 1 } },
      { where: { id: { _eq: 1 } }, _inc: { bytes: 5 } },
      { where: { id: { _eq: 3 } }, _inc: { bytes: 5 } },
    ];
    expect(await q(MANY, { u })).toEqual({
      data: {
        update_track_many: [
          { affected_rows: 1, returning: [{ id: 1, name: 't1', bytes: 11 }] },
          { affected_rows: 1, returning: [{ id: 2, name: 't2', bytes: 21 }] },
          { affected_rows: 1, returning: [{ id: 1, name: 't1', bytes: 16 }] },
          { affected_rows: 1, returning: [{ id: 3, name: 't3', bytes: 35 }] },
        ],
      },
    });
    expect(await statements('track')).toBe(2);
  });

  it('uuid keys are compared as the database compares them: the same key in capitals is a new statement', async () => {
    const doc = 'mutation ($u: [thing_updates!]!) { update_thing_many(updates: $u) { affected_rows returning { id n } } }';
    const u = [
      { where: { id: { _eq: U1 } }, _inc: { n: 1 } },
      { where: { id: { _eq: U2 } }, _inc: { n: 2 } },
      { where: { id: { _eq: U1.toUpperCase() } }, _inc: { n: 10 } },
    ];
    expect(await q(doc, { u })).toEqual({
      data: {
        update_thing_many: [
          { affected_rows: 1, returning: [{ id: U1, n: 1 }] },
          { affected_rows: 1, returning: [{ id: U2, n: 2 }] },
          { affected_rows: 1, returning: [{ id: U1, n: 11 }] },
        ],
      },
    });
    expect(await statements('thing')).toBe(2);
  });

  it('text keys under a deterministic collation are told apart by their bytes: one statement, each key its own row', async () => {
    const doc = 'mutation ($u: [word_updates!]!) { update_word_many(updates: $u) { affected_rows returning { w n } } }';
    // 'A' and 'a', and an e with its accent composed and decomposed, are rows apart.
    const keys = ['a', 'A', '\u00e9', 'e\u0301', 'nothing'];
    const u = keys.map((w, i) => ({ where: { w: { _eq: w } }, _inc: { n: 10 ** i } }));
    expect(await q(doc, { u })).toEqual({
      data: {
        update_word_many: [
          ...keys.slice(0, 4).map((w, i) => ({ affected_rows: 1, returning: [{ w, n: 10 ** i }] })),
          { affected_rows: 0, returning: [] },
        ],
      },
    });
    expect(await statements('word')).toBe(1);
    // The same key again starts a new statement.
    expect(await q(doc, { u: [{ where: { w: { _eq: 'a' } }, _inc: { n: 1 } }, { where: { w: { _eq: 'a' } }, _inc: { n: 1 } }] })).toMatchObject({
      data: { update_word_many: [{ returning: [{ w: 'a', n: 2 }] }, { returning: [{ w: 'a', n: 3 }] }] },
    });
    expect(await statements('word')).toBe(3);
  });

  it('text keys the database may take as one row though their texts differ: a statement each', async () => {
    // A case-insensitive collation: 'abc' and 'ABC' name one row.
    const folded = 'mutation ($u: [folded_updates!]!) { update_folded_many(updates: $u) { affected_rows returning { w n } } }';
    expect(await q(folded, { u: [{ where: { w: { _eq: 'abc' } }, _inc: { n: 1 } }, { where: { w: { _eq: 'ABC' } }, _inc: { n: 10 } }, { where: { w: { _eq: 'x' } }, _inc: { n: 1 } }] })).toEqual({
      data: { update_folded_many: [{ affected_rows: 1, returning: [{ w: 'abc', n: 1 }] }, { affected_rows: 1, returning: [{ w: 'abc', n: 11 }] }, { affected_rows: 1, returning: [{ w: 'x', n: 1 }] }] },
    });
    expect(await statements('folded')).toBe(3);
    // char(n) ignores trailing spaces: 'ab' and 'ab  ' name one row.
    const padded = 'mutation ($u: [padded_updates!]!) { update_padded_many(updates: $u) { affected_rows returning { n } } }';
    expect(await q(padded, { u: [{ where: { w: { _eq: 'ab' } }, _inc: { n: 1 } }, { where: { w: { _eq: 'ab  ' } }, _inc: { n: 10 } }] })).toEqual({
      data: { update_padded_many: [{ affected_rows: 1, returning: [{ n: 1 }] }, { affected_rows: 1, returning: [{ n: 11 }] }] },
    });
    expect(await statements('padded')).toBe(2);
  });

  it('citext keys in ASCII join a run by their small letters: another case of one is a new statement; keys beyond ASCII a statement each', async () => {
    const doc = 'mutation ($u: [tag_updates!]!) { update_tag_many(updates: $u) { affected_rows returning { name n } } }';
    const u = (names: string[]) => ({ u: names.map((name, i) => ({ where: { name: { _eq: name } }, _inc: { n: 10 ** i } })) });
    expect(await q(doc, u(['abc', 'XYZ']))).toEqual({
      data: { update_tag_many: [{ affected_rows: 1, returning: [{ name: 'Abc', n: 1 }] }, { affected_rows: 1, returning: [{ name: 'xyz', n: 10 }] }] },
    });
    expect(await statements('tag')).toBe(1);
    // 'ABC' names the row 'abc' named: a new statement, which sees the earlier's row.
    expect(await q(doc, u(['abc', 'ABC']))).toEqual({
      data: { update_tag_many: [{ affected_rows: 1, returning: [{ name: 'Abc', n: 2 }] }, { affected_rows: 1, returning: [{ name: 'Abc', n: 12 }] }] },
    });
    expect(await statements('tag')).toBe(3);
    // Beyond ASCII the database's case folding follows its locale: such a key keeps its update a
    // statement of its own (and the next, alone, is one too).
    expect(await q(doc, u(['\u00c9t\u00e9', 'xyz']))).toEqual({
      data: { update_tag_many: [{ affected_rows: 1, returning: [{ name: '\u00c9t\u00e9', n: 1 }] }, { affected_rows: 1, returning: [{ name: 'xyz', n: 20 }] }] },
    });
    expect(await statements('tag')).toBe(5);
  });

  it('a text key with a NUL in a list: refused at its path before any statement, nothing written', async () => {
    const doc = 'mutation ($u: [word_updates!]!) { update_word_many(updates: $u) { affected_rows } }';
    const r = await q(doc, { u: [{ where: { w: { _eq: 'a' } }, _inc: { n: 1 } }, { where: { w: { _eq: 'A' } }, _inc: { n: 1 } }, { where: { w: { _eq: 'a\u0000b' } }, _inc: { n: 1 } }] });
    expect(r.errors).toEqual([{ message: 'text must not contain the NUL character (\\u0000)', extensions: { path: '$.variables.u[2].where.w._eq', code: 'bad-request' } }]);
    expect(await server.runSql('select sum(n) from word')).toMatchObject({ result: [['sum'], ['0']] });
    expect(await statements('word')).toBe(0);
  });

  it('a key that is no uuid in a run: a data exception, as the update alone answers, nothing written', async () => {
    const doc = 'mutation ($u: [thing_updates!]!) { update_thing_many(updates: $u) { affected_rows } }';
    const alone = await q(doc, { u: [{ where: { id: { _eq: 'not-a-uuid' } }, _inc: { n: 1 } }] });
    const inRun = await q(doc, { u: [{ where: { id: { _eq: U1 } }, _inc: { n: 1 } }, { where: { id: { _eq: 'not-a-uuid' } }, _inc: { n: 1 } }] });
    expect(inRun.errors).toMatchObject([{ message: 'invalid input syntax for type uuid: "not-a-uuid"', extensions: { path: '$', code: 'data-exception' } }]);
    expect(inRun.errors).toEqual(alone.errors);
    expect(await server.runSql('select n from thing order by id')).toMatchObject({ result: [['n'], ['0'], ['0']] });
  });

  it('a primary key of two columns: each update gives both', async () => {
    const doc = 'mutation ($u: [pair_updates!]!) { update_pair_many(updates: $u) { affected_rows returning { a b v } } }';
    const u = [
      { where: { a: { _eq: 1 }, b: { _eq: 2 } }, _set: { v: 12 } },
      { where: { b: { _eq: 1 }, a: { _eq: 2 } }, _set: { v: 21 } },
      { where: { a: { _eq: 1 }, b: { _eq: 1 } }, _set: { v: 11 } },
    ];
    expect(await q(doc, { u })).toEqual({
      data: {
        update_pair_many: [
          { affected_rows: 1, returning: [{ a: 1, b: 2, v: 12 }] },
          { affected_rows: 1, returning: [{ a: 2, b: 1, v: 21 }] },
          { affected_rows: 1, returning: [{ a: 1, b: 1, v: 11 }] },
        ],
      },
    });
    expect(await statements('pair')).toBe(1);
    // A where that gives only part of the key is an update of its own.
    expect(await q(doc, { u: [{ where: { a: { _eq: 1 } }, _inc: { v: 1 } }, { where: { a: { _eq: 2 }, b: { _eq: 1 } }, _inc: { v: 1 } }] })).toEqual({
      data: {
        update_pair_many: [
          { affected_rows: 2, returning: [{ a: 1, b: 1, v: 12 }, { a: 1, b: 2, v: 13 }] },
          { affected_rows: 1, returning: [{ a: 2, b: 1, v: 22 }] },
        ],
      },
    });
    expect(await statements('pair')).toBe(3);
  });

  it("a role's filter, check and presets hold for every update of the statement", async () => {
    const doc = 'mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows returning { id bytes owner } } }';
    // Tracks 1, 3, 5 are u1's; 5 has 50 bytes. The select filter shows rows under 500 bytes.
    const u = [1, 2, 3, 5].map((id) => ({ where: { id: { _eq: id } }, _set: { bytes: id * 100 } }));
    expect(await q(doc, { u }, as('user', 'u1'))).toEqual({
      data: {
        update_track_many: [
          { affected_rows: 1, returning: [{ id: 1, bytes: 100, owner: 'u1' }] },
          { affected_rows: 0, returning: [] },
          { affected_rows: 1, returning: [{ id: 3, bytes: 300, owner: 'u1' }] },
          // Updated, but over the select filter's 500 bytes: counted, not shown.
          { affected_rows: 1, returning: [] },
        ],
      },
    });
    expect(await statements('track')).toBe(1);
    // The check fails on one row: nothing of the list is written.
    const before = await rows('track');
    expect(await q(doc, { u: [{ where: { id: { _eq: 1 } }, _set: { bytes: 1 } }, { where: { id: { _eq: 3 } }, _set: { bytes: 5000 } }] }, as('user', 'u1'))).toEqual({
      errors: [{ message: 'check constraint of an insert/update permission has failed', extensions: { path: '$', code: 'permission-error' } }],
    });
    expect(await rows('track')).toEqual(before);
  });

  it('a filter through a relationship to another table: one statement', async () => {
    const doc = 'mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows returning { id name } } }';
    // Tracks 1-4 are on the album "Open", 5 and 6 on "Closed".
    const u = [4, 5, 1].map((id) => ({ where: { id: { _eq: id } }, _set: { name: `e${id}` } }));
    expect(await q(doc, { u }, { 'x-svc-role': 'editor' })).toEqual({
      data: {
        update_track_many: [
          { affected_rows: 1, returning: [{ id: 4, name: 'e4' }] },
          { affected_rows: 0, returning: [] },
          { affected_rows: 1, returning: [{ id: 1, name: 'e1' }] },
        ],
      },
    });
    expect(await statements('track')).toBe(1);
  });

  it('a database error in the statement writes nothing, as the list one by one', async () => {
    const before = await rows('track');
    const u = [{ where: { id: { _eq: 1 } }, _set: { name: 'ok' } }, { where: { id: { _eq: 2 } }, _set: { name: null } }];
    const r = await q(MANY, { u });
    expect(r.errors?.[0]).toMatchObject({ message: expect.stringMatching(/^Not-NULL violation\. null value in column "name"/), extensions: { path: '$', code: 'constraint-violation' } });
    expect(await rows('track')).toEqual(before);
  });

  it('updates that are not by key stay statements of their own, in order around the runs', async () => {
    const u = [
      { where: { id: { _eq: 1 } }, _set: { name: 'a' } },
      { where: { id: { _eq: 2 } }, _set: { name: 'b' } },
      // Not only the key: its own statement, after the two before it.
      { where: { id: { _eq: 3 }, name: { _eq: 't3' } }, _set: { name: 'c' } },
      // Changes nothing: no statement.
      { where: { id: { _eq: 4 } }, _set: {} },
      { where: { id: { _eq: 4 } }, _set: { name: 'd' } },
      { where: { id: { _eq: 5 } }, _set: { name: 'e' } },
      // Another shape: a statement of its own (a run of one).
      { where: { id: { _eq: 6 } }, _inc: { bytes: 1 } },
    ];
    const r = await q(MANY, { u });
    expect(r.data?.update_track_many).toEqual([
      { affected_rows: 1, returning: [{ id: 1, name: 'a', bytes: 10 }] },
      { affected_rows: 1, returning: [{ id: 2, name: 'b', bytes: 20 }] },
      { affected_rows: 1, returning: [{ id: 3, name: 'c', bytes: 30 }] },
      { affected_rows: 0, returning: [] },
      { affected_rows: 1, returning: [{ id: 4, name: 'd', bytes: 40 }] },
      { affected_rows: 1, returning: [{ id: 5, name: 'e', bytes: 50 }] },
      { affected_rows: 1, returning: [{ id: 6, name: 't6', bytes: 61 }] },
    ]);
    expect(await statements('track')).toBe(4);
  });

  it('a unique column set, or returning through a relationship: a statement per update', async () => {
    // Codes moved between rows in the list's order: c1 -> c9 first frees c1 for track 2.
    const u = [
      { where: { id: { _eq: 1 } }, _set: { code: 'c9' } },
      { where: { id: { _eq: 2 } }, _set: { code: 'c1' } },
    ];
    expect(await q('mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows } }', { u })).toEqual({
      data: { update_track_many: [{ affected_rows: 1 }, { affected_rows: 1 }] },
    });
    expect(await statements('track')).toBe(2);
    const v = [3, 4].map((id) => ({ where: { id: { _eq: id } }, _set: { name: `r${id}` } }));
    expect(await q('mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { returning { id album { title } } } }', { u: v })).toEqual({
      data: { update_track_many: [{ returning: [{ id: 3, album: { title: 'Open' } }] }, { returning: [{ id: 4, album: { title: 'Open' } }] }] },
    });
    expect(await statements('track')).toBe(4);
  });

  it('values of other types, bound as arrays, read back as written', async () => {
    const doc = 'mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows } }';
    const u = [
      { where: { id: { _eq: 1 } }, _set: { info: { a: [1, 'x'], b: null }, tags: ['a"b', 'c,d', 'NULL', ''], name: 'ünï "q" \\ 😀' } },
      { where: { id: { _eq: 2 } }, _set: { info: 'just a string', tags: [], name: '' } },
      { where: { id: { _eq: 3 } }, _set: { info: null, tags: null, name: 'NULL' } },
    ];
    expect(await q(doc, { u })).toEqual({ data: { update_track_many: [{ affected_rows: 1 }, { affected_rows: 1 }, { affected_rows: 1 }] } });
    expect(await statements('track')).toBe(1);
    expect((await rows('track', 'id, info, tags, name')).slice(0, 3)).toEqual([
      { id: 1, info: { a: [1, 'x'], b: null }, tags: ['a"b', 'c,d', 'NULL', ''], name: 'ünï "q" \\ 😀' },
      { id: 2, info: 'just a string', tags: [], name: '' },
      { id: 3, info: null, tags: null, name: 'NULL' },
    ]);
  });
});

describe('oracle: random lists answer and write as the same updates one statement each', () => {
  const DOC = 'mutation ($u: [track_updates!]!) { update_track_many(updates: $u) { affected_rows returning { id name bytes } } }';
  const RESET = `truncate track, album, tally restart identity cascade;
    insert into album (title) values ('Open'), ('Closed');
    insert into track (album_id, name, bytes, price, code, owner) select 1, 't' || i, i * 10, i, 'c' || i, case when i % 2 = 1 then 'u1' else 'u2' end from generate_series(1, 6) as i;
    insert into tally values ('track', 0);`;

  /** A random list: keys 1-8 (7 and 8 name no row, keys repeat), a few shapes (runs of one), some updates
   * not by key or changing nothing; as admin one may set a null name (the list fails). */
  function list(rnd: () => number, admin: boolean, failing: boolean): Record<string, unknown>[] {
    const shapes = admin ? ['name', 'bytes', 'both', 'price'] : ['name', 'bytes', 'both'];
    let shape = shapes[0]!;
    return Array.from({ length: 2 + Math.floor(rnd() * 12) }, (_, i) => {
      const id = 1 + Math.floor(rnd() * 8);
      // Mostly the shape of the update before, as a list sent by a program is.
      if (rnd() < 0.3) shape = shapes[Math.floor(rnd() * shapes.length)]!;
      const u: Record<string, unknown> = { where: rnd() < 0.1 ? { id: { _eq: id }, bytes: { _gte: 30 } } : { id: { _eq: id } } };
      if (rnd() < 0.08) return { ...u, _set: {} };
      const name = failing && rnd() < 0.15 ? null : `n${i}`;
      if (shape === 'name' || shape === 'both') u._set = { name };
      if (shape === 'bytes' || shape === 'both') u._inc = { bytes: Math.floor(rnd() * (admin ? 50 : 1000)) };
      if (shape === 'price') u._set = { price: rnd() < 0.2 ? null : Math.round(rnd() * 10000) / 100 };
      return u;
    });
  }
  /** The same update kept from joining a run: its where also asks that the key is not null. */
  const alone = (u: Record<string, unknown>) => ({ ...u, where: { _and: [u.where, { id: { _is_null: false } }] } });
  /** An answer without what a database error's `internal` adds (the row it names). */
  const answer = (r: { data?: unknown; errors?: { message: string; extensions?: Record<string, unknown> }[] }) =>
    r.errors ? { errors: r.errors.map((e) => ({ message: e.message, path: e.extensions?.path, code: e.extensions?.code })) } : r;

  it('40 lists, as admin and as a role with a filter, a check and a preset', async () => {
    let fewer = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = seededRandom(seed);
      const admin = seed % 2 === 0;
      const u = list(rnd, admin, admin && seed % 4 === 0);
      const headers = admin ? undefined : as('user', 'u1');
      await server.runSql(RESET);
      const joined = answer(await q(DOC, { u }, headers));
      const joinedRows = await rows('track');
      const joinedStatements = await statements('track');
      await server.runSql(RESET);
      const oneByOne = answer(await q(DOC, { u: u.map(alone) }, headers));
      expect({ seed, answer: joined }).toEqual({ seed, answer: oneByOne });
      expect({ seed, rows: joinedRows }).toEqual({ seed, rows: await rows('track') });
      const separate = await statements('track');
      if (joinedStatements < separate) fewer++;
    }
    // Most lists had runs of updates by key.
    expect(fewer).toBeGreaterThan(20);
  });
});
