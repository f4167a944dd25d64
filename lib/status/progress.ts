/**
 * Progress of a running job (its last WORK_STATUS) as a percentage or a text bar. Pure.
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
