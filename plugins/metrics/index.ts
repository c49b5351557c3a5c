/**
 * `GET /v1/metrics` in Prometheus's text format (issue 12), with prom-client: what people who
 * run the server watch.
 *   - svc_http_requests_total{route, method, status, operation}: every request (route patterns,
 *     not paths, so the label set stays bounded);
 *   - svc_http_request_duration_seconds{route, operation}: a histogram (GraphQL execution time
 *     is its `route="/v1/graphql"` series);
 *   - svc_graphql_plan_cache_{hits,misses,evictions}_total and _entries (Note [The plan cache]);
 *   - svc_source_connections_in_use / _max{source}: each PostgreSQL source's pool;
 *   - svc_source_replica_up, _failed_reads, _connections_in_use{source, replica}: each read
 *     replica (Note [Read replicas]);
 *   - svc_metadata_resource_version, svc_metadata_inconsistent_objects;
 *   - the process's own (CPU, memory, event loop lag), prom-client's defaults.
 * Gauges read their values when scraped, so nothing is kept up to date between scrapes. Access:
 * the admin (admin secret, or none configured), or `X-Svc-Metrics-Secret` equal to
 * `--metrics-secret`, compared in constant time. Plugins that land later (event delivery,
 * live queries) add their series to `MetricsToken`'s registry.
 */
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { definePlugin, type Token } from '../../core/plugin.js';
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { GRAPHQL } from '../graphql/index.js';
import { secretMatches } from '../../core/auth/session.js';
import { DatabaseToken } from '../database/index.js';
import { RequestSeries } from './request-series.js';

/** The registry `/v1/metrics` serves, for other plugins' series. */
export const MetricsToken: Token<Registry> = { key: 'metrics.registry' };

export const METRICS_OPTIONS = {
  // GET /v1/metrics answers a request that sends it as X-Svc-Metrics-Secret (or the admin secret).
  metricsSecret: { flag: 'metrics-secret', env: 'SVC_GRAPHQL_METRICS_SECRET', schema: optionSchemas.nonEmpty, default: undefined, secret: true },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof METRICS_OPTIONS> {}
}

type Replica = { up: boolean; failures: number; inUse: number };

export default definePlugin({
  name: 'metrics',
  // The pools' series when the database plugin is there; metrics without it otherwise.
  after: ['database', 'graphql'],
  requires: [],
  options: METRICS_OPTIONS,
  setup(k) {
    const registry = new Registry();
    k.provide(MetricsToken, registry);
    collectDefaultMetrics({ register: registry });
    const registers = [registry];

    // Note [Request series]: counted outside prom-client, formatted by it when scraped.
    const series = new RequestSeries('svc_http_requests_total', 'svc_http_request_duration_seconds', [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
    series.register(registry, { count: 'HTTP requests answered', time: 'Time to answer an HTTP request (for /v1/graphql: GraphQL execution)' });
    k.events.on('request', (r) => series.record(r));

    const graphql = k.optional(GRAPHQL);
    const plans = (key: 'hits' | 'misses' | 'evictions' | 'size') => () => (graphql ? graphql.runner().stats()[key] : 0);
    for (const [name, key, help] of [
      ['svc_graphql_plan_cache_hits_total', 'hits', 'GraphQL requests answered from the plan cache'],
      ['svc_graphql_plan_cache_misses_total', 'misses', 'GraphQL requests that parsed, validated and planned their document'],
      ['svc_graphql_plan_cache_evictions_total', 'evictions', 'Plan cache entries evicted to stay within --graphql-plan-cache-size'],
      ['svc_graphql_plan_cache_entries', 'size', 'Plan cache entries'],
    ] as const) {
      const read = plans(key);
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    }

    const db = (() => {
      try {
        return k.use(DatabaseToken);
      } catch {
        return undefined;
      }
    })();
    const sources = () => (db ? [...db.resolved(k.state().build).sources.values()] : []);
    // Each source's pool, read when scraped.
    for (const [name, help, key] of [
      ['svc_source_connections_in_use', 'Database connections in use per source (running a statement or held by a transaction)', 'inUse'],
      ['svc_source_connections_max', "Size of each source's connection pool", 'max'],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['source'] as const,
        registers,
        collect() {
          this.reset();
          for (const s of sources()) {
            const st = s.connection?.stats?.();
            if (st) this.set({ source: s.name }, st[key]);
          }
        },
      });
    }
    // Each read replica, read when scraped.
    for (const [name, help, read] of [
      ['svc_source_replica_up', 'Whether reads go to a read replica now (1) or it is left out after a failure (0)', (r: Replica) => (r.up ? 1 : 0)],
      ['svc_source_replica_failed_reads', 'Reads a read replica could not serve (they went on to another replica or the primary)', (r: Replica) => r.failures],
      ['svc_source_replica_connections_in_use', "Connections in use in a read replica's pool", (r: Replica) => r.inUse],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['source', 'replica'] as const,
        registers,
        collect() {
          this.reset();
          for (const s of sources()) for (const r of s.connection?.replicaStates?.() ?? []) this.set({ source: s.name, replica: r.name }, read(r));
        },
      });
    }
    new Gauge({ name: 'svc_metadata_resource_version', help: 'The metadata\'s resource_version', registers, collect() { this.set(k.state().resourceVersion); } });
    new Gauge({ name: 'svc_metadata_inconsistent_objects', help: 'Inconsistent metadata objects', registers, collect() { this.set(k.state().build.inconsistencies.length); } });

    k.route({
      method: 'GET',
      path: '/v1/metrics',
      async handler(c) {
        const secret = k.config.metricsSecret;
        const given = c.req.header('x-svc-metrics-secret');
        let allowed = secret !== undefined && given !== undefined && secretMatches(given, secret);
        if (!allowed) {
          try {
            allowed = (await k.authenticate(c.req.raw.headers)).isAdmin;
          } catch {
            allowed = false;
          }
        }
        if (!allowed) return c.json({ path: '$', error: 'access denied: /v1/metrics needs the admin secret or the metrics secret', code: 'access-denied' }, 401);
        return c.body(await registry.metrics(), 200, { 'content-type': registry.contentType });
      },
    });
  },
});
