/**
 * TLS to PostgreSQL as libpq does it (Note [TLS as libpq] in plugins/postgres/connection/tls.ts, Note [TLS
 * in the socket] in plugins/postgres/connection/pg-socket.ts), against a real PostgreSQL that speaks TLS
 * (the embedded one with `ssl=on`, test/tls-postgres.ts): each sslmode against a server that
 * does and one that must (a role refused without TLS), the server's certificate checked against
 * the right and a wrong authority and for its name, a client certificate with an encrypted key,
 * direct negotiation, large answers over TLS read into buffers given back; then through the
 * engine: a source's ssl_configuration (certificates in environment variables, as Hasura's),
 * the URL's file parameters, bad configurations answered with errors that change nothing, and
 * the export keeping the configuration as given; and pg_dump (libpq) given a source's
 * ssl_configuration, against Debian's PostgreSQL where it is installed (the embedded one is newer
 * than Debian's pg_dump).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPg } from '../server/embedded.js';
import { driverFor } from '../plugins/postgres/index.js';
import { giveBackRead, readBuffers, socketToldHost } from '../plugins/postgres/connection/pg-socket.js';
import { CLIENT_KEY_PASSPHRASE, pem, TLS_DIR, TLS_ROLES_SQL, tlsSettings } from './tls-postgres.js';
import { startServer, type TestServer } from './helpers.js';
import { findDebianPostgis, startDebianPostgres, type DebianPostgres } from './debian-postgres.js';

let pg: EmbeddedPg;
let dataDir: string;
let removeSettings: () => void;
/** postgres://postgres:postgres@127.0.0.1:PORT/DB, and the same through the name localhost. */
let byIp: (db?: string, user?: string) => string;
let byName: (db?: string, user?: string) => string;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'svc-test-tls-pg-'));
  const { settings, remove } = tlsSettings();
  removeSettings = remove;
  pg = await startEmbeddedPostgres({ dataDir, persistent: false, settings });
  byIp = (db = 'postgres', user = 'postgres:postgres') => `postgres://${user}@127.0.0.1:${pg.port}/${db}`;
  byName = (db = 'postgres', user = 'postgres:postgres') => `postgres://${user}@localhost:${pg.port}/${db}`;
  const admin = postgres(`${byIp()}?sslmode=disable`, { max: 1, onnotice: () => {} });
  try {
    for (const s of TLS_ROLES_SQL) await admin.unsafe(s);
    await admin.unsafe('create database tls_src');
  } finally {
    await admin.end();
  }
}, 120_000);

afterAll(async () => {
  await pg?.stop();
  removeSettings?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const ENV = {
  TLS_CA: pem('ca.crt'),
  TLS_OTHER_CA: pem('other-ca.crt'),
  TLS_CLIENT_CERT: pem('client.crt'),
  TLS_CLIENT_KEY: pem('client.key'),
  TLS_CLIENT_PASS: CLIENT_KEY_PASSPHRASE,
  NOT_PEM: 'not a certificate',
};
const file = (f: string) => path.join(TLS_DIR, f);

/** What a connection through the engine's driver options says of itself, or its error's message. */
async function session(url: string, ssl?: Parameters<typeof driverFor>[1]): Promise<{ ssl: boolean; user: string } | string> {
  let sql: postgres.Sql | undefined;
  try {
    const d = driverFor(url, ssl, ENV);
    sql = postgres(d.url, { ...d.options, max: 1, connect_timeout: 5, onnotice: () => {} });
    const [r] = await sql.unsafe<{ ssl: boolean; user: string }[]>('select s.ssl, current_user as user from pg_stat_ssl s where s.pid = pg_backend_pid()');
    return { ssl: r!.ssl, user: r!.user };
  } catch (e) {
    return (e as Error).message;
  } finally {
    await sql?.end({ timeout: 1 });
  }
}

describe('sslmode against a server with TLS', () => {
  it('prefer (the default) and require use TLS; disable and allow do not', async () => {
    expect(await session(byIp())).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(`${byIp()}?sslmode=prefer`)).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(`${byIp()}?sslmode=require`)).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(`${byIp()}?sslmode=disable`)).toEqual({ ssl: false, user: 'postgres' });
    expect(await session(`${byIp()}?sslmode=allow`)).toEqual({ ssl: false, user: 'postgres' });
  });

  it('a role refused without TLS gets in with prefer, and with allow (plain refused, then TLS), not with disable', async () => {
    expect(await session(byIp('postgres', 'tlsonly:tlsonly'))).toEqual({ ssl: true, user: 'tlsonly' });
    expect(await session(`${byIp('postgres', 'tlsonly:tlsonly')}?sslmode=allow`)).toEqual({ ssl: true, user: 'tlsonly' });
    expect(await session(`${byIp('postgres', 'tlsonly:tlsonly')}?sslmode=disable`)).toMatch(/pg_hba\.conf rejects connection .*"tlsonly".*no encryption/);
    // allow's second attempt presents the client certificate too.
    const cert = `sslcert=${file('client.crt')}&sslkey=${file('client.key')}&sslpassword=${CLIENT_KEY_PASSPHRASE}`;
    expect(await session(`${byIp('postgres', 'certuser')}?sslmode=allow&${cert}`)).toEqual({ ssl: true, user: 'certuser' });
  });

  it('verify-ca checks the chain, verify-full the name too', async () => {
    const ca = `sslrootcert=${file('ca.crt')}`;
    expect(await session(`${byIp()}?sslmode=verify-ca&${ca}`)).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(`${byName()}?sslmode=verify-full&${ca}`)).toEqual({ ssl: true, user: 'postgres' });
    // The certificate names localhost, not the address.
    expect(await session(`${byIp()}?sslmode=verify-full&${ca}`)).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/);
    const other = `sslrootcert=${file('other-ca.crt')}`;
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    const open = sockets();
    expect(await session(`${byName()}?sslmode=verify-full&${other}`)).toMatch(/self-signed certificate in certificate chain/);
    // The failed handshake's connection is closed, not left to the server's timeout.
    await new Promise((r) => setTimeout(r, 100));
    expect(sockets()).toBe(open);
    expect(await session(`${byIp()}?sslmode=verify-ca&${other}`)).toMatch(/self-signed certificate in certificate chain/);
    // A root certificate given makes require check the chain, as libpq does.
    expect(await session(`${byIp()}?sslmode=require&${other}`)).toMatch(/self-signed certificate in certificate chain/);
    // And prefer, whose failed handshake is followed by a plain connection, as libpq's is; which
    // a role refused without TLS cannot use.
    expect(await session(`${byIp()}?sslmode=prefer&${other}`)).toEqual({ ssl: false, user: 'postgres' });
    expect(await session(`${byIp('postgres', 'tlsonly:tlsonly')}?sslmode=prefer&${other}`)).toMatch(/pg_hba\.conf rejects connection .*"tlsonly".*no encryption/);
    expect(await session(`${byIp()}?sslmode=require&${ca}`)).toEqual({ ssl: true, user: 'postgres' });
  });

  it('sslcrl: a revocation list that revokes the server\'s certificate fails the check', async () => {
    const ca = `sslrootcert=${file('ca.crt')}`;
    expect(await session(`${byIp()}?sslmode=verify-ca&${ca}&sslcrl=${file('revoked.crl')}`)).toMatch(/certificate revoked/);
    expect(await session(`${byIp()}?sslmode=verify-ca&${ca}`)).toEqual({ ssl: true, user: 'postgres' });
  });

  it('sslrootcert=system checks against the machine\'s authorities, which do not know the test CA', async () => {
    expect(await session(`${byName()}?sslrootcert=system`)).toMatch(/self-signed certificate in certificate chain|unable to get local issuer certificate/);
  });

  it('a client certificate, its key encrypted, logs certuser in; without it certuser is refused', async () => {
    const cert = `sslcert=${file('client.crt')}&sslkey=${file('client.key')}&sslpassword=${CLIENT_KEY_PASSPHRASE}`;
    expect(await session(`${byIp('postgres', 'certuser')}?sslmode=require&${cert}`)).toEqual({ ssl: true, user: 'certuser' });
    expect(await session(`${byIp('postgres', 'certuser')}?sslmode=require`)).toMatch(/connection requires a valid client certificate/);
    expect(await session(`${byIp('postgres', 'certuser')}?sslmode=disable`)).toMatch(/pg_hba\.conf rejects connection/);
  });

  it('a URL of several hosts: each host through the engine\'s socket, with the same checks', async () => {
    // The installed postgres.js tells the socket which host it tries (npm install's edit).
    expect(socketToldHost()).toBe(true);
    const two = (q: string, user = 'postgres:postgres') => `postgres://${user}@127.0.0.1:${pg.port},localhost:${pg.port}/postgres?${q}`;
    expect(await session(two('sslmode=prefer'))).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(two('sslmode=disable'))).toEqual({ ssl: false, user: 'postgres' });
    expect(await session(two(`sslmode=verify-ca&sslrootcert=${file('ca.crt')}`))).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(two(`sslmode=verify-ca&sslrootcert=${file('other-ca.crt')}`))).toMatch(/self-signed certificate in certificate chain/);
    const cert = `sslcert=${file('client.crt')}&sslkey=${file('client.key')}&sslpassword=${CLIENT_KEY_PASSPHRASE}`;
    expect(await session(two(`sslmode=require&${cert}`, 'certuser'))).toEqual({ ssl: true, user: 'certuser' });
  });

  it('several hosts: verify-full checks each host\'s own name, and the next host is tried after a failed check', async () => {
    // The certificate names localhost, not 127.0.0.1.
    const full = `sslmode=verify-full&sslrootcert=${file('ca.crt')}`;
    expect(await session(`postgres://postgres:postgres@127.0.0.1:${pg.port},localhost:${pg.port}/postgres?${full}`)).toEqual({ ssl: true, user: 'postgres' });
    expect(await session(`postgres://postgres:postgres@127.0.0.1:${pg.port},127.0.0.1:${pg.port}/postgres?${full}`)).toMatch(/Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1/);
  });

  it('several hosts: allow tries TLS after a plain refusal, prefer falls back to plain where TLS fails, as libpq does', async () => {
    expect(await session(`postgres://tlsonly:tlsonly@127.0.0.1:${pg.port},localhost:${pg.port}/postgres?sslmode=allow`)).toEqual({ ssl: true, user: 'tlsonly' });
    // A root certificate that does not sign the server's: prefer's handshake fails, then plain.
    expect(await session(`postgres://postgres:postgres@127.0.0.1:${pg.port},localhost:${pg.port}/postgres?sslmode=prefer&sslrootcert=${file('other-ca.crt')}`)).toEqual({ ssl: false, user: 'postgres' });
  });

  it('several hosts: large answers are read into buffers given back, and reused', async () => {
    const d = driverFor(`postgres://postgres:postgres@127.0.0.1:${pg.port},localhost:${pg.port}/postgres?sslmode=require`, undefined, {});
    const sql = postgres(d.url, { ...d.options, max: 1, onnotice: () => {} });
    try {
      const big = async (c: string) => (await sql.unsafe(`select repeat('${c}', 300000) as v`).raw())[0]![0] as unknown as Uint8Array;
      const before = { ...readBuffers };
      const a = await big('a');
      giveBackRead(a);
      const b = await big('b');
      // Compared as a boolean: a failure's diff of two 300 KB buffers takes vitest minutes to print.
      expect(b.buffer === a.buffer).toBe(true);
      expect(Buffer.from(b).toString()).toBe('b'.repeat(300000));
      expect(readBuffers.reused - before.reused).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('sslnegotiation=direct starts TLS at once', async () => {
    expect(await session(`${byIp()}?sslmode=require&sslnegotiation=direct`)).toEqual({ ssl: true, user: 'postgres' });
  });

  it.each(['sslmode=require', 'sslmode=require&sslnegotiation=direct'])('large answers over TLS are read into buffers given back, and reused (%s)', async (query) => {
    const d = driverFor(`${byIp()}?${query}`, undefined, {});
    const sql = postgres(d.url, { ...d.options, max: 1, onnotice: () => {} });
    try {
      const big = async (c: string) => (await sql.unsafe(`select repeat('${c}', 300000) as v`).raw())[0]![0] as unknown as Uint8Array;
      const before = { ...readBuffers };
      const a = await big('a');
      expect(Buffer.from(a).toString()).toBe('a'.repeat(300000));
      giveBackRead(a);
      const b = await big('b');
      expect(b.buffer).toBe(a.buffer);
      expect(Buffer.from(b).toString()).toBe('b'.repeat(300000));
      expect(readBuffers.large - before.large).toBe(2);
      expect(readBuffers.reused - before.reused).toBe(1);
    } finally {
      await sql.end();
    }
  });
});

describe('settings that cannot work are configuration errors, before any connection', () => {
  it.each([
    ['?sslmode=verify-all', /invalid sslmode "verify-all"/],
    ['?sslmode=verify-full', /sslmode verify-full needs a root certificate/],
    ['?sslmode=verify-ca', /sslmode verify-ca needs a root certificate/],
    ['?sslmode=require&sslrootcert=system', /sslrootcert=system needs sslmode verify-full, not require/],
    ['?sslnegotiation=direct', /sslnegotiation=direct needs sslmode require/],
    ['?sslcert=/nonexistent/client.crt&sslkey=/nonexistent/client.key', /cannot read the sslcert file "\/nonexistent\/client.crt": ENOENT/],
    [`?sslcert=${file('client.crt')}`, /needs both sslcert and sslkey, not only sslcert/],
    [`?sslcert=${file('client.crt')}&sslkey=${file('client.key')}&sslpassword=wrong`, /cannot be used: .*bad decrypt/],
    ['?sslcrldir=/x', /parameter "sslcrldir" is not supported/],
    ['?ssl_min_protocol_version=SSLv3', /invalid ssl_min_protocol_version "SSLv3"/],
  ])('%s', (query, message) => {
    expect(() => driverFor(`postgres://u@h/db${query}`, undefined, {})).toThrow(message);
  });

  it('an ssl_configuration of the wrong shape (one stored before it was checked) is named, not read as a variable "undefined"', () => {
    const bad = { sslmode: 'require', sslrootcert: '/etc/ssl/ca.pem' } as unknown as Parameters<typeof driverFor>[1];
    expect(() => driverFor('postgres://u@h/db', bad, {})).toThrow('ssl_configuration.sslrootcert: expected {"from_env": "VARIABLE"}');
    expect(() => driverFor('postgres://u@h/db', { sslmode: 5 } as unknown as Parameters<typeof driverFor>[1], {})).toThrow('invalid sslmode 5');
  });

  it('the URL loses its TLS parameters, which PostgreSQL would refuse as run-time parameters', () => {
    const d = driverFor(`postgres://u@h:5/db?application_name=x&sslmode=verify-ca&sslrootcert=${file('ca.crt')}&sslcompression=0&options=-c%20a%3Db`, undefined, {});
    expect(d.url).toBe('postgres://u@h:5/db?application_name=x&options=-c+a%3Db');
  });

  it('no message holds a key, a certificate or a passphrase', () => {
    const messages: string[] = [];
    for (const ssl of [
      { sslmode: 'require' as const, sslcert: { from_env: 'TLS_CLIENT_CERT' }, sslkey: { from_env: 'TLS_CLIENT_KEY' }, sslpassword: 'not-the-passphrase' },
      { sslmode: 'verify-ca' as const, sslrootcert: { from_env: 'NOT_PEM' } },
    ]) {
      try {
        driverFor('postgres://u@h/db', ssl, ENV);
      } catch (e) {
        messages.push((e as Error).message);
      }
    }
    expect(messages).toHaveLength(2);
    for (const m of messages) {
      expect(m).not.toMatch(/not-the-passphrase|not a certificate|BEGIN|PRIVATE/);
      expect(m).toMatch(/cannot be used/);
    }
  });
});

describe('a source\'s ssl_configuration, through the engine', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ env: ENV });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const add = (name: string, connection_info: Record<string, unknown>) => s.metadata({ type: 'pg_add_source', args: { name, configuration: { connection_info } } });
  const sslOf = async (source: string) => {
    const r = await s.query({ type: 'run_sql', args: { source, sql: 'select s.ssl, current_user from pg_stat_ssl s where s.pid = pg_backend_pid()' } });
    expect(r.status, r.text).toBe(200);
    return r.body.result[1];
  };
  const sources = async () => (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body.sources.map((x: { name: string }) => x.name);

  it('verify-full with the root certificate from the environment', async () => {
    const ssl_configuration = { sslmode: 'verify-full', sslrootcert: { from_env: 'TLS_CA' } };
    const r = await add('tls_full', { database_url: byName('tls_src'), ssl_configuration });
    expect(r.status, r.text).toBe(200);
    expect(await sslOf('tls_full')).toEqual(['t', 'postgres']);
    const exported = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body.sources.find((x: { name: string }) => x.name === 'tls_full');
    expect(exported.configuration.connection_info.ssl_configuration).toEqual(ssl_configuration);
  });

  it('pg_update_source with another ssl_configuration reconnects with it', async () => {
    const update = (connection_info: Record<string, unknown>) => s.metadata({ type: 'pg_update_source', args: { name: 'tls_full', configuration: { connection_info } } });
    expect((await update({ database_url: byName('tls_src'), ssl_configuration: { sslmode: 'disable' } })).status).toBe(200);
    expect(await sslOf('tls_full')).toEqual(['f', 'postgres']);
    expect((await update({ database_url: byName('tls_src'), ssl_configuration: { sslmode: 'verify-full', sslrootcert: { from_env: 'TLS_CA' } } })).status).toBe(200);
    expect(await sslOf('tls_full')).toEqual(['t', 'postgres']);
  });

  it('a client certificate and its key\'s passphrase from the environment', async () => {
    const r = await add('tls_cert', {
      database_url: byIp('tls_src', 'certuser'),
      ssl_configuration: { sslmode: 'verify-ca', sslrootcert: { from_env: 'TLS_CA' }, sslcert: { from_env: 'TLS_CLIENT_CERT' }, sslkey: { from_env: 'TLS_CLIENT_KEY' }, sslpassword: { from_env: 'TLS_CLIENT_PASS' } },
    });
    expect(r.status, r.text).toBe(200);
    expect(await sslOf('tls_cert')).toEqual(['t', 'certuser']);
  });

  it('the URL\'s own sslmode and sslrootcert file', async () => {
    const r = await add('tls_url', { database_url: `${byName('tls_src')}?sslmode=verify-full&sslrootcert=${file('ca.crt')}` });
    expect(r.status, r.text).toBe(200);
    expect(await sslOf('tls_url')).toEqual(['t', 'postgres']);
  });

  it('a GraphQL answer over TLS, large enough to be read into a buffer given back', async () => {
    const r = await s.query({
      type: 'run_sql',
      args: { source: 'tls_full', sql: "create table item (id int primary key, label text not null); insert into item select g, repeat('x', 200) || g from generate_series(1, 2000) g" },
    });
    expect(r.status, r.text).toBe(200);
    expect((await s.metadata({ type: 'pg_track_table', args: { source: 'tls_full', table: 'item' } })).status).toBe(200);
    const before = readBuffers.large;
    const body = await s.gql('{ item(order_by: {id: asc}) { id label } }');
    expect(body.data.item).toHaveLength(2000);
    expect(body.data.item[1999]).toEqual({ id: 2000, label: `${'x'.repeat(200)}2000` });
    expect(readBuffers.large).toBeGreaterThan(before);
  });

  it('a read replica has its own ssl_configuration: the primary plain, the replica over TLS', async () => {
    const r = await s.metadata({
      type: 'pg_add_source',
      args: {
        name: 'tls_rep',
        configuration: {
          connection_info: { database_url: `${byIp('tls_src')}?sslmode=disable` },
          read_replicas: [{ database_url: byName('tls_src'), ssl_configuration: { sslmode: 'verify-full', sslrootcert: { from_env: 'TLS_CA' } } }],
        },
      },
    });
    expect(r.status, r.text).toBe(200);
    // The same database as tls_full's: its root fields under another name.
    const tracked = await s.metadata({ type: 'pg_track_table', args: { source: 'tls_rep', table: 'item', configuration: { custom_name: 'rep_item' } } });
    expect(tracked.status, tracked.text).toBe(200);
    // A query reads the replica; run_sql runs on the primary.
    expect(await s.gql('{ rep_item_by_pk(id: 7) { id } }')).toEqual({ data: { rep_item_by_pk: { id: 7 } } });
    expect((await s.query({ type: 'run_sql', args: { source: 'tls_rep', sql: 'select 1' } })).status).toBe(200);
    const admin = postgres(`${byIp()}?sslmode=disable`, { max: 1, onnotice: () => {} });
    try {
      const rows = await admin.unsafe<{ app: string; ssl: boolean }[]>(
        "select distinct a.application_name as app, s.ssl from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name like 'svc-source-tls_rep%' order by 1",
      );
      expect(rows).toEqual([
        { app: 'svc-source-tls_rep', ssl: false },
        { app: 'svc-source-tls_rep-replica-1', ssl: true },
      ]);
    } finally {
      await admin.end();
    }
  });

  it.each([
    [{ sslmode: 'verify-all' }, 400, /expected one of disable, allow, prefer, require, verify-ca, verify-full/],
    [{ sslmode: 'verify-full', sslrootcert: { from_env: 'NO_SUCH_VAR' } }, 400, /environment variable "NO_SUCH_VAR" not set \(ssl_configuration\.sslrootcert\)/],
    [{ sslmode: 'verify-full' }, 400, /needs a root certificate/],
    [{ sslmode: 'verify-ca', sslrootcert: { from_env: 'NOT_PEM' } }, 400, /cannot be used/],
    [{ sslmode: 'require', sslcert: { from_env: 'TLS_CLIENT_CERT' } }, 400, /needs both sslcert and sslkey/],
    [{ sslmode: 'require', sslpassword: 5 }, 400, /expected a string or \{from_env\}/],
  ])('%j is answered %i and adds nothing', async (ssl_configuration, status, message) => {
    const r = await add('tls_bad', { database_url: byName('tls_src'), ssl_configuration });
    expect(r.status, r.text).toBe(status);
    // Hasura's shape: a source that cannot be built is new inconsistent metadata, its reason inside.
    expect([r.body.error, ...(r.body.internal ?? []).map((x: { reason: string }) => x.reason)].join('\n')).toMatch(message);
    expect(await sources()).not.toContain('tls_bad');
  });

  it('replace_metadata with an ssl_configuration of the wrong shape: 400 naming it, the metadata as it was', async () => {
    const before = (await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body;
    const doc = structuredClone(before);
    doc.sources.push({ name: 'tls_shape', kind: 'postgres', tables: [], configuration: { connection_info: { database_url: byName('tls_src'), ssl_configuration: { sslmode: 'verify-full', sslrootcert: '/etc/ssl/ca.pem' } } } });
    const r = await s.metadata({ type: 'replace_metadata', args: doc });
    expect(r.status, r.text).toBe(400);
    expect(r.body).toMatchObject({ code: 'parse-failed', path: `$.args.sources[${doc.sources.length - 1}].configuration.connection_info.ssl_configuration.sslrootcert` });
    expect((await s.metadata({ type: 'export_metadata', version: 1, args: {} })).body).toEqual(before);
  });

  it('a server whose certificate the given authority did not sign: an error, nothing added', async () => {
    const r = await add('tls_wrong_ca', { database_url: byName('tls_src'), ssl_configuration: { sslmode: 'verify-full', sslrootcert: { from_env: 'TLS_OTHER_CA' } } });
    expect(r.status, r.text).toBe(400);
    expect(r.text).toMatch(/self-signed certificate in certificate chain/);
    expect(r.text).not.toMatch(/BEGIN CERTIFICATE/);
    expect(await sources()).not.toContain('tls_wrong_ca');
  });

  it('require against a role that needs a client certificate it was not given: an error, nothing added', async () => {
    const r = await add('tls_no_cert', { database_url: byIp('tls_src', 'certuser'), ssl_configuration: { sslmode: 'require' } });
    expect(r.status, r.text).toBe(400);
    expect(r.text).toMatch(/connection requires a valid client certificate/);
    expect(await sources()).not.toContain('tls_no_cert');
  });
});

describe('the catalog over TLS (--metadata-database-url)', () => {
  it('boots with the catalog on a role refused without TLS, and its connections are over TLS', async () => {
    const admin = postgres(`${byIp()}?sslmode=disable`, { max: 1, onnotice: () => {} });
    await admin.unsafe('create database tls_catalog owner tlsonly');
    const s = await startServer({ config: { databaseUrl: undefined, metadataDatabaseUrl: `${byIp('tls_catalog', 'tlsonly:tlsonly')}?sslmode=verify-ca&sslrootcert=${file('ca.crt')}` } });
    try {
      expect((await s.metadata({ type: 'export_metadata', version: 1, args: {} })).status).toBe(200);
      const rows = await admin.unsafe<{ ssl: boolean }[]>("select distinct s.ssl from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name = 'svc-catalog'");
      expect(rows).toEqual([{ ssl: true }]);
    } finally {
      await s.stop();
      await admin.end();
    }
  });

  it('a catalog URL whose TLS settings cannot work: the boot fails with the reason', async () => {
    await expect(startServer({ config: { databaseUrl: undefined, metadataDatabaseUrl: `${byIp('tls_catalog')}?sslmode=verify-full` } })).rejects.toThrow(/sslmode verify-full needs a root certificate/);
  });
});

const debian = findDebianPostgis();
if (!debian) console.warn('Debian\'s PostgreSQL is not installed: pg_dump over TLS is not tested');

describe.skipIf(!debian)('pg_dump of a source with ssl_configuration (Debian\'s PostgreSQL and pg_dump)', () => {
  let cluster: DebianPostgres;
  let remove: () => void;
  let s: TestServer;
  beforeAll(async () => {
    const t = tlsSettings('trust');
    remove = t.remove;
    cluster = await startDebianPostgres({ prefix: 'svc-test-tls-debian-', settings: t.settings });
    const admin = postgres(`${cluster.url}?sslmode=disable`, { max: 1, onnotice: () => {} });
    try {
      for (const q of [...TLS_ROLES_SQL, 'create database tls_dump owner certuser']) await admin.unsafe(q);
    } finally {
      await admin.end();
    }
    s = await startServer({ env: ENV });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await cluster?.stop();
    remove?.();
  });

  it('dumps over TLS with the client certificate (certuser gets in no other way), and leaves no file behind', async () => {
    const url = new URL(cluster.url);
    url.username = 'certuser';
    url.pathname = '/tls_dump';
    const r = await s.metadata({
      type: 'pg_add_source',
      args: {
        name: 'dumped',
        configuration: {
          connection_info: {
            database_url: url.toString(),
            ssl_configuration: { sslmode: 'verify-ca', sslrootcert: { from_env: 'TLS_CA' }, sslcert: { from_env: 'TLS_CLIENT_CERT' }, sslkey: { from_env: 'TLS_CLIENT_KEY' }, sslpassword: { from_env: 'TLS_CLIENT_PASS' } },
          },
        },
      },
    });
    expect(r.status, r.text).toBe(200);
    expect((await s.query({ type: 'run_sql', args: { source: 'dumped', sql: 'create table over_tls (id int primary key)' } })).status).toBe(200);
    const left = () => readdirSync(tmpdir()).filter((f) => f.startsWith('svc-pg-dump-'));
    const before = left();
    const d = await s.request('POST', '/v1alpha1/pg_dump', { source: 'dumped', opts: ['-s', '-O', '-x'], clean_output: true });
    expect(d.status, d.text).toBe(200);
    expect(d.text).toMatch(/CREATE TABLE public\.over_tls/);
    expect(left()).toEqual(before);
  });
});
