/**
 * The canary policy (issue 24 §3, issue 31 §7): the `rollout:` keys `canary`, `promote-after`
 * and `abort-on`. A new upload serves `canary` percent of launches (by the launch's key, the
 * same on every launcher) while the previous one serves the rest; it is promoted after
 * `promote-after.launches` successful launches and `promote-after.age` seconds, and revoked
 * after `abort-on.launch-failures` failed ones. Pure.
 */
import { createHash } from 'node:crypto';
import { defaultsOf, int, object, optional, required } from '../config/schema-kit.js';
import { policyKeys, type RolloutPolicy } from './rollout-policy.js';

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

/** Why an upload whose canary failed too often is revoked. */
export function abortReason(failures: number): string {
  return `canary aborted: ${failures} launch failure${failures === 1 ? '' : 's'}`;
}

/**
 * Where in [0, 100) the launch named `key` (a node id) falls: the same on every launcher, spread
 * evenly over keys, so "key's share < canary percent" gives the canary its share of launches.
 */
export function launchShare(key: string): number {
  const h = createHash('sha256').update(key).digest();
  return (h.readUInt32BE(0) / 0x1_0000_0000) * 100;
}

export const canaryPolicy: RolloutPolicy = {
  name: 'canary',
  keys: policyKeys({
    /** Percent of launches the new upload serves while it is a canary; required once `rollout:` is given. */
    canary: required(int({ min: 1, max: 100 })),
    'promote-after': optional(promoteAfter, () => defaultsOf(promoteAfter)),
    'abort-on': optional(abortOn, () => defaultsOf(abortOn)),
  }, (r) => ({
    canary: r.canary,
    promoteAfter: { launches: r.promoteAfter.launches, ageMs: r.promoteAfter.age * 1000 },
    abortOn: { launchFailures: r.abortOn.launchFailures },
  })),
  abort({ upload, settings }) {
    const failures = upload.launchFailures ?? 0;
    return settings.abortOn.launchFailures > 0 && failures >= settings.abortOn.launchFailures ? abortReason(failures) : undefined;
  },
  promotes({ upload, settings, since, now }) {
    const { launches, ageMs } = settings.promoteAfter;
    return (upload.launches ?? 0) >= launches && now - since >= ageMs ? `after ${upload.launches ?? 0} launches` : false;
  },
  /** The newest serves its share; a launch outside it boots the previous upload: the newest older promoted one, else the next older. */
  boot(newestFirst, q) {
    const [newest, ...older] = newestFirst;
    const settings = q.view.settings;
    if (!newest || older.length === 0 || q.key === undefined || !settings || q.phase(newest) !== 'canary') return undefined;
    if (launchShare(q.key) < settings.canary) return newest;
    return older.find((u) => q.phase(u) === 'promoted') ?? older[0];
  },
};
