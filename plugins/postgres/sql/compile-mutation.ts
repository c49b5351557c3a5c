/**
 * Mutation IR -> one PostgreSQL statement per root field (Note [Mutation statements]): the writes
 * as data-modifying CTEs, nested inserts among them, the role's checks raised as errors, and the
 * field's JSON built by the select compiler of compile.ts, which reads the rows written. How an
 * insert is cut into levels and statements (Notes [Batches in steps] and [Rows repeating a key])
 * is ./insert-plan.ts's, and what the statement reads of its writes' rows ./written-rows.ts's;
 * the SQL of each is here.
 */
import type { ColumnValue, CompiledQuery, DeleteIR, FieldIR, InsertColumn, InsertIR, MutationIR, MutationOutput, ParamSource, QualifiedTable, ScalarType, UpdateIR, UpdateRowsIR, Value, ZeroCheck } from '../../database/index.js';
import { UnsupportedQuery } from '../../database/index.js';
import { arrayLiteral, boundValue, COLUMN, Compiler, joined, joinsObjects, READ_ORDER, toJson, typedValue } from './compile.js';
import { DIRS, lit, quoteIdent } from './identifiers.js';
import { columnsRead } from './narrow.js';
import { WrittenRows } from './written-rows.js';
import { followingValues, givesOrDefault, hasNested, inSteps, levelOfInsert, partial, tkey, updatesOnConflict, type Join, type Level, type Step } from './insert-plan.js';

/*
 * Note [Mutation statements]
 * A mutation root field is one statement. Its writes are data-modifying CTEs, each returning the
 * written row (its columns, Note [Written rows as columns]) and the role's check on it (`c`); the
 * outer select builds the field's JSON from those rows and ANDs the checks into `ok` (Note
 * [Mutations in the IR]). The target is aliased so that the check, the filters and the SET
 * expressions name the row the same way. An update's check sees the new row (RETURNING's), an
 * upsert's row is checked with the insert check when it was inserted and with the update check
 * when the conflict updated it (`xmax = 0` only for a row the statement inserted).
 *
 * Note [Nested inserts]
 * Rows inserted through relationships are CTEs of the same statement, in dependency order: the row
 * of an object relationship before the row that refers to it (whose columns then read the parent's
 * CTE: `(select _c0._0 from _c0)`, its first column), the rows of an array relationship after
 * their parent (their columns read the parent's CTE). A level whose rows carry nested rows is
 * inserted one CTE per row, so that each child names its own parent, unless it can be inserted as
 * a set (Note [Levels inserted as sets]); a root's objects so go in steps of a few (Note [Batches
 * in steps] in ./insert-plan.ts). A level without them is one multi-row INSERT. Foreign keys are checked at the end of
 * the statement, so a child may refer to a parent of the same statement. All CTEs see the snapshot taken before the statement, so a
 * check or a `returning` relationship that reads a table this statement inserted into reads the
 * table with those rows added (`src`, the compiler's overlay), and with the rows an upsert
 * updated in their new version only (by the conflict's key columns, `InsertIR.onConflict.columns`
 * given beside the constraint). That is what Hasura's reads see, as it inserts a row with nested
 * rows statement by statement. An insert without nested rows has no overlay: Hasura runs it as
 * one statement, whose `returning` relationships read the tables as they were before it.
 * `affected_rows` counts every row inserted, nested ones too (Hasura sums them). An object
 * relationship's insert that affects no row (`on_conflict` doing nothing) leaves its child
 * without a parent, and so does a parent with array relationship rows: `zero` says which (JSON:
 * `{index, relationship?, schema, name}` of the table whose insert wrote nothing) and the request fails,
 * as Hasura fails it. As a child row would be written with null for the parent's columns (or
 * fail a NOT NULL constraint first), a parent's column is read for its children so that a missing
 * parent raises an error instead (`parentValue`), which names the same check.
 */
/** A column a nested row takes from its parent's row: `column` of the one row the parent's CTE
 * `cte` wrote; `index`: the parent's zero check; `bindAs`: the child column's type. */
interface ParentColumn {
  cte: string;
  column: string;
  bindAs: string | undefined;
  index: number;
}
/** The parent columns of a nested insert's rows, by the child's column. */
type Fixed = Map<string, ParentColumn>;

/*
 * Note [Parents joined]
 * Nested rows read their parent's column from the parent's CTE. Where every row gives every
 * column (the usual case: a client sends rows of one shape), the INSERT selects its rows from the
 * parents' CTEs joined with the rows' values: `insert into t (a, fk) select _v.* from _c0,
 * lateral (values ($1, _c0._0)) as _v` for one row, the arrays of Note [Rows bound by
 * column] for several. Each parent CTE holds at most one row, so the rows keep their order (the
 * values are scanned once, inside the one parent row), and a parent that wrote nothing makes the
 * insert write nothing: the statement's zero check then fails the request (Note [Nested
 * inserts]). This is one plan node per INSERT where a subquery per row and parent column
 * (`parentValue`) is three, which PostgreSQL sets up at every execution: for ten rows, 20% less
 * of PostgreSQL's CPU per statement. A row that leaves a column to its default cannot be
 * selected (DEFAULT is only valid in INSERT's own VALUES), so a level with such a row keeps the
 * subqueries.
 *
 * Note [Rows bound by column]
 * A VALUES list binds a parameter per value, and PostgreSQL's protocol carries at most 65,535 in
 * one statement (postgres.js refuses more than 65,533): 10,000 rows of seven columns could not be
 * inserted, and each row count was a statement of its own text, parsed and planned again (a
 * batch's row count is rarely the same twice). So several rows that give the same columns
 * (none left to its default) bind each column's values as one text array, `insert into t (a, b)
 * select (_v.c0)::int4, (_v.c1)::text from unnest($1::text[], $2::text[]) as _v(c0, c1)`: each
 * value is the text it would be bound as alone (`boundValue`: JSON as JSON text, arrays as array
 * literals), an item of the array literal, and is cast as a lone parameter would be
 * (`typedValue`). unnest returns the items in order, and the rows are inserted and returned in
 * it. The statement is the same for any number of rows, so it is prepared once (1,000 rows
 * through the engine: PostgreSQL's CPU per request 50-55 -> 21-22 ms, docs/benchmarks.md "Bulk
 * inserts"). A row may leave out a column whose default is null (no default, identity or
 * generation, and not of a domain: `InsertIR.columns`' `nullDefault`, from the table's
 * introspection): its item is null, which is what DEFAULT would write (clients drop the fields
 * a row has no value for); or one whose default is known (Note [Defaults bound by column]).
 * Rows that leave out an identity column some rows give keep the VALUES list (DEFAULT exists
 * only there), and a statement that would still need more parameters than one can take is
 * refused with a clear error (`finish` in ./compile.ts). A single row keeps its VALUES list.
 *
 * Note [Defaults bound by column]
 * DEFAULT is only valid in an INSERT's own VALUES list, so rows bound by column cannot ask for
 * it. A column's own default (not an identity's, whose sequence DEFAULT reads without the
 * privilege a call needs; not a domain's) is read with the table (`InsertColumn.default`,
 * pg_get_expr of its pg_attrdef row), so where some rows leave such a column out, its value is
 * `case when _v.g<n> is null then (<default>)::<type> else <the row's value> end`, `g<n>` an
 * array that holds an item for each row that gives the column: the expression DEFAULT would
 * evaluate, once for each row that takes it, in the rows' order (a serial's ids as Hasura's
 * VALUES list gives them). A default changed since the table was read would be written silently,
 * so the statement checks each default it wrote in (and that a column it wrote null for still
 * has none) against the catalog when it runs, and fails before anything is kept if one differs:
 * `svc:default:<i>`, the error naming the column and asking for reload_metadata (run_sql
 * reloads by itself). It compares the key (md5 of the stored expression, whose objects are
 * OIDs), not the SQL: pg_get_expr qualifies names by the search_path it runs under, and run_sql
 * of pg_dump's output empties it before the metadata is reloaded in the same transaction, which
 * printed `nextval('public.part_id_seq'::regclass)` where the statement's session prints
 * `nextval('part_id_seq'::regclass)`. SQL printed under a search_path that saw a same-named
 * function the statement's does not see would call the other one; the engine reads tables under
 * the source's own search_path except there. Rows that leave out different columns with defaults are then one
 * statement for any count (30,000 such rows in one request were refused: more parameters than
 * PostgreSQL takes), and levels of them are inserted as sets (Note [Levels inserted as sets]).
 */

/*
 * Note [Levels inserted as sets]
 * A CTE per row made a batch of objects with array relationship rows cost PostgreSQL time
 * quadratic in the objects, as it parses and plans a statement of many CTEs (objects of three
 * rows each: 0.55-0.65 s of PostgreSQL's CPU for 1,000, 6.0-7.9 s for 3,000), and 5,000 failed
 * with "stack depth limit exceeded"; so did rows each with an object through an object
 * relationship. So a level of several rows that give the same columns (or leave out only
 * columns whose default is null or known) is one INSERT of Note [Rows bound by column]: after
 * one INSERT per object relationship of the rows' objects, each row joined to its own by
 * position (where only some rows bring an object, the others naming theirs by its columns, by
 * its position among those that do, a LEFT JOIN, the others keeping their own values), and before one INSERT per array relationship of the rows
 * under them, every row's together in the rows' order, each carrying its parent's position among
 * the level's rows: `insert into child (..., fk) select ..., _p0.k0 from unnest(...,
 * $positions) with ordinality as _v(..., p0, o) join (select _c0._0 as k0, row_number()
 * over () as n from _c0) as _p0 on _p0.n = (_v.p0)::int8 order by _v.o`; and so on through
 * every level, when every level can be inserted so (otherwise the level keeps a CTE per row,
 * and a root's objects go in steps: Note [Batches in steps]).
 * The rows under a row inserted on its own (one object, or a row of a level that could not be a
 * set) are such a level too where they carry rows of their own, each at position 1.
 * A CTE returns its rows in the order they were inserted, which is the order unnest gave them:
 * a position names the row it was given for as long as that level wrote every row. So each such
 * level's zero check is that count, and the zero checks come before the role's checks (a level
 * short of a row has joined rows to the wrong ones, and the error rolls all of it back; Hasura
 * too, row by row, stops at the insert that wrote nothing): a BEFORE trigger that drops a row
 * of such a level fails the request, with the first row's path or the level's (Hasura fails it
 * only when that row has rows under it, naming the row). A level with an upsert that may write
 * nothing for a row (`update_columns: []`, or an update with a `where` or the role's update
 * filter) whose rows have rows under them, or that holds objects, is joined by key instead (Note
 * [Levels joined by key]) where its rows give distinct keys, else it keeps a CTE per row, where
 * only a row with rows under it must have written, as in Hasura; one that nothing is joined to
 * (rows under their parents with nothing under them: join rows inserted if absent) is a set, its
 * rows that wrote nothing simply missing from its CTE. Rows of a level that upsert the same row are
 * merged (Note [Rows upserting one row]), but for an update with a `where`: rows under several
 * parents are then no set unless the key holds a column their parents give or no two of them
 * share a key (Note [Rows repeating a key]), and rows a CTE each
 * that might upsert one row go in steps of their own (Note [Batches in steps]); rows without rows
 * under them, under one parent or a root's, that repeat a key go in runs (Note [Rows repeating a
 * key]). Figures: docs/benchmarks.md "Bulk inserts" (3,000 objects of three rows: 6.2-8.1 s ->
 * 0.20-0.27 s).
 *
 * Note [Levels joined by key]
 * Where a level's upsert may write nothing for a row (doing nothing on conflict, or updating only
 * where a filter holds), the rows its CTE returns are not the level's rows in order, so positions
 * cannot join the rows under them (or the rows they are the objects of). But each row names the
 * row it writes by the key it upserts by: where every row gives every column of that key as a
 * literal other than null, and (where it updates) no two rows give the same key (`joinsByKey`, by
 * `keyText`), the level is one INSERT, and a second CTE (`each`, materialized) holds each row's
 * written row at the row's position: the keys bound as arrays, unnested with their positions,
 * joined to the written rows by the columns' equality (`distinct on` the written row's key, so
 * that of rows whose keys the database takes as equal, a uuid in capitals and in small letters,
 * only the first has the row: Hasura's later statement of such a row wrote nothing). Rows doing
 * nothing on conflict may so repeat a key, even in its text (the one INSERT writes the first of
 * them and skips the others, as Hasura's statements do), so their statement is right for any
 * values of the variables' shape and is kept per shape (Note [Statements per variable shape]; a
 * null is part of the shape). Levels joined to it read it by position as they read a merged level
 * (Note [Rows upserting one row]). The rows that must have written (the objects of an object
 * relationship, and rows with rows under them; a row with none under it may write nothing, as in
 * Hasura) each have a zero check, in order, and the first of them missing from `each` names its
 * own: the error's path is that row's or that object's, as Hasura's statement per row fails. A
 * null conflicts with nothing (and equals nothing), an update's repeated key's later rows would
 * update what the earlier wrote (Note [Rows repeating a key]) and a preset may change a key: such
 * levels keep a CTE per row, in steps. A BEFORE trigger that rewrites a key breaks the match (the
 * row given the key joins what that key finds), as one that drops a row breaks positions (above).
 * The choice follows the values of an update (`byValues`). 10,000 playlists of three rows each,
 * doing nothing on conflict: 1.30-1.38 s -> 0.69-0.87 s a request, updating where: 1.14-1.47 s ->
 * 0.68-0.79 s, as fast as the same rows upserted with an update (docs/benchmarks.md "Bulk
 * inserts"). Tests: bulk-inserts.test.ts, "objects upserting by a key that may write nothing"; the
 * last two oracles of bulk-inserts-oracle.test.ts.
 *
 * Note [Rows upserting one row]
 * Hasura inserts rows with nested rows a statement per row, so rows of one request may upsert
 * the same row: the usual batch of articles each with its author, upserted by name, names an
 * author once per article. One INSERT cannot write a row twice ("ON CONFLICT DO UPDATE command
 * cannot affect row a second time"), so a level inserted as a set that updates on conflict by a
 * constraint whose columns it gives merges its rows by that key first, in a CTE (`map`): each
 * row's values, position `o`, group (`partition by` the key; a row with a null in it conflicts
 * with nothing and is a group of its own), the group's first row `f` and size `k`, and the
 * group's rank `g` in the order of the first rows. The INSERT writes one row per group, in that
 * order, as Hasura's statements leave it: the first row's values, but the columns the conflict
 * updates from the group's last row and the role's update presets where the group has several
 * rows (the later ones updated it). A second CTE (`each`) gives every row of the level, in its
 * order, the row its group wrote (by rank, the INSERT's row number) and its position `n`; the
 * levels joined to this one read it by `n`, the zero check counts it, and `affected_rows` counts
 * its rows, as Hasura counts each row's statement. The role's checks, as Hasura's statements
 * make them: a row that was there, the update check on the row the request leaves; one the
 * request inserted, the insert check on the row as its group's first row inserted it (the row
 * written with the columns the later rows set, update columns and update presets, taken back to
 * the first row's values: `jsonb_populate_record`) and, where its group has several rows, the
 * update check on the row the request leaves (Hasura checks it after each later row too; the
 * rows in between are never written). Each row of the level answers its group's row as the request
 * leaves it (Hasura answers each as its own statement left it). A level whose rows repeat no key
 * pays a sort by the key for the window.
 */

/*
 * Note [Arrays of written rows grouped]
 * A `returning` that reads an array relationship of a table this statement wrote reads it from
 * the table with the written rows added (the overlay, Note [Nested inserts]), and the written
 * rows are a CTE, which has no index: as a subquery per returned row, each scanned the CTE, so
 * 3,000 playlists of three tracks, returning them, cost PostgreSQL 2.8 s. So such an array
 * (over the table by a mapping, not a function) directly under the returned rows, or under an
 * object joined to them (by a key among the columns it was joined by), is one LEFT JOIN: the
 * overlay's rows whose key is one of the returned rows' (an object's: the returned rows' values
 * of the columns it was joined by; a semi-join, which PostgreSQL may hash or probe an index
 * with), each with its order keys (through object relationships, aggregates and computed
 * fields: subqueries of the row, as a query's keys without joins) and numbered as read; under
 * distinct on, each key's first row of each value in the list's order; grouped by the key into
 * their JSON list (ordered as asked, then as read), joined to the returned rows (or the object)
 * by the key; the returned rows are numbered as written (Note [Rows numbered as read]) so the
 * join does not reorder them. A limit or offset numbers each key's rows in that order
 * (`row_number() over (partition by` the key`)`) and keeps those in the window. The same 3,000
 * playlists: 0.15-0.17 s, ordered by their track's name or distinct on it 0.19-0.21 s
 * (docs/benchmarks.md "Bulk inserts", `--returning`). Anything else keeps the subquery per row.
 */

/*
 * Note [Inserts in order]
 * PostgreSQL runs a data-modifying CTE when its rows are first read (one no query reads, at the
 * end), not in the order written. A statement of a CTE per row reads first those its zero checks
 * name (rows with rows under them, objects), so of rows `a` (with rows under it), `b` and `c`
 * (with rows under it) `b` was inserted last, its serial id after `c`'s, where Hasura's statement
 * per row writes them in the request's order (a row's objects before it, the rows under it after
 * it, as the CTEs are made). So where two inserts of a statement write one table, its first
 * condition after the session's reads every insert once, in that order: a CTE that reads
 * another (a row its parent's, a level the level it is joined to) has it run first anyway.
 */

/** How the error a nested insert's missing parent raises begins (Note [Nested inserts]; the
 * schema's mutation planner recognises it). */
const ZERO_MARK = 'svc:zero:';
/** How the error of a failed permission check begins (Note [Mutations in one round trip]). */
const CHECK_MARK = 'svc:check:';
/** How the error of a changed column default begins (Note [Defaults bound by column]). */
const DEFAULT_MARK = 'svc:default:';

/*
 * Note [Mutations in one round trip]
 * A mutation field's statement fails by itself when it must not be written: a row that fails
 * the role's check, or a nested insert whose parent wrote nothing, makes PostgreSQL raise an
 * error (`raise`) instead of answering, so the statement is atomic without the engine looking at
 * its answer first. A mutation request with one root field then runs its one statement in
 * autocommit: one round trip, no BEGIN and COMMIT (RunContext.alone); several fields still run in
 * the request's transaction (Note [One transaction per mutation request]), where the error rolls
 * back all of them. The statement also sets the session variables for its transaction
 * (`svc.user`, JSON, as Hasura sets `hasura.user`), before the first WHEN reads anything it
 * wrote, so that triggers (event triggers fire after the statement) can read them.
 * `mutationFailure` recognises the raised errors.
 */

/** An error raised at run time with `mark` in its message: a cast of text built at run time, so
 * not folded when the statement is planned; CASE evaluates it only when its WHEN holds. */
const raise = (mark: string) => `(select ('${mark}' || count(*))::int4 from _svc_s)::text`;

const RAISED = /^invalid input syntax for type integer: "svc:(check|zero|default):(?:(\d+):)?\d+"$/;

/** What a mutation statement's error means (Note [Mutations in one round trip]): a failed check,
 * a nested insert's missing parent (the zero check `index`), a column default that changed since
 * the statement was compiled (`CompiledQuery.defaults`' `index`; Note [Defaults bound by
 * column]), or undefined for any other error. */
export function mutationFailure(e: unknown): { k: 'check' } | { k: 'zero' | 'default'; index: number } | undefined {
  const m = RAISED.exec((e as { message?: unknown })?.message as string);
  if (!m) return undefined;
  return m[1] === 'check' ? { k: 'check' } : { k: m[1] as 'zero' | 'default', index: Number(m[2]) };
}

export interface Written {
  /** The CTEs holding the rows of one table written by this statement, in order. */
  ctes: string[];
}

export class MutationCompiler extends Compiler {
  readonly with: string[] = [];
  /** CTEs whose `c` column is a check. */
  readonly checked: string[] = [];
  /** The inserts that must write a row (Note [Nested inserts]), by the index their error names. */
  readonly zeroes: ZeroCheck[] = [];
  /** `(zero check, CTE)` of inserts of one row that must have written it: object relationships'
   * rows, and rows with array relationship rows. */
  readonly parents: [number, string][] = [];
  /** `(zero check, CTE, rows)` of levels inserted as sets that must have written every row
   * (Note [Levels inserted as sets]). */
  readonly levels: [number, string, number][] = [];
  /** Levels joined by key (Note [Levels joined by key]): the first of their zero checks, the CTE
   * of each row's written row at its position `n`, how many rows must have written, and their
   * positions (a bound int8[]; none: every row of the level). */
  private readonly keyedLevels: { first: number; each: string; must: number; positions?: string }[] = [];
  /** The CTE of a level joined by key, by the CTE of its INSERT. */
  private readonly byKey = new Map<string, string>();
  /** The CTEs of every insert of the statement, nested ones included (`affected_rows`). */
  readonly inserted: string[] = [];
  /** The table of each of `inserted` (Note [Inserts in order]). */
  private readonly insertedInto: string[] = [];
  /** The column defaults written into the statement (Note [Defaults bound by column]), each
   * checked unchanged when it runs. */
  readonly defaults: { table: QualifiedTable; column: string; key: string | null }[] = [];
  /** Whether reads see the rows written earlier in the statement (Note [Nested inserts]). */
  overlayOn = false;
  private cte = 0;

  name(): string {
    return `_c${this.cte++}`;
  }

  /** What the statement reads of its writes' rows (Note [Written rows as columns] in
   * ./written-rows.ts). */
  readonly reads = new WrittenRows();

  protected override resolve(sql: string): string {
    return this.reads.resolve(sql);
  }

  /** Rows written earlier in this statement, by table key (Note [Nested inserts]): each CTE,
   * and for an upsert that may update, the key columns of its conflict. */
  readonly overlay = new Map<string, { cte: string; key?: readonly string[] }[]>();

  /** A table as a FROM item: the table, and the rows this statement inserted into it before. A
   * row an upsert of the statement updated is read in its new version only: the table's version
   * of it (the same conflict key) is left out, else it would be read twice (old and new). */
  override src(t: QualifiedTable): string {
    const entries = this.overlay.get(tkey(t));
    if (!entries) return this.table(t);
    return this.withWrites(t, entries, entries.map((e) => e.cte));
  }

  /** Table `t` as the statement's writes leave it: its rows but those the writes `gone` wrote
   * (found by `key`, a write without one replaces none), and the rows of the writes `added`. Where
   * a write keeps its rows' columns (Note [Written rows as columns]), every part of the union
   * reads those the statement reads on the union's alias (`readAs`). */
  protected withWrites(t: QualifiedTable, gone: readonly { cte: string; key?: readonly string[] }[], added: readonly string[]): string {
    const b = this.alias();
    const replaced = gone.flatMap((e) =>
      e.key?.length ? [`not exists (select from ${e.cte} where ${e.key.map((k) => `${this.reads.columnOf(e.cte, k)} = ${b}.${quoteIdent(k)}`).join(' and ')})`] : [],
    );
    const union = (columns: readonly string[] | undefined) => {
      const base = `select ${this.tableColumns(b, columns)} from ${this.table(t)} as ${b}${replaced.length ? ` where ${replaced.join(' and ')}` : ''}`;
      return `(${base}${added.map((c) => ` union all select ${this.reads.rowsOf(c, c, columns)} from ${c}`).join('')})`;
    };
    const columns = [...gone.map((e) => e.cte), ...added].map((c) => this.reads.keptColumns(c)).find((c) => c !== undefined);
    return columns ? this.reads.readAs(columns, union) : union(undefined);
  }

  /** The select list of a table's rows read as `alias`: `columns` (those writes keep, Note
   * [Written rows as columns]), or all of them. */
  private tableColumns(alias: string, columns: readonly string[] | undefined): string {
    return columns ? columns.map((c) => `${alias}.${quoteIdent(c)}`).join(', ') : `${alias}.*`;
  }

  /** The rows of the write `cte` as a FROM item of its table's columns (those the statement
   * reads on the item's alias, where it keeps columns). */
  protected writtenRows(cte: string): string {
    const kept = this.reads.keptColumns(cte);
    if (!kept) return `(select ${this.reads.rowsOf(cte)} from ${cte})`;
    return this.reads.readAs(kept, (columns) => `(select ${this.reads.rowsOf(cte, cte, columns)} from ${cte})`);
  }

  private addOverlay(table: QualifiedTable, cte: string, key: readonly string[] | undefined) {
    if (!this.overlayOn) return;
    const k = tkey(table);
    const list = this.overlay.get(k);
    if (list) list.push({ cte, key });
    else this.overlay.set(k, [{ cte, key }]);
  }

  /** A parent row's column for its child rows (Note [Nested inserts]); when the parent's insert
   * wrote no row, PostgreSQL raises an error naming the zero check `index` (`svc:zero:<index>:`,
   * in an invalid input syntax error: a cast of text built at run time, so not folded when the
   * statement is planned; CASE evaluates it only then). */
  private parentValue({ cte: parent, column, bindAs, index }: ParentColumn): string {
    const value = `(select ${this.reads.columnOf(parent, column)} from ${parent})`;
    if (bindAs === undefined) return value;
    return `(case when exists (select from ${parent}) then ${value} else (select null::${bindAs} from ${parent} having ('${ZERO_MARK}${index}:' || count(*))::int4 is null) end)`;
  }

  /** A CTE of the row the step `step` of the same field answered (`p`), a row of `table`
   * (Note [Batches in steps]). */
  answered(step: number, table: QualifiedTable): string {
    const name = this.name();
    this.with.push(`${name} as (select ((${this.bind({ k: 'answer', step })})::json ->> 'p')::${this.table(table)} as r)`);
    return name;
  }

  /** That the insert of `cte` into `table` wrote its row, else the zero check `z` fails the
   * statement (a row whose rows under it, or whose parent, later steps insert). */
  mustWrite(table: QualifiedTable, z: { at: ZeroCheck['at']; relationship?: string }, cte: string): void {
    this.parents.push([this.zero(table, z.at, z.relationship), cte]);
  }

  /** A zero check of the insert into `table` for `at` (Note [Nested inserts]): its index. */
  private zero(table: QualifiedTable, at: ZeroCheck['at'], relationship?: string): number {
    return this.zeroes.push({ table, at, ...(relationship !== undefined ? { relationship } : {}) }) - 1;
  }

  /** One INSERT of `rows` (their values, and the parent columns `fixed` gives each) as a CTE;
   * `joins`: the rows of a level inserted as a set take columns of the rows of other levels'
   * CTEs, each by its position (Note [Levels inserted as sets]). */
  private insertCte(ir: InsertIR, rows: { values: ReadonlyMap<string, ColumnValue>; fixed: Fixed }[], joins?: readonly Join[]): string {
    const name = this.name();
    const t = this.alias();
    const cols: string[] = [];
    for (const r of rows) {
      for (const c of r.values.keys()) if (!cols.includes(c)) cols.push(c);
      for (const c of r.fixed.keys()) if (!cols.includes(c)) cols.push(c);
    }
    // A column a joined level gives: `_p<join>.k<pair>`; `partial`: only to the rows that have a
    // row there (an object relationship some rows give), the others giving their own.
    const fromParent = new Map<string, { ref: string; n: number; partial: boolean }>();
    joins?.forEach((j, n) =>
      j.mapping.forEach(([, own], i) => {
        fromParent.set(own, { ref: `_p${n}.k${i}`, n, partial: partial(j) });
        if (!cols.includes(own)) cols.push(own);
      }),
    );
    // Whether a row has every column: from a joined level, its parent, or a value of its own;
    // `orNull`: or left out where its default is null or known (Notes [Rows bound by column],
    // [Defaults bound by column]).
    const givesAll = (r: (typeof rows)[number], orNull: boolean) =>
      cols.every((c) => fromParent.has(c) || r.fixed.has(c) || (orNull ? givesOrDefault(r.values, c, ir.columns) : r.values.get(c)?.k === 'value'));
    // Note [Parents joined]: rows that give every column read their parents' CTEs as FROM items.
    const joined = rows.every((r) => r.fixed.size > 0 && givesAll(r, false));
    const parentCtes = new Set<string>();
    let sql = `insert into ${this.table(ir.table)} as ${t}`;
    // Rows merged by the key they upsert (Note [Rows upserting one row]).
    let merged: ReturnType<MutationCompiler['mergeUpserts']>;
    const byColumn =
      joins !== undefined ||
      (rows.length > 1 && rows.every((r) => r.fixed === rows[0]!.fixed && givesAll(r, true)) && cols.some((c) => !rows[0]!.fixed.has(c)));
    if (byColumn) {
      // Note [Rows bound by column].
      const fixed = rows[0]?.fixed ?? new Map();
      const arrays: string[] = [];
      const names: string[] = [];
      // The rows' own values of column `c`.
      const own = (c: string) => {
        const col = ir.columns.get(c);
        if (!col) throw new UnsupportedQuery(`unknown column "${c}"`);
        const items = rows.map((r) => {
          const v = r.values.get(c);
          return v?.k === 'value' ? boundValue(v.value, col.scalar) : NULL_VALUE;
        });
        const name = `c${names.length}`;
        names.push(name);
        arrays.push(this.textArray(items));
        const value = typedValue(`_v.${name}`, col.scalar);
        if (rows.every((r) => r.values.has(c))) return value;
        if (col.nullDefault) {
          // Null where left out, while the column still has no default (Note [Defaults bound by column]).
          this.defaultOf(ir.table, c, null);
          return value;
        }
        // Note [Defaults bound by column]: which rows give the column, and its default for the others.
        const given = `g${names.length}`;
        names.push(given);
        arrays.push(this.textArray(rows.map((r) => (r.values.has(c) ? TRUE_VALUE : NULL_VALUE))));
        return `(case when _v.${given} is null then (${this.defaultOf(ir.table, c, col.default!).sql})::${col.scalar.bindAs} else ${value} end)`;
      };
      const exprs = cols.map((c) => {
        const joinedColumn = fromParent.get(c);
        if (joinedColumn?.partial) return `(case when _v.p${joinedColumn.n} is null then ${own(c)} else ${joinedColumn.ref} end)`;
        if (joinedColumn !== undefined) return joinedColumn.ref;
        const parent = fixed.get(c);
        if (parent !== undefined) {
          parentCtes.add(parent.cte);
          return this.reads.columnOf(parent.cte, parent.column);
        }
        return own(c);
      });
      let from: string;
      if (joins) {
        // Note [Levels inserted as sets]: each row joins the row of each joined level at its
        // position among the rows that level's CTE returned (its parent's, given; its object
        // relationship's, its own), and the rows are inserted in their own order.
        const on: string[] = [];
        const subqueries = joins.map((j, n) => {
          let at = '_v.o';
          if (j.positions) {
            arrays.push(this.textArray(j.positions.map((x) => ({ k: 'lit', v: x }))));
            names.push(`p${n}`);
            at = `(_v.p${n})::int8`;
          }
          on.push(`_p${n}.n = ${at}`);
          const keys = j.mapping.map(([theirs], i) => `${this.reads.columnOf(j.cte, theirs)} as k${i}`);
          // A level whose rows upserted one row more than once holds each row's position.
          const position = this.positioned.has(j.cte) ? `${j.cte}.n` : 'row_number() over () as n';
          return `(select ${keys.join(', ')}, ${position} from ${j.cte}) as _p${n}`;
        });
        // A row without a row of a joined level (Join.positions' null) keeps its own values.
        const source = `unnest(${arrays.join(', ')}) with ordinality as _v(${[...names, 'o'].join(', ')})${subqueries.map((q, n) => ` ${partial(joins[n]!) ? 'left join' : 'join'} ${q} on ${on[n]}`).join('')}`;
        merged = this.mergeUpserts(ir, cols, exprs, source);
        if (merged) sql += ` (${cols.map(quoteIdent).join(', ')}) ${merged.select}`;
        else sql += ` (${cols.map(quoteIdent).join(', ')}) select ${exprs.join(', ')} from ${source} order by _v.o`;
      } else sql += ` (${cols.map(quoteIdent).join(', ')}) select ${exprs.join(', ')} from ${[...parentCtes, `unnest(${arrays.join(', ')}) as _v(${names.join(', ')})`].join(', ')}`;
    } else if (cols.length === 0 && rows.length > 1) {
      // Rows of defaults only: `default values` is one row, and a select of no column inserts a
      // row of defaults for each of its rows, in order (an array with an item per row: the
      // statement is the same for any count; no column named, so none needs a privilege).
      sql += ` select from unnest(${this.textArray(rows.map(() => NULL_VALUE))})`;
    } else if (cols.length === 0) {
      sql += ' default values';
    } else {
      const values = rows.map(
        (r) =>
          `(${cols
            .map((c) => {
              const fixed = r.fixed.get(c);
              if (fixed !== undefined) {
                if (!joined) return this.parentValue(fixed);
                parentCtes.add(fixed.cte);
                return this.reads.columnOf(fixed.cte, fixed.column);
              }
              const v = r.values.get(c);
              const col = ir.columns.get(c);
              if (!col) throw new UnsupportedQuery(`unknown column "${c}"`);
              return v ? this.colValue(v, col.scalar) : 'default';
            })
            .join(', ')})`,
      );
      const list = `(${cols.map(quoteIdent).join(', ')})`;
      sql += joined
        ? ` ${list} select _v.* from ${[...parentCtes].join(', ')}, lateral (values ${values.join(', ')}) as _v`
        : ` ${list} values ${values.join(', ')}`;
    }
    const oc = ir.onConflict;
    // Rows merged are checked below, where each of them is read.
    let check = merged ? 'true' : this.bool(ir.check, t, t);
    let updates = false;
    if (oc) {
      const target = oc.constraint !== undefined ? ` on constraint ${quoteIdent(oc.constraint)}` : oc.columns ? ` (${oc.columns.map(quoteIdent).join(', ')})` : '';
      const sets = oc.update.map((x) => `${quoteIdent(x)} = excluded.${quoteIdent(x)}`);
      for (const [c, v] of oc.set ?? []) {
        const col = ir.columns.get(c);
        if (col) sets.push(`${quoteIdent(c)} = ${this.colValue(v, col.scalar)}`);
      }
      if (sets.length === 0) sql += ` on conflict${target} do nothing`;
      else {
        sql += ` on conflict${target} do update set ${sets.join(', ')}`;
        if (oc.where.t !== 'true') sql += ` where ${this.bool(oc.where, t, t)}`;
        if (!merged) check = `(case when ${t}.xmax = 0 then ${check} else ${this.bool(oc.check, t, t)} end)`;
        updates = true;
      }
    }
    // Rows merged (Note [Rows upserting one row]): a row the request inserted is checked where
    // each of its rows is read (`each`), with the insert check on the row as its group's first
    // row inserted it (`_f`) and, where later rows updated it, the update check on the row it
    // is (`_u`); the RETURNING checks only a row that was there.
    let first = 'true';
    let updated = 'true';
    if (merged && oc) {
      first = this.bool(ir.check, '_f', '_f');
      updated = this.bool(oc.check, '_u', '_u');
      const existing = this.bool(oc.check, t, t);
      check = existing === 'true' ? 'true' : `(case when ${t}.xmax = 0 then true else ${existing} end)`;
    }
    const inserted = first !== 'true' || updated !== 'true';
    sql += ` returning ${this.reads.writtenRow(name, t, ir.tableColumns)}, ${check} as c${inserted ? `, ${t}.xmax = 0 as i` : ''}`;
    this.with.push(`${name} as (${sql})`);
    // A check that always holds (admin, a permission without one) is not read back.
    if (check !== 'true') this.checked.push(name);
    // The key of an upsert that may update: its constraint's columns (given beside it).
    this.addOverlay(ir.table, name, updates && oc?.columns?.length ? oc.columns : undefined);
    if (!merged) {
      this.inserted.push(name);
      this.insertedInto.push(tkey(ir.table));
      return name;
    }
    // Note [Rows upserting one row]: each of the level's rows, in its order, as the row its
    // group wrote (`affected_rows` counts them all, as Hasura's statement per row does).
    const each = this.name();
    const written = `(select *, row_number() over () as n from ${name}) as _x on _x.n = _m.g`;
    if (!inserted) this.with.push(`${each} as materialized (select ${this.reads.passedOn(name, '_x', each)}, _m.o as n from ${merged.map} as _m join ${written} order by _m.o)`);
    else {
      // Once for each group the request inserted, on its first row: the row as that row
      // inserted it is the row written with the columns later rows set (the conflict's update
      // columns, the role's update presets) taken back to the first row's values.
      const asFirst =
        merged.later.length === 0
          ? this.reads.rowsOf(name, '_x')
          : `(case when _m.k > 1 then jsonb_populate_record(${this.reads.wholeRow(name, '_x')}, jsonb_build_object(${merged.later.map(([c, i]) => `${lit(c)}, _m.e${i}`).join(', ')})) else ${this.reads.wholeRow(name, '_x')} end).*`;
      const checks = [first, updated === 'true' ? 'true' : `(_m.k = 1 or ${updated})`].filter((x) => x !== 'true');
      this.with.push(
        `${each} as materialized (select ${this.reads.passedOn(name, '_x', each)}, _m.o as n, (not _x.i or _m.o <> _m.f or (${checks.join(' and ')})) as c from ${merged.map} as _m join ${written}${updated !== 'true' ? ` cross join lateral (select ${this.reads.rowsOf(name, '_x')}) as _u` : ''}${first !== 'true' ? ` cross join lateral (select ${asFirst}) as _f` : ''} order by _m.o)`,
      );
      this.checked.push(each);
    }
    this.positioned.add(each);
    this.inserted.push(each);
    this.insertedInto.push(tkey(ir.table));
    return each;
  }

  /** The default `sql` of `table`'s `column`, written into the statement and checked there
   * (Note [Defaults bound by column]). */
  private defaultOf<T extends InsertColumn['default'] | null>(table: QualifiedTable, column: string, given: T): T {
    if (!this.defaults.some((d) => d.column === column && tkey(d.table) === tkey(table))) this.defaults.push({ table, column, key: given?.key ?? null });
    return given;
  }

  /** CTEs that hold each row of a level at its position `n` (Note [Rows upserting one row]). */
  private readonly positioned = new Set<string>();

  /**
   * Note [Rows upserting one row]: the rows of a level inserted as a set (their values `exprs`
   * of `cols`, read from `source`) that upserts by a key, merged by that key; undefined where the
   * insert does not update on conflict by columns it gives. `map` is a CTE holding each row's
   * values, its position `o` and its group's rank `g` among the groups in the order of their
   * first rows; `select` reads a group's row from it.
   */
  private mergeUpserts(ir: InsertIR, cols: readonly string[], exprs: readonly string[], source: string): { map: string; select: string; later: (readonly [string, number])[] } | undefined {
    const oc = ir.onConflict;
    const key = oc?.columns;
    const presets = [...(oc?.set ?? [])];
    // Rows that may not update (a `where`) are not merged: one INSERT cannot write a row twice.
    if (!oc || !key?.length || !updatesOnConflict(ir) || oc.where.t !== 'true' || ![...key, ...presets.map(([c]) => c)].every((c) => cols.includes(c))) return undefined;
    const at = key.map((c) => `_w.e${cols.indexOf(c)}`);
    // A null in the key conflicts with nothing: such a row is a group of its own.
    const partition = [`case when ${at.map((x) => `${x} is null`).join(' or ')} then _w.o end`, ...at].join(', ');
    // A column the conflict updates takes the last row's value (as the last of Hasura's
    // statements per row leaves it); the others the first row's (as the first inserted it).
    const last = cols.flatMap((c, i) => (oc.update.includes(c) && !key.includes(c) ? [i] : []));
    const values = exprs.map((x, i) => `${x} as e${i}`);
    const lasts = last.map((i) => `, last_value(_w.e${i}) over (_k order by _w.o rows between unbounded preceding and unbounded following) as l${i}`);
    // `k`: how many rows a group has (the later ones update the row the first inserted).
    const groups = `select _w.*, min(_w.o) over _k as f, count(*) over _k as k${lasts.join('')} from (select ${values.join(', ')}, _v.o from ${source}) as _w window _k as (partition by ${partition})`;
    const map = this.name();
    this.with.push(`${map} as (select _s.*, dense_rank() over (order by _s.f) as g from (${groups}) as _s)`);
    // The role's update presets on a group of several rows.
    const value = (c: string, i: number) => {
      const preset = oc.set?.get(c);
      if (preset) return `(case when _m.k > 1 then ${this.colValue(preset, ir.columns.get(c)!.scalar)} else _m.e${i} end)`;
      return last.includes(i) ? `_m.l${i}` : `_m.e${i}`;
    };
    const select = `select ${cols.map(value).join(', ')} from ${map} as _m where _m.o = _m.f order by _m.o`;
    // The columns later rows of a group set: (column, its index among `cols`).
    const later = cols.flatMap((c, i) => (last.includes(i) || oc.set?.has(c) ? [[c, i] as const] : []));
    return { map, select, later };
  }

  /** The CTEs of `ir`'s rows and of their nested rows (Note [Nested inserts]); `fixed` gives
   * columns of every row from a parent's CTE. */
  insert(ir: InsertIR, fixed: Fixed = new Map()): Written {
    const nested = ir.rows.some(hasNested);
    if (!nested) return { ctes: [this.insertCte(ir, ir.rows.map((r) => ({ values: r.values, fixed })))] };
    // Rows under one parent row (a row inserted on its own) are a level too, each at its first row.
    const under = fixed.size > 0 ? joinOfFixed(fixed) : undefined;
    const level = ir.rows.length > 1 && (fixed.size === 0 || under) ? levelOfInsert(ir) : undefined;
    if (level) return { ctes: [this.insertLevel(level, under)] };
    const ctes: string[] = [];
    for (const row of ir.rows) {
      const own = new Map(fixed);
      for (const b of row.before) {
        const parent = this.insert(b.insert).ctes[0]!;
        const index = this.zero(b.insert.table, b, b.relationship);
        this.parents.push([index, parent]);
        for (const [mine, theirs] of b.mapping) own.set(mine, { cte: parent, column: theirs, bindAs: ir.columns.get(mine)?.scalar.bindAs, index });
      }
      const cte = this.insertCte(ir, [{ values: row.values, fixed: own }]);
      ctes.push(cte);
      if (row.after.length === 0) continue;
      const index = this.zero(ir.table, row);
      this.parents.push([index, cte]);
      for (const a of row.after) {
        const theirs: Fixed = new Map();
        for (const [mine, remote] of a.mapping) theirs.set(remote, { cte, column: mine, bindAs: a.insert.columns.get(remote)?.scalar.bindAs, index });
        this.insert(a.insert, theirs);
      }
    }
    return { ctes };
  }

  /** The CTE of a level inserted as a set, after those of its object relationships' rows and
   * before those of the levels under it (Note [Levels inserted as sets]); `under`: its parent
   * level's CTE and the relationship's mapping. */
  private insertLevel(level: Level, under?: Omit<Join, 'positions'>): string {
    const rows = level.ir.rows.map((r) => ({ values: r.values, fixed: NO_FIXED }));
    const joins: Join[] = under ? [{ ...under, positions: level.positions ?? rows.map(() => 1) }] : [];
    for (const o of level.objects) {
      // Each row's own object, at the row's position (or its position among the rows that have
      // one): every one must have been written (a level joined by key checks each itself).
      const cte = this.insertLevel(o.level);
      const keyed = this.byKey.get(cte);
      if (keyed === undefined) this.levels.push([this.zero(o.level.ir.table, o.at, o.relationship), cte, o.level.ir.rows.length]);
      joins.push({ cte: keyed ?? cte, mapping: o.mapping.map(([own, theirs]) => [theirs, own] as const), ...(o.positions ? { positions: o.positions } : {}) });
    }
    // A level that upserts reads its rows with their positions, to merge them by their key
    // (Note [Rows upserting one row]).
    const positions = level.objects.length > 0 || under !== undefined || updatesOnConflict(level.ir);
    const cte = this.insertCte(level.ir, rows, positions ? joins : undefined);
    let joined = cte;
    if (level.keyed) joined = this.joinedByKey(level, cte);
    else if (level.children.length > 0) this.levels.push([this.zero(level.ir.table, level.at), cte, rows.length]);
    for (const child of level.children) this.insertLevel(child.level, { cte: joined, mapping: child.mapping });
    return cte;
  }

  /** Note [Levels joined by key]: a CTE of each row of `level` that its INSERT `cte` wrote, as
   * the row it wrote (`r`) at its position (`n`): the written row whose key equals the row's, for
   * the first row of those a written row's key equals; and the zero checks of the rows that
   * must have written (`level.keyed`), in order. */
  private joinedByKey(level: Level, cte: string): string {
    const { ir } = level;
    const must = level.keyed!;
    const key = ir.onConflict!.columns!;
    const arrays: string[] = [];
    const on: string[] = [];
    key.forEach((c, i) => {
      const { scalar } = ir.columns.get(c)!;
      const items = ir.rows.map((r) => boundValue((r.values.get(c) as Extract<ColumnValue, { k: 'value' }>).value, scalar));
      arrays.push(this.textArray(items));
      on.push(`${this.reads.columnOf(cte, c, '_x')} = ${typedValue(`_k.k${i}`, scalar)}`);
    });
    const written = key.map((c) => this.reads.columnOf(cte, c, '_x')).join(', ');
    const each = this.name();
    this.with.push(
      `${each} as materialized (select distinct on (${written}) ${this.reads.passedOn(cte, '_x', each)}, _k.o as n from unnest(${arrays.join(', ')}) with ordinality as _k(${[...key.map((_, i) => `k${i}`), 'o'].join(', ')}) join ${cte} as _x on ${on.join(' and ')} order by ${written}, _k.o)`,
    );
    this.positioned.add(each);
    this.byKey.set(cte, each);
    const first = this.zeroes.length;
    for (const z of must) this.zero(ir.table, z.at, z.relationship);
    const positions = must.length === ir.rows.length ? undefined : `(${this.textArray(must.map((z) => ({ k: 'lit', v: z.position })))})::int8[]`;
    this.keyedLevels.push({ first, each, must: must.length, ...(positions ? { positions } : {}) });
    return each;
  }

  /** `items` bound as one parameter, a text array literal (Note [Rows bound by column]), read
   * as `text[]`. */
  private textArray(items: readonly ParamSource[]): string {
    return `(${this.bind({ k: 'items', items, format: arrayLiteral })})::text[]`;
  }

  /** The jsonb operators of an update (`_append`, `_prepend`, `_delete_key`, `_delete_elem`,
   * `_delete_at_path`), beside the default compiler's `_set` and `_inc`. */
  override setClause(s: UpdateIR['set'][number], t: string): string {
    const col = `${t}.${quoteIdent(s.column)}`;
    const c = quoteIdent(s.column);
    switch (s.op) {
      case 'append':
        return `${c} = ${col} || ${this.value(s.value!, s.scalar)}`;
      case 'prepend':
        return `${c} = ${this.value(s.value!, s.scalar)} || ${col}`;
      case 'delete_key':
        return `${c} = ${col} - (${this.param(s.value!)})::text`;
      case 'delete_elem':
        return `${c} = ${col} - (${this.param(s.value!)})::int4`;
      case 'delete_at_path':
        return `${c} = ${col} #- (${this.param(s.value!, false, arrayLiteral)})::text[]`;
      default:
        return super.setClause(s, t);
    }
  }

  update(ir: UpdateIR): Written {
    const name = this.name();
    const t = this.alias();
    const sets = ir.set.map((s) => this.setClause(s, t));
    const check = this.bool(ir.check, t, t);
    const sql = `update ${this.table(ir.table)} as ${t} set ${sets.join(', ')} where ${this.bool(ir.where, t, t)} returning ${this.reads.writtenRow(name, t, ir.tableColumns)}, ${check} as c`;
    this.with.push(`${name} as (${sql})`);
    if (check !== 'true') this.checked.push(name);
    return { ctes: [name] };
  }

  /*
   * Note [Updates by key in SQL]
   * Updates each naming one row by its primary key (Note [Updates by key] in
   * plugins/database/schema/update-rows.ts) are one UPDATE ... FROM unnest(keys, values...)
   * WITH ORDINALITY: each key column's and set column's values of the updates bound as one
   * array (as Note [Rows bound by column] binds an insert's: the statement is the same for any
   * number of updates, and prepared once), each read as its column's type, the table joined to
   * them by the key's equality (an index scan of the key per update), the role's filter beside;
   * RETURNING gives each written row its update's position `o` and the role's check. Each
   * update's answer is built from the row of its position, grouped over the positions 1..N
   * (the first key column's array unnested again, left joined: a key that found no row answers
   * `affected_rows` 0 and an empty `returning`), the answers joined by commas in order: the
   * field's list is the statements' answers in brackets. The check, as for one update, fails
   * the statement. Updates of no row twice: the planner cut runs where a key repeats. 1,000 updates of one
   * track each: 186-241 -> 26-31 ms a request on the two-core machine, PostgreSQL's CPU 83-108 ->
   * 12-16 ms (docs/benchmarks.md "Bulk inserts", `--update-many`).
   */
  /** Note [Updates by key in SQL]: the UPDATE of `ir`'s rows, and the JSON of its answer (each
   * update's, in order, joined by commas). */
  updateRows(ir: UpdateRowsIR): string {
    const name = this.name();
    const t = this.alias();
    const arrays: string[] = [];
    const names: string[] = [];
    // The updates' values of one key column or set column, bound as one array (as Note [Rows
    // bound by column] binds an insert's), read as its type.
    const column = (values: readonly Value[], scalar: ScalarType): string => {
      const n = `c${names.length}`;
      names.push(n);
      arrays.push(this.textArray(values.map((v) => boundValue(v, scalar))));
      return typedValue(`_v.${n}`, scalar);
    };
    const on = ir.key.map((k, i) => `${t}.${quoteIdent(k.column)} = ${column(ir.rows.map((r) => r.key[i]!), k.scalar)}`);
    const sets = ir.set.map((s, i) => {
      const c = quoteIdent(s.column);
      const v = column(ir.rows.map((r) => r.values[i]!), s.scalar);
      return s.op === 'inc' ? `${c} = ${t}.${c} + ${v}` : `${c} = ${v}`;
    });
    const filter = this.bool(ir.filter, t, t);
    const check = this.bool(ir.check, t, t);
    const where = [...on, ...(filter === 'true' ? [] : [filter])].join(' and ');
    this.with.push(
      `${name} as (update ${this.table(ir.table)} as ${t} set ${sets.join(', ')} from unnest(${arrays.join(', ')}) with ordinality as _v(${[...names, 'o'].join(', ')}) where ${where} returning ${this.reads.writtenRow(name, t, ir.tableColumns)}, _v.o as o, ${check} as c)`,
    );
    if (check !== 'true') this.checked.push(name);
    // Each update's answer from the row of its position (none where its key found no row).
    const x = this.alias();
    const parts = ir.output.fields.map((f) => {
      if (f.k === 'typename') return `${lit(f.key)}, ${lit(f.name)}`;
      if (f.k === 'affected_rows') return `${lit(f.key)}, count(_w.o)`;
      const shown = f.filter ? this.bool(f.filter, x, x) : 'true';
      return `${lit(f.key)}, coalesce(json_agg(${this.object(f.select, x)}) filter (where _w.o is not null${shown === 'true' ? '' : ` and ${shown}`}), '[]')`;
    });
    // The positions, from the first key column's array again: no parameter of their own.
    const read = this.reads.keptOf(name, columnsRead(parts.join(', '), x));
    const each = `select _g.o, json_build_object(${parts.join(', ')})::text as j from unnest(${arrays[0]}) with ordinality as _g(k, o) left join (${name} as _w cross join lateral (select ${this.reads.rowsOf(name, '_w', read)}) as ${x}) on _w.o = _g.o group by _g.o`;
    return `(select string_agg(_a.j, ',' order by _a.o) from (${each}) as _a)`;
  }

  delete(ir: DeleteIR): Written {
    const name = this.name();
    const t = this.alias();
    this.with.push(`${name} as (delete from ${this.table(ir.table)} as ${t} where ${this.bool(ir.where, t, t)} returning ${this.reads.writtenRow(name, t, ir.tableColumns)})`);
    return { ctes: [name] };
  }

  /** How many rows the CTEs `ctes` hold, together. */
  count(ctes: readonly string[]): string {
    return `(select count(*) from (${ctes.map((c) => `select from ${c}`).join(' union all ')}) as _n)`;
  }

  /** The field's value from the rows written (Note [Mutations in the IR]); `affected`: the SQL
   * of `affected_rows`. */
  output(out: MutationOutput, w: Written, affected: string = this.count(w.ctes)): string {
    if (out.k === 'single') {
      const t = this.alias();
      const from: string[] = [];
      const json = toJson(this.object(out.select, t, undefined, from), from);
      const rest = `${joined(from)}${this.filterWhere(out.filter, t)}`;
      return `coalesce((select ${json} from (${this.reads.rowsRead(w.ctes, t, `${json} ${rest}`)}) as ${t}${rest} limit 1)::text, 'null')`;
    }
    const parts = out.fields.map((f) => {
      if (f.k === 'typename') return `${lit(f.key)}, ${lit(f.name)}`;
      if (f.k === 'affected_rows') return `${lit(f.key)}, ${affected}`;
      const t = this.alias();
      const from: string[] = [];
      const joins: string[] = [];
      // Where objects or grouped arrays (Note [Arrays of written rows grouped]) join, the rows are
      // numbered as written (Note [Rows numbered as read]).
      const grouped = f.select.fields.some((x) => this.groupable(x));
      const numbered = joinsObjects(f.select) || grouped;
      if (numbered) this.grouping.set(t, (columns) => w.ctes.map((c) => `select ${columns.map((x) => this.reads.columnOf(c, x)).join(', ')} from ${c}`).join(' union all '));
      const obj = this.object(f.select, t, numbered ? joins : undefined, from);
      this.grouping.clear();
      const rest = `${joined(joins)}${joined(from)}${this.filterWhere(f.filter, t)}`;
      let written = `(${this.reads.rowsRead(w.ctes, t, `${obj} ${rest}`)})`;
      let order = '';
      if (numbered) {
        const u = this.alias();
        written = `(select ${u}.*, row_number() over () as ${READ_ORDER} from ${written} as ${u})`;
        order = ` order by ${t}.${READ_ORDER}`;
      }
      return `${lit(f.key)}, (select coalesce(json_agg(${obj}${order}), '[]') from ${written} as ${t}${rest})`;
    });
    return `json_build_object(${parts.join(', ')})::text`;
  }

  /** While `returning`'s object is compiled, the aliases of the rows it reads whose array fields
   * over rows this statement wrote are grouped (Note [Arrays of written rows grouped]): the
   * returned rows and the objects joined to them, each with a select of the values the rows may
   * have in the given columns (undefined where it cannot tell). */
  private readonly grouping = new Map<string, (columns: readonly string[]) => string | undefined>();

  /** Whether `f` is an array relationship over a table this statement wrote (by a mapping, not
   * a function). */
  private groupable(f: FieldIR): f is Extract<FieldIR, { k: 'array' }> {
    return f.k === 'array' && f.mapping.length > 0 && !f.rows.from && this.overlay.has(tkey(f.rows.table));
  }

  override field(f: FieldIR, t: string, joins?: string[], from?: string[]): string {
    if (joins && this.groupable(f)) {
      const keys = this.grouping.get(t)?.(f.mapping.map(([mine]) => mine));
      if (keys !== undefined) return this.groupedArray(f, t, joins, keys);
    }
    return super.field(f, t, joins, from);
  }

  /** An object joined to rows whose arrays are grouped: its own are too, where their key is
   * among the columns it was joined by (its values then the joined rows' values of theirs). */
  protected override objectField(f: Extract<FieldIR, { k: 'object' }>, t: string, joins?: string[], from?: string[]): string {
    const parent = this.grouping.get(t);
    if (!parent || !joins) return super.objectField(f, t, joins, from);
    return this.objectWith(f, t, joins, from, (o, a, j, fr) => {
      if (j === joins) {
        const by = new Map(f.mapping.map(([mine, theirs]) => [theirs, mine]));
        this.grouping.set(a, (columns) => (columns.every((c) => by.has(c)) ? parent(columns.map((c) => by.get(c)!)) : undefined));
      }
      return this.object(o, a, j, fr);
    });
  }

  /** Note [Arrays of written rows grouped]: `f`'s rows of every row of `t` at once (`keys`: a
   * select of the values `t`'s rows may have in the mapping's columns), grouped by their key
   * to the row, joined to it by `joins`. */
  private groupedArray(f: Extract<FieldIR, { k: 'array' }>, t: string, joins: string[], keys: string): string {
    const a = this.alias();
    const g = this.alias();
    const theirs = f.mapping.map(([, remote]) => `${a}.${quoteIdent(remote)}`);
    // The order keys that are not the row's columns (through object relationships, aggregates,
    // computed fields: subqueries of the row) beside each row, where it is the table's row.
    const orderKeys = f.rows.orderBy.map((o) => this.orderKey(o, a));
    const key = (i: number) => (COLUMN.test(orderKeys[i]!) ? orderKeys[i]! : `${a}.${quoteIdent(`__svc_o${i}`)}`);
    const rows = `select ${a}.*${orderKeys.map((k, i) => (COLUMN.test(k) ? '' : `, ${k} as ${quoteIdent(`__svc_o${i}`)}`)).join('')}, row_number() over () as ${READ_ORDER} from ${this.src(f.rows.table)} as ${a} where (${theirs.join(', ')}) in (${keys}) and ${this.bool(f.rows.where, a, a)}`;
    const byKeys = f.rows.orderBy.map((o, i) => `${key(i)} ${DIRS[o.dir]}`);
    let from = `(${rows}) as ${a}`;
    // Distinct on: each returned row's first row of each value in the list's order, the list
    // then in its order (without one, the distinct columns').
    const dist = this.distinctColumns(f.rows, a);
    if (dist.length > 0) from = `(select distinct on (${[...theirs, ...dist].join(', ')}) ${a}.* from ${from} order by ${[...theirs, ...dist, ...byKeys, `${a}.${READ_ORDER}`].join(', ')}) as ${a}`;
    const order = [...byKeys, ...(byKeys.length === 0 ? dist : []), `${a}.${READ_ORDER}`];
    // A limit or offset: each returned row's rows numbered in the list's order, those in the window kept.
    const { limit, offset } = this.window(f.rows);
    if (limit !== undefined || offset !== undefined) {
      const bounds = [...(offset !== undefined ? [`${a}.${RANK} > ${offset}`] : []), ...(limit !== undefined ? [`${a}.${RANK} <= ${offset !== undefined ? `${offset} + ` : ''}${limit}`] : [])];
      from = `(select * from (select ${a}.*, row_number() over (partition by ${theirs.join(', ')} order by ${order.join(', ')}) as ${RANK} from ${from}) as ${a} where ${bounds.join(' and ')}) as ${a}`;
    }
    const obj = this.object(f.select, a);
    joins.push(
      `left join (select ${theirs.map((x, i) => `${x} as k${i}`).join(', ')}, json_agg(${obj} order by ${order.join(', ')}) as j from ${from} group by ${theirs.join(', ')}) as ${g} on ${f.mapping.map(([mine], i) => `${g}.k${i} = ${t}.${quoteIdent(mine)}`).join(' and ')}`,
    );
    return `coalesce(${g}.j, '[]')`;
  }

  /** Note [Mutations in one round trip]. */
  statement(json: string): string {
    const session = `_svc_s as (select set_config('svc.user', ${this.param({ k: 'session_json' }, true)}, true) as v)`;
    const whens = ['when (select v from _svc_s) is null then null'];
    // Note [Inserts in order]: where two inserts write one table, every insert read once, in
    // the request's order, before anything else.
    if (new Set(this.insertedInto).size < this.insertedInto.length) whens.push(`when ${this.count(this.inserted)} < 0 then null`);
    // The zero checks in order (a parent before what it wrote under it), before the role's
    // checks: a level short of a row has joined rows to the wrong ones (Note [Levels inserted
    // as sets]), and Hasura, row by row, stops at the parent that wrote nothing.
    const zeroes: [number, string, string][] = [
      ...this.levels.map(([i, c, n]): [number, string, string] => [i, `(select count(*) from ${c}) <> ${n}`, raise(`${ZERO_MARK}${i}:`)]),
      ...this.parents.map(([i, c]): [number, string, string] => [i, `not exists (select from ${c})`, raise(`${ZERO_MARK}${i}:`)]),
      ...this.keyedLevels.map(({ first, each, must: n, positions }): [number, string, string] => {
        // Note [Levels joined by key]: the first row that must have written and did not names
        // its zero check (the level's are in its rows' order).
        const must = positions === undefined ? `generate_series(1, ${n}) with ordinality as _q(p, j)` : `unnest(${positions}) with ordinality as _q(p, j)`;
        const count = positions === undefined ? `(select count(*) from ${each})` : `(select count(*) from unnest(${positions}) as _q(p) join ${each} as _e on _e.n = _q.p)`;
        // The least, aggregated before the cast raises: a sort or limit would come after the
        // cast of whichever row the anti-join returned first (a hash right anti join returns
        // them in the hash table's order).
        const missing = `(select ('${ZERO_MARK}' || (${first - 1} + min(_q.j)) || ':0')::int4 from ${must} where not exists (select from ${each} as _e where _e.n = _q.p))::text`;
        return [first, `${count} <> ${n}`, missing];
      }),
    ].sort((a, b) => a[0] - b[0]);
    // A default written into the statement that is no longer the column's: nothing else counts.
    this.defaults.forEach((d, i) => {
      const now = `(select md5(d.adbin::text) from pg_catalog.pg_attrdef as d join pg_catalog.pg_attribute as a on a.attrelid = d.adrelid and a.attnum = d.adnum where d.adrelid = ${lit(this.table(d.table))}::regclass and a.attname = ${lit(d.column)})`;
      whens.push(`when ${now} is distinct from ${d.key === null ? 'null' : lit(d.key)} then ${raise(`${DEFAULT_MARK}${i}:`)}`);
    });
    for (const [, condition, raised] of zeroes) whens.push(`when ${condition} then ${raised}`);
    if (this.checked.length) {
      const ok = `coalesce((select bool_and(c) from (${this.checked.map((c) => `select c from ${c}`).join(' union all ')}) as _k), true)`;
      whens.push(`when not ${ok} then ${raise(CHECK_MARK)}`);
    }
    return `with ${[session, ...this.with].join(', ')} select case ${whens.join(' ')} else ${json} end as json`;
  }
}

export function compileMutation(ir: MutationIR): CompiledQuery {
  const [q, byValues] = followingValues(() => compileMutationIR(ir));
  // Note [Rows repeating a key]: the statements follow the values of such keys.
  return byValues ? { ...q, perValue: true } : q;
}

function compileMutationIR(ir: MutationIR): CompiledQuery {
  if (ir.k === 'update_rows') {
    const c = new MutationCompiler();
    return compiled(c, c.finish(c.statement(c.updateRows(ir))));
  }
  const steps = ir.k === 'insert' ? inSteps(ir.insert) : undefined;
  if (steps) return compileSteps(ir as Extract<MutationIR, { k: 'insert' }>, steps);
  const c = new MutationCompiler();
  // Only a statement with nested rows reads what it wrote (Note [Nested inserts]).
  c.overlayOn = ir.k === 'insert' && ir.insert.rows.some(hasNested);
  const w = ir.k === 'insert' ? c.insert(ir.insert) : ir.k === 'update' ? c.update(ir) : c.delete(ir);
  // The top level's own rows (not its nested ones) are what the field returns; affected_rows
  // counts the nested ones too.
  const sql = c.finish(c.statement(c.output(ir.output, w, c.count(ir.k === 'insert' ? c.inserted : w.ctes))));
  return compiled(c, sql);
}

/** A statement of `c` with what its errors name. */
function compiled(c: MutationCompiler, sql: string): CompiledQuery {
  return { sql, params: c.params, ...(c.zeroes.length ? { zeroes: c.zeroes } : {}), ...(c.defaults.length ? { defaults: c.defaults.map(({ table, column }) => ({ table, column })) } : {}) };
}

/** One step's statement, answering `{n, r, p}` (Note [Batches in steps]); `r` only where the
 * field reads its rows (`readsRows`: not for `affected_rows` alone). */
function compileStep(step: Step, readsRows: boolean): CompiledQuery {
  const c = new MutationCompiler();
  c.overlayOn = true;
  const fixed: Fixed = new Map();
  for (const b of step.bound) {
    const cte = c.answered(b.step, b.table);
    // No zero check of its own (`bindAs` undefined): the step that answered the row checked it.
    for (const [own, theirs] of b.mapping) fixed.set(own, { cte, column: theirs, bindAs: undefined, index: -1 });
  }
  const w = c.insert(step.ir, fixed);
  for (const z of step.writes ?? []) c.mustWrite(step.ir.table, z, w.ctes[0]!);
  const parts = [`'n', ${c.count(c.inserted)}`];
  // The rows answered as text of the table's records: whole rows here (Note [Written rows as columns]).
  if (step.root && readsRows) parts.push(`'r', (select coalesce(array_agg(_w.r), '{}') from (${w.ctes.map((x) => `select ${c.reads.wholeRow(x)} as r from ${x}`).join(' union all ')}) as _w)::text`);
  if (step.keeps) parts.push(`'p', (select (${c.reads.wholeRow(w.ctes[0]!)})::text from ${w.ctes[0]})`);
  return compiled(c, c.finish(c.statement(`json_build_object(${parts.join(', ')})::text`)));
}

/** Note [Batches in steps]: the steps, and the field's statement over their answers. */
function compileSteps(ir: Extract<MutationIR, { k: 'insert' }>, plan: Step[]): CompiledQuery {
  const readsRows = ir.output.k === 'single' || ir.output.fields.some((f) => f.k === 'returning');
  const steps = plan.map((s) => compileStep(s, readsRows));
  const c = new MutationCompiler();
  const answers = `(${c.bind({ k: 'steps' })})::json`;
  const cte = c.name();
  c.with.push(`${cte} as (select _u as r from json_array_elements(${answers}) as _s(v) cross join lateral unnest((_s.v ->> 'r')::${c.table(ir.insert.table)}[]) as _u)`);
  const affected = `(select coalesce(sum((_s.v ->> 'n')::int8), 0) from json_array_elements(${answers}) as _s(v))`;
  return { ...compiled(c, c.finish(c.statement(c.output(ir.output, { ctes: [cte] }, affected)))), steps };
}

const NO_FIXED: Fixed = new Map();
/** A grouped array's row number within its returned row (Note [Arrays of written rows grouped]). */
const RANK = '"__svc_k"';
const NULL_VALUE = { k: 'lit', v: null } as const;
const TRUE_VALUE = { k: 'lit', v: true } as const;

/** The parent columns of rows under one parent row (Note [Nested inserts]) as a join to its
 * CTE; undefined where they come from more than one. */
function joinOfFixed(fixed: Fixed): Omit<Join, 'positions'> | undefined {
  const ctes = new Set([...fixed.values()].map((p) => p.cte));
  if (ctes.size !== 1) return undefined;
  return { cte: [...ctes][0]!, mapping: [...fixed].map(([own, p]) => [p.column, own] as const) };
}
