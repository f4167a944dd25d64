/**
 * Validation outcomes counted from the upload records the metrics already read (a scrape's
 * snapshot, a statsd gauge round), not from the validator: an upload counts once, as
 * - `failed` when it is `failed` with a reason of the validator's (`validation: `, `validation timed out: `);
 * - `passed` when it is `ready` and was seen `validating` in an earlier snapshot, or its
 *   target has `validate:` and it became ready after the tracker started (a validation that
 *   began and ended between two snapshots).
 * Records that ended before the tracker started are not counted (a restart does not count
 * old outcomes again). What retention removes before a snapshot sees it is not counted:
 * failed records are kept for a while, so in practice only very frequent outcomes between
 * two scrapes could be missed.
 */
import { isValidatorFailure } from '../../lib/status/validation.js';
import type { UploadRecord } from '../../lib/store/models.js';

/** One validation that ended. */
export interface ValidationOutcome {
  provider: string;
  diskimage: string;
  uploadId: string;
  result: 'passed' | 'failed';
}

export class ValidationOutcomeTracker {
  private readonly counted = new Set<string>();
  private readonly seenValidating = new Set<string>();

  /** `startedAt`: epoch ms (store clock) from which outcomes count. */
  constructor(private readonly startedAt: number) {}

  /**
   * The outcomes first seen in `uploads` (a complete listing); `validates(provider,
   * diskimage)` says whether that target has `validate:` now. Forgets records no longer listed.
   */
  observe(uploads: readonly UploadRecord[], validates: (provider: string, diskimage: string) => boolean): ValidationOutcome[] {
    const out: ValidationOutcome[] = [];
    const listed = new Set<string>();
    for (const u of uploads) {
      listed.add(u.id);
      if (u.state === 'validating') {
        this.seenValidating.add(u.id);
        continue;
      }
      if (this.counted.has(u.id)) continue;
      const seen = this.seenValidating.has(u.id);
      if (!seen && u.stateTime < this.startedAt) continue;
      let result: ValidationOutcome['result'] | undefined;
      if (u.state === 'failed' && isValidatorFailure(u.reason)) result = 'failed';
      else if (u.state === 'ready' && (seen || validates(u.provider, u.diskimage))) result = 'passed';
      if (result) out.push({ provider: u.provider, diskimage: u.diskimage, uploadId: u.id, result });
      // Settled either way; an upload still uploading (or deleting) is looked at again.
      if (u.state === 'failed' || u.state === 'ready') {
        this.counted.add(u.id);
        this.seenValidating.delete(u.id);
      }
    }
    for (const id of this.counted) if (!listed.has(id)) this.counted.delete(id);
    for (const id of this.seenValidating) if (!listed.has(id)) this.seenValidating.delete(id);
    return out;
  }
}
