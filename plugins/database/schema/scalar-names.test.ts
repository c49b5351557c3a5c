/**
 * PostgreSQL types as Hasura names their GraphQL scalars (its mkScalarTypeName): integer, real,
 * boolean, text and varchar are GraphQL's Int, Float, Boolean and String; every other type is
 * the scalar Hasura prints for it: smallint, bigint, float8, numeric, ... (issue 6).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const server = useServer(`
create table scalars (id int primary key, s smallint, b bigint, r real, d double precision, n numeric, t text, v varchar(10), c char(2), ok boolean, u uuid, ts timestamptz);
insert into scalars values (1, 32767, 9007199254740993, 1.5, 2.25, 3.125, 'x', 'y', 'zz', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2020-01-01T00:00:00Z');
`);

beforeAll(async () => {
  expect((await server.metadata({ type: 'pg_track_table', args: { table: 'scalars' } })).status).toBe(200);
});

describe('scalar names', () => {
  it('are Hasura\'s in the object type and the comparison expressions', async () => {
    const r = await server.gql('{ __type(name: "scalars") { fields { name type { name ofType { name } } } } }');
    const types = Object.fromEntries(r.data.__type.fields.map((f: any) => [f.name, f.type.name ?? f.type.ofType.name]));
    expect(types).toEqual({ id: 'Int', s: 'smallint', b: 'bigint', r: 'Float', d: 'float8', n: 'numeric', t: 'String', v: 'String', c: 'bpchar', ok: 'Boolean', u: 'uuid', ts: 'timestamptz' });
    const exp = await server.gql('{ __type(name: "scalars_bool_exp") { inputFields { name type { name } } } }');
    const comparisons = Object.fromEntries(exp.data.__type.inputFields.map((f: any) => [f.name, f.type.name]));
    expect(comparisons).toMatchObject({ s: 'smallint_comparison_exp', b: 'bigint_comparison_exp', d: 'float8_comparison_exp', r: 'Float_comparison_exp', id: 'Int_comparison_exp' });
  });

  it('take their values: a smallint, bigint or float8 literal, as a number or a string', async () => {
    const r = await server.gql('{ scalars(where: {s: {_eq: "32767"}, b: {_eq: 9007199254740993}, d: {_gt: 2}}) { s b d } }');
    expect(r).toEqual({ data: { scalars: [{ s: 32767, b: 9007199254740993, d: 2.25 }] } });
    const v = await server.gql('query ($s: smallint, $d: float8) { scalars(where: {s: {_eq: $s}, d: {_eq: $d}}) { id } }', { s: 32767, d: '2.25' });
    expect(v).toEqual({ data: { scalars: [{ id: 1 }] } });
  });
});
