/**
 * A subset of Kriti, the template language of Hasura's request and response transforms
 * (https://github.com/hasura/kriti-lang): a JSON document whose values may be `{{ expression }}`,
 * strings with `{{ }}` interpolated, `{{ range i, x := expr }} value {{ end }}` (an array of the
 * value for each item) and `{{ if c }} a {{ elif d }} b {{ else }} c {{ end }}`. Expressions:
 * paths (`$body.a[0]['b']`, range variables), literals, `( )`, `==` `!=` `>` `<` `>=` `<=`, `&&`
 * `||`, `not`, `??` (default when null or missing), and the functions `not`, `empty`, `length`
 * (`size`), `toString`, `toUpper`, `toLower`, `toTitle`, `toCaseFold`, `inverse`, `head`, `tail`,
 * `concat`, `toPairs`, `fromPairs`, `removeNulls`, `escapeUri` and `getSessionVariable`. A
 * template is parsed once (per action or trigger and build) and evaluated per call; an error (a
 * syntax error, an unbound variable, a function given the wrong type) is a KritiError.
 */

/** Kriti's error kinds, as its errors name them in `error_code`. */
export type KritiErrorCode = 'Parse Error' | 'Type Error' | 'Invalid Path Error' | 'Function Error';

export class KritiError extends Error {
  constructor(
    message: string,
    readonly code: KritiErrorCode = 'Parse Error',
  ) {
    super(message);
  }

  /** Kriti's rendered error (the elements of Hasura's TransformErrorBundle). */
  toJSON(): { error_code: string; message: string } {
    return { error_code: this.code, message: this.message };
  }
}

/** The variable that holds the session variables for `getSessionVariable` (Hasura gives the
 * function the session even where no `$session_variables` variable is bound: responses). */
export const SESSION_VAR = '\u0000session';

type Expr =
  | { k: 'lit'; v: unknown }
  | { k: 'path'; root: string; steps: (string | number)[] }
  | { k: 'bin'; op: string; a: Expr; b: Expr }
  | { k: 'not'; a: Expr }
  | { k: 'call'; f: string; a: Expr };

type Node =
  | { k: 'json'; v: unknown }
  | { k: 'obj'; fields: [Node, Node][] }
  | { k: 'arr'; items: Node[] }
  | { k: 'str'; parts: (string | Expr)[] }
  | { k: 'expr'; e: Expr }
  | { k: 'range'; i: string | undefined; x: string; over: Expr; body: Node }
  | { k: 'if'; branches: [Expr, Node][]; otherwise: Node | undefined };

// ---------------------------------------------------------------------------------------------
// Expressions

function parseExpr(src: string): Expr {
  let i = 0;
  const ws = () => {
    while (i < src.length && /\s/.test(src[i]!)) i++;
  };
  const peek = (s: string) => {
    ws();
    return src.startsWith(s, i);
  };
  const eat = (s: string) => {
    if (!peek(s)) throw new KritiError(`expected "${s}" at ${i} in "${src}"`);
    i += s.length;
  };
  const ident = (): string => {
    ws();
    const m = /^\$?[A-Za-z_][A-Za-z0-9_-]*/.exec(src.slice(i));
    if (!m) throw new KritiError(`unexpected "${src.slice(i, i + 10)}" in "${src}"`);
    i += m[0].length;
    return m[0];
  };
  const stringLit = (): string => {
    const q = src[i]!;
    let j = i + 1;
    let out = '';
    while (j < src.length && src[j] !== q) {
      if (src[j] === '\\') {
        out += src[j + 1] ?? '';
        j += 2;
      } else out += src[j++];
    }
    if (j >= src.length) throw new KritiError(`unterminated string in "${src}"`);
    i = j + 1;
    return out;
  };
  const primary = (): Expr => {
    ws();
    const c = src[i];
    if (c === '(') {
      i++;
      const e = or();
      eat(')');
      return e;
    }
    if (c === '"' || c === "'") return { k: 'lit', v: stringLit() };
    const num = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      i += num[0].length;
      return { k: 'lit', v: Number(num[0]) };
    }
    const name = ident();
    if (name === 'true' || name === 'false') return { k: 'lit', v: name === 'true' };
    if (name === 'null') return { k: 'lit', v: null };
    if (name === 'not') return { k: 'not', a: primary() };
    if (peek('(') && !name.startsWith('$')) {
      eat('(');
      const a = or();
      eat(')');
      return { k: 'call', f: name, a };
    }
    const steps: (string | number)[] = [];
    for (;;) {
      if (src[i] === '.' || src.startsWith('?.', i)) {
        i += src[i] === '?' ? 2 : 1;
        if (src[i] === '[') continue;
        steps.push(ident());
      } else if (src[i] === '[' || src.startsWith('?[', i)) {
        // `?[` is Kriti's optional index: a missing step is null either way here.
        i += src[i] === '?' ? 2 : 1;
        ws();
        if (src[i] === '"' || src[i] === "'") steps.push(stringLit());
        else {
          const n = /^\d+/.exec(src.slice(i));
          if (!n) throw new KritiError(`expected an index in "${src}"`);
          i += n[0].length;
          steps.push(Number(n[0]));
        }
        eat(']');
      } else break;
    }
    return { k: 'path', root: name, steps };
  };
  const level = (ops: string[], next: () => Expr) => (): Expr => {
    let a = next();
    for (;;) {
      ws();
      const op = ops.find((o) => src.startsWith(o, i));
      if (!op) return a;
      i += op.length;
      a = { k: 'bin', op, a, b: next() };
    }
  };
  const cmp = level(['==', '!=', '>=', '<=', '>', '<'], primary);
  const def = level(['??'], cmp);
  const and = level(['&&'], def);
  const or = level(['||'], and);
  const e = or();
  ws();
  if (i !== src.length) throw new KritiError(`unexpected "${src.slice(i)}" in "${src}"`);
  return e;
}

const MISSING = Symbol('missing');

function evalExpr(e: Expr, env: ReadonlyMap<string, unknown>): unknown {
  switch (e.k) {
    case 'lit':
      return e.v;
    case 'path': {
      if (!env.has(e.root)) throw new KritiError(`unbound variable "${e.root}"`, 'Invalid Path Error');
      let v: unknown = env.get(e.root);
      for (const s of e.steps) {
        if (v === null || v === undefined || typeof v !== 'object') return MISSING;
        v = (v as Record<string | number, unknown>)[s];
        if (v === undefined) return MISSING;
      }
      return v;
    }
    case 'not':
      return !truthy(evalExpr(e.a, env));
    case 'call':
      return callFunction(e.f, value(evalExpr(e.a, env)), env);
    case 'bin': {
      if (e.op === '??') {
        const a = evalExpr(e.a, env);
        return a === MISSING || a === null ? evalExpr(e.b, env) : a;
      }
      if (e.op === '&&') return truthy(evalExpr(e.a, env)) && truthy(evalExpr(e.b, env));
      if (e.op === '||') return truthy(evalExpr(e.a, env)) || truthy(evalExpr(e.b, env));
      const a = value(evalExpr(e.a, env));
      const b = value(evalExpr(e.b, env));
      switch (e.op) {
        case '==':
          return JSON.stringify(a) === JSON.stringify(b);
        case '!=':
          return JSON.stringify(a) !== JSON.stringify(b);
        case '>':
          return (a as number) > (b as number);
        case '<':
          return (a as number) < (b as number);
        case '>=':
          return (a as number) >= (b as number);
        default:
          return (a as number) <= (b as number);
      }
    }
  }
}

const value = (v: unknown) => (v === MISSING ? null : v);

const isObject = (a: unknown): a is Record<string, unknown> => typeof a === 'object' && a !== null && !Array.isArray(a);
const typeError = (f: string, a: unknown) => new KritiError(`${f}: unexpected ${Array.isArray(a) ? 'array' : a === null ? 'null' : typeof a}`, 'Type Error');

/** Kriti's basic functions and Hasura's `getSessionVariable` (Data.Aeson.Kriti.Functions). */
function callFunction(f: string, a: unknown, env: ReadonlyMap<string, unknown>): unknown {
  switch (f) {
    case 'not':
      return !truthy(a);
    case 'empty':
      return a === null || a === '' || (Array.isArray(a) && a.length === 0) || (isObject(a) && Object.keys(a).length === 0);
    case 'length':
    case 'size':
      if (typeof a === 'string' || Array.isArray(a)) return a.length;
      if (isObject(a)) return Object.keys(a).length;
      if (typeof a === 'number') return a;
      throw typeError(f, a);
    case 'toString':
      return typeof a === 'string' ? a : JSON.stringify(a);
    case 'toUpper':
    case 'toLower':
    case 'toCaseFold':
    case 'toTitle':
      if (typeof a !== 'string') throw typeError(f, a);
      if (f === 'toUpper') return a.toUpperCase();
      if (f === 'toTitle') return a.toLowerCase().replace(/(^|\s)(\S)/g, (_, s: string, c: string) => s + c.toUpperCase());
      return a.toLowerCase();
    case 'inverse':
      if (typeof a === 'string') return [...a].reverse().join('');
      if (Array.isArray(a)) return [...a].reverse();
      if (typeof a === 'number') return 1 / a;
      if (typeof a === 'boolean') return !a;
      if (a === null || isObject(a)) return a;
      throw typeError(f, a);
    case 'head':
      if (typeof a === 'string' || Array.isArray(a)) {
        if (a.length === 0) throw new KritiError(`head: empty ${typeof a === 'string' ? 'string' : 'array'}`, 'Function Error');
        return a[0];
      }
      throw typeError(f, a);
    case 'tail':
      if (typeof a === 'string' || Array.isArray(a)) return a.slice(1);
      throw typeError(f, a);
    case 'concat': {
      if (!Array.isArray(a)) throw typeError(f, a);
      if (a.every((x) => typeof x === 'string')) return a.join('');
      if (a.every((x) => Array.isArray(x))) return (a as unknown[][]).flat();
      if (a.every(isObject)) return Object.assign({}, ...a);
      throw new KritiError('concat: expected an array of strings, of arrays or of objects', 'Type Error');
    }
    case 'toPairs':
      if (!isObject(a)) throw typeError(f, a);
      return Object.entries(a);
    case 'fromPairs': {
      if (!Array.isArray(a)) throw typeError(f, a);
      const out: Record<string, unknown> = {};
      for (const p of a) {
        if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== 'string') throw new KritiError('fromPairs: expected an array of [key, value] pairs', 'Type Error');
        out[p[0]] = p[1];
      }
      return out;
    }
    case 'removeNulls':
      if (Array.isArray(a)) return a.filter((x) => x !== null);
      if (isObject(a)) return Object.fromEntries(Object.entries(a).filter(([, x]) => x !== null));
      throw typeError(f, a);
    case 'escapeUri':
      if (typeof a !== 'string') throw typeError(f, a);
      return encodeURIComponent(a);
    case 'getSessionVariable': {
      if (typeof a !== 'string') throw typeError(f, a);
      const s = env.get(SESSION_VAR) ?? env.get('$session_variables');
      const name = a.toLowerCase();
      if (isObject(s)) for (const [k, x] of Object.entries(s)) if (k.toLowerCase() === name) return x;
      throw new KritiError(`Session variable "${a}" not found`, 'Function Error');
    }
    default:
      throw new KritiError(`unknown function "${f}"`, 'Function Error');
  }
}
const truthy = (v: unknown) => v === true;

// ---------------------------------------------------------------------------------------------
// Templates

class Parser {
  i = 0;
  constructor(readonly src: string) {}

  ws(): void {
    while (this.i < this.src.length && /\s/.test(this.src[this.i]!)) this.i++;
  }

  fail(what: string): never {
    throw new KritiError(`${what} at position ${this.i} of the template`);
  }

  /** The text of the next `{{ ... }}` without consuming it, or undefined. */
  peekTag(): string | undefined {
    this.ws();
    if (!this.src.startsWith('{{', this.i)) return undefined;
    const end = this.src.indexOf('}}', this.i + 2);
    if (end < 0) this.fail('unterminated "{{"');
    return this.src.slice(this.i + 2, end).trim();
  }

  takeTag(): string {
    const t = this.peekTag()!;
    this.i = this.src.indexOf('}}', this.i + 2) + 2;
    return t;
  }

  value(): Node {
    this.ws();
    const c = this.src[this.i];
    if (c === undefined) this.fail('unexpected end');
    if (c === '{' && this.src[this.i + 1] === '{') {
      const tag = this.takeTag();
      const range = /^range\s+(?:([A-Za-z_][A-Za-z0-9_]*)\s*,\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*:=\s*([\s\S]+)$/.exec(tag);
      if (range) {
        const body = this.value();
        if (this.takeTag() !== 'end') this.fail('expected {{ end }}');
        return { k: 'range', i: range[1], x: range[2]!, over: parseExpr(range[3]!), body };
      }
      const cond = /^if\s+([\s\S]+)$/.exec(tag);
      if (cond) {
        const branches: [Expr, Node][] = [[parseExpr(cond[1]!), this.value()]];
        let otherwise: Node | undefined;
        for (;;) {
          const t = this.takeTag();
          if (t === 'end') break;
          const elif = /^elif\s+([\s\S]+)$/.exec(t);
          if (elif) branches.push([parseExpr(elif[1]!), this.value()]);
          else if (t === 'else') otherwise = this.value();
          else this.fail(`unexpected {{ ${t} }}`);
        }
        return { k: 'if', branches, otherwise };
      }
      return { k: 'expr', e: parseExpr(tag) };
    }
    if (c === '{') {
      this.i++;
      const fields: [Node, Node][] = [];
      this.ws();
      if (this.src[this.i] === '}') {
        this.i++;
        return { k: 'obj', fields };
      }
      for (;;) {
        const key = this.value();
        this.ws();
        if (this.src[this.i] !== ':') this.fail('expected ":"');
        this.i++;
        fields.push([key, this.value()]);
        this.ws();
        if (this.src[this.i] === ',') {
          this.i++;
          continue;
        }
        if (this.src[this.i] === '}') {
          this.i++;
          return { k: 'obj', fields };
        }
        this.fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      this.i++;
      const items: Node[] = [];
      this.ws();
      if (this.src[this.i] === ']') {
        this.i++;
        return { k: 'arr', items };
      }
      for (;;) {
        items.push(this.value());
        this.ws();
        if (this.src[this.i] === ',') {
          this.i++;
          continue;
        }
        if (this.src[this.i] === ']') {
          this.i++;
          return { k: 'arr', items };
        }
        this.fail('expected "," or "]"');
      }
    }
    if (c === '"') return this.string();
    const lit = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(this.src.slice(this.i));
    if (lit) {
      this.i += lit[0].length;
      return { k: 'json', v: JSON.parse(lit[0]) };
    }
    this.fail(`unexpected "${this.src.slice(this.i, this.i + 10)}"`);
  }

  string(): Node {
    this.i++; // opening quote
    const parts: (string | Expr)[] = [];
    let text = '';
    for (;;) {
      const c = this.src[this.i];
      if (c === undefined) this.fail('unterminated string');
      if (c === '"') {
        this.i++;
        break;
      }
      if (c === '\\') {
        text += JSON.parse(`"${this.src.slice(this.i, this.i + (this.src[this.i + 1] === 'u' ? 6 : 2))}"`) as string;
        this.i += this.src[this.i + 1] === 'u' ? 6 : 2;
        continue;
      }
      if (c === '{' && this.src[this.i + 1] === '{') {
        const end = this.src.indexOf('}}', this.i + 2);
        if (end < 0) this.fail('unterminated "{{"');
        if (text) parts.push(text);
        text = '';
        parts.push(parseExpr(this.src.slice(this.i + 2, end).trim()));
        this.i = end + 2;
        continue;
      }
      text += c;
      this.i++;
    }
    if (text || parts.length === 0) parts.push(text);
    return { k: 'str', parts };
  }
}

function evalNode(n: Node, env: Map<string, unknown>): unknown {
  switch (n.k) {
    case 'json':
      return n.v;
    case 'expr':
      return value(evalExpr(n.e, env));
    case 'str':
      return n.parts.map((p) => (typeof p === 'string' ? p : ((v) => (typeof v === 'string' ? v : JSON.stringify(v)))(value(evalExpr(p, env))))).join('');
    case 'arr':
      return n.items.map((x) => evalNode(x, env));
    case 'obj': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of n.fields) {
        const key = evalNode(k, env);
        out[typeof key === 'string' ? key : JSON.stringify(key)] = evalNode(v, env);
      }
      return out;
    }
    case 'range': {
      const over = value(evalExpr(n.over, env));
      const items: [unknown, unknown][] = Array.isArray(over) ? over.map((x, i) => [i, x]) : over && typeof over === 'object' ? Object.entries(over) : [];
      return items.map(([i, x]) => {
        const inner = new Map(env);
        if (n.i) inner.set(n.i, i);
        inner.set(n.x, x);
        return evalNode(n.body, inner);
      });
    }
    case 'if': {
      for (const [c, body] of n.branches) if (truthy(value(evalExpr(c, env)))) return evalNode(body, env);
      return n.otherwise ? evalNode(n.otherwise, env) : null;
    }
  }
}

export interface Template {
  render(vars: Record<string, unknown>): unknown;
}

/** A text template (a transform's `url`, query parameters and headers): the text with each
 * `{{ expression }}` replaced by its value (a string as it is, anything else as JSON). */
export function compileTextTemplate(src: string): { render(vars: Record<string, unknown>): string } {
  const parts: (string | Expr)[] = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    if (open < 0) {
      parts.push(src.slice(i));
      break;
    }
    if (open > i) parts.push(src.slice(i, open));
    const close = src.indexOf('}}', open + 2);
    if (close < 0) throw new KritiError(`unterminated "{{" at position ${open} of the template`);
    parts.push(parseExpr(src.slice(open + 2, close).trim()));
    i = close + 2;
  }
  return {
    render: (vars) => {
      const env = new Map(Object.entries(vars));
      return parts.map((p) => (typeof p === 'string' ? p : ((v) => (typeof v === 'string' ? v : JSON.stringify(v)))(value(evalExpr(p, env))))).join('');
    },
  };
}

/** Parses a template; throws KritiError. */
export function compileTemplate(src: string): Template {
  const p = new Parser(src);
  const root = p.value();
  p.ws();
  if (p.i !== src.length) p.fail('unexpected text after the template');
  return { render: (vars) => evalNode(root, new Map(Object.entries(vars))) };
}
