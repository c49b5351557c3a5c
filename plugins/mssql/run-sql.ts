/**
 * `mssql_run_sql` (admin only), as Hasura has it: T-SQL run in the request's transaction on the
 * source, its last result set answered as `TuplesOk` rows, and what it did to the schema carried
 * into the metadata (Note [run_sql and the metadata] in plugins/postgres/admin/run-sql.ts: the same
 * framework call, `applySchemaChange`, over this kind's introspection).
 */
import * as v from '../../core/valibot.js';
import { SvcError } from '../../core/errors.js';
import type { OperationDef, OperationResult } from '../../core/plugin.js';
import { applySchemaChange, DatabaseToken, requireSource, SourceNameSchema, type Introspection, type KindBinding } from '../database/index.js';
import type { MssqlTransaction } from './connection.js';
import { classifyError } from './dialect.js';
import type { MssqlResult } from './driver.js';

const RunSqlArgs = v.object({
  sql: v.string(),
  source: SourceNameSchema,
  cascade: v.optional(v.boolean(), false),
  check_metadata_consistency: v.optional(v.boolean(), true),
});

/** T-SQL without its comments (`--`, nested `/* *\/`), string literals and quoted identifiers,
 * each replaced by a space: what is left are keywords and names. */
export function codeOnly(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
      out += ' ';
    } else if (c === '/' && next === '*') {
      let depth = 0;
      do {
        if (sql[i] === '/' && sql[i + 1] === '*') (depth++, (i += 2));
        else if (sql[i] === '*' && sql[i + 1] === '/') (depth--, (i += 2));
        else i++;
      } while (i < sql.length && depth > 0);
      out += ' ';
    } else if (c === "'" || c === '[' || c === '"') {
      const close = c === '[' ? ']' : c;
      i++;
      while (i < sql.length) {
        if (sql[i] === close && sql[i + 1] === close) i += 2;
        else if (sql[i] === close) break;
        else i++;
      }
      i++;
      out += ' ';
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Statements that may change what introspection reports (tables, columns, keys). */
const SCHEMA_CHANGE = /\b(create|alter|drop|sp_rename|exec|execute|truncate)\b/i;
/** Transaction control, which would end the request's transaction (its metadata change with it). */
const TRANSACTION_CONTROL = /\b(commit|rollback)\b|\bbegin\s+(tran|transaction|distributed)\b|\bsave\s+(tran|transaction)\b/i;

/** A value of a result set as Hasura's MSSQL run_sql gives it: numbers, strings and booleans as
 * JSON, dates as ISO text, binary as base64, NULL as null. */
function cell(x: unknown): unknown {
  if (x === null || x === undefined) return null;
  if (x instanceof Date) return x.toISOString();
  if (Buffer.isBuffer(x)) return x.toString('base64');
  if (typeof x === 'bigint') return x.toString();
  return x;
}

export function formatResult(r: MssqlResult) {
  if (r.columns.length === 0) return { result_type: 'CommandOk', result: null };
  return { result_type: 'TuplesOk', result: [r.columns, ...r.rows.map((row) => row.map(cell))] };
}

/** SQL Server's error for run_sql, in the SPEC's shape: the dialect's code, the server's message
 * and error number. */
export function runSqlError(e: unknown, statement: string): SvcError {
  if (e instanceof SvcError) return e;
  const message = (e as Error)?.message ?? String(e);
  const c = classifyError(e);
  return new SvcError(c?.code ?? 'unexpected', (c?.prefix ?? '') + message, { path: '$.args', internal: { statement, ...(c?.internal as object | undefined) } });
}

export function runSqlOperations(bind: KindBinding): OperationDef[] {
  const op: OperationDef<v.InferOutput<typeof RunSqlArgs>> = {
    type: bind.name('run_sql'),
    args: RunSqlArgs,
    mutates: true,
    run: async (a, ctx) => {
      const db = ctx.kernel.use(DatabaseToken);
      const source = requireSource(ctx.metadata, a.source);
      // A source of another kind: Note [Operations of a kind] in plugins/database.
      const code = codeOnly(a.sql);
      if (TRANSACTION_CONTROL.test(code)) {
        throw new SvcError('not-supported', `transaction control (BEGIN TRANSACTION, COMMIT, ROLLBACK, SAVE TRANSACTION) is not supported by ${bind.name('run_sql')}: its SQL runs in the request's transaction, all or nothing`, {
          path: '$.args',
        });
      }
      const ddl = SCHEMA_CHANGE.test(code);
      let tx: MssqlTransaction;
      try {
        tx = (await db.transaction(ctx, a.source)) as MssqlTransaction;
      } catch (e) {
        throw runSqlError(e, a.sql);
      }
      const before: Introspection | undefined = ddl && a.check_metadata_consistency ? await db.introspection(ctx, a.source) : undefined;
      let result: MssqlResult;
      try {
        result = await tx.raw(a.sql);
      } catch (e) {
        throw runSqlError(e, a.sql);
      }
      const response = formatResult(result);
      if (!ddl) return { response };
      db.invalidate(ctx.uow, a.source);
      const out: OperationResult = { response, reload: { sources: [a.source] } };
      if (!before) return { ...out, inconsistencies: 'allow' };
      const after = await db.introspection(ctx, a.source);
      return { ...out, metadata: applySchemaChange(db, ctx.metadata, a.source, before, after, a.cascade) };
    },
  };
  return [op];
}
