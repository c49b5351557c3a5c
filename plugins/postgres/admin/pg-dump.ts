/**
 * `POST /v1alpha1/pg_dump` (API `pgdump`, admin only): runs the `pg_dump` program found on the
 * PATH against a PostgreSQL source and returns its output as text, as Hasura does.
 *
 * Only options that shape the plain SQL written to stdout are passed on (see Note [pg_dump
 * options]); the connection is ours, and its password travels in the child's environment, never
 * on its command line (which `ps` shows to every user of the machine), as do its TLS settings
 * (`tlsService`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as v from '../../../core/valibot.js';
import type { KernelApi, RouteDef } from '../../../core/plugin.js';
import { SvcError } from '../../../core/errors.js';
import { parseWith } from '../../../core/validation.js';
import { readJsonBody } from '../../../lib/http/body.js';
import { DatabaseToken, sourcesOf, type SourceMeta } from '../../database/index.js';
import { resolveDatabaseUrl, type PgConfiguration } from '../connection/connection.js';
import { pgTls, withQuery, type PgSslConfiguration } from '../connection/tls.js';

const Args = v.object({
  opts: v.optional(v.array(v.string()), []),
  clean_output: v.optional(v.boolean(), false),
  source: v.optional(v.string(), 'default'),
});

/*
 * Note [pg_dump options]
 * The options are an allow-list: a deny-list leaks, because getopt also accepts abbreviations of
 * long options (`--fil=/x` is `--file`), glued values (`-f/x`, `-Fc`) and clusters of short
 * flags (`-xf/x`). Each allowed option only changes which objects are dumped or how the plain SQL
 * text is written. Left out on purpose: anything that writes files or changes the output format
 * (-f, -F, -j, -Z, -E), picks the connection (-d, -h, -p, -U, -w, -W, --role, positional
 * arguments), reads server files (--filter), makes the server reach other servers
 * (--include-foreign-data), or prints something else (--help, --version).
 *
 * We parse the list as getopt would, but strictly: long names must be spelled in full (an
 * abbreviation could expand to an option we did not vet), and every option is handed to pg_dump
 * as `--name` or `--name=value`, so a value (`-n -f`) can never be read as an option.
 */
interface OptSpec {
  /** The long name pg_dump is given (aliases map to their canonical name). */
  name: string;
  value: boolean;
}
const flag = (name: string): OptSpec => ({ name, value: false });
const valued = (name: string): OptSpec => ({ name, value: true });

const LONG: Record<string, OptSpec> = {};
const SHORT: Record<string, OptSpec> = {};
for (const [short, spec] of [
  ['a', flag('data-only')],
  ['s', flag('schema-only')],
  ['c', flag('clean')],
  ['C', flag('create')],
  ['O', flag('no-owner')],
  ['x', flag('no-privileges')],
  ['b', flag('large-objects')],
  ['B', flag('no-large-objects')],
  ['n', valued('schema')],
  ['N', valued('exclude-schema')],
  ['t', valued('table')],
  ['T', valued('exclude-table')],
  ['e', valued('extension')],
] as const) {
  SHORT[short] = spec;
  LONG[spec.name] = spec;
}
for (const name of [
  'inserts',
  'column-inserts',
  'on-conflict-do-nothing',
  'if-exists',
  'no-comments',
  'no-publications',
  'no-subscriptions',
  'no-tablespaces',
  'no-security-labels',
  'no-table-access-method',
  'no-toast-compression',
  'no-unlogged-table-data',
  'quote-all-identifiers',
  'disable-dollar-quoting',
  'disable-triggers',
  'use-set-session-authorization',
  'enable-row-security',
  'load-via-partition-root',
  'strict-names',
  'serializable-deferrable',
]) {
  LONG[name] = flag(name);
}
for (const name of [
  'exclude-table-data',
  'table-and-children',
  'exclude-table-and-children',
  'exclude-table-data-and-children',
  'rows-per-insert',
  'section',
  'lock-wait-timeout',
  'extra-float-digits',
]) {
  LONG[name] = valued(name);
}
// Other spellings pg_dump accepts for the same options.
LONG['no-acl'] = LONG['no-privileges']!;
LONG['blobs'] = LONG['large-objects']!;
LONG['no-blobs'] = LONG['no-large-objects']!;
LONG['attribute-inserts'] = LONG['column-inserts']!;

const notAllowed = (opt: string) => new SvcError('not-supported', `pg_dump option "${opt}" is not allowed`, { path: '$.opts' });
const needsValue = (opt: string) => new SvcError('parse-failed', `pg_dump option "${opt}" needs a value`, { path: '$.opts' });

/** The pg_dump arguments for the client's options, each as `--name` or `--name=value`; throws a
 * 400 naming the first option that is not allowed (Note [pg_dump options]). */
export function pgDumpArgs(opts: readonly string[]): string[] {
  const out: string[] = [];
  const put = (spec: OptSpec, val?: string) => {
    if (val?.includes('\0')) throw new SvcError('parse-failed', 'pg_dump option values cannot contain NUL', { path: '$.opts' });
    out.push(spec.value ? `--${spec.name}=${val}` : `--${spec.name}`);
  };
  for (let i = 0; i < opts.length; i++) {
    const o = opts[i]!;
    if (o.startsWith('--') && o.length > 2) {
      const eq = o.indexOf('=');
      const written = eq < 0 ? o : o.slice(0, eq);
      const spec = Object.hasOwn(LONG, written.slice(2)) ? LONG[written.slice(2)]! : undefined;
      if (!spec) throw notAllowed(written);
      if (!spec.value) {
        if (eq >= 0) throw new SvcError('parse-failed', `pg_dump option "${written}" takes no value`, { path: '$.opts' });
        put(spec);
      } else if (eq >= 0) put(spec, o.slice(eq + 1));
      else if (i + 1 < opts.length) put(spec, opts[++i]!);
      else throw needsValue(written);
    } else if (o.startsWith('-') && o.length > 1 && o !== '--') {
      // A cluster of short flags; the first one that takes a value takes the rest of the word, or
      // the next word.
      for (let j = 1; j < o.length; j++) {
        const spec = Object.hasOwn(SHORT, o[j]!) ? SHORT[o[j]!]! : undefined;
        if (!spec) throw notAllowed(`-${o[j]}`);
        if (!spec.value) {
          put(spec);
          continue;
        }
        if (j + 1 < o.length) put(spec, o.slice(j + 1));
        else if (i + 1 < opts.length) put(spec, opts[++i]!);
        else throw needsValue(`-${o[j]}`);
        break;
      }
    } else {
      // `--` ends the options and anything else is a positional argument: a database to dump.
      throw notAllowed(o);
    }
  }
  return out;
}

/** Drops the comments and `SET` noise pg_dump prints around the schema (`clean_output`). */
function clean(out: string): string {
  return out
    .split('\n')
    .filter((l) => !l.startsWith('--') && !/^SET |^SELECT pg_catalog\.set_config/.test(l) && l !== '\\restrict' && !l.startsWith('\\unrestrict') && !l.startsWith('\\restrict'))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim() + '\n';
}

/**
 * The database URL without its password, and the password. The URL goes on the command line
 * (`--dbname`), the password in PGPASSWORD.
 */
export function splitPassword(url: string): { url: string; password: string | undefined } {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/s.exec(url);
  if (!m) throw new SvcError('not-supported', 'pg_dump needs the source\'s database URL in the postgres:// form', { path: '$.source' });
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  let password: string | undefined;
  let hostPart = authority;
  const at = authority.lastIndexOf('@');
  let user = '';
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    hostPart = authority.slice(at + 1);
    const colon = userinfo.indexOf(':');
    user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (colon >= 0) password = decodeURIComponent(userinfo.slice(colon + 1));
  }
  // `?password=` is a libpq connection parameter too.
  const tail = withQuery(rest, (params) => {
    if (params.has('password')) {
      password = params.get('password') ?? undefined;
      params.delete('password');
    }
  });
  return { url: `${scheme}${user ? `${user}@` : ''}${hostPart}${tail}`, password };
}

/**
 * A source's ssl_configuration for pg_dump, which is libpq: its certificates written to files of a
 * directory of their own, mode 0600, and with the mode and the key's passphrase named in a libpq
 * service file there (PGSERVICEFILE/PGSERVICE in the child's environment), so that nothing of it
 * is on the command line; the URL loses the parameters the configuration sets, which it wins
 * over (Note [TLS as libpq] in ./tls.ts). `remove()` once pg_dump is done.
 */
export function tlsService(
  url: string,
  ssl: PgSslConfiguration,
  env: Readonly<Record<string, string | undefined>>,
): { url: string; env: Record<string, string>; remove(): void } {
  // The same checks as the source's own connections (an unset variable, a bad certificate).
  pgTls(url, ssl, env);
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-pg-dump-'));
  try {
    const lines = ['[svc]', `sslmode=${ssl.sslmode}`];
    const given = new Set(['sslmode']);
    for (const name of ['sslrootcert', 'sslcert', 'sslkey'] as const) {
      const ref = ssl[name];
      if (!ref) continue;
      const file = path.join(dir, name);
      writeFileSync(file, env[ref.from_env]!, { mode: 0o600 });
      lines.push(`${name}=${file}`);
      given.add(name);
    }
    if (ssl.sslpassword !== undefined) {
      const pass = typeof ssl.sslpassword === 'string' ? ssl.sslpassword : env[ssl.sslpassword.from_env]!;
      if (/[\r\n]/.test(pass)) throw new SvcError('invalid-configuration', 'ssl_configuration.sslpassword cannot hold a line break for pg_dump');
      lines.push(`sslpassword=${pass}`);
      given.add('sslpassword');
    }
    const service = path.join(dir, 'pg_service.conf');
    writeFileSync(service, lines.join('\n') + '\n', { mode: 0o600 });
    return { url: withQuery(url, (params) => given.forEach((n) => params.delete(n))), env: { PGSERVICEFILE: service, PGSERVICE: 'svc' }, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The environment of a pg_dump child: the server's, less libpq's own variables (the connection
 * is the source's only), with the kernel's PATH (where pg_dump is looked up). */
function childEnv(k: KernelApi, password: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, val] of Object.entries(process.env)) if (!key.startsWith('PG')) env[key] = val;
  const path = k.env.PATH ?? process.env.PATH;
  if (path !== undefined) env.PATH = path;
  if (password !== undefined) env.PGPASSWORD = password;
  return env;
}

/** `pg_dump --version` per PATH: `{major, text}` (e.g. 15, "15.18"), or null when not found. */
const versions = new Map<string, Promise<{ major: number; text: string } | null>>();
function pgDumpVersion(env: NodeJS.ProcessEnv): Promise<{ major: number; text: string } | null> {
  const key = env.PATH ?? '';
  let hit = versions.get(key);
  if (!hit) {
    hit = run('pg_dump', ['--version'], env).then(({ code, stdout }) => {
      const m = code === 0 ? /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(stdout) : null;
      return m ? { major: Number(m[1]), text: m[2] ? `${m[1]}.${m[2]}` : m[1]! } : null;
    });
    hit.then((r) => r === null && versions.delete(key));
    versions.set(key, hit);
  }
  return hit;
}

/**
 * pg_dump refuses a server of a newer major version than its own ("server version mismatch");
 * say so up front, with the versions, rather than relay its failure.
 */
async function checkVersion(k: KernelApi, source: SourceMeta, env: NodeJS.ProcessEnv): Promise<void> {
  let server: { num: number; text: string };
  try {
    const [row] = await k.use(DatabaseToken).connection(source).executor.query<{ num: string; text: string }>(
      "select current_setting('server_version_num') as num, current_setting('server_version') as text",
    );
    server = { num: Number(row!.num), text: row!.text.split(' ')[0]! };
  } catch (e) {
    throw new SvcError('unexpected', `cannot connect to source "${source.name}": ${(e as Error).message}`, { path: '$' });
  }
  const serverMajor = Math.floor(server.num / 10000);
  const dump = await pgDumpVersion(env);
  if (!dump) {
    throw new SvcError('not-supported', `pg_dump was not found on the PATH: install pg_dump ${serverMajor} or later`, { path: '$' });
  }
  if (dump.major < serverMajor) {
    throw new SvcError(
      'not-supported',
      `pg_dump ${dump.text} cannot dump source "${source.name}" (PostgreSQL ${server.text}): install pg_dump ${serverMajor} or later`,
      { path: '$' },
    );
  }
}

export function pgDumpRoute(k: KernelApi): RouteDef {
  return {
    method: 'POST',
    path: '/v1alpha1/pg_dump',
    api: 'pgdump',
    handler: async (c) => {
      const session = await k.authenticate(c.req.raw.headers);
      if (!session.isAdmin) throw new SvcError('access-denied', 'restricted access : admin only', { path: '$' });
      const a = parseWith(Args, await readJsonBody(c, k.config), '$');
      const args = pgDumpArgs(a.opts);
      const source = sourcesOf(k.state().metadata).find((s) => s.name === a.source);
      if (!source || source.kind !== 'postgres') {
        throw new SvcError('not-exists', `source with name "${a.source}" does not exist`, { path: '$.source' });
      }
      const info = (source.configuration as unknown as PgConfiguration).connection_info;
      const { url, password } = splitPassword(resolveDatabaseUrl(info, k.env));
      const tls = info.ssl_configuration ? tlsService(url, info.ssl_configuration, k.env) : undefined;
      try {
        const env = { ...childEnv(k, password), ...tls?.env };
        await checkVersion(k, source, env);
        const { code, stdout, stderr } = await run('pg_dump', [...args, `--dbname=${tls?.url ?? url}`], env);
        if (code !== 0) {
          throw new SvcError('unexpected', `pg_dump failed: ${stderr.trim() || `exit code ${code}`}`, { path: '$' });
        }
        return c.text(a.clean_output ? clean(stdout) : stdout, 200);
      } finally {
        tls?.remove();
      }
    },
  };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // `env.PATH` is where spawn looks the command up.
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', (e) => resolve({ code: -1, stdout: '', stderr: `cannot run ${cmd}: ${e.message}` }));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}
