/**
 * A primary and its streaming replica of Debian's PostgreSQL, for the read-replica tests: the
 * primary made as test/debian-postgres.ts makes a cluster, the replica by `pg_basebackup -R`
 * (hot standby, fed by streaming replication), both on loopback in one temporary directory,
 * removed by `stop()`. Run as root, the tools run as Debian's `postgres` user.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../server/embedded.js';
import { findDebianPostgis } from './debian-postgres.js';

const run = promisify(execFile);

export interface StreamingPair {
  primaryUrl: string;
  replicaUrl: string;
  /** Stops the replica (fast shutdown), as a replica that goes away under load. */
  stopReplica(): Promise<void>;
  stop(): Promise<void>;
}

/** The Debian PostgreSQL bin directory that has pg_basebackup, or undefined. */
export function findStreamingTools(): string | undefined {
  const bin = findDebianPostgis();
  return bin && existsSync(path.join(bin, 'pg_basebackup')) ? bin : undefined;
}

export async function startStreamingPair(): Promise<StreamingPair> {
  const bin = findStreamingTools();
  if (!bin) throw new Error('no Debian PostgreSQL with pg_basebackup under /usr/lib/postgresql');
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-replica-'));
  if (asRoot) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
    chownSync(dir, await id('-u'), await id('-g'));
  }
  const exec = (tool: string, args: string[]) => {
    const file = path.join(bin, tool);
    return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: dir }) : run(file, args, { cwd: dir });
  };
  const primary = path.join(dir, 'primary');
  const replica = path.join(dir, 'replica');
  const started: string[] = [];
  const stopCluster = async (data: string, mode: string) => {
    if (!started.includes(data)) return;
    started.splice(started.indexOf(data), 1);
    await exec('pg_ctl', ['stop', '-D', data, '-m', mode, '-w']).catch(() => {});
  };
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await stopCluster(replica, 'immediate');
      await stopCluster(primary, 'immediate');
      rmSync(dir, { recursive: true, force: true });
    })());
  const options = (port: number) => `-c listen_addresses=127.0.0.1 -p ${port} -c unix_socket_directories=${dir} -c fsync=off -c full_page_writes=off`;
  try {
    await exec('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync', '--no-instructions']);
    const p1 = await freePort();
    started.push(primary);
    await exec('pg_ctl', ['start', '-D', primary, '-w', '-t', '30', '-l', path.join(dir, 'primary.log'), '-o', options(p1)]);
    await exec('pg_basebackup', ['-D', replica, '-R', '-X', 'stream', '-d', `host=127.0.0.1 port=${p1} user=postgres`]);
    const p2 = await freePort();
    started.push(replica);
    await exec('pg_ctl', ['start', '-D', replica, '-w', '-t', '30', '-l', path.join(dir, 'replica.log'), '-o', options(p2)]);
    return {
      primaryUrl: `postgres://postgres@127.0.0.1:${p1}/postgres`,
      replicaUrl: `postgres://postgres@127.0.0.1:${p2}/postgres`,
      stopReplica: () => stopCluster(replica, 'fast'),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
