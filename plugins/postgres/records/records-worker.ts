/**
 * A worker thread of the records pool (Note [Records written off the main thread] in
 * ./records-pool.ts): writes each list it is sent, from its lane into its lane (or, for a list
 * sent as a copy or JSON that outgrows the lane, into a buffer of its own, transferred back).
 */
import { parentPort } from 'node:worker_threads';
import { recordsWriterAtOnce, type RecordRow } from './records.js';
import type { RecordsAnswer, RecordsTask } from './records-pool.js';

/** The writers generated here, by the row's shape; the oldest dropped past WRITERS_MAX. */
const writers = new Map<string, (text: Uint8Array, into?: Buffer) => Uint8Array>();
const WRITERS_MAX = 1000;

parentPort!.on('message', (task: RecordsTask) => {
  const { id, shape } = task;
  let answer: RecordsAnswer;
  let transfer: ArrayBuffer[] = [];
  try {
    let write = writers.get(shape);
    if (!write) {
      if (writers.size >= WRITERS_MAX) writers.delete(writers.keys().next().value!);
      writers.set(shape, (write = recordsWriterAtOnce(JSON.parse(shape) as RecordRow)));
    }
    // From the lane's text into its JSON (into a buffer of its own if it outgrows it), or from
    // the text sent.
    const lane = 'lane' in task ? task.lane : undefined;
    let json = 'lane' in task ? write(new Uint8Array(task.lane.text, 0, task.length), Buffer.from(task.lane.json)) : write(task.text);
    if (lane && json.buffer === lane.json) answer = { id, length: json.length };
    else {
      // Its own buffer, never Node's shared pool of small buffers (which a transfer would take
      // away): a large list's JSON always has one, this is a guard.
      if (json.buffer.byteLength <= Buffer.poolSize) json = json.slice();
      answer = { id, json };
      transfer = [json.buffer as ArrayBuffer];
    }
  } catch (e) {
    answer = { id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(answer, transfer);
});
