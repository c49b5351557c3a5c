/**
 * A role's table root fields found by name (./root-lookup.ts, Note [Root fields by name] in
 * core/schema/assembly.ts) against the same roots made whole, as the contributor made them
 * before (every table's fields assigned into one map, functions last): for every role, root and
 * every name any table may give, the field found is the one the whole map has, and the names
 * walked are its keys. Permissions that take fields away, custom root field names, source
 * prefixes and namespaces, `<t>_groups` and its clash rule, views, tables without a key, tables
 * a role may only write, and the same checks after metadata changes (the build's index of root
 * fields as a layer over the previous one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { GraphQLString } from 'graphql';
import type { RootFieldDef } from '../../../core/plugin.js';
import { RoleTypeRegistry } from '../../../core/schema/registry.js';
import { createDatabase, useServer } from '../../../test/helpers.js';
import { DatabaseToken, type DatabaseService } from '../index.js';
import { ROOT_FIELD_KEYS } from '../model/naming.js';
import { functionRootFields, roleSchema, tableRootFields } from './contributor.js';
import { MutationSchema } from './mutation.js';
import { sourceNames } from './names.js';
import { rootLookup, tableFieldName, type Candidate, type Root } from './root-lookup.js';
import { streamRootFields } from './subscription.js';

const SQL = `
create table author (id serial primary key, name text, owner_id int);
create table article (id serial primary key, title text, author_id int references author(id));
create table nopk (a int, b text);
create table tag (id serial primary key, label text);
create table author_groups (id serial primary key, n int);
create schema other;
create table other.thing (id serial primary key, v int);
create view author_count as select count(*) as n from author;
create function search_authors(q text) returns setof author as $$ select * from author where name ilike '%' || q || '%' $$ language sql stable;
create function touch_authors(q text) returns setof author as $$ update author set name = name where name = q returning * $$ language sql volatile;
`;

const server = useServer(SQL);
let other: { name: string; url: string };

const perm = (type: string, table: unknown, role: string, permission: unknown, source = 'default') => ({ type: `pg_create_${type}_permission`, args: { source, table, role, permission } });

beforeAll(async () => {
  other = await createDatabase('svc_lookup');
  const sql = postgres(other.url, { max: 1, onnotice: () => {} });
  await sql.unsafe('create table author (id serial primary key, name text); create table tag (id serial primary key, label text);').simple();
  await sql.end();
  const cfg = { connection_info: { database_url: other.url } };
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['author', 'article', 'nopk', 'author_groups', 'author_count'].map((t) => ({ type: 'pg_track_table', args: { table: t } })),
      { type: 'pg_track_table', args: { table: { schema: 'other', name: 'thing' } } },
      {
        type: 'pg_track_table',
        args: { table: 'tag', configuration: { custom_root_fields: { select: 'tags_list', select_by_pk: 'one_tag', select_aggregate: 'tags_agg', insert: 'add_tags', delete_by_pk: 'drop_tag', select_stream: 'tags_feed' } } },
      },
      { type: 'pg_track_function', args: { function: 'search_authors' } },
      { type: 'pg_track_function', args: { function: 'touch_authors', configuration: { exposed_as: 'mutation' } } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      perm('select', 'author', 'user', { columns: ['id', 'name'], filter: {}, allow_aggregations: true, query_root_fields: ['select', 'select_aggregate'], subscription_root_fields: ['select_stream', 'select_aggregate'] }),
      perm('select', 'article', 'user', { columns: ['id', 'title'], filter: {} }),
      perm('insert', 'article', 'user', { columns: ['title'], check: {} }),
      perm('update', 'author', 'user', { columns: ['name'], filter: {} }),
      perm('delete', 'tag', 'user', { filter: {} }),
      perm('select', { schema: 'other', name: 'thing' }, 'user', { columns: [], filter: {}, allow_aggregations: true }),
      perm('select', 'nopk', 'editor', { columns: ['a'], filter: {} }),
      perm('insert', 'nopk', 'editor', { columns: ['a', 'b'], check: {} }),
      perm('select', 'tag', 'editor', { columns: ['id', 'label'], filter: {}, allow_aggregations: true }),
      perm('update', 'tag', 'editor', { columns: [], filter: {}, set: { label: 'x' } }),
      { type: 'pg_add_source', args: { name: 'pfx', configuration: cfg, customization: { root_fields: { prefix: 'p_', suffix: '_s' }, type_names: { prefix: 'P' } } } },
      { type: 'pg_track_table', args: { source: 'pfx', table: 'author' } },
      { type: 'pg_track_table', args: { source: 'pfx', table: 'tag' } },
      perm('select', 'author', 'user', { columns: ['id'], filter: {}, allow_aggregations: true }, 'pfx'),
      perm('insert', 'tag', 'editor', { columns: ['label'], check: {} }, 'pfx'),
      { type: 'pg_add_source', args: { name: 'nsrc', configuration: cfg, customization: { root_fields: { namespace: 'ns' }, type_names: { prefix: 'N' } } } },
      { type: 'pg_track_table', args: { source: 'nsrc', table: 'author' } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

afterAll(async () => {
  await server.metadata({ type: 'pg_drop_source', args: { name: 'pfx', cascade: true } });
  await server.metadata({ type: 'pg_drop_source', args: { name: 'nsrc', cascade: true } });
});

/** What tells two root fields apart: their type, description and arguments. */
const sig = (d: RootFieldDef | undefined) => d && `${String(d.config.type)} | ${d.config.description} | ${Object.keys(d.config.args ?? {}).join(',')}`;

/** Every root of `role` found by name against the roots made whole, for every name a table of the
 * build may give and a few none gives. */
function check(role: string): void {
  const build = server.kernel.state().build;
  const db = server.kernel.api.use(DatabaseToken) as DatabaseService;
  const types = new RoleTypeRegistry().as('tables');
  const rs = roleSchema(db, role, build, types);
  const fns = functionRootFields(rs);
  const outside = (s: Parameters<typeof sourceNames>[0]) => !sourceNames(s).namespace;
  const whole: Record<Root, Record<string, RootFieldDef>> = {
    query: { ...tableRootFields(rs, 'query', outside), ...fns.query },
    mutation: { ...new MutationSchema(rs, types).rootFields(outside), ...fns.mutation },
    subscription: { ...tableRootFields(rs, 'subscription', outside), ...streamRootFields(rs, types, outside), ...fns.query },
  };
  const probes = new Set(['ns', 'nothing', 'author_groups_groups', 'p_author_groups_s']);
  for (const source of db.resolved(build).sources.values()) {
    for (const rt of source.tables.values()) {
      if (!rt.model) continue;
      for (const kind of [...ROOT_FIELD_KEYS, 'select_groups'] as const) probes.add(tableFieldName(source, rt.model, kind));
    }
  }
  // The namespace's field where the role sees a table of the source (admin only here).
  const ns = role === 'admin' ? ['ns'] : [];
  // `<t>_groups` where no other table's type name begins with `<t>_group` (Note [The groups'
  // shape] in ./groups.ts), worked out here from every table of the build (the schema keeps a
  // list that follows the changes).
  if (role === 'admin') {
    const source = db.resolved(build).sources.get('default')!;
    const names = [...source.tables.values()].flatMap((rt) => (rt.model?.inSchema ? [rt.model.name] : []));
    const admin = server.kernel.api.roleRoots(role, build).query;
    const groupsOf = (n: string) => admin.get(`${n}_groups`)?.config.description?.startsWith('fetch grouped aggregates') === true;
    for (const n of names) expect(groupsOf(n), `${n}_groups`).toBe(!names.some((x) => x.startsWith(`${n}_group`)));
  }
  // Each name found by its candidates (fresh roots, asked before their names are walked) and
  // from the walk of every name (a whole schema's way).
  for (const walkFirst of [false, true]) {
    const roots = server.kernel.api.roleRoots(role, build);
    for (const root of ['query', 'mutation', 'subscription'] as const) {
      const expected = whole[root];
      const keys = [...Object.keys(expected), ...ns];
      // A role without a query field gets Hasura's placeholder (core/schema/assembly.ts).
      const names = () => expect(new Set(roots[root].keys()), `${role} ${root}`).toEqual(new Set(keys.length === 0 && root === 'query' ? ['no_queries_available'] : keys));
      if (walkFirst) names();
      for (const name of probes) {
        const what = `${role} ${root} ${name}${walkFirst ? ' (walked)' : ''}`;
        if (name === 'ns') expect(roots[root].get(name) !== undefined, what).toBe(ns.length > 0);
        else expect(sig(roots[root].get(name)), what).toBe(sig(expected[name]));
      }
      if (!walkFirst) names();
    }
  }
}

const ROLES = ['admin', 'user', 'editor', 'nobody'];

describe('root fields found by name (Note [Root fields by name])', () => {
  it('every role\'s roots have the fields the whole maps have, by every name', () => {
    for (const role of ROLES) check(role);
    // What the cases are about, so that the comparison compares something.
    const names = (role: string, root: Root) => [...server.kernel.api.roleSchema(role, server.kernel.state().build).roots[root].keys()].sort();
    // No author_groups (the table of that name takes it: Note [The groups' shape] in ./groups.ts),
    // no other_thing_groups (the role may select no column of it).
    expect(names('user', 'query')).toEqual(['article', 'article_by_pk', 'author', 'author_aggregate', 'other_thing_aggregate', 'p_author_aggregate_s', 'p_author_by_pk_s', 'p_author_groups_s', 'p_author_s', 'search_authors', 'search_authors_aggregate']);
    expect(names('editor', 'query')).toContain('tag_groups');
    expect(names('user', 'mutation')).toEqual(['delete_tag', 'insert_article', 'insert_article_one', 'touch_authors', 'update_author', 'update_author_by_pk', 'update_author_many']);
    // `_one` only of a table the role may select (nopk; not pfx's tag).
    expect(names('editor', 'mutation')).toEqual(['insert_nopk', 'insert_nopk_one', 'p_insert_tag_s', 'update_tag', 'update_tag_by_pk', 'update_tag_many']);
    // A role's tables of some sources only (what the namespace's fields are made from).
    const db = server.kernel.api.use(DatabaseToken) as DatabaseService;
    const rs = roleSchema(db, 'admin', server.kernel.state().build, new RoleTypeRegistry().as('tables'));
    expect([...rs.tables.of((s) => s.name === 'nsrc')].map((t) => `${t.source.name}.${t.model.name}`)).toEqual(['nsrc.author']);
    expect([...rs.tables.of()].length).toBe(rs.tables.size);
    expect(names('user', 'subscription')).toContain('author_stream');
    expect(names('user', 'subscription')).not.toContain('author');
  });

  it('after changes of the metadata, through the layers of the build\'s index', async () => {
    const changes: unknown[] = [
      { type: 'pg_set_table_customization', args: { table: 'article', configuration: { custom_root_fields: { select: 'posts', insert_one: 'add_post' } } } },
      { type: 'pg_untrack_table', args: { table: 'nopk', cascade: true } },
      { type: 'pg_track_table', args: { table: 'nopk' } },
      perm('select', 'nopk', 'user', { columns: ['a', 'b'], filter: {} }),
      { type: 'pg_set_table_customization', args: { table: 'tag', configuration: { custom_name: 'label' } } },
      { type: 'pg_drop_select_permission', args: { table: 'author', role: 'user' } },
      { type: 'pg_untrack_table', args: { source: 'pfx', table: 'tag' } },
      // The table whose name takes author's `_groups` away, and back.
      { type: 'pg_untrack_table', args: { table: 'author_groups' } },
      { type: 'pg_track_table', args: { table: 'author_groups' } },
      { type: 'pg_set_table_customization', args: { table: 'author_groups', configuration: { custom_name: 'writer_groups' } } },
      { type: 'pg_set_table_customization', args: { table: 'author_groups', configuration: {} } },
    ];
    for (const op of changes) {
      const r = await server.metadata(op);
      expect(r.status, r.text).toBe(200);
      for (const role of ROLES) check(role);
    }
    const roots = server.kernel.api.roleSchema('admin', server.kernel.state().build).roots;
    expect(roots.query.get('posts')).toBeDefined();
    expect(roots.query.get('article')).toBeUndefined();
    expect(roots.query.get('label_by_pk')).toBeDefined();
    expect(roots.mutation.get('p_insert_tag_s')).toBeUndefined();
  });

  it('two tables that give one name (an inconsistency kept by allow_inconsistent_metadata): the field of the later table, as the whole map had it', async () => {
    const doc = (await server.metadata({ type: 'export_metadata', args: {} })).body;
    const tables = doc.sources.find((x: { name: string }) => x.name === 'default').tables;
    const entry = tables.find((t: { table: { name: string } }) => t.table.name === 'author_groups');
    entry.configuration = { custom_root_fields: { select: 'posts', insert: 'add_tags' } };
    const r = await server.metadata({ type: 'replace_metadata', args: { metadata: doc, allow_inconsistent_metadata: true } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.is_consistent).toBe(false);
    for (const role of ROLES) check(role);
    const roots = server.kernel.api.roleSchema('admin', server.kernel.state().build).roots;
    expect(String(roots.query.get('posts')!.config.description)).toContain('"author_groups"');
  });

  it('a field is made once; a name that gives none is not kept (requests may name anything)', () => {
    let asked = 0;
    let made = 0;
    const c = { source: {}, key: 'k', kind: 'select' } as unknown as Candidate;
    const lookup = rootLookup(
      (n) => (asked++, n === 'x' ? [c] : []),
      {},
      { has: () => true, make: () => (made++, { config: { type: GraphQLString }, plan: () => ({}) as never }), fields: () => [] },
    );
    expect(lookup.get('x')).toBe(lookup.get('x'));
    expect(made).toBe(1);
    for (let i = 0; i < 3; i++) expect(lookup.get('nope')).toBeUndefined();
    expect(asked).toBe(4);
  });
});
