/**
 * `svc metadata diff`: what `apply` would change, file by file of the directory format (the
 * server's metadata and the project's, both laid out by metadataToFiles), and within a changed
 * file, path by path of its YAML: `~ path: old -> new`, `+ path: new`, `- path: old`.
 */
import { parse } from 'yaml';
import { metadataToFiles } from './metadata-dir.js';

type Obj = Record<string, any>;

function walk(a: unknown, b: unknown, path: string, out: string[]): void {
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  const bothObjects = a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b);
  if (!bothObjects) {
    out.push(`  ~ ${path || '.'}: ${JSON.stringify(a)} -> ${JSON.stringify(b)}`);
    return;
  }
  const keys = Array.isArray(a) ? [...Array(Math.max(a.length, (b as unknown[]).length)).keys()] : [...new Set([...Object.keys(a as Obj), ...Object.keys(b as Obj)])];
  for (const k of keys) {
    const sub = Array.isArray(a) ? `${path}[${k}]` : `${path}${path ? '.' : ''}${k}`;
    const av = (a as Obj)[k as string];
    const bv = (b as Obj)[k as string];
    // A member set to null is one not set, in Hasura's metadata as in the engine's (which leaves
    // it out of its export: `check: null` of an update permission).
    if (!Array.isArray(a) && (av ?? null) === null && (bv ?? null) === null) continue;
    if (av === undefined) out.push(`  + ${sub}: ${JSON.stringify(bv)}`);
    else if (bv === undefined) out.push(`  - ${sub}: ${JSON.stringify(av)}`);
    else walk(av, bv, sub, out);
  }
}

/** The differences from `server` to `project` as lines; empty when there are none. */
export function diffMetadata(server: Obj, project: Obj): string[] {
  const from = metadataToFiles(server);
  const to = metadataToFiles(project);
  const out: string[] = [];
  for (const file of [...new Set([...from.keys(), ...to.keys()])].sort()) {
    const a = from.get(file);
    const b = to.get(file);
    if (a === b) continue;
    if (a === undefined) out.push(`+ ${file} (new)`);
    else if (b === undefined) out.push(`- ${file} (removed)`);
    else if (file.endsWith('.graphql')) out.push(`~ ${file}`, '  (GraphQL definitions changed)');
    else {
      // Files that differ only in the order of keys (a hand-written `table: {name, schema}`
      // against the engine's order) are the same metadata: not a change.
      const changes: string[] = [];
      walk(parse(a), parse(b), '', changes);
      if (changes.length) out.push(`~ ${file}`, ...changes);
    }
  }
  return out;
}
