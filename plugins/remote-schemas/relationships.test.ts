/**
 * Remote relationships from a table to a remote schema, against a real graphql-js server on
 * loopback that counts its requests: operations and their errors, object and array results,
 * nested remote fields, nulls, merged arguments, errors from the remote, batching (one request
 * per relationship and level, however many rows), and refusal where joins are not served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSchema } from 'graphql';
import { serveGraphQL, type TestGraphQLServer } from '../../test/graphql-server.js';
import { useServer } from '../../test/helpers.js';

const SDL = `
  type Message { id: Int! name: String msg: String }
  input IntCmp { eq: Int }
  input MessageWhere { id: IntCmp, name: String }
  type User { id: Int! messages(where: MessageWhere): [Message!]! }
  type Query {
    message(id: Int!): Message
    messages(where: MessageWhere): [Message!]!
    user(id: Int!): User
    broken(id: Int!): String
  }
`;
const MESSAGES = [
  { id: 1, name: 'alice', msg: 'hi' },
  { id: 2, name: 'bob', msg: 'yo' },
  { id: 3, name: 'alice', msg: 'again' },
];
const match = (m: (typeof MESSAGES)[number], where?: { id?: { eq?: number }; name?: string }) =>
  (where?.id?.eq === undefined || m.id === where.id.eq) && (where?.name === undefined || m.name === where.name);

let remote: TestGraphQLServer;
let url = '';
let bodies: any[] = [];

beforeAll(async () => {
  const schema = buildSchema(SDL);
  const root = {
    message: ({ id }: { id: number }) => MESSAGES.find((m) => m.id === id) ?? null,
    messages: ({ where }: { where?: any }) => MESSAGES.filter((m) => match(m, where)),
    user: ({ id }: { id: number }) => ({ id, messages: ({ where }: { where?: any }) => MESSAGES.filter((m) => match(m, where)) }),
    broken: () => {
      throw new Error('intentional-error');
    },
  };
  remote = await serveGraphQL(schema, root);
  url = remote.url;
  bodies = remote.bodies;
});
afterAll(() => remote?.close());

const s = useServer(`
  create table profiles (id serial primary key, name text);
  insert into profiles (name) values ('alice'), ('bob'), ('carol'), (null);
  create table teams (id serial primary key, title text);
  insert into teams (title) values ('one');
  alter table profiles add column team_id int references teams(id);
  update profiles set team_id = 1;
`);

const meta = (body: unknown) => s.metadata(body);

describe('remote relationships', () => {
  beforeAll(async () => {
    for (const t of ['profiles', 'teams']) expect((await meta({ type: 'pg_track_table', args: { table: t } })).status).toBe(200);
    expect((await meta({ type: 'pg_create_array_relationship', args: { table: 'teams', name: 'profiles', using: { foreign_key_constraint_on: { table: 'profiles', column: 'team_id' } } } })).status).toBe(200);
    expect((await meta({ type: 'add_remote_schema', args: { name: 'msgs', definition: { url } } })).body).toEqual({ message: 'success' });
  });

  it('creates, exports, refuses bad ones and deletes', async () => {
    const ok = await s.query({ type: 'create_remote_relationship', args: { name: 'message', table: 'profiles', svc_fields: ['id'], remote_schema: 'msgs', remote_field: { message: { arguments: { id: '$id' } } } } });
    expect(ok.body).toEqual({ message: 'success' });
    const again = await s.query({ type: 'create_remote_relationship', args: { name: 'message', table: 'profiles', svc_fields: ['id'], remote_schema: 'msgs', remote_field: { message: { arguments: { id: '$id' } } } } });
    expect([again.status, again.body.code]).toEqual([400, 'already-exists']);
    const badField = await s.query({ type: 'create_remote_relationship', args: { name: 'x', table: 'profiles', svc_fields: ['id'], remote_schema: 'msgs', remote_field: { nope: { arguments: {} } } } });
    expect([badField.status, badField.body.code]).toEqual([400, 'invalid-configuration']);
    const badLiteral = await s.query({ type: 'create_remote_relationship', args: { name: 'x', table: 'profiles', svc_fields: ['id'], remote_schema: 'msgs', remote_field: { message: { arguments: { id: 'abc' } } } } });
    expect(badLiteral.status).toBe(400);
    const badColumn = await s.query({ type: 'create_remote_relationship', args: { name: 'x', table: 'profiles', svc_fields: ['nope'], remote_schema: 'msgs', remote_field: { message: { arguments: { id: '$nope' } } } } });
    expect(badColumn.status).toBe(400);
    const newForm = await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'byName', definition: { to_remote_schema: { lhs_fields: ['name'], remote_schema: 'msgs', remote_field: { messages: { arguments: { where: { name: '$name' } } } } } } } });
    expect(newForm.body).toEqual({ message: 'success' });
    const noMapping = await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'ts', definition: { to_source: { source: 'default', table: 'teams', relationship_type: 'object', field_mapping: {} } } } });
    expect([noMapping.status, noMapping.body.code]).toEqual([400, 'parse-failed']);
    const exported = (await meta({ type: 'export_metadata', args: {} })).body;
    const table = exported.sources[0].tables.find((t: any) => t.table.name === 'profiles');
    expect(table.remote_relationships.map((r: any) => r.name)).toEqual(['message', 'byName']);
    const removeRemote = await meta({ type: 'remove_remote_schema', args: { name: 'msgs' } });
    expect([removeRemote.status, removeRemote.body.code]).toEqual([400, 'dependency-error']);
  });

  it('joins object and array results, one request per relationship and level, nulls without asking', async () => {
    bodies.length = 0;
    const r = await s.gql(`{ profiles(order_by: {id: asc}) { id message { msg } byName { id } } }`);
    expect(r).toEqual({
      data: {
        profiles: [
          { id: 1, message: { msg: 'hi' }, byName: [{ id: 1 }, { id: 3 }] },
          { id: 2, message: { msg: 'yo' }, byName: [{ id: 2 }] },
          { id: 3, message: { msg: 'again' }, byName: [] },
          { id: 4, message: null, byName: null },
        ],
      },
    });
    // Two relationships at one level: two requests, each with every distinct key aliased.
    expect(bodies.length).toBe(2);
    expect(bodies.map((b) => b.query).join('\n')).toMatch(/r3: message\(id: 4\)/);
  });

  it('batches the rows of a nested level too, and keeps the join columns out of the answer', async () => {
    bodies.length = 0;
    const r = await s.gql(`{ teams { title profiles(order_by: {id: asc}, limit: 2) { name message { id } } } }`);
    expect(r).toEqual({ data: { teams: [{ title: 'one', profiles: [{ name: 'alice', message: { id: 1 } }, { name: 'bob', message: { id: 2 } }] }] } });
    expect(bodies.length).toBe(1);
  });

  it('follows nested remote fields and merges the client arguments under the join', async () => {
    expect((await s.query({ type: 'create_remote_relationship', args: { name: 'userMessages', table: 'profiles', svc_fields: ['id', 'name'], remote_schema: 'msgs', remote_field: { user: { arguments: { id: '$id' }, field: { messages: { arguments: { where: { name: '$name' } } } } } } } })).body).toEqual({ message: 'success' });
    // Profile 1 is alice: the join gives `name: "alice"`, the client `id: {eq: 3}`; both apply.
    const r = await s.gql(`{ profiles(where: {id: {_eq: 1}}) { userMessages(where: {id: {eq: 3}}) { id msg } } }`);
    expect(r).toEqual({ data: { profiles: [{ userMessages: [{ id: 3, msg: 'again' }] }] } });
    // The argument the join fixes in part has a type of the relationship's own, as Hasura names it.
    const t = await s.gql(`{ __type(name: "profiles") { fields { name args { name type { name } } } } }`);
    expect(t.data.__type.fields.find((f: any) => f.name === 'userMessages').args).toEqual([{ name: 'where', type: { name: 'MessageWhere_remote_rel_profilesuserMessages' } }]);
    const v = await s.gql(`query ($w: MessageWhere_remote_rel_profilesuserMessages) { profiles(where: {id: {_eq: 1}}) { userMessages(where: $w) { id } } }`, { w: { id: { eq: 3 } } });
    expect(v).toEqual({ data: { profiles: [{ userMessages: [{ id: 3 }] }] } });
    // The join wins over the client on the same input field (rule 7).
    const r2 = await s.gql(`{ profiles(where: {id: {_eq: 1}}) { userMessages(where: {name: "bob"}) { id } } }`);
    expect(r2).toEqual({ data: { profiles: [{ userMessages: [{ id: 1 }, { id: 3 }] }] } });
  });

  it('answers the remote errors as Hasura does for joins; the relationship can be deleted', async () => {
    expect((await s.query({ type: 'create_remote_relationship', args: { name: 'broken', table: 'profiles', svc_fields: ['id'], remote_schema: 'msgs', remote_field: { broken: { arguments: { id: '$id' } } } } })).status).toBe(200);
    const r = await s.gql(`{ profiles { id broken } }`);
    expect(r.data).toBeUndefined();
    expect(r.errors[0]).toMatchObject({ message: 'Errors from remote server', extensions: { code: 'unexpected', path: '$' } });
    expect(r.errors[0].extensions.internal.errors[0].message).toBe('intentional-error');
    const ok = await s.gql(`{ profiles(limit: 1) { id } }`);
    expect(ok).toEqual({ data: { profiles: [{ id: 1 }] } });
    expect((await s.query({ type: 'delete_remote_relationship', args: { table: 'profiles', name: 'broken' } })).body).toEqual({ message: 'success' });
    const gone = await s.gql(`{ profiles { broken } }`);
    expect(gone.errors[0].extensions.code).toBe('validation-failed');
  });

  it('follows a join column renamed by run_sql, and goes with it when it is dropped with cascade', async () => {
    await s.runSql('alter table profiles add column msg_id int; update profiles set msg_id = id');
    expect((await s.query({ type: 'create_remote_relationship', args: { name: 'byMsg', table: 'profiles', svc_fields: ['msg_id'], remote_schema: 'msgs', remote_field: { message: { arguments: { id: '$msg_id' } } } } })).status).toBe(200);
    await s.runSql('alter table profiles rename column msg_id to message_id');
    expect(await s.gql(`{ profiles(where: {id: {_eq: 2}}) { byMsg { name } } }`)).toEqual({ data: { profiles: [{ byMsg: { name: 'bob' } }] } });
    const refused = await s.query({ type: 'run_sql', args: { sql: 'alter table profiles drop column message_id' } });
    expect([refused.status, refused.body.code]).toEqual([400, 'dependency-error']);
    expect((await s.query({ type: 'run_sql', args: { sql: 'alter table profiles drop column message_id', cascade: true } })).status).toBe(200);
    const table = (await meta({ type: 'export_metadata', args: {} })).body.sources[0].tables.find((t: any) => t.table.name === 'profiles');
    expect(table.remote_relationships.map((r: any) => r.name)).not.toContain('byMsg');
  });

  it("joins a mutation's output", async () => {
    const one = await s.gql(`mutation { insert_profiles_one(object: {id: 10, name: "bob"}) { id message { msg } } }`);
    expect(one).toEqual({ data: { insert_profiles_one: { id: 10, message: null } } });
    const many = await s.gql(`mutation { update_profiles(where: {id: {_in: [1, 2]}}, _set: {name: "zed"}) { affected_rows returning { id message { msg } } } }`);
    expect(many.data.update_profiles.returning.sort((a: any, b: any) => a.id - b.id)).toEqual([
      { id: 1, message: { msg: 'hi' } },
      { id: 2, message: { msg: 'yo' } },
    ]);
  });

  it('joins a table of a source (to_source), object and array, in one statement per level', async () => {
    expect((await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'team', definition: { to_source: { source: 'default', table: 'teams', relationship_type: 'object', field_mapping: { team_id: 'id' } } } } })).body).toEqual({ message: 'success' });
    expect((await meta({ type: 'pg_create_remote_relationship', args: { table: 'teams', name: 'members', definition: { to_source: { source: 'default', table: 'profiles', relationship_type: 'array', field_mapping: { id: 'team_id' } } } } })).body).toEqual({ message: 'success' });
    const r = await s.gql(`{ profiles(where: {id: {_in: [1, 2]}}, order_by: {id: asc}) { id team { title } } }`);
    expect(r).toEqual({ data: { profiles: [{ id: 1, team: { title: 'one' } }, { id: 2, team: { title: 'one' } }] } });
    const a = await s.gql(`{ teams { title members(where: {id: {_lt: 3}}, order_by: {id: desc}) { id } } }`);
    expect(a).toEqual({ data: { teams: [{ title: 'one', members: [{ id: 2 }, { id: 1 }] }] } });
    const bad = await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'nope', definition: { to_source: { source: 'default', table: 'teams', relationship_type: 'object', field_mapping: { team_id: 'nope' } } } } });
    expect(bad.status).toBe(400);
    // Two column pairs: the rows whose whole tuple matches (each profile itself; a null name
    // matches nothing and gets null without asking), one statement for the level.
    const two = await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'same', definition: { to_source: { source: 'default', table: 'profiles', relationship_type: 'array', field_mapping: { id: 'id', name: 'name' } } } } });
    expect(two.body).toEqual({ message: 'success' });
    const t = await s.gql(`{ profiles(where: {id: {_lte: 4}}, order_by: {id: asc}) { id same { id name } } }`);
    expect(t.data.profiles.map((p: any) => [p.id, p.same])).toEqual([
      [1, [{ id: 1, name: 'zed' }]],
      [2, [{ id: 2, name: 'zed' }]],
      [3, [{ id: 3, name: 'carol' }]],
      [4, null],
    ]);
    // The target table and its join column: refused without cascade, followed when renamed.
    const untrack = await meta({ type: 'pg_untrack_table', args: { table: 'teams' } });
    expect([untrack.status, untrack.body.code]).toEqual([400, 'dependency-error']);
    expect(untrack.body.error).toMatch(/remote_relationship profiles.team in source "default"/);
    await s.runSql('alter table teams rename column title to label');
    const profiles = (await meta({ type: 'export_metadata', args: {} })).body.sources[0].tables.find((x: any) => x.table.name === 'profiles');
    expect(profiles.remote_relationships.find((x: any) => x.name === 'team').definition.to_source.field_mapping).toEqual({ team_id: 'id' });
    await s.runSql('alter table profiles rename column team_id to team_ref');
    const renamed = (await meta({ type: 'export_metadata', args: {} })).body.sources[0].tables;
    expect(renamed.find((x: any) => x.table.name === 'profiles').remote_relationships.find((x: any) => x.name === 'team').definition.to_source.field_mapping).toEqual({ team_ref: 'id' });
    expect(renamed.find((x: any) => x.table.name === 'teams').remote_relationships.find((x: any) => x.name === 'members').definition.to_source.field_mapping).toEqual({ id: 'team_ref' });
    expect((await s.gql(`{ profiles(where: {id: {_eq: 1}}) { team { label } } }`)).data).toEqual({ profiles: [{ team: { label: 'one' } }] });
    const badSecond = await meta({ type: 'pg_create_remote_relationship', args: { table: 'profiles', name: 'nope', definition: { to_source: { source: 'default', table: 'teams', relationship_type: 'object', field_mapping: { team_ref: 'id', name: 'nope' } } } } });
    expect([badSecond.status, badSecond.body.error]).toEqual([400, expect.stringMatching(/column "nope" does not exist in table "teams"/)]);
  });
});
