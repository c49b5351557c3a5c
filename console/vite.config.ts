/**
 * `npm run build:console`: the console's single-page app, bundled into console/dist with every
 * asset (scripts, styles, fonts) from npm packages, served by plugins/console at /console.
 */
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 4000,
    sourcemap: false,
    rolldownOptions: {
      // react-compiler-runtime (a dependency of graphiql) starts with a 'use no memo' directive that
      // bundling drops, harmlessly.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  // `npm run build:console -- --watch` or `npx vite --config console/vite.config.ts` against a
  // running server on :8080.
  server: {
    proxy: {
      '/v1': 'http://127.0.0.1:8080',
      '/v2': 'http://127.0.0.1:8080',
    },
  },
  logLevel: 'warn',
});
