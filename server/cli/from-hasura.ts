/**
 * `--from-hasura`: a project written for Hasura, read as this engine's. Hasura's names are
 * renamed wherever they occur in the document, keys and string values alike:
 *
 *   X-Hasura-*         session variables and headers (permissions' filters and checks, presets,
 *                      remote-schema presets, headers, transforms' templates) -> X-Svc-*
 *   HASURA_GRAPHQL_*   environment references (`from_env`, `value_from_env`, `{{...}}`) -> SVC_GRAPHQL_*
 *   hasura_fields      of remote relationships -> svc_fields
 *
 * The case of each is kept (`x-hasura-user-id` -> `x-svc-user-id`, `X-HASURA-ROLE` -> `X-SVC-ROLE`).
 * Every rename is counted and the first place of each is named (file and line), so the user sees
 * what changed.
 */
import type { Origins } from './yaml-files.js';

export interface Rename {
  from: string;
  to: string;
  count: number;
  /** `file:line` of the first occurrence, when known. */
  first?: string;
}

const SESSION = /x-hasura-[\w-]*/gi;
const ENV = /HASURA_GRAPHQL_\w*/g;

const svcPrefix = (m: string) => (m.startsWith('X-HASURA-') ? 'X-SVC-' : m.startsWith('x-hasura-') ? 'x-svc-' : m[0] === 'X' ? 'X-Svc-' : 'x-svc-');

/** The text with Hasura's names renamed, and each name renamed (a variable or environment name,
 * not the whole text: a remote schema's SDL may hold one in a @preset). */
function renameText(s: string): [string, [string, string][]] {
  const seen: [string, string][] = [];
  const out = s
    .replace(SESSION, (m) => {
      const to = svcPrefix(m) + m.slice('x-hasura-'.length);
      seen.push([m, to]);
      return to;
    })
    .replace(ENV, (m) => {
      const to = `SVC_GRAPHQL_${m.slice('HASURA_GRAPHQL_'.length)}`;
      seen.push([m, to]);
      return to;
    });
  return [out, seen];
}

/** Renames Hasura's names in `doc` (a new document is returned) and reports what was renamed. */
export function fromHasura(doc: unknown, origins?: Origins): { doc: unknown; renames: Rename[] } {
  const found = new Map<string, Rename>();
  const note = (from: string, to: string, parent: object | undefined, key: string | number | undefined) => {
    const k = `${from}\0${to}`;
    let r = found.get(k);
    if (!r) {
      const at = parent && key !== undefined ? origins?.locate(parent, [key]) : undefined;
      found.set(k, (r = { from, to, count: 0, ...(at ? { first: `${at.file}:${at.line}` } : {}) }));
    }
    r.count++;
  };
  const walk = (v: unknown, parent?: object, key?: string | number): unknown => {
    if (typeof v === 'string') {
      const [to, names] = renameText(v);
      for (const [a, b] of names) note(a, b, parent, key);
      return to;
    }
    if (Array.isArray(v)) {
      const out = v.map((x, i) => walk(x, v, i));
      origins?.copy(v, out);
      return out;
    }
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        let nk = k;
        if (k === 'hasura_fields') {
          nk = 'svc_fields';
          note(k, nk, v, k);
        } else {
          const [to, names] = renameText(k);
          for (const [a, b] of names) note(a, b, v, k);
          nk = to;
        }
        out[nk] = walk(x, v, k);
      }
      origins?.copy(v, out);
      return out;
    }
    return v;
  };
  const out = walk(doc);
  return { doc: out, renames: [...found.values()] };
}

/** The renames as lines for the output. */
export function describeRenames(renames: Rename[]): string[] {
  if (!renames.length) return ['--from-hasura: nothing to rename'];
  const total = renames.reduce((n, r) => n + r.count, 0);
  return [
    `--from-hasura: renamed ${total} occurrence(s) of Hasura names:`,
    ...renames.map((r) => `  ${r.from} -> ${r.to}${r.count > 1 ? ` (${r.count} times)` : ''}${r.first ? `  [${r.first}]` : ''}`),
  ];
}

/**
 * The SQL of migrations and seeds with --from-hasura: Hasura gives SQL the session as the setting
 * `hasura.user` (`current_setting('hasura.user')`), a JSON object whose keys are `x-hasura-*`; this
 * engine names it `svc.user`, with `x-svc-*` keys. Both are renamed (nothing else in SQL is).
 */
export function fromHasuraSql(sql: string): { sql: string; renames: [string, string][] } {
  const renames: [string, string][] = [];
  const out = sql
    .replace(/(['"])hasura\.user\1/g, (m, q: string) => {
      renames.push([m, `${q}svc.user${q}`]);
      return `${q}svc.user${q}`;
    })
    .replace(SESSION, (m) => {
      const to = svcPrefix(m) + m.slice('x-hasura-'.length);
      renames.push([m, to]);
      return to;
    });
  return { sql: out, renames };
}
