/**
 * Where a benchmark's CPU goes: the CPU time (user + system) of a server's process tree, of
 * PostgreSQL's processes and of the whole machine over a timed run, read from Linux's /proc. On
 * a machine of few cores the server and PostgreSQL share them, so a server that spends less CPU
 * per request leaves more to PostgreSQL: this says which side a gap between two servers is on.
 * Elsewhere than Linux every figure is undefined and nothing is printed.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_US = 1e6 / 100; // USER_HZ: 100 on every Linux architecture Node runs on

interface Proc {
  ppid: number;
  comm: string;
  ticks: number;
}

/** The fields of a /proc stat line after the name, which is in parentheses and may hold spaces:
 * they follow its last ')'. */
const fields = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
/** User and system CPU ticks of a /proc stat line. */
const ticksOf = (stat: string): number => {
  const f = fields(stat);
  return Number(f[11]) + Number(f[12]);
};

function procs(): Map<number, Proc> | undefined {
  const out = new Map<number, Proc>();
  let dirs: string[];
  try {
    dirs = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const d of dirs) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = s.lastIndexOf(')');
      out.set(Number(d), { comm: s.slice(s.indexOf('(') + 1, close), ppid: Number(fields(s)[1]), ticks: ticksOf(s) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function machineTicks(): number | undefined {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    return cpu.slice(0, 8).reduce((a, b) => a + b, 0) - cpu[3]! - cpu[4]!;
  } catch {
    return undefined;
  }
}

/** The processes of `root`'s tree and those named postgres (PostgreSQL's), with their CPU ticks. */
function sample(root: number) {
  const all = procs();
  if (!all) return undefined;
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = all.get(p)?.ppid ?? 0, hops++) if (p === root) return true;
    return false;
  };
  const server = new Map<number, number>();
  const postgres = new Map<number, number>();
  for (const [pid, p] of all) {
    if (inTree(pid)) server.set(pid, p.ticks);
    else if (p.comm === 'postgres') postgres.set(pid, p.ticks);
  }
  return { server, postgres, machine: machineTicks() ?? 0, main: mainThread(root) };
}

/** The CPU time of one process so far, in µs (user + system): a PostgreSQL backend's, for the
 * statements one connection ran. */
export function processCpuUs(pid: number): number {
  return ticksOf(readFileSync(`/proc/${pid}/stat`, 'utf8')) * TICK_US;
}

/** A process's main thread (its task of the same id), which answers every request of a Node
 * server: the one a server is bound by when it has cores to spare. Its user and system ticks
 * apart, and its context switches: a switch is the thread going to sleep (voluntary: its event
 * loop found nothing to do, so the next request or answer wakes it) or being taken off its core.
 * Where a server's CPU per request differs between two shapes of request, these say whether the
 * difference is in its own code (user), in the kernel (system: socket writes and reads, and on
 * Linux's loopback the delivery to the other end), or in being woken more often per request. */
function mainThread(pid: number): { user: number; sys: number; switches?: number } | undefined {
  try {
    const f = fields(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'));
    const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
    const count = (name: string) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
    const switches = count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches');
    return { user: Number(f[11]), sys: Number(f[12]), switches: Number.isFinite(switches) ? switches : undefined };
  } catch {
    return undefined;
  }
}

/** Ticks spent between two samples by processes alive at the second: a process that exited
 * meanwhile (a peer's idle pool connection closing) takes its ticks along, so a plain difference
 * of sums would charge its whole past to this run as a negative. */
function spent(before: Map<number, number>, after: Map<number, number>): number {
  let n = 0;
  for (const [pid, t] of after) n += t - (before.get(pid) ?? 0);
  return n;
}

export interface CpuPerRequest {
  /** µs of CPU per request: the server's process tree, PostgreSQL (all its processes), the machine. */
  server: number;
  postgres: number;
  machine: number;
  /** The server's main thread (the root process's): its share of `server`, of which `mainSys`
   * in the kernel; and its context switches per request (`mainSwitches`, see mainThread). */
  main?: number;
  mainSys?: number;
  mainSwitches?: number;
}

/** Runs `fn` and divides the CPU spent meanwhile by the requests it reports. */
export async function cpuPerRequest<T>(serverPid: number | undefined, fn: () => Promise<T>, requests: (r: T) => number): Promise<{ result: T; cpu?: CpuPerRequest }> {
  const before = serverPid ? sample(serverPid) : undefined;
  const result = await fn();
  const after = serverPid ? sample(serverPid) : undefined;
  const n = requests(result);
  if (!before || !after || !n) return { result };
  const per = (ticks: number) => (ticks * TICK_US) / n;
  const cpu: CpuPerRequest = { server: per(spent(before.server, after.server)), postgres: per(spent(before.postgres, after.postgres)), machine: per(after.machine - before.machine) };
  const [m0, m1] = [before.main, after.main];
  if (m0 && m1) {
    cpu.main = per(m1.user + m1.sys - m0.user - m0.sys);
    cpu.mainSys = per(m1.sys - m0.sys);
    if (m0.switches !== undefined && m1.switches !== undefined) cpu.mainSwitches = (m1.switches - m0.switches) / n;
  }
  return { result, cpu };
}

export const formatCpu = (c: CpuPerRequest | undefined) =>
  c
    ? `CPU/request: server ${c.server.toFixed(0)} µs${c.main !== undefined ? ` (main thread ${c.main.toFixed(0)}, in the kernel ${c.mainSys!.toFixed(0)}${c.mainSwitches !== undefined ? `, ${c.mainSwitches.toFixed(2)} switches` : ''})` : ''}, PostgreSQL ${c.postgres.toFixed(0)} µs, machine ${c.machine.toFixed(0)} µs`
    : '';
