/**
 * Turns a job's WORK_STATUS packets into store writes: at most one per interval, the last
 * sample of a burst written when the interval has passed (so a transfer that stalls shows
 * where it stalled), and the final step at once. Upload progress also carries the rate.
 */
import type { JobProgress, UploadProgress } from '../../lib/store/models.js';
import { addRateSample, transferRate, type RateSample } from './transfer-rate.js';

/** Options of {@link progressWriter} and {@link uploadProgressWriter}. */
export interface ProgressWriterOptions<P> {
  /** Least time between two writes (ms). */
  intervalMs: number;
  /** Whether the job is still followed; a write held back for the interval is dropped once it is not. */
  live(): boolean;
  /** Stores one sample; failures are the caller's to handle. */
  write(progress: P): void;
  /** Clock (default Date.now). */
  now?: () => number;
}

/** A WORK_STATUS handler: `(numerator, denominator)`. */
export type StatusHandler = (numerator: number, denominator: number) => void;

/** Writes `{ numerator, denominator }` (a build's steps). */
export function progressWriter(opts: ProgressWriterOptions<JobProgress>): StatusHandler {
  return throttle(opts, (numerator, denominator) => ({ numerator, denominator }));
}

/** Writes bytes sent and total with the rate over the last few seconds and the sample's time. */
export function uploadProgressWriter(opts: ProgressWriterOptions<UploadProgress>): StatusHandler {
  let samples: RateSample[] = [];
  return throttle(opts, (numerator, denominator, at) => {
    samples = addRateSample(samples, { at, bytes: numerator });
    return { numerator, denominator, rate: transferRate(samples), sampledAt: at };
  });
}

function throttle<P>(opts: ProgressWriterOptions<P>, make: (n: number, d: number, at: number) => P): StatusHandler {
  const now = opts.now ?? Date.now;
  let last = -Infinity;
  let held: P | undefined;
  let timer: NodeJS.Timeout | undefined;
  const writeNow = (p: P, at: number): void => {
    clearTimeout(timer);
    timer = undefined;
    held = undefined;
    last = at;
    opts.write(p);
  };
  return (numerator, denominator) => {
    const at = now();
    const p = make(numerator, denominator, at);
    if (numerator >= denominator || at - last >= opts.intervalMs) return writeNow(p, at);
    held = p;
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      const h = held;
      held = undefined;
      if (h !== undefined && opts.live()) writeNow(h, now());
    }, Math.max(0, last + opts.intervalMs - at));
    timer.unref();
  };
}
