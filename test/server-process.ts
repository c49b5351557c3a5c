/**
 * The server as a real process (`server/main.ts`, as `npm start` runs it), for the tests that
 * need one (process.test.ts, crash.test.ts) and the long fuzz run.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ServerProcess {
  child: ChildProcess;
  /** SVC_GRAPHQL_SERVER_PORT of its environment (0 when not set). */
  port: number;
  /** Everything it printed, stdout and stderr. */
  out: string[];
  exited: Promise<number | null>;
}

/** Starts the server with only PATH, HOME and `env` in its environment. */
export function spawnServer(env: Record<string, string>, args: string[] = []): ServerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', ...args], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.on('data', (d) => out.push(String(d)));
  child.stderr!.on('data', (d) => out.push(String(d)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, port: Number(env.SVC_GRAPHQL_SERVER_PORT ?? 0), out, exited };
}

/** Waits until /healthz answers 200; throws with the server's output if it exits or times out. */
export async function waitReady(p: ServerProcess, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (p.child.exitCode !== null) throw new Error(`server exited: ${p.out.join('')}`);
    try {
      if ((await fetch(`http://127.0.0.1:${p.port}/healthz`)).status === 200) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server not ready: ${p.out.join('')}`);
}

/** POSTs JSON to the server on `port`; returns the status and the parsed body. */
export async function post(port: number, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: r.status, body: await r.json() };
}
