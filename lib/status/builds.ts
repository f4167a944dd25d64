/**
 * Presenters for diskimage builds (`nodepool dib-image-list`, later the web status): table
 * rows and the lines that explain what needs an operator's attention. Pure functions.
 */
import type { BuildRecord, PauseRecord } from '../store/models.js';
import { formatAge } from './age.js';
import type { DiskimageStatus } from './lifecycle-status.js';
import { buildPinned, buildRevoked, pinnedText, revokedText, type RolloutRecords } from './rollout-status.js';
import { reasonFirstLine } from './validation.js';

/** Columns of the build table, as Nodepool 3.x names them. */
export const BUILD_COLUMNS = ['ID', 'Image', 'Builder', 'Formats', 'State', 'Age'] as const;

/** One table row: Builder is the hostname, Formats comma-joined, Age since the state changed. */
export function buildRow(b: BuildRecord, now: number): string[] {
  return [b.id, b.diskimage, b.builderHostname ?? '', b.formats.join(','), b.state, formatAge(now - b.stateTime)];
}

/** Rows ordered by diskimage, then id (ids sort by their zero-padded sequence). */
export function buildRows(builds: readonly BuildRecord[], now: number): string[][] {
  return [...builds].sort(byDiskimageThenId).map((b) => buildRow(b, now));
}

/** The columns added to the build table while some build is pinned or revoked. */
export const BUILD_ROLLOUT_COLUMNS = ['Pinned', 'Revoked'] as const;

/**
 * The build table: Nodepool's columns, plus {@link BUILD_ROLLOUT_COLUMNS} while some build is
 * pinned (`all`, or the providers' names) or revoked (`revoked: <reason>`).
 */
export function buildTable(builds: readonly BuildRecord[], now: number, rollout: RolloutRecords): { columns: string[]; rows: string[][] } {
  const sorted = [...builds].sort(byDiskimageThenId);
  const shown = sorted.some((b) => buildPinned(rollout.pins, b).length > 0 || buildRevoked(rollout.revocations, b) !== null);
  if (!shown) return { columns: [...BUILD_COLUMNS], rows: sorted.map((b) => buildRow(b, now)) };
  return {
    columns: [...BUILD_COLUMNS, ...BUILD_ROLLOUT_COLUMNS],
    rows: sorted.map((b) => [...buildRow(b, now), pinnedText(buildPinned(rollout.pins, b)), revokedText(buildRevoked(rollout.revocations, b))]),
  };
}

function byDiskimageThenId(a: BuildRecord, b: BuildRecord): number {
  return a.diskimage < b.diskimage ? -1 : a.diskimage > b.diskimage ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** "1 failed build" / "3 failed builds". */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `paused by config (pause: true)` or `paused by operator (reason)`. */
export function pauseText(what: string, by: 'config' | 'operator', pause: PauseRecord | undefined): string {
  if (by === 'config') return `${what} paused by config (pause: true)`;
  return `${what} paused by operator${pause?.reason ? ` (${pause.reason})` : ''}`;
}

/** `3 failed builds, last: <reason's first line>; next attempt in DD:HH:MM:SS` (or `due now`). */
export function failuresText(
  noun: string, s: { failures: number; lastFailure: string | null; retryAt: number | null }, now: number,
): string {
  let text = `${countOf(s.failures, noun)}, last: ${reasonFirstLine(s.lastFailure)}`;
  if (s.retryAt !== null) text += s.retryAt > now ? `; next attempt in ${formatAge(s.retryAt - now)}` : '; next attempt due now';
  return text;
}

/** The parts of a diskimage's attention line; empty when nothing needs attention. */
export function diskimageAttentionParts(s: DiskimageStatus, pauses: readonly PauseRecord[], now: number): string[] {
  const parts: string[] = [];
  if (s.paused) parts.push(pauseText('builds', s.paused, pauses.find((p) => p.diskimage === s.diskimage && p.provider === null)));
  if (s.waiting) parts.push(`waiting: ${s.waiting}`);
  if (s.revoked) parts.push(s.revoked);
  if (s.failures > 0) parts.push(failuresText('failed build', s, now));
  if (s.requested) parts.push('build requested');
  return parts;
}

/** `ubuntu-jammy-0000000003 failed: <reason's first line>` for a failed or lost build; null otherwise. */
export function buildReasonLine(b: BuildRecord): string | null {
  if (b.state !== 'failed' && b.state !== 'lost') return null;
  return `${b.id} ${b.state}: ${reasonFirstLine(b.reason)}`;
}

/** What {@link diskimageAttention} looks at. */
export interface DiskimageAttentionInput {
  statuses: readonly DiskimageStatus[];
  builds: readonly BuildRecord[];
  pauses: readonly PauseRecord[];
  now: number;
}

/**
 * Lines shown under the build table: per diskimage (by name), one line joining what needs
 * attention (paused, waiting, newest build revoked, failures with backoff, build requested), then one line per
 * failed or lost build with its reason.
 */
export function diskimageAttention(input: DiskimageAttentionInput): string[] {
  const names = [...new Set([...input.statuses.map((s) => s.diskimage), ...input.builds.map((b) => b.diskimage)])].sort();
  const lines: string[] = [];
  for (const name of names) {
    const s = input.statuses.find((x) => x.diskimage === name);
    const parts = s ? diskimageAttentionParts(s, input.pauses, input.now) : [];
    if (parts.length) lines.push(`${name}: ${parts.join('; ')}`);
    for (const b of [...input.builds].filter((x) => x.diskimage === name).sort(byDiskimageThenId)) {
      const line = buildReasonLine(b);
      if (line) lines.push(line);
    }
  }
  return lines;
}
