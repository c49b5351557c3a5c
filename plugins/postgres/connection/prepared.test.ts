/**
 * Note [Prepared statements per query] and Note [Poolers] in ./connection.ts: on a source with
 * use_prepared_statements: true, a query that asks to be prepared is a named prepared statement
 * of its connection (the GraphQL plans' statements), and so is every parameterised query; with
 * use_prepared_statements: false (the default, as Hasura's) nothing is, whoever asks, and the
 * source has no LISTEN. Read back from pg_prepared_statements on a pool of one connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, startServer } from '../../../test/helpers.js';
import { PgConnection } from './connection.js';

let url: string;
const conns: PgConnection[] = [];
const connect = (use_prepared_statements?: boolean) => {
  const c = new PgConnection('t', { connection_info: { database_url: url, use_prepared_statements, pool_settings: { max_connections: 1 } } }, {});
  conns.push(c);
  return c;
};
const prepared = async (c: PgConnection, text: string) =>
  Number((await c.executor.query<{ n: string }>('select count(*)::text as n from pg_prepared_statements where statement = $1', [text]))[0]!.n);

beforeAll(async () => {
  url = (await createDatabase()).url;
});
afterAll(async () => {
  for (const c of conns) await c.close();
});

describe('prepared statements', () => {
  it('with use_prepared_statements: true, prepared when the query asks; every parameterised query too', async () => {
    const c = connect(true);
    // The third argument of PgExecutor.query (SqlExecutor's contract does not name it yet).
    const query = c.executor.query as (text: string, params: unknown[], opts: { prepare: boolean }) => Promise<unknown[]>;
    for (let i = 0; i < 3; i++) expect(await query('select $1::text as x', ['a'], { prepare: true })).toEqual([{ x: 'a' }]);
    expect(await prepared(c, 'select $1::text as x')).toBe(1);
    expect(await c.executor.query('select $1::text as y', ['b'])).toEqual([{ y: 'b' }]);
    expect(await prepared(c, 'select $1::text as y')).toBe(1);
    expect(c.listen).toBeTypeOf('function');
  });

  it('with use_prepared_statements: true, a statement without parameters is prepared when the query asks (a GraphQL plan with no variables)', async () => {
    const c = connect(true);
    const query = c.executor.query as (text: string, params: unknown[], opts: { prepare: boolean }) => Promise<unknown[]>;
    for (let i = 0; i < 3; i++) expect(await query("select 'n'::text as n", [], { prepare: true })).toEqual([{ n: 'n' }]);
    expect(await prepared(c, "select 'n'::text as n")).toBe(1);
    // Within a transaction as well (a mutation request's statements).
    const t = await c.transaction();
    const tq = t.query as (text: string, params: unknown[], opts: { prepare: boolean }) => Promise<unknown[]>;
    expect(await tq("select 'm'::text as m", [], { prepare: true })).toEqual([{ m: 'm' }]);
    await t.commit();
    expect(await prepared(c, "select 'm'::text as m")).toBe(1);
  });

  for (const setting of [undefined, false]) {
    it(`with use_prepared_statements: ${setting}, nothing is prepared, whoever asks, and there is no LISTEN`, async () => {
      const c = connect(setting);
      const query = c.executor.query as (text: string, params: unknown[], opts?: { prepare: boolean }) => Promise<unknown[]>;
      for (let i = 0; i < 3; i++) {
        expect(await query('select $1::text as x', ['a'], { prepare: true })).toEqual([{ x: 'a' }]);
        expect(await query("select 'n'::text as n", [], { prepare: true })).toEqual([{ n: 'n' }]);
        expect(await query('select $1::text as y', ['b'])).toEqual([{ y: 'b' }]);
      }
      const t = await c.transaction();
      const tq = t.query as (text: string, params: unknown[], opts: { prepare: boolean }) => Promise<unknown[]>;
      expect(await tq('select $1::text as z', ['c'], { prepare: true })).toEqual([{ z: 'c' }]);
      expect(await tq("select 'm'::text as m", [], { prepare: true })).toEqual([{ m: 'm' }]);
      await t.commit();
      const all = await c.executor.query<{ n: number }>('select count(*)::int as n from pg_prepared_statements');
      expect(all).toEqual([{ n: 0 }]);
      expect(c.listen).toBeUndefined();
    });
  }
});

describe('--use-prepared-statements (the source made from the database URL at the first boot)', () => {
  it('true by default, false when the flag says so', async () => {

    for (const [config, expected] of [[{}, true], [{ usePreparedStatements: false }, false]] as const) {
      const s = await startServer({ config });
      try {
        const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
        const source = md.sources.find((x: { name: string }) => x.name === 'default');
        expect(source.configuration.connection_info.use_prepared_statements).toBe(expected);
      } finally {
        await s.stop();
      }
    }
  });
});
