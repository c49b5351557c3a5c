/**
 * Golden tests of REST endpoints: the metadata operations on both endpoints with Hasura's codes
 * and messages, the dependencies on query collections, export/replace, and serving
 * `/api/rest/**` (matching, 404/405/500, variables from the route, the query string and the body
 * with the SPEC's coercion rules and Hasura's 400s, sessions), prepared once per build; and the
 * OpenAPI document, checked by a validator.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GraphQLString } from 'graphql';
import SwaggerParser from '@apidevtools/swagger-parser';
import { definePlugin } from '../../core/plugin.js';
import { useServer } from '../../test/helpers.js';

/** A root field that counts how often it is planned (Note [Saved documents]: once per build). */
let plans = 0;
const counter = definePlugin({
  name: 'plan-counter',
  setup(k) {
    k.schemaContributor({
      name: 'plan-counter',
      contribute: () => ({
        query: {
          count_plans: {
            config: { type: GraphQLString },
            plan: () => {
              plans++;
              return { run: async () => '"counted"' };
            },
          },
        },
      }),
    });
  },
});

const s = useServer(
  `create table test_table (id uuid primary key default gen_random_uuid(), first_name text, last_name text, age int, score numeric, active boolean, born date, meta jsonb);
   insert into test_table (id, first_name, last_name, age, score, active, born, meta) values
     ('81f1bfea-c169-44b5-b4c8-37e9a071abd8', 'Foo', 'Bar', 30, 1.5, true, '1990-01-01', '{"k": "v", "n": 1}'),
     ('91f1bfea-c169-44b5-b4c8-37e9a071abd8', 'Baz', 'Qux', 40, 2.5, false, null, null),
     ('a1f1bfea-c169-44b5-b4c8-37e9a071abd8', 'X%20Y', 'Test', null, null, null, null, null);`,
  { extraPlugins: [counter] },
);

const ok = { status: 200, body: { message: 'success' } };
const pick = ({ status, body }: { status: number; body: any }) => ({ status, body });
const m = async (type: string, args: unknown) => pick(await s.metadata({ type, args }));
const q = async (type: string, args: unknown) => pick(await s.query({ type, args }));
const err = (code: string, error: string, path = '$.args', status = 400) => ({ status, body: { code, error, path } });
const exported = async () => (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
const rest = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => pick(await s.request(method, `/api/rest/${path}`, body, headers));

const queries = {
  simple: 'query { test_table(order_by: {first_name: asc}) { first_name last_name } }',
  by_name: 'query ($first_name: String!) { test_table(where: {first_name: {_eq: $first_name}}) { first_name last_name } }',
  by_names: 'query ($first_name: String!, $last_name: String!) { test_table(where: {first_name: {_eq: $first_name}, last_name: {_eq: $last_name}}) { first_name last_name } }',
  by_uuid: 'query ($id: uuid!) { test_table(where: {id: {_neq: $id}}, order_by: {first_name: asc}) { first_name } }',
  by_uuids: 'query ($ids: [uuid!]!) { test_table(where: {id: {_in: $ids}}, order_by: {first_name: asc}) { first_name } }',
  typed: 'query ($age: Int, $score: numeric, $active: Boolean, $born: date, $name: String) { test_table(where: {_and: [{age: {_eq: $age}}, {score: {_eq: $score}}, {active: {_eq: $active}}, {born: {_eq: $born}}, {first_name: {_eq: $name}}]}, order_by: {first_name: asc}) { first_name } }',
  required_int: 'query ($age: Int!) { test_table(where: {age: {_eq: $age}}) { first_name } }',
  by_meta: 'query ($m: jsonb!) { test_table(where: {meta: {_contains: $m}}) { first_name } }',
  insert: 'mutation ($first_name: String!) { insert_test_table_one(object: {first_name: $first_name, last_name: "New"}) { first_name last_name } }',
  subscription: 'subscription { test_table { first_name } }',
  fragment: 'fragment f on test_table { first_name } query { test_table { ...f } }',
  count: 'query { count_plans }',
  aliased: 'query Named { people: test_table(order_by: {first_name: asc}, limit: 1) { name: first_name __typename } }',
};
const endpoint = (name: string, url: string, query: keyof typeof queries, methods = ['GET'], extra: object = {}) => ({
  name,
  url,
  methods,
  definition: { query: { collection_name: 'c', query_name: query } },
  ...extra,
});
const all = [
  { first_name: 'Baz', last_name: 'Qux' },
  { first_name: 'Foo', last_name: 'Bar' },
  { first_name: 'X%20Y', last_name: 'Test' },
];

async function reset() {
  expect(await q('clear_metadata', {})).toMatchObject({ status: 200 });
  const r = await s.query({
    type: 'bulk',
    args: [
      { type: 'track_table', args: { table: 'test_table' } },
      { type: 'create_select_permission', args: { table: 'test_table', role: 'user', permission: { filter: { first_name: { _eq: 'X-Svc-User-Name' } }, columns: ['first_name', 'last_name'] } } },
      { type: 'create_query_collection', args: { name: 'c', definition: { queries: Object.entries(queries).map(([name, query]) => ({ name, query })) } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
}

describe('create_rest_endpoint / drop_rest_endpoint', () => {
  beforeEach(reset);

  it('creates and drops on both endpoints; exported in Hasura\'s shape', async () => {
    expect(await m('create_rest_endpoint', endpoint('simple', 'simple', 'simple', ['GET'], { comment: 'all of them' }))).toEqual(ok);
    expect(await q('create_rest_endpoint', endpoint('by_name', 'people/:first_name', 'by_name', ['GET', 'POST']))).toEqual(ok);
    expect((await exported()).rest_endpoints).toEqual([
      { name: 'simple', url: 'simple', methods: ['GET'], definition: { query: { collection_name: 'c', query_name: 'simple' } }, comment: 'all of them' },
      { name: 'by_name', url: 'people/:first_name', methods: ['GET', 'POST'], definition: { query: { collection_name: 'c', query_name: 'by_name' } } },
    ]);
    expect(await m('create_rest_endpoint', endpoint('simple', 'other', 'simple'))).toEqual(err('already-exists', 'Endpoint with name: simple already exists'));
    expect(await q('drop_rest_endpoint', { name: 'simple' })).toEqual(ok);
    expect(await m('drop_rest_endpoint', { name: 'simple' })).toEqual(err('not-exists', 'endpoint with name: simple does not exist'));
    expect(await m('drop_rest_endpoint', { name: 'by_name' })).toEqual(ok);
    expect((await exported()).rest_endpoints).toBeUndefined();
  });

  it('refuses bad arguments with Hasura\'s parse errors', async () => {
    expect(await q('create_rest_endpoint', endpoint('e', '', 'simple'))).toEqual(err('parse-failed', 'empty string not allowed', '$.url'));
    expect(await m('create_rest_endpoint', endpoint('e', 'e', 'simple', []))).toEqual(err('parse-failed', 'parsing NonEmpty failed, unexpected empty list', '$.args.methods'));
    expect(await m('create_rest_endpoint', endpoint('e', 'e', 'simple', ['GET', 'FETCH']))).toEqual(
      err('parse-failed', `parsing EndpointMethod failed, expected one of the tags ['GET','POST','PUT','DELETE','PATCH'], but found tag "FETCH"`, '$.args.methods[1]'),
    );
    expect(await m('create_rest_endpoint', { name: 'e', url: 'e', methods: ['GET'] })).toEqual(err('parse-failed', 'key "definition" not found'));
    expect(await m('drop_rest_endpoint', {})).toEqual(err('parse-failed', 'key "name" not found'));
  });

  it('refuses what cannot be served: invalid-configuration with the endpoint\'s inconsistency', async () => {
    const inconsistent = async (e: ReturnType<typeof endpoint>, reason: string) => {
      expect(await q('create_rest_endpoint', e)).toEqual({
        status: 400,
        body: {
          code: 'invalid-configuration',
          error: reason,
          path: '$.args',
          internal: [{ type: 'rest_endpoint', name: `rest_endpoint ${e.name}`, reason, definition: { comment: null, ...e } }],
        },
      });
    };
    await inconsistent(endpoint('dup', 'foo/:id/bar/:id', 'simple'), 'Duplicate variables found in endpoint path: foo/:id/bar/:id');
    await inconsistent(endpoint('foo', 'foo//bar', 'simple'), 'Empty segments or unnamed variables are not allowed: foo//bar');
    await inconsistent(endpoint('foo', 'foo/:/bar', 'simple'), 'Empty segments or unnamed variables are not allowed: foo/:/bar');
    await inconsistent(endpoint('trailing', 'foo/', 'simple'), 'Empty segments or unnamed variables are not allowed: foo/');
    await inconsistent(endpoint('leading', '/foo', 'simple'), 'Empty segments or unnamed variables are not allowed: /foo');
    await inconsistent(endpoint('sub', 'foo/bar/subscribe', 'subscription'), 'Inconsistent object: in endpoint sub: query with name subscription is a subscription');
    await inconsistent(endpoint('frag', 'frag', 'fragment'), 'Inconsistent object: in endpoint frag: query with name fragment has multiple definitions.');
    await inconsistent({ ...endpoint('nq', 'nq', 'simple'), definition: { query: { collection_name: 'c', query_name: 'nope' as 'simple' } } }, 'Inconsistent object: in endpoint nq: query with name nope does not exist in collection c');
    await inconsistent({ ...endpoint('nc', 'nc', 'simple'), definition: { query: { collection_name: 'nope', query_name: 'simple' } } }, 'Inconsistent object: in endpoint nc: collection with name nope does not exist');
    expect((await exported()).rest_endpoints).toBeUndefined();
  });

  it('refuses a template that a request could match together with another one, for a shared method', async () => {
    expect(await m('create_rest_endpoint', endpoint('simple', 'simple', 'simple'))).toEqual(ok);
    expect(await m('create_rest_endpoint', endpoint('with_arg', 'with_arg', 'by_name', ['GET', 'POST']))).toEqual(ok);
    expect(await m('create_rest_endpoint', endpoint('posted', 'posted', 'by_name', ['POST']))).toEqual(ok);
    expect(await m('create_rest_endpoint', endpoint('two', 'a/:x', 'by_name'))).toEqual(ok);
    // Another method on the same template is not a conflict.
    expect(await m('create_rest_endpoint', endpoint('simple_post', 'simple', 'simple', ['POST']))).toEqual(ok);
    const conflict = endpoint('conflicting', ':conflicting', 'simple');
    const r = await m('create_rest_endpoint', conflict);
    expect(r).toMatchObject({ status: 400, body: { code: 'invalid-configuration', path: '$.args', error: 'Ambiguous URL paths: :conflicting, simple, with_arg' } });
    // Hasura's shape: {reason, conflicts}, the endpoints with their queries' text.
    expect(Object.keys(r.body.internal[0])).toEqual(['reason', 'conflicts']);
    expect(r.body.internal[0].conflicts.map((c: any) => c.name)).toEqual(['conflicting', 'simple', 'with_arg']);
    expect(r.body.internal[0].conflicts[0]).toEqual({ definition: { query: queries.simple }, url: ':conflicting', methods: ['GET'], name: 'conflicting', comment: null });
    // The conflict is blamed on the endpoint being created, whatever its name.
    expect(await m('create_rest_endpoint', endpoint('zzz', ':x/:y', 'by_name'))).toMatchObject({
      status: 400,
      body: { code: 'invalid-configuration', error: 'Ambiguous URL paths: a/:x, :x/:y' },
    });
    expect(await m('create_rest_endpoint', endpoint('fine', ':x/:y/z', 'by_name'))).toEqual(ok);
  });
});

describe('endpoints and their saved queries', () => {
  beforeEach(reset);

  it('keeps the collection and the query an endpoint uses, and follows a renamed collection', async () => {
    expect(await m('create_rest_endpoint', endpoint('simple', 'simple', 'simple'))).toEqual(ok);
    expect(await m('drop_query_collection', { collection: 'c', cascade: true })).toEqual(
      err('dependency-error', 'query collection with name "c" is used by the REST endpoint "simple"; cannot proceed to drop', '$.args.collection'),
    );
    expect(await q('drop_query_from_collection', { collection_name: 'c', query_name: 'simple' })).toEqual(
      err('dependency-error', 'query with name "simple" in collection "c" is used by the REST endpoint "simple"; cannot proceed to drop'),
    );
    expect(await q('drop_query_from_collection', { collection_name: 'c', query_name: 'by_name' })).toEqual(ok);
    expect(await m('rename_query_collection', { name: 'c', new_name: 'renamed' })).toEqual(ok);
    expect((await exported()).rest_endpoints[0].definition).toEqual({ query: { collection_name: 'renamed', query_name: 'simple' } });
    expect(await rest('GET', 'simple')).toEqual({ status: 200, body: { test_table: all } });
    expect(await m('drop_rest_endpoint', { name: 'simple' })).toEqual(ok);
    expect(await m('drop_query_collection', { collection: 'renamed', cascade: false })).toEqual(ok);
  });

  it('round-trips through export and replace_metadata; an inconsistent endpoint is reported and not served', async () => {
    expect(await m('create_rest_endpoint', endpoint('simple', 'simple', 'simple', ['GET'], { comment: 'x' }))).toEqual(ok);
    expect(await m('create_rest_endpoint', endpoint('by_name', 'people/:first_name', 'by_name'))).toEqual(ok);
    const before = await exported();
    expect(await m('clear_metadata', {})).toMatchObject({ status: 200 });
    expect(await rest('GET', 'simple')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    expect(await m('replace_metadata', before)).toMatchObject({ status: 200 });
    expect(await exported()).toEqual(before);
    expect(await rest('GET', 'simple')).toEqual({ status: 200, body: { test_table: all } });

    const broken = { ...before, rest_endpoints: [...before.rest_endpoints, endpoint('gone', 'gone', 'simple'), { ...endpoint('bad', 'bad', 'simple'), definition: { query: { collection_name: 'c', query_name: 'nope' } } }] };
    const r = await m('replace_metadata', { metadata: broken, allow_inconsistent_metadata: true });
    expect(r).toMatchObject({ status: 200, body: { is_consistent: false } });
    expect(r.body.inconsistent_objects).toEqual([
      expect.objectContaining({ type: 'rest_endpoint', name: 'rest_endpoint bad', reason: 'Inconsistent object: in endpoint bad: query with name nope does not exist in collection c' }),
    ]);
    expect(await rest('GET', 'bad')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    expect((await rest('GET', 'gone')).status).toBe(200);
    expect(await m('drop_inconsistent_metadata', {})).toMatchObject({ status: 200 });
    expect((await exported()).rest_endpoints.map((e: any) => e.name)).toEqual(['simple', 'by_name', 'gone']);
    expect(await m('replace_metadata', { ...before, rest_endpoints: [endpoint('a', 'a', 'simple'), endpoint('a', 'b', 'simple')] })).toEqual(
      err('parse-failed', 'multiple declarations exist for the following rest endpoints: a', '$.args.rest_endpoints'),
    );
  });

  it('answers 500 when several endpoints match a request (ambiguous templates allowed in)', async () => {
    const md = await exported();
    const r = await m('replace_metadata', { metadata: { ...md, rest_endpoints: [endpoint('one', 'x/:a', 'simple'), endpoint('two', ':b/y', 'simple')] }, allow_inconsistent_metadata: true });
    expect(r).toMatchObject({ status: 200, body: { is_consistent: false, inconsistent_objects: [{ reason: 'Ambiguous URL paths: x/:a, :b/y' }] } });
    expect(await rest('GET', 'x/y')).toEqual({ status: 500, body: { code: 'unexpected', error: 'Multiple endpoints match request', path: '$' } });
    expect((await rest('GET', 'x/z')).status).toBe(400);
  });
});

describe('serving /api/rest', () => {
  beforeAll(async () => {
    await reset();
    const r = await s.query({
      type: 'bulk',
      args: [
        endpoint('simple', 'simple', 'simple'),
        endpoint('with_arg', 'with_arg', 'by_name', ['GET', 'POST']),
        endpoint('with_args', 'with_args', 'by_names'),
        endpoint('template', 'with_template/:first_name', 'by_name'),
        endpoint('with_uuid', 'with_uuid/:id', 'by_uuid'),
        endpoint('with_uuids', 'with_uuids', 'by_uuids', ['POST']),
        endpoint('typed', 'typed', 'typed'),
        endpoint('required_int', 'required_int', 'required_int'),
        endpoint('by_meta', 'by_meta/:m', 'by_meta'),
        endpoint('insert', 'people', 'insert', ['POST']),
        endpoint('people_get', 'people', 'simple', ['GET']),
        endpoint('count', 'count', 'count'),
        endpoint('aliased', 'aliased', 'aliased'),
      ].map((args) => ({ type: 'create_rest_endpoint', args })),
    });
    expect(r.status, r.text).toBe(200);
  });

  it('answers what the saved query returns through GraphQL, without `data`', async () => {
    const r = await s.request('GET', '/api/rest/simple');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toEqual({ test_table: all });
    expect(r.body).toEqual((await s.gql(queries.simple)).data);
    expect(await rest('GET', 'aliased')).toEqual({ status: 200, body: { people: [{ name: 'Baz', __typename: 'test_table' }] } });
  });

  it('404 for no template, 405 with the allowed methods (and an Allow header) for another method', async () => {
    expect(await rest('GET', 'void')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    expect(await rest('GET', 'simple/extra')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    expect(await rest('GET', 'simple/')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    expect(await rest('GET', '')).toEqual(err('not-found', 'Endpoint not found', '$', 404));
    const r = await s.request('DELETE', '/api/rest/simple');
    expect(pick(r)).toEqual(err('method-not-allowed', 'Allowed methods: GET', '$', 405));
    expect(r.headers.get('allow')).toBe('GET');
    // Two endpoints on one template: their methods together.
    const p = await s.request('PATCH', '/api/rest/people');
    expect(pick(p)).toEqual(err('method-not-allowed', 'Allowed methods: GET, POST', '$', 405));
    expect(p.headers.get('allow')).toBe('GET, POST');
    expect((await rest('GET', 'people')).body).toEqual({ test_table: all });
  });

  it('takes variables from the query string, the route and a JSON or form body', async () => {
    const foo = { status: 200, body: { test_table: [{ first_name: 'Foo', last_name: 'Bar' }] } };
    expect(await rest('GET', 'with_arg?first_name=Foo')).toEqual(foo);
    expect(await rest('GET', 'with_arg?first_name=%46oo')).toEqual(foo);
    expect(await rest('GET', 'with_arg?first_name=X%2520Y')).toEqual({ status: 200, body: { test_table: [{ first_name: 'X%20Y', last_name: 'Test' }] } });
    expect(await rest('GET', 'with_args?first_name=Foo&last_name=Bar')).toEqual(foo);
    expect(await rest('GET', 'with_template/Foo')).toEqual(foo);
    expect(await rest('GET', 'with_template/X%2520Y')).toEqual({ status: 200, body: { test_table: [{ first_name: 'X%20Y', last_name: 'Test' }] } });
    expect(await rest('POST', 'with_arg', { first_name: 'Foo' })).toEqual(foo);
    const form = await s.app.request('/api/rest/with_arg', { method: 'POST', body: 'first_name=Foo', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect({ status: form.status, body: await form.json() }).toEqual(foo);
    // The route wins over the body, the body over the query string.
    expect(await rest('POST', 'with_arg?first_name=Baz', { first_name: 'Foo' })).toEqual(foo);
    expect(await rest('GET', 'with_template/Foo?first_name=Baz')).toEqual(foo);
    // A body that is not a JSON object is ignored, as Hasura ignores it.
    expect(await rest('POST', 'with_arg?first_name=Foo', '[1, 2]')).toEqual(foo);
    expect(await rest('POST', 'with_arg?first_name=Foo', 'not json')).toEqual(foo);
    // Body values are passed as they are: a list, and wrong types reach the GraphQL coercion.
    expect(await rest('POST', 'with_uuids', { ids: ['81F1BFEA-C169-44B5-B4C8-37E9A071ABD8', '91f1bfea-c169-44b5-b4c8-37e9a071abd8'] })).toEqual({
      status: 200,
      body: { test_table: [{ first_name: 'Baz' }, { first_name: 'Foo' }] },
    });
    expect(await rest('POST', 'with_arg', { first_name: 12 })).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
  });

  it('reads route and query values by the variable\'s type (the SPEC\'s table)', async () => {
    const names = (r: { body: any }) => r.body.test_table.map((x: any) => x.first_name);
    // Int, numeric (number types): JSON numbers.
    expect(names(await rest('GET', 'typed?age=30'))).toEqual(['Foo']);
    expect(names(await rest('GET', 'typed?score=2.5'))).toEqual(['Baz']);
    // Boolean: true/false, and a flag without a value is true.
    expect(names(await rest('GET', 'typed?active=false'))).toEqual(['Baz']);
    expect(names(await rest('GET', 'typed?active'))).toEqual(['Foo']);
    expect(names(await rest('GET', 'typed?active='))).toEqual(['Foo']);
    // Other scalars (date, uuid) and String: strings.
    expect(names(await rest('GET', 'typed?born=1990-01-01'))).toEqual(['Foo']);
    expect(names(await rest('GET', 'typed?name=30'))).toEqual([]);
    expect(names(await rest('GET', 'typed?name=true'))).toEqual([]);
    expect(names(await rest('GET', 'with_uuid/81F1BFEA-C169-44B5-B4C8-37E9A071ABD8'))).toEqual(['Baz', 'X%20Y']);
    // A missing nullable variable, or an empty value of one, is null (its condition drops out).
    expect(names(await rest('GET', 'typed'))).toEqual(['Baz', 'Foo', 'X%20Y']);
    expect(names(await rest('GET', 'typed?age=&name=Foo'))).toEqual(['Foo']);
    // A value that is not of the variable's type is the GraphQL engine's variable error.
    expect(await rest('GET', 'typed?age=abc')).toMatchObject({ status: 400, body: { code: 'validation-failed', path: '$' } });
    expect(await rest('GET', 'typed?age=1.5')).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
    expect(await rest('GET', 'required_int?age=')).toMatchObject({ status: 400, body: { code: 'validation-failed' } });
    expect(await rest('GET', 'with_uuid/not-a-uuid')).toMatchObject({ status: 400, body: { code: 'data-exception' } });
    // A JSON object for a type that takes one (jsonb here, a GeoJSON geometry too), as Hasura reads it.
    expect(names(await rest('GET', `by_meta/${encodeURIComponent('{"k":"v"}')}`))).toEqual(['Foo']);
    expect(names(await rest('GET', `by_meta/${encodeURIComponent('{"n":2}')}`))).toEqual([]);
    // Text that is not a JSON object stays a string (here, a JSON string for jsonb).
    expect(names(await rest('GET', 'by_meta/v'))).toEqual([]);
    expect(await rest('GET', `by_meta/${encodeURIComponent('{"k":')}`)).toMatchObject({ status: 200 });
  });

  it('refuses values it cannot use with Hasura\'s 400s', async () => {
    expect(await rest('GET', 'with_arg')).toEqual(err('validation-failed', 'expecting a value for non-nullable variable: "first_name"', '$'));
    expect(await rest('GET', 'with_arg?first_name=Foo&other=1')).toEqual(err('bad-request', 'Unexpected variable other', '$'));
    expect(await rest('POST', 'with_arg', { first_name: 'Foo', other: 1 })).toEqual(err('bad-request', 'Unexpected variable other', '$'));
    expect(await rest('POST', 'with_uuids?ids=81f1bfea-c169-44b5-b4c8-37e9a071abd8')).toEqual(
      err('bad-request', 'List variables are not currently supported in URL or Query parameters. (Variable ids, with value "81f1bfea-c169-44b5-b4c8-37e9a071abd8")', '$'),
    );
    // Names that are not GraphQL names are ignored.
    expect((await rest('GET', 'with_arg?first_name=Foo&not-a-name=1')).status).toBe(200);
  });

  it('runs mutations, with the request\'s role and session, authenticated as /v1/graphql', async () => {
    expect(await rest('POST', 'people', { first_name: 'Neu' })).toEqual({ status: 200, body: { insert_test_table_one: { first_name: 'Neu', last_name: 'New' } } });
    expect(await rest('DELETE', 'people')).toEqual(err('method-not-allowed', 'Allowed methods: GET, POST', '$', 405));
    await s.runSql(`delete from test_table where first_name = 'Neu'`);
    const user = { 'x-svc-role': 'user', 'x-svc-user-name': 'Foo' };
    expect(await rest('GET', 'simple', undefined, user)).toEqual({ status: 200, body: { test_table: [{ first_name: 'Foo', last_name: 'Bar' }] } });
    expect(await rest('GET', 'simple', undefined, { 'x-svc-role': 'user', 'x-svc-user-name': 'Baz' })).toEqual({ status: 200, body: { test_table: [{ first_name: 'Baz', last_name: 'Qux' }] } });
    // A role without the table: the engine's validation error, as a 400.
    expect(await rest('GET', 'simple', undefined, { 'x-svc-role': 'nobody' })).toEqual(err('validation-failed', "field 'test_table' not found in type: 'query_root'", '$.selectionSet.test_table'));
    // A missing session variable: Hasura's 400 (its code is not-found).
    expect(await rest('GET', 'simple', undefined, { 'x-svc-role': 'user' })).toEqual(err('not-found', 'missing session variable: "x-svc-user-name"', '$'));
  });

  it('prepares the saved query once per build, not per request, outside the plan cache', async () => {
    plans = 0;
    const stats = s.graphql.stats();
    for (let i = 0; i < 5; i++) expect(await rest('GET', 'count')).toEqual({ status: 200, body: { count_plans: 'counted' } });
    expect(plans).toBe(1);
    expect(s.graphql.stats()).toEqual(stats);
    // Another role has its own schema: planned once for it.
    for (let i = 0; i < 3; i++) expect((await rest('GET', 'count', undefined, { 'x-svc-role': 'user' })).status).toBe(200);
    expect(plans).toBe(2);
    // A metadata change makes a new build: planned again, once.
    expect(await m('add_query_to_collection', { collection_name: 'c', query_name: 'extra', query: 'query { count_plans }' })).toEqual(ok);
    for (let i = 0; i < 3; i++) expect((await rest('GET', 'count')).status).toBe(200);
    expect(plans).toBe(3);
  });
});

describe('authentication and --enabled-apis', () => {
  const secured = useServer(undefined, { config: { adminSecret: 'sekret', enabledApis: ['metadata', 'graphql', 'config'] } });
  const noGraphql = useServer(undefined, { config: { enabledApis: ['metadata'] } });
  const secret = { 'x-svc-admin-secret': 'sekret' };

  it('authenticates as /v1/graphql does: a missing or wrong secret is a 401 before any matching', async () => {
    const r = await secured.query({
      type: 'bulk',
      args: [
        { type: 'create_query_collection', args: { name: 'c', definition: { queries: [{ name: 'q', query: 'query { __typename }' }] } } },
        { type: 'create_rest_endpoint', args: { name: 'e', url: 'e', methods: ['GET'], definition: { query: { collection_name: 'c', query_name: 'q' } } } },
      ],
    }, secret);
    expect(r.status, r.text).toBe(200);
    expect(pick(await secured.request('GET', '/api/rest/e', undefined, secret))).toEqual({ status: 200, body: { __typename: 'query_root' } });
    expect(pick(await secured.request('GET', '/api/rest/e'))).toMatchObject({ status: 401, body: { code: 'access-denied' } });
    expect(pick(await secured.request('GET', '/api/rest/nope', undefined, { 'x-svc-admin-secret': 'wrong' }))).toMatchObject({ status: 401, body: { code: 'access-denied' } });
    expect(pick(await secured.request('GET', '/api/swagger/json'))).toMatchObject({ status: 401 });
    expect((await secured.request('GET', '/api/swagger/json', undefined, secret)).status).toBe(200);
  });

  it('serves REST endpoints with the GraphQL API and the OpenAPI document with the metadata API', async () => {
    expect(pick(await noGraphql.request('GET', '/api/rest/anything'))).toEqual(err('not-found', 'resource does not exist', '$', 404));
    expect((await noGraphql.request('GET', '/api/swagger/json')).status).toBe(200);
  });
});

describe('GET /api/swagger/json', () => {
  beforeAll(async () => {
    await reset();
    const r = await s.query({
      type: 'bulk',
      args: [
        endpoint('simple', 'simple', 'simple', ['GET'], { comment: 'Every row' }),
        endpoint('template', 'people/:first_name/names', 'by_name', ['GET', 'POST']),
        endpoint('with_uuids', 'with_uuids', 'by_uuids', ['POST']),
        endpoint('typed', 'typed', 'typed'),
        endpoint('insert', 'people', 'insert', ['POST', 'PUT']),
        endpoint('date', 'born/:born', 'typed'),
        endpoint('aliased', 'aliased', 'aliased'),
      ].map((args) => ({ type: 'create_rest_endpoint', args })),
    });
    expect(r.status, r.text).toBe(200);
  });

  it('is a valid OpenAPI 3 document of the endpoints', async () => {
    const r = await s.request('GET', '/api/swagger/json');
    expect(r.status).toBe(200);
    const doc = r.body;
    // A kept validator from npm: schema and semantic checks (path parameters and the like).
    await SwaggerParser.validate(structuredClone(doc));
    expect(doc.openapi).toBe('3.0.0');
    expect(doc.info.title).toBe('Rest Endpoints');
    expect(Object.keys(doc.paths).sort()).toEqual(['/api/rest/aliased', '/api/rest/born/{born}', '/api/rest/people', '/api/rest/people/{first_name}/names', '/api/rest/simple', '/api/rest/typed', '/api/rest/with_uuids']);

    const simple = doc.paths['/api/rest/simple'].get;
    expect(simple.summary).toBe('simple');
    expect(simple.description).toBe(`Every row\n***\nThe GraphQl query for this endpoint is:\n\`\`\` graphql\n${queries.simple}\n\`\`\``);
    expect(simple.parameters).toEqual([
      { name: 'x-svc-admin-secret', in: 'header', description: 'Your x-svc-admin-secret will be used for authentication of the API request.', schema: { type: 'string' } },
    ]);
    expect(simple.responses['200'].content['application/json'].schema).toEqual({
      type: 'object',
      properties: {
        test_table: {
          nullable: false,
          type: 'array',
          items: {
            type: 'object',
            properties: {
              first_name: { title: 'String', type: 'string', nullable: true },
              last_name: { title: 'String', type: 'string', nullable: true },
            },
          },
        },
      },
    });
    expect(doc.paths['/api/rest/aliased'].get.responses['200'].content['application/json'].schema.properties.people.items.properties).toEqual({
      name: { title: 'String', type: 'string', nullable: true },
      __typename: { type: 'string' },
    });

    const template = doc.paths['/api/rest/people/{first_name}/names'];
    expect(Object.keys(template).sort()).toEqual(['get', 'post']);
    expect(template.get.parameters[1]).toEqual({ name: 'first_name', in: 'path', required: true, schema: { type: 'string' } });
    expect(template.get.requestBody).toBeUndefined();
    expect(template.post.requestBody.content['application/json'].schema).toEqual({ type: 'object', properties: { first_name: { nullable: false, type: 'string' } } });
    expect(template.post.responses['200'].description).toBe('Responses for GET, POST /api/rest/people/{first_name}/names');

    const typed = doc.paths['/api/rest/typed'].get;
    expect(typed.parameters.slice(1)).toEqual([
      { name: 'age', in: 'query', schema: { type: 'integer' } },
      { name: 'active', in: 'query', schema: { type: 'boolean' } },
      { name: 'name', in: 'query', schema: { type: 'string' } },
    ]);
    // A route variable of a scalar type OpenAPI does not know is still a path parameter.
    expect(doc.paths['/api/rest/born/{born}'].get.parameters.find((p: any) => p.in === 'path')).toEqual({ name: 'born', in: 'path', required: true, schema: { type: 'string' } });

    const uuids = doc.paths['/api/rest/with_uuids'].post;
    expect(uuids.requestBody).toMatchObject({ required: true, content: { 'application/json': { schema: { properties: { ids: { nullable: false, type: 'array', items: { $ref: '#/components/schemas/uuid' } } } } } } });
    expect(doc.components.schemas.uuid).toMatchObject({ type: 'string' });

    const insert = doc.paths['/api/rest/people'];
    expect(Object.keys(insert).sort()).toEqual(['post', 'put']);
    expect(insert.post.responses['200'].content['application/json'].schema.properties.insert_test_table_one).toMatchObject({
      type: 'object',
      nullable: true,
      properties: { first_name: { type: 'string' }, last_name: { type: 'string' } },
    });
  });

  it('is admin only', async () => {
    expect(pick(await s.request('GET', '/api/swagger/json', undefined, { 'x-svc-role': 'user' }))).toEqual(err('access-denied', 'restricted access : admin only', '$'));
  });
});
