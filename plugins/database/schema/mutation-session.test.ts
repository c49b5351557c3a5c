/**
 * The session variables of a mutation are set for its transaction as `svc.user` (JSON), so that
 * triggers can read them (event triggers will), whether the request's one field runs alone in
 * autocommit or several run in one transaction (Note [Mutations in one round trip] in the
 * PostgreSQL compiler); other clients' changes see none.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../../test/helpers.js';

const SEED = `
create table item (id serial primary key, name text not null);
create table audit (id serial primary key, item_id int, who text);
create function audit_item() returns trigger language plpgsql as $$
begin
  insert into audit (item_id, who) values (new.id, current_setting('svc.user', true));
  return new;
end $$;
create trigger item_audit after insert or update on item for each row execute function audit_item();
`;

const server = useServer(SEED);
const user = { 'x-svc-role': 'user', 'x-svc-user-id': '7' };

beforeAll(async () => {
  const r = await server.metadata({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'item' } },
      { type: 'pg_create_insert_permission', args: { table: 'item', role: 'user', permission: { columns: ['name'], check: { name: { _ne: 'forbidden' } } } } },
    ],
  });
  expect(r.status, r.text).toBe(200);
});

const audit = async () => (await server.sql<{ item_id: number; who: string | null }[]>`select item_id, who from audit order by id`).map((r) => ({ item_id: r.item_id, who: r.who && JSON.parse(r.who) }));

describe('svc.user', () => {
  it('a trigger reads the session of a one-field mutation, of each field of a longer one, and nothing of other clients', async () => {
    expect(await server.gql('mutation { insert_item(objects: {name: "a"}) { affected_rows } }', undefined, user)).toEqual({ data: { insert_item: { affected_rows: 1 } } });
    expect(await server.gql('mutation { a: insert_item_one(object: {name: "b"}) { id } b: update_item(where: {id: {_eq: 1}}, _set: {name: "c"}) { affected_rows } }')).toEqual({
      data: { a: { id: 2 }, b: { affected_rows: 1 } },
    });
    await server.sql`insert into item (name) values ('d')`;
    expect(await audit()).toEqual([
      { item_id: 1, who: { 'x-svc-role': 'user', 'x-svc-user-id': '7' } },
      { item_id: 2, who: { 'x-svc-role': 'admin' } },
      { item_id: 1, who: { 'x-svc-role': 'admin' } },
      { item_id: 3, who: null },
    ]);
  });

  it('a one-field mutation whose row fails the check writes nothing, its trigger\'s rows included', async () => {
    const before = await audit();
    expect(await server.gql('mutation { insert_item(objects: {name: "forbidden"}) { affected_rows } }', undefined, user)).toEqual({
      errors: [{ message: 'check constraint of an insert/update permission has failed', extensions: { path: '$.selectionSet.insert_item.args.objects', code: 'permission-error' } }],
    });
    expect(await audit()).toEqual(before);
    expect((await server.sql`select count(*)::int as n from item where name = 'forbidden'`)[0]).toEqual({ n: 0 });
  });
});
