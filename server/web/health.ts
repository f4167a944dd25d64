/**
 * What `/ready` and `/health/ready` answer, from the server's start state and its loops'
 * health (lib/periodic-loop.ts records every pass). Pure.
 */
import type { LoopHealth } from '../../lib/periodic-loop.js';

/** The readiness verdict of `/health/ready`. */
export interface ReadinessReport {
  ready: boolean;
  /** Whether every provider has started (what `/ready` answers). */
  started: boolean;
  /** Loops whose last pass failed, with their last error. */
  failing: Array<{ loop: string; consecutiveFailures: number; lastError: string | null; lastSuccess: number | null }>;
  /** Every loop's health. */
  loops: LoopHealth[];
  /** One line per reason it is not ready; `ok` when ready. */
  text: string;
}

/**
 * Ready once the providers have started and every loop's last pass succeeded (a loop that
 * has not run a pass yet does not count against it).
 */
export function readinessReport(started: boolean, loops: readonly LoopHealth[]): ReadinessReport {
  const failing = loops.filter((l) => l.consecutiveFailures > 0).map((l) => ({
    loop: l.name, consecutiveFailures: l.consecutiveFailures, lastError: l.lastError, lastSuccess: l.lastSuccess,
  }));
  const lines: string[] = [];
  if (!started) lines.push('starting: not every provider has started yet');
  for (const f of failing) {
    lines.push(`${f.loop}: ${f.consecutiveFailures} failed pass${f.consecutiveFailures === 1 ? '' : 'es'} in a row (last: ${f.lastError ?? 'unknown error'})`);
  }
  const ready = started && failing.length === 0;
  return { ready, started, failing, loops: [...loops], text: ready ? 'ok' : lines.join('\n') };
}
