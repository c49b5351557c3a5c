/**
 * The benchmark's mutations on Chinook's playlists (issue 6, "Benchmark"), each written once per
 * server as queries.ts does for queries:
 *  - `svc`: Hasura v2's mutation, as a client of this engine sends it, with variables; the
 *    hand-written handler is sent the very same request;
 *  - `postgraphile`: the same write the PostGraphile v5 way (amber preset: `createPlaylist`,
 *    `updatePlaylistByRowId`, `deletePlaylistByRowId`; v5 names the column `id` `rowId`), aliased
 *    so that its answer has the same root key; `fromPostgraphile` takes the row out of the payload;
 *  - `sql`: the hand-written handler's SQL, what a careful developer writes: one statement per root
 *    field, values as bind parameters, prepared, in autocommit, the answer's JSON built by
 *    PostgreSQL (a CTE chain for the nested insert). The engine's own SQL cannot be used here as it
 *    is for queries: /v1/graphql/explain refuses mutations, and a mutation's parameters change
 *    with every request anyway.
 *
 * Every request writes: the timed runs cannot compare bodies byte for byte (ids differ), so each
 * answer is checked against the request that produced it (`check`), and after each run the
 * database is asked what the requests wrote (`written`), see run.ts.
 *
 * Rows: inserts make new playlists (ids from the serial); update and delete act on rows of a pool
 * pre-created for each server's run, ids POOL_BASE, POOL_BASE + 1, ..., one fresh id per request,
 * so that no request waits for another's row lock and every delete finds its row.
 */
import { difference, unwrapNodes, type Headers, type RootFieldSql } from './queries.js';

/** The first id of the pre-created rows: far above the serial's values, which inserts use. */
export const POOL_BASE = 10_000_000;
/** The name of a pre-created row, and of an inserted playlist. */
export const POOL_NAME = 'bench pool';
const NAME = 'bench';
const RENAMED = 'bench renamed';
/**
 * The nested insert's tracks: ten existing tracks (Chinook's tracks 1 to 3503), ten consecutive
 * ones of its own for request `n` (requests are numbered, `numbered`). With the same ten for
 * every request, each inserted playlist_track row's foreign key check takes a key-share lock on
 * one of ten tracks rows that all the concurrent requests lock, which PostgreSQL records as a
 * MultiXact: the three servers then measured that (all ~400 req/s, and 1,700 in a run that began
 * on fresh rows), not themselves.
 */
export const tracksOf = (n: number | undefined): number[] => {
  const first = n === undefined ? 1 : ((n * 10) % 3500) + 1;
  return Array.from({ length: 10 }, (_, i) => first + i);
};

export interface MutationRequest {
  query: string;
  /** The variables of a request on pool row `id`, or of request number `id` (`numbered`), or of
   * any request (undefined). */
  variables(id: number | undefined): Record<string, unknown>;
  headers?: Headers;
}

/** What the database holds after some requests of a mutation. */
export interface Written {
  /** Rows (playlists) the requests wrote: inserted, renamed, or deleted. */
  rows: number;
  /** Whatever is unlike what the requests should have written. */
  wrong?: string;
}

export interface BenchMutation {
  name: string;
  title: string;
  /** 'pool': each request acts on a pre-created row of its own; 'insert': it makes new rows. */
  rows: 'insert' | 'pool';
  /** An insert whose requests are numbered from 0 (its `variables` and `check` get the number). */
  numbered?: true;
  svc: MutationRequest;
  postgraphile: MutationRequest | { skip: string };
  /** What PostGraphile is sent, when it is not the mutation the others are sent. */
  postgraphileNote?: string;
  fromPostgraphile(data: any): unknown;
  /** Where an answer (in Svc's shape) differs from what the request on `id` should answer. */
  check(data: any, id: number | undefined): string | undefined;
  /** What requests wrote: new playlists since the serial was at `seq` (inserts), or to the pool
   * of rows POOL_BASE to `poolEnd` - 1 (update, delete). */
  written(db: Db, since: { seq: number; poolEnd: number }): Promise<Written>;
  sql: RootFieldSql[];
}

/** The part of postgres.js used by `written`. */
type Db = { unsafe(q: string, params?: unknown[]): Promise<any[]> };

/** The playlist row an insert answered: any id above the serial's value before the run, and the rest as expected. */
function inserted(data: any, expected: (id: number) => unknown): string | undefined {
  const row = data?.insert_playlists_one;
  const id = row?.id;
  if (!Number.isInteger(id) || id <= 0 || id >= POOL_BASE) return `$.insert_playlists_one.id: ${JSON.stringify(id)}, not a new playlist's id`;
  return difference(expected(id), data);
}

/** PostGraphile's payload `{playlist: {...}}` (or `{result: ...}` aliased `playlist`) as the row. */
const payloadRow = (key: string) => (d: any) => ({ [key]: unwrapNodes(d?.[key]?.playlist ?? null) });

const int = async (db: Db, q: string, params: unknown[] = []) => Number((await db.unsafe(q, params))[0]!.n);

export const mutations: BenchMutation[] = [
  {
    name: 'insert_one',
    title: `insert one playlist {name: "${NAME}"}, answering { id name }`,
    rows: 'insert',
    svc: {
      query: `mutation InsertPlaylist($name: String!) {
  insert_playlists_one(object: {name: $name}) { id name }
}`,
      variables: () => ({ name: NAME }),
    },
    postgraphile: {
      query: `mutation InsertPlaylist($name: String!) {
  insert_playlists_one: createPlaylist(input: {playlist: {name: $name}}) { playlist { id: rowId name } }
}`,
      variables: () => ({ name: NAME }),
    },
    fromPostgraphile: payloadRow('insert_playlists_one'),
    check: (data) => inserted(data, (id) => ({ insert_playlists_one: { id, name: NAME } })),
    async written(db, { seq }) {
      const rows = await int(db, 'select count(*) as n from playlists where id > $1 and id < $2', [seq, POOL_BASE]);
      const other = await int(db, 'select count(*) as n from playlists where id > $1 and id < $2 and name is distinct from $3', [seq, POOL_BASE, NAME]);
      return { rows, wrong: other ? `${other} new playlists not named "${NAME}"` : undefined };
    },
    sql: [
      {
        field: 'insert_playlists_one',
        params: (v) => [v.name],
        sql: `insert into playlists (name) values ($1) returning json_build_object('id', id, 'name', name)::text`,
      },
    ],
  },
  {
    name: 'insert_nested',
    title: 'insert one playlist with 10 playlist_track rows (nested; ten tracks of its own per request), answering { id name playlist_tracks { track_id } }',
    rows: 'insert',
    numbered: true,
    svc: {
      query: `mutation InsertPlaylistWithTracks($name: String!, $tracks: [playlist_track_insert_input!]!) {
  insert_playlists_one(object: {name: $name, playlist_tracks: {data: $tracks}}) {
    id name
    playlist_tracks(order_by: {track_id: asc}) { track_id }
  }
}`,
      variables: (n) => ({ name: NAME, tracks: tracksOf(n).map((track_id) => ({ track_id })) }),
    },
    // PostGraphile v5 has no nested inserts (the v4 plugin postgraphile-plugin-nested-mutations
    // has no v5 version), and 11 root fields cannot do it either: the tracks need the new
    // playlist's id. Its documented way is a custom mutation: a VOLATILE function, here
    // create_playlist_with_tracks (run.ts creates it; SQL below), one statement of two CTEs.
    postgraphile: {
      query: `mutation InsertPlaylistWithTracks($name: String!, $trackIds: [Int]!) {
  insert_playlists_one: createPlaylistWithTracks(input: {name: $name, trackIds: $trackIds}) {
    playlist: result {
      id: rowId name
      playlist_tracks: playlistTracksByPlaylistId(orderBy: TRACK_ID_ASC) { nodes { track_id: trackId } }
    }
  }
}`,
      variables: (n) => ({ name: NAME, trackIds: tracksOf(n) }),
    },
    postgraphileNote:
      'PostGraphile v5 has no nested inserts: it is sent its custom-mutation equivalent, createPlaylistWithTracks(input: {name, trackIds}), a VOLATILE SQL function create_playlist_with_tracks (one INSERT ... RETURNING CTE feeding an INSERT ... SELECT unnest($2)), then it reads the playlist_tracks back',
    fromPostgraphile: payloadRow('insert_playlists_one'),
    check: (data, n) => inserted(data, (id) => ({ insert_playlists_one: { id, name: NAME, playlist_tracks: tracksOf(n).map((track_id) => ({ track_id })) } })),
    async written(db, { seq }) {
      const rows = await int(db, 'select count(*) as n from playlists where id > $1 and id < $2', [seq, POOL_BASE]);
      // Each new playlist must be named as sent and have ten tracks as tracksOf gives them: ten
      // consecutive ones from one that ends in 1. (Each answer was checked against its request.)
      const other = await int(
        db,
        `select count(*) as n from playlists p
         where p.id > $1 and p.id < $2
           and (p.name is distinct from $3
                or (select count(*) <> 10 or count(distinct track_id) <> 10 or max(track_id) - min(track_id) <> 9 or min(track_id) % 10 <> 1
                    from playlist_track t where t.playlist_id = p.id))`,
        [seq, POOL_BASE, NAME],
      );
      const stray = await int(db, 'select count(*) as n from playlist_track t where t.playlist_id > $1 and not exists (select 1 from playlists p where p.id = t.playlist_id)', [seq]);
      const wrong = [other && `${other} new playlists without ten tracks as sent`, stray && `${stray} playlist_track rows of no playlist`].filter(Boolean).join(', ');
      return { rows, wrong: wrong || undefined };
    },
    sql: [
      {
        field: 'insert_playlists_one',
        params: (v) => [v.name, `{${(v.tracks as { track_id: unknown }[]).map((t) => Number(t.track_id)).join(',')}}`],
        sql: `
with p as (insert into playlists (name) values ($1) returning id, name),
     t as (insert into playlist_track (playlist_id, track_id)
           select p.id, u.track_id from p, unnest($2::int[]) as u(track_id)
           returning track_id)
select json_build_object('id', p.id, 'name', p.name, 'playlist_tracks',
         (select coalesce(json_agg(json_build_object('track_id', t.track_id) order by t.track_id), '[]') from t))::text
from p`,
      },
    ],
  },
  {
    name: 'update_by_pk',
    title: `update by primary key: rename one pre-created playlist of its own per request, answering { id name }`,
    rows: 'pool',
    svc: {
      query: `mutation RenamePlaylist($id: Int!, $name: String!) {
  update_playlists_by_pk(pk_columns: {id: $id}, _set: {name: $name}) { id name }
}`,
      variables: (id) => ({ id, name: RENAMED }),
    },
    postgraphile: {
      query: `mutation RenamePlaylist($id: Int!, $name: String!) {
  update_playlists_by_pk: updatePlaylistByRowId(input: {rowId: $id, playlistPatch: {name: $name}}) { playlist { id: rowId name } }
}`,
      variables: (id) => ({ id, name: RENAMED }),
    },
    fromPostgraphile: payloadRow('update_playlists_by_pk'),
    check: (data, id) => difference({ update_playlists_by_pk: { id, name: RENAMED } }, data),
    async written(db) {
      const rows = await int(db, 'select count(*) as n from playlists where id >= $1 and name = $2', [POOL_BASE, RENAMED]);
      const other = await int(db, 'select count(*) as n from playlists where id >= $1 and name is distinct from $2 and name is distinct from $3', [POOL_BASE, RENAMED, POOL_NAME]);
      return { rows, wrong: other ? `${other} pool rows with another name` : undefined };
    },
    sql: [
      {
        field: 'update_playlists_by_pk',
        params: (v) => [v.id, v.name],
        sql: `update playlists set name = $2 where id = $1 returning json_build_object('id', id, 'name', name)::text`,
      },
    ],
  },
  {
    name: 'delete_by_pk',
    title: 'delete by primary key: one pre-created playlist of its own per request, answering { id name }',
    rows: 'pool',
    svc: {
      query: `mutation DeletePlaylist($id: Int!) {
  delete_playlists_by_pk(id: $id) { id name }
}`,
      variables: (id) => ({ id }),
    },
    postgraphile: {
      query: `mutation DeletePlaylist($id: Int!) {
  delete_playlists_by_pk: deletePlaylistByRowId(input: {rowId: $id}) { playlist { id: rowId name } }
}`,
      variables: (id) => ({ id }),
    },
    fromPostgraphile: payloadRow('delete_playlists_by_pk'),
    check: (data, id) => difference({ delete_playlists_by_pk: { id, name: POOL_NAME } }, data),
    async written(db, { poolEnd }) {
      const left = await int(db, 'select count(*) as n from playlists where id >= $1 and id < $2', [POOL_BASE, poolEnd]);
      const other = await int(db, 'select count(*) as n from playlists where id >= $1 and id < $2 and name is distinct from $3', [POOL_BASE, poolEnd, POOL_NAME]);
      return { rows: poolEnd - POOL_BASE - left, wrong: other ? `${other} pool rows renamed` : undefined };
    },
    sql: [
      {
        field: 'delete_playlists_by_pk',
        params: (v) => [v.id],
        sql: `delete from playlists where id = $1 returning json_build_object('id', id, 'name', name)::text`,
      },
    ],
  },
];

/** PostGraphile's custom mutation for the nested insert (see insert_nested), created before it starts. */
export const POSTGRAPHILE_FUNCTIONS = `
create function create_playlist_with_tracks(name text, track_ids int[]) returns playlists
language sql volatile as $$
  with p as (insert into playlists (name) values (name) returning *),
       t as (insert into playlist_track (playlist_id, track_id) select p.id, u.track_id from p, unnest(track_ids) as u(track_id))
  select * from p
$$;`;
