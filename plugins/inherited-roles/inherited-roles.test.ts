/**
 * Inherited roles (plugins/inherited-roles and Note [Inherited roles] in
 * plugins/database/model/inherit.ts), against a real PostgreSQL: the operations and their errors,
 * the section in export/replace/clear, select permissions combined with cell-level nulling (no
 * value of a hidden cell reaches the role through output, where, order_by, distinct_on or
 * aggregates), mutations inherited only where the parents agree, function permissions, nested
 * roles and explicit overrides.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from '../../test/helpers.js';

const SEED = `
create table doc (id int primary key, owner int not null, team int not null, title text not null, secret text, score int not null);
insert into doc values
  (1, 1, 10, 't1', 's1', 5),
  (2, 2, 10, 't2', 's2', 7),
  (3, 3, 20, 't3', 's3', 11),
  (4, 4, 30, 't4', 's4', 13);
create function doc_shout(d doc) returns text language sql stable as $$ select upper(d.title) $$;
create function doc_is_even(d doc) returns boolean language sql stable as $$ select d.id % 2 = 0 $$;
create function docs_of(t int) returns setof doc language sql stable as $$ select * from doc where team = t $$;
`;

const s = useServer(SEED);
const ok = async (body: unknown) => {
  const r = await s.metadata(body);
  expect(r.status, r.text).toBe(200);
  return r.body;
};
const as = (role: string, vars: Record<string, string> = {}) => ({ 'x-svc-role': role, ...Object.fromEntries(Object.entries(vars).map(([k, v]) => [`x-svc-${k}`, v])) });
const data = async (q: string, role: string, vars: Record<string, string> = {}) => {
  const r = await s.gql(q, undefined, as(role, vars));
  expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
  return r.data;
};
const error = async (q: string, role: string, vars: Record<string, string> = {}) => (await s.gql(q, undefined, as(role, vars))).errors?.[0];

beforeAll(async () => {
  await ok({
    type: 'bulk',
    args: [
      { type: 'pg_track_table', args: { table: 'doc' } },
      { type: 'pg_add_computed_field', args: { table: 'doc', name: 'shout', definition: { function: 'doc_shout' } } },
      { type: 'pg_add_computed_field', args: { table: 'doc', name: 'is_even', definition: { function: 'doc_is_even' } } },
      { type: 'pg_track_function', args: { function: 'docs_of' } },
      // owner: its own rows, every column, the computed field.
      { type: 'pg_create_select_permission', args: { table: 'doc', role: 'owner', permission: { columns: '*', computed_fields: ['shout'], filter: { owner: 'X-Svc-User-Id' }, allow_aggregations: true } } },
      // teammate: the team's rows, no secret, no score.
      { type: 'pg_create_select_permission', args: { table: 'doc', role: 'teammate', permission: { columns: ['id', 'owner', 'team', 'title'], filter: { team: 'X-Svc-Team' }, limit: 10 } } },
      // evens: a filter through a computed field, title only.
      { type: 'pg_create_select_permission', args: { table: 'doc', role: 'evens', permission: { columns: ['id', 'title'], filter: { is_even: { _eq: true } } } } },
      { type: 'add_inherited_role', args: { role_name: 'member', role_set: ['owner', 'teammate'] } },
    ],
  });
});

describe('the operations', () => {
  it('keeps the section in export, and drop/replace/clear it', async () => {
    await ok({ type: 'add_inherited_role', args: { role_name: 'tmp', role_set: ['owner', 'evens'] } });
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    expect(md.inherited_roles).toEqual([
      { role_name: 'member', role_set: ['owner', 'teammate'] },
      { role_name: 'tmp', role_set: ['owner', 'evens'] },
    ]);
    await ok({ type: 'drop_inherited_role', args: { role_name: 'tmp' } });
    const after = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    expect(after.inherited_roles).toEqual([{ role_name: 'member', role_set: ['owner', 'teammate'] }]);
    // replace_metadata with the section as it was restores it.
    await ok({ type: 'replace_metadata', version: 2, args: { metadata: md } });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toHaveLength(2);
    await ok({ type: 'drop_inherited_role', args: { role_name: 'tmp' } });
  });

  it('is emptied by clear_metadata', async () => {
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    await ok({ type: 'clear_metadata', args: {} });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toBeUndefined();
    await ok({ type: 'replace_metadata', version: 2, args: { metadata: md } });
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toEqual(md.inherited_roles);
  });

  it('refuses what Hasura refuses', async () => {
    const own = await s.metadata({ type: 'add_inherited_role', args: { role_name: 'x', role_set: ['x', 'owner'] } });
    expect(own.status).toBe(400);
    expect(own.body).toMatchObject({ code: 'invalid-params', error: 'an inherited role name cannot be in the role combination' });
    const gone = await s.metadata({ type: 'drop_inherited_role', args: { role_name: 'nobody' } });
    expect(gone.body).toMatchObject({ code: 'not-exists', error: '"nobody" inherited role doesn\'t exist' });
    const missing = await s.metadata({ type: 'add_inherited_role', args: { role_name: 'x', role_set: ['owner', 'ghost'] } });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('invalid-configuration');
    expect(missing.body.error).toContain('the following parent role(s) are not found: ghost which are required to construct the inherited role: "x"');
    const parsed = await s.metadata({ type: 'add_inherited_role', args: { role_name: 'x' } });
    expect(parsed.status).toBe(400);
    // Nothing of them was kept.
    expect((await ok({ type: 'export_metadata', version: 2, args: {} })).metadata.inherited_roles).toEqual([{ role_name: 'member', role_set: ['owner', 'teammate'] }]);
  });

  it('refuses cycles with the roles along the cycle', async () => {
    const md = (await ok({ type: 'export_metadata', version: 2, args: {} })).metadata;
    md.inherited_roles = [
      ...md.inherited_roles,
      { role_name: 'c1', role_set: ['member', 'c3'] },
      { role_name: 'c2', role_set: ['c1', 'owner'] },
      { role_name: 'c3', role_set: ['c2', 'teammate'] },
    ];
    const r = await s.metadata({ type: 'replace_metadata', version: 2, args: { metadata: md } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'cyclic-dependency', error: 'found cycle(s) in roles: ["c3","c2","c1","c3"]' });
  });
});

describe('select permissions', () => {
  it('shows the union of the rows, each cell only where a parent allowing its column sees the row', async () => {
    const d = await data('{ doc(order_by: {id: asc}) { id title secret score shout } }', 'member', { 'user-id': '1', team: '20' });
    expect(d.doc).toEqual([
      // owner's row: every column.
      { id: 1, title: 't1', secret: 's1', score: 5, shout: 'T1' },
      // the teammate's row: secret, score and the computed field hidden.
      { id: 3, title: 't3', secret: null, score: null, shout: null },
    ]);
  });

  it('keeps a row and a column hidden from every parent hidden', async () => {
    const d = await data('{ doc(order_by: {id: asc}) { id } }', 'member', { 'user-id': '1', team: '20' });
    expect(d.doc.map((x: { id: number }) => x.id)).toEqual([1, 3]);
    expect(await data('{ doc_by_pk(id: 4) { id } }', 'member', { 'user-id': '1', team: '20' })).toEqual({ doc_by_pk: null });
    // evens has only id and title: a role made of evens and teammate has no secret at all.
    await ok({ type: 'add_inherited_role', args: { role_name: 'narrow', role_set: ['evens', 'teammate'] } });
    try {
      const e = await error('{ doc { secret } }', 'narrow', { team: '10' });
      expect(e).toMatchObject({ extensions: { code: 'validation-failed' }, message: "field 'secret' not found in type: 'doc'" });
    } finally {
      await ok({ type: 'drop_inherited_role', args: { role_name: 'narrow' } });
    }
  });

  it('leaks no hidden value through where, order_by, distinct_on or aggregates', async () => {
    const vars = { 'user-id': '1', team: '20' };
    // Row 3's secret is s3, hidden from member: filtering on it finds nothing.
    expect((await data('{ doc(where: {secret: {_eq: "s3"}}) { id } }', 'member', vars)).doc).toEqual([]);
    expect((await data('{ doc(where: {score: {_gt: 6}}) { id } }', 'member', vars)).doc).toEqual([]);
    // ... but it finds the hidden cell as null, as the role sees it.
    expect((await data('{ doc(where: {secret: {_is_null: true}}) { id } }', 'member', vars)).doc).toEqual([{ id: 3 }]);
    expect((await data('{ doc(where: {shout: {_eq: "T3"}}) { id } }', 'member', vars)).doc).toEqual([]);
    // Ordering by a hidden value orders it as null (nulls last ascending).
    expect((await data('{ doc(order_by: {score: desc_nulls_last}) { id } }', 'member', vars)).doc).toEqual([{ id: 1 }, { id: 3 }]);
    expect((await data('{ doc(order_by: {score: asc}) { id } }', 'member', vars)).doc).toEqual([{ id: 1 }, { id: 3 }]);
    // User 3 of team 10 sees row 3 whole and rows 1, 2 without their scores (5 and 7 < 11).
    const other = { 'user-id': '3', team: '10' };
    expect((await data('{ doc(order_by: [{score: asc}, {id: asc}]) { id } }', 'member', other)).doc).toEqual([{ id: 3 }, { id: 1 }, { id: 2 }]);
    expect((await data('{ doc(order_by: [{shout: asc}, {id: asc}]) { id } }', 'member', other)).doc).toEqual([{ id: 3 }, { id: 1 }, { id: 2 }]);
    // Aggregates see the hidden cells as null.
    const agg = await data('{ doc_aggregate { aggregate { count sum { score } max { score secret } cnt: count(columns: [secret]) } } }', 'member', vars);
    expect(agg.doc_aggregate.aggregate).toEqual({ count: 2, sum: { score: 5 }, max: { score: 5, secret: 's1' }, cnt: 1 });
    // distinct_on tells rows apart by what the role sees: rows 3 and 4 (team 20, 30) as teammate
    // of neither; with user 3 and team 10, rows 1 and 2 have hidden secrets (null): one of them.
    const dist = await data('{ doc(distinct_on: secret, order_by: [{secret: asc}, {id: asc}]) { id secret } }', 'member', { 'user-id': '3', team: '10' });
    expect(dist.doc).toEqual([{ id: 3, secret: 's3' }, { id: 1, secret: null }]);
  });

  it('makes a redacted column nullable in the role schema, and keeps the others as they are', async () => {
    const t = await data('{ __type(name: "doc") { fields { name type { kind } } } }', 'member');
    const kind = Object.fromEntries(t.__type.fields.map((f: { name: string; type: { kind: string } }) => [f.name, f.type.kind]));
    expect(kind).toMatchObject({ id: 'NON_NULL', title: 'NON_NULL', score: 'SCALAR', secret: 'SCALAR' });
  });

  it('redacts by a parent filter that calls a computed field', async () => {
    await ok({ type: 'add_inherited_role', args: { role_name: 'even_owner', role_set: ['owner', 'evens'] } });
    try {
      const d = await data('{ doc(order_by: {id: asc}) { id title secret shout } }', 'even_owner', { 'user-id': '1' });
      expect(d.doc).toEqual([
        { id: 1, title: 't1', secret: 's1', shout: 'T1' },
        { id: 2, title: 't2', secret: null, shout: null },
        { id: 4, title: 't4', secret: null, shout: null },
      ]);
      const agg = await data('{ doc_aggregate { aggregate { max { secret } } } }', 'even_owner', { 'user-id': '2' });
      expect(agg.doc_aggregate.aggregate.max.secret).toBe('s2');
    } finally {
      await ok({ type: 'drop_inherited_role', args: { role_name: 'even_owner' } });
    }
  });

  it('takes the largest limit that is set (as Hasura), and aggregation when one allows it', async () => {
    await ok({ type: 'pg_create_select_permission', args: { table: 'doc', role: 'lim1', permission: { columns: ['id'], filter: {}, limit: 1 } } });
    await ok({ type: 'pg_create_select_permission', args: { table: 'doc', role: 'lim3', permission: { columns: ['id'], filter: {}, limit: 3 } } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'lims', role_set: ['lim1', 'lim3'] } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'lims_evens', role_set: ['lim1', 'evens'] } });
    try {
      expect((await data('{ doc { id } }', 'lims')).doc).toHaveLength(3);
      // evens has no limit: Hasura combines the limits that are set, so lim1's stays.
      expect((await data('{ doc { id } }', 'lims_evens')).doc).toHaveLength(1);
      expect((await error('{ doc_aggregate { aggregate { count } } }', 'lims'))?.message).toContain('doc_aggregate');
      expect((await data('{ doc_aggregate { aggregate { count } } }', 'member', { 'user-id': '1', team: '10' })).doc_aggregate.aggregate.count).toBe(2);
    } finally {
      await ok({ type: 'drop_inherited_role', args: { role_name: 'lims' } });
      await ok({ type: 'drop_inherited_role', args: { role_name: 'lims_evens' } });
      await ok({ type: 'pg_drop_select_permission', args: { table: 'doc', role: 'lim1' } });
      await ok({ type: 'pg_drop_select_permission', args: { table: 'doc', role: 'lim3' } });
    }
  });

  it('combines nested inherited roles from the original permissions, and an explicit permission wins', async () => {
    await ok({ type: 'add_inherited_role', args: { role_name: 'member_evens', role_set: ['member', 'evens'] } });
    try {
      const d = await data('{ doc(order_by: {id: asc}) { id title secret } }', 'member_evens', { 'user-id': '1', team: '20' });
      expect(d.doc).toEqual([
        { id: 1, title: 't1', secret: 's1' },
        { id: 2, title: 't2', secret: null },
        { id: 3, title: 't3', secret: null },
        { id: 4, title: 't4', secret: null },
      ]);
      await ok({ type: 'pg_create_select_permission', args: { table: 'doc', role: 'member_evens', permission: { columns: ['id'], filter: { id: 3 } } } });
      expect((await data('{ doc { id } }', 'member_evens', { 'user-id': '1', team: '20' })).doc).toEqual([{ id: 3 }]);
      expect((await error('{ doc { title } }', 'member_evens'))?.message).toBe("field 'title' not found in type: 'doc'");
    } finally {
      await s.metadata({ type: 'pg_drop_select_permission', args: { table: 'doc', role: 'member_evens' } });
      await ok({ type: 'drop_inherited_role', args: { role_name: 'member_evens' } });
    }
  });

  it('redacts in the legacy select too, its where included', async () => {
    const vars = as('member', { 'user-id': '1', team: '20' });
    const r = await s.query({ type: 'select', args: { table: 'doc', columns: ['id', 'secret'], order_by: ['id'] } }, vars);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual([
      { id: 1, secret: 's1' },
      { id: 3, secret: null },
    ]);
    const w = await s.query({ type: 'select', args: { table: 'doc', columns: ['id'], where: { secret: 's3' } } }, vars);
    expect(w.body).toEqual([]);
    const c = await s.query({ type: 'select', args: { table: 'doc', columns: ['id'], where: { score: { $ceq: 'score' } } } }, vars);
    expect(c.body).toEqual([{ id: 1 }]);
    const n = await s.query({ type: 'count', args: { table: 'doc', distinct: ['secret'] } }, vars);
    expect(n.body).toEqual({ count: 1 });
    // User 3 of team 10 sees row 3 whole and rows 1, 2 without their scores (5 and 7 < 11).
    const o = await s.query({ type: 'select', args: { table: 'doc', columns: ['id'], order_by: ['score', 'id'] } }, as('member', { 'user-id': '3', team: '10' }));
    expect(o.body).toEqual([{ id: 3 }, { id: 1 }, { id: 2 }]);
  });

  it('finds a row by a primary key only where the key is shown', async () => {
    // id is allowed by owner, teammate and evens alike: made of owner and a role without id,
    // the key of a row only the other parent sees is hidden.
    await ok({ type: 'pg_create_select_permission', args: { table: 'doc', role: 'titles', permission: { columns: ['title'], filter: { team: 30 } } } });
    await ok({ type: 'add_inherited_role', args: { role_name: 'owner_titles', role_set: ['owner', 'titles'] } });
    try {
      const d = await data('{ doc(order_by: {title: asc}) { id title } }', 'owner_titles', { 'user-id': '1' });
      expect(d.doc).toEqual([
        { id: 1, title: 't1' },
        { id: null, title: 't4' },
      ]);
      expect(await data('{ a: doc_by_pk(id: 1) { title } b: doc_by_pk(id: 4) { title } }', 'owner_titles', { 'user-id': '1' })).toEqual({ a: { title: 't1' }, b: null });
    } finally {
      await ok({ type: 'drop_inherited_role', args: { role_name: 'owner_titles' } });
      await ok({ type: 'pg_drop_select_permission', args: { table: 'doc', role: 'titles' } });
    }
  });
});

describe('mutations and functions', () => {
  it('inherits a mutation permission the parents agree on, reports one they disagree on, and an explicit one resolves it', async () => {
    const upd = (filter: unknown) => ({ columns: ['title'], filter });
    await ok({
      type: 'bulk',
      args: [
        { type: 'pg_create_update_permission', args: { table: 'doc', role: 'owner', permission: upd({ owner: 'X-Svc-User-Id' }) } },
        { type: 'pg_create_update_permission', args: { table: 'doc', role: 'teammate', permission: upd({ team: 'X-Svc-Team' }) } },
        { type: 'pg_create_delete_permission', args: { table: 'doc', role: 'owner', permission: { filter: { owner: 'X-Svc-User-Id' } } } },
        { type: 'pg_create_delete_permission', args: { table: 'doc', role: 'teammate', permission: { filter: { owner: 'X-Svc-User-Id' } } } },
      ],
    });
    try {
      const inc = await ok({ type: 'get_inconsistent_metadata', args: {} });
      expect(inc).toEqual({
        is_consistent: false,
        inconsistent_objects: [
          {
            reason: "Could not inherit permission for the role 'member' for the entity: 'update permission, table: doc, source: 'default''",
            name: 'member',
            type: 'inherited role permission inconsistency',
            entity: { permission_type: 'update', source: 'default', table: 'doc' },
          },
        ],
      });
      // The delete permissions agree: inherited (checked with a row nobody may delete).
      expect(await data('mutation { delete_doc(where: {id: {_eq: 4}}) { affected_rows } }', 'member', { 'user-id': '1', team: '10' })).toEqual({ delete_doc: { affected_rows: 0 } });
      // The update is not.
      expect((await error('mutation { update_doc(_set: {title: "x"}) { affected_rows } }', 'member'))?.message).toBe("field 'update_doc' not found in type: 'mutation_root'");
      await ok({ type: 'pg_create_update_permission', args: { table: 'doc', role: 'member', permission: upd({ id: 2 }) } });
      expect(await ok({ type: 'get_inconsistent_metadata', args: {} })).toEqual({ is_consistent: true, inconsistent_objects: [] });
      expect(await data('mutation { update_doc(where: {}, _set: {title: "t2"}) { affected_rows } }', 'member', { 'user-id': '1', team: '10' })).toEqual({ update_doc: { affected_rows: 1 } });
    } finally {
      await ok({
        type: 'bulk',
        args: [
          { type: 'pg_drop_update_permission', args: { table: 'doc', role: 'member' } },
          { type: 'pg_drop_update_permission', args: { table: 'doc', role: 'owner' } },
          { type: 'pg_drop_update_permission', args: { table: 'doc', role: 'teammate' } },
          { type: 'pg_drop_delete_permission', args: { table: 'doc', role: 'owner' } },
          { type: 'pg_drop_delete_permission', args: { table: 'doc', role: 'teammate' } },
        ],
      });
    }
  });

  it('lets an inherited role call a function when a parent may, and a function permission of its own be added', async () => {
    await ok({ type: 'pg_create_function_permission', args: { function: 'docs_of', role: 'owner' } });
    try {
      const d = await data('{ docs_of(args: {t: 10}, order_by: {id: asc}) { id secret } }', 'member', { 'user-id': '1', team: '20' });
      expect(d.docs_of).toEqual([{ id: 1, secret: 's1' }]);
      // A function permission needs a select permission on the function's table: the inherited one counts.
      await ok({ type: 'add_inherited_role', args: { role_name: 'evens_team', role_set: ['evens', 'teammate'] } });
      await ok({ type: 'pg_create_function_permission', args: { function: 'docs_of', role: 'evens_team' } });
      await ok({ type: 'pg_drop_function_permission', args: { function: 'docs_of', role: 'evens_team' } });
      await ok({ type: 'drop_inherited_role', args: { role_name: 'evens_team' } });
    } finally {
      await ok({ type: 'pg_drop_function_permission', args: { function: 'docs_of', role: 'owner' } });
    }
  });
});
