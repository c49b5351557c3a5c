/** Table lookups through the shared position index (Note [Table positions] in meta.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Metadata, SourceMeta, TableMeta } from './types.js';
import * as v from '../../../core/valibot.js';
import { appendTable, documentName, findTable, qualifiedTableSchema, removeTable, tablePosition, updateTable, withoutTable } from './meta.js';

const table = (name: string, extra: Partial<TableMeta> = {}): TableMeta => ({ table: { schema: 'public', name }, ...extra }) as TableMeta;
const source = (tables: TableMeta[]): SourceMeta => ({ name: 'default', kind: 'postgres', tables, configuration: {} }) as unknown as SourceMeta;
const md = (s: SourceMeta): Metadata => ({ version: 3, sources: [s] }) as unknown as Metadata;
const tablesOf = (m: Metadata) => (m.sources as SourceMeta[])[0]!.tables;
const names = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `t${from + i}`);

describe('table lookups (Note [Table positions])', () => {
  for (const n of [5, 100]) {
    it(`every list of a lineage answers for itself: updates, appends, removals (${n} tables)`, () => {
      const v0 = tablesOf(md(source(names(n).map((x) => table(x)))));
      expect(findTable(source(v0), { schema: 'public', name: 't3' })).toBe(v0[3]);
      // Replaced in place: the new list finds the new entry, the old one its own.
      const v1 = tablesOf(updateTable(md(source(v0)), 'default', { schema: 'public', name: 't3' }, 'public', (t) => ({ ...t, is_enum: true })));
      expect(findTable(source(v1), { schema: 'public', name: 't3' })).toBe(v1[3]);
      expect(v1[3]).not.toBe(v0[3]);
      expect(findTable(source(v0), { schema: 'public', name: 't3' })).toBe(v0[3]);
      // Two lists appended to one list: each finds its own table only.
      const a = appendTable(v1, table('new_a'));
      const b = appendTable(v1, table('new_b'));
      expect(findTable(source(a), { schema: 'public', name: 'new_a' })).toBe(a[n]);
      expect(findTable(source(a), { schema: 'public', name: 'new_b' })).toBeUndefined();
      expect(findTable(source(b), { schema: 'public', name: 'new_b' })).toBe(b[n]);
      expect(findTable(source(b), { schema: 'public', name: 'new_a' })).toBeUndefined();
      expect(findTable(source(v1), { schema: 'public', name: 'new_a' })).toBeUndefined();
      expect(tablePosition(v0, { schema: 'public', name: 'new_b' })).toBe(-1);
      // Removed: positions move; the list indexes itself.
      const c = tablesOf(removeTable(md(source(a)), 'default', { schema: 'public', name: 't0' }));
      expect(findTable(source(c), { schema: 'public', name: 't0' })).toBeUndefined();
      expect(findTable(source(c), { schema: 'public', name: 'new_a' })).toBe(c[n - 1]);
      expect(findTable(source(c), { schema: 'public', name: 't4' })).toBe(c[3]);
      // The old lists are untouched by all of it.
      for (const [i, x] of names(n).entries()) expect(findTable(source(v0), { schema: 'public', name: x })).toBe(v0[i]);
      expect(findTable(source(v0), { schema: 'other', name: 't1' })).toBeUndefined();
    });
  }

  it('lists that share an index through removals of the last table and appends, in any order, each answer for themselves', () => {
    const qt = (name: string) => ({ schema: 'public', name });
    const v0 = names(40).map((x) => table(x));
    expect(findTable(source(v0), qt('t0'))).toBe(v0[0]); // indexed
    // Track x, untrack it, track y then x: x's position in the shared map is not where the
    // later lists have it.
    const a = appendTable(v0, table('x'));
    const b = withoutTable(a, qt('x'));
    const c = appendTable(b, table('y'));
    const d = appendTable(c, table('x'));
    // x appended past another table: `a` has it where the map no longer says.
    expect(tablePosition(a, qt('x'))).toBe(40);
    const e = withoutTable(d, qt('x'));
    const f = withoutTable(e, qt('y'));
    const g = appendTable(f, table('x'));
    const lists = { v0, a, b, c, d, e, f, g };
    expect(Object.fromEntries(Object.entries(lists).map(([k, l]) => [k, l.slice(40).map((t) => t.table.name).join(',')]))).toEqual({
      v0: '', a: 'x', b: '', c: 'y', d: 'y,x', e: 'y', f: '', g: 'x',
    });
    for (const [k, l] of Object.entries(lists)) {
      for (const name of [...names(41), 'x', 'y']) {
        const i = l.findIndex((t) => t.table.name === name);
        expect(tablePosition(l, qt(name)), `${k}: ${name}`).toBe(i);
        expect(findTable(source(l), qt(name)), `${k}: ${name}`).toBe(i < 0 ? undefined : l[i]);
      }
    }
    // Not the last table: the others move, a list of its own.
    const h = withoutTable(d, qt('t5'));
    expect(h.map((t) => t.table.name)).toEqual([...names(40).filter((x) => x !== 't5'), 'y', 'x']);
    expect(findTable(source(h), qt('x'))).toBe(h[40]);
    expect(findTable(source(h), qt('t5'))).toBeUndefined();
    // A table listed twice (a document written by hand) goes whole, as a filter would take it.
    const twice = [...v0, table('t3')];
    expect(withoutTable(twice, qt('t3')).map((t) => t.table.name)).toEqual(names(40).filter((x) => x !== 't3'));
    expect(withoutTable(v0, qt('absent'))).toEqual(v0);
  });

  it('the table untracked last is looked up in the list without it by its one position, not a scan', () => {
    const qt = (name: string) => ({ schema: 'public', name });
    const v0 = names(100).map((x) => table(x));
    expect(findTable(source(v0), qt('t1'))).toBe(v0[1]); // indexed
    const without = withoutTable(appendTable(v0, table('x')), qt('x'));
    Object.defineProperty(without, 'findIndex', { value: () => expect.fail('scanned') });
    expect(tablePosition(without, qt('x'))).toBe(-1);
    const again = appendTable(without, table('x'));
    Object.defineProperty(again, 'findIndex', { value: () => expect.fail('scanned') });
    expect(tablePosition(again, qt('x'))).toBe(100);
    expect(tablePosition(again, qt('y'))).toBe(-1);
  });

  it('any lineage of appends, removals and replacements: every list answers every name as a scan would', () => {
    const qt = (name: string) => ({ schema: 'public', name });
    const pool = [...names(36), 'x', 'y', 'z'];
    type Step = { from: number; op: 'append' | 'remove' | 'replace'; name: number };
    fc.assert(
      fc.property(
        fc.array(fc.record({ from: fc.nat(), op: fc.constantFrom('append', 'remove', 'replace'), name: fc.nat({ max: pool.length - 1 }) }) as fc.Arbitrary<Step>, { maxLength: 25 }),
        (steps) => {
          const lists: TableMeta[][] = [names(34).map((x) => table(x))];
          findTable(source(lists[0]!), qt('t0')); // indexed
          for (const { from, op, name } of steps) {
            const l = lists[from % lists.length]!;
            const last = l[l.length - 1];
            // Removals of the last table share the index, of others not: both, by the name drawn.
            if (op === 'remove') lists.push(withoutTable(l, name % 2 === 0 && last ? last.table : qt(pool[name]!)));
            else if (op === 'append') {
              if (tablePosition(l, qt(pool[name]!)) < 0) lists.push(appendTable(l, table(pool[name]!)));
            } else if (tablePosition(l, qt(pool[name]!)) >= 0) {
              lists.push(tablesOf(updateTable(md(source(l)), 'default', qt(pool[name]!), 'public', (t) => ({ ...t, is_enum: !t.is_enum }))));
            }
          }
          for (const l of lists) for (const name of pool) expect(tablePosition(l, qt(name))).toBe(l.findIndex((t) => t.table.name === name));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a list still being assembled (pushed to) is indexed again when it grows', () => {
    const list: TableMeta[] = names(40).map((x) => table(x));
    expect(findTable(source(list), { schema: 'public', name: 't39' })).toBe(list[39]);
    list.push(table('late'));
    expect(findTable(source(list), { schema: 'public', name: 'late' })).toBe(list[40]);
  });
});

describe('table names of a kind (Note [Table names of a kind])', () => {
  it('a kind with the default namespace key reads a bare name or {schema?, name}', () => {
    const pg = qualifiedTableSchema('public');
    expect(v.parse(pg, 'author')).toEqual({ schema: 'public', name: 'author' });
    expect(v.parse(pg, { name: 'author' })).toEqual({ schema: 'public', name: 'author' });
    expect(v.safeParse(pg, { dataset: 'shop', name: 'author' }).success).toBe(true); // an unknown key is ignored, as valibot's object does
    expect(documentName({ schema: 'public', name: 'author' }, undefined)).toEqual({ schema: 'public', name: 'author' });
  });

  it("a kind whose namespace is `dataset` reads {dataset, name} (the dataset required) and its own {schema, name}; writes {dataset, name}", () => {
    const bq = qualifiedTableSchema('', 'dataset');
    expect(v.parse(bq, { dataset: 'shop', name: 'author' })).toEqual({ schema: 'shop', name: 'author' });
    expect(v.parse(bq, { schema: 'shop', name: 'author' })).toEqual({ schema: 'shop', name: 'author' });
    const bare = v.safeParse(bq, 'author');
    expect(bare.success).toBe(false);
    expect(bare.issues?.[0]?.message).toBe('expected a table name: an object {dataset, name}');
    expect(v.safeParse(bq, { name: 'author' }).success).toBe(false);
    // One schema per (default schema, namespace): the PostgreSQL one is not the BigQuery one.
    expect(qualifiedTableSchema('', 'dataset')).toBe(bq);
    expect(qualifiedTableSchema('')).not.toBe(bq);
    expect(documentName({ schema: 'shop', name: 'author' }, 'dataset')).toEqual({ dataset: 'shop', name: 'author' });
  });
});
