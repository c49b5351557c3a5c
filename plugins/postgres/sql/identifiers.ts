/** PostgreSQL's quoting of an identifier: in double quotes, a double quote doubled. The compiler
 * and the dialect both quote, so it lives apart from either (no import circle); so do the other
 * bits of text that compile.ts and compile-groups.ts both write. */
export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A string constant (output keys, `__typename`): in single quotes, a single quote doubled. */
export const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** The order key `i` projected beside the rows aliased `t` (the compiler's `projectKeys`). */
export const orderKeyColumn = (t: string, i: number) => `${t}."__svc_o${i}"`;

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

/** Whether an object of these keys can be a row whose columns are named by them (Note [Objects
 * from rows] in ./compile.ts): at least one, no more than a target list may have (1,664; kept
 * under 1,600, a table's limit), none over NAMEDATALEN's 63 bytes, which would be truncated and
 * could then collide. */
export function rowKeys(keys: readonly string[]): boolean {
  if (keys.length === 0 || keys.length > 1600) return false;
  for (const k of keys) if (Buffer.byteLength(k, 'utf8') > 63) return false;
  return true;
}
