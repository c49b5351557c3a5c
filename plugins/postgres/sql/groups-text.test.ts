/**
 * A `_groups` root field is answered as text that PostgreSQL writes (Note [Root groups as text]
 * in ./compile-groups.ts), by a query's statement and by a subscription's multiplexed one, and a
 * nested `<rel>_groups` builds rows that PostgreSQL writes as JSON. They must give the same data
 * for every kind of value: each grouping and
 * aggregate below is asked at the root and through a relationship over the same rows, and the
 * answers compared (the key types by a subscription too); a few values are also checked as
 * literals (NaN and the infinities as strings, escapes, nulls).
 */
import { describe, expect, it, beforeAll } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { Client, useListening } from '../../../test/ws-helpers.js';

const SEED = `
create table box (id int primary key);
create table val (
  id int primary key, box_id int not null references box(id),
  i2 smallint, i4 int, i8 bigint, f4 real, f8 float8, n numeric, b bool, t text, vc varchar(20),
  ts timestamp, tz timestamptz, d date, tm time, iv interval, u uuid, m money, j jsonb, arr int[]
);
insert into box values (1);
insert into val values
  (1, 1, 1, 10, 9007199254740993, 1.5, 'NaN', 'NaN', true, 'say "hi"', 'a',
   '2024-01-05 10:00:00.123456', '2024-01-05 10:00+02', '2024-01-05', '10:00:01', '1 day 2 hours', '00000000-0000-0000-0000-000000000001', 12.5, '{"k": [1, "x"]}', '{1,2}'),
  (2, 1, 1, 20, -3, -0.25, 'Infinity', 'Infinity', false, E'back\\\\slash\\nnew\\tline\\x01', 'b',
   '2024-01-20 23:30:00', '2024-01-20 23:30+00', '2024-01-20', '23:59:59.5', '-3 seconds', '00000000-0000-0000-0000-000000000002', 0, '"s"', '{}'),
  (3, 1, 2, 30, 0, 1e30, '-Infinity', '-Infinity', null, 'ünï©ødé 😀 </script>', null,
   null, null, null, null, null, null, null, 'null', null),
  (4, 1, 2, null, null, null, 1e300, 123456789.123456789, true, '', 'c',
   '0044-03-15 00:00:00 BC', 'infinity', 'infinity', '00:00', '0', null, -1.25, '[]', '{null,3}'),
  (5, 1, null, 50, 7, 3.25, '-0', 0.1, false, null, 'a',
   '2024-02-01 08:00:00', '-infinity', '2024-02-01', null, null, null, null, '{}', null),
  (6, 1, 3, 60, 8, 2, 2.5e-10, -42, true, 'a', 'a',
   '2024-02-01 08:00:00', '2024-02-01 08:00+05:30', '2024-02-01', '12:00', '1 mon', null, 1, '1.5', '{4}');
`;

const COLUMNS = ['i2', 'i4', 'i8', 'f4', 'f8', 'n', 'b', 't', 'vc', 'ts', 'tz', 'd', 'tm', 'iv', 'u', 'm'];
const NUMERIC = ['i2', 'i4', 'i8', 'f4', 'f8', 'n'];

/** The root field's groups and the nested field's, for the same selection. */
async function both(server: ReturnType<typeof useServer>, args: string, selection: string) {
  const r = await server.gql(`{
    root: val_groups(${args}) ${selection}
    box(order_by: {id: asc}) { nested: vals_groups(${args}) ${selection} }
  }`);
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return { root: r.data.root, nested: r.data.box[0].nested };
}

function track(server: ReturnType<typeof useServer>) {
  beforeAll(async () => {
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'box' } },
        { type: 'pg_track_table', args: { table: 'val' } },
        { type: 'pg_create_array_relationship', args: { table: 'box', name: 'vals', using: { foreign_key_constraint_on: { table: 'val', column: 'box_id' } } } },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  });
}

const aggregates = `count sum { ${NUMERIC.join(' ')} } avg { ${NUMERIC.join(' ')} } min { ${COLUMNS.filter((c) => c !== 'b' && c !== 'u' && c !== 'iv').join(' ')} } max { i8 f8 n t ts tz } stddev { i4 f8 n } var_pop { i8 }`;

describe('root groups as text', () => {
  const server = useServer(SEED);
  const net = useListening(server);
  track(server);

  it('every column type as a key answers what the rows form answers', async () => {
    for (const c of [...COLUMNS, 'j']) {
      const { root, nested } = await both(server, `group_by: [${c}]`, `{ __typename keys { __typename ${c} } aggregate { __typename count sum { __typename i4 } } }`);
      expect(root, c).toEqual(nested);
      expect(root.length, c).toBeGreaterThan(1);
    }
  });

  it("a query's root groups are the text PostgreSQL writes, not records for Node to write (Note [Root groups as text])", async () => {
    // The keys answered in another order than grouped, and a numeric's sum: as the benchmark's
    // groups query, whose columns the list's aggregate once read through a Subquery Scan.
    const r = await server.request('POST', '/v1/graphql/explain', { query: { query: '{ val_groups(group_by: [i2, i4], order_by: [{keys: {i4: desc}}]) { keys { i4 i2 } aggregate { count sum { n } } } }' } });
    expect(r.status, r.text).toBe(200);
    const [f] = r.body;
    expect(f.records).toBeUndefined();
    // Each group's text is written by the grouped select, which the list's aggregate reads as it
    // is: no Subquery Scan between them (the benchmark's groups: a tenth of PostgreSQL's CPU).
    expect(f.sql).toMatch(/^select \(select coalesce\('\[' \|\| string_agg\(_t\d+\."j", ',' order by _t\d+\."o0" desc nulls first, _t\d+\."o1" asc nulls last\) \|\| '\]', '\[\]'\) from \(select _t\d+\.\* from \(select '\{"keys":\{"i4":' \|\| /);
    const plan = await server.request('POST', '/v2/query', { type: 'run_sql', args: { sql: `explain (costs off) ${f.sql}` } });
    expect(plan.status, plan.text).toBe(200);
    const lines = (plan.body.result as string[][]).slice(1).map((row) => row[0]!);
    expect(lines.some((l) => l.includes('HashAggregate') || l.includes('GroupAggregate')), lines.join('\n')).toBe(true);
    expect(lines.some((l) => l.includes('Subquery Scan')), lines.join('\n')).toBe(false);
    // A list beside it is still records.
    const [l] = (await server.request('POST', '/v1/graphql/explain', { query: { query: '{ val { id } }' } })).body;
    expect(l.records).toEqual({ keys: ['id'], cols: ['int'] });
  });

  it('a subscription (the text form) answers what the query answers, for every key type and the aggregates', async () => {
    const client = await Client.init(net.url, 'graphql-transport-ws');
    try {
      const selections = [...[...COLUMNS, 'j'].map((c) => [`group_by: [${c}]`, `{ __typename keys { __typename ${c} } aggregate { count sum { i4 } } }`]), ['group_by: [b]', `{ keys { b } aggregate { ${aggregates} } }`]];
      for (const [i, [args, sel]] of selections.entries()) {
        const doc = `val_groups(${args}) ${sel}`;
        client.send({ type: 'subscribe', id: `s${i}`, payload: { query: `subscription { ${doc} }` } });
        const live = (await client.next(`s${i}`)).payload;
        expect(live.errors, JSON.stringify(live.errors)).toBeUndefined();
        expect(live.data.val_groups, args).toEqual((await server.gql(`{ ${doc} }`)).data.val_groups);
        client.send({ type: 'complete', id: `s${i}` });
      }
    } finally {
      client.close();
    }
  });

  it('every aggregate answers what the rows form answers, by several keys and none', async () => {
    const cases: [string, string][] = [
      ['group_by: [b]', 'keys { b } '],
      ['group_by: [i2, vc]', 'keys { i2 vc } '],
      ['group_by: []', ''],
      ['group_by: [], group_by_keys: [{_column: ts, _truncate: month}]', 'keys { month: ts(truncate: month) } '],
      ['group_by: [t], order_by: [{aggregate: {count: desc}}], limit: 3, offset: 1', 'keys { t } '],
    ];
    for (const [args, keys] of cases) {
      const { root, nested } = await both(server, args, `{ ${keys}aggregate { ${aggregates} } }`);
      expect(root, args).toEqual(nested);
      expect(root.length, args).toBeGreaterThan(0);
    }
  });

  it('NaN and the infinities are strings, text is escaped, nulls are null', async () => {
    const r = await server.gql(`{ val_groups(group_by: [id], order_by: [{keys: {id: asc}}]) { keys { id } aggregate { max { f8 n t tz d } sum { i8 } } } }`);
    expect(r.errors).toBeUndefined();
    const max = r.data.val_groups.map((g: any) => g.aggregate.max);
    expect(max.map((m: any) => m.f8)).toEqual(['NaN', 'Infinity', '-Infinity', 1e300, -0, 2.5e-10]);
    expect(max.map((m: any) => m.n)).toEqual(['NaN', 'Infinity', '-Infinity', 123456789.123456789, 0.1, -42]);
    expect(max.map((m: any) => m.t)).toEqual(['say "hi"', 'back\\slash\nnew\tline\u0001', 'ünï©ødé 😀 </script>', '', null, 'a']);
    expect(max.map((m: any) => m.tz)[3]).toBe('infinity');
    expect(max.map((m: any) => m.d)[0]).toBe('2024-01-05');
    // A bigint past 2^53 stays exact in the text: the answer's text carries all its digits.
    const raw = await server.request('POST', '/v1/graphql', { query: '{ val_groups(group_by: [id], where: {id: {_eq: 1}}) { aggregate { sum { i8 } } } }' });
    expect(raw.text).toContain('"i8":9007199254740993');
  });

  it('no group: an empty list; only __typename: one object per group', async () => {
    const none = await both(server, 'where: {id: {_eq: -1}}, group_by: [t]', '{ keys { t } }');
    expect(none).toEqual({ root: [], nested: [] });
    const names = await both(server, 'group_by: [b]', '{ __typename }');
    expect(names.root).toEqual(names.nested);
    // true, false and null.
    expect(names.root).toEqual([{ __typename: 'val_group' }, { __typename: 'val_group' }, { __typename: 'val_group' }]);
  });
});

describe('root groups as text, numbers as strings (stringify numeric types)', () => {
  const server = useServer(SEED, { config: { stringifyNumericTypes: true } });
  track(server);

  it('keys and aggregates answer what the rows form answers', async () => {
    const { root, nested } = await both(server, 'group_by: [i8, n]', `{ keys { i8 n } aggregate { ${aggregates} } }`);
    expect(root).toEqual(nested);
    expect(root.find((g: any) => g.keys.i8 === '9007199254740993')?.aggregate.sum.i8).toBe('9007199254740993');
  });
});
