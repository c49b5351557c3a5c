/**
 * Updates, upserts and deletes of rows with a large value stored out of line (TOAST): what PostgreSQL
 * spends where the answer reads none of it (Note [Written rows as columns] in
 * plugins/postgres/sql/written-rows.ts). A table `docs (id, n, body)` of rows whose body is
 * `--kb` KiB of text that does not compress, and, one request at a time:
 *   update_many   `update_docs(where: {id: {_lte: $rows}}, _inc: {n: 1}) { affected_rows }`
 *   update_by_pk  `update_docs_by_pk(pk_columns: {id: $id}, _inc: {n: 1}) { id n }`
 *   upsert        `insert_docs_one(object: {id: $id, n: 1, body: ""}, on_conflict: {constraint: docs_pkey,
 *                 update_columns: [n]}) { id n }` (a row that is there: it updates n)
 *   delete_by_pk  `delete_docs_by_pk(id: $id) { id n }` (each request its own row, made before)
 * Per request: the wall time, and the CPU of the engine's process and of PostgreSQL (bench/cpu.ts).
 *
 *   npx tsx bench/graphql/wide-rows.ts [--kb 20] [--rows 1000] [--requests 50] [--rounds 3] [--root DIR]
 *
 * `--root DIR` runs another checkout's engine (built there as `npm start` runs it) on the same
 * data: the commit before a change, with this script copied into it.
 */
import path from 'node:path';
import { cleanup, loadChinook, startEngine } from '../common.js';
import { cpuPerRequest } from '../cpu.js';
import { freePort } from '../../server/embedded.js';
import { post } from './chinook.js';

const here = new URL('../..', import.meta.url).pathname;

function parseFlags(argv: string[]) {
  const flags = { kb: 20, rows: 1000, requests: 50, rounds: 3, root: here };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--root') flags.root = path.resolve(argv[++i]!);
    else if (a === '--kb' || a === '--rows' || a === '--requests' || a === '--rounds') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${a}: not a count`);
      flags[a.slice(2) as 'kb' | 'rows' | 'requests' | 'rounds'] = n;
    } else throw new Error(`unknown flag ${a} (--kb N --rows N --requests N --rounds N --root DIR)`);
  }
  return flags;
}

const MUTATIONS = {
  update_many: 'mutation ($rows: Int!) { update_docs(where: {id: {_lte: $rows}}, _inc: {n: 1}) { affected_rows } }',
  update_by_pk: 'mutation ($id: Int!) { update_docs_by_pk(pk_columns: {id: $id}, _inc: {n: 1}) { id n } }',
  upsert: 'mutation ($id: Int!) { insert_docs_one(object: {id: $id, n: 1, body: ""}, on_conflict: {constraint: docs_pkey, update_columns: [n]}) { id n } }',
  delete_by_pk: 'mutation ($id: Int!) { delete_docs_by_pk(id: $id) { id n } }',
};
/** The first id of the rows the deletes take, one per request. */
const DELETED = 1_000_000;

try {
  const flags = parseFlags(process.argv.slice(2));
  const { sql, dbUrl } = await loadChinook(here, 'wide-rows');
  // md5 text does not compress: each body goes out of line whole, in 2 kB chunks.
  const body = `(select string_agg(md5(g::text || '.' || k::text), '') from generate_series(1, ${Math.ceil((flags.kb * 1024) / 32)}) as k)`;
  await sql.unsafe(`create table docs (id int primary key, n int not null default 0, body text not null)`);
  await sql.unsafe(`insert into docs (id, body) select g, ${body} from generate_series(1, ${flags.rows}) as g`);
  await sql.unsafe('vacuum analyze docs');
  const port = await freePort();
  const engine = await startEngine(flags.root, { dbUrl, port });
  const url = `http://127.0.0.1:${port}`;
  const md = await post(`${url}/v1/metadata`, { type: 'pg_track_table', args: { table: 'docs' } });
  if (md.status !== 200) throw new Error(`metadata: ${md.text}`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`# ${new Date().toISOString()} wide rows: ${flags.rows} rows of ${flags.kb} KiB out of line, engine at ${flags.root}, ${flags.requests} requests a run, ${flags.rounds} rounds`);
  let next = DELETED;
  for (const [name, query] of Object.entries(MUTATIONS)) {
    const wall: number[] = [];
    const server: number[] = [];
    const pg: number[] = [];
    for (let round = -1; round < flags.rounds; round++) {
      // Round -1 plans the document and warms the caches: not counted.
      const ids = Array.from({ length: flags.requests }, (_, i) => (name === 'delete_by_pk' ? next++ : 1 + ((round + 1) * flags.requests + i) % flags.rows));
      if (name === 'delete_by_pk') {
        await sql.unsafe(`insert into docs (id, body) select g, ${body} from unnest($1::int[]) as g`, [ids]);
        await sql.unsafe('vacuum analyze docs');
      }
      const t0 = performance.now();
      const { cpu } = await cpuPerRequest(
        engine.pid,
        async () => {
          for (const id of ids) {
            const r = await post(`${url}/v1/graphql`, { query, variables: name === 'update_many' ? { rows: flags.rows } : { id } });
            const data = r.status === 200 ? (JSON.parse(r.text) as { data?: Record<string, { affected_rows?: number; id?: number } | null> }).data : undefined;
            const answer = data?.[{ update_many: 'update_docs', update_by_pk: 'update_docs_by_pk', upsert: 'insert_docs_one', delete_by_pk: 'delete_docs_by_pk' }[name]!];
            if (name === 'update_many' ? answer?.affected_rows !== flags.rows : answer?.id !== id) throw new Error(`${name} ${id}: ${r.text.slice(0, 300)}`);
          }
          return ids.length;
        },
        (n) => n,
      );
      if (round < 0) continue;
      wall.push((performance.now() - t0) / ids.length);
      if (cpu) {
        server.push(cpu.server / 1000);
        pg.push(cpu.postgres / 1000);
      }
    }
    const fmt = (xs: number[]) => (xs.length ? `${median(xs).toFixed(2)} (${xs.map((x) => x.toFixed(2)).join(', ')})` : 'n/a');
    console.log(`${name.padEnd(13)} ms per request, median of ${flags.rounds} runs (each run): wall ${fmt(wall)}; engine CPU ${fmt(server)}; PostgreSQL CPU ${fmt(pg)}`);
  }
} finally {
  await cleanup();
}
