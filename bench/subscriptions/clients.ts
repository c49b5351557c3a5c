/**
 * The subscribers of bench/subscriptions (run.ts forks this, so that the clients' work is not the
 * engine's): BENCH_SUBSCRIBERS live subscriptions over graphql-transport-ws, BENCH_PER_SOCKET to
 * a socket, subscriber k on customer (k mod BENCH_CUSTOMERS) + 1. It records when each
 * subscription last got a message (process.hrtime, the machine's monotonic clock, which run.ts
 * reads too) and answers run.ts over IPC:
 *   {type: 'expect', customer, since} -> {type: 'arrived', times: [ns after since, per subscriber]}
 *     once every subscriber of that customer got a message after `since` (or after 15 s: null
 *     for those that did not);
 *   {type: 'count'} -> {type: 'count', messages} (every message since the start, keep-alives apart).
 * It sends {type: 'ready', ms} when every subscription had its first result.
 */
import WebSocket from 'ws';

const url = process.env.BENCH_URL!;
const total = Number(process.env.BENCH_SUBSCRIBERS);
const perSocket = Number(process.env.BENCH_PER_SOCKET);
const customers = Number(process.env.BENCH_CUSTOMERS);
const QUERY = 'subscription ($c: Int!) { invoices(where: {customer_id: {_eq: $c}}, order_by: {id: asc}) { id invoice_date total } }';

interface Sub {
  customer: number;
  last: bigint;
  count: number;
}

const subs: Sub[] = [];
let messages = 0;
let firsts = 0;
const waiting: (() => void)[] = [];
const notify = () => {
  for (const w of waiting.splice(0)) w();
};

function connect(first: number, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    ws.on('close', (code, reason) => {
      if (code !== 1000) console.error(`clients: a socket closed: ${code} ${reason}`);
    });
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as { type: string; id?: string; payload?: unknown };
      if (m.type === 'connection_ack') {
        for (let k = first; k < first + n; k++) ws.send(JSON.stringify({ type: 'subscribe', id: String(k), payload: { query: QUERY, variables: { c: subs[k]!.customer } } }));
        resolve();
        return;
      }
      if (m.type === 'ping') {
        ws.send('{"type":"pong"}');
        return;
      }
      if (m.type !== 'next') {
        console.error(`clients: unexpected ${data.toString().slice(0, 300)}`);
        return;
      }
      const s = subs[Number(m.id)]!;
      s.last = process.hrtime.bigint();
      if (s.count++ === 0) firsts++;
      messages++;
      notify();
    });
  });
}

async function main() {
  for (let k = 0; k < total; k++) subs.push({ customer: (k % customers) + 1, last: 0n, count: 0 });
  const started = Date.now();
  const sockets: [number, number][] = [];
  for (let k = 0; k < total; k += perSocket) sockets.push([k, Math.min(perSocket, total - k)]);
  // A few hundred connections at a time.
  for (let i = 0; i < sockets.length; i += 200) await Promise.all(sockets.slice(i, i + 200).map(([f, n]) => connect(f, n)));
  while (firsts < total) await new Promise<void>((r) => waiting.push(r));
  process.send!({ type: 'ready', ms: Date.now() - started });
}

process.on('message', (m: { type: string; customer?: number; since?: string }) => {
  if (m.type === 'count') {
    process.send!({ type: 'count', messages });
    return;
  }
  if (m.type === 'expect') {
    const since = BigInt(m.since!);
    const mine = subs.filter((s) => s.customer === m.customer);
    const done = () => mine.every((s) => s.last > since);
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      process.send!({ type: 'arrived', times: mine.map((s) => (s.last > since ? Number(s.last - since) : null)) });
    };
    if (done()) return answer();
    const deadline = setTimeout(() => answer(), 15_000);
    const check = () => {
      if (answered) return;
      if (done()) {
        clearTimeout(deadline);
        answer();
      } else waiting.push(check);
    };
    waiting.push(check);
  }
});

main().catch((e) => {
  console.error(`clients: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
});
