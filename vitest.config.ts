import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'plugins/**/*.test.ts', 'core/**/*.test.ts', 'plugin-template/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Files run in parallel, each on its own database of the one embedded cluster.
    fileParallelism: true,
    maxWorkers: 4,
  },
});
