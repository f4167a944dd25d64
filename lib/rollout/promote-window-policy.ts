/**
 * The promote-window policy (issue 32 §2): `rollout: {promote-window: {from: 9, to: 17}}`
 * promotes a canary only while the UTC hour is in [from, to) (wrapping midnight when `to` is
 * smaller, `{from: 22, to: 6}`), so a new image takes every launch only while someone is there
 * to watch it; outside the window it keeps serving its canary share. Inside it, readers see the
 * canary as promoted, and the first launch counted there writes the promotion; with no launch
 * counted inside, it is a canary again when the window closes. Revocations and aborts are not
 * held back.
 * Without the key, promotion is not limited. Pure.
 */
import { checked, int, object, optional, required } from '../config/schema-kit.js';
import { policyKeys, type RolloutPolicy } from './rollout-policy.js';

declare module './rollout-policy.js' {
  interface RolloutSettings {
    /** UTC hours [fromHour, toHour) in which a canary may be promoted; absent: any time. */
    promoteWindow?: PromoteWindow;
  }
}

/** Hours of the day (UTC, 0–23) in which a canary may be promoted: from `fromHour` up to, not including, `toHour`. */
export interface PromoteWindow {
  fromHour: number;
  toHour: number;
}

const hour = int({ min: 0, max: 23 });

const window = checked(object({
  /** The first UTC hour (0–23) in which a canary may be promoted. */
  from: required(hour),
  /** The UTC hour (0–23) at which the window closes; smaller than `from`: it wraps midnight. */
  to: required(hour),
}), (w, path, p) => {
  if (w.from === w.to) p.add(path, `expected different from and to hours, got ${w.from} and ${w.to} (leave the key out to promote at any hour)`);
});

/** Whether the UTC hour of `now` (epoch ms) is inside `w`. */
export function inPromoteWindow(w: PromoteWindow, now: number): boolean {
  const h = new Date(now).getUTCHours();
  return w.fromHour < w.toHour ? h >= w.fromHour && h < w.toHour : h >= w.fromHour || h < w.toHour;
}

export const promoteWindowPolicy: RolloutPolicy = {
  name: 'promote-window',
  keys: policyKeys({
    'promote-window': optional(window),
  }, (r) => (r.promoteWindow ? { promoteWindow: { fromHour: r.promoteWindow.from, toHour: r.promoteWindow.to } } : {})),
  promotes({ settings, now }) {
    return !settings.promoteWindow || inPromoteWindow(settings.promoteWindow, now) ? null : false;
  },
};
