/**
 * What the metadata history costs (Note [Metadata history] in plugins/metadata-history/store.ts): the same
 * metadata as bench/metadata/run.ts (N tables, each with a relationship each way and two roles'
 * select permissions) on two engines in this process, one keeping the history (the default
 * limit) and one with it off, and pg_track_table / pg_untrack_table of one more table timed on
 * both, alternately, so that the machine's noise falls on both. Then, on the one with history:
 * the history's size in PostgreSQL, and the time of get_metadata_version, diff_metadata and
 * rollback_metadata at that size.
 *
 *   npx tsx bench/metadata/history.ts [N] [rounds]     (default: 2000 51)
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../../server/embedded.js';
import { boot, type Running } from '../../server/boot.js';
import { defaultConfig } from '../../core/config.js';
import { createLogger } from '../../core/log.js';
import { createTables, table, trackOps } from './tables.js';

const N = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 51);

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]!;

async function post(r: Running, body: unknown): Promise<{ ms: number; body: any }> {
  const t = performance.now();
  const res = await r.app.request('/v1/metadata', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  const ms = performance.now() - t;
  if (res.status !== 200) throw new Error(`${JSON.stringify(body).slice(0, 200)} -> ${res.status} ${text.slice(0, 300)}`);
  return { ms, body: JSON.parse(text) };
}

async function engine(adminUrl: string, name: string, historyLimit: number): Promise<{ r: Running; url: string }> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await createTables(sql, N);
  await sql.end();
  const config = defaultConfig({ databaseUrl: url, metadataSyncInterval: 0, metadataHistoryLimit: historyLimit, logLevel: 'error' });
  const r = await boot({ config, env: {}, log: createLogger('error') });
  await post(r, { type: 'bulk', args: trackOps(N, ['user', 'editor']) });
  return { r, url };
}

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-history-'));
  chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false });
  const adminUrl = pg.url('postgres');
  const stamp = Date.now();
  const on = await engine(adminUrl, `bench_hist_on_${stamp}`, 1000);
  const off = await engine(adminUrl, `bench_hist_off_${stamp}`, 0);
  try {
    const extra = table(N + 1);
    const times = { on: { track: [] as number[], untrack: [] as number[] }, off: { track: [] as number[], untrack: [] as number[] } };
    for (let i = 0; i < ROUNDS; i++) {
      for (const [key, e] of (i % 2 ? [['off', off], ['on', on]] : [['on', on], ['off', off]]) as ['on' | 'off', typeof on][]) {
        times[key].track.push((await post(e.r, { type: 'pg_track_table', args: { table: extra } })).ms);
        times[key].untrack.push((await post(e.r, { type: 'pg_untrack_table', args: { table: extra } })).ms);
      }
    }
    const doc = (await post(on.r, { type: 'export_metadata', args: {} })).body;
    const sql = postgres(on.url, { max: 1, onnotice: () => {} });
    const [size] = await sql`select pg_total_relation_size('svc_catalog.metadata_history_part') + pg_total_relation_size('svc_catalog.metadata_history') as bytes,
      (select count(*) from svc_catalog.metadata_history) as versions, (select count(*) from svc_catalog.metadata_history_part) as rows,
      pg_total_relation_size('svc_catalog.metadata_part') as catalog_bytes`;
    await sql.end();
    const { resource_version: rv } = (await post(on.r, { type: 'export_metadata', version: 2, args: {} })).body;
    const oldest = (await post(on.r, { type: 'get_metadata_history', args: { limit: 1, offset: 100000 } })).body.total;
    const first = rv - oldest + 1;
    const readOld = (await post(on.r, { type: 'get_metadata_version', args: { resource_version: first } })).ms;
    const readNew = (await post(on.r, { type: 'get_metadata_version', args: { resource_version: rv - 1 } })).ms;
    const diff = (await post(on.r, { type: 'diff_metadata', args: { from: first, to: rv } })).ms;
    // Alternately, so that neither comes first: the same document (rv - 1 is the export after an
    // untrack) applied both ways.
    const rollbacks: number[] = [];
    const replaces: number[] = [];
    for (let i = 0; i < 3; i++) {
      replaces.push((await post(on.r, { type: 'replace_metadata', args: doc })).ms);
      rollbacks.push((await post(on.r, { type: 'rollback_metadata', args: { to_resource_version: rv - 1 } })).ms);
    }
    const rollback = quantile(rollbacks, 0.5);
    const replace = quantile(replaces, 0.5);
    const reload = (await post(on.r, { type: 'reload_metadata', args: {} })).ms;

    const f = (x: number) => x.toFixed(1).padStart(8);
    console.log(`\nMetadata history at N=${N} tables (document ${(JSON.stringify(doc).length / 1024).toFixed(0)} KiB), ${ROUNDS} rounds, ms`);
    console.log('                      track median   track p90   untrack median   untrack p90');
    for (const key of ['on', 'off'] as const) {
      const t = times[key];
      console.log(`history ${key === 'on' ? 'on (1000) ' : 'off (0)   '}   ${f(quantile(t.track, 0.5))}     ${f(quantile(t.track, 0.9))}        ${f(quantile(t.untrack, 0.5))}      ${f(quantile(t.untrack, 0.9))}`);
    }
    console.log(`\nhistory: ${size!.versions} versions, ${size!.rows} part rows, ${(Number(size!.bytes) / 1024).toFixed(0)} KiB (the catalog's own parts: ${(Number(size!.catalog_bytes) / 1024).toFixed(0)} KiB)`);
    console.log(`get_metadata_version oldest kept ${f(readOld)}   newest ${f(readNew)}   diff_metadata oldest->newest ${f(diff)}`);
    console.log(`rollback_metadata ${f(rollback)}   beside replace_metadata of the export ${f(replace)} (medians of 3, alternating)   reload_metadata ${f(reload)}`);
  } finally {
    await on.r.stop();
    await off.r.stop();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
