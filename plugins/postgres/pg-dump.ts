/**
 * `POST /v1alpha1/pg_dump` (API `pgdump`, admin only): runs the `pg_dump` program found on the
 * PATH against a PostgreSQL source and returns its output as text, as Hasura does.
 * Options that would make pg_dump write files on the server are refused.
 */
import { spawn } from 'node:child_process';
import * as v from 'valibot';
import type { KernelApi, RouteDef } from '../../core/plugin.js';
import { SvcError } from '../../core/errors.js';
import { parseWith } from '../../core/validation.js';
import { sourcesOf } from '../database/meta.js';
import { resolveDatabaseUrl, type PgConfiguration } from './connection.js';

const Args = v.object({
  opts: v.optional(v.array(v.string()), []),
  clean_output: v.optional(v.boolean(), false),
  source: v.optional(v.string(), 'default'),
});

const FORBIDDEN = /^(-f|--file|-F|--format|-j|--jobs|--dbname|-d|-h|--host|-p|--port|-U|--username)(=|$)/;

/** Drops the comments and `SET` noise pg_dump prints around the schema (`clean_output`). */
function clean(out: string): string {
  return out
    .split('\n')
    .filter((l) => !l.startsWith('--') && !/^SET |^SELECT pg_catalog\.set_config/.test(l) && l !== '\\restrict' && !l.startsWith('\\unrestrict') && !l.startsWith('\\restrict'))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim() + '\n';
}

export function pgDumpRoute(k: KernelApi): RouteDef {
  return {
    method: 'POST',
    path: '/v1alpha1/pg_dump',
    api: 'pgdump',
    handler: async (c) => {
      const session = k.session(c.req.raw.headers);
      if (!session.isAdmin) throw new SvcError('access-denied', 'restricted access : admin only', { path: '$' });
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        throw new SvcError('invalid-json', 'invalid json', { path: '$' });
      }
      const a = parseWith(Args, body, '$');
      const bad = a.opts.find((o) => FORBIDDEN.test(o));
      if (bad) throw new SvcError('not-supported', `pg_dump option "${bad}" is not allowed`, { path: '$.opts' });
      const source = sourcesOf(k.state().metadata).find((s) => s.name === a.source);
      if (!source || source.kind !== 'postgres') {
        throw new SvcError('not-exists', `source with name "${a.source}" does not exist`, { path: '$.source' });
      }
      const url = resolveDatabaseUrl((source.configuration as unknown as PgConfiguration).connection_info, k.env);
      const { code, stdout, stderr } = await run('pg_dump', [...a.opts, '--dbname', url]);
      if (code !== 0) {
        throw new SvcError('unexpected', `pg_dump failed: ${stderr.trim() || `exit code ${code}`}`, { path: '$' });
      }
      return c.text(a.clean_output ? clean(stdout) : stdout, 200);
    },
  };
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', (e) => resolve({ code: -1, stdout: '', stderr: `cannot run ${cmd}: ${e.message}` }));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}
