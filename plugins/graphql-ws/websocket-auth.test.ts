/**
 * `connection_init` goes through the server's Authenticator like every HTTP request: JWT mode and
 * webhook mode over WebSocket, a subscription then running with the token's (the hook's)
 * session, and a refused init closing the socket with each protocol's error.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJwtSettings } from '../auth-jwt/index.js';
import type { ServerConfig } from '../../core/config.js';
import { startServer, type TestServer } from '../../test/helpers.js';
import { Client, listen, type Listening } from '../../test/ws-helpers.js';

const SECRET = 'ws-auth-admin-secret';
const KEY = 'a-hmac-key-of-at-least-thirty-two-bytes!!';
const SEED = `create table item (id serial primary key, owner int not null); insert into item (owner) values (1), (2), (1);`;

async function serverWith(config: Partial<ServerConfig>): Promise<{ s: TestServer; net: Listening }> {
  const s = await startServer({ config: { adminSecret: SECRET, liveQueriesRefetchInterval: 50, ...config } });
  await s.runSql(SEED);
  const r = await s.metadata(
    {
      type: 'bulk',
      args: [
        { type: 'pg_track_table', args: { table: 'item' } },
        { type: 'pg_create_select_permission', args: { table: 'item', role: 'user', permission: { columns: ['id'], filter: { owner: { _eq: 'X-Svc-User-Id' } } } } },
      ],
    },
    { 'x-svc-admin-secret': SECRET },
  );
  expect(r.status, r.text).toBe(200);
  return { s, net: await listen(s) };
}

const ITEMS = 'subscription { item(order_by: {id: asc}) { id } }';

describe('JWT mode', () => {
  let jwt: { s: TestServer; net: Listening };
  beforeAll(async () => {
    jwt = await serverWith({ jwtSecret: parseJwtSettings(JSON.stringify({ type: 'HS256', key: KEY })) });
  });
  afterAll(async () => {
    await jwt.net.close();
    await jwt.s.stop();
  });
  const token = (userId: string, key = KEY) =>
    new SignJWT({ 'https://hasura.io/jwt/claims': { 'x-hasura-allowed-roles': ['user'], 'x-hasura-default-role': 'user', 'x-hasura-user-id': userId } })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(key));

  it('the token gives the role and session variables of the subscription', async () => {
    const c = await Client.init(jwt.net.url, 'graphql-transport-ws', { headers: { Authorization: `Bearer ${await token('1')}` } });
    c.send({ type: 'subscribe', id: '1', payload: { query: ITEMS } });
    expect((await c.next('1')).payload).toEqual({ data: { item: [{ id: 1 }, { id: 3 }] } });
    c.close();
  });

  it('the socket ends when the token expires, as Hasura ends it', async () => {
    const short = await new SignJWT({ 'https://hasura.io/jwt/claims': { 'x-hasura-allowed-roles': ['user'], 'x-hasura-default-role': 'user', 'x-hasura-user-id': '1' } })
      .setProtectedHeader({ alg: 'HS256' })
      .setExpirationTime(Math.floor(Date.now() / 1000) + 2)
      .sign(new TextEncoder().encode(KEY));
    const c = await Client.init(jwt.net.url, 'graphql-transport-ws', { headers: { Authorization: `Bearer ${short}` } });
    c.send({ type: 'subscribe', id: '1', payload: { query: ITEMS } });
    expect((await c.next('1')).payload).toEqual({ data: { item: [{ id: 1 }, { id: 3 }] } });
    expect(await c.closed).toEqual({ code: 4403, reason: 'Forbidden' });
    const a = await Client.init(jwt.net.url, 'graphql-ws', { headers: { Authorization: `Bearer ${short}` } }).catch((e) => e as Error);
    // Expired by now (it lived 2 s): refused at init.
    expect(a).toBeInstanceOf(Error);
  });

  it('a token that does not verify: 4403 (graphql-transport-ws), connection_error + 4400 (graphql-ws); none at all: refused too', async () => {
    const bad = await token('1', 'another-hmac-key-of-at-least-thirty-two-bytes');
    const a = await Client.open(jwt.net.url, 'graphql-transport-ws');
    a.send({ type: 'connection_init', payload: { headers: { Authorization: `Bearer ${bad}` } } });
    expect(await a.closed).toEqual({ code: 4403, reason: 'Forbidden' });
    const b = await Client.open(jwt.net.url, 'graphql-ws');
    b.send({ type: 'connection_init', payload: { headers: { Authorization: `Bearer ${bad}` } } });
    expect(await b.next()).toEqual({ type: 'connection_error', payload: 'Could not verify JWT: JWSError JWSInvalidSignature' });
    expect((await b.closed).code).toBe(4400);
    const none = await Client.open(jwt.net.url, 'graphql-ws');
    none.send({ type: 'connection_init' });
    expect(await none.next()).toEqual({ type: 'connection_error', payload: 'Missing Authorization header in JWT authentication mode' });
  });
});

describe('webhook mode', () => {
  let hook: Server;
  let wh: { s: TestServer; net: Listening };
  beforeAll(async () => {
    hook = createServer((req, res) => {
      if (req.headers.authorization === 'Bearer good') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ 'X-Hasura-Role': 'user', 'X-Hasura-User-Id': '2' }));
      } else {
        res.writeHead(401);
        res.end();
      }
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
    wh = await serverWith({ authHook: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` });
  });
  afterAll(async () => {
    await wh.net.close();
    await wh.s.stop();
    await new Promise<void>((r) => hook.close(() => r()));
  });

  it('the hook gives the session; a hook that says no refuses the init', async () => {
    const c = await Client.init(wh.net.url, 'graphql-ws', { headers: { Authorization: 'Bearer good' } });
    c.send({ type: 'start', id: '1', payload: { query: ITEMS } });
    expect((await c.next('1')).payload).toEqual({ data: { item: [{ id: 2 }] } });
    c.close();
    const no = await Client.open(wh.net.url, 'graphql-transport-ws');
    no.send({ type: 'connection_init', payload: { headers: { Authorization: 'Bearer bad' } } });
    expect(await no.closed).toEqual({ code: 4403, reason: 'Forbidden' });
  });
});
