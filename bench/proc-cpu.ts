/**
 * CPU time of processes and of the machine, read from /proc, for the benches' "CPU per
 * request (or node) by process" figures: one process, a process with all its descendants,
 * and the whole machine's busy time. Linux only; a process that is gone counts as NaN.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / 100;

/** The fields of /proc/<pid>/stat after the command (which may hold spaces); undefined when the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ');
  } catch {
    return undefined;
  }
}

/** CPU time (ms, user + system, reaped children included) a process has used; NaN when it is gone. */
export function processCpuMs(pid: number): number {
  // utime, stime, cutime, cstime are fields 14–17 of stat(5), here 11–14.
  const f = statFields(pid);
  return f ? (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS : NaN;
}

/** The pids of a process and all its descendants still running (by parent pid). */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const ppid = Number(statFields(pid)?.[1]);
    if (Number.isInteger(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop() as number;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU time (ms) of a process and every descendant (each with its reaped children); NaN when the root is gone. */
export function processTreeCpuMs(root: number): number {
  if (Number.isNaN(processCpuMs(root))) return NaN;
  return processTree(root).map(processCpuMs).filter((ms) => !Number.isNaN(ms)).reduce((a, b) => a + b, 0);
}

/** Busy CPU time of the whole machine (ms, all cores: user, nice, system, irq, softirq). */
export function machineBusyMs(): number {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').split(/\s+/).slice(1).map(Number);
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0)) * TICK_MS;
}
