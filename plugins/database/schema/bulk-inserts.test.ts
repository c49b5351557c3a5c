/**
 * Note [Rows bound by column] (plugins/postgres/compile-mutation.ts): a multi-row insert whose
 * rows give the same columns binds each column's values as one array, so its statement is the
 * same for any number of rows and a batch is not bounded by PostgreSQL's 65,535 bind
 * parameters. Each test reads the table back as admin: a value written as something else, a row
 * out of order or one lost shows here.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { rowsById, useServer } from '../../../test/helpers.js';

const SEED = `
create table item (id serial primary key, name text not null, n int, price numeric(12,2), tags text[], info jsonb, flag boolean, at timestamptz, code text unique, owner text);
create table part (id serial primary key, item_id int not null references item(id), label text not null, qty int not null default 1);
create table note (id serial primary key, item_id int not null references item(id), body text not null);
create table tag (id serial primary key, part_id int not null references part(id), word text not null);
create table stock (item_id int not null references item(id), sku text not null, qty int not null, primary key (item_id, sku));
create table gadget (id serial primary key, label text not null, qty int not null default 1, note text default 'none');
create view gadget_v as select * from gadget;
create type mood as enum ('sad', 'ok', 'happy');
create table kinds (id serial primary key, b bytea, m money, u uuid, e mood, a int[], d date, j json, n numeric, big bigint);
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);

/** `columns` of `from`'s rows in id order, as admin. */
const rows = (from: string, columns?: string) => rowsById(server, from, columns);

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'item' } },
      { type: 'pg_track_table', args: { table: 'part' } },
      { type: 'pg_create_array_relationship', args: { table: 'item', name: 'parts', using: { foreign_key_constraint_on: { table: 'part', column: 'item_id' } } } },
      { type: 'pg_create_object_relationship', args: { table: 'part', name: 'item', using: { foreign_key_constraint_on: 'item_id' } } },
      { type: 'pg_track_table', args: { table: 'kinds' } },
      { type: 'pg_track_table', args: { table: 'note' } },
      { type: 'pg_track_table', args: { table: 'tag' } },
      { type: 'pg_create_array_relationship', args: { table: 'item', name: 'notes', using: { foreign_key_constraint_on: { table: 'note', column: 'item_id' } } } },
      { type: 'pg_create_array_relationship', args: { table: 'part', name: 'tags', using: { foreign_key_constraint_on: { table: 'tag', column: 'part_id' } } } },
      { type: 'pg_track_table', args: { table: 'stock' } },
      { type: 'pg_track_table', args: { table: 'gadget_v' } },
      { type: 'pg_create_array_relationship', args: { table: 'item', name: 'stock', using: { foreign_key_constraint_on: { table: 'stock', column: 'item_id' } } } },
      {
        type: 'pg_create_insert_permission',
        args: { table: 'item', role: 'user', permission: { columns: ['name', 'n'], set: { owner: 'X-Svc-Owner' }, check: { n: { _lt: 100 } } } },
      },
      { type: 'pg_create_select_permission', args: { table: 'item', role: 'user', permission: { columns: ['id', 'name', 'n', 'owner'], filter: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});
beforeEach(async () => {
  await server.runSql(`truncate gadget, stock, tag, note, part, item, kinds restart identity cascade;`);
});

const INSERT = `mutation ($objects: [item_insert_input!]!) { insert_item(objects: $objects) { affected_rows returning { id name } } }`;
/** Strings a text array literal must carry as they are. */
const TRICKY = ['a"b', 'back\\slash', 'comma,brace{}', 'NULL', '', ' spaced ', 'ünï 😀', 'line\nbreak'];

function item(i: number) {
  return {
    name: `${TRICKY[i % TRICKY.length]}${i}`,
    n: i % 7 === 0 ? null : i,
    price: i % 5 === 0 ? null : `${i}.25`,
    tags: i % 3 === 0 ? null : [`t${i}`, 'x"y', 'NULL', ''],
    info: i % 4 === 0 ? null : { i, s: `"${i}"`, list: [1, null, 'two'] },
    flag: i % 2 === 0,
    at: '2026-11-28T10:00:00+00:00',
  };
}

describe('a multi-row insert binds a parameter per column, not per value', () => {
  it('ten thousand rows of seven columns (70,000 values) in one request: each written as sent, answered in order', async () => {
    const objects = Array.from({ length: 10_000 }, (_, i) => item(i));
    const r = await q(INSERT, { objects });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_item.affected_rows).toBe(10_000);
    expect(r.data.insert_item.returning).toEqual(objects.map((o, i) => ({ id: i + 1, name: o.name })));
    const back = await rows('item', `name, n, price::text, tags, info, flag, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') as at`);
    expect(back).toEqual(objects.map((o) => ({ ...o, price: o.price === null ? null : o.price })));
  });

  it('rows of other column types: each value as it is bound alone, an item of its column\'s array', async () => {
    const objects = [
      { b: '\\x00ff', m: '12.50', u: '0b7f8c1e-5d3a-4c1e-9a47-3f1c2b6d9e01', e: 'happy', a: [1, 2, 3], d: '2026-11-28', j: { a: [1, '{x}'] }, n: '0.1000000000000000000001', big: '9007199254740993' },
      { b: null, m: '0', u: null, e: 'sad', a: [], d: null, j: 'text', n: '-1e-20', big: '-1' },
    ];
    const r = await q(`mutation ($o: [kinds_insert_input!]!) { insert_kinds(objects: $o) { affected_rows } }`, { o: objects });
    expect(r).toEqual({ data: { insert_kinds: { affected_rows: 2 } } });
    expect(await rows('kinds', 'b::text, m::numeric::text as m, u::text, e::text, a::text, d::text, j::text, n::text, big::text')).toEqual([
      { b: '\\x00ff', m: '12.50', u: '0b7f8c1e-5d3a-4c1e-9a47-3f1c2b6d9e01', e: 'happy', a: '{1,2,3}', d: '2026-11-28', j: '{"a":[1,"{x}"]}', n: '0.1000000000000000000001', big: '9007199254740993' },
      { b: null, m: '0.00', u: null, e: 'sad', a: '{}', d: null, j: '"text"', n: '-0.00000000000000000001', big: '-1' },
    ]);
  });

  it('a role: one row of three failing the check fails the request and writes nothing; the preset on every row, from each request\'s session', async () => {
    const as = { 'x-svc-role': 'user', 'x-svc-owner': 'O1' };
    const refused = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows } }`, { o: [{ name: 'a', n: 1 }, { name: 'b', n: 500 }, { name: 'c', n: 2 }] }, as);
    expect(refused.errors[0].extensions.code).toBe('permission-error');
    expect(await rows('item', 'name')).toEqual([]);
    const ok = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows returning { name n owner } } }`, { o: [{ name: 'a', n: 1 }, { name: 'b', n: null }, { name: 'c', n: 99 }] }, as);
    expect(ok.data.insert_item.returning).toEqual([{ name: 'a', n: 1, owner: 'O1' }, { name: 'b', n: null, owner: 'O1' }, { name: 'c', n: 99, owner: 'O1' }]);
    // Each request's own session: another owner for the same shape.
    const other = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows } }`, { o: [{ name: 'd', n: 3 }, { name: 'e', n: 4 }] }, { ...as, 'x-svc-owner': 'O2' });
    expect(other.data.insert_item.affected_rows).toBe(2);
    expect(await rows('item', 'name, n, owner')).toEqual([
      { name: 'a', n: 1, owner: 'O1' },
      { name: 'b', n: null, owner: 'O1' },
      { name: 'c', n: 99, owner: 'O1' },
      { name: 'd', n: 3, owner: 'O2' },
      { name: 'e', n: 4, owner: 'O2' },
    ]);
  });

  it('an upsert of many rows updates the ones that conflict and inserts the rest, in order', async () => {
    await server.runSql(`insert into item (name, code) values ('old1', 'k1'), ('old3', 'k3');`);
    const upsert = `mutation ($o: [item_insert_input!]!) {
      insert_item(objects: $o, on_conflict: {constraint: item_code_key, update_columns: [name]}) { affected_rows returning { id name } }
    }`;
    const r = await q(upsert, { o: ['k1', 'k2', 'k3', 'k4'].map((code) => ({ name: `new-${code}`, code })) });
    expect(r.data.insert_item).toEqual({
      affected_rows: 4,
      returning: [
        { id: 1, name: 'new-k1' },
        // A row that conflicts takes its id from the sequence too.
        { id: 4, name: 'new-k2' },
        { id: 2, name: 'new-k3' },
        { id: 6, name: 'new-k4' },
      ],
    });
    expect(await rows('item', 'name, code')).toEqual([
      { name: 'new-k1', code: 'k1' },
      { name: 'new-k3', code: 'k3' },
      { name: 'new-k2', code: 'k2' },
      { name: 'new-k4', code: 'k4' },
    ]);
  });

  it('an object with 35,000 nested rows (70,000 values): each row its parent\'s key, in order', async () => {
    const parts = Array.from({ length: 35_000 }, (_, i) => ({ label: `p${i}`, qty: i }));
    const r = await q(`mutation ($parts: [part_insert_input!]!) { insert_item_one(object: {name: "big", parts: {data: $parts}}) { id name parts_aggregate { aggregate { count } } } }`, { parts });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_item_one).toEqual({ id: 1, name: 'big', parts_aggregate: { aggregate: { count: 35_000 } } });
    expect(await rows('part', 'item_id, label, qty')).toEqual(parts.map((p) => ({ item_id: 1, ...p })));
  });

  it('5,000 objects each with array relationship rows (Note [Levels inserted as sets]): every child its own parent\'s key, in order (a CTE per object failed: "stack depth limit exceeded")', async () => {
    const objects = Array.from({ length: 5_000 }, (_, i) => ({
      name: `o${i}`,
      n: i,
      // 0 to 3 parts each: a parent without parts keeps its place.
      parts: { data: Array.from({ length: i % 4 }, (_, j) => ({ label: `o${i}-${j}`, qty: j })) },
    }));
    const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows returning { id name parts(order_by: {id: asc}) { label } } } }`, { o: objects });
    expect(r.errors).toBeUndefined();
    const parts = objects.reduce((n, o) => n + o.parts.data.length, 0);
    expect(r.data.insert_item.affected_rows).toBe(5_000 + parts);
    expect(r.data.insert_item.returning).toEqual(objects.map((o, i) => ({ id: i + 1, name: o.name, parts: o.parts.data.map((p) => ({ label: p.label })) })));
    const back = await rows('part', `label, qty, (select name from item where item.id = part.item_id) as owner`);
    expect(back).toEqual(objects.flatMap((o) => o.parts.data.map((p) => ({ label: p.label, qty: p.qty, owner: o.name }))));
  });

  it('objects with rows through two array relationships and rows of their rows, as sets: each row under its own parent', async () => {
    const objects = Array.from({ length: 40 }, (_, i) => ({
      name: `o${i}`,
      ...(i % 3 ? { notes: { data: [{ body: `n${i}` }] } } : {}),
      parts: { data: Array.from({ length: i % 3 }, (_, j) => ({ label: `o${i}-${j}`, tags: { data: Array.from({ length: j + 1 }, (_, k) => ({ word: `o${i}-${j}-${k}` })) } })) },
    }));
    const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows returning { name notes { body } parts(order_by: {id: asc}) { label tags(order_by: {id: asc}) { word } } } } }`, { o: objects });
    expect(r.errors).toBeUndefined();
    // returning reads the rows the statement wrote under each row (Note [Nested inserts]).
    expect(r.data.insert_item.returning).toEqual(
      objects.map((o) => ({ name: o.name, notes: o.notes?.data ?? [], parts: o.parts.data.map((p) => ({ label: p.label, tags: p.tags.data })) })),
    );
    const notes = objects.filter((o) => o.notes).length;
    const parts = objects.flatMap((o) => o.parts.data);
    const tags = parts.flatMap((p) => p.tags.data);
    expect(r.data.insert_item.affected_rows).toBe(40 + notes + parts.length + tags.length);
    expect(await rows('note', 'body, (select name from item where item.id = note.item_id) as owner')).toEqual(objects.flatMap((o, i) => (o.notes ? [{ body: `n${i}`, owner: o.name }] : [])));
    expect(await rows('tag', 'word, (select label from part where part.id = tag.part_id) as part')).toEqual(parts.flatMap((p) => p.tags.data.map((t) => ({ word: t.word, part: p.label }))));
    expect(await rows('part', 'label, (select name from item where item.id = part.item_id) as owner')).toEqual(objects.flatMap((o) => o.parts.data.map((p) => ({ label: p.label, owner: o.name }))));
  });

  it('one object with 3,000 rows that each have rows of their own: the rows as a set under it, each of theirs under its own', async () => {
    const parts = Array.from({ length: 3_000 }, (_, i) => ({ label: `p${i}`, tags: { data: Array.from({ length: 1 + (i % 2) }, (_, k) => ({ word: `p${i}-${k}` })) } }));
    const r = await q(`mutation ($parts: [part_insert_input!]!) { insert_item_one(object: {name: "one", parts: {data: $parts}}) { id name } }`, { parts });
    expect(r).toEqual({ data: { insert_item_one: { id: 1, name: 'one' } } });
    expect(await rows('part', 'label, item_id')).toEqual(parts.map((p) => ({ label: p.label, item_id: 1 })));
    expect(await rows('tag', 'word, (select label from part where part.id = tag.part_id) as part')).toEqual(parts.flatMap((p) => p.tags.data.map((t) => ({ word: t.word, part: p.label }))));
  });

  it('3,000 rows each with its own object through an object relationship, as sets: each row its own object\'s key, in order', async () => {
    await server.runSql(`insert into item (name, code) values ('old', 'c1');`);
    const objects = Array.from({ length: 3_000 }, (_, i) => ({ label: `p${i}`, qty: i, item: { data: { name: `i${i}`, code: `c${i}` }, on_conflict: { constraint: 'item_code_key', update_columns: ['name'] } } }));
    const r = await q(`mutation ($o: [part_insert_input!]!) { insert_part(objects: $o) { affected_rows returning { label item { name code } } } }`, { o: objects });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_part.affected_rows).toBe(6_000);
    // The first object updated the row that was there (its code), the others were inserted.
    expect(r.data.insert_part.returning).toEqual(objects.map((o) => ({ label: o.label, item: { name: o.item.data.name, code: o.item.data.code } })));
    expect(await rows('part', 'label, qty, (select name from item where item.id = part.item_id) as owner')).toEqual(objects.map((o) => ({ label: o.label, qty: o.qty, owner: o.item.data.name })));
    expect(await rows("item where code = 'c1'", 'id, name')).toEqual([{ id: 1, name: 'i1' }]);
  });

  it('rows whose objects upsert the same row, as Hasura row by row: each row its object\'s key; the row written once, with the first row\'s values and the last one\'s update columns (Note [Rows upserting one row])', async () => {
    await server.runSql(`insert into item (name, code, n) values ('old', 'k0', 5);`);
    const codes = ['k1', 'k0', 'k1', 'k2', 'k0', 'k1'];
    const objects = codes.map((code, i) => ({ label: `p${i}`, item: { data: { name: `n${i}`, code, n: i }, on_conflict: { constraint: 'item_code_key', update_columns: ['name'] } } }));
    const r = await q(`mutation ($o: [part_insert_input!]!) { insert_part(objects: $o) { affected_rows returning { label item { code name n } } } }`, { o: objects });
    expect(r.errors).toBeUndefined();
    // Hasura counts each row's upsert, as its statement per row affected it.
    expect(r.data.insert_part.affected_rows).toBe(12);
    const final: Record<string, { name: string; n: number }> = { k0: { name: 'n4', n: 5 }, k1: { name: 'n5', n: 0 }, k2: { name: 'n3', n: 3 } };
    expect(r.data.insert_part.returning).toEqual(codes.map((code, i) => ({ label: `p${i}`, item: { code, ...final[code] } })));
    expect(await rows('part', 'label, (select code from item where item.id = part.item_id) as code')).toEqual(codes.map((code, i) => ({ label: `p${i}`, code })));
    expect(await rows('item', 'code, name, n')).toEqual(['k0', 'k1', 'k2'].map((code) => ({ code, ...final[code] })));
  });

  it('objects with rows under them that upsert the same row: all their rows under it, each object answered as the request left it; a null key is no conflict', async () => {
    const o = [
      { name: 'a', code: 'k1', parts: { data: [{ label: 'x' }] } },
      { name: 'b', code: 'k1', parts: { data: [{ label: 'y' }, { label: 'y2' }] } },
      { name: 'c', code: 'k2', parts: { data: [{ label: 'z' }] } },
      { name: 'd', parts: { data: [{ label: 'w' }] } },
      { name: 'e', parts: { data: [{ label: 'v' }] } },
    ];
    const r = await q(
      `mutation ($o: [item_insert_input!]!) { insert_item(objects: $o, on_conflict: {constraint: item_code_key, update_columns: [name]}) { affected_rows returning { code name parts { label } } } }`,
      { o },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_item.affected_rows).toBe(11);
    const k1 = { code: 'k1', name: 'b', parts: [{ label: 'x' }, { label: 'y' }, { label: 'y2' }] };
    expect(r.data.insert_item.returning).toEqual([k1, k1, { code: 'k2', name: 'c', parts: [{ label: 'z' }] }, { code: null, name: 'd', parts: [{ label: 'w' }] }, { code: null, name: 'e', parts: [{ label: 'v' }] }]);
    expect(await rows('item', 'code, name')).toEqual([{ code: 'k1', name: 'b' }, { code: 'k2', name: 'c' }, { code: null, name: 'd' }, { code: null, name: 'e' }]);
    expect(await rows('part', 'label, (select name from item where item.id = part.item_id) as owner')).toEqual([
      { label: 'x', owner: 'b' },
      { label: 'y', owner: 'b' },
      { label: 'y2', owner: 'b' },
      { label: 'z', owner: 'c' },
      { label: 'w', owner: 'd' },
      { label: 'v', owner: 'e' },
    ]);
  });

  it('a role\'s rows upserting one row: its update presets and update check on the row the later rows updated, its insert check on the row the request leaves', async () => {
    const perms = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_create_insert_permission', args: { table: 'part', role: 'editor', permission: { columns: ['label'], check: {} } } },
        { type: 'pg_create_insert_permission', args: { table: 'item', role: 'editor', permission: { columns: ['name', 'code', 'n'], set: { owner: 'X-Svc-Owner' }, check: { n: { _lt: 100 } } } } },
        { type: 'pg_create_update_permission', args: { table: 'item', role: 'editor', permission: { columns: ['name'], filter: {}, check: { name: { _neq: 'bad' } }, set: { n: 50 } } } },
        { type: 'pg_create_select_permission', args: { table: 'item', role: 'editor', permission: { columns: ['name', 'code', 'n', 'owner'], filter: {} } } },
        { type: 'pg_create_select_permission', args: { table: 'part', role: 'editor', permission: { columns: ['label'], filter: {} } } },
      ],
    });
    expect(perms.status, perms.text).toBe(200);
    await server.runSql(`insert into item (name, code, n, owner) values ('old', 'k0', 7, 'z');`);
    const upsert = `mutation ($o: [part_insert_input!]!) { insert_part(objects: $o) { affected_rows returning { label item { code name n owner } } } }`;
    const item = (name: string, code: string, n: number) => ({ data: { name, code, n }, on_conflict: { constraint: 'item_code_key', update_columns: ['name'] } });
    const editor = { 'X-Svc-Role': 'editor', 'X-Svc-Owner': 'ed' };
    const r = await q(upsert, { o: [{ label: 'p0', item: item('a', 'k1', 1) }, { label: 'p1', item: item('b', 'k1', 150) }, { label: 'p2', item: item('c', 'k2', 3) }, { label: 'p3', item: item('d', 'k0', 4) }] }, editor);
    expect(r.errors).toBeUndefined();
    // As row by row: k1 inserted (n 1, passing the check), then updated (name, and n by the
    // preset); k2 inserted; k0 updated.
    const k1 = { code: 'k1', name: 'b', n: 50, owner: 'ed' };
    expect(r.data.insert_part).toEqual({
      affected_rows: 8,
      returning: [
        { label: 'p0', item: k1 },
        { label: 'p1', item: k1 },
        { label: 'p2', item: { code: 'k2', name: 'c', n: 3, owner: 'ed' } },
        { label: 'p3', item: { code: 'k0', name: 'd', n: 50, owner: 'z' } },
      ],
    });
    // The row the later rows updated fails the update check, or the row a single one
    // inserted the insert check: nothing written.
    const before = await rows('item', 'code, name, n, owner');
    for (const o of [
      [{ label: 'q0', item: item('e', 'k9', 1) }, { label: 'q1', item: item('bad', 'k9', 1) }],
      [{ label: 'q0', item: item('e', 'k9', 120) }, { label: 'q1', item: item('f', 'k8', 1) }],
    ]) {
      const bad = await q(upsert, { o }, editor);
      expect(bad.errors[0]).toEqual({ message: 'check constraint of an insert/update permission has failed', extensions: { code: 'permission-error', path: '$.selectionSet.insert_part.args.objects' } });
      expect(await rows('item', 'code, name, n, owner')).toEqual(before);
    }
    expect(await rows('part', 'label')).toEqual(['p0', 'p1', 'p2', 'p3'].map((label) => ({ label })));
  });

  it('rows under their parents upserting by a key with the parent\'s column: merged under one parent, not across parents', async () => {
    const stock = (...rows: [string, number][]) => ({ data: rows.map(([sku, qty]) => ({ sku, qty })), on_conflict: { constraint: 'stock_pkey', update_columns: ['qty'] } });
    const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows returning { name stock(order_by: {sku: asc}) { sku qty } } } }`, {
      o: [
        { name: 'a', stock: stock(['s1', 1], ['s2', 2], ['s1', 3]) },
        { name: 'b', stock: stock(['s1', 4]) },
      ],
    });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_item).toEqual({
      affected_rows: 6,
      returning: [
        { name: 'a', stock: [{ sku: 's1', qty: 3 }, { sku: 's2', qty: 2 }] },
        { name: 'b', stock: [{ sku: 's1', qty: 4 }] },
      ],
    });
    expect((await server.runSql(`select count(*) from stock`)).result[1][0]).toBe('3');
  });

  it('returning the rows under upserted objects: those already there and those written, filtered and ordered as asked (Note [Arrays of written rows grouped])', async () => {
    await server.runSql(`insert into item (name, code) values ('old', 'k1'); insert into part (item_id, label) values (1, 'before'), (1, 'secret'), (1, 'also before');`);
    const r = await q(
      `mutation ($o: [item_insert_input!]!) {
        insert_item(objects: $o, on_conflict: {constraint: item_code_key, update_columns: [name]}) {
          returning { code name parts(where: {label: {_nlike: "secret%"}}, order_by: {label: desc}) { label } all: parts { label } }
        }
      }`,
      { o: [{ name: 'new1', code: 'k1', parts: { data: [{ label: 'added' }, { label: 'secret too' }] } }, { name: 'new2', code: 'k2', parts: { data: [{ label: 'x' }] } }] },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_item.returning).toEqual([
      { code: 'k1', name: 'new1', parts: [{ label: 'before' }, { label: 'also before' }, { label: 'added' }], all: [{ label: 'before' }, { label: 'secret' }, { label: 'also before' }, { label: 'added' }, { label: 'secret too' }] },
      { code: 'k2', name: 'new2', parts: [{ label: 'x' }], all: [{ label: 'x' }] },
    ]);
  });

  it('returning a window of each object\'s rows (limit, offset, from a variable too): the rows a query of the same objects answers', async () => {
    await server.runSql(`insert into item (name, code) values ('old', 'k0'); insert into part (item_id, label) values (1, 'o1'), (1, 'o2'), (1, 'o3');`);
    const o = Array.from({ length: 40 }, (_, i) => ({ name: `i${i}`, code: `k${i}`, parts: { data: Array.from({ length: i % 5 }, (_, j) => ({ label: `p${i}-${j}`, qty: (i * 7 + j) % 4 })) } }));
    const lists = `top: parts(order_by: {qty: desc, label: asc}, limit: 2, offset: 1) { label qty } first: parts(limit: $n) { label } rest: parts(order_by: {label: desc}, offset: $n) { label }`;
    const r = await q(
      `mutation ($o: [item_insert_input!]!, $n: Int!) { insert_item(objects: $o, on_conflict: {constraint: item_code_key, update_columns: [name]}) { returning { code ${lists} } } }`,
      { o, n: 2 },
    );
    expect(r.errors).toBeUndefined();
    const back = await q(`query ($n: Int!) { item(order_by: {code: asc}) { code ${lists} } }`, { n: 2 });
    const byCode = new Map(back.data.item.map((x: { code: string }) => [x.code, x]));
    expect(r.data.insert_item.returning).toEqual(o.map((x) => byCode.get(x.code)));
    // k0 kept its three rows and got none: offset 1 of them by qty then label.
    expect(r.data.insert_item.returning[0]).toEqual({ code: 'k0', top: [{ label: 'o2', qty: 1 }, { label: 'o3', qty: 1 }], first: [{ label: 'o1' }, { label: 'o2' }], rest: [{ label: 'o1' }] });
  });

  it('objects with rows under an upsert that writes nothing for one of them: the zero-rows error naming it, nothing written; one without rows may write nothing', async () => {
    await server.runSql(`insert into item (name, code) values ('kept', 'k1');`);
    const upsert = `mutation ($o: [item_insert_input!]!) { insert_item(objects: $o, on_conflict: {constraint: item_code_key, update_columns: []}) { affected_rows } }`;
    const r = await q(upsert, { o: ['k0', 'k1', 'k2'].map((code) => ({ name: code, code, parts: { data: [{ label: `${code}-a` }, { label: `${code}-b` }] } })) });
    expect(r.errors[0]).toEqual({
      message: 'cannot proceed to insert array relations since insert to table "item" affects zero rows',
      extensions: { code: 'not-supported', path: '$.selectionSet.insert_item.args.objects[1]' },
    });
    expect(await rows('item', 'name')).toEqual([{ name: 'kept' }]);
    expect(await rows('part', 'label')).toEqual([]);
    // As in Hasura, a row without rows under it may write nothing: the others' rows go under them.
    const ok = await q(upsert, { o: ['k0', 'k1', 'k2'].map((code) => ({ name: code, code, ...(code === 'k1' ? {} : { parts: { data: [{ label: `${code}-a` }] } }) })) });
    expect(ok).toEqual({ data: { insert_item: { affected_rows: 4 } } });
    expect(await rows('part', 'label, (select code from item where item.id = part.item_id) as owner')).toEqual([
      { label: 'k0-a', owner: 'k0' },
      { label: 'k2-a', owner: 'k2' },
    ]);
  });

  it('a level inserted as a set that a trigger leaves a row short of: the zero-rows error, nothing written', async () => {
    await server.runSql(`create function skip_item() returns trigger language plpgsql as $$ begin if new.name = 'skip' then return null; end if; return new; end $$;
      create trigger skip_item before insert on item for each row execute function skip_item();`);
    try {
      const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows } }`, {
        o: ['a', 'skip', 'c'].map((name) => ({ name, parts: { data: [{ label: `${name}-1` }] } })),
      });
      expect(r.errors[0]).toEqual({
        message: 'cannot proceed to insert array relations since insert to table "item" affects zero rows',
        extensions: { code: 'not-supported', path: '$.selectionSet.insert_item.args.objects' },
      });
      expect(await rows('item', 'name')).toEqual([]);
      expect(await rows('part', 'label')).toEqual([]);
    } finally {
      await server.runSql('drop trigger skip_item on item; drop function skip_item();');
    }
  });

  it('rows that leave out a column whose default is null: still one array per column, null where left out (24,000 rows, 72,000 values)', async () => {
    const objects = Array.from({ length: 24_000 }, (_, i) => (i % 2 ? { name: `r${i}`, n: i, flag: true, at: '2026-11-28T00:00:00Z' } : { name: `r${i}`, flag: false }));
    const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows } }`, { o: objects });
    expect(r).toEqual({ data: { insert_item: { affected_rows: 24_000 } } });
    const back = await rows('item', 'name, n, flag, at is not null as dated');
    expect(back).toEqual(objects.map((o, i) => ({ name: o.name, n: i % 2 ? i : null, flag: i % 2 === 1, dated: i % 2 === 1 })));
  });

  it('objects that leave out such a column, with rows under them, as sets', async () => {
    const objects = Array.from({ length: 3_000 }, (_, i) => ({ name: `o${i}`, ...(i % 3 ? { n: i } : {}), parts: { data: [{ label: `o${i}-a`, ...(i % 2 ? { qty: 7 } : { qty: 8 }) }] } }));
    const r = await q(`mutation ($o: [item_insert_input!]!) { insert_item(objects: $o) { affected_rows } }`, { o: objects });
    expect(r).toEqual({ data: { insert_item: { affected_rows: 6_000 } } });
    expect(await rows('item', 'name, n')).toEqual(objects.map((o, i) => ({ name: o.name, n: i % 3 ? i : null })));
    expect(await rows('part', 'label, qty, (select name from item where item.id = part.item_id) as owner')).toEqual(objects.map((o) => ({ label: o.parts.data[0]!.label, qty: o.parts.data[0]!.qty, owner: o.name })));
  });

  it('rows into a view that leave out columns: each takes its base table\'s default, never null (a view column has no default of its own to read)', async () => {
    const r = await q(`mutation ($o: [gadget_v_insert_input!]!) { insert_gadget_v(objects: $o) { returning { label qty note } } }`, {
      o: [{ label: 'a', qty: 5, note: 'x' }, { label: 'b' }, { label: 'c', note: null }, { label: 'd', qty: 7 }],
    });
    expect(r.errors).toBeUndefined();
    const expected = [
      { label: 'a', qty: 5, note: 'x' },
      { label: 'b', qty: 1, note: 'none' },
      { label: 'c', qty: 1, note: null },
      { label: 'd', qty: 7, note: 'none' },
    ];
    expect(r.data.insert_gadget_v.returning).toEqual(expected);
    expect(await rows('gadget', 'label, qty, note')).toEqual(expected);
  });

  it('rows that leave out different columns take the defaults (bound per value), and past PostgreSQL\'s parameter limit get a clear error', async () => {
    await server.runSql(`insert into item (name) values ('owner');`);
    const parts = `mutation ($o: [part_insert_input!]!) { insert_part(objects: $o) { returning { label qty } } }`;
    const ok = await q(parts, { o: [{ item_id: 1, label: 'p', qty: 5 }, { item_id: 1, label: 'q' }] });
    expect(ok).toEqual({ data: { insert_part: { returning: [{ label: 'p', qty: 5 }, { label: 'q', qty: 1 }] } } });
    // 30,000 rows of two or three values, some without qty: more than 65,535 parameters.
    const many = Array.from({ length: 30_000 }, (_, i) => (i % 2 ? { item_id: 1, label: `m${i}`, qty: i } : { item_id: 1, label: `m${i}` }));
    const r = await q(parts, { o: many });
    expect(r.errors[0].extensions.code).toBe('not-supported');
    expect(r.errors[0].message).toMatch(/75,001 bind parameters.*65,533/);
    expect(await rows('part', 'label')).toEqual([{ label: 'p' }, { label: 'q' }]);
  });
});
