/**
 * Multi-row inserts through the engine (Note [Rows bound by column] in
 * plugins/postgres/sql/compile-mutation.ts): `insert_tracks(objects: $rows) { affected_rows }` of N
 * rows of Chinook's nine track columns, sent one request at a time, each batch of a row count of
 * its own (as batches come: a count seldom the same twice) or all of one count (`--same`).
 * Per request: the wall time, and the CPU of the engine's process and of PostgreSQL (bench/cpu.ts).
 * The rows written are deleted between runs, outside the timing.
 *
 *   npx tsx bench/graphql/bulk-inserts.ts [--sizes 10,100,1000,5000,10000] [--requests 20] [--rounds 3] [--same] [--mixed] [--nested K [--returning [--limit L] [--by-track | --distinct]] [--upsert | --upsert-nothing | --upsert-where]] [--objects [--returning]] [--under-one K] [--repeat-keys K] [--update-many] [--root DIR]
 *
 * `--mixed`: every other row leaves out its id, which takes the serial's default (Note [Defaults
 * bound by column]).
 *
 * `--nested K` inserts N playlists instead, each with K playlist_track rows through its array
 * relationship (Note [Levels inserted as sets]); with `--returning` the mutation answers each
 * playlist's id and its rows' track ids as well (Note [Arrays of written rows grouped]), the
 * first L of them with `--limit L`, ordered by their track's name (through the object relationship)
 * with `--by-track`, one per track id (`distinct_on: track_id`) with `--distinct`; with
 * `--upsert` the playlists are upserted by their key (`on_conflict` updating the name: each
 * inserted, none there before; Note [Rows upserting one row]); with `--upsert-nothing` doing
 * nothing on conflict, and with `--upsert-where` updating the name where it starts with "x": an
 * upsert that may write nothing, so the rows join the playlists by the key each gives (Note
 * [Levels joined by key]; before, a few playlists to a statement, Note [Batches in steps]).
 *
 * In the nested runs the playlists table holds 20,000 rows besides Chinook's 18 (ids from
 * 100,000; the runs' own are from 1,000,000), as a table that batches insert rows under is seldom
 * tiny. On the 18-row table each of the engine's connections plans PostgreSQL's foreign-key check
 * of playlist_track (`select 1 from only playlists where id = $1 for key share`) once, after five
 * custom plans, while the table is small: a sequential scan, kept as the table grows, so every
 * row of a batch scanned every playlist written before it (1,000 playlists of three rows after
 * a run of 100: 0.3-1.7 s a request, growing within the run, where 75 ms with the 20,000 rows).
 * That is PostgreSQL's plan cache, for any client; the ballast keeps it out of the figures.
 *
 * `--objects` inserts N playlist_track rows instead, each with a playlist of its own through its
 * object relationship; with `--returning` the mutation answers each row's playlist with its
 * tracks (`playlist { name playlist_tracks { track_id } }`, an array under an object of the
 * written rows: Note [Arrays of written rows grouped]); `--upsert*` then upserts each row's
 * playlist so (Note [Levels joined by key] where the upsert may write nothing).
 *
 * `--under-one K` inserts one artist per request instead, with N albums through its array
 * relationship, each upserted doing nothing on conflict (`pk_albums`) and with K tracks under
 * it: rows under ONE object whose upsert may write nothing, one set joined by the ids they give
 * (Note [Levels joined by key]; before, steps under the artist bound to its row, Note [Batches
 * in steps]). The
 * albums table holds 20,000 rows besides Chinook's 347, as the playlists do in the nested runs.
 *
 * `--repeat-keys K` upserts the N tracks by their key with an update that has a where (`name`
 * where it is like `bulk%`), the ids repeating every K rows: the first K rows insert and every
 * later one updates the row its key found, each after the one before (Note [Rows repeating a
 * key]: runs of at most K rows, each one INSERT, in steps).
 *
 * `--update-many` sends N updates of one track each (by id, up to 3,503) in one
 * `update_tracks_many` instead: one UPDATE joined to the ids and names (Note [Updates by key] in
 * plugins/database/schema/update-rows.ts; before, a statement per update in the request's
 * transaction, Note [Statements pipelined] in plugins/database/schema/mutation.ts); nothing is
 * deleted between runs. With `--fields`, the N updates are N root fields of one request instead
 * (`u0: update_tracks_by_pk(pk_columns: {id: $i0}, _set: {name: $n0}) { id }`, ...): a statement
 * per field in the request's transaction (Note [Fields pipelined] in plugins/graphql/engine.ts).
 *
 * `--root DIR` runs another checkout's engine (built there as `npm start` runs it) on the same
 * data: the commit before a change, with this script copied into it. `BENCH_ENGINE_FLAGS='--cpu-prof
 * --cpu-prof-dir=DIR'` profiles the engine (Node flags for its process, as bench/metadata/run.ts).
 */
import path from 'node:path';
import { cleanup, loadChinook, startEngine } from '../common.js';
import { cpuPerRequest } from '../cpu.js';
import { freePort } from '../../server/embedded.js';
import { chinookMetadata, post } from './chinook.js';

const here = new URL('../..', import.meta.url).pathname;

function parseFlags(argv: string[]) {
  const flags = { sizes: [10, 100, 1000, 5000, 10000], requests: 20, rounds: 3, same: false, mixed: false, nested: 0, returning: false, limit: 0, objects: false, byTrack: false, distinct: false, underOne: 0, repeatKeys: 0, updateMany: false, fields: false, upsert: '' as '' | 'name' | 'nothing' | 'where', root: here };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--same') flags.same = true;
    else if (a === '--mixed') flags.mixed = true;
    else if (a === '--returning') flags.returning = true;
    else if (a === '--update-many') flags.updateMany = true;
    else if (a === '--fields') flags.fields = true;
    else if (a === '--objects') flags.objects = true;
    else if (a === '--by-track') flags.byTrack = true;
    else if (a === '--distinct') flags.distinct = true;
    else if (a === '--upsert') flags.upsert = 'name';
    else if (a === '--upsert-nothing') flags.upsert = 'nothing';
    else if (a === '--upsert-where') flags.upsert = 'where';
    else if (a === '--sizes') flags.sizes = argv[++i]!.split(',').map(Number);
    else if (a === '--requests' || a === '--rounds' || a === '--nested' || a === '--limit' || a === '--under-one' || a === '--repeat-keys') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${a}: not a count`);
      flags[a === '--requests' ? 'requests' : a === '--rounds' ? 'rounds' : a === '--nested' ? 'nested' : a === '--under-one' ? 'underOne' : a === '--repeat-keys' ? 'repeatKeys' : 'limit'] = n;
    } else if (a === '--root') flags.root = path.resolve(argv[++i]!);
    else throw new Error(`unknown flag ${a} (--sizes LIST --requests N --rounds N --same --mixed --nested K --returning --limit L --by-track --distinct --upsert --upsert-nothing --upsert-where --objects --under-one K --repeat-keys K --update-many [--fields] --root DIR)`);
  }
  if (flags.sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sizes: row counts');
  if ((flags.returning && !flags.nested && !flags.objects) || (flags.upsert && !flags.nested && !flags.objects)) throw new Error('--returning, --upsert*: with --nested K or --objects');
  if (flags.objects && (flags.nested || flags.mixed || flags.updateMany)) throw new Error('--objects: without --nested, --mixed or --update-many');
  if (flags.limit && !flags.returning) throw new Error('--limit: with --returning');
  if ((flags.byTrack || flags.distinct) && !(flags.returning && flags.nested)) throw new Error('--by-track, --distinct: with --nested K --returning');
  if (flags.byTrack && flags.distinct) throw new Error('--by-track or --distinct');
  if (flags.mixed && flags.nested) throw new Error('--mixed: without --nested');
  if (flags.repeatKeys && (flags.nested || flags.objects || flags.mixed || flags.updateMany || flags.underOne)) throw new Error('--repeat-keys: alone');
  if (flags.underOne && (flags.nested || flags.objects || flags.mixed || flags.updateMany || flags.returning)) throw new Error('--under-one: alone');
  if (flags.updateMany && (flags.nested || flags.mixed || flags.sizes.some((n) => n > 3503))) throw new Error('--update-many: without --nested or --mixed, at most 3,503 updates');
  if (flags.fields && (!flags.updateMany || flags.sizes.some((n) => n > 500))) throw new Error('--fields: with --update-many, at most 500 fields (the engine\'s default --graphql-max-root-fields)');
  return flags;
}

/** N updates of one track each as N root fields (`--update-many --fields`). */
const fieldsDocs = new Map<number, string>();
function fieldsDoc(n: number): string {
  let doc = fieldsDocs.get(n);
  if (doc) return doc;
  const vars = Array.from({ length: n }, (_, j) => `$i${j}: Int!, $n${j}: String!`).join(', ');
  const fields = Array.from({ length: n }, (_, j) => `u${j}: update_tracks_by_pk(pk_columns: {id: $i${j}}, _set: {name: $n${j}}) { id }`).join(' ');
  fieldsDocs.set(n, (doc = `mutation (${vars}) { ${fields} }`));
  return doc;
}

const INSERT = 'mutation ($rows: [tracks_insert_input!]!) { insert_tracks(objects: $rows) { affected_rows } }';
const INSERT_NESTED = 'mutation ($rows: [playlists_insert_input!]!) { insert_playlists(objects: $rows) { affected_rows } }';
const INSERT_NESTED_RETURNING =
  'mutation ($rows: [playlists_insert_input!]!) { insert_playlists(objects: $rows) { affected_rows returning { id playlist_tracks(order_by: {track_id: asc}) { track_id } } } }';
const INSERT_OBJECTS = 'mutation ($rows: [playlist_track_insert_input!]!) { insert_playlist_track(objects: $rows) { affected_rows } }';
const INSERT_OBJECTS_RETURNING =
  'mutation ($rows: [playlist_track_insert_input!]!) { insert_playlist_track(objects: $rows) { affected_rows returning { track_id playlist { name playlist_tracks { track_id } } } } }';
const INSERT_UNDER_ONE = 'mutation ($row: artists_insert_input!) { insert_artists_one(object: $row) { id } }';
const UPDATE_MANY = 'mutation ($rows: [tracks_updates!]!) { update_tracks_many(updates: $rows) { affected_rows } }';
const FIRST_ID = 1_000_000;
/** The first id of the playlists that are there before the nested runs (see above). */
const BALLAST = 100_000;

try {
  const flags = parseFlags(process.argv.slice(2));
  const { sql, dbUrl } = await loadChinook(here, 'bulk-inserts');
  if (flags.nested || flags.objects) {
    await sql.unsafe(`insert into playlists (id, name) select g, 'ballast' from generate_series(${BALLAST}, ${BALLAST + 19_999}) as g on conflict do nothing`);
    await sql.unsafe('vacuum analyze playlists');
  }
  if (flags.underOne) {
    await sql.unsafe(`insert into albums (id, title, artist_id) select g, 'ballast', 1 from generate_series(${BALLAST}, ${BALLAST + 19_999}) as g on conflict do nothing`);
    await sql.unsafe('vacuum analyze albums');
  }
  const port = await freePort();
  const engine = await startEngine(flags.root, { dbUrl, port, nodeFlags: process.env.BENCH_ENGINE_FLAGS?.split(' ').filter(Boolean) });
  const url = `http://127.0.0.1:${port}`;
  const md = await post(`${url}/v1/metadata`, { type: 'bulk', args: await chinookMetadata(sql) });
  if (md.status !== 200) throw new Error(`metadata: ${md.text}`);
  // The mutation root is made and the document planned on its first request: not timed.
  let query = flags.nested ? (flags.returning ? INSERT_NESTED_RETURNING : INSERT_NESTED) : flags.objects ? (flags.returning ? INSERT_OBJECTS_RETURNING : INSERT_OBJECTS) : flags.updateMany ? UPDATE_MANY : flags.underOne ? INSERT_UNDER_ONE : INSERT;
  if (flags.byTrack) query = query.replace('(order_by: {track_id: asc})', '(order_by: [{track: {name: asc}}, {track_id: asc}])');
  if (flags.distinct) query = query.replace('(order_by: {track_id: asc})', '(distinct_on: track_id, order_by: {track_id: asc})');
  if (flags.limit) query = query.replace(/\(((?:distinct_on|order_by).*)\) \{ track_id \}/, `($1, limit: ${flags.limit}) { track_id }`);
  const update = { name: 'update_columns: [name]', nothing: 'update_columns: []', where: 'update_columns: [name], where: {name: {_like: "x%"}}' };
  // With --objects the playlists are upserted where each row brings its own (below).
  if (flags.upsert && !flags.objects) query = query.replace('(objects: $rows)', `(objects: $rows, on_conflict: {constraint: pk_playlists, ${update[flags.upsert]}})`);
  if (flags.repeatKeys) query = query.replace('(objects: $rows)', '(objects: $rows, on_conflict: {constraint: pk_tracks, update_columns: [name], where: {name: {_like: "bulk%"}}})');
  const warm = await post(`${url}/v1/graphql`, flags.underOne ? { query: INSERT, variables: { rows: [] } } : { query, variables: { rows: [] } });
  if (warm.status !== 200 || warm.text.includes('errors')) throw new Error(`warm-up: ${warm.text}`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`# ${new Date().toISOString()} ${flags.fields ? 'updates as root fields' : flags.updateMany ? 'update_many' : 'bulk inserts'}, engine at ${flags.root}, ${flags.requests} requests a run, ${flags.rounds} rounds${flags.same ? ', one row count per size' : ', each request a row count of its own'}${flags.mixed ? ', every other row without its id' : ''}${flags.nested ? `, playlists each with ${flags.nested} playlist_track rows${flags.returning ? `, returning ${flags.limit ? `the first ${flags.limit} of ` : ''}them${flags.byTrack ? ' by their track\'s name' : flags.distinct ? ', distinct on track_id' : ''}` : ''}${flags.upsert ? `, upserted (${update[flags.upsert]})` : ''}` : ''}${flags.objects ? `, playlist_track rows each with its own playlist${flags.upsert ? ` upserted (${update[flags.upsert]})` : ''}${flags.returning ? ', returning its tracks' : ''}` : ''}${flags.underOne ? `, one artist with the rows as albums (upserted doing nothing), each with ${flags.underOne} tracks` : ''}${flags.repeatKeys ? `, upserted by id with an update that has a where, the ids repeating every ${flags.repeatKeys} rows` : ''}`);
  for (const size of flags.sizes) {
    const wall: number[] = [];
    const server: number[] = [];
    const pg: number[] = [];
    for (let round = 0; round < flags.rounds; round++) {
      // Each request's rows, made before the timing: `size` rows, or `size - i` so that no two
      // requests of the run have the same count.
      const bodies = Array.from({ length: flags.requests }, (_, i) => {
        const n = flags.same ? size : Math.max(1, size - i);
        const written = flags.underOne ? 1 + n * (1 + flags.underOne) : n * (1 + flags.nested + (flags.objects ? 1 : 0));
        if (flags.underOne) {
          const base = FIRST_ID + i * size;
          const albums = Array.from({ length: n }, (_, j) => ({
            id: base + j,
            title: `bulk "${i}" \\ ${j}`,
            tracks: { data: Array.from({ length: flags.underOne }, (_, k) => ({ id: (base + j) * flags.underOne + k, name: `t ${j}.${k}`, media_type_id: 1, milliseconds: 1000 + k, unit_price: '0.99' })) },
          }));
          const row = { id: FIRST_ID + i, name: `artist ${i}`, albums: { data: albums, on_conflict: { constraint: 'pk_albums', update_columns: [] } } };
          return { rows: written, objects: n, body: JSON.stringify({ query, variables: { row } }) };
        }
        if (flags.objects) {
          const upsert = { name: { update_columns: ['name'] }, nothing: { update_columns: [] }, where: { update_columns: ['name'], where: { name: { _like: 'x%' } } } };
          const on = flags.upsert ? { on_conflict: { constraint: 'pk_playlists', ...upsert[flags.upsert] } } : {};
          const rows = Array.from({ length: n }, (_, j) => ({ track_id: 1 + (j % 3503), playlist: { data: { id: FIRST_ID + i * size + j, name: `bulk "${i}" \\ ${j}` }, ...on } }));
          return { rows: written, objects: n, body: JSON.stringify({ query, variables: { rows } }) };
        }
        if (flags.fields) {
          const variables: Record<string, unknown> = {};
          for (let j = 0; j < n; j++) Object.assign(variables, { [`i${j}`]: 1 + j, [`n${j}`]: `many "${round}-${i}" \\ ${j}` });
          return { rows: written, objects: n, body: JSON.stringify({ query: fieldsDoc(n), variables }) };
        }
        if (flags.updateMany) {
          const rows = Array.from({ length: n }, (_, j) => ({ where: { id: { _eq: 1 + j } }, _set: { name: `many "${round}-${i}" \\ ${j}` } }));
          return { rows: written, objects: n, body: JSON.stringify({ query, variables: { rows } }) };
        }
        if (flags.nested) {
          const rows = Array.from({ length: n }, (_, j) => ({
            id: FIRST_ID + i * size + j,
            name: `bulk "${i}" \\ ${j}`,
            playlist_tracks: { data: Array.from({ length: flags.nested }, (_, k) => ({ track_id: 1 + ((j * flags.nested + k) % 3503) })) },
          }));
          return { rows: written, objects: n, body: JSON.stringify({ query, variables: { rows } }) };
        }
        const rows = Array.from({ length: n }, (_, j) => ({
          ...(flags.mixed && j % 2 ? {} : { id: FIRST_ID + i * size + (flags.repeatKeys ? j % flags.repeatKeys : j) }),
          name: `bulk "${i}" \\ ${j}`,
          album_id: 1 + (j % 347),
          media_type_id: 1 + (j % 5),
          genre_id: 1 + (j % 25),
          composer: j % 3 ? `composer ${j}` : null,
          milliseconds: 1000 + j,
          bytes: 10_000 + j,
          unit_price: '0.99',
        }));
        return { rows: written, objects: n, body: JSON.stringify({ query, variables: { rows } }) };
      });
      // Each document of root fields planned before the timing.
      if (flags.fields) for (const b of new Set(bodies.map((x) => x.rows))) await post(`${url}/v1/graphql`, { query: fieldsDoc(b), variables: Object.fromEntries(Array.from({ length: b }, (_, j) => [[`i${j}`, 1 + j], [`n${j}`, 'warm']]).flat()) });
      const t0 = performance.now();
      const { cpu } = await cpuPerRequest(
        engine.pid,
        async () => {
          for (const b of bodies) {
            const r = await fetch(`${url}/v1/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b.body });
            const text = await r.text();
            if (flags.fields) {
              const data = (JSON.parse(text) as { data?: Record<string, { id: number } | null> }).data;
              if (!data || Object.keys(data).length !== b.rows || Object.values(data).some((x) => !x?.id)) throw new Error(`${b.rows} fields: ${text.slice(0, 300)}`);
            } else if (flags.updateMany) {
              // Each update's own answer: one row each.
              const each = (JSON.parse(text) as { data?: { update_tracks_many: { affected_rows: number }[] } }).data?.update_tracks_many;
              if (each?.length !== b.rows || each.some((x) => x.affected_rows !== 1)) throw new Error(`${b.rows} updates: ${text.slice(0, 300)}`);
            } else if (flags.underOne) {
              if (!text.includes('"insert_artists_one"') || text.includes('"errors"')) throw new Error(`${b.rows} rows: ${text.slice(0, 300)}`);
            } else if (!text.includes(`"affected_rows" : ${b.rows}`) && !text.includes(`"affected_rows":${b.rows}`)) throw new Error(`${b.rows} rows: ${text.slice(0, 300)}`);
            if (flags.returning && flags.objects) {
              const back = JSON.parse(text).data.insert_playlist_track.returning as { playlist: { playlist_tracks: unknown[] } }[];
              if (back.length !== b.objects || back.some((p) => p.playlist.playlist_tracks.length !== 1)) throw new Error(`returning: ${text.slice(0, 300)}`);
            } else if (flags.returning) {
              const back = JSON.parse(text).data.insert_playlists.returning as { playlist_tracks: unknown[] }[];
              if (back.length !== b.objects || back.some((p) => p.playlist_tracks.length !== Math.min(flags.nested, flags.limit || flags.nested))) throw new Error(`returning: ${text.slice(0, 300)}`);
            }
          }
          return bodies.length;
        },
        (n) => n,
      );
      wall.push((performance.now() - t0) / bodies.length);
      if (cpu) {
        server.push(cpu.server / 1000);
        pg.push(cpu.postgres / 1000);
      }
      if (flags.updateMany) {
        // Nothing to delete: the same tracks are updated again.
      } else if (flags.underOne) {
        await sql.unsafe(`delete from tracks where id >= ${FIRST_ID}`);
        await sql.unsafe(`delete from albums where id >= ${FIRST_ID}`);
        await sql.unsafe(`delete from artists where id >= ${FIRST_ID}`);
        await sql.unsafe('vacuum analyze tracks, albums, artists');
      } else if (flags.nested || flags.objects) {
        await sql.unsafe(`delete from playlist_track where playlist_id >= ${FIRST_ID}`);
        await sql.unsafe(`delete from playlists where id >= ${FIRST_ID}`);
        await sql.unsafe('vacuum analyze playlist_track, playlists');
      } else {
        await sql.unsafe(`delete from tracks where id >= ${FIRST_ID} or name like 'bulk %'`);
        await sql.unsafe('vacuum analyze tracks');
      }
    }
    const fmt = (xs: number[]) => (xs.length ? `${median(xs).toFixed(2)} (${xs.map((x) => x.toFixed(2)).join(', ')})` : 'n/a');
    console.log(`${String(size).padStart(6)} rows: ms per request, median of ${flags.rounds} runs (each run): wall ${fmt(wall)}; engine CPU ${fmt(server)}; PostgreSQL CPU ${fmt(pg)}`);
  }
} finally {
  await cleanup();
}
