/**
 * The rollout's store side (issue 24): what a boot choice reads (pins, revocations, the
 * provider diskimage's `rollout:` settings, the clock) and counting a launch's outcome on the
 * upload it booted, with the promotion or revocation that count decides (upload-phase.ts).
 * The choice itself is boot-upload.ts; boot-choice.ts joins the two for drivers.
 */
import type { Config } from '../config/schema.js';
import { coerceError, StateConflictError } from '../errors.js';
import type { Logger } from '../log.js';
import type { LaunchResult, UploadRecord } from '../store/models.js';
import { rolloutSnapshot } from '../store/rollout-snapshot.js';
import type { Store } from '../store/store.js';
import { rolloutSettingsFor } from './rollout-config.js';
import type { RolloutSettings, RolloutView } from './rollout-policy.js';
import { decisionAfterLaunch } from './upload-phase.js';

/** What a provider reads the rollout from. */
export interface RolloutSource {
  store: Store;
  config: Config;
  /** Epoch ms (the provider's clock). */
  clock: () => number;
}

/** The upload a launch boots, on which its outcome is counted. */
export interface CountedUpload {
  uploadId: string;
  /** The provider diskimage's `rollout:` settings when the choice was made; undefined: none. */
  settings: RolloutSettings | undefined;
}

/** The rollout state a boot choice of `diskimage` on `provider` reads, now. */
export async function rolloutView(src: RolloutSource, provider: string, diskimage: string): Promise<RolloutView> {
  const [pins, revocations] = await Promise.all([src.store.listPins(), src.store.listRevocations()]);
  const settings = rolloutSettingsFor(src.config, provider, diskimage);
  return { pins, revocations, ...(settings ? { settings } : {}), now: src.clock() };
}

/** Decisions taken again after another launcher changed the upload first (each conflict is another's write). */
const MAX_DECIDE_ATTEMPTS = 20;

/**
 * Counts one launch's `result` on its upload (atomically, in the store every launcher shares)
 * and writes the promotion or revocation the new counts decide, logging it. The decision is a
 * conditional write from the counts and decision it was taken from: when another launcher
 * counted or decided first, it is taken again from what the store holds now, so a promotion
 * decided from a stale count never overwrites a revocation (issue 31 §6). Never throws: a
 * store that does not answer is logged and the count is lost (the launch's own outcome is
 * already recorded).
 */
export async function countLaunch(store: Store, upload: CountedUpload, result: LaunchResult, clock: () => number, log: Logger): Promise<void> {
  try {
    let counted = await store.recordLaunch(upload.uploadId, result);
    for (let attempt = 1; counted && attempt <= MAX_DECIDE_ATTEMPTS; attempt++) {
      const decision = decisionAfterLaunch(counted, await store.listRevocations(), upload.settings, clock());
      if (!decision) return;
      let written: UploadRecord | undefined;
      try {
        written = await store.updateUpload(counted.id, { rollout: decision }, { expectRollout: rolloutSnapshot(counted) });
      } catch (err) {
        if (!(err instanceof StateConflictError)) throw err;
        counted = await store.getUpload(counted.id);
        continue;
      }
      if (!written) return;
      const fields = {
        upload: counted.id, diskimage: counted.diskimage, provider: counted.provider, buildId: counted.buildId,
        launches: counted.launches ?? 0, launchFailures: counted.launchFailures ?? 0, reason: decision.reason,
      };
      if (decision.state === 'revoked') log.warn(`upload revoked: ${decision.reason ?? 'rollout'}`, fields);
      else log.info('upload promoted', fields);
      return;
    }
    if (counted) log.warn('rollout decision not written: other launchers kept changing the upload', { upload: upload.uploadId, attempts: MAX_DECIDE_ATTEMPTS });
  } catch (err) {
    log.warn('could not count the launch on its upload', { upload: upload.uploadId, result, error: coerceError(err).message });
  }
}
