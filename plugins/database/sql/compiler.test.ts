/**
 * The default SQL compiler (Note [The default SQL compiler]) by itself: a minimal kind that
 * implements only the abstract methods (standard SQL: double-quoted identifiers, `:pN` parameters,
 * JSON_OBJECT), over the shared golden cases, shows what the base writes and refuses when a kind
 * overrides nothing, and that `lowercaseKeywords` lowers the base's keywords and nothing else.
 * The three real kinds' SQL is pinned by their own golden tests (plugins/<kind>/compile.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { AggregateIR, BoolIR, ColumnType, FieldIR, ObjectIR, OrderItem, RootIR, ScalarType } from '../index.js';
import { goldenCases, literalCount, plainDecimal, SqlCompiler, UnsupportedQuery } from '../index.js';
import type { Joins } from './compiler.js';

/** Standard SQL, everything else the base's defaults. */
class StandardCompiler extends SqlCompiler {
  ident(name: string): string {
    return `"${name.replace(/"/g, '""')}"`;
  }
  string(s: string): string {
    return `'${s.replace(/'/g, "''")}'`;
  }
  protected paramRef(n: number): string {
    return `:p${n}`;
  }
  object(o: ObjectIR, t: string): string {
    return `JSON_OBJECT(${o.fields.map((f) => `${this.string(f.key)} VALUE ${this.field(f, t)}`).join(', ')})`;
  }
  protected objectField(f: Extract<FieldIR, { k: 'object' }>, t: string): string {
    const a = this.alias();
    return `(SELECT ${this.object(f.select, a)} FROM ${this.table(f.rows.table)} AS ${a} WHERE ${this.rowsWhere(f.rows.where, a, this.join(f.mapping, a, t))})`;
  }
  protected arrayField(): string {
    throw this.unsupported('array relationships');
  }
  protected aggregateField(): string {
    throw this.unsupported('aggregates');
  }
  protected rootSelect(ir: Extract<RootIR, { k: 'select' }>, t: string): string {
    const keys = ir.rows.orderBy.map((o) => this.orderKey(o, t));
    const from = `(SELECT ${t}.*${this.projectKeys(keys)} FROM ${this.table(ir.rows.table)} AS ${t} WHERE ${this.rowsWhere(ir.rows.where, t, undefined)}) AS ${t}`;
    return `SELECT JSON_ARRAYAGG(${this.object(ir.select, t)}) AS json FROM ${from}`;
  }
  protected rootAggregate(_g: AggregateIR): string {
    throw this.unsupported('aggregates');
  }
}

class LowerCompiler extends StandardCompiler {
  protected override get lowercaseKeywords(): boolean {
    return true;
  }
}

const scalar = (type: ColumnType): ScalarType => ({
  name: type.udt,
  graphql: type.udt === 'int' ? 'Int' : 'String',
  bindAs: type.udt.toUpperCase(),
  category: type.udt === 'int' ? 'numeric' : 'string',
  comparable: true,
  parse: () => undefined,
});
const t = (udt: string): ColumnType => ({ type: udt, udt, typeSchema: 'std', typeKind: 'base' });
const g = goldenCases({
  schema: 'app',
  author: { id: t('int'), name: t('varchar'), born: t('date') },
  article: { id: t('int'), title: t('varchar'), author_id: t('int'), rating: t('int') },
  scalar,
});
const { author, article, lit, variable, session, T, cmp, col, obj, rows, ARTICLE_AUTHOR } = g;

const compile = (ir: RootIR, C = StandardCompiler) => new C().compileRoot(ir);

describe('SqlCompiler defaults', () => {
  it('boolean expressions: comparisons, _is_null, a null literal, relationships, _exists, column comparisons', () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: rows(article, {
        where: {
          t: 'and',
          of: [
            { t: 'or', of: [cmp(article, 'title', 'like', lit('a%')), { t: 'not', e: cmp(article, 'rating', 'is_null', variable('r')) }] },
            cmp(article, 'id', 'eq', lit(null)),
            { t: 'rel', remote: author, mapping: ARTICLE_AUTHOR, e: cmp(author, 'id', 'eq', session('x-svc-user-id')) },
            { t: 'exists', table: author, e: { t: 'ccmp', column: 'id', op: 'ceq', other: 'author_id', root: true } },
            { t: 'or', of: [] },
          ],
        },
      }),
      select: obj(col(article, 'id')),
    };
    const q = compile(ir);
    expect(q.sql).toBe(
      'SELECT JSON_ARRAYAGG(JSON_OBJECT(\'id\' VALUE _t0."id")) AS json FROM (SELECT _t0.* FROM "app"."article" AS _t0 WHERE ' +
        '(((_t0."title" LIKE CAST(:p1 AS VARCHAR)) OR (NOT ((_t0."rating" IS NULL) = CAST(:p2 AS BOOL)))) AND TRUE' +
        ' AND EXISTS (SELECT 1 FROM "app"."author" AS _t1 WHERE _t1."id" = _t0."author_id" AND (_t1."id" = CAST(:p3 AS INT)))' +
        ' AND EXISTS (SELECT 1 FROM "app"."author" AS _t2 WHERE (_t2."id" = _t0."author_id")) AND FALSE)) AS _t0',
    );
    expect(q.params).toEqual([lit('a%'), variable('r'), session('x-svc-user-id')]);
  });

  it('order keys: through object relationships as subqueries, or LEFT JOINs of unique steps shared by keys; by an array count', () => {
    const c = new StandardCompiler();
    c.alias(); // _t0, the rows the keys are of
    const step = { remote: author, mapping: ARTICLE_AUTHOR, filter: T };
    const byName: OrderItem = { path: [step], column: 'name', dir: 'asc' };
    expect(c.orderKey(byName, '_t0')).toBe('(SELECT _t1."name" FROM "app"."author" AS _t1 WHERE _t1."id" = _t0."author_id" AND TRUE LIMIT 1)');
    const joins: Joins = { sql: [], aliases: new Map() };
    const unique: OrderItem = { path: [{ ...step, unique: true }], column: 'name', dir: 'asc' };
    expect(c.orderKey(unique, '_t0', joins)).toBe('_t2."name"');
    expect(c.orderKey({ ...unique, column: 'born' }, '_t0', joins)).toBe('_t2."born"');
    expect(joins.sql).toEqual(['LEFT JOIN "app"."author" AS _t2 ON _t2."id" = _t0."author_id" AND TRUE']);
    const byCount: OrderItem = { path: [], column: 'id', agg: { remote: article, mapping: [['id', 'author_id']], filter: T, fn: 'count' }, dir: 'desc' };
    expect(c.orderKey(byCount, '_t0')).toBe('(SELECT COUNT(*) FROM "app"."article" AS _t3 WHERE _t3."author_id" = _t0."id" AND TRUE)');
    expect(c.aggregateFn('stddev_pop', 'x')).toBe('STDDEV_POP(x)');
  });

  it('lowercaseKeywords lowers the keywords of the base only, never identifiers, strings or values', () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: rows(article, { where: { t: 'and', of: [{ t: 'rel', remote: author, mapping: ARTICLE_AUTHOR, e: cmp(author, 'name', 'like', lit('AND')) }, T] } }),
      select: obj(col(article, 'id', 'SELECT')),
    };
    const { sql } = compile(ir, LowerCompiler);
    expect(sql).toContain('WHERE (exists (select 1 from "app"."author" as _t1 where _t1."id" = _t0."author_id" and (_t1."name" LIKE cast(:p1 as VARCHAR))) and true)');
    // The kind's own templates (rootSelect, object) keep their case; so do operators and types.
    expect(sql).toContain('SELECT JSON_ARRAYAGG(JSON_OBJECT(\'SELECT\' VALUE _t0."id")) AS json FROM (SELECT _t0.* FROM "app"."article" AS _t0 WHERE');
  });

  it('an object relationship through the kind\'s objectField; the output of a column as text', () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: rows(article),
      select: obj({ ...col(article, 'rating'), asText: true } as FieldIR, { key: 'author', k: 'object', mapping: ARTICLE_AUTHOR, rows: rows(author), select: obj(col(author, 'name')) }),
    };
    expect(compile(ir).sql).toContain('JSON_OBJECT(\'rating\' VALUE CAST(_t0."rating" AS STRING), \'author\' VALUE (SELECT JSON_OBJECT(\'name\' VALUE _t1."name") FROM "app"."author" AS _t1 WHERE TRUE AND _t1."id" = _t0."author_id"))');
  });

  it('refuses what a kind has not overridden, with UnsupportedQuery', () => {
    const refused = (ir: RootIR, message: string) => {
      expect(() => compile(ir)).toThrow(UnsupportedQuery);
      expect(() => compile(ir)).toThrow(message);
    };
    refused(g.select.operator('ilike'), 'the operator _ilike');
    refused({ k: 'select', single: false, rows: rows(author, { where: cmp(author, 'id', 'in', lit([1])) }), select: obj(col(author, 'id')) }, 'the operator _in');
    refused(g.select.jsonPath('name'), 'JSON paths');
    const castCmp: BoolIR = { ...(cmp(author, 'id', 'eq', lit('1')) as Extract<BoolIR, { t: 'cmp' }>), cast: 'text' };
    refused({ k: 'select', single: false, rows: rows(author, { where: castCmp }), select: obj(col(author, 'id')) }, '_cast');
    const call = { function: { schema: 'app', name: 'f' }, args: [] };
    refused({ k: 'select', single: false, rows: rows(author, { where: { t: 'fcmp', call, scalar: scalar(t('int')), op: 'eq', value: lit(1) } }), select: obj(col(author, 'id')) }, 'computed fields');
    refused({ k: 'select', single: false, rows: rows(author, { orderBy: [{ path: [], column: 'f', call, dir: 'asc' }] }), select: obj(col(author, 'id')) }, 'order_by a computed field');
    refused({ k: 'groups', groups: { table: author, where: T, keys: [], orderBy: [], fields: [] } }, 'grouped aggregates');
    expect(() => new StandardCompiler({ multiplexed: true }).compileRoot(g.select.live())).toThrow('subscriptions');
    expect(() => new StandardCompiler().setClause({ column: 'name', scalar: scalar(t('varchar')), op: 'append', value: lit('x') }, '_t0')).toThrow('the update operator _append');
  });

  it('an update\'s SET and a column value, limits and decimals', () => {
    const c = new StandardCompiler();
    const int = scalar(t('int'));
    expect(c.setClause({ column: 'rating', scalar: int, op: 'inc', value: lit(1) }, '_t0')).toBe('"rating" = _t0."rating" + CAST(:p1 AS INT)');
    expect(c.setClause({ column: 'rating', scalar: int, op: 'default' }, '_t0')).toBe('"rating" = DEFAULT');
    expect(c.colValue({ k: 'default' }, int)).toBe('DEFAULT');
    expect([literalCount(lit(3)), literalCount(lit(null)), literalCount(lit(-1)), literalCount(variable('n'))]).toEqual([3, undefined, lit(-1), variable('n')]);
    expect([plainDecimal('1E-7'), plainDecimal('-2.5e3'), plainDecimal('12.5')]).toEqual(['0.0000001', '-2500', '12.5']);
  });
});
