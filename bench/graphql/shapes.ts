/**
 * Statement shapes alone (issue 25, "Less work for PostgreSQL"): what PostgreSQL spends on one
 * answer written several ways, with no server in between. For each case, every shape is run on
 * one connection, prepared, `--n` times per round (after a warm-up), the rounds interleaved, and
 * the backend's CPU time per statement read from Linux's /proc (the median round); every shape's
 * answer is first checked to be the same JSON as the first's.
 *
 *   npm run bench:shapes [-- --n 300 --rounds 5 --only nested]
 *
 * The cases are the benchmark's queries (queries.ts) as the engine writes them today and as
 * they could be written: objects by json_build_object or from a row (json_agg of a row,
 * row_to_json of a sub-select, as Hasura v2 writes them), object relationships as a per-row
 * sub-query or a LEFT JOIN, ordering keys through object relationships computed once or twice.
 * The figures choose the compiler's shapes (Note [Expert SQL] in queries.ts).
 *
 *   npm run bench:shapes -- --queries [--only array_agg,deep]
 *
 * With `--queries`, the cases are the benchmark's queries instead: the engine is started on
 * the same Chinook (its metadata as bench:graphql sets it) and each query's statements as it
 * compiles them now (/v1/graphql/explain, with their parameters; records written by its
 * writer to check the answer) are timed against the expert SQL of queries.ts, and each line
 * counts the plan's sub-plans, `SubPlan xN` with N the rows each ran for (EXPLAIN ANALYZE): a
 * per-row sub-query where the expert's statement has a join shows there (issue 25, part 2).
 */
import type postgres from 'postgres';
import { recordsWriter, type RecordRow } from '../../plugins/postgres/records/records.js';
import { freePort } from '../../server/embedded.js';
import { cleanup, loadChinook, log, startEngine } from '../common.js';
import { chinookMetadata, engineSql, post, subPlans } from './chinook.js';
import { processCpuUs } from '../cpu.js';
import { queries } from './queries.js';

const root = new URL('../..', import.meta.url).pathname;

function parseFlags(argv: string[]) {
  const flags = { n: 300, rounds: 5, only: undefined as string[] | undefined, queries: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--queries') {
      flags.queries = true;
      continue;
    }
    const m = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i]!);
    const value = m?.[2] ?? argv[++i];
    if (!m || value === undefined) throw new Error(`usage: --n N --rounds R --only case1,case2 --queries (at ${argv[i - 1] ?? argv[i]})`);
    if (m[1] === 'only') flags.only = value.split(',');
    else if (m[1] === 'n' || m[1] === 'rounds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${m[1]}: not a count: ${value}`);
      flags[m[1]] = n;
    } else throw new Error(`unknown flag --${m[1]}`);
  }
  return flags;
}

// The engine's statements as it compiles them on 2026-11-26 (/v1/graphql/explain), and the others.
const engineNested = `select coalesce(json_agg(json_build_object('id', _t0."id", 'title', _t0."title", 'tracks', (select coalesce(json_agg(json_build_object('id', _t1."id", 'name', _t1."name", 'genre', (select json_build_object('name', _t2."name") from (select _t2.* from "public"."genres" as _t2 where true and _t2."id" = _t1."genre_id") as _t2 limit 1), 'media_type', (select json_build_object('name', _t3."name") from (select _t3.* from "public"."media_types" as _t3 where true and _t3."id" = _t1."media_type_id") as _t3 limit 1)) order by _t1."__svc_o0" asc nulls last), '[]') from (select _t1.*, _t1."id" as "__svc_o0" from "public"."tracks" as _t1 where true and _t1."album_id" = _t0."id") as _t1)) order by _t0."__svc_o0" asc nulls last), '[]')::text as json from (select _t0.*, _t0."id" as "__svc_o0" from "public"."albums" as _t0 where true order by _t0."id" asc nulls last limit 20) as _t0`;

/** A statement to time: its text, bind parameters, and how its one value is the answer's JSON. */
type Shape = { text: string; params?: readonly unknown[]; write?: (value: Uint8Array | null) => Uint8Array | Promise<Uint8Array> };

const cases: Record<string, Record<string, string | Shape>> = {
  // Objects alone: 3,503 tracks, four fields each, no relationship.
  objects: {
    json_build_object: `select coalesce(json_agg(json_build_object('id', t.id, 'name', t.name, 'genre_id', t.genre_id, 'milliseconds', t.milliseconds) order by t.id), '[]')::text as json from tracks t`,
    row_to_json_subselect: `select coalesce(json_agg(row_to_json((select _e from (select t.id, t.name, t.genre_id, t.milliseconds) _e)) order by t.id), '[]')::text as json from tracks t`,
    json_agg_row: `select coalesce(json_agg(t order by t.id), '[]')::text as json from (select id, name, genre_id, milliseconds from tracks) t`,
    // The engine's since Note [Objects from rows]: the row a lateral sub-select, the order key outside it.
    lateral_row: `select coalesce(json_agg(_x order by t.id), '[]')::text as json from tracks t cross join lateral (select t.id, t.name, t.genre_id, t.milliseconds) _x`,
  },
  // The nested query: 20 albums -> tracks -> genre, media type.
  nested: {
    engine: engineNested,
    joins: `select coalesce(json_agg(json_build_object('id', _t0."id", 'title', _t0."title", 'tracks', (select coalesce(json_agg(json_build_object('id', _t1."id", 'name', _t1."name", 'genre', case when _t2."id" is null then null else json_build_object('name', _t2."name") end, 'media_type', case when _t3."id" is null then null else json_build_object('name', _t3."name") end) order by _t1."id" asc nulls last), '[]') from "public"."tracks" as _t1 left join "public"."genres" as _t2 on _t2."id" = _t1."genre_id" left join "public"."media_types" as _t3 on _t3."id" = _t1."media_type_id" where _t1."album_id" = _t0."id")) order by _t0."id" asc nulls last), '[]')::text as json from (select _t0.* from "public"."albums" as _t0 order by _t0."id" asc nulls last limit 20) as _t0`,
    // The engine's statement since Note [Objects from rows]: joins, and each object a lateral row.
    engine_rows: `select coalesce(json_agg(_x0 order by _t0."__svc_o0" asc nulls last), '[]')::text as json from (select _t0.*, _t0."id" as "__svc_o0" from "public"."albums" as _t0 where true order by _t0."id" asc nulls last limit 20) as _t0 cross join lateral (select _t0."id" as "id", _t0."title" as "title", (select coalesce(json_agg(_x1 order by _t1."__svc_o0" asc nulls last), '[]') from (select _t1.*, _t1."id" as "__svc_o0" from "public"."tracks" as _t1 where true and _t1."album_id" = _t0."id") as _t1 left join "public"."genres" as _t2 on _t2."id" = _t1."genre_id" and true left join "public"."media_types" as _t3 on _t3."id" = _t1."media_type_id" and true cross join lateral (select _t2."name" as "name") as _x2 cross join lateral (select _t3."name" as "name") as _x3 cross join lateral (select _t1."id" as "id", _t1."name" as "name", case when _t2."id" is null then null else _x2 end as "genre", case when _t3."id" is null then null else _x3 end as "media_type") as _x1) as "tracks") as _x0`,
    rows_and_joins: `select coalesce(json_agg(a order by a.id), '[]')::text as json from (select al.id, al.title, (select coalesce(json_agg(t order by t.id), '[]') from (select t.id, t.name, case when g.id is null then null else json_build_object('name', g.name) end as genre, case when m.id is null then null else json_build_object('name', m.name) end as media_type from tracks t left join genres g on g.id = t.genre_id left join media_types m on m.id = t.media_type_id where t.album_id = al.id) t) as tracks from albums al order by al.id limit 20) a`,
    rows_hasura: `select coalesce(json_agg(_r0."j" order by _r0."o"), '[]')::text as json from (select _t0."id" as "o", row_to_json((select _e from (select _t0."id", _t0."title", (select coalesce(json_agg(_r1."j" order by _r1."o"), '[]') from (select _t1."id" as "o", row_to_json((select _e from (select _t1."id", _t1."name", (select row_to_json((select _e from (select _t2."name") _e)) from "public"."genres" as _t2 where _t2."id" = _t1."genre_id") as "genre", (select row_to_json((select _e from (select _t3."name") _e)) from "public"."media_types" as _t3 where _t3."id" = _t1."media_type_id") as "media_type") _e)) as "j" from "public"."tracks" as _t1 where _t1."album_id" = _t0."id") _r1) as "tracks") _e)) as "j" from "public"."albums" as _t0 order by _t0."id" limit 20) _r0`,
  },
  // Ordering through object relationships: the key computed by a sub-query in the select list
  // and again in ORDER BY (the engine), once (ORDER BY the output column), or by joins.
  order_rel: {
    subqueries_keys_twice: `select coalesce(json_agg(json_build_object('id', _t0."id", 'name', _t0."name") order by _t0."o0" asc nulls last, _t0."o1" asc nulls last, _t0."id"), '[]')::text as json from (select _t0.*, (select (select _t2."name" from "public"."artists" as _t2 where _t2."id" = _t1."artist_id" limit 1) from "public"."albums" as _t1 where _t1."id" = _t0."album_id" limit 1) as "o0", (select _t3."title" from "public"."albums" as _t3 where _t3."id" = _t0."album_id" limit 1) as "o1" from "public"."tracks" as _t0 order by (select (select _t2."name" from "public"."artists" as _t2 where _t2."id" = _t1."artist_id" limit 1) from "public"."albums" as _t1 where _t1."id" = _t0."album_id" limit 1) asc nulls last, (select _t3."title" from "public"."albums" as _t3 where _t3."id" = _t0."album_id" limit 1) asc nulls last, _t0."id" limit 50 offset 100) as _t0`,
    subqueries_keys_once: `select coalesce(json_agg(json_build_object('id', _t0."id", 'name', _t0."name") order by _t0."o0" asc nulls last, _t0."o1" asc nulls last, _t0."id"), '[]')::text as json from (select _t0.*, (select (select _t2."name" from "public"."artists" as _t2 where _t2."id" = _t1."artist_id" limit 1) from "public"."albums" as _t1 where _t1."id" = _t0."album_id" limit 1) as "o0", (select _t3."title" from "public"."albums" as _t3 where _t3."id" = _t0."album_id" limit 1) as "o1" from "public"."tracks" as _t0 order by "o0" asc nulls last, "o1" asc nulls last, _t0."id" limit 50 offset 100) as _t0`,
    joins_as_the_engine_now: `select coalesce(json_agg(json_build_object('id', _t0."id", 'name', _t0."name") order by _t0."o0" asc nulls last, _t0."o1" asc nulls last, _t0."id"), '[]')::text as json from (select _t0.*, ar."name" as "o0", al."title" as "o1" from "public"."tracks" as _t0 left join "public"."albums" al on al."id" = _t0."album_id" left join "public"."artists" ar on ar."id" = al."artist_id" order by "o0" asc nulls last, "o1" asc nulls last, _t0."id" limit 50 offset 100) as _t0`,
  },
};

/** The benchmark's queries as cases (`--queries`): per root field, the engine's statement as it
 * compiles it and the expert SQL. */
async function queryCases(sql: postgres.Sql, dbUrl: string): Promise<Record<string, Record<string, Shape>>> {
  const port = await freePort();
  await startEngine(root, { dbUrl, port, detached: true });
  const bulk = await post(`http://127.0.0.1:${port}/v1/metadata`, { type: 'bulk', args: await chinookMetadata(sql) });
  if (bulk.status !== 200) throw new Error(`the engine refused the Chinook metadata: ${bulk.status} ${bulk.text.slice(0, 300)}`);
  const selected = queries.filter((q) => !flags.only || flags.only.includes(q.name));
  const explained = await engineSql(port, selected);
  const out: Record<string, Record<string, Shape>> = {};
  for (const q of selected) {
    const fields = explained.sql[q.name];
    if (!fields) {
      log(`${q.name}: ${explained.label[q.name]}`);
      continue;
    }
    for (const f of fields) {
      const expert = q.expert.find((e) => e.field === f.field);
      if (!expert) throw new Error(`${q.name}: no expert SQL for the root field ${f.field}`);
      out[fields.length > 1 ? `${q.name}.${f.field}` : q.name] = {
        engine: { text: f.sql, params: f.params, ...(f.records ? { write: recordsWriter(f.records as RecordRow) } : {}) },
        expert: { text: expert.sql, params: expert.params(q.svc.variables ?? {}, q.svc.headers ?? {}) },
      };
    }
  }
  return out;
}

const flags = parseFlags(process.argv.slice(2));
const known = flags.queries ? queries.map((q) => q.name) : Object.keys(cases);
const unknown = flags.only?.filter((n) => !known.includes(n)) ?? [];
if (unknown.length) throw new Error(`--only: no ${flags.queries ? 'query' : 'case'} named ${unknown.join(', ')} (there are ${known.join(', ')})`);
try {
  const { sql, dbUrl } = await loadChinook(root, 'shapes');
  await sql.unsafe('analyze').simple();
  const all: Record<string, Record<string, Shape>> = flags.queries
    ? await queryCases(sql, dbUrl)
    : Object.fromEntries(Object.entries(cases).map(([name, shapes]) => [name, Object.fromEntries(Object.entries(shapes).map(([k, v]) => [k, typeof v === 'string' ? { text: v } : v]))]));
  const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  // Prepared, as the servers run them (postgres.js sends a statement without parameters
  // unprepared unless `simple: false`); raw(): the column's bytes, as a server reads them.
  const run = (s: Shape) => sql.unsafe(s.text, (s.params ?? []) as postgres.ParameterOrJSON<never>[], { prepare: true, simple: false } as { prepare: true }).raw();
  const answer = async (s: Shape): Promise<string> => {
    const value = ((await run(s))[0]?.[0] ?? null) as Uint8Array | null;
    return Buffer.from(s.write ? await s.write(value) : (value ?? Buffer.from('null'))).toString('utf8');
  };
  console.log(`PostgreSQL backend CPU per statement (µs, median of ${flags.rounds} rounds of ${flags.n}; Linux /proc ticks), and wall time per statement from one connection`);
  for (const [name, shapes] of Object.entries(all)) {
    if (!flags.queries && flags.only && !flags.only.includes(name)) continue;
    const answers = new Map<string, string>();
    for (const [shape, s] of Object.entries(shapes)) answers.set(shape, await answer(s));
    const [first, ref] = [...answers][0]!;
    for (const [shape, a] of answers) if (JSON.stringify(JSON.parse(a)) !== JSON.stringify(JSON.parse(ref))) throw new Error(`${name}: ${shape} answers other data than ${first}`);
    const cpu = new Map<string, number[]>();
    const wall = new Map<string, number[]>();
    // A round of a shape lasts about 0.4 s at most: a slow shape runs fewer times (5 at least;
    // the CPU ticks are 10 ms).
    let slowest = 0;
    for (const text of Object.values(shapes)) {
      const w0 = performance.now();
      for (let i = 0; i < 3; i++) await run(text);
      slowest = Math.max(slowest, (performance.now() - w0) / 3);
    }
    const n = Math.max(5, Math.min(flags.n, Math.floor(400 / slowest)));
    for (let r = 0; r < flags.rounds; r++) {
      for (const [shape, text] of Object.entries(shapes)) {
        for (let i = 0; i < Math.min(10, n); i++) await run(text);
        const t0 = processCpuUs(pid);
        const w0 = performance.now();
        for (let i = 0; i < n; i++) await run(text);
        cpu.set(shape, [...(cpu.get(shape) ?? []), (processCpuUs(pid) - t0) / n]);
        wall.set(shape, [...(wall.get(shape) ?? []), ((performance.now() - w0) * 1000) / n]);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`\n${name} (${n} per round)`);
    const base = med(cpu.get(first)!);
    for (const [shape, s] of Object.entries(shapes)) {
      const c = med(cpu.get(shape)!);
      const plans = flags.queries ? `  ${await subPlans(sql, s.text, s.params)}` : '';
      console.log(`  ${shape.padEnd(24)} CPU ${c.toFixed(0).padStart(6)} µs (${(c / base).toFixed(2)}x)  wall ${med(wall.get(shape)!).toFixed(0).padStart(6)} µs  ${answers.get(shape)!.length} bytes${plans}`);
    }
  }
} catch (e) {
  log(`bench:shapes failed: ${e instanceof Error ? e.message : e}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
