/**
 * The `path` argument of a json/jsonb column (Hasura's "JSON select path"): `$`, `.a.b`, `a`,
 * `arr[0]`, `['key with spaces']`, `["你好"]`, `.[0]`; the selected value is the column's value
 * at those keys and indexes (null where there is none).
 */
import { SvcError } from '../../../core/errors.js';

/** The keys and indexes of a JSON path, or a `validation-failed` error naming where it broke. */
export function parseJsonPath(text: string): (string | number)[] {
  const out: (string | number)[] = [];
  let i = text.startsWith('$') ? 1 : 0;
  const fail = (why: string): never => {
    throw new SvcError('validation-failed', `parse json path error: ${why} at position ${i} of ${JSON.stringify(text)}`);
  };
  const key = () => {
    const start = i;
    while (i < text.length && text[i] !== '.' && text[i] !== '[' && text[i] !== ']') i++;
    if (i === start) fail('expected a key');
    out.push(text.slice(start, i));
  };
  if (i < text.length && text[i] !== '.' && text[i] !== '[') key();
  // A key runs to the next `.`, `[` or `]` (a stray `]` is then an error).
  while (i < text.length) {
    if (text[i] === '.') {
      i++;
      if (text[i] !== '[') key();
    } else if (text[i] === '[') {
      i++;
      const q = text[i];
      if (q === "'" || q === '"') {
        const end = text.indexOf(q, i + 1);
        if (end < 0) fail('unterminated string');
        out.push(text.slice(i + 1, end));
        i = end + 1;
      } else {
        const m = /^\d+/.exec(text.slice(i));
        if (!m) fail('expected an index or a quoted key');
        out.push(Number(m![0]));
        i += m![0].length;
      }
      if (text[i] !== ']') fail('expected "]"');
      i++;
    } else fail('unexpected character');
  }
  return out;
}
