/**
 * The rate of a transfer from successive (time, bytes) samples, e.g. an upload's WORK_STATUS
 * packets: the bytes gained over the last few seconds divided by the time they took. Pure.
 */

/** One progress sample: `bytes` done at `at` (epoch ms). */
export interface RateSample {
  at: number;
  bytes: number;
}

/** How far back the rate looks by default (ms). */
export const RATE_WINDOW_MS = 5000;
/** Samples closer together than this give no rate (too little time to mean anything). */
const MIN_SPAN_MS = 100;

/**
 * The window after `sample`: samples of the last `windowMs`, plus the newest one before
 * that, so a slow sender (one sample every few seconds) still yields a rate. A sample with
 * fewer bytes or an earlier time than the last one (the transfer restarted, e.g. a retried
 * upload attempt) starts a new window.
 */
export function addRateSample(samples: readonly RateSample[], sample: RateSample, windowMs = RATE_WINDOW_MS): RateSample[] {
  const last = samples.at(-1);
  if (!last || sample.bytes < last.bytes || sample.at < last.at) return [sample];
  const all = [...samples, sample];
  const edge = sample.at - windowMs;
  // Index of the newest sample at or before the window's edge: everything older goes.
  let first = 0;
  for (let i = 0; i < all.length - 1; i++) if ((all[i] as RateSample).at <= edge) first = i;
  return all.slice(first);
}

/** Bytes per second from the window's first to its last sample; null with fewer than two or too short a span. */
export function transferRate(samples: readonly RateSample[]): number | null {
  const first = samples[0];
  const last = samples.at(-1);
  if (!first || !last || last.at - first.at < MIN_SPAN_MS) return null;
  return ((last.bytes - first.bytes) * 1000) / (last.at - first.at);
}
