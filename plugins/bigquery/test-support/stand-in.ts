/**
 * A stand-in for BigQuery at the client boundary (Note [The BigQuery boundary] in ../driver.ts),
 * for tests only: BigQuery cannot be reached from the development machines. It answers the
 * kind's INFORMATION_SCHEMA queries per dataset with the fixture rows of ./fixtures/catalog.json
 * (hand-written, shaped after BigQuery's views: see ./fixtures/README.md), a dataset it does not
 * have as BigQuery does (404 notFound), a service account whose client_email starts with `bad`
 * as Google's token endpoint refuses it (invalid_grant), and any other query with what the test
 * registered (`answer`). Every query is recorded with its parameters. It does not run GoogleSQL:
 * what the compiled queries mean is pinned by ../compile.test.ts and checked against BigQuery
 * only by ../live.test.ts.
 */
import { readFileSync } from 'node:fs';
import type { BigQueryClientConfig, BigQueryDriver, BigQueryResult } from '../driver.js';
import { columnsSql, keysSql, parametersSql, routinesSql, tablesSql } from '../introspect.js';

/** Per dataset; `routines` and `parameters` absent: the dataset has none. */
export type Catalog = Record<string, Record<'tables' | 'columns' | 'keys', BigQueryResult> & Partial<Record<'routines' | 'parameters', BigQueryResult>>>;

const noRoutines: BigQueryResult = { columns: ['specific_name', 'routine_name', 'routine_type', 'data_type', 'ddl'], rows: [] };
const noParameters: BigQueryResult = { columns: ['specific_name', 'ordinal_position', 'parameter_name', 'data_type'], rows: [] };

export function fixtureCatalog(): Catalog {
  const { _comment, ...catalog } = JSON.parse(readFileSync(new URL('./fixtures/catalog.json', import.meta.url), 'utf8')) as Catalog & { _comment?: unknown };
  return catalog as Catalog;
}

type Answer = BigQueryResult | ((sql: string, params: readonly (string | null)[]) => BigQueryResult);

export interface BigQueryStandIn {
  driver: BigQueryDriver;
  catalog: Catalog;
  readonly configs: BigQueryClientConfig[];
  readonly queries: { sql: string; params: readonly (string | null)[] }[];
  answer(match: (sql: string) => boolean, result: Answer): void;
  /** Queries other than the INFORMATION_SCHEMA ones. */
  sent(): { sql: string; params: readonly (string | null)[] }[];
}

export const jsonAnswer = (json: unknown): BigQueryResult => ({ columns: ['json'], rows: [[typeof json === 'string' ? json : JSON.stringify(json)]] });

const apiError = (code: number, reason: string, message: string) => Object.assign(new Error(message), { code, errors: [{ reason, message }] });

export function bigqueryStandIn(catalog: Catalog = fixtureCatalog()): BigQueryStandIn {
  const configs: BigQueryClientConfig[] = [];
  const queries: { sql: string; params: readonly (string | null)[] }[] = [];
  const answers: { match: (sql: string) => boolean; result: Answer }[] = [];
  const introspection = (sql: string) => sql.includes('.INFORMATION_SCHEMA.');
  const self: BigQueryStandIn = {
    catalog,
    configs,
    queries,
    answer: (match, result) => void answers.unshift({ match, result }),
    sent: () => queries.filter((x) => !introspection(x.sql)),
    driver: (config) => {
      configs.push(config);
      const run = async (sql: string, params: readonly (string | null)[]): Promise<BigQueryResult> => {
        if (config.credentials.client_email.startsWith('bad')) throw new Error('invalid_grant: Invalid JWT Signature.');
        queries.push({ sql, params: [...params] });
        if (introspection(sql)) {
          const dataset = /^SELECT .*? FROM `([^`]+)`\.INFORMATION_SCHEMA\./.exec(sql)?.[1] ?? '';
          const d = self.catalog[dataset];
          if (!d) throw apiError(404, 'notFound', `Not found: Dataset ${config.projectId}:${dataset} was not found in location US`);
          if (sql === tablesSql(dataset)) return d.tables;
          if (sql === columnsSql(dataset)) return d.columns;
          if (sql === keysSql(dataset)) return d.keys;
          if (sql === routinesSql(dataset)) return d.routines ?? noRoutines;
          if (sql === parametersSql(dataset)) return d.parameters ?? noParameters;
        }
        if (sql === 'SELECT 1') return { columns: ['f0_'], rows: [[1]] };
        const a = answers.find((x) => x.match(sql));
        if (!a) throw apiError(400, 'invalidQuery', `the stand-in has no answer for: ${sql.slice(0, 120)}`);
        return typeof a.result === 'function' ? a.result(sql, params) : a.result;
      };
      return {
        query: (sql, params) => run(sql, params),
        dryRun: async (sql, params) => {
          queries.push({ sql: `-- dry run\n${sql}`, params: [...params] });
          return { totalBytesProcessed: '1024', referencedTables: [`${config.projectId}.shop.author`] };
        },
        close: async () => {},
      };
    },
  };
  return self;
}
