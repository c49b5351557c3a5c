/**
 * The MS SQL Server kind against a real SQL Server (2017 or later): run only when
 * SVC_TEST_MSSQL_URL holds a connection string (`Server=host,1433;Database=db;User Id=sa;
 * Password=...;Encrypt=false` or Hasura's ODBC form). No SQL Server can run on the development
 * machines, so these are skipped there and in CI (the skip names the variable); NOTHING in them
 * has been run against a server yet. They make a schema of their own (svc_live_<random>), track
 * its tables, and run the GraphQL shapes the golden tests pin (queries, relationships,
 * aggregates, permissions, inserts, upserts, updates, deletes, checks, violations, the spatial
 * operators) and event triggers (capture, delivery to a local webhook, the log operations) for
 * real.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import { startHook, until } from '../event-triggers/hook.js';

const URL_ENV = 'SVC_TEST_MSSQL_URL';
const url = process.env[URL_ENV];

describe.skipIf(!url)(`the mssql kind against a real SQL Server (skipped: set ${URL_ENV} to a connection string to run)`, () => {
  const s = useServer(undefined, { env: { [URL_ENV]: url }, config: { eventsFetchInterval: 100 } });
  const schema = `svc_live_${randomBytes(4).toString('hex')}`;
  const source = 'live';
  const user = (id: number) => ({ 'x-svc-role': 'user', 'x-svc-user-id': String(id) });
  const ok = async (body: unknown) => {
    const r = await s.metadata(body);
    expect(r.status, r.text).toBe(200);
    return r.body;
  };
  const sql = (text: string) => ok({ type: 'mssql_run_sql', args: { source, sql: text } });
  const t = (name: string) => ({ schema, name });
  const name = (n: string) => `${schema}_${n}`;

  it('adds the source, makes and tracks a schema of its own', async () => {
    await ok({ type: 'mssql_add_source', args: { name: source, configuration: { connection_info: { connection_string: { from_env: URL_ENV }, pool_settings: { max_connections: 5 } } } } });
    await sql(`CREATE SCHEMA ${schema}`);
    await sql(`
      CREATE TABLE ${schema}.author (id int IDENTITY PRIMARY KEY, name nvarchar(100) NOT NULL CONSTRAINT UQ_${schema}_name UNIQUE, born date NULL, score decimal(10,2) NULL);
      CREATE TABLE ${schema}.article (id int IDENTITY PRIMARY KEY, title nvarchar(200) NOT NULL, author_id int NULL REFERENCES ${schema}.author (id), rating bigint NULL, published bit NOT NULL DEFAULT 0);
      INSERT INTO ${schema}.author (name, born, score) VALUES (N'ann', '1980-01-02', 1.5), (N'bob', NULL, 2.25), (N'cy', '1990-03-04', NULL);
      INSERT INTO ${schema}.article (title, author_id, rating, published) VALUES (N'a1', 1, 5, 1), (N'b1', 2, 7, 1), (N'a2', 1, NULL, 0), (N'a3', 1, 9, 1);
    `);
    for (const n of ['author', 'article']) await ok({ type: 'mssql_track_table', args: { source, table: t(n) } });
    await ok({ type: 'mssql_create_object_relationship', args: { source, table: t('article'), name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    await ok({ type: 'mssql_create_array_relationship', args: { source, table: t('author'), name: 'articles', using: { foreign_key_constraint_on: { table: t('article'), column: 'author_id' } } } });
    await ok({ type: 'mssql_create_select_permission', args: { source, table: t('article'), role: 'user', permission: { columns: ['id', 'title', 'author_id'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 2, allow_aggregations: true } } });
    await ok({ type: 'mssql_create_insert_permission', args: { source, table: t('article'), role: 'user', permission: { columns: ['title', 'rating'], set: { author_id: 'X-Svc-User-Id' }, check: { rating: { _lt: 10 } } } } });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('queries: where, order_by with nulls, limit, offset, relationships, _by_pk, distinct_on', async () => {
    const r = await s.gql(`{
      list: ${name('article')}(where: {published: {_eq: true}}, order_by: {rating: desc}, limit: 2, offset: 1) { title author { name } }
      nulls: ${name('article')}(order_by: {rating: asc}) { title }
      authors: ${name('author')}(order_by: {id: asc}) { name score articles(order_by: {id: asc}) { title } }
      one: ${name('author')}_by_pk(id: 2) { name born }
      none: ${name('author')}_by_pk(id: 99) { name }
      like: ${name('author')}(where: {name: {_like: "a%"}}) { name }
      inlist: ${name('article')}(where: {id: {_in: [1, 2]}}, order_by: {id: asc}) { id }
      distinct: ${name('article')}(distinct_on: author_id, order_by: [{author_id: asc}, {id: desc}]) { author_id id }
    }`);
    expect(r.errors).toBeUndefined();
    expect(r.data.list).toEqual([
      { title: 'b1', author: { name: 'bob' } },
      { title: 'a1', author: { name: 'ann' } },
    ]);
    // Hasura's order for this kind: asc is nulls first.
    expect(r.data.nulls.map((x: { title: string }) => x.title)).toEqual(['a2', 'a1', 'b1', 'a3']);
    expect(r.data.authors).toEqual([
      { name: 'ann', score: 1.5, articles: [{ title: 'a1' }, { title: 'a2' }, { title: 'a3' }] },
      { name: 'bob', score: 2.25, articles: [{ title: 'b1' }] },
      { name: 'cy', score: null, articles: [] },
    ]);
    expect(r.data.one).toEqual({ name: 'bob', born: null });
    expect(r.data.none).toBeNull();
    expect(r.data.like).toEqual([{ name: 'ann' }]);
    expect(r.data.inlist).toEqual([{ id: 1 }, { id: 2 }]);
    expect(r.data.distinct).toEqual([
      { author_id: 1, id: 4 },
      { author_id: 2, id: 2 },
    ]);
  });

  it('aggregates, an array relationship aggregate, variables for limit and offset', async () => {
    const r = await s.gql(
      `query ($n: Int, $o: Int) {
        agg: ${name('article')}_aggregate(where: {author_id: {_eq: 1}}) { aggregate { count sum { rating } avg { rating } max { title } } nodes { id } }
        per: ${name('author')}(order_by: {id: asc}, limit: $n, offset: $o) { name articles_aggregate { aggregate { count } } }
      }`,
      { n: 1, o: 1 },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.agg.aggregate).toMatchObject({ count: 3, sum: { rating: 14 }, max: { title: 'a3' } });
    expect(Number(r.data.agg.aggregate.avg.rating)).toBeCloseTo(7);
    expect(r.data.agg.nodes).toHaveLength(3);
    expect(r.data.per).toEqual([{ name: 'bob', articles_aggregate: { aggregate: { count: 1 } } }]);
  });

  it("a role's filter, limit and session variable", async () => {
    const r = await s.gql(`{ ${name('article')}(order_by: {id: asc}) { id title } ${name('article')}_aggregate { aggregate { count } } }`, undefined, user(1));
    expect(r.errors).toBeUndefined();
    expect(r.data[name('article')]).toEqual([
      { id: 1, title: 'a1' },
      { id: 3, title: 'a2' },
    ]);
    expect(r.data[`${name('article')}_aggregate`]).toEqual({ aggregate: { count: 3 } });
  });

  it('mutations: insert with presets and check, a failed check, a unique violation, if_matched, update, delete', async () => {
    const ins = await s.gql(`mutation { insert_${name('article')}(objects: [{title: "u1", rating: 3}]) { affected_rows returning { title author_id } } }`, undefined, user(2));
    expect(ins).toEqual({ data: { [`insert_${name('article')}`]: { affected_rows: 1, returning: [{ title: 'u1', author_id: 2 }] } } });
    const bad = await s.gql(`mutation { insert_${name('article')}(objects: [{title: "u2", rating: 11}]) { affected_rows } }`, undefined, user(2));
    expect(bad.errors[0].extensions.code).toBe('permission-error');
    expect((await sql(`SELECT COUNT(*) AS n FROM ${schema}.article WHERE title = N'u2'`)).result[1]).toEqual([0]);
    const dup = await s.gql(`mutation { insert_${name('author')}_one(object: {name: "ann"}) { id } }`);
    expect(dup.errors[0]).toMatchObject({ extensions: { code: 'constraint-violation' }, message: expect.stringMatching(/^Uniqueness violation\./) });
    const up = await s.gql(`mutation { insert_${name('author')}(objects: [{name: "ann", score: 9}, {name: "dee"}], if_matched: {match_columns: [name], update_columns: [score]}) { affected_rows returning { name score } } }`);
    expect(up.errors).toBeUndefined();
    expect(up.data[`insert_${name('author')}`].affected_rows).toBe(2);
    expect((await sql(`SELECT score FROM ${schema}.author WHERE name = N'ann'`)).result[1]).toEqual([9]);
    const upd = await s.gql(`mutation { update_${name('article')}(where: {title: {_eq: "u1"}}, _set: {title: "u1!"}, _inc: {rating: 1}) { affected_rows returning { title rating } } }`);
    expect(upd).toEqual({ data: { [`update_${name('article')}`]: { affected_rows: 1, returning: [{ title: 'u1!', rating: 4 }] } } });
    const del = await s.gql(`mutation { delete_${name('article')}_by_pk(id: 5) { title } }`);
    expect(del).toEqual({ data: { [`delete_${name('article')}_by_pk`]: { title: 'u1!' } } });
  });

  it('explain answers a plan', async () => {
    const r = await s.request('POST', '/v1/graphql/explain', { query: { query: `{ ${name('author')}(where: {id: {_eq: 1}}) { name } }` } });
    expect(r.status, r.text).toBe(200);
    expect(r.body[0].plan.length).toBeGreaterThan(0);
  });

  it('geometry and geography: the _st_* operators, WKT and GeoJSON values, WKT out (Note [MSSQL spatial values])', async () => {
    await sql(`
      CREATE TABLE ${schema}.place (id int PRIMARY KEY, location geometry NULL, area geography NULL);
      INSERT INTO ${schema}.place (id, location, area) VALUES
        (1, geometry::STGeomFromText('POINT (1 1)', 0), geography::STGeomFromText('POINT (10 50)', 4326)),
        (2, geometry::STGeomFromText('LINESTRING (1 0, 1 3)', 0), NULL),
        (3, geometry::STGeomFromText('POLYGON ((0 0, 0 2, 2 2, 2 0, 0 0))', 0), NULL),
        (4, geometry::STGeomFromText('POINT (9 9)', 4326), NULL);
    `);
    await ok({ type: 'mssql_track_table', args: { source, table: t('place') } });
    const square = { type: 'Polygon', coordinates: [[[0, 0], [0, 2], [2, 2], [2, 0], [0, 0]]] };
    const ids = (x: { id: number }[]) => x.map((r) => r.id);
    const r = await s.gql(
      `query ($square: geometry, $around: geography) {
        within: ${name('place')}(where: {location: {_st_within: $square}}, order_by: {id: asc}) { id }
        intersects: ${name('place')}(where: {location: {_st_intersects: $square}}, order_by: {id: asc}) { id }
        equals: ${name('place')}(where: {location: {_st_equals: "POLYGON ((0 0, 0 2, 2 2, 2 0, 0 0))"}}) { id }
        contains: ${name('place')}(where: {location: {_st_contains: "POINT (0.5 0.5)"}}) { id }
        crosses: ${name('place')}(where: {location: {_st_crosses: "LINESTRING (0 0, 2 2)"}}) { id }
        touches: ${name('place')}(where: {location: {_st_touches: "POLYGON ((2 0, 2 2, 4 2, 4 0, 2 0))"}}) { id }
        overlaps: ${name('place')}(where: {location: {_st_overlaps: "POLYGON ((1 1, 1 3, 3 3, 3 1, 1 1))"}}) { id }
        srid: ${name('place')}(where: {location: {_st_equals: {type: "Point", coordinates: [9, 9]}}}) { id }
        geo: ${name('place')}(where: {area: {_st_intersects: $around}}) { id location area }
      }`,
      { square, around: { type: 'Polygon', coordinates: [[[9, 49], [11, 49], [11, 51], [9, 51], [9, 49]]] } },
    );
    expect(r.errors).toBeUndefined();
    expect(ids(r.data.within)).toEqual([1, 3]);
    expect(ids(r.data.intersects)).toEqual([1, 2, 3]);
    expect(ids(r.data.equals)).toEqual([3]);
    expect(ids(r.data.contains)).toEqual([3]);
    expect(ids(r.data.crosses)).toEqual([2]);
    expect(ids(r.data.touches)).toEqual([3]);
    expect(ids(r.data.overlaps)).toEqual([3]);
    // The value is read in the row's SRID (4326 here), where Hasura's SRID 0 would match nothing.
    expect(ids(r.data.srid)).toEqual([4]);
    expect(r.data.geo).toEqual([{ id: 1, location: 'POINT (1 1)', area: 'POINT (10 50)' }]);
    const ins = await s.gql(`mutation ($p: geometry) { insert_${name('place')}_one(object: {id: 5, location: $p, area: "POINT (3 4)"}) { id location area } }`, { p: { type: 'LineString', coordinates: [[0, 0], [3, 4]] } });
    expect(ins).toEqual({ data: { [`insert_${name('place')}_one`]: { id: 5, location: 'LINESTRING (0 0, 3 4)', area: 'POINT (3 4)' } } });
    const bad = await s.gql(`{ ${name('place')}(where: {location: {_st_within: "POINTY (1 1)"}}) { id } }`);
    expect(bad.errors[0].extensions.code).toBe('data-exception');
    const eq = await s.gql(`{ ${name('place')}(where: {location: {_eq: "POINT (1 1)"}}) { id } }`);
    expect(eq.errors[0].extensions.code).toBe('not-supported');
  });

  it('event triggers: capture in the changing transaction, delivery, the log, idempotent reconcile, removal', async () => {
    const hook = await startHook();
    try {
      s.env.HOOK = hook.url;
      await ok({
        type: 'mssql_create_event_trigger',
        args: { source, name: `${schema}_ev`, table: t('author'), webhook: '{{HOOK}}', insert: { columns: '*' }, update: { columns: ['score'] }, delete: { columns: '*' }, enable_manual: true },
      });
      // Reconcile again: no change, the trigger stays.
      await ok({ type: 'reload_metadata', args: { reload_sources: [source] } });
      await sql(`INSERT INTO ${schema}.author (name) VALUES (N'eve')`);
      await sql(`UPDATE ${schema}.author SET born = '2000-01-01' WHERE name = N'eve'`); // not a listened column: no event
      await sql(`UPDATE ${schema}.author SET score = 3 WHERE name = N'eve'`);
      await sql(`DELETE FROM ${schema}.author WHERE name = N'eve'`);
      const got = await hook.waitFor(3, 30_000);
      const ops = got.map((r) => [r.body.event.op, r.body.event.data]);
      expect(ops).toEqual(
        expect.arrayContaining([
          ['INSERT', { old: null, new: expect.objectContaining({ name: 'eve', score: null }) }],
          ['UPDATE', { old: expect.objectContaining({ score: null }), new: expect.objectContaining({ score: 3 }) }],
          ['DELETE', { old: expect.objectContaining({ name: 'eve', score: 3 }), new: null }],
        ]),
      );
      expect(got[0]!.body).toMatchObject({ table: { schema, name: 'author' }, trigger: { name: `${schema}_ev` }, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/) });
      const logs = await until(async () => {
        const l = (await ok({ type: 'mssql_get_event_logs', args: { source, name: `${schema}_ev` } })) as { delivered: boolean; id: string }[];
        return l.length === 3 && l.every((e) => e.delivered) && l;
      }, 30_000);
      const byId = await ok({ type: 'mssql_get_event_by_id', args: { source, event_id: logs[0]!.id } });
      expect(byId.invocations[0]).toMatchObject({ http_status: 200, event_id: logs[0]!.id });
      const manual = await ok({ type: 'mssql_invoke_event_trigger', args: { source, name: `${schema}_ev`, payload: { id: 1 } } });
      await hook.waitFor(4, 30_000);
      expect(hook.received.at(-1)!.body).toMatchObject({ id: manual.event_id, event: { op: 'MANUAL', data: { old: null, new: { id: 1 } } } });
      await until(async () => (await s.metadata({ type: 'mssql_redeliver_event', args: { source, event_id: manual.event_id } })).status === 200, 30_000);
      await hook.waitFor(5, 30_000);
      await ok({ type: 'mssql_delete_event_trigger', args: { source, name: `${schema}_ev` } });
      expect((await sql(`SELECT COUNT(*) AS n FROM sys.triggers WHERE name LIKE N'notify[_]svc[_]${schema}%'`)).result[1]).toEqual([0]);
    } finally {
      await hook.close();
    }
  });

  it('drops what it made', async () => {
    await ok({ type: 'mssql_run_sql', args: { source, cascade: true, sql: `DROP TABLE ${schema}.place; DROP TABLE ${schema}.article; DROP TABLE ${schema}.author; DROP SCHEMA ${schema}` } });
    await ok({ type: 'mssql_drop_source', args: { name: source, cascade: true } });
  });
});
