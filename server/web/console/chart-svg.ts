/**
 * A line chart as inline SVG markup from its geometry (chart-geometry.ts): grid, axis labels,
 * one polyline per series and a legend with each series' newest count. Every text is escaped.
 * Pure.
 */
import type { ChartGeometry } from './chart-geometry.js';
import { escapeHtml } from './html.js';

/** Colours of the series, in order (then repeated). */
export const SERIES_COLOURS = ['#2f6fdf', '#186a1e', '#b3261e', '#8a5a00', '#7b3fb5', '#0e7c86', '#555555', '#d16d00', '#a0317a'];

/** The chart's `<svg>`; `title` names it for screen readers. */
export function chartSvg(g: ChartGeometry, title: string): string {
  const { plot } = g;
  const right = plot.left + plot.width;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${g.frame.width}" height="${g.frame.height}" viewBox="0 0 ${g.frame.width} ${g.frame.height}" role="img" aria-label="${escapeHtml(title)}">`,
    `<title>${escapeHtml(title)}</title>`,
  ];
  for (const t of g.yTicks) {
    parts.push(`<line x1="${plot.left}" y1="${t.y}" x2="${right}" y2="${t.y}" stroke="#e4e4e4"/>`,
      `<text x="${plot.left - 4}" y="${t.y + 4}" text-anchor="end" font-size="11" fill="#555">${t.value}</text>`);
  }
  for (const t of g.xTicks) {
    parts.push(`<text x="${t.x}" y="${plot.top + plot.height + 14}" text-anchor="middle" font-size="11" fill="#555">${escapeHtml(t.label)}</text>`);
  }
  if (g.series.length === 0) {
    parts.push(`<text x="${plot.left + plot.width / 2}" y="${plot.top + plot.height / 2}" text-anchor="middle" font-size="12" fill="#888">no samples yet</text>`);
  }
  g.series.forEach((s, i) => {
    const colour = SERIES_COLOURS[i % SERIES_COLOURS.length] as string;
    if (s.points.length > 1) parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${s.points.map(([x, y]) => `${x},${y}`).join(' ')}"/>`);
    else if (s.points.length === 1) parts.push(`<circle cx="${s.points[0]?.[0]}" cy="${s.points[0]?.[1]}" r="2" fill="${colour}"/>`);
    const ly = plot.top + 12 + i * 14;
    parts.push(`<rect x="${right + 8}" y="${ly - 8}" width="10" height="3" fill="${colour}"/>`,
      `<text x="${right + 22}" y="${ly}" font-size="11" fill="#222">${escapeHtml(s.name)} ${s.last}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}
