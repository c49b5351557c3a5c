/**
 * The benchmark's queries (issue 6, "Benchmark"), each written once per server:
 *  - `svc`: Hasura v2's GraphQL, as a client of this engine sends it; the hand-written handler is
 *    sent the very same request (it maps the document text and role to fixed SQL);
 *  - `postgraphile`: the same data asked the PostGraphile v5 way (amber preset, plus the
 *    connection-filter and pg-aggregates plugins; v5 names a column `id` `rowId`, the Node
 *    interface has `id`), with aliases so that its answer has the same keys; `fromPostgraphile`
 *    reshapes what aliases cannot (aggregates; connections' `nodes` are unwrapped for all);
 *  - `sql`: the hand-written SQL, one statement per root field returning one row with one column,
 *    the field's JSON built inside PostgreSQL, as the engine is meant to (the answer is spliced as
 *    text, never parsed). The engine's own SQL replaces it once the engine can explain (run.ts).
 *
 * Every list is ordered, so that each server's answer is deterministic and can be compared.
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
}

export interface BenchQuery {
  name: string;
  title: string;
  svc: GraphQLRequest;
  postgraphile: GraphQLRequest | { skip: string };
  fromPostgraphile?(data: any): unknown;
  sql: RootFieldSql[];
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
select coalesce(json_agg(json_build_object('id', a.id, 'title', a.title) order by a.id), '[]')::text
from (select id, title from albums ${where} order by id limit 50) a`;

export const queries: BenchQuery[] = [
  {
    name: 'simple',
    title: 'a simple list: 50 albums { id title }',
    svc: { query: simpleSvc },
    postgraphile: { query: simplePostgraphile },
    sql: [{ field: 'albums', sql: simpleSql(''), params: () => [] }],
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
    sql: [
      {
        field: 'albums',
        params: () => [],
        sql: `
select coalesce(json_agg(json_build_object('id', a.id, 'title', a.title, 'tracks', t.tracks) order by a.id), '[]')::text
from (select id, title from albums order by id limit 20) a
cross join lateral (
  select coalesce(json_agg(json_build_object(
           'id', t.id, 'name', t.name,
           'genre', (select json_build_object('name', g.name) from genres g where g.id = t.genre_id),
           'media_type', (select json_build_object('name', m.name) from media_types m where m.id = t.media_type_id)
         ) order by t.id), '[]') as tracks
  from tracks t where t.album_id = a.id
) t`,
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
    sql: [
      {
        field: 'playlists',
        // The literal "Jazz" is a bind parameter, as the engine binds every value.
        params: () => ['Jazz'],
        sql: `
select coalesce(json_agg(json_build_object('id', p.id, 'name', p.name, 'playlist_tracks', pt.items) order by p.id), '[]')::text
from playlists p
cross join lateral (
  select coalesce(json_agg(json_build_object('track', (
           select json_build_object('id', t.id, 'name', t.name, 'album', (
                    select json_build_object('id', al.id, 'title', al.title, 'artist', (
                             select json_build_object('id', ar.id, 'name', ar.name) from artists ar where ar.id = al.artist_id))
                    from albums al where al.id = t.album_id))
           from tracks t where t.id = x.track_id)
         ) order by x.track_id), '[]') as items
  from (select track_id from playlist_track where playlist_id = p.id order by track_id limit 10) x
) pt
where exists (
  select 1 from playlist_track x join tracks t on t.id = x.track_id join genres g on g.id = t.genre_id
  where x.playlist_id = p.id and g.name = $1
)`,
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
    sql: [
      {
        field: 'tracks_by_pk',
        params: (v) => [v.id],
        sql: `
select (
  select json_build_object(
    'id', t.id, 'name', t.name, 'composer', t.composer, 'milliseconds', t.milliseconds, 'unit_price', t.unit_price,
    'album', (select json_build_object('title', al.title, 'artist', (select json_build_object('name', ar.name) from artists ar where ar.id = al.artist_id))
              from albums al where al.id = t.album_id),
    'genre', (select json_build_object('name', g.name) from genres g where g.id = t.genre_id))
  from tracks t where t.id = $1
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
    sql: [
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
    sql: [
      {
        field: 'invoices_groups',
        params: () => [],
        sql: `
select coalesce(json_agg(json_build_object(
  'keys', json_build_object('month', g.month, 'billing_country', g.billing_country),
  'aggregate', json_build_object('count', g.n, 'sum', json_build_object('total', g.sum), 'avg', json_build_object('total', g.avg), 'min', json_build_object('id', g.first)))
  order by g.month, g.first), '[]')::text
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
    sql: [
      {
        field: 'albums',
        params: (_v, h) => [h['x-svc-user-id']],
        sql: simpleSql('where artist_id = $1::int'),
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
