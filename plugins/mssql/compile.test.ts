/**
 * SQL golden tests of the T-SQL compiler, without a server (none can run on the development
 * machines): the IR cases every SQL kind's golden tests compile (plugins/database/sql/golden-cases.ts),
 * over the two tables as SQL Server types them, compiled by `mssqlDialect.compileSelect` /
 * `compileMutation`, text and parameters compared with inline snapshots. These pin what the
 * compiler writes; whether SQL Server answers it as intended is checked only by the live tests
 * (live.test.ts, with SVC_TEST_MSSQL_URL). Cases the kind refuses (JSON operators, nested
 * inserts, computed fields) are asserted as refusals. Update with
 * `npx vitest run plugins/mssql/compile.test.ts -u` and read the diff.
 */
import { describe, expect, it } from 'vitest';
import type { BoolIR, ColumnType, CompiledQuery, MutationIR, RootIR, Value } from '../database/index.js';
import { goldenCases } from '../database/index.js';
import { mssqlDialect as ms } from './dialect.js';
import { plainDecimal } from './compile.js';
import { MSSQL_AGGREGATES as mssqlAggregates } from './aggregates.js';
import { assemble } from './introspect.js';
import { fixtureCatalog } from './test-support/stand-in.js';

// ---------------------------------------------------------------------------------------------
// Fixture: author (id int, name nvarchar(100), born date, bio nvarchar(max), score decimal(10,2))
// <- article (id int, title nvarchar(200), author_id int, rating bigint), as introspection
// reports SQL Server's columns (type as printed, udt the system type). The IR cases are the ones
// every SQL kind's golden tests compile (plugins/database/sql/golden-cases.ts).

const sys = (type: string, udt = type): ColumnType => ({ type, udt, typeSchema: 'sys', typeKind: 'base' });
const g = goldenCases({
  schema: 'dbo',
  author: { id: sys('int'), name: sys('nvarchar(100)', 'nvarchar'), born: sys('date'), bio: sys('nvarchar(max)', 'nvarchar'), score: sys('decimal(10,2)', 'decimal') },
  article: { id: sys('int'), title: sys('nvarchar(200)', 'nvarchar'), author_id: sys('int'), rating: sys('bigint') },
  scalar: (type) => ms.scalar(type),
});
const { author, article, authorColumns, articleColumns, scalarOf, lit, variable, session, T, col, obj, cmp, rows, ARTICLE_AUTHOR, affected } = g;

const select = (ir: RootIR, multiplexed = false): CompiledQuery => ms.compileSelect!(ir, multiplexed ? { multiplexed } : undefined);
const mutation = (ir: MutationIR): CompiledQuery => ms.compileMutation!(ir);

describe('scalars (Note [MSSQL scalars])', () => {
  it("offers the aggregates Hasura's MSSQL backend does, per type (Note [MSSQL aggregates])", () => {
    const aggs = mssqlAggregates;
    const offered = (type: string, udt = type) => Object.keys(aggs).filter((fn) => aggs[fn]!.applies(ms.scalar(sys(type, udt))));
    const NUMERIC = ['avg', 'max', 'min', 'stddev', 'stddev_pop', 'stddev_samp', 'sum', 'var_pop', 'var_samp', 'variance'];
    for (const t of ['tinyint', 'smallint', 'int', 'bigint', 'float', 'real']) expect(offered(t).sort(), t).toEqual(NUMERIC);
    expect(offered('decimal(10,2)', 'decimal').sort()).toEqual(NUMERIC);
    // money is no number to Hasura's backend: max and min only.
    expect(offered('money').sort()).toEqual(['max', 'min']);
    expect(offered('nvarchar(100)', 'nvarchar').sort()).toEqual(['max', 'min']);
    expect(offered('datetime2(3)', 'datetime2').sort()).toEqual(['max', 'min']);
    expect(offered('hierarchyid').sort()).toEqual(['max', 'min']);
    // Hasura's exceptions, and what SQL Server cannot compare.
    for (const t of ['bit', 'uniqueidentifier', 'varbinary', 'binary', 'timestamp', 'text', 'ntext', 'xml', 'geography', 'geometry', 'image']) expect(offered(t), t).toEqual([]);
    expect(Object.fromEntries(Object.entries(aggs).map(([k, a]) => [k, [a.fn, a.result]]))).toEqual({
      avg: ['AVG', 'float'], stddev: ['STDEV', 'float'], stddev_pop: ['STDEVP', 'float'], stddev_samp: ['STDEV', 'float'], sum: ['SUM', 'column'],
      var_pop: ['VARP', 'float'], var_samp: ['VAR', 'float'], variance: ['VAR', 'float'], max: ['MAX', 'column'], min: ['MIN', 'column'],
    });
    expect(ms.aggregates).toBe(aggs);
  });

  it('introspection maps an alias type to the domain kind over its system type (Note [Type kinds])', () => {
    const cat = fixtureCatalog();
    // `CREATE TYPE dbo.email FROM varchar(320)`: a column of it reports the alias and its system type.
    const columns = { ...cat.columns, rows: cat.columns.rows.map((r) => (r[2] === 'email' ? [r[0], r[1], r[2], 'email', 'varchar', 'dbo', ...r.slice(6)] : r)) };
    const intro = assemble(cat.tables, columns, cat.keys, cat.foreign_keys);
    const customer = [...intro.tables.values()].find((t) => t.name === 'customer')!;
    expect(customer.columns.map((c) => [c.name, c.udt, c.typeSchema, c.typeKind])).toEqual([
      ['customer_id', 'uniqueidentifier', 'sys', 'base'],
      ['email', 'varchar', 'dbo', 'domain'],
      ['notes', 'nvarchar', 'sys', 'base'],
    ]);
    // Its scalar is the system type's.
    expect(ms.scalar(customer.columns[1]!)).toMatchObject({ name: 'varchar', graphql: 'String' });
  });

  it('compiles the statistics in T-SQL names, and refuses a name it does not offer', () => {
    const ir = g.select.aggregate(false) as Extract<RootIR, { k: 'aggregate' }>;
    const fields = ir.agg.fields.map((f) => (f.k === 'aggregate' ? { ...f, fields: [{ key: 'sp', k: 'fn' as const, fn: 'stddev_pop', columns: [{ key: 'rating', column: 'rating' }] }, { key: 'v', k: 'fn' as const, fn: 'variance', columns: [{ key: 'rating', column: 'rating' }] }] } : f));
    const sql = select({ ...ir, agg: { ...ir.agg, fields } }).sql;
    expect(sql).toContain('STDEVP(_x.[v0])');
    expect(sql).toContain('VAR(_x.[v1])');
    const bad = ir.agg.fields.map((f) => (f.k === 'aggregate' ? { ...f, fields: [{ key: 'm', k: 'fn' as const, fn: 'median', columns: [{ key: 'rating', column: 'rating' }] }] } : f));
    expect(() => select({ ...ir, agg: { ...ir.agg, fields: bad } })).toThrow('the mssql source kind does not support the aggregate median');
  });

  it('maps types as Hasura does, and casts values to the column type', () => {
    const s = (type: string, udt = type) => ms.scalar(sys(type, udt));
    expect(s('int').graphql).toBe('Int');
    expect(s('nvarchar(100)', 'nvarchar')).toMatchObject({ graphql: 'String', category: 'string', bindAs: 'nvarchar(max)' });
    expect(s('varchar(10)', 'varchar').bindAs).toBe('varchar(max)');
    expect(s('bit')).toMatchObject({ graphql: 'Boolean', category: 'boolean' });
    expect(s('float').graphql).toBe('Float');
    expect(s('bigint')).toMatchObject({ graphql: 'bigint', bigNumber: true, stringify: true });
    expect(s('decimal(10,2)', 'decimal')).toMatchObject({ graphql: 'decimal', bindAs: 'decimal(10,2)', category: 'numeric' });
    expect(s('datetime2(3)', 'datetime2')).toMatchObject({ graphql: 'datetime2', bindAs: 'datetime2(3)', category: 'datetime' });
    expect(s('uniqueidentifier').graphql).toBe('uniqueidentifier');
    expect(s('xml').comparable).toBe(false);
    expect(s('int').parse('x')).toBe('parsing Int failed, expected Number, but encountered String');
    expect(s('bit').parse(true)).toBeUndefined();
  });

  it('classifies SQL Server errors by their number (Note [MSSQL errors])', () => {
    expect(ms.classifyError!({ number: 2627, message: "Violation of PRIMARY KEY constraint 'PK_author'." })).toEqual({ code: 'constraint-violation', prefix: 'Uniqueness violation. ', internal: { error_number: 2627 } });
    expect(ms.classifyError!({ number: 547, message: 'The INSERT statement conflicted with the FOREIGN KEY constraint "FK_x".' })?.prefix).toBe('Foreign key violation. ');
    expect(ms.classifyError!({ number: 245, message: "Conversion failed when converting the nvarchar value 'one' to data type int." })?.code).toBe('data-exception');
    // The first error is the cause; the transaction's end (3609) follows it.
    expect(ms.classifyError!({ number: 3609, message: 'The transaction ended in the trigger.', precedingErrors: [{ number: 515, message: 'Cannot insert the value NULL' }] })?.prefix).toBe('Not-NULL violation. ');
    expect(ms.classifyError!({ number: 208, message: "Invalid object name 'x'." })?.code).toBe('unexpected');
    expect(ms.classifyError!(new Error('connection lost'))).toBeUndefined();
  });
});

describe('compileSelect', () => {
  it('a list: where, order_by, a literal limit, an offset from a variable', () => {
    const ir = g.select.list();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "ann",
          },
          {
            "k": "var",
            "name": "min",
          },
          {
            "k": "var",
            "name": "skip",
          },
        ],
        "sql": "SELECT ISNULL((SELECT _t0.[id] AS [id], _t0.[name] AS [name] FROM (SELECT _t0.* FROM (SELECT _t0.*, ROW_NUMBER() OVER (ORDER BY _t0.[__svc_o0] DESC) AS [__svc_n] FROM (SELECT _t0.*, _t0.[born] AS [__svc_o0] FROM [dbo].[author] AS _t0 WHERE ((_t0.[name] = @p1) AND (_t0.[id] > CAST(@p2 AS int)))) AS _t0) AS _t0 WHERE _t0.[__svc_n] > ISNULL(CAST(@p3 AS bigint), 0) AND _t0.[__svc_n] - ISNULL(CAST(@p3 AS bigint), 0) <= 10) AS _t0 ORDER BY _t0.[__svc_o0] DESC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
  });

  it('a literal limit and offset: OFFSET ... FETCH; a limit alone: TOP', () => {
    const page: RootIR = { k: 'select', single: false, rows: rows(author, { orderBy: [{ path: [], column: 'id', dir: 'asc' }], limit: lit(5), offset: lit(10) }), select: obj(col(author, 'id')) };
    expect(select(page).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id] FROM (SELECT _t0.* FROM (SELECT _t0.*, _t0.[id] AS [__svc_o0] FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0 ORDER BY _t0.[__svc_o0] ASC OFFSET 10 ROWS FETCH NEXT 5 ROWS ONLY) AS _t0 ORDER BY _t0.[__svc_o0] ASC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
    const top: RootIR = { k: 'select', single: false, rows: rows(author, { limit: variable('n') }), select: obj(col(author, 'id')) };
    expect(select(top).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id] FROM (SELECT TOP (ISNULL(CAST(@p1 AS bigint), 9223372036854775807)) _t0.* FROM (SELECT _t0.* FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
  });

  it("null orders: asc/desc are SQL Server's own (Hasura's MSSQL: asc nulls first, desc nulls last); the others add a CASE term", () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: rows(author, {
        orderBy: [
          { path: [], column: 'name', dir: 'asc' },
          { path: [], column: 'born', dir: 'asc_nulls_last' },
          { path: [], column: 'score', dir: 'desc_nulls_first' },
          { path: [], column: 'id', dir: 'desc' },
        ],
      }),
      select: obj(col(author, 'name')),
    };
    expect(select(ir).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[name] AS [name] FROM (SELECT _t0.*, _t0.[name] AS [__svc_o0], _t0.[born] AS [__svc_o1], _t0.[score] AS [__svc_o2], _t0.[id] AS [__svc_o3] FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0 ORDER BY _t0.[__svc_o0] ASC, CASE WHEN _t0.[__svc_o1] IS NULL THEN 1 ELSE 0 END, _t0.[__svc_o1] ASC, CASE WHEN _t0.[__svc_o2] IS NULL THEN 0 ELSE 1 END, _t0.[__svc_o2] DESC, _t0.[__svc_o3] DESC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
  });

  it('distinct_on, _in, _is_null, _like, _not, _or', () => {
    const ir = g.select.distinctOn();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "json": true,
            "k": "lit",
            "v": [
              1,
              2,
              3,
            ],
          },
          {
            "k": "lit",
            "v": "%svc%",
          },
        ],
        "sql": "SELECT ISNULL((SELECT _t0.[author_id] AS [author_id], _t0.[title] AS [title] FROM (SELECT _t0.* FROM (SELECT _t0.*, ROW_NUMBER() OVER (PARTITION BY _t0.[__svc_d0] ORDER BY _t0.[__svc_o0] ASC, _t0.[__svc_o1] DESC) AS [__svc_dn] FROM (SELECT _t0.*, _t0.[author_id] AS [__svc_o0], _t0.[rating] AS [__svc_o1], _t0.[author_id] AS [__svc_d0] FROM [dbo].[article] AS _t0 WHERE ((_t0.[id] IN (SELECT CAST([value] AS int) FROM OPENJSON(@p1))) OR (NOT (_t0.[rating] IS NULL)) OR (_t0.[title] LIKE @p2))) AS _t0) AS _t0 WHERE _t0.[__svc_dn] = 1) AS _t0 ORDER BY _t0.[__svc_o0] ASC, _t0.[__svc_o1] DESC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
  });

  it('a comparison with a null literal is no condition (Hasura v2); _is_null from a variable', () => {
    const ir = g.select.nullLiteral();
    expect(select(ir).sql).toContain('WHERE (1 = 1)');
    const isNull: RootIR = { k: 'select', single: false, rows: rows(author, { where: cmp(author, 'born', 'is_null', variable('b')) }), select: obj(col(author, 'id')) };
    expect(select(isNull).sql).toContain('WHERE (CASE WHEN _t0.[born] IS NULL THEN 1 ELSE 0 END = CAST(@p1 AS bit))');
  });

  it("object and array relationships (the remote table's filter in their rows), __typename", () => {
    const articles = g.select.objectRelationship();
    expect(select(articles)).toMatchInlineSnapshot(`
      {
        "params": [],
        "sql": "SELECT ISNULL((SELECT _t0.[title] AS [title], JSON_QUERY((SELECT TOP (1) _t1.[name] AS [name], N'author' AS [__typename] FROM (SELECT _t1.* FROM [dbo].[author] AS _t1 WHERE (1 = 1) AND _t1.[id] = _t0.[author_id]) AS _t1 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [author] FROM (SELECT _t0.* FROM [dbo].[article] AS _t0 WHERE (1 = 1)) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
    const authors = g.select.arrayRelationship();
    expect(select(authors)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 0,
          },
        ],
        "sql": "SELECT ISNULL((SELECT _t0.[name] AS [name], JSON_QUERY(ISNULL((SELECT _t1.[title] AS [title] FROM (SELECT TOP (2) _t1.* FROM (SELECT _t1.*, _t1.[id] AS [__svc_o0] FROM [dbo].[article] AS _t1 WHERE (_t1.[rating] > CAST(@p1 AS bigint)) AND _t1.[author_id] = _t0.[id]) AS _t1 ORDER BY _t1.[__svc_o0] ASC) AS _t1 ORDER BY _t1.[__svc_o0] ASC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]')) AS [articles] FROM (SELECT _t0.* FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
  });

  it('order by an object relationship\'s column and by an array relationship\'s count', () => {
    const ir = g.select.orderByRelationship(true);
    expect(select(ir).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id] FROM (SELECT _t0.*, (SELECT TOP (1) _t1.[name] FROM [dbo].[author] AS _t1 WHERE _t1.[id] = _t0.[author_id] AND (1 = 1)) AS [__svc_o0], _t0.[id] AS [__svc_o1] FROM [dbo].[article] AS _t0 WHERE (1 = 1)) AS _t0 ORDER BY _t0.[__svc_o0] DESC, _t0.[__svc_o1] ASC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
    const byCount = g.select.orderByCount();
    expect(select(byCount).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id] FROM (SELECT _t0.*, (SELECT COUNT(*) FROM [dbo].[article] AS _t1 WHERE _t1.[author_id] = _t0.[id] AND (1 = 1)) AS [__svc_o0] FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0 ORDER BY _t0.[__svc_o0] DESC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
  });

  it("a role's filter with session variables, through a relationship, with its limit and big numbers as text", () => {
    const ir = g.select.roleFilter();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "k": "session",
            "name": "x-svc-min",
          },
          {
            "k": "var",
            "name": "n",
          },
        ],
        "sql": "SELECT ISNULL((SELECT _t0.[id] AS [id], CAST(_t0.[rating] AS nvarchar(max)) AS [rating] FROM (SELECT TOP ((CASE WHEN CAST(@p3 AS bigint) < 5 THEN CAST(@p3 AS bigint) ELSE 5 END)) _t0.* FROM (SELECT _t0.* FROM [dbo].[article] AS _t0 WHERE (EXISTS (SELECT 1 FROM [dbo].[author] AS _t1 WHERE _t1.[id] = _t0.[author_id] AND (_t1.[id] = CAST(@p1 AS int))) AND (_t0.[rating] >= CAST(@p2 AS bigint)))) AS _t0) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
  });

  it('_by_pk: one object or null', () => {
    const ir = g.select.byPk('score');
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "var",
            "name": "id",
          },
        ],
        "sql": "SELECT ISNULL((SELECT TOP (1) _t0.[id] AS [id], _t0.[score] AS [score] FROM (SELECT _t0.* FROM [dbo].[author] AS _t0 WHERE (_t0.[id] = CAST(@p1 AS int))) AS _t0 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES), N'null') AS [json]",
      }
    `);
  });

  it('an aggregate: count, count(distinct), sum, max, nodes, the role limit capping the nodes only', () => {
    const ir = g.select.aggregate(true);
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 1,
          },
        ],
        "sql": "SELECT (SELECT JSON_QUERY((SELECT _a.[a0] AS [count], _a.[a1] AS [authors], JSON_QUERY((SELECT CAST(_a.[a2] AS nvarchar(max)) AS [rating] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [sum], JSON_QUERY((SELECT _a.[a3] AS [rating] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [avg], JSON_QUERY((SELECT _a.[a4] AS [title], N'article_max_fields' AS [__typename] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [max] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [aggregate], JSON_QUERY(ISNULL((SELECT TOP (3) _t0.[id] AS [id] FROM (SELECT _t0.* FROM [dbo].[article] AS _t0 WHERE (_t0.[author_id] = CAST(@p1 AS int))) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]')) AS [nodes] FROM (SELECT COUNT(*) AS [a0], COUNT(DISTINCT _x.[v0]) AS [a1], SUM(_x.[v1]) AS [a2], AVG(_x.[v2] * 1.0) AS [a3], MAX(_x.[v3]) AS [a4] FROM (SELECT 1 AS [one], _t0.[author_id] AS [v0], _t0.[rating] AS [v1], _t0.[rating] AS [v2], _t0.[title] AS [v3] FROM (SELECT _t0.* FROM [dbo].[article] AS _t0 WHERE (_t0.[author_id] = CAST(@p1 AS int))) AS _t0) AS _x) AS _a FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]",
      }
    `);
  });

  it('an array relationship aggregate', () => {
    const ir = g.select.arrayAggregate();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [],
        "sql": "SELECT ISNULL((SELECT _t0.[name] AS [name], JSON_QUERY((SELECT JSON_QUERY((SELECT _a.[a0] AS [count] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [aggregate] FROM (SELECT COUNT(*) AS [a0] FROM (SELECT 1 AS [one] FROM (SELECT _t1.* FROM [dbo].[article] AS _t1 WHERE (1 = 1) AND _t1.[author_id] = _t0.[id]) AS _t1) AS _x) AS _a FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [articles_aggregate] FROM (SELECT _t0.* FROM [dbo].[author] AS _t0 WHERE (1 = 1)) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]",
      }
    `);
  });

  it('multiplexed (live queries): one statement for many bindings, one JSON parameter (Note [Multiplexed T-SQL])', () => {
    const ir = g.select.live();
    const q = select(ir, true);
    expect(q).toMatchInlineSnapshot(`
      {
        "batch": [Function],
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
        ],
        "sql": "SELECT _svc_m.[i], _svc_r.[json] FROM OPENJSON(@p1) WITH ([i] int N'$[0]', [p1] nvarchar(max) N'$[1]') AS _svc_m OUTER APPLY (SELECT ISNULL((SELECT _t0.[name] AS [name] FROM (SELECT _t0.* FROM [dbo].[author] AS _t0 WHERE (_t0.[id] = CAST(_svc_m.[p1] AS int))) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]) AS _svc_r ORDER BY _svc_m.[i]",
      }
    `);
    expect(q.batch!([['1'], ['2'], [null]])).toEqual(['[[1,"1"],[2,"2"],[3,null]]']);
    // Without parameters, each binding is its index alone.
    const none = select({ k: 'select', single: false, rows: rows(author), select: obj(col(author, 'id')) }, true);
    expect(none.batch!([[], []])).toEqual(['[[1],[2]]']);
  });

  it("a streaming subscription's cursor: the last row's order key, from the rows read backwards", () => {
    const ir: RootIR = {
      k: 'select',
      single: false,
      cursor: true,
      rows: rows(article, { where: cmp(article, 'id', 'gt', variable('\u0000cursor')), orderBy: [{ path: [], column: 'id', dir: 'asc' }], limit: lit(2) }),
      select: obj(col(article, 'id')),
    };
    expect(select(ir).sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id] FROM (SELECT TOP (2) _t0.* FROM (SELECT _t0.*, _t0.[id] AS [__svc_o0] FROM [dbo].[article] AS _t0 WHERE (_t0.[id] > CAST(@p1 AS int))) AS _t0 ORDER BY _t0.[__svc_o0] ASC) AS _t0 ORDER BY _t0.[__svc_o0] ASC FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json], (SELECT TOP (1) CAST(_t0.[__svc_o0] AS nvarchar(max)) FROM (SELECT TOP (2) _t0.* FROM (SELECT _t0.*, _t0.[id] AS [__svc_o0] FROM [dbo].[article] AS _t0 WHERE (_t0.[id] > CAST(@p1 AS int))) AS _t0 ORDER BY _t0.[__svc_o0] ASC) AS _t0 ORDER BY _t0.[__svc_o0] DESC) AS [cursor]"`);
  });

  it('refuses what T-SQL has no counterpart for here: JSON paths, _cast, computed fields, unknown operators', () => {
    const path = g.select.jsonPath('bio');
    expect(() => select(path)).toThrow('the mssql source kind does not support JSON paths');
    const ilike = g.select.operator('ilike');
    expect(() => select(ilike)).toThrow('does not support the operator _ilike');
    const cast: RootIR = { k: 'select', single: false, rows: rows(author, { where: { ...(cmp(author, 'id', 'eq', lit('1')) as Extract<BoolIR, { t: 'cmp' }>), cast: 'nvarchar' } }), select: obj(col(author, 'id')) };
    expect(() => select(cast)).toThrow('does not support _cast');
  });
});

describe('compileMutation', () => {

  it('an insert with if_matched (MERGE on the match columns, update columns, where), a check with a session variable, returning', () => {
    const ir = g.mutation.upsert();
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 1,
          },
          {
            "k": "var",
            "name": "name",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
        ],
        "sql": "SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[author] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[author] AS _s WHERE 1 = 0; MERGE INTO [dbo].[author] WITH (HOLDLOCK) AS _t0 USING (VALUES (CAST(@p1 AS int), @p2)) AS _s ([id], [name]) ON (_t0.[id] = _s.[id]) WHEN MATCHED AND (_t0.[born] IS NULL) THEN UPDATE SET [name] = _s.[name] WHEN NOT MATCHED THEN INSERT ([id], [name]) VALUES (_s.[id], _s.[name]) OUTPUT $action, INSERTED.* INTO #svc_w; IF EXISTS (SELECT 1 FROM #svc_w AS _t1 WHERE CASE WHEN ((_t1.[__svc_action] = N'INSERT' AND (_t1.[id] = CAST(@p3 AS int))) OR (_t1.[__svc_action] = N'UPDATE' AND (1 = 1))) THEN 1 ELSE 0 END = 0) THROW 51000, N'svc:check', 1; SELECT (SELECT (SELECT COUNT(*) FROM #svc_w) AS [affected_rows], JSON_QUERY(ISNULL((SELECT _t2.[id] AS [id], _t2.[name] AS [name] FROM #svc_w AS _t2 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]')) AS [returning] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;",
      }
    `);
  });

  it('an upsert with an update check and presets: the check by OUTPUT $action; rows of two shapes are two MERGEs', () => {
    const ir: MutationIR = {
      k: 'insert',
      insert: {
        table: article,
        columns: articleColumns,
        rows: [
          { values: new Map([['id', { k: 'value', value: lit(1) }], ['title', { k: 'value', value: lit('a') }]]), before: [], after: [] },
          { values: new Map([['id', { k: 'value', value: lit(2) }]]), before: [], after: [] },
        ],
        onConflict: { columns: ['id'], update: ['title'], set: new Map([['author_id', { k: 'value', value: session('x-svc-user-id') }]]), where: T, check: cmp(article, 'rating', 'lt', lit(10)) },
        check: cmp(article, 'author_id', 'eq', session('x-svc-user-id')),
      },
      output: { k: 'multi', fields: [affected] },
    };
    expect(mutation(ir).sql).toMatchInlineSnapshot(`"SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[article] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[article] AS _s WHERE 1 = 0; MERGE INTO [dbo].[article] WITH (HOLDLOCK) AS _t0 USING (VALUES (CAST(@p2 AS int), @p3)) AS _s ([id], [title]) ON (_t0.[id] = _s.[id]) WHEN MATCHED THEN UPDATE SET [title] = _s.[title], [author_id] = CAST(@p1 AS int) WHEN NOT MATCHED THEN INSERT ([id], [title]) VALUES (_s.[id], _s.[title]) OUTPUT $action, INSERTED.* INTO #svc_w; MERGE INTO [dbo].[article] WITH (HOLDLOCK) AS _t1 USING (VALUES (CAST(@p5 AS int))) AS _s ([id]) ON (_t1.[id] = _s.[id]) WHEN MATCHED THEN UPDATE SET [title] = _t1.[title], [author_id] = CAST(@p4 AS int) WHEN NOT MATCHED THEN INSERT ([id]) VALUES (_s.[id]) OUTPUT $action, INSERTED.* INTO #svc_w; IF EXISTS (SELECT 1 FROM #svc_w AS _t2 WHERE CASE WHEN ((_t2.[__svc_action] = N'INSERT' AND (_t2.[author_id] = CAST(@p6 AS int))) OR (_t2.[__svc_action] = N'UPDATE' AND (_t2.[rating] < CAST(@p7 AS bigint)))) THEN 1 ELSE 0 END = 0) THROW 51000, N'svc:check', 1; SELECT (SELECT (SELECT COUNT(*) FROM #svc_w) AS [affected_rows] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;"`);
  });

  it('an upsert without update columns leaves a matched row alone', () => {
    const ir: MutationIR = {
      k: 'insert',
      insert: { table: author, columns: authorColumns, rows: [{ values: new Map([['id', { k: 'value', value: lit(1) }]]), before: [], after: [] }], onConflict: { columns: ['id'], update: [], where: T, check: T }, check: T },
      output: { k: 'multi', fields: [affected] },
    };
    const sql = mutation(ir).sql;
    expect(sql).toContain('WHEN NOT MATCHED THEN INSERT ([id]) VALUES (_s.[id])');
    expect(sql).not.toContain('WHEN MATCHED');
    expect(sql).not.toContain('THROW');
  });

  it('an insert of several rows, one taking a default, without a check', () => {
    const ir = g.mutation.rows('score', 1.5);
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "ann",
          },
          {
            "format": [Function],
            "k": "lit",
            "v": 1.5,
          },
          {
            "k": "lit",
            "v": "bob",
          },
        ],
        "sql": "SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[author] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[author] AS _s WHERE 1 = 0; INSERT INTO [dbo].[author] ([name], [score]) OUTPUT N'INSERT', INSERTED.* INTO #svc_w VALUES (@p1, CAST(@p2 AS decimal(10,2))), (@p3, DEFAULT); SELECT (SELECT (SELECT COUNT(*) FROM #svc_w) AS [affected_rows] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;",
      }
    `);
  });

  it('rows of defaults only: one INSERT ... DEFAULT VALUES per row; more than 1,000 rows: several INSERTs', () => {
    const defaults: MutationIR = {
      k: 'insert',
      insert: { table: author, columns: authorColumns, rows: [{ values: new Map(), before: [], after: [] }, { values: new Map(), before: [], after: [] }], check: T },
      output: { k: 'multi', fields: [affected] },
    };
    expect(mutation(defaults).sql.match(/DEFAULT VALUES/g)).toHaveLength(2);
    const many: MutationIR = {
      k: 'insert',
      insert: { table: author, columns: authorColumns, rows: Array.from({ length: 1001 }, (_, i) => ({ values: new Map([['name', { k: 'value', value: lit(`n${i}`) } as const]]), before: [], after: [] })), check: T },
      output: { k: 'multi', fields: [affected] },
    };
    const q = mutation(many);
    expect(q.sql.match(/INSERT INTO \[dbo\]\.\[author\]/g)).toHaveLength(2);
    expect(q.params).toHaveLength(1001);
  });

  it('a decimal given in exponent notation is written out for SQL Server', () => {
    expect([plainDecimal('1E-7'), plainDecimal('-2.5e3'), plainDecimal('12.5'), plainDecimal(3)]).toEqual(['0.0000001', '-2500', '12.5', '3']);
    const ir: MutationIR = {
      k: 'update',
      table: author,
      where: T,
      set: [{ column: 'score', scalar: scalarOf(author, 'score'), op: 'set', value: variable('s') }],
      check: T,
      output: { k: 'multi', fields: [affected] },
    };
    expect(mutation(ir).params[0]).toMatchObject({ k: 'var', name: 's', format: plainDecimal });
  });

  it('refuses nested inserts (as Hasura\'s MSSQL backend does)', () => {
    const nested = g.mutation.articleWithAuthor({ k: 'multi', fields: [affected] });
    expect(() => mutation(nested)).toThrow('the mssql source kind does not support nested inserts');
  });

  it("an update with _set and _inc, the role's filter and check, returning under the select filter", () => {
    const ir = g.mutation.update();
    expect(mutation(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": "edited",
          },
          {
            "k": "lit",
            "v": 1,
          },
          {
            "k": "var",
            "name": "max",
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
          {
            "k": "lit",
            "v": 10,
          },
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
        ],
        "sql": "SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[article] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[article] AS _s WHERE 1 = 0; UPDATE _t0 SET [title] = @p1, [rating] = _t0.[rating] + CAST(@p2 AS bigint) OUTPUT N'UPDATE', INSERTED.* INTO #svc_w FROM [dbo].[article] AS _t0 WHERE ((_t0.[id] < CAST(@p3 AS int)) AND (_t0.[author_id] = CAST(@p4 AS int))); IF EXISTS (SELECT 1 FROM #svc_w AS _t1 WHERE CASE WHEN (_t1.[rating] <= CAST(@p5 AS bigint)) THEN 1 ELSE 0 END = 0) THROW 51000, N'svc:check', 1; SELECT (SELECT (SELECT COUNT(*) FROM #svc_w) AS [affected_rows], JSON_QUERY(ISNULL((SELECT _t2.[id] AS [id], _t2.[rating] AS [rating] FROM #svc_w AS _t2 WHERE (_t2.[author_id] = CAST(@p6 AS int)) FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]')) AS [returning] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;",
      }
    `);
  });

  it('update_by_pk returning the row with a relationship; JSON update operators are refused', () => {
    const ir: MutationIR = {
      k: 'update',
      table: article,
      where: cmp(article, 'id', 'eq', lit(1)),
      set: [{ column: 'title', scalar: scalarOf(article, 'title'), op: 'set', value: lit('x') }],
      check: T,
      output: { k: 'single', select: obj(col(article, 'title'), { key: 'author', k: 'object', mapping: ARTICLE_AUTHOR, rows: rows(author), select: obj(col(author, 'name')) }) },
    };
    expect(mutation(ir).sql).toMatchInlineSnapshot(`"SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[article] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[article] AS _s WHERE 1 = 0; UPDATE _t0 SET [title] = @p1 OUTPUT N'UPDATE', INSERTED.* INTO #svc_w FROM [dbo].[article] AS _t0 WHERE (_t0.[id] = CAST(@p2 AS int)); SELECT ISNULL((SELECT TOP (1) _t2.[title] AS [title], JSON_QUERY((SELECT TOP (1) _t3.[name] AS [name] FROM (SELECT _t3.* FROM [dbo].[author] AS _t3 WHERE (1 = 1) AND _t3.[id] = _t2.[author_id]) AS _t3 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES)) AS [author] FROM #svc_w AS _t2 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES), N'null') AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;"`);
    const json: MutationIR = { ...ir, set: [{ column: 'bio', scalar: scalarOf(author, 'bio'), op: 'append', value: lit('x') }] } as MutationIR;
    expect(() => mutation(json)).toThrow('does not support the update operator _append');
  });

  it('a delete, and delete_by_pk', () => {
    const del = g.mutation.delete();
    expect(mutation(del)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "session",
            "name": "x-svc-user-id",
          },
        ],
        "sql": "SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[article] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[article] AS _s WHERE 1 = 0; DELETE _t0 OUTPUT N'DELETE', DELETED.* INTO #svc_w FROM [dbo].[article] AS _t0 WHERE (_t0.[author_id] = CAST(@p1 AS int)); SELECT (SELECT (SELECT COUNT(*) FROM #svc_w) AS [affected_rows], N'article_mutation_response' AS [__typename] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;",
      }
    `);
    const byPk = g.mutation.deleteByPk();
    expect(mutation(byPk).sql).toMatchInlineSnapshot(`"SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[article] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[article] AS _s WHERE 1 = 0; DELETE _t0 OUTPUT N'DELETE', DELETED.* INTO #svc_w FROM [dbo].[article] AS _t0 WHERE (_t0.[id] = CAST(@p1 AS int)); SELECT ISNULL((SELECT TOP (1) _t2.[title] AS [title] FROM #svc_w AS _t2 FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES), N'null') AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;"`);
  });

  it('mutationFailure reads the check\'s THROW, also behind the errors that follow it', () => {
    expect(ms.mutationFailure!({ number: 51000, message: 'svc:check' })).toEqual({ k: 'check' });
    expect(ms.mutationFailure!({ number: 266, message: 'Transaction count after EXECUTE ...', precedingErrors: [{ number: 51000, message: 'svc:check' }] })).toEqual({ k: 'check' });
    expect(ms.mutationFailure!({ number: 2627, message: "Violation of PRIMARY KEY constraint 'PK_author'." })).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// Spatial columns (Note [MSSQL spatial values] in ./geo.ts): place (id int, location geometry,
// area geography), as introspection reports SQL Server's CLR types (system_type_id 240, named by
// their own names).

describe('geometry and geography (Note [MSSQL spatial values])', () => {
  const place = { schema: 'dbo', name: 'place' };
  const geometry = sys('geometry');
  const geography = sys('geography');
  const placeCol = (column: string) => {
    const type = column === 'location' ? geometry : column === 'area' ? geography : sys('int');
    return { type, scalar: ms.scalar(type) };
  };
  const gcmp = (column: string, op: string, value: Value): BoolIR => ({ t: 'cmp', column, ...placeCol(column), op, value });
  const gcol = (column: string) => ({ key: column, k: 'column' as const, column, scalar: placeCol(column).scalar });
  const listOf = (where: BoolIR): RootIR => ({ k: 'select', single: false, rows: rows(place, { where }), select: obj(gcol('id'), gcol('location'), gcol('area')) });

  it('maps the types as Hasura does: custom scalars of their own names, comparable, checked as WKT or GeoJSON', () => {
    expect(ms.scalar(geometry)).toMatchObject({ name: 'geometry', graphql: 'geometry', comparable: true, bindAs: 'geometry', category: 'other' });
    expect(ms.scalar(geography)).toMatchObject({ name: 'geography', graphql: 'geography', comparable: true, bindAs: 'geography' });
    const parse = ms.scalar(geometry).parse;
    expect(parse('POINT (1 2)')).toBeUndefined();
    expect(parse({ type: 'Point', coordinates: [1, 2] })).toBeUndefined();
    expect(parse(3)).toBe('parsing geometry failed, expected WKT text or a GeoJSON geometry: $: expected a GeoJSON geometry object, but encountered Number');
    expect(parse({ type: 'Feature', geometry: null })).toBe(
      'parsing geometry failed, expected WKT text or a GeoJSON geometry: $.type: expected one of Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection, but encountered "Feature"',
    );
    expect(parse({ type: 'Point', coordinates: [1] })).toBe('parsing geometry failed, expected WKT text or a GeoJSON geometry: $.coordinates: a position is an array of 2 to 4 numbers');
  });

  it('offers the _st_* operators as Hasura: five on both types, _st_crosses and _st_touches on geometry only', () => {
    const offered = (t: ColumnType) => Object.entries(ms.operators).filter(([, spec]) => !spec.guard || spec.guard.ok(t)).map(([op]) => op).sort();
    expect(offered(geometry)).toEqual(['st_contains', 'st_crosses', 'st_equals', 'st_intersects', 'st_overlaps', 'st_touches', 'st_within']);
    expect(offered(geography)).toEqual(['st_contains', 'st_equals', 'st_intersects', 'st_overlaps', 'st_within']);
    expect(offered(sys('int'))).toEqual([]);
  });

  it('compiles each operator to the SQL Server method on the column, the value read as WKT in the row\'s SRID; outputs WKT', () => {
    const q = select(listOf({ t: 'and', of: [gcmp('location', 'st_intersects', variable('poly')), gcmp('area', 'st_within', lit('POLYGON ((0 0, 0 1, 1 1, 0 0))'))] }));
    expect(q.sql).toMatchInlineSnapshot(`"SELECT ISNULL((SELECT _t0.[id] AS [id], _t0.[location].STAsText() AS [location], _t0.[area].STAsText() AS [area] FROM (SELECT _t0.* FROM [dbo].[place] AS _t0 WHERE ((_t0.[location].STIntersects(geometry::STGeomFromText(@p1, _t0.[location].STSrid)) = 1) AND (_t0.[area].STWithin(geography::STGeomFromText(@p2, _t0.[area].STSrid)) = 1))) AS _t0 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]') AS [json]"`);
    expect(q.params).toEqual([
      { k: 'var', name: 'poly', format: expect.any(Function) },
      { k: 'lit', v: 'POLYGON ((0 0, 0 1, 1 1, 0 0))', format: expect.any(Function) },
    ]);
    for (const [op, method] of [['st_contains', 'STContains'], ['st_crosses', 'STCrosses'], ['st_equals', 'STEquals'], ['st_overlaps', 'STOverlaps'], ['st_touches', 'STTouches']] as const) {
      expect(select(listOf(gcmp('location', op, lit('POINT (1 1)')))).sql).toContain(`(_t0.[location].${method}(geometry::STGeomFromText(@p1, _t0.[location].STSrid)) = 1)`);
    }
    // A session variable is a parameter like any other (its text: WKT or GeoJSON).
    expect(select(listOf(gcmp('area', 'st_intersects', session('x-svc-area')))).params).toEqual([{ k: 'session', name: 'x-svc-area', format: expect.any(Function) }]);
    // An inherited role's redacted column: the CASE in parentheses is the receiver (Hasura's form).
    const redacted = { ...(gcmp('location', 'st_within', lit('POINT (1 1)')) as Extract<BoolIR, { t: 'cmp' }>), redact: gcmp('id', 'gt', lit(1)) };
    expect(select(listOf(redacted)).sql).toContain(
      '(((CASE WHEN (_t0.[id] > CAST(@p1 AS int)) THEN _t0.[location] END)).STWithin(geometry::STGeomFromText(@p2, ((CASE WHEN (_t0.[id] > CAST(@p1 AS int)) THEN _t0.[location] END)).STSrid)) = 1)',
    );
    // _is_null is SQL Server's own and works on these types.
    expect(select(listOf(gcmp('location', 'is_null', lit(true)))).sql).toContain('WHERE (_t0.[location] IS NULL)');
  });

  it('binds a GeoJSON value as its WKT, text as it is; refuses anything else with parse-failed', () => {
    const format = select(listOf(gcmp('location', 'st_within', variable('g')))).params[0]!.format!;
    expect(format('POINT (1 2)')).toBe('POINT (1 2)');
    expect(format({ type: 'Point', coordinates: [1, 2] })).toBe('POINT (1 2)');
    expect(format({ type: 'Point', coordinates: [1e-7, 2, 3] })).toBe('POINT (0.0000001 2 3)');
    expect(format({ type: 'LineString', coordinates: [[0, 0], [2, 2]] })).toBe('LINESTRING (0 0, 2 2)');
    expect(format({ type: 'Polygon', coordinates: [[[1, 1], [1, 3], [3, 3], [3, 1], [1, 1]]], crs: { type: 'name', properties: { name: 'EPSG:4326' } } })).toBe('POLYGON ((1 1, 1 3, 3 3, 3 1, 1 1))');
    expect(format({ type: 'MultiPoint', coordinates: [[1, 2], [3, 4]] })).toBe('MULTIPOINT ((1 2), (3 4))');
    expect(format({ type: 'MultiLineString', coordinates: [[[0, 0], [1, 1]], [[2, 2], [3, 3]]] })).toBe('MULTILINESTRING ((0 0, 1 1), (2 2, 3 3))');
    expect(format({ type: 'MultiPolygon', coordinates: [[[[0, 0], [0, 1], [1, 1], [0, 0]]], [[[5, 5], [5, 6], [6, 6], [5, 5]]]] })).toBe('MULTIPOLYGON (((0 0, 0 1, 1 1, 0 0)), ((5 5, 5 6, 6 6, 5 5)))');
    expect(format({ type: 'GeometryCollection', geometries: [{ type: 'Point', coordinates: [1, 2] }, { type: 'LineString', coordinates: [] }] })).toBe('GEOMETRYCOLLECTION (POINT (1 2), LINESTRING EMPTY)');
    // A session variable's GeoJSON text.
    expect(format('{"type":"Point","coordinates":[4,5]}')).toBe('POINT (4 5)');
    const refused = (x: unknown) => {
      try {
        format(x);
      } catch (e) {
        return { code: (e as { code?: string }).code, message: (e as Error).message };
      }
      return undefined;
    };
    expect(refused(12)).toEqual({ code: 'parse-failed', message: 'parsing geometry failed, expected WKT text or a GeoJSON geometry: $: expected a GeoJSON geometry object, but encountered Number' });
    expect(refused({ type: 'Polygon', coordinates: [[[0, 0], [1, 1], [0, 0]]] })).toEqual({
      code: 'parse-failed',
      message: 'parsing geometry failed, expected WKT text or a GeoJSON geometry: $.coordinates[0]: expected at least 4 positions',
    });
    expect(refused({ type: 'LineString', coordinates: [[0, 'a'], [1, 1]] })?.message).toContain('$.coordinates[0]: a position is an array of 2 to 4 numbers');
    expect(refused('{not json')?.code).toBe('parse-failed');
  });

  it('refuses the comparisons SQL Server has not for these types (Hasura offers them; SQL Server fails them)', () => {
    for (const op of ['eq', 'ne', 'gt', 'lte', 'in', 'nin']) {
      expect(() => select(listOf(gcmp('location', op, lit('POINT (1 1)'))))).toThrow(`does not support the operator _${op} on a column of type geometry`);
    }
    // geography has no STCrosses / STTouches (the schema does not offer them either).
    expect(() => select(listOf(gcmp('area', 'st_touches', lit('POINT (1 1)'))))).toThrow('does not support the operator _st_touches on a column of type geography');
    // An _st_* operator on another type never reaches the compiler; if it did, it is refused.
    expect(() => select(listOf(gcmp('id', 'st_within', lit(1))))).toThrow('does not support the operator _st_within on a column of type int');
  });

  it('writes spatial values as WKT cast to the column type (Parse: SRID 0 for geometry, 4326 for geography), and returns them as WKT', () => {
    const columns = new Map(['id', 'location', 'area'].map((c) => [c, { name: c, ...placeCol(c) }]));
    const ir = {
      k: 'insert',
      insert: {
        table: place,
        columns,
        rows: [{ values: new Map([['location', { k: 'value', value: variable('loc') }], ['area', { k: 'value', value: lit({ type: 'Point', coordinates: [10, 50] }) }]]), before: [], after: [] }],
        check: T,
      },
      output: { k: 'multi', fields: [{ key: 'returning', k: 'returning', select: obj(gcol('id'), gcol('location')), filter: T }] },
    } as unknown as MutationIR;
    const q = mutation(ir);
    expect(q.sql).toMatchInlineSnapshot(`"SET NOCOUNT ON; SET XACT_ABORT ON; BEGIN TRANSACTION; SELECT CAST(NULL AS nvarchar(10)) AS [__svc_action], _s.* INTO #svc_w FROM [dbo].[place] AS _s WHERE 1 = 0 UNION ALL SELECT CAST(NULL AS nvarchar(10)), _s.* FROM [dbo].[place] AS _s WHERE 1 = 0; INSERT INTO [dbo].[place] ([location], [area]) OUTPUT N'INSERT', INSERTED.* INTO #svc_w VALUES (CAST(@p1 AS geometry), CAST(@p2 AS geography)); SELECT (SELECT JSON_QUERY(ISNULL((SELECT _t1.[id] AS [id], _t1.[location].STAsText() AS [location] FROM #svc_w AS _t1 FOR JSON PATH, INCLUDE_NULL_VALUES), N'[]')) AS [returning] FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS [json]; DROP TABLE #svc_w; COMMIT TRANSACTION;"`);
    expect(q.params.map((p) => p.format?.(p.k === 'lit' ? p.v : 'LINESTRING (0 0, 1 1)'))).toEqual(['LINESTRING (0 0, 1 1)', 'POINT (10 50)']);
  });

  it('classifies a WKT SQL Server cannot read (6522, a .NET error in geometry::Parse) as the client\'s data-exception', () => {
    expect(ms.classifyError!({ number: 6522, message: 'A .NET Framework error occurred during execution of user-defined routine or aggregate "geometry": System.FormatException: 24114: The label POINTY in the input well-known text (WKT) is not valid.' })).toEqual({ code: 'data-exception', internal: { error_number: 6522 } });
  });
});
