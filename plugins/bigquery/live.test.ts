/**
 * The BigQuery kind against real BigQuery: run only when SVC_TEST_BIGQUERY_SERVICE_ACCOUNT (the
 * key file's JSON text), SVC_TEST_BIGQUERY_PROJECT_ID and SVC_TEST_BIGQUERY_DATASET (an existing
 * dataset the account may create tables in) are set. BigQuery cannot be reached from the
 * development machines, so these are skipped there and in CI (the skip names the variables);
 * NOTHING in them has been run against BigQuery yet. They make two tables of their own
 * (svc_live_<random>_author/_article), track them, and run the query shapes the golden tests pin.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';

const ENV = ['SVC_TEST_BIGQUERY_SERVICE_ACCOUNT', 'SVC_TEST_BIGQUERY_PROJECT_ID', 'SVC_TEST_BIGQUERY_DATASET'] as const;
const ready = ENV.every((k) => process.env[k]);

describe.skipIf(!ready)(`the bigquery kind against real BigQuery (skipped: set ${ENV.join(', ')} to run)`, () => {
  const dataset = process.env.SVC_TEST_BIGQUERY_DATASET!;
  const s = useServer(undefined, { env: Object.fromEntries(ENV.map((k) => [k, process.env[k]])) });
  const source = 'live_bq';
  const prefix = `svc_live_${randomBytes(4).toString('hex')}`;
  const author = { dataset, name: `${prefix}_author` };
  const article = { dataset, name: `${prefix}_article` };
  const field = (t: { name: string }) => `${dataset}_${t.name}`;
  const ok = async (body: unknown) => {
    const r = await s.metadata(body);
    expect(r.status, r.text).toBe(200);
    return r.body;
  };
  const sql = (text: string) => ok({ type: 'bigquery_run_sql', args: { source, sql: text } });

  it('adds the source, makes two tables and tracks them', async () => {
    await ok({
      type: 'bigquery_add_source',
      args: {
        name: source,
        configuration: { service_account: { from_env: ENV[0] }, project_id: { from_env: ENV[1] }, datasets: [dataset], global_select_limit: 100 },
      },
    });
    await sql(`CREATE TABLE \`${dataset}\`.\`${author.name}\` (id INT64 NOT NULL, name STRING NOT NULL, born DATE, score NUMERIC)`);
    await sql(`CREATE TABLE \`${dataset}\`.\`${article.name}\` (id INT64 NOT NULL, title STRING NOT NULL, author_id INT64, rating INT64)`);
    await sql(`INSERT INTO \`${dataset}\`.\`${author.name}\` (id, name, born, score) VALUES (1, 'ann', DATE '1980-01-02', 1.5), (2, 'bob', NULL, 2.25), (3, 'cy', NULL, NULL)`);
    await sql(`INSERT INTO \`${dataset}\`.\`${article.name}\` (id, title, author_id, rating) VALUES (1, 'a1', 1, 5), (2, 'b1', 2, 7), (3, 'a2', 1, NULL), (4, 'a3', 1, 9)`);
    await ok({ type: 'bigquery_track_table', args: { source, table: author } });
    await ok({ type: 'bigquery_track_table', args: { source, table: article } });
    await ok({ type: 'bigquery_create_object_relationship', args: { source, table: article, name: 'author', using: { manual_configuration: { remote_table: author, column_mapping: { author_id: 'id' } } } } });
    await ok({ type: 'bigquery_create_array_relationship', args: { source, table: author, name: 'articles', using: { manual_configuration: { remote_table: article, column_mapping: { id: 'author_id' } } } } });
    await ok({ type: 'bigquery_create_select_permission', args: { source, table: article, role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 2, allow_aggregations: true } } });
  });

  it('queries: where, order_by with nulls, limit, offset, relationships, distinct_on, variables', async () => {
    const r = await s.gql(
      `query ($n: Int, $o: Int) {
        list: ${field(article)}(order_by: {rating: desc}, limit: 2, offset: 1) { title author { name } }
        nulls: ${field(article)}(order_by: {rating: asc}) { title }
        authors: ${field(author)}(order_by: {id: asc}) { name score articles(order_by: {id: asc}) { title } }
        like: ${field(author)}(where: {name: {_like: "a%"}}) { name }
        inlist: ${field(article)}(where: {id: {_in: [1, 2]}}, order_by: {id: asc}) { id }
        distinct: ${field(article)}(distinct_on: author_id, order_by: [{author_id: asc}, {id: desc}]) { id }
        page: ${field(author)}(order_by: {id: asc}, limit: $n, offset: $o) { name }
      }`,
      { n: 1, o: 1 },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.list).toEqual([
      { title: 'b1', author: { name: 'bob' } },
      { title: 'a1', author: { name: 'ann' } },
    ]);
    // Hasura's order for this kind: asc is nulls first.
    expect(r.data.nulls.map((x: { title: string }) => x.title)).toEqual(['a2', 'a1', 'b1', 'a3']);
    expect(r.data.authors[0]).toMatchObject({ name: 'ann', articles: [{ title: 'a1' }, { title: 'a2' }, { title: 'a3' }] });
    expect(r.data.authors[2]).toMatchObject({ name: 'cy', articles: [] });
    expect(r.data.like).toEqual([{ name: 'ann' }]);
    expect(r.data.inlist).toEqual([{ id: 1 }, { id: 2 }]);
    expect(r.data.distinct).toEqual([{ id: 4 }, { id: 2 }]);
    expect(r.data.page).toEqual([{ name: 'bob' }]);
  });

  it("aggregates, and a role's filter and limit", async () => {
    const agg = await s.gql(`{ ${field(article)}_aggregate(where: {author_id: {_eq: 1}}) { aggregate { count sum { rating } max { title } } nodes { id } } }`);
    expect(agg.errors).toBeUndefined();
    expect(agg.data[`${field(article)}_aggregate`].aggregate).toMatchObject({ count: 3, max: { title: 'a3' } });
    const role = await s.gql(`{ ${field(article)}(order_by: {id: asc}) { id title } }`, undefined, { 'x-svc-role': 'user', 'x-svc-user-id': '1' });
    expect(role).toEqual({ data: { [field(article)]: [{ id: 1, title: 'a1' }, { id: 3, title: 'a2' }] } });
  });

  it('a computed field over a table function (argument_mapping, return_table), in a selection and a where', async () => {
    const tvf = { dataset, name: `${prefix}_rated` };
    // The call's rows are Note [Table functions]'s UNNEST(ARRAY(...)); whether BigQuery takes the
    // parent's column as the argument of a correlated table-function call is what this checks.
    await sql(`CREATE TABLE FUNCTION \`${dataset}\`.\`${tvf.name}\`(author INT64, min_rating INT64) AS (SELECT * FROM \`${dataset}\`.\`${article.name}\` AS a WHERE a.author_id = author AND a.rating >= min_rating)`);
    await ok({ type: 'bigquery_add_computed_field', args: { source, table: author, name: 'rated', definition: { function: tvf, argument_mapping: { author: 'id' }, return_table: article } } });
    const r = await s.gql(`{ ${field(author)}(order_by: {id: asc}) { name rated(args: {min_rating: 6}, order_by: {id: asc}) { title } } }`);
    expect(r).toEqual({ data: { [field(author)]: [{ name: 'ann', rated: [{ title: 'a3' }] }, { name: 'bob', rated: [{ title: 'b1' }] }, { name: 'cy', rated: [] }] } });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: author, name: 'rated' } });
    await sql(`CREATE OR REPLACE TABLE FUNCTION \`${dataset}\`.\`${tvf.name}\`(author INT64) AS (SELECT * FROM \`${dataset}\`.\`${article.name}\` AS a WHERE a.author_id = author)`);
    await ok({ type: 'bigquery_add_computed_field', args: { source, table: author, name: 'written', definition: { function: tvf, argument_mapping: { author: 'id' }, return_table: article } } });
    const w = await s.gql(`{ ${field(author)}(where: {written: {title: {_eq: "b1"}}}) { name } }`);
    expect(w).toEqual({ data: { [field(author)]: [{ name: 'bob' }] } });
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: author, name: 'written' } });
    await sql(`DROP TABLE FUNCTION \`${dataset}\`.\`${tvf.name}\``);
  });

  it('a computed field over a table function that declares its columns (RETURNS TABLE<...>, no return_table)', async () => {
    const tvf = { dataset, name: `${prefix}_titles` };
    // What this checks: that INFORMATION_SCHEMA.ROUTINES shows the declared columns as the
    // fixtures assume (data_type `TABLE<...>`, ./test-support/fixtures/README.md), and the call of
    // Note [Computed fields by argument mapping]'s declared-column rows.
    await sql(`CREATE TABLE FUNCTION \`${dataset}\`.\`${tvf.name}\`(author INT64, min_rating INT64) RETURNS TABLE<title STRING, rating INT64> AS (SELECT a.title, a.rating FROM \`${dataset}\`.\`${article.name}\` AS a WHERE a.author_id = author AND a.rating >= min_rating)`);
    await ok({ type: 'bigquery_add_computed_field', args: { source, table: author, name: 'rated_titles', definition: { function: tvf, argument_mapping: { author: 'id' } } } });
    const t = await s.gql('{ __type(name: "rated_titles__fields") { fields { name type { name } } } }');
    expect(t.data.__type.fields).toEqual([{ name: 'title', type: { name: 'String' } }, { name: 'rating', type: { name: 'Int' } }]);
    const r = await s.gql(`{ ${field(author)}(order_by: {id: asc}) { name rated_titles(args: {min_rating: 5}) { title rating __typename } } }`);
    expect(r.errors).toBeUndefined();
    // The call's rows come in no order of their own (the field takes no order_by, as in Hasura).
    const sorted = (xs: { title: string }[]) => [...xs].sort((a, b) => a.title.localeCompare(b.title));
    const rows = r.data[field(author)] as { name: string; rated_titles: { title: string }[] }[];
    expect(rows.map((x) => ({ name: x.name, rated_titles: sorted(x.rated_titles) }))).toEqual([
      { name: 'ann', rated_titles: [{ title: 'a1', rating: 5, __typename: 'rated_titles__fields' }, { title: 'a3', rating: 9, __typename: 'rated_titles__fields' }] },
      { name: 'bob', rated_titles: [{ title: 'b1', rating: 7, __typename: 'rated_titles__fields' }] },
      { name: 'cy', rated_titles: [] },
    ]);
    await ok({ type: 'bigquery_drop_computed_field', args: { source, table: author, name: 'rated_titles' } });
    await sql(`DROP TABLE FUNCTION \`${dataset}\`.\`${tvf.name}\``);
  });

  it('explain is a dry run', async () => {
    const r = await s.request('POST', '/v1/graphql/explain', { query: { query: `{ ${field(author)} { name } }` } });
    expect(r.status, r.text).toBe(200);
    expect(r.body[0].plan[0]).toMatch(/^dry run: \d+ bytes would be processed$/);
  });

  it('drops what it made', async () => {
    // A schema change reloads the source; the tables it dropped are then inconsistent, allowed.
    await sql(`DROP TABLE \`${dataset}\`.\`${article.name}\`; DROP TABLE \`${dataset}\`.\`${author.name}\``);
    await ok({ type: 'bigquery_drop_source', args: { name: source, cascade: true } });
  });
});
