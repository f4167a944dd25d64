/**
 * Maps what a job handler produced to the Gearman outcome: expected failures (BuilderError,
 * ConfigError) → WORK_FAIL with a message; anything else → WORK_EXCEPTION with the stack.
 * This is the only place COMPLETE/FAIL/EXCEPTION are decided.
 */
import { BuilderError, CloudError, ConfigError, coerceError } from '../../lib/errors.js';
import type { JobOutcome } from '../../lib/gearman/worker.js';
import type { Logger } from '../../lib/log.js';
import { processSecrets } from '../../lib/redact.js';

/** True for failures that are the request's or the environment's fault, not a bug. */
export function isExpectedFailure(err: unknown): boolean {
  return err instanceof BuilderError || err instanceof CloudError || err instanceof ConfigError;
}

/**
 * Runs `work` and reports its result as exactly one outcome; logs failures at warn, bugs at
 * error. A failure's message crosses Gearman into the server's records, lists and web pages,
 * so every secret the process knows is replaced in it first.
 */
export async function reportOutcome(log: Logger, work: () => Promise<unknown>): Promise<JobOutcome> {
  try {
    const result = await work();
    return { type: 'complete', data: JSON.stringify(result ?? {}) };
  } catch (raw) {
    const err = coerceError(raw);
    if (isExpectedFailure(err)) {
      log.warn('job failed', { error: err.message, errorType: err.name });
      return { type: 'fail', message: processSecrets.scrub(err.message) };
    }
    log.error('job raised an exception', { error: err.message, stack: err.stack });
    return { type: 'exception', message: processSecrets.scrub(err.stack ?? err.message) };
  }
}
