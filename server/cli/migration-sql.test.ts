/** Note [Migrations with their own transaction]: which files are unwrapped, which refused, where. */
import { describe, expect, it } from 'vitest';
import { MigrationSqlError, prepareMigrationSql, statementsOf } from './migration-sql.js';

const refusal = (sql: string) => {
  try {
    prepareMigrationSql(sql);
  } catch (e) {
    if (e instanceof MigrationSqlError) return `${e.line}: ${e.message.split(' here')[0]}`;
    throw e;
  }
  return 'accepted';
};

describe('prepareMigrationSql', () => {
  it('leaves a file without transaction control as it is', () => {
    const sql = 'create table t (id int);\n-- a comment; with a semicolon\nsavepoint a;\nrollback to savepoint a;\n';
    expect(prepareMigrationSql(sql)).toMatchObject({ sql, unwrapped: false });
  });

  it('takes off an outer BEGIN ... COMMIT, whatever its spelling, keeping the text between', () => {
    for (const [open, close] of [['BEGIN', 'COMMIT'], ['begin transaction isolation level serializable', 'end'], ['START TRANSACTION', 'commit work']]) {
      const p = prepareMigrationSql(`-- head\n${open};\ncreate function f() returns int language sql as $$ select 1; $$;\n\ninsert into t values ('a;b');\n${close};\n-- tail\n`);
      expect(p.unwrapped).toBe(true);
      expect(p.sql).toBe(";\ncreate function f() returns int language sql as $$ select 1; $$;\n\ninsert into t values ('a;b');\n");
      expect(p.statements.map((s) => s.line)).toEqual([3, 5]);
    }
  });

  it('refuses other transaction control, naming its line', () => {
    expect(refusal('BEGIN;\ncreate table a (id int);\nCOMMIT;\nBEGIN;\ncreate table b (id int);\nCOMMIT;\n')).toBe('3: COMMIT');
    expect(refusal('BEGIN;\ncreate table a (id int);\nROLLBACK;\n')).toBe('3: ROLLBACK');
    expect(refusal('create table a (id int);\n\nCOMMIT;\n')).toBe('3: COMMIT');
    expect(refusal('BEGIN;\ncreate table a (id int);\n')).toBe('1: BEGIN');
    expect(refusal('BEGIN;\ncreate table a (id int);\nCOMMIT;\ncreate table b (id int);\n')).toBe('3: COMMIT');
  });

  it('gives each statement the line it starts on', () => {
    expect(statementsOf('/* one\n two */ select 1;\n\n  select\n 2;select 3').map((s) => [s.line, s.text])).toEqual([
      [1, '/* one\n two */ select 1'],
      [4, 'select\n 2'],
      [5, 'select 3'],
    ]);
  });
});
