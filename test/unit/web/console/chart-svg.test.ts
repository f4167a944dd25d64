import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chartGeometry } from '../../../../server/web/console/chart-geometry.js';
import { chartSvg } from '../../../../server/web/console/chart-svg.js';

const frame = { width: 300, height: 120, margin: { left: 30, right: 70, top: 10, bottom: 10 }, windowMs: 3_600_000, now: 3_600_000 };

describe('chartSvg', () => {
  it('draws a polyline per series with its legend and newest count', () => {
    const svg = chartSvg(chartGeometry([{ time: 0, counts: { ready: 1 } }, { time: 3_600_000, counts: { ready: 2 } }], frame), 'Nodes');
    assert.match(svg, /^<svg [^>]*role="img" aria-label="Nodes">/);
    assert.match(svg, /<polyline fill="none" stroke="#2f6fdf" stroke-width="1.5" points="30,60 230,10"\/>/);
    assert.match(svg, />ready 2<\/text>/);
    assert.match(svg, /<\/svg>$/);
  });

  it('a single sample is a dot; no samples says so', () => {
    assert.match(chartSvg(chartGeometry([{ time: 0, counts: { a: 1 } }], frame), 'x'), /<circle cx="30" cy="10" r="2"/);
    assert.match(chartSvg(chartGeometry([], frame), 'x'), /no samples yet/);
  });

  it('escapes series names and the title', () => {
    const svg = chartSvg(chartGeometry([{ time: 0, counts: { '<script>alert(1)</script>': 1 } }], frame), '"><img src=x>');
    assert.ok(!svg.includes('<script>') && !svg.includes('<img'));
    assert.match(svg, /&lt;script&gt;alert\(1\)&lt;\/script&gt; 1/);
    assert.match(svg, /aria-label="&quot;&gt;&lt;img src=x&gt;"/);
  });
});
