/**
 * Variables of the built-in scalar types (Note [Coercing valid variables] in
 * plugins/graphql/variables.ts): values taken as they are and values that graphql-js converts or
 * refuses answer as graphql-js's coercion would, on a cached document too.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const server = useServer(`
create table item (id int primary key, name text, price real, ok boolean);
insert into item values (1, 'one', 1.5, true), (2, 'two', 2, false), (3, null, null, null);
`);
const q = async (query: string, variables?: unknown) => (await server.request('POST', '/v1/graphql', { query, variables })).body;

beforeAll(async () => {
  const r = await server.metadata({ type: 'pg_track_table', args: { table: 'item' } });
  expect(r.status, r.text).toBe(200);
});

describe('variables of built-in scalar types', () => {
  const byPk = 'query ($id: Int!) { item_by_pk(id: $id) { id name } }';
  it('Int: an int32 as it is; others refused as graphql-js refuses them, each time', async () => {
    for (let i = 0; i < 2; i++) {
      expect(await q(byPk, { id: 2 })).toEqual({ data: { item_by_pk: { id: 2, name: 'two' } } });
      // A primary key is a column value: as in Hasura, "2" is read as the column reads it (Note
      // [Text literals at marked positions] in plugins/graphql/prepare.ts); "two" is not an Int.
      expect(await q(byPk, { id: '2' })).toEqual({ data: { item_by_pk: { id: 2, name: 'two' } } });
      expect((await q(byPk, { id: 'two' })).errors[0].message).toMatch(/Int cannot represent non-integer value: "two"/);
      expect((await q(byPk, { id: 1.5 })).errors[0].message).toMatch(/Int cannot represent non-integer value: 1.5/);
      expect((await q(byPk, { id: 2 ** 31 })).errors[0].message).toMatch(/Int cannot represent non 32-bit signed integer value/);
      expect((await q(byPk, {})).errors[0].message).toBe('expecting a value for non-nullable variable: "id"');
      expect((await q(byPk, { id: null })).errors[0].message).toMatch(/\$id|"id"/);
    }
  });

  it('nullable String, Float and Boolean: null and absent drop the comparison', async () => {
    const list = 'query ($n: String, $p: Float, $ok: Boolean, $m: String) { item(where: {name: {_eq: $n}, price: {_gte: $p}, ok: {_eq: $ok}}, order_by: {id: asc}) { id } other: item(where: {name: {_eq: $m}}, order_by: {id: asc}) { id } }';
    expect(await q(list, { n: 'one', p: 1, ok: true, m: 'two' })).toEqual({ data: { item: [{ id: 1 }], other: [{ id: 2 }] } });
    expect(await q(list, { n: null, p: 1.75 })).toEqual({ data: { item: [{ id: 2 }], other: [{ id: 1 }, { id: 2 }, { id: 3 }] } });
    expect(await q(list, { ok: false, m: 'none' })).toEqual({ data: { item: [{ id: 2 }], other: [] } });
    expect((await q(list, { p: 'x' })).errors[0].message).toMatch(/Float cannot represent non numeric value: "x"/);
    expect(await q(list, { ok: 'false', m: 'none' })).toEqual({ data: { item: [{ id: 2 }], other: [] } });
    expect((await q(list, { ok: 'yes' })).errors[0].message).toMatch(/Boolean cannot represent a non boolean value: "yes"/);
    expect((await q(list, { n: 1 })).errors[0].message).toMatch(/String cannot represent a non string value: 1/);
  });
});
