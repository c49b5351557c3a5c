/**
 * Golden tests of grouped aggregates (issue 30; Note [The groups' shape] in ./groups.ts) against
 * real PostgreSQL through POST /v1/graphql and over WebSockets: keys (columns, truncated dates
 * and times, columns of object relationships), aggregates, where/having/order_by/limit/offset,
 * `<rel>_groups`, permissions (row filter before grouping, columns, allow_aggregations, limit,
 * inherited roles), errors, and live queries.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { anyBeginsWith } from './groups.js';
import { useServer } from '../../../test/helpers.js';
import { Client, useListening } from '../../../test/ws-helpers.js';

const SEED = `
create table rep (id serial primary key, name text not null);
create table customer (id serial primary key, name text not null, country text, rep_id int references rep(id));
create table invoice (id serial primary key, customer_id int not null references customer(id), invoice_date date not null,
  created_at timestamp not null, total numeric(10,2) not null, qty int not null, meta json);
create table customer_groups (id serial primary key, label text);
insert into rep (name) values ('Rita'), ('Sam');
insert into customer (name, country, rep_id) values ('ann', 'FR', 1), ('bob', 'DE', 2), ('cy', 'FR', 1), ('di', null, null);
insert into invoice (customer_id, invoice_date, created_at, total, qty) values
  (1, '2024-01-05', '2024-01-05 10:00', 10.50, 1),
  (1, '2024-01-20', '2024-01-20 23:30', 4.00, 2),
  (2, '2024-02-01', '2024-02-01 08:00', 7.25, 3),
  (3, '2024-02-14', '2024-02-14 12:00', 20.00, 1),
  (3, '2024-03-01', '2024-03-01 00:00', 1.00, 5),
  (4, '2024-05-09', '2024-05-09 09:00', 3.00, 2);
`;

const server = useServer(SEED, { config: { liveQueriesRefetchInterval: 40 } });
const net = useListening(server);
afterEach(() => Client.closeAll());
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const user = (id: number) => ({ 'x-svc-role': 'user', 'x-svc-user-id': String(id) });
/** The `data` of a query that must succeed. */
const data = async (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => {
  const r = await q(query, variables, headers);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data;
};
const error = async (query: string, headers?: Record<string, string>) => {
  const r = await q(query, undefined, headers);
  expect(r.data).toBeUndefined();
  return r.errors[0];
};

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'rep' } },
      { type: 'pg_track_table', args: { table: 'customer' } },
      { type: 'pg_track_table', args: { table: 'invoice' } },
      { type: 'pg_track_table', args: { table: 'customer_groups' } },
      { type: 'pg_create_object_relationship', args: { table: 'customer', name: 'rep', using: { foreign_key_constraint_on: 'rep_id' } } },
      { type: 'pg_create_object_relationship', args: { table: 'invoice', name: 'customer', using: { foreign_key_constraint_on: 'customer_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'customer', name: 'invoices', using: { foreign_key_constraint_on: { table: 'invoice', column: 'customer_id' } } } },
      // user: its own invoices, some columns, may aggregate, at most 2 rows (groups) at a time.
      {
        type: 'pg_create_select_permission',
        args: { table: 'invoice', role: 'user', permission: { columns: ['id', 'customer_id', 'invoice_date', 'total'], filter: { customer_id: { _eq: 'X-Svc-User-Id' } }, allow_aggregations: true, limit: 2 } },
      },
      // Customers of the user's own country only: a relationship key reads null for the others.
      { type: 'pg_create_select_permission', args: { table: 'customer', role: 'user', permission: { columns: ['id', 'name', 'country'], filter: { country: { _eq: 'FR' } } } } },
      // viewer may select but not aggregate: no groups.
      { type: 'pg_create_select_permission', args: { table: 'invoice', role: 'viewer', permission: { columns: '*', filter: {} } } },
      // member = own (every column of its own invoices) + mate (ids and customers of every invoice):
      // totals of other customers' invoices are hidden (null), also as keys and in aggregates.
      { type: 'pg_create_select_permission', args: { table: 'invoice', role: 'own', permission: { columns: '*', filter: { customer_id: { _eq: 'X-Svc-User-Id' } }, allow_aggregations: true } } },
      { type: 'pg_create_select_permission', args: { table: 'invoice', role: 'mate', permission: { columns: ['id', 'customer_id'], filter: {}, allow_aggregations: true } } },
      { type: 'add_inherited_role', args: { role_name: 'member', role_set: ['own', 'mate'] } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('admin', () => {
  it('groups by a column: every aggregate, groups ordered by their keys', async () => {
    expect(
      await data(`{ invoice_groups(group_by: [customer_id]) { keys { customer_id } aggregate {
        count n: count(columns: [qty], distinct: true) sum { total qty } avg { qty } min { invoice_date total } max { total } } } }`),
    ).toEqual({
      invoice_groups: [
        { keys: { customer_id: 1 }, aggregate: { count: 2, n: 2, sum: { total: 14.5, qty: 3 }, avg: { qty: 1.5 }, min: { invoice_date: '2024-01-05', total: 4 }, max: { total: 10.5 } } },
        { keys: { customer_id: 2 }, aggregate: { count: 1, n: 1, sum: { total: 7.25, qty: 3 }, avg: { qty: 3 }, min: { invoice_date: '2024-02-01', total: 7.25 }, max: { total: 7.25 } } },
        { keys: { customer_id: 3 }, aggregate: { count: 2, n: 2, sum: { total: 21, qty: 6 }, avg: { qty: 3 }, min: { invoice_date: '2024-02-14', total: 1 }, max: { total: 20 } } },
        { keys: { customer_id: 4 }, aggregate: { count: 1, n: 1, sum: { total: 3, qty: 2 }, avg: { qty: 2 }, min: { invoice_date: '2024-05-09', total: 3 }, max: { total: 3 } } },
      ],
    });
  });

  it('groups by several keys, a null key being a group of its own (last)', async () => {
    expect(await data('{ customer_groups_: customer_groups { id } customer(order_by: {id: asc}) { id } }')).toEqual({ customer_groups_: [], customer: [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }] });
    expect(await data('{ invoice_groups(group_by: [qty], group_by_keys: [{customer: {_column: country}}]) { keys { qty customer { country } } aggregate { count } } }')).toEqual({
      invoice_groups: [
        { keys: { qty: 1, customer: { country: 'FR' } }, aggregate: { count: 2 } },
        { keys: { qty: 2, customer: { country: 'FR' } }, aggregate: { count: 1 } },
        { keys: { qty: 2, customer: { country: null } }, aggregate: { count: 1 } },
        { keys: { qty: 3, customer: { country: 'DE' } }, aggregate: { count: 1 } },
        { keys: { qty: 5, customer: { country: 'FR' } }, aggregate: { count: 1 } },
      ],
    });
  });

  it('truncates dates and timestamps (hour, day, week, month, quarter, year), keeping their types', async () => {
    expect(
      await data(`{ invoice_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: quarter}, {_column: created_at, _truncate: year}]) {
        keys { q: invoice_date(truncate: quarter) y: created_at(truncate: year) } aggregate { count } } }`),
    ).toEqual({
      invoice_groups: [
        { keys: { q: '2024-01-01', y: '2024-01-01T00:00:00' }, aggregate: { count: 5 } },
        { keys: { q: '2024-04-01', y: '2024-01-01T00:00:00' }, aggregate: { count: 1 } },
      ],
    });
    const weeks = await data('{ invoice_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: week}]) { keys { invoice_date(truncate: week) } aggregate { count } } }');
    // ISO weeks begin on Monday: Friday 2024-01-05 is in the week of Monday 2024-01-01.
    expect(weeks.invoice_groups.map((g: any) => g.keys.invoice_date)).toEqual(['2024-01-01', '2024-01-15', '2024-01-29', '2024-02-12', '2024-02-26', '2024-05-06']);
    const months = await data('{ invoice_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: month}]) { keys { invoice_date(truncate: month) } aggregate { sum { total } } } }');
    expect(months.invoice_groups).toEqual([
      { keys: { invoice_date: '2024-01-01' }, aggregate: { sum: { total: 14.5 } } },
      { keys: { invoice_date: '2024-02-01' }, aggregate: { sum: { total: 27.25 } } },
      { keys: { invoice_date: '2024-03-01' }, aggregate: { sum: { total: 1 } } },
      { keys: { invoice_date: '2024-05-01' }, aggregate: { sum: { total: 3 } } },
    ]);
    const hours = await data('{ invoice_groups(group_by: [], group_by_keys: [{_column: created_at, _truncate: hour}], where: {id: {_eq: 2}}) { keys { created_at(truncate: hour) } } }');
    expect(hours.invoice_groups).toEqual([{ keys: { created_at: '2024-01-20T23:00:00' } }]);
    const days = await data('{ invoice_groups(group_by: [], group_by_keys: [{_column: created_at, _truncate: day}], where: {id: {_eq: 2}}) { keys { created_at(truncate: day) } } }');
    expect(days.invoice_groups).toEqual([{ keys: { created_at: '2024-01-20T00:00:00' } }]);
  });

  it('groups by a column two object relationships away', async () => {
    expect(await data('{ invoice_groups(group_by: [], group_by_keys: [{customer: {rep: {_column: name}}}]) { keys { customer { rep { name } } } aggregate { count sum { total } } } }')).toEqual({
      invoice_groups: [
        { keys: { customer: { rep: { name: 'Rita' } } }, aggregate: { count: 4, sum: { total: 35.5 } } },
        { keys: { customer: { rep: { name: 'Sam' } } }, aggregate: { count: 1, sum: { total: 7.25 } } },
        { keys: { customer: { rep: { name: null } } }, aggregate: { count: 1, sum: { total: 3 } } },
      ],
    });
  });

  it('where before grouping, having after it (count, sum, avg, _or, _not)', async () => {
    const groups = async (args: string) =>
      (await data(`{ invoice_groups(group_by: [customer_id], ${args}) { keys { customer_id } } }`)).invoice_groups.map((g: any) => g.keys.customer_id);
    expect(await groups('where: {qty: {_lt: 5}}')).toEqual([1, 2, 3, 4]);
    expect(await groups('where: {qty: {_lt: 5}}, having: {count: {_gt: 1}}')).toEqual([1]);
    expect(await groups('having: {count: {_gte: 2}}')).toEqual([1, 3]);
    expect(await groups('having: {sum: {total: {_gt: 10}}}')).toEqual([1, 3]);
    expect(await groups('having: {avg: {qty: {_gt: 2.5}}}')).toEqual([2, 3]);
    expect(await groups('having: {_or: [{max: {total: {_lt: 5}}}, {min: {invoice_date: {_gte: "2024-02-14"}}}]}')).toEqual([3, 4]);
    expect(await groups('having: {_not: {count: {_eq: 1}}, sum: {qty: {_in: [3, 6]}}}')).toEqual([1, 3]);
    // As everywhere in Hasura v2, a comparison with null is no condition.
    expect(await groups('having: {count: {_eq: null}}')).toEqual([1, 2, 3, 4]);
    const v = await q('query ($n: Int!, $s: numeric) { invoice_groups(group_by: [customer_id], having: {count: {_gte: $n}, sum: {total: {_lt: $s}}}) { keys { customer_id } } }', { n: 2, s: 20 });
    expect(v).toEqual({ data: { invoice_groups: [{ keys: { customer_id: 1 } }] } });
  });

  it('order_by keys and aggregates, limit and offset on groups', async () => {
    const ids = async (args: string, variables?: Record<string, unknown>, decl = '') =>
      (await data(`query ${decl} { invoice_groups(group_by: [customer_id], ${args}) { keys { customer_id } } }`, variables)).invoice_groups.map((g: any) => g.keys.customer_id);
    expect(await ids('order_by: {keys: {customer_id: desc}}')).toEqual([4, 3, 2, 1]);
    expect(await ids('order_by: [{aggregate: {count: desc}}]')).toEqual([1, 3, 2, 4]);
    expect(await ids('order_by: [{aggregate: {sum: {total: desc}}}]')).toEqual([3, 1, 2, 4]);
    expect(await ids('order_by: [{aggregate: {count: asc}}, {keys: {customer_id: desc}}]')).toEqual([4, 2, 3, 1]);
    expect(await ids('order_by: {aggregate: {max: {total: asc}}}, limit: 2')).toEqual([4, 2]);
    expect(await ids('order_by: {aggregate: {max: {total: asc}}}, limit: 2, offset: 1')).toEqual([2, 1]);
    expect(await ids('offset: 3')).toEqual([4]);
    expect(await ids('limit: $l, offset: $o', { l: 1, o: 2 }, '($l: Int, $o: Int)')).toEqual([3]);
    const byCountry = await data('{ invoice_groups(group_by: [], group_by_keys: [{customer: {_column: country}}], order_by: {keys: {customer: {country: desc_nulls_last}}}) { keys { customer { country } } } }');
    expect(byCountry.invoice_groups.map((g: any) => g.keys.customer.country)).toEqual(['FR', 'DE', null]);
  });

  it('without keys: one group of every row, even of none', async () => {
    expect(await data('{ invoice_groups(group_by: []) { keys { __typename } aggregate { count sum { total } } } }')).toEqual({
      invoice_groups: [{ keys: { __typename: 'invoice_group_keys' }, aggregate: { count: 6, sum: { total: 45.75 } } }],
    });
    expect(await data('{ invoice_groups(group_by: [], where: {id: {_eq: 0}}) { aggregate { count sum { total } } } }')).toEqual({
      invoice_groups: [{ aggregate: { count: 0, sum: { total: null } } }],
    });
    expect(await data('{ invoice_groups(group_by: [customer_id], where: {id: {_eq: 0}}) { aggregate { count } } }')).toEqual({ invoice_groups: [] });
  });

  it('<rel>_groups on an array relationship, with its own arguments, and __typename', async () => {
    expect(
      await data(`{ customer(order_by: {id: asc}, where: {id: {_lte: 3}}) { name invoices_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: month}], having: {count: {_gt: 0}}, order_by: {keys: {invoice_date: desc}}) {
        __typename keys { m: invoice_date(truncate: month) } aggregate { count } } } }`),
    ).toEqual({
      customer: [
        { name: 'ann', invoices_groups: [{ __typename: 'invoice_group', keys: { m: '2024-01-01' }, aggregate: { count: 2 } }] },
        { name: 'bob', invoices_groups: [{ __typename: 'invoice_group', keys: { m: '2024-02-01' }, aggregate: { count: 1 } }] },
        { name: 'cy', invoices_groups: [{ __typename: 'invoice_group', keys: { m: '2024-03-01' }, aggregate: { count: 1 } }, { __typename: 'invoice_group', keys: { m: '2024-02-01' }, aggregate: { count: 1 } }] },
      ],
    });
  });

  it('objects as rows (Note [Groups as rows]): keys in selection order, aliases over 63 bytes, __typename alone', async () => {
    // The answer's text: every object's keys in the order they were asked for.
    const r = await server.request('POST', '/v1/graphql', { query: `{ invoice_groups(group_by: [customer_id], limit: 2) {
      aggregate { max { qty total } count } keys { customer_id } __typename } }` });
    expect(r.text.replace(/\s/g, '')).toBe(
      '{"data":{"invoice_groups":[{"aggregate":{"max":{"qty":2,"total":10.50},"count":2},"keys":{"customer_id":1},"__typename":"invoice_group"},' +
        '{"aggregate":{"max":{"qty":3,"total":7.25},"count":1},"keys":{"customer_id":2},"__typename":"invoice_group"}]}}',
    );
    // A key a column name cannot hold whole (NAMEDATALEN), at every level, and two that would
    // collide once truncated: the objects are built by json_build_object instead.
    const long = (c: string) => `k${'x'.repeat(62)}${c}`;
    expect(
      await data(`{ invoice_groups(group_by: [customer_id], limit: 1) { ${long('a')}: aggregate { ${long('b')}: count ${long('c')}: sum { ${long('d')}: qty ${long('e')}: total } }
        ${long('f')}: keys { ${long('g')}: customer_id ${long('h')}: customer_id } } }`),
    ).toEqual({ invoice_groups: [{ [long('a')]: { [long('b')]: 2, [long('c')]: { [long('d')]: 3, [long('e')]: 14.5 } }, [long('f')]: { [long('g')]: 1, [long('h')]: 1 } }] });
    // A group with nothing but its type name.
    expect(await data('{ invoice_groups(group_by: [customer_id]) { __typename } }')).toEqual({ invoice_groups: Array(4).fill({ __typename: 'invoice_group' }) });
    expect(await data('{ invoice_groups(group_by: []) { t: __typename } }')).toEqual({ invoice_groups: [{ t: 'invoice_group' }] });
  });

  it('a table whose name begins with <t>_group keeps its root field; that table gets no groups', async () => {
    const schema = await data('{ __schema { queryType { fields { name } } } }');
    const names = schema.__schema.queryType.fields.map((f: any) => f.name);
    expect(names).toEqual(expect.arrayContaining(['invoice_groups', 'rep_groups', 'customer_groups']));
    expect(await data('{ customer_groups { id label } }')).toEqual({ customer_groups: [] });
    expect((await error('{ customer_groups(group_by: [country]) { keys { country } } }')).extensions.code).toBe('validation-failed');
  });

  it('refuses what is not a key, and keys that cannot be', async () => {
    const e1 = await error('{ invoice_groups(group_by: [customer_id]) { keys { customer_id qty } } }');
    expect(e1).toEqual({ message: '"qty" is not a grouping key: give it in "group_by" or "group_by_keys"', extensions: { path: '$.selectionSet.invoice_groups.selectionSet.keys', code: 'validation-failed' } });
    const e2 = await error('{ invoice_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: month}]) { keys { invoice_date } } }');
    expect(e2.message).toBe('"invoice_date" is not a grouping key: give it in "group_by" or "group_by_keys"');
    const e3 = await error('{ invoice_groups(group_by: [customer_id], order_by: {keys: {qty: asc}}) { keys { customer_id } } }');
    expect(e3).toEqual({ message: '"qty" is not a grouping key: groups are ordered by keys or aggregates', extensions: { path: '$.selectionSet.invoice_groups.args.order_by', code: 'validation-failed' } });
    const e4 = await error('{ invoice_groups(group_by: [], group_by_keys: [{_column: qty, _truncate: day}]) { aggregate { count } } }');
    expect(e4).toEqual({ message: 'the column "qty" is not a date or time: it cannot be truncated', extensions: { path: '$.selectionSet.invoice_groups.args.group_by_keys', code: 'validation-failed' } });
    const e5 = await error('{ invoice_groups(group_by: [], group_by_keys: [{_column: qty, customer: {_column: name}}]) { aggregate { count } } }');
    expect(e5.message).toBe('a grouping key is exactly one of "_column" or an object relationship');
    const e6 = await error('{ invoice_groups(group_by: [], group_by_keys: [{}]) { aggregate { count } } }');
    expect(e6.message).toBe('a grouping key is exactly one of "_column" or an object relationship');
    const e7 = await error('{ invoice_groups(group_by: [meta]) { aggregate { count } } }');
    expect(e7).toEqual({ message: 'the column "meta" cannot be a grouping key (its type has no equality)', extensions: { path: '$.selectionSet.invoice_groups.args', code: 'validation-failed' } });
    const e8 = await error('{ invoice_groups(group_by: [id], limit: -1) { aggregate { count } } }');
    expect(e8.extensions).toEqual({ path: '$.selectionSet.invoice_groups.args.limit', code: 'validation-failed' });
    // `truncate` on a column that cannot be truncated is not in the schema.
    expect((await error('{ invoice_groups(group_by: [qty]) { keys { qty(truncate: day) } } }')).extensions.code).toBe('validation-failed');
  });
});

describe('permissions', () => {
  it('applies the row filter before grouping, caps the groups at the permission\'s limit', async () => {
    expect(await data('{ invoice_groups(group_by: [customer_id]) { keys { customer_id } aggregate { count sum { total } } } }', undefined, user(1))).toEqual({
      invoice_groups: [{ keys: { customer_id: 1 }, aggregate: { count: 2, sum: { total: 14.5 } } }],
    });
    const months = await data('{ invoice_groups(group_by: [], group_by_keys: [{_column: invoice_date, _truncate: day}]) { keys { invoice_date(truncate: day) } } }', undefined, user(3));
    expect(months.invoice_groups).toEqual([{ keys: { invoice_date: '2024-02-14' } }, { keys: { invoice_date: '2024-03-01' } }]);
    // limit 2 of the permission caps the groups, whatever the request asks.
    const capped = await data('{ invoice_groups(group_by: [id], limit: 10) { keys { id } } }', undefined, user(1));
    expect(capped.invoice_groups).toHaveLength(2);
  });

  it('a relationship key reads null where the role may not see the remote row', async () => {
    // user 2 is bob (DE): the user's customer permission shows FR customers only.
    expect(await data('{ invoice_groups(group_by: [], group_by_keys: [{customer: {_column: name}}]) { keys { customer { name } } aggregate { count } } }', undefined, user(2))).toEqual({
      invoice_groups: [{ keys: { customer: { name: null } }, aggregate: { count: 1 } }],
    });
  });

  it('lists only the columns the role may select, as keys and as aggregate arguments', async () => {
    const intro = await data(
      `{ keys: __type(name: "invoice_group_keys") { fields { name } } key: __type(name: "invoice_group_key") { inputFields { name } }
         having: __type(name: "invoice_group_having_exp") { inputFields { name } } sum: __type(name: "invoice_group_sum_having_exp") { inputFields { name } }
         col: __type(name: "invoice_select_column") { enumValues { name } } }`,
      undefined,
      user(1),
    );
    expect(intro.keys.fields.map((f: any) => f.name)).toEqual(['customer', 'customer_id', 'id', 'invoice_date', 'total']);
    expect(intro.key.inputFields.map((f: any) => f.name)).toEqual(['_column', '_truncate', 'customer']);
    expect(intro.having.inputFields.map((f: any) => f.name)).toEqual(['_and', '_not', '_or', 'avg', 'count', 'max', 'min', 'stddev', 'stddev_pop', 'stddev_samp', 'sum', 'var_pop', 'var_samp', 'variance']);
    expect(intro.sum.inputFields.map((f: any) => f.name)).toEqual(['id', 'customer_id', 'total']);
    expect(intro.col.enumValues.map((f: any) => f.name)).toEqual(['id', 'customer_id', 'invoice_date', 'total']);
    for (const doc of [
      '{ invoice_groups(group_by: [qty]) { aggregate { count } } }',
      '{ invoice_groups(group_by: [id]) { keys { qty } } }',
      '{ invoice_groups(group_by: [id], having: {sum: {qty: {_gt: 1}}}) { aggregate { count } } }',
      '{ invoice_groups(group_by: [id]) { aggregate { sum { qty } } } }',
      '{ invoice_groups(group_by: [id], order_by: {aggregate: {sum: {qty: asc}}}) { aggregate { count } } }',
      '{ invoice_groups(group_by: [], group_by_keys: [{customer: {_column: email}}]) { aggregate { count } } }',
    ]) {
      expect((await error(doc, user(1))).extensions.code, doc).toBe('validation-failed');
    }
  });

  it('a role that may not aggregate has no groups', async () => {
    expect(await error('{ invoice_groups(group_by: [id]) { aggregate { count } } }', { 'x-svc-role': 'viewer' })).toEqual({
      message: "field 'invoice_groups' not found in type: 'query_root'",
      extensions: { path: '$.selectionSet.invoice_groups', code: 'validation-failed' },
    });
    const intro = await data('{ __type(name: "invoice_group") { name } }', undefined, { 'x-svc-role': 'viewer' });
    expect(intro.__type).toBeNull();
  });

  it('an inherited role groups and aggregates the values it sees (a hidden one is null)', async () => {
    const member = { 'x-svc-role': 'member', 'x-svc-user-id': '1' };
    expect(await data('{ invoice_groups(group_by: [total]) { keys { total } aggregate { count max { total } } } }', undefined, member)).toEqual({
      invoice_groups: [
        { keys: { total: 4 }, aggregate: { count: 1, max: { total: 4 } } },
        { keys: { total: 10.5 }, aggregate: { count: 1, max: { total: 10.5 } } },
        { keys: { total: null }, aggregate: { count: 4, max: { total: null } } },
      ],
    });
    expect(await data('{ invoice_groups(group_by: [customer_id], having: {sum: {total: {_is_null: true}}}) { keys { customer_id } } }', undefined, member)).toEqual({
      invoice_groups: [{ keys: { customer_id: 2 } }, { keys: { customer_id: 3 } }, { keys: { customer_id: 4 } }],
    });
  });
});

describe('subscriptions', () => {
  it('a live query over groups gets new groups after a write, with the role\'s filter', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', { headers: { 'X-Svc-Role': 'user', 'X-Svc-User-Id': '3' } });
    const doc = 'subscription { invoice_groups(group_by: [customer_id]) { keys { customer_id } aggregate { count sum { total } } } }';
    c.send({ type: 'subscribe', id: 'g', payload: { query: doc } });
    expect((await c.next('g')).payload).toEqual({ data: { invoice_groups: [{ keys: { customer_id: 3 }, aggregate: { count: 2, sum: { total: 21 } } }] } });
    // Another customer's invoice changes nothing this subscriber sees; its own does.
    await server.sql`insert into invoice (customer_id, invoice_date, created_at, total, qty) values (1, '2024-06-01', '2024-06-01', 100, 1)`;
    await server.sql`insert into invoice (customer_id, invoice_date, created_at, total, qty) values (3, '2024-06-01', '2024-06-01', 2, 1)`;
    expect((await c.next('g')).payload).toEqual({ data: { invoice_groups: [{ keys: { customer_id: 3 }, aggregate: { count: 3, sum: { total: 23 } } }] } });
    await server.sql`delete from invoice where invoice_date = '2024-06-01'`;
    expect((await c.next('g')).payload).toEqual({ data: { invoice_groups: [{ keys: { customer_id: 3 }, aggregate: { count: 2, sum: { total: 21 } } }] } });
  });
});

describe('the clash rule on many tables', () => {
  it('finds a table name beginning with <t>_group by halving the sorted names, as a scan of them all does', () => {
    // Short names of few characters, so that prefixes, equal names and neighbours are common;
    // '_', 'z', 'é' and an astral character (two UTF-16 code units) around the ASCII ones.
    const name = fc.string({ unit: fc.constantFrom('a', 'b', '_', 'z', 'é', '😀'), maxLength: 5 });
    fc.assert(
      fc.property(fc.array(name, { maxLength: 30 }), name, (names, prefix) => {
        const sorted = [...names].sort();
        expect(anyBeginsWith(sorted, prefix)).toBe(names.some((n) => n.startsWith(prefix)));
      }),
      { numRuns: 2000 },
    );
    expect(anyBeginsWith([], 'a_group')).toBe(false);
    expect(anyBeginsWith(['a', 'a_group', 'b'].sort(), 'a_group')).toBe(true);
    expect(anyBeginsWith(['a', 'a_grouq', 'a_grou'].sort(), 'a_group')).toBe(false);
  });
});
