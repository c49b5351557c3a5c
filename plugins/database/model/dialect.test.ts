/**
 * The framework knows no dialect (Note [Dialects] in types.ts): a test plugin registers a source
 * kind `fake` with a dialect of its own (types `num`, `str`, `point`, an operator `_near`, default
 * schema `shop`) and an introspection of fixed tables, and the metadata API tracks its tables,
 * creates a relationship and permissions over it without any PostgreSQL behind the source.
 */
import { describe, expect, it } from 'vitest';
import * as v from '../../../core/valibot.js';
import { definePlugin } from '../../../core/plugin.js';
import { useServer } from '../../../test/helpers.js';
import { DatabaseToken, type ColumnInfo, type ColumnType, type Dialect, type Introspection, type ScalarType, type SourceConnection, type TableInfo } from '../index.js';

const column = (name: string, position: number, udt: string): ColumnInfo => ({
  name,
  position,
  type: udt,
  udt,
  typeSchema: 'fake',
  typeKind: 'base',
  nullable: false,
  hasDefault: false,
  isIdentity: false,
  isGenerated: false,
  description: null,
});

const table = (oid: number, name: string, columns: ColumnInfo[], foreignKeys: TableInfo['foreignKeys'] = []): TableInfo => ({
  schema: 'shop',
  name,
  oid,
  relation: 'table',
  columns,
  primaryKey: { name: `${name}_pk`, columns: ['id'] },
  uniqueConstraints: [],
  foreignKeys,
  description: null,
  viewInfo: null,
});

const TABLES = [
  table(1, 'owner', [column('id', 1, 'num'), column('name', 2, 'str')]),
  table(2, 'item', [column('id', 1, 'num'), column('label', 2, 'str'), column('pos', 3, 'point'), column('owner_id', 4, 'num')], [
    { name: 'item_owner', columns: ['owner_id'], refSchema: 'shop', refTable: 'owner', refColumns: ['id'] },
  ]),
  table(3, 'stock', [column('id', 1, 'num')]),
  // Outside the default schema.
  { ...table(4, 'crate', [column('id', 1, 'num')]), schema: 'back' },
];

const introspection = (): Introspection => ({
  tables: new Map(TABLES.map((t) => [`"${t.schema}"."${t.name}"`, t])),
  functions: new Map(),
  types: new Map(),
});

const SCALARS: Record<string, ScalarType> = {
  num: { name: 'num', category: 'numeric', graphql: 'Int', comparable: true, bindAs: 'num', parse: (x) => (typeof x === 'number' ? undefined : 'a num is a number') },
  str: { name: 'str', category: 'string', graphql: 'String', comparable: true, bindAs: 'str', parse: (x) => (typeof x === 'string' ? undefined : 'a str is a string') },
  point: {
    name: 'point',
    category: 'other',
    graphql: 'point',
    comparable: true,
    bindAs: 'point',
    parse: (x) => (Array.isArray(x) && x.length === 2 && x.every((n) => typeof n === 'number') ? undefined : 'a point is [x, y]'),
  },
};

const fakeDialect: Dialect = {
  defaultSchema: 'shop',
  quoteIdent: (name) => `[${name}]`,
  scalar: (t: ColumnType) => SCALARS[t.udt]!,
  operators: { near: { operand: 'one', guard: { ok: (t) => t.udt === 'point', expected: '"point"' } } },
  sessionArgument: () => false,
  enumTable: { isText: (t) => t.udt === 'str', valuesQuery: () => 'values of an enum table' },
};

const connection: SourceConnection = {
  executor: { query: async () => Promise.reject(new Error('the fake source runs no SQL')) },
  introspect: async () => introspection(),
  transaction: async () => Promise.reject(new Error('the fake source runs no SQL')),
  ping: async () => {},
  close: async () => {},
};

const fakePlugin = definePlugin({
  name: 'fake-source',
  after: ['database'],
  setup(k) {
    k.use(DatabaseToken).registerKind({
      kind: 'fake',
      prefix: 'fake',
      legacy: false,
      configSchema: v.looseObject({}),
      connect: () => connection,
      dialect: fakeDialect,
    });
  },
});

const s = useServer(undefined, { extraPlugins: [fakePlugin] });
const source = 'shop';
const item = { schema: 'shop', name: 'item' };
const permission = (filter: unknown) => ({ type: 'fake_create_select_permission', args: { source, table: item, role: 'user', permission: { columns: ['id', 'label'], filter } } });

describe('a source kind with a fake dialect', () => {
  it('tracks tables, creates a relationship and a permission with the dialect operators', async () => {
    expect((await s.metadata({ type: 'fake_add_source', args: { name: source, configuration: {} } })).status).toBe(200);
    for (const name of ['owner', 'item']) {
      expect(await s.metadata({ type: 'fake_track_table', args: { source, table: { schema: 'shop', name } } })).toMatchObject({ status: 200 });
    }
    const rel = { type: 'fake_create_object_relationship', args: { source, table: item, name: 'owner', using: { foreign_key_constraint_on: 'owner_id' } } };
    expect(await s.metadata(rel)).toMatchObject({ status: 200 });
    const filter = { _and: [{ pos: { _near: [1, 2] } }, { owner: { name: { _eq: 'X-Svc-User-Name' } } }, { id: { _gt: 0 } }] };
    expect(await s.metadata(permission(filter))).toMatchObject({ status: 200 });

    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    const exported = md.sources.find((x: { name: string }) => x.name === source);
    expect(exported.kind).toBe('fake');
    expect(exported.tables.find((t: { table: unknown }) => JSON.stringify(t.table) === JSON.stringify(item))).toMatchObject({
      object_relationships: [{ name: 'owner' }],
      select_permissions: [{ role: 'user', permission: { filter } }],
    });
    expect((await s.metadata({ type: 'get_inconsistent_metadata', args: {} })).body).toMatchObject({ is_consistent: true });
  });

  it('checks operators and values with the dialect, not with PostgreSQL', async () => {
    const refused = async (filter: unknown) => {
      const r = await s.metadata(permission(filter));
      expect(r.status).toBe(400);
      return JSON.stringify(r.body);
    };
    await s.metadata({ type: 'fake_drop_select_permission', args: { source, table: item, role: 'user' } });
    // The dialect's operator, on a type its guard refuses.
    expect(await refused({ label: { _near: [1, 2] } })).toContain('is of type \\"str\\"; this operator works only on columns of type \\"point\\"');
    // PostgreSQL's operators are PostgreSQL's.
    expect(await refused({ label: { _like: 'a%' } })).toContain('Unknown operator: _like');
    // Values parse as the dialect says, through relationships too.
    expect(await refused({ pos: { _near: 'here' } })).toContain('a point is [x, y]');
    expect(await refused({ owner: { id: { _eq: 'one' } } })).toContain('a num is a number');
    expect(await s.metadata(permission({ owner: { id: { _in: [1, 2] } } }))).toMatchObject({ status: 200 });
  });
});

describe("the fake kind's default schema (shop), not PostgreSQL's", () => {
  const refused = async (req: { type: string; args: unknown }) => {
    const r = await s.metadata(req);
    expect(r.status).toBe(400);
    return (r.body as { error: string }).error;
  };
  const exportedTable = async (name: string) => {
    const md = (await s.metadata({ type: 'export_metadata', args: {} })).body;
    return md.sources.find((x: { name: string }) => x.name === source).tables.find((t: { table: { name: string } }) => t.table.name === name);
  };

  it('resolves a bare table name in it', async () => {
    expect(await s.metadata({ type: 'fake_track_table', args: { source, table: 'stock' } })).toMatchObject({ status: 200 });
    expect((await exportedTable('stock')).table).toEqual({ schema: 'shop', name: 'stock' });
    // `{name}` without a schema too.
    expect(await s.metadata({ type: 'fake_untrack_table', args: { source, table: { name: 'stock' } } })).toMatchObject({ status: 200 });
    expect(await exportedTable('stock')).toBeUndefined();
  });

  it("resolves a permission's bare `_exists._table` in it", async () => {
    const filter = { _exists: { _table: 'owner', _where: { id: { _eq: 1 } } } };
    const args = { source, table: 'item', role: 'clerk', permission: { columns: ['id'], filter } };
    expect(await s.metadata({ type: 'fake_create_select_permission', args })).toMatchObject({ status: 200 });
    const perm = (await exportedTable('item')).select_permissions.find((p: { role: string }) => p.role === 'clerk');
    expect(perm.permission.filter).toEqual({ _exists: { _table: { schema: 'shop', name: 'owner' }, _where: { id: { _eq: 1 } } } });
  });

  it('names a table in it without the schema, one elsewhere with it', async () => {
    expect(await refused({ type: 'fake_track_table', args: { source, table: 'nothing' } })).toBe('no such table/view exists in source: "nothing"');
    expect(await refused({ type: 'fake_track_table', args: { source, table: { schema: 'back', name: 'nothing' } } })).toBe(
      'no such table/view exists in source: "back.nothing"',
    );
    expect(await s.metadata({ type: 'fake_track_table', args: { source, table: { schema: 'back', name: 'crate' } } })).toMatchObject({ status: 200 });
    expect(await refused({ type: 'fake_track_table', args: { source, table: { schema: 'back', name: 'crate' } } })).toBe('view/table already tracked: "back.crate"');
    expect(await refused({ type: 'fake_track_table', args: { source, table: 'owner' } })).toBe('view/table already tracked: "owner"');
    // In a boolean expression (checked in the build).
    const exists = (table: unknown) => ({ source, table: 'item', role: 'auditor', permission: { columns: ['id'], filter: { _exists: { _table: table, _where: {} } } } });
    expect(await refused({ type: 'fake_create_select_permission', args: exists('ghost') })).toContain('table \"ghost\" does not exist');
    expect(await refused({ type: 'fake_create_select_permission', args: exists({ schema: 'back', name: 'ghost' }) })).toContain('table \"back.ghost\" does not exist');
  });
});
