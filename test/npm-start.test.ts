/**
 * Issue 12: SIGTERM sent to `npm start` itself reaches the server (the start script execs node,
 * so npm's child is the server, not a shell that would not pass the signal on): the server
 * shuts down, the embedded PostgreSQL stops, and npm exits 0. Before, the server kept serving.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../server/embedded.js';

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

describe('npm start', () => {
  it('SIGTERM to npm stops the server and its embedded PostgreSQL; npm exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-npm-'));
    chmodSync(dir, 0o755);
    const port = await freePort();
    const env: Record<string, string | undefined> = { ...process.env, SVC_GRAPHQL_DATA_DIR: dir, SVC_GRAPHQL_SERVER_PORT: String(port), SVC_GRAPHQL_LOG_LEVEL: 'warn' };
    for (const k of Object.keys(env)) if (k.startsWith('SVC_GRAPHQL_') && !['SVC_GRAPHQL_DATA_DIR', 'SVC_GRAPHQL_SERVER_PORT', 'SVC_GRAPHQL_LOG_LEVEL'].includes(k)) delete env[k];
    const npm = spawn('npm', ['start', '--silent'], { env, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
    try {
      let up = false;
      for (let i = 0; i < 600 && !up; i++) {
        up = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
        if (!up) await new Promise((r) => setTimeout(r, 100));
      }
      expect(up).toBe(true);
      expect(postgresOf(dir).length).toBeGreaterThan(0);
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
