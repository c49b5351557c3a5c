import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const s = useServer(`
    create table author (id serial primary key, name text);
    create table article (id serial primary key, title text, author_id integer references author(id));
    create table other (id serial primary key);
  `);

const inconsistencies = async () => {
  const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
  expect(r.status).toBe(200);
  return r.body.inconsistent_objects.map((o: any) => [o.type, o.reason]);
};

/** A permission on article that reaches `author.writings`, a relationship of the other table. */
const permissionThroughAuthor = { role: 'user', permission: { columns: ['id'], filter: { author: { writings: { title: { _eq: 'x' } } } } } };
const writings = { name: 'writings', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } } };

describe('build reuse (Note [Sharing])', () => {
  beforeEach(async () => {
    expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  });

  it('checks a table again when a table it depends on changed, though its own entry did not', async () => {
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const doc = {
      ...exported,
      sources: [
        {
          ...exported.sources[0],
          tables: [
            { table: { schema: 'public', name: 'author' } },
            {
              table: { schema: 'public', name: 'article' },
              object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }],
              select_permissions: [permissionThroughAuthor],
            },
          ],
        },
      ],
    };
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc, allow_inconsistent_metadata: true } });
    expect(r).toMatchObject({ status: 200, body: { is_consistent: false } });
    const reason = 'Inconsistent object: in table "article": in permission for role "user": "writings" does not exist';
    expect(await inconsistencies()).toEqual([['select_permission', reason]]);

    // Only author's entry changes; article's permission now resolves.
    expect(await s.metadata({ type: 'pg_create_array_relationship', args: { table: 'author', ...writings } })).toMatchObject({ status: 200 });
    expect(await inconsistencies()).toEqual([]);

    // And fails again when the relationship goes (drop_inconsistent_metadata is not involved).
    expect(await s.metadata({ type: 'pg_drop_relationship', args: { table: 'author', relationship: 'writings' } })).toMatchObject({
      status: 400,
      body: { code: 'dependency-error', path: '$.args', error: 'cannot drop due to the following dependent objects: permission article.user.select in source "default"' },
    });
  });

  it('keeps a table whose dependency is tracked in neither build, and checks it again once that is tracked (Note [Reuse of resolved tables])', async () => {
    const exported = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const article = { table: { schema: 'public', name: 'article' }, object_relationships: [{ name: 'author', using: { foreign_key_constraint_on: 'author_id' } }] };
    const doc = { ...exported, sources: [{ ...exported.sources[0], tables: [article] }] };
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: doc, allow_inconsistent_metadata: true } });
    expect(r).toMatchObject({ status: 200, body: { is_consistent: false } });
    const missing = await inconsistencies();
    expect(missing).toHaveLength(1);
    expect(missing[0][0]).toBe('object_relation');
    // A change elsewhere: article's entry is kept, and so is what was wrong with it.
    expect(await s.metadata({ type: 'pg_track_table', args: { table: 'other' } })).toMatchObject({ status: 200 });
    expect(await inconsistencies()).toEqual(missing);
    expect(await s.gql('{ article { id } }')).toEqual({ data: { article: [] } });
    // The table it reaches is tracked: article is resolved again, its relationship with it.
    expect(await s.metadata({ type: 'pg_track_table', args: { table: 'author' } })).toMatchObject({ status: 200 });
    expect(await inconsistencies()).toEqual([]);
    expect(await s.gql('{ article { id author { name } } }')).toEqual({ data: { article: [] } });
    // Untracked again (the relationship goes with cascade): article is resolved without it.
    expect(await s.metadata({ type: 'pg_untrack_table', args: { table: 'author', cascade: true } })).toMatchObject({ status: 200 });
    expect(await inconsistencies()).toEqual([]);
    expect(await s.gql('{ article { id author { name } } }')).toMatchObject({ errors: [{ extensions: { code: 'validation-failed' } }] });
  });
});
