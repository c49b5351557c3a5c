/**
 * Remote schema relationships (create/update/delete_remote_schema_remote_relationship) against
 * two real graphql-js servers on loopback that count their requests: a remote type joined to a
 * table (object, array, two column pairs, the table's select permission), to a field of another
 * remote, nested (remote -> remote -> table), under a type-name customization; the operations'
 * errors, export and replace, and removal refused while another remote's relationship uses it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSchema, type GraphQLInterfaceType } from 'graphql';
import { serveGraphQL, type TestGraphQLServer } from '../../test/graphql-server.js';
import { useServer } from '../../test/helpers.js';

const PEOPLE_SDL = `
  interface Named { name: String! }
  type Person implements Named { id: ID! name: String! teamId: Int city: String }
  type Robot implements Named { name: String! }
  type Query { people: [Person!]! person(id: ID!): Person named: [Named!]! }
`;
const PEOPLE = [
  { id: '1', name: 'ann', teamId: 1, city: 'oslo' },
  { id: '2', name: 'bo', teamId: 1, city: 'rome' },
  { id: '3', name: 'cy', teamId: 2, city: 'oslo' },
  { id: '4', name: 'di', teamId: null, city: null },
];
const SHOP_SDL = `
  type Order { id: Int! personId: ID! item: String! }
  type Query { orders(personId: ID!): [Order!]! }
`;
const ORDERS = [
  { id: 10, personId: '1', item: 'pen' },
  { id: 11, personId: '1', item: 'ink' },
  { id: 12, personId: '3', item: 'pen' },
];

let people: TestGraphQLServer;
let shop: TestGraphQLServer;

beforeAll(async () => {
  const peopleSchema = buildSchema(PEOPLE_SDL);
  (peopleSchema.getType('Named') as GraphQLInterfaceType).resolveType = (x: { id?: string }) => (x.id ? 'Person' : 'Robot');
  people = await serveGraphQL(peopleSchema, {
    people: () => PEOPLE,
    person: ({ id }: { id: string }) => PEOPLE.find((p) => p.id === id) ?? null,
    named: () => [PEOPLE[0], { name: 'robo' }, PEOPLE[2]],
  });
  shop = await serveGraphQL(buildSchema(SHOP_SDL), { orders: ({ personId }: { personId: string }) => ORDERS.filter((o) => o.personId === personId) });
});
afterAll(() => {
  people?.server.close();
  shop?.server.close();
});

const s = useServer(`
  create table teams (id int primary key, title text not null);
  insert into teams values (1, 'red'), (2, 'blue');
  create table desks (team_id int, city text, label text);
  insert into desks values (1, 'oslo', 'd1'), (1, 'rome', 'd2'), (2, 'oslo', 'd3'), (1, 'oslo', 'd4');
  create table items (name text primary key, price int);
  insert into items values ('pen', 2), ('ink', 5);
`);
const meta = (body: unknown) => s.metadata(body);
const ok = { message: 'success' };
const rel = (type_name: string, name: string, definition: unknown, type = 'create_remote_schema_remote_relationship') => meta({ type, args: { remote_schema: 'people', type_name, name, definition } });
const team = { to_source: { source: 'default', table: 'teams', relationship_type: 'object', field_mapping: { teamId: 'id' } } };

describe('remote schema relationships', () => {
  beforeAll(async () => {
    for (const t of ['teams', 'desks', 'items']) expect((await meta({ type: 'pg_track_table', args: { table: t } })).status).toBe(200);
    expect((await meta({ type: 'add_remote_schema', args: { name: 'people', definition: { url: people.url } } })).body).toEqual(ok);
    expect((await meta({ type: 'add_remote_schema', args: { name: 'shop', definition: { url: shop.url } } })).body).toEqual(ok);
  });

  it('creates relationships, refuses bad ones with the reason, and exports them per type', async () => {
    expect((await rel('Person', 'team', team)).body).toEqual(ok);
    const again = await rel('Person', 'team', team);
    expect([again.status, again.body.code]).toEqual([400, 'already-exists']);
    const noRemote = await meta({ type: 'create_remote_schema_remote_relationship', args: { remote_schema: 'nope', type_name: 'Person', name: 'x', definition: team } });
    expect([noRemote.status, noRemote.body.code]).toEqual([400, 'not-exists']);
    const both = await rel('Person', 'x', { ...team, to_remote_schema: { remote_schema: 'shop', lhs_fields: ['id'], remote_field: { orders: { arguments: { personId: '$id' } } } } });
    expect([both.status, both.body.code]).toEqual([400, 'parse-failed']);
    const noMapping = await rel('Person', 'x', { to_source: { ...team.to_source, field_mapping: {} } });
    expect([noMapping.status, noMapping.body.code]).toEqual([400, 'parse-failed']);
    // Checked against the remote and the table: each refused with what is wrong, nothing kept.
    const cases: [string, string, unknown, RegExp][] = [
      ['Nope', 'x', team, /type with name "Nope" not found/],
      ['Named', 'x', team, /not an object type/],
      ['Person', 'name', team, /already a field of type "Person"/],
      ['Person', 'x', { to_source: { ...team.to_source, field_mapping: { nope: 'id' } } }, /field "nope" not found in type "Person"/],
      ['Person', 'x', { to_source: { ...team.to_source, field_mapping: { teamId: 'nope' } } }, /column "nope" does not exist in table "teams"/],
      ['Person', 'x', { to_source: { ...team.to_source, table: 'missing' } }, /not tracked/],
      ['Person', 'x', { to_remote_schema: { remote_schema: 'shop', lhs_fields: ['id'], remote_field: { nope: { arguments: {} } } } }, /field with name 'nope' not found/],
      ['Person', 'x', { to_remote_schema: { remote_schema: 'gone', lhs_fields: ['id'], remote_field: { orders: { arguments: { personId: '$id' } } } } }, /remote schema with name "gone" not found/],
    ];
    for (const [type, name, def, why] of cases) {
      const r = await rel(type, name, def);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatch(why);
      expect(r.body.internal[0]).toMatchObject({ type: 'remote_schema_remote_relationship', name: `remote_schema_remote_relationship remote_relationship ${name} on type ${type} in remote schema people`, definition: { remote_schema: 'people', type_name: type, name } });
    }
    expect((await rel('Person', 'orders', { to_remote_schema: { remote_schema: 'shop', lhs_fields: ['id'], remote_field: { orders: { arguments: { personId: '$id' } } } } })).body).toEqual(ok);
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    expect(exported.remote_schemas.find((r: any) => r.name === 'people').remote_relationships).toEqual([
      {
        type_name: 'Person',
        relationships: [
          { name: 'team', definition: team },
          { name: 'orders', definition: { to_remote_schema: { remote_schema: 'shop', lhs_fields: ['id'], remote_field: { orders: { arguments: { personId: '$id' } } } } } },
        ],
      },
    ]);
    // The target remote is not removed while the relationship uses it.
    const remove = await meta({ type: 'remove_remote_schema', args: { name: 'shop' } });
    expect([remove.status, remove.body.code]).toEqual([400, 'dependency-error']);
    expect(remove.body.error).toMatch(/remote_schema_remote_relationship orders of type Person in remote schema people/);
  });

  it('joins a table and another remote, one request to each remote per level', async () => {
    people.bodies.length = 0;
    shop.bodies.length = 0;
    const r = await s.gql(`{ people { name team { title } orders { id item } } }`);
    expect(r).toEqual({
      data: {
        people: [
          { name: 'ann', team: { title: 'red' }, orders: [{ id: 10, item: 'pen' }, { id: 11, item: 'ink' }] },
          { name: 'bo', team: { title: 'red' }, orders: [] },
          { name: 'cy', team: { title: 'blue' }, orders: [{ id: 12, item: 'pen' }] },
          { name: 'di', team: null, orders: [] },
        ],
      },
    });
    expect(people.bodies.length).toBe(1);
    // The join fields went to the remote under hidden keys; they are not in the answer.
    expect(people.bodies[0]!.query).toMatch(/__svc_lhs_teamId: teamId/);
    expect(shop.bodies.length).toBe(1);
    expect(shop.bodies[0]!.query).toMatch(/r3: orders\(personId: "4"\)/);
  });

  it('joins on two column pairs, and only objects of the type under an interface', async () => {
    expect((await rel('Person', 'desks', { to_source: { source: 'default', table: 'desks', relationship_type: 'array', field_mapping: { teamId: 'team_id', city: 'city' } } })).body).toEqual(ok);
    const r = await s.gql(`{ people { name desks(order_by: {label: asc}) { label } } }`);
    expect(r.data.people).toEqual([
      { name: 'ann', desks: [{ label: 'd1' }, { label: 'd4' }] },
      { name: 'bo', desks: [{ label: 'd2' }] },
      { name: 'cy', desks: [{ label: 'd3' }] },
      // A null join field: null, without asking (as the tables' joins answer it).
      { name: 'di', desks: null },
    ]);
    // limit and offset are each parent's (Note [Joins to another source]), from literals or variables.
    const limited = await s.gql(`{ people { name desks(order_by: {label: desc}, limit: 1) { label } } }`);
    expect(limited.data.people.map((p: any) => p.desks)).toEqual([[{ label: 'd4' }], [{ label: 'd2' }], [{ label: 'd3' }], null]);
    const paged = await s.gql(`query($l: Int, $o: Int) { people { desks(order_by: {label: asc}, limit: $l, offset: $o) { label } } }`, { l: 5, o: 1 });
    expect(paged.data.people.map((p: any) => p.desks)).toEqual([[{ label: 'd4' }], [], [], null]);
    const negative = await s.gql(`{ people { desks(limit: -1) { label } } }`);
    expect(negative.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' } });
    const filtered = await s.gql(`{ person(id: "1") { desks(where: {label: {_eq: "d4"}}) { label } } }`);
    expect(filtered).toEqual({ data: { person: { desks: [{ label: 'd4' }] } } });
    const named = await s.gql(`{ named { name ... on Person { team { title } } } }`);
    expect(named).toEqual({ data: { named: [{ name: 'ann', team: { title: 'red' } }, { name: 'robo' }, { name: 'cy', team: { title: 'blue' } }] } });
  });

  it('nests: a remote type joined to another remote whose type joins to a table', async () => {
    const item = await meta({ type: 'create_remote_schema_remote_relationship', args: { remote_schema: 'shop', type_name: 'Order', name: 'priced', definition: { to_source: { source: 'default', table: 'items', relationship_type: 'object', field_mapping: { item: 'name' } } } } });
    expect(item.body).toEqual(ok);
    shop.bodies.length = 0;
    const r = await s.gql(`{ people { name orders { item priced { price } } } }`);
    expect(r.data.people.map((p: any) => p.orders)).toEqual([[{ item: 'pen', priced: { price: 2 } }, { item: 'ink', priced: { price: 5 } }], [], [{ item: 'pen', priced: { price: 2 } }], []]);
    expect(shop.bodies.length).toBe(1);
    // The shop's own root field joins too.
    expect(await s.gql(`{ orders(personId: "3") { id priced { price } } }`)).toEqual({ data: { orders: [{ id: 12, priced: { price: 2 } }] } });
  });

  it("applies the target table's select permission for the role", async () => {
    expect((await meta({ type: 'pg_create_select_permission', args: { table: 'teams', role: 'user', permission: { columns: ['id', 'title'], filter: { id: { _eq: 'X-Svc-Team-Id' } } } } })).status).toBe(200);
    const r = await s.gql(`{ people { name team { title } } }`, undefined, { 'x-svc-role': 'user', 'x-svc-team-id': '2' });
    expect(r).toEqual({ data: { people: [{ name: 'ann', team: null }, { name: 'bo', team: null }, { name: 'cy', team: { title: 'blue' } }, { name: 'di', team: null }] } });
    // No select permission on desks: the relationship is not in the role's schema.
    const desks = await s.gql(`{ people { desks { label } } }`, undefined, { 'x-svc-role': 'user', 'x-svc-team-id': '2' });
    expect(desks.errors[0].extensions.code).toBe('validation-failed');
    expect(desks.errors[0].message).toMatch(/desks/);
  });

  it("follows its join column's rename, and goes with the target table only with cascade", async () => {
    await s.runSql('alter table desks rename column city to town');
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    const rels = exported.remote_schemas.find((r: any) => r.name === 'people').remote_relationships[0].relationships;
    expect(rels.find((r: any) => r.name === 'desks').definition.to_source.field_mapping).toEqual({ teamId: 'team_id', city: 'town' });
    expect((await s.gql(`{ person(id: "2") { desks { label } } }`)).data).toEqual({ person: { desks: [{ label: 'd2' }] } });
    const refused = await meta({ type: 'pg_untrack_table', args: { table: 'desks' } });
    expect([refused.status, refused.body.code]).toEqual([400, 'dependency-error']);
    expect(refused.body.error).toMatch(/remote_schema_remote_relationship desks of type Person in remote schema people/);
    const dropped = await s.query({ type: 'run_sql', args: { sql: 'alter table desks drop column town' } });
    expect([dropped.status, dropped.body.code]).toEqual([400, 'dependency-error']);
    expect((await meta({ type: 'pg_untrack_table', args: { table: 'desks', cascade: true } })).body).toEqual(ok);
    const after = (await meta({ type: 'export_metadata', args: {} })).body.remote_schemas.find((r: any) => r.name === 'people');
    expect(after.remote_relationships[0].relationships.map((r: any) => r.name)).toEqual(['team', 'orders']);
    expect((await meta({ type: 'pg_track_table', args: { table: 'desks' } })).status).toBe(200);
    await s.runSql('alter table desks rename column town to city');
    expect((await rel('Person', 'desks', { to_source: { source: 'default', table: 'desks', relationship_type: 'array', field_mapping: { teamId: 'team_id', city: 'city' } } })).body).toEqual(ok);
  });

  it('updates and deletes a relationship; replace_metadata keeps them', async () => {
    const upd = await rel('Person', 'team', { to_source: { ...team.to_source, relationship_type: 'array' } }, 'update_remote_schema_remote_relationship');
    expect(upd.body).toEqual(ok);
    expect((await s.gql(`{ person(id: "3") { team { title } } }`)).data).toEqual({ person: { team: [{ title: 'blue' }] } });
    const missing = await rel('Person', 'nope', team, 'update_remote_schema_remote_relationship');
    expect([missing.status, missing.body.code]).toEqual([400, 'not-exists']);
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    expect((await meta({ type: 'replace_metadata', args: exported })).status).toBe(200);
    expect((await meta({ type: 'export_metadata', args: {} })).body.remote_schemas).toEqual(exported.remote_schemas);
    for (const name of ['team', 'desks', 'orders']) {
      expect((await meta({ type: 'delete_remote_schema_remote_relationship', args: { remote_schema: 'people', type_name: 'Person', name } })).body).toEqual(ok);
    }
    const gone = await meta({ type: 'delete_remote_schema_remote_relationship', args: { remote_schema: 'people', type_name: 'Person', name: 'team' } });
    expect([gone.status, gone.body.code]).toEqual([400, 'not-exists']);
    expect((await meta({ type: 'export_metadata', args: {} })).body.remote_schemas.find((r: any) => r.name === 'people').remote_relationships).toBeUndefined();
    const q = await s.gql(`{ people { team { title } } }`);
    expect(q.errors[0].extensions.code).toBe('validation-failed');
  });
});

describe('remote schema relationships under a customization', () => {
  const c = useServer(`create table teams (id int primary key, title text not null); insert into teams values (1, 'red'), (2, 'blue');`);
  it('the type is named by its remote name; the customized type has the field', async () => {
    expect((await c.metadata({ type: 'pg_track_table', args: { table: 'teams' } })).status).toBe(200);
    expect((await c.metadata({ type: 'add_remote_schema', args: { name: 'people', definition: { url: people.url, customization: { type_names: { prefix: 'P_' }, field_names: [{ parent_type: 'Person', mapping: { city: 'town' } }] } } } })).status).toBe(200);
    const r = await c.metadata({ type: 'create_remote_schema_remote_relationship', args: { remote_schema: 'people', type_name: 'Person', name: 'team', definition: team } });
    expect(r.body).toEqual(ok);
    const q = await c.gql(`{ person(id: "2") { __typename town team { title } } }`);
    expect(q).toEqual({ data: { person: { __typename: 'P_Person', town: 'rome', team: { title: 'red' } } } });
    const t = await c.gql(`{ __type(name: "P_Person") { fields { name } } }`);
    expect(t.data.__type.fields.map((f: any) => f.name)).toContain('team');
  });
});

describe('remote schema relationships with remote schema permissions', () => {
  const p = useServer(`create table teams (id int primary key, title text not null); insert into teams values (1, 'red'), (2, 'blue');`, { config: { enableRemoteSchemaPermissions: true } });
  const user = { 'x-svc-role': 'user' };
  it("a role gets them where its permission has the type and it may use the target (the target remote's permission too)", async () => {
    const m = (body: unknown) => p.metadata(body);
    expect((await m({ type: 'pg_track_table', args: { table: 'teams' } })).status).toBe(200);
    expect((await m({ type: 'pg_create_select_permission', args: { table: 'teams', role: 'user', permission: { columns: ['id', 'title'], filter: {} } } })).status).toBe(200);
    for (const [name, u] of [['people', people.url], ['shop', shop.url]]) expect((await m({ type: 'add_remote_schema', args: { name, definition: { url: u } } })).status).toBe(200);
    const perm = await m({ type: 'add_remote_schema_permissions', args: { remote_schema: 'people', role: 'user', definition: { schema: 'type Person { id: ID! name: String! teamId: Int } type Query { people: [Person!]! }' } } });
    expect(perm.body).toEqual(ok);
    expect((await m({ type: 'create_remote_schema_remote_relationship', args: { remote_schema: 'people', type_name: 'Person', name: 'team', definition: team } })).body).toEqual(ok);
    expect((await m({ type: 'create_remote_schema_remote_relationship', args: { remote_schema: 'people', type_name: 'Person', name: 'orders', definition: { to_remote_schema: { remote_schema: 'shop', lhs_fields: ['id'], remote_field: { orders: { arguments: { personId: '$id' } } } } } } })).body).toEqual(ok);
    // The teams' select permission lets it through; no permission on the shop: no `orders`.
    const first = await p.gql(`{ people { name team { title } } }`, undefined, user);
    expect(first.data?.people[2], JSON.stringify(first)).toEqual({ name: 'cy', team: { title: 'blue' } });
    const noShop = await p.gql(`{ people { orders { id } } }`, undefined, user);
    expect(noShop.errors[0]).toMatchObject({ extensions: { code: 'validation-failed' }, message: "field 'orders' not found in type: 'Person'" });
    const shopPerm = await m({ type: 'add_remote_schema_permissions', args: { remote_schema: 'shop', role: 'user', definition: { schema: 'type Order { id: Int! personId: ID! } type Query { orders(personId: ID!): [Order!]! }' } } });
    expect(shopPerm.body).toEqual(ok);
    expect((await p.gql(`{ people { orders { id } } }`, undefined, user)).data.people[0]).toEqual({ orders: [{ id: 10 }, { id: 11 }] });
    // What the shop's permission hides stays hidden through the relationship.
    const item = await p.gql(`{ people { orders { item } } }`, undefined, user);
    expect(item.errors[0].message).toBe("field 'item' not found in type: 'Order'");
    // A role without select on teams does not get `team`.
    expect((await m({ type: 'add_remote_schema_permissions', args: { remote_schema: 'people', role: 'guest', definition: { schema: 'type Person { id: ID! teamId: Int } type Query { people: [Person!]! }' } } })).body).toEqual(ok);
    const guest = await p.gql(`{ people { team { title } } }`, undefined, { 'x-svc-role': 'guest' });
    expect(guest.errors[0].message).toBe("field 'team' not found in type: 'Person'");
  });
});
