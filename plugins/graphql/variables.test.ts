/**
 * Note [Coercing valid variables]: `coerceValid` gives graphql-js's values for valid variables
 * and gives up exactly where graphql-js's getVariableValues reports an error, on generated
 * values (mostly of the declared types, some anything) for operations over lists, non-null
 * types, nested input objects with field defaults, enums, custom and built-in scalars and
 * variable defaults. The engine's use of it against real PostgreSQL is in
 * plugins/database/schema/variables.test.ts.
 */
import fc from 'fast-check';
import { buildSchema, getNamedType, getNullableType, getVariableValues, isEnumType, isInputObjectType, isListType, isNonNullType, isScalarType, parse, type GraphQLInputType, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { coerceValid, operationVariables } from './variables.js';

const schema = buildSchema(`
  scalar jsonb
  enum color { red green blue }
  input point { x: Int!, y: Int = 7, label: String }
  input row { id: ID, name: String!, price: Float, ok: Boolean, tint: color = green, at: point, points: [point!], tags: [String], data: jsonb }
  type Query { f(a: Int, b: [row!], c: row, d: [[Int!]], e: color, g: jsonb, h: String, i: Float, j: Boolean, k: ID): Int }
`);

const OPERATIONS = [
  'query ($a: Int, $b: [row!]!, $c: row) { f(a: $a, b: $b, c: $c) }',
  'query ($d: [[Int!]], $e: color = blue, $g: jsonb) { f(d: $d, e: $e, g: $g) }',
  'query ($h: String = "x", $i: Float!, $j: Boolean, $k: ID, $c: row = {name: "n", at: {x: 1}}) { f(h: $h, i: $i, j: $j, k: $k, c: $c) }',
  'query ($b: [row!] = [{name: "a"}, {name: "b", tint: red}], $a: Int!) { f(a: $a, b: $b) }',
];

/** Mostly `valid`, now and then `invalid`. */
const mostly = (valid: fc.Arbitrary<unknown>, invalid: fc.Arbitrary<unknown>) => fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: invalid });

/** A value of `type`, or now and then anything JSON. */
function valueOf(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  const any = fc.jsonValue({ maxDepth: 2 });
  return fc.oneof({ weight: 30, arbitrary: typed(type, depth) }, { weight: 1, arbitrary: any }, { weight: 2, arbitrary: fc.constant(null) });
}

function typed(type: GraphQLInputType, depth: number): fc.Arbitrary<unknown> {
  const t = getNullableType(type) as GraphQLInputType;
  if (isListType(t)) {
    const item = valueOf(t.ofType, depth + 1);
    return depth > 3 ? fc.constant([]) : fc.oneof(fc.array(item, { maxLength: 4 }), item);
  }
  if (isInputObjectType(t)) {
    if (depth > 3) return fc.constant({});
    const fields = Object.values(t.getFields());
    const entries = fields.map((f) => fc.option(valueOf(f.type, depth + 1).map((v) => [f.name, v] as const), { nil: undefined, freq: 3 }));
    // Fields in a shuffled order, sometimes with one the type does not have.
    return fc.tuple(fc.tuple(...entries), fc.boolean(), fc.array(fc.nat(), { minLength: fields.length, maxLength: fields.length }), fc.integer({ min: 0, max: 29 })).map(([es, order, ranks, extra]) => {
      const kept = es.filter((e): e is readonly [string, unknown] => e !== undefined);
      if (order) kept.sort((a, b) => ranks[fields.findIndex((f) => f.name === a[0])]! - ranks[fields.findIndex((f) => f.name === b[0])]!);
      const o = Object.fromEntries(kept);
      if (extra === 0) o.nope = 1;
      return o;
    });
  }
  if (isEnumType(t)) return mostly(fc.constantFrom('red', 'green', 'blue'), fc.constantFrom('RED', 'purple', 1));
  const name = isScalarType(getNamedType(t)) ? getNamedType(t).name : '';
  switch (name) {
    case 'Int':
      return mostly(fc.integer(), fc.constantFrom(2 ** 31, 1.5, '3'));
    case 'Float':
      return mostly(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer()), fc.constantFrom('1.5', true));
    case 'String':
      return mostly(fc.string(), fc.oneof(fc.integer(), fc.boolean()));
    case 'ID':
      return mostly(fc.oneof(fc.string(), fc.integer()), fc.oneof(fc.double(), fc.boolean()));
    case 'Boolean':
      return mostly(fc.boolean(), fc.constantFrom('true', 0));
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

describe('coerceValid (Note [Coercing valid variables])', () => {
  for (const text of OPERATIONS) {
    it(`agrees with getVariableValues: ${text}`, () => {
      const op = parse(text).definitions[0] as OperationDefinitionNode;
      const known = operationVariables(schema, op);
      const defs = op.variableDefinitions ?? [];
      const types = defs.map((d) => [d.variable.name.value, known.defs!.find((x) => x.name === d.variable.name.value)!.type] as const);
      const vars = fc.tuple(...types.map(([name, type]) => fc.option(valueOf(type).map((v) => [name, v] as const), { nil: undefined, freq: 4 }))).map((es) => Object.fromEntries(es.filter((e) => e !== undefined) as [string, unknown][]));
      let valid = 0;
      fc.assert(
        fc.property(vars, (v) => {
          const ours = coerceValid(known, v);
          const theirs = getVariableValues(schema, defs, v, { maxErrors: 1 });
          if (theirs.errors) {
            expect(ours).toBeUndefined();
            return;
          }
          valid++;
          // The same values, keys in the same order.
          expect(ours).toBeDefined();
          expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs.coerced));
        }),
        { numRuns: 3000 },
      );
      // The generator reaches both sides. 30 draws of 3,000 per operation gave 111..162 valid
      // values on the first (the fewest), 2,233..2,323 on the second (the most).
      expect(valid).toBeGreaterThan(50);
      expect(valid).toBeLessThan(2900);
    });
  }

  it('a non-null type, absent or null; a default filled in; a list of one', () => {
    const op = parse(OPERATIONS[2]!).definitions[0] as OperationDefinitionNode;
    const known = operationVariables(schema, op);
    expect(coerceValid(known, {})).toBeUndefined();
    expect(coerceValid(known, { i: null })).toBeUndefined();
    expect(coerceValid(known, { i: 2, c: { name: 'm', points: { x: 3 } } })).toEqual({ h: 'x', i: 2, c: { name: 'm', tint: 'green', points: [{ x: 3, y: 7 }] } });
    expect(isNonNullType(known.defs![1]!.type)).toBe(true);
  });
});
