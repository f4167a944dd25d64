/**
 * Rollout records ↔ znode JSON (issue 24), in this project's own names beside Nodepool's: a pin
 * `{"build_id", "since", "reason"}`, a revocation `{"since", "reason"}`, and an upload's
 * `launches`, `launch_failures`, `rollout_state`, `rollout_time`, `rollout_reason` (times in
 * float seconds, as Nodepool's). A Nodepool 11 reader ignores them; a record without them
 * reads as 0 launches and no decision.
 */
import { Fields } from '../corrupt.js';
import { ROLLOUT_STATES, type PinRecord, type RevocationRecord, type UploadRecord } from '../models.js';
import { toSeconds, type Json } from './records.js';

/** The id a pin is listed under: `<diskimage>` or `<diskimage>/<provider>`. */
export const pinId = (diskimage: string, provider: string | null): string => (provider === null ? diskimage : `${diskimage}/${provider}`);

/** A pin's JSON. */
export function pinJson(p: Omit<PinRecord, 'diskimage' | 'provider'>): Json {
  return { build_id: p.buildId, since: toSeconds(p.since), reason: p.reason };
}

/** Thrown: CorruptRecordError when the JSON is not a pin's (`since` absent: the znode's creation). */
export function pinFromJson(diskimage: string, provider: string | null, j: Json, ctimeMs: number): PinRecord {
  const f: Fields = new Fields(j, 'pin', pinId(diskimage, provider));
  const buildId = f.optStr('build_id');
  if (buildId === null) f.fail('no build_id');
  return { diskimage, provider, buildId, since: f.optSeconds('since') ?? ctimeMs, reason: f.optStr('reason') };
}

/** A revocation's JSON. */
export function revocationJson(r: Omit<RevocationRecord, 'diskimage' | 'buildId'>): Json {
  return { since: toSeconds(r.since), reason: r.reason };
}

/** Thrown: CorruptRecordError when the JSON is not a revocation's (`since` absent: the znode's creation). */
export function revocationFromJson(diskimage: string, buildId: string, j: Json, ctimeMs: number): RevocationRecord {
  const f: Fields = new Fields(j, 'revocation', buildId);
  return { diskimage, buildId, since: f.optSeconds('since') ?? ctimeMs, reason: f.optStr('reason') };
}

/** An upload's rollout fields, written always (0 and null when none), so a cleared decision replaces the old one. */
export function uploadRolloutJson(u: Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'>): Json {
  const r = u.rollout ?? null;
  return {
    launches: u.launches ?? 0,
    launch_failures: u.launchFailures ?? 0,
    rollout_state: r?.state ?? null,
    rollout_time: r ? toSeconds(r.time) : null,
    rollout_reason: r?.reason ?? null,
  };
}

/**
 * An upload's rollout fields as the record holds them: `launches` and `launchFailures` when not
 * 0, `rollout` when a decision was written. Thrown: CorruptRecordError (via `f`).
 */
export function uploadRolloutOf(f: Fields): Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'> {
  const out: Pick<UploadRecord, 'launches' | 'launchFailures' | 'rollout'> = {};
  for (const [key, field] of [['launches', 'launches'], ['launch_failures', 'launchFailures']] as const) {
    const n = f.optNumber(key) ?? 0;
    if (!Number.isSafeInteger(n) || n < 0) f.fail(`${key} is not a count`);
    if (n !== 0) out[field] = n;
  }
  const state = f.optStr('rollout_state');
  if (state !== null) {
    const known = ROLLOUT_STATES.find((s) => s === state);
    if (known === undefined) f.fail(`unknown rollout_state ${JSON.stringify(state.slice(0, 40))} (expected one of ${ROLLOUT_STATES.join(', ')})`);
    out.rollout = { state: known, time: f.seconds('rollout_time'), reason: f.optStr('rollout_reason') };
  }
  return out;
}
