/**
 * `--stringify-numeric-types`: bigint, numeric and double precision (Hasura's list) as JSON
 * strings in query results, aggregates of such columns and mutation responses; numbers without
 * it. Hasura's own test suite runs its server with the flag (its README: "to avoid the need to
 * do floating-point comparisons"), which is why its cases expect `"9223372036854775807"`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table nums (id serial primary key, small int2, big int8, dec numeric, real4 real, dbl float8);
insert into nums (small, big, dec, real4, dbl) values (1, 9223372036854775807, 123.45, 0.5, 16.0001220703125), (2, 10, 1.5, 1.5, 2.25);
`;
const TRACK = { type: 'pg_track_table', args: { table: 'nums' } };
const ROW = '{ small big dec real4 dbl }';

describe('without --stringify-numeric-types', () => {
  const server = useServer(SEED);
  beforeAll(async () => expect((await server.metadata(TRACK)).status).toBe(200));

  it('queries give JSON numbers (a bigint beyond 2^53 as PostgreSQL prints it)', async () => {
    const r = await server.request('POST', '/v1/graphql', { query: `{ nums(order_by: {id: asc}, limit: 1) ${ROW} }` });
    expect(r.text).toBe('{"data":{"nums":[{"small":1,"big":9223372036854775807,"dec":123.45,"real4":0.5,"dbl":16.0001220703125}]}}');
  });

  it("so does a mutation's response", async () => {
    expect(await server.gql(`mutation { insert_nums(objects: [{small: 3, big: 8, dec: 0.10, real4: 2.5, dbl: 1.25}]) { returning ${ROW} } }`)).toEqual({
      data: { insert_nums: { returning: [{ small: 3, big: 8, dec: 0.1, real4: 2.5, dbl: 1.25 }] } },
    });
  });
});

describe('with --stringify-numeric-types', () => {
  const server = useServer(SEED, { config: { stringifyNumericTypes: true } });
  beforeAll(async () => expect((await server.metadata(TRACK)).status).toBe(200));

  it('queries give bigint, numeric and double precision as strings', async () => {
    expect(await server.gql(`{ nums(order_by: {id: asc}) ${ROW} }`)).toEqual({
      data: {
        nums: [
          { small: 1, big: '9223372036854775807', dec: '123.45', real4: 0.5, dbl: '16.0001220703125' },
          { small: 2, big: '10', dec: '1.5', real4: 1.5, dbl: '2.25' },
        ],
      },
    });
  });

  it("aggregates by the column's type: those of big-number columns as strings, of small ones as numbers", async () => {
    expect(await server.gql('{ nums_aggregate { aggregate { count sum { big small } avg { small dec } max { small dbl } } } }')).toEqual({
      data: { nums_aggregate: { aggregate: { count: 2, sum: { big: '9223372036854775817', small: 3 }, avg: { small: 1.5, dec: '62.4750000000000000' }, max: { small: 2, dbl: '16.0001220703125' } } } },
    });
  });

  it("a mutation's response too", async () => {
    expect(await server.gql(`mutation { insert_nums(objects: [{small: 3, big: 9223372036854775806, dec: 0.10, real4: 2.5, dbl: 1.25}]) { returning ${ROW} } }`)).toEqual({
      data: { insert_nums: { returning: [{ small: 3, big: '9223372036854775806', dec: '0.10', real4: 2.5, dbl: '1.25' }] } },
    });
    expect(await server.gql(`mutation { update_nums_by_pk(pk_columns: {id: 2}, _inc: {big: 1}) ${ROW} }`)).toEqual({
      data: { update_nums_by_pk: { small: 2, big: '11', dec: '1.5', real4: 1.5, dbl: '2.25' } },
    });
  });
});
