/**
 * The fuzz suite's properties, checked request by request against a running server (in-process
 * through the hono app, or over HTTP): no 5xx, an answer within a bound, a refused request
 * leaves the metadata exactly as it was (export before == export after, resource_version
 * included), and a refusal has the SPEC's error shape. The server's health is checked by the
 * callers at the end.
 */
import type { FuzzRequest } from './generators.js';
import { wireBody } from './generators.js';

export interface Reply {
  status: number;
  text: string;
}
export type Send = (method: string, path: string, body: string | Uint8Array | undefined, headers: Record<string, string>) => Promise<Reply>;

export interface Probe {
  /** Sends `r` and checks the properties; returns the violations (empty when all hold). */
  check(r: FuzzRequest): Promise<string[]>;
  /** Requests sent, by status and error code (`400 parse-failed`, `200`, ...). */
  histogram: Map<string, number>;
  sent: number;
  /** Forget the remembered export (after the caller changed the metadata itself). */
  resync(): void;
}

/** Above this an answer counts as a hang (generous: a bulk of valid operations builds the schema). */
export const ANSWER_BOUND_MS = 15_000;

const METADATA_PATHS = new Set(['/v1/metadata', '/v1/query']);

/**
 * `snapshot` returns the metadata and its resource_version as text; by default an
 * export_metadata request (an in-process caller can read the kernel's committed state, which is
 * what export_metadata answers, at a fraction of the cost).
 */
export function createProbe(send: Send, opts: { adminHeaders?: Record<string, string>; snapshot?: () => Promise<string> | string } = {}): Probe {
  const adminHeaders = opts.adminHeaders ?? {};
  const exportNow = opts.snapshot ? async () => opts.snapshot!() : async (): Promise<string> => {
    const r = await send('POST', '/v1/metadata', JSON.stringify({ type: 'export_metadata', version: 2, args: {} }), { 'content-type': 'application/json', ...adminHeaders });
    if (r.status !== 200) throw new Error(`export_metadata failed: ${r.status} ${r.text.slice(0, 300)}`);
    return r.text;
  };
  let baseline: string | undefined;
  const histogram = new Map<string, number>();
  const probe: Probe = {
    histogram,
    sent: 0,
    resync: () => {
      baseline = undefined;
    },
    async check(r) {
      baseline ??= await exportNow();
      const problems: string[] = [];
      const label = () => `${r.method} ${r.path} ${describe(r)}`;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ANSWER_BOUND_MS)));
      const headers = { ...(r.body && 'json' in r.body ? { 'content-type': 'application/json' } : {}), ...r.headers };
      const reply = await Promise.race([send(r.method, r.path, wireBody(r), headers), timeout]);
      clearTimeout(timer);
      probe.sent++;
      if (reply === 'timeout') {
        count(histogram, 'no answer');
        return [`no answer within ${ANSWER_BOUND_MS} ms: ${label()}`];
      }
      let body: unknown;
      try {
        body = JSON.parse(reply.text);
      } catch {
        /* pg_dump answers text */
      }
      const code = body && typeof body === 'object' && !Array.isArray(body) ? ((body as { code?: unknown }).code ?? firstGraphQLCode(body)) : undefined;
      count(histogram, `${reply.status}${typeof code === "string" ? ` ${code}` : ""}`);
      if (process.env.SVC_FUZZ_DEBUG && reply.status === 400) count(histogram, `  ${r.path} ${JSON.stringify((r.body as any)?.json?.type)} ${reply.text.slice(0, 90)}`);
      // The one 5xx the SPEC lists: "postgres-error (status 500): connection error", which a
      // request gets when it loses its database connection (run_sql can terminate its own backend).
      const connectionError = reply.status === 500 && code === 'postgres-error' && /^connection error/.test(String((body as { error?: unknown }).error));
      if (reply.status >= 500 && !connectionError) problems.push(`${reply.status}: ${label()} -> ${reply.text.slice(0, 300)}`);
      if (reply.status >= 400 && reply.status !== 404) {
        const b = body as { error?: unknown; path?: unknown } | undefined;
        if (!b || typeof b.error !== 'string' || (reply.status !== 401 && typeof b.path !== 'string')) {
          problems.push(`${reply.status} without the SPEC's error shape: ${label()} -> ${reply.text.slice(0, 300)}`);
        }
      }
      if (METADATA_PATHS.has(r.path)) {
        const after = await exportNow();
        if (reply.status !== 200 && after !== baseline) {
          problems.push(`refused with ${reply.status} but the metadata changed: ${label()} -> ${reply.text.slice(0, 300)}`);
        }
        const dryRun = body !== null && typeof body === 'object' && (body as { dry_run?: unknown }).dry_run === true;
        if (dryRun && after !== baseline) problems.push(`a dry run changed the metadata: ${label()} -> ${reply.text.slice(0, 300)}`);
        baseline = after;
      }
      return problems;
    },
  };
  return probe;
}

function firstGraphQLCode(body: unknown): unknown {
  const errors = (body as { errors?: { extensions?: { code?: unknown } }[] }).errors;
  return Array.isArray(errors) ? errors[0]?.extensions?.code : undefined;
}

function count(h: Map<string, number>, key: string) {
  h.set(key, (h.get(key) ?? 0) + 1);
}

/** A short, printable description of a request (bodies can be megabytes). */
export function describe(r: FuzzRequest): string {
  const b = wireBody(r);
  const text = b === undefined ? '' : typeof b === 'string' ? b : `bytes ${Buffer.from(b).toString('hex')}`;
  return JSON.stringify(r.headers) + ' ' + (text.length > 400 ? `${text.slice(0, 400)}... (${text.length} chars)` : text);
}

/** The histogram as sorted lines. */
export function formatHistogram(h: Map<string, number>): string {
  return [...h.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${String(n).padStart(8)}  ${k}`)
    .join('\n');
}
