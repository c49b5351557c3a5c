/**
 * Lists without order_by (Note [Rows numbered as read] in the PostgreSQL compiler): their object
 * relationships are LEFT JOINs, not a sub-query per row, and the rows keep the order they are read
 * in, which a join alone does not promise (a hash join may read the parent rows into its hash
 * table and answer in the remote table's order). A short root list (a literal limit of at most
 * 100) keeps the sub-queries. The orders are checked against the rows read without any object,
 * and the objects against SQL written by hand.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

// 300 sites stored in an order unlike their ids, against 5,000 regions: PostgreSQL hashes the
// sites (the smaller side) and reads the regions through the hash, in the regions' order.
const SEED = `
create table region (id int primary key, name text not null);
create table site (id int primary key, name text not null, region_id int references region(id));
insert into region select i, 'r' || i from generate_series(1, 5000) i;
insert into site
  select i, 's' || i, case when i % 11 = 0 then null else 1 + (i * 37) % 5000 end
  from generate_series(1, 300) i order by md5(i::text);
analyze;
`;

const server = useServer(SEED);
const gql = async (query: string, headers?: Record<string, string>) => {
  const body = await server.gql(query, undefined, headers);
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
};
const explain = async (query: string, headers?: Record<string, string>) => {
  const r = await server.request('POST', '/v1/graphql/explain', { query: { query }, user: headers ?? {} });
  expect(r.status, r.text).toBe(200);
  return { sql: r.body[0].sql as string, plan: (r.body[0].plan as string[]).join('\n') };
};
type Site = { id: number; region: { name: string } | null };
/** Each site's region name, by hand: null where it has none or the role may not see it. */
const regions = async (visible = 'true'): Promise<Map<number, string | null>> =>
  new Map((await server.sql.unsafe(`select s.id, r.name from site s left join region r on r.id = s.region_id and ${visible}`)).map((r) => [r.id as number, r.name as string | null]));

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['region', 'site'].map((t) => ({ type: 'pg_track_table', args: { table: t } })),
      { type: 'pg_create_object_relationship', args: { table: 'site', name: 'region', using: { foreign_key_constraint_on: 'region_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'region', name: 'sites', using: { foreign_key_constraint_on: { table: 'site', column: 'region_id' } } } },
      { type: 'pg_create_select_permission', args: { table: 'site', role: 'user', permission: { columns: ['id', 'name'], filter: {} } } },
      { type: 'pg_create_select_permission', args: { table: 'region', role: 'user', permission: { columns: ['id', 'name'], filter: { id: { _gt: 2500 } } } } },
      { type: 'pg_create_select_permission', args: { table: 'site', role: 'capped', permission: { columns: ['id', 'name'], filter: {}, limit: 100 } } },
      { type: 'pg_create_select_permission', args: { table: 'region', role: 'capped', permission: { columns: ['id', 'name'], filter: {} } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

describe('a list without order_by', () => {
  it('joins its object relationships and keeps the order its rows are read in', async () => {
    const query = '{ site { id region { name } } }';
    const { sql, plan } = await explain(query);
    expect(plan).not.toMatch(/SubPlan/);
    expect(sql).toMatch(/left join "public"\."region"/);
    expect(sql).toMatch(/row_number\(\) over \(\)/);
    // The join alone would answer in another order here: the sites are what PostgreSQL hashes.
    expect(plan).toMatch(/Hash Right Join/);
    const read = (await gql('{ site { id } }')).site.map((s: { id: number }) => s.id);
    expect(read).not.toEqual([...read].sort((a, b) => a - b));
    const data: Site[] = (await gql(query)).site;
    expect(data.map((s) => s.id)).toEqual(read);
    const names = await regions();
    expect(data.map((s) => s.region?.name ?? null)).toEqual(read.map((id: number) => names.get(id) ?? null));
    expect(data.filter((s) => s.region === null)).toHaveLength(27);
  });

  it("as a role: the remote's filter in the join makes a region it may not see null, in the same order", async () => {
    const headers = { 'x-svc-role': 'user' };
    const data: Site[] = (await gql('{ site(where: {id: {_lte: 200}}) { id region { name } } }', headers)).site;
    const read = (await gql('{ site(where: {id: {_lte: 200}}) { id } }', headers)).site.map((s: { id: number }) => s.id);
    expect(data.map((s) => s.id)).toEqual(read);
    const names = await regions('r.id > 2500');
    expect(data.map((s) => s.region?.name ?? null)).toEqual(read.map((id: number) => names.get(id) ?? null));
    expect(data.some((s) => s.region === null && s.id % 11 !== 0)).toBe(true);
  });

  it('nested in an array relationship and beside aggregates, in the order read', async () => {
    const nested = '{ region(where: {sites: {}}, order_by: {id: asc}) { id sites { id region { id } } } }';
    expect((await explain(nested)).sql).toMatch(/left join "public"\."region"/);
    const data = (await gql(nested)).region as { id: number; sites: { id: number; region: { id: number } }[] }[];
    const bare = (await gql('{ region(where: {sites: {}}, order_by: {id: asc}) { id sites { id } } }')).region as { id: number; sites: { id: number }[] }[];
    expect(data.map((r) => r.sites.map((s) => s.id))).toEqual(bare.map((r) => r.sites.map((s) => s.id)));
    expect(data.every((r) => r.sites.every((s) => s.region.id === r.id))).toBe(true);
    const agg = (await gql('{ site_aggregate { aggregate { count } nodes { id region { name } } } }')).site_aggregate;
    expect(agg.aggregate.count).toBe(300);
    const list: Site[] = (await gql('{ site { id region { name } } }')).site;
    expect(agg.nodes).toEqual(list);
  });

  it("a mutation's returning joins them too, in the order the rows were written", async () => {
    const rows = await server.sql.unsafe('select id, name, region_id from site');
    const read = rows.map((r) => r.id as number);
    expect(read).not.toEqual([...read].sort((a, b) => a - b));
    const names = await regions();
    const expected = read.map((id) => ({ id, region: names.get(id) ? { name: names.get(id) } : null }));
    // Every site deleted, then inserted again in the same order: each answer in the order the
    // rows were written, whatever join PostgreSQL chooses (here it kept that order even without
    // the number, so this checks the answers, not that the number is needed).
    const gone = await server.gql('mutation { delete_site(where: {}) { returning { id region { name } } } }');
    expect(gone.errors, JSON.stringify(gone.errors)).toBeUndefined();
    expect(gone.data.delete_site.returning).toEqual(expected);
    const objects = rows.map((r) => ({ id: r.id, name: r.name, region_id: r.region_id }));
    const back = await server.gql('mutation ($o: [site_insert_input!]!) { insert_site(objects: $o) { returning { id region { name } } } }', { o: objects });
    expect(back.errors, JSON.stringify(back.errors)).toBeUndefined();
    expect(back.data.insert_site.returning).toEqual(expected);
  });

  it('short, by a literal limit or the role\'s of at most 100, keeps a sub-query per row', async () => {
    const short = '{ site(limit: 100) { id region { name } } }';
    const { sql, plan } = await explain(short);
    expect(sql).not.toMatch(/left join/);
    expect(sql).not.toMatch(/row_number/);
    expect(plan).toMatch(/SubPlan/);
    const list: Site[] = (await gql('{ site { id region { name } } }')).site;
    expect((await gql(short)).site).toEqual(list.slice(0, 100));
    // Over 100 it joins, the rows numbered before the limit.
    const long = '{ site(limit: 101) { id region { name } } }';
    expect((await explain(long)).sql).toMatch(/row_number\(\) over \(\) as "__svc_n" from "public"\."site" as _t0 where true limit 101/);
    expect((await gql(long)).site).toEqual(list.slice(0, 101));
    // The role's limit makes a list short, whatever limit a variable asks for.
    const capped = { 'x-svc-role': 'capped' };
    const variable = 'query ($n: Int) { site(limit: $n) { id region { name } } }';
    const r = await server.request('POST', '/v1/graphql/explain', { query: { query: variable, variables: { n: 200 } }, user: capped });
    expect(r.status, r.text).toBe(200);
    expect(r.body[0].sql).not.toMatch(/left join/);
    const asCapped = await server.request('POST', '/v1/graphql', { query: variable, variables: { n: 200 } }, capped);
    expect(asCapped.body.data.site).toEqual(list.slice(0, 100));
    // A short list ordered by its own columns reads its objects per row too.
    const ordered = '{ site(order_by: {name: asc}, limit: 20) { id region { name } } }';
    expect((await explain(ordered)).sql).not.toMatch(/left join/);
    const byName = [...list].sort((a, b) => (`s${a.id}` < `s${b.id}` ? -1 : 1)).slice(0, 20);
    expect((await gql(ordered)).site).toEqual(byName);
  });

  it('with distinct_on, in the order of its distinct columns, joins them over that order', async () => {
    const query = '{ site(distinct_on: region_id) { region_id region { name } } }';
    const { sql, plan } = await explain(query);
    expect(plan).not.toMatch(/SubPlan/);
    expect(sql).toMatch(/left join "public"\."region"/);
    expect(sql).not.toMatch(/row_number/);
    const ids = (await server.sql.unsafe('select distinct region_id from site order by region_id asc nulls last')).map((r) => r.region_id as number | null);
    const names = new Map((await server.sql.unsafe('select id, name from region')).map((r) => [r.id as number, r.name as string]));
    const data = (await gql(query)).site as { region_id: number | null; region: { name: string } | null }[];
    expect(data).toEqual(ids.map((id) => ({ region_id: id, region: id === null ? null : { name: names.get(id) } })));
    expect(data.at(-1)).toEqual({ region_id: null, region: null });
    // Short, it keeps a sub-query per row, in the same order.
    const short = '{ site(distinct_on: region_id, limit: 50) { region_id region { name } } }';
    expect((await explain(short)).sql).not.toMatch(/left join/);
    expect((await gql(short)).site).toEqual(data.slice(0, 50));
  });
});
