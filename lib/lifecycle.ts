/**
 * Small lifecycle helpers shared by daemons and tests: bounded waiting, capped backoff,
 * abortable sleep, and LIFO releasers.
 */

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  timeoutMs: number;
  /** What is awaited, for the error message: `build 0000000001 ready`. */
  what: string;
  intervalMs?: number;
}

/** Thrown by {@link waitFor} when the condition did not hold in time. */
export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number, lastError?: unknown) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
    this.name = 'WaitTimeoutError';
  }
}

/** Polls `cond` until it returns a truthy value, at most `timeoutMs`. Errors thrown by `cond` count as "not yet". */
export async function waitFor<T>(cond: () => T | Promise<T>, opts: WaitForOptions): Promise<NonNullable<T>> {
  const deadline = Date.now() + opts.timeoutMs;
  const interval = opts.intervalMs ?? 50;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) throw new WaitTimeoutError(opts.what, opts.timeoutMs, lastError);
    await sleep(Math.min(interval, Math.max(1, deadline - Date.now())));
  }
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

/** Capped exponential backoff: attempt 0 → `initialMs`, doubling up to `maxMs`, with up to 20 % jitter. */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.8 + 0.2 * random()));
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
