import { describe, expect, it } from 'vitest';
import { Counter, Histogram, Registry } from 'prom-client';
import type { RequestRecord } from '../../core/plugin.js';
import { MAX_SERIES, RequestSeries } from './request-series.js';

// Note [Request series]: the scrape must read as prom-client's own Counter and Histogram would
// have written it for the same requests.
const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const HELP = { count: 'HTTP requests answered', time: 'Time to answer' };

function both() {
  const ours = new Registry();
  const series = new RequestSeries('svc_http_requests_total', 'svc_http_request_duration_seconds', BOUNDS);
  series.register(ours, HELP);
  const theirs = new Registry();
  const counter = new Counter({ name: 'svc_http_requests_total', help: HELP.count, labelNames: ['route', 'method', 'status', 'operation'] as const, registers: [theirs] });
  const histogram = new Histogram({ name: 'svc_http_request_duration_seconds', help: HELP.time, labelNames: ['route', 'operation'] as const, buckets: BOUNDS, registers: [theirs] });
  const record = (r: RequestRecord) => {
    series.record(r);
    const operation = r.operation ?? '';
    counter.inc({ route: r.route, method: r.method, status: String(r.status), operation });
    histogram.observe({ route: r.route, operation }, r.durationMs / 1000);
  };
  return { ours, theirs, record };
}

describe('request series', () => {
  it('scrape as prom-client writes the same requests (every bucket, bounds exactly included)', async () => {
    const { ours, theirs, record } = both();
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const routes = ['/v1/graphql', '/v1/metadata', '/healthz'];
    for (let i = 0; i < 3000; i++) {
      // Durations on the bounds themselves, between them, and past the last (+Inf).
      const ms = i % 7 === 0 ? BOUNDS[i % BOUNDS.length]! * 1000 : rand() < 0.02 ? 20_000 : rand() * 300;
      record({ route: routes[i % 3]!, method: i % 5 ? 'POST' : 'GET', status: i % 11 ? 200 : 400, operation: i % 3 === 1 ? `op${i % 4}` : i % 3 ? null : 'graphql', durationMs: ms });
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toMatch(/svc_http_request_duration_seconds_bucket\{le="\+Inf",route="\/v1\/graphql",operation="graphql"\} 1000/);
  });

  it('counts runs of like requests (the last series kept) as prom-client counts them', async () => {
    const { ours, theirs, record } = both();
    let seed = 11;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const kinds: Omit<RequestRecord, 'durationMs'>[] = [
      { route: '/v1/graphql', method: 'POST', status: 200, operation: 'graphql' },
      { route: '/v1/graphql', method: 'POST', status: 200, operation: null },
      { route: '/v1/graphql', method: 'GET', status: 200, operation: 'graphql' },
      { route: '/v1/graphql', method: 'POST', status: 400, operation: 'graphql' },
      { route: '/v1/metadata', method: 'POST', status: 200, operation: 'graphql' },
    ];
    for (let i = 0; i < 200; i++) {
      // The same series for a run of 1 to 20 requests, then another (or the same again).
      const kind = kinds[Math.floor(rand() * kinds.length)]!;
      const run = 1 + Math.floor(rand() * 20);
      for (let j = 0; j < run; j++) record({ ...kind, durationMs: rand() * 300 });
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('answers an empty scrape and resets', async () => {
    const { ours, theirs, record } = both();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    record({ route: '/v1/graphql', method: 'POST', status: 200, operation: 'graphql', durationMs: 3 });
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).not.toMatch(/_count/);
  });

  it('counts operations past the bound as other', async () => {
    const ours = new Registry();
    const series = new RequestSeries('c', 't', [1]);
    series.register(ours, HELP);
    for (let i = 0; i < MAX_SERIES + 50; i++) series.record({ route: '/v1/metadata', method: 'POST', status: 400, operation: `made_up_${i}`, durationMs: 1 });
    const lines = (await ours.metrics()).split('\n');
    expect(lines.filter((l) => l.startsWith('c{')).length).toBe(MAX_SERIES + 1);
    expect(lines).toContain('c{route="/v1/metadata",method="POST",status="400",operation="other"} 50');
    expect(lines).toContain('t_count{route="/v1/metadata",operation="other"} 50');
  });
});
