/**
 * The catalog's history (Note [Metadata history] in ./store.ts), a catalog extension: versions stored as the parts each one wrote,
 * read back whole, pruned to the limit, restarted after a gap. Random documents are saved one
 * after the other and every kept version is compared with what was saved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { CatalogStore, type DocumentCodec } from '../../core/catalog/store.js';
import type { Metadata } from '../../core/plugin.js';
import { createDatabase, seededRandom as rng } from '../../test/helpers.js';
import { HistoryStore } from './store.js';

let sql: postgres.Sql;
beforeAll(async () => {
  sql = postgres((await createDatabase('svc_history')).url, { max: 2, onnotice: () => {}, prepare: false });
});
afterAll(async () => {
  await sql.end({ timeout: 1 });
});

// One part per key of the document (what a section that splits itself does per table).
const codec: DocumentCodec = {
  split: (md) => Object.entries(md),
  join: (parts) => Object.fromEntries(parts) as Metadata,
};

/** The next document: keys added, removed, changed, and sometimes the order shuffled (which
 * moves parts' ords), the untouched values kept by reference (Note [Sharing]). */
function mutate(md: Metadata, r: () => number, step: number): Metadata {
  const entries = Object.entries(md).filter(([k]) => k !== 'version');
  const out: [string, unknown][] = [];
  for (const [k, val] of entries) {
    const x = r();
    if (x < 0.1) continue; // removed
    out.push([k, x < 0.25 ? { v: step, k } : val]);
  }
  const adds = Math.floor(r() * 3);
  for (let i = 0; i < adds; i++) {
    const at = Math.floor(r() * (out.length + 1));
    out.splice(at, 0, [`k${step}_${i}`, { v: step, new: true }]);
  }
  if (r() < 0.1) out.reverse();
  return Object.fromEntries([['version', 3], ...out]) as Metadata;
}

const keys = (md: Metadata) => Object.keys(md);

/** A catalog with the history as its extension (what the plugin registers), keeping `limit`. */
function store(schema: string, limit: number) {
  const catalog = new CatalogStore(sql, codec, schema);
  const history = new HistoryStore(limit);
  history.attach(catalog.extend(history));
  return Object.assign(catalog, {
    history: (l: number, o: number) => history.history(l, o),
    version: (rv: number) => history.version(rv),
    historyRange: () => history.historyRange(),
  });
}

async function readBack(s: ReturnType<typeof store>, rv: number) {
  const v = await s.version(rv);
  return v && { md: v.metadata, keys: keys(v.metadata), info: v.info };
}

describe('the catalog history', () => {
  // A limit of 1 prunes after the statement that records (the version it prunes to is the new one).
  it.each([
    [6, 60],
    [2, 20],
    [1, 20],
  ])('keeps the last %i versions exactly, pruning what only older ones needed (%i writes)', async (limit, steps) => {
    const schema = `history_random_${limit}`;
    const st = store(schema, limit);
    let md: Metadata = { version: 3, a: { a: 1 }, b: { b: 1 }, c: { c: 1 } };
    expect(await st.init(md)).toBe(true);
    const loaded = await st.load();
    expect(loaded.resourceVersion).toBe(1);
    const saved = new Map<number, Metadata>([[1, md]]);
    const r = rng(20261201);
    let rv = 1;
    for (let step = 1; step <= steps; step++) {
      md = mutate(md, r, step);
      const next = await st.save(md, rv, undefined, { operations: [`op${step}`], role: step % 2 ? 'admin' : 'ops' });
      expect(next).toBe(rv + 1);
      rv = next!;
      saved.set(rv, md);
      // Every kept version reads back as saved (values and key order); older ones are gone.
      for (let v = Math.max(1, rv - limit - 2); v <= rv; v++) {
        const got = await readBack(st, v);
        if (v <= rv - limit) {
          expect(got, `version ${v} at ${rv}`).toBeUndefined();
          continue;
        }
        expect(got, `version ${v} at ${rv}`).toBeDefined();
        expect(got!.md).toEqual(saved.get(v));
        expect(got!.keys).toEqual(keys(saved.get(v)!));
        if (v > 1) expect(got!.info).toMatchObject({ resourceVersion: v, operations: [`op${v - 1}`], role: (v - 1) % 2 ? 'admin' : 'ops' });
      }
    }
    const { total, versions } = await st.history(100, 0);
    expect(total).toBe(limit);
    expect(versions.map((x) => x.resourceVersion)).toEqual(Array.from({ length: limit }, (_, i) => rv - i));
    expect(await st.historyRange()).toEqual({ oldest: rv - limit + 1, newest: rv });
    // Storage stays bounded: the oldest version's parts plus what the kept versions wrote, not a
    // copy of the document per version.
    const [{ n }] = await sql`select count(*)::int as n from ${sql(schema)}.metadata_history_part`;
    const [{ w }] = await sql`select count(*)::int as w from ${sql(schema)}.metadata_history_part where resource_version > ${rv - limit + 1}`;
    expect(n - w).toBeLessThanOrEqual(keys(saved.get(rv - limit + 1)!).length);
  });

  it('pages newest first, and records the first version of a new catalog', async () => {
    const st = store('history_pages', 1000);
    await st.init({ version: 3, x: 1 });
    await st.load();
    for (let i = 1; i <= 4; i++) await st.save({ version: 3, x: i + 1 }, i, undefined, { operations: ['a', 'b'], role: 'admin' });
    const page = await st.history(2, 1);
    expect(page.total).toBe(5);
    expect(page.versions.map((v) => v.resourceVersion)).toEqual([4, 3]);
    const first = await st.version(1);
    expect(first).toMatchObject({ info: { resourceVersion: 1, operations: [], role: null }, metadata: { version: 3, x: 1 } });
    expect(typeof first!.info.time).toBe('string');
    expect(new Date(first!.info.time).getTime()).not.toBeNaN();
  });

  it('restarts after a version it did not record (an instance with the history off wrote)', async () => {
    const schema = 'history_gap';
    const on = store(schema, 10);
    const off = store(schema, 0);
    await on.init({ version: 3, a: 1, b: 2 });
    await off.init({ version: 3 });
    await on.load();
    expect(await on.save({ version: 3, a: 1, b: 3 }, 1)).toBe(2);
    await off.load();
    expect(await off.save({ version: 3, a: 5, b: 3, c: 1 }, 2)).toBe(3);
    // Version 3 was not recorded: the history still ends at 2.
    expect((await on.history(10, 0)).versions.map((v) => v.resourceVersion)).toEqual([2, 1]);
    await on.load();
    expect(await on.save({ version: 3, a: 5, c: 1 }, 3, undefined, { operations: ['x'], role: 'admin' })).toBe(4);
    // Version 4 cannot be a delta of 3: it is stored whole, and what came before is dropped.
    expect((await on.history(10, 0)).versions.map((v) => v.resourceVersion)).toEqual([4]);
    expect((await on.version(4))!.metadata).toEqual({ version: 3, a: 5, c: 1 });
    expect(await on.version(2)).toBeUndefined();
    expect(await on.save({ version: 3, a: 6, c: 1 }, 4)).toBe(5);
    expect((await on.version(4))!.metadata).toEqual({ version: 3, a: 5, c: 1 });
    expect((await on.version(5))!.metadata).toEqual({ version: 3, a: 6, c: 1 });
  });

  it('with the history off records nothing', async () => {
    const schema = 'history_off';
    const off = store(schema, 0);
    await off.init({ version: 3, a: 1 });
    await off.load();
    expect(await off.save({ version: 3, a: 2 }, 1)).toBe(2);
    const [{ n }] = await sql`select count(*)::int as n from ${sql(schema)}.metadata_history`;
    const [{ p }] = await sql`select count(*)::int as p from ${sql(schema)}.metadata_history_part`;
    expect([n, p]).toEqual([0, 0]);
  });

  it('a catalog that had no history starts it with its current version', async () => {
    const schema = 'history_late';
    const off = store(schema, 0);
    await off.init({ version: 3, a: 1 });
    await off.load();
    await off.save({ version: 3, a: 2 }, 1);
    const on = store(schema, 5);
    expect(await on.init({ version: 3 })).toBe(false);
    expect((await on.history(10, 0)).versions.map((v) => v.resourceVersion)).toEqual([2]);
    expect((await on.version(2))!.metadata).toEqual({ version: 3, a: 2 });
    await on.load();
    expect(await on.save({ version: 3, a: 3 }, 2)).toBe(3);
    expect((await on.version(2))!.metadata).toEqual({ version: 3, a: 2 });
  });
});
