/**
 * A BigQuery source's connection (the contract's SourceConnection) over the boundary
 * (Note [The BigQuery boundary] in ./driver.ts): queries, introspection of the configured
 * datasets, a dry run for explain. No transactions: the kind is read-only.
 */
import { createPrivateKey } from 'node:crypto';
import { SvcError } from '../../core/errors.js';
import type { CancelSignal } from '../../core/plugin.js';
import type { Introspection, SourceConnection, SqlExecutor, SqlTransaction } from '../database/index.js';
import type { BigQueryClient, BigQueryClientConfig, BigQueryDriver, BigQueryResult } from './driver.js';
import { introspect } from './introspect.js';

type FromEnv = { from_env: string };

/** `configuration` of a BigQuery source as Hasura v2 takes it (SPEC "Source (database)"). */
export interface BigQueryConfiguration {
  service_account: string | Record<string, unknown> | FromEnv;
  project_id: string | FromEnv;
  datasets: string[] | string | FromEnv;
  global_select_limit?: number | string;
  retry_limit?: number | string;
  retry_base_delay?: number | string;
}

type Env = Readonly<Record<string, string | undefined>>;

const fromEnv = (x: unknown): x is FromEnv => typeof x === 'object' && x !== null && 'from_env' in x;

function envValue(name: string, env: Env): string {
  const val = env[name];
  if (val === undefined || val === '') throw new SvcError('invalid-configuration', `environment variable "${name}" not set`);
  return val;
}

/** What the configuration means, resolved from the environment, or a clear error (which makes
 * the source inconsistent). */
export function resolveConfiguration(name: string, c: BigQueryConfiguration, env: Env): { client: BigQueryClientConfig; datasets: string[] } {
  const text = (x: string | FromEnv) => (fromEnv(x) ? envValue(x.from_env, env) : x);
  let account: unknown = c.service_account;
  if (fromEnv(account)) account = envValue(account.from_env, env);
  if (typeof account === 'string') {
    try {
      account = JSON.parse(account);
    } catch {
      throw new SvcError('invalid-configuration', 'service_account is not a JSON object (the key file of a service account)');
    }
  }
  const sa = account as { client_email?: unknown; private_key?: unknown } | null;
  if (!sa || typeof sa !== 'object' || typeof sa.client_email !== 'string' || typeof sa.private_key !== 'string') {
    throw new SvcError('invalid-configuration', 'service_account must have "client_email" and "private_key" (the key file of a service account)');
  }
  try {
    createPrivateKey(sa.private_key);
  } catch {
    throw new SvcError('invalid-configuration', 'service_account.private_key is not a PEM private key');
  }
  const projectId = text(c.project_id).trim();
  if (!projectId) throw new SvcError('invalid-configuration', 'project_id is empty');
  const listed = fromEnv(c.datasets) ? envValue(c.datasets.from_env, env) : c.datasets;
  const datasets = (Array.isArray(listed) ? listed : listed.split(',')).map((d) => d.trim()).filter(Boolean);
  if (datasets.length === 0) throw new SvcError('invalid-configuration', 'datasets names no dataset');
  const retry = c.retry_limit === undefined ? undefined : Number(c.retry_limit);
  return {
    client: { source: name, projectId, credentials: sa as BigQueryClientConfig['credentials'], ...(retry !== undefined && Number.isSafeInteger(retry) ? { retryLimit: retry } : {}) },
    datasets,
  };
}

export const rowObjects = <T>(r: BigQueryResult): T[] => r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])) as T);
const texts = (params: readonly unknown[] = []): (string | null)[] => params.map((p) => (p === null || p === undefined ? null : typeof p === 'string' ? p : JSON.stringify(p)));

export class BigQueryConnection implements SourceConnection {
  private client: BigQueryClient | undefined;
  readonly executor: SqlExecutor;
  readonly datasets: readonly string[];
  private readonly config: BigQueryClientConfig;

  constructor(
    readonly name: string,
    configuration: BigQueryConfiguration,
    env: Env,
    private readonly driver: BigQueryDriver,
  ) {
    const r = resolveConfiguration(name, configuration, env);
    this.config = r.client;
    this.datasets = r.datasets;
    this.executor = { query: async <T>(text: string, params?: unknown[], opts?: { signal?: CancelSignal }) => rowObjects<T>(await this.raw(text, texts(params), opts?.signal)) };
  }

  private get(): BigQueryClient {
    return (this.client ??= this.driver(this.config));
  }

  raw(text: string, params: readonly (string | null)[] = [], signal?: CancelSignal): Promise<BigQueryResult> {
    return this.get().query(text, params, signal);
  }

  introspect(): Promise<Introspection> {
    return introspect(this.datasets, (sql) => this.raw(sql));
  }

  /** No transactions: a statement runs at once (the kind has no mutations; nothing asks for
   * atomicity across statements). */
  async transaction(): Promise<SqlTransaction> {
    return { query: this.executor.query, commit: async () => {}, rollback: async () => {} };
  }

  /** BigQuery's dry run: what the query would read (it is not run). */
  async explain(sql: string, params: readonly (string | null)[]): Promise<string[]> {
    const d = await this.get().dryRun(sql, params);
    return [`dry run: ${d.totalBytesProcessed} bytes would be processed`, ...d.referencedTables.map((t) => `reads ${t}`)];
  }

  async ping(): Promise<void> {
    await this.raw('SELECT 1');
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.close();
  }
}
