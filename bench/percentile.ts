/** The p-th percentile (0–100) of a list of figures, nearest rank; NaN for an empty list. Pure. */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
