/**
 * Presenters for image rollout (issue 24) in the status lists: where a build is pinned and
 * whether it is revoked (`dib-image-list`), where each upload stands in its rollout with its
 * launch counts (`image-list`), and the pins and revocations of each diskimage (`image-status`).
 * The decisions themselves are lib/rollout/; these only say them. Pure.
 */
import { pinFor } from '../rollout/pin-policy.js';
import { phaseWords, uploadPhase } from '../rollout/upload-phase.js';
import type { RolloutSettings } from '../rollout/rollout-policy.js';
import type { PinRecord, RevocationRecord, RolloutState, UploadRecord } from '../store/models.js';

/** A pin's provider as shown: its provider's name, or `all` for a diskimage-wide pin. */
export const ALL_PROVIDERS = 'all';

/** The `rollout:` settings of a provider diskimage (lib/rollout/rollout-config.ts), if any. */
export type SettingsFor = (provider: string, diskimage: string) => RolloutSettings | undefined;

/** The store's rollout records, read once for a list. */
export interface RolloutRecords {
  pins: readonly PinRecord[];
  revocations: readonly RevocationRecord[];
}

/** What an upload's rollout is shown from: the records, its target's settings and the time. */
export interface UploadRolloutInput {
  revocations: readonly RevocationRecord[];
  /** The store's pins: an upload whose build the pin holding for its provider names says `pinned`. */
  pins?: readonly PinRecord[];
  settingsFor: SettingsFor;
  now: number;
}

/** A build's revocation as shown: since when (epoch ms) and why. */
export interface BuildRevoked {
  since: number;
  reason: string | null;
}

/** Where pins hold `build`: `all` first for the diskimage-wide pin, then provider names, sorted. */
export function buildPinned(pins: readonly PinRecord[], build: { id: string; diskimage: string }): string[] {
  const mine = pins.filter((p) => p.diskimage === build.diskimage && p.buildId === build.id);
  return [...(mine.some((p) => p.provider === null) ? [ALL_PROVIDERS] : []),
    ...mine.flatMap((p) => (p.provider === null ? [] : [p.provider])).sort()];
}

/** The revocation of `build`, or null. */
export function buildRevoked(revocations: readonly RevocationRecord[], build: { id: string; diskimage: string }): BuildRevoked | null {
  const r = revocations.find((x) => x.diskimage === build.diskimage && x.buildId === build.id);
  return r ? { since: r.since, reason: r.reason } : null;
}

/** The Pinned cell: `all`, or `cloud-a,cloud-b`; empty when not pinned. */
export function pinnedText(pinned: readonly string[]): string {
  return pinned.join(',');
}

/** The Revoked cell: `revoked: <reason>` (or `revoked`); empty when not revoked. */
export function revokedText(revoked: BuildRevoked | null): string {
  if (!revoked) return '';
  return revoked.reason ? `revoked: ${revoked.reason}` : 'revoked';
}

/** An upload's rollout as the lists give it (JSON). */
export interface UploadRolloutStatus {
  state: RolloutState;
  /** `canary 10% 7/20 launches`, `promoted`, `revoked: <reason>`. */
  words: string;
  /** Epoch ms: when the decision was taken, or since when the derived state holds. */
  since: number;
  reason: string | null;
  /** True when no decision is written yet and the state follows from the counts, age and settings. */
  derived: boolean;
  /** True when the pin that holds for its provider names its build: launches boot it whatever is newer. */
  pinned: boolean;
}

/** Whether the pin that holds for `u`'s provider (its own, else the diskimage-wide one) names `u`'s build. */
export function uploadPinned(u: UploadRecord, pins: readonly PinRecord[] | undefined): boolean {
  return pins !== undefined && pinFor(pins, u.diskimage, u.provider)?.buildId === u.buildId;
}

/**
 * Where `u` stands in its rollout: for a ready upload, and for any upload of a revoked build;
 * null for the others (an upload still on its way, failed or being deleted boots nothing).
 */
export function uploadRollout(u: UploadRecord, input: UploadRolloutInput): UploadRolloutStatus | null {
  const revoked = input.revocations.some((r) => r.diskimage === u.diskimage && r.buildId === u.buildId);
  if (u.state !== 'ready' && !revoked) return null;
  const settings = input.settingsFor(u.provider, u.diskimage);
  const phase = uploadPhase(u, input.revocations, settings, input.now);
  const pinned = uploadPinned(u, input.pins);
  const words = `${pinned ? 'pinned; ' : ''}${phaseWords(phase, u, settings)}`;
  return { state: phase.state, words, since: phase.since, reason: phase.reason, derived: phase.derived, pinned };
}

/** The launches counted on `u` (absent counts read as 0). */
export function uploadLaunches(u: UploadRecord): { launches: number; launchFailures: number } {
  return { launches: u.launches ?? 0, launchFailures: u.launchFailures ?? 0 };
}

/**
 * Whether `u` has anything to say about rollout beyond "promoted, never launched": its target
 * has `rollout:` settings, a decision is written, its build is revoked, or launches were counted.
 * Lists add their rollout columns only when some upload does.
 */
export function hasRolloutInfo(u: UploadRecord, input: UploadRolloutInput): boolean {
  return input.settingsFor(u.provider, u.diskimage) !== undefined || (u.rollout ?? null) !== null
    || (u.launches ?? 0) > 0 || (u.launchFailures ?? 0) > 0 || uploadPinned(u, input.pins)
    || input.revocations.some((r) => r.diskimage === u.diskimage && r.buildId === u.buildId);
}

/** The columns added to the upload table when some upload has rollout information. */
export const UPLOAD_ROLLOUT_COLUMNS = ['Rollout', 'Launches', 'Launch Failures'] as const;

/** The cells under {@link UPLOAD_ROLLOUT_COLUMNS} for `u`. */
export function uploadRolloutCells(u: UploadRecord, input: UploadRolloutInput): string[] {
  const counts = uploadLaunches(u);
  return [uploadRollout(u, input)?.words ?? '', String(counts.launches), String(counts.launchFailures)];
}

/** The pins and revocations of one diskimage, as `image-status` shows them (JSON). */
export interface DiskimageRollout {
  pins: Array<{ provider: string; buildId: string; since: number; reason: string | null }>;
  revocations: Array<{ buildId: string; since: number; reason: string | null }>;
}

/** The pins (diskimage-wide first, then by provider) and revocations (by build) of `diskimage`. */
export function diskimageRollout(records: RolloutRecords, diskimage: string): DiskimageRollout {
  const pins = records.pins.filter((p) => p.diskimage === diskimage)
    .map((p) => ({ provider: p.provider ?? ALL_PROVIDERS, buildId: p.buildId, since: p.since, reason: p.reason }))
    .sort((a, b) => (a.provider === b.provider ? 0 : a.provider === ALL_PROVIDERS ? -1 : b.provider === ALL_PROVIDERS ? 1 : a.provider < b.provider ? -1 : 1));
  const revocations = records.revocations.filter((r) => r.diskimage === diskimage)
    .map((r) => ({ buildId: r.buildId, since: r.since, reason: r.reason }))
    .sort((a, b) => (a.buildId < b.buildId ? -1 : a.buildId > b.buildId ? 1 : 0));
  return { pins, revocations };
}

/** `all: ubuntu-jammy-0000000003, cloud-a: ubuntu-jammy-0000000002` (the Pinned cell of `image-status`). */
export function pinsText(r: DiskimageRollout): string {
  return r.pins.map((p) => `${p.provider}: ${p.buildId}`).join(', ');
}

/** `ubuntu-jammy-0000000004` (comma-joined; the Revoked cell of `image-status`). */
export function revocationsText(r: DiskimageRollout): string {
  return r.revocations.map((x) => x.buildId).join(', ');
}

/**
 * Lines under `image-status`: one per pin (`ubuntu-jammy: build … pinned on all providers since
 * <ISO time> (reason)`) and one per revocation (`ubuntu-jammy: build … revoked since … (reason)`).
 */
export function rolloutLines(diskimage: string, r: DiskimageRollout): string[] {
  const why = (reason: string | null): string => (reason ? ` (${reason})` : '');
  const when = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return [
    ...r.pins.map((p) => `${diskimage}: build ${p.buildId} pinned on ${p.provider === ALL_PROVIDERS ? 'all providers' : p.provider} since ${when(p.since)}${why(p.reason)}`),
    ...r.revocations.map((x) => `${diskimage}: build ${x.buildId} revoked since ${when(x.since)}${why(x.reason)}`),
  ];
}
