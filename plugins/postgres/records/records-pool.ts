/**
 * Worker threads that write large lists' JSON from their records (Note [Records written off the
 * main thread]).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { lendAnswer } from '../../../core/schema/contract.js';
import { IdleList } from '../connection/idle.js';

/*
 * Note [Records written off the main thread]
 * The engine answers every request on one thread, and a list of thousands of rows costs that
 * thread its records writer (Note [Lists as records] in ./records.ts): about 0.8 ms for the
 * bench's 3,503 tracks on the two-core machine, where a byte loop cannot go much faster. So a
 * large list's JSON is written by a worker thread: the main thread copies the records' text into
 * a buffer it hands over, and gets the JSON back in the buffer the worker wrote it into (both
 * transferred, never copied again). A text under OFFLOAD_MIN is written in place: its writer
 * costs less than the hand-over (45-75 µs of the main thread for the bench's large list, the
 * writer alone in a loop). On the bench's large query (two-core machine, 2026-11-27, 150 req/s,
 * two rounds each way, `.prof`-style harness reading /proc per thread): the main thread spent
 * 1,411-1,559 µs per request without workers and 644-799 with one; the whole process 1,983-2,197
 * and 2,409-2,757 (the copy in, and the worker's own collector). So it is a trade: more CPU in
 * all, on other cores, for a main thread that answers more such requests and is not held up by
 * them; where the engine has a single core, set SVC_GRAPHQL_RECORDS_WORKERS=0. At 8 KiB the
 * bench's nested list (11 KB of records) went to a worker too: its main thread 30-60 µs less
 * per request, the process 100-170 µs more (same machine and day, two rounds): not kept.
 *
 * A list goes to its worker through a lane (`Lane`): a pair of SharedArrayBuffers, its text
 * copied into one, its JSON written into the other and lent from there (Note [Lent answer bytes]
 * in core/schema/contract.ts); the lane is used again once the answer is given back. A list
 * copied into a fresh buffer and its JSON transferred back cost the main thread memory outside
 * V8's heap per list (the bench's large list: 330 KB in, 700 KB back), which V8 counts toward a
 * mark-compact: `npm run bench:gc -- --only large --rate 150` (two-core machine, one worker,
 * 2026-11-27, log bench/results/2026-11-27-bench-gc-2core-large-lanes.log) ran 33-38
 * mark-compacts per 10 s run with copies and 17-20 with lanes, the main thread 731-853 -> 644-777
 * µs per request, the other threads 1,827-2,091 -> 1,235-1,459. A text over LANE_TEXT_MAX, and the
 * JSON of one that outgrows its lane, still go as copies; a lane whose answer is never given back
 * (a batch, a subscription) is the collector's, like any buffer; one whose worker failed is
 * dropped with it.
 *
 * The workers are started on the first large list, as many as SVC_GRAPHQL_RECORDS_WORKERS says
 * (by default one less than the machine's cores, at most four; 0: none, everything written on
 * the main thread), each list to the one with the fewest in hand. A worker keeps the writers it
 * generated, by the row's shape. A worker that fails (it could not be made or start, or it
 * exited) takes no more lists, and what it had in hand is written on the main thread; another is
 * started in its place, up to twice the configured number in all, after which every list is
 * written on the main thread: a broken pool costs speed, never an answer. Only a worker with a
 * list in hand keeps the process alive.
 */

/** Records' text from which a list is written by a worker (Note [Records written off the main thread]). */
export const OFFLOAD_MIN = 64 << 10;

/**
 * A pair of shared buffers a list is handed to a worker through (Note [Records written off the
 * main thread]): its text copied into `text`, its JSON written into `json` and lent from there
 * (Note [Lent answer bytes] in core/schema/contract.ts), the lane kept for the next list once the
 * answer is given back. Nothing per list is then allocated outside V8's heap on the main thread.
 */
interface Lane {
  text: SharedArrayBuffer;
  json: SharedArrayBuffer;
}

interface Job {
  resolve(json: Uint8Array): void;
  reject(e: Error): void;
  /** The same list written on the main thread, if the worker fails. */
  inline(): Uint8Array | Promise<Uint8Array>;
  worker: PoolWorker;
  lane: Lane | undefined;
}

interface PoolWorker {
  thread: Worker;
  inHand: number;
  /** It could not start, or exited: out of the pool, its lists left to the main thread. */
  failed: boolean;
  /** Beyond the configured number: it finishes what it has in hand, then stops. */
  retired: boolean;
}

/** What the main thread sends a worker (the text itself, or its length in a lane), and what it
 * answers (the JSON transferred, or its length in the lane's `json`). */
export type RecordsTask = { id: number; shape: string; text: Uint8Array } | { id: number; shape: string; lane: Lane; length: number };
export type RecordsAnswer = { id: number; json: Uint8Array } | { id: number; length: number } | { id: number; error: string };

/** Lanes whose answers were given back, at most 48 MiB of them; a text over LANE_TEXT_MAX is sent
 * as a copy, as is the JSON of one that outgrows its lane. */
const idleLanes = new IdleList<Lane>((l) => l.text.byteLength + l.json.byteLength, 48 << 20);
const LANE_TEXT_MAX = 4 << 20;
/** A lane's JSON room per byte of text: the bench's large list writes 2.1 bytes of JSON per byte
 * of records; more is written into a buffer of the worker's own, transferred. */
const LANE_JSON_PER_TEXT = 4;

/** An idle lane that takes `n` bytes of text, or a new one (a power of two, 64 KiB at least). */
function takeLane(n: number): Lane | undefined {
  if (n > LANE_TEXT_MAX) return undefined;
  const idle = idleLanes.take((l) => l.text.byteLength >= n);
  if (idle) {
    recordsPoolCounts.lanesReused++;
    return idle;
  }
  let size = 64 << 10;
  while (size < n) size *= 2;
  recordsPoolCounts.lanesMade++;
  return { text: new SharedArrayBuffer(size), json: new SharedArrayBuffer(size * LANE_JSON_PER_TEXT) };
}

let size: number | undefined;
let workers: PoolWorker[] = [];
const jobs = new Map<number, Job>();
let nextId = 0;
const shapes = new WeakMap<object, string>();
/** Lists written by workers, and lists a failed worker left to the main thread (tests read them). */
export const recordsPoolCounts = { written: 0, fellBack: 0, started: 0, startFailures: 0, lanesMade: 0, lanesReused: 0 };
/** Workers started (or tried) since the pool was last set or stopped: at most twice the number
 * configured, so that workers that keep failing are not started forever. */
let starts = 0;

/** The number of workers (SVC_GRAPHQL_RECORDS_WORKERS); undefined: the default. Workers started
 * beyond it stop once they have nothing in hand. */
export function setRecordsWorkers(n: number | undefined): void {
  size = n;
  const keep = workerCount();
  for (const w of workers.slice(keep)) {
    w.retired = true;
    if (w.inHand === 0) void w.thread.terminate();
  }
  workers = workers.slice(0, keep);
  starts = workers.length;
}

/** Stops every worker; what they have in hand is written on the main thread. The next large list
 * starts a worker again. */
export async function stopRecordsWorkers(): Promise<void> {
  const all = workers;
  workers = [];
  starts = 0;
  await Promise.all(all.map((w) => w.thread.terminate()));
}

function workerCount(): number {
  return size ?? Math.max(0, Math.min(4, availableParallelism() - 1));
}

/** The worker's module: compiled JavaScript beside this one, or, run from the TypeScript sources
 * (tests, tsx), the TypeScript through tsx's loader, registered in the worker first (a loader
 * given as a node flag does not load a worker's own module). */
function start(): PoolWorker {
  const here = import.meta.url;
  const thread = here.endsWith('.ts')
    ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./records-worker.ts', here).href)}); })`, { eval: true })
    : new Worker(new URL('./records-worker.js', here));
  const w: PoolWorker = { thread, inHand: 0, failed: false, retired: false };
  recordsPoolCounts.started++;
  // Only a worker with a list in hand keeps the process alive.
  thread.unref();
  thread.on('message', (m: RecordsAnswer) => {
    const job = jobs.get(m.id);
    if (!job) return;
    jobs.delete(m.id);
    if (--w.inHand === 0) {
      thread.unref();
      if (w.retired) void thread.terminate();
    }
    const lane = job.lane;
    if ('length' in m) {
      // In the lane: lent from there, the lane kept for another list once given back.
      recordsPoolCounts.written++;
      job.resolve(lendAnswer(Buffer.from(lane!.json, 0, m.length), () => idleLanes.keep(lane!)));
      return;
    }
    if (lane) idleLanes.keep(lane);
    if ('json' in m) {
      recordsPoolCounts.written++;
      job.resolve(Buffer.from(m.json.buffer, m.json.byteOffset, m.json.byteLength));
    } else job.reject(new Error(m.error));
  });
  const fail = () => {
    if (w.failed && w.inHand === 0) return;
    w.failed = true;
    // Out of the pool: the lists after go to the others, or to a worker started in its place.
    workers = workers.filter((x) => x !== w);
    for (const [id, job] of jobs) {
      if (job.worker !== w) continue;
      jobs.delete(id);
      recordsPoolCounts.fellBack++;
      try {
        Promise.resolve(job.inline()).then(job.resolve, job.reject);
      } catch (e) {
        job.reject(e as Error);
      }
    }
    w.inHand = 0;
  };
  thread.on('error', fail);
  thread.on('exit', fail);
  return w;
}

/**
 * The list's JSON written by a worker, or undefined when there is none to write it (no workers
 * configured, or every one failed): the caller writes it. `inline` writes it on the main thread,
 * should the worker fail meanwhile.
 */
export function writeByWorker(row: object, text: Uint8Array, inline: () => Uint8Array | Promise<Uint8Array>): Promise<Uint8Array> | undefined {
  const count = workerCount();
  if (count === 0) return undefined;
  let best: PoolWorker | undefined;
  for (const w of workers) if (!best || w.inHand < best.inHand) best = w;
  // One more worker while there is room and every one has a list in hand.
  if ((!best || best.inHand > 0) && workers.length < count && starts < count * 2) {
    starts++;
    try {
      const fresh = start();
      workers.push(fresh);
      best = fresh;
    } catch {
      // A worker that cannot even be made (out of threads or memory): the main thread writes.
      recordsPoolCounts.startFailures++;
    }
  }
  if (!best) return undefined;
  let shape = shapes.get(row);
  if (shape === undefined) shapes.set(row, (shape = JSON.stringify(row)));
  const id = nextId++;
  const w = best;
  if (w.inHand++ === 0) w.thread.ref();
  const lane = takeLane(text.length);
  return new Promise<Uint8Array>((resolve, reject) => {
    // A lane of a worker that fails is dropped with it (it may have been writing into it).
    jobs.set(id, { resolve, reject, inline, worker: w, lane });
    if (lane) {
      new Uint8Array(lane.text).set(text);
      w.thread.postMessage({ id, shape, lane, length: text.length } satisfies RecordsTask);
    } else {
      const copy = new Uint8Array(text.length);
      copy.set(text);
      w.thread.postMessage({ id, shape, text: copy } satisfies RecordsTask, [copy.buffer]);
    }
  });
}
