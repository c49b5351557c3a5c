/**
 * Request limits (Note [Request limits] in lib/http/body.ts) and values the metadata API
 * must refuse: each malformed request of the hardening review answers a 400 in the SPEC's shape
 * naming what is wrong (never a 500), and leaves the metadata as it was.
 */
import net from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, useServer, type HttpResult } from './helpers.js';

const s = useServer(`
  create table author (id serial primary key, name text);
  create table article (id serial primary key, title text, author_id int references author(id));
`);

let before: unknown;
beforeAll(async () => {
  for (const table of ['author', 'article']) expect((await s.metadata({ type: 'pg_track_table', args: { table } })).status).toBe(200);
  const rel = { type: 'pg_create_object_relationship', args: { table: 'article', name: 'author', using: { foreign_key_constraint_on: 'author_id' } } };
  expect((await s.metadata(rel)).status).toBe(200);
});

const exported = async () => (await s.metadata({ type: 'export_metadata', version: 2, args: {} })).body;
beforeEach(async () => {
  before = await exported();
});
afterEach(async () => {
  // Every request of this file is refused: none may change the metadata or its resource_version.
  expect(await exported()).toEqual(before);
});

/** JSON text of `leaf` wrapped `depth` times (as text: JSON.stringify itself overflows the stack on
 * the deepest of these). */
function nest(depth: number, leaf: unknown, open: string, close: string): Raw {
  return new Raw(open.repeat(depth) + JSON.stringify(leaf) + close.repeat(depth));
}
class Raw {
  constructor(readonly text: string) {}
}
/** A request body as text, with Raw parts spliced in. */
function body(x: unknown): string {
  const parts: string[] = [];
  const text = JSON.stringify(x, (_k, val) => (val instanceof Raw ? `\u0001${parts.push(val.text) - 1}\u0001` : val));
  return text.replace(/"\\u0001(\d+)\\u0001"/g, (_m, i) => parts[Number(i)]!);
}
const selectPermission = (filter: unknown, extra: Record<string, unknown> = {}) =>
  body({ type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id'], filter, ...extra } } });
function expect400(r: HttpResult, code: string, error: RegExp, path?: string) {
  expect(r.status, r.text.slice(0, 300)).toBe(400);
  expect(r.body).toMatchObject({ code });
  expect(r.body.error).toMatch(error);
  if (path !== undefined) expect(r.body.path).toBe(path);
}
const DEPTH = /nested deeper than the limit of 100 levels \(--max-json-depth\)/;
const LIST = /has \d+ items, more than the limit of 100000 \(--max-list-length\)/;

describe('limits: nesting depth, list length, text', () => {
  it('a 10,000-deep _and, _not or relationship path in a permission filter', async () => {
    expect400(await s.metadata(selectPermission(nest(10_000, { id: { _eq: 1 } }, '{"_and":[', ']}'))), 'bad-request', DEPTH);
    expect400(await s.metadata(selectPermission(nest(10_000, { id: { _eq: 1 } }, '{"_not":', '}'))), 'bad-request', DEPTH);
    expect400(await s.metadata(selectPermission(nest(10_000, { id: { _eq: 1 } }, '{"author":', '}'))), 'bad-request', DEPTH);
  });

  it('names where the limit was crossed', async () => {
    const r = await s.metadata(selectPermission(nest(200, 1, '{"_not":', '}')));
    expect400(r, 'bad-request', DEPTH);
    expect(r.body.path).toMatch(/^\$\.args\.permission\.filter(\._not){95,}$/);
  });

  it('deep arrays as _eq or set values', async () => {
    expect400(await s.metadata(selectPermission({ id: { _eq: nest(5000, 1, '[', ']') } })), 'bad-request', DEPTH);
    const insert = body({ type: 'pg_create_insert_permission', args: { table: 'article', role: 'user', permission: { check: {}, columns: ['id'], set: { title: nest(5000, 'x', '[', ']') } } } });
    expect400(await s.metadata(insert), 'bad-request', DEPTH);
  });

  it('bulk nested 3,000 deep, and a deep array as replace_metadata version', async () => {
    const leaf = { type: 'export_metadata', args: {} };
    expect400(await s.metadata(nest(3000, leaf, '{"type":"bulk","args":[', ']}').text), 'bad-request', DEPTH);
    expect400(await s.query(nest(3000, leaf, '{"type":"bulk","args":[', ']}').text), 'bad-request', DEPTH);
    expect400(await s.metadata(body({ type: 'replace_metadata', args: { version: nest(10_000, 3, '[', ']'), sources: [] } })), 'bad-request', DEPTH);
  });

  it('a 200,000-item _or and a replace_metadata with 150,000 tables', async () => {
    const or = Array.from({ length: 200_000 }, (_, i) => ({ id: { _eq: i } }));
    expect400(await s.metadata(selectPermission({ _or: or })), 'bad-request', LIST, '$.args.permission.filter._or');
    const tables = Array.from({ length: 150_000 }, (_, i) => ({ table: { schema: 'public', name: `t${i}` } }));
    const doc = { version: 3, sources: [{ name: 'default', kind: 'postgres', tables, configuration: (before as any).metadata.sources[0].configuration }] };
    expect400(await s.metadata({ type: 'replace_metadata', args: doc }), 'bad-request', LIST, '$.args.sources[0].tables');
  }, 60_000);

  it('lists and depths within the limits are served', async () => {
    const or = Array.from({ length: 20_000 }, (_, i) => ({ id: { _eq: i } }));
    const r = await s.metadata(selectPermission({ _or: or }));
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    const deep = await s.metadata(body({ type: 'pg_create_select_permission', args: { table: 'author', role: 'user', permission: { columns: ['id'], filter: nest(45, { id: { _eq: 1 } }, '{"_and":[', ']}') } } }));
    expect(deep.status, deep.text.slice(0, 300)).toBe(200);
    // Put the metadata back for afterEach.
    const rv = (await exported()).resource_version;
    expect((await s.metadata({ type: 'replace_metadata', version: 2, resource_version: rv, args: { metadata: (before as any).metadata } })).status).toBe(200);
    before = await exported();
  }, 60_000);

  it('NUL characters and unpaired surrogates in keys or values', async () => {
    expect400(await s.metadata(selectPermission({ 'id\u0000': { _eq: 1 } })), 'bad-request', /NUL character/, '$.args.permission.filter');
    expect400(await s.metadata(selectPermission({ id: { _eq: 'a\u0000b' } })), 'bad-request', /NUL character/, '$.args.permission.filter.id._eq');
    expect400(await s.request('POST', '/v1/metadata', '{"type":"pg_track_table","args":{"table":"a\\ud800"}}'), 'bad-request', /unpaired UTF-16 surrogate/, '$.args.table');
    expect400(await s.query({ type: 'run_sql', args: { sql: 'select 1\u0000' } }), 'bad-request', /NUL character/, '$.args.sql');
  });

  it('__proto__ as a key anywhere', async () => {
    const body = '{"type":"pg_set_table_customization","args":{"table":"author","configuration":{"custom_column_names":{"__proto__":"x"}}}}';
    expect400(await s.request('POST', '/v1/metadata', body), 'bad-request', /"__proto__" is not allowed as a key/, '$.args.configuration.custom_column_names');
  });

  it('GraphQL requests have the same limits, answered in the GraphQL error shape', async () => {
    const r = await s.request('POST', '/v1/graphql', body({ query: '{ __typename }', variables: { x: nest(5000, 1, '[', ']') } }));
    expect(r.status).toBe(200);
    expect(r.body.errors[0].extensions.code).toBe('bad-request');
    expect(r.body.errors[0].message).toMatch(DEPTH);
  });
});

describe('limits: body size, configured', () => {
  let t: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    t = await startServer({ config: { maxRequestBodySize: 100_000, maxJsonDepth: 8, maxListLength: 10 } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('refuses a body over the limit, with or without a content-length', async () => {
    const big = JSON.stringify({ type: 'run_sql', args: { sql: `select '${'x'.repeat(200_000)}'` } });
    const r = await t.request('POST', '/v1/query', big);
    expect400(r, 'bad-request', /request body is larger than the limit of 100000 bytes \(--max-request-body-size\)/, '$');
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const res = await t.app.request('/v1/query', { method: 'POST', body: chunked, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/larger than the limit of 100000 bytes/);
  });

  it('uses the configured depth and list limits', async () => {
    expect400(await t.metadata(body({ type: 'export_metadata', args: { a: nest(8, 1, '[', ']') } })), 'bad-request', /deeper than the limit of 8 levels/);
    expect400(await t.metadata({ type: 'export_metadata', args: { a: Array(11).fill(1) } }), 'bad-request', /has 11 items, more than the limit of 10/);
    expect((await t.metadata({ type: 'export_metadata', args: {} })).status).toBe(200);
  });
});

describe('requests read from the Node request (lib/http/node-request.ts, body.ts readBodyText)', () => {
  // As server/main.ts serves the app: the body and the session's headers come from the Node
  // request, beneath hono's or, for POST /v1/graphql, without hono (Note [Routes served from
  // Node's request] in core/types.ts); app.request in the other tests has none.
  let server: ServerType;
  let port: number;
  beforeAll(async () => {
    await new Promise<void>((resolve) => {
      server = serve({ fetch: s.app.fetch, port: 0, hostname: '127.0.0.1', ...s.serveOptions }, (info) => {
        port = info.port;
        resolve();
      });
    });
    await s.runSql("insert into author (name) values ('Ann')");
    const perm = { type: 'pg_create_select_permission', args: { table: 'author', role: 'reader', permission: { columns: ['name'], filter: { id: { _eq: 'X-Svc-Author-Id' } } } } };
    expect((await s.metadata(perm)).status).toBe(200);
    before = await exported();
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
  });

  /** Sends `parts` over one raw connection, `gapMs` apart, then waits for the answer (`wait`) or
   * closes it at once; the whole answer, or '' if none came. */
  function raw(parts: (string | Buffer)[], gapMs = 20, wait = true): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const sock = net.connect(port, '127.0.0.1', async () => {
        for (const p of parts) {
          sock.write(p);
          await new Promise((r) => setTimeout(r, gapMs));
        }
        // The server closes the connection after its answer (Connection: close).
        if (!wait) sock.destroy();
      });
      sock.on('data', (d) => chunks.push(d));
      sock.on('error', reject);
      sock.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  }
  const head = (length: number, headers = '') => `POST /v1/graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n${headers}Content-Length: ${length}\r\n\r\n`;

  it('a body sent in many pieces, one character split across two of them, is read whole', async () => {
    const text = JSON.stringify({ query: 'query ($n: String) { author { name } e: __typename @include(if: true) }', variables: { n: 'é€😀' } });
    const bytes = Buffer.from(text, 'utf8');
    const cut = bytes.indexOf(0xf0) + 2; // inside the four bytes of 😀
    const answer = await raw([head(bytes.length), bytes.subarray(0, 10), bytes.subarray(10, cut), bytes.subarray(cut)]);
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    expect(answer).toContain('{"data":{"author":[{"name":"Ann"}]');
  });

  it("the session's headers: names in any case, values trimmed, a repeated one joined", async () => {
    const body = JSON.stringify({ query: '{ author { name } }' });
    const as = async (headers: string) => (await raw([head(Buffer.byteLength(body), headers), body])).split('\r\n\r\n')[1];
    expect(await as('X-SVC-ROLE:  reader \r\nx-svc-author-id: 1\r\n')).toBe('{"data":{"author":[{"name":"Ann"}]}}');
    expect(await as('x-svc-role: reader\r\nX-Svc-Author-Id: 2\r\n')).toBe('{"data":{"author":[]}}');
    // Two values of one variable are joined with ", " (as web Headers join them): not an integer.
    expect(await as('x-svc-role: reader\r\nx-svc-author-id: 1\r\nX-Svc-Author-Id: 1\r\n')).toMatch(/"errors":\[\{"message":"[^"]*invalid input syntax for type integer/);
  });

  it('invalid UTF-8 in a body is refused, and a client gone before its declared length harms no other request', async () => {
    const bad = Buffer.concat([Buffer.from('{"query":"{ __typename }","x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const answer = await raw([head(bad.length), bad]);
    expect(answer).toMatch(/^HTTP\/1.1 200/);
    expect(answer).toMatch(/not valid UTF-8/);
    // Half a body, then the connection closed: no answer can go out, and the server goes on.
    expect(await raw([head(1000), '{"query":"{ __typ'], 20, false)).toBe('');
    expect(await raw([head(26), '{"query":"{ __typename }"}'])).toContain('{"data":{"__typename":"query_root"}}');
  });
});

describe('values refused at the metadata API', () => {
  const track = (configuration: unknown) => s.metadata({ type: 'pg_set_table_customization', args: { table: 'author', configuration } });

  it('custom_root_fields entries that are lists or objects without a name', async () => {
    expect400(await track({ custom_root_fields: { select: ['x'] } }), 'parse-failed', /parsing CustomRootField failed, expected Object, String or Null, but encountered Array/, '$.args.configuration.custom_root_fields.select');
    expect400(await track({ custom_root_fields: { select: { nmae: 'x' } } }), 'parse-failed', /unexpected key "nmae"/, '$.args.configuration.custom_root_fields.select');
    expect400(await track({ custom_root_fields: { select: {} } }), 'parse-failed', /expected "name" or "comment"/, '$.args.configuration.custom_root_fields.select');
  });

  it('objects given as arrays', async () => {
    expect400(await track([]), 'parse-failed', /parsing Object failed, expected Object, but encountered Array/, '$.args.configuration');
    expect400(await s.metadata({ type: 'pg_track_table', args: { table: 'author', configuration: [] } }), 'parse-failed', /expected Object, but encountered Array/);
    expect400(await track({ custom_column_names: ['x'] }), 'parse-failed', /expected Object, but encountered Array/);
  });

  it('relationship names that are not GraphQL names, and empty column mappings', async () => {
    const rel = (name: string, using: unknown) => s.metadata({ type: 'pg_create_array_relationship', args: { table: 'author', name, using } });
    const fk = { foreign_key_constraint_on: { table: 'article', column: 'author_id' } };
    expect400(await rel('my articles', fk), 'parse-failed', /my articles is not valid GraphQL name/, '$.args.name');
    expect400(await rel('1st', fk), 'parse-failed', /1st is not valid GraphQL name/, '$.args.name');
    expect400(await rel('articles', { manual_configuration: { remote_table: 'article', column_mapping: {} } }), 'parse-failed', /column_mapping must not be empty/);
  });

  it('a permission limit that is not a non-negative 32-bit integer', async () => {
    // (-1 is refused with Hasura's 'unexpected negative value': permissions.test.ts.)
    for (const limit of [1.5, 2 ** 31, '10']) {
      expect400(await s.metadata(selectPermission({}, { limit })), 'parse-failed', /limit|Int|Number/, '$.args.permission.limit');
    }
  });

  it('role names, names and comments of megabytes', async () => {
    const mb = 'r'.repeat(1 << 20);
    expect400(await s.metadata({ type: 'pg_create_select_permission', args: { table: 'article', role: mb, permission: { columns: ['id'], filter: {} } } }), 'parse-failed', /longer than the limit of 1024 characters/, '$.args.role');
    expect400(await s.metadata({ type: 'pg_create_select_permission', args: { table: 'article', role: 'user', permission: { columns: ['id'], filter: {} }, comment: mb } }), 'parse-failed', /longer than the limit of 65536 characters/, '$.args.comment');
    expect400(await s.metadata({ type: 'pg_set_relationship_comment', args: { table: 'article', name: 'author', comment: mb } }), 'parse-failed', /longer than the limit of 65536/);
    expect400(await s.metadata({ type: 'pg_add_source', args: { name: mb, configuration: { connection_info: { database_url: 'postgres://x@localhost/x' } } } }), 'parse-failed', /longer than the limit of 1024/);
  });

  it('resource_version on an item inside bulk is honoured for the whole bulk', async () => {
    const rv = (before as any).resource_version;
    const r = await s.metadata({
      type: 'bulk',
      args: [
        { type: 'pg_create_select_permission', args: { table: 'author', role: 'bulk_role', permission: { columns: ['id'], filter: {} } } },
        { type: 'pg_create_select_permission', resource_version: rv - 1, args: { table: 'article', role: 'bulk_role', permission: { columns: ['id'], filter: {} } } },
      ],
    });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ code: 'conflict', path: '$.args[1]' });
    // The current version lets it through.
    const ok = await s.metadata({ type: 'bulk', args: [{ type: 'pg_create_select_permission', resource_version: rv, args: { table: 'author', role: 'bulk_role', permission: { columns: ['id'], filter: {} } } }] });
    expect(ok.status, ok.text).toBe(200);
    const put = await s.metadata({ type: 'replace_metadata', version: 2, resource_version: rv + 1, args: { metadata: (before as any).metadata } });
    expect(put.status).toBe(200);
    before = await exported();
  });
});
