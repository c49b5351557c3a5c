/**
 * run_sql (legacy endpoint and `pg_run_sql`, admin only): runs SQL in the request's transaction on
 * the source, so that it lands together with the metadata it affects (Note [Unit of work] in
 * core/uow.ts), and carries what it did to the schema into the metadata (Note [run_sql and the
 * metadata]).
 */
import * as v from '../../../core/valibot.js';
import { randomBytes } from 'node:crypto';
import { SvcError } from '../../../core/errors.js';
import type { OperationDef, OperationResult } from '../../../core/plugin.js';
import {
  applySchemaChange,
  DatabaseToken,
  requireSource,
  SourceNameSchema,
  type Introspection,
  type KindBinding,
} from '../../database/index.js';
import type { PgConnection, PgExecutor, PgRawResult } from '../connection/connection.js';
import { leadingWords, splitStatements } from './split.js';

const RunSqlArgs = v.object({
  sql: v.string(),
  source: SourceNameSchema,
  cascade: v.optional(v.boolean(), false),
  check_metadata_consistency: v.optional(v.boolean(), true),
  read_only: v.optional(v.boolean(), false),
  /** Runs each statement on its own, outside any transaction (CREATE INDEX CONCURRENTLY, VACUUM). */
  no_transaction: v.optional(v.boolean(), false),
});
export type RunSqlArgs = v.InferOutput<typeof RunSqlArgs>;

/*
 * Note [run_sql and the metadata]
 * SQL that may change the schema (any statement but plain data statements) is diffed: the source
 * is introspected in the request's transaction before and after it runs. Unless
 * `check_metadata_consistency` is false (the metadata is then left as it is, and the build may
 * report inconsistent objects), the framework carries the difference into the draft metadata or
 * refuses it (Note [Schema changes] in plugins/database/metadata/schema-diff.ts). All of it fails
 * before anything is committed, so a failed run_sql leaves neither SQL nor metadata behind.
 */

/** Statements that cannot change the schema (a heuristic, like Hasura's: a function call still might). */
const DATA_ONLY =
  /^(select|insert|update|delete|merge|with|values|table|show|explain|set|reset|begin|start|commit|end|rollback|abort|savepoint|release|copy|listen|unlisten|notify|lock|fetch|move|declare|close|prepare|execute|deallocate|discard|analyze|vacuum|checkpoint|grant|revoke)\b/i;

export function mayChangeSchema(statements: string[]): boolean {
  return statements.some((s) => !DATA_ONLY.test(leadingWords(s, 1)[0] ?? ''));
}

/*
 * Note [What run_sql refuses]
 * Checked on every statement before any runs, so that a refused request did nothing:
 *   - COPY FROM STDIN / TO STDOUT (and psql's \copy, should it reach us): there is no client
 *     stream to copy through, and the connection would be left in COPY mode.
 *   - Transaction control (BEGIN, START TRANSACTION, COMMIT, END, ROLLBACK, ABORT, PREPARE
 *     TRANSACTION, COMMIT/ROLLBACK PREPARED), unless `no_transaction`: the SQL runs in the
 *     request's transaction, and a COMMIT there would commit what ran before it even though the
 *     request then fails (in a bulk, with the other operations' SQL), or let a read_only run_sql
 *     write after it. Savepoints are allowed: they stay inside the transaction. PostgreSQL itself
 *     refuses COMMIT in a DO block or a procedure called inside a transaction block.
 * A read_only run_sql also cannot write otherwise (Note [Reserved connections] in connection.ts):
 * alone, it runs in a read-only transaction of its own (with read-only the default for the
 * connection, should a COMMIT get past this), always rolled back; after SQL of the same request,
 * in a savepoint of that transaction, with a name the SQL cannot know, made read-only (which a
 * subtransaction cannot undo) and rolled back.
 */
const COPY_STREAM =
  'COPY FROM STDIN and COPY TO STDOUT are not supported by run_sql (no client stream to copy through): use COPY to or from a file on the database server, or INSERT';

/** The name of a transaction control statement, from its first words; savepoints are not. */
export function transactionControl(words: string[]): string | undefined {
  const [a, b, c] = words;
  switch (a) {
    case 'begin':
    case 'end':
    case 'abort':
      return a.toUpperCase();
    case 'start':
      return b === 'transaction' ? 'START TRANSACTION' : undefined;
    case 'commit':
      return b === 'prepared' ? 'COMMIT PREPARED' : 'COMMIT';
    case 'rollback':
      // ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name
      if (b === 'to' || ((b === 'work' || b === 'transaction') && c === 'to')) return undefined;
      return b === 'prepared' ? 'ROLLBACK PREPARED' : 'ROLLBACK';
    case 'prepare':
      return b === 'transaction' ? 'PREPARE TRANSACTION' : undefined;
  }
  return undefined;
}

/** Note [What run_sql refuses]. */
function refuseUnsupported(statements: string[], a: RunSqlArgs): void {
  const refuse = (message: string) => new SvcError('not-supported', message, { path: '$.args' });
  for (const st of statements) {
    const first = leadingWords(st, 3);
    if (first[0] === 'copy' || first[0]?.startsWith('\\')) {
      const words = leadingWords(st);
      const stream = words.some((w, i) => (w === 'from' && words[i + 1] === 'stdin') || (w === 'to' && words[i + 1] === 'stdout'));
      if (stream || first[0] !== 'copy') throw refuse(COPY_STREAM);
    }
    const control = transactionControl(first);
    if (control && a.read_only) throw refuse(`${control} is not supported by a read_only run_sql: its SQL runs in a transaction that is rolled back`);
    if (control && !a.no_transaction) {
      throw refuse(
        `${control} is not supported by run_sql: its SQL runs in the request's transaction, all or nothing (use "no_transaction": true to run statements outside a transaction)`,
      );
    }
  }
}

/** Hasura's error for SQL that PostgreSQL rejected: 400 with the statement and the error fields. */
export function pgError(e: unknown, statement: string): SvcError {
  if (e instanceof SvcError) return e;
  const pe = e as { message?: string; code?: string; hint?: string; detail?: string };
  if (pe && typeof pe.code === 'string' && /^[0-9A-Z]{5}$/.test(pe.code)) {
    return new SvcError('postgres-error', 'query execution failed', {
      path: '$.args',
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

/** Hasura's RunSQLRes: rows as text (NULL as "NULL") after a header row of column names. */
export function formatResult(r: PgRawResult | undefined) {
  if (!r || !r.columns) return { result_type: 'CommandOk', result: null };
  return { result_type: 'TuplesOk', result: [r.columns, ...r.rows.map((row) => row.map((x) => x ?? 'NULL'))] };
}

/** Runs the statements one by one (only the last result is kept); an error names the whole SQL, as
 * Hasura's does. */
export async function runStatements(exec: PgExecutor, statements: string[], sql: string): Promise<PgRawResult | undefined> {
  let last: PgRawResult | undefined;
  for (const st of statements) {
    try {
      last = await exec.simple(st);
    } catch (e) {
      throw pgError(e, sql);
    }
  }
  return last;
}

export function runSqlOperations(bind: KindBinding): OperationDef[] {
  const op: OperationDef<RunSqlArgs> = {
    type: bind.name('run_sql'),
    legacy: bind.legacy('run_sql'),
    args: RunSqlArgs,
    mutates: true,
    // Note [Dry runs] in core/kernel/pipeline.ts: SQL outside the request's transaction cannot be undone.
    dryRun: (a) => (a.no_transaction ? 'with "no_transaction": true its statements run and commit outside any transaction, which cannot be rolled back' : undefined),
    run: async (a, ctx) => {
      const db = ctx.kernel.use(DatabaseToken);
      // A source of another kind: Note [Operations of a kind] in plugins/database.
      const source = requireSource(ctx.metadata, a.source);
      const statements = splitStatements(a.sql);
      refuseUnsupported(statements, a);

      if (a.read_only) {
        // Note [What run_sql refuses], last part.
        if (!db.inTransaction(ctx.uow, a.source)) {
          const own = await (db.connection(source) as PgConnection).transaction({ readOnly: true });
          try {
            return { response: formatResult(await runStatements(own, statements, a.sql)) };
          } finally {
            await own.rollback();
          }
        }
        const tx = (await db.transaction(ctx, a.source)) as PgExecutor;
        const savepoint = `svc_read_only_${randomBytes(8).toString('hex')}`;
        await runStatements(tx, [`savepoint ${savepoint}; set local transaction_read_only = on`], a.sql);
        const last = await runStatements(tx, statements, a.sql);
        await runStatements(tx, [`rollback to savepoint ${savepoint}; release savepoint ${savepoint}`], a.sql);
        return { response: formatResult(last) };
      }

      const ddl = mayChangeSchema(statements);
      const check = ddl && a.check_metadata_consistency;
      let last: PgRawResult | undefined;
      let before: Introspection | undefined;
      if (a.no_transaction) {
        if (db.inTransaction(ctx.uow, a.source)) {
          throw new SvcError('not-supported', 'no_transaction cannot be used after an operation of the same request that ran SQL on the source', {
            path: '$.args',
          });
        }
        if (check) before = await db.introspection(ctx, a.source);
        const session = await (db.connection(source) as PgConnection).session();
        try {
          last = await runStatements(session, statements, a.sql);
        } finally {
          await session.release();
        }
      } else {
        const tx = (await db.transaction(ctx, a.source)) as PgExecutor;
        if (check) before = await db.introspection(ctx, a.source);
        last = await runStatements(tx, statements, a.sql);
      }
      const response = formatResult(last);
      if (!ddl) return { response };
      db.invalidate(ctx.uow, a.source);
      const result: OperationResult = { response, reload: { sources: [a.source] } };
      if (!before) return { ...result, inconsistencies: 'allow' };
      const after = await db.introspection(ctx, a.source);
      return { ...result, metadata: applySchemaChange(db, ctx.metadata, a.source, before, after, a.cascade) };
    },
  };
  return [op];
}
