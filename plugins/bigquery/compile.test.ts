/**
 * SQL golden tests of the GoogleSQL compiler, without BigQuery (none can be reached from the
 * development machines): the query IR cases every SQL kind's golden tests compile
 * (plugins/database/sql/golden-cases.ts), over the two tables as BigQuery types them in a dataset
 * `shop`, compiled by `bigqueryDialect.compileSelect`, text and parameters compared with inline
 * snapshots. They pin what the compiler writes; whether BigQuery answers it as intended is
 * checked only by live.test.ts (SVC_TEST_BIGQUERY_*). The kind is read-only (no compileMutation),
 * as Hasura's BigQuery backend, so the PostgreSQL file's mutation cases have no counterpart here;
 * live queries and streams are refused. Update with `npx vitest run plugins/bigquery/compile.test.ts -u`.
 */
import { describe, expect, it } from 'vitest';
import type { ColumnType, CompiledQuery, RootIR, RowsIR } from '../database/index.js';
import { goldenCases } from '../database/index.js';
import { bigqueryDialect as bq, classifyError } from './dialect.js';

const bqType = (type: string): ColumnType => ({ type, udt: /^[A-Z0-9]+/.exec(type)![0], typeSchema: 'bigquery', typeKind: 'base' });
const g = goldenCases({
  schema: 'shop',
  author: { id: bqType('INT64'), name: bqType('STRING'), born: bqType('DATE'), score: bqType('NUMERIC(10, 2)'), photo: bqType('BYTES') },
  article: { id: bqType('INT64'), title: bqType('STRING'), author_id: bqType('INT64'), rating: bqType('INT64') },
  scalar: (type) => bq.scalar(type),
});
const { author, lit, variable, col, obj, cmp, rows } = g;

const select = (ir: RootIR, configuration?: Record<string, unknown>): CompiledQuery => bq.compileSelect!(ir, configuration ? { configuration } : undefined);

describe('scalars (Note [BigQuery scalars]) and errors', () => {
  it("offers the aggregates Hasura's BigQuery backend does, per type (Note [BigQuery aggregates])", () => {
    const aggs = bq.aggregates!;
    const offered = (type: string) => Object.keys(aggs).filter((fn) => aggs[fn]!.applies(bq.scalar(bqType(type)))).sort();
    const NUMERIC = ['avg', 'max', 'min', 'stddev', 'stddev_pop', 'stddev_samp', 'sum', 'var_pop', 'var_samp', 'variance'];
    for (const t of ['INT64', 'FLOAT64', 'NUMERIC(10, 2)', 'BIGNUMERIC']) expect(offered(t), t).toEqual(NUMERIC);
    for (const t of ['STRING', 'BOOL', 'BYTES', 'DATE', 'DATETIME', 'TIME', 'TIMESTAMP']) expect(offered(t), t).toEqual(['max', 'min']);
    for (const t of ['GEOGRAPHY', 'JSON', 'ARRAY<STRING>', 'STRUCT<a INT64>']) expect(offered(t), t).toEqual([]);
    expect(aggs.stddev_pop).toMatchObject({ fn: 'STDDEV_POP', result: 'float' });
    expect(aggs.sum).toMatchObject({ fn: 'SUM', result: 'column' });
  });

  it('maps BigQuery types as Hasura does', () => {
    const s = (type: string) => bq.scalar(bqType(type));
    expect(s('STRING')).toMatchObject({ graphql: 'String', bindAs: 'STRING', category: 'string' });
    expect(s('INT64')).toMatchObject({ graphql: 'Int', bindAs: 'INT64', bigNumber: true, stringify: true });
    expect(s('NUMERIC(10, 2)')).toMatchObject({ graphql: 'Decimal', bindAs: 'NUMERIC' });
    expect(s('BIGNUMERIC')).toMatchObject({ graphql: 'Decimal', bindAs: 'BIGNUMERIC' });
    expect(s('FLOAT64').graphql).toBe('Float');
    expect(s('BOOL').graphql).toBe('Boolean');
    expect(s('TIMESTAMP')).toMatchObject({ graphql: 'Timestamp', category: 'datetime' });
    expect(s('GEOGRAPHY')).toMatchObject({ graphql: 'Geography', comparable: false });
    expect(s('JSON')).toMatchObject({ graphql: 'JSON', comparable: false });
    expect(s('INT64').parse('12')).toBeUndefined();
    expect(s('INT64').parse('x')).toBe('parsing Int64 failed, expected Number, but encountered String');
  });

  it('classifies errors by BigQuery\'s reason (Note [BigQuery errors])', () => {
    expect(classifyError({ code: 400, message: "Bad int64 value: one", errors: [{ reason: 'invalidQuery' }] })).toEqual({ code: 'data-exception', internal: { reason: 'invalidQuery', status: 400 } });
    expect(classifyError({ code: 404, message: 'Not found: Table p:shop.gone', errors: [{ reason: 'notFound' }] })?.code).toBe('unexpected');
    expect(classifyError(new Error('socket hang up'))).toBeUndefined();
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
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\`, _t0.\`name\` AS \`name\` FROM (SELECT _t0.* FROM (SELECT _t0.*, ROW_NUMBER() OVER (ORDER BY _t0.\`__svc_o0\` DESC NULLS LAST) AS \`__svc_n\` FROM (SELECT _t0.*, _t0.\`born\` AS \`__svc_o0\` FROM \`shop\`.\`author\` AS _t0 WHERE ((_t0.\`name\` = @p1) AND (_t0.\`id\` > CAST(@p2 AS INT64)))) AS _t0) AS _t0 WHERE _t0.\`__svc_n\` > COALESCE(CAST(@p3 AS INT64), 0) AND _t0.\`__svc_n\` - COALESCE(CAST(@p3 AS INT64), 0) <= 10) AS _t0 ORDER BY _t0.\`__svc_o0\` DESC NULLS LAST)) AS json",
      }
    `);
  });

  it('a literal limit and offset: LIMIT ... OFFSET; the global select limit caps the root rows', () => {
    const page: RootIR = { k: 'select', single: false, rows: rows(author, { orderBy: [{ path: [], column: 'id', dir: 'asc' }], limit: lit(5), offset: lit(10) }), select: obj(col(author, 'id')) };
    expect(select(page).sql).toMatchInlineSnapshot(`"SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\` FROM (SELECT _t0.*, _t0.\`id\` AS \`__svc_o0\` FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0 ORDER BY _t0.\`__svc_o0\` ASC NULLS FIRST LIMIT 5 OFFSET 10)) AS json"`);
    const all: RootIR = { k: 'select', single: false, rows: rows(author), select: obj(col(author, 'id')) };
    expect(select(all, { global_select_limit: 1000 }).sql).toContain('LIMIT 1000');
    expect(select(all, { global_select_limit: '50' }).sql).toContain('LIMIT 50');
    expect(select(all).sql).not.toContain('LIMIT');
  });

  it('distinct_on, _in, _is_null, _like, _not, _or; bytes as base64', () => {
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
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`author_id\` AS \`author_id\`, _t0.\`title\` AS \`title\` FROM (SELECT _t0.* FROM (SELECT _t0.*, ROW_NUMBER() OVER (PARTITION BY _t0.\`__svc_d0\` ORDER BY _t0.\`__svc_o0\` ASC NULLS FIRST, _t0.\`__svc_o1\` DESC NULLS LAST) AS \`__svc_dn\` FROM (SELECT _t0.*, _t0.\`author_id\` AS \`__svc_o0\`, _t0.\`rating\` AS \`__svc_o1\`, _t0.\`author_id\` AS \`__svc_d0\` FROM \`shop\`.\`article\` AS _t0 WHERE ((_t0.\`id\` IN (SELECT CAST(_v AS INT64) FROM UNNEST(JSON_VALUE_ARRAY(@p1)) AS _v)) OR (NOT (_t0.\`rating\` IS NULL)) OR (_t0.\`title\` LIKE @p2))) AS _t0) AS _t0 WHERE _t0.\`__svc_dn\` = 1) AS _t0 ORDER BY _t0.\`__svc_o0\` ASC NULLS FIRST, _t0.\`__svc_o1\` DESC NULLS LAST)) AS json",
      }
    `);
    const bytes: RootIR = { k: 'select', single: false, rows: rows(author, { where: cmp(author, 'photo', 'eq', variable('p')) }), select: obj(col(author, 'id')) };
    expect(select(bytes).sql).toContain('(_t0.`photo` = FROM_BASE64(@p1))');
  });

  it('a comparison with a null literal is no condition (Hasura v2)', () => {
    const ir = g.select.nullLiteral();
    expect(select(ir).sql).toContain('WHERE TRUE');
  });

  it("object and array relationships (the remote table's filter in their rows), __typename", () => {
    const articles = g.select.objectRelationship();
    expect(select(articles)).toMatchInlineSnapshot(`
      {
        "params": [],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`title\` AS \`title\`, (SELECT AS STRUCT _t1.\`name\` AS \`name\`, 'author' AS \`__typename\` FROM (SELECT _t1.* FROM \`shop\`.\`author\` AS _t1 WHERE TRUE) AS _t1 WHERE _t1.\`id\` = _t0.\`author_id\` LIMIT 1) AS \`author\` FROM (SELECT _t0.* FROM \`shop\`.\`article\` AS _t0 WHERE TRUE) AS _t0)) AS json",
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
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, ARRAY(SELECT AS STRUCT _t1.\`title\` AS \`title\` FROM (SELECT _t1.*, _t1.\`id\` AS \`__svc_o0\` FROM \`shop\`.\`article\` AS _t1 WHERE (_t1.\`rating\` > CAST(@p1 AS INT64))) AS _t1 WHERE _t1.\`author_id\` = _t0.\`id\` ORDER BY _t1.\`__svc_o0\` ASC NULLS FIRST LIMIT 2) AS \`articles\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0)) AS json",
      }
    `);
  });

  it("order by an object relationship's column and an array relationship's count", () => {
    const ir = g.select.orderByRelationship(false);
    expect(select(ir).sql).toMatchInlineSnapshot(`"SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\` FROM (SELECT _t0.*, (SELECT _t1.\`name\` FROM \`shop\`.\`author\` AS _t1 WHERE _t1.\`id\` = _t0.\`author_id\` AND TRUE LIMIT 1) AS \`__svc_o0\` FROM \`shop\`.\`article\` AS _t0 WHERE TRUE) AS _t0 ORDER BY _t0.\`__svc_o0\` DESC NULLS LAST)) AS json"`);
    const byCount = g.select.orderByCount();
    expect(select(byCount).sql).toMatchInlineSnapshot(`"SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\` FROM (SELECT _t0.*, (SELECT COUNT(*) FROM \`shop\`.\`article\` AS _t1 WHERE _t1.\`author_id\` = _t0.\`id\` AND TRUE) AS \`__svc_o0\` FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0 ORDER BY _t0.\`__svc_o0\` DESC NULLS LAST)) AS json"`);
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
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\`, CAST(_t0.\`rating\` AS STRING) AS \`rating\` FROM (SELECT _t0.* FROM (SELECT _t0.*, ROW_NUMBER() OVER () AS \`__svc_n\` FROM (SELECT _t0.* FROM \`shop\`.\`article\` AS _t0 WHERE (EXISTS (SELECT 1 FROM \`shop\`.\`author\` AS _t1 WHERE _t1.\`id\` = _t0.\`author_id\` AND (_t1.\`id\` = CAST(@p1 AS INT64))) AND (_t0.\`rating\` >= CAST(@p2 AS INT64)))) AS _t0) AS _t0 WHERE _t0.\`__svc_n\` > 0 AND _t0.\`__svc_n\` - 0 <= COALESCE(CAST(@p3 AS INT64), 9223372036854775807) AND _t0.\`__svc_n\` - 0 <= 5) AS _t0)) AS json",
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
        "sql": "SELECT TO_JSON_STRING((SELECT AS STRUCT _t0.\`id\` AS \`id\`, _t0.\`score\` AS \`score\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE (_t0.\`id\` = CAST(@p1 AS INT64))) AS _t0 LIMIT 1)) AS json",
      }
    `);
  });

  it('an aggregate: count, count(distinct), sum, max, nodes, the role limit capping the nodes only', () => {
    const ir = g.select.aggregate(false);
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 1,
          },
        ],
        "sql": "SELECT TO_JSON_STRING((SELECT AS STRUCT STRUCT(COUNT(*) AS \`count\`, COUNT(DISTINCT _t0.\`author_id\`) AS \`authors\`, STRUCT(CAST(SUM(_t0.\`rating\`) AS STRING) AS \`rating\`) AS \`sum\`, STRUCT(MAX(_t0.\`title\`) AS \`title\`, 'article_max_fields' AS \`__typename\`) AS \`max\`) AS \`aggregate\`, ARRAY(SELECT AS STRUCT _t0.\`id\` AS \`id\` FROM (SELECT _t0.* FROM \`shop\`.\`article\` AS _t0 WHERE (_t0.\`author_id\` = CAST(@p1 AS INT64))) AS _t0 LIMIT 3) AS \`nodes\` FROM (SELECT _t0.* FROM \`shop\`.\`article\` AS _t0 WHERE (_t0.\`author_id\` = CAST(@p1 AS INT64))) AS _t0)) AS json",
      }
    `);
  });

  it('an array relationship aggregate', () => {
    const ir = g.select.arrayAggregate();
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, (SELECT AS STRUCT STRUCT(COUNT(*) AS \`count\`) AS \`aggregate\` FROM (SELECT _t1.* FROM \`shop\`.\`article\` AS _t1 WHERE TRUE) AS _t1 WHERE _t1.\`author_id\` = _t0.\`id\`) AS \`articles_aggregate\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0)) AS json",
      }
    `);
  });

  it('refuses subscriptions (live and streaming), JSON paths, _cast and unknown operators', () => {
    const ir: RootIR = { k: 'select', single: false, rows: rows(author), select: obj(col(author, 'id')) };
    expect(() => bq.compileSelect!(ir, { multiplexed: true })).toThrow('the bigquery source kind does not support subscriptions');
    expect(() => select({ ...ir, cursor: true } as RootIR)).toThrow('does not support subscriptions');
    expect(() => select(g.select.jsonPath('name'))).toThrow('does not support JSON paths');
    expect(() => select(g.select.operator('ilike'))).toThrow('does not support the operator _ilike');
    expect(bq.compileMutation).toBeUndefined();
  });
});

describe('computed fields: table functions by argument mapping (Note [Table functions])', () => {
  const article = g.article;
  const fn = { schema: 'shop', name: 'author_articles' };
  // author { articles_by(args: {min_rating: 3}, where: {title: {_like: "%a%"}}, order_by: {id: desc}, limit: 2) { title } }
  const computed = (r: Partial<RowsIR> = {}): RootIR => ({
    k: 'select',
    single: false,
    rows: rows(author),
    select: obj(col(author, 'name'), {
      key: 'articles_by',
      k: 'computed_rows',
      row: { table: author, columns: ['id', 'name', 'born', 'score', 'photo'] },
      rows: rows(article, {
        from: { function: fn, args: [{ k: 'column', column: 'id', bindAs: 'INT64', name: 'author_id' }, { k: 'value', value: lit(3), bindAs: 'INT64', name: 'min_rating' }] },
        ...r,
      }),
      select: obj(col(article, 'title')),
    }),
  });

  it('calls the function with named arguments, the mapped one the parent row\'s column, through UNNEST(ARRAY(...))', () => {
    expect(select(computed())).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 3,
          },
        ],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, ARRAY(SELECT AS STRUCT _t1.\`title\` AS \`title\` FROM (SELECT _t1.* FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM \`shop\`.\`author_articles\`(\`author_id\` => _t0.\`id\`, \`min_rating\` => CAST(@p1 AS INT64)))) AS _t1 WHERE TRUE) AS _t1) AS \`articles_by\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0)) AS json",
      }
    `);
  });

  it('its rows are read as a table\'s: where, order_by, a literal limit, the global select limit on the root and on them (as Hasura\'s)', () => {
    const ir = computed({ where: cmp(article, 'title', 'like', lit('%a%')), orderBy: [{ path: [], column: 'id', dir: 'desc' }], limit: lit(2) });
    expect(select(ir, { global_select_limit: 10 })).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 3,
          },
          {
            "k": "lit",
            "v": "%a%",
          },
        ],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, ARRAY(SELECT AS STRUCT _t1.\`title\` AS \`title\` FROM (SELECT _t1.*, _t1.\`id\` AS \`__svc_o0\` FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM \`shop\`.\`author_articles\`(\`author_id\` => _t0.\`id\`, \`min_rating\` => CAST(@p1 AS INT64)))) AS _t1 WHERE (_t1.\`title\` LIKE @p2)) AS _t1 ORDER BY _t1.\`__svc_o0\` DESC NULLS LAST LIMIT 2) AS \`articles_by\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0 LIMIT 10)) AS json",
      }
    `);
  });

  it('a limit from a variable is a window over the call\'s rows', () => {
    expect(select(computed({ limit: variable('n') }))).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 3,
          },
          {
            "k": "var",
            "name": "n",
          },
        ],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, ARRAY(SELECT AS STRUCT _t1.\`title\` AS \`title\` FROM (SELECT _t1.* FROM (SELECT _t1.*, ROW_NUMBER() OVER () AS \`__svc_n\` FROM (SELECT _t1.* FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM \`shop\`.\`author_articles\`(\`author_id\` => _t0.\`id\`, \`min_rating\` => CAST(@p1 AS INT64)))) AS _t1 WHERE TRUE) AS _t1) AS _t1 WHERE _t1.\`__svc_n\` > 0 AND _t1.\`__svc_n\` - 0 <= COALESCE(CAST(@p2 AS INT64), 9223372036854775807)) AS _t1) AS \`articles_by\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0)) AS json",
      }
    `);
  });

  it('in a where: EXISTS over the call\'s rows, the mapped column the filtered row\'s', () => {
    const call = { function: fn, args: [{ k: 'column' as const, column: 'id', bindAs: 'INT64', name: 'author_id' }, { k: 'value' as const, value: lit(3), bindAs: 'INT64', name: 'min_rating' }] };
    const ir: RootIR = { k: 'select', single: false, rows: rows(author, { where: { t: 'frows', call, e: cmp(article, 'title', 'eq', lit('x')) } }), select: obj(col(author, 'name')) };
    expect(select(ir)).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "lit",
            "v": 3,
          },
          {
            "k": "lit",
            "v": "x",
          },
        ],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE EXISTS (SELECT 1 FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM \`shop\`.\`author_articles\`(\`author_id\` => _t0.\`id\`, \`min_rating\` => CAST(@p1 AS INT64)))) AS _t1 WHERE (_t1.\`title\` = @p2))) AS _t0)) AS json",
      }
    `);
  });

  it('a function that declares its columns: its rows as they are, the declared columns selected, __typename, the global select limit', () => {
    // Note [Computed fields by argument mapping] in plugins/database: `table` names the function (no table).
    const stats = { schema: 'shop', name: 'article_stats' };
    const declared = (name: string, type: string) => ({ key: name, k: 'column' as const, column: name, scalar: bq.scalar(bqType(type)) });
    const ir: RootIR = {
      k: 'select',
      single: false,
      rows: rows(author),
      select: obj(col(author, 'name'), {
        key: 'stats',
        k: 'computed_rows',
        row: { table: author, columns: ['id', 'name', 'born', 'score', 'photo'] },
        rows: { table: stats, from: { function: stats, args: [{ k: 'column', column: 'id', bindAs: 'INT64', name: 'a_id' }, { k: 'value', value: variable('r'), bindAs: 'INT64', name: 'min_rating' }] }, where: { t: 'true' }, orderBy: [] },
        select: { fields: [declared('title', 'STRING'), declared('score', 'NUMERIC(10, 2)'), { key: 'kind', k: 'typename', name: 'stats__fields' }] },
      }),
    };
    expect(select(ir, { global_select_limit: 10 })).toMatchInlineSnapshot(`
      {
        "params": [
          {
            "k": "var",
            "name": "r",
          },
        ],
        "sql": "SELECT TO_JSON_STRING(ARRAY(SELECT AS STRUCT _t0.\`name\` AS \`name\`, ARRAY(SELECT AS STRUCT _t1.\`title\` AS \`title\`, _t1.\`score\` AS \`score\`, 'stats__fields' AS \`kind\` FROM (SELECT _t1.* FROM UNNEST(ARRAY(SELECT AS STRUCT * FROM \`shop\`.\`article_stats\`(\`a_id\` => _t0.\`id\`, \`min_rating\` => CAST(@p1 AS INT64)))) AS _t1 WHERE TRUE) AS _t1 LIMIT 10) AS \`stats\` FROM (SELECT _t0.* FROM \`shop\`.\`author\` AS _t0 WHERE TRUE) AS _t0 LIMIT 10)) AS json",
      }
    `);
  });

  it('refuses what BigQuery calls cannot take: an unnamed argument, a row argument, a column outside a row', () => {
    const bad = (args: NonNullable<RowsIR['from']>['args']): RootIR => ({ k: 'select', single: false, rows: rows(article, { from: { function: fn, args } }), select: obj(col(article, 'title')) });
    expect(() => select(bad([{ k: 'value', value: lit(1), bindAs: 'INT64' }]))).toThrow('the bigquery source kind does not support an unnamed function argument');
    expect(() => select(bad([{ k: 'row', name: 'r' }]))).toThrow('does not support a row argument');
    expect(() => select(bad([{ k: 'column', column: 'id', bindAs: 'INT64', name: 'author_id' }]))).toThrow('does not support a column argument outside a row');
  });
});
