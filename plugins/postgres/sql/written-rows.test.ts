/**
 * Note [Written rows as columns] (./written-rows.ts): writes keep their rows' columns under
 * names of the compiler's own, and of them those the statement reads, not the row whole. Every
 * answer is the one the row gives: over a table whose columns are named as the statement's
 * helpers (`r`, `c`, `o`, `i`, `n`, `_0`), with values stored out of line (TOAST), through
 * computed fields, relationships, aggregates, a role's filters, `update_<t>_many`'s runs,
 * `_nested` writes, nested inserts, upserts and steps; and after DDL outside run_sql dropped or
 * added a column, the writes that do not name it go on.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table odd (id int primary key, r text, c int, o int, "_0" text, n int not null default 0, body text, owner text, i int);
alter table odd alter column body set storage external;
create table odd_note (id serial primary key, odd_id int references odd(id), label text not null);
create function odd_len(x odd) returns int language sql stable as $$ select length(x.body) $$;
create table shed (id int primary key, a text, gone text, big text);
create table shed_item (id serial primary key, shed_id int references shed(id), label text);
`;

/** A body stored out of line: 100,000 characters, no compression (storage external). */
const body = (id: number) => `${id}`.padEnd(100_000, String.fromCharCode(97 + id));

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const as = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'odd' } },
      { type: 'pg_track_table', args: { table: 'odd_note' } },
      { type: 'pg_create_array_relationship', args: { table: 'odd', name: 'notes', using: { foreign_key_constraint_on: { table: 'odd_note', column: 'odd_id' } } } },
      { type: 'pg_create_object_relationship', args: { table: 'odd_note', name: 'odd', using: { foreign_key_constraint_on: 'odd_id' } } },
      { type: 'pg_add_computed_field', args: { table: 'odd', name: 'body_length', definition: { function: 'odd_len' } } },
      { type: 'pg_create_select_permission', args: { table: 'odd', role: 'user', permission: { columns: ['id', 'r', 'c', 'o', '_0', 'n'], computed_fields: ['body_length'], filter: { c: { _lt: 30 } } } } },
      { type: 'pg_create_update_permission', args: { table: 'odd', role: 'user', permission: { columns: ['n', 'c'], filter: { owner: { _eq: 'X-Svc-User-Id' } }, check: { n: { _lt: 100 } } } } },
      { type: 'pg_create_delete_permission', args: { table: 'odd', role: 'user', permission: { filter: { owner: { _eq: 'X-Svc-User-Id' } } } } },
      { type: 'pg_create_select_permission', args: { table: 'odd_note', role: 'user', permission: { columns: ['id', 'label'], filter: {} } } },
      { type: 'pg_create_insert_permission', args: { table: 'odd', role: 'user', permission: { columns: ['id', 'r', 'c', 'n', 'body'], check: { n: { _lt: 100 } }, set: { owner: 'X-Svc-User-Id' } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.runSql(`
    truncate odd, odd_note restart identity cascade;
    insert into odd (id, r, c, o, "_0", body, owner) select i, 'r' || i, i * 10, -i, 'z' || i, rpad(i::text, 100000, chr(96 + i + 1)), 'u' || (i % 2) from generate_series(1, 3) as i;
    insert into odd_note (odd_id, label) values (1, 'x'), (1, 'y'), (2, 'w');
  `);
});

describe('writes keep their rows as columns (Note [Written rows as columns])', () => {
  it('an update answers every column, out-of-line values, computed fields, relationships and aggregates of its rows', async () => {
    const r = await q(`mutation { update_odd(where: {id: {_lte: 2}}, _inc: {n: 1, c: 1}) { affected_rows returning {
        id r c o _0 n body body_length notes(order_by: {id: asc}) { label odd { id c } } notes_aggregate { aggregate { count } } } } }`);
    expect(r).toEqual({
      data: {
        update_odd: {
          affected_rows: 2,
          returning: [1, 2].map((id) => ({
            id,
            r: `r${id}`,
            c: id * 10 + 1,
            o: -id,
            _0: `z${id}`,
            n: 1,
            body: body(id),
            body_length: 100_000,
            // A relationship reads the tables as they were before the statement, as Hasura's one statement does.
            notes: (id === 1 ? ['x', 'y'] : ['w']).map((label) => ({ label, odd: { id, c: id * 10 } })),
            notes_aggregate: { aggregate: { count: id === 1 ? 2 : 1 } },
          })),
        },
      },
    });
  });

  it('update_by_pk and delete_by_pk answer the row, or null where none', async () => {
    expect(await q('mutation { update_odd_by_pk(pk_columns: {id: 3}, _set: {c: 7}) { id c o r _0 body_length } }')).toEqual({
      data: { update_odd_by_pk: { id: 3, c: 7, o: -3, r: 'r3', _0: 'z3', body_length: 100_000 } },
    });
    expect(await q('mutation { delete_odd_by_pk(id: 3) { id c o body body_length notes { id } } }')).toEqual({
      data: { delete_odd_by_pk: { id: 3, c: 7, o: -3, body: body(3), body_length: 100_000, notes: [] } },
    });
    expect(await q('mutation { delete_odd_by_pk(id: 3) { id } update_odd_by_pk(pk_columns: {id: 3}, _set: {c: 1}) { id } }')).toEqual({
      data: { delete_odd_by_pk: null, update_odd_by_pk: null },
    });
    expect((await server.runSql('select count(*) from odd')).result[1][0]).toBe('2');
  });

  it('an answer that reads no column of the rows (__typename alone) has a row for each', async () => {
    expect(await q('mutation { update_odd(where: {id: {_lte: 2}}, _inc: {n: 1}) { affected_rows returning { __typename } } }')).toEqual({
      data: { update_odd: { affected_rows: 2, returning: [{ __typename: 'odd' }, { __typename: 'odd' }] } },
    });
    expect(await q('mutation { delete_odd_by_pk(id: 3) { __typename } }')).toEqual({ data: { delete_odd_by_pk: { __typename: 'odd' } } });
    expect(await q('mutation { delete_odd_by_pk(id: 3) { __typename } }')).toEqual({ data: { delete_odd_by_pk: null } });
  });

  it('a delete of several rows answers their out-of-line values as they were', async () => {
    await server.runSql('delete from odd_note');
    const r = await q('mutation { delete_odd(where: {}) { affected_rows returning { id o body } } }');
    expect(r.data.delete_odd.affected_rows).toBe(3);
    expect([...r.data.delete_odd.returning].sort((a: any, b: any) => a.id - b.id)).toEqual([1, 2, 3].map((id) => ({ id, o: -id, body: body(id) })));
  });

  it("update_<t>_many's run of updates by key answers each update's row", async () => {
    const u = [3, 1, 2].map((id) => ({ where: { id: { _eq: id } }, _set: { o: id * 100 }, _inc: { c: 1 } }));
    expect(await q('mutation ($u: [odd_updates!]!) { update_odd_many(updates: $u) { affected_rows returning { id c o body_length } } }', { u })).toEqual({
      data: { update_odd_many: [3, 1, 2].map((id) => ({ affected_rows: 1, returning: [{ id, c: id * 10 + 1, o: id * 100, body_length: 100_000 }] })) },
    });
  });

  it("a role's filter, check and select filter read the kept columns", async () => {
    // u1 owns 1 and 3; the select filter (c < 30) shows 1 only once updated.
    expect(await q('mutation { update_odd(where: {}, _inc: {n: 5}) { affected_rows returning { id n c } } }', undefined, as('u1'))).toEqual({
      data: { update_odd: { affected_rows: 2, returning: [{ id: 1, n: 5, c: 10 }] } },
    });
    const fails = await q('mutation { update_odd_by_pk(pk_columns: {id: 1}, _set: {n: 100}) { id } }', undefined, as('u1'));
    expect(fails.errors).toMatchObject([{ extensions: { code: 'permission-error' } }]);
    await server.runSql('delete from odd_note');
    expect(await q('mutation { delete_odd(where: {}) { affected_rows returning { id c body_length } } }', undefined, as('u0'))).toEqual({
      data: { delete_odd: { affected_rows: 1, returning: [{ id: 2, c: 20, body_length: 100_000 }] } },
    });
    expect((await server.runSql('select id, n from odd order by id')).result.slice(1)).toEqual([
      ['1', '5'],
      ['3', '5'],
    ]);
  });

  it('an update with _nested writes reads the kept rows as their parents', async () => {
    const r = await q(`mutation { update_odd_by_pk(pk_columns: {id: 2}, _set: {c: 21}, _nested: {notes: {insert: {objects: [{label: "v"}]}, update: {where: {label: {_eq: "w"}}, _set: {label: "w2"}}}}) {
        id c body_length notes(order_by: {id: asc}) { label odd { c } } } }`);
    expect(r).toEqual({ data: { update_odd_by_pk: { id: 2, c: 21, body_length: 100_000, notes: [{ label: 'w2', odd: { c: 21 } }, { label: 'v', odd: { c: 21 } }] } } });
    expect((await server.runSql('select odd_id, label from odd_note order by id')).result.slice(1)).toEqual([
      ['1', 'x'],
      ['1', 'y'],
      ['2', 'w2'],
      ['2', 'v'],
    ]);
  });

  it('an insert with rows through both relationships answers its rows and reads them back as the table', async () => {
    const r = await q(`mutation { insert_odd_note(objects: [{label: "p", odd: {data: {id: 7, r: "r7", c: 70, o: 1, _0: "z7", i: 5, body: "${'q'.repeat(50_000)}"}}}]) {
        affected_rows returning { label odd { id r c o _0 i n body_length notes { label } } } } }`);
    expect(r).toEqual({
      data: { insert_odd_note: { affected_rows: 2, returning: [{ label: 'p', odd: { id: 7, r: 'r7', c: 70, o: 1, _0: 'z7', i: 5, n: 0, body_length: 50_000, notes: [{ label: 'p' }] } }] } },
    });
    expect(
      await q(`mutation { insert_odd_one(object: {id: 8, c: 80, body: "b", notes: {data: [{label: "s"}, {label: "t"}]}}) { id c n o i notes(order_by: {id: asc}) { label odd { c } } notes_aggregate { aggregate { count } } } }`),
    ).toEqual({ data: { insert_odd_one: { id: 8, c: 80, n: 0, o: null, i: null, notes: [{ label: 's', odd: { c: 80 } }, { label: 't', odd: { c: 80 } }], notes_aggregate: { aggregate: { count: 2 } } } } });
  });

  it('an upsert updating rows with out-of-line values answers them as it left them', async () => {
    const r = await q(`mutation { insert_odd(objects: [{id: 1, n: 7}, {id: 2, n: 8}, {id: 9, n: 9, body: "new"}], on_conflict: {constraint: odd_pkey, update_columns: [n]}) {
        affected_rows returning { id n c body_length } } }`);
    expect(r.data.insert_odd.affected_rows).toBe(3);
    expect([...r.data.insert_odd.returning].sort((a: any, b: any) => a.id - b.id)).toEqual([
      { id: 1, n: 7, c: 10, body_length: 100_000 },
      { id: 2, n: 8, c: 20, body_length: 100_000 },
      { id: 9, n: 9, c: null, body_length: 3 },
    ]);
    // Objects upserting one row twice (Note [Rows upserting one row]): merged, the later values win.
    const twice = `mutation { insert_odd_note(objects: [{label: "a", odd: {data: {id: 3, n: 1}, on_conflict: {constraint: odd_pkey, update_columns: [n]}}},
        {label: "b", odd: {data: {id: 3, n: 2}, on_conflict: {constraint: odd_pkey, update_columns: [n]}}}]) { affected_rows returning { label odd { id n c body_length } } } }`;
    expect(await q(twice)).toEqual({
      data: { insert_odd_note: { affected_rows: 4, returning: ['a', 'b'].map((label) => ({ label, odd: { id: 3, n: 2, c: 30, body_length: 100_000 } })) } },
    });
  });

  it("a role's upserts merged by key: its check on the kept columns, its preset", async () => {
    await server.metadata({ type: 'pg_create_insert_permission', args: { table: 'odd_note', role: 'user', permission: { columns: ['label', 'odd_id'], check: {} } } });
    try {
      const doc = (n: number) => `mutation { insert_odd_note(objects: [{label: "a", odd: {data: {id: 1, n: 1}, on_conflict: {constraint: odd_pkey, update_columns: [n]}}},
          {label: "b", odd: {data: {id: 1, n: ${n}}, on_conflict: {constraint: odd_pkey, update_columns: [n]}}}]) { affected_rows returning { label odd { id n } } } }`;
      // u1 owns row 1; the update check (n < 100) holds for the row the request leaves.
      expect(await q(doc(200), undefined, as('u1'))).toMatchObject({ errors: [{ extensions: { code: 'permission-error' } }] });
      expect(await q(doc(2), undefined, as('u1'))).toEqual({
        data: { insert_odd_note: { affected_rows: 4, returning: ['a', 'b'].map((label) => ({ label, odd: { id: 1, n: 2 } })) } },
      });
      // A new row takes the role's preset.
      expect(await q('mutation { insert_odd_note(objects: [{label: "c", odd: {data: {id: 30, n: 3, c: 3, body: "x"}}}]) { returning { odd { id n body_length } } } }', undefined, as('u9'))).toEqual({
        data: { insert_odd_note: { returning: [{ odd: { id: 30, n: 3, body_length: 1 } }] } },
      });
      expect((await server.runSql('select id, n, owner from odd where id in (1, 30) order by id')).result.slice(1)).toEqual([
        ['1', '2', 'u1'],
        ['30', '3', 'u9'],
      ]);
    } finally {
      await server.metadata({ type: 'pg_drop_insert_permission', args: { table: 'odd_note', role: 'user' } });
    }
  });

  it('objects in steps (Note [Batches in steps]) answer their rows from the steps', async () => {
    // Each note with an object upserted by a key two of them give, updating where a filter holds:
    // no set joined by key, a CTE each, 70 of them in steps.
    const objects = Array.from({ length: 70 }, (_, j) => ({ label: `s${j}`, odd: { data: { id: 100 + (j % 35), c: j, body: j % 10 ? 'short' : body(1) }, on_conflict: { constraint: 'odd_pkey', update_columns: ['c'], where: { c: { _lt: 1000 } } } } }));
    const r = await q('mutation ($o: [odd_note_insert_input!]!) { insert_odd_note(objects: $o) { affected_rows returning { label odd { id c body_length } } } }', { o: objects });
    expect(r.data?.insert_odd_note.affected_rows, JSON.stringify(r).slice(0, 300)).toBe(140);
    // Each odd as the steps left it: c from the later of its two objects, body from the first.
    expect(r.data.insert_odd_note.returning).toEqual(objects.map((o, j) => ({ label: o.label, odd: { id: 100 + (j % 35), c: (j % 35) + 35, body_length: j % 35 % 10 ? 5 : 100_000 } })));
  });
});

describe('a column dropped by DDL outside run_sql (Note [Written rows as columns])', () => {
  beforeAll(async () => {
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'shed' } },
        { type: 'pg_track_table', args: { table: 'shed_item' } },
        { type: 'pg_create_array_relationship', args: { table: 'shed', name: 'items', using: { foreign_key_constraint_on: { table: 'shed_item', column: 'shed_id' } } } },
        { type: 'pg_create_object_relationship', args: { table: 'shed_item', name: 'shed', using: { foreign_key_constraint_on: 'shed_id' } } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    await server.runSql(`insert into shed (id, a, gone, big) select i, 'a' || i, 'g' || i, repeat('b', 10) from generate_series(1, 4) as i`);
  });

  it('fails only the writes that read it, as Hasura, until reload_metadata', async () => {
    // Behind the engine's back (after beforeEach's run_sql, which reloads): the metadata still has the column.
    await server.sql.unsafe('alter table shed drop column gone');
    expect(await q('mutation { update_shed_by_pk(pk_columns: {id: 1}, _set: {a: "x"}) { id a } }')).toEqual({ data: { update_shed_by_pk: { id: 1, a: 'x' } } });
    expect(await q('mutation { update_shed(where: {id: {_eq: 2}}, _set: {a: "y"}) { affected_rows } }')).toEqual({ data: { update_shed: { affected_rows: 1 } } });
    expect(await q('mutation { delete_shed(where: {id: {_eq: 3}}) { affected_rows } }')).toEqual({ data: { delete_shed: { affected_rows: 1 } } });
    expect(await q('mutation { delete_shed_by_pk(id: 4) { id big } }')).toEqual({ data: { delete_shed_by_pk: { id: 4, big: 'bbbbbbbbbb' } } });
    expect(await q('mutation { insert_shed_one(object: {id: 5, a: "z"}) { id a } }')).toEqual({ data: { insert_shed_one: { id: 5, a: 'z' } } });
    expect(await q('mutation { insert_shed(objects: [{id: 5, a: "w"}, {id: 6, a: "v"}], on_conflict: {constraint: shed_pkey, update_columns: [a]}) { affected_rows returning { id a } } }')).toEqual({
      data: { insert_shed: { affected_rows: 2, returning: [{ id: 5, a: 'w' }, { id: 6, a: 'v' }] } },
    });
    const u = [1, 2].map((id) => ({ where: { id: { _eq: id } }, _set: { a: `m${id}` } }));
    expect(await q('mutation ($u: [shed_updates!]!) { update_shed_many(updates: $u) { affected_rows returning { id a } } }', { u })).toEqual({
      data: { update_shed_many: [1, 2].map((id) => ({ affected_rows: 1, returning: [{ id, a: `m${id}` }] })) },
    });
    // Statements that read a table they wrote (Note [Nested inserts], Note [Nested updates in SQL]).
    expect(await q('mutation { insert_shed_one(object: {id: 7, a: "n", items: {data: [{label: "i1"}, {label: "i2"}]}}) { id a items(order_by: {id: asc}) { label shed { id a } } } }')).toEqual({
      data: { insert_shed_one: { id: 7, a: 'n', items: ['i1', 'i2'].map((label) => ({ label, shed: { id: 7, a: 'n' } })) } },
    });
    expect(
      await q(`mutation { update_shed_by_pk(pk_columns: {id: 7}, _set: {a: "n2"}, _nested: {items: {update: {where: {label: {_eq: "i2"}}, _set: {label: "i3"}}, insert: {objects: [{label: "i4"}]}}}) {
          id a items(order_by: {id: asc}) { label shed { a } } } }`),
    ).toEqual({ data: { update_shed_by_pk: { id: 7, a: 'n2', items: ['i1', 'i3', 'i4'].map((label) => ({ label, shed: { a: 'n2' } })) } } });
    // A write that reads the column fails with the database's error, writing nothing.
    const reads = await q('mutation { update_shed_by_pk(pk_columns: {id: 1}, _set: {a: "no"}) { id gone } }');
    expect(reads.errors?.[0]?.message).toMatch(/column .*gone.* does not exist/);
    expect((await server.runSql('select id, a from shed order by id')).result.slice(1)).toEqual([
      ['1', 'm1'],
      ['2', 'm2'],
      ['5', 'w'],
      ['6', 'v'],
      ['7', 'n2'],
    ]);
    expect((await server.metadata({ type: 'reload_metadata', args: {} })).status).toBe(200);
    expect(await q('mutation { update_shed_by_pk(pk_columns: {id: 1}, _set: {a: "r"}) { id a } }')).toEqual({ data: { update_shed_by_pk: { id: 1, a: 'r' } } });
  });

  it('a column added outside run_sql: the writes that make rows whole (steps, upserts merged under a check) still write', async () => {
    const perms = [
      { type: 'pg_create_insert_permission', args: { table: 'shed', role: 'user', permission: { columns: ['id', 'a'], check: { a: { _neq: 'bad' } } } } },
      { type: 'pg_create_update_permission', args: { table: 'shed', role: 'user', permission: { columns: ['a'], filter: {}, check: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'shed', role: 'user', permission: { columns: ['id', 'a'], filter: {} } } },
      { type: 'pg_create_insert_permission', args: { table: 'shed_item', role: 'user', permission: { columns: ['label', 'shed_id'], check: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'shed_item', role: 'user', permission: { columns: ['label'], filter: {} } } },
    ];
    expect((await server.metadata({ type: 'bulk', args: perms })).status).toBe(200);
    try {
      await server.runSql('delete from shed_item; delete from shed');
      // Behind the engine's back (after run_sql's reload).
      await server.sql.unsafe('alter table shed add column extra text default \'e\'; alter table shed_item add column extra int');
      // Rows repeating the key they upsert by, updating where a filter holds: a step per run (Note
      // [Rows repeating a key]), each answering its rows whole.
      const runs = await q(`mutation { insert_shed(objects: [{id: 100, a: "p"}, {id: 100, a: "q"}, {id: 101, a: "r"}], on_conflict: {constraint: shed_pkey, update_columns: [a], where: {a: {_neq: "never"}}}) {
          affected_rows returning { id a } } }`);
      expect(runs).toEqual({ data: { insert_shed: { affected_rows: 3, returning: [{ id: 100, a: 'p' }, { id: 100, a: 'q' }, { id: 101, a: 'r' }] } } });
      // Two objects upserting one row, merged, the role's insert check on the row as the first inserted it.
      const merged = await q(
        `mutation { insert_shed_item(objects: [{label: "m1", shed: {data: {id: 1, a: "x"}, on_conflict: {constraint: shed_pkey, update_columns: [a]}}},
          {label: "m2", shed: {data: {id: 1, a: "y"}, on_conflict: {constraint: shed_pkey, update_columns: [a]}}}]) { affected_rows returning { label shed { id a } } } }`,
        undefined,
        as('u1'),
      );
      expect(merged).toEqual({ data: { insert_shed_item: { affected_rows: 4, returning: ['m1', 'm2'].map((label) => ({ label, shed: { id: 1, a: 'y' } })) } } });
      expect((await server.runSql('select id, a, extra from shed order by id')).result.slice(1)).toEqual([
        ['1', 'y', 'e'],
        ['100', 'q', 'e'],
        ['101', 'r', 'e'],
      ]);
    } finally {
      await server.metadata({ type: 'bulk', args: perms.map((p) => ({ type: p.type.replace('create', 'drop'), args: { table: p.args.table, role: 'user' } })) });
      await server.runSql('alter table shed drop column extra; alter table shed_item drop column extra');
    }
  });
});
