/**
 * The benchmark's queries (issue 6, "Benchmark"), each written once per server:
 *  - `svc`: Hasura v2's GraphQL, as a client of this engine sends it; the hand-written handler is
 *    sent the very same request (it maps the document text and role to fixed SQL);
 *  - `postgraphile`: the same data asked the PostGraphile v5 way (amber preset, plus the
 *    connection-filter and pg-aggregates plugins; v5 names a column `id` `rowId`, the Node
 *    interface has `id`), with aliases so that its answer has the same keys; `fromPostgraphile`
 *    reshapes what aliases cannot (aggregates; connections' `nodes` are unwrapped for all);
 *  - `expert`: the SQL a PostgreSQL expert would write for the same answer (Note [Expert SQL]),
 *    one statement per root field returning one row with one column, the field's JSON built
 *    inside PostgreSQL as the engine does (the answer is spliced as text, never parsed).
 *
 * Every list is ordered, so that each server's answer is deterministic and can be compared.
 *
 * Note [Expert SQL]
 * The hand-written handler runs the engine's own statements: it measures what the engine adds in
 * Node, and can never show a poor statement. The expert column runs the same handler with SQL
 * written for each answer by hand, the way one would write it knowing PostgreSQL: object
 * relationships as joins (a foreign key's target is one row, or none, so a LEFT JOIN is the same
 * as a per-row subquery and lets the planner choose), JSON objects from rows where that is
 * cheaper than json_build_object (json_agg of a row and row_to_json skip the variadic argument
 * handling that json_build_object pays per row), orders and limits applied before the JSON is
 * built, EXISTS for filters through array relationships. A statement shape that beats the
 * engine's here is a candidate for the compiler; bench/graphql/shapes.ts compares shapes alone.
 */

export type Headers = Record<string, string>;

export interface GraphQLRequest {
  query: string;
  variables?: Record<string, unknown>;
  headers?: Headers;
}

export interface RootFieldSql {
  field: string;
  sql: string;
  /** Bind parameters from the request's variables and headers (lower-case names). */
  params(variables: Record<string, any>, headers: Headers): unknown[];
  /** The engine's statement answers the list's records (/v1/graphql/explain's `records`, Note
   * [Lists as records] in plugins/postgres/records/records.ts): write them as the engine does. */
  write?: (value: Uint8Array | null) => Uint8Array | Promise<Uint8Array>;
}

export interface BenchQuery {
  name: string;
  title: string;
  svc: GraphQLRequest;
  postgraphile: GraphQLRequest | { skip: string };
  fromPostgraphile?(data: any): unknown;
  /** What a PostgreSQL expert would write for the same answer: one statement per root field
   * building the field's JSON (Note [Expert SQL]). */
  expert: RootFieldSql[];
}

/** The `user` role's session: a row filter on albums.artist_id (artist 90, Iron Maiden: 21 albums). */
export const USER_HEADERS: Headers = { 'x-svc-role': 'user', 'x-svc-user-id': '90' };

const simpleSvc = `query Albums {
  albums(order_by: {id: asc}, limit: 50) { id title }
}`;
const simplePostgraphile = `query Albums {
  albums: allAlbums(orderBy: ROW_ID_ASC, first: 50) { nodes { id: rowId title } }
}`;
const simpleSql = (where: string) => `
select coalesce(json_agg(a order by a.id), '[]')::text
from (select id, title from albums ${where} order by id limit 50) a`;

export const queries: BenchQuery[] = [
  {
    name: 'simple',
    title: 'a simple list: 50 albums { id title }',
    svc: { query: simpleSvc },
    postgraphile: { query: simplePostgraphile },
    expert: [{ field: 'albums', sql: simpleSql(''), params: () => [] }],
  },
  {
    name: 'nested',
    title: 'nested: 20 albums -> tracks -> genre, media type',
    svc: {
      query: `query AlbumsTracks {
  albums(order_by: {id: asc}, limit: 20) {
    id title
    tracks(order_by: {id: asc}) { id name genre { name } media_type { name } }
  }
}`,
    },
    postgraphile: {
      query: `query AlbumsTracks {
  albums: allAlbums(orderBy: ROW_ID_ASC, first: 20) {
    nodes {
      id: rowId title
      tracks: tracksByAlbumId(orderBy: ROW_ID_ASC) {
        nodes { id: rowId name genre: genreByGenreId { name } media_type: mediaTypeByMediaTypeId { name } }
      }
    }
  }
}`,
    },
    expert: [
      {
        field: 'albums',
        params: () => [],
        sql: `
select coalesce(json_agg(a order by a.id), '[]')::text
from (
  select al.id, al.title, (
    select coalesce(json_agg(t order by t.id), '[]')
    from (
      select t.id, t.name,
             case when g.id is null then null else json_build_object('name', g.name) end as genre,
             case when m.id is null then null else json_build_object('name', m.name) end as media_type
      from tracks t
      left join genres g on g.id = t.genre_id
      left join media_types m on m.id = t.media_type_id
      where t.album_id = al.id
    ) t
  ) as tracks
  from albums al order by al.id limit 20
) a`,
      },
    ],
  },
  {
    name: 'deep',
    title: 'filtered deep: playlists with a Jazz track -> 10 tracks -> album -> artist',
    svc: {
      query: `query JazzPlaylists {
  playlists(where: {playlist_tracks: {track: {genre: {name: {_eq: "Jazz"}}}}}, order_by: {id: asc}) {
    id name
    playlist_tracks(order_by: {track_id: asc}, limit: 10) {
      track { id name album { id title artist { id name } } }
    }
  }
}`,
    },
    postgraphile: {
      query: `query JazzPlaylists {
  playlists: allPlaylists(
    filter: {playlistTracksByPlaylistId: {some: {trackByTrackId: {genreByGenreId: {name: {equalTo: "Jazz"}}}}}}
    orderBy: ROW_ID_ASC
  ) {
    nodes {
      id: rowId name
      playlist_tracks: playlistTracksByPlaylistId(orderBy: TRACK_ID_ASC, first: 10) {
        nodes {
          track: trackByTrackId { id: rowId name album: albumByAlbumId { id: rowId title artist: artistByArtistId { id: rowId name } } }
        }
      }
    }
  }
}`,
    },
    expert: [
      {
        field: 'playlists',
        // The literal "Jazz" is a bind parameter, as the engine binds every value.
        params: () => ['Jazz'],
        sql: `
select coalesce(json_agg(p order by p.id), '[]')::text
from (
  select p.id, p.name, (
    select coalesce(json_agg(json_build_object('track', json_build_object(
             'id', t.id, 'name', t.name,
             'album', case when al.id is null then null else json_build_object(
                        'id', al.id, 'title', al.title, 'artist', json_build_object('id', ar.id, 'name', ar.name)) end)
           ) order by x.track_id), '[]')
    from (select track_id from playlist_track where playlist_id = p.id order by track_id limit 10) x
    join tracks t on t.id = x.track_id
    left join albums al on al.id = t.album_id
    left join artists ar on ar.id = al.artist_id
  ) as playlist_tracks
  from playlists p
  where exists (
    select 1 from playlist_track x join tracks t on t.id = x.track_id join genres g on g.id = t.genre_id
    where x.playlist_id = p.id and g.name = $1
  )
) p`,
      },
    ],
  },
  {
    name: 'by_pk',
    title: 'by primary key with a variable: one track -> album -> artist, genre',
    svc: {
      query: `query Track($id: Int!) {
  tracks_by_pk(id: $id) {
    id name composer milliseconds unit_price
    album { title artist { name } }
    genre { name }
  }
}`,
      variables: { id: 1000 },
    },
    postgraphile: {
      query: `query Track($id: Int!) {
  tracks_by_pk: trackByRowId(rowId: $id) {
    id: rowId name composer milliseconds unit_price: unitPrice
    album: albumByAlbumId { title artist: artistByArtistId { name } }
    genre: genreByGenreId { name }
  }
}`,
      variables: { id: 1000 },
    },
    expert: [
      {
        field: 'tracks_by_pk',
        params: (v) => [v.id],
        sql: `
select (
  select row_to_json(r) from (
    select t.id, t.name, t.composer, t.milliseconds, t.unit_price,
           case when al.id is null then null else json_build_object('title', al.title, 'artist', json_build_object('name', ar.name)) end as album,
           case when g.id is null then null else json_build_object('name', g.name) end as genre
    from tracks t
    left join albums al on al.id = t.album_id
    left join artists ar on ar.id = al.artist_id
    left join genres g on g.id = t.genre_id
    where t.id = $1
  ) r
)::text`,
      },
    ],
  },
  {
    name: 'aggregate',
    title: 'aggregate: count, sum, avg, max over the Rock tracks',
    svc: {
      query: `query RockStats {
  tracks_aggregate(where: {genre_id: {_eq: 1}}) {
    aggregate { count sum { milliseconds } avg { milliseconds } max { unit_price } }
  }
}`,
    },
    postgraphile: {
      query: `query RockStats {
  allTracks(condition: {genreId: 1}) {
    totalCount
    aggregates { sum { milliseconds } average { milliseconds } max { unitPrice } }
  }
}`,
    },
    fromPostgraphile: (d) => ({
      tracks_aggregate: {
        aggregate: {
          count: d.allTracks.totalCount,
          sum: { milliseconds: d.allTracks.aggregates.sum.milliseconds },
          avg: { milliseconds: d.allTracks.aggregates.average.milliseconds },
          max: { unit_price: d.allTracks.aggregates.max.unitPrice },
        },
      },
    }),
    expert: [
      {
        field: 'tracks_aggregate',
        params: () => [1],
        sql: `
select json_build_object('aggregate', json_build_object(
  'count', count(*),
  'sum', json_build_object('milliseconds', sum(milliseconds)),
  'avg', json_build_object('milliseconds', avg(milliseconds)),
  'max', json_build_object('unit_price', max(unit_price))))::text
from tracks where genre_id = $1`,
      },
    ],
  },
  {
    // Issue 30: grouped aggregates (Note [The groups' shape] in plugins/database/schema/groups.ts).
    // Ordered by month, then by the group's first invoice id: the same order for every server
    // whatever the database's collation (countries compare differently in C and en_US).
    name: 'groups',
    title: 'grouped aggregate: invoices by month and billing country (count, sum, avg)',
    svc: {
      query: `query InvoicesByMonthCountry {
  invoices_groups(
    group_by: [billing_country]
    group_by_keys: [{_column: invoice_date, _truncate: month}]
    order_by: [{keys: {invoice_date: asc}}, {aggregate: {min: {id: asc}}}]
  ) {
    keys { month: invoice_date(truncate: month) billing_country }
    aggregate { count sum { total } avg { total } min { id } }
  }
}`,
    },
    // pg-aggregates' groupedAggregates (month truncation added in bench/peers/graphile.config.mjs):
    // no order of its own and untyped keys, so the answer is reshaped and sorted here.
    postgraphile: {
      query: `query InvoicesByMonthCountry {
  allInvoices {
    groupedAggregates(groupBy: [INVOICE_DATE_TRUNCATED_TO_MONTH, BILLING_COUNTRY]) {
      keys
      distinctCount { rowId }
      sum { total }
      average { total }
      min { rowId }
    }
  }
}`,
    },
    fromPostgraphile: (d) => ({
      invoices_groups: (d.allInvoices.groupedAggregates as any[])
        .map((g) => ({
          // A timestamp key as Svc writes it (`2009-01-01T00:00:00`).
          keys: { month: String(g.keys[0]).replace(' ', 'T').slice(0, 19), billing_country: g.keys[1] },
          aggregate: { count: Number(g.distinctCount.rowId), sum: { total: g.sum.total }, avg: { total: g.average.total }, min: { id: Number(g.min.rowId) } },
        }))
        .sort((a, b) => (a.keys.month < b.keys.month ? -1 : a.keys.month > b.keys.month ? 1 : a.aggregate.min.id - b.aggregate.min.id)),
    }),
    expert: [
      {
        field: 'invoices_groups',
        params: () => [],
        // The JSON written as text (no record per object: Note [Root groups as text] in
        // plugins/postgres/sql/compile-groups.ts measured it cheapest); the month never null, the
        // sum and average of numeric(10,2) totals never NaN.
        sql: `
select coalesce('[' || string_agg('{"keys":{"month":' || to_json(g.month)::text || ',"billing_country":' || coalesce(to_json(g.billing_country)::text, 'null')
  || '},"aggregate":{"count":' || g.n || ',"sum":{"total":' || coalesce(g.sum::text, 'null') || '},"avg":{"total":' || coalesce(g.avg::text, 'null')
  || '},"min":{"id":' || g.first || '}}}', ',' order by g.month, g.first) || ']', '[]')
from (
  select date_trunc('month', invoice_date) as month, billing_country, count(*) as n, sum(total) as sum, avg(total) as avg, min(id) as first
  from invoices group by 1, 2
) g`,
      },
    ],
  },
  {
    name: 'user',
    title: 'the simple list as role user, row filter albums.artist_id = X-Svc-User-Id',
    svc: { query: simpleSvc, headers: USER_HEADERS },
    // PostGraphile's way: the same document, and an RLS policy on albums for the PostgreSQL role
    // bench_user, which its config (bench/peers/graphile.config.mjs) sets from the same headers.
    postgraphile: { query: simplePostgraphile, headers: USER_HEADERS },
    expert: [
      {
        field: 'albums',
        params: (_v, h) => [h['x-svc-user-id']],
        sql: simpleSql('where artist_id = $1::int'),
      },
    ],
  },
  {
    name: 'order_rel',
    title: 'ordered through object relationships: 50 tracks from the 101st by artist name, album title, id',
    svc: {
      query: `query TracksByArtist {
  tracks(order_by: [{album: {artist: {name: asc}}}, {album: {title: asc}}, {id: asc}], limit: 50, offset: 100) {
    id name album { title artist { name } }
  }
}`,
    },
    postgraphile: { skip: "PostGraphile v5's amber preset (and the plugins installed in bench/peers) cannot order by columns of related tables" },
    expert: [
      {
        field: 'tracks',
        params: () => [],
        // Hasura's order: ascending, nulls last; the tracks without an album last.
        sql: `
select coalesce(json_agg(json_build_object('id', x.id, 'name', x.name, 'album', case when x.album_id is null then null else
         json_build_object('title', x.title, 'artist', json_build_object('name', x.artist)) end)
       order by x.artist asc nulls last, x.title asc nulls last, x.id), '[]')::text
from (
  -- The 50 rows first, their JSON after: built in the sorted subquery, it would be built for
  -- all 3,503 tracks before the sort (on the 16-core machine 16 ms of PostgreSQL's CPU against 4).
  select t.id, t.name, t.album_id, al.title, ar.name as artist
  from tracks t
  left join albums al on al.id = t.album_id
  left join artists ar on ar.id = al.artist_id
  order by ar.name asc nulls last, al.title asc nulls last, t.id asc
  limit 50 offset 100
) x`,
      },
    ],
  },
  {
    name: 'large',
    title: 'a large result: all 3,503 tracks with album and genre',
    svc: {
      query: `query AllTracks {
  tracks(order_by: {id: asc}) { id name album { title } genre { name } }
}`,
    },
    postgraphile: {
      query: `query AllTracks {
  tracks: allTracks(orderBy: ROW_ID_ASC) {
    nodes { id: rowId name album: albumByAlbumId { title } genre: genreByGenreId { name } }
  }
}`,
    },
    expert: [
      {
        field: 'tracks',
        params: () => [],
        sql: `
select coalesce(json_agg(x order by x.id), '[]')::text
from (
  select t.id, t.name,
         case when al.id is null then null else json_build_object('title', al.title) end as album,
         case when g.id is null then null else json_build_object('name', g.name) end as genre
  from tracks t
  left join albums al on al.id = t.album_id
  left join genres g on g.id = t.genre_id
) x`,
      },
    ],
  },
  {
    name: 'multi',
    title: 'four root fields in one request: artists, genres, a track count, the last albums with artist',
    svc: {
      query: `query Dashboard {
  artists(order_by: {id: asc}, limit: 10) { id name }
  genres(order_by: {id: asc}) { id name }
  tracks_aggregate { aggregate { count } }
  albums(order_by: {id: desc}, limit: 5) { id title artist { name } }
}`,
    },
    postgraphile: {
      query: `query Dashboard {
  artists: allArtists(orderBy: ROW_ID_ASC, first: 10) { nodes { id: rowId name } }
  genres: allGenres(orderBy: ROW_ID_ASC) { nodes { id: rowId name } }
  allTracks { totalCount }
  albums: allAlbums(orderBy: ROW_ID_DESC, first: 5) { nodes { id: rowId title artist: artistByArtistId { name } } }
}`,
    },
    fromPostgraphile: (d) => {
      const { allTracks, ...rest } = d;
      return { ...(unwrapNodes(rest) as object), tracks_aggregate: { aggregate: { count: allTracks.totalCount } } };
    },
    expert: [
      { field: 'artists', params: () => [], sql: `select coalesce(json_agg(a order by a.id), '[]')::text from (select id, name from artists order by id limit 10) a` },
      { field: 'genres', params: () => [], sql: `select coalesce(json_agg(g order by g.id), '[]')::text from (select id, name from genres) g` },
      { field: 'tracks_aggregate', params: () => [], sql: `select json_build_object('aggregate', json_build_object('count', count(*)))::text from tracks` },
      {
        field: 'albums',
        params: () => [],
        sql: `
select coalesce(json_agg(json_build_object('id', al.id, 'title', al.title, 'artist', json_build_object('name', ar.name)) order by al.id desc), '[]')::text
from (select id, title, artist_id from albums order by id desc limit 5) al
join artists ar on ar.id = al.artist_id`,
      },
    ],
  },
  {
    name: 'array_agg',
    title: 'a where through array relationships and an aggregate in order_by: 20 artists with a Rock track, most albums first',
    svc: {
      query: `query RockArtists {
  artists(where: {albums: {tracks: {genre_id: {_eq: 1}}}}, order_by: [{albums_aggregate: {count: desc}}, {id: asc}], limit: 20) {
    id name albums_aggregate { aggregate { count } }
  }
}`,
    },
    postgraphile: {
      query: `query RockArtists {
  artists: allArtists(
    filter: {albumsByArtistId: {some: {tracksByAlbumId: {some: {genreId: {equalTo: 1}}}}}}
    orderBy: [ALBUMS_BY_ARTIST_ID_COUNT_DESC, ROW_ID_ASC]
    first: 20
  ) {
    nodes { id: rowId name albums: albumsByArtistId { totalCount } }
  }
}`,
    },
    fromPostgraphile: (d) => ({
      artists: d.artists.nodes.map((a: any) => ({ id: a.id, name: a.name, albums_aggregate: { aggregate: { count: a.albums.totalCount } } })),
    }),
    expert: [
      {
        field: 'artists',
        params: () => [1],
        sql: `
select coalesce(json_agg(json_build_object('id', a.id, 'name', a.name, 'albums_aggregate', json_build_object('aggregate', json_build_object('count', a.n))) order by a.n desc, a.id), '[]')::text
from (
  select ar.id, ar.name, (select count(*) from albums al where al.artist_id = ar.id) as n
  from artists ar
  where exists (select 1 from albums al join tracks t on t.album_id = al.id where al.artist_id = ar.id and t.genre_id = $1)
  order by n desc, ar.id
  limit 20
) a`,
      },
    ],
  },
];

/** PostGraphile's connections (`{nodes: [...]}`) as plain lists, the shape of Svc's answer. */
export function unwrapNodes(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(unwrapNodes);
  if (x && typeof x === 'object') {
    const keys = Object.keys(x);
    if (keys.length === 1 && keys[0] === 'nodes' && Array.isArray((x as any).nodes)) return unwrapNodes((x as any).nodes);
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, unwrapNodes(v)]));
  }
  return x;
}

/**
 * Where two answers differ, or undefined when they are the same data. Numbers compare by value
 * with a relative tolerance, and a numeric string equals the number (PostGraphile sends numeric,
 * bigint and averages as strings, Hasura as JSON numbers); key order does not matter.
 */
export function difference(a: unknown, b: unknown, at = '$'): string | undefined {
  const num = (x: unknown) => (typeof x === 'number' ? x : typeof x === 'string' && x.trim() !== '' && !Number.isNaN(Number(x)) ? Number(x) : undefined);
  if (typeof a === 'number' || typeof b === 'number') {
    const x = num(a);
    const y = num(b);
    if (x !== undefined && y !== undefined && Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y))) return undefined;
    return `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b)) return `${at}: ${kind(a)} vs ${kind(b)}`;
    if (a.length !== b.length) return `${at}: ${a.length} items vs ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = difference(a[i], b[i], `${at}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      if (!(k in a) || !(k in b)) return `${at}.${k}: ${k in a ? 'missing on the right' : 'missing on the left'}`;
      const d = difference((a as any)[k], (b as any)[k], `${at}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return a === b ? undefined : `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

function kind(x: unknown): string {
  return Array.isArray(x) ? `a list of ${x.length}` : x === null ? 'null' : typeof x;
}
