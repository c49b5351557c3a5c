/**
 * Big numbers (bigint, numeric, double precision) as JSON strings: in query results with
 * `--stringify-numeric-types`, and always in a mutation's response, as Hasura v2 gives them (its
 * test suite's insert of various types expects `"9223372036854775807"`, `"123.45"`,
 * `"16.0001220703125"` from `returning`, and numbers from queries).
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
    expect(r.text).toBe('{"data":{"nums":[{"small" : 1, "big" : 9223372036854775807, "dec" : 123.45, "real4" : 0.5, "dbl" : 16.0001220703125}]}}');
  });

  it("a mutation's response gives big numbers as strings, small ones and real as numbers", async () => {
    expect(await server.gql(`mutation { insert_nums(objects: [{small: 3, big: 9223372036854775806, dec: 0.10, real4: 2.5, dbl: 1.25}]) { returning ${ROW} } }`)).toEqual({
      data: { insert_nums: { returning: [{ small: 3, big: '9223372036854775806', dec: '0.10', real4: 2.5, dbl: '1.25' }] } },
    });
    expect(await server.gql(`mutation { update_nums_by_pk(pk_columns: {id: 2}, _inc: {big: 1}) ${ROW} }`)).toEqual({
      data: { update_nums_by_pk: { small: 2, big: '11', dec: '1.5', real4: 1.5, dbl: '2.25' } },
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

  it('aggregates: statistics and sums of big numbers as strings, count and max of small ones as numbers', async () => {
    expect(await server.gql('{ nums_aggregate { aggregate { count sum { big small } avg { small } max { small dbl } } } }')).toEqual({
      data: { nums_aggregate: { aggregate: { count: 2, sum: { big: '9223372036854775817', small: 3 }, avg: { small: '1.5000000000000000' }, max: { small: 2, dbl: '16.0001220703125' } } } },
    });
  });
});
