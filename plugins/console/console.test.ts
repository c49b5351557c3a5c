/**
 * Issue 12: the console's files served by the engine at /console (index.html for the app's
 * paths, assets with their content types and a long cache), a clear 404 when it is not built,
 * nothing under --enable-console false.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import { useServer } from '../../test/helpers.js';
import { CONSOLE_DIST, ensureConsoleBuilt } from '../../test/console-build.js';
import consolePlugin, { consoleDist, consoleHandler, packageRoot } from './index.js';

beforeAll(() => ensureConsoleBuilt(), 180_000);

describe('/console', () => {
  const server = useServer(undefined, { config: { adminSecret: 'adm' } });

  it('serves the app: index.html at /console and at any page of it, without credentials', async () => {
    for (const path of ['/console', '/console/', '/console/data/default/public/item/permissions']) {
      const r = await server.request('GET', path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(r.headers.get('cache-control'), path).toBe('no-cache');
      expect(r.text, path).toMatch(/<div id="root"><\/div>/);
      expect(r.text, path).toMatch(/src="\/console\/assets\/[^"]+\.js"/);
      // Its own origin only: no CDN even by mistake.
      expect(r.headers.get('content-security-policy'), path).toMatch(/default-src 'self'; script-src 'self';.*connect-src 'self' ws: wss:/);
    }
  });

  it('serves the hashed assets with their content types and a long cache; a missing one is a 404', async () => {
    const index = (await server.request('GET', '/console')).text;
    const js = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index)![1]!;
    const css = /href="(\/console\/assets\/[^"]+\.css)"/.exec(index)![1]!;
    const r = await server.request('GET', js);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(r.text.length).toBeGreaterThan(1000);
    const c = await server.request('GET', css);
    expect(c.status).toBe(200);
    expect(c.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(c.text).toMatch(/graphiql/);
    expect((await server.request('GET', '/console/assets/nope-123.js')).status).toBe(404);
    // No way out of console/dist.
    for (const p of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/assets/..%2f..%2f..%2fpackage.json']) {
      const t = await server.request('GET', p);
      expect(t.text, p).not.toMatch(/"devDependencies"/);
    }
  });

  it('GET / goes to the console', async () => {
    const r = await server.request('GET', '/');
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/console');
  });

  it('finds console/dist from the package root', () => {
    expect(consoleDist()).toBe(CONSOLE_DIST.replace(/\/$/, ''));
    expect(packageRoot(join(CONSOLE_DIST, '..', '..', 'dist', 'plugins', 'console', 'index.js'))).toBe(join(CONSOLE_DIST, '..', '..'));
    expect(readdirSync(join(CONSOLE_DIST, 'assets')).length).toBeGreaterThan(0);
  });
});

describe('--enable-console false', () => {
  const server = useServer(undefined, { config: { enableConsole: false } });
  it('leaves /console and / out: 404', async () => {
    expect(loadConfig(['--enable-console', 'false'], {}, [consolePlugin]).enableConsole).toBe(false);
    expect(loadConfig([], { SVC_GRAPHQL_ENABLE_CONSOLE: 'false' }, [consolePlugin]).enableConsole).toBe(false);
    expect(loadConfig([], {}, [consolePlugin]).enableConsole).toBe(true);
    for (const path of ['/console', '/console/', '/console/data', '/']) {
      const r = await server.request('GET', path);
      expect(r.status, path).toBe(404);
      expect(r.text, path).not.toMatch(/<div id="root">/);
    }
  });
});

describe('console not built', () => {
  it('answers a 404 that says how to build it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'svc-console-'));
    try {
      const app = new Hono();
      const h = consoleHandler(empty);
      app.get('/console', h);
      app.get('/console/*', h);
      for (const path of ['/console', '/console/data']) {
        const r = await app.request(path);
        expect(r.status).toBe(404);
        expect(await r.text()).toMatch(/not built: run `npm run build:console`/);
      }
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
