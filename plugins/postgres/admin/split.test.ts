/**
 * The statement splitter: semicolons end statements only outside strings, identifiers, comments,
 * dollar quotes, parentheses and SQL-standard function bodies (BEGIN ATOMIC ... END).
 */
import { describe, expect, it } from 'vitest';
import { leadingWords, splitStatements } from './split.js';

describe('splitStatements', () => {
  it('splits at top-level semicolons, trims, and drops empty statements', () => {
    expect(splitStatements('select 1; select 2 ;\n\n;  select 3')).toEqual(['select 1', 'select 2', 'select 3']);
    expect(splitStatements('')).toEqual([]);
    expect(splitStatements(' ; ;\n')).toEqual([]);
  });

  it('keeps semicolons inside strings, quoted identifiers and comments', () => {
    expect(splitStatements(`select 'a;b', 'it''s;'; select "we;ird""x"; select E'\\';' as e`)).toEqual([
      `select 'a;b', 'it''s;'`,
      `select "we;ird""x"`,
      `select E'\\';' as e`,
    ]);
    expect(splitStatements('select 1 -- no; split\n; /* a; /* nested; */ b; */ select 2')).toEqual(['select 1 -- no; split', '/* a; /* nested; */ b; */ select 2']);
  });

  it('does not treat a backslash in a standard string as an escape', () => {
    expect(splitStatements(`select 'a\\'; select 2`)).toEqual([`select 'a\\'`, 'select 2']);
  });

  it('leaves out statements made only of comments', () => {
    expect(splitStatements('select 1;\n-- the end\n')).toEqual(['select 1']);
    expect(splitStatements('select 1; /* done */')).toEqual(['select 1']);
  });

  it('keeps dollar-quoted bodies whole, with or without a tag', () => {
    const fn = `create function f() returns int as $body$ begin; return 1; end $body$ language plpgsql`;
    expect(splitStatements(`${fn}; do $$ begin perform 1; end $$; select $1`)).toEqual([fn, 'do $$ begin perform 1; end $$', 'select $1']);
    // `a$b$` is an identifier, not the start of a dollar quote
    expect(splitStatements('select 1 as a$b$; select 2')).toEqual(['select 1 as a$b$', 'select 2']);
  });

  it('keeps semicolons inside parentheses (CREATE RULE ... DO (...; ...))', () => {
    const rule = 'create rule r as on insert to t do also (insert into a values (1); insert into b values (2))';
    expect(splitStatements(`${rule}; select 1`)).toEqual([rule, 'select 1']);
  });

  it('keeps a BEGIN ATOMIC function body whole, CASE ... END included', () => {
    const fn = `create or replace function g(x int) returns int language sql begin atomic select case when x > 0 then 1 else 0 end; select x; end`;
    const proc = `CREATE PROCEDURE p() BEGIN ATOMIC insert into t values (1); END`;
    expect(splitStatements(`${fn}; ${proc}; select 'end'`)).toEqual([fn, proc, `select 'end'`]);
    // BEGIN/END outside a routine definition are transaction statements
    expect(splitStatements('begin; select 1; end; select 2')).toEqual(['begin', 'select 1', 'end', 'select 2']);
  });

  it('opens a routine body only at BEGIN ATOMIC: a function named begin hides nothing', () => {
    const fn = 'create function begin() returns int language sql as $$ select 1 $$';
    expect(splitStatements(`${fn}; commit; end`)).toEqual([fn, 'commit', 'end']);
  });
});

describe('leadingWords', () => {
  it('skips comments, and gives strings, identifiers and parenthesised parts as one mark each', () => {
    expect(leadingWords('/* a /* nested */ one */ -- line\n  COMMIT and chain')).toEqual(['commit', 'and', 'chain']);
    expect(leadingWords(`copy (select 'x' from stdin) to stdout`)).toEqual(['copy', '(', 'to', 'stdout']);
    expect(leadingWords(`Copy "my table" (a, b) FROM 'stdin'`)).toEqual(['copy', "'", '(', 'from', "'"]);
    expect(leadingWords('\\copy author from stdin', 2)).toEqual(['\\copy', 'author']);
    expect(leadingWords('public.author')).toEqual(['public', 'author']);
  });
});
