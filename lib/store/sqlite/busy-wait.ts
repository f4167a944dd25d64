/**
 * Waiting out a database another process is writing (`SQLITE_BUSY`), without blocking this one.
 * Every write takes BEGIN IMMEDIATE (statements.ts), so SQLite's own busy handler covers the
 * wait for the write lock; but that handler sleeps inside the call, so a long wait stalls this
 * whole process (its web port, its session renewals), and past its timeout the write failed,
 * which under churn failed a request (issue 31 §12). Here each attempt waits inside SQLite only
 * briefly; the operation is then tried again after an asynchronous backoff until the store's
 * `busyTimeoutMs` is spent. A busy attempt changed nothing (BEGIN IMMEDIATE, or a one-statement
 * write, fails before its first change), so trying it again is safe.
 */
import { retryWithBackoff } from '../../lifecycle.js';

/** Longest one attempt waits inside SQLite (blocking the process) before yielding to the backoff. */
export const BUSY_ATTEMPT_MS = 100;

/** Whether `err` is SQLite's "database is locked" by another connection (`SQLITE_BUSY` and its extended codes). */
export function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Options of {@link waitOutBusy}. */
export interface BusyWaitOptions {
  /** How long the operation may keep meeting SQLITE_BUSY before that error is thrown. */
  totalMs: number;
  /** False once the database is closed: nothing is tried again then. */
  isOpen: () => boolean;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
}

/** Runs `op`, trying it again after a short backoff while it fails with SQLITE_BUSY, for up to `totalMs`. */
export function waitOutBusy<T>(op: () => T | Promise<T>, opts: BusyWaitOptions): Promise<T> {
  const clock = opts.clock ?? Date.now;
  const start = clock();
  return retryWithBackoff(async () => op(), {
    retryable: (err) => isSqliteBusy(err) && opts.isOpen() && clock() - start < opts.totalMs,
    initialMs: 5, maxMs: 200,
  });
}
