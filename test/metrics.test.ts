/**
 * Issue 12: `GET /v1/metrics` in Prometheus's text format: the counters move with traffic, the
 * gauges read the plan cache, the pools and the metadata when scraped; only the admin or the
 * metrics secret may read it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServer } from './helpers.js';

const ADMIN = { 'x-svc-admin-secret': 'adm' };
const server = useServer('create table item (id serial primary key, name text); insert into item (name) values (\'a\');', { config: { adminSecret: 'adm', metricsSecret: 'met' } });

/** The value of a series (`name{labels}`) in the exposition text, or undefined. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const scrape = async (headers: Record<string, string> = ADMIN) => server.request('GET', '/v1/metrics', undefined, headers);

beforeAll(async () => {
  expect((await server.metadata({ type: 'pg_track_table', args: { table: 'item' } }, ADMIN)).status).toBe(200);
});

describe('/v1/metrics', () => {
  it('counts requests by route, method, status and operation, and times them', async () => {
    const before = (await scrape()).text;
    const q = '{ item { id name } }';
    for (let i = 0; i < 3; i++) expect((await server.gql(q, undefined, ADMIN)).data.item).toHaveLength(1);
    await server.request('POST', '/v1/graphql', { query: q }, { 'x-svc-admin-secret': 'wrong' });
    const r = await scrape();
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const ok = 'svc_http_requests_total{route="/v1/graphql",method="POST",status="200",operation="graphql"}';
    expect((value(r.text, ok) ?? 0) - (value(before, ok) ?? 0)).toBe(4);
    const count = 'svc_http_request_duration_seconds_count{route="/v1/graphql",operation="graphql"}';
    expect((value(r.text, count) ?? 0) - (value(before, count) ?? 0)).toBe(4);
    // The plan cache: the same document three times (and once refused before planning).
    expect(value(r.text, 'svc_graphql_plan_cache_hits_total')! - (value(before, 'svc_graphql_plan_cache_hits_total') ?? 0)).toBe(2);
    expect(value(r.text, 'svc_graphql_plan_cache_entries')).toBeGreaterThanOrEqual(1);
  });

  it('pools, metadata and the process', async () => {
    const text = (await scrape()).text;
    expect(value(text, 'svc_source_connections_max{source="default"}')).toBeGreaterThan(0);
    expect(value(text, 'svc_source_connections_in_use{source="default"}')).toBe(0);
    expect(value(text, 'svc_metadata_resource_version')).toBeGreaterThanOrEqual(2);
    expect(value(text, 'svc_metadata_inconsistent_objects')).toBe(0);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/# TYPE svc_http_request_duration_seconds histogram/);
  });

  it('operations a client makes up do not grow the series without end', async () => {
    for (let i = 0; i < 2100; i++) await server.metadata({ type: `made_up_${i}`, args: {} }, ADMIN);
    const text = (await scrape()).text;
    const series = text.split('\n').filter((l) => l.startsWith('svc_http_requests_total{'));
    expect(series.length).toBeLessThanOrEqual(2001);
    expect(text).toMatch(/svc_http_requests_total\{route="\/v1\/metadata",method="POST",status="400",operation="other"\} \d+/);
  }, 60_000);

  it('the admin or the metrics secret only; never the secret in the text', async () => {
    expect((await scrape({})).status).toBe(401);
    expect((await scrape({ 'x-svc-metrics-secret': 'nope' })).status).toBe(401);
    expect((await scrape({ 'x-svc-admin-secret': 'adm', 'x-svc-role': 'user' })).status).toBe(401);
    const r = await scrape({ 'x-svc-metrics-secret': 'met' });
    expect(r.status).toBe(200);
    expect(r.text).not.toMatch(/adm|met"/);
  });
});
