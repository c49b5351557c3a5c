/**
 * Cycles among inherited roles that replace_metadata accepts with allow_inconsistent_metadata:
 * reported as an inconsistent `inherited_role` object (in the answer, get_inconsistent_metadata,
 * reload_metadata and after a restart), the roles of the cycle serving nothing while the rest
 * serves, later operations not blamed for it, and drop_inconsistent_metadata taking the cycle
 * out. Without allow_inconsistent_metadata the document is refused (inherited-roles.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

let db: { url: string };
let s: TestServer;

beforeAll(async () => {
  db = await createDatabase();
  s = await startServer({ database: db });
  await s.runSql('create table doc (id int primary key); insert into doc values (1), (2);');
}, 60_000);

afterAll(async () => {
  await s?.stop();
});

const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const as = (role: string) => ({ 'x-svc-role': role });
const CYCLE = {
  type: 'inherited_role',
  name: 'inherited role c2',
  reason: 'found cycle(s) in roles: ["c2","c1","c2"]',
  definition: { role_name: 'c2', role_set: ['c1', 'owner'] },
};

describe('a cycle accepted with allow_inconsistent_metadata', () => {
  it('is reported in the answer and by get_inconsistent_metadata, and its roles serve nothing', async () => {
    await ok({
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'doc' } },
        { type: 'pg_create_select_permission', args: { table: 'doc', role: 'owner', permission: { columns: '*', filter: { id: { _eq: 1 } } } } },
        { type: 'pg_create_select_permission', args: { table: 'doc', role: 'other', permission: { columns: '*', filter: { id: { _eq: 2 } } } } },
        { type: 'add_inherited_role', args: { role_name: 'fine', role_set: ['owner', 'other'] } },
      ],
    });
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    md.inherited_roles = [...md.inherited_roles, { role_name: 'c1', role_set: ['owner', 'c2'] }, { role_name: 'c2', role_set: ['c1', 'owner'] }];
    // Without the flag: refused, nothing kept.
    const refused = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: md } });
    expect([refused.status, refused.body.code, refused.body.error]).toEqual([400, 'cyclic-dependency', 'found cycle(s) in roles: ["c2","c1","c2"]']);
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toEqual([{ role_name: 'fine', role_set: ['owner', 'other'] }]);
    // With it: accepted, and the answer says what is inconsistent.
    const accepted = await ok({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: md } });
    expect(accepted).toEqual({ is_consistent: false, inconsistent_objects: [CYCLE] });
    expect(await ok({ type: 'get_inconsistent_metadata', args: {} })).toEqual({ is_consistent: false, inconsistent_objects: [CYCLE] });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toHaveLength(3);
    // The roles of the cycle get no permission; the others serve as before.
    for (const role of ['c1', 'c2']) {
      const r = await s.gql('{ doc { id } }', undefined, as(role));
      expect(r.errors?.[0]?.message, role).toBe("field 'doc' not found in type: 'query_root'");
    }
    expect(await s.gql('{ doc(order_by: {id: asc}) { id } }', undefined, as('fine'))).toEqual({ data: { doc: [{ id: 1 }, { id: 2 }] } });
  });

  it('is not blamed on later operations, and reload_metadata still reports it', async () => {
    expect(await ok({ type: 'pg_create_select_permission', args: { table: 'doc', role: 'third', permission: { columns: ['id'], filter: {} } } })).toEqual({ message: 'success' });
    // An inherited role on top of the cycle is refused for its own sake.
    const onTop = await s.metadata({ type: 'add_inherited_role', args: { role_name: 'c3', role_set: ['c1', 'third'] } });
    expect([onTop.status, onTop.body.code]).toEqual([400, 'invalid-configuration']);
    expect(onTop.body.error).toContain('the following parent role(s) are not found: c1');
    expect(await ok({ type: 'reload_metadata', args: {} })).toEqual({ message: 'success', is_consistent: false, inconsistent_objects: [CYCLE] });
  });

  it('is still reported after a restart on the stored document', async () => {
    await s.stop();
    s = await startServer({ database: db });
    expect(await ok({ type: 'get_inconsistent_metadata', args: {} })).toEqual({ is_consistent: false, inconsistent_objects: [CYCLE] });
    expect((await s.gql('{ doc { id } }', undefined, as('c1'))).errors?.[0]?.message).toBe("field 'doc' not found in type: 'query_root'");
    expect(await s.gql('{ doc { id } }', undefined, as('owner'))).toEqual({ data: { doc: [{ id: 1 }] } });
  }, 60_000);

  it('is taken out by drop_inconsistent_metadata, with the roles that needed it', async () => {
    expect(await ok({ type: 'drop_inconsistent_metadata', args: {} })).toEqual({ message: 'success' });
    expect(await ok({ type: 'get_inconsistent_metadata', args: {} })).toEqual({ is_consistent: true, inconsistent_objects: [] });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toEqual([{ role_name: 'fine', role_set: ['owner', 'other'] }]);
  });

  it('includes a role in its own role_set (a cycle of one)', async () => {
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    md.inherited_roles = [...md.inherited_roles, { role_name: 'selfish', role_set: ['selfish', 'owner'] }];
    const self = { type: 'inherited_role', name: 'inherited role selfish', reason: 'found cycle(s) in roles: ["selfish","selfish"]', definition: { role_name: 'selfish', role_set: ['selfish', 'owner'] } };
    expect(await ok({ type: 'replace_metadata', version: 2, args: { allow_inconsistent_metadata: true, metadata: md } })).toEqual({ is_consistent: false, inconsistent_objects: [self] });
    expect((await s.gql('{ doc { id } }', undefined, as('selfish'))).errors?.[0]?.message).toBe("field 'doc' not found in type: 'query_root'");
    expect(await ok({ type: 'drop_inconsistent_metadata', args: {} })).toEqual({ message: 'success' });
    expect((await ok({ type: 'get_inconsistent_metadata', args: {} })).is_consistent).toBe(true);
  });
});
