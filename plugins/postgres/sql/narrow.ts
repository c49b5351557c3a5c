/**
 * Note [Narrow rows]
 * A rows subquery that PostgreSQL cannot pull up into its parent (it has an ORDER BY, LIMIT,
 * OFFSET or DISTINCT ON: `(select <t>.*, <order keys> from <table> as <t> ... order by ...
 * limit 50) as <t>`) carries every column it projects through its sort: with `<t>.*`, every
 * column of the table, where the parent reads a few. On Chinook's tracks ordered through two
 * object relationships (the benchmark's order_rel: 3,503 rows sorted for 50), projecting only
 * the columns read took PostgreSQL's CPU per statement from about 6,300 to 4,800 µs
 * (2026-11-26, two-core machine, backend CPU from /proc over 300 runs each, alternating), beside
 * 4,100 for the hand-written statement. So the compiler writes a placeholder for the projection
 * (`rowsPlaceholder`), and once the statement is whole, `narrowRows` replaces it with the
 * columns the statement names on that alias (`<t>."col"`; a column named inside the subquery,
 * on its own table of the same alias, is kept too, which is harmless). The statement is read as
 * tokens, quoted identifiers and string literals skipped whole, so no text inside them is taken
 * for a reference. Where the alias is used whole (anything but its definition `as <t>` and
 * `<t>."col"`), or names no column, the projection stays `<t>.*`. Aliases are unique within a
 * statement (the compiler's counter), so every reference found is to that subquery or its table.
 */

/** The projection of the rows subquery aliased `t`, replaced by `narrowRows`. A NUL character
 * cannot be in an identifier or a literal of the statement (PostgreSQL text cannot hold it). */
export const rowsPlaceholder = (t: string): string => `\u0000${t}\u0000`;

/** Where the columns a rows subquery's order keys' joins project go (Note [Objects read through
 * the order keys' joins] in compile.ts), replaced by the compiler before `narrowRows`. */
export const joinedPlaceholder = (t: string): string => `\u0001${t}\u0001`;

/** The order keys, joined columns and read order a rows subquery projects itself (compile.ts
 * `projectKeys`, `joinedPlaceholder`, Note [Rows numbered as read]). */
const PROJECTED = /^"__svc_(?:[oj]\d+|n)"$/;

/** `sql` with each rows placeholder replaced (Note [Narrow rows]). */
export function narrowRows(sql: string): string {
  if (!sql.includes('\u0000')) return sql;
  const refs = references(sql);
  return sql.replace(/\u0000(_t\d+)\u0000/g, (_m, t: string) => {
    const cols = refs.get(t);
    return cols && cols !== WHOLE && cols.size > 0 ? [...cols].map((c) => `${t}.${c}`).join(', ') : `${t}.*`;
  });
}

/** The columns (unquoted) that `sql` reads on alias `t` as `<t>."col"`, or undefined where it
 * uses the alias otherwise (a row whole): read as Note [Narrow rows] reads a statement. */
export function columnsRead(sql: string, t: string): string[] | undefined {
  return readsOf(sql)(t);
}

/** `columnsRead` of `sql` for any alias, the statement read once. */
export function readsOf(sql: string): (t: string) => string[] | undefined {
  const refs = references(sql, false);
  return (t) => {
    const cols = refs.get(t);
    if (cols === WHOLE) return undefined;
    return cols ? [...cols].map((c) => c.slice(1, -1).replace(/""/g, '"')) : [];
  };
}

const WHOLE = 'whole' as const;

/** Per alias `_t<n>`: the quoted column names the statement reads on it (but for those a rows
 * subquery projects itself, unless `projected` is false), or WHOLE where it uses the alias
 * otherwise. */
function references(sql: string, projected = true): Map<string, Set<string> | typeof WHOLE> {
  const out = new Map<string, Set<string> | typeof WHOLE>();
  const n = sql.length;
  let i = 0;
  let prevWord = '';
  while (i < n) {
    const ch = sql[i]!;
    if (ch === '"' || ch === "'") {
      i = skipQuoted(sql, i, ch);
      prevWord = '';
      continue;
    }
    if (ch === '\u0000') {
      // A placeholder: `\0_t<n>\0`, not a use of the alias.
      i = sql.indexOf('\u0000', i + 1) + 1;
      prevWord = '';
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_$]/.test(sql[j]!)) j++;
      const word = sql.slice(i, j);
      if (/^_t\d+$/.test(word)) {
        if (sql[j] === '.' && sql[j + 1] === '"') {
          const end = skipQuoted(sql, j + 1, '"');
          const col = sql.slice(j + 1, end);
          let cols = out.get(word);
          if (cols === undefined) out.set(word, (cols = new Set()));
          if (cols !== WHOLE && !(projected && PROJECTED.test(col))) cols.add(col);
          i = end;
          prevWord = '';
          continue;
        }
        if (prevWord.toLowerCase() !== 'as') out.set(word, WHOLE);
      }
      prevWord = word;
      i = j;
      continue;
    }
    if (!/\s/.test(ch)) prevWord = '';
    i++;
  }
  return out;
}

/** The index after the quoted token that starts at `i` (a doubled quote stays inside it). */
function skipQuoted(sql: string, i: number, q: string): number {
  let j = i + 1;
  for (;;) {
    const k = sql.indexOf(q, j);
    if (k < 0) return sql.length;
    if (sql[k + 1] === q) {
      j = k + 2;
      continue;
    }
    return k + 1;
  }
}
