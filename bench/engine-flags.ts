/**
 * The node flags the benchmarks run the engine with: npm start's (Note [The old space at start] in
 * server/main.ts). A module of its own, without bench/common.ts's signal handlers, so that
 * test/npm-start.test.ts can check them against package.json's and the Dockerfile's.
 */
export const ENGINE_NODE_FLAGS: readonly string[] = ['--enable-source-maps', '--initial-old-space-size=64'];
