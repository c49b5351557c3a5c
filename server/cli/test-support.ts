/**
 * Test support for the CLI's tests: the CLI run in-process with its output captured, project
 * trees written from a map of files, and a tree read back as such a map.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { run } from './main.js';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** Runs `svc <args>` in `cwd` against `endpoint` (a real server listening on a port). */
export async function svc(endpoint: string, cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: { SVC_GRAPHQL_ENDPOINT: endpoint, ...env }, cwd });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

export function tempDir(prefix = 'svc-cli-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Writes `files` (path -> text) under `dir`. */
export function writeTree(dir: string, files: Record<string, string>): string {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** Every file under `dir`, path (relative) -> text. */
export function readTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d).sort()) {
      const full = join(d, e);
      if (statSync(full).isDirectory()) walk(full);
      else out[relative(dir, full)] = readFileSync(full, 'utf8');
    }
  };
  walk(dir);
  return out;
}
