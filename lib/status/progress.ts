/**
 * Progress of a running job (its last WORK_STATUS) as a percentage or a text bar, and byte
 * counts and rates as people read them (`1.2/3.4 GiB`, `180 MiB/s`). Pure.
 */
import type { JobProgress } from '../store/models.js';

/** Whole percent 0–100, or null when the job has not reported a usable fraction yet. */
export function progressPercent(p: JobProgress | null | undefined): number | null {
  if (!p || !(p.denominator > 0) || !Number.isFinite(p.numerator)) return null;
  return Math.max(0, Math.min(100, Math.floor((100 * p.numerator) / p.denominator)));
}

/** `[#########...........]  45%` with `width` cells between the brackets. */
export function progressBar(percent: number, width = 30): string {
  const pct = Math.max(0, Math.min(100, Math.floor(percent)));
  const filled = Math.round((pct / 100) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(pct).padStart(3)}%`;
}

/** Binary units, as image sizes are (a 768 MiB image is 768 × 2^20 bytes). */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** The unit a byte count is shown in: the largest it is at least one of. */
function unitOf(bytes: number): number {
  let i = 0;
  while (i < UNITS.length - 1 && bytes >= 1024 ** (i + 1)) i++;
  // 1023.97 KiB would print as "1024 KiB": show it as "1.0 MiB".
  if (i < UNITS.length - 1 && i > 0 && Math.round(bytes / 1024 ** i) >= 1024) i++;
  return i;
}

/** Decimals for a value in unit `i`: one below 10 (`3.4 GiB`), none from 10 (`768 MiB`) and for bytes. */
function decimalsFor(value: number, i: number): number {
  return i > 0 && value < 9.95 ? 1 : 0;
}

function clean(bytes: number): number {
  return Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
}

/** `0 B`, `512 KiB`, `3.4 GiB`: one decimal below 10 units, none from 10. */
export function formatBytes(bytes: number): string {
  const n = clean(bytes);
  const i = unitOf(n);
  const v = n / 1024 ** i;
  return `${v.toFixed(decimalsFor(v, i))} ${UNITS[i]}`;
}

/** `1.2/3.4 GiB`: both counts in the total's unit and precision. */
export function formatByteRatio(done: number, total: number): string {
  const t = clean(total);
  const i = unitOf(t);
  const digits = decimalsFor(t / 1024 ** i, i);
  return `${(clean(done) / 1024 ** i).toFixed(digits)}/${(t / 1024 ** i).toFixed(digits)} ${UNITS[i]}`;
}

/** `180 MiB/s`, `1.5 MiB/s`, `0 B/s`. */
export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}
