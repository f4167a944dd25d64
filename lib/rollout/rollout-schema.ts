/**
 * The `rollout:` key (issue 24 §3) of a top-level diskimage and of an openstack or qemu
 * provider's diskimage: the keys each rollout policy adds (policies.ts; the canary's `canary`,
 * `promote-after`, `abort-on`, the window's `promote-window`), parsed into RolloutSettings (age
 * in ms). Defaults live in the policies' fields only. Which settings hold for a provider's
 * diskimage is rollout-config.ts.
 */
import { mapped, object, optional, type Schema } from '../config/schema-kit.js';
import { ROLLOUT_POLICIES } from './policies.js';
import type { RolloutSettings } from './rollout-policy.js';

const keys = ROLLOUT_POLICIES.flatMap((p) => (p.keys ? [p.keys] : []));

/** `rollout:` as written; the canary's `canary` is required once the key is given. */
export const rolloutSchema: Schema<RolloutSettings> = mapped(object(Object.fromEntries(keys.flatMap((k) => Object.entries(k.fields)))),
  // The canary policy's required `canary` and defaulted keys give every base field; the others add theirs.
  (r) => keys.reduce<Partial<RolloutSettings>>((s, k) => ({ ...s, ...k.settings(r) }), {}) as RolloutSettings);

/** Spread into a driver's provider-diskimage schema (openstack, qemu): it overrides the top-level diskimage's. */
export const providerDiskimageRollout = {
  rollout: optional(rolloutSchema),
};
