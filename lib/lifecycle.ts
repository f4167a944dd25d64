/**
 * Small lifecycle helpers shared by daemons and tests: bounded polling and waiting, capped
 * backoff, abortable sleep, and LIFO releasers.
 */
import { backoffMs } from './backoff.js';
import { WaitTimeoutError } from './errors.js';

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  timeoutMs: number;
  /** What is awaited, for the error message: `build 0000000001 ready`. */
  what: string;
  intervalMs?: number;
}

/** Options of {@link pollUntil}. */
export interface PollOptions {
  timeoutMs: number;
  /** Wait after attempt `n` (0-based): a fixed number of ms (default 500) or a function of `n`. */
  intervalMs?: number | ((attempt: number) => number);
  signal?: AbortSignal;
}

/**
 * The one bounded poll behind every "until it is ready, at most so long" loop: calls
 * `attempt(remainingMs)` until it returns something other than undefined and resolves with
 * that; resolves undefined once the time is up (the caller says why, with what it saw last).
 * The waits never run past the deadline, and one last attempt is made at it. What `attempt`
 * throws is thrown; an abort throws the signal's reason.
 */
export async function pollUntil<T>(attempt: (remainingMs: number) => Promise<T | undefined> | T | undefined, opts: PollOptions): Promise<T | undefined> {
  const deadline = performance.now() + opts.timeoutMs;
  let atDeadline = false;
  for (let n = 0; ; n++) {
    opts.signal?.throwIfAborted();
    const value = await attempt(Math.max(1, Math.round(deadline - performance.now())));
    if (value !== undefined) return value;
    const left = deadline - performance.now();
    // after a wait cut to the deadline, that attempt was the last (a timer may fire a little
    // early by this clock: without this, a sliver of time left made one more attempt)
    if (left <= 0 || atDeadline) return undefined;
    const wait = typeof opts.intervalMs === 'function' ? opts.intervalMs(n) : opts.intervalMs ?? 500;
    atDeadline = wait >= left;
    await sleep(Math.ceil(Math.min(wait, left)), opts.signal);
  }
}

/** Polls `cond` until it returns a truthy value, at most `timeoutMs`. Errors thrown by `cond` count as "not yet". */
export async function waitFor<T>(cond: () => T | Promise<T>, opts: WaitForOptions): Promise<NonNullable<T>> {
  let lastError: unknown;
  const value = await pollUntil(async () => {
    try {
      const v = await cond();
      return v ? v as NonNullable<T> : undefined;
    } catch (err) {
      lastError = err;
      return undefined;
    }
  }, { timeoutMs: opts.timeoutMs, intervalMs: opts.intervalMs ?? 50 });
  if (value === undefined) throw new WaitTimeoutError(opts.what, opts.timeoutMs, lastError);
  return value;
}

/** Resolves after `ms`, or rejects with the signal's reason when aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The daemons' loops' backoff ({@link backoffMs}): attempt 0 → `initialMs`, doubling up to
 * `maxMs`, with up to 20 % jitter.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  return backoffMs(attempt, { initialMs, maxMs, jitter: 0.2 }, random);
}

/** Options of {@link retryWithBackoff}. */
export interface RetryOptions {
  /** Whether a failure of attempt `attempt` (0-based) is tried again; otherwise it is thrown. */
  retryable: (err: unknown, attempt: number) => boolean;
  /** Capped backoff between attempts (see {@link backoffDelay}). */
  initialMs: number;
  maxMs: number;
  /** Told before each wait (e.g. to log the first failure once). */
  onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `attempt` until it resolves, waiting a capped exponential backoff after each failure
 * that `retryable` accepts; the first failure it refuses is thrown. The one retry loop of the
 * store writes that must outlive an outage (a job's result, a launch's outcome).
 */
export async function retryWithBackoff<T>(attempt: () => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!opts.retryable(err, n)) throw err;
      opts.onRetry?.(err, n);
      await sleep(backoffDelay(n, opts.initialMs, opts.maxMs));
    }
  }
}

/** Releasers run in LIFO order; every one runs even when an earlier one fails. */
export class Releasers {
  private readonly stack: Array<{ what: string; release: () => unknown }> = [];

  add(what: string, release: () => unknown): void {
    this.stack.push({ what, release });
  }

  async releaseAll(): Promise<void> {
    const errors: Error[] = [];
    while (this.stack.length) {
      const r = this.stack.pop();
      if (!r) break;
      try {
        await r.release();
      } catch (err) {
        errors.push(new Error(`releasing ${r.what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err }));
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, `${errors.length} releasers failed`);
  }
}

/**
 * A value made once and shared by every caller, unless making it failed: a rejected promise is
 * forgotten, so the next call tries again. `clear()` forgets a good one too.
 */
export class KeptUnlessFailed<T> {
  private value: Promise<T> | undefined;

  constructor(private readonly make: () => Promise<T>) {}

  get(): Promise<T> {
    if (this.value) return this.value;
    const p = this.make();
    this.value = p;
    p.catch(() => { if (this.value === p) this.value = undefined; });
    return p;
  }

  clear(): void {
    this.value = undefined;
  }
}
