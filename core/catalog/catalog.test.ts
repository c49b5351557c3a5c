/** The catalog stores the document as parts and writes only what changed (Note [Catalog parts]). */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { assignOrds, diffParts, type Part } from './store.js';
import { createDatabase, startServer, type TestServer } from '../../test/helpers.js';

describe('assignOrds', () => {
  const stored = (keys: string[]) => new Map(keys.map((k, i) => [k, { ord: i, json: '1' }]));
  const parts = (keys: string[]): Part[] => keys.map((k) => [k, 1]);
  const ords = (m: Map<string, { ord: number }> | undefined) => [...m!.values()].map((x) => x.ord);

  it('keeps ords on append and removal', () => {
    expect(ords(assignOrds(parts(['a', 'b', 'c', 'd']), stored(['a', 'b', 'c'])))).toEqual([0, 1, 2, 3]);
    expect(ords(assignOrds(parts(['a', 'c']), stored(['a', 'b', 'c'])))).toEqual([0, 2]);
  });

  it('fits an insertion between its neighbours and keeps the order increasing', () => {
    const o = ords(assignOrds(parts(['x', 'a', 'n', 'b']), stored(['a', 'b'])));
    expect(o[1]).toBe(0);
    expect(o[3]).toBe(1);
    expect(o).toEqual([...o].sort((p, q) => p - q));
    expect(new Set(o).size).toBe(4);
  });

  it('handles a reorder', () => {
    const o = ords(assignOrds(parts(['c', 'b', 'a']), stored(['a', 'b', 'c'])));
    expect(o).toEqual([...o].sort((p, q) => p - q));
    expect(new Set(o).size).toBe(3);
  });
});

describe('diffParts', () => {
  const a = { a: 1 };
  const b = { b: 1 };
  const c = { c: 1 };
  const stored = (parts: Part[]) => new Map(parts.map(([k, v], i) => [k, { ord: i, json: JSON.stringify(v) }]));

  it('writes only the changed segment', () => {
    const prev: Part[] = [['a', a], ['b', b], ['c', c]];
    const b2 = { b: 2 };
    const d = diffParts(prev, [['a', a], ['b', b2], ['c', c]], stored(prev));
    expect(d).toEqual({ upserts: [['b', { ord: 1, json: '{"b":2}' }]], deletes: [] });
  });

  it('appends after the last ord and deletes removed keys', () => {
    const prev: Part[] = [['a', a], ['b', b], ['c', c]];
    expect(diffParts(prev, [['a', a], ['b', b], ['c', c], ['d', { d: 1 }]], stored(prev)).upserts).toEqual([['d', { ord: 3, json: '{"d":1}' }]]);
    expect(diffParts(prev, [['a', a], ['c', c]], stored(prev))).toEqual({ upserts: [], deletes: ['b'] });
  });

  it('an equal value in a new object is not written again', () => {
    const prev: Part[] = [['a', a], ['b', b]];
    expect(diffParts(prev, [['a', { a: 1 }], ['b', { b: 1 }]], stored(prev))).toEqual({ upserts: [], deletes: [] });
  });

  it('inserts between neighbours, numbering again from there to the nearer end when there is no room (Note [Catalog ords])', () => {
    const prev: Part[] = [['a', a], ['c', c]];
    const st = new Map([['a', { ord: 0, json: '{"a":1}' }], ['c', { ord: 1e-9, json: '{"c":1}' }]]);
    const d = diffParts(prev, [['a', a], ['b', b], ['c', c]], st);
    expect(d.upserts.map(([k, v]) => [k, v.ord])).toEqual([['b', 1], ['c', 2]]);
    // Nearer the start: the parts before it, numbered down from the neighbour kept.
    const st2 = new Map([['a', { ord: 0, json: '{"a":1}' }], ['c', { ord: 1e-9, json: '{"c":1}' }], ['d', { ord: 1, json: '{"d":1}' }], ['e', { ord: 2, json: '{"e":1}' }]]);
    const prev2: Part[] = [['a', a], ['c', c], ['d', { d: 1 }], ['e', { e: 1 }]];
    const d2 = diffParts(prev2, [['a', a], ['b', b], ...prev2.slice(1)], st2);
    expect(d2.upserts.map(([k, v]) => [k, v.ord])).toEqual([['a', 1e-9 - 2], ['b', 1e-9 - 1]]);
  });

  it('tables tracked one after another, before the rows of the next section, rewrite only the rows after them', () => {
    // A source's row, its 200 tables, then three rows of later sections, numbered as stored.
    let list: Part[] = [['sources/s', { s: 1 }], ...Array.from({ length: 200 }, (_, i): Part => [`sources/t${i}`, { t: i }]), ['actions', null], ['actions/x', { x: 1 }], ['cron', []]];
    const st = new Map(list.map(([k, v], i) => [k, { ord: i, json: JSON.stringify(v) }]));
    let written = 0;
    for (let i = 200; i < 400; i++) {
      const next: Part[] = [...list.slice(0, -3), [`sources/t${i}`, { t: i }], ...list.slice(-3)];
      const d = diffParts(list, next, st);
      expect(d.deletes).toEqual([]);
      expect(d.upserts.length).toBeLessThanOrEqual(4);
      for (const [k, v] of d.upserts) st.set(k, v);
      written += d.upserts.length;
      list = next;
      const ords = list.map(([k]) => st.get(k)!.ord);
      expect(ords.every((o, j) => j === 0 || o > ords[j - 1]!)).toBe(true);
    }
    // The table's own row each time, and the three rows after it about once in twenty.
    expect(written).toBeLessThan(200 + 3 * 15);
  });

  it('any sequence of insertions, removals and changes keeps the stored ords increasing along the list', () => {
    const op = fc.record({ kind: fc.constantFrom('insert', 'remove', 'change'), at: fc.nat(), value: fc.nat({ max: 3 }) });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        let list: Part[] = [];
        const st = new Map<string, { ord: number; json: string }>();
        let n = 0;
        for (const o of ops) {
          const next = list.slice();
          const i = list.length ? o.at % list.length : 0;
          if (o.kind === 'insert') next.splice(o.at % (list.length + 1), 0, [`k${n++}`, { v: o.value }]);
          else if (o.kind === 'remove' && list.length) next.splice(i, 1);
          else if (list.length) next[i] = [list[i]![0], { v: o.value, w: n++ }];
          const d = diffParts(list, next, st);
          for (const k of d.deletes) st.delete(k);
          for (const [k, v] of d.upserts) st.set(k, v);
          list = next;
          expect([...st.keys()].sort()).toEqual(list.map(([k]) => k).sort());
          const ords = list.map(([k]) => st.get(k)!.ord);
          expect(ords.every((x, j) => j === 0 || x > ords[j - 1]!)).toBe(true);
          for (const [k, v] of list) expect(st.get(k)!.json).toBe(JSON.stringify(v));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('catalog writes', () => {
  let s: TestServer;
  let sql: postgres.Sql;
  beforeAll(async () => {
    s = await startServer();
    sql = s.sql;
    await s.runSql('create table a (id int primary key); create table b (id int primary key); create table c (id int primary key)');
  });
  afterAll(async () => {
    await s?.stop();
  });

  const rows = async () =>
    new Map((await sql`select key, xmin::text as x from svc_catalog.metadata_part`).map((r) => [r.key as string, r.x as string]));

  it('tracking one more table writes one row and leaves the others untouched', async () => {
    await s.metadata({ type: 'pg_track_table', args: { table: 'a' } });
    await s.metadata({ type: 'pg_track_table', args: { table: 'b' } });
    const before = await rows();
    await s.metadata({ type: 'pg_track_table', args: { table: 'c' } });
    const after = await rows();
    const changed = [...after].filter(([k, x]) => before.get(k) !== x).map(([k]) => k);
    expect(changed).toEqual(['sources/["default","public","c"]']);
    // Untracking deletes just that row.
    await s.metadata({ type: 'pg_untrack_table', args: { table: 'b' } });
    const later = await rows();
    expect([...before.keys()].filter((k) => !later.has(k))).toEqual(['sources/["default","public","b"]']);
    expect((await s.metadata({ type: 'export_metadata', args: {} })).body.sources[0].tables.map((t: { table: { name: string } }) => t.table.name)).toEqual(['a', 'c']);
  });

  it('holds the tables of the document, in order, after any operations (a split reuses the rows of the last)', async () => {
    const tables = ['a', 'b', 'c'];
    const ops = [
      ...tables.flatMap((table) => [
        { type: 'pg_track_table', args: { table } },
        { type: 'pg_untrack_table', args: { table } },
        { type: 'pg_set_table_customization', args: { table, configuration: { custom_name: `${table}_x` } } },
        { type: 'pg_set_table_customization', args: { table, configuration: {} } },
      ]),
      { type: 'pg_create_select_permission', args: { table: 'b', role: 'user', permission: { columns: ['id'], filter: {} } } },
      { type: 'pg_drop_select_permission', args: { table: 'b', role: 'user' } },
    ];
    const stored = async () =>
      (await sql`select key, value from svc_catalog.metadata_part where key like 'sources/["default",%' order by ord`).map((r) => [r.key, JSON.parse(r.value as string)]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...ops), { minLength: 1, maxLength: 12 }), async (sequence) => {
        for (const op of sequence) {
          const r = await s.metadata(op);
          expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
          const held = (s.kernel.state().metadata.sources as { tables: { table: { schema: string; name: string } }[] }[])[0]!.tables;
          expect(await stored()).toEqual(held.map((t) => [`sources/["default","${t.table.schema}","${t.table.name}"]`, JSON.parse(JSON.stringify(t))]));
        }
      }),
      { numRuns: 15 },
    );
  });

  it('a restart reads the same document back, in order', async () => {
    const before = (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
    const again = await startServer({ database: { url: s.url } });
    try {
      expect((await again.metadata({ type: 'export_metadata', version: 2, args: {} })).body).toEqual(before);
    } finally {
      await again.stop();
    }
  });
});

describe('catalog migration', () => {
  it('upgrades a version 1 catalog (one document row) in place', async () => {
    const db = await createDatabase();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const doc = {
      version: 3,
      sources: [{ name: 'default', kind: 'postgres', tables: [{ table: { schema: 'public', name: 'old' } }], configuration: { connection_info: { database_url: { from_env: 'SVC_GRAPHQL_DATABASE_URL' } } } }],
    };
    await sql.unsafe(`
      create table old (id int primary key);
      create schema svc_catalog;
      create table svc_catalog.catalog_version (id int primary key default 1, version text not null, upgraded_on timestamptz not null default now());
      insert into svc_catalog.catalog_version (version) values ('1');
      create table svc_catalog.metadata (id int primary key default 1, metadata json not null, resource_version bigint not null, updated_at timestamptz default now());
    `);
    await sql`insert into svc_catalog.metadata (metadata, resource_version) values (${JSON.stringify(doc)}::text::json, 7)`;
    await sql.end();
    const s = await startServer({ database: db });
    try {
      const r = await s.metadata({ type: 'export_metadata', version: 2, args: {} });
      expect(r.body).toEqual({ resource_version: 7, metadata: doc });
      const [v] = await s.sql`select version from svc_catalog.catalog_version`;
      expect(v!.version).toBe('2');
    } finally {
      await s.stop();
    }
  });

  it('refuses a catalog version it does not know', async () => {
    const db = await createDatabase();
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`create schema svc_catalog;
      create table svc_catalog.catalog_version (id int primary key default 1, version text not null, upgraded_on timestamptz not null default now());
      insert into svc_catalog.catalog_version (version) values ('99');`);
    await sql.end();
    await expect(startServer({ database: db })).rejects.toThrow('unsupported version : 99');
  });
});
