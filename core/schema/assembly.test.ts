/** The role schema and its type registry (./assembly.ts, ./registry.ts), without a server. */
import { describe, expect, it } from 'vitest';
import { GraphQLInputObjectType, GraphQLInt, GraphQLObjectType, GraphQLString, parse, validate, type GraphQLFieldConfigMap } from 'graphql';
import { roleSchema } from './assembly.js';
import { isEmpty, RootFieldLookup } from './contract.js';
import { build, contributor, field } from '../../test/schema-fixtures.js';


/** The owner of `point`, taking other plugins' fields the documented way. */
const owner = (own: GraphQLFieldConfigMap<unknown, unknown> = { x: { type: GraphQLInt } }) =>
  contributor('tables', (_r, types) => {
    const point = types.define(new GraphQLObjectType({ name: 'point', fields: () => ({ ...types.extensions('point'), ...own }) }));
    return { query: { point: field(point) } };
  });

describe('role schema', () => {
  it('is built once per role and build, and a new build drops it', () => {
    let calls = 0;
    const c = contributor('a', () => (calls++, { query: { hello: field(GraphQLString) } }));
    const b = build();
    const s1 = roleSchema('user', b, [c]);
    expect(roleSchema('user', b, [c])).toBe(s1);
    expect(calls).toBe(1);
    roleSchema('admin', b, [c]);
    expect(calls).toBe(2);
    expect(roleSchema('user', build(), [c])).not.toBe(s1);
    expect(calls).toBe(3);
  });

  it('has the no_queries_available placeholder when a role has no query fields', () => {
    const rs = roleSchema('nobody', build(), [contributor('a', () => ({}))]);
    expect(Object.keys(rs.schema.getQueryType()!.getFields())).toEqual(['no_queries_available']);
    expect(rs.schema.getMutationType()).toBeUndefined();
  });

  it('lists root fields by name, whatever plugin gave them and in what order (as Hasura)', () => {
    const a = contributor('a', () => ({ query: { user: field(GraphQLString), user_by_pk: field(GraphQLString) }, mutation: { update_b: field(GraphQLString), delete_b: field(GraphQLString) } }));
    const b = contributor('b', () => ({ query: { multi: field(GraphQLString), User: field(GraphQLString), single_aggregate: field(GraphQLString) } }));
    const rs = roleSchema('admin', build(), [a, b]);
    expect(Object.keys(rs.schema.getQueryType()!.getFields())).toEqual(['User', 'multi', 'single_aggregate', 'user', 'user_by_pk']);
    expect(Object.keys(rs.schema.getMutationType()!.getFields())).toEqual(['delete_b', 'update_b']);
  });

  it('a root field contributed twice names both plugins', () => {
    const c = (p: string) => contributor(p, () => ({ query: { hello: field(GraphQLString) } }));
    expect(() => roleSchema('admin', build(), [c('a'), c('b')])).toThrow('the query root field "hello" is contributed by both "a" and "b"');
  });

  it('a lookup contributor: its fields found by name, made only as they are asked for; every name for the whole schema (Note [Root fields by name])', () => {
    const asked: string[] = [];
    const all = ['a1', 'a2', 'a3'];
    const lookup = contributor('many', () => ({
      query: new RootFieldLookup(
        (n) => (asked.push(n), all.includes(n) ? field(GraphQLString) : undefined),
        () => all,
      ),
    }));
    const few = contributor('few', () => ({ query: { b1: field(GraphQLInt) } }));
    const rs = roleSchema('admin', build(), [lookup, few]);
    // The few's names were asked of the lookup for collisions; nothing else yet.
    expect(asked).toEqual(['b1']);
    expect(rs.roots.query.get('a2')).toBeDefined();
    expect(rs.roots.query.get('a9')).toBeUndefined();
    expect(rs.roots.query.get('b1')).toBeDefined();
    expect(isEmpty(rs.roots.query)).toBe(false);
    expect(isEmpty(rs.roots.mutation)).toBe(true);
    expect(validate(rs.schemaFor('query', false), parse('{ a2 b1 }'))).toEqual([]);
    expect(validate(rs.schemaFor('query', false), parse('{ a4 }')).map((e) => e.message)).toEqual(['Cannot query field "a4" on type "query_root". Did you mean "a1", "a2", or "a3"?']);
    expect(rs.roots.query.size).toBe(4);
    expect(Object.keys(rs.schema.getQueryType()!.getFields())).toEqual(['a1', 'a2', 'a3', 'b1']);
  });

  it('a lookup with no field: the placeholder, and no mutation root; the root says it is empty once', () => {
    let walks = 0;
    const none = contributor('many', () => ({ query: new RootFieldLookup(() => undefined, () => []), mutation: () => new RootFieldLookup(() => undefined, () => (walks++, [])) }));
    const rs = roleSchema('nobody', build(), [none]);
    expect(Object.keys(rs.schema.getQueryType()!.getFields())).toEqual(['no_queries_available']);
    expect(rs.schema.getMutationType()).toBeUndefined();
    for (let i = 0; i < 3; i++) expect(isEmpty(rs.roots.mutation)).toBe(true);
    expect(walks).toBe(1);
  });

  it('a name given by a lookup and by a map, or by two lookups, names both plugins, in the contributors\' order', () => {
    const lookupOf = (p: string, names: string[]) => contributor(p, () => ({ query: new RootFieldLookup((n) => (names.includes(n) ? field(GraphQLString) : undefined), () => names) }));
    const map = contributor('m', () => ({ query: { x: field(GraphQLString), hello: field(GraphQLString) } }));
    expect(() => roleSchema('admin', build(), [lookupOf('l', ['a', 'hello']), map])).toThrow('the query root field "hello" is contributed by both "l" and "m"');
    expect(() => roleSchema('admin', build(), [map, lookupOf('l', ['a', 'hello'])])).toThrow('the query root field "hello" is contributed by both "m" and "l"');
    expect(() => roleSchema('admin', build(), [lookupOf('l1', ['a', 'b']), lookupOf('l2', ['c', 'b'])])).toThrow('the query root field "b" is contributed by both "l1" and "l2"');
    expect(() => roleSchema('admin', build(), [lookupOf('l1', ['a', 'b']), lookupOf('l2', ['c']), map])).not.toThrow();
  });

  it('a type defined by two plugins names both; the same object again is fine', () => {
    const shared = new GraphQLObjectType({ name: 'thing', fields: { id: { type: GraphQLInt } } });
    const same = contributor('a', (_r, types) => ({ query: { t1: field(types.define(shared)), t2: field(types.define(shared)) } }));
    expect(() => roleSchema('admin', build(), [same])).not.toThrow();
    const other = contributor('b', (_r, types) => ({ query: { t3: field(types.define(new GraphQLObjectType({ name: 'thing', fields: { id: { type: GraphQLInt } } }))) } }));
    expect(() => roleSchema('admin', build(), [same, other])).toThrow('the GraphQL type "thing" is defined by both plugins "a" and "b"');
  });

  it('a failed build is kept, so it is not retried on every request', () => {
    let calls = 0;
    const c = (p: string) => contributor(p, () => (calls++, { query: { hello: field(GraphQLString) } }));
    const b = build();
    expect(() => roleSchema('admin', b, [c('a'), c('b')])).toThrow(/both/);
    expect(() => roleSchema('admin', b, [c('a'), c('b')])).toThrow(/both/);
    expect(calls).toBe(2);
  });

  it('a chain of thousands of types, each referring to the next, does not overflow the stack (either schema)', () => {
    const N = 5000;
    const c = contributor('chain', (_r, types) => {
      const made: GraphQLObjectType[] = [];
      for (let i = 0; i < N; i++) {
        made.push(types.define(new GraphQLObjectType({ name: `t${i}`, fields: () => ({ id: { type: GraphQLInt }, ...(i + 1 < N ? { next: { type: made[i + 1]! } } : {}) }) })));
      }
      const input = types.define(new GraphQLInputObjectType({ name: 'in0', fields: { a: { type: GraphQLInt } } }));
      // Only the first table is a root field: every other type is reached through the chain.
      return { query: { t0: field(made[0]!) }, mutation: { m: field(GraphQLString, { x: { type: input } }) } };
    });
    const rs = roleSchema('admin', build(), [c]);
    expect(rs.schemaFor('query', false).getType(`t${N - 1}`)).toBeDefined();
    expect(rs.schema.getType(`t${N - 1}`)).toBeDefined();
  });

  it('the full schema made in steps (Note [The full schema in steps]): every type, turns between the steps, lazy schemas served meanwhile', async () => {
    const N = 2000;
    let made = 0;
    const c = contributor('chain', (_r, types) => {
      const all: GraphQLObjectType[] = [];
      for (let i = 0; i < N; i++) {
        all.push(types.define(new GraphQLObjectType({ name: `t${i}`, fields: () => (made++, { id: { type: GraphQLInt }, ...(i + 1 < N ? { next: { type: all[i + 1]! } } : {}) }) })));
      }
      return { query: { t0: field(all[0]!) } };
    });
    const rs = roleSchema('admin', build(), [c]);
    let turns = 0;
    const answered: number[] = [];
    await rs.fullInSteps(async () => {
      turns++;
      // Another request between two steps: its lazy schema answers.
      const doc = parse('{ t0 { next { id } } }');
      answered.push(validate(rs.schemaFor('query', false, doc), doc).length);
      await Promise.resolve();
    }, 0);
    // A step of 0 ms ends every 64 types.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(N / 64) - 1);
    expect(answered.every((n) => n === 0)).toBe(true);
    expect(made).toBe(N);
    expect(Object.keys(rs.schema.getTypeMap()).filter((n) => /^t\d+$/.test(n))).toHaveLength(N);
    expect(made).toBe(N);
    // Made: nothing left to step through.
    let again = 0;
    await rs.fullInSteps(async () => void again++, 0);
    expect(again).toBe(0);
  });

  it('the full schema in steps, when a type cannot be made: the steps end, the schema reports the failure as ever', async () => {
    const c = contributor('bad', (_r, types) => {
      const bad = types.define(
        new GraphQLObjectType({
          name: 'bad',
          fields: () => {
            throw new Error('no fields today');
          },
        }),
      );
      return { query: { bad: field(bad), ok: field(GraphQLString) } };
    });
    const rs = roleSchema('admin', build(), [c]);
    await expect(rs.fullInSteps(async () => {}, 0)).resolves.toBeUndefined();
    expect(() => rs.schema).toThrow(/no fields today/);
    expect(() => rs.schema).toThrow(/no fields today/);
  });

  it('extend(): another plugin adds a field to a type, before or after it is defined', () => {
    const rel = contributor('remote', (_r, types) => {
      types.extend('point', { label: { type: GraphQLString } });
      return {};
    });
    for (const order of [[owner(), rel], [rel, owner()]]) {
      const rs = roleSchema('admin', build(), order);
      const point = rs.schema.getType('point') as GraphQLObjectType;
      expect(Object.keys(point.getFields()).sort()).toEqual(['label', 'x']);
      expect(validate(rs.schema, parse('{ point { x label } }'))).toEqual([]);
    }
  });

  it('a field added by two plugins, or added and also the owner\'s, names both plugins', () => {
    const add = (p: string, name: string) => contributor(p, (_r, types) => (types.extend('point', { [name]: { type: GraphQLString } }), {}));
    expect(() => roleSchema('admin', build(), [owner(), add('r1', 'label'), add('r2', 'label')]).schema).toThrow(
      'the field "label" of GraphQL type "point" is added by both plugins "r1" and "r2"',
    );
    expect(() => roleSchema('admin', build(), [owner(), add('r1', 'x')]).schema).toThrow('the field "x" of GraphQL type "point" is defined by both plugins "tables" and "r1"');
  });

  it('extending a type nobody defines, or whose owner ignores extensions, is an error naming the plugins', () => {
    const add = contributor('r1', (_r, types) => (types.extend('nowhere', { a: { type: GraphQLString } }), {}));
    expect(() => roleSchema('admin', build(), [owner(), add]).schema).toThrow('plugin "r1" adds fields to the GraphQL type "nowhere", which no plugin defines');
    const deaf = contributor('tables', (_r, types) => ({ query: { point: field(types.define(new GraphQLObjectType({ name: 'point', fields: { x: { type: GraphQLInt } } }))) } }));
    const add2 = contributor('r2', (_r, types) => (types.extend('point', { label: { type: GraphQLString } }), {}));
    expect(() => roleSchema('admin', build(), [deaf, add2]).schema).toThrow('plugin "tables" does not take the field "label" that plugin "r2" adds');
  });
});
