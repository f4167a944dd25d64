/**
 * The `rollout:` key (issue 24 §3) of a top-level diskimage and of an openstack or qemu
 * provider's diskimage: `{canary: <percent>, promote-after: {launches, age}, abort-on:
 * {launch-failures}}`, parsed into lib/images/rollout.ts's RolloutSettings (age in ms). Defaults
 * live here only. Which one holds for a provider's diskimage is lib/config/rollout-config.ts.
 */
import type { RolloutSettings } from '../images/rollout.js';
import { defaultsOf, int, mapped, object, optional, required, type Schema } from './schema-kit.js';

/**
 * `promote-after` when not written (issue 31 §7): `rollout: {canary: N}` alone is a canary,
 * promoted only after this many successful launches from it AND this many seconds since it was
 * ready. `{launches: 0, age: 0}` written out promotes at once.
 */
export const PROMOTE_AFTER_DEFAULTS = { launches: 10, age: 3600 } as const;

const promoteAfter = object({
  /** Successful launches from the new upload before it serves every launch. */
  launches: optional(int({ min: 0 }), PROMOTE_AFTER_DEFAULTS.launches),
  /** Seconds since the upload became ready; compared with ages only (no timer), so not bounded by MAX_TIMER_SECONDS. */
  age: optional(int({ min: 0 }), PROMOTE_AFTER_DEFAULTS.age),
});

const abortOn = object({
  /** Failed launches from the new upload that revoke it (0: never). */
  'launch-failures': optional(int({ min: 0 }), 0),
});

/** `rollout:` as written; `canary` is required once the key is given. */
export const rolloutSchema: Schema<RolloutSettings> = mapped(object({
  /** Percent of launches the new upload serves while it is a canary. */
  canary: required(int({ min: 1, max: 100 })),
  'promote-after': optional(promoteAfter, () => defaultsOf(promoteAfter)),
  'abort-on': optional(abortOn, () => defaultsOf(abortOn)),
}), (r) => ({
  canary: r.canary,
  promoteAfter: { launches: r.promoteAfter.launches, ageMs: r.promoteAfter.age * 1000 },
  abortOn: { launchFailures: r.abortOn.launchFailures },
}));

/** Spread into a driver's provider-diskimage schema (openstack, qemu): it overrides the top-level diskimage's. */
export const providerDiskimageRollout = {
  rollout: optional(rolloutSchema),
};
