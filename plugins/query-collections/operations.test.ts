/**
 * Golden tests of the query-collection and allow-list operations on both endpoints: request ->
 * status and body with Hasura's codes, paths and messages; the metadata they leave (export,
 * replace_metadata round trip, clear_metadata).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';

const s = useServer(`create table author (id serial primary key, name text); insert into author (name) values ('a'), ('b');`);

const ok = { status: 200, body: { message: 'success' } };
const pick = ({ status, body }: { status: number; body: any }) => ({ status, body });
const m = async (type: string, args: unknown) => pick(await s.metadata({ type, args }));
const q = async (type: string, args: unknown) => pick(await s.query({ type, args }));
const err = (code: string, error: string, path = '$.args', status = 400) => ({ status, body: { code, error, path } });
const exported = async () => (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;

const q1 = 'query { author { id name } }';
const q2 = 'query ($id: Int!) { author_by_pk(id: $id) { id name } }';
const coll = (name: string, queries: { name: string; query: string }[] = [{ name: 'q1', query: q1 }], extra: object = {}) => ({ name, definition: { queries }, ...extra });

beforeEach(async () => {
  expect(await q('clear_metadata', {})).toMatchObject({ status: 200 });
  expect(await q('track_table', { table: 'author' })).toEqual(ok);
});

describe('create_query_collection', () => {
  it('creates a collection, exported in Hasura\'s shape, on both endpoints', async () => {
    expect(await m('create_query_collection', coll('c1', [{ name: 'q1', query: q1 }, { name: 'q2', query: q2 }], { comment: 'first' }))).toEqual(ok);
    expect(await q('create_query_collection', coll('c2'))).toEqual(ok);
    expect((await exported()).query_collections).toEqual([
      { name: 'c1', definition: { queries: [{ name: 'q1', query: q1 }, { name: 'q2', query: q2 }] }, comment: 'first' },
      { name: 'c2', definition: { queries: [{ name: 'q1', query: q1 }] } },
    ]);
  });

  it('refuses a duplicate collection, duplicate query names and queries that do not parse', async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('create_query_collection', coll('c1'))).toEqual(err('already-exists', 'query collection with name "c1" already exists', '$.args.name'));
    expect(await m('create_query_collection', coll('c2', [{ name: 'a', query: q1 }, { name: 'b', query: q1 }, { name: 'a', query: q2 }, { name: 'b', query: q2 }]))).toEqual(
      err('not-supported', 'found duplicate query names "a", "b"', '$.args.definition.queries'),
    );
    expect(await m('create_query_collection', coll('c2', [{ name: 'a', query: q1 }, { name: 'b', query: 'query {' }]))).toEqual(
      err('parse-failed', 'parsing the graphql query failed', '$.args.definition.queries[1].query'),
    );
    // Type definitions are not executable documents.
    expect(await m('create_query_collection', coll('c2', [{ name: 'a', query: 'type T { a: Int }' }]))).toEqual(
      err('parse-failed', 'parsing the graphql query failed', '$.args.definition.queries[0].query'),
    );
    expect(await m('create_query_collection', coll('', []))).toEqual(err('parse-failed', 'empty string not allowed', '$.args.name'));
    expect(await m('create_query_collection', { name: 'c2' })).toEqual(err('parse-failed', 'key "definition" not found', '$.args'));
    // The legacy endpoint reports parse errors at `$`.
    expect(await q('create_query_collection', { name: 'c2', definition: { queries: [{ name: 'a', query: 1 }] } })).toEqual(
      err('parse-failed', 'expecting String for GraphQL query', '$.definition.queries[0].query'),
    );
    expect((await exported()).query_collections).toEqual([coll('c1')]);
  });
});

describe('add_query_to_collection / drop_query_from_collection', () => {
  it('adds and drops queries, with Hasura\'s errors', async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'q2', query: q2 })).toEqual(ok);
    expect(await q('add_query_to_collection', { collection_name: 'c1', query_name: 'q2', query: q2 })).toEqual(
      err('already-exists', 'query with name "q2" already exists in collection "c1"'),
    );
    expect(await m('add_query_to_collection', { collection_name: 'nope', query_name: 'q2', query: q2 })).toEqual(err('not-exists', 'query collection with name "nope" does not exist'));
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'q3', query: '{' })).toEqual(err('parse-failed', 'parsing the graphql query failed', '$.args.query'));
    expect((await exported()).query_collections).toEqual([coll('c1', [{ name: 'q1', query: q1 }, { name: 'q2', query: q2 }])]);

    expect(await q('drop_query_from_collection', { collection_name: 'c1', query_name: 'q1' })).toEqual(ok);
    expect(await m('drop_query_from_collection', { collection_name: 'c1', query_name: 'q1' })).toEqual(err('not-found', 'query with name "q1" not found in collection "c1"'));
    expect(await m('drop_query_from_collection', { collection_name: 'c9', query_name: 'q1' })).toEqual(err('not-exists', 'query collection with name "c9" does not exist'));
    expect((await exported()).query_collections).toEqual([coll('c1', [{ name: 'q2', query: q2 }])]);
  });
});

describe('rename_query_collection', () => {
  it('renames, keeps the allow-list entry with it, and refuses missing or taken names', async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('create_query_collection', coll('c2'))).toEqual(ok);
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: ['user'] } })).toEqual(ok);
    expect(await m('rename_query_collection', { name: 'c1', new_name: 'c3' })).toEqual(ok);
    const md = await exported();
    expect(md.query_collections.map((c: any) => c.name)).toEqual(['c3', 'c2']);
    expect(md.allowlist).toEqual([{ collection: 'c3', scope: { global: false, roles: ['user'] } }]);
    expect(await m('rename_query_collection', { name: 'c1', new_name: 'c4' })).toEqual(err('not-exists', 'query collection with name "c1" does not exist'));
    expect(await m('rename_query_collection', { name: 'c3', new_name: 'c2' })).toEqual(err('already-exists', 'query collection with name "c2" already exists', '$.args.new_name'));
    // Hasura serves it on the metadata API only.
    expect((await q('rename_query_collection', { name: 'c3', new_name: 'c5' })).status).toBe(400);
  });
});

describe('drop_query_collection', () => {
  it('drops; a collection in the allow-list only with cascade, which takes it out of the allow-list', async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('create_query_collection', coll('c2'))).toEqual(ok);
    expect(await m('add_collection_to_allowlist', { collection: 'c1' })).toEqual(ok);
    expect(await m('drop_query_collection', { collection: 'c1', cascade: false })).toEqual(
      err(
        'dependency-error',
        'query collection with name "c1" is present in the allowlist; cannot proceed to drop. please use cascade to confirm you wish to drop it from the allowlist as well',
        '$.args.collection',
      ),
    );
    expect(await m('drop_query_collection', { collection: 'c1' })).toEqual(err('parse-failed', 'key "cascade" not found', '$.args'));
    expect(await m('drop_query_collection', { collection: 'c9', cascade: true })).toEqual(err('not-exists', 'query collection with name "c9" does not exist', '$.args.collection'));
    expect(await q('drop_query_collection', { collection: 'c2', cascade: false })).toEqual(ok);
    expect(await m('drop_query_collection', { collection: 'c1', cascade: true })).toEqual(ok);
    const md = await exported();
    expect(md.query_collections).toBeUndefined();
    expect(md.allowlist).toBeUndefined();
  });
});

describe('allow-list operations', () => {
  beforeEach(async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('create_query_collection', coll('c2'))).toEqual(ok);
  });

  it('adds (scope defaults to global), updates the scope and drops', async () => {
    expect(await m('add_collection_to_allowlist', { collection: 'c1' })).toEqual(ok);
    expect(await q('add_collection_to_allowlist', { collection: 'c2', scope: { global: false, roles: ['user', 'editor'] } })).toEqual(ok);
    expect((await exported()).allowlist).toEqual([
      { collection: 'c1', scope: { global: true } },
      { collection: 'c2', scope: { global: false, roles: ['user', 'editor'] } },
    ]);
    // Adding again answers 200, changes nothing and says so.
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: ['x'] } })).toEqual({
      status: 200,
      body: { message: 'collection "c1" already exists in the allowlist, scope ignored; to change scope, use update_scope_of_collection_in_allowlist' },
    });
    expect(await m('update_scope_of_collection_in_allowlist', { collection: 'c1', scope: { global: false, roles: ['x'] } })).toEqual(ok);
    expect(await m('update_scope_of_collection_in_allowlist', { collection: 'c2', scope: { global: true } })).toEqual(ok);
    expect((await exported()).allowlist).toEqual([
      { collection: 'c1', scope: { global: false, roles: ['x'] } },
      { collection: 'c2', scope: { global: true } },
    ]);
    expect(await m('drop_collection_from_allowlist', { collection: 'c1' })).toEqual(ok);
    expect(await q('drop_collection_from_allowlist', { collection: 'c2' })).toEqual(ok);
    expect((await exported()).allowlist).toBeUndefined();
  });

  it('refuses what Hasura refuses', async () => {
    expect(await m('add_collection_to_allowlist', { scope: { global: true } })).toEqual(err('parse-failed', 'key "collection" not found'));
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false } })).toEqual(err('parse-failed', 'key "roles" not found', '$.args.scope'));
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: [] } })).toEqual(
      err('parse-failed', 'parsing NonEmpty failed, unexpected empty list', '$.args.scope.roles'),
    );
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: ['a', 'a'] } })).toEqual(err('parse-failed', 'duplicate roles are not allowed', '$.args.scope'));
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: ['a', 1] } })).toEqual(
      err('parse-failed', 'parsing Text failed, expected String, but encountered Number', '$.args.scope.roles[1]'),
    );
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: true, roles: ['a'] } })).toEqual(err('parse-failed', 'roles are not allowed when global is true', '$.args.scope'));
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: {} })).toEqual(err('parse-failed', 'key "global" not found', '$.args.scope'));
    expect(await m('add_collection_to_allowlist', { collection: 'c9' })).toEqual(err('not-exists', 'query collection with name "c9" does not exist', '$.args.collection'));
    expect(await m('update_scope_of_collection_in_allowlist', { collection: 'c1' })).toEqual(err('parse-failed', 'key "scope" not found'));
    expect(await m('update_scope_of_collection_in_allowlist', { collection: 'c1', scope: { global: true } })).toEqual(err('not-found', 'collection "c1" doesn\'t exist in the allowlist'));
    expect(await m('drop_collection_from_allowlist', {})).toEqual(
      err('parse-failed', 'parsing Hasura.RQL.Types.Allowlist.DropCollectionFromAllowlist(DropCollectionFromAllowlist) failed, key "collection" not found'),
    );
    expect(await m('drop_collection_from_allowlist', { collection: 'c1' })).toEqual(err('not-found', 'collection "c1" doesn\'t exist in the allowlist'));
    expect(await m('drop_collection_from_allowlist', { collection: 'c9' })).toEqual(err('not-exists', 'query collection with name "c9" does not exist', '$.args.collection'));
    expect((await exported()).allowlist).toBeUndefined();
  });
});

describe('replace_metadata', () => {
  it('round-trips query_collections and allowlist, and validates them', async () => {
    expect(await m('create_query_collection', coll('c1', [{ name: 'q1', query: q1 }, { name: 'q2', query: q2 }], { comment: 'x' }))).toEqual(ok);
    expect(await m('add_collection_to_allowlist', { collection: 'c1', scope: { global: false, roles: ['user'] } })).toEqual(ok);
    const before = await exported();
    expect(await m('clear_metadata', {})).toMatchObject({ status: 200 });
    expect((await exported()).query_collections).toBeUndefined();
    expect(await m('replace_metadata', before)).toMatchObject({ status: 200 });
    expect(await exported()).toEqual(before);

    const bad = (patch: object) => m('replace_metadata', { ...before, ...patch });
    expect(await bad({ query_collections: [coll('c1', [{ name: 'q', query: 'nope' }])] })).toEqual(
      err('parse-failed', 'parsing the graphql query failed', '$.args.query_collections[0].definition.queries[0].query'),
    );
    expect(await bad({ query_collections: [coll('c1'), coll('c1')] })).toEqual(err('parse-failed', 'multiple declarations exist for the following query collections: c1', '$.args.query_collections'));
    expect(await bad({ allowlist: [{ collection: 'c1', scope: { global: false } }] })).toEqual(err('parse-failed', 'key "roles" not found', '$.args.allowlist[0].scope'));
    // An entry without a scope is global.
    expect(await bad({ allowlist: [{ collection: 'c1' }] })).toMatchObject({ status: 200 });
    expect((await exported()).allowlist).toEqual([{ collection: 'c1', scope: { global: true } }]);
  });
});

describe('saved queries against the admin schema (Note [Saved queries against the schema])', () => {
  const newlyFound = (internal: unknown[]) => ({ status: 500, body: { code: 'unexpected', error: 'cannot continue due to newly found inconsistent metadata', path: '$.args', internal } });
  const invalid = (collection: string, query: string, text: string, errors: string[], suffix = '') => ({
    type: 'query_collections',
    name: `query_collections ${query} in ${collection}`,
    reason: `Inconsistent object: In query collection "${collection}" the query "${query}" is invalid with the following error(s): ${errors.map((e) => JSON.stringify(e)).join(', ')}${suffix}`,
    definition: { name: query, query: text },
  });

  it('refuses a query that does not fit the schema, as Hasura does, with its analysis', async () => {
    const bad = 'query { author { id nope } other { x } }';
    expect(await m('create_query_collection', coll('c1', [{ name: 'q', query: bad }]))).toEqual(
      newlyFound([invalid('c1', 'q', bad, ["$.other: field 'other' not found in object 'query_root'", "$.author.nope: field 'nope' not found in object 'author'"])]),
    );
    const shapes = 'query { author { id name { x } } author_aggregate }';
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'q', query: shapes })).toMatchObject({ status: 400, body: { code: 'not-exists' } });
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'q', query: shapes })).toEqual(
      newlyFound([
        invalid('c1', 'q', shapes, ["$.author_aggregate: object of type 'author_aggregate' must have a selection set", "$.author.name: scalar 'String' does not accept a selection set"]),
      ]),
    );
    const two = 'query A { author { id } } query B { author { id } }';
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'q', query: two })).toEqual(
      newlyFound([invalid('c1', 'q', two, ['exactly one operation has to be present in the document when operationName is not specified'])]),
    );
    // Fragments are followed; __typename and directives are fine.
    expect(await m('add_query_to_collection', { collection_name: 'c1', query_name: 'f', query: 'fragment a on author { id __typename } query @cached(ttl: 5) { author { ...a } }' })).toEqual(ok);
  });

  it('refuses a change of the schema that breaks a saved query, naming its endpoints and the allow-list', async () => {
    expect(await m('create_query_collection', coll('c1'))).toEqual(ok);
    expect(await m('add_collection_to_allowlist', { collection: 'c1' })).toEqual(ok);
    expect(await m('create_rest_endpoint', { name: 'authors', url: 'authors', methods: ['GET'], definition: { query: { collection_name: 'c1', query_name: 'q1' } } })).toEqual(ok);
    expect(await q('untrack_table', { table: 'author' })).toEqual(
      newlyFound([
        invalid('c1', 'q1', q1, ["$.author: field 'author' not found in object 'query_root'"], '. This query is being used in the following REST endpoint(s): "authors". This query is in allowlist.'),
      ]),
    );
    expect(await m('drop_rest_endpoint', { name: 'authors' })).toEqual(ok);
    expect(await m('drop_collection_from_allowlist', { collection: 'c1' })).toEqual(ok);
    expect(await q('untrack_table', { table: 'author' })).toEqual(newlyFound([invalid('c1', 'q1', q1, ["$.author: field 'author' not found in object 'query_root'"])]));
    // Allowed in as inconsistent, and dropped with drop_inconsistent_metadata.
    const md = await exported();
    const r = await m('replace_metadata', { metadata: { ...md, sources: md.sources.map((s: any) => ({ ...s, tables: [] })) }, allow_inconsistent_metadata: true });
    expect(r).toMatchObject({ status: 200, body: { is_consistent: false, inconsistent_objects: [invalid('c1', 'q1', q1, ["$.author: field 'author' not found in object 'query_root'"])] } });
    expect(await m('drop_inconsistent_metadata', {})).toMatchObject({ status: 200 });
    expect((await exported()).query_collections).toEqual([coll('c1', [])]);
  });
});
