/**
 * Reading YAML (and JSON, which is YAML) files of a Hasura CLI project with `!include`, keeping
 * where every value came from, so that an error of the engine (a JSON path into the document it
 * was given) can name the file and line that caused it.
 *
 * Note [Two spellings of !include]
 * The Hasura CLI writes an include as a quoted string, `tables: "!include default/tables/tables.yaml"`
 * (its YAML library sees a plain string and the CLI resolves it), while hand-written projects also
 * use the tag, `tables: !include default/tables/tables.yaml`. Both are read; the quoted string is
 * written, as the Hasura CLI writes it, so that an exported tree is one the Hasura CLI reads too.
 * The path is relative to the directory of the file that includes it.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { LineCounter, Scalar, YAMLMap, YAMLSeq, isAlias, isMap, isScalar, isSeq, parseDocument, stringify, type Node } from 'yaml';

/** Where a value of the document was read: a file (relative to the project) and a 1-based line. */
export interface Origin {
  file: string;
  line: number;
}

/** Origins of the objects and arrays of a loaded document, and of their members. */
export class Origins {
  private readonly nodes = new WeakMap<object, Origin>();
  private readonly members = new WeakMap<object, Map<string, Origin>>();

  set(value: object, at: Origin): void {
    this.nodes.set(value, at);
  }
  setMember(parent: object, key: string | number, at: Origin): void {
    let m = this.members.get(parent);
    if (!m) this.members.set(parent, (m = new Map()));
    m.set(String(key), at);
  }
  /** Gives `to` (a rewritten copy of `from`) the origins of `from`. */
  copy(from: object, to: object): void {
    const at = this.nodes.get(from);
    if (at) this.nodes.set(to, at);
    const m = this.members.get(from);
    if (m) this.members.set(to, m);
  }
  of(value: unknown): Origin | undefined {
    return value !== null && typeof value === 'object' ? this.nodes.get(value) : undefined;
  }

  /** The origin of the deepest value on a JSON path (`$.sources[0].tables[2].table`) that has one. */
  locate(root: unknown, path: readonly (string | number)[]): Origin | undefined {
    let best = this.of(root);
    let cur: unknown = root;
    for (const key of path) {
      if (cur === null || typeof cur !== 'object') break;
      const member = this.members.get(cur)?.get(String(key));
      if (member) best = member;
      cur = (cur as Record<string, unknown>)[key as string];
      // The key's line names a member best; the value's own origin wins when it was included
      // from another file.
      const own = this.of(cur);
      if (own && (!member || own.file !== member.file)) best = own;
    }
    return best;
  }
}

/** An error in a project file, with where it is. */
export class ProjectError extends Error {
  constructor(message: string, readonly at?: Origin) {
    super(at ? `${at.file}:${at.line}: ${message}` : message);
  }
}

const INCLUDE = /^!include\s+(.+?)\s*$/;

/** Parses JSON paths as the engine reports them (`$.args.metadata.sources[0].tables`). */
export function parseJsonPath(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /\.([^.[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path))) out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : m[3]!));
  return out;
}

/**
 * Loads a YAML or JSON file, following `!include`s (Note [Two spellings of !include]). `root` is
 * the directory file names are reported relative to. Throws ProjectError naming the file and line.
 */
export function loadYamlFile(file: string, root: string, origins: Origins, seen: string[] = []): unknown {
  const shown = relative(root, file) || file;
  if (seen.includes(file)) throw new ProjectError(`!include cycle: ${[...seen, file].map((f) => relative(root, f)).join(' -> ')}`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ProjectError(`cannot read ${shown}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter: lines,
    prettyErrors: false,
    uniqueKeys: true,
    // `!include path` as a tag: kept as a string here and followed below.
    customTags: [{ tag: '!include', resolve: (s: string) => `!include ${s}`, identify: () => false }],
  });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const line = lines.linePos(e.pos[0]).line;
    throw new ProjectError(e.message.split('\n')[0]!, { file: shown, line });
  }
  const lineOf = (n: Node | null | undefined) => (n?.range ? lines.linePos(n.range[0]).line : 1);
  const convert = (n: unknown): unknown => {
    if (n === null || n === undefined) return null;
    if (isAlias(n)) return convert(n.resolve(doc));
    if (isScalar(n)) {
      const v = n.value;
      if (typeof v === 'string') {
        const inc = INCLUDE.exec(v);
        if (inc) return loadYamlFile(resolve(dirname(file), inc[1]!), root, origins, [...seen, file]);
      }
      return v;
    }
    if (isMap(n)) {
      const out: Record<string, unknown> = {};
      origins.set(out, { file: shown, line: lineOf(n as Node) });
      for (const pair of (n as YAMLMap).items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        out[key] = convert(pair.value);
        origins.setMember(out, key, { file: shown, line: lineOf(pair.key as Node) });
      }
      return out;
    }
    if (isSeq(n)) {
      const out: unknown[] = [];
      origins.set(out, { file: shown, line: lineOf(n as Node) });
      (n as YAMLSeq).items.forEach((item, i) => {
        out.push(convert(item));
        origins.setMember(out, i, { file: shown, line: lineOf(item as Node) });
      });
      return out;
    }
    return n;
  };
  return convert(doc.contents);
}

/** An include as the Hasura CLI writes it (Note [Two spellings of !include]). */
export function include(path: string): Scalar {
  const s = new Scalar(`!include ${path}`);
  s.type = Scalar.QUOTE_DOUBLE;
  return s;
}

/** A document as YAML, as the Hasura CLI writes its files: two-space indents, sequences indented
 * under their key, no line folding, keys in the order the engine gave them. */
export function toYaml(value: unknown): string {
  return stringify(value, { indent: 2, indentSeq: true, lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false });
}
