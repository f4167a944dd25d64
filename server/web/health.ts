/**
 * What `/ready` and `/health/ready` answer, from the server's start state and its loops'
 * health (lib/periodic-loop.ts records every pass and since when one runs). Pure.
 */
import type { LoopHealth } from '../../lib/periodic-loop.js';
import { stuckLoops, stuckLoopText, type StuckLoop } from '../../lib/status/server.js';

/** The readiness verdict of `/health/ready`. */
export interface ReadinessReport {
  ready: boolean;
  /** Whether every provider has started (what `/ready` answers). */
  started: boolean;
  /** Loops whose last pass failed, with their last error. */
  failing: Array<{ loop: string; consecutiveFailures: number; lastError: string | null; lastSuccess: number | null }>;
  /** Loops whose pass in progress has run longer than its bound. */
  stuck: StuckLoop[];
  /** Every loop's health. */
  loops: LoopHealth[];
  /** One line per reason it is not ready; `ok` when ready. */
  text: string;
}

/**
 * Ready once the providers have started, every loop's last pass succeeded (a loop that has
 * not run a pass yet does not count against it) and no loop's pass runs past its bound at `now`.
 */
export function readinessReport(started: boolean, loops: readonly LoopHealth[], now: number): ReadinessReport {
  const failing = loops.filter((l) => l.consecutiveFailures > 0).map((l) => ({
    loop: l.name, consecutiveFailures: l.consecutiveFailures, lastError: l.lastError, lastSuccess: l.lastSuccess,
  }));
  const lines: string[] = [];
  if (!started) lines.push('starting: not every provider has started yet');
  for (const f of failing) {
    lines.push(`${f.loop}: ${f.consecutiveFailures} failed pass${f.consecutiveFailures === 1 ? '' : 'es'} in a row (last: ${f.lastError ?? 'unknown error'})`);
  }
  const stuck = stuckLoops(loops, now);
  lines.push(...stuck.map(stuckLoopText));
  const ready = started && failing.length === 0 && stuck.length === 0;
  return { ready, started, failing, stuck, loops: [...loops], text: ready ? 'ok' : lines.join('\n') };
}
