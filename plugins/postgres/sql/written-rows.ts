/**
 * What a mutation statement reads of the rows its writes return (Note [Written rows as columns]):
 * each write's RETURNING list, the reads of its rows' columns that mark what that list holds, the
 * CTEs that pass the rows on, and the FROM items of a table the statement wrote. The lists are
 * placeholders until the statement is whole (`resolve`). Used by the mutation compiler of
 * ./compile-mutation.ts, one instance per statement.
 */
import { UnsupportedQuery } from '../../database/index.js';
import { quoteIdent } from './identifiers.js';
import { columnsRead, readsOf } from './narrow.js';

/*
 * Note [Written rows as columns]
 * A CTE that returns its rows whole (`returning _t0 as r`) makes each row a composite value,
 * and PostgreSQL detoasts every out-of-line value of the row to make one (a composite may not
 * point into a TOAST table): an update or delete of rows with a large text or jsonb read all
 * of it back, whatever the answer asked, even `affected_rows` alone. 200 rows of 960 kB each:
 * `returning _t0 as r` 306-330 ms, `returning _t0.*` or the key alone 0.6-1.0 ms (PostgreSQL
 * 15, psql). So a write keeps its rows' columns, `_0`, `_1`, ... by their position in the
 * table (`tableColumns` of its IR, the model's; names of the compiler's own, so that no column
 * meets `c`, `o`, `i` or `n`), which keep pointers into the TOAST table until a value is read,
 * and of them only those the statement reads. Every read of a written row goes through
 * `columnOf` and `rowsOf` (below), which mark the columns they read: the answer (the columns
 * its text names on the returned rows' alias, `rowsRead`, read as Note [Narrow rows] reads a
 * statement; all of them where it uses the row whole, as a computed field does), a parent's
 * columns for its rows, the levels joined by position or by key (whose CTEs pass the columns
 * on, `passedOn`, sharing the marks), the statement's later reads of a table it wrote (`src`
 * and `withWrites` in ./compile-mutation.ts: a FROM item whose parts, the table and the
 * writes, select the columns the statement names on its alias, `readAs`; all of them where it
 * reads the row whole). The lists (the FROM items', then RETURNING's and those passed on) are
 * written once the statement is whole (`resolve`); a write whose rows nothing reads
 * (`affected_rows` alone) returns `null as _`. Hasura returns `*` the same way. Where a value
 * of the row type is read (`wholeRow`): a step's answer (Note [Batches in steps]) and a merged
 * upsert's row as its first row inserted it (Note [Rows upserting one row]), the write returns
 * `r` too, the row whole as the database has it (its values fetched, as they must be there). A
 * write whose IR gives no columns (another kind's, a hand-built one) keeps `r` alone, as do the
 * CTEs of rows the steps answered. The columns are the metadata's, so DDL that did not go
 * through `run_sql` fails, until `reload_metadata`, only what names a column it dropped (as
 * Hasura's `returning *` does): an answer reading it, or one reading a row whole of a table the
 * statement wrote (a computed field of a row a nested insert wrote, which names every column);
 * a column added fails nothing. Figures: docs/benchmarks.md "Wide rows".
 * Tests: compile.test.ts's and compile-groups.test.ts's goldens; written-rows.test.ts.
 */

/** Where a list of written columns goes (`columnList`): between NUL characters, which no
 * identifier or literal of the statement holds, as Note [Narrow rows]'s placeholders
 * (`\0_t<n>\0`, which these never match), and replaced before them. */
const COLUMN_LIST = (k: number) => `\u0000w${k}\u0000`;
const COLUMN_LISTS = /\u0000w(\d+)\u0000/g;
/** Where a FROM item of `readAs` goes, and its alias after it. */
const FROM_ITEM = (k: number) => `\u0000f${k}\u0000`;
const FROM_ITEMS = /\u0000f(\d+)\u0000(\s+as\s+(_t\d+))?/gi;

/** What a statement reads of a write's rows (Note [Written rows as columns]): the positions of
 * its columns read (one set for the write and the CTEs that pass its rows on, `from` the CTE
 * one passed them on from), and whether the row is read whole. */
interface Reads {
  columns: Set<number>;
  whole: boolean;
  from?: Reads;
}

/** One statement's written rows: what each write returns and what the statement reads of it. */
export class WrittenRows {
  /** RETURNING's list of the rows the write `cte` writes as `t`: their columns of `columns`
   * that the statement reads, once it is whole (Note [Written rows as columns]), else the row
   * whole. */
  writtenRow(cte: string, t: string, columns: readonly string[] | undefined): string {
    if (!columns?.length) return `${t} as r`;
    this.columnar.set(cte, new Map(columns.map((c, i) => [c, i])));
    const read: Reads = { columns: new Set(), whole: false };
    this.read.set(cte, read);
    return this.columnList(read, (i) => `${t}.${quoteIdent(columns[i]!)} as _${i}`, `${t} as r`);
  }

  /** The writes that keep their rows' columns, each column's position (Note [Written rows as
   * columns]); any other keeps its rows whole (`r`). */
  private readonly columnar = new Map<string, ReadonlyMap<string, number>>();

  /** What the statement reads of each such write's rows, filled in by the reads below. */
  private readonly read = new Map<string, Reads>();

  /** The lists of written columns, each of what was read (`read`) once the statement is whole
   * (`resolve`): the row whole (`whole`) where it was, and its columns read (by `item`) in
   * the table's order. */
  private readonly columnLists: { read: Reads; item: (at: number) => string; whole: string }[] = [];

  /** A list of what is read of `read`, written when the statement is whole
   * (`resolveColumnLists`). */
  private columnList(read: Reads, item: (at: number) => string, whole: string): string {
    return COLUMN_LIST(this.columnLists.push({ read, item, whole }) - 1);
  }

  /** `sql` with each list of written columns in place: a constant where it reads none, as a
   * RETURNING list cannot be empty and a list passed on stands before other items. */
  private resolveColumnLists(sql: string): string {
    if (this.columnLists.length === 0) return sql;
    return sql.replace(COLUMN_LISTS, (_m, k: string) => {
      const { read, item, whole } = this.columnLists[Number(k)]!;
      const list = [...(read.whole ? [whole] : []), ...[...read.columns].sort((a, b) => a - b).map(item)];
      return list.length === 0 ? 'null as _' : list.join(', ');
    });
  }

  /** That the statement reads every column of the write `cte`'s rows. */
  private readsAll(cte: string): void {
    const read = this.read.get(cte);
    if (read) for (const at of this.columnar.get(cte)!.values()) read.columns.add(at);
  }

  /** Column `c` of a row of the write `cte`, read as `alias`. */
  columnOf(cte: string, c: string, alias: string = cte): string {
    const kept = this.columnar.get(cte);
    if (!kept) return `(${alias}.r).${quoteIdent(c)}`;
    const at = kept.get(c);
    if (at === undefined) throw new UnsupportedQuery(`column "${c}" is not one of the table's`);
    this.read.get(cte)!.columns.add(at);
    return `${alias}._${at}`;
  }

  /** The select list of a row of the write `cte`, read as `alias`, as the table's columns:
   * those of `columns` where given, else all it keeps. */
  rowsOf(cte: string, alias: string = cte, columns?: readonly string[]): string {
    const kept = this.columnar.get(cte);
    if (columns) return columns.map((c) => `${this.columnOf(cte, c, alias)} as ${quoteIdent(c)}`).join(', ');
    if (!kept) return `(${alias}.r).*`;
    this.readsAll(cte);
    return [...kept].map(([c, i]) => `${alias}._${i} as ${quoteIdent(c)}`).join(', ');
  }

  /** The rows of the writes `ctes` (a union) as the table's columns that `sql` reads on alias
   * `t`, or all of them where it reads the row whole (Note [Written rows as columns]). */
  rowsRead(ctes: readonly string[], t: string, sql: string): string {
    const read = columnsRead(sql, t);
    return ctes.map((c) => `select ${this.rowsOf(c, c, this.keptOf(c, read))} from ${c}`).join(' union all ');
  }

  /** Of the columns the write `cte` keeps, those of `read` in the table's order; undefined
   * (all of them) where `read` is (a row read whole) or the write keeps its rows whole. */
  keptOf(cte: string, read: readonly string[] | undefined): string[] | undefined {
    return read && this.keptColumns(cte)?.filter((c) => read.includes(c));
  }

  /** The columns the write `cte` keeps, undefined where it keeps its rows whole. */
  keptColumns(cte: string): readonly string[] | undefined {
    const kept = this.columnar.get(cte);
    return kept && [...kept.keys()];
  }

  /** A row of the write `cte`, read as `alias`, as a value of its table's row type (`r`): the
   * row as the database has it, whatever DDL did since the metadata was read. */
  wholeRow(cte: string, alias: string = cte): string {
    for (let read = this.read.get(cte); read && !read.whole; read = read.from) read.whole = true;
    return `${alias}.r`;
  }

  /** The kept columns of the write `cte` read as `alias` under their own names, for a CTE that
   * passes its rows on (`into`, which keeps them the same way: the columns read of either are
   * read of both; the row whole is passed on where it is read of `into`). */
  passedOn(cte: string, alias: string, into: string): string {
    const kept = this.columnar.get(cte);
    if (!kept) return `${alias}.r`;
    this.columnar.set(into, kept);
    const from = this.read.get(cte)!;
    const read: Reads = { columns: from.columns, whole: false, from };
    this.read.set(into, read);
    return this.columnList(read, (i) => `${alias}._${i}`, `${alias}.r`);
  }

  /** A FROM item of table columns, written once the statement is whole by `make` with those of
   * `all` the statement reads on the item's alias (`<from item> as <alias>`), or all of them
   * where it reads the row whole (Note [Written rows as columns]). */
  readAs(all: readonly string[], make: (columns: readonly string[]) => string): string {
    return FROM_ITEM(this.fromItems.push({ all, make }) - 1);
  }

  private readonly fromItems: { all: readonly string[]; make: (columns: readonly string[]) => string }[] = [];

  /** `sql` with each FROM item of `readAs` written, then each list of written columns (the
   * items mark what they read of the writes): once the statement is whole. */
  resolve(sql: string): string {
    if (this.fromItems.length > 0) {
      const reads = readsOf(sql);
      sql = sql.replace(FROM_ITEMS, (_m, k: string, as: string | undefined, alias: string | undefined) => {
        const { all, make } = this.fromItems[Number(k)]!;
        const read = alias === undefined ? undefined : reads(alias);
        return `${make(read ? all.filter((c) => read.includes(c)) : all)}${as ?? ''}`;
      });
    }
    return this.resolveColumnLists(sql);
  }
}
