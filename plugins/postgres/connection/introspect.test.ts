/** Introspection of a real database: one query describes tables, views, keys, functions, enums. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createDatabase } from '../../../test/helpers.js';
import { PgConnection } from './connection.js';
import { tableKey, type Introspection } from '../../database/index.js';

let conn: PgConnection;
let intro: Introspection;
beforeAll(async () => {
  const db = await createDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  await sql.unsafe(`
    create schema other;
    create type mood as enum ('happy', 'sad');
    create table author (id serial primary key, name text not null unique, mood mood, tags text[], meta jsonb default '{}');
    comment on table author is 'people';
    comment on column author.name is 'full name';
    create table other.book (isbn text, edition int, author_id int references author(id), primary key (isbn, edition));
    create table review (id int generated always as identity primary key, isbn text, edition int,
      foreign key (isbn, edition) references other.book (isbn, edition));
    create view author_names as select id, name from author;
    create materialized view author_count as select count(*) as n from author;
    create function search(q text, lim int default 10) returns setof author as $$ select * from author where name ilike q limit lim $$ language sql stable;
    create function bump(a author) returns int as $$ select a.id + 1 $$ language sql immutable;
    create function noisy() returns void as $$ begin end $$ language plpgsql;
    comment on function search(text, int) is 'finds authors';
    create domain positive as int check (value > 0);
    create table span (id positive, during int4range, periods int4range[], counts positive[]);
    create collation nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
    create table word (plain text, folded text collate nocase, c varchar(9) collate "C", n int, tags text[]);
    create table gappy (gone int, a int, also_gone int, b int not null, c int not null);
    alter table gappy drop column gone, drop column also_gone;
    alter table gappy add primary key (c, a), add constraint gappy_b_a unique (b, a);
    create schema hdb_catalog;
    create table hdb_catalog.kept (x int, y int, primary key (y, x));
    create table pointer (id int, gx int, gy int, foreign key (gy, gx) references gappy (c, a), foreign key (gx, gy) references hdb_catalog.kept (y, x));
  `);
  await sql.end();
  conn = new PgConnection('t', { connection_info: { database_url: db.url } }, {});
  intro = await conn.introspect();
});
afterAll(async () => {
  await conn?.close();
});

describe('introspection', () => {
  it('describes tables with columns, keys and comments', () => {
    const a = intro.tables.get(tableKey('public', 'author'))!;
    expect(a).toMatchObject({ schema: 'public', name: 'author', relation: 'table', description: 'people', viewInfo: null });
    expect(a.primaryKey).toEqual({ name: 'author_pkey', columns: ['id'] });
    expect(a.uniqueConstraints).toEqual([{ name: 'author_name_key', columns: ['name'] }]);
    expect(a.columns.map((c) => [c.name, c.type, c.nullable, c.hasDefault, c.typeKind])).toEqual([
      ['id', 'integer', false, true, 'base'],
      ['name', 'text', false, false, 'base'],
      ['mood', 'mood', true, false, 'enum'],
      ['tags', 'text[]', true, false, 'array'],
      ['meta', 'jsonb', true, true, 'base'],
    ]);
    expect(a.columns.map((c) => c.description)).toEqual([null, 'full name', null, null, null]);
    expect(intro.tables.get(tableKey('other', 'book'))!.description).toBeNull();
    expect(intro.functions.get(tableKey('public', 'search'))![0]!.description).toBe('finds authors');
    expect(intro.functions.get(tableKey('public', 'noisy'))![0]!.description).toBeNull();
  });

  it('gives each column every field, in order (Note [Columns as arrays])', () => {
    const a = intro.tables.get(tableKey('public', 'author'))!;
    const [id, name] = a.columns;
    expect(Object.keys(id!)).toEqual(['name', 'position', 'type', 'udt', 'typeSchema', 'typeKind', 'elementKind', 'nullable', 'hasDefault', 'default', 'isIdentity', 'isGenerated', 'collationDeterministic', 'description']);
    expect(id).toEqual({
      name: 'id',
      position: 1,
      type: 'integer',
      udt: 'int4',
      typeSchema: 'pg_catalog',
      typeKind: 'base',
      elementKind: null,
      nullable: false,
      hasDefault: true,
      default: { sql: "nextval('author_id_seq'::regclass)", key: expect.stringMatching(/^[0-9a-f]{32}$/) },
      isIdentity: false,
      isGenerated: false,
      collationDeterministic: null,
      description: null,
    });
    expect(name).toMatchObject({ name: 'name', position: 2, default: null, collationDeterministic: true, description: 'full name' });
    const review = intro.tables.get(tableKey('public', 'review'))!;
    expect(review.columns[0]).toMatchObject({ name: 'id', hasDefault: true, default: null, isIdentity: true });
  });

  it("maps pg_type.typtype to the kind-neutral type kinds (Note [Type kinds]): domains, ranges as other, arrays with their element's kind, void as pseudo", () => {
    const span = intro.tables.get(tableKey('public', 'span'))!;
    expect(span.columns.map((c) => [c.name, c.udt, c.typeKind, c.elementKind ?? null])).toEqual([
      ['id', 'positive', 'domain', null],
      ['during', 'int4range', 'other', null],
      ['periods', '_int4range', 'array', 'other'],
      ['counts', '_positive', 'array', 'domain'],
    ]);
    expect(intro.functions.get(tableKey('public', 'noisy'))![0]).toMatchObject({ returnType: 'void', returnTypeKind: 'pseudo' });
  });

  it("says whether each column's collation tells texts apart by their bytes; null for a type without one", () => {
    const word = intro.tables.get(tableKey('public', 'word'))!;
    expect(word.columns.map((c) => [c.name, c.collationDeterministic])).toEqual([
      ['plain', true],
      ['folded', false],
      ['c', true],
      ['n', null],
      ['tags', true],
    ]);
  });

  it('describes composite and cross-schema foreign keys in column order', () => {
    const book = intro.tables.get(tableKey('other', 'book'))!;
    expect(book.primaryKey!.columns).toEqual(['isbn', 'edition']);
    expect(book.foreignKeys).toEqual([{ name: 'book_author_id_fkey', columns: ['author_id'], refSchema: 'public', refTable: 'author', refColumns: ['id'] }]);
    const review = intro.tables.get(tableKey('public', 'review'))!;
    expect(review.foreignKeys[0]).toMatchObject({ columns: ['isbn', 'edition'], refSchema: 'other', refTable: 'book', refColumns: ['isbn', 'edition'] });
    expect(review.columns[0]).toMatchObject({ name: 'id', isIdentity: true, hasDefault: true });
  });

  it("names keys' columns by their numbers, after dropped columns, in the key's order; a key to a table left out too (Note [Key columns by number])", () => {
    const gappy = intro.tables.get(tableKey('public', 'gappy'))!;
    expect(gappy.columns.map((c) => [c.name, c.position])).toEqual([
      ['a', 2],
      ['b', 4],
      ['c', 5],
    ]);
    expect(gappy.primaryKey).toEqual({ name: 'gappy_pkey', columns: ['c', 'a'] });
    expect(gappy.uniqueConstraints).toEqual([{ name: 'gappy_b_a', columns: ['b', 'a'] }]);
    expect(intro.tables.has(tableKey('hdb_catalog', 'kept'))).toBe(false);
    expect(intro.tables.get(tableKey('public', 'pointer'))!.foreignKeys).toEqual([
      { name: 'pointer_gx_gy_fkey', columns: ['gx', 'gy'], refSchema: 'hdb_catalog', refTable: 'kept', refColumns: ['y', 'x'] },
      { name: 'pointer_gy_gx_fkey', columns: ['gy', 'gx'], refSchema: 'public', refTable: 'gappy', refColumns: ['c', 'a'] },
    ]);
  });

  it('describes views and materialized views', () => {
    expect(intro.tables.get(tableKey('public', 'author_names'))).toMatchObject({ relation: 'view', viewInfo: { insertable: true, updatable: true, deletable: true } });
    expect(intro.tables.get(tableKey('public', 'author_count'))).toMatchObject({ relation: 'materialized_view', viewInfo: null });
  });

  it('describes functions: arguments, defaults, return type, volatility', () => {
    const [search] = intro.functions.get(tableKey('public', 'search'))!;
    expect(search).toMatchObject({ returnType: 'author', returnTypeKind: 'composite', returnsSet: true, volatility: 'stable' });
    expect(search!.args.map((x) => [x.name, x.type, x.hasDefault])).toEqual([
      ['q', 'text', false],
      ['lim', 'int4', true],
    ]);
    const [bump] = intro.functions.get(tableKey('public', 'bump'))!;
    expect(bump).toMatchObject({ returnType: 'int4', returnsSet: false, volatility: 'immutable' });
    expect(bump!.args[0]).toMatchObject({ name: 'a', type: 'author', typeSchema: 'public' });
    expect(intro.functions.get(tableKey('public', 'noisy'))![0]).toMatchObject({ volatility: 'volatile', returnType: 'void' });
  });

  it('lists enum types with their values, and leaves system schemas out', () => {
    expect(intro.types.get(tableKey('public', 'mood'))).toMatchObject({ kind: 'e', enumValues: ['happy', 'sad'] });
    expect([...intro.tables.keys()].some((k) => k.startsWith('"pg_catalog"') || k.startsWith('"information_schema"'))).toBe(false);
  });
});
