/**
 * Golden tests of how column values come out and go in, in corners Hasura's suite checks: the
 * `path` argument of json/jsonb columns ("JSON select path"), money given in exponent notation,
 * a LIKE pattern ending in the escape character (Hasura: `bad-request`), and scalar computed
 * fields under `--stringify-numeric-types`.
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
