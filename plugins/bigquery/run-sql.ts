/**
 * `bigquery_run_sql` (admin only), as Hasura has it: a GoogleSQL script run on the source, its
 * result as `TuplesOk` rows with a header (or `CommandOk`). BigQuery has no transaction the
 * request could take back, so SQL that may change the schema is followed by a reload of the
 * source: the build then reports what it broke as inconsistent objects, as a reload would.
 */
import * as v from '../../core/valibot.js';
import { SvcError } from '../../core/errors.js';
import type { OperationDef } from '../../core/plugin.js';
import { DatabaseToken, requireSource, SourceNameSchema, type KindBinding } from '../database/index.js';
import type { BigQueryConnection } from './connection.js';
import { classifyError } from './dialect.js';
import { plainValue } from './driver.js';

const RunSqlArgs = v.object({ sql: v.string(), source: SourceNameSchema });
const SCHEMA_CHANGE = /\b(create|alter|drop|truncate)\b/i;

export function runSqlOperations(bind: KindBinding): OperationDef[] {
  const op: OperationDef<v.InferOutput<typeof RunSqlArgs>> = {
    type: bind.name('run_sql'),
    args: RunSqlArgs,
    mutates: true,
    run: async (a, ctx) => {
      const db = ctx.kernel.use(DatabaseToken);
      const source = requireSource(ctx.metadata, a.source);
      // A source of another kind: Note [Operations of a kind] in plugins/database.
      const conn = db.connection(source) as BigQueryConnection;
      let r;
      try {
        r = await conn.raw(a.sql);
      } catch (e) {
        if (e instanceof SvcError) throw e;
        const c = classifyError(e);
        throw new SvcError(c?.code ?? 'unexpected', (e as Error)?.message ?? String(e), { path: '$.args', internal: { statement: a.sql, ...(c?.internal as object | undefined) } });
      }
      const response = r.columns.length ? { result_type: 'TuplesOk', result: [r.columns, ...r.rows.map((row) => row.map(plainValue))] } : { result_type: 'CommandOk', result: null };
      if (!SCHEMA_CHANGE.test(a.sql)) return { response };
      db.invalidate(ctx.uow, a.source);
      return { response, reload: { sources: [a.source] }, inconsistencies: 'allow' };
    },
  };
  return [op];
}
