import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import type { BuildContext, BuildResult, InconsistentObject, Metadata } from '../../../core/plugin.js';
import { createLogger } from '../../../core/log.js';
import { UnitOfWork } from '../../../core/uow.js';
import { DatabaseToken } from './service.js';
import type { DepTarget } from './types.js';

const s = useServer(`
    create table author (id serial primary key, name text);
    create table article (id serial primary key, title text, author_id integer references author(id));
    create table other (id serial primary key);
    create table tag (id serial primary key, title text);
  `);

const inconsistencies = async () => {
  const r = await s.metadata({ type: 'get_inconsistent_metadata', args: {} });
  expect(r.status).toBe(200);
  return r.body.inconsistent_objects.map((o: any) => [o.type, o.reason]);
};

/** A permission on article that reaches `author.writings`, a relationship of the other table. */
const permissionThroughAuthor = { role: 'user', permission: { columns: ['id'], filter: { author: { writings: { title: { _eq: 'x' } } } } } };
const writings = { name: 'writings', using: { foreign_key_constraint_on: { table: { schema: 'public', name: 'article' }, column: 'author_id' } } };

const qt = (name: string) => ({ schema: 'public', name });
/** Operations the properties below draw from: each table tracked and untracked, the two
 * relationships between author and article made and dropped, permissions that walk them. */
const commonOps = [
  ...['author', 'article', 'other', 'tag'].flatMap((table) => [
    { type: 'pg_track_table', args: { table } },
    { type: 'pg_untrack_table', args: { table, cascade: true } },
  ]),
  { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
  { type: 'pg_create_array_relationship', args: { table: 'author', ...writings } },
  { type: 'pg_drop_relationship', args: { table: 'author', relationship: 'writings', cascade: true } },
  { type: 'pg_drop_relationship', args: { table: 'article', relationship: 'author', cascade: true } },
  { type: 'pg_create_select_permission', args: { table: 'article', ...permissionThroughAuthor } },
  { type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: { writings: { title: { _eq: 'x' } } } } } },
  { type: 'pg_create_select_permission', args: { table: 'tag', role: 'user', permission: { columns: ['id'], filter: { _exists: { _table: qt('article'), _where: { title: { _eq: 'x' } } } } } } },
  { type: 'pg_drop_select_permission', args: { table: 'article', role: 'user' } },
];

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

/*
 * A build after one operation resolves only the tables it touched and those that depend on them
 * (Note [Resolving a change]); these compare what it makes with the whole pass's.
 */
describe('a build of a change (Note [Resolving a change])', () => {
  const db = () => s.kernel.api.use(DatabaseToken);
  const log = createLogger('error');
  const build = async (metadata: Metadata, previous: BuildResult | undefined) => {
    const found: InconsistentObject[] = [];
    const ctx: BuildContext = { metadata, previous, reload: {}, uow: new UnitOfWork(), log, inconsistent: (o) => found.push(o), output: () => undefined, outputs: new Map() };
    const out = await db().build(ctx);
    return { tables: out.sources.get('default')!.tables, found: found.map((o) => o.id) };
  };
  /** The committed document with one table's entry replaced (the others' objects shared). */
  const withTable = (name: string, change: (t: any) => any): Metadata => {
    const md = s.kernel.state().metadata as any;
    const src = md.sources[0];
    return { ...md, sources: [{ ...src, tables: src.tables.map((t: any) => (t.table.name === name ? change(t) : t)) }] };
  };

  beforeAll(async () => {
    expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
    const ops = [
      { type: 'pg_track_table', args: { table: 'author' } },
      { type: 'pg_track_table', args: { table: 'article' } },
      { type: 'pg_track_table', args: { table: 'other' } },
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', ...writings } },
      { type: 'pg_create_select_permission', args: { table: 'article', ...permissionThroughAuthor } },
    ];
    expect(await s.metadata({ type: 'bulk', args: ops })).toMatchObject({ status: 200 });
  });

  it('resolves again a table whose permission reaches a relationship of the table that changed', async () => {
    const committed = s.kernel.state().build;
    const before = db().resolved(committed).sources.get('default')!.tables;
    // author's `writings` now joins other columns; article's entry is the same object.
    const manual = { name: 'writings', using: { manual_configuration: { remote_table: { schema: 'public', name: 'article' }, column_mapping: { id: 'id' } } } };
    const md = withTable('author', (t) => ({ ...t, array_relationships: [manual] }));
    const change = await build(md, committed);
    const whole = await build(md, undefined);
    expect(change.found).toEqual([]);
    expect([...change.tables.keys()]).toEqual([...whole.tables.keys()]);
    const article = change.tables.get('"public"."article"')!;
    expect(article).not.toBe(before.get('"public"."article"'));
    expect(article.model).toEqual(whole.tables.get('"public"."article"')!.model);
    expect(JSON.stringify(article.model!.select.get('user'))).toContain('"mapping":[["id","id"]]');
    // The table no change reaches keeps its entry.
    expect(change.tables.get('"public"."other"')).toBe(before.get('"public"."other"'));
  });

  it('reports, as the whole pass does, what a change breaks in a table that depends on it', async () => {
    const committed = s.kernel.state().build;
    const md = withTable('author', (t) => ({ ...t, array_relationships: [] }));
    const change = await build(md, committed);
    const whole = await build(md, undefined);
    expect(change.found).toEqual([expect.stringContaining('article')]);
    expect(change.found).toEqual(whole.found);
    expect([...change.tables.keys()]).toEqual([...whole.tables.keys()]);
  });

  it('after SQL that altered one table, resolves that table and those that depend on it, and keeps the others (Note [Interned introspection])', async () => {
    const committed = db().resolved(s.kernel.state().build).sources.get('default')!.tables;
    expect(await s.query({ type: 'run_sql', args: { sql: 'alter table author add column born date' } })).toMatchObject({ status: 200 });
    const after = db().resolved(s.kernel.state().build).sources.get('default')!.tables;
    try {
      expect(after.get('"public"."other"')).toBe(committed.get('"public"."other"'));
      expect(after.get('"public"."author"')!.info.columns.map((c) => c.name)).toContain('born');
      // article's permission reaches author: resolved again, against the new author.
      expect(after.get('"public"."article"')).not.toBe(committed.get('"public"."article"'));
      const whole = await build(s.kernel.state().metadata, undefined);
      expect([...after.keys()]).toEqual([...whole.tables.keys()]);
      for (const [key, t] of whole.tables) expect(after.get(key)!.model, key).toEqual(t.model);
    } finally {
      expect(await s.query({ type: 'run_sql', args: { sql: 'alter table author drop column born' } })).toMatchObject({ status: 200 });
    }
  });

  it('with an inherited role, keeps the entries of the tables a change did not touch, inherited permissions and all', async () => {
    const editor = { type: 'pg_create_select_permission', args: { table: 'article', role: 'editor', permission: { columns: ['title'], filter: {} } } };
    expect(await s.metadata(editor)).toMatchObject({ status: 200 });
    const roles = { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } };
    expect(await s.metadata(roles)).toMatchObject({ status: 200 });
    try {
      const before = db().resolved(s.kernel.state().build).sources.get('default')!.tables;
      expect(before.get('"public"."article"')!.model!.select.has('both')).toBe(true);
      expect(await s.metadata({ type: 'pg_create_select_permission', args: { table: 'other', role: 'user', permission: { columns: ['id'], filter: {} } } })).toMatchObject({ status: 200 });
      const after = db().resolved(s.kernel.state().build).sources.get('default')!.tables;
      expect(after.get('"public"."article"')).toBe(before.get('"public"."article"'));
      expect(after.get('"public"."author"')).toBe(before.get('"public"."author"'));
      expect(after.get('"public"."other"')!.model!.select.has('both')).toBe(true);
      const whole = await build(s.kernel.state().metadata, undefined);
      for (const [key, t] of whole.tables) expect(after.get(key)!.model, key).toEqual(t.model);
    } finally {
      expect(await s.metadata({ type: 'pg_drop_select_permission', args: { table: 'other', role: 'user' } })).toMatchObject({ status: 200 });
      expect(await s.metadata({ type: 'drop_inherited_role', args: { role_name: 'both' } })).toMatchObject({ status: 200 });
      expect(await s.metadata({ type: 'pg_drop_select_permission', args: { table: 'article', role: 'editor' } })).toMatchObject({ status: 200 });
    }
  });

  it('keeps the order of the whole pass when a table is added before others, removed or moved', async () => {
    const committed = s.kernel.state().build;
    const md = s.kernel.state().metadata as any;
    const src = md.sources[0];
    const [author, article, other] = ['author', 'article', 'other'].map((n) => src.tables.find((t: any) => t.table.name === n));
    const tag = { table: { schema: 'public', name: 'tag' } };
    for (const tables of [[tag, author, article, other], [author, article, other, tag], [article, author, other], [author, article], [author, article, { ...other }]]) {
      const next = { ...md, sources: [{ ...src, tables }] };
      const change = await build(next, committed);
      const whole = await build(next, undefined);
      expect(change.found).toEqual(whole.found);
      expect([...change.tables.keys()]).toEqual([...whole.tables.keys()]);
    }
  });
});

describe('builds of changes against the whole pass (Note [Resolving a change])', () => {
  const db = () => s.kernel.api.use(DatabaseToken);
  const ops = [
    ...commonOps,
    { type: 'pg_set_table_customization', args: { table: 'author', configuration: { custom_name: 'writer', custom_column_names: { name: 'label' } } } },
    { type: 'pg_set_table_customization', args: { table: 'author', configuration: {} } },
    { type: 'pg_create_select_permission', args: { table: 'article', role: 'editor', permission: { columns: ['title'], filter: {} } } },
    { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } },
    { type: 'drop_inherited_role', args: { role_name: 'both' } },
    // Insert permissions that differ between both's parents: a conflict of the inherited role on
    // each such table, reported in the tables' order (Note [Inherited permissions of a change]).
    ...['article', 'other', 'tag'].flatMap((table) => [
      { type: 'pg_create_insert_permission', args: { table, role: 'user', permission: { columns: ['id'], check: {} } } },
      { type: 'pg_create_insert_permission', args: { table, role: 'editor', permission: { columns: ['id'], check: { id: { _gt: 1 } } } } },
    ]),
    { type: 'pg_drop_insert_permission', args: { table: 'other', role: 'editor' } },
    // SQL that changes the schema: the build that follows introspects again.
    { type: 'run_sql', args: { sql: 'alter table other add column if not exists extra int' } },
    { type: 'run_sql', args: { sql: 'alter table other drop column if exists extra' } },
    { type: 'run_sql', args: { sql: 'alter table author add column if not exists nick text' } },
    { type: 'run_sql', args: { sql: 'alter table author drop column if exists nick' } },
    { type: 'run_sql', args: { sql: "comment on table tag is 'tags'" } },
  ];

  /** The committed build against the whole pass over its document: the same tables in the same
   * order, the same models, the same inconsistencies in the same order. */
  const sameAsWhole = async () => {
    const { metadata, build: committed } = s.kernel.state();
    const found: string[] = [];
    const ctx: BuildContext = { metadata, previous: undefined, reload: {}, uow: new UnitOfWork(), log: createLogger('error'), inconsistent: (o) => void found.push(o.id), output: () => undefined, outputs: new Map() };
    const whole = (await db().build(ctx)).sources.get('default')!.tables;
    const tables = db().resolved(committed).sources.get('default')!.tables;
    expect([...tables.keys()]).toEqual([...whole.keys()]);
    for (const [key, t] of whole) expect(tables.get(key)!.model, key).toEqual(t.model);
    expect(committed.inconsistencies.map((o) => o.id).filter((id) => found.includes(id))).toEqual(found);
    return found;
  };

  it('makes the same tables, in the same order, with the same inconsistencies, after any operations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...ops), { minLength: 1, maxLength: 10 }), async (sequence) => {
        expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
        for (const op of sequence) {
          const r = op.type === 'run_sql' ? await s.query(op) : await s.metadata(op);
          expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
          await sameAsWhole();
        }
      }),
      { numRuns: 30 },
    );
  });

  it('with an inherited role whose parents conflict, keeps its permissions and conflicts through changes (Note [Inherited permissions of a change])', async () => {
    expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
    const insert = (table: string, role: string, check: object) => ({ type: 'pg_create_insert_permission', args: { table, role, permission: { columns: ['id'], check } } });
    const setup = [
      ...['author', 'article', 'other'].map((table) => ({ type: 'pg_track_table', args: { table } })),
      ...['article', 'other'].flatMap((table) => [insert(table, 'user', {}), insert(table, 'editor', { id: { _gt: 1 } })]),
      insert('author', 'user', {}),
      // article's select permission for user reaches author's writings: a change of writings
      // resolves article again, and its inherited entry is made again.
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'author', ...writings } },
      { type: 'pg_create_select_permission', args: { table: 'article', ...permissionThroughAuthor } },
      { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } },
    ];
    expect(await s.metadata({ type: 'bulk', args: setup })).toMatchObject({ status: 200 });
    const conflicts = (found: string[]) => found.filter((id) => id.startsWith('inherited-permission:'));
    const article = 'inherited-permission:default:"public"."article":insert:both';
    const other = 'inherited-permission:default:"public"."other":insert:both';
    const author = 'inherited-permission:default:"public"."author":insert:both';
    expect(conflicts(await sameAsWhole())).toEqual([article, other]);
    const steps: [object, string[]][] = [
      // A table added: its entry inherits; the conflicts of the others stay reported.
      [{ type: 'pg_track_table', args: { table: 'tag' } }, [article, other]],
      // A conflict on the first table, after the others': reported in the tables' order.
      [insert('author', 'editor', { id: { _gt: 2 } }), [author, article, other]],
      // A conflict resolved, and a table with one untracked.
      [{ type: 'pg_drop_insert_permission', args: { table: 'article', role: 'editor' } }, [author, other]],
      [{ type: 'pg_untrack_table', args: { table: 'other', cascade: true } }, [author]],
      // A change of the table with the conflict that keeps it.
      [{ type: 'pg_set_table_customization', args: { table: 'author', configuration: { custom_name: 'writer' } } }, [author]],
      [{ type: 'pg_track_table', args: { table: 'other' } }, [author]],
      // Other inherited roles: every entry made again.
      [{ type: 'add_inherited_role', args: { role_name: 'only_user', role_set: ['user'] } }, [author]],
    ];
    for (const [op, expected] of steps) {
      expect(await s.metadata(op), JSON.stringify(op)).toMatchObject({ status: 200 });
      expect(conflicts(await sameAsWhole()), JSON.stringify(op)).toEqual(expected);
    }
    // A change of author's writings resolves article again (its permission reaches writings),
    // though article's entry is the same: its inherited entry is made from the new one.
    const entry = () => db().resolved(s.kernel.state().build).sources.get('default')!.tables.get('"public"."article"')!;
    const before = entry();
    expect(await s.metadata({ type: 'pg_set_relationship_comment', args: { table: 'author', relationship: 'writings', comment: 'theirs' } })).toMatchObject({ status: 200 });
    expect(entry()).not.toBe(before);
    expect(entry().model!.select.has('both')).toBe(true);
    expect(conflicts(await sameAsWhole())).toEqual([author]);
    const tables = db().resolved(s.kernel.state().build).sources.get('default')!.tables;
    expect(tables.get('"public"."tag"')!.model!.select.size + tables.get('"public"."tag"')!.model!.insert.size).toBe(0);
    expect(tables.get('"public"."article"')!.model!.insert.has('both')).toBe(true);
    expect(tables.get('"public"."author"')!.model!.insert.has('only_user')).toBe(true);
  });
});

describe('dependents through the committed build (Note [Dependents through the build])', () => {
  const db = () => s.kernel.api.use(DatabaseToken);
  const targets: DepTarget[] = [
    ...['author', 'article', 'other', 'tag'].map((name) => ({ kind: 'table' as const, source: 'default', table: qt(name) })),
    ...[
      ['author', 'id'],
      ['author', 'name'],
      ['article', 'author_id'],
      ['article', 'title'],
      ['tag', 'id'],
      // Which article's permission reaches (through author's writings, its entry unchanged) once a
      // change not committed points writings at tag, joining on id alone.
      ['tag', 'title'],
    ].map(([name, column]) => ({ kind: 'column' as const, source: 'default', table: qt(name!), column: column! })),
    { kind: 'relationship', source: 'default', table: qt('author'), name: 'writings' },
    { kind: 'relationship', source: 'default', table: qt('article'), name: 'author' },
    { kind: 'foreign_key', source: 'default', table: qt('article'), name: 'article_author_id_fkey', columns: ['author_id'], refTable: qt('author'), refColumns: ['id'] },
  ];
  const target = (name: string): DepTarget => ({ kind: 'table', source: 'default', table: qt(name) });
  /** What `dependents` answers, but for `remove`. */
  const shown = (md: Metadata, t: DepTarget) => db().dependents(md, t).map((d) => [d.id, d.description, d.onType ?? false, d.target ?? null]);
  /** The document with every table entry a new object, and more entries (of tables that do not
   * exist, referring to nothing) than the service narrows a change of: every entry is looked at,
   * as before the committed build was used. */
  const fresh = (md: any): Metadata => ({
    ...md,
    sources: md.sources.map((src: any) => ({ ...src, tables: [...src.tables.map((t: any) => ({ ...t })), ...Array.from({ length: 20 }, (_, i) => ({ table: qt(`absent_${i}`) }))] })),
  });
  /** Changes not committed, as a request's earlier operations leave the document it works on. */
  const pending: { name: string; change: (tables: any[]) => any[] }[] = [
    { name: 'none', change: (tables) => tables },
    {
      name: "article's permission now reaches author's writings",
      change: (tables) => tables.map((t) => (t.table.name === 'article' ? { ...t, select_permissions: [permissionThroughAuthor] } : t)),
    },
    {
      name: "author's writings re-pointed at other columns",
      change: (tables) =>
        tables.map((t) =>
          t.table.name === 'author' ? { ...t, array_relationships: [{ name: 'writings', using: { manual_configuration: { remote_table: qt('tag'), column_mapping: { id: 'id' } } } }] } : t,
        ),
    },
    { name: 'tag untracked', change: (tables) => tables.filter((t) => t.table.name !== 'tag') },
    {
      name: 'an event trigger on author',
      change: (tables) =>
        tables.map((t) =>
          t.table.name === 'author'
            ? { ...t, event_triggers: [{ name: 'pending_names', definition: { update: { columns: ['name'] } }, webhook: 'http://127.0.0.1:1/', retry_conf: { num_retries: 0, interval_sec: 10, timeout_sec: 60 } }] }
            : t,
        ),
    },
    {
      name: 'tag tracked with a permission through article',
      change: (tables) => [
        ...tables.filter((t) => t.table.name !== 'tag'),
        { table: qt('tag'), select_permissions: [{ role: 'user', permission: { columns: ['id'], filter: { _exists: { _table: qt('article'), _where: { author_id: { _eq: 1 } } } } } }] },
      ],
    },
  ];
  /** Where each run starts: four tables, two relationships, a permission through both. */
  const base = [
    ...['author', 'article', 'other', 'tag'].map((table) => ({ type: 'pg_track_table', args: { table } })),
    { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
    { type: 'pg_create_array_relationship', args: { table: 'author', ...writings } },
    { type: 'pg_create_select_permission', args: { table: 'article', ...permissionThroughAuthor } },
  ];
  const ops = [
    ...commonOps,
    { type: 'pg_create_array_relationship', args: { table: 'other', name: 'tags', using: { manual_configuration: { remote_table: qt('tag'), column_mapping: { id: 'id' } } } } },
    { type: 'pg_create_update_permission', args: { table: 'other', role: 'user', permission: { columns: '*', filter: { tags: { id: { _gt: 1 } } }, check: {} } } },
    { type: 'pg_create_event_trigger', args: { name: 'article_titles', table: 'article', webhook: 'http://127.0.0.1:1/', update: { columns: ['title'] } } },
    { type: 'add_inherited_role', args: { role_name: 'both', role_set: ['user', 'editor'] } },
    { type: 'run_sql', args: { sql: "comment on table tag is 'tags'" } },
  ];

  beforeEach(async () => {
    expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
  });

  it('finds what depends on a table: relationships that join it, and permissions that walk through them', async () => {
    expect(await s.metadata({ type: 'bulk', args: base })).toMatchObject({ status: 200 });
    const md = s.kernel.state().metadata;
    for (const name of ['author', 'article', 'other', 'tag']) expect(shown(md, target(name)), name).toEqual(shown(fresh(md), target(name)));
    // author's own writings, the permission that walks through it, and article's relationship to it.
    expect(shown(md, target('author')).map(([id]) => id)).toEqual([
      'relationship@default:"public"."author":writings',
      'permission@default:"public"."article":user.select',
      'relationship@default:"public"."article":author',
    ]);
    expect(shown(md, target('other'))).toEqual([]);
  });

  it('answers as a look at every entry would, after any operations, with changes not yet committed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...ops), { minLength: 0, maxLength: 6 }), fc.constantFrom(...pending), async (sequence, p) => {
        expect(await s.query({ type: 'clear_metadata', args: {} })).toMatchObject({ status: 200 });
        expect(await s.metadata({ type: 'bulk', args: base })).toMatchObject({ status: 200 });
        for (const op of sequence) {
          const r = op.type === 'run_sql' ? await s.query(op) : await s.metadata(op);
          expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
        }
        const committed = s.kernel.state().metadata as any;
        const md: Metadata = { ...committed, sources: committed.sources.map((src: any) => ({ ...src, tables: p.change(src.tables) })) };
        for (const t of targets) expect(shown(md, t), `${p.name}: ${JSON.stringify(t)}`).toEqual(shown(fresh(md), t));
      }),
      { numRuns: 40 },
    );
  });
});
