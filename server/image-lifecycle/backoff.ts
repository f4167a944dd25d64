/**
 * Capped exponential backoff after consecutive failures (pure, no jitter), shared by the
 * planner and the CLI's status output.
 */
import { backoffMs } from '../../lib/backoff.js';
import type { ImageLifecycleConfig } from '../../lib/config/schema.js';

/** The part of the config the delay depends on (seconds). */
export type BackoffConfig = Pick<ImageLifecycleConfig, 'retryDelay' | 'maxRetryDelay'>;

/**
 * Milliseconds to wait after `failures` consecutive failures:
 * min(maxRetryDelay, retryDelay · 2^(failures−1)) seconds; 0 without failures.
 */
export function retryDelayMs(failures: number, cfg: BackoffConfig): number {
  if (failures <= 0) return 0;
  return backoffMs(failures - 1, { initialMs: cfg.retryDelay * 1000, maxMs: cfg.maxRetryDelay * 1000 });
}

/**
 * How many of the newest consecutive failures retention keeps per diskimage or
 * image-provider: enough for the delay to reach `maxRetryDelay` (older ones would not change
 * it), and at least 3 for the operator to read.
 */
export function failuresKept(cfg: BackoffConfig): number {
  return Math.max(3, 1 + Math.ceil(Math.log2(cfg.maxRetryDelay / cfg.retryDelay)));
}

/** A run of consecutive failures, newest first, as the planner counts them. */
export interface FailureRun {
  failures: number;
  /** When the newest failure of the run happened (epoch ms), null without failures. */
  newestFailed: number | null;
  /** When the next attempt may start (epoch ms), null without failures. */
  retryAt: number | null;
}

/**
 * Counts the failures in `newestFirst` (records newer than the last success), skipping
 * records for which `skip` holds and stopping at the first for which `stop` holds.
 */
export function failureRun<T extends { state: string; stateTime: number }>(
  newestFirst: Iterable<T>, cfg: BackoffConfig, stop: (r: T) => boolean = () => false,
): FailureRun {
  let failures = 0;
  let newestFailed: number | null = null;
  for (const r of newestFirst) {
    if (stop(r)) break;
    if (r.state !== 'failed') continue;
    failures++;
    newestFailed ??= r.stateTime;
  }
  return {
    failures,
    newestFailed,
    retryAt: newestFailed === null ? null : newestFailed + retryDelayMs(failures, cfg),
  };
}
