/**
 * What the benchmarks under bench/ share: clean-up that runs exactly once, in reverse order,
 * whether a run ends normally, by an error or by a signal; and stopping a child process
 * (SIGTERM, then SIGKILL after a while).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';

/**
 * The node arguments that run the engine as production does (`npm start`): the compiled
 * JavaScript in dist/, built here first so that it is the checkout's code. Under tsx the
 * engine would pay for its TypeScript loader (and esbuild's function-name helpers) too.
 */
export function engineArgs(root: string): string[] {
  execFileSync('npm', ['run', '--silent', 'build:server'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  return ['--enable-source-maps', 'dist/server/main.js'];
}

/** Waits until the engine started as `child` answers /healthz on `port` (60 s at most); fails
 * at once if it exits. */
export async function waitHealthy(child: ChildProcess, port: number, name = 'the engine'): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`${name} is not ready after 60 s`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (s: string) => console.error(s);

/** How to stop what was started, last first. */
export const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
/** Set by a signal: a run stops at its next step instead of timing servers being stopped. */
export const signalled = { now: false };

export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      try {
        await cleanups.pop()!();
      } catch (e) {
        console.error(`clean-up: ${e instanceof Error ? e.message : e}`);
      }
    }
  })();
  return cleaning;
}

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    signalled.now = true;
    console.error(`\n${signal}: stopping the servers and removing the temp dir`);
    void cleanup().finally(() => process.exit(code));
  });
}

/** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
}
