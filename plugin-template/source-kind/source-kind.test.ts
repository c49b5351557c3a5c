/**
 * The source-kind template ("memory", ./index.ts) end to end: a source of that kind is added
 * through the metadata API, its tables tracked, a relationship and a permission created, and
 * GraphQL queries answered from its rows as admin and as a role. No SQL runs for it; the run's
 * PostgreSQL only holds the server's catalog (and the default source, unused here).
 */
import { describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';
import memorySource, { memoryDialect } from './index.js';

const s = useServer(undefined, { extraPlugins: [memorySource] });

const configuration = {
  tables: [
    {
      name: 'author',
      columns: [
        { name: 'id', type: 'int', nullable: false },
        { name: 'name', type: 'text' },
      ],
      primary_key: ['id'],
      rows: [
        { id: 1, name: 'ann' },
        { id: 2, name: 'bob' },
      ],
    },
    {
      name: 'article',
      columns: [
        { name: 'id', type: 'int', nullable: false },
        { name: 'title', type: 'text' },
        { name: 'author_id', type: 'int' },
        { name: 'published', type: 'boolean' },
        { name: 'status', type: 'text' },
      ],
      primary_key: ['id'],
      foreign_keys: [
        { columns: ['author_id'], table: 'author', ref_columns: ['id'] },
        { columns: ['status'], table: 'status', ref_columns: ['value'] },
      ],
      rows: [
        { id: 1, title: 'first', author_id: 1, published: true, status: 'out' },
        { id: 2, title: 'second', author_id: 2, published: true, status: 'out' },
        { id: 3, title: 'third', author_id: 1, published: false, status: 'draft' },
        { id: 4, title: 'fourth', author_id: 1, published: true, status: 'out' },
        { id: 5, title: 'orphan', author_id: null, published: null, status: null },
      ],
    },
    {
      name: 'status',
      columns: [
        { name: 'value', type: 'text', nullable: false },
        { name: 'comment', type: 'text' },
      ],
      primary_key: ['value'],
      rows: [
        { value: 'draft', comment: 'not yet out' },
        { value: 'out', comment: null },
      ],
    },
  ],
};

const source = 'mem';
const user = (id: string) => ({ 'x-svc-role': 'user', 'x-svc-user-id': id });
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
};

describe('the memory source kind (plugin-template/source-kind)', () => {
  it('is added, its tables tracked, with relationships and a permission, through memory_* operations', async () => {
    await ok({ type: 'memory_add_source', args: { name: source, configuration } });
    await ok({ type: 'memory_track_table', args: { source, table: 'author' } });
    await ok({ type: 'memory_track_table', args: { source, table: { schema: 'main', name: 'article' } } });
    await ok({ type: 'memory_create_object_relationship', args: { source, table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } });
    await ok({
      type: 'memory_create_array_relationship',
      args: { source, table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } },
    });
    // The role reads the id and title of its own articles, at most 2 at a time.
    await ok({
      type: 'memory_create_select_permission',
      args: { source, table: 'article', role: 'user', permission: { columns: ['id', 'title'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, limit: 2, allow_aggregations: true } },
    });
    // A table the kind's introspection does not report is refused as in any kind.
    const missing = await s.metadata({ type: 'memory_track_table', args: { source, table: 'ghost' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('no such table/view exists in source: "ghost"');

    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body.sources.find((x: { name: string }) => x.name === source);
    expect(exported.kind).toBe('memory');
    expect(exported.tables.map((t: { table: unknown }) => t.table)).toEqual([
      { schema: 'main', name: 'author' },
      { schema: 'main', name: 'article' },
    ]);
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('answers an admin query: where _eq, order_by, limit, offset, an object relationship', async () => {
    const r = await s.gql('{ article(where: {published: {_eq: true}}, order_by: {id: desc}, limit: 2) { id title author { name } } }');
    expect(r).toEqual({
      data: {
        article: [
          { id: 4, title: 'fourth', author: { name: 'ann' } },
          { id: 2, title: 'second', author: { name: 'bob' } },
        ],
      },
    });
    const page = await s.gql('query ($n: Int!, $skip: Int) { article(order_by: {id: asc}, limit: $n, offset: $skip) { id } }', { n: 2, skip: 1 });
    expect(page).toEqual({ data: { article: [{ id: 2 }, { id: 3 }] } });
  });

  it('answers boolean expressions, nulls ordered as in Hasura, array relationships, _by_pk, counts', async () => {
    const r = await s.gql(`{
      unpublished: article(where: {_not: {published: {_eq: true}}}) { id }
      nulls: article(order_by: {published: desc, id: asc}, where: {id: {_in: [1, 3, 5]}}) { id published }
      by_author: article(where: {author: {name: {_eq: "bob"}}}) { title }
      author(order_by: {id: asc}) { name articles(order_by: {id: asc}) { id } articles_aggregate { aggregate { count } } }
      author_by_pk(id: 2) { name __typename }
      article_aggregate(where: {author_id: {_eq: 1}}) { aggregate { count } }
    }`);
    expect(r).toEqual({
      data: {
        // SQL's three-valued logic: `not (null = true)` is unknown, so the orphan is left out.
        unpublished: [{ id: 3 }],
        nulls: [
          { id: 5, published: null },
          { id: 1, published: true },
          { id: 3, published: false },
        ],
        by_author: [{ title: 'second' }],
        author: [
          { name: 'ann', articles: [{ id: 1 }, { id: 3 }, { id: 4 }], articles_aggregate: { aggregate: { count: 3 } } },
          { name: 'bob', articles: [{ id: 2 }], articles_aggregate: { aggregate: { count: 1 } } },
        ],
        author_by_pk: { name: 'bob', __typename: 'author' },
        article_aggregate: { aggregate: { count: 3 } },
      },
    });
  });

  it("applies the role's filter (with its session variable), columns and limit", async () => {
    expect(await s.gql('{ article(order_by: {id: asc}) { id title } }', undefined, user('1'))).toEqual({
      data: { article: [{ id: 1, title: 'first' }, { id: 3, title: 'third' }] },
    });
    expect(await s.gql('{ article(order_by: {id: desc}) { id } }', undefined, user('2'))).toEqual({ data: { article: [{ id: 2 }] } });
    // The permission's limit caps the nodes, not the count.
    expect(await s.gql('{ article_aggregate { aggregate { count } nodes { id } } }', undefined, user('1'))).toEqual({
      data: { article_aggregate: { aggregate: { count: 3 }, nodes: [{ id: 1 }, { id: 3 }] } },
    });
    // Columns outside the permission are not in the role's schema; nor is the author table.
    const hidden = await s.gql('{ article { author_id } }', undefined, user('1'));
    expect(hidden.errors[0].message).toContain("field 'author_id' not found in type: 'article'");
    const noAuthor = await s.gql('{ author { name } }', undefined, user('1'));
    expect(noAuthor.errors[0].message).toContain("field 'author' not found in type: 'query_root'");
    // A session variable that is not an integer fails as a bad value of the column's type.
    const bad = await s.gql('{ article { id } }', undefined, user('one'));
    expect(bad.errors[0]).toMatchObject({ message: 'invalid input syntax for type int: "one"', extensions: { code: 'data-exception' } });
  });

  it("serves an enum table, whose values its executor reads (Dialect.enumTable)", async () => {
    await ok({ type: 'memory_track_table', args: { source, table: 'status', is_enum: true } });
    const r = await s.gql('{ __type(name: "status_enum") { enumValues { name description } } article(where: {status: {_eq: draft}}) { id status } }');
    expect(r).toEqual({
      data: {
        __type: {
          enumValues: [
            { name: 'draft', description: 'not yet out' },
            { name: 'out', description: null },
          ],
        },
        article: [{ id: 3, status: 'draft' }],
      },
    });
  });

  it('refuses what its compiler does not support as not-supported, and has no mutations', async () => {
    const r = await s.gql('{ article(distinct_on: title) { id } }');
    expect(r.errors[0]).toMatchObject({ message: 'the memory source kind does not support distinct_on', extensions: { code: 'not-supported' } });
    const m = await s.gql('mutation { insert_article(objects: [{id: 6}]) { affected_rows } }');
    expect(m.errors[0].message).toBe('no mutations exist');
  });

  it('offers no aggregate function but count, since it declares none (Dialect.aggregates)', async () => {
    const r = await s.gql('{ __type(name: "article_aggregate_fields") { fields { name } } }');
    expect(r.data.__type.fields.map((f: { name: string }) => f.name)).toEqual(['count']);
    const bad = await s.gql('{ article_aggregate { aggregate { max { id } } } }');
    expect(bad.errors[0].message).toMatch(/max/);
  });

  it("is no source for the legacy data operations of /v1/query, which are PostgreSQL's", async () => {
    const r = await s.query({ type: 'select', args: { source, table: 'author', columns: ['id'] } });
    // Hasura looks the source up as a PostgreSQL one (Note [Operations of a kind] in plugins/database).
    expect(r).toMatchObject({ status: 400, body: { code: 'not-exists', error: `source with name "${source}" does not exist`, path: '$.args.source' } });
  });

  it('explains its plans its own way (SourceConnection.explain), and classifies its errors (Dialect.classifyError)', async () => {
    const r = await s.request('POST', '/v1/graphql/explain', { query: { query: '{ article { id } }' } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual([{ field: 'article', sql: expect.stringMatching(/^\{"memory":1,/), params: expect.any(Array), plan: ['memory plan: list of "main"."article"', 'filter: {"t":"const","v":true}'] }]);
    // An error the dialect does not classify is the framework's default: `unexpected`, its message.
    expect(memoryDialect.classifyError!(new Error('x'))).toBeUndefined();
  });
  it('captures no events (no SourceKind.events): no event-trigger operations, and a trigger on its table is inconsistent', async () => {
    const trigger = { name: 'on_author', definition: { insert: { columns: '*' } }, webhook: 'http://localhost:1/hook', retry_conf: { num_retries: 0, interval_sec: 10, timeout_sec: 60 } };
    const r = await s.metadata({ type: 'memory_create_event_trigger', args: { source, table: 'author', ...trigger } });
    expect(r).toMatchObject({ status: 400, body: { code: 'parse-failed', path: '$.type', error: 'unknown operation type "memory_create_event_trigger"' } });
    // PostgreSQL's are there (the kind provides capture).
    expect((await s.metadata({ type: 'pg_get_event_logs', args: { name: 'nope' } })).body).toMatchObject({ code: 'not-exists' });
    const { metadata } = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const withTrigger = {
      ...metadata,
      sources: metadata.sources.map((x: any) => (x.name !== source ? x : { ...x, tables: x.tables.map((t: any) => (t.table.name === 'author' ? { ...t, event_triggers: [trigger] } : t)) })),
    };
    const put = await s.metadata({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: withTrigger } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.inconsistent_objects).toEqual([
      expect.objectContaining({ type: 'event_trigger', reason: 'Inconsistent object: event triggers are not supported on sources of kind "memory"' }),
    ]);
    await ok({ type: 'replace_metadata', version: 2, args: { metadata } });
  });
});
