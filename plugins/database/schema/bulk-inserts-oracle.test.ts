/**
 * An oracle for batches of nested inserts (Notes [Levels inserted as sets], [Rows upserting one
 * row] and [Defaults bound by column] in plugins/postgres/compile-mutation.ts): Hasura inserts
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
