/**
 * Which upload failures are worth a second try inside the same job, and how long to wait:
 * a cloud that dropped the connection or answered 5xx/429 often works a few seconds later,
 * while a rejection (4xx), a timeout (image-upload-timeout) or an abort would fail again.
 * Pure; the server's backoff handles what the attempts here do not.
 */
import { CloudError, UploadTimeoutError } from '../../lib/errors.js';

/** Attempts of one upload job. */
export const UPLOAD_ATTEMPTS = 3;

/** Whether a failed attempt is tried again. */
export function retryableUploadError(err: unknown): boolean {
  if (err instanceof UploadTimeoutError || !(err instanceof CloudError)) return false;
  if (/\baborted$/.test(err.message)) return false;
  return err.status === undefined || err.status >= 500 || err.status === 429;
}

/** Wait before attempt `next` (2, 3, …): `baseMs`, then doubling. */
export function uploadRetryDelayMs(next: number, baseMs: number): number {
  return baseMs * 2 ** Math.max(0, next - 2);
}

/** The WORK_DATA a builder sends before another attempt, for the server to show. */
export interface UploadAttemptData {
  'upload-attempt': number;
  attempts: number;
  'last-error': string;
}
