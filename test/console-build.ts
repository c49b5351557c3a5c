/**
 * The console's build for the tests that serve it: `npm run build:console` when console/dist has
 * no index.html or is older than a file of console/src (a stale build fails the browser tests of
 * what changed since), once for all test files (a lock folder keeps two files from building at once).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const ROOT = new URL('..', import.meta.url).pathname;
export const CONSOLE_DIST = join(ROOT, 'console', 'dist');
const LOCK = join(ROOT, 'console', '.build-lock');

export async function ensureConsoleBuilt(): Promise<void> {
  const index = join(CONSOLE_DIST, 'index.html');
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)));
  const sources = Math.max(newest(join(ROOT, 'console', 'src')), statSync(join(ROOT, 'console', 'index.html')).mtimeMs);
  const built = () => existsSync(index) && statSync(index).mtimeMs >= sources;
  const end = Date.now() + 170_000;
  while (!built()) {
    try {
      mkdirSync(LOCK);
    } catch {
      // Another file is building; a lock older than 3 minutes is left over from a killed run.
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 180_000) rmSync(LOCK, { recursive: true, force: true });
      } catch {
        /* gone */
      }
      if (Date.now() > end) throw new Error('timed out waiting for another test file to build the console');
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      if (!built()) await promisify(execFile)('npm', ['run', 'build:console'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
}
