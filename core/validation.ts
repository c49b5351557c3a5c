/**
 * valibot helpers shared by every plugin, and the conversion of valibot issues into the SPEC's
 * error shape: `{code: 'parse-failed', path: '$.args.name', error: '...'}` with Hasura's wording.
 */
import * as v from './valibot.js';
import { SvcError } from './errors.js';

/** Text that must not be empty (Hasura's NonEmptyText). */
export const nonEmptyText = v.pipe(v.string(), v.minLength(1, 'empty string not allowed'));

/** A GraphQL name (the spec's Name). */
export const isGraphQLName = (s: string): boolean => /^[_a-zA-Z][_a-zA-Z0-9]*$/.test(s);

/** A text that must be a GraphQL name (Hasura's `G.Name` parser and its message). */
export const GraphQLNameSchema = v.pipe(
  v.string(),
  v.check(isGraphQLName, (issue) => `${String(issue.input)} is not valid GraphQL name`),
);

/** Limits on names and comments (Note [Request limits] in lib/http/body.ts): far beyond any real
 * name, they keep megabyte-long roles or comments out of the catalog, the schema and the logs. */
export const MAX_NAME_LENGTH = 1024;
export const MAX_COMMENT_LENGTH = 65536;
const maxLength = (n: number) => v.maxLength<string, number, (issue: v.MaxLengthIssue<string, number>) => string>(n, (issue) => `${issue.input.length} characters is longer than the limit of ${n} characters`);

/** The name of a metadata object (role, source, relationship, computed field, ...). */
export const nameText = v.pipe(nonEmptyText, maxLength(MAX_NAME_LENGTH));

/** A comment (optional everywhere it appears). */
export const commentText = v.pipe(v.string(), maxLength(MAX_COMMENT_LENGTH));
export const optionalComment = v.optional(v.nullable(commentText));

/** A text of bounded length that may be empty (names the database itself checks). */
export const boundedText = v.pipe(v.string(), maxLength(MAX_NAME_LENGTH));

/** A JSON object (not array, not null). */
export const jsonObject = v.record(v.string(), v.unknown());

const jsonTypeName = (x: unknown): string =>
  x === null ? 'Null' : Array.isArray(x) ? 'Array' : typeof x === 'string' ? 'String' : typeof x === 'number' ? 'Number' : typeof x === 'boolean' ? 'Boolean' : typeof x === 'object' ? 'Object' : 'Undefined';

const expectedName = (expected: string | null): string => {
  switch (expected) {
    case 'string':
      return 'String';
    case 'number':
      return 'Number';
    case 'boolean':
      return 'Boolean';
    case 'Object':
    case 'object':
      return 'Object';
    case 'Array':
    case 'array':
      return 'Array';
    default:
      return expected ?? 'a valid value';
  }
};

function pathOf(base: string, issue: v.BaseIssue<unknown>): string {
  let p = base;
  for (const item of issue.path ?? []) {
    const key = (item as { key?: unknown }).key;
    if (typeof key === 'number') p += `[${key}]`;
    else if (typeof key === 'string') p += /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return p;
}

/** Turns the first valibot issue into a SvcError rooted at `base` ('$.args' or '$'). */
export function issueToError(issues: readonly v.BaseIssue<unknown>[], base: string): SvcError {
  let issue = issues[0]!;
  // A union without a message of its own: report the branch issue that got furthest.
  // (Branch issues carry paths relative to the union.) When every branch failed at the union's
  // own value, report the union itself: "expected (boolean | Array)".
  while (issue.type === 'union' && issue.message.startsWith('Invalid ') && issue.issues?.length) {
    const deepest = [...issue.issues].sort((a, b) => (b.path?.length ?? 0) - (a.path?.length ?? 0))[0]!;
    if (!deepest.path?.length) break;
    issue = { ...deepest, path: [...(issue.path ?? []), ...deepest.path] } as v.BaseIssue<unknown>;
  }
  const path = issue.path ?? [];
  const last = path[path.length - 1] as { key?: unknown; value?: unknown } | undefined;
  if (issue.kind === 'schema' && last && issue.received === 'undefined' && typeof last.key === 'string' && issue.input === undefined) {
    const parentPath = pathOf(base, { ...issue, path: path.slice(0, -1) } as v.BaseIssue<unknown>);
    return new SvcError('parse-failed', `key "${last.key}" not found`, { path: parentPath });
  }
  const p = pathOf(base, issue);
  const custom = issue.message && !issue.message.startsWith('Invalid ');
  if (custom) return new SvcError('parse-failed', issue.message, { path: p });
  if (issue.kind === 'schema') {
    const exp = expectedName(issue.expected);
    return new SvcError('parse-failed', `parsing ${exp} failed, expected ${exp}, but encountered ${jsonTypeName(issue.input)}`, { path: p });
  }
  return new SvcError('parse-failed', issue.message, { path: p });
}

/** Parses `input` with `schema`, throwing a SPEC-shaped error rooted at `base`. */
export function parseWith<T>(schema: v.GenericSchema<unknown, T>, input: unknown, base: string): T {
  let r: v.SafeParseResult<v.GenericSchema<unknown, T>>;
  try {
    r = v.safeParse(schema, input);
  } catch (e) {
    // A transformation that parses with `v.parse` throws instead of reporting: still a 400.
    if (e instanceof v.ValiError) throw issueToError(e.issues, base);
    throw e;
  }
  if (!r.success) throw issueToError(r.issues, base);
  return r.output;
}

export { jsonTypeName };
