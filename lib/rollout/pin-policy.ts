/**
 * The pin policy (issue 24): a pin (`nodepool image-pin`, a store record) makes a provider
 * boot the pinned build's upload rather than the newest, as long as that upload can serve (is
 * ready, usable and not revoked). A provider's own pin holds over the diskimage-wide one. Pure.
 */
import type { PinRecord } from '../store/models.js';
import type { RolloutPolicy } from './rollout-policy.js';

/** The pin that holds for `diskimage` on `provider`: the provider's own, else the diskimage-wide one. */
export function pinFor(pins: readonly PinRecord[], diskimage: string, provider: string): PinRecord | undefined {
  return pins.find((p) => p.diskimage === diskimage && p.provider === provider)
    ?? pins.find((p) => p.diskimage === diskimage && p.provider === null);
}

export const pinPolicy: RolloutPolicy = {
  name: 'pin',
  boot(newestFirst, q) {
    const pin = pinFor(q.view.pins, q.diskimage, q.provider);
    return pin && newestFirst.find((u) => u.buildId === pin.buildId);
  },
};
