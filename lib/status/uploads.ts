/**
 * Presenters for image uploads (`nodepool image-list`, `image-build --follow`, the web
 * status): table rows, the transfer of a running upload (bytes, percent, rate), and the lines
 * that explain which upload targets need an operator's attention. Pure functions.
 */
import type { PauseRecord, UploadRecord } from '../store/models.js';
import { formatAge } from './age.js';
import { failuresText, pauseText } from './builds.js';
import type { UploadTargetStatus } from './lifecycle-status.js';
import { formatByteRatio, formatRate, progressPercent } from './progress.js';
import { ageSeconds } from './age.js';
import {
  hasRolloutInfo, UPLOAD_ROLLOUT_COLUMNS, uploadLaunches, uploadRollout, uploadRolloutCells, type UploadRolloutInput, type UploadRolloutStatus,
} from './rollout-status.js';
import { reasonFirstLine, targetValidation, validationAttentionParts, type TargetValidation } from './validation.js';

/** Columns of the upload table, as Nodepool 3.x names them. */
export const UPLOAD_COLUMNS = [
  'Build ID', 'Upload ID', 'Provider', 'Image', 'Provider Image Name', 'Provider Image ID', 'State', 'Age',
] as const;

/** One table row; the cloud's name and id stay empty until known. */
export function uploadRow(u: UploadRecord, now: number): string[] {
  return [u.buildId, u.id, u.provider, u.imageName, u.externalName ?? '', u.externalId ?? '', u.state, formatAge(now - u.stateTime)];
}

/** Rows ordered by diskimage, provider, then upload id. */
export function uploadRows(uploads: readonly UploadRecord[], now: number): string[][] {
  return [...uploads].sort(byTargetThenId).map((u) => uploadRow(u, now));
}

/** The column added after Nodepool's while any upload is running (theirs keep their places and values). */
export const UPLOAD_PROGRESS_COLUMN = 'Progress';

/**
 * The upload table: Nodepool's columns, plus {@link UPLOAD_PROGRESS_COLUMN} when some upload
 * is `uploading` (`1.2/3.4 GiB 45% 180 MiB/s` on those rows, empty on the others), then, given
 * `rollout` and some upload with something to say about it, `Rollout` (`canary 10% 7/20
 * launches`, `promoted`, `revoked: <reason>`), `Launches` and `Launch Failures`.
 */
export function uploadTable(uploads: readonly UploadRecord[], now: number, rollout?: UploadRolloutInput): { columns: string[]; rows: string[][] } {
  const sorted = [...uploads].sort(byTargetThenId);
  const progress = sorted.some((u) => u.state === 'uploading');
  const rolloutShown = rollout !== undefined && sorted.some((u) => hasRolloutInfo(u, rollout));
  return {
    columns: [...UPLOAD_COLUMNS, ...(progress ? [UPLOAD_PROGRESS_COLUMN] : []), ...(rolloutShown ? UPLOAD_ROLLOUT_COLUMNS : [])],
    rows: sorted.map((u) => [
      ...uploadRow(u, now), ...(progress ? [uploadProgressText(u, now)] : []), ...(rollout && rolloutShown ? uploadRolloutCells(u, rollout) : []),
    ]),
  };
}

/** After this long without a sample a running upload counts as stalled, and its old rate is not shown. */
export const UPLOAD_STALLED_AFTER_MS = 30_000;

/** A running upload's transfer in numbers (JSON output, and what the texts below are made of). */
export interface UploadTransfer {
  sentBytes: number;
  totalBytes: number;
  /** Whole percent sent. */
  percent: number;
  /** Over the last few seconds; null before two samples, once all is sent, when stalled, and for older records. */
  bytesPerSecond: number | null;
  /** Time left at that rate; null without a rate. */
  etaSeconds: number | null;
  /** Seconds since the last sample once that is past {@link UPLOAD_STALLED_AFTER_MS}; null otherwise. */
  stalledSeconds: number | null;
}

/** The transfer of an `uploading` record with progress; null for other records. */
export function uploadTransfer(u: UploadRecord, now: number): UploadTransfer | null {
  const percent = progressPercent(u.progress);
  if (u.state !== 'uploading' || !u.progress || percent === null) return null;
  const { numerator: sent, denominator: total, rate, sampledAt } = u.progress;
  const quietMs = typeof sampledAt === 'number' ? now - sampledAt : 0;
  const stalled = sent < total && quietMs > UPLOAD_STALLED_AFTER_MS;
  const usable = typeof rate === 'number' && Number.isFinite(rate) && rate >= 0 && sent < total && !stalled;
  const bytesPerSecond = usable ? rate : null;
  return {
    sentBytes: sent,
    totalBytes: total,
    percent,
    bytesPerSecond,
    etaSeconds: bytesPerSecond ? Math.ceil((total - sent) / bytesPerSecond) : null,
    stalledSeconds: stalled ? Math.floor(quietMs / 1000) : null,
  };
}

/**
 * `1.2/3.4 GiB 45% 180 MiB/s`; `… 45% stalled 00:00:01:05` after no sample for a while. With
 * `eta`, ` ETA 00:00:00:12` after a rate; `percent: false` leaves the percentage out (a bar shows it).
 */
export function transferText(t: UploadTransfer, opts: { eta?: boolean; percent?: boolean } = {}): string {
  const parts = [formatByteRatio(t.sentBytes, t.totalBytes)];
  if (opts.percent !== false) parts.push(`${t.percent}%`);
  if (t.bytesPerSecond !== null) parts.push(formatRate(t.bytesPerSecond));
  if (opts.eta && t.etaSeconds !== null) parts.push(`ETA ${formatAge(t.etaSeconds * 1000)}`);
  if (t.stalledSeconds !== null) parts.push(`stalled ${formatAge(t.stalledSeconds * 1000)}`);
  return parts.join(' ');
}

/** The Progress cell of a row: the transfer of a running upload, else empty. */
export function uploadProgressText(u: UploadRecord, now: number): string {
  const t = uploadTransfer(u, now);
  return t ? transferText(t) : '';
}

function byTargetThenId(a: UploadRecord, b: UploadRecord): number {
  const ka = [a.diskimage, a.provider, a.id];
  const kb = [b.diskimage, b.provider, b.id];
  for (let i = 0; i < 3; i++) {
    if ((ka[i] as string) < (kb[i] as string)) return -1;
    if ((ka[i] as string) > (kb[i] as string)) return 1;
  }
  return 0;
}

/** The parts of an upload target's attention line; empty when nothing needs attention. */
export function targetAttentionParts(t: UploadTargetStatus, pauses: readonly PauseRecord[], now: number): string[] {
  const parts: string[] = [];
  if (t.paused) parts.push(pauseText('uploads', t.paused, pauses.find((p) => p.diskimage === t.diskimage && p.provider === t.provider)));
  if (t.waiting) parts.push(`waiting: ${t.waiting}`);
  if (t.failures > 0) parts.push(failuresText('failed upload', t, now));
  return parts;
}

/** What {@link targetAttention} looks at. */
export interface TargetAttentionInput {
  targets: readonly UploadTargetStatus[];
  uploads: readonly UploadRecord[];
  pauses: readonly PauseRecord[];
  now: number;
}

/**
 * Lines shown under the upload table: per target (`<diskimage> to <provider>`), one line
 * joining what needs attention (paused, waiting, failures with backoff, uploads in validation,
 * the last failed validation), then one line per failed upload with its reason's first line
 * and one per upload its builder is trying again.
 */
export function targetAttention(input: TargetAttentionInput): string[] {
  const key = (d: string, p: string): string => `${d}\u0000${p}`;
  const keys = [...new Set([
    ...input.targets.map((t) => key(t.diskimage, t.provider)),
    ...input.uploads.map((u) => key(u.diskimage, u.provider)),
  ])].sort();
  const lines: string[] = [];
  for (const k of keys) {
    const [diskimage, provider] = k.split('\u0000') as [string, string];
    const t = input.targets.find((x) => x.diskimage === diskimage && x.provider === provider);
    const parts = [
      ...(t ? targetAttentionParts(t, input.pauses, input.now) : []),
      ...validationAttentionParts(targetValidation(input.uploads, diskimage, provider, input.now)),
    ];
    if (parts.length) lines.push(`${diskimage} to ${provider}: ${parts.join('; ')}`);
    const failed = input.uploads.filter((u) => u.diskimage === diskimage && u.provider === provider && u.state === 'failed');
    for (const u of [...failed].sort(byTargetThenId)) {
      lines.push(`upload ${u.id} of ${u.buildId} to ${provider} failed: ${reasonFirstLine(u.reason)}`);
    }
    const retrying = input.uploads.filter((u) => u.diskimage === diskimage && u.provider === provider && u.state === 'uploading' && u.reason);
    for (const u of [...retrying].sort(byTargetThenId)) lines.push(`upload ${u.id} of ${u.buildId} to ${provider} retrying: ${reasonFirstLine(u.reason)}`);
  }
  return lines;
}

/** A target in `image-list --json`: the server's status of it, and its uploads' checks. */
export type TargetJson = UploadTargetStatus & { validation: TargetValidation };

/** An upload in `image-list --json`. */
export type UploadJson = Omit<UploadRecord, 'rollout'> & {
  age: number;
  transfer: UploadTransfer | null;
  /** Where it stands in its rollout (replaces the stored decision, which it says with `derived: false`); null unless ready or revoked. */
  rollout: UploadRolloutStatus | null;
  launches: number;
  launchFailures: number;
};

/**
 * `image-list --json` (and the web's `/api/image-list.json`): each upload as stored with `age`
 * (seconds in its state), `transfer` (null unless uploading), and, given `rollout`, its
 * `rollout` phase and launch counts; and each target the server reports with `validation`:
 * the uploads it is validating and its last failed validation.
 */
export function imageListJson(uploads: readonly UploadRecord[], targets: readonly UploadTargetStatus[], now: number, rollout?: UploadRolloutInput): {
  uploads: UploadJson[]; targets: TargetJson[];
} {
  return {
    uploads: uploads.map((u) => ({
      ...u, age: ageSeconds(u.stateTime, now), transfer: uploadTransfer(u, now),
      rollout: rollout ? uploadRollout(u, rollout) : null, ...uploadLaunches(u),
    })),
    targets: targets.map((t) => ({ ...t, validation: targetValidation(uploads, t.diskimage, t.provider, now) })),
  };
}
