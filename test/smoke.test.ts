import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.stop();
});

describe('smoke', () => {
  it('serves healthz and tracks a table', async () => {
    expect((await s.request('GET', '/healthz')).text).toBe('OK');
    await s.runSql('create table author (id serial primary key, name text)');
    const r = await s.query({ type: 'track_table', args: { schema: 'public', name: 'author' } });
    expect(r).toMatchObject({ status: 200, body: { message: 'success' } });
  });
});
