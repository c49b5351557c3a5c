/**
 * Golden tests of enum tables (`is_enum`) in GraphQL, as Hasura v2 generates them: `<t>_enum` from
 * the table's rows, columns referencing it typed by it, `<t>_enum_comparison_exp`
 * (Note [Enum table references] in role.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table colors (value text primary key, comment text);
insert into colors values ('red', '#FF0000'), ('green', '#00FF00'), ('blue', '#0000FF');
create table weekdays (value text primary key);
insert into weekdays values ('sunday'), ('monday'), ('friday');
create table employees (id serial primary key, name text not null, favorite_color text not null references colors,
  gets_paid_on text references weekdays);
insert into employees (name, favorite_color, gets_paid_on) values ('Alyssa', 'red', 'monday'), ('Ben', 'blue', 'friday'), ('Cy', 'red', null);
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
const typeOf = '{ e: __type(name: "employees") { fields { name type { name ofType { name } } } } }';
const fieldTypes = async (headers?: Record<string, string>) =>
  Object.fromEntries((await q(typeOf, undefined, headers)).data.e.fields.map((f: any) => [f.name, f.type.name ?? f.type.ofType.name]));

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'colors', is_enum: true } },
      { type: 'pg_track_table', args: { table: 'weekdays', is_enum: true } },
      { type: 'pg_track_table', args: { table: 'employees' } },
      { type: 'pg_create_select_permission', args: { table: 'employees', role: 'user', permission: { columns: ['id', 'favorite_color'], filter: { favorite_color: { _eq: 'red' } } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('enum tables', () => {
  it('the enum type has the rows, sorted, with comments as descriptions', async () => {
    expect(await q('{ c: __type(name: "colors_enum") { name kind description enumValues { name description } } }')).toEqual({
      data: {
        c: {
          name: 'colors_enum',
          kind: 'ENUM',
          description: null,
          enumValues: [
            { name: 'blue', description: '#0000FF' },
            { name: 'green', description: '#00FF00' },
            { name: 'red', description: '#FF0000' },
          ],
        },
      },
    });
    expect((await q('{ w: __type(name: "weekdays_enum") { enumValues { name description } } }')).data.w.enumValues).toEqual([
      { name: 'friday', description: null },
      { name: 'monday', description: null },
      { name: 'sunday', description: null },
    ]);
  });

  it('referencing columns are typed by the enum; bool_exp uses <t>_enum_comparison_exp with equality operators', async () => {
    expect(await fieldTypes()).toEqual({ id: 'Int', name: 'String', favorite_color: 'colors_enum', gets_paid_on: 'weekdays_enum' });
    const r = await q('{ b: __type(name: "employees_bool_exp") { inputFields { name type { name } } } c: __type(name: "colors_enum_comparison_exp") { description inputFields { name type { kind name ofType { kind ofType { name } } } } } }');
    expect(r.data.b.inputFields.find((f: any) => f.name === 'favorite_color').type.name).toBe('colors_enum_comparison_exp');
    expect(r.data.c.description).toBe(`Boolean expression to compare columns of type "colors_enum". All fields are combined with logical 'AND'.`);
    expect(r.data.c.inputFields.map((f: any) => f.name)).toEqual(['_eq', '_in', '_is_null', '_neq', '_nin']);
    expect(r.data.c.inputFields[1].type).toEqual({ kind: 'LIST', name: null, ofType: { kind: 'NON_NULL', ofType: { name: 'colors_enum' } } });
    // The enum tables themselves stay plain tables.
    expect(await q('{ colors(order_by: {value: asc}) { value comment } }')).toEqual({
      data: { colors: [{ value: 'blue', comment: '#0000FF' }, { value: 'green', comment: '#00FF00' }, { value: 'red', comment: '#FF0000' }] },
    });
    // No max/min over an enum reference (Hasura: not a comparable scalar).
    expect((await q('{ employees_aggregate { aggregate { max { favorite_color } } } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
  });

  it('filters with enum values as literals and variables; the values come out as strings', async () => {
    expect(await q('{ employees(where: {favorite_color: {_eq: red}}, order_by: {id: asc}) { name favorite_color gets_paid_on } }')).toEqual({
      data: { employees: [{ name: 'Alyssa', favorite_color: 'red', gets_paid_on: 'monday' }, { name: 'Cy', favorite_color: 'red', gets_paid_on: null }] },
    });
    expect(await q('{ employees(where: {favorite_color: {_in: [blue, green]}}) { name } }')).toEqual({ data: { employees: [{ name: 'Ben' }] } });
    expect(await q('{ employees(where: {gets_paid_on: {_is_null: true}}) { name } }')).toEqual({ data: { employees: [{ name: 'Cy' }] } });
    const doc = 'query ($c: colors_enum!, $d: [weekdays_enum!]) { employees(where: {favorite_color: {_neq: $c}, gets_paid_on: {_nin: $d}}) { name } }';
    expect(await q(doc, { c: 'red', d: ['monday'] })).toEqual({ data: { employees: [{ name: 'Ben' }] } });
    expect(await q('{ employees(order_by: {favorite_color: desc, id: asc}) { id } }')).toEqual({ data: { employees: [{ id: 1 }, { id: 3 }, { id: 2 }] } });
  });

  it('a value outside the enum, or a string, is a validation error before any SQL (also through variables)', async () => {
    expect((await q('{ employees(where: {favorite_color: {_eq: purple}}) { name } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
    expect((await q('{ employees(where: {favorite_color: {_eq: "red"}}) { name } }')).errors?.[0]?.extensions?.code).toBe('validation-failed');
    const r = await q('query ($c: colors_enum!) { employees(where: {favorite_color: {_eq: $c}}) { name } }', { c: "red' or '1'='1" });
    expect(r.errors?.[0]?.extensions?.code).toBe('validation-failed');
    expect(r.data).toBeUndefined();
  });

  it('a role sees the enum type for the columns it may select, and only its rows', async () => {
    const user = { 'x-svc-role': 'user' };
    expect(await fieldTypes(user)).toEqual({ id: 'Int', favorite_color: 'colors_enum' });
    expect(await q('{ employees(where: {favorite_color: {_eq: blue}}) { id } }', undefined, user)).toEqual({ data: { employees: [] } });
    expect(await q('{ employees(order_by: {id: asc}) { id favorite_color } }', undefined, user)).toEqual({
      data: { employees: [{ id: 1, favorite_color: 'red' }, { id: 3, favorite_color: 'red' }] },
    });
    expect((await q('{ w: __type(name: "weekdays_enum") { name } }', undefined, user)).data.w).toBeNull();
  });

  it('set_table_is_enum, a custom name and reloaded rows retype the columns without touching the referencing table', async () => {
    let r = await server.metadata({ type: 'pg_set_table_is_enum', args: { table: 'weekdays', is_enum: false } });
    expect(r.status, r.text).toBe(200);
    expect((await fieldTypes()).gets_paid_on).toBe('String');
    expect((await q('{ w: __type(name: "weekdays_enum") { name } }')).data.w).toBeNull();
    r = await server.metadata({ type: 'pg_set_table_customization', args: { table: 'colors', configuration: { custom_name: 'paint' } } });
    expect(r.status, r.text).toBe(200);
    expect((await fieldTypes()).favorite_color).toBe('paint_enum');
    // Hasura caches an enum table's values: new rows show after a reload.
    await server.runSql("insert into colors values ('purple', null)");
    expect((await server.metadata({ type: 'reload_metadata', args: {} })).status).toBe(200);
    expect(await q('{ employees(where: {favorite_color: {_eq: purple}}) { id } }')).toEqual({ data: { employees: [] } });
  });
});
