/**
 * Splits a SQL script into statements the way psql does: at semicolons outside quoted strings
 * ('..', E'..'), quoted identifiers, dollar-quoted bodies, comments (nested /* *\/), parentheses
 * and the BEGIN ... END body of a `CREATE [OR REPLACE] FUNCTION|PROCEDURE ... BEGIN ATOMIC`
 * (psql's heuristic, narrowed to BEGIN ATOMIC: inside the body, CASE opens a block that END closes).
 * run_sql classifies what it runs by these statements, so a semicolon that PostgreSQL sees at the
 * top level must split here too (splitting more only makes PostgreSQL refuse a broken piece).
 * Statements are trimmed; empty ones (only whitespace and comments) are left out.
 */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  let parens = 0;
  let blocks = 0;
  /** First words of the current statement, lower-cased (enough to recognise CREATE FUNCTION). */
  let words: string[] = [];
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const skipped = skipOpaque(sql, i);
    if (skipped !== i) i = skipped;
    else if (c === '(') (parens++, i++);
    else if (c === ')') (parens = Math.max(0, parens - 1), i++);
    else if (c === ';') {
      if (parens === 0 && blocks === 0) {
        out.push(sql.slice(start, i));
        start = i + 1;
        words = [];
      }
      i++;
    } else if (isWordStart(sql, i)) {
      const j = wordEnd(sql, i);
      const word = sql.slice(i, j).toLowerCase();
      if (words.length < 4) words.push(word);
      if (isRoutineDefinition(words)) {
        // Only BEGIN ATOMIC opens the body (`create function begin()` is a function named begin:
        // taking it for a body would hide the statements after it in this one).
        if (word === 'begin' && (blocks > 0 || /^\s+atomic\b/i.test(sql.slice(j, j + 32)))) blocks++;
        else if (word === 'case' && blocks > 0) blocks++;
        else if (word === 'end' && blocks > 0) blocks--;
      }
      i = j;
    } else i++;
  }
  out.push(sql.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0 && !/^(--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/|\s)*$/.test(s));
}

/**
 * The first `max` words of a statement at its top level, lower-cased: comments are skipped,
 * strings, quoted identifiers and dollar-quoted bodies count as the word `'`, and parenthesised
 * parts as `(` (so that a COPY's query or column list does not count). Punctuation is skipped,
 * a backslash starts a word (psql's `\copy`).
 */
export function leadingWords(statement: string, max = Infinity): string[] {
  const out: string[] = [];
  const n = statement.length;
  let i = 0;
  let parens = 0;
  while (i < n && out.length < max) {
    const c = statement[i]!;
    const skipped = skipOpaque(statement, i);
    if (skipped !== i) {
      if (parens === 0 && !isComment(statement, i)) out.push("'");
      i = skipped;
    } else if (c === '(') {
      if (parens++ === 0) out.push('(');
      i++;
    } else if (c === ')') (parens = Math.max(0, parens - 1), i++);
    else if (isWordStart(statement, i) || (c === '\\' && isWordStart(statement, i + 1))) {
      const j = wordEnd(statement, i + 1);
      if (parens === 0) out.push(statement.slice(i, j).toLowerCase());
      i = j;
    } else i++;
  }
  return out;
}

const isIdent = (ch: string | undefined) => ch !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(ch);
const isWordStart = (sql: string, i: number) => /[A-Za-z_\u0080-\uffff]/.test(sql[i] ?? '') && !isIdent(sql[i - 1]);
const isComment = (sql: string, i: number) => (sql[i] === '-' && sql[i + 1] === '-') || (sql[i] === '/' && sql[i + 1] === '*');

function wordEnd(sql: string, i: number): number {
  while (i < sql.length && isIdent(sql[i])) i++;
  return i;
}

/** When a comment, string, quoted identifier or dollar-quoted body starts at `i`, the index after
 * it (to the end of the text when unterminated); else `i`. */
function skipOpaque(sql: string, i: number): number {
  const n = sql.length;
  const c = sql[i]!;
  const next = sql[i + 1];
  if (c === '-' && next === '-') {
    const end = sql.indexOf('\n', i);
    return end < 0 ? n : end + 1;
  }
  if (c === '/' && next === '*') {
    let depth = 1;
    i += 2;
    while (i < n && depth > 0) {
      if (sql[i] === '/' && sql[i + 1] === '*') (depth++, (i += 2));
      else if (sql[i] === '*' && sql[i + 1] === '/') (depth--, (i += 2));
      else i++;
    }
    return i;
  }
  if (c === "'") {
    // E'..' strings take backslash escapes; standard strings only double the quote.
    const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && !isIdent(sql[i - 2]);
    i++;
    while (i < n) {
      if (escapes && sql[i] === '\\') i += 2;
      else if (sql[i] === "'" && sql[i + 1] === "'") i += 2;
      else if (sql[i] === "'") return i + 1;
      else i++;
    }
    return n;
  }
  if (c === '"') {
    i++;
    while (i < n) {
      if (sql[i] === '"' && sql[i + 1] === '"') i += 2;
      else if (sql[i] === '"') return i + 1;
      else i++;
    }
    return n;
  }
  if (c === '$' && !isIdent(sql[i - 1])) {
    const m = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 64));
    if (m) {
      const end = sql.indexOf(m[0], i + m[0].length);
      return end < 0 ? n : end + m[0].length;
    }
  }
  return i;
}

function isRoutineDefinition(words: string[]): boolean {
  if (words[0] !== 'create') return false;
  const routine = (w: string | undefined) => w === 'function' || w === 'procedure';
  return routine(words[1]) || (words[1] === 'or' && words[2] === 'replace' && routine(words[3]));
}
