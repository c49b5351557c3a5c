/**
 * Splits a SQL script into statements the way psql does: at semicolons outside quoted strings
 * ('..', E'..'), quoted identifiers, dollar-quoted bodies, comments (nested /* *\/), parentheses
 * and the BEGIN ... END body of a `CREATE [OR REPLACE] FUNCTION|PROCEDURE ... BEGIN ATOMIC`
 * (psql's heuristic: inside such a statement, BEGIN and CASE open a block that END closes).
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
  const isIdent = (ch: string | undefined) => ch !== undefined && /[A-Za-z0-9_$\u0080-\uffff]/.test(ch);
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') (depth++, (i += 2));
        else if (sql[i] === '*' && sql[i + 1] === '/') (depth--, (i += 2));
        else i++;
      }
    } else if (c === "'") {
      // E'..' strings take backslash escapes; standard strings only double the quote.
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && !isIdent(sql[i - 2]);
      i++;
      while (i < n) {
        if (escapes && sql[i] === '\\') i += 2;
        else if (sql[i] === "'" && sql[i + 1] === "'") i += 2;
        else if (sql[i] === "'") {
          i++;
          break;
        } else i++;
      }
    } else if (c === '"') {
      i++;
      while (i < n) {
        if (sql[i] === '"' && sql[i + 1] === '"') i += 2;
        else if (sql[i] === '"') {
          i++;
          break;
        } else i++;
      }
    } else if (c === '$' && !isIdent(sql[i - 1])) {
      const m = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 64));
      if (m) {
        const tag = m[0];
        const end = sql.indexOf(tag, i + tag.length);
        i = end < 0 ? n : end + tag.length;
      } else i++;
    } else if (c === '(') (parens++, i++);
    else if (c === ')') (parens = Math.max(0, parens - 1), i++);
    else if (c === ';') {
      if (parens === 0 && blocks === 0) {
        out.push(sql.slice(start, i));
        start = i + 1;
        words = [];
      }
      i++;
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c) && !isIdent(sql[i - 1])) {
      let j = i + 1;
      while (j < n && isIdent(sql[j])) j++;
      const word = sql.slice(i, j).toLowerCase();
      if (words.length < 4) words.push(word);
      if (isRoutineDefinition(words)) {
        if (word === 'begin') blocks++;
        else if (word === 'case' && blocks > 0) blocks++;
        else if (word === 'end' && blocks > 0) blocks--;
      }
      i = j;
    } else i++;
  }
  out.push(sql.slice(start));
  return out.map((s) => s.trim()).filter((s) => s.length > 0 && !/^(--[^\n]*(\n|$)|\/\*[\s\S]*?\*\/|\s)*$/.test(s));
}

function isRoutineDefinition(words: string[]): boolean {
  if (words[0] !== 'create') return false;
  const routine = (w: string | undefined) => w === 'function' || w === 'procedure';
  return routine(words[1]) || (words[1] === 'or' && words[2] === 'replace' && routine(words[3]));
}
