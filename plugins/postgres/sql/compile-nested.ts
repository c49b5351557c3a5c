/**
 * Updates with writes through relationships (`_nested`; Note [Nested updates] in
 * plugins/database/schema/nested-update.ts) -> one PostgreSQL statement of data-modifying CTEs.
 * The mutation compiler of compile-mutation.ts does the SQL of each update, delete and the output; this
 * one chains them and makes the statement's reads see its writes (Note [Nested updates in SQL]).
 */
import type { BoolIR, CompiledQuery, NestedInsertIR, NestedWriteIR, QualifiedTable, UpdateIR } from '../../database/index.js';
import { MutationCompiler, type Written } from './compile-mutation.js';
import { quoteIdent } from './identifiers.js';
import { tkey } from './insert-plan.js';

/*
 * Note [Nested updates in SQL]
 * Every write is a CTE returning its rows (`r` below; their columns, Note [Written rows as
 * columns]) and the role's check on them (`c`), as in Note [Mutation statements]; a write
 * through a relationship names its parents' CTE:
 *
 *   _c0 as (update author as _t0 set ... where <filter> returning _t0 as r, <check> as c),
 *   _c1 as (delete from article as _t1 where <where and filter>
 *             and exists (select from (select (_c0.r).* from _c0) as _t2 where _t2."id" = _t1."author_id") returning _t1 as r),
 *   _c2 as (update article as _t3 set ... where <...> and exists (<a parent in _c0>)
 *             and not exists (<the row in _c1, by primary key>) returning _t3 as r, <check> as c),
 *   _c3 as (insert into article as _t5 ("title", "author_id")
 *             select _v."title", (_p.r)."id" from _c0 as _p, (values (1, $1::text::text)) as _v("__svc_n", "title")
 *             returning _t5 as r, <check> as c)
 *
 * The parent link and the exclusion of rows written before are boolean expressions of the IR
 * (`exists` over a CTE, which `src` reads as a table), so the compiler's own update and delete
 * write them. A parent whose own row is not written (an update with `_nested` only) is a CTE
 * that selects the rows. Every CTE sees the snapshot taken before the statement, so the
 * statement reads its own writes through `src`: a table written before is read as its rows minus
 * those updated or deleted (by primary key), plus the new versions and the rows inserted. That is
 * what makes `returning` (and its relationships) read the state after the whole mutation, and
 * each check the state after the writes before it: the writes happen as if one after the other,
 * depth first, each relationship's deletes, then its updates, then its inserts. PostgreSQL
 * leaves unpredictable which of two writes of one row in one statement wins; a row is written
 * once here: a later update or delete leaves out the rows an earlier one of the statement wrote
 * (by primary key), and neither sees the rows the statement inserted (the snapshot). A primary
 * key the mutation changes would break that matching, so the planner refuses it.
 */

/** The schema of the pseudo-tables that stand for CTEs in the IR (no real schema name has a NUL). */
const CTE = '\u0000cte';
const cteTable = (name: string): QualifiedTable => ({ schema: CTE, name });

/** Some row of CTE `cte` has `pairs` (its column, the row's column) equal to the row's. */
const inCte = (cte: string, pairs: readonly (readonly [string, string])[]): BoolIR => ({
  t: 'exists',
  table: cteTable(cte),
  e: { t: 'and', of: pairs.map(([theirs, mine]) => ({ t: 'ccmp' as const, column: theirs, op: 'ceq', other: mine, root: true })) },
});

interface Entry {
  cte: string;
  k: 'update' | 'delete' | 'insert';
  key?: readonly string[];
}

class NestedCompiler extends MutationCompiler {
  /** The writes of the statement so far, by table (Note [Nested updates in SQL]). */
  private readonly written = new Map<string, Entry[]>();
  /** The CTEs whose rows `affected_rows` counts. */
  readonly affected: string[] = [];

  override src(t: QualifiedTable): string {
    if (t.schema === CTE) return this.writtenRows(t.name);
    const entries = this.written.get(tkey(t));
    if (!entries) return super.src(t);
    return this.withWrites(
      t,
      entries.filter((e) => e.k !== 'insert'),
      entries.filter((e) => e.k !== 'delete').map((e) => e.cte),
    );
  }

  private record(table: QualifiedTable, e: Entry): void {
    const k = tkey(table);
    const list = this.written.get(k);
    if (list) list.push(e);
    else this.written.set(k, [e]);
    this.affected.push(e.cte);
  }

  /** Rows of `table` not written by an update or delete of the statement before. */
  private notWritten(table: QualifiedTable, key: readonly string[] | undefined): BoolIR[] {
    if (!key?.length) return [];
    return (this.written.get(tkey(table)) ?? []).filter((e) => e.k !== 'insert').map((e) => ({ t: 'not', e: inCte(e.cte, key.map((c) => [c, c] as const)) }));
  }

  /** An update (its own rows, then its writes through relationships); `link`: its parents. */
  nestedUpdate(ir: Omit<UpdateIR, 'output'>, link?: BoolIR): Written {
    const where: BoolIR = { t: 'and', of: [ir.where, ...(link ? [link] : []), ...this.notWritten(ir.table, ir.key)] };
    let cte: string;
    if (ir.set.length > 0) {
      cte = this.update({ ...ir, where, output: { k: 'multi', fields: [] } }).ctes[0]!;
      this.record(ir.table, { cte, k: 'update', key: ir.key });
    } else {
      // Not written: only the parents of what follows.
      cte = this.name();
      const t = this.alias();
      this.with.push(`${cte} as (select ${this.reads.writtenRow(cte, t, ir.tableColumns)} from ${this.table(ir.table)} as ${t} where ${this.bool(where, t, t)})`);
    }
    for (const n of ir.nested ?? []) this.through(n, cte);
    return { ctes: [cte] };
  }

  /** The writes through one relationship of the rows of CTE `parent`. */
  private through(n: NestedWriteIR, parent: string): void {
    const link = inCte(parent, n.mapping);
    const columns = n.tableColumns ? { tableColumns: n.tableColumns } : {};
    if (n.delete) {
      const where: BoolIR = { t: 'and', of: [n.delete.where, link, ...this.notWritten(n.table, n.key)] };
      const cte = this.delete({ table: n.table, where, output: { k: 'multi', fields: [] }, ...columns }).ctes[0]!;
      this.record(n.table, { cte, k: 'delete', key: n.key });
    }
    if (n.update) this.nestedUpdate({ table: n.table, key: n.key, ...n.update, ...columns }, link);
    if (n.insert) this.nestedInsert(n.table, n.insert, n.mapping, parent, n.tableColumns);
  }

  /** The rows of `ir` for every row of CTE `parent`, the mapped columns taken from it. Rows
   * giving the same columns are one INSERT (a row with rows of its own is one alone, so that
   * they name it as their parent). */
  private nestedInsert(table: QualifiedTable, ir: NestedInsertIR, mapping: NestedWriteIR['mapping'], parent: string, tableColumns: readonly string[] | undefined): void {
    const batches: NestedInsertIR['rows'][] = [];
    const byColumns = new Map<string, NestedInsertIR['rows']>();
    for (const row of ir.rows) {
      if (row.after.length > 0) {
        batches.push([row]);
        continue;
      }
      const cols = [...row.values.keys()].sort().join('\u0000');
      let b = byColumns.get(cols);
      if (!b) {
        byColumns.set(cols, (b = []));
        batches.push(b);
      }
      b.push(row);
    }
    for (const rows of batches) {
      const cte = this.name();
      const t = this.alias();
      const cols = [...rows[0]!.values.keys()];
      const values = rows.map((r, i) => {
        const vals = cols.map((c) => {
          const v = r.values.get(c)!;
          const col = ir.columns.get(c);
          // A column's default is a column left out (DEFAULT is only valid in INSERT's own VALUES).
          if (!col || v.k === 'default') throw new Error(`unexpected value for column "${c}"`);
          return this.value(v.value, col.scalar);
        });
        return `(${[String(i + 1), ...vals].join(', ')})`;
      });
      const target = [...cols, ...mapping.map(([, remote]) => remote)].map(quoteIdent).join(', ');
      const select = [...cols.map((c) => `_v.${quoteIdent(c)}`), ...mapping.map(([own]) => this.reads.columnOf(parent, own, '_p'))].join(', ');
      const check = this.bool(ir.check, t, t);
      const sql =
        `insert into ${this.table(table)} as ${t} (${target}) select ${select} from ${parent} as _p, ` +
        `(values ${values.join(', ')}) as _v(${['"__svc_n"', ...cols.map(quoteIdent)].join(', ')}) returning ${this.reads.writtenRow(cte, t, tableColumns)}, ${check} as c`;
      this.with.push(`${cte} as (${sql})`);
      if (check !== 'true') this.checked.push(cte);
      this.record(table, { cte, k: 'insert' });
      for (const n of rows[0]!.after) this.through(n, cte);
    }
  }
}

/** An update with `_nested` (UpdateIR.nested): one statement (Note [Nested updates in SQL]). */
export function compileNestedUpdate(ir: UpdateIR): CompiledQuery {
  const c = new NestedCompiler();
  const w = c.nestedUpdate(ir);
  return { sql: c.finish(c.statement(c.output(ir.output, w, c.count(c.affected)))), params: c.params };
}
