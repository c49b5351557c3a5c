/**
 * The GraphQL request path of plugins/graphql (Note [Planned root fields], Note [The plan cache]),
 * driven through the real app with a small plugin whose root fields plan to fixed texts, echo
 * their variables or session, throw, or run one SQL statement on the default source.
 */
import { describe, expect, it } from 'vitest';
import {
  GraphQLBoolean,
  GraphQLInt,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLString,
  getIntrospectionQuery,
  buildClientSchema,
  valueFromAST,
  type GraphQLArgument,
  type FieldNode,
} from 'graphql';
import { definePlugin, type FieldPlan, type PlanInput } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { DatabaseToken, findSource } from '../database/index.js';
import { startServer, useServer } from '../../test/helpers.js';

const planned: Record<string, number> = {};
const mutationLog: string[] = [];

/** The argument values of a field, resolved against the request's coerced variables. */
function args(input: PlanInput, variables: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const def = input.schema.getQueryType()!.getFields()[input.field.name.value] ?? input.schema.getMutationType()!.getFields()[input.field.name.value]!;
  const out: Record<string, unknown> = {};
  for (const a of input.field.arguments ?? []) {
    const arg = def.args.find((x: GraphQLArgument) => x.name === a.name.value)!;
    out[a.name.value] = valueFromAST(a.value, arg.type, variables as Record<string, unknown>);
  }
  return out;
}

const selected = (f: FieldNode) => (f.selectionSet?.selections ?? []).map((s) => (s.kind === 'Field' ? s.name.value : '?'));

const engineTest = definePlugin({
  name: 'engine_test',
  after: ['database'],
  setup(k) {
    const db = k.use(DatabaseToken);
    k.schemaContributor({
      name: 'engine_test',
      contribute(role, build, types) {
        const count = (name: string, plan: (input: PlanInput) => FieldPlan) => (input: PlanInput) => {
          planned[name] = (planned[name] ?? 0) + 1;
          return plan(input);
        };
        const json = types.define(new GraphQLScalarType({ name: 'json' }));
        const point = types.define(
          new GraphQLObjectType({ name: 'point', fields: () => ({ ...types.extensions('point'), x: { type: GraphQLInt }, y: { type: GraphQLInt } }) }),
        );
        const user = {
          hello: { config: { type: GraphQLString }, plan: count('hello', () => ({ run: async () => '"world"' })) },
          whoami: { config: { type: json }, plan: count('whoami', () => ({ run: async (c) => JSON.stringify(c.session.variables) })) },
        };
        if (role !== 'admin') return { query: user };
        return {
          query: {
            ...user,
            point: {
              config: { type: point },
              // The selection it was planned with, so merged fields and fragments show.
              plan: count('point', (input) => {
                const text = JSON.stringify(Object.fromEntries(selected(input.field).map((n) => [n, n === 'x' ? 1 : 2])));
                return { run: async () => text };
              }),
            },
            echo: {
              config: { type: json, args: { i: { type: GraphQLInt }, s: { type: GraphQLString } } },
              plan: count('echo', (input) => ({ run: async (c) => JSON.stringify({ args: args(input, c.variables), variables: c.variables }) })),
            },
            slow: { config: { type: GraphQLInt }, plan: count('slow', () => ({ run: () => new Promise((r) => setTimeout(() => r('1'), 30)) })) },
            fail: {
              config: { type: GraphQLInt },
              plan: count('fail', () => ({
                run: async () => {
                  throw new SvcError('permission-error', 'not for you', { path: '$.selectionSet.fail' });
                },
              })),
            },
            crash: { config: { type: GraphQLInt }, plan: count('crash', () => ({ run: async () => { throw new Error('boom'); } })) },
            sql: {
              config: { type: json, args: { n: { type: GraphQLInt } } },
              plan: count('sql', (input) => ({
                run: async (c) => {
                  const conn = db.connection(findSource(build.metadata, 'default')!);
                  const rows = await conn.executor.query<{ t: string }>("select json_build_object('n', $1::int, 'ok', true)::text as t", [args(input, c.variables).n]);
                  return rows[0]!.t;
                },
              })),
            },
          },
          mutation: {
            // Note [Fields pipelined]: says when it has sent its work, then answers after `delay`.
            queue: {
              config: { type: GraphQLString, args: { msg: { type: GraphQLString }, delay: { type: GraphQLInt }, fail: { type: GraphQLBoolean } } },
              plan: count('queue', (input) => ({
                pipelined: true,
                run: async (c, queued) => {
                  const a = args(input, c.variables) as { msg: string; delay?: number; fail?: boolean };
                  mutationLog.push(`sent ${a.msg}`);
                  queued?.();
                  await new Promise((r) => setTimeout(r, a.delay ?? 0));
                  mutationLog.push(`answered ${a.msg}`);
                  if (a.fail) throw new SvcError('validation-failed', `failed ${a.msg}`);
                  return JSON.stringify(a.msg);
                },
              })),
            },
            log: {
              config: { type: GraphQLString, args: { msg: { type: GraphQLString }, delay: { type: GraphQLInt } } },
              plan: count('log', (input) => ({
                run: async (c) => {
                  const a = args(input, c.variables) as { msg: string; delay?: number };
                  await new Promise((r) => setTimeout(r, a.delay ?? 0));
                  mutationLog.push(a.msg);
                  return JSON.stringify(a.msg);
                },
              })),
            },
          },
        };
      },
    });
  },
});

const s = useServer(undefined, { extraPlugins: [engineTest] });
const gql = (body: unknown, headers?: Record<string, string>) => s.request('POST', '/v1/graphql', body, headers);
const q = (query: string, extra: Record<string, unknown> = {}, headers?: Record<string, string>) => gql({ query, ...extra }, headers);
const asUser = { 'x-svc-role': 'user', 'x-svc-user-id': '7' };

describe('GraphQL engine: answers', () => {
  it('splices the plans\' texts under their aliases, in document order', async () => {
    const r = await q('{ b: hello a: hello point { x y } }');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.text).toBe('{"data":{"b":"world","a":"world","point":{"x":1,"y":2}}}');
  });

  it('fragments and inline fragments at the root; fields of one key merged into one plan', async () => {
    const r = await q('query { ...F ... on query_root { point { y } } } fragment F on query_root { point { x } hello }');
    expect(r.body).toEqual({ data: { point: { x: 1, y: 2 }, hello: 'world' } });
  });

  it('@include and @skip with literals and variables', async () => {
    const doc = 'query ($a: Boolean!, $b: Boolean = false) { x: hello @include(if: $a) y: hello @skip(if: $b) z: hello @skip(if: true) ... @include(if: $b) { w: hello } }';
    expect((await q(doc, { variables: { a: true } })).body).toEqual({ data: { x: 'world', y: 'world' } });
    expect((await q(doc, { variables: { a: false, b: true } })).body).toEqual({ data: { w: 'world' } });
    expect((await q(doc, { variables: { a: true, b: true } })).body).toEqual({ data: { x: 'world', w: 'world' } });
  });

  it('variables: defaults, coercion and their errors', async () => {
    const doc = 'query ($i: Int = 3, $s: String!) { echo(i: $i, s: $s) }';
    expect((await q(doc, { variables: { s: 'x' } })).body).toEqual({ data: { echo: { args: { i: 3, s: 'x' }, variables: { i: 3, s: 'x' } } } });
    expect((await q(doc, { variables: { s: 'x', i: null } })).body.data.echo.args).toEqual({ i: null, s: 'x' });
    expect((await q(doc, { variables: {} })).body).toEqual({
      errors: [{ message: 'expecting a value for non-nullable variable: "s"', extensions: { path: '$', code: 'validation-failed' } }],
    });
    const bad = await q(doc, { variables: { s: 'x', i: 'nope' } });
    expect(bad.body.errors[0].extensions).toEqual({ path: '$', code: 'validation-failed' });
    expect(bad.body.errors[0].message).toMatch(/\$i.*Int cannot represent/);
    expect((await q(doc, { variables: { s: 'x', other: 1 } })).body.errors[0]).toEqual({
      message: 'unexpected variables in variableValues: other',
      extensions: { path: '$', code: 'validation-failed' },
    });
    expect((await q('{ hello }', { variables: [] })).body.errors[0].extensions).toEqual({ path: '$.variables', code: 'parse-failed' });
  });

  it('a literal Int out of range: Hasura\'s parse-failed at the value, its number as Haskell shows it', async () => {
    expect((await q('{ echo(i: 2147483648, s: "x") }')).body).toEqual({
      errors: [
        {
          message: 'The value 2.147483648e9 lies outside the bounds or is not an integer. Maybe it is a float, or is there integer overflow?',
          extensions: { path: '$.selectionSet.echo.args.i', code: 'parse-failed' },
        },
      ],
    });
    expect((await q('{ echo(i: -3000000000, s: "x") }')).body.errors[0].message).toMatch(/^The value -3\.0e9 lies outside/);
  });

  it('operationName selects the operation, with Hasura\'s errors', async () => {
    const doc = 'query A { a: hello } query B { b: hello }';
    expect((await q(doc, { operationName: 'B' })).body).toEqual({ data: { b: 'world' } });
    expect((await q(doc, { operationName: null })).body.errors[0]).toEqual({
      message: 'exactly one operation has to be present in the document when operationName is not specified',
      extensions: { path: '$', code: 'validation-failed' },
    });
    expect((await q(doc, { operationName: 'C' })).body.errors[0].message).toBe('no such operation found in the document: "C"');
    expect((await q('{ hello }', { operationName: 'C' })).body.errors[0].message).toBe('operationName cannot be used when an anonymous operation exists in the document');
    expect((await q('query A { hello }', { operationName: 'A', extensions: null })).body).toEqual({ data: { hello: 'world' } });
  });

  it('__typename at the root', async () => {
    expect((await q('{ __typename t: __typename hello }')).text).toBe('{"data":{"__typename":"query_root","t":"query_root","hello":"world"}}');
    expect((await q('mutation { __typename }')).body).toEqual({ data: { __typename: 'mutation_root' } });
  });

  it('session variables reach the plans; a role sees only its fields', async () => {
    expect((await q('{ whoami }', {}, asUser)).body).toEqual({ data: { whoami: { 'x-svc-role': 'user', 'x-svc-user-id': '7' } } });
    expect((await q('{ point { x } }', {}, asUser)).body).toEqual({
      errors: [{ message: "field 'point' not found in type: 'query_root'", extensions: { path: '$.selectionSet.point', code: 'validation-failed' } }],
    });
    expect((await q('mutation { log(msg: "x") }', {}, asUser)).body.errors[0]).toEqual({ message: 'no mutations exist', extensions: { path: '$', code: 'validation-failed' } });
  });

  it('a batch answers an array, each element as alone, in order', async () => {
    const r = await gql([{ query: '{ hello }' }, { query: '{ nope }' }, { query: 'mutation { log(msg: "batch") }' }, { nope: 1 }]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      { data: { hello: 'world' } },
      { errors: [{ message: "field 'nope' not found in type: 'query_root'", extensions: { path: '$.selectionSet.nope', code: 'validation-failed' } }] },
      { data: { log: 'batch' } },
      { errors: [{ message: 'key "query" not found', extensions: { path: '$', code: 'parse-failed' } }] },
    ]);
    expect((await gql([])).text).toBe('[]');
  });

  it('one SQL statement\'s text goes to the client as PostgreSQL built it', async () => {
    const r = await q('query ($n: Int) { sql(n: $n) }', { variables: { n: 41 } });
    expect(r.text).toBe('{"data":{"sql":{"n" : 41, "ok" : true}}}');
  });
});

describe('GraphQL engine: errors', () => {
  it('parse errors in Hasura\'s shape', async () => {
    expect((await q('{ hello ')).body).toEqual({ errors: [{ message: 'not a valid graphql query', extensions: { path: '$.query', code: 'validation-failed' } }] });
    expect((await gql({ query: 1 })).body.errors[0].extensions).toEqual({ path: '$.query', code: 'parse-failed' });
    expect((await gql({})).body.errors[0]).toEqual({ message: 'key "query" not found', extensions: { path: '$', code: 'parse-failed' } });
  });

  it('validation errors in Hasura\'s words and paths', async () => {
    const err = async (doc: string) => (await q(doc)).body.errors[0];
    expect(await err('{ point { z } }')).toEqual({ message: "field 'z' not found in type: 'point'", extensions: { path: '$.selectionSet.point.selectionSet.z', code: 'validation-failed' } });
    expect(await err('{ a: point { x } b: point { ...on point { q } } }')).toMatchObject({ extensions: { path: '$.selectionSet.point.selectionSet.q' } });
    expect(await err('{ hello(x: 1) }')).toEqual({ message: "'hello' has no argument named 'x'", extensions: { path: '$.selectionSet.hello', code: 'validation-failed' } });
    expect(await err('{ point }')).toEqual({ message: "missing selection set for 'point'", extensions: { path: '$.selectionSet.point.selectionSet', code: 'validation-failed' } });
    expect(await err('{ hello { x } }')).toEqual({ message: 'unexpected subselection set for non-object field', extensions: { path: '$.selectionSet.hello', code: 'validation-failed' } });
    expect(await err('query ($i: String) { echo(i: $i) }')).toEqual({ message: "variable 'i' is declared as 'String', but used where 'Int' is expected", extensions: { path: '$.selectionSet.echo.args.i', code: 'validation-failed' } });
  });

  it('subscriptions over HTTP and persisted queries are refused as Hasura refuses them', async () => {
    expect((await q('subscription { hello }')).body.errors[0]).toEqual({
      message: 'subscriptions are not supported over HTTP, use websockets instead',
      extensions: { path: '$', code: 'unexpected-payload' },
    });
    expect((await q('{ hello }', { extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } })).body.errors[0]).toEqual({
      message: 'Automatic Persisted Queries is not enabled',
      extensions: { path: '$', code: 'not-supported' },
    });
  });

  it('a plan that throws fails the whole request: errors, no data', async () => {
    expect((await q('{ hello fail slow }')).body).toEqual({ errors: [{ message: 'not for you', extensions: { path: '$.selectionSet.fail', code: 'permission-error' } }] });
    const r = await q('{ hello crash }');
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ errors: [{ message: 'internal error: the request could not be completed; see the server log', extensions: { path: '$', code: 'unexpected' } }] });
    expect(s.logs.some((l) => l.type === 'unexpected-error' && l.detail.error.message === 'boom')).toBe(true);
  });

  it('mutations run in order, one after the other', async () => {
    mutationLog.length = 0;
    const r = await q('mutation { a: log(msg: "a", delay: 40) b: log(msg: "b") c: log(msg: "c", delay: 10) }');
    expect(r.body).toEqual({ data: { a: 'a', b: 'b', c: 'c' } });
    expect(mutationLog).toEqual(['a', 'b', 'c']);
  });

  it('pipelined mutation fields start before the answers of those before them; any other field waits for them all (Note [Fields pipelined])', async () => {
    mutationLog.length = 0;
    const r = await q('mutation { a: queue(msg: "a", delay: 40) b: queue(msg: "b") c: log(msg: "c") d: queue(msg: "d") }');
    expect(r.body).toEqual({ data: { a: 'a', b: 'b', c: 'c', d: 'd' } });
    expect(mutationLog).toEqual(['sent a', 'sent b', 'answered b', 'answered a', 'c', 'sent d', 'answered d']);
  });

  it('of pipelined fields the first failure in document order is the error, and no later field that waits runs', async () => {
    mutationLog.length = 0;
    const r = await q('mutation { a: queue(msg: "a", delay: 30, fail: true) b: queue(msg: "b", fail: true) c: log(msg: "c") }');
    expect(r.body).toEqual({ errors: [{ message: 'failed a', extensions: { path: '$', code: 'validation-failed' } }] });
    expect(mutationLog).toEqual(['sent a', 'sent b', 'answered b', 'answered a']);
  });

  it('contributors that collide: every request of the role says so, naming both plugins', async () => {
    const twin = (name: string) =>
      definePlugin({ name, setup: (k) => k.schemaContributor({ name, contribute: () => ({ query: { same: { config: { type: GraphQLString }, plan: () => ({ run: async () => 'null' }) } } }) }) });
    const t = await startServer({ extraPlugins: [twin('twin_a'), twin('twin_b')] });
    try {
      const r = await t.request('POST', '/v1/graphql', { query: '{ same }' });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ errors: [{ message: 'the query root field "same" is contributed by both "twin_a" and "twin_b"', extensions: { path: '$', code: 'unexpected' } }] });
    } finally {
      await t.stop();
    }
  });

  it('logs the operation type in the http-log', async () => {
    await q('{ hello }');
    const line = s.logs.filter((l) => l.type === 'http-log').at(-1)!;
    expect(line.detail).toMatchObject({ operation: { type: 'graphql' }, http_info: { url: '/v1/graphql', status: 200 } });
  });
});

describe('GraphQL engine: introspection', () => {
  it('a standard introspection query loads the role\'s schema, and a role sees only its fields', async () => {
    const admin = await q(getIntrospectionQuery());
    expect(admin.body.errors).toBeUndefined();
    const schema = buildClientSchema(admin.body.data);
    expect(Object.keys(schema.getQueryType()!.getFields()).sort()).toEqual(['crash', 'echo', 'fail', 'hello', 'point', 'slow', 'sql', 'whoami']);
    expect(schema.getMutationType()!.name).toBe('mutation_root');
    const user = buildClientSchema((await q(getIntrospectionQuery(), {}, asUser)).body.data);
    expect(Object.keys(user.getQueryType()!.getFields()).sort()).toEqual(['hello', 'whoami']);
    expect(user.getMutationType()).toBeFalsy();
  });

  it('introspection fields next to planned ones, with variables and aliases', async () => {
    const r = await q('query ($n: String!) { hello t: __type(name: $n) { name } __schema { queryType { name } } }', { variables: { n: 'point' } });
    expect(r.body).toEqual({ data: { hello: 'world', t: { name: 'point' }, __schema: { queryType: { name: 'query_root' } } } });
  });

  it('a repeated introspection is answered from the build\'s cache, per role; a metadata change shows the new schema (Note [Introspection answers cached])', async () => {
    // A text of its own: the test above sent the standard query as it is (its answer is kept).
    const doc = `${getIntrospectionQuery()}\n# cached`;
    const names = (r: { body: { data: unknown } }) => Object.keys(buildClientSchema(r.body.data as never).getQueryType()!.getFields()).sort();
    const before = s.graphql.introspectionStats();
    const first = await q(doc);
    const again = await q(doc);
    expect(again.text).toBe(first.text);
    expect(s.graphql.introspectionStats()).toMatchObject({ hits: before.hits + 1, misses: before.misses + 1 });
    // Another role: its own entry, its own answer.
    const user = await q(doc, {}, asUser);
    expect(names(user)).toEqual(['hello', 'whoami']);
    expect((await q(doc, {}, asUser)).text).toBe(user.text);
    expect(s.graphql.introspectionStats()).toMatchObject({ hits: before.hits + 2, misses: before.misses + 2 });
    // Two introspection fields and a planned one in one document: the planned one runs each time.
    const n = planned.hello ?? 0;
    const mixed = '{ cachedI: hello __schema { queryType { name } } t: __type(name: "point") { name } }';
    for (let i = 0; i < 2; i++) expect((await q(mixed)).body).toEqual({ data: { cachedI: 'world', __schema: { queryType: { name: 'query_root' } }, t: { name: 'point' } } });
    expect(planned.hello).toBe(n + 1); // planned once (the plan cache), run twice
    expect(s.graphql.introspectionStats()).toMatchObject({ hits: before.hits + 3, misses: before.misses + 3 });
    // A table tracked: the next answer is the new schema's, not the one kept.
    await s.runSql('create table intro_cached (id int primary key)');
    try {
      expect((await s.metadata({ type: 'pg_track_table', args: { table: 'intro_cached' } })).status).toBe(200);
      const misses = s.graphql.introspectionStats().misses;
      const tracked = await q(doc);
      expect(s.graphql.introspectionStats()).toMatchObject({ misses: misses + 1, size: 1 }); // the others went with the build
      expect(names(tracked)).toEqual(expect.arrayContaining(['intro_cached', 'intro_cached_by_pk', 'hello']));
      expect(names(first)).not.toContain('intro_cached');
      expect((await q(doc)).text).toBe(tracked.text);
    } finally {
      await s.metadata({ type: 'pg_untrack_table', args: { table: 'intro_cached' } });
      await s.runSql('drop table intro_cached');
    }
    expect(names(await q(doc))).toEqual(names(first));
  });

  it('an operation with variables is introspected afresh, each time with its values', async () => {
    await q('{ hello }'); // the build of the test above, if it changed, is the cache's now
    const before = s.graphql.introspectionStats();
    const doc = 'query ($n: String!, $d: Boolean!) { __type(name: $n) { name fields(includeDeprecated: $d) { name } } }';
    expect((await q(doc, { variables: { n: 'point', d: true } })).body).toEqual({ data: { __type: { name: 'point', fields: [{ name: 'x' }, { name: 'y' }] } } });
    expect((await q(doc, { variables: { n: 'query_root', d: false } })).body.data.__type.name).toBe('query_root');
    expect((await q(doc, { variables: { n: 'nope', d: false } })).body).toEqual({ data: { __type: null } });
    expect(s.graphql.introspectionStats()).toEqual(before);
  });
});

describe('GraphQL engine: plan cache', () => {
  it('a repeated request skips planning; each role has its own entry', async () => {
    const doc = '{ cached0: hello }';
    const before = { ...s.graphql.stats() };
    const n = planned.hello ?? 0;
    await q(doc);
    await q(doc);
    expect(planned.hello).toBe(n + 1);
    expect(s.graphql.stats().misses).toBe(before.misses + 1);
    expect(s.graphql.stats().hits).toBe(before.hits + 1);
    await q(doc, {}, asUser);
    await q(doc, {}, asUser);
    expect(planned.hello).toBe(n + 2);
    expect(s.graphql.stats().misses).toBe(before.misses + 2);
  });

  it('@include/@skip variables choose among plans kept in the entry', async () => {
    const doc = 'query ($a: Boolean!) { cachedP: point @include(if: $a) { x } cachedH: hello }';
    const p = planned.point ?? 0;
    const h = planned.hello ?? 0;
    for (const a of [true, false, true, false]) await q(doc, { variables: { a } });
    expect(planned.point).toBe(p + 1);
    expect(planned.hello).toBe(h + 2);
  });

  it('a role that may not see a field never gets the admin\'s validated entry', async () => {
    const doc = '{ point { x } }';
    expect((await q(doc)).body.data).toBeDefined();
    expect((await q(doc, {}, asUser)).body.errors[0].extensions.code).toBe('validation-failed');
  });

  it('a metadata change empties the cache', async () => {
    await q('{ cachedM: hello }');
    const misses = s.graphql.stats().misses;
    expect((await s.metadata({ type: 'reload_metadata', args: {} })).status).toBe(200);
    await q('{ cachedM: hello }');
    expect(s.graphql.stats().misses).toBe(misses + 1);
  });

  it('is bounded: the least recently used entry goes', async () => {
    const t = await startServer({ extraPlugins: [engineTest], config: { graphqlPlanCacheSize: 2 } });
    try {
      const send = (doc: string) => t.request('POST', '/v1/graphql', { query: doc });
      await send('{ a: hello }');
      await send('{ b: hello }');
      await send('{ a: hello }'); // a is now the most recently used
      await send('{ c: hello }'); // evicts b
      expect(t.graphql.stats()).toMatchObject({ hits: 1, misses: 3, evictions: 1, size: 2, capacity: 2 });
      await send('{ a: hello }');
      expect(t.graphql.stats().hits).toBe(2);
      await send('{ b: hello }');
      expect(t.graphql.stats()).toMatchObject({ misses: 4, evictions: 2 });
    } finally {
      await t.stop();
    }
  });
});
