/**
 * The rollout's store side for drivers whose labels boot uploads (openstack, qemu; issue 24):
 * what a boot choice reads (pins, revocations, the provider diskimage's `rollout:` settings,
 * the clock) and counting a launch's outcome on the upload it booted, with the promotion or
 * revocation that count decides (lib/images/rollout.ts). The choice itself is boot-upload.ts.
 */
import type { Config } from '../config/schema.js';
import { rolloutSettingsFor } from '../config/rollout-config.js';
import { coerceError } from '../errors.js';
import { decisionAfterLaunch, type RolloutSettings } from '../images/rollout.js';
import type { Logger } from '../log.js';
import type { LaunchResult } from '../store/models.js';
import type { Store } from '../store/store.js';
import type { RolloutView } from './boot-upload.js';

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

/**
 * Counts one launch's `result` on its upload (atomically, in the store every launcher shares)
 * and writes the promotion or revocation the new counts decide, logging it. Never throws: a
 * store that does not answer is logged and the count is lost (the launch's own outcome is
 * already recorded).
 */
export async function countLaunch(store: Store, upload: CountedUpload, result: LaunchResult, clock: () => number, log: Logger): Promise<void> {
  try {
    const counted = await store.recordLaunch(upload.uploadId, result);
    if (!counted) return;
    const decision = decisionAfterLaunch(counted, await store.listRevocations(), upload.settings, clock());
    if (!decision) return;
    await store.updateUpload(counted.id, { rollout: decision });
    const fields = {
      upload: counted.id, diskimage: counted.diskimage, provider: counted.provider, buildId: counted.buildId,
      launches: counted.launches ?? 0, launchFailures: counted.launchFailures ?? 0, reason: decision.reason,
    };
    if (decision.state === 'revoked') log.warn(`upload revoked: ${decision.reason ?? 'rollout'}`, fields);
    else log.info('upload promoted', fields);
  } catch (err) {
    log.warn('could not count the launch on its upload', { upload: upload.uploadId, result, error: coerceError(err).message });
  }
}
