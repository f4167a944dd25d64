/**
 * What a rollout decision is taken from (issue 31 §6): an upload's counts and its written
 * decision. A decision is written only while the record still holds the snapshot it was taken
 * from (UploadStore.updateUpload `expectRollout`), so a decision from a stale count loses. Both
 * store backends compare with it; the rollout (lib/rollout) takes it before deciding.
 */
import type { UploadRecord } from './models.js';

/** The counts and written decision of an upload a rollout decision was taken from. */
export type RolloutSnapshot = Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'>;

/** The snapshot of `upload` a decision on it is taken from. */
export function rolloutSnapshot(upload: RolloutSnapshot): RolloutSnapshot {
  return { launches: upload.launches ?? 0, launchFailures: upload.launchFailures ?? 0, rollout: upload.rollout ?? null };
}

/** Whether `upload` still holds `snapshot` (absent counts read as 0, an absent decision as none). */
export function holdsRolloutSnapshot(upload: RolloutSnapshot, snapshot: RolloutSnapshot): boolean {
  const a = rolloutSnapshot(upload);
  const b = rolloutSnapshot(snapshot);
  return a.launches === b.launches && a.launchFailures === b.launchFailures && a.rollout?.state === b.rollout?.state
    && a.rollout?.time === b.rollout?.time && a.rollout?.reason === b.rollout?.reason;
}
