/**
 * Presenters for image uploads (`nodepool image-list`, later the web status): table rows and
 * the lines that explain which upload targets need an operator's attention. Pure functions.
 */
import type { PauseRecord, UploadRecord } from '../store/models.js';
import { formatAge } from './age.js';
import { failuresText, pauseText } from './builds.js';
import type { UploadTargetStatus } from './lifecycle-status.js';

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
 * joining what needs attention (paused, waiting, failures with backoff), then one line per
 * failed upload with its reason and one per upload its builder is trying again.
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
    const parts = t ? targetAttentionParts(t, input.pauses, input.now) : [];
    if (parts.length) lines.push(`${diskimage} to ${provider}: ${parts.join('; ')}`);
    const failed = input.uploads.filter((u) => u.diskimage === diskimage && u.provider === provider && u.state === 'failed');
    for (const u of [...failed].sort(byTargetThenId)) {
      lines.push(`upload ${u.id} of ${u.buildId} to ${provider} failed: ${u.reason ?? 'no reason recorded'}`);
    }
    const retrying = input.uploads.filter((u) => u.diskimage === diskimage && u.provider === provider && u.state === 'uploading' && u.reason);
    for (const u of [...retrying].sort(byTargetThenId)) lines.push(`upload ${u.id} of ${u.buildId} to ${provider} retrying: ${u.reason}`);
  }
  return lines;
}
