/**
 * Presenter for `nodepool image-status` and the web's `/image-status` (Nodepool 11's
 * columns): per diskimage, whether its builds are paused and whether an operator's build
 * request is waiting, and for how long. Pure.
 */
import type { BuildRequest, PauseRecord } from '../store/models.js';
import { ageSeconds, formatAge } from './age.js';
import type { PausedBy } from './lifecycle-status.js';
import { diskimageRollout, pinsText, revocationsText, rolloutLines, type DiskimageRollout, type RolloutRecords } from './rollout-status.js';

/** Columns of `nodepool image-status`, as Nodepool 11 names them. */
export const IMAGE_STATUS_COLUMNS = ['Image', 'Paused', 'Build Request', 'Build Request Age'] as const;

/** What {@link imageStatuses} looks at. */
export interface ImageStatusInput {
  /** Configured diskimages (`pause: true` pauses their builds by config). */
  diskimages: ReadonlyArray<{ name: string; pause: boolean }>;
  /** Diskimages that have builds in the store (also shown when no longer configured). */
  builtDiskimages: readonly string[];
  requests: readonly BuildRequest[];
  pauses: readonly PauseRecord[];
  /** The store's pins and revocations (issue 24); none when absent. */
  rollout?: RolloutRecords;
  now: number;
}

/** The status of one diskimage (the JSON form); `pins` and `revocations` are issue 24's. */
export interface ImageStatus extends DiskimageRollout {
  image: string;
  paused: boolean;
  /** Who paused its builds: the config (`pause: true`), an operator (`image-pause`), or null. */
  pausedBy: PausedBy | null;
  /** The operator's reason, when an operator paused it with one. */
  pauseReason: string | null;
  buildRequest: boolean;
  /** Seconds since the build was requested; null without a request. */
  buildRequestAge: number | null;
  /** Whether the config still defines the diskimage. */
  configured: boolean;
}

/**
 * One status per diskimage the config defines or the store knows of (builds, requests,
 * operator pauses), by name. A config pause wins over an operator's (both block builds).
 */
export function imageStatuses(input: ImageStatusInput): ImageStatus[] {
  const configured = new Map(input.diskimages.map((d) => [d.name, d]));
  const names = [...new Set([
    ...configured.keys(), ...input.builtDiskimages, ...input.requests.map((r) => r.diskimage),
    ...input.pauses.filter((p) => p.provider === null).map((p) => p.diskimage),
    ...(input.rollout?.pins ?? []).map((p) => p.diskimage), ...(input.rollout?.revocations ?? []).map((r) => r.diskimage),
  ])].sort();
  const rollout: RolloutRecords = input.rollout ?? { pins: [], revocations: [] };
  return names.map((image) => {
    const operator = input.pauses.find((p) => p.diskimage === image && p.provider === null);
    const pausedBy: PausedBy | null = configured.get(image)?.pause ? 'config' : operator ? 'operator' : null;
    const request = input.requests.find((r) => r.diskimage === image);
    return {
      image, paused: pausedBy !== null, pausedBy, pauseReason: pausedBy === 'operator' ? operator?.reason ?? null : null,
      buildRequest: request !== undefined, buildRequestAge: request ? ageSeconds(request.requested, input.now) : null,
      configured: configured.has(image), ...diskimageRollout(rollout, image),
    };
  });
}

/** The columns added to the table while some diskimage has a pin or a revoked build. */
export const IMAGE_STATUS_ROLLOUT_COLUMNS = ['Pinned', 'Revoked'] as const;

/** Whether some diskimage has a pin or a revoked build (then the table adds {@link IMAGE_STATUS_ROLLOUT_COLUMNS}). */
export function rolloutShown(statuses: readonly ImageStatus[]): boolean {
  return statuses.some((s) => s.pins.length > 0 || s.revocations.length > 0);
}

/** The table: Nodepool's columns, and the pins (`all: <build>`, `<provider>: <build>`) and revoked builds while any. */
export function imageStatusTable(statuses: readonly ImageStatus[]): { columns: string[]; rows: string[][] } {
  if (!rolloutShown(statuses)) return { columns: [...IMAGE_STATUS_COLUMNS], rows: statuses.map(imageStatusRow) };
  return {
    columns: [...IMAGE_STATUS_COLUMNS, ...IMAGE_STATUS_ROLLOUT_COLUMNS],
    rows: statuses.map((s) => [...imageStatusRow(s), pinsText(s), revocationsText(s)]),
  };
}

/** One table row: Paused is `no`, `yes (config)` or `yes (operator: <reason>)`; the age is `DD:HH:MM:SS`. */
export function imageStatusRow(s: ImageStatus): string[] {
  let paused = 'no';
  if (s.pausedBy === 'config') paused = 'yes (config)';
  else if (s.pausedBy === 'operator') paused = s.pauseReason ? `yes (operator: ${s.pauseReason})` : 'yes (operator)';
  return [s.image, paused, s.buildRequest ? 'yes' : 'no', s.buildRequestAge === null ? '' : formatAge(s.buildRequestAge * 1000)];
}

/** Lines under the table: diskimages the config no longer defines, then each pin and revocation with its time and reason. */
export function imageStatusAttention(statuses: readonly ImageStatus[]): string[] {
  return [
    ...statuses.filter((s) => !s.configured).map((s) => `${s.image}: not defined in the config (records of it remain)`),
    ...statuses.flatMap((s) => rolloutLines(s.image, s)),
  ];
}
