/**
 * The root of the project's errors ({@link NodepoolError}), the retry question every error
 * answers ({@link isRetryable}), and {@link coerceError} for catch boundaries.
 */

/**
 * Base of every error this project throws on purpose; never thrown itself. Not retryable
 * unless a subclass says so.
 */
export class NodepoolError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** Whether the same call may succeed when tried again (a transient failure, not a "no"). */
  get retryable(): boolean {
    return false;
  }
}

/** True when `err` is one of ours and says trying again may work ({@link NodepoolError.retryable}). */
export function isRetryable(err: unknown): boolean {
  return err instanceof NodepoolError && err.retryable;
}

/** Turns anything thrown into an Error, keeping Errors as they are. */
export function coerceError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === 'string') return new Error(err);
  try {
    return new Error(JSON.stringify(err));
  } catch {
    return new Error(String(err));
  }
}
