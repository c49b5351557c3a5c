/** PostgreSQL's quoting of an identifier: in double quotes, a double quote doubled. The compiler
 * and the dialect both quote, so it lives apart from either (no import circle); so do the other
 * bits of text that compile.ts and compile-groups.ts both write. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A string constant (output keys, `__typename`): in single quotes, a single quote doubled. */
export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Hasura's order directions as PostgreSQL's (`asc` is nulls last, `desc` nulls first). */
export const DIRS: Readonly<Record<string, string>> = {
  asc: 'asc nulls last',
  asc_nulls_first: 'asc nulls first',
  asc_nulls_last: 'asc nulls last',
  desc: 'desc nulls first',
  desc_nulls_first: 'desc nulls first',
  desc_nulls_last: 'desc nulls last',
};

/** A value in the JSON output: big numbers as text when asked, PostGIS values as GeoJSON (Note
 * [GeoJSON] in compile.ts). */
export function output(expr: string, scalar: { category?: string } | undefined, asText: boolean | undefined): string {
  if (asText) return `(${expr})::text`;
  if (scalar?.category === 'geometry') return `st_asgeojson(${expr}, 15, 4)::json`;
  return expr;
}
