import { describe, expect, it } from 'vitest';
import { internIntrospection, sameJson } from './intern.js';
import type { Introspection, TableInfo } from './types.js';

const table = (name: string, columns: string[]): TableInfo => ({
  schema: 'public',
  name,
  oid: name.length,
  relation: 'table',
  columns: columns.map((c, i) => ({ name: c, position: i + 1, type: 'integer', nullable: true }) as unknown as TableInfo['columns'][number]),
  primaryKey: null,
  uniqueConstraints: [],
  foreignKeys: [],
  description: null,
  viewInfo: null,
});
const intro = (tables: TableInfo[], fns: string[] = []): Introspection => ({
  tables: new Map(tables.map((t) => [`"public"."${t.name}"`, t])),
  functions: new Map(fns.map((f) => [`"public"."${f}"`, [{ schema: 'public', name: f, args: [], returnType: 'int4', returnTypeSchema: 'pg_catalog', returnTypeKind: 'base', returnsSet: false, variadic: false, volatility: 'stable', kind: 'f', description: null }]])),
  types: new Map(),
});

describe('sameJson', () => {
  it('compares what JSON reads: arrays by position, objects by key, other objects by identity', () => {
    expect(sameJson({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toBe(true);
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson(1, '1')).toBe(false);
    expect(sameJson(new Date(0), new Date(0))).toBe(false);
  });
});

describe('internIntrospection (Note [Interned introspection])', () => {
  it('takes the previous info of every table that is equal, and the previous functions and types when all are', () => {
    const prev = intro([table('a', ['id']), table('b', ['id'])], ['f']);
    const next = internIntrospection(intro([table('a', ['id']), table('b', ['id', 'x']), table('c', ['id'])], ['f']), prev);
    expect(next.tables.get('"public"."a"')).toBe(prev.tables.get('"public"."a"'));
    expect(next.tables.get('"public"."b"')).not.toBe(prev.tables.get('"public"."b"'));
    expect(next.tables.get('"public"."b"')!.columns.map((c) => c.name)).toEqual(['id', 'x']);
    expect(next.tables.get('"public"."c"')!.name).toBe('c');
    expect(next.functions).toBe(prev.functions);
    expect(next.types).toBe(prev.types);
  });

  it('keeps the new functions when one differs, or one was added', () => {
    const prev = intro([table('a', ['id'])], ['f']);
    expect(internIntrospection(intro([table('a', ['id'])], ['f', 'g']), prev).functions).not.toBe(prev.functions);
    const changed = intro([table('a', ['id'])], ['f']);
    changed.functions.get('"public"."f"')![0]!.volatility = 'volatile';
    expect(internIntrospection(changed, prev).functions).not.toBe(prev.functions);
  });

  it('leaves a table whose oid changed (dropped and created again) as new', () => {
    const prev = intro([table('a', ['id'])]);
    const again = intro([{ ...table('a', ['id']), oid: 99 }]);
    expect(internIntrospection(again, prev).tables.get('"public"."a"')).not.toBe(prev.tables.get('"public"."a"'));
  });
});
