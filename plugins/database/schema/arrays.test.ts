/**
 * PostgreSQL array columns as GraphQL lists, as Hasura v2.29+ exposes them (Note [Array columns]
 * in plugins/postgres/dialect.ts): `text[]` is `[String!]` in object types, insert and set inputs,
 * and `String_array_comparison_exp`; values are JSON arrays both ways, bound as parameters.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table doc (
  id serial primary key,
  tags text[] not null default '{}',
  nums int[],
  grid integer[][]
);
create type mood as enum ('happy', 'sad');
create type pair as (a int, b text);
create table extra (id serial primary key, moods mood[], pairs pair[], days date[]);
create function docs_with_any(wanted text[]) returns setof doc language sql stable as $$ select * from doc where tags && wanted $$;
create function doc_upper_tags(d doc) returns text[] language sql stable as $$ select array(select upper(x) from unnest(d.tags) as x) $$;
`;

const RESET = `
delete from doc; select setval('doc_id_seq', 1, false);
insert into doc (tags, nums, grid) values ('{a,b}', '{1,2,3}', '{{1,2},{3,4}}'), ('{b,"c d"}', null, null), ('{}', '{5,NULL}', null);
`;

const server = useServer(SEED);
const q = (query: string, variables?: Record<string, unknown>) => server.gql(query, variables);

async function rows(): Promise<any[]> {
  const r = await server.runSql(`select coalesce(json_agg(t order by t.id), '[]')::text from (select id, tags, nums, grid from doc) as t`);
  return JSON.parse(r.result[1][0]);
}

/** A type reference of introspection, printed (`[String!]!`). */
function printType(t: any): string {
  if (t.kind === 'NON_NULL') return `${printType(t.ofType)}!`;
  if (t.kind === 'LIST') return `[${printType(t.ofType)}]`;
  return t.name;
}
const TYPE_REF = 'type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }';

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'doc' } },
      { type: 'pg_track_table', args: { table: 'extra' } },
      { type: 'pg_track_function', args: { function: 'docs_with_any' } },
      { type: 'pg_add_computed_field', args: { table: 'doc', name: 'upper_tags', definition: { function: 'doc_upper_tags' } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

beforeEach(async () => {
  await server.runSql(RESET);
});

describe('array columns: types', () => {
  it('are lists of their element scalar, items non-null, in output, inputs and comparisons', async () => {
    const r = await q(`{
      o: __type(name: "doc") { fields { name ${TYPE_REF} } }
      i: __type(name: "doc_insert_input") { inputFields { name ${TYPE_REF} } }
      s: __type(name: "doc_set_input") { inputFields { name ${TYPE_REF} } }
      b: __type(name: "doc_bool_exp") { inputFields { name ${TYPE_REF} } }
      c: __type(name: "String_array_comparison_exp") { description inputFields { name ${TYPE_REF} } }
      old: __type(name: "_text") { name }
    }`);
    const fields = (list: any[]) => Object.fromEntries(list.map((f) => [f.name, printType(f.type)]));
    expect(fields(r.data.o.fields)).toEqual({ grid: '[Int!]', id: 'Int!', nums: '[Int!]', tags: '[String!]!', upper_tags: '[String!]' });
    expect(fields(r.data.i.inputFields)).toEqual({ grid: '[Int!]', id: 'Int', nums: '[Int!]', tags: '[String!]' });
    expect(fields(r.data.s.inputFields)).toEqual({ grid: '[Int!]', id: 'Int', nums: '[Int!]', tags: '[String!]' });
    expect(fields(r.data.b.inputFields)).toMatchObject({ tags: 'String_array_comparison_exp', nums: 'Int_array_comparison_exp', grid: 'Int_array_comparison_exp' });
    expect(r.data.c.description).toBe(`Boolean expression to compare columns of type "String". All fields are combined with logical 'AND'.`);
    expect(fields(r.data.c.inputFields)).toEqual({
      _contained_in: '[String!]',
      _contains: '[String!]',
      _eq: '[String!]',
      _gt: '[String!]',
      _gte: '[String!]',
      _in: '[[String!]!]',
      _is_null: 'Boolean',
      _lt: '[String!]',
      _lte: '[String!]',
      _neq: '[String!]',
      _nin: '[[String!]!]',
    });
    expect(r.data.old).toBeNull();
  });
});

describe('array columns: values', () => {
  it('select returns JSON arrays (NULL elements, multi-dimensional arrays as nested lists)', async () => {
    expect(await q('{ doc(order_by: {id: asc}) { id tags nums grid } }')).toEqual({
      data: {
        doc: [
          { id: 1, tags: ['a', 'b'], nums: [1, 2, 3], grid: [[1, 2], [3, 4]] },
          { id: 2, tags: ['b', 'c d'], nums: null, grid: null },
          { id: 3, tags: [], nums: [5, null], grid: null },
        ],
      },
    });
  });

  it('insert with a literal list, and elements with quotes, commas, braces, backslashes and NULL stored verbatim', async () => {
    const nasty = ['a,b', 'q"uote', "it's", 'back\\slash', '{x}', 'NULL', '', ' sp ', "'); drop table doc; --"];
    const r = await q(
      `mutation { insert_doc_one(object: {tags: ${JSON.stringify(nasty)}, nums: [7, -8], grid: [1, 2]}) { id tags nums grid } }`,
    );
    expect(r).toEqual({ data: { insert_doc_one: { id: 4, tags: nasty, nums: [7, -8], grid: [1, 2] } } });
    expect((await rows())[3]).toEqual({ id: 4, tags: nasty, nums: [7, -8], grid: [1, 2] });
  });

  it('insert through a variable; a variable declared with nullable items may carry NULL elements', async () => {
    const r = await q('mutation ($t: [String!]!, $n: [Int]) { insert_doc(objects: [{tags: $t, nums: $n}]) { returning { id tags nums } } }', {
      t: ['x', 'y"z', '\\'],
      n: [1, null, 3],
    });
    expect(r).toEqual({ data: { insert_doc: { returning: [{ id: 4, tags: ['x', 'y"z', '\\'], nums: [1, null, 3] }] } } });
    expect((await rows())[3]).toEqual({ id: 4, tags: ['x', 'y"z', '\\'], nums: [1, null, 3], grid: null });
  });

  it('a whole insert object as a variable, with an empty list and a null array', async () => {
    const r = await q('mutation ($o: doc_insert_input!) { insert_doc_one(object: $o) { tags nums } }', { o: { tags: [], nums: null } });
    expect(r).toEqual({ data: { insert_doc_one: { tags: [], nums: null } } });
  });

  it('the old array literal string is still accepted where the element scalar takes a string', async () => {
    const r = await q('mutation { insert_doc_one(object: {tags: "{p,\\"q r\\",NULL}"}) { tags } }');
    expect(r).toEqual({ data: { insert_doc_one: { tags: ['p', 'q r', null] } } });
    // An Int list takes no string: GraphQL validation refuses it (Note [Array columns]).
    const g = await q('mutation { insert_doc_one(object: {tags: [], grid: "{{5,6},{7,8}}"}) { grid } }');
    expect(g.errors[0].extensions.code).toBe('validation-failed');
  });

  it('update _set, literal and variable', async () => {
    expect(await q('mutation { update_doc_by_pk(pk_columns: {id: 2}, _set: {tags: ["n", "o,p"], nums: []}) { tags nums } }')).toEqual({
      data: { update_doc_by_pk: { tags: ['n', 'o,p'], nums: [] } },
    });
    expect(await q('mutation ($s: doc_set_input!) { update_doc(where: {id: {_eq: 1}}, _set: $s) { affected_rows returning { tags nums } } }', { s: { nums: null, tags: ['z'] } })).toEqual({
      data: { update_doc: { affected_rows: 1, returning: [{ tags: ['z'], nums: null }] } },
    });
    expect((await rows()).map((r) => [r.id, r.tags, r.nums])).toEqual([
      [1, ['z'], null],
      [2, ['n', 'o,p'], []],
      [3, [], [5, null]],
    ]);
  });

  it('where _eq, _neq, _contains, _contained_in, _in, _nin, _is_null, _gt', async () => {
    const ids = async (where: string, variables?: Record<string, unknown>, decl = '') =>
      ((await q(`query ${decl} { doc(where: ${where}, order_by: {id: asc}) { id } }`, variables)).data?.doc ?? []).map((d: any) => d.id);
    expect(await ids('{tags: {_eq: ["a", "b"]}}')).toEqual([1]);
    expect(await ids('{tags: {_neq: ["a", "b"]}}')).toEqual([2, 3]);
    expect(await ids('{tags: {_contains: ["b"]}}')).toEqual([1, 2]);
    expect(await ids('{tags: {_contains: ["c d"]}}')).toEqual([2]);
    expect(await ids('{tags: {_contained_in: ["a", "b", "z"]}}')).toEqual([1, 3]);
    expect(await ids('{nums: {_contains: [2, 3]}}')).toEqual([1]);
    expect(await ids('{tags: {_in: [["a", "b"], ["b", "c d"]]}}')).toEqual([1, 2]);
    expect(await ids('{tags: {_nin: [["a", "b"]]}}')).toEqual([2, 3]);
    expect(await ids('{nums: {_is_null: true}}')).toEqual([2]);
    expect(await ids('{tags: {_gt: ["a", "c"]}}')).toEqual([2]);
    expect(await ids('{tags: {_contains: $t}}', { t: ['a'] }, '($t: [String!])')).toEqual([1]);
    expect(await ids('{tags: {_in: $l}}', { l: [['b', 'c d'], []] }, '($l: [[String!]!])')).toEqual([2, 3]);
    expect(await ids('{tags: {_eq: $t}}', { t: [] }, '($t: [String!])')).toEqual([3]);
    // Injection attempts in an element are data.
    expect(await ids(`{tags: {_contains: ["') or true; --", "\\"}"]}}`)).toEqual([]);
  });

  it('a wrong element type is a validation error in Hasura shape, not a 500', async () => {
    const r = await q('mutation { insert_doc_one(object: {nums: ["x"]}) { id } }');
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].extensions.code).toBe('validation-failed');
    const v = await q('mutation ($n: [Int!]) { insert_doc_one(object: {nums: $n}) { id } }', { n: [1, 'two'] });
    expect(v.errors[0].extensions.code).toBe('validation-failed');
    const w = await q('{ doc(where: {nums: {_contains: [true]}}) { id } }');
    expect(w.errors[0].extensions.code).toBe('validation-failed');
    expect(await rows()).toHaveLength(3);
  });
});

describe('arrays of enums, dates and row types', () => {
  it('enum and date arrays are lists of their scalar; an array of a row type stays an opaque scalar', async () => {
    const r = await q(`{ o: __type(name: "extra") { fields { name ${TYPE_REF} } } }`);
    expect(Object.fromEntries(r.data.o.fields.map((f: any) => [f.name, printType(f.type)]))).toEqual({ days: '[date!]', id: 'Int!', moods: '[mood!]', pairs: '_pair' });
    const ins = await q('mutation { insert_extra_one(object: {moods: ["sad", "happy"], days: ["2024-02-29"], pairs: "{\\"(1,x y)\\"}"}) { moods days pairs } }');
    expect(ins).toEqual({ data: { insert_extra_one: { moods: ['sad', 'happy'], days: ['2024-02-29'], pairs: [{ a: 1, b: 'x y' }] } } });
    expect(await q('{ extra(where: {moods: {_contains: ["sad"]}}) { days } }')).toEqual({ data: { extra: [{ days: ['2024-02-29'] }] } });
    const bad = await q('mutation { insert_extra_one(object: {moods: ["angry"]}) { id } }');
    expect(bad.errors[0].extensions.code).toBe('data-exception');
  });
});

describe('array arguments and results of functions', () => {
  it('a function argument is a list, bound as an array; a computed field returning an array is a list', async () => {
    const t = await q(`{ a: __type(name: "docs_with_any_args") { inputFields { name ${TYPE_REF} } } d: __type(name: "doc") { fields { name ${TYPE_REF} } } }`);
    expect(t.data.a.inputFields.map((f: any) => [f.name, printType(f.type)])).toEqual([['wanted', '[String!]']]);
    expect(t.data.d.fields.find((f: any) => f.name === 'upper_tags').type.kind).toBe('LIST');
    expect(await q('{ docs_with_any(args: {wanted: ["c d", "x\\\\"]}, order_by: {id: asc}) { id upper_tags } }')).toEqual({ data: { docs_with_any: [{ id: 2, upper_tags: ['B', 'C D'] }] } });
    expect(await q('query ($w: [String!]) { docs_with_any(args: {wanted: $w}, order_by: {id: asc}) { id } }', { w: ['a', 'b'] })).toEqual({ data: { docs_with_any: [{ id: 1 }, { id: 2 }] } });
  });
});

describe('array columns: legacy /v1/query', () => {
  it('insert and select with JSON arrays', async () => {
    const ins = await server.query({ type: 'insert', args: { table: 'doc', objects: [{ tags: ['l', 'm,"n'], nums: [9] }], returning: ['id', 'tags', 'nums'] } });
    expect(ins.body).toEqual({ affected_rows: 1, returning: [{ id: 4, tags: ['l', 'm,"n'], nums: [9] }] });
    const sel = await server.query({ type: 'select', args: { table: 'doc', columns: ['id', 'tags'], where: { tags: { $contains: ['m,"n'] } } } });
    expect(sel.body).toEqual([{ id: 4, tags: ['l', 'm,"n'] }]);
  });
});
