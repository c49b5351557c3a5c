/** The exported form of the metadata document: `version` first, sections in Hasura's order,
 * empty sections left out, sections no plugin owns kept as they were. */
import type { Metadata, SectionDef } from '../plugin.js';

const defaultIsEmpty = (x: unknown) =>
  x === undefined || x === null || (Array.isArray(x) ? x.length === 0 : typeof x === 'object' && Object.keys(x as object).length === 0);

export function exportMetadata(md: Metadata, sections: SectionDef[]): Record<string, unknown> {
  const out: Record<string, unknown> = { version: 3 };
  for (const s of sections) {
    const val = md[s.key];
    if (!(s.isEmpty ?? defaultIsEmpty)(val)) out[s.key] = s.toDocument ? s.toDocument(val) : val;
  }
  const known = new Set(sections.map((s) => s.key));
  for (const [k, val] of Object.entries(md)) {
    if (k !== 'version' && !known.has(k) && !defaultIsEmpty(val)) out[k] = val;
  }
  return out;
}
