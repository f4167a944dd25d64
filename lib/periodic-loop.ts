/**
 * The one helper behind every periodic loop of the daemons (image lifecycle, pool workers,
 * deleter, cleanup, min-ready): run a pass, wait the interval (less when nudged, more after
 * failures, with capped exponential backoff), count consecutive failures and keep the last
 * error, so health and the CLI can tell "passes succeed" from "the process is up".
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
  private readonly clock: () => number;
  private readonly record: LoopHealth;

  constructor(private readonly opts: PeriodicLoopOptions) {
    super();
    this.clock = opts.clock ?? Date.now;
    this.record = { name: opts.name, passes: 0, consecutiveFailures: 0, lastPass: null, lastSuccess: null, lastError: null };
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

  /** Ends the current wait (or, during a pass, skips the next one) so a pass runs now. */
  nudge(): void {
    this.nudged = true;
    this.endWait?.();
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
      let delay = this.opts.intervalMs();
      if (failures > 0) {
        const b = this.opts.backoff ?? DEFAULT_BACKOFF;
        delay = Math.max(delay, backoffDelay(failures - 1, b.initialMs, b.maxMs));
      }
      await this.wait(delay);
    }
  }

  /** Runs one pass and records its outcome; returns whether the pass asked for another at once. */
  private async runPass(): Promise<boolean> {
    let more = false;
    let failure: Error | undefined;
    try {
      more = (await this.opts.pass()) === true;
    } catch (raw) {
      failure = coerceError(raw);
    }
    const now = this.clock();
    const r = this.record;
    r.passes += 1;
    r.lastPass = now;
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
    return more;
  }

  /** Waits `ms`; a nudge or stop ends it early. */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.endWait = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endWait = done;
    });
  }
}
