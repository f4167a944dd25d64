/**
 * Ages as Nodepool's CLI prints them: `DD:HH:MM:SS` (days grow past two digits as needed).
 */

/** Formats a duration in ms as `DD:HH:MM:SS`; negative durations (clock skew) show as zero. */
export function formatAge(ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? Math.floor(ms / 1000) : 0;
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const h = Math.floor(total / 3600) % 24;
  const d = Math.floor(total / 86400);
  return [d, h, m, s].map((n) => String(n).padStart(2, '0')).join(':');
}

/** Whole seconds from `since` to `now` (never negative), for JSON output. */
export function ageSeconds(since: number, now: number): number {
  return Math.max(0, Math.floor((now - since) / 1000));
}
