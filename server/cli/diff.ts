/**
 * `svc metadata diff`: what `apply` would change, file by file of the directory format (the
 * server's metadata and the project's, both laid out by metadataToFiles), and within a changed
 * file, path by path of its YAML: `~ path: old -> new`, `+ path: new`, `- path: old`.
 */
import { parse } from 'yaml';
import { metadataToFiles } from './metadata-dir.js';
import { diffValues } from '../../lib/diff.js';

type Obj = Record<string, any>;

/** A file's changes as lines, its lists compared by position (the engine's `diff_metadata`
 * compares named elements by name: Note [Metadata diffs] in core/kernel/diff.ts). */
function walk(a: unknown, b: unknown, out: string[]): void {
  for (const c of diffValues(a, b, { lists: 'position' })) {
    if (c.kind === 'changed') out.push(`  ~ ${c.path || '.'}: ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)}`);
    else out.push(`  ${c.kind === 'added' ? '+' : '-'} ${c.path}: ${JSON.stringify(c.value)}`);
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
      walk(parse(a), parse(b), changes);
      if (changes.length) out.push(`~ ${file}`, ...changes);
    }
  }
  return out;
}
