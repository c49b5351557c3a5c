/**
 * An oracle for nested updates (issue 30; Note [Nested updates] in ./nested-update.ts): random
 * `update_author(where, _set, _nested: {articles: {delete, update (with comments: insert/delete),
 * insert (with comments)}})` as admin and as a writer whose every table has its own filter, check
 * and presets. The intended effect is computed here, step by step on a copy of the rows (the
 * parents, then each relationship's deletes, updates, inserts); the tables after the mutation,
 * and its affected_rows, must be that, and a failed check anywhere must leave them as they were.
 */
import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id int primary key, name text not null, bio text);
create table article (id serial primary key, author_id int not null references author(id), title text not null,
  published boolean not null default false, rating int not null default 0);
create table comment (id serial primary key, article_id int not null references article(id) on delete cascade, body text not null, approved boolean not null default true);
`;

interface Author { id: number; bio: string | null }
interface Article { id: number; author_id: number; title: string; published: boolean; rating: number }
interface Comment { article_id: number; body: string; approved: boolean }
const AUTHORS: Author[] = [1, 2, 3].map((id) => ({ id, bio: null }));
const ARTICLES: Article[] = [
  { id: 1, author_id: 1, title: 'a1', published: true, rating: 3 },
  { id: 2, author_id: 1, title: 'a2', published: false, rating: 1 },
  { id: 3, author_id: 1, title: 'a3', published: true, rating: 5 },
  { id: 4, author_id: 2, title: 'b1', published: true, rating: 0 },
  { id: 5, author_id: 2, title: 'b2', published: false, rating: 4 },
  { id: 6, author_id: 3, title: 'c1', published: false, rating: 2 },
];
const COMMENTS: Comment[] = [
  { article_id: 1, body: 'x1', approved: true },
  { article_id: 1, body: 'x2', approved: false },
  { article_id: 2, body: 'x3', approved: true },
  { article_id: 4, body: 'x4', approved: false },
  { article_id: 6, body: 'x5', approved: true },
];
const RESET = `
delete from comment; delete from article; delete from author;
select setval('article_id_seq', 100, false), setval('comment_id_seq', 100, false);
insert into author (id, name) values ${AUTHORS.map((a) => `(${a.id}, 'n${a.id}')`).join(', ')};
insert into article (id, author_id, title, published, rating) values ${ARTICLES.map((a) => `(${a.id}, ${a.author_id}, '${a.title}', ${a.published}, ${a.rating})`).join(', ')};
insert into comment (article_id, body, approved) values ${COMMENTS.map((c) => `(${c.article_id}, '${c.body}', ${c.approved})`).join(', ')};
`;

const server = useServer(SEED);
beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['author', 'article', 'comment'].map((table) => ({ type: 'pg_track_table', args: { table } })),
      { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
      { type: 'pg_create_array_relationship', args: { table: 'article', name: 'comments', using: { foreign_key_constraint_on: { table: 'comment', column: 'article_id' } } } },
      // writer: its own author row, bio never "bad"; published articles updated, unpublished ones
      // deleted, ratings at most 5; comments inserted unapproved, never deleted.
      // (select permissions only so that `where` can name columns)
      ...['author', 'article', 'comment'].map((table) => ({ type: 'pg_create_select_permission', args: { table, role: 'writer', permission: { columns: '*', filter: {} } } })),
      { type: 'pg_create_update_permission', args: { table: 'author', role: 'writer', permission: { columns: ['bio'], filter: { id: { _eq: 'X-Svc-User-Id' } }, check: { bio: { _neq: 'bad' } } } } },
      { type: 'pg_create_insert_permission', args: { table: 'article', role: 'writer', permission: { columns: ['author_id', 'title', 'published', 'rating'], check: { rating: { _lte: 5 } } } } },
      { type: 'pg_create_update_permission', args: { table: 'article', role: 'writer', permission: { columns: ['title', 'published', 'rating'], filter: { published: { _eq: true } }, check: { rating: { _lte: 5 } } } } },
      { type: 'pg_create_delete_permission', args: { table: 'article', role: 'writer', permission: { filter: { published: { _eq: false } } } } },
      { type: 'pg_create_insert_permission', args: { table: 'comment', role: 'writer', permission: { columns: ['article_id', 'body'], check: {}, set: { approved: false } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

type W = { k: 'all' } | { k: 'published'; b: boolean } | { k: 'rating_gt'; n: number };
interface Spec {
  writer?: number;
  ids: number[];
  bio?: string;
  del?: W;
  upd?: { where: W; title?: string; inc?: number; published?: boolean; comments?: { insert?: string[]; delete?: boolean } };
  ins?: { title: string; rating: number; published: boolean; comments: string[] }[];
}

const wArb: fc.Arbitrary<W> = fc.oneof(
  fc.constant({ k: 'all' as const }),
  fc.boolean().map((b) => ({ k: 'published' as const, b })),
  fc.integer({ min: 0, max: 4 }).map((n) => ({ k: 'rating_gt' as const, n })),
);
const specArb: fc.Arbitrary<Spec> = fc
  .record(
    {
      writer: fc.integer({ min: 1, max: 3 }),
      ids: fc.uniqueArray(fc.integer({ min: 1, max: 3 }), { minLength: 1 }),
      bio: fc.constantFrom('x', 'y', 'bad'),
      del: wArb,
      upd: fc.record(
        {
          where: wArb,
          title: fc.constantFrom('T', 'U'),
          inc: fc.integer({ min: 0, max: 3 }),
          published: fc.boolean(),
          comments: fc.record({ insert: fc.array(fc.constantFrom('p', 'q'), { minLength: 1, maxLength: 2 }), delete: fc.boolean() }, { requiredKeys: [] }),
        },
        // An update needs at least one operator (`_inc` here), as every update does: one with
        // `where` alone is refused ("at least any one of _set, _inc is expected"), which is not
        // what this oracle checks (a CI run drew one).
        { requiredKeys: ['where', 'inc'] },
      ),
      ins: fc.array(fc.record({ title: fc.constantFrom('n1', 'n2', 'n3'), rating: fc.integer({ min: 0, max: 7 }), published: fc.boolean(), comments: fc.array(fc.constantFrom('r', 's'), { maxLength: 2 }) }), { minLength: 1, maxLength: 2 }),
    },
    { requiredKeys: ['ids'] },
  )
  // The writer may not delete comments: its input has no such field.
  .map((s) => (s.writer !== undefined && s.upd?.comments?.delete ? { ...s, upd: { ...s.upd, comments: { ...s.upd.comments, delete: false } } } : s));

const matches = (w: W, a: Article) => (w.k === 'all' ? true : w.k === 'published' ? a.published === w.b : a.rating > w.n);
const whereOf = (w: W) => (w.k === 'all' ? '{}' : w.k === 'published' ? `{published: {_eq: ${w.b}}}` : `{rating: {_gt: ${w.n}}}`);

/** The intended effect, step by step: the rows after it and the rows written, or a failed check. */
function intended(spec: Spec): { fail: true } | { fail: false; articles: Article[]; comments: Comment[]; authors: Author[]; written: number } {
  const writer = spec.writer;
  const authors = AUTHORS.map((a) => ({ ...a }));
  let articles = ARTICLES.map((a) => ({ ...a }));
  let comments = COMMENTS.map((c) => ({ ...c }));
  let written = 0;
  let fail = false;
  let next = 100;
  const parents = authors.filter((a) => spec.ids.includes(a.id) && (writer === undefined || a.id === writer));
  if (spec.bio !== undefined) {
    for (const p of parents) p.bio = spec.bio;
    written += parents.length;
    if (writer !== undefined && spec.bio === 'bad' && parents.length > 0) fail = true;
  }
  const mine = (a: Article) => parents.some((p) => p.id === a.author_id);
  if (spec.del) {
    const gone = articles.filter((a) => mine(a) && matches(spec.del!, a) && (writer === undefined || !a.published));
    articles = articles.filter((a) => !gone.includes(a));
    comments = comments.filter((c) => !gone.some((a) => a.id === c.article_id));
    written += gone.length;
  }
  const u = spec.upd;
  const ownSet = u && (u.title !== undefined || u.inc !== undefined || u.published !== undefined);
  const cIns = u?.comments?.insert ?? [];
  const cDel = u?.comments?.delete === true;
  if (u && (ownSet || cIns.length > 0 || cDel)) {
    const rows = articles.filter((a) => mine(a) && matches(u.where, a) && (writer === undefined || a.published));
    if (ownSet) {
      for (const a of rows) {
        if (u.title !== undefined) a.title = u.title;
        if (u.published !== undefined) a.published = u.published;
        if (u.inc !== undefined) a.rating += u.inc;
        if (writer !== undefined && a.rating > 5) fail = true;
      }
      written += rows.length;
    }
    if (cDel) {
      const before = comments.length;
      comments = comments.filter((c) => !rows.some((a) => a.id === c.article_id));
      written += before - comments.length;
    }
    for (const a of rows) for (const body of cIns) comments.push({ article_id: a.id, body, approved: writer === undefined }), written++;
  }
  for (const p of spec.ins ? parents : []) {
    for (const o of spec.ins!) {
      const a = { id: next++, author_id: p.id, title: o.title, published: o.published, rating: o.rating };
      articles.push(a);
      written++;
      if (writer !== undefined && o.rating > 5) fail = true;
      for (const body of o.comments) comments.push({ article_id: a.id, body, approved: writer === undefined }), written++;
    }
  }
  return fail ? { fail } : { fail, articles, comments, authors, written };
}

function mutation(spec: Spec): string {
  const ops: string[] = [];
  if (spec.del) ops.push(`delete: {where: ${whereOf(spec.del)}}`);
  const u = spec.upd;
  if (u) {
    const parts = [`where: ${whereOf(u.where)}`];
    const set = [...(u.title !== undefined ? [`title: "${u.title}"`] : []), ...(u.published !== undefined ? [`published: ${u.published}`] : [])];
    if (set.length) parts.push(`_set: {${set.join(', ')}}`);
    if (u.inc !== undefined) parts.push(`_inc: {rating: ${u.inc}}`);
    const c = [...(u.comments?.insert?.length ? [`insert: {objects: [${u.comments.insert.map((b) => `{body: "${b}"}`).join(', ')}]}`] : []), ...(u.comments?.delete ? ['delete: {where: {}}'] : [])];
    if (c.length) parts.push(`_nested: {comments: {${c.join(', ')}}}`);
    ops.push(`update: {${parts.join(', ')}}`);
  }
  if (spec.ins) {
    const objs = spec.ins.map((o) => `{title: "${o.title}", rating: ${o.rating}, published: ${o.published}${o.comments.length ? `, comments: {data: [${o.comments.map((b) => `{body: "${b}"}`).join(', ')}]}` : ''}}`);
    ops.push(`insert: {objects: [${objs.join(', ')}]}`);
  }
  const args = [`where: {id: {_in: [${spec.ids.join(', ')}]}}`, ...(spec.bio !== undefined ? [`_set: {bio: "${spec.bio}"}`] : []), `_nested: {articles: {${ops.join(', ')}}}`];
  return `mutation { update_author(${args.join(', ')}) { affected_rows } }`;
}

const tables = async () => {
  const articles = (await server.sql`select id, author_id, title, published, rating from article order by id`) as unknown as Article[];
  const comments = await server.sql`select c.body, c.approved, a.author_id, a.title from comment c join article a on a.id = c.article_id`;
  const authors = await server.sql`select id, bio from author order by id`;
  return {
    articles: articles.map((a) => [a.author_id, a.title, a.published, a.rating]).sort(),
    comments: comments.map((c) => [c.author_id, c.title, c.body, c.approved]).sort(),
    authors: authors.map((a) => [a.id, a.bio]),
  };
};

it('writes what the nested update intends, all of it or nothing, for admin and a role with permissions', async () => {
  await server.runSql(RESET);
  const initial = await tables();
  let failures = 0;
  let writes = 0;
  await fc.assert(
    fc.asyncProperty(specArb, async (spec) => {
      await server.runSql(RESET);
      const doc = mutation(spec);
      const headers = spec.writer !== undefined ? { 'x-svc-role': 'writer', 'x-svc-user-id': String(spec.writer) } : undefined;
      const r = await server.gql(doc, undefined, headers);
      const want = intended(spec);
      if (want.fail) {
        failures++;
        expect(r, doc).toEqual({ errors: [{ message: 'check constraint of an insert/update permission has failed', extensions: { path: '$', code: 'permission-error' } }] });
        expect(await tables(), doc).toEqual(initial);
        return;
      }
      expect(r.errors, `${doc}\n${JSON.stringify(r.errors)}`).toBeUndefined();
      expect(r.data.update_author.affected_rows, doc).toBe(want.written);
      if (want.written > 0) writes++;
      const byId = new Map(want.articles.map((a) => [a.id, a]));
      expect(await tables(), doc).toEqual({
        articles: want.articles.map((a) => [a.author_id, a.title, a.published, a.rating]).sort(),
        comments: want.comments.map((c) => [byId.get(c.article_id)!.author_id, byId.get(c.article_id)!.title, c.body, c.approved]).sort(),
        authors: want.authors.map((a) => [a.id, a.bio]),
      });
    }),
    { numRuns: 80 },
  );
  // Both outcomes were tried, and many mutations wrote something. The bounds are loose on purpose:
  // in 2,000 draws of 80 specs from specArb (outcomes from intended(), no server), writes ranged
  // 25..~50 (median 39) and failures 19..~50 (median 34); a bound of 30 writes failed a CI run
  // (28) about one run in 40.
  expect(failures).toBeGreaterThan(5);
  expect(writes).toBeGreaterThan(12);
}, 180_000);
