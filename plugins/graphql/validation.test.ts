/** Validation by the engine's rules (./prepare.ts RULES) against the schemas the kernel assembles
 * (core/schema/assembly.ts): lazy query schemas, text literals. Without a server. */
import { describe, expect, it } from 'vitest';
import { GraphQLBoolean, GraphQLInputObjectType, GraphQLInt, GraphQLList, GraphQLObjectType, GraphQLString, parse, validate, type GraphQLFieldConfigMap } from 'graphql';
import type { RootFieldDef } from '../../core/plugin.js';
import { roleSchema } from '../../core/schema/assembly.js';
import { build, contributor, field } from '../../test/schema-fixtures.js';
import { prepare, RULES } from './prepare.js';


// The engine's rules (./prepare.ts): graphql-js's KnownTypeNamesRule would list every type.
describe('role schema validated by the engine', () => {
  it('a query is validated against a lazy schema of the query root: no mutation root made, no type fields made off its paths (Note [Lazy query schemas])', () => {
    let mutations = 0;
    const resolved: string[] = [];
    const input = new GraphQLInputObjectType({ name: 'thing_input', fields: () => (resolved.push('thing_input'), { a: { type: GraphQLInt } }) });
    const obj = (name: string) => new GraphQLObjectType({ name, fields: () => (resolved.push(name), { id: { type: GraphQLInt } }) });
    const c = contributor('a', (_r, types) => {
      const [one, two] = [types.define(obj('one')), types.define(obj('two'))];
      return { query: { one: field(one), two: field(two) }, mutation: () => (mutations++, { make: field(GraphQLString, { x: { type: types.define(input) } }) }) };
    });
    const rs = roleSchema('admin', build(), [c]);
    const lazy = rs.schemaFor('query', false);
    expect(rs.schemaFor('query', false)).toBe(lazy);
    expect(lazy.getMutationType()).toBeUndefined();
    expect(validate(lazy, parse('query ($n: Int) { one { id } }'), RULES)).toEqual([]);
    expect(validate(lazy, parse('{ one { nope } }'), RULES).map((e) => e.message)).toEqual(['Cannot query field "nope" on type "one".']);
    expect(resolved).toEqual(['one']);
    expect(mutations).toBe(0);
    // A name the registry does not have yet goes to the full schema, which has every root.
    expect(validate(lazy, parse('query ($x: thing_input) { one { id } }'), RULES)).toEqual([]);
    expect(mutations).toBe(1);
    expect(validate(lazy, parse('query ($x: thin_input) { one { id } }'), RULES).map((e) => e.message)).toEqual(['Unknown type "thin_input". Did you mean "thing_input"?']);
    expect(rs.schemaFor('query', true).getMutationType()?.name).toBe('mutation_root');
    expect(mutations).toBe(1);
  });

  it('a mutation or a subscription is validated against a lazy schema of its root and the query root: the other root not made, no type fields made off its paths (Note [Lazy query schemas])', () => {
    let subscriptions = 0;
    let mutations = 0;
    const resolved: string[] = [];
    const obj = (name: string) => new GraphQLObjectType({ name, fields: () => (resolved.push(name), { id: { type: GraphQLInt } }) });
    const c = contributor('a', (_r, types) => {
      const [one, two, three] = [types.define(obj('one')), types.define(obj('two')), types.define(obj('three'))];
      return {
        query: { one: field(one) },
        mutation: () => (mutations++, { make: field(two, { x: { type: GraphQLInt } }), other: field(three) }),
        subscription: () => (subscriptions++, { watch: field(one) }),
      };
    });
    const rs = roleSchema('admin', build(), [c]);
    const doc = parse('mutation ($x: Int) { make(x: $x) { id } }');
    const lazy = rs.schemaFor('mutation', false, doc);
    expect(lazy).not.toBe(rs.schemaFor('query', false));
    expect(rs.schemaFor('mutation', false)).toBe(lazy);
    expect(lazy.getMutationType()?.name).toBe('mutation_root');
    expect(lazy.getSubscriptionType()).toBeUndefined();
    expect(validate(lazy, doc, RULES)).toEqual([]);
    expect(validate(lazy, parse('mutation { make(y: 1) { id } }'), RULES).map((e) => e.message)).toEqual(['Unknown argument "y" on field "mutation_root.make". Did you mean "x"?']);
    expect(validate(lazy, parse('mutation { nope }'), RULES).map((e) => e.message)).toEqual(['Cannot query field "nope" on type "mutation_root".']);
    expect(resolved).toEqual(['two']);
    expect([mutations, subscriptions]).toEqual([1, 0]);
    const sub = parse('subscription { watch { id } }');
    expect(validate(rs.schemaFor('subscription', false, sub), sub, RULES)).toEqual([]);
    expect(rs.schemaFor('subscription', false).getMutationType()).toBeUndefined();
    expect(resolved).toEqual(['two', 'one']);
    expect([mutations, subscriptions]).toEqual([1, 1]);
    // The full schema is another, with every root.
    expect(rs.schema).not.toBe(lazy);
    expect(Object.keys(rs.schema.getMutationType()!.getFields())).toEqual(['make', 'other']);
  });

  it('a root field\'s definition (type, arguments) is read only when a document selects it, or the whole schema is built (Note [Lazy query schemas])', () => {
    const read: string[] = [];
    const lazyField = (name: string): RootFieldDef => ({
      get config() {
        read.push(name);
        return { type: GraphQLInt, args: { n: { type: GraphQLInt } } };
      },
      plan: () => ({ run: async () => 'null' }),
    });
    const c = contributor('a', () => ({ query: Object.fromEntries(['a', 'b', 'c'].map((n) => [n, lazyField(n)])) }));
    const rs = roleSchema('admin', build(), [c]);
    expect([...rs.roots.query.keys()]).toEqual(['a', 'b', 'c']);
    const lazy = rs.schemaFor('query', false);
    expect(validate(lazy, parse('{ b(n: 1) }'), RULES)).toEqual([]);
    expect(validate(lazy, parse('{ b(m: 1) }'), RULES).map((e) => e.message)).toEqual(['Unknown argument "m" on field "query_root.b". Did you mean "n"?']);
    expect(read).toEqual(['b']);
    expect(Object.keys(rs.schema.getQueryType()!.getFields())).toEqual(['a', 'b', 'c']);
    expect(read.sort()).toEqual(['a', 'b', 'c']);
  });

  /** As the database's root fields: a field's type and argument types made when first read;
   * `mutations` counts the builds of the full schema (the only reader of the mutation root). */
  const lazyRoots = () => {
    const seen = { mutations: 0, made: [] as string[] };
    const c = contributor('a', (_r, types) => {
      const root = (name: string): RootFieldDef => {
        let config: RootFieldDef['config'] | undefined;
        return {
          get config() {
            if (!config) {
              seen.made.push(name);
              const filter = types.define(new GraphQLInputObjectType({ name: `${name}_filter`, fields: { id: { type: GraphQLInt } } }));
              const row = types.define(new GraphQLObjectType({ name: `${name}_row`, fields: { id: { type: GraphQLInt } } }));
              config = { type: new GraphQLList(row), args: { where: { type: filter } } };
            }
            return config;
          },
          plan: () => ({ run: async () => 'null' }),
        };
      };
      return { query: { a: root('a'), b: root('b'), c: root('c') }, mutation: () => (seen.mutations++, { m: field(GraphQLInt) }) };
    });
    return { rs: roleSchema('admin', build(), [c]), seen };
  };

  it('the types on a document\'s paths are made before its variables\' and fragments\' type names are looked up, which then need no full schema (Note [Lazy query schemas])', () => {
    const { rs, seen } = lazyRoots();
    const ok = (q: string) => {
      const doc = parse(q);
      expect(validate(rs.schemaFor('query', false, doc), doc, RULES)).toEqual([]);
    };
    // A variable's type, declared before the selection that reaches it.
    ok('query ($w: a_filter) { a(where: $w) { id } }');
    // A fragment defined before the operation, and an inline fragment.
    ok('fragment F on b_row { id } query { b { ...F ... on b_row { id } } }');
    expect(seen.made).toEqual(['a', 'b']);
    expect(seen.mutations).toBe(0);
    // A name on none of the document's paths goes to the full schema, which has every root.
    const doc = parse('query ($w: c_filter) { a(where: $w) { id } }');
    expect(validate(rs.schemaFor('query', false, doc), doc, RULES).map((e) => e.message)).toEqual(['Variable "$w" of type "c_filter" used in position expecting type "a_filter".']);
    expect(seen.mutations).toBe(1);
  });

  it('prepare has the paths of a document with variables or fragments made before validating it (Note [Lazy query schemas])', () => {
    const { rs, seen } = lazyRoots();
    const b = build();
    for (const q of ['query ($w: a_filter) { a(where: $w) { id } }', 'fragment F on b_row { id } query { b { ...F } }', '{ c { ... on c_row { id } } }']) {
      const p = prepare(q, undefined, rs, b);
      expect('error' in p ? p.error : undefined).toBeUndefined();
    }
    expect(seen.made).toEqual(['a', 'b', 'c']);
    expect(seen.mutations).toBe(0);
  });
});

describe('Note [Text literals at marked positions]', () => {
  const input = new GraphQLInputObjectType({
    name: 'row_input',
    fields: { n: { type: GraphQLInt, extensions: { textLiteral: true } }, plain: { type: GraphQLInt }, flag: { type: GraphQLBoolean, extensions: { textLiteral: true } } },
  });
  const c = contributor('t', () => ({
    query: { f: field(GraphQLString, { row: { type: input }, ids: { type: new GraphQLList(GraphQLInt), extensions: { textLiteral: true } }, limit: { type: GraphQLInt } }) },
  }));
  const errors = (q: string) => validate(roleSchema('user', build(), [c]).schemaFor('query', false), parse(q), RULES).map((e) => e.message);

  it('a marked input field or argument takes a string literal (and a list of them) for its scalar', () => {
    expect(errors('{ f(row: {n: "12", flag: "true"}, ids: ["1", "2"]) }')).toEqual([]);
  });

  it('unmarked positions, other kinds of values and unknown fields are checked as graphql-js checks them', () => {
    expect(errors('{ f(row: {plain: "12"}) }')).toEqual(['Int cannot represent non-integer value: "12"']);
    expect(errors('{ f(limit: "1") }')).toEqual(['Int cannot represent non-integer value: "1"']);
    expect(errors('{ f(row: {n: 1.5}) }')).toEqual(['Int cannot represent non-integer value: 1.5']);
    expect(errors('{ f(row: {nope: 1}) }')).toEqual(['Field "nope" is not defined by type "row_input".']);
    // A string that is not a value of the scalar gets graphql-js's error at a marked position too.
    expect(errors('{ f(row: {n: "12a", flag: "yes"}) }')).toEqual(['Int cannot represent non-integer value: "12a"', 'Boolean cannot represent a non boolean value: "yes"']);
  });
});
