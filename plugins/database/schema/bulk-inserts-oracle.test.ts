/**
 * An oracle for batches of nested inserts (Notes [Levels inserted as sets], [Rows upserting one
 * row] and [Defaults bound by column] in plugins/postgres/sql/compile-mutation.ts): Hasura inserts
 * the rows of a batch that have nested rows one statement per row, so a random batch of articles
 * (each with its author upserted by name or the one there before by id, columns left out by
 * turns, tags under it) must leave
 * the tables as the same articles sent one request each, from the same start; its affected_rows
 * must be theirs summed; and its `returning` must be the articles as the request leaves them (a
 * query of them afterwards).
 */
import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table author (id serial primary key, name text not null unique, bio text, rating int not null default 3);
create table article (id serial primary key, author_id int not null references author(id), title text not null,
  published boolean not null default false, words int);
create table tag (id serial primary key, article_id int not null references article(id), label text not null, weight int not null default 1);
`;
const RESET = `truncate tag, article, author restart identity;
insert into author (name, bio, rating) values ('a', 'there before', 5);`;

const server = useServer(SEED);
beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      ...['author', 'article', 'tag'].map((table) => ({ type: 'pg_track_table', args: { table } })),
      { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } },
      { type: 'pg_create_array_relationship', args: { table: 'article', name: 'tags', using: { foreign_key_constraint_on: { table: 'tag', column: 'article_id' } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const authorArb = fc.record({
  name: fc.constantFrom('a', 'b', 'c'),
  bio: optional(fc.oneof(fc.constant(null), fc.string({ maxLength: 3 }))),
  rating: optional(fc.integer({ min: 0, max: 9 })),
});
const articleArb = fc.record({
  title: fc.string({ maxLength: 4 }),
  published: optional(fc.boolean()),
  words: optional(fc.integer({ min: 0, max: 99 })),
  author: authorArb,
  // Or the author there before, by its id (about one article in four).
  byId: fc.integer({ min: 0, max: 3 }).map((x) => x === 0),
  tags: fc.array(fc.record({ label: fc.string({ maxLength: 3 }), weight: optional(fc.integer({ min: 0, max: 9 })) }), { maxLength: 3 }),
});

/** The article's insert input (a field left undefined is left out); `update`: the authors'
 * update_columns, the same for every article of a batch (as a client sends them) or each
 * article's own (then inserted in steps, Note [Batches in steps]). */
type Article = typeof articleArb extends fc.Arbitrary<infer T> ? T : never;

function input(a: Article, update: string[]) {
  const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  return strip({
    title: a.title,
    published: a.published,
    words: a.words,
    ...(a.byId ? { author_id: 1 } : { author: { data: strip(a.author), on_conflict: { constraint: 'author_name_key', update_columns: update } } }),
    ...(a.tags.length ? { tags: { data: a.tags.map((t) => strip(t)) } } : {}),
  });
}

const FIELDS = 'title published words author { name bio rating } tags { label weight }';
const INSERT = `mutation ($o: [article_insert_input!]!) { insert_article(objects: $o) { affected_rows returning { ${FIELDS} } } }`;

/** The tables without their ids, in the order the rows were written. */
async function tables() {
  const q = async (sql: string) => JSON.parse((await server.runSql(`select coalesce(json_agg(t), '[]')::text from (${sql}) as t`)).result[1][0]);
  return {
    author: await q('select name, bio, rating from author order by id'),
    article: await q('select title, published, words, (select name from author where author.id = author_id) as author from article order by id'),
    tag: await q('select label, weight, (select title from article where article.id = article_id) as article, article_id in (select id from article) as linked from tag order by id'),
  };
}

const updateArb = fc.subarray(['bio', 'rating', 'name'], { minLength: 1 });

it('a batch of articles with authors upserted by name and tags, columns left out by turns: the tables as one request per article leaves them', async () => {
  await fc.assert(
    // The authors' update_columns: the same for every article, or (half the runs, in steps) each
    // article's own.
    fc.asyncProperty(fc.array(fc.tuple(articleArb, updateArb), { minLength: 2, maxLength: 7 }), fc.option(updateArb, { nil: undefined, freq: 2 }), async (articles, same) => {
      const objects = articles.map(([a, own]) => input(a, same ?? own));
      await server.runSql(RESET);
      const batch = await server.gql(INSERT, { o: objects });
      expect(batch.errors).toBeUndefined();
      const afterBatch = await tables();
      const answered = await server.gql(`query { article(order_by: {id: asc}) { ${FIELDS.replace('tags {', 'tags(order_by: {id: asc}) {')} } }`);
      expect(batch.data.insert_article.returning).toEqual(answered.data.article);

      await server.runSql(RESET);
      let affected = 0;
      for (const o of objects) {
        const one = await server.gql(INSERT, { o: [o] });
        expect(one.errors).toBeUndefined();
        affected += one.data.insert_article.affected_rows;
      }
      expect(afterBatch).toEqual(await tables());
      expect(batch.data.insert_article.affected_rows).toBe(affected);
    }),
    { numRuns: 40 },
  );
});

/*
 * Rows under ONE object (Note [Batches in steps]): an author with up to 40 articles, each with
 * its tags and a badge upserted by label. Articles that upsert doing nothing cannot be a set (one
 * that wrote nothing would move the tags after it), nor can badges updated only where a filter
 * holds; the articles then go in steps under the author, bound to its answered row, and each
 * article whose badge might update a row another wrote is a step of its own. Whichever way, the
 * tables must be as the author followed by one request per article leaves them, the rows in the
 * same order (Note [Inserts in order]).
 */
const SEED_BADGES = `
create table badge (id serial primary key, label text not null unique, n int not null default 0);
alter table article add column badge_id int references badge(id);
`;
const badgeArticleArb = fc.record({
  title: fc.string({ maxLength: 4 }),
  words: optional(fc.integer({ min: 0, max: 99 })),
  badge: optional(fc.record({ label: fc.constantFrom('x', 'y', 'z'), n: fc.integer({ min: 0, max: 9 }) })),
  tags: fc.array(fc.record({ label: fc.string({ maxLength: 3 }) }), { maxLength: 2 }),
});

/** The badge table and the relationships the tests below use, made once whichever of them runs
 * first (each may run alone). */
let badgesMade: Promise<void> | undefined;
const badges = () =>
  (badgesMade ??= (async () => {
    await server.runSql(SEED_BADGES);
    const md = await server.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'badge' } },
        { type: 'pg_create_array_relationship', args: { table: 'author', name: 'articles', using: { foreign_key_constraint_on: { table: 'article', column: 'author_id' } } } },
        { type: 'pg_create_object_relationship', args: { table: 'article', name: 'badge', using: { foreign_key_constraint_on: 'badge_id' } } },
      ],
    });
    expect(md.status, md.text).toBe(200);
  })());

it('one author with many articles, their badges upserted by label and tags under them: the tables as the author and then one request per article leave them', async () => {
  await badges();
  const RESET_BADGES = `truncate tag, article, author, badge restart identity;`;
  const FIELDS_UNDER = 'title words badge { label n } tags(order_by: {id: asc}) { label }';
  const snapshot = async () => {
    const q = async (sql: string) => JSON.parse((await server.runSql(`select coalesce(json_agg(t), '[]')::text from (${sql}) as t`)).result[1][0]);
    return {
      author: await q('select id, name from author order by id'),
      badge: await q('select label, n from badge order by id'),
      article: await q('select title, words, author_id, (select label from badge where badge.id = badge_id) as badge from article order by id'),
      tag: await q('select label, (select title from article where article.id = article_id) as article from tag order by id'),
    };
  };
  await fc.assert(
    // Whether the articles upsert doing nothing (no set), and whether the badges' update has a
    // where (no set) or not (merged by label).
    fc.asyncProperty(fc.array(badgeArticleArb, { minLength: 1, maxLength: 40 }), fc.boolean(), fc.boolean(), async (articles, nothing, where) => {
      const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
      const badgeConflict = { constraint: 'badge_label_key', update_columns: ['n'], ...(where ? { where: { n: { _lt: 100 } } } : {}) };
      const objects = articles.map((a) =>
        strip({
          title: a.title,
          words: a.words,
          ...(a.badge ? { badge: { data: a.badge, on_conflict: badgeConflict } } : {}),
          ...(a.tags.length ? { tags: { data: a.tags } } : {}),
        }),
      );
      const articleConflict = nothing ? { on_conflict: { constraint: 'article_pkey', update_columns: [] } } : {};
      await server.runSql(RESET_BADGES);
      const batch = await server.gql(`mutation ($o: author_insert_input!) { insert_author_one(object: $o) { name articles(order_by: {id: asc}) { ${FIELDS_UNDER} } } }`, {
        o: { name: 'root', articles: { data: objects, ...articleConflict } },
      });
      expect(batch.errors).toBeUndefined();
      const afterBatch = await snapshot();
      const answered = await server.gql(`query { author { name articles(order_by: {id: asc}) { ${FIELDS_UNDER} } } }`);
      expect(batch.data.insert_author_one).toEqual(answered.data.author[0]);

      await server.runSql(RESET_BADGES);
      const root = await server.gql(`mutation { insert_author_one(object: {name: "root"}) { id } }`);
      expect(root.errors).toBeUndefined();
      for (const o of objects) {
        const one = await server.gql(`mutation ($o: article_insert_input!) { insert_article_one(object: $o${nothing ? ', on_conflict: {constraint: article_pkey, update_columns: []}' : ''}) { title } }`, {
          o: { ...o, author_id: root.data.insert_author_one.id },
        });
        expect(one.errors).toBeUndefined();
      }
      expect(afterBatch).toEqual(await snapshot());
    }),
    { numRuns: 30 },
  );
}, 120_000);

/*
 * Rows repeating the key they upsert by, with an update that has a where (Note [Rows repeating
 * a key]): badges by label, each row updating `n` only where the row there has n below a
 * threshold. Whether a later row updates depends on what the earlier left, so the batch must
 * leave the table (ids too: each row draws its serial's value once, in order) as one request per
 * row does, answer the rows that wrote, and count them.
 */
it('badges upserted by label with an update that has a where, labels repeating: the table as one request per badge leaves it', async () => {
  await badges();
  const RESET_ONLY_BADGES = `truncate tag, article, author, badge restart identity; insert into badge (label, n) values ('x', 1);`;
  const badgeArb = fc.record({ label: fc.constantFrom('x', 'y', 'z'), n: optional(fc.integer({ min: 0, max: 9 })) });
  await fc.assert(
    fc.asyncProperty(fc.array(badgeArb, { minLength: 2, maxLength: 12 }), fc.integer({ min: 0, max: 10 }), fc.boolean(), async (badges, below, both) => {
      const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
      const rows = badges.map(strip);
      const on = `{constraint: badge_label_key, update_columns: [${both ? 'n, label' : 'n'}], where: {n: {_lt: ${below}}}}`;
      const INSERT_BADGES = `mutation ($o: [badge_insert_input!]!) { insert_badge(objects: $o, on_conflict: ${on}) { affected_rows returning { id label n } } }`;
      const table = async () => JSON.parse((await server.runSql(`select coalesce(json_agg(t), '[]')::text from (select id, label, n from badge order by id) as t`)).result[1][0]);
      await server.runSql(RESET_ONLY_BADGES);
      const batch = await server.gql(INSERT_BADGES, { o: rows });
      expect(batch.errors).toBeUndefined();
      const afterBatch = await table();

      await server.runSql(RESET_ONLY_BADGES);
      let affected = 0;
      const returned: unknown[] = [];
      for (const o of rows) {
        const one = await server.gql(INSERT_BADGES, { o: [o] });
        expect(one.errors).toBeUndefined();
        affected += one.data.insert_badge.affected_rows;
        returned.push(...one.data.insert_badge.returning);
      }
      expect(afterBatch).toEqual(await table());
      expect(batch.data.insert_badge.affected_rows).toBe(affected);
      expect(batch.data.insert_badge.returning).toEqual(returned);
    }),
    { numRuns: 40 },
  );
}, 120_000);

/** That the batch `insert` of `objects` (answering `field`'s affected_rows and returning) does
 * what one request per object does from the same start (`reset`): the same error where one of
 * them fails (at the batch's object), keeping nothing; otherwise the tables (`snapshot`), the
 * summed affected_rows and the returned rows. */
async function expectAsOneByOne(insert: string, field: string, objects: unknown[], reset: string, snapshot: () => Promise<unknown>) {
  await server.runSql(reset);
  const batch = await server.gql(insert, { o: objects });
  const afterBatch = await snapshot();

  await server.runSql(reset);
  let affected = 0;
  const returned: unknown[] = [];
  let failed: unknown;
  for (const [i, o] of objects.entries()) {
    const one = await server.gql(insert, { o: [o] });
    if (one.errors) {
      // The same error at the batch's object.
      failed = { ...one.errors[0], extensions: { ...one.errors[0].extensions, path: one.errors[0].extensions.path.replace('objects[0]', `objects[${i}]`) } };
      break;
    }
    affected += one.data[field].affected_rows;
    returned.push(...one.data[field].returning);
  }
  if (failed !== undefined) {
    // The batch fails with the same error, keeping nothing.
    expect(batch.errors?.[0]).toEqual(failed);
    await server.runSql(reset);
    expect(afterBatch).toEqual(await snapshot());
    return;
  }
  expect(batch.errors).toBeUndefined();
  expect(afterBatch).toEqual(await snapshot());
  expect(batch.data[field].affected_rows).toBe(affected);
  expect(batch.data[field].returning).toEqual(returned);
}

/*
 * Objects upserting with an update that has a where, or doing nothing, with rows under them
 * (Notes [Levels joined by key], [Rows repeating a key]): authors by name, each with its
 * articles. Where their names differ they are one set, each article joined to its author by
 * name; else a statement per author or a few. The batch must fail exactly when one request per
 * author fails (an author with articles whose upsert wrote nothing: the zero-rows error, naming
 * that author) and otherwise leave the tables as those requests do.
 */
it('authors upserted by name with an update that has a where or doing nothing, each with articles under it: as one request per author', async () => {
  await badges();
  const RESET_AUTHORS = `truncate tag, article, author, badge restart identity; insert into author (name, bio, rating) values ('a', 'there before', 5);`;
  const authorRowArb = fc.record({
    name: fc.constantFrom('a', 'b', 'c', 'd'),
    rating: optional(fc.integer({ min: 0, max: 9 })),
    articles: fc.array(fc.record({ title: fc.string({ maxLength: 3 }) }), { maxLength: 2 }),
  });
  const snapshot = async () => {
    const q = async (sql: string) => JSON.parse((await server.runSql(`select coalesce(json_agg(t), '[]')::text from (${sql}) as t`)).result[1][0]);
    return { author: await q('select id, name, bio, rating from author order by id'), article: await q('select id, title, author_id from article order by id') };
  };
  await fc.assert(
    // `below`: the where's bound, or (one run in four) doing nothing on conflict.
    fc.asyncProperty(fc.array(authorRowArb, { minLength: 2, maxLength: 12 }), fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined, freq: 3 }), async (authors, below) => {
      const rows = authors.map((a) => Object.fromEntries(Object.entries({ name: a.name, bio: `bio of ${a.name}`, rating: a.rating, ...(a.articles.length ? { articles: { data: a.articles } } : {}) }).filter(([, v]) => v !== undefined)));
      const upsert = below === undefined ? 'update_columns: []' : `update_columns: [bio, rating], where: {rating: {_lt: ${below}}}`;
      const INSERT_AUTHORS = `mutation ($o: [author_insert_input!]!) { insert_author(objects: $o, on_conflict: {constraint: author_name_key, ${upsert}}) { affected_rows returning { name rating } } }`;
      await expectAsOneByOne(INSERT_AUTHORS, 'insert_author', rows, RESET_AUTHORS, snapshot);
    }),
    { numRuns: 40 },
  );
}, 120_000);

/*
 * Rows each with an object upserted doing nothing (Note [Levels joined by key]): articles each
 * bringing its author by name, with tags. Where the names differ the authors are one set, each
 * article joined to its own by name; else a statement per article or a few. As Hasura's statement
 * per article: an author there before (or written by an earlier article) writes nothing, which
 * fails the request naming that article's author; otherwise the tables as those requests leave
 * them.
 */
it('articles each bringing an author that does nothing on conflict, with tags: as one request per article', async () => {
  const articleOfArb = fc.record({
    title: fc.string({ maxLength: 3 }),
    author: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'),
    tags: fc.array(fc.record({ label: fc.string({ maxLength: 3 }) }), { maxLength: 2 }),
  });
  const INSERT_ARTICLES = `mutation ($o: [article_insert_input!]!) { insert_article(objects: $o) { affected_rows returning { title author { name } tags { label } } } }`;
  await fc.assert(
    fc.asyncProperty(fc.array(articleOfArb, { minLength: 2, maxLength: 10 }), fc.boolean(), async (articles, taken) => {
      const objects = articles.map((a) => ({
        title: a.title,
        author: { data: { name: a.author, bio: `of ${a.title}` }, on_conflict: { constraint: 'author_name_key', update_columns: [] } },
        ...(a.tags.length ? { tags: { data: a.tags } } : {}),
      }));
      // `taken`: author a is there before.
      const reset = `truncate tag, article, author restart identity cascade;${taken ? ` insert into author (name) values ('a');` : ''}`;
      await expectAsOneByOne(INSERT_ARTICLES, 'insert_article', objects, reset, tables);
    }),
    { numRuns: 60 },
  );
}, 120_000);
