/**
 * What a metadata change costs in memory at N tracked tables (the tables of ./run.ts: each with
 * a foreign key to the previous one and two roles' select permissions), the engine compiled as
 * `npm start` runs it, booted in this process (./in-process.ts) so that V8's own accounting can
 * be read:
 *   - allocated per change: the bytes allocated (V8's sampling heap profiler, counting what the
 *     collector has since freed) by a cycle of two changes (track and untrack one more table),
 *     each followed by the first request as admin and as `user` (which build their schemas),
 *     and the functions that allocate the most of it;
 *   - retained: the live heap after full collections, after a change and the admin's first
 *     request, then as each role's schema is built.
 * A schema's garbage is what makes the server's RSS swing after changes (./run.ts's (g)): V8
 * lets the old space grow to a few times the live heap before it collects.
 *
 *   npm run build:server && node --expose-gc --import tsx bench/metadata/memory.ts [N] [cycles]
 */
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { mib, table, withEngineAt } from './in-process.js';

const n = Number(process.argv[2] ?? 2000);
const cycles = Number(process.argv[3] ?? 5);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc --import tsx bench/metadata/memory.ts');
  process.exit(2);
}
const root = new URL('../..', import.meta.url).pathname;
const live = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const roles = ['user', 'editor', 'viewer', 'auditor', 'guest'];
await withEngineAt(n, roles, {}, async (e) => {
  const query = { query: `{ ${table(1)}(limit: 1) { id name } }` };
  const extra = table(n + 1);
  const change = async (type: string) => {
    await e.ok('/v1/metadata', { type, args: { table: extra } });
    await e.ok('/v1/graphql', query);
    await e.ok('/v1/graphql', query, 'user');
  };
  const cycle = async () => {
    await change('pg_track_table');
    await change('pg_untrack_table');
  };
  for (let i = 0; i < 3; i++) await cycle();

  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
  const t0 = performance.now();
  for (let i = 0; i < cycles; i++) await cycle();
  const ms = (performance.now() - t0) / (cycles * 2);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  let total = 0;
  const byFunction = new Map<string, number>();
  const walk = (node: typeof profile.head) => {
    total += node.selfSize;
    const f = node.callFrame;
    const where = f.url ? `${f.functionName || '(anonymous)'} ${path.relative(root, f.url.replace(/^file:\/\//, ''))}:${f.lineNumber + 1}` : `${f.functionName || '(anonymous)'} (V8)`;
    byFunction.set(where, (byFunction.get(where) ?? 0) + node.selfSize);
    for (const c of node.children) walk(c);
  };
  walk(profile.head);
  const perChange = total / (cycles * 2);
  console.log(`N = ${n} tables, ${roles.length} roles; ${cycles * 2} changes, each followed by the first request as admin and as user`);
  console.log(`allocated per change: ${mib(perChange)} MiB, ${ms.toFixed(1)} ms per change and its two requests`);
  console.log('the functions that allocate the most (MiB per change, where they allocate themselves):');
  for (const [where, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${mib(bytes / (cycles * 2)).padStart(6)}  ${where}`);

  // The admin's first request after a change also lets go of what the previous build's
  // plans held: the base is taken after it.
  await e.ok('/v1/metadata', { type: 'pg_track_table', args: { table: extra } });
  await e.ok('/v1/graphql', query);
  let before = live();
  console.log(`live heap after a change, with the admin's schema: ${mib(before)} MiB; each role's schema then retains:`);
  for (const role of roles) {
    await e.ok('/v1/graphql', query, role);
    const now = live();
    console.log(`  ${role.padEnd(7)} ${mib(now - before).padStart(5)} MiB (heap ${mib(now)} MiB)`);
    before = now;
  }
  console.log(`RSS: ${mib(process.memoryUsage().rss)} MiB`);
});
