/** Note [Variable positions ignore item nullability]: Hasura's check of variable positions. */
import { buildSchema, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { RULES } from './prepare.js';

const schema = buildSchema(`
  type Query {
    list(a: [String!]): Int
    listReq(a: [String!]!): Int
    nested(a: [[Int!]!]): Int
    one(a: Int!): Int
    opt(a: Int): Int
    withDefault(a: Int! = 1): Int
  }
`);
const errors = (q: string) => validate(schema, parse(q), RULES).map((e) => e.message);

describe('variable positions (Hasura)', () => {
  it('item nullability is ignored, at any depth', () => {
    expect(errors('query ($a: [String]) { list(a: $a) }')).toEqual([]);
    expect(errors('query ($a: [String]!) { listReq(a: $a) }')).toEqual([]);
    expect(errors('query ($a: [[Int]]) { nested(a: $a) }')).toEqual([]);
    expect(errors('query ($a: [String!]!) { list(a: $a) }')).toEqual([]);
  });

  it('the outermost nullability counts, defaults as in the spec', () => {
    expect(errors('query ($a: [String]) { listReq(a: $a) }')).toEqual(['Variable "$a" of type "[String]" used in position expecting type "[String!]!".']);
    expect(errors('query ($a: Int) { one(a: $a) }')).toEqual(['Variable "$a" of type "Int" used in position expecting type "Int!".']);
    expect(errors('query ($a: Int = 3) { one(a: $a) }')).toEqual([]);
    expect(errors('query ($a: Int) { withDefault(a: $a) }')).toEqual([]);
    expect(errors('query ($a: Int!) { opt(a: $a) }')).toEqual([]);
  });

  it('types and list depth must match', () => {
    expect(errors('query ($a: String) { opt(a: $a) }')).toEqual(['Variable "$a" of type "String" used in position expecting type "Int".']);
    expect(errors('query ($a: String) { list(a: $a) }')).toEqual(['Variable "$a" of type "String" used in position expecting type "[String!]".']);
    expect(errors('query ($a: [Int]) { nested(a: $a) }')).toEqual(['Variable "$a" of type "[Int]" used in position expecting type "[[Int!]!]".']);
    expect(errors('query ($a: [Int]) { opt(a: $a) }')).toEqual(['Variable "$a" of type "[Int]" used in position expecting type "Int".']);
  });
});
