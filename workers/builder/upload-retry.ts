/**
 * Which upload failures are worth a second try inside the same job, and how long to wait:
 * a cloud that dropped the connection or answered 5xx/429 often works a few seconds later,
 * while a rejection (4xx), a timeout (image-upload-timeout) or an abort would fail again.
 * Pure; the server's backoff handles what the attempts here do not.
 */
import { backoffMs } from '../../lib/backoff.js';
import { isRetryable } from '../../lib/errors.js';

/** Attempts of one upload job. */
export const UPLOAD_ATTEMPTS = 3;

/**
 * Whether a failed attempt is tried again: when the error says so ({@link isRetryable}: a
 * `CloudError` that got no answer, a 5xx or a 429, and was not aborted). An
 * `UploadTimeoutError` or any other builder error is not.
 */
export function retryableUploadError(err: unknown): boolean {
  return isRetryable(err);
}

/** Wait before attempt `next` (2, 3, …): `baseMs`, then doubling. */
export function uploadRetryDelayMs(next: number, baseMs: number): number {
  return backoffMs(next - 2, { initialMs: baseMs });
}

/** The WORK_DATA a builder sends before another attempt, for the server to show. */
export interface UploadAttemptData {
  'upload-attempt': number;
  attempts: number;
  'last-error': string;
}
