/**
 * Whether a nodepool-server is alive, judged from the heartbeat it refreshes in the store on
 * every lifecycle pass, and whether its loops are healthy (passes failing, a pass running past
 * its bound). Pure; the CLI and the web status share the wording.
 */
import { stuckForMs, type LoopHealth } from '../periodic-loop.js';
import { formatAge } from './age.js';

/** The heartbeat value the server publishes under `SERVER_HEARTBEAT_KEY`. */
export interface ServerHeartbeat {
  pid: number;
  hostname: string;
  /** Epoch ms the server started. */
  started: number;
  /** Seconds between lifecycle passes (the heartbeat is refreshed after the passes of every loop). */
  interval: number;
  /** Health of every loop of the server at the time of writing (absent from older servers). */
  loops?: LoopHealth[];
}

/** A heartbeat as read from the store (`updated` is epoch ms of the last refresh). */
export interface StoredHeartbeat {
  value: ServerHeartbeat;
  updated: number;
}

/** A server counts as alive while its heartbeat is at most this many intervals old. */
export const HEARTBEAT_MISSES_ALLOWED = 3;

/** Result of {@link serverLiveness}. */
export interface ServerLiveness {
  alive: boolean;
  /** `last seen 00:00:05:12 ago, pid 123 on host-a` or `last seen: never`. */
  lastSeen: string;
  /**
   * Loops whose recent passes failed, as `image-lifecycle: 3 failed passes in a row (last:
   * …)`, joined by `; `; null when every pass succeeds (or the server is not alive).
   */
  failing: string | null;
  /**
   * Loops whose pass runs past its bound, as `deleter: pass running for 00:00:12:00, past
   * its bound of 00:00:05:00`, joined by `; `; null when none is (or the server is not alive).
   */
  stuck: string | null;
}

/** A loop whose pass in progress has run longer than its bound. */
export interface StuckLoop {
  loop: string;
  /** Epoch ms the pass started. */
  runningSince: number;
  runningMs: number;
  deadlineMs: number;
}

/** The loops whose pass has run past its bound at `now` (see `stuckForMs`). */
export function stuckLoops(loops: readonly LoopHealth[], now: number): StuckLoop[] {
  const stuck: StuckLoop[] = [];
  for (const l of loops) {
    const runningMs = stuckForMs(l, now);
    if (runningMs !== null) stuck.push({ loop: l.name, runningSince: l.runningSince as number, runningMs, deadlineMs: l.deadlineMs as number });
  }
  return stuck;
}

/** `deleter: pass running for 00:00:12:00, past its bound of 00:00:05:00`. */
export function stuckLoopText(s: StuckLoop): string {
  return `${s.loop}: pass running for ${formatAge(s.runningMs)}, past its bound of ${formatAge(s.deadlineMs)}`;
}

/** Judges a heartbeat: alive when refreshed within {@link HEARTBEAT_MISSES_ALLOWED} × its interval. */
export function serverLiveness(hb: StoredHeartbeat | undefined, now: number): ServerLiveness {
  if (!hb) return { alive: false, lastSeen: 'last seen: never', failing: null, stuck: null };
  const interval = Number(hb.value?.interval);
  const limitMs = HEARTBEAT_MISSES_ALLOWED * (Number.isFinite(interval) && interval > 0 ? interval : 10) * 1000;
  const who = hb.value?.hostname ? `, pid ${hb.value.pid} on ${hb.value.hostname}` : '';
  const alive = now - hb.updated <= limitMs;
  const loops = Array.isArray(hb.value?.loops) ? hb.value.loops : [];
  const failing = loops.filter((l) => l.consecutiveFailures > 0)
    .map((l) => `${l.name}: ${l.consecutiveFailures} failed pass${l.consecutiveFailures === 1 ? '' : 'es'} in a row (last: ${l.lastError ?? 'unknown error'})`);
  const stuck = stuckLoops(loops, now).map(stuckLoopText);
  return {
    alive, lastSeen: `last seen ${formatAge(now - hb.updated)} ago${who}`,
    failing: alive && failing.length ? failing.join('; ') : null,
    stuck: alive && stuck.length ? stuck.join('; ') : null,
  };
}

/**
 * `nodepool-server is running but its passes fail: …` and/or `… a pass is stuck: …`, or null
 * when passes succeed and none runs past its bound.
 */
export function serverFailingText(l: ServerLiveness): string | null {
  const parts = [
    ...(l.failing === null ? [] : [`its passes fail: ${l.failing}`]),
    ...(l.stuck === null ? [] : [`a pass is stuck: ${l.stuck}`]),
  ];
  return parts.length ? `nodepool-server is running but ${parts.join('; and ')}` : null;
}

/** `no nodepool-server is running (last seen …)`. */
export function serverDownText(l: ServerLiveness): string {
  return `no nodepool-server is running (${l.lastSeen})`;
}
