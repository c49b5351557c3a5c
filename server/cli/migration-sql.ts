/**
 * A migration file's SQL made ready for the engine's transaction (Note [Migrations with their own
 * transaction]), and the line of the statement that failed.
 *
 * Note [Migrations with their own transaction]
 * The Hasura CLI and console write migrations that open and close their own transaction
 * (`BEGIN; ... COMMIT;`), and Hasura applies them through run_sql as they are: inside run_sql's
 * transaction the BEGIN is a warning and the COMMIT commits early, so the file is not atomic with
 * the rest and its version is recorded in another request. This engine's run_sql refuses
 * transaction control (Note [What run_sql refuses] in plugins/postgres/admin/run-sql.ts), and the CLI
 * records a version in the same transaction as the migration (Note [Where migrations are
 * recorded] in migrate.ts). So:
 *   - an outer pair (the first statement BEGIN / START TRANSACTION, the last COMMIT / END, none
 *     other in between) is taken off: the file was one transaction, and it still is, the
 *     engine's, together with its record. Options of the BEGIN (ISOLATION LEVEL ...) are dropped
 *     with it: the engine's transaction is READ COMMITTED, as Hasura's run_sql is.
 *   - any other transaction control (several transactions in one file, a ROLLBACK, statements
 *     after the COMMIT) cannot be applied all or nothing: the migration is refused before it
 *     runs, naming the file and line, unless `--no-transaction` runs it statement by statement
 *     as written (Hasura's flag; then not atomic, see migrate.ts).
 */
import { leadingWords, splitStatements, transactionControl } from '../../plugins/postgres/index.js';

export interface Statement {
  text: string;
  /** 1-based line of the statement's first character in the file. */
  line: number;
  /** Where it starts and ends in the file. */
  start: number;
  end: number;
}

/** The statements of `sql` with their lines (comments and empty statements left out). */
export function statementsOf(sql: string): Statement[] {
  const out: Statement[] = [];
  let cursor = 0;
  for (const text of splitStatements(sql)) {
    // The statements are trimmed slices of `sql`, in order: each is found after the one before.
    const at = sql.indexOf(text, cursor);
    const offset = at < 0 ? cursor : at;
    cursor = offset + text.length;
    out.push({ text, line: lineAt(sql, offset), start: offset, end: cursor });
  }
  return out;
}

function lineAt(sql: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (sql.charCodeAt(i) === 10) line++;
  return line;
}

/** A migration that cannot run in one transaction, with where. */
export class MigrationSqlError extends Error {
  constructor(readonly line: number, message: string) {
    super(message);
  }
}

export interface Prepared {
  /** The SQL to run in the engine's transaction. */
  sql: string;
  /** An outer BEGIN ... COMMIT was taken off. */
  unwrapped: boolean;
  statements: Statement[];
}

/** Note [Migrations with their own transaction]. Throws MigrationSqlError for other transaction control. */
export function prepareMigrationSql(sql: string): Prepared {
  const statements = statementsOf(sql);
  const controls = statements.map((s) => transactionControl(leadingWords(s.text, 3)));
  const at = controls.flatMap((c, i) => (c ? [i] : []));
  if (!at.length) return { sql, unwrapped: false, statements };
  const last = statements.length - 1;
  const opens = controls[0] === 'BEGIN' || controls[0] === 'START TRANSACTION';
  const closes = controls[last] === 'COMMIT' || controls[last] === 'END';
  if (at.length === 2 && at[0] === 0 && at[1] === last && opens && closes) {
    const body = statements.slice(1, last);
    // The text between them as it is (the `;` after the BEGIN makes an empty statement, which is none).
    return { sql: sql.slice(statements[0]!.end, statements[last]!.start), unwrapped: true, statements: statements.slice(1, last) };
  }
  // The first one that is not part of an outer pair.
  const bad = at.find((i) => !((i === 0 && opens) || (i === last && closes && opens))) ?? at[at.length - 1]!;
  const what = controls[bad]!;
  const why =
    opens && bad !== 0
      ? 'the migration runs in one transaction with its record, and only one outer BEGIN ... COMMIT around the whole file is taken off'
      : 'the migration runs in one transaction with its record (an outer BEGIN ... COMMIT around the whole file is taken off; this is not one)';
  throw new MigrationSqlError(statements[bad]!.line, `${what} here cannot be applied all or nothing: ${why}. Split the migration, or apply it with --no-transaction (statement by statement, not atomic)`);
}
