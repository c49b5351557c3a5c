/** Boots a kernel with the template plugin on a real PostgreSQL and exercises it over HTTP. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../test/helpers.js';
import tableNotes from './index.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer({ extraPlugins: [tableNotes] });
  await s.runSql('create table author (id serial primary key)');
  await s.metadata({ type: 'pg_track_table', args: { table: 'author' } });
});
afterAll(async () => {
  await s?.stop();
});

describe('table-notes plugin', () => {
  it('adds a note, exports it, lists it on its route', async () => {
    const r = await s.metadata({ type: 'add_table_note', args: { table: 'author', note: 'people who write' } });
    expect(r).toEqual(expect.objectContaining({ status: 200, body: { message: 'success' } }));
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    expect(md.table_notes).toEqual([{ source: 'default', table: { schema: 'public', name: 'author' }, note: 'people who write' }]);
    expect((await s.request('GET', '/v1/table-notes')).body).toEqual(md.table_notes);
  });

  it('refuses a second note and an empty note', async () => {
    expect(await s.metadata({ type: 'add_table_note', args: { table: 'author', note: 'again' } })).toMatchObject({
      status: 400,
      body: { code: 'already-exists', path: '$.args', error: 'table "author" already has a note' },
    });
    expect(await s.metadata({ type: 'add_table_note', args: { table: 'author', note: '' } })).toMatchObject({
      status: 400,
      body: { code: 'parse-failed', path: '$.args.note', error: 'empty string not allowed' },
    });
  });

  it('a note on an untracked table is a new inconsistency: the operation is rejected', async () => {
    const r = await s.metadata({ type: 'add_table_note', args: { table: 'ghost', note: 'boo' } });
    expect(r.status).toBe(400);
    expect(r.body.internal).toEqual([
      {
        type: 'table_note',
        name: 'table_note on ghost in source default',
        reason: 'Inconsistent object: table "ghost" is not tracked in source: default',
        definition: { source: 'default', table: { schema: 'public', name: 'ghost' }, note: 'boo' },
      },
    ]);
  });

  it('drops a note; dropping a missing one is not-exists', async () => {
    expect((await s.metadata({ type: 'drop_table_note', args: { table: 'author' } })).status).toBe(200);
    expect(await s.metadata({ type: 'drop_table_note', args: { table: 'author' } })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
  });
});
