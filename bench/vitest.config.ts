import { defineConfig } from 'vitest/config';

/** The benchmarks that need the test harness (a real PostgreSQL, the app in process): run with
 * `npm run bench:overhead`, never by `npm test`. */
export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['bench/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
  },
});
