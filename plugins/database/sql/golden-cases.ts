/**
 * The IR cases of the SQL golden tests, written once for every SQL source kind (Kysely's testSql
 * is the model): each kind's `compile.test.ts` builds them over the same two tables, typed as its
 * introspection reports them, compiles them with its dialect and pins the SQL text and parameters
 * it expects beside each case (inline snapshots), or asserts that the kind refuses one. The IR is
 * what plugins/database/schema/plan.ts and mutation.ts build from a GraphQL field and a role's
 * permission (Note [Values in the IR]), written by hand. A new kind's author runs these cases
 * against their compiler first (docs/source-kinds.md, "Testing a kind").
 *
 * The tables: author (id, name, born, and the kind's own columns) <- article (id, title,
 * author_id, rating: a big integer); article.author is an object relationship, author.articles an
 * array relationship. No database is needed.
 */
import type { ColumnType, QualifiedTable, ScalarType } from '../model/scalars.js';
import type { AggregateOp, BoolIR, FieldIR, MutationIR, ObjectIR, OrderItem, RootIR, RowsIR, Value } from '../ir/types.js';

/** How a kind types the two tables. */
export interface GoldenFixture {
  /** The schema (BigQuery: the dataset) of both tables. */
  schema: string;
  /** author's columns: at least id, name and born; article's: id, title, author_id, rating. */
  author: Record<string, ColumnType>;
  article: Record<string, ColumnType>;
  /** The kind's dialect's scalar of a column type (`Dialect.scalar`). */
  scalar(type: ColumnType): ScalarType;
}

/** The cases over a kind's fixture, and the helpers that build more of them. */
export function goldenCases(f: GoldenFixture) {
  const columns = (types: Record<string, ColumnType>) => new Map(Object.entries(types).map(([name, type]) => [name, { type, scalar: f.scalar(type) }]));
  const author: QualifiedTable = { schema: f.schema, name: 'author' };
  const article: QualifiedTable = { schema: f.schema, name: 'article' };
  const authorColumns = columns(f.author);
  const articleColumns = columns(f.article);
  const columnOf = (t: QualifiedTable, column: string) => (t === author ? authorColumns : articleColumns).get(column)!;
  const scalarOf = (t: QualifiedTable, column: string): ScalarType => columnOf(t, column).scalar;

  const lit = (v: unknown): Value => ({ k: 'lit', v });
  const variable = (name: string): Value => ({ k: 'var', name });
  const session = (name: string): Value => ({ k: 'session', name });
  const T: BoolIR = { t: 'true' };
  const col = (t: QualifiedTable, column: string, key = column): FieldIR => ({ key, k: 'column', column, scalar: scalarOf(t, column) });
  const obj = (...fields: FieldIR[]): ObjectIR => ({ fields });
  const cmp = (t: QualifiedTable, column: string, op: string, value: Value): BoolIR => ({ t: 'cmp', column, ...columnOf(t, column), op, value });
  const rows = (table: QualifiedTable, r: Partial<RowsIR> = {}): RowsIR => ({ table, where: T, orderBy: [], ...r });
  /** The join of article.author (object) and author.articles (array): pairs (own, remote). */
  const ARTICLE_AUTHOR = [['author_id', 'id']] as const;
  const AUTHOR_ARTICLES = [['id', 'author_id']] as const;
  const affected = { key: 'affected_rows', k: 'affected_rows' } as const;

  const select = {
    /** `{ author(where: {name: {_eq: "ann"}, id: {_gt: $min}}, order_by: {born: desc}, limit: 10, offset: $skip) { id name } }` */
    list: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(author, {
        where: { t: 'and', of: [cmp(author, 'name', 'eq', lit('ann')), cmp(author, 'id', 'gt', variable('min'))] },
        orderBy: [{ path: [], column: 'born', dir: 'desc' }],
        limit: lit(10),
        offset: variable('skip'),
      }),
      select: obj(col(author, 'id'), col(author, 'name')),
    }),
    /** `{_eq: null}` is no condition (Hasura v2). */
    nullLiteral: (): RootIR => ({ k: 'select', single: false, rows: rows(author, { where: cmp(author, 'name', 'eq', lit(null)) }), select: obj(col(author, 'id')) }),
    /** distinct_on, `_in`, `_is_null`, `_like`, `_not`, `_or`. */
    distinctOn: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(article, {
        where: {
          t: 'or',
          of: [cmp(article, 'id', 'in', lit([1, 2, 3])), { t: 'not', e: cmp(article, 'rating', 'is_null', lit(true)) }, cmp(article, 'title', 'like', lit('%svc%'))],
        },
        distinctOn: ['author_id'],
        orderBy: [
          { path: [], column: 'author_id', dir: 'asc' },
          { path: [], column: 'rating', dir: 'desc' },
        ],
      }),
      select: obj(col(article, 'author_id'), col(article, 'title')),
    }),
    /** `{ article { title author { name __typename } } }` */
    objectRelationship: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(article),
      select: obj(col(article, 'title'), { key: 'author', k: 'object', mapping: ARTICLE_AUTHOR, rows: rows(author), select: obj(col(author, 'name'), { key: '__typename', k: 'typename', name: 'author' }) }),
    }),
    /** `{ author { name articles(order_by: {id: asc}, limit: 2) { title } } }`, article's role filter `{rating: {_gt: 0}}` folded in. */
    arrayRelationship: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(author),
      select: obj(col(author, 'name'), {
        key: 'articles',
        k: 'array',
        mapping: AUTHOR_ARTICLES,
        rows: rows(article, { where: cmp(article, 'rating', 'gt', lit(0)), orderBy: [{ path: [], column: 'id', dir: 'asc' }], limit: lit(2) }),
        select: obj(col(article, 'title')),
      }),
    }),
    /** Order by the author's name (through the object relationship, `desc_nulls_last`), then by
     * `id` where `thenById`; and authors by the count of their articles. */
    orderByRelationship: (thenById: boolean): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(article, {
        orderBy: [
          { path: [{ remote: author, mapping: ARTICLE_AUTHOR, filter: T }], column: 'name', dir: 'desc_nulls_last' },
          ...(thenById ? [{ path: [], column: 'id', dir: 'asc' } satisfies OrderItem] : []),
        ],
      }),
      select: obj(col(article, 'id')),
    }),
    orderByCount: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(author, { orderBy: [{ path: [], column: 'id', agg: { remote: article, mapping: AUTHOR_ARTICLES, filter: T, fn: 'count' }, dir: 'desc' }] }),
      select: obj(col(author, 'id')),
    }),
    /** The role `user`: article's filter `{author: {id: {_eq: X-Svc-User-Id}}, rating: {_gte: X-Svc-Min}}`, limit 5; `limit: $n`; rating as text. */
    roleFilter: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(article, {
        where: { t: 'and', of: [{ t: 'rel', remote: author, mapping: ARTICLE_AUTHOR, e: cmp(author, 'id', 'eq', session('x-svc-user-id')) }, cmp(article, 'rating', 'gte', session('x-svc-min'))] },
        limit: variable('n'),
        limitCap: 5,
      }),
      select: obj(col(article, 'id'), { ...col(article, 'rating'), asText: true } as FieldIR),
    }),
    /** `author_by_pk(id: $id) { id <column> }` */
    byPk: (column: string): RootIR => ({ k: 'select', single: true, rows: rows(author, { where: cmp(author, 'id', 'eq', variable('id')) }), select: obj(col(author, 'id'), col(author, column)) }),
    /** `article_aggregate(where: {author_id: {_eq: 1}})` under a role limit of 3: count, count(distinct author_id), sum (as text), [avg,] max with __typename, nodes. */
    aggregate: (avg: boolean): RootIR => ({
      k: 'aggregate',
      agg: {
        rows: rows(article, { where: cmp(article, 'author_id', 'eq', lit(1)), limitCap: 3 }),
        fields: [
          {
            key: 'aggregate',
            k: 'aggregate',
            fields: [
              { key: 'count', k: 'count', distinct: false },
              { key: 'authors', k: 'count', columns: ['author_id'], distinct: true },
              { key: 'sum', k: 'fn', fn: 'sum', columns: [{ key: 'rating', column: 'rating', asText: true }] },
              ...(avg ? [{ key: 'avg', k: 'fn', fn: 'avg', columns: [{ key: 'rating', column: 'rating' }] } satisfies AggregateOp] : []),
              { key: 'max', k: 'fn', fn: 'max', columns: [{ key: 'title', column: 'title' }, { key: '__typename', typename: 'article_max_fields' }] },
            ],
          },
          { key: 'nodes', k: 'nodes', select: obj(col(article, 'id')) },
        ],
      },
    }),
    /** `{ author { name articles_aggregate { aggregate { count } } } }` */
    arrayAggregate: (): RootIR => ({
      k: 'select',
      single: false,
      rows: rows(author),
      select: obj(col(author, 'name'), {
        key: 'articles_aggregate',
        k: 'array_aggregate',
        mapping: AUTHOR_ARTICLES,
        agg: { rows: rows(article), fields: [{ key: 'aggregate', k: 'aggregate', fields: [{ key: 'count', k: 'count', distinct: false }] }] },
      }),
    }),
    /** A live query's: the authors whose id is the session's user id (compiled multiplexed). */
    live: (): RootIR => ({ k: 'select', single: false, rows: rows(author, { where: cmp(author, 'id', 'eq', session('x-svc-user-id')) }), select: obj(col(author, 'name')) }),
    /** A JSON path on a column (`<column>(path: "a")`). */
    jsonPath: (column: string): RootIR => ({ k: 'select', single: false, rows: rows(author), select: obj({ ...col(author, column), path: lit(['a']) } as FieldIR) }),
    /** An operator by name on author.name (`_ilike` is not every kind's). */
    operator: (op: string): RootIR => ({ k: 'select', single: false, rows: rows(author, { where: cmp(author, 'name', op, lit('a')) }), select: obj(col(author, 'id')) }),
  };

  const mutation = {
    /** `insert_author(objects: [{id: 1, name: $name}], on_conflict: {[constraint,] update_columns: [name], where: {born: {_is_null: true}}})`, the role's check `{id: {_eq: X-Svc-User-Id}}`, returning id and name. */
    upsert: (constraint?: string): MutationIR => ({
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: [{ values: new Map([['id', { k: 'value', value: lit(1) }], ['name', { k: 'value', value: variable('name') }]]), before: [], after: [] }],
        onConflict: { ...(constraint !== undefined ? { constraint } : {}), columns: ['id'], update: ['name'], where: cmp(author, 'born', 'is_null', lit(true)), check: T },
        check: cmp(author, 'id', 'eq', session('x-svc-user-id')),
        tableColumns: [...authorColumns.keys()],
      },
      output: { k: 'multi', fields: [affected, { key: 'returning', k: 'returning', select: obj(col(author, 'id'), col(author, 'name')) }] },
    }),
    /** Two authors, `column` given `value` in the first and its default in the second; no check. */
    rows: (column: string, value: unknown): MutationIR => ({
      k: 'insert',
      insert: {
        table: author,
        columns: authorColumns,
        rows: [
          { values: new Map([['name', { k: 'value', value: lit('ann') }], [column, { k: 'value', value: lit(value) }]]), before: [], after: [] },
          { values: new Map([['name', { k: 'value', value: lit('bob') }], [column, { k: 'default' }]]), before: [], after: [] },
        ],
        check: T,
      },
      output: { k: 'multi', fields: [affected] },
    }),
    /** An article with its author (a nested insert through the object relationship). */
    articleWithAuthor: (output: MutationIR['output']): MutationIR => ({
      k: 'insert',
      insert: {
        table: article,
        columns: articleColumns,
        rows: [
          {
            values: new Map([['title', { k: 'value', value: lit('nested') }]]),
            before: [
              {
                relationship: 'author',
                mapping: ARTICLE_AUTHOR,
                insert: { table: author, columns: authorColumns, rows: [{ values: new Map([['name', { k: 'value', value: lit('ann') }]]), before: [], after: [] }], check: T, tableColumns: [...authorColumns.keys()] },
              },
            ],
            after: [],
          },
        ],
        check: T,
        tableColumns: [...articleColumns.keys()],
      },
      output,
    }),
    /** `update_article(where: {id: {_lt: $max}}, _set: {title: "edited"}, _inc: {rating: 1})` under the role's filter and check, returning under its select filter. */
    update: (): MutationIR => ({
      k: 'update',
      table: article,
      where: { t: 'and', of: [cmp(article, 'id', 'lt', variable('max')), cmp(article, 'author_id', 'eq', session('x-svc-user-id'))] },
      set: [
        { column: 'title', scalar: scalarOf(article, 'title'), op: 'set', value: lit('edited') },
        { column: 'rating', scalar: scalarOf(article, 'rating'), op: 'inc', value: lit(1) },
      ],
      check: cmp(article, 'rating', 'lte', lit(10)),
      output: {
        k: 'multi',
        fields: [affected, { key: 'returning', k: 'returning', select: obj(col(article, 'id'), col(article, 'rating')), filter: cmp(article, 'author_id', 'eq', session('x-svc-user-id')) }],
      },
      tableColumns: [...articleColumns.keys()],
    }),
    /** `delete_article(where: <the role's filter>) { affected_rows __typename }` */
    delete: (): MutationIR => ({
      k: 'delete',
      table: article,
      where: cmp(article, 'author_id', 'eq', session('x-svc-user-id')),
      output: { k: 'multi', fields: [affected, { key: '__typename', k: 'typename', name: 'article_mutation_response' }] },
      tableColumns: [...articleColumns.keys()],
    }),
    /** `delete_article_by_pk(id: $id) { title }` */
    deleteByPk: (): MutationIR => ({ k: 'delete', table: article, where: cmp(article, 'id', 'eq', variable('id')), output: { k: 'single', select: obj(col(article, 'title')) }, tableColumns: [...articleColumns.keys()] }),
  };

  return {
    author,
    article,
    authorColumns,
    articleColumns,
    scalarOf,
    lit,
    variable,
    session,
    T,
    col,
    obj,
    cmp,
    rows,
    ARTICLE_AUTHOR,
    AUTHOR_ARTICLES,
    affected,
    select,
    mutation,
  };
}
