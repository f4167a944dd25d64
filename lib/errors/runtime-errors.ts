/** Errors of the runtime helpers: helper programs run by `runCommand`, and bounded waits. */
import { NodepoolError } from './nodepool-error.js';

/**
 * Thrown by `runCommand` with `check` (lib/run-command.ts) when a helper program (qemu-img,
 * genisoimage, …) cannot start, exits non-zero or runs past its time limit.
 */
export class CommandFailedError extends NodepoolError {
  constructor(readonly command: string, readonly exitCode: number | null, readonly stderr: string, message: string) {
    super(message);
  }
}

/**
 * Thrown by `waitFor` (lib/lifecycle.ts) when the condition did not hold in time; `cause` is
 * the last error the condition threw. Not retryable: the caller's deadline would pass again.
 */
export class WaitTimeoutError extends NodepoolError {
  constructor(what: string, timeoutMs: number, lastError?: unknown) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
  }
}
