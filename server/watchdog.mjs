/**
 * Stops the embedded PostgreSQL when the server that started it is gone, however it went (kill -9
 * included; see Note [Crash safety] in server/embedded.ts). The server starts it, detached, with a
 * pipe on stdin; the kernel closes the server's end when the server exits, and then the postmaster
 * named by <cluster>/postmaster.pid, if it is a postgres in that directory, gets SIGINT (fast
 * shutdown). A server that stops normally stops its PostgreSQL and then this process (SIGTERM).
 * Plain JavaScript, so that node runs it without a loader.
 *
 * Usage: node server/watchdog.mjs <cluster directory>
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];

function real(d) {
  try {
    return realpathSync(d);
  } catch {
    return d;
  }
}

function isPostmasterOfDir(pid) {
  try {
    if (process.platform === 'linux') {
      const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
      return path.basename(argv0) === 'postgres' && real(readlinkSync(`/proc/${pid}/cwd`)) === real(dir);
    }
    const command = execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
    return command.includes(`-D ${dir}`);
  } catch {
    return false; // gone
  }
}

let fired = false;
async function parentGone() {
  if (fired) return;
  fired = true;
  // The postmaster may be starting, its lock file not written yet: look for a few seconds.
  for (let i = 0; i < 30; i++) {
    let pid;
    try {
      pid = Number.parseInt(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8'), 10);
    } catch {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    if (pid > 0 && isPostmasterOfDir(pid)) process.kill(pid, 'SIGINT');
    break;
  }
  process.exit(0);
}

process.stdin.on('data', () => {});
process.stdin.on('end', parentGone);
process.stdin.on('error', parentGone);
