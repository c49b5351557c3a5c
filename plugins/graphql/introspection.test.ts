/**
 * Introspection written as text (Note [Introspection written as text] in ./introspection.ts):
 * the engine's answers are the text of graphql-js's `execute` over the same schema, for the
 * standard queries and for documents that use what collection does (aliases, merged fields,
 * fragments, type conditions, @skip/@include, variables, __typename), as admin and as a role,
 * written in steps (Note [Introspection written in steps]) and, when long, as bytes (Note [Long
 * introspection answers as bytes]); an answer past --graphql-max-response-size stops with the
 * limit's error; a metadata change during the steps gives one build's answer, then the next.
 */
import { describe, expect, it } from 'vitest';
import { buildSchema, executeSync, getIntrospectionQuery, Kind, parse, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql';
import { startServer, useServer } from '../../test/helpers.js';
import { BYTES_ABOVE, IntrospectionTooLarge, writeIntrospection } from './introspection.js';

const SEED = `
create table color (value text primary key, comment text);
insert into color values ('red', 'warm'), ('blue', 'cold');
create table author (id serial primary key, name text not null, born date, color text references color(value));
create table article (id serial primary key, author_id int not null references author(id), title text not null, body jsonb, tags text[], rating numeric(3,1) default 2.5);
create function article_excerpt(a article, len int default 10) returns text language sql stable as $$ select left(a.title, len) $$;
create function search_articles(q text) returns setof article language sql stable as $$ select * from article where title ilike q $$;
`;

const s = useServer(SEED);

const FULL = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true });

const DOCUMENTS: [string, string, Record<string, unknown>?][] = [
  ['standard', getIntrospectionQuery()],
  ['every option', FULL],
  [
    'aliases, merged fields, fragments, type conditions, __typename',
    `query Q { a: __schema { queryType { ...T } types { name } types { kind __typename ... on __Type { description } } }
       t: __type(name: "article") { ... on __Type { fields(includeDeprecated: false) { name args { name defaultValue type { ...R } } type { ...R } } } ...T ...T }
       n: __type(name: "nothing") { name } }
     fragment T on __Type { name kind x: __typename }
     fragment R on __Type { kind name ofType { kind name ofType { kind name ofType { name } } } }`,
  ],
  [
    '@skip and @include, literal and from variables',
    `query ($yes: Boolean!, $no: Boolean!, $name: String!) { __type(name: $name) { name @include(if: $yes) kind @skip(if: $yes) inputFields @include(if: $no) { name }
       fields @skip(if: false) { name @include(if: true) isDeprecated } enumValues(includeDeprecated: $yes) { name } } s: __schema @skip(if: $no) { directives { name args { name } } } }`,
    { yes: true, no: false, name: 'article_select_column' },
  ],
  ['__type of an input object, by variable', 'query ($n: String!) { __type(name: $n) { name inputFields { name defaultValue type { name kind ofType { name } } } } }', { n: 'article_insert_input' }],
];

async function expectSame(role: string | undefined) {
  const headers = role ? { 'x-svc-role': role } : undefined;
  const schema = s.graphql.schema(role ?? 'admin');
  for (const [what, doc, variables] of DOCUMENTS) {
    const r = await s.request('POST', '/v1/graphql', { query: doc, variables }, headers);
    const expected = executeSync({ schema, document: parse(doc), variableValues: variables });
    expect(expected.errors, what).toBeUndefined();
    expect(r.text, what).toBe(JSON.stringify({ data: expected.data }));
  }
}

describe('introspection written in steps (Note [Introspection written in steps])', () => {
  const sdl = Array.from({ length: 300 }, (_, i) => `"type ${i}" type T${i} { id: Int! name(upper: Boolean = false): String next: T${(i + 1) % 300} list: [T${i}!]! }`).join('\n');
  const schema = buildSchema(`${sdl}\ntype Query { t0: T0 }`);
  const document = parse(getIntrospectionQuery());
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const fragments = Object.fromEntries(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const entries = [{ responseKey: '__schema', nodes: operation.selectionSet.selections as FieldNode[] }];
  const expected = JSON.stringify(executeSync({ schema, document }).data!.__schema);

  it('the same text, with turns between steps', async () => {
    let turns = 0;
    const texts = await writeIntrospection(schema, operation, fragments, {}, entries, 1e9, async () => void turns++, 0);
    expect(texts.__schema).toEqual({ text: expected, chars: expected.length });
    // A step of 0 ms ends every 1,024 values.
    expect(turns).toBeGreaterThan(5);
    let none = 0;
    expect((await writeIntrospection(schema, operation, fragments, {}, entries, 1e9, async () => void none++)).__schema!.text).toBe(expected);
  });

  it('past its budget in a later step: refused', async () => {
    let turns = 0;
    await expect(writeIntrospection(schema, operation, fragments, {}, entries, expected.length - 1, async () => void turns++, 0)).rejects.toBeInstanceOf(IntrospectionTooLarge);
    expect(turns).toBeGreaterThan(5);
    expect((await writeIntrospection(schema, operation, fragments, {}, entries, expected.length, async () => {}, 0)).__schema!.chars).toBe(expected.length);
  });
});

describe('introspection written as text', () => {
  it('answers what graphql-js answers, as admin and as a role', async () => {
    expect(
      (
        await s.metadata({
          type: 'bulk',
          args: [
            { type: 'pg_track_table', args: { table: 'color', is_enum: true } },
            { type: 'pg_track_table', args: { table: 'author' } },
            { type: 'pg_track_table', args: { table: 'article' } },
            { type: 'pg_track_function', args: { function: 'search_articles' } },
            { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
            { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
            { type: 'pg_add_computed_field', args: { table: 'article', name: 'excerpt', definition: { function: 'article_excerpt' } } },
            { type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id', 'title', 'tags'], filter: { author_id: { _eq: 'X-Svc-User-Id' } }, allow_aggregations: true } } },
            { type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { columns: ['title'], check: {}, set: { author_id: 'X-Svc-User-Id' } } } },
          ],
        })
      ).status,
    ).toBe(200);
    await expectSame(undefined);
    await expectSame('user');
  });

  it('a long answer, kept as bytes: the same text, again from the cache and in a batch, its characters counted against the limit', async () => {
    const started = [];
    try {
      const big = await startServer({ config: { graphqlMaxResponseSize: 1e9 } });
      started.push(big);
      // Comments outside ASCII (two bytes, three, and a pair of surrogates): the bytes outnumber
      // the characters.
      const tables = Array.from({ length: 60 }, (_, i) => `t${i}`);
      await big.runSql(tables.map((t) => `create table ${t} (id serial primary key, name text, n int); comment on table ${t} is 'é … 😀 ${t}';`).join('\n'));
      const tracked = await big.metadata({ type: 'bulk', args: tables.map((table) => ({ type: 'pg_track_table', args: { table } })) });
      expect(tracked.status).toBe(200);
      const query = getIntrospectionQuery();
      const expected = JSON.stringify({ data: executeSync({ schema: big.graphql.schema('admin'), document: parse(query) }).data });
      const whole = await big.request('POST', '/v1/graphql', { query });
      expect(whole.text).toBe(expected);
      const length = whole.text.length - '{"data":{"__schema":'.length - 2;
      expect(length).toBeGreaterThan(BYTES_ABOVE);
      expect(Buffer.byteLength(whole.text)).toBeGreaterThan(whole.text.length);
      expect((await big.request('POST', '/v1/graphql', { query })).text).toBe(expected);
      expect(big.graphql.introspectionStats()).toMatchObject({ hits: 1, misses: 1, size: 1, chars: length });
      const batch = await big.request('POST', '/v1/graphql', [{ query }, { query: '{ t0 { id } }' }]);
      expect(batch.text).toBe(`[${expected},{"data":{"t0":[]}}]`);
      // The limit counts characters: exactly the answer's is enough, one less is not.
      const exact = await startServer({ database: { url: big.url }, config: { graphqlMaxResponseSize: length } });
      started.push(exact);
      expect((await exact.request('POST', '/v1/graphql', { query })).text).toBe(expected);
      expect((await exact.request('POST', '/v1/graphql', { query })).text).toBe(expected);
      const short = await startServer({ database: { url: big.url }, config: { graphqlMaxResponseSize: length - 1 } });
      started.push(short);
      expect((await short.request('POST', '/v1/graphql', { query })).body).toEqual({
        errors: [{ message: `the response is larger than the limit of ${length - 1} characters (--graphql-max-response-size)`, extensions: { path: '$', code: 'validation-failed' } }],
      });
    } finally {
      for (const t of started) await t.stop();
    }
  });

  it('a metadata change while the first introspection is made in steps: that answer is one build\'s, the next one the new build\'s', async () => {
    const t = await startServer({ config: { graphqlMaxResponseSize: 1e9 } });
    try {
      const tables = Array.from({ length: 80 }, (_, i) => `s${i}`);
      await t.runSql(tables.map((n) => `create table ${n} (id serial primary key, name text, n int);`).join('\n') + 'create table late (id int primary key);');
      expect((await t.metadata({ type: 'bulk', args: tables.map((table) => ({ type: 'pg_track_table', args: { table } })) })).status).toBe(200);
      const query = getIntrospectionQuery();
      const names = (text: string) => (JSON.parse(text).data.__schema.types as { name: string }[]).map((x) => x.name);
      // Started first; the track runs while its steps give way.
      const first = t.request('POST', '/v1/graphql', { query });
      const tracked = await t.metadata({ type: 'pg_track_table', args: { table: 'late' } });
      expect(tracked.status).toBe(200);
      const before = names((await first).text);
      expect(before).toContain('s79');
      const after = names((await t.request('POST', '/v1/graphql', { query })).text);
      expect(after).toContain('late');
      expect(after).toEqual(expect.arrayContaining(before));
      // The new build's answer, not one made for the old build and kept.
      expect((await t.request('POST', '/v1/graphql', { query })).text).toContain('"name":"late"');
      expect(t.graphql.introspectionStats()).toMatchObject({ size: 1 });
    } finally {
      await t.stop();
    }
  });

  it('stops at --graphql-max-response-size with its error, the server answering on', async () => {
    const query = getIntrospectionQuery();
    const prefix = '{"data":{"__schema":';
    const started = [];
    try {
      const big = await startServer({ config: { graphqlMaxResponseSize: 1e9 } });
      started.push(big);
      const whole = await big.request('POST', '/v1/graphql', { query });
      expect(whole.text.startsWith(prefix)).toBe(true);
      const length = whole.text.length - prefix.length - 2; // the field's text, which the limit counts
      const exact = await startServer({ config: { graphqlMaxResponseSize: length } });
      started.push(exact);
      expect((await exact.request('POST', '/v1/graphql', { query })).text).toBe(whole.text);
      const short = await startServer({ config: { graphqlMaxResponseSize: length - 1 } });
      started.push(short);
      for (let i = 0; i < 2; i++) {
        const r = await short.request('POST', '/v1/graphql', { query });
        expect(r.body).toEqual({ errors: [{ message: `the response is larger than the limit of ${length - 1} characters (--graphql-max-response-size)`, extensions: { path: '$', code: 'validation-failed' } }] });
      }
      // The second refused without a walk: the first left that the answer passes the budget.
      expect(short.graphql.introspectionStats()).toMatchObject({ hits: 1, misses: 1, size: 1, chars: 0 });
      expect((await short.request('POST', '/v1/graphql', { query: '{ __schema { queryType { name } } }' })).body).toEqual({ data: { __schema: { queryType: { name: 'query_root' } } } });
    } finally {
      for (const t of started) await t.stop();
    }
  });
});
