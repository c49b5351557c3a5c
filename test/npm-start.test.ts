/**
 * Issue 12: SIGTERM sent to `npm start` itself reaches the server (the start script execs node,
 * so npm's child is the server, not a shell that would not pass the signal on): the server
 * shuts down, the embedded PostgreSQL stops, and npm exits 0. Before, the server kept serving.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../server/embedded.js';
import { ENGINE_NODE_FLAGS } from '../bench/engine-flags.js';

/** Processes whose command line names the data directory (the embedded PostgreSQL's). */
function postgresOf(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The server process started for this data directory (its environment names the directory). */
function serverOf(dir: string): string[] {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (!argv.some((a) => a.endsWith('server/main.js') || a.endsWith('server/main.ts'))) continue;
      if (readFileSync(`/proc/${e}/environ`, 'utf8').split('\0').includes(`SVC_GRAPHQL_DATA_DIR=${dir}`)) return argv.filter(Boolean);
    } catch {
      /* gone */
    }
  }
  return [];
}

describe('npm start', () => {
  // `npm install` builds (the prepare script); a checkout that skipped it is built here.
  beforeAll(() => {
    if (!existsSync('dist/server/main.js')) execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'ignore' });
  }, 300_000);

  it('the bin entry answers --version (npx svc-engine)', () => {
    const version = JSON.parse(readFileSync('package.json', 'utf8')).version;
    expect(execFileSync('npx', ['--no-install', 'svc-engine', '--version'], { encoding: 'utf8' }).trim()).toBe(version);
  }, 60_000);

  it("the image and the benchmarks run node with npm start's flags (Note [The old space at start])", () => {
    const start = JSON.parse(readFileSync('package.json', 'utf8')).scripts.start as string;
    const fromStart = start.split(/\s+/);
    const npmFlags = fromStart.slice(fromStart.indexOf('node') + 1, fromStart.indexOf('dist/server/main.js'));
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync('Dockerfile', 'utf8'))![1]!;
    const image = JSON.parse(cmd) as string[];
    expect(image[0]).toBe('node');
    const imageFlags = image.slice(1, image.indexOf('dist/server/main.js'));
    expect(npmFlags).toContain('--initial-old-space-size=64');
    expect(imageFlags).toEqual(npmFlags);
    expect([...ENGINE_NODE_FLAGS]).toEqual(npmFlags);
  });

  it('SIGTERM to npm stops the server and its embedded PostgreSQL; npm exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-npm-'));
    chmodSync(dir, 0o755);
    const port = await freePort();
    const env: Record<string, string | undefined> = { ...process.env, SVC_GRAPHQL_DATA_DIR: dir, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_LOG_LEVEL: 'warn' };
    for (const k of Object.keys(env)) if (k.startsWith('SVC_GRAPHQL_') && !['SVC_GRAPHQL_DATA_DIR', 'SVC_GRAPHQL_SERVER_PORT', 'SVC_GRAPHQL_LOG_LEVEL'].includes(k)) delete env[k];
    // Its output, for a failure's message (the port may be taken by another test's server
    // between freePort and the listen).
    let output = '';
    const npm = spawn('npm', ['start', '--silent'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    npm.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
    try {
      let up = false;
      for (let i = 0; i < 600 && !up; i++) {
        up = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
        if (!up) await new Promise((r) => setTimeout(r, 100));
      }
      expect(up).toBe(true);
      expect(postgresOf(dir).length, `port ${port} answered /healthz, but no process of this data dir runs; npm start ${npm.exitCode === null ? 'runs' : `exited ${npm.exitCode}`} and said:\n${output}`).toBeGreaterThan(0);
      // Production runs the compiled JavaScript: no tsx, no TypeScript loader.
      const argv = serverOf(dir);
      expect(argv.some((a) => a.endsWith('dist/server/main.js'))).toBe(true);
      // Note [The old space at start] in server/main.ts.
      expect(argv).toContain('--initial-old-space-size=64');
      expect(argv.join(' ')).not.toMatch(/tsx/);
      npm.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(await fetch(`http://127.0.0.1:${port}/healthz`).then(() => 'serving', () => 'stopped')).toBe('stopped');
      // The cluster's processes are gone (the postmaster takes a moment after its shutdown request).
      for (let i = 0; i < 100 && postgresOf(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(postgresOf(dir)).toEqual([]);
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
