/**
 * The web console (issue 12): the single-page app of `console/` (React, GraphiQL), built by
 * `npm run build:console` into `console/dist`, served at `/console` and `/console/*` by the engine
 * itself. Every asset comes from that folder: nothing from a CDN. The app talks to the server only
 * through the public APIs (/v1/metadata, /v1/query or /v2/query, /v1/graphql) with the admin
 * secret the user typed in its login form, so these routes need no credentials: they serve static
 * files, as Hasura serves its console.
 *
 * Paths that are not files get `index.html` (the app routes on the client: /console/data/...).
 * Vite's hashed files under `assets/` are cached for a year; index.html is revalidated every time.
 * `--enable-console false` (SVC_GRAPHQL_ENABLE_CONSOLE) leaves the routes out; they answer 404.
 */
import { optionSchemas, type OptionValues } from '../../core/config.js';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from 'hono';
import { definePlugin } from '../../core/plugin.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
};

/** The repository (or installed package) root: the first folder up from this file with a
 * package.json. The same from plugins/console/index.ts (tsx) and dist/plugins/console/index.js
 * (compiled), as long as dist/ has no package.json of its own. */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
}

/** Where the built console is: console/dist of the package root. */
export function consoleDist(): string {
  return join(packageRoot(), 'console', 'dist');
}

const NOT_BUILT = 'The console is not built: run `npm run build:console`, then reload this page.\n';

/** The app loads nothing but its own files and talks to its own server (HTTP and the GraphQL
 * WebSocket); GraphiQL sets inline styles and CodeMirror uses data: images. No other origin, so no
 * CDN even by mistake, and no framing. */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

/** The file the path asks for under `root`, or undefined (then the app's index.html answers). */
async function fileFor(root: string, rel: string): Promise<string | undefined> {
  if (rel === '' || rel.endsWith('/')) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(rel);
  } catch {
    return undefined;
  }
  const full = resolve(root, `.${sep}${decoded}`);
  if (!full.startsWith(root + sep)) return undefined;
  try {
    return (await stat(full)).isFile() ? full : undefined;
  } catch {
    return undefined;
  }
}

/** The handler of GET /console and /console/* serving the built app in `root` (console/dist). */
export function consoleHandler(where: string | (() => string)): (c: Context) => Promise<Response> {
  let found: string | undefined;
  return async (c) => {
    const root = (found ??= typeof where === 'string' ? where : where());
    const path = c.req.path;
    const index = join(root, 'index.html');
    if (!existsSync(index)) return c.text(NOT_BUILT, 404);
    const rel = path === '/console' ? '' : path.slice('/console/'.length);
    // A missing hashed asset is a 404; any other path is a page of the app: its index.html.
    const file = (await fileFor(root, rel)) ?? (rel.startsWith('assets/') ? undefined : index);
    if (file === undefined) return c.text(`not found: ${path}\n`, 404);
    const body = await readFile(file);
    const hashed = file !== index && rel.startsWith('assets/');
    return c.body(body, 200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
      'x-content-type-options': 'nosniff',
      ...(file === index ? { 'content-security-policy': CSP, 'x-frame-options': 'DENY', 'referrer-policy': 'same-origin' } : {}),
    });
  };
}

/** The web console at /console, as Hasura's --enable-console (Note [Options by plugin] in
 * core/config.ts). */
export const CONSOLE_OPTIONS = {
  enableConsole: { flag: 'enable-console', env: 'SVC_GRAPHQL_ENABLE_CONSOLE', schema: optionSchemas.bool, default: true },
} as const;

declare module '../../core/config.js' {
  interface ServerConfig extends OptionValues<typeof CONSOLE_OPTIONS> {}
}

export default definePlugin({
  name: 'console',
  options: CONSOLE_OPTIONS,
  setup(k) {
    if (!k.config.enableConsole) return;
    // The folder is looked for on the first request: setup does no I/O.
    const serve = consoleHandler(consoleDist);
    k.route({ method: 'GET', path: '/console', handler: serve });
    k.route({ method: 'GET', path: '/console/*', handler: serve });
    // Hasura's server sends its root to the console.
    k.route({ method: 'GET', path: '/', handler: (c) => c.redirect('/console', 302) });
  },
});
