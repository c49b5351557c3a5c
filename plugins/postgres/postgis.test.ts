/**
 * PostGIS as Hasura v2 serves it (Note [GeoJSON] in compile.ts): geometry and geography values are
 * GeoJSON both ways (out with the long CRS name), the `_st_*` operators in `where` and in
 * permissions (a permission's `_st_d_within` may take its fields from session variables),
 * `_cast` between geometry and geography (and jsonb to String), and the raster operators. Runs on the PostGIS-capable server
 * of test/postgis.ts; skipped, saying so, where there is none.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { POSTGIS_MISSING, postgisAvailable, usePostgisServer } from '../../test/postgis.js';

if (!postgisAvailable()) console.log(POSTGIS_MISSING);

const SEED = `
create table place (id serial primary key, name text not null, geom geometry(Point, 4326), geog geography(Point), area geometry(Polygon, 4326), doc jsonb);
insert into place (name, geom, geog, area, doc) values
  ('origin', 'SRID=4326;POINT(0 0)', 'POINT(0 0)', 'SRID=4326;POLYGON((0 0,0 2,2 2,2 0,0 0))', '{"k": "Alpha"}'),
  ('east', 'SRID=4326;POINT(1 0)', 'POINT(1 0)', 'SRID=4326;POLYGON((5 5,5 6,6 6,6 5,5 5))', '{"k": "beta"}'),
  ('far', 'SRID=4326;POINT(50 50)', 'POINT(50 50)', null, null);
create table tile (id int primary key, rast raster);
insert into tile values
  (1, st_asraster(st_geomfromtext('POLYGON((0 0,0 10,10 10,10 0,0 0))', 4326), 10, 10, '8BUI')),
  (2, st_asraster(st_geomfromtext('POLYGON((20 20,20 30,30 30,30 20,20 20))', 4326), 10, 10, '8BUI'));
`;

const CRS = { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::4326' } };
const point = (x: number, y: number) => ({ type: 'Point', coordinates: [x, y] });
const ids = (rows: { id: number }[] | undefined) => rows?.map((r) => r.id);

describe.skipIf(!postgisAvailable())('PostGIS', () => {
  const server = usePostgisServer(SEED);
  const gql = (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => server.gql(query, variables, headers);
  const where = async (w: string, variables?: Record<string, unknown>, decl = '') => {
    const r = await gql(`query${decl} { place(where: ${w}, order_by: {id: asc}) { id } }`, variables);
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    return ids(r.data.place);
  };

  beforeAll(async () => {
    const perm = (role: string, filter: unknown) => ({ type: 'pg_create_select_permission', args: { table: 'place', role, permission: { columns: ['id', 'name', 'geom'], filter } } });
    const r = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'place' } },
        { type: 'pg_track_table', args: { table: 'tile' } },
        perm('near', { geom: { $st_d_within: { distance: 1.5, from: point(0, 0) } } }),
        perm('session', { geom: { _st_d_within: { distance: 'X-Svc-Geom-Dist', from: 'X-Svc-Geom-Val' } } }),
        perm('cast', { geom: { _cast: { geography: { _st_d_within: { distance: 120000, from: point(50, 50) } } } } }),
        perm('inside', { area: { _st_contains: 'X-Svc-Point' } }),
      ],
    });
    expect(r.status, r.text).toBe(200);
    expect((await server.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('gives geometry and geography values as GeoJSON with the long CRS name', async () => {
    expect(await gql('{ place(order_by: {id: asc}, limit: 1) { geom geog area } }')).toEqual({
      data: {
        place: [
          {
            geom: { type: 'Point', crs: CRS, coordinates: [0, 0] },
            geog: { type: 'Point', crs: CRS, coordinates: [0, 0] },
            area: { type: 'Polygon', crs: CRS, coordinates: [[[0, 0], [0, 2], [2, 2], [2, 0], [0, 0]]] },
          },
        ],
      },
    });
  });

  it('takes GeoJSON in inserts and updates, as a literal or a variable', async () => {
    const r = await gql('mutation ($g: geometry) { insert_place_one(object: {name: "new", geom: $g, geog: {type: "Point", coordinates: [3, 4]}}) { id geom geog } }', {
      g: point(7, 8),
    });
    expect(r.data.insert_place_one).toMatchObject({ geom: { type: 'Point', coordinates: [7, 8] }, geog: { type: 'Point', coordinates: [3, 4] } });
    const id = r.data.insert_place_one.id;
    const u = await gql('mutation ($id: Int!) { update_place_by_pk(pk_columns: {id: $id}, _set: {geom: {type: "Point", coordinates: [9, 9]}}) { geom } }', { id });
    expect(u.data.update_place_by_pk.geom.coordinates).toEqual([9, 9]);
    expect(await server.sql`select st_astext(geom) as g from place where id = ${id}`).toEqual([{ g: 'POINT(9 9)' }]);
    // The legacy API too (Hasura's own test setups insert GeoJSON through it).
    const legacy = await server.query({ type: 'insert', args: { table: 'place', objects: [{ name: 'legacy', geog: point(1, 1) }], returning: ['geog'] } });
    expect(legacy.status, legacy.text).toBe(200);
    expect(legacy.body.returning[0].geog).toMatchObject(point(1, 1));
    await server.sql`delete from place where id > 3`;
  });

  it('several rows of GeoJSON in one insert (one array per column, Note [Rows bound by column]), in order', async () => {
    const objects = [
      { name: 'r1', geom: point(1, 2), geog: point(3, 4) },
      { name: 'r2', geom: point(-1, 0.5), geog: null },
      { name: 'r3', geom: point(5, 6), geog: point(7, 8) },
    ];
    const r = await gql('mutation ($o: [place_insert_input!]!) { insert_place(objects: $o) { returning { name geom geog } } }', { o: objects });
    expect(r.errors).toBeUndefined();
    expect(r.data.insert_place.returning).toMatchObject(objects.map((o) => ({ ...o, geog: o.geog === null ? null : expect.objectContaining(o.geog) })));
    expect(await server.sql`select name, st_astext(geom) as g from place where id > 3 order by id`).toEqual([
      { name: 'r1', g: 'POINT(1 2)' },
      { name: 'r2', g: 'POINT(-1 0.5)' },
      { name: 'r3', g: 'POINT(5 6)' },
    ]);
    await server.sql`delete from place where id > 3`;
  });

  it('a value that is not GeoJSON is a clear error, and nothing is written', async () => {
    const r = await gql('mutation { insert_place_one(object: {name: "bad", geom: {type: "Nope"}}) { id } }');
    expect(r.data).toBeUndefined();
    expect(r.errors[0].message).toMatch(/GeoJSON/i);
    expect(await server.sql`select count(*)::int as n from place`).toEqual([{ n: 3 }]);
  });

  it('the one-operand _st_* operators', async () => {
    const square = { type: 'Polygon', coordinates: [[[-1, -1], [-1, 1], [2, 1], [2, -1], [-1, -1]]] };
    expect(await where('{geom: {_st_within: $s}}', { s: square }, '($s: geometry!)')).toEqual([1, 2]);
    expect(await where('{area: {_st_contains: {type: "Point", coordinates: [1, 1]}}}')).toEqual([1]);
    expect(await where('{geom: {_st_equals: {type: "Point", coordinates: [1, 0]}}}')).toEqual([2]);
    expect(await where('{geom: {_st_intersects: {type: "LineString", coordinates: [[0, 0], [1, 0]]}}}')).toEqual([1, 2]);
    expect(await where('{geog: {_st_intersects: {type: "Point", coordinates: [50, 50]}}}')).toEqual([3]);
    expect(await where('{area: {_st_overlaps: {type: "Polygon", coordinates: [[[1, 1], [1, 3], [3, 3], [3, 1], [1, 1]]]}}}')).toEqual([1]);
    expect(await where('{area: {_st_touches: {type: "Point", coordinates: [2, 2]}}}')).toEqual([1]);
    expect(await where('{area: {_st_crosses: {type: "LineString", coordinates: [[1, 1], [3, 1]]}}}')).toEqual([1]);
  });

  it('_st_d_within on geometry (degrees) and geography (metres, spheroid by default)', async () => {
    expect(await where('{geom: {_st_d_within: {distance: 1.5, from: {type: "Point", coordinates: [0, 0]}}}}')).toEqual([1, 2]);
    expect(await where('{geom: {_st_3d_d_within: {distance: 0.5, from: {type: "Point", coordinates: [0, 0]}}}}')).toEqual([1]);
    // One degree of longitude at the equator: 111,319 m on the spheroid, 111,195 m on the sphere.
    expect(await where('{geog: {_st_d_within: {distance: 111250, from: {type: "Point", coordinates: [0, 0]}}}}')).toEqual([1]);
    expect(await where('{geog: {_st_d_within: {distance: 111250, use_spheroid: false, from: {type: "Point", coordinates: [0, 0]}}}}')).toEqual([1, 2]);
    // The whole operand as a variable.
    expect(await where('{geom: {_st_d_within: $w}}', { w: { distance: 0.5, from: point(1, 0.1) } }, '($w: st_d_within_input!)')).toEqual([2]);
    expect(await where('{geog: {_st_d_within: $w}}', { w: { distance: 111250, use_spheroid: false, from: point(0, 0) } }, '($w: st_d_within_geography_input!)')).toEqual([1, 2]);
  });

  it('_cast: geometry as geography (metres), jsonb as String', async () => {
    expect(await where('{geom: {_cast: {geography: {_st_d_within: {distance: 120000, from: {type: "Point", coordinates: [0, 0]}}}}}}')).toEqual([1, 2]);
    expect(await where('{geog: {_cast: {geometry: {_st_within: {type: "Polygon", coordinates: [[[-1, -1], [-1, 1], [0.5, 1], [0.5, -1], [-1, -1]]]}}}}}')).toEqual([1]);
    expect(await where('{doc: {_cast: {String: {_ilike: "%alpha%"}}}}')).toEqual([1]);
  });

  it('the raster operators', async () => {
    const tiles = async (w: string, variables?: Record<string, unknown>, decl = '') => {
      const r = await gql(`query${decl} { tile(where: ${w}, order_by: {id: asc}) { id } }`, variables);
      expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
      return ids(r.data.tile);
    };
    const inFirst = { type: 'Point', coordinates: [5, 5], crs: CRS };
    expect(await tiles('{rast: {_st_intersects_geom_nband: {geommin: $g}}}', { g: inFirst }, '($g: geometry!)')).toEqual([1]);
    expect(await tiles('{rast: {_st_intersects_geom_nband: {geommin: $g, nband: 1}}}', { g: inFirst }, '($g: geometry!)')).toEqual([1]);
    expect(await tiles('{rast: {_st_intersects_nband_geom: {nband: 1, geommin: $g}}}', { g: { ...inFirst, coordinates: [25, 25] } }, '($g: geometry!)')).toEqual([2]);
    // Raster values are their text (hex WKB) both ways.
    const [{ hex }] = await server.sql`select rast::text as hex from tile where id = 2`;
    expect(await tiles('{rast: {_st_intersects_rast: $r}}', { r: hex }, '($r: raster!)')).toEqual([2]);
    const out = await gql('{ tile(where: {id: {_eq: 2}}) { rast } }');
    expect(out.data.tile[0].rast).toBe(hex);
    const t = await gql('{ __type(name: "st_intersects_nband_geom_input") { inputFields { name type { name ofType { name } } } } }');
    expect(t.data.__type.inputFields).toEqual([
      { name: 'nband', type: { name: null, ofType: { name: 'Int' } } },
      { name: 'geommin', type: { name: null, ofType: { name: 'geometry' } } },
    ]);
  });

  it('the schema: Hasura names for the operand and cast types', async () => {
    const r = await gql(`{
      g: __type(name: "geometry_comparison_exp") { inputFields { name type { name ofType { name } } } }
      y: __type(name: "geography_comparison_exp") { inputFields { name type { name ofType { name } } } }
      w: __type(name: "st_d_within_geography_input") { inputFields { name defaultValue type { name ofType { name } } } }
      c: __type(name: "jsonb_cast_exp") { inputFields { name type { name } } }
    }`);
    const field = (t: any, n: string) => t.inputFields.find((f: any) => f.name === n);
    expect(field(r.data.g, '_st_d_within').type.name).toBe('st_d_within_input');
    expect(field(r.data.g, '_st_3d_d_within').type.name).toBe('st_d_within_input');
    expect(field(r.data.g, '_cast').type.name).toBe('geometry_cast_exp');
    expect(field(r.data.y, '_st_d_within').type.name).toBe('st_d_within_geography_input');
    expect(field(r.data.y, '_st_contains')).toBeUndefined();
    expect(r.data.w.inputFields).toEqual([
      { name: 'distance', defaultValue: null, type: { name: null, ofType: { name: 'Float' } } },
      { name: 'from', defaultValue: null, type: { name: null, ofType: { name: 'geography' } } },
      { name: 'use_spheroid', defaultValue: 'true', type: { name: 'Boolean', ofType: null } },
    ]);
    expect(r.data.c.inputFields).toEqual([{ name: 'String', type: { name: 'String_comparison_exp' } }]);
  });

  describe('in permissions', () => {
    const names = async (headers: Record<string, string>) => {
      const r = await gql('{ place(order_by: {id: asc}) { name } }', undefined, headers);
      return r.data ? r.data.place.map((p: { name: string }) => p.name) : r.errors;
    };

    it('a stored _st_d_within ($ spelling) limits the rows', async () => {
      expect(await names({ 'x-svc-role': 'near' })).toEqual(['origin', 'east']);
      // The request's where narrows, never widens.
      expect(await names({ 'x-svc-role': 'near' })).not.toContain('far');
    });

    it("a _st_d_within whose distance and point are the session's", async () => {
      const s = (dist: string, val: unknown) => ({ 'x-svc-role': 'session', 'x-svc-geom-dist': dist, 'x-svc-geom-val': JSON.stringify(val) });
      expect(await names(s('0.5', point(50, 50)))).toEqual(['far']);
      expect(await names(s('1.5', point(0, 0)))).toEqual(['origin', 'east']);
      expect(await names(s('0.1', point(20, 20)))).toEqual([]);
      // A point that is not GeoJSON, or no point: an error, never rows.
      const bad = await gql('{ place { name } }', undefined, { 'x-svc-role': 'session', 'x-svc-geom-dist': '1', 'x-svc-geom-val': 'nowhere' });
      expect(bad.data).toBeUndefined();
      const missing = await gql('{ place { name } }', undefined, { 'x-svc-role': 'session', 'x-svc-geom-dist': '1' });
      expect(missing.data).toBeUndefined();
      expect(missing.errors[0].message).toMatch(/x-svc-geom-val/);
    });

    it('a stored _st_contains whose point is a session variable (GeoJSON text)', async () => {
      expect(await names({ 'x-svc-role': 'inside', 'x-svc-point': JSON.stringify(point(1, 1)) })).toEqual(['origin']);
      expect(await names({ 'x-svc-role': 'inside', 'x-svc-point': JSON.stringify(point(5.5, 5.5)) })).toEqual(['east']);
    });

    it('a stored _cast to geography', async () => {
      expect(await names({ 'x-svc-role': 'cast' })).toEqual(['far']);
    });
  });
});
