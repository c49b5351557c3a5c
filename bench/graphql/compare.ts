/**
 * Two builds of the engine's compiler against each other (issue 25, "Less work for PostgreSQL"):
 * what PostgreSQL spends on the statements each compiles for the same GraphQL queries. Both
 * engines are started on one Chinook (the other checkout's `dist/` built there first, as
 * `startEngine` does), each query's statement taken from /v1/graphql/explain of each, both
 * answers written (records by each one's writer, Note [Lists as records]) and checked to be the
 * same JSON, then the two statements timed, each on a connection of its own, prepared, `--n`
 * runs per round, the rounds interleaved, each side's backend CPU time per statement read from
 * Linux's /proc (the median round; its resolution is 10 ms / n). Each line gives the plan's sub-plans (EXPLAIN
 * ANALYZE, `SubPlan xN` with N the rows each ran for) and new / base.
 *
 *   git worktree add ../base <rev> && ln -s "$PWD/node_modules" ../base/node_modules
 *   npm run bench:compare -- --base ../base [--n 300 --rounds 5 --only read_order,short]
 *
 * `--setting name=value` (repeated) sets a PostgreSQL setting for the new side's connection only:
 * with `--base` the same checkout, one build's statements under two settings.
 *
 * The queries: the benchmark's (queries.ts) and shapes users write that it has not: lists
 * without order_by (Note [Rows numbered as read]), short lists, array relationships over a small
 * table.
 */
import path from 'node:path';
import postgres from 'postgres';
import { recordsWriterAtOnce, type RecordRow } from '../../plugins/postgres/records/records.js';
import { freePort } from '../../server/embedded.js';
import { cleanup, cleanups, loadChinook, log, startEngine } from '../common.js';
import { chinookMetadata, post, subPlans } from './chinook.js';
import { processCpuUs } from '../cpu.js';
import { queries } from './queries.js';

const root = new URL('../..', import.meta.url).pathname;

/** Shapes beside the benchmark's queries, by group. */
const SHAPES: Record<string, Record<string, string>> = {
  read_order: {
    tracks_all: '{ tracks { id name album { title } genre { name } } }',
    tracks_400: '{ tracks(limit: 400) { id name album { title } } }',
    lines_400: '{ invoice_lines(limit: 400) { id track { name } } }',
    albums_tracks: '{ albums(limit: 20) { id title tracks { id name genre { name } media_type { name } } } }',
    invoices_customer: '{ invoices(where: {total: {_gt: 10}}) { id total customer { first_name country } } }',
    lines_where: '{ invoice_lines(where: {invoice_id: {_lt: 30}}) { id track { name album { title } } } }',
    nodes_200: '{ tracks_aggregate(limit: 200) { aggregate { count } nodes { name album { title } } } }',
  },
  arrays: {
    artists_album_count: '{ artists { id albums_aggregate { aggregate { count } } } }',
    artists_albums: '{ artists { id albums { title } } }',
  },
  short: {
    tracks_50: '{ tracks(limit: 50) { id name album { title } } }',
    lines_50: '{ invoice_lines(limit: 50) { id track { name } invoice { total } } }',
    lines_50_ordered: '{ invoice_lines(limit: 50, order_by: {id: asc}) { id track { name } invoice { total } } }',
    playlists_10: '{ playlists(limit: 10) { name playlist_tracks(limit: 10) { track { name album { title artist { name } } } } } }',
  },
  // Lists without order_by in the corners of Note [Rows numbered as read]: an offset, distinct
  // on, objects of objects, a where through an object, aggregate nodes with an offset, an
  // object whose key may be null, array relationships under a list numbered as read.
  edges: {
    offset: '{ tracks(offset: 3400) { id album { title } } }',
    offset_limit: '{ tracks(offset: 200, limit: 300) { id genre { name } } }',
    distinct_on: '{ tracks(distinct_on: album_id) { album_id album { title } } }',
    chain: '{ tracks(limit: 500) { id album { title artist { name } } } }',
    where_object: '{ tracks(where: {album: {artist_id: {_lt: 50}}}) { id album { title } media_type { name } } }',
    nodes_offset: '{ tracks_aggregate(offset: 100, limit: 300) { aggregate { count } nodes { id genre { name } } } }',
    nullable_key: '{ employees { id employee { last_name } } }',
    arrays_under: '{ albums(limit: 150) { id artist { name } tracks { name genre { name } } } }',
  },
  // More shapes users write, probed for sub-plans: a where through an array relationship or an
  // or of two, a whole list ordered by an aggregate (Note [Computed keys kept in their
  // subquery]) or through an object, aggregates per row, a by-pk's nested lists.
  probe: {
    or_exists: '{ albums(where: {_or: [{artist: {name: {_ilike: "%a%"}}}, {tracks: {name: {_ilike: "%love%"}}}]}) { id } }',
    through_array: '{ tracks(where: {playlist_tracks: {playlist_id: {_eq: 1}}}, limit: 500) { id } }',
    order_count_all: '{ artists(order_by: {albums_aggregate: {count: desc}}) { id albums_aggregate { aggregate { count } } } }',
    order_object_all: '{ invoices(order_by: {customer: {last_name: asc}}) { id customer { last_name } } }',
    sums: '{ customers { id invoices_aggregate { aggregate { sum { total } } } } }',
    genre_counts: '{ genres { name tracks_aggregate { aggregate { count } } } }',
    pk_deep: '{ tracks_by_pk(id: 1) { playlist_tracks { playlist { name } } } }',
    not_exists: '{ artists(where: {_not: {albums: {}}}) { id } }',
    count_where: '{ tracks_aggregate(where: {album: {artist_id: {_eq: 90}}}) { aggregate { count } } }',
    nested_order_count: '{ artists(order_by: {id: asc}) { id albums(order_by: {tracks_aggregate: {count: desc}}) { title tracks_aggregate { aggregate { count } } } } }',
    nodes_order_count: '{ artists_aggregate(order_by: {albums_aggregate: {count: desc}}) { nodes { id albums_aggregate { aggregate { count } } } } }',
  },
};

function parseFlags(argv: string[]) {
  const flags = { base: '', n: 300, rounds: 5, only: undefined as string[] | undefined, settings: [] as [string, string][] };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i]!);
    const value = m?.[2] ?? argv[++i];
    if (!m || value === undefined) throw new Error(`usage: --base DIR [--n N --rounds R --only group,name --setting name=value] (at ${argv[i - 1] ?? argv[i]})`);
    if (m[1] === 'base') flags.base = path.resolve(value);
    else if (m[1] === 'only') flags.only = value.split(',');
    else if (m[1] === 'setting') {
      const kv = /^([a-z_][a-z0-9_.]*)=(.*)$/.exec(value);
      if (!kv) throw new Error(`--setting name=value: not a setting: ${value}`);
      flags.settings.push([kv[1]!, kv[2]!]);
    }
    else if (m[1] === 'n' || m[1] === 'rounds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: not a count: ${value}`);
      flags[m[1]] = n;
    } else throw new Error(`unknown flag --${m[1]}`);
  }
  if (!flags.base) throw new Error('--base DIR: the checkout to compare with (a git worktree with node_modules)');
  return flags;
}

type Explained = { sql: string; params: unknown[]; records?: RecordRow };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const flags = parseFlags(process.argv.slice(2));
type Case = { name: string; query: string; variables?: Record<string, unknown>; headers?: Record<string, string> };
const cases: Case[] = [
  ...queries.map((q): Case => ({ name: `bench.${q.name}`, query: q.svc.query, variables: q.svc.variables, headers: q.svc.headers })),
  ...Object.entries(SHAPES).flatMap(([group, shapes]) => Object.entries(shapes).map(([name, query]): Case => ({ name: `${group}.${name}`, query }))),
].filter(({ name }) => !flags.only || flags.only.some((o) => name === o || name.startsWith(`${o}.`) || name.endsWith(`.${o}`)));
if (cases.length === 0) throw new Error(`--only: no query matches ${flags.only?.join(', ')}`);

try {
  const { sql, dbUrl } = await loadChinook(root, 'compare');
  await sql.unsafe('analyze');
  const basePort = await freePort();
  await startEngine(flags.base, { dbUrl, port: basePort });
  const b = await post(`http://127.0.0.1:${basePort}/v1/metadata`, { type: 'bulk', args: await chinookMetadata(sql) });
  if (b.status !== 200) throw new Error(`tracking Chinook: ${b.status} ${b.text}`);
  // The second engine reads the metadata the first stored.
  const newPort = await freePort();
  await startEngine(root, { dbUrl, port: newPort });
  // One connection per side, each with its own prepared statements (a cached plan is not made
  // again when a setting changes), the new side's with the `--setting`s.
  const sides = await Promise.all(
    [[], flags.settings].map(async (settings) => {
      const conn = postgres(dbUrl, { max: 1, onnotice: () => {} });
      cleanups.push(() => conn.end({ timeout: 1 }));
      for (const [name, value] of settings) await conn`select set_config(${name}, ${value}, false)`;
      const [{ pid }] = await conn`select pg_backend_pid() as pid`;
      return { conn, pid: pid as number };
    }),
  );
  // Prepared, as the engine runs them (postgres.js sends a statement without parameters
  // unprepared unless `simple: false`).
  const run = (side: number, e: Explained) => sides[side]!.conn.unsafe(e.sql, e.params as postgres.ParameterOrJSON<never>[], { prepare: true, simple: false } as { prepare: true });
  const answer = async (side: number, e: Explained): Promise<unknown> => {
    const [row] = await run(side, e).raw();
    const value = row?.[0] as Uint8Array | null | undefined;
    if (value == null) return null;
    return JSON.parse(Buffer.from(e.records ? recordsWriterAtOnce(e.records)(value) : value).toString());
  };
  log(`${flags.rounds} rounds of ${flags.n} runs of each statement; base ${flags.base}, new ${root}${flags.settings.map(([k, v]) => `, ${k}=${v}`).join('')}`);
  for (const c of cases) {
    const explained: (Explained & { field: string })[][] = [];
    for (const port of [basePort, newPort]) {
      const r = await post(`http://127.0.0.1:${port}/v1/graphql/explain`, { query: { query: c.query, variables: c.variables ?? {} }, user: c.headers ?? {} });
      const fields = r.status === 200 ? (JSON.parse(r.text) as (Explained & { field: string })[]) : [];
      if (fields.length === 0) throw new Error(`${c.name}: /v1/graphql/explain answered ${r.status} ${r.text.slice(0, 200)}`);
      explained.push(fields);
    }
    for (const [i, base] of explained[0]!.entries()) {
      const next = explained[1]![i]!;
      const name = explained[0]!.length > 1 ? `${c.name}.${base.field}` : c.name;
      if (JSON.stringify(await answer(0, base)) !== JSON.stringify(await answer(1, next))) throw new Error(`${name}: the two statements answer differently`);
      const times: [number[], number[]] = [[], []];
      for (let round = 0; round < flags.rounds; round++) {
        for (const [k, e] of [base, next].entries()) {
          const c0 = processCpuUs(sides[k]!.pid);
          for (let n = 0; n < flags.n; n++) await run(k, e);
          times[k as 0 | 1].push((processCpuUs(sides[k]!.pid) - c0) / flags.n);
        }
      }
      const [tb, tn] = [median(times[0]), median(times[1])];
      const same = base.sql === next.sql ? ' (the same statement)' : '';
      console.log(
        `${name}: base ${tb.toFixed(0)} µs (${await subPlans(sides[0]!.conn, base.sql, base.params)}), new ${tn.toFixed(0)} µs (${await subPlans(sides[1]!.conn, next.sql, next.params)}), new/base ${(tn / tb).toFixed(2)}${same}`,
      );
    }
  }
} finally {
  await cleanup();
}
