/**
 * The request series (`svc_http_requests_total`, `svc_http_request_duration_seconds`), counted in
 * plain arrays and handed to prom-client's registry as two metrics that build their values when
 * scraped.
 *
 * Note [Request series]
 * Every request is counted, so counting is on the path of every request. prom-client's own
 * Counter and Histogram validate and hash their label object on every `inc`/`observe`, their
 * `labels(...)` children included: about 16 µs of a by-pk GraphQL request's CPU (`--cpu-prof`
 * under autocannon, 2026-11-26), more than authentication and planning together. Here a request
 * costs one Map lookup by a string key and a few additions, and one like the request before it
 * (the same route, method, status and operation: most, under load) not even the key, made and
 * hashed per request (3.8 µs of a small request's 64 µs of the engine's own code under
 * `--cpu-prof`, 2026-11-27); the text a scrape serves is the same
 * (prom-client formats it from `get()`, its documented JSON shape of a metric).
 */
import type { Registry } from 'prom-client';
import type { RequestRecord } from '../../core/plugin.js';

/** Most series kept (route x method x status x operation). */
export const MAX_SERIES = 2000;

interface CountSeries {
  labels: { route: string; method: string; status: string; operation: string };
  count: number;
}

interface TimeSeries {
  labels: { route: string; operation: string };
  /** Observations per bucket (not cumulative); the last is +Inf's. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

type MetricValue = { labels: Record<string, string | number>; value: number; metricName?: string };

export class RequestSeries {
  private readonly counts = new Map<string, CountSeries>();
  private readonly times = new Map<string, TimeSeries>();

  constructor(
    private readonly countName: string,
    private readonly timeName: string,
    private readonly bounds: readonly number[],
  ) {}

  /** The series of the last request recorded: most requests are like the one before (one route
   * under load), and then no key is made nor hashed. */
  private last: { route: string; method: string; status: number; operation: string | null | undefined; c: CountSeries; t: TimeSeries } | undefined;

  record(r: RequestRecord): void {
    const l = this.last;
    if (l && l.status === r.status && l.route === r.route && l.method === r.method && l.operation === r.operation) {
      l.c.count++;
      this.observe(l.t, r.durationMs);
      return;
    }
    let operation = r.operation ?? '';
    let key = `${r.route}\u0000${r.method}\u0000${r.status}\u0000${operation}`;
    let c = this.counts.get(key);
    if (!c) {
      // The operation is the body's `type`, which a client chooses: past a bound, new ones are
      // counted as `other`, so that no client can grow the series without end.
      if (this.counts.size >= MAX_SERIES) {
        operation = 'other';
        key = `${r.route}\u0000${r.method}\u0000${r.status}\u0000${operation}`;
        c = this.counts.get(key);
      }
      if (!c) this.counts.set(key, (c = { labels: { route: r.route, method: r.method, status: String(r.status), operation }, count: 0 }));
    }
    c.count++;
    const timeKey = `${r.route}\u0000${operation}`;
    let t = this.times.get(timeKey);
    if (!t) this.times.set(timeKey, (t = { labels: { route: r.route, operation }, buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }));
    this.last = { route: r.route, method: r.method, status: r.status, operation: r.operation, c, t };
    this.observe(t, r.durationMs);
  }

  private observe(t: TimeSeries, durationMs: number): void {
    const seconds = durationMs / 1000;
    let b = 0;
    while (b < this.bounds.length && seconds > this.bounds[b]!) b++;
    t.buckets[b]!++;
    t.sum += seconds;
    t.count++;
  }

  /** Registers both metrics in `registry`. */
  register(registry: Registry, help: { count: string; time: string }): void {
    const counts = this.counts;
    const times = this.times;
    const bounds = this.bounds;
    const timeName = this.timeName;
    const metric = (name: string, type: 'counter' | 'histogram', helpText: string, values: () => MetricValue[]) => ({
      name,
      help: helpText,
      type,
      aggregator: 'sum' as const,
      get: async () => ({ name, help: helpText, type, aggregator: 'sum' as const, values: values() }),
      reset: () => (type === 'counter' ? counts : times).clear(),
    });
    const counter = metric(this.countName, 'counter', help.count, () => [...counts.values()].map((c) => ({ labels: { ...c.labels }, value: c.count })));
    const histogram = metric(this.timeName, 'histogram', help.time, () => {
      const out: MetricValue[] = [];
      for (const t of times.values()) {
        let acc = 0;
        for (let i = 0; i < bounds.length; i++) {
          acc += t.buckets[i]!;
          out.push({ labels: { le: bounds[i]!, ...t.labels }, value: acc, metricName: `${timeName}_bucket` });
        }
        out.push({ labels: { le: '+Inf', ...t.labels }, value: t.count, metricName: `${timeName}_bucket` });
        out.push({ labels: { ...t.labels }, value: t.sum, metricName: `${timeName}_sum` });
        out.push({ labels: { ...t.labels }, value: t.count, metricName: `${timeName}_count` });
      }
      return out;
    });
    // Duck-typed as prom-client's Registry reads a metric: its name, get() and reset().
    registry.registerMetric(counter as unknown as Parameters<Registry['registerMetric']>[0]);
    registry.registerMetric(histogram as unknown as Parameters<Registry['registerMetric']>[0]);
  }
}
