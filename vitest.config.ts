import { defineConfig } from 'vitest/config';

const ALONE = ['plugins/graphql/limits.test.ts'];
// The console in Chromium: one browser at a time (each file drives one), beside nothing else of
// the suite's: four at once on a two-core machine time out.
const BROWSER = ['test/console-browser.test.ts', 'test/console/data.test.ts', 'test/console/schema.test.ts', 'test/console/events.test.ts', 'test/console/cli.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts', 'plugins/**/*.test.ts', 'core/**/*.test.ts', 'lib/**/*.test.ts', 'server/**/*.test.ts', 'plugin-template/**/*.test.ts'],
          exclude: [...ALONE, ...BROWSER],
          // Files run in parallel, each on its own database of the one embedded cluster.
          fileParallelism: true,
          maxWorkers: 4,
        },
      },
      {
        // Tests that time the server's answers to other clients (a health check within 200 ms
        // while an attack runs): after the others, alone, so that the CPU is the server's.
        extends: true,
        test: { name: 'alone', include: ALONE, sequence: { groupOrder: 2 } },
      },
      {
        extends: true,
        test: { name: 'browser', include: BROWSER, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
