/**
 * Dependency lookups reuse what they found out about a table's objects while the table's entry,
 * the entries of the tables its permissions reach and the introspection are unchanged (Note
 * [Cached permission references] in permissions.ts). These tests warm that cache with a lookup,
 * change only another table, and check that the next lookup sees the change.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const s = useServer(`
    create table author (id serial primary key, name text);
    create table article (id serial primary key, title text, author_id integer references author(id));
    create table tag (id serial primary key, label text);
    create table other (id serial primary key);
    create table draft (id serial primary key, author_id integer);
  `);

const qt = (name: string) => ({ schema: 'public', name });
const writings = { name: 'writings', using: { foreign_key_constraint_on: { table: qt('article'), column: 'author_id' } } };

/** Replaces the default source's tables (inconsistencies allowed). */
async function replaceTables(tables: unknown[]) {
  const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
  const doc = { ...exported, sources: [{ ...exported.sources[0], tables }] };
  const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc, allow_inconsistent_metadata: true } });
  expect(r).toMatchObject({ status: 200, body: { is_consistent: false } });
}

/** A lookup over every permission of the source that finds nothing: untracking `other`. */
async function warmLookup() {
  expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'other' } })).toEqual(expect.objectContaining({ status: 200, body: { message: 'success' } }));
}

describe('dependency lookups after another table changed', () => {
  beforeEach(async () => {
    expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  });

  it('see a relationship added to the table a permission reaches through a relationship', async () => {
    await replaceTables([
      { table: qt('author') },
      {
        table: qt('article'),
        object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }],
        select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { author: { writings: { title: { _eq: 'x' } } } } } }],
      },
      { table: qt('other') },
    ]);
    await warmLookup();
    // Only author's entry changes.
    expect(await s.metadata({ type: 'pg_create_array_relationship', args: { table: 'author', ...writings } })).toMatchObject({ status: 200 });
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'author', relationship: 'writings' } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission article.user.select in source "default"' },
      }),
    );
  });

  it('see a table tracked after the lookup that an _exists of a permission names', async () => {
    await replaceTables([
      { table: qt('article'), select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { _exists: { _table: qt('tag'), _where: { label: { _eq: 'x' } } } } } }] },
      { table: qt('other') },
    ]);
    await warmLookup();
    expect(await s.metadata({ type: 'pg_track_table', args: { table: 'tag' } })).toMatchObject({ status: 200 });
    expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'tag' } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission article.user.select in source "default"' },
      }),
    );
    // The column the _exists compares is a dependency too, as before the lookup was cached.
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table tag drop column label' } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission article.user.select in source "default"' },
      }),
    );
  });

  it('see the remote table of a relationship tracked after the lookup', async () => {
    await replaceTables([
      {
        table: qt('article'),
        object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }],
        select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { author: { name: { _eq: 'x' } } } } }],
      },
      { table: qt('other') },
    ]);
    await warmLookup();
    expect(await s.metadata({ type: 'pg_track_table', args: { table: 'author' } })).toMatchObject({ status: 200 });
    expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'author' } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: {
          code: 'dependency-error',
          path: '$.args',
          error: 'cannot drop due to the following dependent objects: relationship article.author in source "default", permission article.user.select in source "default"',
        },
      }),
    );
  });

  it('see a foreign key that run_sql added after the lookup', async () => {
    // `draft.author` names a foreign key that does not exist yet.
    await replaceTables([
      { table: qt('author') },
      {
        table: qt('draft'),
        object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }],
        select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { author: { name: { _eq: 'x' } } } } }],
      },
      { table: qt('other') },
    ]);
    await warmLookup();
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table draft add foreign key (author_id) references author(id)' } })).toMatchObject({ status: 200 });
    expect(await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).toMatchObject({ status: 200, body: { is_consistent: true } });
    expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'author' } })).toEqual(
      expect.objectContaining({
        status: 400,
        body: {
          code: 'dependency-error',
          path: '$.args',
          error: 'cannot drop due to the following dependent objects: relationship draft.author in source "default", permission draft.user.select in source "default"',
        },
      }),
    );
  });
});
