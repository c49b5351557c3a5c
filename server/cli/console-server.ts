/**
 * `svc console`: the web console served by the CLI, in front of the engine, so that what the user
 * changes in it is written into the project directory, as `hasura console` does (Note [The
 * console of a project]).
 *
 * Note [The console of a project]
 * One HTTP server on the CLI's port answers everything the console asks for, so that the page
 * talks to one origin only:
 *   GET  /console, /console/*   the built console (console/dist), as the engine serves it
 *   GET  /apis/project          what tells the console that it runs from a project (the engine has
 *                               no /apis: there the console finds a 404 and writes nothing)
 *   POST /apis/migrate          {source, name, up, down?, cascade?}: writes
 *                               migrations/<source>/<version>_<name>/up.sql, down.sql, then applies
 *                               that version as `svc migrate apply --version` does (its SQL and its
 *                               record in one transaction); when it fails the directory is removed
 *                               again and the engine's error is answered: no file for SQL that did
 *                               not run, and no SQL run without its file
 *   anything else               forwarded to the engine as it is (the GraphQL WebSocket too)
 * A forwarded admin request that may change the metadata (a metadata call that is not a read, a
 * run_sql that is not read-only), once the engine answered 200, is followed by export_metadata:
 * when its resource_version moved, the project's metadata directory is written again (`svc
 * metadata export`), before the console gets its answer, so that the directory is in step with
 * the engine after every change made in the console.
 *
 * The CLI has no credentials of its own here: every call it makes for a request (the migration,
 * the export) carries the admin secret of that request, so the engine decides, and a request the
 * engine would refuse writes nothing.
 */
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { existsSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { connect as tcp, type AddressInfo, type Socket } from 'node:net';
import { connect as tls } from 'node:tls';
import type { Duplex } from 'node:stream';
import { basename, join, relative } from 'node:path';
import { consoleDist, consoleHandler } from '../../plugins/console/index.js';
import { ApiError, Client } from './client.js';
import { writeMetadataDir } from './metadata-dir.js';
import { applyMigrations, createMigration, readMigrations } from './migrate.js';
import type { ProjectConfig } from './project.js';

export interface ConsoleServerOptions {
  /** The engine the console works on. */
  endpoint: string;
  project: ProjectConfig;
  port: number;
  address: string;
  log: (line: string) => void;
  /** The built console (default: console/dist of the package). */
  consoleDir?: string;
}

export interface ConsoleServer {
  /** http://address:port */
  url: string;
  close(): Promise<void>;
}

type Obj = Record<string, any>;

/** Metadata calls that change nothing (the console makes many: every page exports the metadata). */
const READ_TYPE = /^(export_metadata|get_|[a-z]+_get_|introspect_|test_webhook_transform$|dump_internal_state$|list_|validate_)/;
/** A database's or a migration's name: one path segment, never `.` or `..` (nor hidden). */
const NAME = /^[\w-][\w.-]*$/;

/** Whether a forwarded request may have changed the metadata. */
function mayChange(path: string, body: unknown): boolean {
  if (!body || typeof body !== 'object') return false;
  const b = body as Obj;
  const one = (q: Obj): boolean => {
    if (!q || typeof q !== 'object') return false;
    if (q.type === 'bulk' || q.type === 'concurrent_bulk') return Array.isArray(q.args) && q.args.some(one);
    if (q.type === 'run_sql') return !q.args?.read_only;
    if (path === '/v1/metadata') return typeof q.type === 'string' && !READ_TYPE.test(q.type);
    // /v2/query, /v1/query: select, count and the like read
    return typeof q.type === 'string' && !/^(select|count)$/.test(q.type);
  };
  return one(b);
}

/** Hasura's down.sql for SQL it cannot invert: the up SQL, commented out. */
export function commentedDown(up: string): string {
  return ['-- Could not auto-generate a down migration.', '-- Please write an appropriate down migration for the SQL below:', ...up.replace(/\n+$/, '').split('\n').map((l) => `-- ${l}`)].join('\n') + '\n';
}

const fail = (c: Context, status: 400 | 404 | 409, code: string, error: string, path = '$') => c.json({ code, error, path }, status);

export async function startConsoleServer(o: ConsoleServerOptions): Promise<ConsoleServer> {
  const engine = o.endpoint.replace(/\/+$/, '');
  const { project } = o;
  const metadataDir = join(project.root, project.metadataDirectory);
  const migrationsDir = join(project.root, project.migrationsDirectory);
  const secretOf = (c: Context) => c.req.header('x-svc-admin-secret') ?? undefined;

  // One change at a time: a migration's version and the metadata directory are written in order.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const next = queue.then(f, f);
    queue = next.catch(() => undefined);
    return next;
  };

  let exportedVersion: number | undefined;
  /** export_metadata, and the metadata directory written again when the metadata changed. */
  const exportIfChanged = async (secret: string | undefined) => {
    try {
      const r = await new Client(engine, secret).metadata('export_metadata', {}, 2);
      if (r.resource_version === exportedVersion && existsSync(join(metadataDir, 'version.yaml'))) return;
      const files = writeMetadataDir(metadataDir, r.metadata);
      exportedVersion = r.resource_version;
      o.log(`svc console: exported the metadata (resource_version ${r.resource_version}) to ${relative(project.root, metadataDir) || '.'}: ${files.length} files`);
    } catch (e) {
      o.log(`svc console: the metadata could not be exported to ${metadataDir}: ${(e as Error).message}`);
    }
  };

  const app = new Hono();
  const dist = o.consoleDir;
  const page = consoleHandler(dist ?? consoleDist);
  app.get('/console', page);
  app.get('/console/*', page);
  app.get('/', (c) => c.redirect('/console', 302));

  app.get('/apis/project', (c) =>
    c.json({
      cli: 'svc',
      project: basename(project.root),
      metadata_directory: project.metadataDirectory,
      migrations_directory: project.migrationsDirectory,
    }),
  );

  app.post('/apis/migrate', async (c) => {
    let body: Obj;
    try {
      body = await c.req.json();
    } catch {
      return fail(c, 400, 'invalid-json', 'the body is not JSON');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) return fail(c, 400, 'parse-failed', 'expected an object {source, name, up, down?, cascade?}');
    const source = body.source ?? 'default';
    if (typeof source !== 'string' || !NAME.test(source)) return fail(c, 400, 'parse-failed', 'source: a database name (letters, digits, "_", "-", ".")', '$.source');
    if (typeof body.name !== 'string' || !NAME.test(body.name)) return fail(c, 400, 'parse-failed', 'name: the migration\'s name (letters, digits, "_", "-", ".")', '$.name');
    if (typeof body.up !== 'string' || body.up.trim() === '') return fail(c, 400, 'parse-failed', 'up: the SQL of the migration, not empty', '$.up');
    if (body.down !== undefined && typeof body.down !== 'string') return fail(c, 400, 'parse-failed', 'down: SQL text', '$.down');
    if (body.cascade !== undefined && typeof body.cascade !== 'boolean') return fail(c, 400, 'parse-failed', 'cascade: a boolean', '$.cascade');
    const secret = secretOf(c);
    return serial(async () => {
      const dir = join(migrationsDir, source);
      // The Hasura CLI's version, the time in milliseconds; after every version there, so that it
      // applies last and two migrations in one millisecond do not collide.
      const last = readMigrations(dir).reduce((m, x) => (BigInt(x.version) > m ? BigInt(x.version) : m), 0n);
      const now = BigInt(Date.now());
      const version = String(now > last ? now : last + 1n);
      const up = body.up.endsWith('\n') ? body.up : `${body.up}\n`;
      const down = body.down === undefined || body.down.trim() === '' ? commentedDown(body.up) : body.down.endsWith('\n') ? body.down : `${body.down}\n`;
      let full: string;
      try {
        full = createMigration(dir, body.name, up, down, version);
      } catch (e) {
        // the project directory, not the request: not writable, a file where a folder goes
        return c.json({ code: 'unexpected', error: `svc console: the migration could not be written to ${relative(project.root, dir) || '.'}: ${(e as Error).message}`, path: '$' }, 500);
      }
      const lines: string[] = [];
      try {
        await applyMigrations(new Client(engine, secret), source, dir, { version, cascade: !!body.cascade }, (l) => lines.push(l), project.root);
      } catch (e) {
        rmSync(full, { recursive: true, force: true });
        const cause = (e as Error).cause ?? e;
        if (cause instanceof ApiError && cause.body && typeof cause.body === 'object') {
          // The engine's refusal as it gave it (a wrong secret stays a 401), with the CLI's words.
          return c.json({ ...cause.body, error: e === cause ? cause.body.error : (e as Error).message }, cause.status as 400);
        }
        return fail(c, 400, 'migration-failed', (e as Error).message);
      }
      o.log(`svc console: ${lines.join('; ')}: ${relative(project.root, full)}`);
      await exportIfChanged(secret);
      return c.json({ version, name: body.name, directory: relative(project.root, full), files: ['up.sql', 'down.sql'].map((f) => relative(project.root, join(full, f))) });
    });
  });

  app.all('/apis/*', (c) => fail(c, 404, 'not-found', `no CLI API ${c.req.path}`));

  app.all('*', async (c) => {
    const url = new URL(c.req.url);
    const headers = new Headers(c.req.raw.headers);
    for (const h of ['host', 'connection', 'content-length', 'accept-encoding']) headers.delete(h);
    const method = c.req.method;
    const text = method === 'GET' || method === 'HEAD' ? undefined : await c.req.text();
    const watched = method === 'POST' && /^\/(v1\/metadata|v2\/query|v1\/query)$/.test(url.pathname);
    const send = async () => {
      let res: Response;
      try {
        res = await fetch(engine + url.pathname + url.search, { method, headers, body: text, redirect: 'manual' });
      } catch (e) {
        const cause = (e as { cause?: { code?: string } }).cause;
        return c.json({ code: 'unexpected', error: `svc console: cannot reach the engine at ${engine}: ${cause?.code ?? (e as Error).message}`, path: '$' }, 502);
      }
      const out = new Headers(res.headers);
      for (const h of ['content-encoding', 'content-length', 'transfer-encoding', 'connection']) out.delete(h);
      const bytes = await res.arrayBuffer();
      return { res, out, bytes };
    };
    let parsed: unknown;
    if (watched) {
      try {
        parsed = JSON.parse(text ?? '');
      } catch {
        parsed = undefined;
      }
    }
    if (watched && mayChange(url.pathname, parsed)) {
      const secret = secretOf(c);
      return serial(async () => {
        const r = await send();
        if (r instanceof Response) return r;
        if (r.res.status === 200) await exportIfChanged(secret);
        return new Response(r.bytes, { status: r.res.status, headers: r.out });
      });
    }
    const r = await send();
    if (r instanceof Response) return r;
    // (a Response with a body cannot have these statuses)
    const empty = method === 'HEAD' || [204, 205, 304].includes(r.res.status);
    return new Response(empty ? null : r.bytes, { status: r.res.status, headers: r.out });
  });

  let resolveInfo!: (i: AddressInfo) => void;
  let rejectListen!: (e: Error) => void;
  const ready = new Promise<AddressInfo>((res, rej) => ((resolveInfo = res), (rejectListen = rej)));
  const server = serve({ fetch: app.fetch, port: o.port, hostname: o.address }, (info) => resolveInfo(info)) as Server;
  server.once('error', (e) => rejectListen(e));
  const sockets = new Set<Duplex>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    tunnel(engine, req, socket, head);
  });
  const info = await ready;
  const host = info.address.includes(':') ? `[${info.address}]` : info.address;
  return {
    url: `http://${host}:${info.port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => {
        server.close(() => r());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await queue;
    },
  };
}

/** A WebSocket upgrade (GraphiQL's subscriptions) passed on to the engine byte for byte. */
function tunnel(engine: string, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const u = new URL(engine);
  const secure = u.protocol === 'https:';
  const port = Number(u.port) || (secure ? 443 : 80);
  const lines = [`${req.method} ${req.url} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i]!;
    lines.push(`${k}: ${k.toLowerCase() === 'host' ? u.host : req.rawHeaders[i + 1]}`);
  }
  const start = () => {
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) upstream.write(head);
    socket.pipe(upstream).pipe(socket);
  };
  const upstream: Socket = secure ? tls({ host: u.hostname, port, servername: u.hostname }, start) : tcp(port, u.hostname, start);
  upstream.on('error', () => socket.destroy());
  socket.on('error', () => upstream.destroy());
  socket.on('close', () => upstream.destroy());
}
