/**
 * run_sql (legacy endpoint, admin only): runs SQL in the request's transaction on the source, so
 * that it lands together with the metadata it affects (see Note [Unit of work] in core/uow.ts),
 * then re-introspects the source when the SQL may have changed its schema.
 */
import * as v from 'valibot';
import { SvcError } from '../../core/errors.js';
import type { OperationDef } from '../../core/plugin.js';
import { DatabaseToken } from '../database/service.js';
import type { KindBinding } from '../database/types.js';
import type { PgExecutor, PgRawResult } from './connection.js';
import { splitStatements } from './split.js';

const RunSqlArgs = v.object({
  sql: v.string(),
  source: v.optional(v.pipe(v.string(), v.minLength(1, 'empty string not allowed')), 'default'),
  cascade: v.optional(v.boolean(), false),
  check_metadata_consistency: v.optional(v.boolean(), true),
  read_only: v.optional(v.boolean(), false),
});
export type RunSqlArgs = v.InferOutput<typeof RunSqlArgs>;

/** Statements that cannot change the schema (a heuristic: a function call still might). */
const DATA_ONLY = /^(select|insert|update|delete|with|values|table|show|explain|set|reset|begin|commit|rollback|savepoint|release|copy|listen|notify|lock|fetch|declare|close|prepare|execute|deallocate|discard|analyze|vacuum|grant|revoke)\b/i;

export function mayChangeSchema(statements: string[]): boolean {
  return statements.some((s) => !DATA_ONLY.test(s.replace(/^(\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)*/, '')));
}

export function pgError(e: unknown, statement: string): SvcError {
  const pe = e as { message?: string; code?: string; hint?: string; detail?: string; severity?: string };
  if (pe && typeof pe.code === 'string') {
    return new SvcError('postgres-error', `query execution failed: ${pe.message}`, {
      path: '$',
      internal: {
        statement,
        prepared: false,
        arguments: [],
        error: { exec_status: 'FatalError', message: pe.message, status_code: pe.code, hint: pe.hint ?? null, description: pe.detail ?? null },
      },
    });
  }
  return new SvcError('postgres-error', `connection error: ${(e as Error)?.message ?? String(e)}`, { path: '$', status: 500 });
}

export function formatResult(r: PgRawResult | undefined) {
  if (!r || !r.columns) return { result_type: 'CommandOk', result: null };
  return { result_type: 'TuplesOk', result: [r.columns, ...r.rows] };
}

export async function runStatements(exec: PgExecutor, statements: string[]): Promise<PgRawResult | undefined> {
  let last: PgRawResult | undefined;
  for (const st of statements) {
    try {
      last = await exec.simple(st);
    } catch (e) {
      throw pgError(e, st);
    }
  }
  return last;
}

export function runSqlOperations(bind: KindBinding): OperationDef[] {
  const legacy = bind.legacy('run_sql');
  const op: OperationDef<RunSqlArgs> = {
    type: bind.name('run_sql'),
    legacy,
    args: RunSqlArgs,
    mutates: true,
    run: async (a, ctx) => {
      const db = ctx.kernel.use(DatabaseToken);
      const statements = splitStatements(a.sql);
      const source = db.connection(
        (ctx.metadata.sources as { name: string }[] | undefined)?.find((s) => s.name === a.source) as never ??
          (() => {
            throw new SvcError('not-exists', `source with name "${a.source}" does not exist`, { path: '$.args.source' });
          })(),
      );
      if (a.read_only) {
        const tx = (await source.transaction({ readOnly: true })) as unknown as PgExecutor & { rollback(): Promise<void> };
        try {
          return { response: formatResult(await runStatements(tx, statements)) };
        } finally {
          await tx.rollback();
        }
      }
      const tx = (await db.transaction(ctx, a.source)) as PgExecutor;
      const last = await runStatements(tx, statements);
      if (!mayChangeSchema(statements)) return { response: formatResult(last) };
      db.invalidate(ctx.uow, a.source);
      return {
        response: formatResult(last),
        reload: { sources: [a.source] },
        inconsistencies: a.check_metadata_consistency ? 'new' : 'allow',
      };
    },
  };
  return [op];
}
