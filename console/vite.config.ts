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
  // `npx vite --config console/vite.config.ts` (then http://localhost:5173/console/): live reload,
  // the APIs (and the GraphQL WebSocket) proxied to a server on :8080.
  server: {
    proxy: {
      '/v1': { target: 'http://127.0.0.1:8080', ws: true },
      '/v2': 'http://127.0.0.1:8080',
    },
  },
  logLevel: 'warn',
});
