/**
 * The JSON paths of the JWT configuration (`claims_namespace_path`, `claims_map`'s `path`), as
 * Hasura writes them: `$`, then `.name`, `['name']` / `["name"]` (for keys with dots or slashes,
 * like `https://hasura.io/jwt/claims`) and `[0]`.
 */
export type JsonPath = (string | number)[];

export function parseJsonPath(text: string): JsonPath {
  if (!text.startsWith('$')) throw new Error(`invalid JSON path ${JSON.stringify(text)}: it must start with $`);
  const out: JsonPath = [];
  let i = 1;
  while (i < text.length) {
    const c = text[i];
    if (c === '.') {
      const m = /^[^.[\]'"]+/.exec(text.slice(i + 1));
      if (!m) throw new Error(`invalid JSON path ${JSON.stringify(text)}: expected a key after "." at ${i}`);
      out.push(m[0]);
      i += 1 + m[0].length;
    } else if (c === '[') {
      const m = /^\[(?:(\d+)|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/.exec(text.slice(i));
      if (!m) throw new Error(`invalid JSON path ${JSON.stringify(text)}: expected [index] or ['key'] at ${i}`);
      out.push(m[1] !== undefined ? Number(m[1]) : (m[2] ?? m[3]!).replace(/\\(.)/g, '$1'));
      i += m[0].length;
    } else {
      throw new Error(`invalid JSON path ${JSON.stringify(text)}: unexpected "${c}" at ${i}`);
    }
  }
  return out;
}

/** The value at `path`, or undefined when a step is missing. */
export function atPath(value: unknown, path: JsonPath): unknown {
  let cur = value;
  for (const step of path) {
    if (typeof step === 'number') {
      if (!Array.isArray(cur)) return undefined;
      cur = cur[step];
    } else {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !Object.hasOwn(cur, step)) return undefined;
      cur = (cur as Record<string, unknown>)[step];
    }
  }
  return cur;
}

export function printJsonPath(path: JsonPath): string {
  return '$' + path.map((s) => (typeof s === 'number' ? `[${s}]` : /^[A-Za-z_][A-Za-z0-9_-]*$/.test(s) ? `.${s}` : `['${s.replace(/['\\]/g, '\\$&')}']`)).join('');
}
