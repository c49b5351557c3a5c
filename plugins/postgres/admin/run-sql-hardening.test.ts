/**
 * Golden HTTP tests of run_sql's hardening: a lost connection fails only its request (the server
 * keeps serving), COPY FROM STDIN/TO STDOUT is refused, no connection goes back to the pool dirty,
 * and transaction control cannot break the all-or-nothing of a request or read_only.
 * A crash of the server would show here as an unhandled error of the test worker (a failure).
 */
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { useServer } from '../../../test/helpers.js';

const s = useServer('create table author (id int primary key, name text)');

const runSql = (sql: string, extra: Record<string, unknown> = {}) => s.query({ type: 'run_sql', args: { sql, ...extra } });
const bulk = (...args: unknown[]) => s.query({ type: 'bulk', args });
const exists = async (name: string) => (await s.sql`select to_regclass(${name}) is not null as e`)[0]!.e as boolean;
const count = async (table: string) => (await s.sql.unsafe(`select count(*)::int as n from "${table}"`))[0]!.n as number;

/** The server still serves: many run_sql in a row (more than the pool's connections) all work. */
async function expectServing(times = 20) {
  for (let i = 0; i < times; i++) {
    expect(await runSql(`select ${i} as i`)).toMatchObject({ status: 200, body: { result_type: 'TuplesOk', result: [['i'], [String(i)]] } });
  }
}

const connectionLost = { status: 500, body: { code: 'postgres-error', path: '$', error: expect.stringMatching(/^connection error: /) } };
const TERMINATE = 'select pg_terminate_backend(pg_backend_pid())';

describe('a lost connection', () => {
  it('fails the request with a 500 connection error; the server keeps serving (plain, no_transaction, read_only)', async () => {
    expect(await runSql(TERMINATE)).toMatchObject(connectionLost);
    await expectServing();
    expect(await runSql(`create table lost_plain (id int); ${TERMINATE}`)).toMatchObject(connectionLost);
    expect(await exists('lost_plain')).toBe(false);
    expect(await runSql(TERMINATE, { no_transaction: true })).toMatchObject(connectionLost);
    await expectServing();
    expect(await runSql(TERMINATE, { read_only: true })).toMatchObject(connectionLost);
    await expectServing();
  });

  it('in a bulk: the request fails, nothing of it is committed, later requests work', async () => {
    const r = await bulk(
      { type: 'run_sql', args: { sql: 'create table lost_bulk (id int)' } },
      { type: 'run_sql', args: { sql: TERMINATE } },
      { type: 'run_sql', args: { sql: 'insert into lost_bulk values (1)' } },
    );
    expect(r).toMatchObject(connectionLost);
    expect(await exists('lost_bulk')).toBe(false);
    // Lost after the bulk's SQL, in a read_only run_sql of the same transaction.
    expect(
      await bulk({ type: 'run_sql', args: { sql: 'create table lost_bulk (id int)' } }, { type: 'run_sql', args: { sql: TERMINATE, read_only: true } }),
    ).toMatchObject(connectionLost);
    expect(await exists('lost_bulk')).toBe(false);
    await expectServing();
  });

  it('terminated from outside while a statement runs', async () => {
    const running = runSql('create table lost_outside (id int); select pg_sleep(30)');
    for (let i = 0; i < 100; i++) {
      const killed = await s.sql`select pg_terminate_backend(pid) as k from pg_stat_activity where query = 'select pg_sleep(30)' and pid <> pg_backend_pid()`;
      if (killed.length > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await running).toMatchObject(connectionLost);
    expect(await exists('lost_outside')).toBe(false);
    await expectServing();
  });
});

describe('COPY', () => {
  const refused = {
    status: 400,
    body: {
      code: 'not-supported',
      path: '$.args',
      error: 'COPY FROM STDIN and COPY TO STDOUT are not supported by run_sql (no client stream to copy through): use COPY to or from a file on the database server, or INSERT',
    },
  };

  it('refuses COPY FROM STDIN / TO STDOUT up front, in every spelling and mode', async () => {
    for (const sql of [
      'copy author from stdin',
      'COPY author FROM STDIN',
      'Copy public.author (id, name) From Stdin With (format csv)',
      '/* a /* nested */ comment */ -- and a line\n  copy author from stdin;',
      'select 1; copy author to stdout',
      'copy (select * from author where name <> \'x\') to stdout with csv header',
      'copy "author" to STDOUT',
      'copy author from\nstdin',
      '\\copy author from stdin',
      '\\copy author to \'/tmp/file.csv\'',
    ]) {
      expect(await runSql(sql), sql).toMatchObject(refused);
      expect(await runSql(sql, { no_transaction: true }), sql).toMatchObject(refused);
      expect(await runSql(sql, { read_only: true }), sql).toMatchObject(refused);
    }
    expect(await bulk({ type: 'run_sql', args: { sql: 'create table copy_bulk (id int)' } }, { type: 'run_sql', args: { sql: 'copy copy_bulk from stdin' } })).toMatchObject(
      refused,
    );
    // Refused before anything ran.
    expect(await runSql('create table copy_first (id int); copy copy_first from stdin', { no_transaction: true })).toMatchObject(refused);
    expect(await exists('copy_first')).toBe(false);
    expect(await exists('copy_bulk')).toBe(false);
    await expectServing();
  });

  it('leaves COPY with a file or a program to PostgreSQL, and words in strings alone', async () => {
    expect(await runSql(`copy author from '/nonexistent/svc-file.csv'`)).toMatchObject({ status: 400, body: { code: 'postgres-error', internal: { error: { status_code: '58P01' } } } });
    expect(await runSql(`select 'copy author from stdin' as s`)).toMatchObject({ status: 200, body: { result: [['s'], ['copy author from stdin']] } });
    await expectServing();
  });
});

describe('no connection goes back to the pool dirty', () => {
  it('a transaction left open by a no_transaction run_sql is rolled back, not handed on', async () => {
    expect(await runSql('create table left_open (id int)', { no_transaction: true })).toMatchObject({ status: 200 });
    expect(await runSql('begin; insert into left_open values (1)', { no_transaction: true })).toMatchObject({ status: 200 });
    for (let i = 0; i < 20; i++) expect((await runSql('select count(*) from left_open')).body.result[1][0]).toBe('0');
    expect(await count('left_open')).toBe(0);
  });

  it('a role set by run_sql does not stay on the connection', async () => {
    const role = `svc_role_${randomBytes(4).toString('hex')}`;
    await s.sql.unsafe(`create role ${role} nologin`);
    try {
      const user = (await runSql('select current_user as u')).body.result[1][0];
      expect(await runSql(`set role ${role}`)).toMatchObject({ status: 200 });
      expect(await runSql(`set session authorization ${role}`)).toMatchObject({ status: 200 });
      for (let i = 0; i < 20; i++) expect((await runSql('select current_user as u, session_user as s')).body.result[1]).toEqual([user, user]);
    } finally {
      await s.sql.unsafe(`drop role ${role}`);
    }
  });

  it('after a failing statement, the following requests all work', async () => {
    expect(await runSql('select * from nope')).toMatchObject({ status: 400, body: { code: 'postgres-error' } });
    expect(await runSql('select 1; select * from nope', { no_transaction: true })).toMatchObject({ status: 400, body: { code: 'postgres-error' } });
    await expectServing();
  });
});

describe('transaction control', () => {
  const refusedTc = (name: string, readOnly = false) => ({
    status: 400,
    body: {
      code: 'not-supported',
      path: '$.args',
      error: readOnly
        ? `${name} is not supported by a read_only run_sql: its SQL runs in a transaction that is rolled back`
        : `${name} is not supported by run_sql: its SQL runs in the request's transaction, all or nothing (use "no_transaction": true to run statements outside a transaction)`,
    },
  });
  const statements: [string, string][] = [
    ['commit', 'COMMIT'],
    ['COMMIT AND CHAIN', 'COMMIT'],
    ['commit work', 'COMMIT'],
    ['rollback', 'ROLLBACK'],
    ['rollback and chain', 'ROLLBACK'],
    ['begin', 'BEGIN'],
    ['BEGIN ISOLATION LEVEL SERIALIZABLE', 'BEGIN'],
    ['end', 'END'],
    ['start transaction read write', 'START TRANSACTION'],
    ['abort', 'ABORT'],
    [`prepare transaction 'svc_x'`, 'PREPARE TRANSACTION'],
    [`commit prepared 'svc_x'`, 'COMMIT PREPARED'],
    [`rollback prepared 'svc_x'`, 'ROLLBACK PREPARED'],
    ['/* c /* nested */ */ -- line\n Commit', 'COMMIT'],
  ];

  it('is refused up front in a run_sql, and nothing before it is committed', async () => {
    for (const [st, name] of statements) {
      expect(await runSql(`create table tc_plain (id int); ${st}; create table tc_after (id int)`), st).toMatchObject(refusedTc(name));
      expect(await exists('tc_plain')).toBe(false);
      expect(await exists('tc_after')).toBe(false);
    }
  });

  it('is refused in a bulk, which stays all or nothing', async () => {
    for (const [st, name] of statements) {
      const r = await bulk(
        { type: 'run_sql', args: { sql: 'create table tc_bulk (id int)' } },
        { type: 'run_sql', args: { sql: `insert into tc_bulk values (1); ${st}` } },
      );
      expect(r, st).toMatchObject(refusedTc(name));
      expect(await exists('tc_bulk')).toBe(false);
    }
  });

  it('is refused in a read_only run_sql, which cannot write', async () => {
    for (const [st, name] of statements) {
      expect(await runSql(`${st}; create table tc_ro (id int)`, { read_only: true }), st).toMatchObject(refusedTc(name, true));
      expect(await exists('tc_ro')).toBe(false);
    }
    // Nor by making the transaction writable again.
    expect(await runSql('set transaction read write; create table tc_ro (id int)', { read_only: true })).toMatchObject({ status: 400, body: { code: 'postgres-error' } });
    expect(await runSql('set session characteristics as transaction read write; create table tc_ro (id int)', { read_only: true })).toMatchObject({
      status: 400,
      body: { code: 'postgres-error', internal: { error: { status_code: '25006' } } },
    });
    expect(await runSql('reset transaction_read_only; create table tc_ro (id int)', { read_only: true })).toMatchObject({ status: 400, body: { code: 'postgres-error' } });
    expect(await exists('tc_ro')).toBe(false);
    // In a bulk, read_only still sees the bulk's earlier SQL, and cannot escape its savepoint.
    expect(
      await bulk(
        { type: 'run_sql', args: { sql: 'create table tc_ro_bulk (id int)' } },
        { type: 'run_sql', args: { sql: 'rollback to savepoint svc_read_only; release savepoint svc_read_only; insert into tc_ro_bulk values (1)', read_only: true } },
      ),
    ).toMatchObject({ status: 400, body: { code: 'postgres-error' } });
    expect(await exists('tc_ro_bulk')).toBe(false);
    await expectServing();
  });

  it('allows savepoints, and transaction control with no_transaction', async () => {
    expect(
      await runSql(`create table tc_sp (id int); savepoint a; insert into tc_sp values (1); rollback to savepoint a; insert into tc_sp values (2);
        savepoint b; insert into tc_sp values (3); rollback to b; release savepoint a; select array_agg(id) as ids from tc_sp`),
    ).toMatchObject({ status: 200, body: { result: [['ids'], ['{2}']] } });
    expect(await runSql('savepoint a; release a; select 1 as one', { read_only: true })).toMatchObject({ status: 200, body: { result: [['one'], ['1']] } });
    expect(await runSql('begin; insert into tc_sp values (4); commit; begin; insert into tc_sp values (5); rollback', { no_transaction: true })).toMatchObject({
      status: 200,
    });
    expect((await s.sql`select id from tc_sp order by id`).map((r) => r.id)).toEqual([2, 4]);
    expect(await runSql('prepare tc_q as select 1 as one; execute tc_q; ')).toMatchObject({ status: 200, body: { result: [['one'], ['1']] } });
  });

  it('COMMIT inside a DO block or a procedure is refused by PostgreSQL, atomically', async () => {
    const invalid = { status: 400, body: { code: 'postgres-error', path: '$.args', internal: { error: { status_code: '2D000' } } } };
    expect(await runSql('create table tc_do (id int); do $$ begin insert into tc_do values (1); commit; end $$')).toMatchObject(invalid);
    expect(await exists('tc_do')).toBe(false);
    expect(await runSql('create procedure tc_commit() language plpgsql as $$ begin insert into author values (100, \'p\'); commit; end $$')).toMatchObject({
      status: 200,
    });
    expect(await runSql('insert into author values (99, \'before\'); call tc_commit()')).toMatchObject(invalid);
    expect(await s.sql`select id from author where id in (99, 100)`).toEqual([]);
    // A SQL-standard body keeps its BEGIN ATOMIC ... END, which is not transaction control.
    expect(await runSql('create function tc_atomic() returns int language sql begin atomic select 1; end; select tc_atomic() as v')).toMatchObject({
      status: 200,
      body: { result: [['v'], ['1']] },
    });
    await expectServing();
  });
});
