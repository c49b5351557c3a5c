/**
 * The connection boundary of the BigQuery kind (Note [The BigQuery boundary]), and that boundary
 * implemented over Google's client, `@google-cloud/bigquery`.
 */
import type { BigQuery, Job } from '@google-cloud/bigquery';
import type { CancelSignal } from '../../core/plugin.js';

/*
 * Note [The BigQuery boundary]
 * Everything the kind asks of BigQuery goes through `BigQueryClient`: a GoogleSQL query with
 * named STRING parameters (@p1, @p2, ...; the statement casts each to its column's type, as the
 * other kinds cast their text parameters), answered as column names and rows of values, and a
 * dry run (the bytes a query would read: the kind's explain). BigQuery has no transactions the
 * kind uses: it is read-only, as in Hasura. That is also where the tests put their stand-in
 * (test-support/stand-in.ts), which answers the INFORMATION_SCHEMA queries with fixture rows.
 */

export interface BigQueryResult {
  columns: string[];
  rows: unknown[][];
}

export interface BigQueryClient {
  query(sql: string, params: readonly (string | null)[], signal?: CancelSignal): Promise<BigQueryResult>;
  /** A dry run: what BigQuery says of the query without running it. */
  dryRun(sql: string, params: readonly (string | null)[]): Promise<{ totalBytesProcessed: string; referencedTables: string[] }>;
  close(): Promise<void>;
}

/** What the kind hands the driver: the service account's credentials, the project, where jobs run. */
export interface BigQueryClientConfig {
  source: string;
  projectId: string;
  credentials: { client_email: string; private_key: string; [key: string]: unknown };
  location?: string;
  /** Retries of a request that failed for rate limits or an intermittent error (Hasura's retry_limit). */
  retryLimit?: number;
}

export type BigQueryDriver = (config: BigQueryClientConfig) => BigQueryClient;

/** `@google-cloud/bigquery` is loaded when a source first runs a query. */
let loaded: Promise<typeof import('@google-cloud/bigquery')> | undefined;
const client = () => (loaded ??= import('@google-cloud/bigquery'));

/** Named STRING parameters: BigQuery needs the type of a NULL one. */
function parameters(params: readonly (string | null)[]) {
  const values: Record<string, string | null> = {};
  const types: Record<string, string> = {};
  params.forEach((p, i) => {
    values[`p${i + 1}`] = p;
    types[`p${i + 1}`] = 'STRING';
  });
  return params.length ? { params: values, types } : {};
}

/** A value of a run_sql row as JSON: the client's wrappers (BigQueryDate, BigQueryTimestamp,
 * Big numbers) as their text, bytes as base64. */
export function plainValue(x: unknown): unknown {
  if (x === null || x === undefined) return null;
  if (Buffer.isBuffer(x)) return x.toString('base64');
  if (Array.isArray(x)) return x.map(plainValue);
  if (typeof x === 'object') {
    const o = x as { value?: unknown; toFixed?: unknown; constructor?: { name?: string } };
    if (typeof o.value === 'string' && Object.keys(o).length === 1) return o.value;
    if (typeof o.toFixed === 'function' && o.constructor?.name === 'Big') return String(x);
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plainValue(v)]));
  }
  return x;
}

/** What readAllPages needs of a query job: Google's `Job.getQueryResults` without auto-pagination
 * answers `[rows, nextQuery, response]`, `nextQuery.pageToken` set while more pages follow. */
export interface PagedJob {
  getQueryResults(options: Record<string, unknown>): Promise<unknown[]>;
}

/** The most rows one statement may answer: a guard against an answer that would exhaust memory
 * (a GraphQL answer is far smaller; `bigquery_run_sql` should page with LIMIT beyond it). */
export const MAX_ROWS = 1_000_000;

/**
 * Every page of a job's result, in order. BigQuery answers at most about 10 MB per page, so a
 * run_sql over a larger result read only the first page would silently lose rows.
 */
export async function readAllPages(job: PagedJob, signal?: CancelSignal): Promise<BigQueryResult> {
  let options: Record<string, unknown> = { autoPaginate: false };
  let columns: string[] | undefined;
  const rows: unknown[][] = [];
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    const res = await job.getQueryResults(options);
    const page = (res[0] ?? []) as Record<string, unknown>[];
    if (!columns) {
      const fields = ((res[2] as { schema?: { fields?: { name?: string }[] } } | undefined)?.schema?.fields ?? []).map((f) => String(f.name));
      columns = fields.length ? fields : Object.keys(page[0] ?? {});
    }
    for (const r of page) rows.push(columns.map((k) => r[k]));
    if (rows.length > MAX_ROWS) throw new Error(`the statement answered more than ${MAX_ROWS} rows; page it with LIMIT and OFFSET`);
    const next = res[1] as { pageToken?: string } | null | undefined;
    if (!next?.pageToken) return { columns, rows };
    options = { ...next, autoPaginate: false };
  }
}

/** The boundary over Google's client. */
export const googleDriver: BigQueryDriver = (c) => {
  let made: Promise<BigQuery> | undefined;
  const bq = () =>
    (made ??= client().then(
      ({ BigQuery: Client }) =>
        new Client({
          projectId: c.projectId,
          credentials: c.credentials,
          ...(c.location ? { location: c.location } : {}),
          retryOptions: { autoRetry: true, maxRetries: c.retryLimit ?? 3 },
          userAgent: `svc-source-${c.source}`,
        }),
    ));
  return {
    async query(sql, params, signal) {
      if (signal?.aborted) throw signal.reason;
      const [job] = (await (await bq()).createQueryJob({ query: sql, useLegacySql: false, ...parameters(params) })) as [Job, unknown];
      const cancel = () => void job.cancel().catch(() => {});
      signal?.addEventListener('abort', cancel, { once: true });
      try {
        return await readAllPages(job, signal);
      } finally {
        signal?.removeEventListener('abort', cancel);
      }
    },
    async dryRun(sql, params) {
      const [job] = (await (await bq()).createQueryJob({ query: sql, useLegacySql: false, dryRun: true, ...parameters(params) })) as [Job, unknown];
      const stats = (job.metadata as { statistics?: { totalBytesProcessed?: string; query?: { referencedTables?: { projectId: string; datasetId: string; tableId: string }[] } } }).statistics;
      return {
        totalBytesProcessed: String(stats?.totalBytesProcessed ?? '0'),
        referencedTables: (stats?.query?.referencedTables ?? []).map((t) => `${t.projectId}.${t.datasetId}.${t.tableId}`),
      };
    },
    async close() {},
  };
};
