/**
 * How busy the machine's CPUs were while a group of test files ran, for the runner's "where the
 * time went" report (test/run.ts): whether a lane waited on the CPU (then running more files at
 * once would not help) or on timers and I/O (then it would). Reads /proc/stat, so it counts
 * every process on the machine, not only the tests'; on a machine without /proc/stat it reports
 * nothing.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

/** One reading of the machine's CPU time counters (clock ticks, summed over all CPUs). */
interface CpuSample {
  at: number;
  busy: number;
  total: number;
}

/** A share of this interval's ticks busy at or above which the machine counts as saturated. */
const SATURATED = 0.9;

function readCpu(): CpuSample | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    // cpu user nice system idle iowait irq softirq steal (guest time is inside user already)
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = user + nice + system + irq + softirq + steal;
    return { at: Date.now(), busy, total: busy + idle + iowait };
  } catch {
    return undefined;
  }
}

/** Samples /proc/stat every few seconds and summarises any interval of the run. */
export class CpuMeter {
  readonly cpus = os.cpus().length;
  private readonly samples: CpuSample[] = [];
  private timer: NodeJS.Timeout | undefined;

  /** Starts sampling every `intervalMs` (an unref'd timer: it never keeps the runner alive). */
  start(intervalMs = 5000): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  /** Takes a reading now (the runner does at each group's start and end, so its interval is exact). */
  sample(): void {
    const s = readCpu();
    if (s) this.samples.push(s);
  }

  /**
   * "CPU 87 % busy, saturated 64 % of the time" for the interval [from, to] (ms since the epoch):
   * the share of all CPUs' time that was busy, and the share of the wall time spent in sampling
   * intervals at least 90 % busy. Empty when fewer than two readings fall in the interval.
   */
  summary(from: number, to: number): string {
    const inside = this.samples.filter((s) => s.at >= from - 1 && s.at <= to + 1);
    const first = inside[0];
    const last = inside[inside.length - 1];
    if (!first || !last || last.total <= first.total) return '';
    let saturatedMs = 0;
    for (let i = 1; i < inside.length; i++) {
      const a = inside[i - 1] as CpuSample;
      const b = inside[i] as CpuSample;
      if (b.total > a.total && (b.busy - a.busy) / (b.total - a.total) >= SATURATED) saturatedMs += b.at - a.at;
    }
    const busy = Math.round((100 * (last.busy - first.busy)) / (last.total - first.total));
    const saturated = last.at > first.at ? Math.round((100 * saturatedMs) / (last.at - first.at)) : 0;
    return `CPU ${busy} % busy, saturated ${saturated} % of the time`;
  }
}
