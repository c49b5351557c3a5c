/**
 * SQL Server's spatial columns (geometry, geography) end to end through the HTTP API, with the
 * stand-in at the driver boundary (./test-support/stand-in.ts; the table `dbo.place` of
 * ./test-support/fixtures, hand-written after sys.*): the GraphQL schema (the `_st_*` operators
 * Hasura's MSSQL backend offers per type), what a query sends (the operator as the column's
 * method, the value bound as WKT), permissions with spatial operands, and every refusal in the
 * SPEC's shape. Whether SQL Server answers the statements as intended is live.test.ts's (Note
 * [MSSQL spatial values] in ./geo.ts).
 */
import { describe, expect, it } from 'vitest';
import { builtinPlugins } from '../../server/plugins.js';
import { useServer } from '../../test/helpers.js';
import { mssqlPlugin } from './index.js';
import { jsonAnswer, standIn } from './test-support/stand-in.js';

const stand = standIn();
const CONN = 'Server=db.example,1433;Database=svc;User Id=svc;Password=secret;Encrypt=false';
const s = useServer(undefined, { plugins: builtinPlugins.map((p) => (p.name === 'mssql' ? mssqlPlugin(stand.driver) : p)) });

const source = 'ms';
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const lastSent = (match: (sql: string) => boolean) => stand.sent().filter((x) => match(x.sql)).at(-1);
const PLACE = 'FROM [dbo].[place] AS _t0';
const square = { type: 'Polygon', coordinates: [[[0, 0], [0, 2], [2, 2], [2, 0], [0, 0]]] };

describe('geometry and geography columns (Note [MSSQL spatial values])', () => {
  it('tracks a table with spatial columns; the schema has their scalars and Hasura\'s _st_* operators per type', async () => {
    await ok({ type: 'mssql_add_source', args: { name: source, configuration: { connection_info: { connection_string: CONN } } } });
    await ok({ type: 'mssql_track_table', args: { source, table: 'place' } });
    const r = await s.gql(`{
      place: __type(name: "place") { fields { name type { name } } }
      boolExp: __type(name: "place_bool_exp") { inputFields { name type { name } } }
      geometry: __type(name: "geometry_MSSQL_comparison_exp") { inputFields { name type { name } } }
      geography: __type(name: "geography_MSSQL_comparison_exp") { inputFields { name } }
      insert: __type(name: "place_insert_input") { inputFields { name type { name } } }
    }`);
    const fields = (t: { inputFields?: { name: string }[]; fields?: { name: string }[] }) => (t.inputFields ?? t.fields)!.map((f) => f.name);
    expect(Object.fromEntries(r.data.place.fields.map((f: { name: string; type: { name: string } }) => [f.name, f.type.name]))).toMatchObject({ location: 'geometry', area: 'geography' });
    const bool = Object.fromEntries(r.data.boolExp.inputFields.map((f: { name: string; type: { name: string } }) => [f.name, f.type.name]));
    expect(bool).toMatchObject({ location: 'geometry_MSSQL_comparison_exp', area: 'geography_MSSQL_comparison_exp' });
    // Hasura's: the generic operators for every type, the five spatial ones on both, two on geometry only.
    expect(fields(r.data.geometry)).toEqual(['_eq', '_gt', '_gte', '_in', '_is_null', '_lt', '_lte', '_neq', '_nin', '_st_contains', '_st_crosses', '_st_equals', '_st_intersects', '_st_overlaps', '_st_touches', '_st_within']);
    expect(fields(r.data.geography)).toEqual(['_eq', '_gt', '_gte', '_in', '_is_null', '_lt', '_lte', '_neq', '_nin', '_st_contains', '_st_equals', '_st_intersects', '_st_overlaps', '_st_within']);
    expect(r.data.geometry.inputFields.find((f: { name: string }) => f.name === '_st_within').type.name).toBe('geometry');
    expect(fields(r.data.insert)).toEqual(expect.arrayContaining(['location', 'area']));
  });

  it('a query with _st_intersects on a GeoJSON variable and _st_within on WKT: the column\'s methods, values bound as WKT, rows read as WKT', async () => {
    stand.answer((sql) => sql.includes(PLACE) && sql.includes('STIntersects'), jsonAnswer([{ id: 1, location: 'POINT (1 1)', area: null }]));
    const r = await s.gql(
      `query ($square: geometry) { place(where: {location: {_st_intersects: $square}, area: {_st_within: "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))"}}) { id location area } }`,
      { square },
    );
    expect(r).toEqual({ data: { place: [{ id: 1, location: 'POINT (1 1)', area: null }] } });
    const sent = lastSent((x) => x.includes(PLACE))!;
    expect(sent.sql).toContain('(_t0.[location].STIntersects(geometry::STGeomFromText(@p1, _t0.[location].STSrid)) = 1)');
    expect(sent.sql).toContain('(_t0.[area].STWithin(geography::STGeomFromText(@p2, _t0.[area].STSrid)) = 1)');
    expect(sent.sql).toContain('_t0.[location].STAsText() AS [location], _t0.[area].STAsText() AS [area]');
    expect(sent.params).toEqual(['POLYGON ((0 0, 0 2, 2 2, 2 0, 0 0))', 'POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))']);
  });

  it('a value that is neither WKT text nor a GeoJSON geometry is parse-failed, and nothing is sent', async () => {
    const before = stand.sent().length;
    const number = await s.gql('query ($g: geometry) { place(where: {location: {_st_contains: $g}}) { id } }', { g: 42 });
    expect(number).toMatchObject({ errors: [{ message: 'parsing geometry failed, expected WKT text or a GeoJSON geometry: $: expected a GeoJSON geometry object, but encountered Number', extensions: { code: 'parse-failed' } }] });
    const feature = await s.gql('query ($g: geography) { place(where: {area: {_st_intersects: $g}}) { id } }', { g: { type: 'Feature', geometry: square } });
    expect(feature.errors[0]).toMatchObject({ extensions: { code: 'parse-failed' } });
    expect(feature.errors[0].message).toContain('parsing geography failed');
    const ring = await s.gql('{ place(where: {location: {_st_within: {type: "Polygon", coordinates: [[[0, 0], [1, 1], [0, 0]]]}}}) { id } }');
    expect(ring.errors[0]).toMatchObject({ message: expect.stringContaining('$.coordinates[0]: expected at least 4 positions'), extensions: { code: 'parse-failed' } });
    expect(stand.sent().length).toBe(before);
  });

  it('the generic comparisons SQL Server has not for spatial values are not-supported; an operator of geometry only is no field of geography', async () => {
    const before = stand.sent().length;
    const eq = await s.gql('{ place(where: {location: {_eq: "POINT (1 1)"}}) { id } }');
    expect(eq.errors[0]).toMatchObject({ extensions: { code: 'not-supported' } });
    expect(eq.errors[0].message).toContain('does not support the operator _eq on a column of type geometry');
    const touches = await s.gql('{ place(where: {area: {_st_touches: "POINT (1 1)"}}) { id } }');
    expect(touches.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    expect(touches.errors[0].message).toContain('_st_touches');
    expect(stand.sent().length).toBe(before);
  });

  it('SQL Server\'s refusal of a WKT (6522) is the client\'s data-exception', async () => {
    stand.answer(
      (sql) => sql.includes(PLACE) && sql.includes('STOverlaps'),
      () => {
        throw Object.assign(new Error('A .NET Framework error occurred during execution of user-defined routine or aggregate "geometry": System.FormatException: 24114: The label POINTY in the input well-known text (WKT) is not valid.'), { number: 6522 });
      },
    );
    const r = await s.gql('{ place(where: {location: {_st_overlaps: "POINTY (1 1)"}}) { id } }');
    expect(r.errors[0]).toMatchObject({ extensions: { code: 'data-exception' } });
    expect(r.errors[0].message).toContain('24114');
  });

  it('permissions: a spatial operand is checked as WKT or GeoJSON, a session variable bound as the value; the operator\'s type is checked', async () => {
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'place', role: 'r', permission: { columns: ['id'], filter: { location: { _st_within: 7 } } } } })).toMatchObject({
      status: 400,
      // The framework's answer to any permission that does not check (as for `{id: {_eq: "x"}}`).
      body: { code: 'invalid-configuration', error: 'Inconsistent object: in table "place": in permission for role "r": parsing geometry failed, expected WKT text or a GeoJSON geometry: $: expected a GeoJSON geometry object, but encountered Number' },
    });
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'place', role: 'r', permission: { columns: ['id'], filter: { area: { _st_crosses: 'POINT (1 1)' } } } } })).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('this operator works only on columns of type "geometry"') },
    });
    expect(await s.metadata({ type: 'mssql_create_select_permission', args: { source, table: 'place', role: 'r', permission: { columns: ['id'], filter: { name: { _st_within: 'POINT (1 1)' } } } } })).toMatchObject({ status: 400 });
    await ok({ type: 'mssql_create_select_permission', args: { source, table: 'place', role: 'r', permission: { columns: ['id', 'location'], filter: { _and: [{ location: { _st_within: square } }, { area: { _st_intersects: 'X-Svc-Area' } }] } } } });
    stand.answer((sql) => sql.includes(PLACE) && sql.includes('STWithin') && sql.includes('STIntersects'), jsonAnswer([{ id: 2, location: 'POINT (1 1)' }]));
    const r = await s.gql('{ place { id location } }', undefined, { 'x-svc-role': 'r', 'x-svc-area': '{"type": "Point", "coordinates": [10, 50]}' });
    expect(r).toEqual({ data: { place: [{ id: 2, location: 'POINT (1 1)' }] } });
    expect(lastSent((x) => x.includes(PLACE))!.params).toEqual(['POLYGON ((0 0, 0 2, 2 2, 2 0, 0 0))', 'POINT (10 50)']);
  });

  it('an insert binds the GeoJSON as WKT cast to the column type and returns the rows as WKT', async () => {
    stand.answer((sql) => sql.includes('INSERT INTO [dbo].[place]'), jsonAnswer({ affected_rows: 1, returning: [{ id: 3, location: 'POINT (3 4)' }] }));
    const r = await s.gql('mutation ($p: geometry) { insert_place(objects: [{name: "x", location: $p, area: "POINT (10 50)"}]) { affected_rows returning { id location } } }', { p: { type: 'Point', coordinates: [3, 4] } });
    expect(r).toEqual({ data: { insert_place: { affected_rows: 1, returning: [{ id: 3, location: 'POINT (3 4)' }] } } });
    const sent = lastSent((x) => x.includes('INSERT INTO [dbo].[place]'))!;
    expect(sent.sql).toContain('VALUES (@p1, CAST(@p2 AS geometry), CAST(@p3 AS geography))');
    expect(sent.params).toEqual(['x', 'POINT (3 4)', 'POINT (10 50)']);
  });

  it('functions and stored procedures, as Hasura\'s open-source MSSQL backend: none (docs/source-kinds.md)', async () => {
    expect(await s.metadata({ type: 'mssql_track_function', args: { source, function: 'place_near' } })).toMatchObject({
      status: 400,
      body: { code: 'invalid-configuration', error: 'Inconsistent object: in function "place_near": no such function exists: "place_near"' },
    });
    expect(await s.metadata({ type: 'mssql_track_stored_procedure', args: { source, stored_procedure: 'sp_tables', configuration: { exposed_as: 'query' }, arguments: {}, returns: 'tables' } })).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('unknown operation type') },
    });
  });
});
