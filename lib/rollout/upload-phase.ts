/**
 * Image rollout decisions (issue 24), pure: where an upload stands (canary, promoted, revoked)
 * from its record, the store's revocations and the provider diskimage's `rollout:` settings;
 * which share of launches a canary takes; and what a launch's outcome decides (promote after N
 * successful launches and an age, revoke after K failures). The boot choice itself is
 * lib/drivers/boot-upload.ts; every launcher on every host decides the same from the same store.
 */
import { createHash } from 'node:crypto';
import type { PinRecord, RevocationRecord, RolloutState, UploadRecord, UploadRollout } from '../store/models.js';

/** A provider diskimage's (or diskimage's) `rollout:` settings, as parsed. */
export interface RolloutSettings {
  /** Percent (0–100) of launches the new upload serves while it is a canary. */
  canary: number;
  /** Promoted once it had this many successful launches and is at least this old (ms). */
  promoteAfter: { launches: number; ageMs: number };
  /** Revoked automatically after this many failed launches (0: never). */
  abortOn: { launchFailures: number };
}

/** An upload's rollout state as every launcher reads it now. */
export interface UploadPhase {
  state: RolloutState;
  /** Since when (epoch ms): the decision's time, or the upload's readiness for a derived canary. */
  since: number;
  reason: string | null;
  /** True when no decision is written for it yet and the phase follows from counts and age. */
  derived: boolean;
}

/** Why an upload whose canary failed too often is revoked. */
export function abortReason(failures: number): string {
  return `canary aborted: ${failures} launch failure${failures === 1 ? '' : 's'}`;
}

/**
 * Where `upload` stands at `now`. A revoked build revokes every upload of it; a written decision
 * stands; without settings an upload is promoted as soon as it is ready (no rollout); otherwise
 * it is a canary until its launches and age promote it or its failures abort it.
 */
export function uploadPhase(upload: UploadRecord, revocations: readonly RevocationRecord[],
  settings: RolloutSettings | undefined, now: number): UploadPhase {
  const revoked = revocations.find((r) => r.buildId === upload.buildId && r.diskimage === upload.diskimage);
  if (revoked) return { state: 'revoked', since: revoked.since, reason: revoked.reason, derived: false };
  const written = upload.rollout;
  if (written && written.state !== 'canary') return { state: written.state, since: written.time, reason: written.reason, derived: false };
  if (!settings) return { state: 'promoted', since: upload.stateTime, reason: null, derived: true };
  const since = written?.time ?? upload.stateTime;
  const failures = upload.launchFailures ?? 0;
  if (settings.abortOn.launchFailures > 0 && failures >= settings.abortOn.launchFailures) {
    return { state: 'revoked', since: now, reason: abortReason(failures), derived: true };
  }
  const { launches, ageMs } = settings.promoteAfter;
  if ((upload.launches ?? 0) >= launches && now - since >= ageMs) {
    return { state: 'promoted', since: now, reason: `after ${upload.launches ?? 0} launches`, derived: true };
  }
  return { state: 'canary', since, reason: written?.reason ?? null, derived: !written };
}

/**
 * The decision to write on `upload` after a launch was counted on it, or undefined when its
 * record already says what the counts and age say (or it is still a canary).
 */
export function decisionAfterLaunch(upload: UploadRecord, revocations: readonly RevocationRecord[],
  settings: RolloutSettings | undefined, now: number): UploadRollout | undefined {
  const phase = uploadPhase(upload, revocations, settings, now);
  if (!phase.derived || phase.state === 'canary' || !settings) return undefined;
  return { state: phase.state, time: now, reason: phase.reason };
}

/**
 * What a rollout decision is taken from (issue 31 §6): an upload's counts and its written
 * decision. A decision is written only while the record still holds the snapshot it was taken
 * from (UploadStore.updateUpload `expectRollout`), so a decision from a stale count loses.
 */
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

/**
 * Where in [0, 100) the launch named `key` (a node id) falls: the same on every launcher, spread
 * evenly over keys, so "key's share < canary percent" gives the canary its share of launches.
 */
export function launchShare(key: string): number {
  const h = createHash('sha256').update(key).digest();
  return (h.readUInt32BE(0) / 0x1_0000_0000) * 100;
}

/** The pin that holds for `diskimage` on `provider`: the provider's own, else the diskimage-wide one. */
export function pinFor(pins: readonly PinRecord[], diskimage: string, provider: string): PinRecord | undefined {
  return pins.find((p) => p.diskimage === diskimage && p.provider === provider)
    ?? pins.find((p) => p.diskimage === diskimage && p.provider === null);
}

/** Human words for a phase, as the CLI and web show it (`canary 10% 7/20 launches`, `promoted`, `revoked: why`). */
export function phaseWords(phase: UploadPhase, upload: UploadRecord, settings: RolloutSettings | undefined): string {
  if (phase.state === 'revoked') return phase.reason ? `revoked: ${phase.reason}` : 'revoked';
  if (phase.state === 'promoted' || !settings) return 'promoted';
  return `canary ${settings.canary}% ${upload.launches ?? 0}/${settings.promoteAfter.launches} launches`;
}
