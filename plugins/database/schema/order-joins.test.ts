/**
 * Object relationships as joins (Notes [Order keys by joins] and [Object relationships by joins]
 * in the PostgreSQL compiler): order keys through unique steps are LEFT JOINs shared by the keys
 * that pass the same steps, and so are the objects of a selection (a list without order_by over
 * its rows numbered as read, read-order.test.ts), with the remote's row filter in the join
 * condition; a step that is not unique stays a subquery with `limit 1`. The answers are checked
 * against SQL written by hand.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table country (id int primary key, name text not null);
create table city (id int primary key, name text not null, country_id int references country(id));
create table person (id int primary key, name text not null, city_id int references city(id), home text);
insert into country values (1, 'Norway'), (2, 'Chile'), (3, 'Hidden');
insert into city values (1, 'Oslo', 1), (2, 'Bergen', 1), (3, 'Santiago', 2), (4, 'Secret', 3), (5, 'Nowhere', null), (6, 'Oslo', 2);
insert into person
  select i, 'p' || i, case when i % 7 = 0 then null else 1 + i % 6 end, case i % 3 when 0 then 'Oslo' when 1 then 'Bergen' else null end
  from generate_series(1, 60) i;
analyze;
`;

const server = useServer(SEED);
const gql = async (query: string, headers?: Record<string, string>) => {
  const r = await server.request('POST', '/v1/graphql', { query }, headers);
  expect(r.status, r.text).toBe(200);
  expect(r.body.errors, r.text).toBeUndefined();
  return r.body.data;
};
const explainSql = async (query: string, headers?: Record<string, string>) => {
  const r = await server.request('POST', '/v1/graphql/explain', { query: { query }, user: headers ?? {} });
  expect(r.status, r.text).toBe(200);
  return r.body[0].sql as string;
};
const ids = async (sql: string) => (await server.sql.unsafe(sql)).map((r) => r.id as number);

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['country', 'city', 'person'].map((t) => ({ type: 'pg_track_table', args: { table: t } })),
      { type: 'pg_create_object_relationship', args: { table: 'city', name: 'country', using: { foreign_key_constraint_on: 'country_id' } } },
      { type: 'pg_create_object_relationship', args: { table: 'person', name: 'city', using: { foreign_key_constraint_on: 'city_id' } } },
      // Not unique: two cities are called Oslo.
      { type: 'pg_create_object_relationship', args: { table: 'person', name: 'home_city', using: { manual_configuration: { remote_table: 'city', column_mapping: { home: 'name' } } } } },
      { type: 'pg_create_select_permission', args: { table: 'person', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'city', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      // The user may not see the Hidden country: its cities' people sort as if they had none.
      { type: 'pg_create_select_permission', args: { table: 'country', role: 'user', permission: { columns: ['id', 'name'], filter: { name: { _neq: 'Hidden' } } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('order_by through object relationships', () => {
  const query = '{ person(order_by: [{city: {country: {name: desc}}}, {city: {name: asc}}, {id: asc}], limit: 25, offset: 10) { id } }';

  it('two levels and a shared first step: joined once each, in the order SQL gives', async () => {
    const data = await gql(query);
    const expected = await ids(`
      select p.id from person p left join city c on c.id = p.city_id left join country k on k.id = c.country_id
      order by k.name desc nulls first, c.name asc nulls last, p.id asc limit 25 offset 10`);
    expect(data.person.map((p: { id: number }) => p.id)).toEqual(expected);
    const sql = await explainSql(query);
    // city joined once for both keys, country once; no per-row subquery for a key.
    expect(sql.match(/left join "public"\."city"/g)).toHaveLength(1);
    expect(sql.match(/left join "public"\."country"/g)).toHaveLength(1);
    expect(sql).not.toMatch(/limit 1\)/);
  });

  it("the remote's row filter is in the join: keys the role may not see are null", async () => {
    const headers = { 'x-svc-role': 'user' };
    const data = await gql(query, headers);
    const expected = await ids(`
      select p.id from person p left join city c on c.id = p.city_id left join country k on k.id = c.country_id and k.name <> 'Hidden'
      order by k.name desc nulls first, c.name asc nulls last, p.id asc limit 25 offset 10`);
    expect(data.person.map((p: { id: number }) => p.id)).toEqual(expected);
    // Not the admin's order: the hidden country's people moved to the nulls.
    expect(expected).not.toEqual(await ids(`
      select p.id from person p left join city c on c.id = p.city_id left join country k on k.id = c.country_id
      order by k.name desc nulls first, c.name asc nulls last, p.id asc limit 25 offset 10`));
    expect(await explainSql(query, headers)).toMatch(/left join "public"\."country" as \S+ on .*<>/);
  });

  it('a relationship that is not unique stays a subquery with limit 1, then joins nothing after it', async () => {
    const q = '{ person(where: {home: {_eq: "Bergen"}}, order_by: [{home_city: {country: {name: asc}}}, {id: asc}]) { id } }';
    const data = await gql(q);
    // Bergen is one city (Norway): the key is unambiguous here, so SQL can say what it is.
    const expected = await ids(`select p.id from person p where p.home = 'Bergen' order by p.id`);
    expect(data.person.map((p: { id: number }) => p.id)).toEqual(expected);
    const sql = await explainSql(q);
    expect(sql).not.toMatch(/left join/);
    expect(sql).toMatch(/limit 1\)/);
  });

  it('a list ordered through a relationship inside an array relationship, and a distinct on', async () => {
    await server.metadata({ type: 'pg_create_array_relationship', args: { table: 'city', name: 'people', using: { foreign_key_constraint_on: { table: 'person', column: 'city_id' } } } });
    const data = await gql('{ city(order_by: {id: asc}, where: {id: {_lte: 2}}) { id people(order_by: [{city: {country: {name: asc}}}, {id: desc}], limit: 2) { id } } }');
    expect(data.city).toEqual([
      { id: 1, people: (await ids('select id from person where city_id = 1 order by id desc limit 2')).map((id) => ({ id })) },
      { id: 2, people: (await ids('select id from person where city_id = 2 order by id desc limit 2')).map((id) => ({ id })) },
    ]);
    const d = await gql('{ person(distinct_on: city_id, order_by: [{city_id: asc}, {city: {name: asc}}, {id: asc}]) { id } }');
    expect(d.person.map((p: { id: number }) => p.id)).toEqual(await ids('select distinct on (city_id) id from person order by city_id asc nulls last, id asc'));
  });
});

describe('object relationships in a selection', () => {
  /** Each person's city and its country as SQL says, null where there is none or the role may not see it. */
  const expected = async (where: string, hidden: boolean) =>
    (
      await server.sql.unsafe(`
        select p.id, c.name as city, k.name as country from person p
        left join city c on c.id = p.city_id
        left join country k on k.id = c.country_id ${hidden ? "and k.name <> 'Hidden'" : ''}
        ${where} order by p.id`)
    ).map((r) => ({ id: r.id, city: r.city === null ? null : { name: r.city, country: r.country === null ? null : { name: r.country } } }));
  const q = '{ person(order_by: {id: asc}) { id city { name country { name } } } }';

  it('an ordered list joins them (nested too), with null objects where no row matches', async () => {
    expect((await gql(q)).person).toEqual(await expected('', false));
    const sql = await explainSql(q);
    expect(sql.match(/left join "public"\."city"/g)).toHaveLength(1);
    expect(sql.match(/left join "public"\."country"/g)).toHaveLength(1);
    expect(sql).not.toMatch(/limit 1\)/);
  });

  it("as a role: the remote's filter in the join makes the hidden country null", async () => {
    const headers = { 'x-svc-role': 'user' };
    const data = await gql(q, headers);
    expect(data.person).toEqual(await expected('', true));
    expect(data.person.some((p: any) => p.city?.name === 'Secret' && p.city.country === null)).toBe(true);
  });

  it('by primary key, inside an ordered array relationship, and beside aggregates', async () => {
    const one = await gql('{ person_by_pk(id: 4) { id city { name country { name } } } }');
    expect(one.person_by_pk).toEqual((await expected('where p.id = 4', false))[0]);
    expect(await explainSql('{ person_by_pk(id: 4) { id city { name } } }')).toMatch(/left join "public"\."city"/);
    await server.metadata({ type: 'pg_create_array_relationship', args: { table: 'country', name: 'cities', using: { foreign_key_constraint_on: { table: 'city', column: 'country_id' } } } });
    const data = await gql('{ country(order_by: {id: asc}) { id cities(order_by: {id: asc}) { id country { name } } } }');
    expect(data.country).toEqual([
      { id: 1, cities: [{ id: 1, country: { name: 'Norway' } }, { id: 2, country: { name: 'Norway' } }] },
      { id: 2, cities: [{ id: 3, country: { name: 'Chile' } }, { id: 6, country: { name: 'Chile' } }] },
      { id: 3, cities: [{ id: 4, country: { name: 'Hidden' } }] },
    ]);
    const agg = await gql('{ person_aggregate(order_by: {id: asc}, where: {id: {_lte: 14}}) { aggregate { count } nodes { id city { name } } } }');
    const rows = await expected('where p.id <= 14', false);
    expect(agg.person_aggregate).toEqual({ aggregate: { count: 14 }, nodes: rows.map((r) => ({ id: r.id, city: r.city && { name: r.city.name } })) });
  });

  it('a list without order_by joins them over its rows numbered as read (read-order.test.ts); a relationship that is not unique keeps the subquery', async () => {
    const unordered = '{ person(where: {id: {_lte: 3}}) { id city { name } } }';
    const sql = await explainSql(unordered);
    expect(sql).toMatch(/row_number\(\) over \(\) as "__svc_n" .* left join "public"\."city"/);
    expect((await gql(unordered)).person).toEqual(
      (await ids('select id from person where id <= 3')).map((id) => ({ id, city: id === 1 ? { name: 'Bergen' } : id === 2 ? { name: 'Santiago' } : { name: 'Secret' } })),
    );
    const home = '{ person(order_by: {id: asc}, where: {home: {_eq: "Bergen"}}) { id home_city { name country { name } } } }';
    expect(await explainSql(home)).not.toMatch(/left join "public"\."city"/);
    const data = await gql(home);
    expect(data.person.every((p: any) => p.home_city.name === 'Bergen' && p.home_city.country.name === 'Norway')).toBe(true);
  });
});
