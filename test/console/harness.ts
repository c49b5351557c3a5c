/**
 * What the console's browser tests share: one server (on a real port, as server/main.ts serves
 * it), one headless Debian Chromium and one page per test file, logged in with the admin secret;
 * a screenshot per step in test/artifacts/console/<file>/; every request the page made and every
 * error it logged (checked at the end: nothing from another origin); confirm() dialogs accepted
 * (the pages ask before dropping). Without /usr/bin/chromium the files skip, saying so.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { startServer, type TestServer } from '../helpers.js';
import { ensureConsoleBuilt, ROOT } from '../console-build.js';
import { listen, type Listening } from '../ws-helpers.js';

export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const SECRET = 'console-test-secret';
export const ADMIN = { 'x-svc-admin-secret': SECRET };

export interface Console {
  server: TestServer;
  base: string;
  page: Page;
  /** A full-page screenshot, numbered in order. */
  shot(name: string): Promise<void>;
  /** A metadata API call as the admin; throws unless 200; the body. */
  api(type: string, args?: unknown, extra?: Record<string, unknown>): Promise<any>;
  /** The admin's export_metadata (version 1). */
  exported(): Promise<any>;
  /** Goes to a console path (after /console) and waits for the nav. */
  go(path: string): Promise<void>;
  requested: string[];
  pageErrors: string[];
  close(): Promise<void>;
}

export function warnSkipped(file: string): void {
  if (!hasChromium) console.warn(`${file}: SKIPPED, no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (Debian) to run the console's browser tests.`);
}

/** Something served in front of the engine (`svc console`'s server): given the engine's URL, the
 * URL the browser opens instead, and how to stop it. */
export type Front = (engine: string) => Promise<{ url: string; close(): Promise<void> }>;

export async function openConsole(name: string, opts: Parameters<typeof startServer>[0] & { via?: Front } = {}): Promise<Console> {
  const shots = join(ROOT, 'test', 'artifacts', 'console', name);
  rmSync(shots, { recursive: true, force: true });
  mkdirSync(shots, { recursive: true });
  await ensureConsoleBuilt();
  const server = await startServer({ ...opts, config: { adminSecret: SECRET, ...opts.config } });
  let http: Listening | undefined;
  let front: Awaited<ReturnType<Front>> | undefined;
  let browser: Browser | undefined;
  try {
    http = await listen(server);
    front = opts.via ? await opts.via(`http://127.0.0.1:${http.port}`) : undefined;
    const base = front?.url ?? `http://127.0.0.1:${http.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const requested: string[] = [];
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push(m.text());
    });
    page.on('request', (r) => requested.push(r.url()));
    page.on('dialog', (d) => void d.accept());
    let step = 0;
    const api = async (type: string, args: unknown = {}, extra: Record<string, unknown> = {}) => {
      const r = await server.metadata({ type, args, ...extra }, ADMIN);
      if (r.status !== 200) throw new Error(`${type}: ${r.status} ${r.text}`);
      return r.body;
    };
    await page.goto(`${base}/console`);
    await page.getByTestId('admin-secret').fill(SECRET);
    await page.getByTestId('login').click();
    await page.getByTestId('nav-data').waitFor();
    const c: Console = {
      server,
      base,
      page,
      requested,
      pageErrors,
      api,
      exported: () => api('export_metadata', {}, { version: 1 }),
      async shot(label) {
        step++;
        await page.screenshot({ path: join(shots, `${String(step).padStart(2, '0')}-${label}.png`), fullPage: true });
      },
      async go(path) {
        await page.goto(`${base}/console${path}`);
        await page.getByTestId('nav-data').waitFor();
      },
      async close() {
        await browser?.close();
        await front?.close();
        await http?.close();
        await server.stop();
      },
    };
    return c;
  } catch (e) {
    await browser?.close();
    await front?.close();
    await http?.close();
    await server.stop();
    throw e;
  }
}

/** The end of every file: the page asked nothing of another origin, and logged no error but the
 * HTTP refusals the file expected (the browser logs each 4xx answer). */
export function checkCleanRun(c: Console, allowedStatuses: RegExp = /^Failed to load resource: the server responded with a status of 40[04] /): void {
  const origin = new URL(c.base).origin;
  expect(c.requested.filter((u) => !u.startsWith(`${origin}/`) && !/^(data|blob):/.test(u))).toEqual([]);
  expect(c.pageErrors.filter((e) => !allowedStatuses.test(e))).toEqual([]);
}

/** Every form control on the page has a label (its own <label>, or aria-label) and every button a
 * name: what a keyboard and screen-reader user needs. The ones without, described. */
export async function unlabelled(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const bad: string[] = [];
    for (const el of document.querySelectorAll<HTMLElement>('main input, main select, main textarea')) {
      const input = el as HTMLInputElement;
      if (input.type === 'hidden' || input.type === 'file' || el.closest('.graphiql-container')) continue;
      if ((input.labels?.length ?? 0) === 0 && !el.getAttribute('aria-label')) bad.push(`${el.tagName.toLowerCase()}[data-testid=${el.dataset.testid ?? '?'}]`);
    }
    for (const b of document.querySelectorAll<HTMLElement>('main button, header button, header a')) {
      if (b.closest('.graphiql-container')) continue;
      if (!(b.textContent ?? '').trim() && !b.getAttribute('aria-label')) bad.push(`${b.tagName.toLowerCase()}[data-testid=${b.dataset.testid ?? '?'}]`);
    }
    return bad;
  });
}
