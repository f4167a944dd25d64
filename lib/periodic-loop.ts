/**
 * The one helper behind every periodic loop of the daemons (image lifecycle, pool workers,
 * deleter, cleanup, min-ready): run a pass, wait the interval (less when nudged, more after
 * failures, with capped exponential backoff that a nudge does not cut short), count
 * consecutive failures and keep the last error, and record since when the current pass runs
 * against the loop's bound, so health and the CLI can tell "passes succeed" from "the
 * process is up" and from "a pass hangs".
 */
import { EventEmitter } from 'node:events';
import { coerceError } from './errors.js';
import { backoffDelay } from './lifecycle.js';
import type { Logger } from './log.js';

/** What a loop publishes about itself (JSON-safe: it goes into the server's heartbeat). */
export interface LoopHealth {
  /** `image-lifecycle`, `pool-worker:<provider>/<pool>`, `deleter`, … */
  name: string;
  /** Passes run so far, failed ones included. */
  passes: number;
  /** Failed passes since the last successful one. */
  consecutiveFailures: number;
  /** Epoch ms of the end of the last pass and of the last successful one (null: none yet). */
  lastPass: number | null;
  lastSuccess: number | null;
  /** Message of the newest failure while failures continue; null after a success. */
  lastError: string | null;
  /**
   * Epoch ms the pass in progress started; null between passes. (Optional only because
   * heartbeats written by older servers lack it; a PeriodicLoop always sets it.)
   */
  runningSince?: number | null;
  /** How long one pass may run before health calls the loop stuck (ms; absent from older servers). */
  deadlineMs?: number;
}

/** The least pass deadline of a loop without its own: 5 minutes. */
export const MIN_PASS_DEADLINE_MS = 5 * 60_000;

/** The default pass deadline: ten intervals, and at least {@link MIN_PASS_DEADLINE_MS}. */
export function defaultPassDeadlineMs(intervalMs: number): number {
  return Math.max(10 * intervalMs, MIN_PASS_DEADLINE_MS);
}

/**
 * Whether a loop is stuck: the running time (ms) of its pass in progress when that pass has
 * run longer than the loop's deadline, else null (also between passes and for records of
 * older servers). Pure.
 */
export function stuckForMs(h: LoopHealth, now: number): number | null {
  if (h.runningSince === null || h.runningSince === undefined || h.deadlineMs === undefined) return null;
  const running = now - h.runningSince;
  return running > h.deadlineMs ? running : null;
}

/** Options of {@link PeriodicLoop}. */
export interface PeriodicLoopOptions {
  name: string;
  log: Logger;
  /** Idle time between passes (read before each wait, so reloads apply). */
  intervalMs: () => number;
  /** One pass. Resolving `true` means "there is more to do": the next pass starts at once. */
  pass: () => Promise<boolean | void>;
  /** Wait after the n-th consecutive failure: max(interval, initialMs × 2^(n-1) capped at maxMs, ±20 %). */
  backoff?: { initialMs: number; maxMs: number };
  /**
   * How long one pass may run before health reports the loop stuck (read at each pass start;
   * default {@link defaultPassDeadlineMs} of the interval). The pass is not interrupted: a
   * hung pass is for an operator to see, not for the loop to abandon half done.
   */
  passDeadlineMs?: () => number;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
  /** Called after every pass, failed or not (the server refreshes its heartbeat from it). */
  onPass?: (health: LoopHealth) => void;
}

/** Events of {@link PeriodicLoop}. */
export interface PeriodicLoopEvents {
  'pass:complete': [health: LoopHealth];
  'pass:failed': [error: Error, health: LoopHealth];
}

const DEFAULT_BACKOFF = { initialMs: 1000, maxMs: 60_000 };

type State = 'new' | 'running' | 'stopping' | 'stopped';

export class PeriodicLoop extends EventEmitter<PeriodicLoopEvents> {
  private state: State = 'new';
  private current: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private nudged = false;
  private endWait: (() => void) | undefined;
  /** Whether a nudge may end the current wait (not during a failure backoff). */
  private nudgeable = false;
  private readonly clock: () => number;
  private readonly record: LoopHealth;

  constructor(private readonly opts: PeriodicLoopOptions) {
    super();
    this.clock = opts.clock ?? Date.now;
    this.record = {
      name: opts.name, passes: 0, consecutiveFailures: 0, lastPass: null, lastSuccess: null, lastError: null,
      runningSince: null, deadlineMs: this.deadline(),
    };
  }

  get name(): string {
    return this.opts.name;
  }

  /** A copy of the loop's health. */
  get health(): LoopHealth {
    return { ...this.record };
  }

  /** Starts passes in the background. Thrown: Error when already started. */
  start(): void {
    if (this.state !== 'new') throw new Error(`loop ${this.opts.name} cannot start from state ${this.state}`);
    this.state = 'running';
    this.current = this.run();
  }

  /**
   * Ends the current idle wait (or, during a pass, skips the next one) so a pass runs now. A
   * wait that backs off after failed passes stands: a nudge during it only skips whatever of
   * the interval is left after the backoff.
   */
  nudge(): void {
    this.nudged = true;
    if (this.nudgeable) this.endWait?.();
  }

  /** Lets the pass in progress finish and stops. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.state === 'new') {
        this.state = 'stopped';
        return;
      }
      this.state = 'stopping';
      this.endWait?.();
      await this.current;
      this.state = 'stopped';
    })();
    return this.stopping;
  }

  private async run(): Promise<void> {
    while (this.state === 'running') {
      this.nudged = false;
      const more = await this.runPass();
      if (this.state !== 'running') break;
      const failures = this.record.consecutiveFailures;
      if (failures === 0 && (more || this.nudged)) continue;
      let idle = this.opts.intervalMs();
      if (failures > 0) {
        const b = this.opts.backoff ?? DEFAULT_BACKOFF;
        const backoff = backoffDelay(failures - 1, b.initialMs, b.maxMs);
        // A failing loop must not retry at every store change: the backoff is waited out whole.
        await this.wait(backoff, false);
        if (this.state !== 'running' || this.nudged) continue;
        idle = Math.max(0, idle - backoff);
      }
      if (idle > 0) await this.wait(idle, true);
    }
  }

  private deadline(): number {
    return this.opts.passDeadlineMs?.() ?? defaultPassDeadlineMs(this.opts.intervalMs());
  }

  /** Runs one pass and records its outcome; returns whether the pass asked for another at once. */
  private async runPass(): Promise<boolean> {
    let more = false;
    let failure: Error | undefined;
    this.record.runningSince = this.clock();
    this.record.deadlineMs = this.deadline();
    try {
      more = (await this.opts.pass()) === true;
    } catch (raw) {
      failure = coerceError(raw);
    }
    const now = this.clock();
    const r = this.record;
    r.passes += 1;
    r.lastPass = now;
    r.runningSince = null;
    // What listeners and onPass do is theirs: a throw there is logged, never the end of the loop
    // (an unawaited rejection of run() would take the daemon down).
    try {
      if (failure) {
        r.consecutiveFailures += 1;
        r.lastError = failure.message;
        this.opts.log.error(`${this.opts.name} pass failed`, { error: failure.message, consecutiveFailures: r.consecutiveFailures });
        this.emit('pass:failed', failure, this.health);
      } else {
        if (r.consecutiveFailures > 0) this.opts.log.info(`${this.opts.name} passes succeed again`, { after: r.consecutiveFailures });
        r.consecutiveFailures = 0;
        r.lastError = null;
        r.lastSuccess = now;
        this.emit('pass:complete', this.health);
      }
      this.opts.onPass?.(this.health);
    } catch (raw) {
      this.opts.log.error(`${this.opts.name}: a listener of its pass failed`, { error: coerceError(raw).message });
    }
    return more;
  }

  /** Waits `ms`; stop ends it early, and so does a nudge when `nudgeable`. */
  private wait(ms: number, nudgeable: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.endWait = undefined;
        this.nudgeable = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endWait = done;
      this.nudgeable = nudgeable;
    });
  }
}
