/**
 * SQL Server's spatial types (`geometry`, `geography`) as Hasura's MSSQL backend serves them:
 * the operators `_st_*` on their columns, their values given as WKT text or as a GeoJSON
 * geometry object (turned into WKT here), and read back as WKT. See Note [MSSQL spatial values].
 */
import { SvcError } from '../../core/errors.js';
import { jsonTypeName } from '../../core/validation.js';
import { plainDecimal } from '../database/index.js';

/*
 * Note [MSSQL spatial values]
 * What Hasura v2's MSSQL backend does (server/src-lib/Hasura/Backends/MSSQL: Types/Internal.hs
 * `parseScalarValue`, `geoTypes`; Instances/Schema.hs `msComparisonExps`; FromIr/Expression.hs
 * `fromOpExpG`; ToQuery.hs `STOpExpression`, `MethExpSTAsText`; FromIr/Query.hs
 * `fromAnnColumnField`), and what Svc does:
 *
 * - Operators. On `geometry` and `geography` columns: `_st_contains`, `_st_equals`,
 *   `_st_intersects`, `_st_overlaps`, `_st_within`; on `geometry` only, also `_st_crosses` and
 *   `_st_touches` (SQL Server's geography has no STCrosses or STTouches). Each beside the generic
 *   operators, in `geometry_MSSQL_comparison_exp` / `geography_MSSQL_comparison_exp`; the operand
 *   is a value of the column's type.
 * - Input. A value of either type is a string, taken as WKT, or a GeoJSON geometry object
 *   (Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection;
 *   a `crs` member is allowed and ignored), which Hasura turns into WKT before binding it as text
 *   (`parseGeoTypes`); so does Svc (`wktOf`). A session variable holds WKT or GeoJSON text.
 *   Anything else (a number, a GeoJSON Feature, a polygon ring of one position) is the client's
 *   error, 400 `parse-failed`, before any statement is sent; WKT SQL Server cannot read is its
 *   error 6522 (a .NET error in geometry's Parse), a `data-exception` (Note [MSSQL errors]).
 * - Comparison. Hasura writes `(<col>).STIntersects(<the text>) = 1`, and SQL Server converts the
 *   text implicitly with `geometry::Parse`, whose SRID is 0 (geography's: 4326). Svc writes
 *   `<col>.STIntersects(geometry::STGeomFromText(@p1, <col>.STSrid)) = 1` (an inherited role's
 *   redacted column, a CASE expression, in parentheses as Hasura writes it): the same method,
 *   the value read in the SRID of the row's own value. This differs from Hasura only for
 *   geometry values stored with an SRID other than 0 (or geography other than 4326), which
 *   Hasura's SRID-0 value never matches (SQL Server answers NULL for two SRIDs); WKT carries no
 *   SRID, and GeoJSON's is WGS 84 by definition, which is what the column's SRID usually says.
 * - Writes (insert, update, if_matched) bind the WKT cast to the column's type
 *   (`CAST(@p1 AS geometry)`, which is `Parse`: SRID 0 for geometry, 4326 for geography), as
 *   Hasura's implicit conversion does.
 * - Output. FOR JSON cannot write CLR values; Hasura selects `<col>.STAsText()`, WKT text (its
 *   documentation shows GeoJSON, its code answers WKT: SQL Server has no GeoJSON writer). Svc does
 *   the same, an inherited role's redaction around it.
 * - The generic operators: Hasura offers `_eq`, `_gt`, `_in`, ... on these columns too, and SQL
 *   Server refuses every one but `_is_null` (geometry has no `=` or `<`). Svc's schema offers them
 *   as Hasura's does, and the compiler refuses them with `not-supported` naming the operator and
 *   the type, instead of sending a statement that SQL Server refuses. Ordering, `distinct_on` and
 *   `if_matched` match columns on a spatial column are SQL Server's errors, as in Hasura.
 */

/** SQL Server's spatial types. */
export const GEO_TYPES: ReadonlySet<string> = new Set(['geometry', 'geography']);

/** The `_st_*` operators (by name without `_`) and SQL Server's method for each; `geometryOnly`
 * are not methods of geography. */
export const ST_METHODS: Readonly<Record<string, { method: string; geometryOnly?: true }>> = {
  st_contains: { method: 'STContains' },
  st_crosses: { method: 'STCrosses', geometryOnly: true },
  st_equals: { method: 'STEquals' },
  st_intersects: { method: 'STIntersects' },
  st_overlaps: { method: 'STOverlaps' },
  st_touches: { method: 'STTouches', geometryOnly: true },
  st_within: { method: 'STWithin' },
};

class GeoJsonError extends Error {}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function position(p: unknown, where: string): string {
  if (!Array.isArray(p) || p.length < 2 || p.length > 4 || !p.every((n) => typeof n === 'number' && Number.isFinite(n))) {
    throw new GeoJsonError(`${where}: a position is an array of 2 to 4 numbers`);
  }
  return p.map((n) => plainDecimal(n)).join(' ');
}

function positions(ps: unknown, where: string, min: number): string {
  if (!Array.isArray(ps)) throw new GeoJsonError(`${where}: expected an array of positions`);
  if (ps.length > 0 && ps.length < min) throw new GeoJsonError(`${where}: expected at least ${min} positions`);
  return `(${ps.map((p, i) => position(p, `${where}[${i}]`)).join(', ')})`;
}

function rings(rs: unknown, where: string): string {
  if (!Array.isArray(rs)) throw new GeoJsonError(`${where}: expected an array of linear rings`);
  return `(${rs.map((r, i) => positions(r, `${where}[${i}]`, 4)).join(', ')})`;
}

function list(xs: unknown, where: string, each: (x: unknown, where: string) => string): string {
  if (!Array.isArray(xs)) throw new GeoJsonError(`${where}: expected an array`);
  return `(${xs.map((x, i) => each(x, `${where}[${i}]`)).join(', ')})`;
}

/** A GeoJSON geometry object as WKT (`POINT (1 2)`); throws GeoJsonError on anything else. */
function geometryWkt(g: unknown, where: string): string {
  if (!isObject(g)) throw new GeoJsonError(`${where}: expected a GeoJSON geometry object, but encountered ${jsonTypeName(g)}`);
  const c = g.coordinates;
  const at = `${where}.coordinates`;
  const empty = Array.isArray(c) && c.length === 0;
  switch (g.type) {
    case 'Point':
      return empty ? 'POINT EMPTY' : `POINT (${position(c, at)})`;
    case 'LineString':
      return empty ? 'LINESTRING EMPTY' : `LINESTRING ${positions(c, at, 2)}`;
    case 'Polygon':
      return empty ? 'POLYGON EMPTY' : `POLYGON ${rings(c, at)}`;
    case 'MultiPoint':
      return empty ? 'MULTIPOINT EMPTY' : `MULTIPOINT ${list(c, at, (p, w) => `(${position(p, w)})`)}`;
    case 'MultiLineString':
      return empty ? 'MULTILINESTRING EMPTY' : `MULTILINESTRING ${list(c, at, (l, w) => positions(l, w, 2))}`;
    case 'MultiPolygon':
      return empty ? 'MULTIPOLYGON EMPTY' : `MULTIPOLYGON ${list(c, at, rings)}`;
    case 'GeometryCollection': {
      const gs = g.geometries;
      if (!Array.isArray(gs)) throw new GeoJsonError(`${where}.geometries: expected an array of geometries`);
      return gs.length === 0 ? 'GEOMETRYCOLLECTION EMPTY' : `GEOMETRYCOLLECTION (${gs.map((x, i) => geometryWkt(x, `${where}.geometries[${i}]`)).join(', ')})`;
    }
    default:
      throw new GeoJsonError(`${where}.type: expected one of Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection, but encountered ${JSON.stringify(g.type) ?? 'nothing'}`);
  }
}

/** Why a JSON value is no spatial value (a permission's operand, a preset), or undefined. */
export function parseGeo(type: string) {
  return (val: unknown): string | undefined => {
    if (typeof val === 'string') return undefined;
    try {
      geometryWkt(val, '$');
      return undefined;
    } catch (e) {
      return `parsing ${type} failed, expected WKT text or a GeoJSON geometry: ${(e as Error).message}`;
    }
  };
}

/** A spatial value's WKT, as it is bound (Note [MSSQL spatial values]): text as it is (a
 * session variable's GeoJSON text parsed first), a GeoJSON object converted. A value that is
 * neither is the client's error (400 `parse-failed`), raised when the request binds it. */
export function wktOf(type: string) {
  return (val: unknown): string => {
    let v = val;
    if (typeof v === 'string') {
      if (!v.trimStart().startsWith('{')) return v;
      try {
        v = JSON.parse(v);
      } catch {
        throw new SvcError('parse-failed', `parsing ${type} failed: the text starts with "{" but is not JSON (give WKT text or a GeoJSON geometry)`);
      }
    }
    try {
      return geometryWkt(v, '$');
    } catch (e) {
      throw new SvcError('parse-failed', `parsing ${type} failed, expected WKT text or a GeoJSON geometry: ${(e as Error).message}`);
    }
  };
}
