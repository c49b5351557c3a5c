/** /v1alpha1/pg_dump: admin only, refuses file-writing options, 404 when the API is disabled. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, useServer } from '../../test/helpers.js';

const s = useServer('create table dumped (id int primary key)');

describe('pg_dump API', () => {
  it('runs pg_dump for a source, or says clearly why it cannot', async () => {
    const r = await s.request('POST', '/v1alpha1/pg_dump', { opts: ['-O', '-x', '--schema-only', '--schema', 'public'], clean_output: true });
    if (r.status === 200) {
      expect(r.text).toContain('CREATE TABLE public.dumped');
      expect(r.text).not.toContain('-- PostgreSQL database dump');
    } else {
      // pg_dump missing on this machine, or older than the server: a 400 that says so.
      expect(r).toMatchObject({ status: 400, body: { code: 'unexpected', path: '$' } });
      expect(r.body.error).toMatch(/^pg_dump failed: /);
    }
  });

  it('refuses options that write files on the server', async () => {
    const r = await s.request('POST', '/v1alpha1/pg_dump', { opts: ['-f', '/tmp/x.sql'] });
    expect(r).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$.opts', error: 'pg_dump option "-f" is not allowed' } });
  });

  it('validates its body and the source', async () => {
    expect(await s.request('POST', '/v1alpha1/pg_dump', { opts: 'x' })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.opts' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', { source: 'nope' })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', '{')).toMatchObject({ status: 400, body: { code: 'invalid-json' } });
  });

  it('is admin only', async () => {
    const r = await s.request('POST', '/v1alpha1/pg_dump', { opts: [] }, { 'x-svc-role': 'user' });
    expect(r).toMatchObject({ status: 400, body: { code: 'access-denied' } });
  });

  it('answers 404 when the pgdump API is disabled', async () => {
    const t = await startServer({ config: { enabledApis: ['metadata'] } });
    try {
      expect((await t.request('POST', '/v1alpha1/pg_dump', { opts: [] })).status).toBe(404);
    } finally {
      await t.stop();
    }
  });
});
