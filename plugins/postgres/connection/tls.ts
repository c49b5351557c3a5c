/**
 * TLS to PostgreSQL as libpq does it: sslmode and the certificates, from the database URL's
 * parameters or from a source's `ssl_configuration` (Hasura's PGCertSettings), made into what a
 * connection's socket negotiates (Note [TLS as libpq]).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { SvcError } from '../../../core/errors.js';

/*
 * Note [TLS as libpq]
 * Hasura connects through libpq, so a Hasura user's database URL and `ssl_configuration` mean
 * what libpq makes of them, and this module makes the same of them:
 *
 * - `sslmode` (URL parameter, or ssl_configuration's, which wins): `disable` connects without
 *   TLS; `allow` without, and again with TLS if the server refuses that (Note [TLS in the
 *   socket] in ./pg-socket.ts); `prefer`, libpq's default and so the default here, asks for TLS
 *   and goes on without it when the server has none; `require` insists on TLS; `verify-ca` also
 *   checks that the server's certificate chains to a root certificate given; `verify-full` also
 *   that it names the host.
 *   As in libpq, a root certificate given makes `prefer` and `require` check the chain too, and
 *   `verify-ca`/`verify-full` without one is an error (`sslrootcert=system` takes the system's
 *   trusted authorities, and only with `verify-full`, which it implies).
 * - The certificates: in the URL, libpq's file parameters (`sslrootcert`, `sslcert`, `sslkey`,
 *   `sslcrl`, read when the pool is made); in ssl_configuration, `{from_env}` naming an
 *   environment variable that holds the PEM text (as Hasura's does), `sslpassword` the client
 *   key's passphrase (a string or `{from_env}`). Made into one TLS context per pool, so a bad
 *   certificate or a wrong passphrase is an error when the source is added, not on each
 *   connection.
 * - `sslnegotiation=direct` (PostgreSQL 17) starts the handshake at once, with the ALPN name
 *   `postgresql`, instead of asking with an SSLRequest; `sslsni=0` sends no server name;
 *   `ssl_min_protocol_version`/`ssl_max_protocol_version` bound the TLS version.
 *
 * Every `ssl*` parameter is taken out of the URL: postgres.js would send those it does not know
 * to the server as run-time parameters, which PostgreSQL refuses (`unrecognized configuration
 * parameter "sslrootcert"`). One this module does not know is an error, not ignored. libpq's
 * environment variables (PGSSLMODE...) are not read: a source is what its metadata says, as for
 * pg_dump (./pg-dump.ts). A connection over a Unix socket has no TLS, as in libpq.
 *
 * The socket that does the negotiation is ./pg-socket.ts's (Note [Read buffers given back]
 * there), for each host of a pool to several too; only a postgres.js without the edit that
 * names the host to its socket function (pg-socket.ts `socketToldHost`) gets a pool to
 * several hosts its own TLS (`postgresSsl`).
 */

export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** An environment variable holding a value (Hasura's CertVar). */
export interface FromEnv {
  from_env: string;
}

/** A source's `ssl_configuration` (Hasura's PGCertSettings). */
export interface PgSslConfiguration {
  sslmode: SslMode;
  sslrootcert?: FromEnv;
  sslcert?: FromEnv;
  sslkey?: FromEnv;
  sslpassword?: string | FromEnv;
}

/** What a pool's connections negotiate. */
export interface PgTls {
  mode: SslMode;
  /** Whether TLS is asked for at once (not for disable, nor allow, which asks only after the
   * server refused a plain connection). */
  attempt: boolean;
  /** Whether a connection without TLS is refused (require and stronger). */
  required: boolean;
  /** The handshake starts at once (sslnegotiation=direct), not after an SSLRequest. */
  direct: boolean;
  /** What of the server's certificate is checked: nothing, its chain, its chain and host name. */
  verify: 'none' | 'chain' | 'full';
  sni: boolean;
  /** A client certificate is presented. */
  clientCert: boolean;
  /** The root certificates, client certificate and key, CRL and versions; made once. */
  context: tls.SecureContext | undefined;
}

/** libpq's TLS parameters this module reads; `sslcompression` is a no-op in libpq since 16. */
const KNOWN = new Set([
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'sslpassword',
  'sslcrl',
  'sslnegotiation',
  'sslsni',
  'ssl_min_protocol_version',
  'ssl_max_protocol_version',
  'sslcompression',
]);

const VERSIONS: Record<string, tls.SecureVersion> = { TLSv1: 'TLSv1', 'TLSv1.1': 'TLSv1.1', 'TLSv1.2': 'TLSv1.2', 'TLSv1.3': 'TLSv1.3' };

const invalid = (message: string) => new SvcError('invalid-configuration', message);

/**
 * The URL without its TLS parameters, and what its connections negotiate (Note [TLS as libpq]).
 * Throws a configuration error for a bad setting, an unset variable, a file that cannot be read
 * or a certificate or key that cannot be used; no message holds a certificate, key or passphrase.
 */
export function pgTls(url: string, config: PgSslConfiguration | undefined, env: Readonly<Record<string, string | undefined>>): { url: string; tls: PgTls } {
  const { url: rest, params } = takeParams(url);
  const file = (name: string): Buffer => {
    const p = params.get(name)!;
    try {
      return readFileSync(p);
    } catch (e) {
      throw invalid(`cannot read the ${name} file "${p}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  // The configuration may come from a document that pg_add_source's schema never saw
  // (replace_metadata, the stored catalog): its shape is checked here too.
  const fromEnv = (name: string, ref: FromEnv): string => {
    if (typeof ref !== 'object' || ref === null || typeof ref.from_env !== 'string') throw invalid(`ssl_configuration.${name}: expected {"from_env": "VARIABLE"}`);
    const val = env[ref.from_env];
    if (!val) throw invalid(`environment variable "${ref.from_env}" not set (ssl_configuration.${name})`);
    return val;
  };

  let mode: string | undefined = params.get('sslmode');
  let rootcert: Buffer | string | 'system' | undefined = params.has('sslrootcert') ? (params.get('sslrootcert') === 'system' ? 'system' : file('sslrootcert')) : undefined;
  let cert: Buffer | string | undefined = params.has('sslcert') ? file('sslcert') : undefined;
  let key: Buffer | string | undefined = params.has('sslkey') ? file('sslkey') : undefined;
  let passphrase = params.get('sslpassword');
  const crl = params.has('sslcrl') ? file('sslcrl') : undefined;
  if (config) {
    if (typeof config !== 'object') throw invalid('ssl_configuration: expected an object');
    mode = config.sslmode;
    if (config.sslrootcert) rootcert = fromEnv('sslrootcert', config.sslrootcert);
    if (config.sslcert) cert = fromEnv('sslcert', config.sslcert);
    if (config.sslkey) key = fromEnv('sslkey', config.sslkey);
    if (config.sslpassword !== undefined) passphrase = typeof config.sslpassword === 'string' ? config.sslpassword : fromEnv('sslpassword', config.sslpassword);
  }
  mode ??= rootcert === 'system' ? 'verify-full' : 'prefer';
  if (!(SSL_MODES as readonly string[]).includes(mode)) throw invalid(`invalid sslmode ${JSON.stringify(mode)}: expected one of ${SSL_MODES.join(', ')}`);
  const m = mode as SslMode;

  const negotiation: string = params.get('sslnegotiation') ?? 'postgres';
  if (negotiation !== 'postgres' && negotiation !== 'direct') throw invalid(`invalid sslnegotiation "${negotiation}": expected postgres or direct`);
  const sni: string = params.get('sslsni') ?? '1';
  if (sni !== '0' && sni !== '1') throw invalid(`invalid sslsni "${sni}": expected 0 or 1`);
  const version = (name: string): tls.SecureVersion | undefined => {
    const x = params.get(name);
    if (x === undefined) return undefined;
    const v = VERSIONS[x];
    if (!v) throw invalid(`invalid ${name} "${x}": expected one of ${Object.keys(VERSIONS).join(', ')}`);
    return v;
  };
  const minVersion = version('ssl_min_protocol_version');
  const maxVersion = version('ssl_max_protocol_version');

  const attempt = m !== 'disable' && m !== 'allow';
  const required = m === 'require' || m === 'verify-ca' || m === 'verify-full';
  if (rootcert === 'system' && m !== 'verify-full') throw invalid(`sslrootcert=system needs sslmode verify-full, not ${m}`);
  if ((m === 'verify-ca' || m === 'verify-full') && rootcert === undefined) {
    throw invalid(`sslmode ${m} needs a root certificate to check the server's against: sslrootcert (a file in the URL, {from_env} in ssl_configuration), or sslrootcert=system for the system's trusted authorities`);
  }
  if (negotiation === 'direct' && !required) throw invalid(`sslnegotiation=direct needs sslmode require, verify-ca or verify-full, not ${m}`);
  if ((cert === undefined) !== (key === undefined)) throw invalid(`a client certificate needs both sslcert and sslkey, not only ${cert === undefined ? 'sslkey' : 'sslcert'}`);

  let context: tls.SecureContext | undefined;
  // allow may come to TLS too: after the server refused a plain connection.
  if (m !== 'disable') {
    // Node ignores a root "certificate" that is not PEM (the check then fails on every connection).
    if (rootcert !== undefined && rootcert !== 'system') checkCertificates(rootcert, 'sslrootcert');
    try {
      context = tls.createSecureContext({
        ca: rootcert === 'system' ? undefined : rootcert,
        cert,
        key,
        passphrase,
        crl,
        minVersion,
        maxVersion,
      });
    } catch (e) {
      // OpenSSL's messages name what failed (a PEM line, a bad decrypt), never the material.
      throw invalid(`the TLS certificates or key cannot be used: ${(e as Error).message}`);
    }
  }
  const verify = m === 'verify-full' ? 'full' : m === 'verify-ca' || (rootcert !== undefined && m !== 'disable') ? 'chain' : 'none';
  return { url: rest, tls: { mode: m, attempt, required, direct: negotiation === 'direct', verify, sni: sni === '1', clientCert: cert !== undefined, context } };
}

/** Each PEM certificate of `text` parses, and there is one at least. */
function checkCertificates(text: string | Buffer, name: string): void {
  const blocks = String(text).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw invalid(`the TLS certificates or key cannot be used: ${name} holds no PEM certificate`);
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch (e) {
      throw invalid(`the TLS certificates or key cannot be used: a certificate of ${name} does not parse: ${(e as Error).message}`);
    }
  }
}

/** The URL less its `ssl*` parameters, and those parameters (one not known is an error). */
function takeParams(url: string): { url: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  const rest = withQuery(url, (query) => {
    for (const [k, x] of [...query]) {
      if (!k.startsWith('ssl')) continue;
      if (!KNOWN.has(k)) throw invalid(`the database URL's parameter "${k}" is not supported`);
      params.set(k, x);
      query.delete(k);
    }
  });
  return { url: rest, params };
}

/** The URL with its query's parameters as `edit` leaves them (its fragment kept). */
export function withQuery(url: string, edit: (params: URLSearchParams) => void): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const params = new URLSearchParams(url.slice(q + 1, hash < 0 ? undefined : hash));
  edit(params);
  const s = params.toString();
  return url.slice(0, q) + (s ? `?${s}` : '') + (hash < 0 ? '' : url.slice(hash));
}

/** Node's options for the handshake on `socket` (or a connection of its own) to `host`. */
export function tlsOptions(plan: PgTls, host: string, socket?: net.Socket): tls.ConnectionOptions {
  return {
    socket,
    host,
    servername: plan.sni && !net.isIP(host) ? host : undefined,
    secureContext: plan.context,
    rejectUnauthorized: plan.verify !== 'none',
    // verify-ca: the chain only; verify-full: Node's check of the name too.
    checkServerIdentity: plan.verify === 'full' ? tls.checkServerIdentity : () => undefined,
    ALPNProtocols: plan.direct ? ['postgresql'] : undefined,
  };
}

/**
 * postgres.js's own `ssl` option for a pool to several hosts where it makes its own sockets (a
 * postgres.js that does not name the host to a socket function): `prefer` and `require` as its
 * strings where nothing is checked and no client certificate is presented, anything else as TLS options (TLS then required: postgres.js falls
 * back to a plain connection only for its 'prefer'); `allow` is a plain connection there (no
 * second attempt with TLS).
 */
export function postgresSsl(plan: PgTls): false | 'prefer' | 'require' | tls.ConnectionOptions {
  if (!plan.attempt) return false;
  if (plan.verify === 'none' && !plan.clientCert) return plan.required ? 'require' : 'prefer';
  return {
    secureContext: plan.context,
    rejectUnauthorized: plan.verify !== 'none',
    checkServerIdentity: plan.verify === 'full' ? tls.checkServerIdentity : () => undefined,
  };
}
