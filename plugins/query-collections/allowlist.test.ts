/**
 * The allow-list with --enable-allowlist: a non-admin role runs only documents that match an
 * allow-listed query of a global collection or of one scoped to it, compared as Hasura compares
 * them (Note [Allow-list matching]); admin is never held to it; the check is made once per
 * plan-cache entry.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'graphql';
import { useServer } from '../../test/helpers.js';
import { Client, useListening } from '../../test/ws-helpers.js';
import { normalizedKey } from './normalize.js';

const s = useServer(
  `create table "user" (id serial primary key, name text not null, company text);
   insert into "user" (name, company) values ('clarke', 'Symons'), ('reckler', null);`,
  { config: { enableAllowlist: true } },
);

const net = useListening(s);
const notAllowed = { errors: [{ message: 'query is not allowed', extensions: { path: '$', code: 'validation-failed' } }] };
const as = (role: string) => ({ 'x-svc-role': role });
const users = [
  { id: 1, name: 'clarke' },
  { id: 2, name: 'reckler' },
];

const listed = `query {
  user(order_by: {id: asc}) { id name }
}`;
const byPk = 'query ($id: Int!) { user_by_pk(id: $id) { id __typename name } }';
const withFragment = `fragment f on user { id name }
query { user(order_by: {id: asc}) { ...f } }`;
const editorOnly = 'query EditorOnly { user(order_by: {id: asc}, where: {company: {_is_null: false}}) { name company } }';

beforeAll(async () => {
  const setup = [
    { type: 'track_table', args: { table: 'user' } },
    ...['user', 'editor', 'guest'].map((role) => ({ type: 'create_select_permission', args: { table: 'user', role, permission: { filter: {}, columns: '*' } } })),
    { type: 'create_query_collection', args: { name: 'everyone', definition: { queries: [{ name: 'list', query: listed }, { name: 'by_pk', query: byPk }, { name: 'fragment', query: withFragment }] } } },
    { type: 'create_query_collection', args: { name: 'editors', definition: { queries: [{ name: 'editor_only', query: editorOnly }] } } },
    { type: 'create_query_collection', args: { name: 'unlisted', definition: { queries: [{ name: 'names', query: 'query { user { name } }' }] } } },
    { type: 'add_collection_to_allowlist', args: { collection: 'everyone' } },
    { type: 'add_collection_to_allowlist', args: { collection: 'editors', scope: { global: false, roles: ['editor'] } } },
  ];
  const r = await s.query({ type: 'bulk', args: setup });
  expect(r.status, r.text).toBe(200);
});

describe('allow-list enforcement', () => {
  it('reports itself in the config API', async () => {
    expect((await s.request('GET', '/v1alpha1/config')).body.is_allow_list_enabled).toBe(true);
  });

  it('runs an allow-listed document for every role, whatever its whitespace, commas and comments', async () => {
    expect(await s.gql(listed, undefined, as('user'))).toEqual({ data: { user: users } });
    expect(await s.gql('query{user(order_by:{id:asc}){id,name}} # same query', undefined, as('guest'))).toEqual({ data: { user: users } });
    expect(await s.gql(withFragment, undefined, as('user'))).toEqual({ data: { user: users } });
  });

  it('ignores __typename on both sides, and the order of arguments and object fields', async () => {
    expect(await s.gql('query ($id: Int!) { user_by_pk(id: $id) { id name } }', { id: 1 }, as('user'))).toEqual({ data: { user_by_pk: { id: 1, name: 'clarke' } } });
    expect(await s.gql('query { user(order_by: {id: asc}) { __typename id name } }', undefined, as('user'))).toEqual({
      data: { user: users.map((u) => ({ __typename: 'user', ...u })) },
    });
    expect(await s.gql('query EditorOnly { user(where: {company: {_is_null: false}}, order_by: {id: asc}) { name company } }', undefined, as('editor'))).toEqual({
      data: { user: [{ name: 'clarke', company: 'Symons' }] },
    });
  });

  it('refuses other documents for a non-admin role, and a collection scoped to other roles', async () => {
    expect(await s.gql('query { user { id name company } }', undefined, as('user'))).toEqual(notAllowed);
    // In a collection that is not in the allow-list.
    expect(await s.gql('query { user { name } }', undefined, as('user'))).toEqual(notAllowed);
    // Selections in another order, an alias, another operation name: other documents.
    expect(await s.gql('query { user(order_by: {id: asc}) { name id } }', undefined, as('user'))).toEqual(notAllowed);
    expect(await s.gql('query { user(order_by: {id: asc}) { id n: name } }', undefined, as('user'))).toEqual(notAllowed);
    expect(await s.gql('query Named { user(order_by: {id: asc}) { id name } }', undefined, as('user'))).toEqual(notAllowed);
    // `{ ... }` is not `query { ... }` to Hasura.
    expect(await s.gql('{ user(order_by: {id: asc}) { id name } }', undefined, as('user'))).toEqual(notAllowed);
    // Scoped to editor only.
    expect(await s.gql(editorOnly, undefined, as('user'))).toEqual(notAllowed);
    expect(await s.gql(editorOnly, undefined, as('editor'))).toEqual({ data: { user: [{ name: 'clarke', company: 'Symons' }] } });
    // A document that is not valid for the role is refused by the allow-list first, as in Hasura.
    expect(await s.gql('query { nothing }', undefined, as('user'))).toEqual(notAllowed);
    // A document that does not parse is a parse error.
    expect(await s.gql('query {', undefined, as('user'))).toEqual({ errors: [{ message: 'not a valid graphql query', extensions: { path: '$.query', code: 'validation-failed' } }] });
  });

  it('never holds admin to it', async () => {
    expect(await s.gql('query { user(order_by: {id: asc}) { name } }')).toEqual({ data: { user: [{ name: 'clarke' }, { name: 'reckler' }] } });
    expect(await s.gql('query { user(order_by: {id: asc}) { name } }', undefined, as('admin'))).toEqual({ data: { user: [{ name: 'clarke' }, { name: 'reckler' }] } });
  });

  it('follows metadata changes: adding, rescoping and dropping collections and queries', async () => {
    const names = 'query { user { name } }';
    expect(await s.gql(names, undefined, as('guest'))).toEqual(notAllowed);
    expect((await s.metadata({ type: 'add_collection_to_allowlist', args: { collection: 'unlisted', scope: { global: false, roles: ['guest'] } } })).status).toBe(200);
    expect((await s.gql(names, undefined, as('guest'))).data.user).toHaveLength(2);
    expect(await s.gql(names, undefined, as('user'))).toEqual(notAllowed);
    expect((await s.metadata({ type: 'update_scope_of_collection_in_allowlist', args: { collection: 'unlisted', scope: { global: true } } })).status).toBe(200);
    expect((await s.gql(names, undefined, as('user'))).data.user).toHaveLength(2);
    expect((await s.metadata({ type: 'drop_query_from_collection', args: { collection_name: 'unlisted', query_name: 'names' } })).status).toBe(200);
    expect(await s.gql(names, undefined, as('user'))).toEqual(notAllowed);
    expect((await s.metadata({ type: 'add_query_to_collection', args: { collection_name: 'unlisted', query_name: 'names', query: names } })).status).toBe(200);
    expect((await s.gql(names, undefined, as('user'))).data.user).toHaveLength(2);
    expect((await s.metadata({ type: 'drop_collection_from_allowlist', args: { collection: 'unlisted' } })).status).toBe(200);
    expect(await s.gql(names, undefined, as('user'))).toEqual(notAllowed);
  });

  it('holds REST endpoints to it too (their saved query is the document), admin excepted', async () => {
    const endpoints = [
      { name: 'listed', url: 'listed', methods: ['GET'], definition: { query: { collection_name: 'everyone', query_name: 'list' } } },
      { name: 'editors', url: 'editors', methods: ['GET'], definition: { query: { collection_name: 'editors', query_name: 'editor_only' } } },
    ];
    for (const args of endpoints) expect((await s.metadata({ type: 'create_rest_endpoint', args })).status).toBe(200);
    expect((await s.request('GET', '/api/rest/listed', undefined, as('user'))).body).toEqual({ user: users });
    expect((await s.request('GET', '/api/rest/editors', undefined, as('editor'))).body).toEqual({ user: [{ name: 'clarke', company: 'Symons' }] });
    const refused = await s.request('GET', '/api/rest/editors', undefined, as('user'));
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 400, body: { path: '$', error: 'query is not allowed', code: 'validation-failed' } });
    expect((await s.request('GET', '/api/rest/editors')).status).toBe(200);
  });

  it('holds subscriptions and WebSocket requests to it too', async () => {
    const c = await Client.init(net.url, 'graphql-transport-ws', { headers: { 'x-svc-role': 'user' } });
    c.send({ type: 'subscribe', id: 'no', payload: { query: 'subscription { user { id } }' } });
    expect(await c.next('no')).toEqual({ type: 'error', id: 'no', payload: [{ message: 'query is not allowed', extensions: { path: '$', code: 'validation-failed' } }] });
    c.send({ type: 'subscribe', id: 'yes', payload: { query: listed } });
    expect(await c.next('yes')).toEqual({ type: 'next', id: 'yes', payload: { data: { user: users } } });
    c.close();
  });

  it('checks a document once per plan-cache entry: a repeated request is a cache hit', async () => {
    const before = s.graphql.stats();
    for (let i = 0; i < 3; i++) expect(await s.gql('query { user { id name company } }', undefined, as('user'))).toEqual(notAllowed);
    for (let i = 0; i < 3; i++) expect((await s.gql(listed, undefined, as('guest'))).data.user).toEqual(users);
    const after = s.graphql.stats();
    expect(after.hits - before.hits).toBeGreaterThanOrEqual(4);
    expect(after.misses - before.misses).toBeLessThanOrEqual(2);
  });
});

describe('normalizedKey', () => {
  const key = (text: string) => normalizedKey(parse(text, { noLocation: true }), text);
  it('is the same for documents Hasura takes for the same, and differs otherwise', () => {
    expect(key('query { a(x: 1, y: {b: 2, c: "s"}) { b } }')).toBe(key('query{a(y:{c:"""s""",b:2},x:1){b,__typename}}'));
    expect(key('query ($v: [Int!] = [1]) @d { a }')).toBe(key('query($v:[Int!]=[1])@d{a}'));
    expect(key('query { a(f: 1.0) }')).toBe(key('query { a(f: 1.00) }'));
    expect(key('query { a(f: 1.0) }')).not.toBe(key('query { a(f: 1) }'));
    expect(key('{ a }')).not.toBe(key('query { a }'));
    expect(key('query ($x: In = {a: 1}) { a }')).toBe(key('query ($x: In = {a: 1}) { a __typename }'));
    expect(key('{ a } query Q { b }')).not.toBe(key('query { a } query Q { b }'));
    // Hasura keeps __typename inside inline fragments.
    expect(key('query { a { ... on T { __typename b } } }')).not.toBe(key('query { a { ... on T { b } } }'));
    expect(key('fragment F on T { __typename b } query { a { ...F } }')).toBe(key('fragment F on T { b } query { a { ...F } }'));
  });
});
