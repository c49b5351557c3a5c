/**
 * /v1alpha1/pg_dump: admin only; only options that shape the plain SQL written to stdout are
 * passed on (an allow-list, normalised to `--name=value`); pg_dump's version is checked against the
 * server's before it runs; the password never reaches the command line; 404 when the API is disabled.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer, useServer } from '../../../test/helpers.js';
import { pgDumpArgs } from './pg-dump.js';

const s = useServer('create table dumped (id int primary key)');

/** The error the API gives when the machine's pg_dump is older than the server, or null when it
 * can dump it (computed from the real pg_dump on the PATH and the real server). */
async function versionError(): Promise<string | null> {
  let out: string;
  try {
    out = execFileSync('pg_dump', ['--version'], { encoding: 'utf8' });
  } catch {
    return null;
  }
  const dump = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(out)!;
  const [{ server_version_num: num, server_version: ver }] = await s.sql`select current_setting('server_version_num') as server_version_num, current_setting('server_version') as server_version`;
  const serverMajor = Math.floor(Number(num) / 10000);
  if (Number(dump[1]) >= serverMajor) return null;
  return `pg_dump ${dump[1]}${dump[2] ? '.' + dump[2] : ''} cannot dump source "default" (PostgreSQL ${ver.split(' ')[0]}): install pg_dump ${serverMajor} or later`;
}

describe('pg_dump API', () => {
  it('runs pg_dump for a source, or says exactly which pg_dump it needs', async () => {
    const expected = await versionError();
    for (const opts of [
      ['-O', '-x', '--schema-only', '--schema', 'public'],
      ['-Ox', '-s', '-npublic'],
      ['--no-owner', '--no-acl', '--schema-only', '--schema=public', '--table', 'public.dumped'],
    ]) {
      const r = await s.request('POST', '/v1alpha1/pg_dump', { opts, clean_output: true });
      if (expected === null) {
        expect(r.status, r.text).toBe(200);
        expect(r.text).toContain('CREATE TABLE public.dumped');
        expect(r.text).not.toContain('-- PostgreSQL database dump');
      } else {
        expect(r).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$', error: expected } });
      }
    }
  });

  it('refuses every option outside the allow-list, however it is spelled, naming it', async () => {
    const refused: [string[], string][] = [
      [['-f', '/tmp/x.sql'], '-f'],
      [['-f/tmp/x.sql'], '-f'],
      [['--file=/tmp/x.sql'], '--file'],
      [['--fil=/tmp/x.sql'], '--fil'], // getopt would expand the abbreviation to --file
      [['--fi', '/tmp/x.sql'], '--fi'],
      [['-Fc'], '-F'],
      [['-Fd'], '-F'],
      [['--format=custom'], '--format'],
      [['-xf/tmp/x.sql'], '-f'], // combined short flags
      [['-Of', '/tmp/x.sql'], '-f'],
      [['-s', '-Oxj4'], '-j'],
      [['-Z9'], '-Z'],
      [['-d', 'postgres://evil/db'], '-d'],
      [['--dbname=postgres://evil/db'], '--dbname'],
      [['-hevil.example'], '-h'],
      [['--port=1'], '--port'],
      [['-U', 'someone'], '-U'],
      [['-W'], '-W'],
      [['-E', 'LATIN1'], '-E'],
      [['--filter=/etc/passwd'], '--filter'],
      [['--include-foreign-data=srv'], '--include-foreign-data'],
      [['--sche', 'public'], '--sche'], // an abbreviation, even of an allowed option
      [['--help'], '--help'],
      [['-V'], '-V'],
      [['postgres://evil/db'], 'postgres://evil/db'], // a positional argument is a database name
      [['--', '-f'], '--'],
      [['-'], '-'],
      [[''], ''],
    ];
    for (const [opts, named] of refused) {
      const r = await s.request('POST', '/v1alpha1/pg_dump', { opts });
      expect(r, JSON.stringify(opts)).toMatchObject({ status: 400, body: { code: 'not-supported', path: '$.opts', error: `pg_dump option "${named}" is not allowed` } });
    }
  });

  it('an option that needs a value and has none, or has one it does not take, is refused', async () => {
    for (const opts of [['-n'], ['--schema'], ['-s', '-t']]) {
      const r = await s.request('POST', '/v1alpha1/pg_dump', { opts });
      expect(r, JSON.stringify(opts)).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.opts', error: `pg_dump option "${opts.at(-1)}" needs a value` } });
    }
    const r = await s.request('POST', '/v1alpha1/pg_dump', { opts: ['--no-owner=yes'] });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.opts', error: 'pg_dump option "--no-owner" takes no value' } });
  });

  it('accepts the forms pg_dump accepts and passes them on as --name=value, so a value is never an option', () => {
    expect(pgDumpArgs(['-n', 'x'])).toEqual(['--schema=x']);
    expect(pgDumpArgs(['-nx'])).toEqual(['--schema=x']);
    expect(pgDumpArgs(['--schema', 'x'])).toEqual(['--schema=x']);
    expect(pgDumpArgs(['--schema=x'])).toEqual(['--schema=x']);
    expect(pgDumpArgs(['-n', '-f'])).toEqual(['--schema=-f']);
    expect(pgDumpArgs(['--table', '--file=/tmp/x'])).toEqual(['--table=--file=/tmp/x']);
    expect(pgDumpArgs(['-Oxsn', 'public'])).toEqual(['--no-owner', '--no-privileges', '--schema-only', '--schema=public']);
    expect(pgDumpArgs(['-Oxnpublic'])).toEqual(['--no-owner', '--no-privileges', '--schema=public']);
    expect(pgDumpArgs(['--no-acl', '--inserts', '--column-inserts', '--on-conflict-do-nothing', '--if-exists', '-c', '-C'])).toEqual([
      '--no-privileges',
      '--inserts',
      '--column-inserts',
      '--on-conflict-do-nothing',
      '--if-exists',
      '--clean',
      '--create',
    ]);
    expect(pgDumpArgs(['-T', 'a', '-N', 'b', '--exclude-table-data=c', '--section', 'pre-data', '--rows-per-insert=10'])).toEqual([
      '--exclude-table=a',
      '--exclude-schema=b',
      '--exclude-table-data=c',
      '--section=pre-data',
      '--rows-per-insert=10',
    ]);
  });

  it('passes the password through the environment, never on the command line', async () => {
    // A stand-in pg_dump first on the PATH records the argv and environment it is run with; the
    // version check and the connection to PostgreSQL are real.
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-pgdump-'));
    const record = path.join(dir, 'record');
    writeFileSync(
      path.join(dir, 'pg_dump'),
      `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "pg_dump (PostgreSQL) 99.0"; exit 0; fi\n` +
        `{ for a in "$0" "$@"; do echo "ARG $a"; done; echo "PGPASSWORD $PGPASSWORD"; tr '\\0' ' ' < /proc/$$/cmdline; echo; } > ${record}\necho '-- dumped'\n`,
    );
    chmodSync(path.join(dir, 'pg_dump'), 0o755);
    const password = `Sekr3t-${Date.now()}`;
    const t = await startServer({ env: { PATH: `${dir}:${process.env.PATH}` } });
    try {
      await t.runSql(`create role dumper login password '${password}'`);
      const url = new URL(t.url);
      url.username = 'dumper';
      url.password = password;
      expect((await t.metadata({ type: 'pg_add_source', args: { name: 'pw', configuration: { connection_info: { database_url: url.toString() } } } })).status).toBe(200);
      const r = await t.request('POST', '/v1alpha1/pg_dump', { source: 'pw', opts: ['-s', '-npublic'] });
      expect(r).toMatchObject({ status: 200, text: '-- dumped\n' });
      const lines = readFileSync(record, 'utf8').split('\n');
      expect(lines.filter((l) => l.startsWith('ARG ')).slice(1)).toEqual(['ARG --schema-only', 'ARG --schema=public', `ARG --dbname=postgres://dumper@${url.host}${url.pathname}`]);
      expect(lines).toContain(`PGPASSWORD ${password}`);
      const cmdline = lines.at(-2)!;
      expect(cmdline).toContain('--dbname=');
      expect(cmdline).not.toContain(password);
    } finally {
      await t.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('validates its body and the source', async () => {
    expect(await s.request('POST', '/v1alpha1/pg_dump', { opts: 'x' })).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.opts' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', { source: 'nope' })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', '{')).toMatchObject({ status: 400, body: { code: 'invalid-json' } });
    // The request limits hold here too (Note [Request limits]), and an array is not an object.
    expect(await s.request('POST', '/v1alpha1/pg_dump', [])).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', { opts: ['-s'], source: 'a\u0000' })).toMatchObject({ status: 400, body: { code: 'bad-request', path: '$.source' } });
    expect(await s.request('POST', '/v1alpha1/pg_dump', `{"opts":${'['.repeat(500)}${']'.repeat(500)}}`)).toMatchObject({ status: 400, body: { code: 'bad-request' } });
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
