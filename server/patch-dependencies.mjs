#!/usr/bin/env node
/*
 * Note [postgres.js's pool queue]
 * postgres.js (3.4.9, the latest release on 2026-11-27) keeps its pool's connections in queues
 * (open, busy, full...) whose `shift` leaves a hole (`undefined`) at the head and moves an index,
 * the holes dropped only when a `shift` empties the queue. A query takes a connection by
 * `open.shift()` and then moves it to `busy` with `c.queue.remove(c)`, which is an `indexOf` over
 * `open`'s whole array, holes included, for a connection that is no longer there; back from
 * `busy`, the connection is pushed at the end. So while the pool has more connections open than
 * queries in flight, which is a server's ordinary state after any burst (FIFO use keeps every
 * connection alive, so none times out idle), `open` never empties: its array grows by one per
 * query, without end, and every query scans it. Measured with postgres.js alone (a pool of 10
 * opened by a burst, then 4 queries at a time, `select 1`, two-core machine, 2026-11-27): 40, 56,
 * 75, 94, 116, 141 µs of CPU per query after each 40,000 queries; the engine's profile on the
 * benchmark's four-field query spent 27 µs a request in `remove` after 12,000 requests. The
 * growth is CPU and memory for as long as the server runs.
 *
 * The fix is the queue's: the same four operations (`length`, `push`, `shift`, `remove`) over an
 * array whose dead head is cut off once it is half the array, so `shift` is amortised O(1) and
 * `remove` scans only the queued entries. This script writes it over postgres.js's three copies
 * of queue.js (ESM, CommonJS, Cloudflare) after `npm install`/`npm ci` (package.json
 * `postinstall`; the Dockerfile runs it after its `npm ci --ignore-scripts`), only where the file
 * is the one it knows (3.4.9's, by SHA-256) or already ours: a release that changed the file is
 * left as it is, with a warning, to be looked at again. test/postgres-queue.test.ts checks that
 * the installed copies are ours and that they behave as a queue.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const QUEUE = `// Written by svc-engine's server/patch-dependencies.mjs (Note [postgres.js's pool queue]):
// postgres.js's queue left a hole per shift and scanned the holes on every remove.
function Queue(initial = []) {
  let xs = initial.slice()
  let head = 0

  return {
    get length() {
      return xs.length - head
    },
    remove: (x) => {
      const i = xs.indexOf(x, head)
      return i === -1
        ? null
        : (xs.splice(i, 1), x)
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      if (head === xs.length)
        return undefined
      const out = xs[head]
      xs[head++] = undefined
      if (head === xs.length) {
        xs = []
        head = 0
      } else if (head * 2 >= xs.length) {
        xs = xs.slice(head)
        head = 0
      }
      return out
    }
  }
}
`;

/** postgres.js's own queue.js, per copy: SHA-256 of 3.4.9's. */
const COPIES = [
  { file: 'src/queue.js', known: '15e6345adb6708bf3b99ad39fc2231c2fb61de5f6cba4b7a7a6be881482a4ec3', text: `export default Queue\n\n${QUEUE}` },
  { file: 'cf/src/queue.js', known: '15e6345adb6708bf3b99ad39fc2231c2fb61de5f6cba4b7a7a6be881482a4ec3', text: `export default Queue\n\n${QUEUE}` },
  { file: 'cjs/src/queue.js', known: '7d20fa53a3930be070609d7912ecd14c347df3526805bca2f6cb7eb35d2e62cf', text: `module.exports = Queue\n\n${QUEUE}` },
];

/** Each copy of postgres.js's queue.js under `root`/node_modules: `ours` (patched), `known`
 * (3.4.9's, to patch), `other` (a file this script does not know) or `absent`. */
export function postgresQueueState(root) {
  const pkg = path.join(root, 'node_modules', 'postgres');
  return COPIES.map(({ file, known, text }) => {
    const at = path.join(pkg, file);
    if (!existsSync(at)) return { file, at, text, state: 'absent' };
    const now = readFileSync(at, 'utf8');
    const state = now === text ? 'ours' : createHash('sha256').update(now).digest('hex') === known ? 'known' : 'other';
    return { file, at, text, state };
  });
}

/** Patches the postgres.js installed under `root`/node_modules; returns what it did per copy. */
export function patchPostgresQueue(root) {
  return postgresQueueState(root).map(({ file, at, text, state }) => {
    if (state === 'known') writeFileSync(at, text);
    return `${file}: ${state === 'known' ? 'patched' : state === 'ours' ? 'already patched' : state === 'absent' ? 'absent' : "not the known 3.4.9 file, left as it is (see Note [postgres.js's pool queue])"}`;
  });
}

/*
 * Note [postgres.js's hosts tried in turn]
 * A pool to several hosts (`postgres://a,b/db`) tries the next host when a connection attempt
 * fails: postgres.js's `error` returns early while `options.host[retries + 1]` exists, and its
 * `closed` reconnects to the next. But `retries` there is never raised (it is only ever set to
 * 0), so host 1 always "exists": with every host down, or every one failing TLS's check, a query
 * waited for ever, through endless reconnects, and `pg_add_source` with it (2026-11-27: a pool
 * to 127.0.0.1:1,127.0.0.1:2 with connect_timeout 2 had not answered `select 1` after 60 s).
 * `prefer-standby` had the same loop when no host was a standby. And a host that did not answer
 * within connect_timeout failed the query at once, the other hosts untried. The fix: `retries`
 * counts the hosts tried since the query that started the connection (set to 0 when one does),
 * so the error reaches the query once each host has failed, as libpq reports it; prefer-standby
 * takes a primary when no other host is left to try; a connect timeout is a host's failure like
 * any other (`error`, not `errored`). And a pool given a `socket` function (the engine's sockets,
 * Note [Read buffers given back] in plugins/postgres/connection/pg-socket.ts) never moved on to the next
 * host: the function is now told which host to connect to (`options.socket(options, hostIndex)`)
 * and the index moves on as it does for postgres.js's own sockets. Six edits per copy of
 * connection.js (CONNECTION_EDITS, with those of Note [postgres.js's types query]), made only
 * where the file is 3.4.9's (by SHA-256), or where it starts with a mark of this script and lacks
 * a later edit (an install patched by an earlier version of it); the patched file starts with MARK.
 */
/*
 * Note [postgres.js's types query]
 * postgres.js's first statement on every new connection reads the database's array types
 * (`fetch_types`), and it let that statement go wrong in two ways when the connection closed
 * meanwhile (a server restarted, a replica stopped: test/read-replicas.test.ts met it under load):
 *   - its promise was dropped (`return fetchArrayTypes()` from a message handler), so its failure
 *     was an unhandled rejection (the server logs those; a test run counts them as errors);
 *   - a connection opened for `reserve()` (the engine's transactions, Note [Reserved connections]
 *     in plugins/postgres/connection/connection.ts) forgot the reservation before reading the
 *     types, counting on the pool's queue, which still held it, to hand the connection over once
 *     they were read. After a close the pool reconnects with the first queued query taken off the
 *     queue, so a reservation reconnected that way was forgotten for good: its request waited
 *     for ever (test/postgres-types-query.test.ts: no answer in 10 s).
 * The edits: the types query's failure is caught (it reaches the waiting query anyway: a close
 * reconnects with it, an error is reported to it); the reservation stays the connection's first
 * query through the types query, and is handed the connection when they are read, as a query is
 * run then; and `reserve()` queues its request only where it does not open a connection with it
 * (index.js), as the pool does with a query, so that no request is both.
 */
const MARK = "// Patched by svc-engine's server/patch-dependencies.mjs (Notes [postgres.js's hosts tried in turn], [postgres.js's types query]).\n";
/** What an earlier version of this script put first: such a copy gets the edits it lacks. */
const OLDER_MARKS = ["// Patched by svc-engine's server/patch-dependencies.mjs (Note [postgres.js's hosts tried in turn]).\n"];
const CONNECTION_EDITS = [
  ['    connect(query) {\n      initial = query\n      reconnect()', '    connect(query) {\n      initial = query\n      retries = 0\n      reconnect()'],
  ['if (connection.queue === queues.connecting && options.host[retries + 1])', 'if (connection.queue === queues.connecting && options.host[++retries])'],
  ["(x === 'prefer-standby' && xs.in_hot_standby === 'off' && options.host[retries])", "(x === 'prefer-standby' && xs.in_hot_standby === 'off' && options.host[retries + 1])"],
  ["    errored(Errors.connection('CONNECT_TIMEOUT', options, socket))\n    socket.destroy()", "    error(Errors.connection('CONNECT_TIMEOUT', options, socket))\n    socket.destroy()"],
  ['? (await Promise.resolve(options.socket(options)))', '? (await Promise.resolve(options.socket(options, hostIndex)))'],
  ['    if (options.socket)\n      return ssl ? secure() : connected()', '    if (options.socket) {\n      hostIndex = (hostIndex + 1) % port.length\n      return ssl ? secure() : connected()\n    }'],
  // Note [postgres.js's types query]
  ['      if (needsTypes) {\n        initial.reserve && (initial = null)\n        return fetchArrayTypes()\n      }', '      if (needsTypes)\n        return fetchArrayTypes().catch(() => { /* the first query has it */ })'],
  [
    '      initial && !initial.reserve && execute(initial)\n      options.shared.retries = retries = 0\n      initial = null\n      return',
    '      const first = initial\n      first.reserve || execute(first)\n      options.shared.retries = retries = 0\n      initial = null\n      first.reserve && first.reserve(connection)\n      return',
  ],
];
const CONNECTION_COPIES = [
  { file: 'src/connection.js', known: 'ee3a218d9aa6a6f2887c1a19da50009335fe84c11a5431d5cab72d6bc528632f' },
  { file: 'cf/src/connection.js', known: '3efad812b825f76708f2e62e8dd00088900206e04afed2dc4b75b9aecd435fa9' },
  { file: 'cjs/src/connection.js', known: 'ce6d375809baad79963ef9b3773e6ac757bcf6da2362d4d85482bb14c2c751be' },
];
const INDEX_MARK = "// Patched by svc-engine's server/patch-dependencies.mjs (Note [postgres.js's types query]).\n";
const INDEX_EDITS = [['        queries.push(query)\n        closed.length && connect(closed.shift(), query)', '        closed.length ? connect(closed.shift(), query) : queries.push(query)']];
const INDEX_COPIES = [
  { file: 'src/index.js', known: '4e21f5733e70d79cffc10d10d4ef01031de4a9ac862210e43f8870029fd103ed' },
  { file: 'cf/src/index.js', known: 'aca9c247b7ddb2aedf90d20ce8e6f52ac6ebd95865056599ca05ed4dab4baad7' },
  { file: 'cjs/src/index.js', known: 'd8fea1a5311c47e65004646bc81f57305ac64d48f99004a5b3ca27bcfc6babf8' },
];

/** Each copy of a file edited in place under `root`/node_modules/postgres: `ours` (every edit
 * made), `older` (patched by an earlier version of this script), `known` (3.4.9's, to patch),
 * `other` (a file this script does not know) or `absent`. */
function editedState(root, { mark, older = [], edits, copies }) {
  const pkg = path.join(root, 'node_modules', 'postgres');
  return copies.map(({ file, known }) => {
    const at = path.join(pkg, file);
    if (!existsSync(at)) return { file, at, state: 'absent' };
    const now = readFileSync(at, 'utf8');
    const state = [mark, ...older].some((m) => now.startsWith(m))
      ? now.startsWith(mark) && edits.every(([, to]) => now.includes(to)) ? 'ours' : 'older'
      : createHash('sha256').update(now).digest('hex') === known ? 'known' : 'other';
    return { file, at, state };
  });
}

/** Makes each edit not made yet, its text found exactly once, in each copy it may edit. */
function editCopies(root, spec, note) {
  return editedState(root, spec).map(({ file, at, state }) => {
    if (state === 'known' || state === 'older') {
      let text = readFileSync(at, 'utf8');
      const had = [spec.mark, ...(spec.older ?? [])].find((m) => text.startsWith(m));
      if (had) text = text.slice(had.length);
      for (const [from, to] of spec.edits) {
        if (text.includes(to)) continue;
        if (text.split(from).length !== 2) return `${file}: an edit's text is not there once, left as it is (see ${note})`;
        text = text.replace(from, to);
      }
      writeFileSync(at, spec.mark + text);
    }
    const did = { known: 'patched', older: 'patched (the edits an earlier patch lacked)', ours: 'already patched', absent: 'absent' };
    return `${file}: ${did[state] ?? `not the known 3.4.9 file, left as it is (see ${note})`}`;
  });
}

const CONNECTION = { mark: MARK, older: OLDER_MARKS, edits: CONNECTION_EDITS, copies: CONNECTION_COPIES };
const INDEX = { mark: INDEX_MARK, edits: INDEX_EDITS, copies: INDEX_COPIES };

/** Each copy of postgres.js's connection.js under `root`/node_modules, as postgresQueueState. */
export function postgresConnectionState(root) {
  return editedState(root, CONNECTION);
}

/** Each copy of postgres.js's index.js under `root`/node_modules, as postgresQueueState. */
export function postgresIndexState(root) {
  return editedState(root, INDEX);
}

/** Edits the copies of connection.js (Notes [postgres.js's hosts tried in turn], [postgres.js's
 * types query]). */
export function patchPostgresConnection(root) {
  return editCopies(root, CONNECTION, "Notes [postgres.js's hosts tried in turn], [postgres.js's types query]");
}

/** Edits the copies of index.js (Note [postgres.js's types query]). */
export function patchPostgresIndex(root) {
  return editCopies(root, INDEX, "Note [postgres.js's types query]");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  for (const line of [...patchPostgresQueue(root), ...patchPostgresConnection(root), ...patchPostgresIndex(root)]) {
    if (line.includes('left as it is')) console.warn(`svc: postgres.js ${line}`);
  }
}
