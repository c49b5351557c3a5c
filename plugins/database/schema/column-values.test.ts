/**
 * Golden tests of how column values come out and go in, in corners Hasura's suite checks: the
 * `path` argument of json/jsonb columns ("JSON select path"), money given in exponent notation,
 * a LIKE pattern ending in the escape character (Hasura: `bad-request`), scalar computed
 * fields under `--stringify-numeric-types`, and strings for Int, Float and Boolean columns
 * (Note [Text literals at marked positions] in plugins/graphql/prepare.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';
import { parseJsonPath } from '../ir/json-path.js';

const SEED = `
create table doc (id serial primary key, j json, b jsonb, price money, n numeric, d float8);
insert into doc (j, b, price, n, d) values (
  '{"a": "b", "obj": {"c1": "c2"}, "arr": [1, 2, 3], "_underscore": 0, "!@#$%^": "special", "translations": {"hello world!": "hi"}, "objs": [{"你好": "Hello!"}]}',
  '{"c": "d", "arr": [4, 5, 6], "obj": {"e1": "e2"}}', 12.50, 1.5, 2.5);
create function twice(d doc) returns float8 as $$ select d.d * 2 $$ language sql stable;
create table person (id serial primary key, name text);
insert into person (name) values ('Johnny'), ('Jo%n');
create table typed (id serial primary key, small int2, i int4, big int8, num numeric, r real, d float8, b boolean);
`;

describe('json path, money, LIKE escapes', () => {
  const server = useServer(SEED);
  beforeAll(async () => {
    const r = await server.metadata({ type: 'bulk', args: [{ type: 'pg_track_table', args: { table: 'doc' } }, { type: 'pg_track_table', args: { table: 'person' } }] });
    expect(r.status, r.text).toBe(200);
  });

  it('parses JSON paths as Hasura writes them', () => {
    expect(parseJsonPath('$')).toEqual([]);
    expect(parseJsonPath('.obj.c1')).toEqual(['obj', 'c1']);
    expect(parseJsonPath('a')).toEqual(['a']);
    expect(parseJsonPath('arr[0]')).toEqual(['arr', 0]);
    expect(parseJsonPath("$['!@#$%^']")).toEqual(['!@#$%^']);
    expect(parseJsonPath("translations['hello world!']")).toEqual(['translations', 'hello world!']);
    expect(parseJsonPath('objs[0]["你好"]')).toEqual(['objs', 0, '你好']);
    expect(parseJsonPath('objs.[0].["你好"]')).toEqual(['objs', 0, '你好']);
    for (const bad of ['a[', 'a[x]', "a['b", 'a..b', 'a]']) expect(() => parseJsonPath(bad), bad).toThrow(/parse json path error/);
  });

  it('selects a json or jsonb column at a path', async () => {
    const r = await server.gql(`{ doc {
      all: j(path: "$") child: j(path: ".obj.c1") bare: j(path: "a") item: j(path: "arr[0]") under: j(path: "._underscore")
      special: j(path: "['!@#$%^']") spaced: j(path: "translations['hello world!']") unicode: j(path: "objs[0][\\"你好\\"]")
      bItem: b(path: "arr[2]") bObj: b(path: ".obj") missing: b(path: "nope.deeper")
    } }`);
    expect(r.errors).toBeUndefined();
    const row = r.data.doc[0];
    expect(row).toMatchObject({ child: 'c2', bare: 'b', item: 1, under: 0, special: 'special', spaced: 'hi', unicode: 'Hello!', bItem: 6, bObj: { e1: 'e2' }, missing: null });
    expect(row.all.arr).toEqual([1, 2, 3]);
  });

  it('takes the path from a variable, and refuses a bad one with a clear error', async () => {
    expect(await server.gql('query ($p: String) { doc { b(path: $p) } }', { p: '.obj.e1' })).toEqual({ data: { doc: [{ b: 'e2' }] } });
    const bad = await server.gql('query ($p: String) { doc { b(path: $p) } }', { p: 'arr[x]' });
    expect(bad.data).toBeUndefined();
    expect(bad.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    expect(bad.errors[0].message).toMatch(/parse json path error/);
    const literal = await server.gql('{ doc { b(path: "arr[") } }');
    expect(literal.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    // Only json and jsonb columns have the argument.
    const other = await server.gql('{ doc { n(path: "$") } }');
    expect(other.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' }, message: "'n' has no argument named 'path'" });
  });

  it('money takes a GraphQL Float in exponent notation (its input reads no exponents)', async () => {
    const r = await server.gql('mutation { update_doc(where: {}, _inc: {price: -2E-2}) { returning { price } } }');
    expect(r).toEqual({ data: { update_doc: { returning: [{ price: '$12.48' }] } } });
    const s = await server.gql('mutation { update_doc(where: {}, _set: {price: 1.25e1}) { returning { price } } }');
    expect(s).toEqual({ data: { update_doc: { returning: [{ price: '$12.50' }] } } });
  });

  it('a LIKE pattern ending in the escape character is a bad request', async () => {
    expect(await server.gql('{ person(where: {name: {_like: "John\\\\"}}) { id } }')).toMatchObject({
      errors: [{ message: 'LIKE pattern must not end with escape character', extensions: { path: '$', code: 'bad-request' } }],
    });
    expect(await server.gql('{ person(where: {name: {_like: "Jo\\\\%n"}}) { name } }')).toEqual({ data: { person: [{ name: 'Jo%n' }] } });
  });
});

describe('strings for the values of Int, Float and Boolean columns, as Hasura reads them', () => {
  const server = useServer(SEED);
  beforeAll(async () => {
    expect((await server.metadata({ type: 'pg_track_table', args: { table: 'typed' } })).status).toBe(200);
  });

  it('in inserts, updates, comparisons and primary keys', async () => {
    const ins = await server.gql(`mutation { insert_typed(objects: [
      {small: "32767", i: "2147483647", big: "9223372036854775807", num: "1.234", r: "0.5", d: "16.0001220703125", b: "true"},
      {small: 1, i: 2, big: 3, num: 4, r: 5, d: 6, b: false}
    ]) { returning { id small i big r b } } }`);
    expect(ins.errors).toBeUndefined();
    expect(ins.data.insert_typed.returning).toEqual([
      { id: 1, small: 32767, i: 2147483647, big: 9223372036854775807, r: 0.5, b: true },
      { id: 2, small: 1, i: 2, big: 3, r: 5, b: false },
    ]);
    expect(await server.sql`select num::text, d from typed where id = 1`).toEqual([{ num: '1.234', d: 16.0001220703125 }]);
    const q = await server.gql('{ a: typed(where: {i: {_eq: "2"}}) { id } b: typed(where: {i: {_in: ["2", "2147483647"]}}, order_by: {id: asc}) { id } c: typed_by_pk(id: "1") { b } }');
    expect(q).toEqual({ data: { a: [{ id: 2 }], b: [{ id: 1 }, { id: 2 }], c: { b: true } } });
    const u = await server.gql('mutation { update_typed_by_pk(pk_columns: {id: "2"}, _set: {b: "true"}, _inc: {i: "3"}) { i b } }');
    expect(u).toEqual({ data: { update_typed_by_pk: { i: 5, b: true } } });
  });

  it('a string that is not of the scalar is refused as graphql-js refuses it, and nothing is written', async () => {
    const r = await server.gql('mutation { insert_typed_one(object: {i: "twelve"}) { id } }');
    expect(r.data).toBeUndefined();
    expect(r.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' }, message: 'Int cannot represent non-integer value: "twelve"' });
    const b = await server.gql('mutation ($b: Boolean) { insert_typed_one(object: {b: $b}) { id } }', { b: 'yes' });
    expect(b.errors[0].extensions.code).toBe('validation-failed');
    // One that fits the scalar but not the column (int2) is the database's data error.
    const big = await server.gql('mutation { insert_typed_one(object: {small: "99999"}) { id } }');
    expect(big.errors[0]).toMatchObject({ extensions: { code: 'data-exception' } });
    expect(await server.sql`select count(*)::int as n from typed where i is null`).toEqual([{ n: 0 }]);
  });

  it('elsewhere Int and Boolean still refuse strings (limit, _is_null)', async () => {
    const limit = await server.gql('{ typed(limit: "1") { id } }');
    expect(limit.errors[0].extensions.code).toBe('validation-failed');
    const isNull = await server.gql('{ typed(where: {b: {_is_null: "false"}}) { id } }');
    expect(isNull.errors[0].extensions.code).toBe('validation-failed');
    const variable = await server.gql('query ($n: Int) { typed(limit: $n) { id } }', { n: '1' });
    expect(variable.errors[0].extensions.code).toBe('validation-failed');
  });

  it('a variable used only where a column value goes takes a string too; one used elsewhere as well does not', async () => {
    expect(await server.gql('query ($id: Int!) { typed_by_pk(id: $id) { id } }', { id: '1' })).toEqual({ data: { typed_by_pk: { id: 1 } } });
    expect(await server.gql('query ($i: Int, $ok: Boolean) { typed(where: {i: {_eq: $i}, b: {_eq: $ok}}) { id } }', { i: '2147483647', ok: 'true' })).toEqual({
      data: { typed: [{ id: 1 }] },
    });
    const ins = await server.gql('mutation ($i: Int!) { insert_typed_one(object: {i: $i}) { i } }', { i: '7' });
    expect(ins).toEqual({ data: { insert_typed_one: { i: 7 } } });
    // Numbers still go through as numbers.
    expect(await server.gql('query ($id: Int!) { typed_by_pk(id: $id) { id } }', { id: 2 })).toEqual({ data: { typed_by_pk: { id: 2 } } });
    // $n is also a limit: coerced as an Int, so the string is refused.
    const both = await server.gql('query ($n: Int) { typed(where: {i: {_eq: $n}}, limit: $n) { id } }', { n: '7' });
    expect(both.errors[0].extensions.code).toBe('validation-failed');
    const isNull = await server.gql('query ($x: Boolean) { typed(where: {b: {_is_null: $x}}) { id } }', { x: 'false' });
    expect(isNull.errors[0].extensions.code).toBe('validation-failed');
    // A list variable is checked as a list.
    const list = await server.gql('query ($l: [Int!]) { typed(where: {i: {_in: $l}}) { id } }', { l: ['7'] });
    expect(list.errors[0].extensions.code).toBe('validation-failed');
    await server.sql`delete from typed where i = 7`;
  });
});

describe('scalar computed fields with --stringify-numeric-types', () => {
  const server = useServer(SEED, { config: { stringifyNumericTypes: true } });
  beforeAll(async () => {
    const r = await server.metadata({
      type: 'bulk',
      args: [{ type: 'pg_track_table', args: { table: 'doc' } }, { type: 'pg_add_computed_field', args: { table: 'doc', name: 'twice', definition: { function: 'twice' } } }],
    });
    expect(r.status, r.text).toBe(200);
  });

  it('give a double precision result as a string, as the columns of the type', async () => {
    expect(await server.gql('{ doc { d twice n } }')).toEqual({ data: { doc: [{ d: '2.5', twice: '5', n: '1.5' }] } });
  });
});
