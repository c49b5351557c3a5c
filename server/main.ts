#!/usr/bin/env node
/**
 * `npm start`: read the configuration, boot, serve; on SIGTERM/SIGINT stop accepting, finish
 * in-flight requests, stop workers, close pools, stop the embedded PostgreSQL, exit 0. A signal
 * during boot stops what the boot started (the embedded PostgreSQL included) and exits 0.
 *
 * Note [The old space at start]
 * `npm start` and the image run node with `--initial-old-space-size=64` (package.json's `start`,
 * the Dockerfile's CMD, and bench/common.ts `engineArgs`, which runs the engine as they do; test/
 * npm-start.test.ts checks that the three agree). A server whose live heap is small (about 22 MB
 * with Chinook tracked) otherwise got an old-generation limit V8 computes from it, and under load
 * ran a mark-compact every 0.6-0.8 s where a scavenge would do: 14-15 in 10 s of the bench's nested
 * query at 500 req/s, against 3-5 with the flag. On the two-core machine (2026-11-27, the engine
 * pinned to one core, Node 20): CPU per request 365 and 353 -> 296 and 316 µs (nested), 121 and
 * 115 -> 110 and 110 (simple, 2,000 req/s), 3,415 -> 2,833 (large, one run); Node 22 nested 433
 * -> 379 (in the bench, Node 22's by_pk and aggregate did not move, its nested fell 7-15%). 48 gave nothing, 96 and 128 no more than 64. The cost is memory: the server's RSS under
 * that load went from 126-181 to 177-187 MiB. A large metadata's live heap (70 MB and more at
 * 2,000 tables) sets a limit above 64 MB by itself (bench/metadata at 2,000 tables: RSS with five
 * roles' schemas 261-277 MiB in four runs with the flag, 316-397 in three without). Those who run
 * `node dist/server/main.js` themselves may pass it, or another value, the same way.
 */
// First: graphql-js reads NODE_ENV when it loads (production-mode.ts).
import './production-mode.js';
import { serve } from '@hono/node-server';
import { ConfigError, helpText, loadConfig } from '../core/config.js';
import { builtinOptions } from './plugins.js';
import { createLogger, errorDetail } from '../core/log.js';
import { BootError } from '../core/kernel/kernel.js';
import { SvcError } from '../core/errors.js';
import { boot, describeError } from './boot.js';
import { EmbeddedPgError } from './embedded.js';
import { VERSION } from './app.js';

async function main() {
  let args = process.argv.slice(2);
  // `svc serve ...`, as Hasura's `graphql-engine serve`: the only command.
  if (args[0] === 'serve') args = args.slice(1);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${helpText(builtinOptions)}\n`);
    return;
  }
  if (args.includes('--version')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  let config;
  try {
    config = loadConfig(args, process.env, builtinOptions);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`svc: configuration error: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const log = createLogger(config.logLevel);
  // Handlers from the start: the default action of SIGTERM would end the process during boot and
  // leave the embedded PostgreSQL it started running.
  const booting = new AbortController();
  let onSignal = (signal: string) => {
    if (booting.signal.aborted) return;
    log.info('shutdown', { message: `received ${signal} during boot, stopping` });
    booting.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  let running;
  try {
    running = await boot({ config, log, signal: booting.signal });
  } catch (e) {
    if (booting.signal.aborted) {
      log.info('shutdown', { message: 'stopped' });
      process.exit(0);
    }
    const known = e instanceof BootError || e instanceof SvcError || e instanceof EmbeddedPgError;
    const message = describeError(e);
    log.error('startup', { kind: 'boot_failed', message: known ? message : `boot failed: ${message}`, ...(known ? {} : { error: errorDetail(e) }) });
    process.stderr.write(`svc: boot failed: ${message}\n`);
    process.exit(1);
  }
  if (booting.signal.aborted) {
    // The signal came after the boot's last check.
    await running.stop();
    log.info('shutdown', { message: 'stopped' });
    process.exit(0);
  }
  const { app, inFlight } = running;
  const server = serve({ fetch: app.fetch, port: config.serverPort, hostname: config.serverHost, ...running.serveOptions }, (info) => {
    log.info('startup', { kind: 'server', message: 'serving', version: VERSION, host: config.serverHost, port: info.port, plugins: running.kernel.plugins });
  });
  // GraphQL over WebSocket on the same port and path (plugins/graphql-ws).
  running.websocket.attach(server as import('node:http').Server);

  /*
   * Note [Draining]
   * Behind a load balancer, a server that closes its listener at SIGTERM fails the requests the
   * balancer still sends it until its health check notices (a rolling restart lost 20 of 1,190).
   * With --shutdown-drain-time N, SIGTERM first keeps serving for N seconds while /healthz
   * answers 503, so that the balancer takes the instance out; then the listener closes and the
   * requests in flight finish (--graceful-shutdown-timeout) as before. SIGINT (Ctrl-C) does not
   * drain. A second signal during the drain ends it at once.
   */
  let stopping = false;
  let endDrain: (() => void) | undefined;
  const shutdown = async (signal: string) => {
    if (stopping) {
      endDrain?.();
      return;
    }
    stopping = true;
    const drain = signal === 'SIGTERM' ? config.shutdownDrainTime : 0;
    if (drain > 0) {
      (inFlight as { draining?: boolean }).draining = true;
      log.info('shutdown', { message: `received ${signal}, draining for ${drain} s (/healthz answers 503)`, in_flight: inFlight.n });
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, drain * 1000);
        endDrain = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    log.info('shutdown', { message: `received ${signal}, shutting down`, in_flight: inFlight.n });
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
    // WebSocket clients are told to reconnect elsewhere (1012) and given the grace period to go.
    const sockets = running.websocket.close(config.gracefulShutdownTimeout * 1000);
    const deadline = setTimeout(() => {
      log.warn('shutdown', { message: 'grace period over, closing remaining connections', in_flight: inFlight.n });
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    }, config.gracefulShutdownTimeout * 1000);
    deadline.unref();
    // Keep-alive sockets that go idle after their last response must also be closed.
    const idle = setInterval(() => (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.(), 100);
    await Promise.all([closed, sockets]);
    clearInterval(idle);
    clearTimeout(deadline);
    try {
      await running.stop();
    } catch (e) {
      log.error('shutdown', { message: 'error while stopping', error: errorDetail(e) });
      process.exit(1);
    }
    log.info('shutdown', { message: 'stopped' });
    process.exit(0);
  };
  onSignal = (signal) => void shutdown(signal);
  process.on('unhandledRejection', (e) => log.error('unhandled-rejection', { error: errorDetail(e) }));
}

void main();
