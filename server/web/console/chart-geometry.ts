/**
 * Where a line chart's lines and ticks go (issue 25 §3): counts sampled over time (one series
 * per key, a missing key counting 0) placed in a plot area over a time window ending now, with
 * a y scale rounded up to a readable maximum. Pure: chart-svg.ts draws the result.
 */

/** One sample: when, and a count per series. */
export interface ChartSample {
  time: number;
  counts: Readonly<Record<string, number>>;
}

/** What to fit the samples into. */
export interface ChartFrame {
  width: number;
  height: number;
  /** Room for axis labels: left, right, top, bottom. */
  margin: { left: number; right: number; top: number; bottom: number };
  /** The window shown, ending at `now` (ms). */
  windowMs: number;
  now: number;
}

export interface ChartSeries {
  name: string;
  /** Points in plot coordinates (pixels), oldest first. */
  points: Array<[number, number]>;
  /** The newest sample's count. */
  last: number;
}

export interface ChartGeometry {
  frame: ChartFrame;
  /** The plot area. */
  plot: { left: number; top: number; width: number; height: number };
  yMax: number;
  series: ChartSeries[];
  /** Horizontal grid lines with their values (0, half, max). */
  yTicks: Array<{ y: number; value: number }>;
  /** Steps back from now (`-3h` … `now`; `-15m`, `-30s` for shorter windows), at most {@link MAX_X_TICKS} + 1. */
  xTicks: Array<{ x: number; label: string }>;
}

/** Steps between x ticks, the least one giving at most {@link MAX_X_TICKS} steps is used. */
const TICK_STEPS_MS = [10_000, 30_000, 60_000, 5 * 60_000, 15 * 60_000, 3_600_000, 2 * 3_600_000, 6 * 3_600_000, 24 * 3_600_000];
export const MAX_X_TICKS = 6;

/** `3h`, `15m`, `30s`: the largest whole unit. */
export function durationLabel(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}

/** The least "nice" number (1, 2, 5 × 10^n; at least 1) not below `n`. */
export function niceMax(n: number): number {
  if (!(n > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

/**
 * The chart of `samples` in `frame`: series in `order` first (when present in some sample),
 * then the others sorted; samples outside the window are left out.
 */
export function chartGeometry(samples: readonly ChartSample[], frame: ChartFrame, order: readonly string[] = []): ChartGeometry {
  const { margin } = frame;
  const plot = { left: margin.left, top: margin.top, width: frame.width - margin.left - margin.right, height: frame.height - margin.top - margin.bottom };
  const start = frame.now - frame.windowMs;
  const shown = samples.filter((s) => s.time >= start && s.time <= frame.now);
  const keys = new Set(shown.flatMap((s) => Object.keys(s.counts)));
  const names = [...order.filter((k) => keys.has(k)), ...[...keys].filter((k) => !order.includes(k)).sort()];
  const max = Math.max(0, ...shown.flatMap((s) => Object.values(s.counts)));
  const yMax = niceMax(max);
  const x = (t: number): number => round(plot.left + ((t - start) / frame.windowMs) * plot.width);
  const y = (v: number): number => round(plot.top + plot.height - (v / yMax) * plot.height);
  const series = names.map((name) => ({
    name,
    points: shown.map((s): [number, number] => [x(s.time), y(s.counts[name] ?? 0)]),
    last: shown.length > 0 ? ((shown[shown.length - 1] as ChartSample).counts[name] ?? 0) : 0,
  }));
  const yTicks = [0, yMax / 2, yMax].filter((v, i) => i !== 1 || Number.isInteger(v)).map((value) => ({ y: y(value), value }));
  const step = TICK_STEPS_MS.find((ms) => frame.windowMs / ms <= MAX_X_TICKS) ?? frame.windowMs;
  const xTicks: ChartGeometry['xTicks'] = [];
  for (let back = 0; back <= frame.windowMs; back += step) xTicks.push({ x: x(frame.now - back), label: back === 0 ? 'now' : `-${durationLabel(back)}` });
  return { frame, plot, yMax, series, yTicks, xTicks: xTicks.reverse() };
}

/** Two decimals are enough for pixels. */
function round(n: number): number {
  return Math.round(n * 100) / 100;
}
