/**
 * A statement whose request was answered without it is cancelled, and the cancel is sent again
 * until the statement has settled (connection.ts `cancellable`): a cancel that finds nothing to
 * cancel (between a statement's two round trips) must not let it run to its end. Shown with a
 * function that swallows the first cancel, as such a statement would miss it: only a second
 * cancel stops it. postgres.js's own Query.cancel() sends one cancel only.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase } from '../../../test/helpers.js';
import { PgConnection } from './connection.js';

let conn: PgConnection;
beforeAll(async () => {
  const db = await createDatabase('svc_cancel');
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create function stubborn(s float8) returns int language plpgsql as $$
    begin
      begin
        perform pg_sleep(s);
      exception when query_canceled then
        null; -- the first cancel is lost, as one that reaches the server between two round trips
      end;
      perform pg_sleep(s);
      return 1;
    end $$`);
  await sql.end();
  conn = new PgConnection('cancel', { connection_info: { database_url: db.url } }, {});
});
afterAll(async () => {
  await conn?.close();
});

it('sends the cancel again until the statement ends', async () => {
  const ac = new AbortController();
  const t0 = performance.now();
  setTimeout(() => ac.abort(new Error('answered without it')), 300);
  const err = await conn.executor.query('select stubborn($1) as n', [5], { signal: ac.signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  const ms = performance.now() - t0;
  expect((err as { code?: string } | undefined)?.code).toBe('57014');
  // Stopped by the second cancel (200 ms after the first), not after the second 5 s sleep.
  expect(ms).toBeLessThan(3000);
});

it('a statement whose signal was aborted before it started is not sent', async () => {
  const ac = new AbortController();
  ac.abort(new Error('answered without it'));
  await expect(conn.executor.query('select stubborn($1) as n', [5], { signal: ac.signal })).rejects.toThrow('answered without it');
});
